"""Mitigation methods: one class per method, registered by name, each an sklearn meta-estimator.

A method wraps a classifier on int codes (``estimator``) and a :class:`~chiralfair.domain.Domain` that names the
protected attributes; ``fit(X, y)`` trains the mitigated classifier, ``predict`` / ``predict_proba`` use it.
Parameters are stored unchanged and validated in ``fit`` (scikit-learn's convention), so ``get_params``,
``set_params``, ``clone`` and ``repr`` come from :class:`sklearn.base.BaseEstimator`, and a mitigated model goes
into a user's own pipeline and cross-validation. :func:`chiralfair.mitigation.retrain` uses the same classes to
compare the methods on one held-out split. See architecture: mitigation.

Labels: any two classes; they are encoded to {0, 1} (``classes_[1]`` is 1) before the wrapped estimator sees them.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin

from .._registry import Registry
from ..exceptions import ConfigError, ModelCapabilityError

METHODS: Registry[Callable[..., MitigationMethod]] = Registry("mitigation method")


def register_method(name: str):
    """Class decorator registering a mitigation method under ``name``.

    Parameters
    ----------
    name : str
        The registry name (``make_method(name)``, ``--method name``).

    Returns
    -------
    callable
        The class decorator; it sets the class's ``name``.

    Raises
    ------
    ConfigError
        If ``name`` is already registered.
    """
    def deco(cls):
        METHODS.add(name, cls)
        cls.name = name
        return cls
    return deco


def make_method(name: str, **params) -> MitigationMethod:
    """Build the registered mitigation method ``name`` (``paper``, ``counterfactual``, ``unaware``, ``consistency``).

    Parameters
    ----------
    name : str
    **params
        Constructor arguments of the method's class (see each class).

    Returns
    -------
    MitigationMethod
        Unfitted.

    Raises
    ------
    ConfigError
        If ``name`` is not registered (the message lists the valid names).

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from sklearn.base import clone
    >>> from sklearn.linear_model import LogisticRegression
    >>> from chiralfair.datasets import from_frame
    >>> from chiralfair.mitigation import make_method
    >>> rng = np.random.default_rng(0)
    >>> people = pd.DataFrame({"sex": rng.choice(["f", "m"], 600), "hours": rng.integers(20, 60, 600)})
    >>> people["y"] = np.where(people["hours"] + 10 * (people["sex"] == "m") > 45, "yes", "no")
    >>> data = from_frame(people, label="y", positive_class="yes", protected="sex")
    >>> fairer = make_method("counterfactual", estimator=LogisticRegression(), domain=data.domain)
    >>> fairer = clone(fairer).fit(data.X, data.y)       # a scikit-learn meta-estimator on codes
    >>> women, men = data.X.copy(), data.X.copy()
    >>> women[:, 0], men[:, 0] = 0, 1
    >>> bool((fairer.predict(women) == fairer.predict(men)).mean() > 0.95)
    True
    """
    from . import _load_all  # noqa: F401  (registers the built-in methods)
    return METHODS.make(name, **params)


class MitigationMethod(MetaEstimatorMixin, ClassifierMixin, BaseEstimator, ABC):
    """Base of the mitigation methods: label encoding, input checks, delegation of ``predict``/``predict_proba``.

    Subclasses implement :meth:`_fit` on codes and labels in {0, 1}, setting ``estimator_``; :attr:`info_` holds
    what the fit did (rows added, weights, the λ chosen, ...).
    """

    name: ClassVar[str] = "method"
    # Whether the method adds IDI pairs (then retrain() hands it the labelled pairs of a search).
    uses_idis: ClassVar[bool] = False

    def fit(self, X, y, sample_weight=None, **fit_params) -> MitigationMethod:
        """Fit the mitigated classifier on int codes ``X`` (n_samples, n_features) and two-class labels ``y``.

        ``sample_weight`` (n_samples,), where the method takes it, weighs the rows; further keyword arguments are
        the method's (e.g. ``added=`` of ``counterfactual``).

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Codes of the method's ``domain``.
        y : array-like, shape (n_samples,)
            Two-class labels (any two values; the second in sorted order is the positive class).
        sample_weight : array-like of float, shape (n_samples,), optional
        **fit_params
            The method's own fit arguments.

        Returns
        -------
        MitigationMethod
            ``self``, fitted.

        Raises
        ------
        ConfigError
            If ``domain`` has no protected attribute or another width than ``X``, or ``y`` does not hold exactly
            two classes.
        """
        X = self._codes(X)
        y = np.asarray(y)
        if y.shape != (len(X),):
            raise ConfigError(f"y must have shape ({len(X)},) to match X, got {y.shape}")
        classes = np.unique(y)
        if len(classes) != 2:
            raise ConfigError(f"mitigation needs a two-class task; y holds {len(classes)} class(es): "
                              f"{classes.tolist()[:5]}")
        self.classes_ = classes
        self.n_features_in_ = int(X.shape[1])
        self.info_: dict[str, Any] = {}
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, dtype=np.float64)
            if sample_weight.shape != (len(X),):
                raise ConfigError(f"sample_weight must have shape ({len(X)},), got {sample_weight.shape}")
            fit_params["sample_weight"] = sample_weight
        self._fit(X, (y == classes[1]).astype(np.int64), **fit_params)
        return self

    def predict(self, X) -> np.ndarray:
        """Labels in ``classes_``, shape (n_samples,).

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Codes.

        Returns
        -------
        numpy.ndarray, shape (n_samples,)
        """
        from sklearn.utils.validation import check_is_fitted
        check_is_fitted(self, "estimator_")
        return self.classes_[np.asarray(self.estimator_.predict(self._model_input(self._codes(X))), dtype=np.int64)]

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities in the order of ``classes_``, shape (n_samples, 2).

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
            If the wrapped estimator has no ``predict_proba``.
        """
        if not self._has_proba():
            raise ModelCapabilityError(f"the estimator of {self.name!r} ({type(self.estimator_).__name__}) has no "
                                       "predict_proba")
        return np.asarray(self.estimator_.predict_proba(self._model_input(self._codes(X))), dtype=np.float64)

    def deployable_model(self):
        """The fitted model as it is saved to a file (:func:`chiralfair.models.files.save_model_file`).

        Returns
        -------
        object
            ``self`` here; a method whose fitted estimator predicts on its own returns that instead (a torch
            network, an sklearn estimator, or the estimator with the blinding of ``unaware``).
        """
        return self

    def _has_proba(self) -> bool:
        from sklearn.utils.validation import check_is_fitted
        check_is_fitted(self, "estimator_")
        return hasattr(self.estimator_, "predict_proba")

    def _model_input(self, X: np.ndarray) -> np.ndarray:
        """What the wrapped estimator takes (all columns; :class:`Unawareness` drops the protected ones)."""
        return X

    def _codes(self, X) -> np.ndarray:
        domain = self.domain
        if domain is None or not getattr(domain, "protected", None):
            raise ConfigError(f"{type(self).__name__} needs domain=<a Domain with its protected attributes set>")
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != domain.n_features:
            raise ConfigError(f"X must have shape (n_samples, {domain.n_features}) for the domain's features "
                              f"{domain.names}, got {X.shape}")
        return X.astype(np.int64, copy=False)

    # Each method names the fit parameters it takes (sample_weight=, added=, ...); *args, **fit_params typed Any
    # let type checkers accept each of those signatures.
    @abstractmethod
    def _fit(self, X: np.ndarray, y: np.ndarray, *args: Any, **fit_params: Any) -> None:
        """Fit ``estimator_`` on int codes ``X`` and labels {0, 1} ``y``; set ``info_``."""


def fit_with_weights(estimator, X, y, sample_weight):
    """Fit ``estimator`` with ``sample_weight`` (routed to a Pipeline's last step, through nested ones), returning it.

    Parameters
    ----------
    estimator : sklearn estimator or Pipeline
        Unfitted; fitted in place.
    X : array-like, shape (n_samples, n_features)
    y : array-like, shape (n_samples,)
    sample_weight : numpy.ndarray of float, shape (n_samples,)

    Returns
    -------
    estimator
        The fitted ``estimator``.

    Raises
    ------
    ModelCapabilityError
        If the estimator (or a Pipeline's last step) takes no ``sample_weight`` in ``fit``.
    """
    from sklearn.pipeline import Pipeline
    from sklearn.utils.validation import has_fit_parameter

    from ..models.threads import single_native_thread

    target, route = estimator, []
    while isinstance(target, Pipeline):  # your Pipeline inside ours (codes -> frame): route to the final step
        name, target = target.steps[-1]
        route.append(name)
    if not has_fit_parameter(target, "sample_weight"):
        raise ModelCapabilityError(
            f"{type(target).__name__}.fit takes no sample_weight; counterfactual augmentation weights each row's "
            "copies so that the data's size does not change the fit. Use an estimator that takes sample_weight")
    with single_native_thread():
        return estimator.fit(X, y, **{"__".join([*route, "sample_weight"]): sample_weight})


def fit_plain(estimator, X, y):
    """Fit ``estimator`` on one native thread, returning it.

    Parameters
    ----------
    estimator : sklearn estimator
        Unfitted; fitted in place.
    X : array-like, shape (n_samples, n_features)
    y : array-like, shape (n_samples,)

    Returns
    -------
    estimator
        The fitted ``estimator``.
    """
    from ..models.threads import single_native_thread

    with single_native_thread():
        return estimator.fit(X, y)


def check_shares(share) -> tuple[float, ...]:
    """Validate ``share`` (a number or a sequence) into a tuple of distinct values in (0, 1].

    Parameters
    ----------
    share : float or sequence of float
        Share(s) of the IDI pairs to add.

    Returns
    -------
    tuple of float

    Raises
    ------
    ConfigError
        Naming the value outside (0, 1], or for an empty sequence.
    """
    if isinstance(share, str) or not hasattr(share, "__iter__"):
        share = [share]
    values = list(share)
    if not values:
        raise ConfigError("share must hold at least one value in (0, 1]")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not (0.0 < float(v) <= 1.0):
            raise ConfigError(f"share must lie in (0, 1] (the share of the IDI pairs added), got {v!r}")
        if float(v) not in out:
            out.append(float(v))
    return tuple(out)


def unfitted_copy(est, seed: int):
    """A clone with the same hyper-parameters; a ``random_state`` left at None gets ``seed`` (reproducible).

    Parameters
    ----------
    est : sklearn estimator
    seed : int
        The ``random_state`` given to every ``random_state`` parameter left at None.

    Returns
    -------
    sklearn estimator
        Unfitted.
    """
    from sklearn.base import clone
    copy = clone(est)
    unset = {k: seed for k, v in copy.get_params(deep=True).items()
             if (k == "random_state" or k.endswith("__random_state")) and v is None}
    return copy.set_params(**unset) if unset else copy
