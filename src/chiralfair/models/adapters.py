"""Adapters from torch modules, sklearn estimators and pipelines, and plain callables to models under test.

Each returns a :class:`~chiralfair.models.protocol.CountingModel`.
"""

from __future__ import annotations

import numpy as np

from ..exceptions import ModelCapabilityError
from .protocol import DEFAULT_BATCH_SIZE, CountingModel
from .threads import single_native_thread


def as_model(obj, *, name: str | None = None, batch_size: int = DEFAULT_BATCH_SIZE,
             output: str = "probability") -> CountingModel:
    """Wrap a model under test.

    Parameters
    ----------
    obj : torch.nn.Module, sklearn estimator or pipeline, CountingModel, or callable
        A torch module maps float32 inputs (n, d) to either (n, 1) positive-class outputs or (n, 2) class
        outputs; a callable maps (n, d) inputs to (n,) labels (a black box: no probabilities, no gradient).
    name : str, optional
        Shown in errors and reports; defaults to the class name.
    batch_size : int
        Largest number of rows per call.
    output : {"probability", "logit"}
        For torch modules: whether the module's output is already a probability (sigmoid/softmax applied)
        or a logit.

    Returns
    -------
    CountingModel

    Raises
    ------
    ModelCapabilityError
        If ``obj`` has no ``predict`` and is neither a torch module nor callable.
    """
    if isinstance(obj, CountingModel):
        return obj
    if _is_torch_module(obj):
        from .torch_adapter import torch_model
        return torch_model(obj, name=name, batch_size=batch_size, output=output)
    if hasattr(obj, "predict"):
        return _sklearn_model(obj, name=name or type(obj).__name__, batch_size=batch_size)
    if callable(obj):
        return CountingModel(lambda X: np.asarray(obj(X)), name=name or getattr(obj, "__name__", "callable"),
                             batch_size=batch_size, estimator=obj)
    raise ModelCapabilityError(f"cannot use {type(obj).__name__} as a model: it has no predict() and is not callable")


def _is_torch_module(obj) -> bool:
    from ._torch import is_torch_module
    return is_torch_module(obj)


def _sklearn_model(est, *, name: str, batch_size: int) -> CountingModel:
    proba = None
    if _has_predict_proba(est):
        def proba(X):
            with single_native_thread():
                p = est.predict_proba(X)
            return p if p.shape[1] == 2 else np.column_stack([1 - p[:, -1], p[:, -1]])

    def predict(X):
        with single_native_thread():
            return est.predict(X)

    gradient = _sklearn_gradient(est)
    return CountingModel(predict, predict_proba=proba, input_gradient=gradient, name=name,
                         batch_size=batch_size, estimator=est)


def _has_predict_proba(est) -> bool:
    try:
        return hasattr(est, "predict_proba")  # SVC(probability=False) raises AttributeError here
    except AttributeError:
        return False


def _sklearn_gradient(est):
    """Analytic d P(y=1)/dx for LogisticRegression and MLPClassifier, optionally behind StandardScalers."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    scale = None
    final = est
    if isinstance(est, Pipeline):
        pre = [s for _, s in est.steps[:-1] if s not in (None, "passthrough")]
        if not all(isinstance(s, StandardScaler) for s in pre):
            return None
        final = est.steps[-1][1]
        scale = _pipeline_scale(pre)
    if isinstance(final, LogisticRegression) and len(final.classes_) == 2:
        def grad(X):
            p = est.predict_proba(X)[:, 1]
            g = (p * (1 - p))[:, None] * final.coef_[0][None, :]
            return g if scale is None else g / scale
        return grad
    if isinstance(final, MLPClassifier) and len(final.classes_) == 2:
        def grad(X):
            Z = X if scale is None else _apply_scalers(est, X)
            g = _mlp_positive_proba_gradient(final, Z)
            return g if scale is None else g / scale
        return grad
    return None


def _pipeline_scale(scalers) -> np.ndarray:
    s = 1.0
    for sc in scalers:
        if sc.with_std and sc.scale_ is not None:
            s = s * sc.scale_
    return np.asarray(s, dtype=float)


def _apply_scalers(pipe, X):
    for _, step in pipe.steps[:-1]:
        if step not in (None, "passthrough"):
            X = step.transform(X)
    return X


_ACTIVATIONS = {
    "relu": (lambda z: np.maximum(z, 0), lambda z, a: (z > 0).astype(float)),
    "tanh": (np.tanh, lambda z, a: 1 - a ** 2),
    "logistic": (lambda z: 1 / (1 + np.exp(-z)), lambda z, a: a * (1 - a)),
    "identity": (lambda z: z, lambda z, a: np.ones_like(z)),
}


def _mlp_positive_proba_gradient(mlp, X) -> np.ndarray:
    """Backpropagate P(y=1) through an sklearn MLPClassifier's weights (binary: logistic output unit)."""
    act, dact = _ACTIVATIONS[mlp.activation]
    a = np.asarray(X, dtype=float)
    derivs = []
    for W, b in zip(mlp.coefs_[:-1], mlp.intercepts_[:-1], strict=True):
        z = a @ W + b
        a = act(z)
        derivs.append(dact(z, a))
    out = 1 / (1 + np.exp(-(a @ mlp.coefs_[-1] + mlp.intercepts_[-1])))
    delta = out * (1 - out)  # (n, 1)
    delta = delta @ mlp.coefs_[-1].T
    for W, d in zip(reversed(mlp.coefs_[:-1]), reversed(derivs), strict=True):
        delta = (delta * d) @ W.T
    return delta
