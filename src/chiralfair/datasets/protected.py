"""What a protected attribute of the user's data may be: checks made when a frame's columns become one.

Two kinds of column give a silently wrong answer as a protected attribute, so they are refused with the fix:

- a **number with many values** and no bins (an age in whole years: 52 values). The check would try each of
  them as a counterpart, as if each age were a category: 52 queries per input, groups of a handful of rows,
  and the question "would any other age change the decision?" instead of "would a younger or older person be
  treated differently?". Bins (``bins={"age": [0, 30, 45, 60, 120]}``) or declared values say what to compare.
- **two spellings of one value** ("Zürich" in Unicode NFC and NFD, ``"Male"`` and ``" Male"``): every pair
  of spellings would be counted as IDIs, which mean nothing; merging them would feed the model a spelling the
  data row does not have, so they are refused with the values named.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..domain import Domain
from ..exceptions import DatasetError, Problems
from .values import alike_groups, show_spelling

# A numeric protected attribute (unbinned, not categorical) may have at most this many values.
MAX_NUMERIC_PROTECTED_VALUES = 10


def check_protected_columns(domain: Domain, codec, X: np.ndarray, *, declared: Mapping | None = None) -> None:
    """Refuse a protected attribute that is a many-valued number without bins, or holds two spellings of a value.

    Parameters
    ----------
    domain : Domain
        With the protected attributes set.
    codec : FrameCodec or None
        How the columns were encoded (:func:`~chiralfair.datasets.from_frame`); None (the benchmark datasets,
        whose encodings are curated) checks nothing.
    X : numpy.ndarray of int64, shape (n_samples, n_features)
    declared : mapping, optional
        Attributes whose values the caller declared (``with_protected(values=...)``): their values say what to
        compare, so a many-valued number is accepted.

    Raises
    ------
    DatasetError
        Naming the attribute, its values and the fix.
    """
    if codec is None:
        return
    declared_names = {str(k) for k in (declared or {})}
    problems = Problems()  # every attribute's problem at once
    for attribute in domain.attributes:
        for c in attribute.columns:
            column = codec.columns[c]
            name = domain.features[c].name
            with problems.check():
                if column.how in ("integer", "rank") and not attribute.is_group and \
                        attribute.name not in declared_names:
                    _refuse_many_valued_number(name, attribute.size, X[:, c], column)
                if column.how == "category":
                    _refuse_two_spellings(name, column.table, X[:, c])
    problems.raise_all()


def _refuse_many_valued_number(name: str, n_values: int, codes: np.ndarray, column) -> None:
    if n_values <= MAX_NUMERIC_PROTECTED_VALUES:
        return
    values = codes if column.how == "integer" else column.table[codes]
    low, high = values.min(), values.max()
    edges = np.unique(np.quantile(values.astype(float), np.linspace(0, 1, 5))).round().tolist()
    raise DatasetError(
        f"protected attribute {name!r} is a number with {n_values} distinct values ({low} to {high}) and no bins: "
        f"the discrimination check would try every one of them as a counterpart, as if each were a category "
        f"({n_values} model queries per input, groups of a few rows each), which asks whether any other value "
        f"would change the decision, not whether a lower or higher one would. Say what to compare: bins, e.g. "
        f"bins={{{name!r}: {[int(e) if float(e).is_integer() else e for e in edges]}}} (quartile edges; CLI: "
        f"--bins {name}={':'.join(str(int(e) if float(e).is_integer() else e) for e in edges)}) or "
        f"bins={{{name!r}: 4}} (equal width); if its values are category codes, make the column categorical "
        f"(df[{name!r}] = df[{name!r}].astype('category')); or, on a Dataset, declare the values to compare "
        f"(dataset.with_protected([{name!r}], values={{{name!r}: [...]}})). At most "
        f"{MAX_NUMERIC_PROTECTED_VALUES} values are taken as categories without being asked")


def _refuse_two_spellings(name: str, table: np.ndarray, codes: np.ndarray) -> None:
    groups = alike_groups(table)
    if not groups:
        return
    position = {id(v): i for i, v in enumerate(table)}
    counts = np.bincount(codes, minlength=len(table))
    shown = "; ".join(" and ".join(f"{show_spelling(v)} ({int(counts[position[id(v)]])} rows)" for v in group)
                      for group in groups)
    raise DatasetError(
        f"protected attribute {name!r} holds values that differ only in Unicode normal form or whitespace: {shown}. "
        "As separate values, every pair of spellings would be counted as IDIs that mean nothing; merged, the model "
        "would be fed a spelling a data row does not have. Normalise the column before encoding it, e.g. "
        f"df[{name!r}] = df[{name!r}].str.normalize('NFC').str.strip()")
