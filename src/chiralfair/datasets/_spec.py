"""Records shared by the benchmark loaders: the encoded columns of a dataset and the dataset's description.

Each loader module (census, compas, bank, german) gives how its raw file is read and how its columns are encoded;
:meth:`DatasetSpec.encode_file` does the two, for every one of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..domain import Kind
from ._parse import Table, read_table


@dataclass(frozen=True)
class Column:
    """One encoded feature column before the domain is measured.

    Attributes
    ----------
    name : str
    values : numpy.ndarray of int64, shape (n_rows,)
    kind : {"categorical", "ordinal"}
    labels : mapping of int to str, optional
        Human-readable label of each code.
    missing : int, optional
        The code that stands for a missing value (NaN, None, ``"?"``), when the column has one.
    """

    name: str
    values: np.ndarray
    kind: Kind
    labels: Mapping[int, str] | None = None
    missing: int | None = None


@dataclass(frozen=True)
class Encoded:
    """A dataset encoded as integers, with the names, kinds and code labels of its features.

    Attributes
    ----------
    X : numpy.ndarray of int64, shape (n_rows, n_features)
    y : numpy.ndarray of int64, shape (n_rows,)
    names : tuple of str
    kinds : tuple of {"categorical", "ordinal"}
    labels : dict of str to (dict of int to str)
    """

    X: np.ndarray
    y: np.ndarray
    names: tuple[str, ...]
    kinds: tuple[Kind, ...]
    labels: dict[str, dict[int, str]]

    @classmethod
    def from_columns(cls, columns: list[Column], y: np.ndarray) -> Encoded:
        """Stack ``columns`` (in order) into ``X``."""
        X = np.column_stack([np.asarray(c.values, dtype=np.int64) for c in columns])
        return cls(X, np.asarray(y, dtype=np.int64), tuple(c.name for c in columns),
                   tuple(c.kind for c in columns), {c.name: dict(c.labels) for c in columns if c.labels})


@dataclass(frozen=True)
class DatasetSpec:
    """A benchmark dataset: its raw file, label, protected attributes and its encoder.

    Attributes
    ----------
    name : str
    raw : str
        Path of the raw file relative to the data home.
    protected : tuple of str
        Protected attributes studied in the literature; the first is the default of
        :func:`~chiralfair.datasets.load_dataset`.
    label : str
        Label column in the raw file.
    positive_class : str
        Raw label value (or condition) encoded as 1.
    description : str
        One line on the source and the encoding.
    read : mapping
        Keyword arguments of :func:`~chiralfair.datasets._parse.read_table` for the raw file: its delimiter, and
        its column names (a file without a header) or the columns kept.
    encode : callable
        ``encode(table) -> Encoded``: the encoding of the columns read.
    couple : mapping or None
        The couplings :func:`~chiralfair.datasets.load_dataset` declares by default (``couple=None``), in the form of
        :func:`chiralfair.domain.coupling.parse_couplings` (architecture: counterparts that could exist); None for none.
    couple_constraints : tuple of str
        Rules that come with the default couplings and hold while one is active (:mod:`chiralfair.domain.constraints`
        text): without them a search still proposes inputs whose coupled side cannot exist.
    """

    name: str
    raw: str
    protected: tuple[str, ...]
    label: str
    positive_class: str
    description: str
    read: Mapping[str, Any]
    encode: Callable[[Table], Encoded]
    couple: Mapping | None = None
    couple_constraints: tuple[str, ...] = ()

    def encode_file(self, path: Path, display: str) -> Encoded:
        """Read the raw file at ``path`` and encode it (see the dataset's module docstring).

        Parameters
        ----------
        path : pathlib.Path
        display : str
            Name of the file in error messages.

        Returns
        -------
        Encoded
            For the published file, of the shape its module docstring gives (census: 32,561 rows × 13 features).

        Raises
        ------
        DatasetError
            Naming the line and column of a malformed field.
        """
        return self.encode(read_table(path, display=display, **self.read))
