"""How diverse a set of inputs is (seeds, or the IDIs a search found), measured directly.

Three views of one set of inputs, each against a reference fitted once per (model, dataset), so that
the sets chosen by different seed strategies or found by different searches are comparable:

1. **SHAP clusters.** A sample of data rows (or given rows, e.g. the initial IDIs of the chiral model) is
   explained and clustered as I&D clusters its initial IDIs (:func:`~chiralfair.seeds.diversity.cluster_explanations`,
   DBSCAN with the paper's eps, repaired when degenerate). The inputs are explained the same way (same
   explainer, same background) and each is assigned the cluster of its nearest clustered reference explanation
   (1-nearest neighbour: DBSCAN has no ``predict``). Reported: clusters covered and the Shannon entropy (nats)
   of the inputs' shares over the clusters.
2. **Spread of the non-protected projections.** The mean Gower distance over pairs of inputs: per non-protected
   column, ``|x - y| / (hi - lo)`` for ordinal codes and ``[x != y]`` for categorical ones, averaged over the
   columns; in [0, 1].
3. **Decision paths.** A depth-limited decision tree fitted on the model's labels over the data rows (a
   surrogate of the model); reported: the distinct leaves (root-to-leaf decision paths) the inputs reach and
   their share of the tree's leaves, i.e. the decision-tree coverage of the inputs.

Costs are capped: at most ``max_explained`` inputs are explained (a random sample, 1,000 by default) and at
most ``max_distance_rows`` inputs enter the pairwise distance (all their pairs); the leaves are counted over
every input.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .._random import RandomState, derive_seed, resolve_random_state
from .._validation import check_int
from ..datasets.base import Dataset
from ..domain import Domain
from ..exceptions import ConfigError
from ..models.adapters import as_model
from ..models.protocol import CountingModel
from ..models.threads import single_native_thread
from .diversity import PAPER_EPS, PAPER_MIN_SAMPLES, cluster_explanations
from .explainers import (
    DEFAULT_BACKGROUND_ROWS,
    EXPLAINERS,
    STABLE_BACKGROUND_SIZE,
    DeepLIFTError,
    choose_stable_explainer,
    explain,
    explanation_background,
)

logger = logging.getLogger(__name__)

DEFAULT_MAX_EXPLAINED = 1000
DEFAULT_MAX_DISTANCE_ROWS = 2000
DEFAULT_REFERENCE_ROWS = 1000
DEFAULT_SURROGATE_DEPTH = 8
# Models explained by permutation cost about 0.15 s per explained row (census SVC, seeds/iandd.py): lower caps.
DEFAULT_REFERENCE_ROWS_BLACK_BOX = 200
DEFAULT_MAX_EXPLAINED_BLACK_BOX = 100
# Rows the surrogate tree is fitted on (a random sample beyond this); census has 32,561.
MAX_SURROGATE_ROWS = 50_000


@dataclass(frozen=True)
class DiversityReport:
    """Diversity of one set of inputs against a :class:`DiversityReference`.

    Attributes
    ----------
    n_inputs : int
        Inputs measured.
    n_explained : int
        Inputs explained and assigned to a SHAP cluster (a random sample of at most ``max_explained``).
    max_explained : int
        The cap on explained inputs (``max_explained_black_box`` for a model explained by permutation).
    n_reference_clusters : int
        Clusters of the reference clustering (noise excluded).
    clusters_covered : int
        Reference clusters that at least one explained input is assigned to.
    cluster_entropy : float
        Shannon entropy, in nats, of the explained inputs' shares over the reference clusters
        (0 = all in one cluster; ``log(k)`` = spread evenly over k clusters).
    n_distance_rows : int
        Inputs whose pairwise distances were averaged (a random sample of at most ``max_distance_rows``).
    mean_pairwise_distance : float or None
        Mean Gower distance of the non-protected projections over all pairs of those rows, in [0, 1];
        None for fewer than 2 rows.
    n_leaves : int
        Leaves of the surrogate decision tree.
    leaves_covered : int
        Distinct leaves (decision paths) the inputs reach.
    explainer : str or None
        Explainer of the inputs (None when none was explained).
    reference : dict
        How the reference was built (:attr:`DiversityReference.info`).
    seconds : float
        Wall time of the measurement, in seconds (the reference's own fitting excluded).
    n_queries : int
        Rows sent to the model by the measurement (the explanations).
    notes : tuple of str
    """

    n_inputs: int
    n_explained: int
    max_explained: int
    n_reference_clusters: int
    clusters_covered: int
    cluster_entropy: float
    n_distance_rows: int
    mean_pairwise_distance: float | None
    n_leaves: int
    leaves_covered: int
    explainer: str | None = None
    reference: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    n_queries: int = 0
    notes: tuple[str, ...] = ()

    @property
    def leaf_share(self) -> float:
        """``leaves_covered / n_leaves``: the decision-tree coverage of the inputs, in [0, 1]."""
        return self.leaves_covered / self.n_leaves if self.n_leaves else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields, with ``leaf_share``.

        Returns
        -------
        dict
        """
        d = asdict(self)
        d["notes"] = list(self.notes)
        d["leaf_share"] = self.leaf_share
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DiversityReport:
        """Inverse of :meth:`to_dict`.

        Parameters
        ----------
        d : dict
            What :meth:`to_dict` returned.

        Returns
        -------
        DiversityReport
        """
        d = dict(d)
        d.pop("leaf_share", None)
        d["notes"] = tuple(d.get("notes", ()))
        return cls(**d)

    def to_json(self) -> str:
        """:meth:`to_dict` as JSON text.

        Returns
        -------
        str
        """
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, text: str) -> DiversityReport:
        """Inverse of :meth:`to_json`.

        Parameters
        ----------
        text : str
            What :meth:`to_json` returned.

        Returns
        -------
        DiversityReport
        """
        return cls.from_dict(json.loads(text))

    def describe(self) -> list[str]:
        """The report as short lines for the command line.

        Returns
        -------
        list of str
        """
        distance = "-" if self.mean_pairwise_distance is None else f"{self.mean_pairwise_distance:.3f}"
        return [
            f"SHAP clusters covered: {self.clusters_covered} of {self.n_reference_clusters} "
            f"(entropy {self.cluster_entropy:.2f} nats; {self.n_explained} of {self.n_inputs} inputs explained "
            f"by {self.explainer or '-'}, cap {self.max_explained})",
            f"mean pairwise distance (Gower, non-protected): {distance} over {self.n_distance_rows} inputs",
            f"decision paths covered: {self.leaves_covered} of {self.n_leaves} surrogate-tree leaves "
            f"({self.leaf_share:.0%})",
        ]


@dataclass(frozen=True, eq=False)
class DiversityReference:
    """What the inputs of every strategy are measured against, for one (model, dataset).

    Build it with :func:`diversity_reference`; reuse it for every set compared.

    Attributes
    ----------
    model : CountingModel
        The model under test (explained; the surrogate tree learns its labels).
    domain : Domain
    explainer : str
        Explainer name passed to :func:`~chiralfair.seeds.explainers.explain` (resolved from ``"auto"``).
    background : numpy.ndarray of float64, shape (n_background, n_features)
        SHAP background rows, shared by the reference and the inputs.
    cluster_values : numpy.ndarray of float64, shape (n_clustered, n_features)
        SHAP values of the reference rows that belong to a cluster (noise left out).
    cluster_labels : numpy.ndarray of int64, shape (n_clustered,)
        Their clusters, 0..n_clusters-1.
    n_clusters : int
    tree : sklearn.tree.DecisionTreeClassifier
        The surrogate tree.
    info : dict
        Recorded in every report: reference rows, explainer, clustering (method, eps, noise share, ...),
        surrogate depth, leaves and fidelity (share of the data rows where it agrees with the model), random_state.
    """

    model: CountingModel
    domain: Domain
    explainer: str
    background: np.ndarray
    cluster_values: np.ndarray
    cluster_labels: np.ndarray
    n_clusters: int
    tree: Any
    info: dict[str, Any]


def diversity_reference(model, dataset: Dataset, *, rows: np.ndarray | None = None,
                        n_reference: int = DEFAULT_REFERENCE_ROWS,
                        n_reference_black_box: int = DEFAULT_REFERENCE_ROWS_BLACK_BOX,
                        background_size: int | None = None,
                        explainer: str = "auto", eps: float = PAPER_EPS, min_samples: int = PAPER_MIN_SAMPLES,
                        surrogate_depth: int = DEFAULT_SURROGATE_DEPTH,
                        random_state: RandomState = 0) -> DiversityReference:
    """Fit the SHAP clustering and the surrogate decision tree that diversity is measured against.

    Parameters
    ----------
    model : CountingModel or anything :func:`~chiralfair.models.as_model` accepts
        The model under test.
    dataset : Dataset
        Its rows: the reference sample, the SHAP background and the surrogate's training rows.
    rows : numpy.ndarray, shape (n_rows, n_features), optional
        Rows whose explanations define the clusters (e.g. the initial IDIs of the chiral model); by default
        ``n_reference`` data rows drawn at random. At most ``n_reference`` of them are used.
    n_reference : int
        Most reference rows explained and clustered.
    n_reference_black_box : int
        The same for a model explained by permutation (about 0.15 s per row for the census SVC).
    background_size : int, optional
        Data rows of the SHAP background, drawn with a fixed seed (the same for every random state); default:
        50 for DeepLIFT, 20 for integrated gradients, 100 otherwise.
    explainer : {"auto", "linear", "tree", "expected_gradients", "integrated_gradients", "deep", "permutation"}
        As in :func:`~chiralfair.seeds.explainers.explain`; ``"auto"`` is I&D's choice
        (:func:`~chiralfair.seeds.explainers.choose_stable_explainer`), deterministic for models with a gradient.
    eps, min_samples : float, int
        DBSCAN parameters (the paper's 0.09 and 10); a degenerate clustering is repaired.
    surrogate_depth : int
        ``max_depth`` of the surrogate tree (at most ``2 ** surrogate_depth`` leaves).
    random_state : int, numpy.random.Generator, ...
        Draws the reference rows, the background and the explainer's samples; fix it (the default 0) so that
        every set compared is measured against the same reference.

    Returns
    -------
    DiversityReference

    Raises
    ------
    ConfigError
        For a bad parameter, or ``rows`` of the wrong width or outside the domain.
    """
    from sklearn.neighbors import NearestNeighbors  # noqa: F401  (fail here, not in seed_diversity)
    from sklearn.tree import DecisionTreeClassifier

    if explainer not in EXPLAINERS:
        raise ConfigError(f"explainer must be one of {EXPLAINERS}, got {explainer!r}")
    n_reference = check_int(n_reference, "n_reference", minimum=1)
    n_reference_black_box = check_int(n_reference_black_box, "n_reference_black_box", minimum=1)
    if background_size is not None:
        background_size = check_int(background_size, "background_size", minimum=1)
    surrogate_depth = check_int(surrogate_depth, "surrogate_depth", minimum=1)
    model = as_model(model)
    rng, described = resolve_random_state(random_state)
    domain = dataset.domain
    X = dataset.X
    name = choose_stable_explainer(model) if explainer == "auto" else explainer
    if name == "permutation":
        n_reference = min(n_reference, n_reference_black_box)
    if rows is None:
        rows = X[rng.choice(len(X), size=min(n_reference, len(X)), replace=False)]
        source = "data rows"
    else:
        rows = domain.validate(rows, what="rows")
        rows = rows[rng.permutation(len(rows))[:n_reference]]
        source = "given rows"
    background, weights = explanation_background(
        X, "fixed", background_size or STABLE_BACKGROUND_SIZE.get(name, DEFAULT_BACKGROUND_ROWS), rng)
    try:
        values, used = explain(model, rows, background, rng, explainer=name, background_weights=weights)
    except DeepLIFTError as err:  # as I&D does: a module DeepLIFT cannot explain gets integrated gradients
        logger.warning("%s; explaining by integrated gradients instead", err)
        name = "integrated_gradients"
        background, weights = explanation_background(X, "fixed", background_size or STABLE_BACKGROUND_SIZE[name], rng)
        values, used = explain(model, rows, background, rng, explainer=name, background_weights=weights)
    labels, clustering = cluster_explanations(values, eps=eps, min_samples=min_samples)
    clustered = labels >= 0
    # Relabel 0..k-1 so that the number of clusters is the number of labels.
    _, cluster_labels = np.unique(labels[clustered], return_inverse=True)

    fit_rows = X if len(X) <= MAX_SURROGATE_ROWS else X[rng.choice(len(X), MAX_SURROGATE_ROWS, replace=False)]
    model_labels = model.predict(fit_rows)
    with single_native_thread():
        tree = DecisionTreeClassifier(max_depth=surrogate_depth, random_state=derive_seed(rng))
        tree.fit(fit_rows, model_labels)
    fidelity = float(np.mean(tree.predict(fit_rows) == model_labels))
    info = {"rows": source, "n_reference_rows": int(len(rows)), "background_size": int(len(background)),
            "explainer": used, "clustering": clustering, "surrogate_depth": surrogate_depth,
            "surrogate_leaves": int(tree.get_n_leaves()), "surrogate_fidelity": fidelity,
            "surrogate_rows": int(len(fit_rows)), "random_state": described}
    return DiversityReference(model=model, domain=domain, explainer=name, background=background,
                              cluster_values=values[clustered], cluster_labels=cluster_labels.astype(np.int64),
                              n_clusters=int(len(np.unique(cluster_labels))), tree=tree, info=info)


def seed_diversity(inputs, reference: DiversityReference, *, max_explained: int = DEFAULT_MAX_EXPLAINED,
                   max_explained_black_box: int = DEFAULT_MAX_EXPLAINED_BLACK_BOX,
                   max_distance_rows: int = DEFAULT_MAX_DISTANCE_ROWS,
                   random_state: RandomState = 0) -> DiversityReport:
    """Measure the diversity of a set of inputs: SHAP clusters covered, pairwise distance, decision paths.

    Parameters
    ----------
    inputs : array-like of int, shape (n_inputs, n_features)
        Seeds, or the IDIs a search found; inside the domain of ``reference``.
    reference : DiversityReference
        From :func:`diversity_reference`; the same one for every set compared.
    max_explained : int
        Most inputs explained (a random sample beyond it); the explanations dominate the cost.
    max_explained_black_box : int
        The same for a model explained by permutation (``reference.explainer == "permutation"``).
    max_distance_rows : int
        Most inputs entering the pairwise distance (a random sample beyond it; all pairs of those).
    random_state : int, numpy.random.Generator, ...
        Draws the samples and the explainer's samples; the same value gives the same report bit for bit.

    Returns
    -------
    DiversityReport

    Raises
    ------
    ConfigError
        For a cap below 1.
    DomainError
        If ``inputs`` is not of the domain's width or leaves its bounds.

    Notes
    -----
    The inputs are explained as the reference rows were, so a noisy explainer (expected gradients with few
    samples) moves inputs between neighbouring clusters; the report records the explainer.

    References
    ----------
    .. [1] Ma et al. "Enhanced Fairness Testing via Generating Effective Initial Individual Discriminatory
       Instances." arXiv:2209.08321, §3.2 (SHAP clusters of IDIs as their kinds of discrimination).
    .. [2] Gower. "A general coefficient of similarity and some of its properties." Biometrics 27, 1971.
    .. [3] Santos et al. "On Using Decision Tree Coverage Criteria for Testing Machine Learning Models."
       SAST 2021, doi:10.1145/3482909.3482911 (decision tree coverage: the share of a tree's structure that
       the test inputs exercise).
    .. [4] Zhao, Toda, Kitamura. "Approximation-guided Fairness Testing through Discriminatory Space
       Analysis." ASE 2024 (decision-tree approximations of the classifier under test; their paths as the
       regions in which IDIs are sought, and the diversity of the IDIs found).
    .. [5] Aggarwal et al. "Black box fairness testing of machine learning models." FSE 2019 (decision-tree
       paths of a local surrogate drive SG's search).
    """
    max_explained = check_int(max_explained, "max_explained", minimum=1)
    if reference.explainer == "permutation":
        max_explained = min(max_explained, check_int(max_explained_black_box, "max_explained_black_box", minimum=1))
    max_distance_rows = check_int(max_distance_rows, "max_distance_rows", minimum=1)
    X = reference.domain.validate(inputs, what="inputs")
    rng, _ = resolve_random_state(random_state)
    q0, t0 = reference.model.n_queries, time.perf_counter()
    explained = X[_sample(len(X), max_explained, rng)]
    clusters, used = _assign_clusters(explained, reference, rng)
    covered, entropy = _cluster_spread(clusters)
    distance_rows = X[_sample(len(X), max_distance_rows, rng)]
    notes: tuple[str, ...] = ()
    if used is not None and used != reference.info["explainer"]:
        notes = (f"the inputs were explained by {used}, the reference rows by {reference.info['explainer']}",)
    return DiversityReport(
        n_inputs=int(len(X)), n_explained=int(len(explained)), max_explained=max_explained,
        n_reference_clusters=reference.n_clusters, clusters_covered=covered, cluster_entropy=entropy,
        n_distance_rows=int(len(distance_rows)),
        mean_pairwise_distance=mean_gower_distance(distance_rows, reference.domain),
        n_leaves=int(reference.tree.get_n_leaves()), leaves_covered=leaves_covered(X, reference.tree),
        explainer=used, reference=reference.info, seconds=time.perf_counter() - t0,
        n_queries=int(reference.model.n_queries - q0), notes=notes)


def mean_gower_distance(X: np.ndarray, domain: Domain) -> float | None:
    """Mean Gower distance over all pairs of rows, on the non-protected columns.

    Parameters
    ----------
    X : numpy.ndarray of int, shape (n, n_features)
    domain : Domain
        Gives the protected columns (left out), each column's kind and its range ``hi - lo``.

    Returns
    -------
    float or None
        In [0, 1]: per pair, the mean over the non-protected columns of ``|x - y| / (hi - lo)`` (ordinal; 0 for
        a column of one value) or ``[x != y]`` (categorical); averaged over the ``n (n - 1) / 2`` pairs.
        None for fewer than 2 rows or no non-protected column.
    """
    from scipy.spatial.distance import pdist

    columns = domain.non_protected
    if len(X) < 2 or not len(columns):
        return None
    kinds = np.array([domain.features[j].kind for j in columns])
    ordinal, categorical = columns[kinds != "categorical"], columns[kinds == "categorical"]
    total = np.zeros(len(X) * (len(X) - 1) // 2)
    if len(ordinal):
        span = (domain.upper - domain.lower)[ordinal].astype(np.float64)
        total += pdist(X[:, ordinal] / np.where(span > 0, span, 1.0), "cityblock")
    if len(categorical):
        total += pdist(X[:, categorical], "hamming") * len(categorical)
    return float(total.mean() / len(columns))


def leaves_covered(X: np.ndarray, tree) -> int:
    """Distinct leaves of a fitted sklearn decision tree that the rows of ``X`` (shape (n, n_features)) reach.

    Parameters
    ----------
    X : numpy.ndarray of int64, shape (n, n_features)
    tree : fitted sklearn DecisionTreeClassifier

    Returns
    -------
    int
    """
    if not len(X):
        return 0
    return int(len(np.unique(tree.apply(np.asarray(X, dtype=np.float32)))))


def _assign_clusters(X: np.ndarray, reference: DiversityReference,
                     rng: np.random.Generator) -> tuple[np.ndarray, str | None]:
    """Cluster of the nearest clustered reference explanation for each row, shape (n,); -1 when there is none."""
    from sklearn.neighbors import NearestNeighbors

    if not len(X):
        return np.zeros(0, dtype=np.int64), None
    values, used = explain(reference.model, X, reference.background, rng, explainer=reference.explainer)
    if not len(reference.cluster_values):
        return np.full(len(X), -1, dtype=np.int64), used
    with single_native_thread():
        nearest = NearestNeighbors(n_neighbors=1).fit(reference.cluster_values).kneighbors(
            values, return_distance=False)[:, 0]
    return reference.cluster_labels[nearest], used


def _cluster_spread(clusters: np.ndarray) -> tuple[int, float]:
    """Clusters covered and the Shannon entropy (nats) of the shares over them."""
    from scipy.stats import entropy

    counts = np.unique(clusters[clusters >= 0], return_counts=True)[1]
    if not len(counts):
        return 0, 0.0
    return int(len(counts)), float(entropy(counts))


def _sample(n: int, cap: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of all ``n`` rows, or of ``cap`` of them drawn without replacement (sorted)."""
    return np.arange(n) if n <= cap else np.sort(rng.choice(n, size=cap, replace=False))
