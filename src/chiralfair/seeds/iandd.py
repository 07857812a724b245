"""Seed strategy ``iandd``: initial IDIs from a chiral model, made diverse by clustering their SHAP values."""

from __future__ import annotations

import time

import numpy as np

from .._validation import check_float, check_int
from ..exceptions import ConfigError
from .base import register_seed_strategy
from .cluster import round_robin
from .diversity import PAPER_EPS, PAPER_MIN_SAMPLES, cluster_explanations
from .explainers import EXPLAINERS, choose_explainer, explain
from .initial import InitialIDISeeds


@register_seed_strategy("iandd")
class IandDSeeds(InitialIDISeeds):
    """I&D: the initial IDIs of strategy ``i``, taken round robin over DBSCAN clusters of their SHAP values.

    After the steps of :class:`~chiralfair.seeds.initial.InitialIDISeeds`:

    1. explain the positive-class output of the model under test for up to ``max_explained`` initial IDIs
       (a random sample: the first ones of the shuffled list) against ``background_size`` random data rows,
       with an explainer chosen by model type (:mod:`chiralfair.seeds.explainers`);
    2. cluster the SHAP rows with DBSCAN (paper: ``eps=0.09, min_samples=10``, unscaled); a degenerate
       clustering (one cluster, or >= 90% noise) is logged and repaired (:mod:`chiralfair.seeds.diversity`);
    3. seeds = round robin over the clusters, noise (-1) as a bucket of its own, then the IDIs not explained,
       then random data rows as in ``i``.

    ``SeedReport.clustering`` records the method, eps, min_samples, clusters, noise share, explainer, and
    whether the clustering was repaired.

    Parameters
    ----------
    eps : float
        DBSCAN radius (paper 0.09).
    min_samples : int
        DBSCAN core-point size (paper 10).
    max_explained : int
        Most initial IDIs explained and clustered (the reference code explains the first 2000 for SVC and NN).
    max_explained_black_box : int
        Lower cap for models explained by permutation (no gradient, not linear, not a tree): each explained row
        costs (2 n_features + 1) x 25 model rows one row at a time, about 0.15 s per row for the census SVC
        (2,000 rows took 305 s).
    background_size : int
        Data rows sampled as the SHAP background.
    explainer : {"auto", "linear", "tree", "expected_gradients", "deep", "permutation"}
        See :func:`~chiralfair.seeds.explainers.explain`.
    repair : bool
        Repair a degenerate clustering.
    chiral_model, chiral_trainer, split_random_state, chiral_random_state, chiral_cache_dir
        As for :class:`~chiralfair.seeds.initial.InitialIDISeeds`.

    Notes
    -----
    The reference code gives each DBSCAN label a quota of ``n_seeds // n_labels`` members and then tops up
    with the remaining IDIs in list order; the round robin here takes one member of each cluster in turn,
    which gives the same selection when the clusters are large enough and spreads the seeds more evenly
    otherwise.

    References
    ----------
    .. [1] Ma et al. "Enhanced Fairness Testing via Generating Effective Initial Individual Discriminatory
       Instances." arXiv:2209.08321, §3.2.
    """

    name = "iandd"

    def __init__(self, *, eps: float = PAPER_EPS, min_samples: int = PAPER_MIN_SAMPLES,
                 max_explained: int = 2000, max_explained_black_box: int = 250, background_size: int = 100,
                 explainer: str = "auto",
                 repair: bool = True, chiral_model=None,
                 chiral_trainer=None, split_random_state: int | None = None,
                 chiral_random_state: int | None = None, chiral_cache_dir=None):
        if explainer not in EXPLAINERS:
            raise ConfigError(f"explainer must be one of {EXPLAINERS}, got {explainer!r}")
        super().__init__(chiral_model=chiral_model, chiral_trainer=chiral_trainer,
                         split_random_state=split_random_state, chiral_random_state=chiral_random_state,
                         chiral_cache_dir=chiral_cache_dir,
                         eps=check_float(eps, "eps", minimum=0.0, exclusive_minimum=True),
                         min_samples=check_int(min_samples, "min_samples", minimum=1),
                         max_explained=check_int(max_explained, "max_explained", minimum=1),
                         max_explained_black_box=check_int(max_explained_black_box, "max_explained_black_box",
                                                           minimum=1),
                         background_size=check_int(background_size, "background_size", minimum=1),
                         explainer=explainer, repair=bool(repair))
        self.eps, self.min_samples = float(eps), int(min_samples)
        self.max_explained, self.background_size = int(max_explained), int(background_size)
        self.max_explained_black_box = int(max_explained_black_box)
        self.explainer, self.repair = explainer, bool(repair)

    def _order(self, model, dataset, initial, rng, seconds):
        name = choose_explainer(model) if self.explainer == "auto" else self.explainer
        cap = min(self.max_explained, self.max_explained_black_box) if name == "permutation" else self.max_explained
        n_explained = min(len(initial), cap)
        t0 = time.perf_counter()
        if n_explained:
            n_background = min(self.background_size, dataset.n_samples)
            background = dataset.X[rng.choice(dataset.n_samples, size=n_background, replace=False)]
            values, explainer = explain(model, initial[:n_explained], background, rng,
                                        explainer=self.explainer)
        else:
            values, explainer = np.zeros((0, dataset.domain.n_features)), None
        seconds["shap"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        labels, clustering = cluster_explanations(values, eps=self.eps, min_samples=self.min_samples,
                                                  repair=self.repair)
        # Members keep their random order inside each bucket; noise (-1) is a bucket of its own.
        buckets = [np.flatnonzero(labels == c) for c in np.unique(labels)]
        order = np.concatenate([round_robin(buckets), np.arange(n_explained, len(initial))]).astype(np.int64)
        seconds["clustering"] = time.perf_counter() - t0
        clustering.update(explainer=explainer, n_explained=int(n_explained),
                          n_not_explained=int(len(initial) - n_explained))
        return order, clustering
