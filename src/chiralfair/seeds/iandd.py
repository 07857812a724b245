"""Seed strategy ``iandd``: initial IDIs from a chiral model, made diverse by clustering their SHAP values."""

from __future__ import annotations

import logging
import time

import numpy as np

from .._validation import check_choice, check_float, check_int
from .base import register_seed_strategy
from .cluster import round_robin
from .diversity import PAPER_EPS, PAPER_MIN_SAMPLES, cluster_explanations
from .explainers import (
    BACKGROUNDS,
    DEFAULT_BACKGROUND_ROWS,
    EXPLAINERS,
    STABLE_BACKGROUND_SIZE,
    DeepLIFTError,
    choose_stable_explainer,
    explain,
    explanation_background,
)
from .initial import InitialIDISeeds

logger = logging.getLogger(__name__)

# Background rows when background_size is None: by background choice (k-means centres, the mean), else by
# explainer. DeepLIFT on the 50 fixed rows is a median L2 of 0.039 (census), 0.059 (bank), 0.071 (compas) from
# DeepLIFT on 500 data rows, below eps = 0.09, at 0.1-0.2 s per 1,000 explained rows; 20 rows were 0.08-0.16
# from it (benchmarks/results/explanation_noise.md). Integrated gradients costs n_steps gradients per row and
# reference: on the census MLP, 20 rows x 8 steps were 0.099 from 100 rows x 32 steps (expected gradients with
# 200 random samples: 0.079, but 0.082 between random states).
DEFAULT_BACKGROUND_SIZE = {"kmeans": 10, "mean": 1, **STABLE_BACKGROUND_SIZE, "other": DEFAULT_BACKGROUND_ROWS}


@register_seed_strategy("iandd")
class IandDSeeds(InitialIDISeeds):
    """I&D: the initial IDIs of strategy ``i``, taken round robin over DBSCAN clusters of their SHAP values.

    After the steps of :class:`~chiralfair.seeds.initial.InitialIDISeeds`:

    1. explain the positive-class output of the model under test for up to ``max_explained`` initial IDIs
       (a random sample: the first ones of the shuffled list) against a background of data rows (by default
       drawn with a fixed seed, the same for every random state), with an explainer chosen by model type
       (:mod:`chiralfair.seeds.explainers`): torch modules get DeepLIFT (``shap.DeepExplainer``, batched, as
       in the paper), other models with a gradient integrated gradients; both are deterministic, so the
       explanations and their clusters do not change with the random state;
    2. cluster the SHAP rows with DBSCAN (paper: ``eps=0.09, min_samples=10``, unscaled); a degenerate
       clustering (one cluster, or >= 90% noise) is logged and repaired (:mod:`chiralfair.seeds.diversity`);
    3. seeds = round robin over the clusters, noise (-1) as a bucket of its own, then the IDIs not explained,
       then random data rows as in ``i``.

    ``SeedReport.clustering`` records the method, eps, min_samples, clusters, noise share, explainer and its
    budget (``explainer_params``: background, background_size, n_steps or n_samples), and whether the
    clustering was repaired.

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
    background_size : int, optional
        Background rows. Default: 50 for ``"deep"``, 20 for ``"integrated_gradients"``, 100 otherwise (the
        paper's), 10 k-means centres for ``background="kmeans"``; unused for ``"mean"``.
    background : {"fixed", "kmeans", "sample", "mean"}
        See :func:`~chiralfair.seeds.explainers.explanation_background`. ``"sample"`` (rows drawn with
        ``random_state``, the paper's choice) makes even a deterministic explainer random between random
        states: DeepLIFT on 100 sampled rows moved the same row by a median L2 of 0.04 on the census DNN.
        ``"kmeans"`` and ``"mean"`` were far (0.4-0.5) from the expectation over data rows there.
    explainer : {"auto", "linear", "tree", "expected_gradients", "integrated_gradients", "deep", "permutation"}
        See :func:`~chiralfair.seeds.explainers.explain`. ``"auto"``: by model type, with ``"deep"`` for torch
        modules (any output: one or two columns, probabilities or logits, float32 or float64; always explaining
        P(positive class); falling back, with a warning, to ``"integrated_gradients"`` when shap.DeepExplainer
        cannot explain the module, e.g. TorchScript, or its attributions do not add up) and
        ``"integrated_gradients"`` for other models with a gradient. The model under test is never changed
        (DeepLIFT explains a copy).
    n_steps : int
        Integrated gradients: interpolation points per background row (cost ``background_size * n_steps``
        gradient rows per explained row).
    n_samples : int
        Expected gradients: samples per explained row. Its noise is large: with 200 samples the same row's
        explanation moves by a median L2 of 0.11 between random states on the census DNN, more than eps.
    repair : bool
        Repair a degenerate clustering.
    chiral_model, chiral_trainer, split_random_state, chiral_random_state, chiral_cache_dir, chiral_reference
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
                 max_explained: int = 2000, max_explained_black_box: int = 250,
                 background_size: int | None = None, background: str = "fixed", explainer: str = "auto",
                 n_steps: int = 8, n_samples: int = 200, repair: bool = True, chiral_model=None,
                 chiral_trainer=None, split_random_state: int | None = None,
                 chiral_random_state: int | None = None, chiral_cache_dir=None, chiral_reference: bool = True):
        explainer = check_choice(explainer, "explainer", EXPLAINERS)
        background = check_choice(background, "background", BACKGROUNDS)
        if background_size is not None:
            background_size = check_int(background_size, "background_size", minimum=1)
        super().__init__(chiral_model=chiral_model, chiral_trainer=chiral_trainer,
                         split_random_state=split_random_state, chiral_random_state=chiral_random_state,
                         chiral_cache_dir=chiral_cache_dir, chiral_reference=chiral_reference,
                         eps=check_float(eps, "eps", minimum=0.0, exclusive_minimum=True),
                         min_samples=check_int(min_samples, "min_samples", minimum=1),
                         max_explained=check_int(max_explained, "max_explained", minimum=1),
                         max_explained_black_box=check_int(max_explained_black_box, "max_explained_black_box",
                                                           minimum=1),
                         background_size=background_size, background=background, explainer=explainer,
                         n_steps=check_int(n_steps, "n_steps", minimum=1),
                         n_samples=check_int(n_samples, "n_samples", minimum=1), repair=bool(repair))
        self.eps, self.min_samples = float(eps), int(min_samples)
        self.max_explained, self.background_size = int(max_explained), background_size
        self.max_explained_black_box = int(max_explained_black_box)
        self.explainer, self.background, self.repair = explainer, background, bool(repair)
        self.n_steps, self.n_samples = int(n_steps), int(n_samples)

    def _explainer_for(self, model) -> str:
        return self.explainer if self.explainer != "auto" else choose_stable_explainer(model)

    def _background_size(self, name: str) -> int:
        if self.background_size is not None:
            return self.background_size
        if self.background in ("kmeans", "mean"):
            return DEFAULT_BACKGROUND_SIZE[self.background]
        return DEFAULT_BACKGROUND_SIZE.get(name, DEFAULT_BACKGROUND_SIZE["other"])

    def _explainer_params(self, name: str, n_background: int) -> dict:
        if name.startswith("tree"):
            return {}  # path-dependent TreeSHAP uses no background
        params = {"background": self.background, "background_size": int(n_background)}
        if name == "integrated_gradients":
            params["n_steps"] = self.n_steps
        elif name == "expected_gradients":
            params["n_samples"] = self.n_samples
        return params

    def _explain(self, model, X, dataset, rng, name):
        background, weights = explanation_background(dataset.X, self.background, self._background_size(name), rng)
        kwargs = {"n_steps": self.n_steps, "n_samples": self.n_samples, "background_weights": weights,
                  "domain": dataset.domain}
        try:
            values, used = explain(model, X, background, rng, explainer=name, **kwargs)
        except DeepLIFTError as e:
            if self.explainer != "auto":
                raise
            logger.warning("%s; explaining by integrated gradients instead", e)
            name = "integrated_gradients"
            background, weights = explanation_background(dataset.X, self.background, self._background_size(name),
                                                         rng)
            kwargs["background_weights"] = weights
            values, used = explain(model, X, background, rng, explainer=name, **kwargs)
        return values, used, self._explainer_params(used, len(background))

    def _order(self, model, dataset, initial, rng, seconds):
        name = self._explainer_for(model)
        cap = min(self.max_explained, self.max_explained_black_box) if name == "permutation" else self.max_explained
        n_explained = min(len(initial), cap)
        t0 = time.perf_counter()
        if n_explained:
            values, explainer, explainer_params = self._explain(model, initial[:n_explained], dataset, rng, name)
        else:
            values, explainer, explainer_params = np.zeros((0, dataset.domain.n_features)), None, None
        seconds["shap"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        labels, clustering = cluster_explanations(values, eps=self.eps, min_samples=self.min_samples,
                                                  repair=self.repair)
        # Members keep their random order inside each bucket; noise (-1) is a bucket of its own.
        buckets = [np.flatnonzero(labels == c) for c in np.unique(labels)]
        order = np.concatenate([round_robin(buckets), np.arange(n_explained, len(initial))]).astype(np.int64)
        seconds["clustering"] = time.perf_counter() - t0
        clustering.update(explainer=explainer, explainer_params=explainer_params, n_explained=int(n_explained),
                          n_not_explained=int(len(initial) - n_explained))
        return order, clustering
