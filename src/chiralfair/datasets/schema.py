"""Schema files (TOML): what ``chiralfair run --data`` needs to know about a data file, kept between runs.

Written by ``chiralfair schema infer FILE --label COL --protected A,B`` and read by ``run --schema``::

    label = "survived"
    positive_class = "yes"
    protected = ["sex"]

    [columns.sex]
    type = "str"                      # the column's pandas dtype when inferred
    categories = ["female", "male"]   # text and categorical columns: values seen (missing values aside)

    [columns.age]
    type = "float64"
    missing = 263                     # missing values in the inferred file
    bins = [0.17, 8.15, 16.1, ...]    # edges, or a number of equal-width bins

Non-integer numeric columns, and numeric columns with missing values, get ``n_bins`` equal-width bins between their
minimum and maximum, written as edges so that later runs on other files cut them the same way.

Couplings and constraints (design §12) are written by hand::

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


def infer_schema(frame: pd.DataFrame, *, label, positive_class, protected: Sequence[str],
                 bins: Mapping[str, int | Sequence[float]] | None = None, n_bins: int = 10) -> str:
    """TOML text of a schema for ``frame``.

    Parameters
    ----------
    frame : pandas.DataFrame, shape (n_samples, n_columns)
    label : column name
    positive_class : object or None
    protected : sequence of str
    bins : mapping, optional
        Bins to write as given (edges or a count); other non-integer numeric columns get ``n_bins`` edges.
    n_bins : int

    Returns
    -------
    str

    Raises
    ------
    DatasetError
        If ``label`` or a protected attribute is not a column.
    """
    missing = [c for c in [label, *protected] if c not in frame.columns]
    if missing:
        raise DatasetError(f"columns {missing} are not in the frame; columns: {', '.join(map(str, frame.columns))}")
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
            low, high = float(present.min()), float(present.max())
            spec = [float(f"{e:.6g}") for e in np.linspace(low, high if high > low else low + 1, n_bins + 1)]
            spec[0], spec[-1] = min(spec[0], low), max(spec[-1], high)
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


def read_schema(path: str | os.PathLike) -> dict:
    """Read a schema file into the settings of a run.

    Returns
    -------
    dict
        ``label``, ``positive_class`` (None if absent), ``protected`` (list), ``bins`` (column → edges or count),
        ``categories`` (column → list of values), ``couple`` (the ``[couple]`` table as
        ``{attribute: {column: map}}``, None if absent) and ``constraints`` (list of rules, empty if absent).

    Raises
    ------
    DatasetError
        If the file is missing, is not TOML, or lacks ``label`` / ``protected``, or ``couple`` is not a table or
        ``constraints`` not a list of strings.
    """
    path = Path(path)
    try:
        doc = tomllib.loads(path.read_text())
    except OSError as err:
        raise DatasetError(f"cannot read schema {str(path)!r}: {err.strerror or err}") from err
    except tomllib.TOMLDecodeError as err:
        raise DatasetError(f"schema {str(path)!r} is not valid TOML: {err}") from err
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
            "categories": {c: spec["categories"] for c, spec in columns.items() if "categories" in spec}}


def infer_schema_file(path: str | os.PathLike, *, label, protected: Sequence[str], positive_class=None,
                      bins: Mapping[str, int | Sequence[float]] | None = None, n_bins: int = 10) -> str:
    """TOML text of a schema for the data file at ``path`` (``.csv`` or ``.parquet``); see :func:`infer_schema`.

    ``positive_class`` given as text (``"1"``) matches the label's own value (the integer 1).

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
