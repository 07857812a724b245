"""The linear relaxation of a ReLU from its pre-activation bounds: the one CROWN and symbolic intervals share.

A ReLU whose bounds ``[l, u]`` straddle 0 is bounded above by its chord ``u (z - l) / (u - l)`` and below by
``a z``, with ``a = 1`` when ``u > -l`` and 0 otherwise (CROWN's adaptive choice); a stable ReLU is exact.

References
----------
.. [1] Zhang, Weng, Chen, Hsieh, Daniel. "Efficient neural network robustness certification with general activation
   functions." NeurIPS 2018 (CROWN).
"""

from __future__ import annotations


def relu_relaxation(lower, upper):
    """Slopes and intercept of each ReLU's relaxation from its pre-activation bounds.

    Parameters
    ----------
    lower, upper : torch.Tensor, shape (n_boxes, n)

    Returns
    -------
    lower_slope, upper_slope, upper_intercept : torch.Tensor, shape (n_boxes, n)
        ``lower_slope * z <= relu(z) <= upper_slope * z + upper_intercept`` for ``z`` in ``[lower, upper]``.
    """
    import torch

    active = lower >= 0
    unstable = (lower < 0) & (upper > 0)
    span = torch.where(unstable, upper - lower, torch.ones_like(upper))
    chord = torch.where(unstable, upper / span, active.to(upper.dtype))
    intercept = torch.where(unstable, -chord * lower, torch.zeros_like(upper))
    lower_slope = torch.where(unstable, (upper > -lower).to(upper.dtype), active.to(upper.dtype))
    return lower_slope, chord, intercept
