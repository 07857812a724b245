"""Schema files (TOML): what ``chiralfair run --data`` needs to know about a data file, kept between runs.

Written by ``chiralfair schema infer FILE --label COL --protected A,B`` and read by ``run --schema``::

    label = "survived"
    positive_class = "yes"
    protected = ["sex"]               # one attribute over several one-hot columns: [["sex_Female", "sex_Male"]]

    [columns.sex]
    type = "str"                      # the column's pandas dtype, honoured when the data is read
    categories = ["female", "male"]   # text and categorical columns: values seen (missing values aside)

    [columns.age]
    type = "float64"
    missing = 263                     # missing values in the inferred file
    bins = [-inf, 19.0, 24.0, ..., inf]  # edges, or a number of equal-width bins

Non-integer numeric columns, and numeric columns with missing values, get ``n_bins`` quantile bins (each holding
about as many rows of the inferred file; one bin per value for a column with that few), written as edges so that
later runs on other files cut them the same way. The outer bins are open-ended (first edge ``-inf``, last ``inf``):
a held-out value below or above every value of the inferred file falls in the outer bin, never refused. Edges given
with ``bins=`` (``--bins``) are written as given; a value beyond finite outer edges is refused, naming its row.
Bins are the search's view only: the verdict, F1 and group metrics are computed on the rows as given.

``type`` is honoured: ``"category"`` reads the column as a pandas categorical of its ``categories`` in their order
(what a LightGBM model fitted on categoricals takes), any other pandas dtype (``"str"``, ``"int64"``,
``"float64"``, ``"bool"``, ...) casts it; an unknown type, or a table or key the schema does not know, is refused
with the valid names.

Couplings and constraints (architecture: counterparts that could exist) are written by hand::

    constraints = ["sex=Female excludes relationship=Husband", "age >= education_num + 1"]

    [couple.sex]                      # relationship changes with sex
    relationship = {Husband = "Wife", Wife = "Husband"}
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..exceptions import DatasetError


def infer_schema(frame: pd.DataFrame, *, label, positive_class, protected: Sequence[str | Sequence[str]],
                 bins: Mapping[str, int | Sequence[float]] | None = None, n_bins: int = 10) -> str:
    """TOML text of a schema for ``frame``.

    Parameters
    ----------
    frame : pandas.DataFrame, shape (n_samples, n_columns)
    label : column name
    positive_class : object or None
    protected : sequence of str or of sequences of str
        The protected attributes; a tuple (or list) of columns is one attribute spread over several (one-hot)
        columns, written as a list inside the list (``protected = [["sex_Female", "sex_Male"], "race"]``).
    bins : mapping, optional
        Bins to write as given (edges or a count); other non-integer numeric columns get ``n_bins`` quantile bins,
        written as edges whose first is ``-inf`` and last ``inf`` (open-ended outer bins).
    n_bins : int

    Returns
    -------
    str

    Raises
    ------
    DatasetError
        If ``label`` or a protected attribute is not a column, a column is named twice, an attribute holds some but
        not all of a set of one-hot columns (``sex_Female`` or ``sex_Female+race`` beside ``sex_Male``), or the frame
        has no rows (no values to write).
    """
    if len(frame) == 0:
        raise DatasetError("the frame has no rows: a schema's types and categories are read from its values")
    named = [c for item in protected for c in (item if isinstance(item, list | tuple) else [item])]
    missing = [c for c in [label, *named] if c not in frame.columns]
    if missing:
        raise DatasetError(f"columns {missing} are not in the frame; columns: {', '.join(map(str, frame.columns))}")
    _check_protected_columns(frame, protected, named)
    bins = dict(bins or {})
    lines = [f"label = {_toml(label)}"]
    if positive_class is not None:
        lines.append(f"positive_class = {_toml(positive_class)}")
    lines.append(f"protected = {_toml(list(protected))}")
    for column in frame.columns:
        if column == label:
            continue
        lines += ["", f"[columns.{_toml(str(column))}]", *_column_lines(frame[column], bins.get(column), n_bins)]
    return "\n".join(lines) + "\n"


def _check_protected_columns(frame: pd.DataFrame, protected, named: list) -> None:
    """Refuse a column named twice, or an attribute holding some but not all of a set of one-hot columns.

    One-hot columns are told as :meth:`Domain.with_protected <chiralfair.domain.Domain.with_protected>` tells them
    (a name prefix before the last ``_``, ``.``, ``=`` or ``:``, 0/1 values, exactly one 1 per row), so that the
    schema written is one ``run --schema`` accepts.
    """
    from ..domain.declaration import ONE_HOT_SEPARATORS

    twice = sorted({str(c) for c in named if named.count(c) > 1})
    if twice:
        raise DatasetError(f"protected column(s) {twice} are named twice: a column belongs to one attribute, once")
    by_prefix: dict[str, list] = {}
    for column in frame.columns:
        cut = max(str(column).rfind(sep) for sep in ONE_HOT_SEPARATORS)
        if cut > 0:
            by_prefix.setdefault(str(column)[:cut], []).append(column)
    for cols in by_prefix.values():
        block = frame[cols]
        if len(cols) < 2 or not all(pd.api.types.is_numeric_dtype(block[c]) or pd.api.types.is_bool_dtype(block[c])
                                    for c in cols):
            continue
        values = block.to_numpy(dtype=float, na_value=np.nan)
        if not (np.isin(values, (0, 1)).all() and (values.sum(axis=1) == 1).all()):
            continue
        for item in protected:
            held = [c for c in (item if isinstance(item, list | tuple) else [item]) if c in cols]
            if held and len(held) < len(cols):
                whole = [n for c in (item if isinstance(item, list | tuple) else [item]) if c not in held[1:]
                         for n in ((c,) if c not in cols else cols)]
                raise DatasetError(
                    f"protected attribute {'+'.join(map(str, item)) if isinstance(item, list | tuple) else item!r} "
                    f"holds {', '.join(map(repr, held))} but not all of the one-hot columns "
                    f"{', '.join(map(repr, cols))} (0/1, exactly one 1 per row): its counterparts would be impossible "
                    f"rows (no 1, or two 1s); give it every one of them: --protected {'+'.join(map(str, whole))!r}")


def _column_lines(series: pd.Series, spec, n_bins: int) -> list[str]:
    dtype = series.dtype
    out = [f"type = {_toml(str(dtype))}"]
    n_missing = int(series.isna().sum())
    if n_missing:
        out.append(f"missing = {n_missing}")
    numeric = pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
    if not numeric:
        values = (list(dtype.categories) if isinstance(dtype, pd.CategoricalDtype)
                  else sorted(series.dropna().unique().tolist(), key=lambda v: (str(type(v)), v)))
        out.append(f"categories = {_toml(values)}")
        return out
    if spec is None:
        present = series.dropna().to_numpy(dtype=float)
        # Non-integer values, or missing values in a numeric column, need bins (a missing value gets a bin of its own).
        if present.size and ((present != np.round(present)).any() or n_missing):
            from .frame import auto_edges

            spec = sorted({float(f"{e:.6g}") for e in auto_edges(series, str(series.name), n_bins)})
            # open-ended outer bins (architecture: the population and the domain): a held-out value beyond this
            # file's range is in the outer bin, not refused
            spec[0], spec[-1] = -np.inf, np.inf
    if spec is not None:
        out.append(f"bins = {_toml(spec if isinstance(spec, int) else [float(e) for e in spec])}")
    return out


def _toml(value) -> str:
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        return repr(float(value))
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)  # a JSON string is a valid TOML basic string


# The keys a schema may hold, at its top and in each [columns."name"] table.
TOP_KEYS = ("label", "positive_class", "protected", "columns", "couple", "constraints")
COLUMN_KEYS = ("type", "categories", "missing", "bins")


def read_schema(path: str | os.PathLike) -> dict:
    """Read a schema file into the settings of a run.

    Parameters
    ----------
    path : str or path-like
        A schema TOML file (``chiralfair schema infer``).

    Returns
    -------
    dict
        ``label``, ``positive_class`` (None if absent), ``protected`` (list), ``bins`` (column → edges or count),
        ``categories`` (column → list of values), ``types`` (column → pandas dtype name), ``couple`` (the
        ``[couple]`` table as ``{attribute: {column: map}}``, None if absent) and ``constraints`` (list of rules,
        empty if absent).

    Raises
    ------
    DatasetError
        If the file is missing, is not TOML, or lacks ``label`` / ``protected``, or ``couple`` is not a table or
        ``constraints`` not a list of strings; for a key or table the schema does not know (every one at once,
        with the valid keys: a key written after ``[columns."x"]`` belongs to that table in TOML), or a column
        type pandas does not know.
    """
    path = Path(path)
    try:
        doc = tomllib.loads(path.read_text())
    except OSError as err:
        raise DatasetError(f"cannot read schema {str(path)!r}: {err.strerror or err}") from err
    except tomllib.TOMLDecodeError as err:
        raise DatasetError(f"schema {str(path)!r} is not valid TOML: {err}") from err
    _check_keys(doc, path)
    for key in ("label", "protected"):
        if key not in doc:
            raise DatasetError(f"schema {str(path)!r} has no {key!r}")
    columns = doc.get("columns", {})
    couple = doc.get("couple")
    if couple is not None and not isinstance(couple, dict):
        raise DatasetError(f"schema {str(path)!r}: couple must be a table [couple.<attribute>] mapping columns to "
                           "maps, e.g. relationship = {Husband = \"Wife\", Wife = \"Husband\"}")
    constraints = doc.get("constraints", [])
    if isinstance(constraints, str):
        constraints = [constraints]
    if not isinstance(constraints, list) or not all(isinstance(c, str) for c in constraints):
        raise DatasetError(f"schema {str(path)!r}: constraints must be a list of rules as text, e.g. "
                           "[\"sex=Female excludes relationship=Husband\"]")
    return {"couple": couple, "constraints": list(constraints), "label": doc["label"],
            "positive_class": doc.get("positive_class"),
            "protected": [doc["protected"]] if isinstance(doc["protected"], str) else list(doc["protected"]),
            "bins": {c: spec["bins"] for c, spec in columns.items() if "bins" in spec},
            "categories": {c: spec["categories"] for c, spec in columns.items() if "categories" in spec},
            "types": {c: spec["type"] for c, spec in columns.items() if "type" in spec}}


def _check_keys(doc: dict, path) -> None:
    """Refuse every key or table the schema does not know, all at once, and every unknown column type."""
    # the keys quoted as TOML writes them (the command line leaves a quoted name alone: 'positive_class')
    problems = [f"unknown key {key!r} (keys: {', '.join(map(repr, TOP_KEYS))})" for key in doc if key not in TOP_KEYS]
    columns = doc.get("columns", {})
    if not isinstance(columns, dict):
        problems.append('"columns" must be tables [columns."<name>"]')
        columns = {}
    for name, spec in columns.items():
        if not isinstance(spec, dict):
            problems.append(f'[columns] key {name!r} is not a table [columns.{_toml(name)}]')
            continue
        keys = ", ".join(map(repr, COLUMN_KEYS))
        problems += [f"[columns.{_toml(name)}] has unknown key {key!r} (keys: {keys}; a key written after "
                     "a [columns.\"...\"] table belongs to it)" for key in spec if key not in COLUMN_KEYS]
        if "type" in spec and _dtype_problem(spec["type"]) is not None:
            problems.append(f"[columns.{_toml(name)}] {_dtype_problem(spec['type'])}")
    if problems:
        raise DatasetError(f"schema {str(path)!r}: " + "; ".join(problems))


def _dtype_problem(name) -> str | None:
    if name == "category":
        return None
    try:
        pd.api.types.pandas_dtype(name)
    except (TypeError, ValueError):
        return (f"type {name!r} is not a pandas dtype (e.g. \"category\", \"str\", \"int64\", \"float64\", "
                "\"bool\")")
    return None


def typed_frames(frames: Sequence[pd.DataFrame], types: Mapping[str, str],
                 categories: Mapping[str, Sequence], sources: Sequence[str] | None = None) -> list[pd.DataFrame]:
    """The frames with the schema's column types applied, the same way in each (the data and its test rows).

    Parameters
    ----------
    frames : sequence of pandas.DataFrame
        Frames with the same columns.
    types : mapping of str to str
        Column -> pandas dtype name, or ``"category"``: a categorical of the column's ``categories`` (in that
        order; without them, the sorted values all frames hold).
    categories : mapping of str to sequence
        The schema's categories per column.
    sources : sequence of str, optional
        Each frame's source in words (``"data file 'train.csv'"``, ``"the test frame (test=)"``), as
        :func:`~chiralfair.datasets.frame.stacked_frames` takes them: a value that does not fit is named with its
        row there.

    Returns
    -------
    list of pandas.DataFrame

    Raises
    ------
    DatasetError
        Naming the column, the type, the value that does not fit it, and its row in its own file or frame.
    """
    out = [f.copy() for f in frames]
    for column, name in types.items():
        if not out or column not in out[0].columns:
            continue
        if name == "category":
            values = categories.get(column)
            if values is None:
                values = sorted(set().union(*(f[column].dropna().unique().tolist() for f in out)), key=str)
            dtype = pd.CategoricalDtype(list(values))
        else:
            dtype = pd.api.types.pandas_dtype(name)
        for k, f in enumerate(out):
            if f[column].dtype == dtype:
                continue
            try:
                f[column] = f[column].astype(dtype)
            except (TypeError, ValueError) as err:
                source = sources[k] if sources is not None else None
                where = _unfit_value_text(f[column], dtype, source)
                raise DatasetError(f"column {column!r} cannot be read as the schema's type {name!r}{where}: {err}; fix "
                                   "that value, or change the column's type in the schema") from err
    return out


def _unfit_value_text(series: pd.Series, dtype, source: str | None) -> str:
    """``" (value 'abc' at data row 3 (line 4) of data file 'x.csv')"``: the first value that does not fit ``dtype``.

    Found by halving the rows (a few conversions, no loop over the rows); ``""`` when no single value is at fault.
    """
    from .frame import first_failing_row, row_text, source_row_text

    def fails(a: int, b: int) -> bool:
        try:
            series.iloc[a:b].astype(dtype)
        except (TypeError, ValueError):
            return True
        return False

    lo = first_failing_row(len(series), fails)
    if lo is None or not fails(lo, lo + 1):
        return ""
    value = series.iloc[lo]
    shown = repr(value.item() if isinstance(value, np.generic) else value)
    where = (f"{source_row_text(source, series.index[lo])} of {source}" if source is not None
             else row_text(series.index, lo))
    return f" (value {shown} at {where})"


def infer_schema_file(path: str | os.PathLike, *, label, protected: Sequence[str | Sequence[str]],
                      positive_class=None, bins: Mapping[str, int | Sequence[float]] | None = None,
                      n_bins: int = 10) -> str:
    """TOML text of a schema for the data file at ``path`` (``.csv`` or ``.parquet``); see :func:`infer_schema`.

    ``positive_class`` given as text (``"1"``) matches the label's own value (the integer 1).

    Parameters
    ----------
    path : str or path-like
        A ``.csv`` or ``.parquet`` file.
    label : hashable
        The label column.
    protected : sequence of str or of sequences of str
        The protected attributes; a tuple of columns is one attribute over several (one-hot) columns.
    positive_class : object, optional
        The label value of the positive class (needed unless the label holds only 0/1).
    bins : mapping of str to int or sequence of float, optional
        Bins to write for numeric columns (edges or a count), as in :func:`~chiralfair.datasets.from_frame`.
    n_bins : int, default=10
        Quantile bins proposed for numeric columns that are not integers and not in ``bins``.

    Returns
    -------
    str
        The TOML text (label, positive class, protected attributes, one table per column).

    Raises
    ------
    DatasetError
        For a file that cannot be read, or a label, protected attribute or positive class not in it.
    """
    from .frame import match_label_value, read_frame

    frame = read_frame(path)
    if positive_class is not None:
        positive_class = match_label_value(frame, label, positive_class)
    return infer_schema(frame, label=label, positive_class=positive_class, protected=protected, bins=bins,
                        n_bins=n_bins)
