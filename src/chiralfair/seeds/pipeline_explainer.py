"""SHAP values of an sklearn Pipeline through its last step, summed back onto the raw columns (one-hot groups).

A user's model is often ``Pipeline([("pre", ColumnTransformer(OneHotEncoder, StandardScaler, ...)), ("clf",
HistGradientBoostingClassifier())])`` fitted on a raw frame. shap's permutation explainer treats it as a black box
(``(2 d + 1) x background`` model rows per explained row, row by row in Python: 15-21 s of an audit). When the
last step is a tree model (sklearn trees and ensembles, HistGradientBoosting, LightGBM, XGBoost) or a linear
classifier, shap's exact explainers for that step apply to the *transformed* features instead:

1. the explained rows and the background go through the pipeline's preprocessing (``pipe[:-1]``), in the input
   language of the model (the raw frame via ``to_frame``, or the codes);
2. the last step is explained there: ``shap.TreeExplainer`` (path-dependent TreeSHAP: the raw output, log-odds for
   boosting, P(y=1) for forests, relative to the training data's expected value) or ``shap.LinearExplainer``
   (the log-odds, relative to the background's mean);
3. each transformed feature's value goes back to the raw column(s) it is computed from. Which raw columns feed which
   transformed features is *measured*, not parsed from feature names: the raw inputs are perturbed one column at
   a time in one batch through the preprocessing (each column's values rotated among the rows, and, given the
   domain, set to every code of the column in turn, so that a category no probed row holds is reached too), and a
   transformed feature that changes belongs to that column. A feature fed by several columns (an interaction) is shared
   equally among them, so the sum over raw columns equals the sum over transformed features: the additivity of
   the step's explainer carries over (``sum_j phi_j(x) = f(x) - E f``).

Transformed features whose raw column could not be found (it took one value in every row probed) must have zero
attributions, or the pipeline is explained by permutation instead (:func:`explain_pipeline` raises).

References
----------
.. [1] Lundberg et al. "From local explanations to global understanding with explainable AI for trees." Nature
   Machine Intelligence 2020 (TreeSHAP).
.. [2] Lundberg, Lee. "A unified approach to interpreting model predictions." NeurIPS 2017 (linear SHAP).
"""

from __future__ import annotations

import numpy as np

from ..exceptions import ConfigError
from .shap_outputs import positive_class_values

# Rows through which the raw-column map is measured (explained rows first, then background rows).
MAP_ROWS = 256
# The modules of tree models that shap.TreeExplainer reads besides scikit-learn's.
TREE_LIBRARIES = ("lightgbm", "xgboost", "catboost")


class PipelineMapError(ConfigError):
    """A transformed feature with attributions could not be traced back to a raw column."""


def pipeline_parts(est):
    """The preprocessing, the last step and its kind (``"tree"`` or ``"linear"``) of a Pipeline, else None.

    Parameters
    ----------
    est : object
        The model under test's estimator.

    Returns
    -------
    tuple (preprocessing, last step, kind) or None
        None for anything but a Pipeline of at least two steps whose last step is a binary linear classifier or
        a tree model shap's TreeExplainer reads.
    """
    from sklearn.pipeline import Pipeline

    if not isinstance(est, Pipeline) or len(est.steps) < 2:
        return None
    final = est.steps[-1][1]
    if _is_binary_linear(final):
        return est[:-1], final, "linear"
    if _is_tree_model(final):
        return est[:-1], final, "tree"
    return None


def _is_binary_linear(est) -> bool:
    from sklearn.linear_model._base import LinearClassifierMixin

    coef = getattr(est, "coef_", None)
    return isinstance(est, LinearClassifierMixin) and coef is not None and np.ndim(coef) == 2 and coef.shape[0] == 1


def _is_tree_model(est) -> bool:
    from sklearn.ensemble import BaseEnsemble, HistGradientBoostingClassifier
    from sklearn.tree import BaseDecisionTree

    if isinstance(est, BaseDecisionTree | HistGradientBoostingClassifier):
        return True
    if isinstance(est, BaseEnsemble):
        return all(isinstance(e, BaseDecisionTree) for e in np.ravel(getattr(est, "estimators_", [None])))
    return type(est).__module__.split(".")[0] in TREE_LIBRARIES and hasattr(est, "predict_proba")


def explain_pipeline(model, X: np.ndarray, background: np.ndarray, domain=None) -> tuple[np.ndarray, str]:
    """SHAP values of a Pipeline's positive-class output per raw column, through its last step.

    Parameters
    ----------
    model : CountingModel
        Wrapping a Pipeline for which :func:`pipeline_parts` is not None.
    X : numpy.ndarray, shape (n_samples, n_features)
        Codes of the inputs to explain.
    background : numpy.ndarray, shape (n_background, n_features)
        Codes of the reference inputs (used by the linear explainer, and to measure the raw-column map).
    domain : Domain, optional
        The input domain: with it, the map is measured at every code of every column (a rare category that no
        probed row holds is found too).

    Returns
    -------
    shap_values : numpy.ndarray of float64, shape (n_samples, n_features)
        Per raw column, summing over a row to ``f(x) - E f`` of the last step's explained output.
    name : str
        ``"pipeline-tree"`` or ``"pipeline-linear"``.

    Raises
    ------
    ConfigError
        If the model is not such a Pipeline; :class:`PipelineMapError` if a transformed feature with non-zero
        attributions has no raw column (the caller then explains by permutation).
    """
    import shap

    parts = pipeline_parts(model.estimator)
    if parts is None:
        raise ConfigError(f"explainer='pipeline' needs an sklearn Pipeline whose last step is a tree model or a linear "
                          f"classifier; {model.name!r} is not one")
    pre, final, kind = parts
    language = model.language
    Z = _dense(pre.transform(language.model_input(X)))
    if kind == "tree":
        values = shap.TreeExplainer(final).shap_values(Z, check_additivity=False)
    else:
        values = shap.LinearExplainer(final, _dense(pre.transform(language.model_input(background)))).shap_values(Z)
    values = positive_class_values(np.asarray(values, dtype=np.float64), Z.shape, model.positive_index)
    parents = raw_column_map(pre, language.model_input, np.vstack([X[:MAP_ROWS], background])[:MAP_ROWS * 2],
                             domain)
    orphans = parents.sum(axis=1) == 0
    if orphans.any() and np.abs(values[:, orphans]).max(initial=0.0) > 1e-12:
        raise PipelineMapError(f"{int(orphans.sum())} transformed feature(s) of {model.name!r} could not be traced "
                               "back to a raw column")
    shares = np.divide(parents, parents.sum(axis=1, keepdims=True), out=np.zeros_like(parents),
                       where=parents.sum(axis=1, keepdims=True) > 0)
    return values @ shares, f"pipeline-{kind}"


def raw_column_map(pre, model_input, rows: np.ndarray, domain=None) -> np.ndarray:
    """Which raw columns each transformed feature is computed from, measured by perturbing one column at a time.

    Parameters
    ----------
    pre : transformer
        The pipeline's preprocessing (fitted).
    model_input : callable
        Codes (n, d) -> the input ``pre`` takes (a frame, or the codes).
    rows : numpy.ndarray, shape (m, d)
        Codes of the rows to perturb.
    domain : Domain, optional
        With it, each column is also set to every one of its codes in turn (cycling over the rows).

    Returns
    -------
    numpy.ndarray of float64, shape (n_transformed, d)
        1 where the transformed feature changed when the raw column's values were moved.
    """
    rows = np.asarray(rows, dtype=np.int64)
    m, d = rows.shape
    copies, owners = [rows], []
    for j in range(d):  # a column with many codes gets more copies than the others
        for values in _moved_values(rows[:, j], None if domain is None else _codes_to_try(domain, j)):
            moved = rows.copy()
            moved[:, j] = values
            copies.append(moved)
            owners.append(j)
    out = _dense(pre.transform(model_input(np.vstack(copies))))
    base = out[:m]
    blocks = out[m:].reshape(len(owners), m, -1)
    changed = ~np.isclose(blocks, base[None], rtol=0.0, atol=1e-12, equal_nan=True).all(axis=1)  # (copies, t)
    owner = np.asarray(owners)
    return np.stack([changed[owner == j].any(axis=0) for j in range(d)], axis=1).astype(np.float64)


def _codes_to_try(domain, j: int) -> np.ndarray:
    """The codes column ``j`` may take: a protected attribute's values (not those the model refuses), or its bounds."""
    if j in domain.protected:
        return np.asarray(domain.protected_values[list(domain.protected).index(j)], dtype=np.int64)
    feature = domain.features[j]
    return np.arange(feature.lo, feature.hi + 1, dtype=np.int64)


def _moved_values(column: np.ndarray, codes: np.ndarray | None) -> list[np.ndarray]:
    """Other values for one column of the probed rows: rotated among the rows, and cycled over ``codes``."""
    m = len(column)
    moved = [np.roll(column, 1), np.roll(column, max(1, m // 2))]
    if codes is not None and len(codes):
        for start in range(0, len(codes), m):  # every code at least once, m codes per copy
            moved.append(codes[(start + np.arange(m)) % len(codes)])
            if len(codes) > 4 * m:  # a wide integer column: a numeric input, any change shows; no need for all
                break
    return moved


def _dense(Z) -> np.ndarray:
    """A transformer's output as a dense float64 array (sparse one-hot matrices included)."""
    if hasattr(Z, "toarray"):
        Z = Z.toarray()
    return np.asarray(Z, dtype=np.float64)
