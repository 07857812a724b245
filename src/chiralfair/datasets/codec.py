"""Decoding integer codes back to the DataFrame a raw-frame model expects (the inverse of ``from_frame``).

:func:`~chiralfair.datasets.from_frame` encodes every feature column as integer codes and records, per column,
how to turn a code back into a value of the original column:

==================  ==========================================================================================
column              decoded value of a code
==================  ==========================================================================================
categorical dtype   the category (a pandas categorical with the same categories and order); missing → NaN
string / object     the original value (the same Python object, e.g. ``"m"`` or ``1``); missing → the
                    column's own missing marker (``None`` or NaN, as first seen in the data)
boolean             ``False`` / ``True``
integer-valued      the code itself, in the column's dtype (``int64``, ``int32``, ``float64``, ...)
beyond ±2**53       the value of rank ``code`` among the column's sorted distinct values, exactly (the codes are
                    ranks because float64, the type models are called with, cannot hold such values exactly)
binned numeric      the bin's **representative**: the lower median of the data values that fell in that bin
                    (an actual value of the column, so an integer column stays integer-valued; deterministic);
                    a bin no data row fell in gets the midpoint of its edges (an open first bin, from
                    -inf, its upper edge; an open last bin, to inf, the integer above its lower edge);
                    the missing bin → NaN
==================  ==========================================================================================

Decoding is one table look-up per column (vectorised): 10^5 rows of a dozen columns take milliseconds.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Literal, cast

import numpy as np
import pandas as pd

from ..exceptions import DomainError

How = Literal["category", "integer", "bin", "rank"]


@dataclass(frozen=True, eq=False)
class ColumnCodec:
    """How the codes of one feature turn back into values of the original column.

    Attributes
    ----------
    name : hashable
        The original column label (not necessarily a string).
    dtype : numpy or pandas dtype
        The original column's dtype; decoded values are cast to it.
    how : {"category", "integer", "bin", "rank"}
    table : numpy.ndarray, shape (n_codes,), optional
        Value of each code (``None`` for integer columns, whose code is the value). The missing code's value
        is the column's missing marker.
    binning : str or None
        For a binned column, how its bins were chosen, in words (``"10 quantile bins, chosen automatically"``,
        ``"10 equal-width bins, as given"``); None for other columns.
    edges : numpy.ndarray or None
        For a binned column, its bin edges (intervals ``(a, b]``, the first closed on the left too), so that rows
        read later (a streamed verdict, :mod:`chiralfair.datasets.recode`) are cut the same way; None otherwise.
    """

    name: Hashable
    dtype: object
    how: How
    table: np.ndarray | None = None
    binning: str | None = None
    edges: np.ndarray | None = None

    def decode(self, codes: np.ndarray) -> pd.Series | np.ndarray | pd.api.extensions.ExtensionArray:
        """Values of ``codes`` (int64, shape (n_samples,)) in the original dtype.

        Parameters
        ----------
        codes : numpy.ndarray of int64, shape (n_samples,)

        Returns
        -------
        pandas.Series, numpy.ndarray or ExtensionArray, shape (n_samples,)
            The values, a missing code decoded as the dtype's missing value.
        """
        if self.how == "integer":
            return _cast(codes, self.dtype)
        table = cast(np.ndarray, self.table)  # every codec but an integer column's has its table
        self._check_codes(codes, table)
        if isinstance(self.dtype, pd.CategoricalDtype):
            k = len(self.dtype.categories)
            return pd.Categorical.from_codes(np.where(codes >= k, -1, codes), dtype=self.dtype)
        return _cast(table[codes], self.dtype)

    def series(self, codes: np.ndarray, index=None) -> pd.Series:
        """Values of ``codes`` as a column of the original dtype, named as the original column.

        What the model is fed (:meth:`FrameCodec.to_frame`) and what IDI pairs show: an ``object`` column stays
        ``object`` (pandas would read text as ``str`` and a None as NaN).

        Parameters
        ----------
        codes : numpy.ndarray of int64, shape (n_samples,)
        index : pandas.Index, optional

        Returns
        -------
        pandas.Series, shape (n_samples,)
        """
        return pd.Series(self._column(codes), index=index, name=self.name, copy=False)

    def _column(self, codes: np.ndarray):
        """:meth:`decode`, an ``object`` column as a Series of that dtype (a frame would read its text as ``str``)."""
        values = self.decode(codes)
        if isinstance(self.dtype, np.dtype) and self.dtype == object:
            return pd.Series(values, dtype=object, copy=False)
        return values

    @property
    def codes_are_values(self) -> bool:
        """Whether each code of this column is its value, as a number (an integer column, a 0/1 or boolean column).

        False for a binned column (a code stands for an interval), a rank-coded column, text or categories other
        than ``0, 1, ...`` in code order, and a column with a missing value.
        """
        if self.how == "integer":
            return True
        if self.how != "category" or self.table is None or isinstance(self.dtype, pd.CategoricalDtype):
            return False
        if getattr(self.dtype, "kind", "O") not in "biuf":
            return False
        try:
            numbers = np.asarray(self.table, dtype=np.float64)
        except (TypeError, ValueError):
            return False
        return bool(np.array_equal(numbers, np.arange(len(numbers), dtype=np.float64)))

    def _check_codes(self, codes: np.ndarray, table: np.ndarray) -> None:
        bad = (codes < 0) | (codes >= len(table))
        if bad.any():
            raise DomainError(f"column {self.name!r}: code {int(codes[np.argmax(bad)])} has no value; "
                              f"valid codes are 0..{len(table) - 1}")


def _cast(values: np.ndarray, dtype):
    if isinstance(dtype, np.dtype):
        return values.astype(dtype, copy=False)
    return pd.array(values, dtype=dtype)


@dataclass(frozen=True, eq=False)
class FrameCodec:
    """The decoders of every feature column of a dataset built by ``from_frame``, in column order.

    Attributes
    ----------
    columns : tuple of ColumnCodec
    """

    columns: tuple[ColumnCodec, ...]

    @property
    def names(self) -> list:
        """Original column labels, in feature order."""
        return [c.name for c in self.columns]

    @property
    def binned(self) -> dict[str, str]:
        """Each binned column's name (as text) and how its bins were chosen (:attr:`ColumnCodec.binning`)."""
        return {str(c.name): c.binning or "binned" for c in self.columns if c.how == "bin"}

    def to_frame(self, X) -> pd.DataFrame:
        """Decode encoded inputs into a frame with the original column names and dtypes.

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Codes; float arrays holding integers (what models are called with) are accepted.

        Returns
        -------
        pandas.DataFrame, shape (n_samples, n_features)

        Raises
        ------
        DomainError
            If ``X`` has the wrong shape, holds a non-integer, or a code with no value (naming the column).
        """
        X = _as_codes(X, len(self.columns))
        return pd.DataFrame({c.name: c._column(X[:, j]) for j, c in enumerate(self.columns)})


def _as_codes(X, n_features: int) -> np.ndarray:
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[1] != n_features:
        raise DomainError(f"codes must have shape (n_samples, {n_features}), got {X.shape}")
    if X.dtype.kind in "iu":
        return X.astype(np.int64, copy=False)
    if X.dtype.kind != "f":
        raise DomainError(f"codes must be numbers, got dtype {X.dtype}")
    codes = np.rint(X)
    bad = codes != X
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise DomainError(f"code {X[row, col]!r} at row {row}, column {col} is not an integer")
    return codes.astype(np.int64)


# ---------------------------------------------------------------------------- built by from_frame's encoders
def category_codec(series: pd.Series, categories: list, has_missing: bool) -> ColumnCodec:
    """Decoder of a categorical column whose code ``i`` is ``categories[i]`` and code ``len`` is missing.

    Parameters
    ----------
    series : pandas.Series, shape (n_samples,)
        The raw column (its dtype is restored on decoding).
    categories : list
        The distinct values, in code order.
    has_missing : bool
        Whether the column holds a missing value (then code ``len(categories)``).

    Returns
    -------
    ColumnCodec
    """
    missing = _missing_marker(series) if has_missing else None
    table = np.empty(len(categories) + has_missing, dtype=object)
    table[:len(categories)] = categories
    if has_missing:
        table[-1] = missing
    if pd.api.types.is_bool_dtype(series.dtype) and isinstance(series.dtype, np.dtype):
        table = table.astype(bool)
    return ColumnCodec(series.name, series.dtype, "category", table)


def integer_codec(series: pd.Series) -> ColumnCodec:
    """Decoder of an integer-valued column: the code is the value.

    Parameters
    ----------
    series : pandas.Series, shape (n_samples,)
        The raw column.

    Returns
    -------
    ColumnCodec
    """
    return ColumnCodec(series.name, series.dtype, "integer")


def rank_codec(series: pd.Series, values: np.ndarray) -> ColumnCodec:
    """Decoder of an integer column coded by rank: code ``i`` is ``values[i]`` (sorted distinct values, exact).

    Parameters
    ----------
    series : pandas.Series, shape (n_samples,)
        The raw column.
    values : numpy.ndarray, shape (n_values,)
        Its sorted distinct values.

    Returns
    -------
    ColumnCodec
    """
    return ColumnCodec(series.name, series.dtype, "rank", np.asarray(values))


def bin_codec(series: pd.Series, codes: np.ndarray, edges: np.ndarray, has_missing: bool,
              binning: str | None = None) -> ColumnCodec:
    """Decoder of a binned column: each bin's lower median of the data values in it (see module docstring).

    Parameters
    ----------
    series : pandas.Series, shape (n_samples,)
        The raw column.
    codes : numpy.ndarray of int64, shape (n_samples,)
        Its bin codes; code ``len(edges) - 1`` is the missing bin.
    edges : numpy.ndarray of float, shape (n_bins + 1,)
    has_missing : bool
    binning : str, optional
        How the bins were chosen, in words (:attr:`ColumnCodec.binning`).

    Returns
    -------
    ColumnCodec
    """
    n_bins = len(edges) - 1
    present = codes < n_bins
    values = pd.Series(series.to_numpy(dtype=float, na_value=np.nan)[present])
    medians = values.groupby(codes[present]).quantile(0.5, interpolation="lower")
    low, high = edges[:-1], edges[1:]
    # an open bin's midpoint is computed (-inf + inf is NaN) but not kept: the first bin, (-inf, b], holds b; the
    # last, (a, inf), the integer above a
    with np.errstate(invalid="ignore"):
        table = np.where(np.isinf(low), np.where(np.isinf(high), 0.0, high),
                         np.where(np.isinf(high), np.floor(low) + 1, (low + high) / 2))
    if pd.api.types.is_integer_dtype(series.dtype):
        table = np.round(table)
    table[medians.index.to_numpy()] = medians.to_numpy()
    if has_missing:
        table = np.append(table, np.nan)
    return ColumnCodec(series.name, series.dtype, "bin", table, binning, np.asarray(edges, dtype=float))


def _missing_marker(series: pd.Series):
    """The column's own missing value (``None``, ``NaN``, ``pd.NA``), as first seen in the data."""
    missing = series[series.isna()]
    return missing.iloc[0] if len(missing) else np.nan
