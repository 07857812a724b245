"""Clustering SHAP explanations for diverse seeds (I&D step 3).

DBSCAN runs with the paper's defaults; a degenerate clustering is detected, logged and repaired.

The paper clusters *unscaled* SHAP values with ``eps=0.09, min_samples=10`` (algorithms.md §12.11). That eps
fits probability-scale explanations of a DNN; on other scales (log-odds of a linear model, labels of a black
box) or on degenerate data it puts every point in one cluster or in the noise. Instead of rescaling by default
(which would change the paper's method where it works), such a clustering is detected and repaired:

1. DBSCAN with ``eps`` = the knee of the sorted k-distance curve (k = ``min_samples``), the usual way to pick
   eps (Ester et al. 1996, §4.2);
2. if that is degenerate too, ``sklearn.cluster.HDBSCAN`` (no eps at all);
3. if that is degenerate too, KMeans with the number of clusters (2..8) of the best silhouette score;
4. if the rows have too few distinct values even for that, the attempt with the most buckets is kept and the
   report says so.
"""

from __future__ import annotations

import logging

import numpy as np

from ..models.threads import single_native_thread

logger = logging.getLogger(__name__)

PAPER_EPS = 0.09
PAPER_MIN_SAMPLES = 10
MAX_NOISE_SHARE = 0.9


def cluster_explanations(values: np.ndarray, *, eps: float = PAPER_EPS,
                         min_samples: int = PAPER_MIN_SAMPLES,
                         repair: bool = True) -> tuple[np.ndarray, dict]:
    """Cluster SHAP rows with DBSCAN; detect and repair a degenerate clustering.

    Parameters
    ----------
    values : numpy.ndarray, shape (n_samples, n_features)
        SHAP values, one row per explained IDI.
    eps, min_samples : float, int
        DBSCAN parameters (paper: 0.09 and 10).
    repair : bool
        Whether to repair a degenerate clustering (see the module docstring).

    Returns
    -------
    labels : numpy.ndarray of int64, shape (n_samples,)
        Cluster of each row; -1 = noise (its own bucket in the round robin).
    info : dict
        ``method`` (``"dbscan"``, ``"dbscan-kdist"``, ``"hdbscan"`` or ``"none"``), ``eps``, ``min_samples``,
        ``n_clusters`` (without noise), ``noise_share``, ``degenerate`` (why the paper-default clustering was
        degenerate, or None), ``repaired`` (bool) and ``reason`` (why no repair helped, or None).

    References
    ----------
    .. [1] Ma et al. arXiv:2209.08321, §3.2.
    .. [2] Ester, Kriegel, Sander, Xu. "A density-based algorithm for discovering clusters." KDD 1996.
    .. [3] Campello, Moulavi, Sander. "Density-based clustering based on hierarchical density estimates."
       PAKDD 2013.
    """
    # One OpenMP/BLAS thread, as for predictions (models/threads.py): KMeans with silhouette took 1.3 s on a
    # quiet machine and 13-40 s on a loaded one with the default pools (benchmarks/results/threads.md).
    with single_native_thread():
        return _cluster(np.asarray(values, dtype=np.float64), eps, min_samples, repair)


def _cluster(values: np.ndarray, eps: float, min_samples: int, repair: bool) -> tuple[np.ndarray, dict]:
    n = len(values)
    base = {"eps": float(eps), "min_samples": int(min_samples), "degenerate": None, "repaired": False,
            "reason": None}
    if n < 2 * min_samples:
        labels = np.zeros(n, dtype=np.int64)
        reason = f"{n} explained IDIs are fewer than 2 * min_samples = {2 * min_samples}: not clustered"
        return labels, {**base, "method": "none", **_shape(labels), "reason": reason}
    labels = _dbscan(values, eps, min_samples)
    info = {**base, "method": "dbscan", **_shape(labels)}
    why = degeneracy(labels)
    if why is None:
        return labels, info
    info["degenerate"] = why
    if np.all(values == values[0]):
        info["reason"] = "all explanations are identical: one cluster is the correct answer"
        return labels, info
    if not repair:
        return labels, info
    # logged at INFO: the repair is recorded in the result and every report says which clustering was used
    logger.info("DBSCAN(eps=%g, min_samples=%d) on %d SHAP rows is degenerate (%s); repairing",
                   eps, min_samples, n, why)
    attempts = [(labels, info)]
    knee_eps = kdistance_knee(values, min_samples)
    if knee_eps > 0:
        kl = _dbscan(values, knee_eps, min_samples)
        attempts.append((kl, {**info, "method": "dbscan-kdist", "eps": knee_eps, **_shape(kl)}))
        if degeneracy(kl) is None:
            return kl, {**attempts[-1][1], "repaired": True}
    from sklearn.cluster import HDBSCAN
    hl = HDBSCAN(min_cluster_size=min_samples, copy=True).fit_predict(values).astype(np.int64)
    attempts.append((hl, {**info, "method": "hdbscan", "eps": None, **_shape(hl)}))
    if degeneracy(hl) is None:
        return hl, {**attempts[-1][1], "repaired": True}
    kl, k = kmeans_by_silhouette(values, random_state=0)
    if k >= 2:
        logger.info("density-based clusterings of the SHAP rows are degenerate; using KMeans with %d clusters "
                    "(best silhouette)", k)
        return kl, {**info, "method": "kmeans-silhouette", "eps": None, **_shape(kl), "repaired": True}
    labels, best = max(attempts, key=lambda a: _n_buckets(a[0]))
    best = {**best, "repaired": best["method"] != "dbscan",
            "reason": "every clustering tried was degenerate; kept the one with the most buckets"}
    logger.warning("no clustering of the SHAP rows is non-degenerate; using %s with %d clusters",
                   best["method"], best["n_clusters"])
    return labels, best


def kmeans_by_silhouette(values: np.ndarray, *, random_state: int = 0, k_max: int = 8) -> tuple[np.ndarray, int]:
    """KMeans with the number of clusters (2..k_max) of the best silhouette score.

    The last repair: when no density-based clustering finds structure, a partition into the most separated
    groups still spreads the seeds over different explanations.

    Returns
    -------
    labels : numpy.ndarray of int64, shape (n_samples,)
    k : int
        Clusters chosen; 1 (all labels 0) when the rows have fewer than 2 distinct values.
    """
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    distinct = len(np.unique(values, axis=0))
    best = (np.zeros(len(values), dtype=np.int64), 1, -1.0)
    with single_native_thread():
        for k in range(2, min(k_max, distinct - 1) + 1):
            labels = KMeans(n_clusters=k, n_init=4, random_state=random_state).fit_predict(values)
            score = silhouette_score(values, labels, sample_size=min(len(values), 1000), random_state=random_state)
            if score > best[2]:
                best = (labels.astype(np.int64), k, score)
    return best[0], best[1]


def degeneracy(labels: np.ndarray) -> str | None:
    """Why a clustering gives no diversity (one cluster or at least 90% noise), or None if it is usable."""
    share = float(np.mean(labels < 0)) if len(labels) else 0.0
    if share >= MAX_NOISE_SHARE:
        return f"{share:.0%} of the rows are noise"
    k = len(np.unique(labels[labels >= 0]))
    if k <= 1:
        return f"{k} cluster"
    return None


def kdistance_knee(values: np.ndarray, k: int) -> float:
    """Eps at the knee of the sorted k-nearest-neighbour distance curve.

    The knee is the point farthest from the chord joining the curve's ends, both axes scaled to [0, 1].

    Parameters
    ----------
    values : numpy.ndarray, shape (n_samples, n_features)
    k : int
        Neighbours (DBSCAN's ``min_samples``, the point itself included).

    Returns
    -------
    float
        The k-distance at the knee (0 if all distances are 0).
    """
    from sklearn.neighbors import NearestNeighbors
    k = min(k, len(values))
    dist = NearestNeighbors(n_neighbors=k).fit(values).kneighbors(values)[0][:, -1]
    d = np.sort(dist)
    if d[-1] <= 0:
        return 0.0
    x = np.linspace(0.0, 1.0, len(d))
    y = (d - d[0]) / (d[-1] - d[0]) if d[-1] > d[0] else np.zeros_like(d)
    knee = int(np.argmax(x - y))  # distance below the chord y = x, for a convex increasing curve
    eps = float(d[knee])
    return eps if eps > 0 else float(d[d > 0][0])


def _dbscan(values, eps, min_samples) -> np.ndarray:
    from sklearn.cluster import DBSCAN
    return DBSCAN(eps=eps, min_samples=min_samples).fit_predict(values).astype(np.int64)


def _shape(labels) -> dict:
    return {"n_clusters": int(len(np.unique(labels[labels >= 0]))),
            "noise_share": float(np.mean(labels < 0)) if len(labels) else 0.0}


def _n_buckets(labels) -> int:
    return int(len(np.unique(labels)))
