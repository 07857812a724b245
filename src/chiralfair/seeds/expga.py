"""Seed strategy ``expga``: random inputs whose explanation ranks a protected attribute among the top features."""

from __future__ import annotations

import math

import numpy as np

from .._validation import check_int
from ..domain import Domain
from ..exceptions import ConfigError
from .base import SeedStrategy, register_seed_strategy
from .explainers import EXPLAINERS, explain
from .random import random_rows

# The paper's ε (Table 2): a candidate is kept when a protected attribute's rank is below it.
PAPER_THRESHOLDS = {"census": 7, "german": 14, "bank": 9}


@register_seed_strategy("expga")
class ExpGASeeds(SeedStrategy):
    """ExpGA's original seeds: uniform random inputs whose explanation ranks a protected attribute near the top.

    1. Draw ``batch_size`` uniform inputs from the domain (:meth:`Domain.sample`: protected attributes take
       valid values).
    2. Explain the model's positive-class output for all of them in one call
       (:func:`~chiralfair.seeds.explainers.explain`, the explainer chosen by model type as for I&D) against
       ``background_size`` random data rows.
    3. Rank the features by absolute attribution, a protected attribute over several columns as one feature
       (the sum of its columns' SHAP values); keep the candidate if some protected attribute's rank
       (0-based; ties rank the attribute last) is below ``threshold``.
    4. Repeat until ``n_seeds`` candidates are kept or ``max_candidates`` were drawn. A shortfall is filled
       with the best-ranked rejected candidates, and ``notes`` says how many.

    Seeds are not verified IDIs (as in ExpGA); :meth:`select` checks them for the report.

    Parameters
    ----------
    threshold : int, optional
        Rank bound ε. None: the paper's value for its datasets (census 7, german 14, bank 9), otherwise half
        the number of features (protected attributes counted once), rounded up.
    max_candidates : int, optional
        Most random inputs explained; None: ``10 * n_seeds`` (the reference draws 1000 for 100 seeds).
    batch_size : int
        Candidates drawn and explained per call.
    background_size : int
        Data rows sampled as the explanation background.
    explainer : {"auto", "linear", "tree", "expected_gradients", "deep", "permutation"}
        See :func:`~chiralfair.seeds.explainers.explain`.

    Notes
    -----
    Departures from the reference code (``waving7799/ExpGA:expga/ExpGA.py``):

    - **SHAP explainers instead of LIME**, batched (one call per ``batch_size`` candidates instead of one
      ``LimeTabularExplainer.explain_instance`` of 5000 samples per candidate). ``lime`` is not offered: its
      last release (0.2.0.1) dates from June 2020, it ships as a source archive only, and it pulls in
      scikit-image and matplotlib.
    - **Protected attributes are drawn uniformly from their values** (the reference sets them to 0).
    - **A shortfall is filled** with the best-ranked rejected candidates (the reference returns fewer seeds).

    References
    ----------
    .. [1] Fan, Wang, Liu, Zhang, Gao, Zhou, Wu. "Explanation-guided fairness testing through genetic
       algorithm." ICSE 2022, §3.2 and Table 2.
    .. [2] Lundberg, Lee. "A unified approach to interpreting model predictions." NeurIPS 2017.
    """

    name = "expga"

    def __init__(self, *, threshold: int | None = None, max_candidates: int | None = None, batch_size: int = 500,
                 background_size: int = 100, explainer: str = "auto"):
        if explainer not in EXPLAINERS:
            raise ConfigError(f"explainer must be one of {EXPLAINERS}, got {explainer!r}")
        if threshold is not None:
            threshold = check_int(threshold, "threshold", minimum=1)
        if max_candidates is not None:
            max_candidates = check_int(max_candidates, "max_candidates", minimum=1)
        super().__init__(threshold=threshold, max_candidates=max_candidates,
                         batch_size=check_int(batch_size, "batch_size", minimum=1),
                         background_size=check_int(background_size, "background_size", minimum=1),
                         explainer=explainer)

    def _choose(self, model, dataset, n_seeds, rng):
        p = self.params
        domain = dataset.domain
        threshold = p["threshold"] or PAPER_THRESHOLDS.get(dataset.name, math.ceil(n_units(domain) / 2))
        limit = p["max_candidates"] or 10 * n_seeds
        background = random_rows(dataset.X, p["background_size"], rng)
        kept, rejected, ranks = [], [], []
        n_kept = n_drawn = 0
        used = None
        while n_kept < n_seeds and n_drawn < limit:
            X = domain.sample(min(p["batch_size"], limit - n_drawn), rng)
            values, used = explain(model, X, background, rng, explainer=p["explainer"])
            rank = protected_rank(values, domain)
            keep = rank < threshold
            kept.append(X[keep])
            rejected.append(X[~keep])
            ranks.append(rank[~keep])
            n_kept += int(keep.sum())
            n_drawn += len(X)
        seeds = np.concatenate(kept)[:n_seeds]
        notes = []
        if len(seeds) < n_seeds:
            order = np.argsort(np.concatenate(ranks), kind="stable")
            fill = np.concatenate(rejected)[order][: n_seeds - len(seeds)]
            notes.append(f"{len(seeds)} of {n_drawn} explained candidates rank a protected attribute below "
                         f"threshold={threshold}; {len(fill)} best-ranked others fill the {n_seeds} seeds")
            seeds = np.concatenate([seeds, fill])
        return seeds, {"n_candidates": n_drawn, "notes": tuple(notes),
                       "meta": {"explainer": used, "threshold": threshold}}


def n_units(domain: Domain) -> int:
    """Number of features with every protected attribute counted once.

    Parameters
    ----------
    domain : Domain

    Returns
    -------
    int
    """
    return domain.n_features - len(domain.protected) + len(domain.attributes)


def protected_rank(values: np.ndarray, domain: Domain) -> np.ndarray:
    """Best (lowest) rank of a protected attribute by absolute attribution, per row, shape (n_samples,).

    Parameters
    ----------
    values : numpy.ndarray, shape (n_samples, n_features)
        SHAP values; an attribute over several columns is ranked by the sum of its columns' values.
    domain : Domain

    Returns
    -------
    numpy.ndarray of int64
        0 = the attribute has the largest absolute attribution; ties rank the attribute after the features
        it ties with.
    """
    others = np.abs(values[:, domain.non_protected])
    best = np.full(len(values), np.iinfo(np.int64).max)
    for j, a in enumerate(domain.attributes):
        mine = np.abs(values[:, list(a.columns)].sum(axis=1))
        rivals = [np.abs(values[:, list(b.columns)].sum(axis=1)) for i, b in enumerate(domain.attributes) if i != j]
        pool = np.column_stack([others, *rivals]) if rivals else others
        best = np.minimum(best, (pool >= mine[:, None]).sum(axis=1))
    return best
