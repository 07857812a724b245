"""Reading raw delimited files into columns of text, and turning columns into integer codes.

Every error names the file, the line (1-based, as an editor shows it) and the column at fault, so that a
truncated or re-formatted raw file says what is wrong with it. Conversions are vectorized with numpy and
pandas; only the field count check walks the rows (inside the C ``csv`` reader).
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..exceptions import DatasetError

MISSING_TOKENS = ("?", "")


@dataclass(frozen=True)
class Table:
    """Text columns read from a raw file.

    Attributes
    ----------
    display : str
        How the file is named in messages (its relative path and where it was read).
    columns : dict of str to numpy.ndarray of object, each shape (n_rows,)
        Raw text of each requested column.
    lines : numpy.ndarray of int64, shape (n_rows,)
        Line number (1-based) of each row in the file (the line it ends on, if a quoted field spans lines).
    """

    display: str
    columns: dict[str, np.ndarray]
    lines: np.ndarray

    @property
    def n_rows(self) -> int:
        """Number of data rows."""
        return int(self.lines.shape[0])

    def fail(self, row: int, column: str, problem: str) -> DatasetError:
        """Return the error for ``problem`` in ``column`` of data row ``row`` (0-based)."""
        return DatasetError(f"{self.display}, line {int(self.lines[row])}, column {column!r}: {problem}")


def read_table(path: Path, *, display: str, delimiter: str, names: Sequence[str] | None = None,
               usecols: Sequence[str] | None = None, skipinitialspace: bool = False) -> Table:
    """Read a delimited text file, checking that every non-blank line has the expected number of fields.

    Parameters
    ----------
    path : pathlib.Path
    display : str
        Name of the file in messages.
    delimiter : str
        One character.
    names : sequence of str, optional
        Column names of a file without a header line. Without ``names`` the first line is the header.
    usecols : sequence of str, optional
        Columns to keep (default: all). With a header, the first column of each name is used.
    skipinitialspace : bool
        Ignore spaces after a delimiter (``", "`` in UCI Adult, runs of spaces in German Credit).

    Returns
    -------
    Table

    Raises
    ------
    DatasetError
        If the file is empty or not text, a line has another number of fields than the header (or ``names``),
        or a requested column is absent from the header.
    """
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.reader(fh, delimiter=delimiter, skipinitialspace=skipinitialspace, strict=True)
            header = list(names) if names is not None else _read_header(reader, display)
            header_line = reader.line_num
            rows = list(reader)
            if reader.line_num == header_line + len(rows):
                # One row per line (no quoted line breaks): line numbers follow without tracking each row.
                lines = np.arange(header_line + 1, header_line + 1 + len(rows), dtype=np.int64)
            else:
                lines = _line_numbers(path, delimiter, skipinitialspace, header_line)
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{display}: not a UTF-8 text file ({exc})") from None
    except csv.Error as exc:
        raise DatasetError(f"{display}, line {reader.line_num}: malformed field ({exc})") from None
    widths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    blank = widths == 0  # blank lines, e.g. the one ending adult.data
    wrong = ~blank & (widths != len(header))
    if wrong.any():
        at = int(np.argmax(wrong))
        what = "the header" if names is None else "the format"
        raise DatasetError(
            f"{display}, line {lines[at]}: expected {len(header)} fields as in {what}, found {widths[at]} "
            f"(is the file truncated or re-formatted? it must be {delimiter!r}-separated)")
    if blank.any():
        rows = [row for row in rows if row]
        lines = lines[~blank]
    if not rows:
        raise DatasetError(f"{display}: no data rows after line {header_line}")
    wanted = list(usecols) if usecols is not None else header
    columns = {}
    for col in wanted:
        if col not in header:
            raise DatasetError(f"{display}, line {header_line}: column {col!r} is missing from the header "
                               f"({', '.join(header)})")
        i = header.index(col)
        columns[col] = np.array([row[i] for row in rows], dtype=object)
    return Table(display, columns, lines)


def _line_numbers(path: Path, delimiter: str, skipinitialspace: bool, header_line: int) -> np.ndarray:
    """Line (1-based) on which each row after the header ends, when quoted fields span several lines."""
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh, delimiter=delimiter, skipinitialspace=skipinitialspace, strict=True)
        ends = np.fromiter((reader.line_num for _ in reader), dtype=np.int64)
    return ends[ends > header_line]


def _read_header(reader, display: str) -> list[str]:
    for row in reader:
        if row:
            return [name.strip() for name in row]
    raise DatasetError(f"{display}: the file is empty")


def integers(table: Table, column: str, *, allow_missing: bool = False) -> np.ndarray:
    """Parse a column of integers.

    Parameters
    ----------
    table : Table
    column : str
    allow_missing : bool
        Accept empty fields (returned as NaN).

    Returns
    -------
    numpy.ndarray, shape (n_rows,)
        int64, or float64 with NaN for missing values when ``allow_missing``.

    Raises
    ------
    DatasetError
        Naming the line and column of the first value that is not an integer (or is empty).
    """
    text = table.columns[column]
    if not allow_missing:
        try:
            return text.astype(np.int64)
        except (ValueError, TypeError, OverflowError):
            pass  # the slower path below finds the first bad value
    values = pd.to_numeric(pd.Series(text, dtype=object), errors="coerce").to_numpy(dtype=float)
    empty = text == ""
    bad = (np.isnan(values) & ~(empty & allow_missing)) | (np.isfinite(values) & (values != np.round(values)))
    if bad.any():
        row = int(np.argmax(bad))
        problem = "the field is empty" if text[row] == "" else f"{text[row]!r} is not an integer"
        raise table.fail(row, column, problem)
    return values if allow_missing and empty.any() else values.astype(np.int64)


def codes(table: Table, column: str, categories: Sequence[str], *,
          missing_label: str | None = None) -> tuple[np.ndarray, dict[int, str]]:
    """Replace each category by its position in ``categories``.

    Parameters
    ----------
    table : Table
    column : str
    categories : sequence of str
        The categories in code order (code 0 first).
    missing_label : str, optional
        When given, a missing value (``?`` or an empty field) becomes a category of its own, coded
        ``len(categories)`` and labelled ``missing_label``.

    Returns
    -------
    codes : numpy.ndarray of int64, shape (n_rows,)
    labels : dict of int to str
        Label of every code (the missing code included when ``missing_label`` is given).

    Raises
    ------
    DatasetError
        Naming the line, column and value of the first unknown category.
    """
    mapping = {c: i for i, c in enumerate(categories)}
    labels = dict(enumerate(categories))
    if missing_label is not None:
        mapping.update({token: len(categories) for token in MISSING_TOKENS})
        labels[len(categories)] = missing_label
    # Factorize first so that the dictionary is consulted once per distinct value, not once per row.
    positions, uniques = pd.factorize(table.columns[column], use_na_sentinel=False)
    lookup = np.array([mapping.get(u, -1) for u in uniques], dtype=np.int64)
    mapped = lookup[positions]
    unknown = mapped < 0
    if unknown.any():
        row = int(np.argmax(unknown))
        raise table.fail(row, column, f"unknown value {table.columns[column][row]!r}; expected one of "
                                      f"{', '.join(categories)}")
    return mapped, labels


def binary_label(table: Table, column: str, positive: str, negative: str) -> np.ndarray:
    """Labels 1 for ``positive`` and 0 for ``negative``, shape (n_rows,), int64.

    Raises
    ------
    DatasetError
        Naming the line of the first other value.
    """
    y, _ = codes(table, column, [negative, positive])
    return y


def bin_labels(codes_: np.ndarray, width: int, *, unit: str = "", lowest: int | None = None,
               highest: int | None = None) -> dict[int, str]:
    """Labels such as ``"30-39"`` for codes ``value // width``, over the observed code range.

    Parameters
    ----------
    codes_ : numpy.ndarray of int
        Observed codes.
    width : int
        Bin width in raw units.
    unit : str
        Appended to each label.
    lowest, highest : int, optional
        Codes at which the encoding clips: that bin also holds every value below (above) it and is labelled
        ``"<=end"`` (``">=start"``).

    Returns
    -------
    dict of int to str
    """
    labels = {}
    for code in range(int(codes_.min()), int(codes_.max()) + 1):
        start, end = code * width, code * width + width - 1
        text = str(start) if width == 1 else f"{start} to {end}" if start < 0 else f"{start}-{end}"
        if code == lowest:
            text = f"<={end}"
        if code == highest:
            text = f">={start}"
        labels[code] = text + unit
    return labels
