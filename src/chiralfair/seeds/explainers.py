"""SHAP explanations of the positive-class output, with an explainer chosen by model type (I&D step 2).

========================  ============================================  ====================================
model                     explainer                                     output explained
========================  ============================================  ====================================
sklearn linear model      ``shap.LinearExplainer`` (background sample)  log-odds (margin) of class 1
sklearn tree / forest /   ``shap.TreeExplainer`` (path dependent;       P(y=1) (log-odds for boosting)
gradient boosting,        approximate for very deep forests)
LightGBM / XGBoost /
CatBoost classifier
model with a gradient     expected gradients, vectorised (below);       P(y=1)
(torch, sklearn MLP, or   I&D uses DeepLIFT (torch) or integrated
LR/MLP behind scalers)    gradients over a fixed background instead
sklearn Pipeline ending    ``shap.TreeExplainer`` / ``LinearExplainer``  the last step's output (log-odds,
in a tree or linear       of the last step on the transformed           or P(y=1) for forests)
model (frame or codes)    features, summed onto the raw columns
                          (:mod:`.pipeline_explainer`)
any other model           ``shap.PermutationExplainer``, one            P(y=1), or the label for a model
                          permutation, 25 background rows               without ``predict_proba``
========================  ============================================  ====================================

Backgrounds (:func:`explanation_background`): ``"fixed"`` (data rows drawn with a fixed seed, the same for every
random state), ``"kmeans"`` (``shap.kmeans``: k centres of the data, rounded to data
values and weighted by their cluster sizes; deterministic), ``"sample"`` (random data rows drawn with the random
state) or ``"mean"`` (the data mean, one row). A deterministic explainer on a random sample is still random
between random states: DeepLIFT with 100 random rows moved the same row's explanation by a median L2 of 0.04
(census, bank) to 0.10 (compas) between random states, against DBSCAN's eps of 0.09
(benchmarks/results/explanation_noise.md).

Queries (architecture: the model under test): the explainers that call the model (expected and integrated
gradients, DeepLIFT on a copy of the module, permutation, DeepLIFT's summation check) spend queries of the run's
budget; the linear, tree and pipeline explainers read the model's parameters (coefficients, trees, the
preprocessing's transform) and ask it for no output, so they spend none.

Kernel SHAP with a large background is never used: its cost is (rows × background × coalitions) model rows.
A linear model behind StandardScalers (the zoo's ``lr``) is explained by ``shap.LinearExplainer`` on the scaled
inputs: a per-feature affine map leaves each feature's attribution unchanged. Any other pipeline is explained
as a whole, by expected gradients when it has an analytic gradient, else by permutation.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np

from .._random import derive_seed
from .._validation import check_choice, check_int
from ..exceptions import ConfigError
from ..models._torch import is_torch_module
from ..models.protocol import CountingModel
from ..models.threads import single_intra_op_thread, single_native_thread
from .shap_outputs import positive_class_values

logger = logging.getLogger(__name__)

# Above this many units of tree_shap_cost (about 2 s here), tree models get Saabas's approximate attributions
# (shap's approximate=True, O(T D) per row) instead of exact TreeSHAP.
EXACT_TREE_SHAP_BUDGET = 5e9
# The permutation explainer costs (2 d + 1) x background model rows per explained row, row by row in Python.
PERMUTATION_BACKGROUND = 25
# Background rows of the stable explainers (fixed data rows): DeepLIFT on 50 rows is 0.04-0.07 from DeepLIFT over
# 500 rows; integrated gradients on 20 rows x 8 steps costs about as much (benchmarks/results/explanation_noise.md).
STABLE_BACKGROUND_SIZE = {"deep": 50, "integrated_gradients": 20}
# Background rows of the other explainers (linear, permutation, expected gradients).
DEFAULT_BACKGROUND_ROWS = 100
EXPLAINERS = ("auto", "linear", "tree", "pipeline", "expected_gradients", "integrated_gradients", "deep",
              "permutation")
BACKGROUNDS = ("fixed", "kmeans", "sample", "mean")
# Seed of the "fixed" background: a sample of the data that does not change with the random state.
FIXED_BACKGROUND_SEED = 0
# shap.kmeans runs KMeans with n_init=10 (0.1-0.5 s on census); the summary of one data matrix is kept.
_KMEANS_KEPT = 8
_kmeans_summaries: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}


def explain(model: CountingModel, X: np.ndarray, background: np.ndarray, rng: np.random.Generator, *,
            explainer: str = "auto", n_samples: int = 50, n_steps: int = 16,
            background_weights: np.ndarray | None = None, domain=None) -> tuple[np.ndarray, str]:
    """SHAP values of the model's positive-class output for the rows of ``X``.

    Parameters
    ----------
    model : CountingModel
        The model under test; ``model.estimator`` decides the explainer when ``explainer="auto"``.
    X : numpy.ndarray, shape (n_samples, n_features)
        Inputs to explain.
    background : numpy.ndarray, shape (n_background, n_features)
        Reference inputs (see :func:`explanation_background`).
    rng : numpy.random.Generator
        Drives the sampling explainers (expected gradients, permutation).
    explainer : {"auto", "linear", "tree", "expected_gradients", "integrated_gradients", "deep", "permutation"}
        ``"deep"`` is ``shap.DeepExplainer`` (DeepLIFT) for torch modules, batched (:func:`_deep`);
        ``"integrated_gradients"`` is :func:`integrated_gradients`; both are deterministic. ``"auto"`` picks
        neither (I&D does: :class:`~chiralfair.seeds.iandd.IandDSeeds`).

    n_samples : int
        Expected gradients: (background row, interpolation point) pairs per explained row.
    n_steps : int
        Integrated gradients: interpolation points per background row.
    background_weights : numpy.ndarray, shape (n_background,), optional
        Weights of the background rows (summing to 1), e.g. the cluster sizes of a k-means summary; None: equal.
        Integrated and expected gradients and DeepLIFT weight by them, the linear explainer uses the weighted
        mean, and the permutation explainer gets the rows repeated in proportion to their weights
        (:func:`expand_weighted`).
    domain : Domain, optional
        The input domain; the pipeline explainer probes every code of every column with it
        (:func:`~chiralfair.seeds.pipeline_explainer.raw_column_map`).

    Returns
    -------
    shap_values : numpy.ndarray of float64, shape (n_samples, n_features)
    name : str
        The explainer used.

    Raises
    ------
    ConfigError
        If ``explainer`` is unknown or does not apply to the model, a budget is < 1 or the weights are not
        one per background row summing to 1; ``DeepLIFTSummationError`` (a ConfigError) if DeepLIFT's
        attributions do not sum to ``f(x) - E f(background)``.

    References
    ----------
    .. [1] Lundberg, Lee. "A unified approach to interpreting model predictions." NeurIPS 2017.
    .. [2] Erion et al. "Improving performance of deep learning models with axiomatic attribution priors and
       expected gradients." Nature Machine Intelligence 2021.
    """
    explainer = check_choice(explainer, "explainer", EXPLAINERS)
    n_samples = check_int(n_samples, "n_samples", minimum=1)
    n_steps = check_int(n_steps, "n_steps", minimum=1)
    X = np.asarray(X, dtype=np.float64)
    background = np.asarray(background, dtype=np.float64)
    weights = _check_weights(background_weights, len(background))
    if explainer == "auto":
        explainer = choose_explainer(model)
    # One OpenMP/BLAS thread (and one torch thread for torch models), as for predictions: models/threads.py.
    with single_native_thread():
        return _explain(model, X, background, weights, rng, explainer, n_samples, n_steps, domain)


def _explain(model, X, background, weights, rng, explainer: str, n_samples: int,
             n_steps: int, domain=None) -> tuple[np.ndarray, str]:
    if explainer == "linear":
        return _linear(model, X, background, weights), "linear"
    if explainer == "tree":
        return _tree(model, X)
    if explainer in ("expected_gradients", "integrated_gradients"):
        model.require("input_gradient", by=f"explainer={explainer!r}")
        if explainer == "integrated_gradients":
            return integrated_gradients(model, X, background, weights, n_steps=n_steps), explainer
        return expected_gradients(model, X, background, rng, n_samples=n_samples, weights=weights), explainer
    if explainer == "deep":
        return _deep(model, X, background, weights, rng), "deep"
    if explainer == "pipeline":
        from .pipeline_explainer import PipelineMapError, explain_pipeline

        try:
            return explain_pipeline(model, X, background, domain)
        except PipelineMapError as err:
            logger.warning("%s; explaining it by permutation instead", err)
    if weights is not None:
        background = expand_weighted(background, weights)
    return _permutation(model, X, background, rng), "permutation"


def _check_weights(weights, n_background: int) -> np.ndarray | None:
    if weights is None:
        return None
    weights = np.asarray(weights, dtype=np.float64)
    if weights.shape != (n_background,) or not np.all(np.isfinite(weights)) or np.any(weights < 0) \
            or not np.isclose(weights.sum(), 1.0):
        raise ConfigError(f"background_weights must be {n_background} non-negative weights (one per background "
                          f"row) summing to 1, got shape {weights.shape} and sum {weights.sum():.6g}")
    return weights


def explanation_background(X: np.ndarray, how: str = "kmeans", size: int = 10,
                           rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """Reference rows for an explainer, and their weights.

    Parameters
    ----------
    X : numpy.ndarray, shape (n_samples, n_features)
        The data (integer codes).
    how : {"fixed", "kmeans", "sample", "mean"}
        ``"fixed"``: ``size`` distinct data rows drawn with the fixed seed ``FIXED_BACKGROUND_SEED``, the same
        for every random state (equal weights); ``"kmeans"``: ``shap.kmeans(X, size)``, ``size`` k-means
        centres rounded to data values and weighted by their cluster sizes, the same for every random state;
        ``"sample"``: ``size`` distinct data rows drawn with ``rng`` (equal weights); ``"mean"``: the data mean
        (one row, ``size`` unused).
    size : int
        Centres or rows (at most ``n_samples``).
    rng : numpy.random.Generator, optional
        Needed for ``"sample"``.

    Returns
    -------
    rows : numpy.ndarray of float64, shape (n_background, n_features)
    weights : numpy.ndarray of float64, shape (n_background,), or None
        None for equal weights.

    Raises
    ------
    ConfigError
        If ``how`` is unknown or ``size`` < 1.

    References
    ----------
    .. [1] Lundberg, Lee. "A unified approach to interpreting model predictions." NeurIPS 2017 (shap.kmeans
       summarises the background of Kernel SHAP).
    """
    how = check_choice(how, "background", BACKGROUNDS)
    X = np.asarray(X, dtype=np.float64)
    size = min(check_int(size, "background_size", minimum=1), len(X))
    if how == "mean":
        return X.mean(axis=0, keepdims=True), None
    if how == "fixed":
        return X[np.random.default_rng(FIXED_BACKGROUND_SEED).choice(len(X), size=size, replace=False)], None
    if how == "sample":
        if rng is None:
            raise ConfigError("background='sample' needs a random generator (rng)")
        return X[rng.choice(len(X), size=size, replace=False)], None
    return _kmeans_summary(X, size)


def _kmeans_summary(X: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    import hashlib

    import shap
    key = (hashlib.blake2b(np.ascontiguousarray(X).tobytes(), digest_size=16).hexdigest(), X.shape, size)
    if key not in _kmeans_summaries:
        with single_native_thread():  # KMeans with n_init=10: 0.4 s on one thread, 4 s oversubscribed here
            summary = shap.kmeans(X, size)
        if len(_kmeans_summaries) >= _KMEANS_KEPT:
            _kmeans_summaries.pop(next(iter(_kmeans_summaries)))
        _kmeans_summaries[key] = (np.asarray(summary.data, dtype=np.float64),
                                  np.asarray(summary.weights, dtype=np.float64))
    rows, weights = _kmeans_summaries[key]
    return rows.copy(), weights.copy()


def expand_weighted(rows: np.ndarray, weights: np.ndarray, total: int = 100) -> np.ndarray:
    """Repeat each row about ``weights * total`` times (largest remainders), for explainers without weights.

    Parameters
    ----------
    rows : numpy.ndarray, shape (n_rows, n_features)
    weights : numpy.ndarray of float, shape (n_rows,)
        Summing to 1.
    total : int, default=100
        Rows wanted.

    Returns
    -------
    numpy.ndarray, shape (total', n_features)
        ``total'`` = ``total`` unless a weight rounds to zero copies (such rows are dropped).
    """
    exact = np.asarray(weights) * total
    counts = np.floor(exact).astype(np.int64)
    short = total - counts.sum()
    counts[np.argsort(counts - exact, kind="stable")[:short]] += 1
    return np.repeat(rows, counts, axis=0)


def choose_explainer(model: CountingModel) -> str:
    """Name of the explainer :func:`explain` uses for ``model`` with ``explainer="auto"``.

    Parameters
    ----------
    model : CountingModel

    Returns
    -------
    {"linear", "tree", "pipeline", "expected_gradients", "permutation"}
    """
    est = None if model.takes_frame else model.estimator  # shap's linear/tree explainers would see codes
    if _linear_estimator(est) is not None:
        return "linear"
    if _tree_estimator(est) is not None:
        return "tree"
    from .pipeline_explainer import pipeline_parts

    if pipeline_parts(model.estimator) is not None:
        return "pipeline"
    if model.has_gradient:
        return "expected_gradients"
    return "permutation"


def choose_stable_explainer(model: CountingModel) -> str:
    """The explainer I&D uses with ``explainer="auto"``: deterministic for a fixed background.

    As :func:`choose_explainer`, except that a model with a gradient gets DeepLIFT (``"deep"``, torch modules) or
    integrated gradients (other models) instead of expected gradients, whose sampling noise (0.20 median L2 at
    50 samples on the census DNN) exceeds DBSCAN's eps of 0.09 (``benchmarks/results/explanation_noise.md``).
    Used with :func:`explanation_background` ``"fixed"`` and :data:`STABLE_BACKGROUND_SIZE` rows.

    Parameters
    ----------
    model : CountingModel

    Returns
    -------
    {"linear", "tree", "deep", "integrated_gradients", "permutation", "pipeline"}
    """
    name = choose_explainer(model)
    if name != "expected_gradients":
        return name
    return "deep" if is_torch_module(model.estimator) else "integrated_gradients"


def expected_gradients(model: CountingModel, X: np.ndarray, background: np.ndarray, rng: np.random.Generator,
                       *, n_samples: int = 50, weights: np.ndarray | None = None) -> np.ndarray:
    """Expected-gradients SHAP values of P(y=1).

    The mean of ``(x - b) * grad f(b + a (x - b))`` over background rows ``b`` and ``a ~ U(0, 1)``.

    This is the estimator of ``shap.GradientExplainer`` (with ``local_smoothing=0``), computed for all rows
    in one batched gradient call: shap's implementation loops over the explained rows in Python (about 3.5 ms
    per row for the census DNN), which alone would exceed the paper's time for the whole seed selection.

    Parameters
    ----------
    model : CountingModel
        Needs ``input_gradient``; costs ``n_samples`` queries per explained row.
    X : numpy.ndarray, shape (n, n_features)
    background : numpy.ndarray, shape (n_background, n_features)
    rng : numpy.random.Generator
    n_samples : int
        Samples per explained row. The same row differs between random states by a median L2 of about
        0.20 / 0.11 / 0.07 at 50 / 200 / 1,000 samples on the census DNN (random 100-row backgrounds).
    weights : numpy.ndarray, shape (n_background,), optional
        Probabilities of drawing each background row; None: uniform.

    Returns
    -------
    numpy.ndarray of float64, shape (n, n_features)
    """
    n = len(X)
    if n == 0:
        return np.zeros((0, X.shape[1]))
    if weights is None:
        b = background[rng.integers(0, len(background), size=(n, n_samples))]  # (n, s, d)
    else:
        b = background[rng.choice(len(background), size=(n, n_samples), p=weights)]
    alpha = rng.random((n, n_samples, 1))
    delta = X[:, None, :] - b
    points = (b + alpha * delta).reshape(n * n_samples, -1)
    grads = model.input_gradient(points).reshape(n, n_samples, -1)
    return (delta * grads).mean(axis=1)


def integrated_gradients(model: CountingModel, X: np.ndarray, background: np.ndarray,
                         weights: np.ndarray | None = None, *, n_steps: int = 16) -> np.ndarray:
    """Integrated gradients of P(y=1), averaged over weighted baselines: deterministic SHAP values.

    For each baseline ``b`` (a background row) the path integral ``(x - b) * int_0^1 grad f(b + a (x - b)) da``
    is computed by the midpoint rule with ``n_steps`` points ``a = (k + 1/2) / n_steps``; the attributions are
    the weighted mean over the baselines. That is the expectation that expected gradients estimates by random
    sampling, computed by quadrature instead: the same inputs give the same bits, and the attributions sum to
    ``f(x) - sum_b w_b f(b)`` up to the quadrature error (completeness). All rows go to the model in one batched
    gradient call of ``n * n_background * n_steps`` points.

    Why not a library: captum's ``IntegratedGradients`` takes torch modules only (not the sklearn MLP or a
    scaled pipeline, whose gradient ``input_gradient`` gives) and pins numpy < 2; shap has no integrated
    gradients. The estimator is that of ``shap.GradientExplainer`` with the random interpolation points
    replaced by a fixed grid (tests/test_explainers.py compares the two).

    Parameters
    ----------
    model : CountingModel
        Needs ``input_gradient``; costs ``n_background * n_steps`` queries per explained row.
    X : numpy.ndarray, shape (n, n_features)
    background : numpy.ndarray, shape (n_background, n_features)
        Baselines.
    weights : numpy.ndarray, shape (n_background,), optional
        Weights of the baselines, summing to 1; None: equal.
    n_steps : int
        Interpolation points per baseline.

    Returns
    -------
    numpy.ndarray of float64, shape (n, n_features)

    References
    ----------
    .. [1] Sundararajan, Taly, Yan. "Axiomatic attribution for deep networks." ICML 2017.
    .. [2] Erion et al. "Improving performance of deep learning models with axiomatic attribution priors and
       expected gradients." Nature Machine Intelligence 2021.
    """
    n, d = X.shape
    k = len(background)
    if n == 0:
        return np.zeros((0, d))
    w = np.full(k, 1.0 / k) if weights is None else np.asarray(weights, dtype=np.float64)
    alpha = (np.arange(n_steps) + 0.5) / n_steps
    delta = X[:, None, :] - background[None, :, :]  # (n, k, d)
    points = background[None, :, None, :] + alpha[None, None, :, None] * delta[:, :, None, :]  # (n, k, s, d)
    grads = model.input_gradient(points.reshape(-1, d)).reshape(n, k, n_steps, d).mean(axis=2)
    return np.einsum("k,nkd->nd", w, delta * grads)


# ---------------------------------------------------------------------------------------- shap explainers
def _final_step(est):
    from sklearn.pipeline import Pipeline
    return est.steps[-1][1] if isinstance(est, Pipeline) else est


def _linear_estimator(est):
    """The binary linear classifier of ``est`` (bare, or behind StandardScalers only), else None."""
    from sklearn.linear_model._base import LinearClassifierMixin
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler
    if isinstance(est, Pipeline):
        pre = [s for _, s in est.steps[:-1] if s not in (None, "passthrough")]
        if not all(isinstance(s, StandardScaler) for s in pre):
            return None
        est = est.steps[-1][1]
    if est is None:
        return None
    return est if isinstance(est, LinearClassifierMixin) and np.ndim(est.coef_) == 2 \
        and est.coef_.shape[0] == 1 else None


def _scaled(est, X):
    """``X`` as the final step of a scaler pipeline sees it (unchanged for a bare estimator)."""
    from sklearn.pipeline import Pipeline
    if isinstance(est, Pipeline):
        for _, step in est.steps[:-1]:
            if step not in (None, "passthrough"):
                X = step.transform(X)
    return X


def _tree_estimator(est):
    from sklearn.ensemble import BaseEnsemble, HistGradientBoostingClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.tree import BaseDecisionTree
    if est is None or isinstance(est, Pipeline):
        return None
    if isinstance(est, BaseDecisionTree | HistGradientBoostingClassifier):
        return est
    if isinstance(est, BaseEnsemble) and all(isinstance(e, BaseDecisionTree)
                                             for e in np.ravel(getattr(est, "estimators_", [None]))):
        return est
    from .pipeline_explainer import TREE_LIBRARIES
    if type(est).__module__.split(".")[0] in TREE_LIBRARIES and hasattr(est, "predict_proba"):
        return est  # a LightGBM / XGBoost / CatBoost classifier (e.g. the zoo's lightgbm): shap reads its trees
    return None


def _linear(model, X, background, weights=None):
    import shap
    est = None if model.takes_frame else _linear_estimator(model.estimator)
    if est is None:
        raise ConfigError(f"explainer='linear' needs an sklearn linear classifier taking the integer codes; "
                          f"{model.name!r} is not one")
    whole = model.estimator
    scaled = _scaled(whole, background)
    if weights is not None:  # interventional linear SHAP depends on the background only through its mean
        scaled = (np.average(scaled, axis=0, weights=weights), np.cov(scaled, rowvar=False, aweights=weights))
    values = shap.LinearExplainer(est, scaled).shap_values(_scaled(whole, X))
    return positive_class_values(np.asarray(values, dtype=np.float64), X.shape, model.positive_index)


def _tree(model, X):
    import shap
    est = None if model.takes_frame else _tree_estimator(model.estimator)
    if est is None:
        raise ConfigError(f"explainer='tree' needs an sklearn tree model taking the integer codes; model "
                          f"{model.name!r} is not one")
    approximate = tree_shap_cost(est, len(X)) > EXACT_TREE_SHAP_BUDGET
    with warnings.catch_warnings():
        # shap says for every LightGBM binary model that its output format changed; positive_class_values reads both
        warnings.filterwarnings("ignore", message="LightGBM binary classifier with TreeExplainer", category=UserWarning)
        values = shap.TreeExplainer(est).shap_values(X, check_additivity=False, approximate=approximate)
    return (positive_class_values(np.asarray(values, dtype=np.float64), X.shape, model.positive_index),
            "tree-approximate" if approximate else "tree")


def tree_shap_cost(est, n_rows: int) -> float:
    """Rough operation count of exact (path-dependent) TreeSHAP: rows x sum over trees of leaves x depth^2.

    Exact TreeSHAP costs O(T L D^2) per row (Lundberg et al. 2020). Measured here: a census random forest of 50
    fully grown trees (3,173 leaves, depth 40 on average) took 0.11 s per row, about 2.3e9 of these units per
    second, so 2,000 initial IDIs would take 4 minutes.

    Parameters
    ----------
    est : fitted sklearn tree or tree ensemble
    n_rows : int
        Rows to explain.

    Returns
    -------
    float
    """
    trees = [e for e in np.ravel(getattr(est, "estimators_", [est])) if hasattr(e, "tree_")]
    if not trees:  # HistGradientBoosting: at most 31 leaves per tree by default; exact is cheap
        return 0.0
    return float(n_rows) * sum(t.get_n_leaves() * max(t.get_depth(), 1) ** 2 for t in trees)


def _deep(model, X, background, weights=None, rng=None):
    """shap.DeepExplainer (DeepLIFT, rescale rule) of P(positive class) for a torch module, batched over the rows.

    shap explains one row at a time in Python (6-11 ms per row on the census DNN with 100 background rows).
    Here the module is wrapped so that all rows are one input, ``g(Z) = sum_i f(Z_i)`` for ``Z`` of shape
    (1, n, d), with the background rows tiled as references ``(b, ..., b)``: DeepLIFT's multipliers are
    elementwise and the sum is linear, so the attribution of ``Z_ij`` is row i's attribution of feature j,
    what shap gives row by row up to float32 rounding (tests/test_explainers.py). Without weights all
    background rows go in one call (shap takes their plain mean); with weights, one call per background row and
    the weighted mean. A (row, reference) pair costs about 6 expected-gradients samples (shap's hooks) in time,
    and one query of the model's (:meth:`CountingModel.spend <chiralfair.models.protocol.CountingModel.spend>`),
    as one gradient does.

    Whatever the module outputs (one or two columns; probabilities or, with ``output="logit"``, logits), the
    output explained is P(``classes[1]``) (:func:`~chiralfair.seeds.deeplift_views.deeplift_view`), the output
    every other explainer explains, so that the attributions of all explainers share one scale (DBSCAN's eps is in
    probability units) and the summation check compares P(positive) with P(positive). shap.DeepExplainer leaves
    saved tensors (``nn.Parameter`` attributes), hooks and the eval mode on the modules it explains, so it explains
    a deep copy: the model under test is never changed.

    The values of the zoo's DNN are kept on disk (:mod:`.explanation_cache`, keyed by the network, the rows, the
    background, ``rng``'s state, the code and the libraries): a run that explains the same rows again reads them,
    without shap, is charged the same queries and checks their summation on the model as a fresh explanation's.

    Raises
    ------
    ConfigError
        If the model is not a torch module.
    DeepLIFTError
        If shap.DeepExplainer cannot explain the module (e.g. a TorchScript module takes no hooks), or its
        attributions do not add up (:class:`DeepLIFTSummationError`).
    """
    module = model.estimator
    if not is_torch_module(module):
        raise ConfigError(f"explainer='deep' needs a torch module; model {model.name!r} is not one")
    values = np.zeros(X.shape)
    if not len(X):
        return values
    from . import explanation_cache

    key = None if rng is None else explanation_cache.entry_key(
        module, model.language.output, model.positive_index, X, background, weights, rng, DEEP_PAIRS_PER_CALL)
    kept = None if key is None else explanation_cache.load(key, X.shape)
    if kept is not None:
        for n in _deep_queries(len(X), len(background), weighted=weights is not None):
            model.spend(n)  # what computing them costs, refused past the budget where computing them would be
        values = kept
    else:
        values = _deep_values(model, module, X, background, weights)
    w = np.full(len(background), 1.0 / len(background)) if weights is None else weights
    _check_summation_to_delta(model, values, X, background, w)
    if key is not None and kept is None:
        explanation_cache.store(key, values)
    return values


def _deep_queries(n_rows: int, n_background: int, *, weighted: bool) -> list[int]:
    """The queries :func:`_deep_values` spends, in its order: one for the output's columns, then one per pair."""
    if weighted:
        return [1] + [n_rows] * n_background
    chunk = max(1, DEEP_PAIRS_PER_CALL // n_background)
    return [1] + [min(chunk, n_rows - start) * n_background for start in range(0, n_rows, chunk)]


def _deep_values(model, module, X, background, weights) -> np.ndarray:
    """shap.DeepExplainer's values for :func:`_deep` (rows ``X`` of float64, at least one)."""
    import copy

    import shap
    import torch

    from ..models.torch_adapter import input_dtype
    dtype = input_dtype(module)
    values = np.zeros(X.shape)
    try:
        copied = copy.deepcopy(module)
    except Exception as err:  # a module holding something deepcopy cannot copy (an open file, a lock)
        raise DeepLIFTError(f"explainer='deep': model {model.name!r} cannot be copied for shap.DeepExplainer "
                            f"({type(err).__name__}: {err}), which would otherwise change it; use "
                            "explainer='integrated_gradients'") from err
    from .deeplift_views import RowsAsOneInput, deeplift_view
    model.spend(1)  # the output's columns, read from one row
    rows = RowsAsOneInput(deeplift_view(copied, model.language.output, _output_columns(copied, background, dtype),
                                        dtype)).eval()

    def deeplift(x, references):  # x (n, d), references (k, d) -> mean attribution over the references
        # a copy of the model under test runs on every (row, reference) pair: one query each, as a gradient's
        model.spend(len(x) * len(references))
        tiled = np.repeat(references[:, None, :], len(x), axis=1)
        try:
            phi = shap.DeepExplainer(rows, torch.as_tensor(tiled, dtype=dtype)).shap_values(
                torch.as_tensor(x[None], dtype=dtype), check_additivity=False)
        # RuntimeError also covers shap's refusal of a layer it does not support (raised as a subclass of it)
        except (RuntimeError, TypeError, AttributeError, AssertionError) as err:
            raise DeepLIFTError(f"explainer='deep': shap.DeepExplainer cannot explain model {model.name!r} "
                                f"({type(err).__name__}: {str(err).splitlines()[0][:200]}); use "
                                "explainer='integrated_gradients'") from err
        return positive_class_values(np.asarray(phi, dtype=np.float64).reshape(x.shape), x.shape, model.positive_index)

    with single_intra_op_thread():
        if weights is None:  # one call per chunk of rows, all references at once (shap takes their mean)
            chunk = max(1, DEEP_PAIRS_PER_CALL // len(background))
            for start in range(0, len(X), chunk):
                values[start:start + chunk] = deeplift(X[start:start + chunk], background)
        else:
            for b, wb in zip(background, weights, strict=True):
                values += wb * deeplift(X, b[None])
    return values


def _output_columns(module, background: np.ndarray, dtype) -> int:
    """Columns of the module's output (1 for shapes (n,) and (n, 1), else its second dimension)."""
    import torch

    with torch.no_grad():
        out = module(torch.as_tensor(background[:1], dtype=dtype))
    return 1 if out.ndim == 1 else int(out.shape[1])


# (explained row, reference row) pairs per shap.DeepExplainer call: bounds the tiled arrays (about 20 MB).
DEEP_PAIRS_PER_CALL = 200_000
# DeepLIFT's attributions sum to f(x) - mean f(background) exactly in exact arithmetic; float32 leaves ~1e-6.
DEEP_SUMMATION_TOLERANCE = 1e-3


class DeepLIFTError(ConfigError):
    """shap.DeepExplainer cannot explain a module faithfully (I&D then explains it by integrated gradients)."""


class DeepLIFTSummationError(DeepLIFTError):
    """shap.DeepExplainer's attributions do not add up to the output difference (an unhooked operation)."""


def _check_summation_to_delta(model, values, X, background, weights) -> None:
    """Refuse attributions that do not sum to P(positive | x) - E P(positive | background): DeepLIFT's axiom.

    Both sides are in the space the attributions explain, P(positive class)
    (:func:`~chiralfair.seeds.deeplift_views.deeplift_view`), also for a logit network.
    """
    expected = model.predict_proba(X)[:, 1] - weights @ model.predict_proba(background)[:, 1]
    error = float(np.median(np.abs(values.sum(axis=1) - expected)))
    if error > DEEP_SUMMATION_TOLERANCE:
        raise DeepLIFTSummationError(
            f"explainer='deep': shap.DeepExplainer's attributions of P(positive class) of model {model.name!r} do "
            f"not sum to P(positive | x) - E P(positive | background) (median error {error:.3g} > "
            f"{DEEP_SUMMATION_TOLERANCE}); the module uses operations DeepExplainer does not hook (e.g. "
            "torch.sigmoid or torch.softmax instead of torch.nn.Sigmoid or torch.nn.Softmax at the end of an "
            "nn.Sequential). Use explainer='integrated_gradients'")


def _permutation(model, X, background, rng):
    import shap
    # The adapter already speaks in positive-class terms: column 1 is P(positive), label 1 is positive.
    if model.has_proba:
        def f(Z):
            return model.predict_proba(Z)[:, 1]
    else:
        def f(Z):
            return model.predict(Z).astype(np.float64)
    background = background[:PERMUTATION_BACKGROUND]
    masker = shap.maskers.Independent(background, max_samples=len(background))
    explainer = shap.PermutationExplainer(f, masker, seed=derive_seed(rng))
    # One forward and one backward pass over a single permutation: 2 d + 1 evaluations per row.
    out = explainer(X, max_evals=2 * X.shape[1] + 1, silent=True)
    return np.asarray(out.values, dtype=np.float64).reshape(X.shape)
