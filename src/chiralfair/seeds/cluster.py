"""Seed strategy ``cluster``: KMeans on the data, round robin over clusters (SG, ADF, EIDIG)."""

from __future__ import annotations

import numpy as np

from .._random import derive_seed
from .._validation import check_int
from ..models.threads import single_native_thread
from .base import SeedStrategy, register_seed_strategy


@register_seed_strategy("cluster")
class ClusterSeeds(SeedStrategy):
    """KMeans clusters of the data rows, seeds taken round robin over clusters.

    The i-th member of cluster 0, 1, ..., k-1, then the (i+1)-th, ... (ADF's order), members shuffled with
    ``random_state`` within each cluster; exhausted clusters are skipped. Past the number of rows, rows repeat.

    Parameters
    ----------
    n_clusters : int
        Number of KMeans clusters (4 in ADF, SG, EIDIG and the I&D paper).

    References
    ----------
    .. [1] Zhang et al. "White-box fairness testing through adversarial sampling." ICSE 2020.
    .. [2] Aggarwal et al. "Black box fairness testing of machine learning models." FSE 2019.
    """

    name = "cluster"

    def __init__(self, n_clusters: int = 4):
        super().__init__(n_clusters=check_int(n_clusters, "n_clusters", minimum=1))
        self.n_clusters = n_clusters

    def _choose(self, model, dataset, n_seeds, rng):
        from sklearn.cluster import KMeans

        X = dataset.X
        k = min(self.n_clusters, len(np.unique(X, axis=0)))
        with single_native_thread():  # as for predictions: see models/threads.py
            labels = KMeans(n_clusters=k, n_init=10, random_state=derive_seed(rng)).fit_predict(X.astype(float))
        order = round_robin([rng.permutation(np.flatnonzero(labels == c)) for c in range(k)])
        if n_seeds > len(order):
            order = np.resize(order, n_seeds)
        notes = (f"n_seeds={n_seeds} exceeds the {len(X)} data rows: rows repeat",) if n_seeds > len(X) else ()
        return X[order[:n_seeds]], {"notes": notes, "clustering": {"method": "kmeans", "n_clusters": k}}


def round_robin(buckets: list[np.ndarray]) -> np.ndarray:
    """Interleave buckets: first item of each, then the second of each, ...; exhausted buckets are skipped.

    Parameters
    ----------
    buckets : list of numpy.ndarray, each shape (n_i,)

    Returns
    -------
    numpy.ndarray, shape (sum n_i,)
    """
    buckets = [b for b in buckets if len(b)]
    if not buckets:
        return np.zeros(0, dtype=np.int64)
    rank = np.concatenate([np.arange(len(b)) for b in buckets])
    which = np.concatenate([np.full(len(b), i) for i, b in enumerate(buckets)])
    items = np.concatenate(buckets)
    return items[np.lexsort((which, rank))]
