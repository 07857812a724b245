"""Keeping the test split out of retraining: seeds, IDIs and added rows from training rows only.

See architecture: mitigation. Held-out figures are honest only if nothing about a test individual enters the training
data. A search for IDIs to retrain with therefore draws its seeds from the training rows alone (:func:`training_rows`:
the seed strategy, its chiral model, its clusters and its SHAP background see no test row; the pipeline's
:func:`chiralfair.pipeline.search_training_rows` runs it), and every row added to the training data is checked against
the test split by its non-protected projection (its IDI key, architecture: the counting rule):

- a **test projection** is the key of a test row that no training row shares. Rows whose key is a test
  projection are excluded before training (a planted test row among the seeds, or an IDI that the local phase
  walked onto a test individual) and counted; after the training data is built, the count of test projections
  in it is checked and reported, and it must be 0;
- a test row whose projection *is* a training row's is a duplicate in the data (81% of COMPAS's test rows,
  11% of census's): that projection is already in the training data, so augmenting the training row with it
  adds nothing about the test individual. These rows are counted (``n_test_rows_seen``), not excluded.

References
----------
.. [1] Ma et al. "Enhanced Fairness Testing via Generating Effective Initial Individual Discriminatory
   Instances." arXiv:2209.08321, §4.4 (its retraining re-checks IDIs it trained on).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from ..datasets.base import Dataset
from ..domain import Domain
from ..exceptions import ChiralfairError


class LeakError(ChiralfairError, RuntimeError):
    """A test projection reached the training data: a defect of the protocol, never a user error."""


@dataclass(frozen=True)
class HeldOutProjections:
    """The keys of the test rows that no training row shares (sorted, unique), and how many test rows share one.

    Attributes
    ----------
    keys : numpy.ndarray
        Sorted unique IDI keys (:meth:`Domain.keys`) of test rows whose projection is no training row's.
    n_test_rows_seen : int
        Test rows whose projection is a training row's (duplicates in the data; not a leak).
    n_test : int
        Test rows.
    """

    keys: np.ndarray
    n_test_rows_seen: int
    n_test: int

    @classmethod
    def of(cls, domain: Domain, X_train, X_test) -> HeldOutProjections:
        """Build from the training rows (n_train, n_features) and the test rows (n_test, n_features).

        Parameters
        ----------
        domain : Domain
        X_train : array-like of int, shape (n_train, n_features)
        X_test : array-like of int, shape (n_test, n_features)

        Returns
        -------
        HeldOutProjections
        """
        train_keys = np.unique(domain.keys(X_train))
        test_keys = domain.keys(X_test)
        seen = np.isin(test_keys, train_keys)
        return cls(keys=np.unique(test_keys[~seen]), n_test_rows_seen=int(seen.sum()), n_test=int(len(test_keys)))

    def hits(self, domain: Domain, X) -> np.ndarray:
        """Whether each row of ``X`` (n, n_features) has a test projection, shape (n,), bool.

        Parameters
        ----------
        domain : Domain
        X : array-like of int, shape (n, n_features)

        Returns
        -------
        numpy.ndarray of bool, shape (n,)
        """
        if len(X) == 0:
            return np.zeros(0, dtype=bool)
        return np.isin(domain.keys(X), self.keys)

    def verify(self, domain: Domain, X_added, where: str) -> int:
        """Count the rows of ``X_added`` with a test projection, which must be 0 (returned for the report).

        Parameters
        ----------
        domain : Domain
        X_added : array-like of int, shape (n, n_features)
            The rows a method added to training.
        where : str
            The method, for the message.

        Returns
        -------
        int
            0.

        Raises
        ------
        LeakError
            If any has one (the exclusions above failed).
        """
        n = int(self.hits(domain, np.asarray(X_added)).sum())
        if n:
            raise LeakError(f"{n} rows added to the training data by {where} have the non-protected projection of "
                            "a test row; the held-out figures would not be held out")
        return n


def training_rows(dataset: Dataset, train) -> Dataset:
    """The dataset restricted to its training rows, as the pool a seed strategy draws from.

    Its domain is unchanged (the input space stays the same); its name gains ``"[train]"`` so that a chiral
    model trained on it gets its own cache entry.

    Parameters
    ----------
    dataset : Dataset
    train : array-like of int
        Row indices of the training split.

    Returns
    -------
    Dataset
    """
    train = np.asarray(train, dtype=np.int64)
    return dataset.rows(train, name=f"{dataset.name}[train]")


def without_test_projections(found, projections: HeldOutProjections, domain: Domain):
    """The search result without the pairs whose key is a test projection, and how many were dropped.

    Parameters
    ----------
    found : SearchResult
    projections : HeldOutProjections
    domain : Domain

    Returns
    -------
    found : SearchResult
        The same figures recounted without the excluded pairs (``found`` itself when none is excluded).
    n_excluded : int
    """
    from ..results import PAIR_ARRAYS, SearchResult

    hit = projections.hits(domain, found.idis)
    if not hit.any():
        return found, 0
    keep = ~hit
    arrays = {k: np.asarray(getattr(found, k))[keep] for k in PAIR_ARRAYS}
    kept = {f.name: getattr(found, f.name) for f in fields(found) if f.name not in (*PAIR_ARRAYS, "pairs_path")}
    kept.update(n_idis=int(keep.sum()), n_global=int((arrays["phase"] == "global").sum()),
                n_local=int((arrays["phase"] == "local").sum()), pa_pair_counts=None, pa_label_counts=None,
                notes=(*found.notes, f"{int(hit.sum())} IDI pairs with a test row's projection were excluded"))
    return SearchResult(**kept, **arrays), int(hit.sum())
