"""CROWN: linear bounds of a ReLU network's output over input boxes, by back-substitution through relaxed ReLUs.

Every ReLU whose pre-activation bounds ``[l, u]`` straddle 0 is replaced by two lines: above by the chord
``u (z - l) / (u - l)``, below by ``a z`` with ``a = 1`` when ``u > -l``, else 0 (the adaptive choice of CROWN). An
objective ``c . z_k`` is then carried back layer by layer to the input, taking each neuron's lower or upper line by
the sign of its coefficient, which gives ``lower(x) <= g(x) <= upper(x)`` as linear functions of the input over the
box. The pre-activation bounds of each hidden layer come from the same back-substitution (tightest), or from
interval propagation (:mod:`.ibp`, cheaper). Everything is batched over the boxes: each back-substitution is a few
batched matrix products of shape (n_boxes, 2 n_k, n_j).

The linear bounds are kept, not only their values: the pair test of :mod:`.decision` combines the upper line of one
protected combination with the lower line of another over the same non-protected inputs.

References
----------
.. [1] Zhang, Weng, Chen, Hsieh, Daniel. "Efficient neural network robustness certification with general activation
   functions." NeurIPS 2018 (CROWN).
.. [2] Wang et al. "Beta-CROWN: efficient bound propagation with per-neuron split constraints for neural network
   robustness verification." NeurIPS 2021 (input splitting with CROWN bounds).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .ibp import interval_bounds
from .relaxation import relu_relaxation
from .symbolic import symbolic_bounds

INTERMEDIATE = ("crown", "symbolic", "ibp")
# Share of unstable (box, neuron) pairs of a layer below which only they are back-substituted (gathering each box's
# relaxations costs more than it saves when most are unstable).
GATHER_BELOW = 0.5


@dataclass(frozen=True)
class LinearBounds:
    """Linear lower and upper bounds of a network's output over each box, relative to the box's centre.

    For every ``x`` in box ``i``: ``lower_const[i] + lower_coef[i] . (x - centre[i]) <= g(x) <= upper_const[i] +
    upper_coef[i] . (x - centre[i])``.

    Attributes
    ----------
    lower_coef, upper_coef : torch.Tensor of float64, shape (n_boxes, n_inputs)
    lower_const, upper_const : torch.Tensor of float64, shape (n_boxes,)
        The lines' values at the centre.
    lower, upper : torch.Tensor of float64, shape (n_boxes,)
        Their minimum and maximum over the box: bounds of ``g`` itself.
    """

    lower_coef: Any
    lower_const: Any
    upper_coef: Any
    upper_const: Any
    lower: Any
    upper: Any


def _back_substitute(coef, const, k: int, weights: list, biases: list, relaxations: list):
    """Carry ``coef . z_k + const`` (a lower bound objective) back to the input: coefficients on x, constant.

    ``coef`` has shape (n_boxes, n_objectives, n_k); ``relaxations[j]`` relaxes the ReLU after layer j. Each step
    takes, per neuron, the lower line where the coefficient is positive and the upper line where it is negative:
    ``coef * lower_slope + min(coef, 0) * (upper_slope - lower_slope)``, in place.
    """
    for j in range(k, 0, -1):
        const = const + coef @ biases[j]
        coef = coef @ weights[j]
        lower_slope, upper_slope, intercept = relaxations[j - 1]
        negative = coef.clamp(max=0)
        const = const + (negative @ intercept[:, :, None])[..., 0]
        coef.mul_(lower_slope[:, None, :]).addcmul_(negative, (upper_slope - lower_slope)[:, None, :])
    return coef @ weights[0], const + coef @ biases[0]


def _both_sides(k: int, weights: list, biases: list, relaxations: list, centre, radius):
    """Coefficients, centre values and bounds of ``z_k`` from below and above (as the lower bound of ``-z_k``)."""
    import torch

    w, b = weights[k], biases[k]
    n_boxes = centre.shape[0]
    objective = torch.cat([w, -w])
    offset = torch.cat([b, -b])[None].expand(n_boxes, -1)
    if k == 0:
        coef, const = objective[None].expand(n_boxes, -1, -1), offset
    else:
        relaxed = _relax_last(objective, relaxations[k - 1])
        coef, const = _back_substitute(relaxed[0], offset + relaxed[1], k - 1, weights, biases, relaxations)
    at_centre = const + (coef @ centre[:, :, None])[..., 0]
    bound = at_centre - (coef.abs() @ radius[:, :, None])[..., 0]
    n = w.shape[0]
    return coef, at_centre, bound[:, :n], -bound[:, n:]


def _relax_last(objective, relaxation):
    """The objective's coefficients on ``a_{k-1}`` carried through the ReLU after layer ``k - 1``.

    ``objective`` (n_objectives, n_{k-1}) is the same for every box, so its signs are read once.
    """
    lower_slope, upper_slope, intercept = relaxation
    positive, negative = objective.clamp(min=0), objective.clamp(max=0)
    const = intercept @ negative.T
    coef = positive[None] * lower_slope[:, None, :] + negative[None] * upper_slope[:, None, :]
    return coef, const


def _tightened(k: int, weights: list, biases: list, relaxations: list, below: list, centre, radius):
    """Bounds of ``z_k``: interval arithmetic from the layer below, then back-substitution for the unstable neurons.

    A neuron whose interval bounds do not straddle 0 is relaxed exactly whatever its bounds, so only the unstable
    (box, neuron) pairs are carried back, each with its own box's relaxations; both bounds hold, so they are
    intersected. ``below[j]`` holds the bounds of ``z_j`` found before.
    """
    import torch

    w, b = weights[k], biases[k]
    if k == 0:  # exact
        mid = centre @ w.T + b
        spread = radius @ w.abs().T
        return mid - spread, mid + spread
    low_prev, up_prev = below[k - 1]
    a_low, a_up = low_prev.clamp(min=0), up_prev.clamp(min=0)
    mid = (a_low + a_up) / 2 @ w.T + b
    spread = (a_up - a_low) / 2 @ w.abs().T
    lower, upper = mid - spread, mid + spread
    unstable = (lower < 0) & (upper > 0)
    if unstable.float().mean() > GATHER_BELOW:  # most neurons unstable: back-substitute them all, no gathering
        _, _, crown_lower, crown_upper = _both_sides(k, weights, biases, relaxations, centre, radius)
        return torch.maximum(lower, crown_lower), torch.minimum(upper, crown_upper)
    box, neuron = torch.nonzero(unstable, as_tuple=True)
    if not len(box):
        return lower, upper
    rows = w[neuron]
    objective = torch.stack([rows, -rows], dim=1)
    offset = torch.stack([b[neuron], -b[neuron]], dim=1)
    gathered = [tuple(x[box] for x in relaxation) for relaxation in relaxations[:k]]
    lower_slope, upper_slope, intercept = gathered[k - 1]
    negative = objective.clamp(max=0)
    offset = offset + (negative @ intercept[:, :, None])[..., 0]
    coef = objective * lower_slope[:, None, :] + negative * (upper_slope - lower_slope)[:, None, :]
    coef, const = _back_substitute(coef, offset, k - 1, weights, biases, gathered)
    at_centre = const + (coef @ centre[box][:, :, None])[..., 0]
    bound = at_centre - (coef.abs() @ radius[box][:, :, None])[..., 0]
    lower[box, neuron] = torch.maximum(lower[box, neuron], bound[:, 0])
    upper[box, neuron] = torch.minimum(upper[box, neuron], -bound[:, 1])
    return lower, upper


def crown_bounds(weights: list, biases: list, lo, hi, *, intermediate: str = "crown") -> LinearBounds:
    """CROWN linear bounds of the network's one output over each box ``[lo, hi]``.

    Parameters
    ----------
    weights, biases : list of torch.Tensor
        ``weights[k]`` of shape (n_k, n_{k-1}), float64; a ReLU follows every layer but the last, which has one
        output.
    lo, hi : torch.Tensor of float64, shape (n_boxes, n_inputs)
    intermediate : {"crown", "symbolic", "ibp"}, default="crown"
        How the hidden layers' pre-activation bounds are found: by back-substitution (tightest, costs one per hidden
        layer), by symbolic intervals carried forward (:mod:`.symbolic`: nearly as tight, one pass), or by interval
        propagation (:mod:`.ibp`: loosest, cheapest).

    Returns
    -------
    LinearBounds

    Raises
    ------
    ValueError
        For an unknown ``intermediate``.
    """
    if intermediate not in INTERMEDIATE:
        raise ValueError(f"intermediate must be one of {INTERMEDIATE}, got {intermediate!r}")
    centre, radius = (lo + hi) / 2, (hi - lo) / 2
    n_layers = len(weights)
    relaxations: list = []
    boxes = (interval_bounds(weights, biases, lo, hi) if intermediate == "ibp"
             else symbolic_bounds(weights, biases, lo, hi, layers=n_layers - 1) if intermediate == "symbolic"
             else None)
    below: list = []
    for k in range(n_layers - 1):
        if boxes is not None:
            lower, upper = boxes[k]
        else:
            lower, upper = _tightened(k, weights, biases, relaxations, below, centre, radius)
        below.append((lower, upper))
        relaxations.append(relu_relaxation(lower, upper))
    coef, at_centre, lower, upper = _both_sides(n_layers - 1, weights, biases, relaxations, centre, radius)
    return LinearBounds(lower_coef=coef[:, 0], lower_const=at_centre[:, 0], upper_coef=-coef[:, 1],
                        upper_const=-at_centre[:, 1], lower=lower[:, 0], upper=upper[:, 0])
