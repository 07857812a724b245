"""The :class:`Dataset` record: encoded features, labels, domain, and the paper's 60/40 stratified split."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from .._validation import check_float, check_int
from ..domain import Domain
from ..exceptions import DomainError

if TYPE_CHECKING:
    import pandas as pd

    from ..domain.features import MissingPolicy
    from .codec import FrameCodec


@dataclass(frozen=True)
class Dataset:
    """An encoded tabular dataset with its input domain.

    Attributes
    ----------
    name : str
    X : numpy.ndarray of int64, shape (n_samples, n_features)
        Encoded features, inside ``domain``.
    y : numpy.ndarray of int64, shape (n_samples,)
        Labels, 1 = ``positive_class``.
    domain : Domain
        Bounds measured on ``X``; protected attributes set.
    label : str
        Name of the label column in the raw data.
    positive_class : str
        Raw value of the label that is encoded as 1.
    negative_class : str or None
        Raw value of the label encoded as 0, when the label column holds exactly one other value (``"<=50K"``
        beside ``">50K"``); None when it holds several or is not known (then label 0 is "not" the positive class).
    sources : dict of str to str
        Raw file name → the path it was read from.
    codec : FrameCodec or None
        How codes decode back to the original columns (set by :func:`~chiralfair.datasets.from_frame`); see
        :meth:`to_frame`.
    raw : pandas.DataFrame or None, shape (n_samples, n_features)
        The rows as the user gave them (the feature columns, their values and dtypes, a fresh 0..n-1 index),
        row ``i`` being the person coded ``X[i]``: the **population**, which every F1, verdict and group metric
        of a model fed frames is computed on (:mod:`chiralfair.datasets.population`); the codes in ``X`` are
        the search's view of them (bins for continuous columns). Set by
        :func:`~chiralfair.datasets.from_frame`; None for the benchmarks, whose codes are their values.

    Raises
    ------
    DatasetError
        When ``raw`` and ``X`` do not hold the same number of rows.
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    domain: Domain
    label: str = "label"
    positive_class: str = "1"
    negative_class: str | None = None
    sources: dict[str, str] = field(default_factory=dict)
    codec: FrameCodec | None = field(default=None, repr=False, compare=False)
    raw: pd.DataFrame | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.raw is not None and len(self.raw) != len(self.X):
            from ..exceptions import DatasetError

            raise DatasetError(f"dataset {self.name!r}: its raw rows ({len(self.raw):,}) and its codes "
                               f"({len(self.X):,} rows) must be the same people; subset both with Dataset.rows")

    def rows(self, index, *, name: str | None = None) -> Dataset:
        """The dataset restricted to some rows: codes, labels and raw rows together (same domain).

        Parameters
        ----------
        index : array-like of int or bool, shape (n_rows,) or (n_samples,)
            Row numbers, or a mask over the rows.
        name : str, optional
            A new name (default: the same).

        Returns
        -------
        Dataset
        """
        index = np.asarray(index)
        if index.dtype == bool:
            index = np.flatnonzero(index)
        raw = None if self.raw is None else self.raw.iloc[index].reset_index(drop=True)
        return replace(self, X=self.X[index], y=self.y[index], raw=raw, name=self.name if name is None else name)

    @property
    def n_samples(self) -> int:
        """Number of rows."""
        return int(self.X.shape[0])

    @property
    def missing_protected(self) -> np.ndarray:
        """Rows whose protected value is missing and is not one of the PA's values, shape (n_samples,), bool.

        Under the default policy (``missing_protected="exclude"``) a missing protected value is never a
        counterpart; these rows are reported apart: the discrimination check still takes them (against the
        valid values, one more query each) but seed strategies that draw data rows leave them out. Under
        ``"value"`` no row is marked.
        """
        if not self.domain.protected:
            return np.zeros(self.n_samples, dtype=bool)
        return self.domain.missing_protected(self.X)

    @property
    def n_missing_protected(self) -> int:
        """Number of rows in :attr:`missing_protected`."""
        return int(self.missing_protected.sum())

    def without_missing_protected(self) -> Dataset:
        """Return a copy without the rows of :attr:`missing_protected` (``self`` when there are none).

        Returns
        -------
        Dataset
        """
        keep = ~self.missing_protected
        if keep.all():
            return self
        return self.rows(keep)

    def to_frame(self, X_codes) -> pd.DataFrame:
        """Decode encoded inputs into the frame a raw-frame model expects.

        For a dataset built by :func:`~chiralfair.datasets.from_frame`: the original column names and dtypes,
        categories back to their original values, integer columns as they are, binned columns to the bin's
        representative value (the lower median of the data values in that bin; see
        :mod:`chiralfair.datasets.codec`), missing categories and bins to the column's missing marker.
        For the benchmark datasets (which have no codec): each code's label as text (e.g. ``"Male"``,
        ``"30-39"``), codes without a label as integers, like :meth:`Domain.decode`.

        Parameters
        ----------
        X_codes : array-like of int, shape (n_samples, n_features)

        Returns
        -------
        pandas.DataFrame, shape (n_samples, n_features)

        Raises
        ------
        DomainError
            If ``X_codes`` has the wrong number of columns, a non-integer or a code with no value.
        """
        if self.codec is not None:
            return self.codec.to_frame(X_codes)
        X = np.asarray(X_codes)
        if X.ndim != 2 or X.shape[1] != self.domain.n_features:
            raise DomainError(f"codes must have shape (n_samples, {self.domain.n_features}), got {X.shape}")
        return self.domain.decode(X)

    def with_protected(self, names, *, values: Mapping[str, Sequence] | None = None,
                       groups: Mapping[str, Sequence[str]] | None = None,
                       missing_protected: MissingPolicy = "exclude", couple=None, constraints=None) -> Dataset:
        """Return a copy whose domain tests the protected attributes ``names`` (domains observed in ``X``).

        ``names``, ``values``, ``groups`` and ``missing_protected`` are those of
        :meth:`~chiralfair.domain.Domain.with_protected`: a tuple of columns (or a name from ``groups``) is
        one attribute spanning those columns, e.g. ``with_protected(["sex", ("race_A", "race_B",
        "race_C")])``.

        ``couple`` (architecture: counterparts that could exist): None keeps the domain's couplings; a mapping such as
        ``{"sex": {"relationship": {"Husband": "Wife", "Wife": "Husband"}}}`` replaces them; False or ``{}`` removes
        them (:meth:`~chiralfair.domain.Domain.with_couplings`). ``constraints``: None keeps the domain's; rules as
        text replace them; ``()`` removes them (:meth:`~chiralfair.domain.Domain.with_constraints`).

        Parameters
        ----------
        names : str, sequence or mapping
            Protected attributes (see :meth:`~chiralfair.domain.Domain.with_protected`).
        values : mapping of str to sequence, optional
            Declared values of an attribute (default: those observed in ``X``).
        groups : mapping of str to sequence of str, optional
            Named groups of columns that form one attribute each.
        missing_protected : {"exclude", "value"}, default="exclude"
            Whether a missing protected value is left out of the attribute's values or is one of them.
        couple : mapping, bool or None, default=None
            As described above.
        constraints : str or sequence of str, optional
            As described above.

        Returns
        -------
        Dataset
            The same rows, with the new domain.

        Raises
        ------
        DomainError
            If a name is unknown (lists the valid names) or a protected attribute has one observed value, or a
            coupling or constraint names an unknown column or value.
        DatasetError
            For a dataset from :func:`~chiralfair.datasets.from_frame`: a protected attribute that is a number
            with many values, neither binned nor given ``values`` (:mod:`chiralfair.datasets.protected`), or
            that holds two spellings of one value.

        Warns
        -----
        DataWarning
            For a declared value that the data never holds (it is accepted, and the feature's bounds widened).
        """
        from .protected import check_protected_columns

        domain = self.domain.with_protected(names, data=self.X, values=values, groups=groups,
                                            missing_protected=missing_protected)
        check_protected_columns(domain, self.codec, self.X, declared=values)
        if couple is not None:
            from ..domain.coupling import check_coupled_attributes

            check_coupled_attributes(couple, domain.protected_names)
            domain = domain.with_couplings(couple)
        if constraints is not None:
            domain = domain.with_constraints(constraints, data=self.X)
        return replace(self, domain=domain)

    def with_observed_values_only(self, names) -> Dataset:
        """Re-encode integer columns so that they take only the values the data holds.

        For a dataset from :func:`~chiralfair.datasets.from_frame`, an integer column's code is its value, so a
        generator may propose any integer between the column's smallest and largest value, also one the data
        never holds (the gaps in 1, 3, ..., 15). Here each named column gets the codes 0..k-1 of its k sorted
        distinct values instead, labelled and decoded to those values, so that no input outside them exists in
        the domain. Only the codes change: the frame a model is fed (:meth:`to_frame`) is the same.

        Parameters
        ----------
        names : sequence of str
            Non-protected features whose values are integers (codec ``"integer"``).

        Returns
        -------
        Dataset

        Raises
        ------
        DomainError
            If a name is unknown, protected, not an integer column of a dataset from ``from_frame``, or named by
            a constraint or coupling of the domain (whose rules compare its codes as values).
        """
        from .codec import ColumnCodec, FrameCodec

        if self.codec is None:
            raise DomainError(f"dataset {self.name!r} was not built by from_frame: its codes cannot be re-encoded")
        X, features, columns = self.X.copy(), list(self.domain.features), list(self.codec.columns)
        in_rules = columns_in_rules(self.domain)
        for name in names:
            j = self.domain.index(name)
            if j in self.domain.protected or columns[j].how != "integer" or j in in_rules:
                what = ("protected" if j in self.domain.protected else "not an integer column"
                        if columns[j].how != "integer" else "named by a constraint or coupling (its codes are values)")
                raise DomainError(f"feature {name!r} is {what}: only non-protected integer columns are re-encoded")
            table, codes = np.unique(X[:, j], return_inverse=True)
            X[:, j] = codes
            features[j] = replace(features[j], lo=0, hi=len(table) - 1, labels={i: str(v) for i, v in
                                                                               enumerate(table.tolist())})
            columns[j] = ColumnCodec(columns[j].name, columns[j].dtype, "rank", table)
        domain = replace(self.domain, features=tuple(features))
        if domain.support is not None:  # measured on codes: measured again on the new ones
            domain = domain.with_support(X)
        return replace(self, X=X, domain=domain, codec=FrameCodec(tuple(columns)))

    def split(self, random_state: int = 0, *, test_size: float = 0.4) -> tuple[np.ndarray, np.ndarray]:
        """Stratified train/test split of the row indices (paper §4.4: 60/40).

        Parameters
        ----------
        random_state : int
        test_size : float
            Share of rows in the test split, in (0, 1).

        Returns
        -------
        train_index, test_index : numpy.ndarray of int64
        """
        from sklearn.model_selection import train_test_split

        check_int(random_state, "random_state", minimum=0)
        check_float(test_size, "test_size", minimum=0.0, maximum=1.0, exclusive_minimum=True)
        idx = np.arange(self.n_samples)
        stratify = self.y if np.bincount(self.y).min() >= 2 else None
        train, test = train_test_split(idx, test_size=test_size, random_state=random_state, stratify=stratify)
        return np.sort(train), np.sort(test)


def columns_in_rules(domain: Domain) -> set[int]:
    """Indices of the features that the domain's constraints or couplings name.

    Parameters
    ----------
    domain : Domain

    Returns
    -------
    set of int
    """
    out = set()
    for rule in domain.constraints:
        out |= {int(c) for c in rule.columns}
    out |= {domain.index(c.column) for c in domain.couplings}
    return out
