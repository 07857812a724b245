"""The population: the people a verdict is about, as the user gave them, kept apart from the search's codes.

A dataset built by :func:`~chiralfair.datasets.from_frame` holds two views of the same rows: the codes ``X`` that
the generators search (a continuous column cut into bins, each bin fed to the model at its representative value)
and the rows themselves, :attr:`Dataset.raw <chiralfair.datasets.Dataset.raw>`, with their exact values and
dtypes. A model fed frames is measured on the second: its F1, every verdict over data rows and every group metric
are computed on the people as they are. A person's **counterpart** is that person with the protected (and coupled)
columns changed, every other value exact:

- the counterpart's codes come from the domain (:meth:`Domain.counterparts
  <chiralfair.domain.Domain.counterparts>`: every protected combination, couplings applied), exactly as in the
  search;
- a column whose code the counterpart changes takes the decoded value of the new code (a category is exact; a
  binned protected attribute such as an age band takes its band's representative);
- every column whose code it leaves alone keeps the person's own value, so an income of 51,234.5 stays 51,234.5,
  not the representative of its bin.

For the benchmarks (already encoded, no raw rows) the two views coincide and the codes are the population.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..exceptions import DatasetError

if TYPE_CHECKING:
    from .base import Dataset
    from .codec import FrameCodec


@dataclass(frozen=True, eq=False)  # holds a frame and arrays: compared by identity
class Population:
    """Some people of a dataset: their rows as given and their codes, row ``i`` being one person.

    Attributes
    ----------
    frame : pandas.DataFrame, shape (n_people, n_features)
        The rows as the user gave them (the data's feature columns, values and dtypes).
    X : numpy.ndarray of int64, shape (n_people, n_features)
        The same people's codes (the search's view: bins for continuous columns).
    codec : FrameCodec
        How codes decode back to values, for the columns a counterpart changes.
    """

    frame: pd.DataFrame
    X: np.ndarray
    codec: FrameCodec

    def __post_init__(self) -> None:
        if len(self.frame) != len(self.X):
            raise DatasetError(f"a population's rows ({len(self.frame):,}) and codes ({len(self.X):,}) must be the "
                               "same people")

    def __len__(self) -> int:
        return len(self.X)

    def take(self, index) -> Population:
        """The people at ``index`` (row numbers, repeats allowed, or a boolean mask), in that order.

        Parameters
        ----------
        index : array-like of int or bool, shape (n,) or (n_people,)

        Returns
        -------
        Population
        """
        index = np.asarray(index)
        if index.dtype == bool:
            index = np.flatnonzero(index)
        return Population(self.frame.iloc[index].reset_index(drop=True), self.X[index], self.codec)

    def counterparts(self, codes) -> pd.DataFrame:
        """Each person with the columns whose code ``codes`` changes set to the decoded new value.

        Parameters
        ----------
        codes : numpy.ndarray of int64, shape (n_people, n_features)
            Row ``i`` is a counterpart of person ``i`` in codes (from :meth:`Domain.counterparts
            <chiralfair.domain.Domain.counterparts>` or :meth:`Domain.counterpart_rows
            <chiralfair.domain.Domain.counterpart_rows>`).

        Returns
        -------
        pandas.DataFrame, shape (n_people, n_features)
            The people's own rows where the codes agree, the decoded values where they differ (a fresh index).

        Raises
        ------
        DatasetError
            If ``codes`` does not have one row per person and one column per feature.
        """
        codes = np.asarray(codes, dtype=np.int64)
        if codes.shape != self.X.shape:
            raise DatasetError(f"counterpart codes must have shape {self.X.shape}, got {codes.shape}")
        changed = codes != self.X
        out = self.frame
        columns = np.flatnonzero(changed.any(axis=0))
        if len(columns):
            out = self.frame.copy()
            for j in columns:
                out.isetitem(int(j), _changed_values(self.frame.iloc[:, j], self.codec.columns[j].decode(codes[:, j]),
                                                     changed[:, j]))
        return out


def _changed_values(own: pd.Series, decoded, changed: np.ndarray) -> pd.Series:
    """``own`` where ``changed`` is False, ``decoded`` where it is True, in ``own``'s dtype."""
    new = pd.Series(decoded, index=own.index)
    if isinstance(own.dtype, pd.CategoricalDtype):
        return own.where(~changed, new.astype(own.dtype))
    return own.where(~changed, new)


def population_of(dataset: Dataset, index=None) -> Population | None:
    """The people of ``dataset`` at ``index`` (all rows by default), or None when it holds no raw rows.

    Parameters
    ----------
    dataset : Dataset
    index : array-like of int or bool, optional

    Returns
    -------
    Population or None
        None for a dataset without :attr:`~chiralfair.datasets.Dataset.raw` (the benchmarks): its codes are
        its population.
    """
    if dataset.raw is None or dataset.codec is None:
        return None
    people = Population(dataset.raw, dataset.X, dataset.codec)
    return people if index is None else people.take(index)
