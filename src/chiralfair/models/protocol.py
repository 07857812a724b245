"""The model protocol (design §4) and the query-counting wrapper every algorithm talks to.

A model under test needs only ``predict(X) -> (n,) labels``; its adapter (:func:`~chiralfair.models.as_model`)
maps them to {0, 1}, 1 being the positive class. ``predict_proba(X) -> (n, 2)`` and ``input_gradient(X) -> (n, d)``
are optional capabilities; an algorithm that needs one asks
:meth:`CountingModel.require` and gets a :class:`~chiralfair.exceptions.ModelCapabilityError` naming the model
and the missing method otherwise.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from .._validation import check_int
from ..exceptions import ModelCapabilityError
from .language import ModelLanguage

DEFAULT_BATCH_SIZE = 65_536


@runtime_checkable
class Model(Protocol):
    """What chiralfair needs from a model under test: a batched ``predict``."""

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Return labels, shape (n_samples,), for encoded inputs of shape (n_samples, n_features).

        Parameters
        ----------
        X : numpy.ndarray of int64, shape (n_samples, n_features)
            Codes.
        """


class CountingModel:
    """Batched, query-counting access to a model under test.

    Every row sent to the model, through any method, adds one to :attr:`n_queries`, so all generators are
    measured the same way (design §2). Large requests are split into chunks of ``batch_size`` rows to bound
    memory; a request is never split finer than that.

    Parameters
    ----------
    predict : callable
        ``predict(X: float64 (n, d)) -> (n,)`` labels in {0, 1}, 1 = the positive class.
    predict_proba : callable, optional
        ``predict_proba(X) -> (n, 2)``: P(negative), P(positive) (column 1 is always the positive class).
    input_gradient : callable, optional
        ``input_gradient(X) -> (n, d)``: gradient of the positive-class probability with respect to the
        encoded input.
    name : str
        Shown in errors and reports.
    batch_size : int
        Largest number of rows per call to the underlying model.
    estimator : object, optional
        The wrapped model object, kept for adapters and for training chiral models.
    predict_both : callable, optional
        ``predict_both(X) -> (n, 2)`` columns label and P(y=1) from one forward pass (an optimisation).
    language : ModelLanguage, optional
        How the wrapped model speaks (its classes, positive class, output kind, input frame), as declared to
        :func:`~chiralfair.models.as_model`; the default is a model taking codes and returning labels {0, 1}.

    Attributes
    ----------
    spec : chiralfair.models.zoo.ModelSpec or None
        The zoo configuration the model was trained from (set by ``ModelSpec.fit``), so that a chiral model
        can be trained with the same architecture and hyper-parameters; None for models wrapped directly.
    """

    def __init__(self, predict, *, predict_proba=None, input_gradient=None, name: str = "model",
                 batch_size: int = DEFAULT_BATCH_SIZE, estimator=None, predict_both=None,
                 language: ModelLanguage | None = None):
        self._predict = predict
        self._predict_both = predict_both
        self._predict_proba = predict_proba
        self._input_gradient = input_gradient
        self.name = name
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)
        self.estimator = estimator
        self.language = language if language is not None else ModelLanguage()
        self.spec = None
        self.n_queries = 0
        self.n_gradient_queries = 0

    @property
    def positive_index(self) -> int:
        """Index of the positive class among the wrapped model's own classes (its ``predict_proba`` column)."""
        return self.language.positive_index

    @property
    def takes_frame(self) -> bool:
        """Whether the wrapped model is fed a DataFrame (``to_frame``) rather than the integer codes."""
        return self.language.takes_frame

    # -------------------------------------------------------------- capabilities
    @property
    def has_proba(self) -> bool:
        """Whether :meth:`predict_proba` is available."""
        return self._predict_proba is not None

    @property
    def has_gradient(self) -> bool:
        """Whether :meth:`input_gradient` is available."""
        return self._input_gradient is not None

    def require(self, capability: str, *, by: str) -> None:
        """Raise unless the model has ``capability`` (``"predict_proba"`` or ``"input_gradient"``).

        Parameters
        ----------
        capability : {"predict_proba", "input_gradient"}
        by : str
            The algorithm that needs it, for the message.

        Raises
        ------
        ModelCapabilityError
            Naming the model, the missing method and the algorithm ``by`` that needs it.
        """
        have = {"predict_proba": self.has_proba, "input_gradient": self.has_gradient}[capability]
        if not have:
            hint = (" Gradient generators need a torch module or sklearn MLPClassifier/LogisticRegression;"
                    " use a black-box generator (aequitas, sg, themis) instead."
                    if capability == "input_gradient" else "")
            raise ModelCapabilityError(f"{by} needs {capability}() but model {self.name!r} does not provide it.{hint}")

    # -------------------------------------------------------------- calls
    def predict(self, X) -> np.ndarray:
        """Predicted labels.

        Parameters
        ----------
        X : array-like, shape (n_samples, n_features)

        Returns
        -------
        numpy.ndarray of int64, shape (n_samples,)
            1 = the positive class, 0 = the other. Costs n_samples model queries.
        """
        return self._chunked(self._predict, X, count="n_queries").astype(np.int64).reshape(-1)

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, shape (n_samples, 2); costs n_samples queries.

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Codes.

        Returns
        -------
        numpy.ndarray of float64, shape (n_samples, 2)

        Raises
        ------
        ModelCapabilityError
            If the model has no ``predict_proba``.
        """
        self.require("predict_proba", by="predict_proba")
        return self._chunked(self._predict_proba, X, count="n_queries").astype(np.float64)

    def predict_with_proba(self, X) -> tuple[np.ndarray, np.ndarray]:
        """Labels and positive-class probabilities of the same rows, counted once per row.

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Codes.

        Returns
        -------
        labels : numpy.ndarray of int64, shape (n_samples,)
        proba : numpy.ndarray of float64, shape (n_samples,)
            P(y = 1). Costs n_samples queries in all.

        Raises
        ------
        ModelCapabilityError
            If the model has no ``predict_proba``.
        """
        self.require("predict_proba", by="predict_with_proba")
        both = self._predict_both or (lambda Z: np.column_stack([self._predict(Z), self._predict_proba(Z)[:, 1]]))
        out = self._chunked(both, X, count="n_queries")
        return out[:, 0].astype(np.int64), out[:, 1].astype(np.float64)

    def input_gradient(self, X) -> np.ndarray:
        """Gradient of the positive-class probability w.r.t. the encoded input, shape (n_samples, n_features).

        Costs n_samples queries (also counted in :attr:`n_gradient_queries`).

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Codes.

        Returns
        -------
        numpy.ndarray of float64, shape (n_samples, n_features)

        Raises
        ------
        ModelCapabilityError
            If the model has no gradient.
        """
        self.require("input_gradient", by="input_gradient")
        self.n_gradient_queries += len(X)
        return self._chunked(self._input_gradient, X, count="n_queries").astype(np.float64)

    def _chunked(self, fn, X, *, count: str) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"model input must be 2-D (n_samples, n_features), got shape {X.shape}")
        n = X.shape[0]
        setattr(self, count, getattr(self, count) + n)
        if n <= self.batch_size:
            return np.asarray(fn(X))
        return np.concatenate([np.asarray(fn(X[i:i + self.batch_size])) for i in range(0, n, self.batch_size)])

    def reset_queries(self) -> None:
        """Set the query counters to zero."""
        self.n_queries = 0
        self.n_gradient_queries = 0

    def __repr__(self) -> str:
        caps = [c for c, h in (("proba", self.has_proba), ("gradient", self.has_gradient)) if h]
        return f"CountingModel({self.name!r}, capabilities={caps}, n_queries={self.n_queries})"


def from_positive_probability(proba1, *, name, batch_size, estimator, language, gradient=None) -> CountingModel:
    """A CountingModel whose labels are P(positive) > 0.5, from ``proba1(X) -> (n,)`` P(positive).

    Parameters
    ----------
    proba1 : callable
        ``proba1(X: (n, d) codes) -> (n,)`` positive-class probabilities.
    name, batch_size, estimator, language
        As for :class:`CountingModel`.
    gradient : callable, optional
        ``gradient(X) -> (n, d)``, d P(positive) / d X.

    Returns
    -------
    CountingModel
        Labels, probabilities and both from one call of ``proba1`` each.
    """
    def predict(X):
        return (proba1(X) > 0.5).astype(np.int64)

    def predict_proba(X):
        p = proba1(X)
        return np.column_stack([1 - p, p])

    def predict_both(X):
        p = proba1(X)
        return np.column_stack([(p > 0.5).astype(np.float64), p])

    return CountingModel(predict, predict_proba=predict_proba, input_gradient=gradient, name=name,
                         batch_size=batch_size, estimator=estimator, predict_both=predict_both, language=language)
