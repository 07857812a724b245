"""Reweighing: training weights that make the protected groups and the label independent (a group-fairness knob).

Each training row of group ``g`` (its joint protected values) and label ``y`` gets the weight
``(P(g) P(y) / P(g, y)) ** strength``, rescaled to mean 1: at strength 1 the weighted data has the same positive
rate in every group (Kamiran & Calders), at 0 every weight is 1. The methods that take ``reweigh=`` multiply their
own weights by these, so a model that must not read the protected attribute (counterfactual augmentation,
unawareness, the consistency penalty) is also pushed not to learn the group gap through proxies: the strength is
the knob that holds the demographic-parity and equalized-odds differences, chosen on validation rows by ``auto``.
The weights use the protected attributes of the *training* rows only; the fitted model never reads them.

References
----------
.. [1] Kamiran, Calders. "Data preprocessing techniques for classification without discrimination." Knowledge and
   Information Systems 33, 2012.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_float


def group_label_weights(y, groups, strength: float = 1.0) -> np.ndarray:
    """Reweighing weights of rows with labels ``y`` and groups ``groups``, mean 1.

    Parameters
    ----------
    y : array-like of {0, 1}, shape (n_samples,)
    groups : array-like, shape (n_samples,)
        Each row's group (any hashable values).
    strength : float, default=1.0
        The exponent, >= 0 (0: all weights 1).

    Returns
    -------
    numpy.ndarray of float64, shape (n_samples,)

    Raises
    ------
    ConfigError
        If ``strength`` is negative or not a number.
    """
    strength = check_float(strength, "reweigh", minimum=0.0)
    y = np.asarray(y)
    _, group = np.unique(np.asarray(groups), return_inverse=True)
    label = (y == 1).astype(np.int64)
    cell = group * 2 + label
    n = len(y)
    if n == 0 or strength == 0:
        return np.ones(n)
    p_cell = np.bincount(cell, minlength=2 * (group.max() + 1)) / n
    p_group = np.bincount(group) / n
    p_label = np.bincount(label, minlength=2) / n
    w = (p_group[group] * p_label[label] / p_cell[cell]) ** strength
    return w / w.mean()


def protected_groups(domain, X) -> np.ndarray:
    """Each row's group: the index of its joint protected values (a missing value is a value of its own).

    Parameters
    ----------
    domain : Domain
    X : array-like of int, shape (n_samples, n_features)

    Returns
    -------
    numpy.ndarray of int64, shape (n_samples,)
    """
    position = domain.protected_value_index(np.asarray(X, dtype=np.int64))
    _, group = np.unique(position, axis=0, return_inverse=True)
    return np.asarray(group, dtype=np.int64).reshape(-1)


def reweighed(domain, X, y, strength, sample_weight=None):
    """``sample_weight`` (default 1) times the reweighing weights of ``strength``; None when neither applies.

    Parameters
    ----------
    domain : Domain
    X : array-like of int, shape (n_samples, n_features)
    y : array-like of {0, 1}, shape (n_samples,)
    strength : float
        >= 0.
    sample_weight : array-like of float, shape (n_samples,), optional

    Returns
    -------
    numpy.ndarray of float64, shape (n_samples,), or None
    """
    strength = check_float(strength, "reweigh", minimum=0.0)
    if strength == 0:
        return sample_weight
    w = group_label_weights(y, protected_groups(domain, X), strength)
    return w if sample_weight is None else w * np.asarray(sample_weight, dtype=np.float64)
