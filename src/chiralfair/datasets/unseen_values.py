"""Values that only the held-out rows hold: a stated rule for each, never a silent new counterpart.

The data and its test rows are encoded together, so that both share one domain; a category that only the test
rows hold (a protected value, or a value of another column) then exists in the domain although the data the model
was fitted on never held it.

- **A protected value only the test rows hold** (and that the model takes: a value it refuses is left out with
  its rows before, by :func:`chiralfair.models.probe.restrict_to_accepted_values`) is left out of the
  attribute's values: it is never a counterpart (no person is asked "what if you had a value the model never
  met"), and the test rows holding it belong to no group and are left out of the verdict's shares, counted and
  named, as a person with a missing protected value is (:func:`chiralfair.verdict.result.left_out_mask`). Fewer
  than two values left is refused.
- **Another column's category only the test rows hold** is used as it is (the person is who they are): the model
  is asked about it, and a model that cannot take it is named by the usual check of the values it accepts.

Each case is a :class:`~chiralfair.exceptions.DataWarning` naming the column, the values and their rows.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import replace

import numpy as np

from ..exceptions import DatasetError, DataWarning
from .base import Dataset

logger = logging.getLogger(__name__)


def held_out_only_values(dataset: Dataset, train_index, test_index) -> tuple[Dataset, list[str]]:
    """Apply the rules of the module docstring to the values of ``test_index`` rows that no ``train_index`` row holds.

    Parameters
    ----------
    dataset : Dataset
        The data and its test rows, encoded together (from :func:`~chiralfair.datasets.from_frame`).
    train_index, test_index : array-like of int
        The data's rows and the held-out rows.

    Returns
    -------
    dataset : Dataset
        With those protected values left out of their attributes' values (the same dataset when there are none).
    notes : list of str
        One per rule applied, naming the column, the values and the rows.

    Raises
    ------
    DatasetError
        If a protected attribute would keep fewer than two values.

    Warns
    -----
    DataWarning
        For each note.
    """
    if dataset.codec is None:
        return dataset, []
    domain = dataset.domain
    train, test = dataset.X[np.asarray(train_index)], dataset.X[np.asarray(test_index)]
    notes, kept = [], {}
    for attribute in domain.attributes:
        rows = attribute.value_array()
        cols = list(attribute.columns)
        in_train = _rows_in(rows, train[:, cols])
        only = [i for i in range(len(rows)) if not in_train[i] and _rows_in(rows[i:i + 1], test[:, cols])[0]]
        if not only:
            continue
        keep = [v for i, v in enumerate(attribute.values) if i not in only]
        if len(keep) < 2:
            raise DatasetError(f"protected attribute {attribute.name!r}: the data's rows hold fewer than two of its "
                               "values (the others only in the test rows), so there is nothing to compare")
        kept[attribute.name] = keep
        labels = [domain.protected_value_labels()[domain.attributes.index(attribute)][i] for i in only]
        n_rows = int(_rows_in_any(test[:, cols], rows[only]).sum())
        notes.append(f"protected attribute {attribute.name!r} value(s) {', '.join(map(repr, labels))} appear only in "
                     f"the held-out rows ({n_rows:,} of them), never in the data: left out of its values (never a "
                     "counterpart); the rows holding them are in no group and left out of the verdict's shares")
    for j, feature in enumerate(domain.features):
        column = dataset.codec.columns[j]
        if j in domain.protected or column.how != "category":
            continue
        only_codes = np.setdiff1d(np.unique(test[:, j]), np.unique(train[:, j]))
        if only_codes.size:
            labels = [feature.label(int(c)) for c in only_codes]
            n_rows = int(np.isin(test[:, j], only_codes).sum())
            notes.append(f"column {feature.name!r} value(s) {', '.join(map(repr, labels[:10]))} appear only in the "
                         f"held-out rows ({n_rows:,} of them), never in the data: used as they are (the model is "
                         "asked about values it may never have met)")
    for note in notes:
        logger.info(note)
        warnings.warn(note, DataWarning, stacklevel=3)
    if kept:
        declared = {a.name: kept.get(a.name, list(a.values)) for a in domain.attributes}
        dataset = replace(dataset, domain=domain.with_protected(domain.protected_declaration, values=declared))
    return dataset, notes


def _rows_in(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """For each row of ``values`` (k, c), whether some row of ``rows`` (n, c) equals it."""
    return (rows[None, :, :] == values[:, None, :]).all(axis=2).any(axis=1)


def _rows_in_any(rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    """For each row of ``rows`` (n, c), whether it equals some row of ``values`` (k, c)."""
    return (rows[:, None, :] == values[None, :, :]).all(axis=2).any(axis=1)
