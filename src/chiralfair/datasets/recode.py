"""Codes of rows read after the domain was made: a streamed batch, in the domain's own codes.

:func:`~chiralfair.datasets.from_frame` encodes the rows it is given together; a verdict streamed over a Parquet
folder, a Dask or a polars frame (:mod:`chiralfair.verdict.streaming`) meets its rows batch by batch, after the
domain was made from the schema or a stated sample. Each batch is encoded here in that domain's codes, column by
column, one vectorised look-up each:

==================  ==========================================================================================
column              code of a value
==================  ==========================================================================================
categorical, text   its position among the domain's categories; a missing value the missing code
integer-valued      the value itself, within the domain's bounds
ranked integers     its rank among the domain's values
binned numeric      its bin at the domain's edges (intervals ``(a, b]``, the first closed on the left too);
                    a missing value the missing bin. Bins chosen automatically on the sample are open at both
                    ends, as a schema's are: a value beyond the sample's range falls in the outer bin
==================  ==========================================================================================

A value the domain never saw (a domain's codes are those its rows hold: a category a schema lists but no row of the
sample holds is none of them) follows the stated rule for values only the held-out rows hold
(:mod:`chiralfair.datasets.unseen_values`): a **protected** value is none of the attribute's values, so its row is
in no group and has no counterpart (left out of the verdict, counted by attribute). A value of **another column**
the domain cannot code (a category, an integer beyond its bounds, a number beyond finite bin edges, a missing
value in a column that had none) is refused, naming the column, the value, where it was read and the parameter that
fixes it: its code decides the rule tree, the constraints and the plausibility of every counterpart, and no code
can be made up for it. Two exceptions keep the rule for values only the held-out rows hold (the person is who they
are) for a model fed the rows as given:

- a **number beyond the range** of an integer or binned column is used as given by the model and coded as the
  nearest outer code (the domain's lowest or highest) for the rule tree, the constraints and the plausibility;
- a **category the domain never held** (``native-country=Ecuador`` where neither the data nor the domain sample
  holds one) is used as given by the model, as the in-memory door uses a category only the held-out rows hold
  (:mod:`chiralfair.datasets.unseen_values`): the person is checked against every counterpart and counted in the
  share, the groups, who is harmed, the gap and the model's F1. Having no code, the value is read by no rule: the
  person is in none of the rule tree's rules (who is harmed, in rules, is fitted on the people the domain codes) and
  the plausibility of their counterparts reads their other columns (a value the data never held says nothing of
  which protected values go with it). A constraint or coupling that reads the column decides which counterparts
  exist from its codes, so there the value is refused as above.

Both are counted by column (and the unseen categories named) in the verdict's notes and ``meta["stream"]``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..exceptions import DatasetError
from .base import Dataset
from .codec import ColumnCodec

FIX = ("make the domain from rows that hold it: a domain_sample that reaches this row (the domain is made from the "
       "data and the stream's first domain_sample rows; a schema's categories are codes only when a row holds them)")

# Values of a column the domain never held, named in the verdict (the rest are counted, not named).
NAMED_VALUES = 5


def recode(dataset: Dataset, frame: pd.DataFrame, *, where: str, first_row: int = 0,
           as_given: bool = False) -> tuple[np.ndarray, np.ndarray, dict[str, int], np.ndarray, dict[str, dict]]:
    """The codes of ``frame``'s rows in ``dataset``'s domain, and where a protected value is one it never saw.

    Parameters
    ----------
    dataset : Dataset
        Built by :func:`~chiralfair.datasets.from_frame` (it has a codec): the domain the rows are coded in.
    frame : pandas.DataFrame, shape (n, ...)
        Rows holding at least the dataset's feature columns (others are ignored).
    where : str
        Where the rows were read (a file, a partition), for the error messages.
    first_row : int, default 0
        The position of ``frame``'s first row in ``where`` (an error names the row there), unless ``frame``'s index
        names each row's source and its row there (:class:`~chiralfair.datasets.stream.Batch`), which then names it.
    as_given : bool, default False
        The model is fed the rows as given (not codes): a number of another column beyond the domain's range (an
        integer beyond its bounds, a number beyond a binned column's finite edges) is then coded as the nearest
        outer code (the lowest or highest), for the rule tree, the constraints and the plausibility only; the
        model is asked about the value itself, and the rows are counted by column. A category of another column
        the domain never held (and that no constraint or coupling reads) is used as given too, flagged in ``new``.

    Returns
    -------
    X : numpy.ndarray of int64, shape (n, n_features)
        Codes; a protected value the domain never saw is coded as the feature's lowest code, and flagged.
    unseen : numpy.ndarray of bool, shape (n, n_features)
        True where the value is a protected value the domain never saw (only protected columns can be True).
    beyond : dict of str to int
        With ``as_given``, the rows of each column holding a number beyond the domain's range (coded as the
        nearest outer code).
    new : numpy.ndarray of bool, shape (n, n_features)
        With ``as_given``, True where a non-protected category column holds a value the domain never held (coded as
        the feature's lowest code, which no figure of the person reads: the module docstring).
    new_values : dict of str to dict
        For each such column, ``{"rows": int, "values": list of str}``: its rows, and its first
        :data:`NAMED_VALUES` such values in sorted order.

    Raises
    ------
    DatasetError
        If the dataset has no codec, a feature column is missing from ``frame``, or a non-protected column holds a
        value the domain cannot code (module docstring).
    """
    codec = dataset.codec
    if codec is None:
        raise DatasetError(f"dataset {dataset.name!r} has no codec (it was not built from a frame): its rows cannot "
                           "be read from a file")
    absent = [c.name for c in codec.columns if c.name not in frame.columns]
    if absent:
        raise DatasetError(f"{where} lacks the column(s) {', '.join(map(repr, absent))} of the data; it holds "
                           f"{', '.join(map(str, frame.columns))}")
    from .base import columns_in_rules

    domain = dataset.domain
    protected = set(int(c) for c in domain.protected)
    in_rules = columns_in_rules(domain) if as_given else set()
    n = len(frame)
    X = np.empty((n, len(codec.columns)), dtype=np.int64)
    unseen = np.zeros((n, len(codec.columns)), dtype=bool)
    new = np.zeros((n, len(codec.columns)), dtype=bool)
    beyond: dict[str, int] = {}
    new_values: dict[str, dict] = {}
    for j, column in enumerate(codec.columns):
        feature = domain.features[j]
        codes, bad = _codes(column, feature, frame[column.name])
        bad |= (codes < feature.lo) | (codes > feature.hi)  # a category or bin the domain's rows never held
        if bad.any() and as_given and j not in protected and column.how in ("integer", "bin"):
            outer = _outer_codes(column, feature, frame[column.name], bad)
            placed = bad & (outer >= 0)
            if placed.any():
                codes = np.where(placed, outer, codes)
                bad &= ~placed
                beyond[str(column.name)] = int(placed.sum())
        if bad.any() and as_given and j not in protected and column.how == "category" and j not in in_rules:
            given = frame[column.name][bad]
            missing = given.isna().to_numpy()
            names = np.unique(given[~missing].astype(str).to_numpy(dtype=object)).tolist()[:NAMED_VALUES]
            new[:, j] = bad
            new_values[str(column.name)] = {"rows": int(bad.sum()),
                                            "values": (["a missing value"] if missing.any() else []) + names}
            codes = np.where(bad, feature.lo, codes)
            bad = np.zeros_like(bad)
        if bad.any():
            if j not in protected:
                from .stream import row_text_of

                row = int(np.argmax(bad))
                raise DatasetError(
                    f"column {column.name!r} holds {_show(frame[column.name].iloc[row])} "
                    f"({row_text_of(frame, row, where, first_row)}), "
                    f"a value the domain cannot code ({_known(column, feature)})"
                    + (", and a constraint or coupling reads the column, so which counterparts exist cannot be "
                       "decided for it" if j in in_rules and column.how == "category" else "") + f"; {FIX}")
            unseen[:, j] = bad
            codes = np.where(bad, feature.lo, codes)
        X[:, j] = codes
    return X, unseen, beyond, new, new_values


def _outer_codes(column: ColumnCodec, feature, series: pd.Series, bad: np.ndarray) -> np.ndarray:
    """For the ``bad`` values of a numeric column, the lowest code below its range, the highest above it; else -1.

    Only a number strictly beyond the domain's range has one: a missing value, a non-integer in an integer column
    or a value inside the range keeps none.
    """
    values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    if column.how == "integer":
        low, high = float(feature.lo), float(feature.hi)
        whole = values == np.round(values)
    else:
        edges = np.asarray(column.edges, dtype=np.float64)
        low, high = float(edges[0]), float(edges[-1])
        whole = np.ones(len(values), dtype=bool)
        top = feature.lo + len(edges) - 2  # the last bin (a missing value's code, if any, comes after it)
    out = np.full(len(values), -1, dtype=np.int64)
    with np.errstate(invalid="ignore"):
        out[bad & whole & (values < low)] = feature.lo
        out[bad & whole & (values > high)] = feature.hi if column.how == "integer" else top
    return out


def _codes(column: ColumnCodec, feature, series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """One column's codes and where a value has none."""
    isna = series.isna().to_numpy()
    if column.how == "integer":
        values = series.to_numpy(dtype=np.float64, na_value=np.nan)
        with np.errstate(invalid="ignore"):
            bad = isna | (values != np.round(values)) | (values < feature.lo) | (values > feature.hi)
        codes = np.where(bad, feature.lo, values).astype(np.int64)
        return codes, bad
    if column.how == "rank":
        table = np.asarray(column.table)
        values = series.to_numpy()
        position = np.searchsorted(table, values)
        inside = position < len(table)
        bad = isna | ~inside
        bad[inside] |= table[position[inside]] != values[inside]
        return np.where(bad, feature.lo, position).astype(np.int64), bad
    if column.how == "bin":
        edges = column.edges
        if edges is None:
            raise DatasetError(f"column {column.name!r}: its bins carry no edges, so rows read later cannot be cut "
                               "the same way")
        if column.binning and "automatically" in column.binning:  # the sample's range is no bound of the stream
            edges = np.concatenate([[-np.inf], edges[1:-1], [np.inf]])
        cut = pd.cut(series.astype("float64"), bins=edges, include_lowest=True, labels=False)
        codes = cut.to_numpy(dtype=np.float64, na_value=np.nan)
        n_bins = len(edges) - 1
        has_missing = len(column.table) > n_bins  # type: ignore[arg-type]  # a binned column has its table
        nan = np.isnan(codes)
        bad = nan & ~isna if has_missing else nan
        return np.where(bad, feature.lo, np.where(nan, n_bins, codes)).astype(np.int64), bad
    # a category: its position among the domain's categories; a missing value the missing code, when the domain's
    # rows held one (a "?" spelling the data used as its missing value is a category of its own here)
    if isinstance(column.dtype, pd.CategoricalDtype):
        categories = list(column.dtype.categories)
    else:
        table = np.asarray(column.table)
        with_missing = len(table) > 0 and table.dtype == object and _is_na(table[-1])
        categories = list(table[:-1] if with_missing else table)
    codes = _category_positions(series, categories)
    bad = (codes < 0) & ~isna
    if isna.any():
        if feature.missing == len(categories):
            codes[isna] = len(categories)
        else:
            bad |= isna
    return np.where(bad, feature.lo, codes), bad


def _category_positions(series: pd.Series, categories: list) -> np.ndarray:
    """Each value's position among ``categories`` (-1 for none, a missing value included), int64.

    Text held in Arrow (pandas' string dtype read from Parquet) is looked up by Arrow itself, without making a
    Python object of each value; anything else through a pandas index of the categories.
    """
    if getattr(series.dtype, "storage", None) == "pyarrow" and all(isinstance(c, str) for c in categories):
        import pyarrow as pa
        import pyarrow.compute as pc

        values = pa.array(series.array)  # no copy: the Arrow array the strings are held in
        found = pc.index_in(values, value_set=pa.array(categories, type=values.type))
        return np.asarray(pc.fill_null(found, -1).to_numpy(), dtype=np.int64)
    return pd.Index(categories, dtype=object).get_indexer(series.astype(object)).astype(np.int64)


def _is_na(value) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _known(column: ColumnCodec, feature) -> str:
    if column.how == "integer":
        return f"integers from {feature.lo} to {feature.hi}"
    if column.how == "bin" and column.edges is not None:
        return f"bin edges {column.edges[0]:g} to {column.edges[-1]:g}" + (
            "" if feature.missing is not None else ", no missing value")
    labels = [text for code, text in (feature.labels or {}).items() if feature.lo <= code <= feature.hi]
    shown = ", ".join(labels[:8])
    return f"its values: {shown}{', ...' if len(labels) > 8 else ''}"


def _show(value) -> str:
    if _is_na(value):
        return "a missing value"
    return f"the value {value.item() if isinstance(value, np.generic) else value!r}"
