"""What a domain is made of: its features (bounds, kind, code labels) and its protected attributes.

A :class:`Feature` is one encoded column; a :class:`ProtectedAttribute` is one column, or a group of columns (one-hot)
declared as one attribute, with its valid values. :class:`~chiralfair.domain.Domain` holds both, in column order.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..exceptions import DomainError

Kind = Literal["categorical", "ordinal"]

#: The largest code magnitude a feature may have: every integer up to it is a float64. A search moves codes as floats
#: (steps, gradients, clipping), so past it a move could round onto a code outside the bounds.
MAX_ABS_CODE = 2**53


@dataclass(frozen=True)
class Feature:
    """One encoded feature.

    Parameters
    ----------
    name : str
        Column name.
    lo, hi : int
        Inclusive integer bounds of the encoded values, within ±:data:`MAX_ABS_CODE` (2**53).
    kind : {"categorical", "ordinal"}
        Categorical codes have no order; ordinal codes (binned numbers) do.
    labels : mapping of int to str, optional
        Human-readable label of each code (e.g. ``{0: "Female", 1: "Male"}``); for ordinal features the
        label of a bin such as ``"30-39"``.
    missing : int, optional
        The code that stands for a missing value (NaN, ``?``) in the raw data, when the column had any.
        As a protected attribute, this code is left out of the attribute's values by default (see
        :meth:`Domain.with_protected`).

    Raises
    ------
    DomainError
        If the bounds are not integers, ``lo > hi``, a bound lies past ±2**53, the kind is unknown, or ``missing``
        lies outside the bounds.
    """

    name: str
    lo: int
    hi: int
    kind: Kind = "ordinal"
    labels: Mapping[int, str] | None = None
    missing: int | None = None

    def __post_init__(self):
        if int(self.lo) != self.lo or int(self.hi) != self.hi:
            raise DomainError(f"feature {self.name!r}: bounds must be integers, got [{self.lo}, {self.hi}]")
        if self.lo > self.hi:
            raise DomainError(f"feature {self.name!r}: lower bound {self.lo} > upper bound {self.hi}")
        if max(abs(int(self.lo)), abs(int(self.hi))) > MAX_ABS_CODE:
            raise DomainError(f"feature {self.name!r}: codes [{self.lo}, {self.hi}] reach past ±2**53, where float64 "
                              "(in which a search steps, follows gradients and clips) no longer holds every integer, "
                              "so a move could land outside the bounds; code the column by rank (from_frame does so "
                              "for integers this large) or shift its codes to start near 0")
        if self.kind not in ("categorical", "ordinal"):
            raise DomainError(f"feature {self.name!r}: kind must be 'categorical' or 'ordinal', got {self.kind!r}")
        if self.missing is not None and not self.lo <= self.missing <= self.hi:
            raise DomainError(f"feature {self.name!r}: missing-value code {self.missing} lies outside "
                              f"[{self.lo}, {self.hi}]")

    @property
    def size(self) -> int:
        """Number of integer values in ``[lo, hi]``."""
        return int(self.hi - self.lo + 1)

    def label(self, code: int) -> str:
        """Return the label of ``code``, or the code itself as text when it has none.

        Parameters
        ----------
        code : int

        Returns
        -------
        str
        """
        if self.labels and int(code) in self.labels:
            return self.labels[int(code)]
        return str(int(code))


@dataclass(frozen=True)
class ProtectedAttribute:
    """One protected attribute: a single column, or a group of dependent columns (e.g. one-hot).

    Parameters
    ----------
    name : str
        Display name (a single column's name, or a group's name such as ``"race"`` for
        ``race_A``/``race_B``/``race_C``).
    columns : tuple of int
        Column indices of the attribute, in the order of the value rows.
    values : tuple of tuple of int
        The attribute's valid values, one row of ``len(columns)`` codes each (for a one-hot group of three
        columns: ``(0, 0, 1), (0, 1, 0), (1, 0, 0)``); stored sorted and unique. Counterparts take only
        these rows.
    """

    name: str
    columns: tuple[int, ...]
    values: tuple[tuple[int, ...], ...]

    def __post_init__(self):
        object.__setattr__(self, "name", str(self.name))
        object.__setattr__(self, "columns", tuple(int(c) for c in self.columns))
        width = len(self.columns)
        rows = set()
        for row in self.values:
            row = tuple(int(v) for v in (row if isinstance(row, Sequence | np.ndarray) else (row,)))
            if len(row) != width:
                raise DomainError(f"protected attribute {self.name!r}: value {row} has {len(row)} codes, "
                                  f"the attribute has {width} columns")
            rows.add(row)
        object.__setattr__(self, "values", tuple(sorted(rows)))

    @property
    def is_group(self) -> bool:
        """Whether the attribute spans several columns."""
        return len(self.columns) > 1

    @property
    def size(self) -> int:
        """Number of valid values (rows)."""
        return len(self.values)

    def value_array(self) -> np.ndarray:
        """The valid values, shape (size, n_columns), int64.

        Returns
        -------
        numpy.ndarray of int64, shape (size, n_columns)
        """
        return np.array(self.values, dtype=np.int64).reshape(len(self.values), len(self.columns))


# The labels a 0/1 indicator column's codes may carry (an integer, float or boolean column read as codes 0 and 1).
INDICATOR_LABELS = {0: frozenset({"0", "0.0", "False", "false"}), 1: frozenset({"1", "1.0", "True", "true"})}


def is_indicator(feature: Feature) -> bool:
    """Whether ``feature`` is a 0/1 indicator column: codes 0 and 1 (besides its missing code) that mean 0 and 1.

    A categorical column whose two categories happen to be coded 0 and 1 (``sex``: Female, Male) is not one.

    Parameters
    ----------
    feature : Feature

    Returns
    -------
    bool
    """
    codes = [c for c in range(feature.lo, feature.hi + 1) if c != feature.missing]
    return bool(codes) and all(c in INDICATOR_LABELS and feature.label(c) in INDICATOR_LABELS[c] for c in codes)


def is_one_hot(features: Sequence[Feature], attribute: ProtectedAttribute) -> bool:
    """Whether ``attribute`` is a group of 0/1 indicator columns (:func:`is_indicator`): a one-hot attribute.

    Parameters
    ----------
    features : sequence of Feature
        The domain's features.
    attribute : ProtectedAttribute

    Returns
    -------
    bool
    """
    return attribute.is_group and all(is_indicator(features[c]) for c in attribute.columns)


def holds_no_value(features: Sequence[Feature], columns: Sequence[int], block: np.ndarray) -> np.ndarray:
    """Whether each row of ``block`` (codes of ``columns``) holds no value of their attribute: a missing one.

    A row holds none when some column holds its missing-value code (``lo - 1`` for a column without one), or, for a
    group of 0/1 indicator columns (:func:`is_indicator`), when no column holds a 1.

    Parameters
    ----------
    features : sequence of Feature
        The domain's features.
    columns : sequence of int
        The attribute's columns.
    block : numpy.ndarray of int64, shape (n_samples, len(columns))

    Returns
    -------
    numpy.ndarray of bool, shape (n_samples,)
    """
    feats = [features[c] for c in columns]
    codes = np.array([f.missing if f.missing is not None else f.lo - 1 for f in feats])
    missing = (block == codes).any(axis=1)
    if len(feats) > 1 and all(is_indicator(f) for f in feats):  # a one-hot row with no 1 says no value
        missing |= (block == 0).all(axis=1)
    return missing


MissingPolicy = Literal["exclude", "value"]
MISSING_POLICIES = ("exclude", "value")


def group_name(columns: Sequence[str]) -> str:
    """Display name of a group of columns: their common prefix without a trailing separator.

    ``["race_A", "race_B", "race_C"]`` -> ``"race"``; without a common prefix the names joined by ``"+"``.

    Parameters
    ----------
    columns : sequence of str
        The group's column names.

    Returns
    -------
    str
    """
    prefix = os.path.commonprefix([str(c) for c in columns])
    stripped = prefix.rstrip("_.=: ")
    if len(columns) > 1 and stripped and stripped != prefix:
        return stripped
    return "+".join(map(str, columns))
