"""Frames of other libraries (polars, pyarrow, modin, ...) taken as the pandas frame the encoder reads, via narwhals.

:func:`as_pandas` lets :func:`~chiralfair.datasets.from_frame`, :func:`chiralfair.audit` and the other front
doors take any eager or lazy frame narwhals knows, with the same result as the same data in pandas. Two kinds
of column are translated on the way, so that a polars frame encodes as the CSV it came from would:

- a polars ``Categorical`` keeps its categories in the order they were first seen (its physical order), not in
  an order anyone declared; it becomes text, coded in sorted order as a string column is;
- a polars ``Enum`` declares its categories; it becomes a pandas categorical with those categories, unordered
  (a fixed set of values, like a pandas ``Categorical``; an ordinal meaning would need ``ordered=True`` in pandas).

A Parquet file keeps text columns dictionary-encoded, which pandas reads back as categoricals in the dictionary's
order; :func:`read_parquet_frame` turns those into text again unless pandas wrote the file (then the order is one
a pandas ``Categorical`` declared), so that a Parquet file written by polars, pyarrow or a database encodes as its
CSV would.

References
----------
.. [1] Gorelli et al. narwhals: "Extremely lightweight and extensible compatibility layer between dataframe
   libraries." https://narwhals-dev.github.io/narwhals/
"""

from __future__ import annotations

import pandas as pd

from ..exceptions import DatasetError


def is_frame(obj) -> bool:
    """Whether ``obj`` is a pandas frame or a frame narwhals can read (polars, pyarrow Table, ...).

    Parameters
    ----------
    obj : object

    Returns
    -------
    bool
    """
    if isinstance(obj, pd.DataFrame):
        return True
    import narwhals as nw

    try:
        nw.from_native(obj)
    except TypeError:
        return False
    return True


def as_pandas(frame, *, what: str = "data") -> pd.DataFrame:
    """``frame`` as a pandas DataFrame (the frame itself when it is one; a lazy frame is collected).

    Parameters
    ----------
    frame : pandas.DataFrame, polars.DataFrame, polars.LazyFrame, pyarrow.Table, or another narwhals frame
    what : str
        What the frame is, for the error message (``"data"``, ``"test"``, ``"df"``).

    Returns
    -------
    pandas.DataFrame, shape (n_rows, n_columns)
        Column names and order kept; polars ``Categorical`` columns as text, ``Enum`` columns as unordered
        pandas categoricals (see the module docstring).

    Raises
    ------
    DatasetError
        If ``frame`` is not a frame narwhals knows (naming its type).
    """
    if isinstance(frame, pd.DataFrame):
        return frame
    import narwhals as nw

    try:
        native = nw.from_native(frame)
    except TypeError:
        raise DatasetError(f"{what} must be a DataFrame (pandas, polars, pyarrow, or another frame narwhals reads), "
                           f"a .csv/.parquet path or a chiralfair Dataset, got {type(frame).__name__}") from None
    if isinstance(native, nw.LazyFrame):
        native = native.collect()
    schema = native.schema
    text = [nw.col(name).cast(nw.String) for name, dtype in schema.items() if dtype == nw.Categorical]
    if text:
        native = native.with_columns(text)
    out = native.to_pandas()
    for name, dtype in schema.items():
        if isinstance(dtype, nw.Enum):
            out[name] = out[name].cat.as_unordered()
    return out


def read_parquet_frame(path) -> pd.DataFrame:
    """A Parquet file as pandas reads it, its unordered categoricals as text unless pandas wrote the file.

    Parameters
    ----------
    path : path

    Returns
    -------
    pandas.DataFrame
    """
    import pyarrow.parquet as pq

    frame = pd.read_parquet(path)
    if b"pandas" in (pq.read_schema(path).metadata or {}):
        return frame
    for column in frame.columns:
        dtype = frame[column].dtype
        if isinstance(dtype, pd.CategoricalDtype) and not dtype.ordered:
            frame[column] = frame[column].astype(dtype.categories.dtype)
    return frame
