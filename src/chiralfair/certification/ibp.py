"""Interval bound propagation (IBP): bounds of every layer of a ReLU network over a batch of input boxes.

Each affine layer maps a box's centre exactly and its radius through ``|W|``; a ReLU clips both ends at 0. Sound
for every point of the box (in exact arithmetic; computed in float64), cheap (one pass of two matrix products per
layer), and loose through deep networks, where the back-substitution of :mod:`.crown` is tighter.

References
----------
.. [1] Gowal et al. "On the effectiveness of interval bound propagation for training verifiably robust models."
   arXiv:1810.12715, 2018.
"""

from __future__ import annotations


def interval_bounds(weights: list, biases: list, lo, hi) -> list[tuple]:
    """Lower and upper bounds of every layer's pre-activation over each box ``[lo, hi]``.

    Parameters
    ----------
    weights, biases : list of torch.Tensor
        ``weights[k]`` of shape (n_k, n_{k-1}), float64; a ReLU follows every layer but the last.
    lo, hi : torch.Tensor of float64, shape (n_boxes, n_inputs)
        The boxes, ``lo <= hi``.

    Returns
    -------
    list of (torch.Tensor, torch.Tensor)
        Per layer, ``(lower, upper)`` of shape (n_boxes, n_k); the last pair bounds the network's output.
    """
    centre, radius = (lo + hi) / 2, (hi - lo) / 2
    out: list[tuple] = []
    for k, (w, b) in enumerate(zip(weights, biases, strict=True)):
        if k:
            lower, upper = out[-1]
            lower, upper = lower.clamp(min=0), upper.clamp(min=0)
            centre, radius = (lower + upper) / 2, (upper - lower) / 2
        c = centre @ w.T + b
        r = radius @ w.abs().T
        out.append((c - r, c + r))
    return out
