"""Keeping the test split out of retraining (design §8, issue 21): seeds, IDIs and added rows from training rows only.

Held-out figures are honest only if nothing about a test individual enters the training data. A search for IDIs
to retrain with therefore draws its seeds from the training rows alone (:func:`training_rows`: the seed strategy,
its chiral model, its clusters and its SHAP background see no test row), and every row added to the training
data is checked against the test split by its non-protected projection (its IDI key, design §2):

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

from dataclasses import dataclass, fields, replace

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
        """Build from the training rows (n_train, n_features) and the test rows (n_test, n_features)."""
        train_keys = np.unique(domain.keys(X_train))
        test_keys = domain.keys(X_test)
        seen = np.isin(test_keys, train_keys)
        return cls(keys=np.unique(test_keys[~seen]), n_test_rows_seen=int(seen.sum()), n_test=int(len(test_keys)))

    def hits(self, domain: Domain, X) -> np.ndarray:
        """Whether each row of ``X`` (n, n_features) has a test projection, shape (n,), bool."""
        if len(X) == 0:
            return np.zeros(0, dtype=bool)
        return np.isin(domain.keys(X), self.keys)

    def verify(self, domain: Domain, X_added, where: str) -> int:
        """Count the rows of ``X_added`` with a test projection, which must be 0 (returned for the report).

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
    """
    train = np.asarray(train, dtype=np.int64)
    return replace(dataset, X=dataset.X[train], y=dataset.y[train], name=f"{dataset.name}[train]")


def search_training_rows(model, dataset: Dataset, train, *, generator: str = "aequitas", seeds="cluster",
                         max_global: int = 100, max_local: int = 100, generator_params: dict | None = None,
                         seed_params: dict | None = None, random_state: int = 0, model_random_state: int = 0,
                         cache_dir=None):
    """Search ``model`` for IDIs to retrain with, from training rows only.

    Parameters
    ----------
    model : CountingModel or anything :func:`~chiralfair.models.as_model` accepts
    dataset : Dataset
    train : array-like of int
        The model's training rows; every other row is a test row.
    generator : str, default="aequitas"
        A registered generator.
    seeds : str, SeedReport or array-like of shape (n_seeds, n_features), default="cluster"
        A seed strategy's name (it then selects from the training rows only), or given seeds, of which those
        with a test projection are excluded (counted in ``n_seeds_excluded``).
    max_global, max_local : int, default=100
        The search budget.
    generator_params, seed_params : dict, optional
        Further parameters of the generator and of the seed strategy.
    random_state : int, default=0
        Of the seed selection and the search.
    model_random_state : int, default=0
        The model's own training seed: the chiral model of ``i``/``iandd`` is trained with it (as
        :func:`~chiralfair.seeds.names.chiral_params` ties them).
    cache_dir : optional
        Model cache folder for the chiral model of ``i``/``iandd``.

    Returns
    -------
    result : SearchResult
        The search, its pairs with a test projection already removed (``n_idis`` counts those kept).
    info : dict
        ``n_seeds_excluded``, ``n_idis_excluded``, ``n_seeds``, ``seed_strategy``.

    Raises
    ------
    ConfigError
        For an unknown generator or seed strategy, or no seed left after the exclusion.
    """
    from ..exceptions import ConfigError
    from ..generators import make_generator
    from ..models.adapters import as_model
    from ..results import SeedReport
    from ..seeds import make_seed_strategy
    from ..seeds.names import chiral_params

    train = np.sort(np.asarray(train, dtype=np.int64))
    test = np.setdiff1d(np.arange(dataset.n_samples), train)
    projections = HeldOutProjections.of(dataset.domain, dataset.X[train], dataset.X[test])
    model = as_model(model)
    search = make_generator(generator, max_global=max_global, max_local=max_local, **(generator_params or {}))
    if isinstance(seeds, str):
        selector = make_seed_strategy(seeds, **(seed_params or {}),
                                      **chiral_params(seeds, model_random_state, cache_dir))
        report = selector.select(model, training_rows(dataset, train), max_global, random_state=random_state)
        X_seeds, strategy = report.seeds, seeds
    else:
        strategy = seeds.strategy if isinstance(seeds, SeedReport) else "given"
        X_seeds = seeds.seeds if isinstance(seeds, SeedReport) else dataset.domain.validate(seeds, what="seeds")
    planted = projections.hits(dataset.domain, X_seeds)
    X_seeds = X_seeds[~planted]
    if len(X_seeds) == 0:
        raise ConfigError(f"every one of the {int(planted.sum())} seeds is a test row's projection: no seed is left "
                          "to search from training rows")
    found = search.run(model, dataset.domain, X_seeds, random_state=random_state, seed_strategy=strategy)
    kept, n_idis_excluded = without_test_projections(found, projections, dataset.domain)
    return kept, {"n_seeds_excluded": int(planted.sum()), "n_idis_excluded": n_idis_excluded,
                  "n_seeds": int(len(X_seeds)), "seed_strategy": strategy}


def without_test_projections(found, projections: HeldOutProjections, domain: Domain):
    """The search result without the pairs whose key is a test projection, and how many were dropped."""
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
