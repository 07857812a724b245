"""shap's layouts of attributions reduced to the positive class: one rule for every explainer of the seeds."""

from __future__ import annotations

import numpy as np


def positive_class_values(values: np.ndarray, shape: tuple[int, int], positive_index: int = 1) -> np.ndarray:
    """Reduce shap's layouts ((n, d, k), [k × (n, d)], (n, d)) to the positive class, shape (n, d).

    With two outputs (k = 2, in the model's class order) the positive class's one is taken. A single output
    (k = 1, or a bare (n, d)) explains ``classes[1]`` (its probability, log-odds or logit), so it is negated
    when the positive class is ``classes[0]`` (``positive_index`` 0).

    Parameters
    ----------
    values : numpy.ndarray
        What a shap explainer returned, as an array: shape (n, d, k), (k, n, d) or (n, d).
    shape : tuple of int
        ``(n, d)``: the rows explained and their features.
    positive_index : int, default=1
        The positive class's column among the model's classes.

    Returns
    -------
    numpy.ndarray of float64, shape (n, d)
    """
    if values.ndim == 3 and values.shape[:2] == shape:
        if values.shape[2] == 2:
            return values[:, :, positive_index]
        single = values[:, :, -1]
    elif values.ndim == 3 and values.shape[1:] == shape:
        if values.shape[0] == 2:
            return values[positive_index]
        single = values[-1]
    else:
        single = values.reshape(shape)
    return single if positive_index == 1 else -single
