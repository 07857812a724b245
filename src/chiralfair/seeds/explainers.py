"""SHAP explanations of the positive-class output, with an explainer chosen by model type (I&D step 2).

========================  ============================================  ====================================
model                     explainer                                     output explained
========================  ============================================  ====================================
sklearn linear model      ``shap.LinearExplainer`` (background sample)  log-odds (margin) of class 1
sklearn tree / forest /   ``shap.TreeExplainer`` (path dependent;       P(y=1) (log-odds for boosting)
gradient boosting         approximate for very deep forests)
model with a gradient     expected gradients, vectorised (below)        P(y=1)
(torch, sklearn MLP, or
LR/MLP behind scalers)
any other model           ``shap.PermutationExplainer``, one            P(y=1), or the label for a model
                          permutation, 25 background rows               without ``predict_proba``
========================  ============================================  ====================================

Kernel SHAP with a large background is never used: its cost is (rows × background × coalitions) model rows.
A linear model behind StandardScalers (the zoo's ``lr``) is explained by ``shap.LinearExplainer`` on the scaled
inputs: a per-feature affine map leaves each feature's attribution unchanged. Any other pipeline is explained
as a whole, by expected gradients when it has an analytic gradient, else by permutation.
"""

from __future__ import annotations

import numpy as np

from .._random import derive_seed
from ..exceptions import ConfigError
from ..models._torch import is_torch_module
from ..models.protocol import CountingModel
from ..models.threads import single_intra_op_thread, single_native_thread

# Above this many units of tree_shap_cost (about 2 s here), tree models get Saabas's approximate attributions
# (shap's approximate=True, O(T D) per row) instead of exact TreeSHAP.
EXACT_TREE_SHAP_BUDGET = 5e9
# The permutation explainer costs (2 d + 1) x background model rows per explained row, row by row in Python.
PERMUTATION_BACKGROUND = 25
EXPLAINERS = ("auto", "linear", "tree", "expected_gradients", "deep", "permutation")


def explain(model: CountingModel, X: np.ndarray, background: np.ndarray, rng: np.random.Generator, *,
            explainer: str = "auto", n_samples: int = 50) -> tuple[np.ndarray, str]:
    """SHAP values of the model's positive-class output for the rows of ``X``.

    Parameters
    ----------
    model : CountingModel
        The model under test; ``model.estimator`` decides the explainer when ``explainer="auto"``.
    X : numpy.ndarray, shape (n_samples, n_features)
        Inputs to explain.
    background : numpy.ndarray, shape (n_background, n_features)
        Reference inputs (a small random sample of the data, e.g. 100 rows).
    rng : numpy.random.Generator
        Drives the sampling explainers (expected gradients, permutation).
    explainer : {"auto", "linear", "tree", "expected_gradients", "deep", "permutation"}
        ``"deep"`` is ``shap.DeepExplainer`` for torch modules (about 3 ms per explained row on a CPU).
    n_samples : int
        Expected gradients: (background row, interpolation point) pairs per explained row.

    Returns
    -------
    shap_values : numpy.ndarray of float64, shape (n_samples, n_features)
    name : str
        The explainer used.

    Raises
    ------
    ConfigError
        If ``explainer`` is unknown or does not apply to the model.

    References
    ----------
    .. [1] Lundberg, Lee. "A unified approach to interpreting model predictions." NeurIPS 2017.
    .. [2] Erion et al. "Improving performance of deep learning models with axiomatic attribution priors and
       expected gradients." Nature Machine Intelligence 2021.
    """
    if explainer not in EXPLAINERS:
        raise ConfigError(f"explainer must be one of {EXPLAINERS}, got {explainer!r}")
    X = np.asarray(X, dtype=np.float64)
    background = np.asarray(background, dtype=np.float64)
    if explainer == "auto":
        explainer = choose_explainer(model)
    # One OpenMP/BLAS thread (and one torch thread for torch models), as for predictions: models/threads.py.
    with single_native_thread():
        return _explain(model, X, background, rng, explainer, n_samples)


def _explain(model, X, background, rng, explainer: str, n_samples: int) -> tuple[np.ndarray, str]:
    if explainer == "linear":
        return _linear(model, X, background), "linear"
    if explainer == "tree":
        return _tree(model, X)
    if explainer == "expected_gradients":
        model.require("input_gradient", by="explainer='expected_gradients'")
        return expected_gradients(model, X, background, rng, n_samples=n_samples), "expected_gradients"
    if explainer == "deep":
        return _deep(model, X, background), "deep"
    return _permutation(model, X, background, rng), "permutation"


def choose_explainer(model: CountingModel) -> str:
    """Name of the explainer :func:`explain` uses for ``model`` with ``explainer="auto"``."""
    est = None if model.takes_frame else model.estimator  # shap's linear/tree explainers would see codes
    if _linear_estimator(est) is not None:
        return "linear"
    if _tree_estimator(est) is not None:
        return "tree"
    if model.has_gradient:
        return "expected_gradients"
    return "permutation"


def expected_gradients(model: CountingModel, X: np.ndarray, background: np.ndarray, rng: np.random.Generator,
                       *, n_samples: int = 50) -> np.ndarray:
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
        Samples per explained row.

    Returns
    -------
    numpy.ndarray of float64, shape (n, n_features)
    """
    n = len(X)
    if n == 0:
        return np.zeros((0, X.shape[1]))
    b = background[rng.integers(0, len(background), size=(n, n_samples))]  # (n, s, d)
    alpha = rng.random((n, n_samples, 1))
    delta = X[:, None, :] - b
    points = (b + alpha * delta).reshape(n * n_samples, -1)
    grads = model.input_gradient(points).reshape(n, n_samples, -1)
    return (delta * grads).mean(axis=1)


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
    return None


def _linear(model, X, background):
    import shap
    est = None if model.takes_frame else _linear_estimator(model.estimator)
    if est is None:
        raise ConfigError(f"explainer='linear' needs an sklearn linear classifier taking the integer codes; "
                          f"{model.name!r} is not one")
    whole = model.estimator
    values = shap.LinearExplainer(est, _scaled(whole, background)).shap_values(_scaled(whole, X))
    return _positive_class(np.asarray(values, dtype=np.float64), X.shape, model.positive_index)


def _tree(model, X):
    import shap
    est = None if model.takes_frame else _tree_estimator(model.estimator)
    if est is None:
        raise ConfigError(f"explainer='tree' needs an sklearn tree model taking the integer codes; model "
                          f"{model.name!r} is not one")
    approximate = tree_shap_cost(est, len(X)) > EXACT_TREE_SHAP_BUDGET
    values = shap.TreeExplainer(est).shap_values(X, check_additivity=False, approximate=approximate)
    return (_positive_class(np.asarray(values, dtype=np.float64), X.shape, model.positive_index),
            "tree-approximate" if approximate else "tree")


def tree_shap_cost(est, n_rows: int) -> float:
    """Rough operation count of exact (path-dependent) TreeSHAP: rows x sum over trees of leaves x depth^2.

    Exact TreeSHAP costs O(T L D^2) per row (Lundberg et al. 2020). Measured here: a census random forest of 50
    fully grown trees (3,173 leaves, depth 40 on average) took 0.11 s per row, about 2.3e9 of these units per
    second, so 2,000 initial IDIs would take 4 minutes.
    """
    trees = [e for e in np.ravel(getattr(est, "estimators_", [est])) if hasattr(e, "tree_")]
    if not trees:  # HistGradientBoosting: at most 31 leaves per tree by default; exact is cheap
        return 0.0
    return float(n_rows) * sum(t.get_n_leaves() * max(t.get_depth(), 1) ** 2 for t in trees)


def _deep(model, X, background):
    module = model.estimator
    if not is_torch_module(module):
        raise ConfigError(f"explainer='deep' needs a torch module; model {model.name!r} is not one")
    import shap
    import torch

    from ..models.torch_adapter import input_dtype
    dtype = input_dtype(module)
    with single_intra_op_thread():
        values = shap.DeepExplainer(module, torch.as_tensor(background, dtype=dtype)).shap_values(
            torch.as_tensor(X, dtype=dtype), check_additivity=False)
    return _positive_class(np.asarray(values, dtype=np.float64), X.shape, model.positive_index)


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


def _positive_class(values: np.ndarray, shape: tuple[int, int], positive_index: int = 1) -> np.ndarray:
    """Reduce shap's layouts ((n, d, k), [k × (n, d)], (n, d)) to the positive class, shape (n, d).

    With two outputs (k = 2, in the model's class order) the positive class's one is taken. A single output
    (k = 1, or a bare (n, d)) explains ``classes[1]`` (its probability, log-odds or logit), so it is negated
    when the positive class is ``classes[0]`` (``positive_index`` 0).
    """
    if values.ndim == 3 and values.shape[:2] == shape:
        if values.shape[2] == 2:
            return values[:, :, positive_index]
        single = values[:, :, -1]
    elif values.ndim == 3 and values.shape[1:] == shape:
        if values.shape[0] == 2:
            return values[positive_index]
        single = values[-1]
    else:
        single = values.reshape(shape)
    return single if positive_index == 1 else -single
