"""Symbolic interval propagation: every layer bounded by linear functions of the input, carried forward.

Each neuron's pre-activation is kept between two linear functions of the input, ``lower(x) <= z <= upper(x)``; an
affine layer maps them exactly (positive weights take the same side, negative weights the other), and a ReLU whose
bounds straddle 0 is replaced by its CROWN relaxation (:func:`~.relaxation.relu_relaxation`) applied to the side it
bounds. With few inputs (a tabular domain has a dozen) this bounds *all* hidden layers in one forward pass whose
cost does not grow with their width, much tighter than :mod:`.ibp` and nearly as tight as CROWN's per-layer
back-substitution; :func:`~.crown.crown_bounds` uses it for the hidden layers (``intermediate="symbolic"``) and
back-substitutes only the output. Layout: coefficients ``(n_boxes, n_inputs, n_k)``, so each layer is one GEMM.

References
----------
.. [1] Wang, Pei, Whitehouse, Yang, Jana. "Formal security analysis of neural networks using symbolic intervals."
   USENIX Security 2018 (ReluVal; symbolic interval propagation).
.. [2] Singh, Gehr, Püschel, Vechev. "An abstract domain for certifying neural networks." POPL 2019 (DeepPoly).
"""

from __future__ import annotations

from .relaxation import relu_relaxation


def symbolic_bounds(weights: list, biases: list, lo, hi, *, layers: int | None = None) -> list[tuple]:
    """Lower and upper bounds of each layer's pre-activation over each box, by symbolic intervals.

    Parameters
    ----------
    weights, biases : list of torch.Tensor
        ``weights[k]`` of shape (n_k, n_{k-1}), float64; a ReLU follows every layer but the last.
    lo, hi : torch.Tensor of float64, shape (n_boxes, n_inputs)
    layers : int, optional
        Bound only the first ``layers`` layers (default: all).

    Returns
    -------
    list of (torch.Tensor, torch.Tensor)
        Per layer, ``(lower, upper)`` of shape (n_boxes, n_k).
    """
    centre, radius = (lo + hi) / 2, (hi - lo) / 2
    n_layers = len(weights) if layers is None else layers
    out: list[tuple] = []
    low_coef = up_coef = low_const = up_const = None
    for k in range(n_layers):
        w, b = weights[k], biases[k]
        if k == 0:  # exact: one linear function, the same above and below
            low_const = up_const = centre @ w.T + b
            spread = radius @ w.abs().T
            lower, upper = low_const - spread, up_const + spread
            low_coef = up_coef = w.T.expand(lo.shape[0], -1, -1)
        else:
            positive, negative = w.clamp(min=0).T, w.clamp(max=0).T
            low_coef, up_coef = low_coef @ positive + up_coef @ negative, up_coef @ positive + low_coef @ negative
            low_const, up_const = (low_const @ positive + up_const @ negative + b,
                                   up_const @ positive + low_const @ negative + b)
            lower = low_const - (low_coef.abs() * radius[:, :, None]).sum(1)
            upper = up_const + (up_coef.abs() * radius[:, :, None]).sum(1)
        out.append((lower, upper))
        if k < len(weights) - 1:
            lower_slope, upper_slope, intercept = relu_relaxation(lower, upper)
            low_coef, low_const = low_coef * lower_slope[:, None, :], low_const * lower_slope
            up_coef, up_const = up_coef * upper_slope[:, None, :], up_const * upper_slope + intercept
    return out
