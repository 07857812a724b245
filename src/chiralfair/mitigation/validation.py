"""The validation split: rows carved from the training split for every choice a method makes (architecture: mitigation).

λ of ``consistency`` (and any later hyper-parameter) is chosen on these rows with candidates trained on the rest
of the training split; the test split is never looked at before the final figures.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_float
from ..exceptions import ConfigError

# Fewest rows of each label the validation split must hold for a choice on it to mean anything.
MIN_VALIDATION_ROWS_PER_LABEL = 5


def validation_split(y, size: float = 0.2, *, random_state: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Stratified split of positions ``0 .. len(y) - 1`` into fitting and validation rows.

    Parameters
    ----------
    y : array-like of {0, 1}, shape (n_samples,)
        The training rows' labels.
    size : float, default=0.2
        Share of the rows held out for validation, in (0, 0.5].
    random_state : int, default=0

    Returns
    -------
    fit_rows, validation_rows : numpy.ndarray of int64
        Sorted positions into ``y``.

    Raises
    ------
    ConfigError
        If ``size`` is outside (0, 0.5], or the validation rows would hold fewer than
        :data:`MIN_VALIDATION_ROWS_PER_LABEL` rows of a label (the counts are named).
    """
    from sklearn.model_selection import train_test_split

    size = check_float(size, "validation_size", minimum=0.0, maximum=0.5, exclusive_minimum=True)
    y = np.asarray(y, dtype=np.int64)
    counts = np.bincount(y, minlength=2)
    expected = np.floor(counts * size).astype(int)
    if expected.min() < MIN_VALIDATION_ROWS_PER_LABEL:
        raise ConfigError(f"a validation split of {size:g} of the {len(y)} training rows would hold "
                          f"{int(expected[0])} rows of label 0 and {int(expected[1])} of label 1 (fewer than "
                          f"{MIN_VALIDATION_ROWS_PER_LABEL}): too few to choose on; give the value instead of 'auto'")
    fit_rows, validation_rows = train_test_split(np.arange(len(y)), test_size=size, random_state=random_state,
                                                 stratify=y)
    return np.sort(fit_rows), np.sort(validation_rows)
