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
from .fitting import fit_plain, fit_with_weights, unfitted_copy  # noqa: F401  (re-exported: the methods use them)

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


def method_class(name: str) -> type[MitigationMethod]:
    """The class registered as ``name`` (a built-in method, one registered in Python, or an entry point's).

    Parameters
    ----------
    name : str

    Returns
    -------
    type
        A :class:`MitigationMethod` subclass; its ``name`` is the name it is registered under.

    Raises
    ------
    ConfigError
        For a name not registered (listing the registered ones, plugins included), or an entry that is not a
        :class:`MitigationMethod` subclass.
    """
    from . import _load_all  # noqa: F401  (registers the built-in methods)

    METHODS.check(name)
    cls = METHODS[name]
    if not (isinstance(cls, type) and issubclass(cls, MitigationMethod)):
        raise ConfigError(f"mitigation method {name!r} is registered as {cls!r}, not a MitigationMethod subclass: "
                          "retrain() calls its class's hooks (needs_idis, cannot_run, candidate_params, build)")
    if cls.__dict__.get("name") != name:  # an entry point's class, registered by its name in the group
        cls.name = name
    return cls


def method_names() -> list[str]:
    """Every registered mitigation method's name, sorted (built-in, registered in Python, installed entry points).

    Returns
    -------
    list of str
    """
    from . import _load_all  # noqa: F401

    return sorted(METHODS)


class MitigationMethod(MetaEstimatorMixin, ClassifierMixin, BaseEstimator, ABC):
    """Base of the mitigation methods: label encoding, input checks, delegation of ``predict``/``predict_proba``.

    Subclasses implement :meth:`_fit` on codes and labels in {0, 1}, setting ``estimator_``; :attr:`info_` holds
    what the fit did (rows added, weights, the λ chosen, ...).
    """

    name: ClassVar[str] = "method"
    # Whether the method adds IDI pairs (then retrain() hands it the labelled pairs of a search).
    uses_idis: ClassVar[bool] = False
    # Why ``auto`` must not pick the method for an IDI goal, as a sentence; None: it is one of auto's candidates.
    not_a_candidate: ClassVar[str | None] = None
    # Whether the method chooses among candidates on validation splits of the training rows (then retrain() makes
    # them, with the model's kind trained on each, before any method runs).
    chooses_on_validation: ClassVar[bool] = False
    # The zoo models (by name) the method trains, read by the command line before any work; None: every one.
    zoo_models: ClassVar[tuple[str, ...] | None] = None

    # ------------------------------------------------------------------ the family's hooks (retrain, auto, CLI)
    @classmethod
    def needs_idis(cls, params: dict[str, Any]) -> bool:
        """Whether the method, with constructor arguments ``params``, adds the labelled IDI pairs of a search.

        Parameters
        ----------
        params : dict

        Returns
        -------
        bool
            ``uses_idis``, or a ``with_idis`` parameter set.
        """
        return bool(cls.uses_idis or params.get("with_idis"))

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        """Refuse parameters :func:`~chiralfair.mitigation.retrain` cannot pass the method (before any training).

        Parameters
        ----------
        params : dict

        Raises
        ------
        ConfigError
            Naming a parameter the class does not take, and those it takes.
        """
        from .._registry import accepted_parameters

        accepted = accepted_parameters(cls)
        unknown = sorted(set(params) - set(accepted or params))
        if unknown:
            raise ConfigError(f"method {cls.name!r} takes no parameter {', '.join(map(repr, unknown))}; its "
                              f"parameters: {', '.join(a for a in accepted or () if a not in ('estimator', 'domain'))}")

    @classmethod
    def cannot_run(cls, run, params: dict[str, Any]) -> str | None:
        """Why the method cannot train the run's kind of model, as a sentence naming it; None when it can.

        Parameters
        ----------
        run : MitigationRun
            The model under test and its training rows (:class:`~chiralfair.mitigation.protocol.MitigationRun`).
        params : dict

        Returns
        -------
        str or None
        """
        from .kinds import base_estimator

        try:
            base_estimator(cls.name, run.model, 0, run.trainer)
        except ModelCapabilityError as err:
            return str(err)
        return None

    @classmethod
    def left_out_of_auto(cls, run) -> str | None:
        """Why ``auto`` does not try the method on the run's model though it could train it; None: it tries it.

        For a method too costly on this kind of model to be tried among many candidates; a user can still ask for
        it by name.

        Parameters
        ----------
        run : MitigationRun

        Returns
        -------
        str or None
            Default: None.
        """
        return None

    @classmethod
    def candidate_params(cls, run) -> list[dict[str, Any]]:
        """The parameters ``auto`` tries this method with on the run's kind of model (empty: none).

        Parameters
        ----------
        run : MitigationRun

        Returns
        -------
        list of dict
            Default: the method's defaults, once.
        """
        return [{}]

    @classmethod
    def describe(cls, params: dict[str, Any]) -> str:
        """The method with ``params`` in words, e.g. ``"counterfactual, reweigh 0.5"``.

        Parameters
        ----------
        params : dict

        Returns
        -------
        str
        """
        parts = [cls.name]
        if "lam" in params:
            parts[0] += f" λ={params['lam']:g}"
        parts += [f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}" for k, v in params.items()
                  if k not in ("lam", "reweigh", "fine_tune_epochs")]
        parts.append(f"reweigh {params.get('reweigh', 0.0):g}")
        if params.get("fine_tune_epochs"):
            parts.append(f"fine-tuned {params['fine_tune_epochs']} epochs")
        return ", ".join(parts)

    # ``in_its_own_language(run, params, added) -> (retrained, info)``: how the method refits a model that is not
    # spoken to in codes and labels 0/1 (a raw-frame pipeline, labels such as ">50K") in its own values; None: it
    # cannot, and build fits on the codes.
    in_its_own_language: ClassVar[Any] = None

    @classmethod
    def build(cls, run, params: dict[str, Any], added=None):
        """Fit the method on the run's training rows (and ``added`` labelled rows) for the run's kind of model.

        Parameters
        ----------
        run : MitigationRun
        params : dict
            Constructor arguments.
        added : (numpy.ndarray, numpy.ndarray), optional
            Labelled IDI rows in codes (for a method that :meth:`needs_idis`).

        Returns
        -------
        retrained : CountingModel
            The fitted method wrapped as chiralfair measures it.
        info : dict
            What the fit did (``info_``), ``how`` (the class's name) and ``choice`` (:meth:`choice_text`).
        """
        from ..models.adapters import as_model
        from .dnn import PaperDNNClassifier
        from .kinds import base_estimator
        from .refit import refits_in_its_own_language, speaks_codes_and_labels

        if cls.in_its_own_language is not None and refits_in_its_own_language(run.model, params):
            return cls.in_its_own_language(run, params, added)

        model = run.model
        estimator = base_estimator(cls.name, model, run.train_seed, None)
        if params.get("fine_tune_epochs") is not None and isinstance(estimator, PaperDNNClassifier):
            estimator = PaperDNNClassifier.from_module(model.estimator, **estimator.get_params())  # its weights
        from .._registry import accepted_parameters
        if "random_state" in (accepted_parameters(cls) or ()) and "random_state" not in params:
            params = {"random_state": run.seed_of(cls.name), **params}
        cls.check_params(params)
        method = cls(estimator=estimator, domain=run.dataset.domain, **params)
        method.fit(run.dataset.X[run.train], run.dataset.y[run.train], **({} if added is None else {"added": added}))
        info = dict(method.info_)
        info["choice"] = method.choice_text()
        info["how"] = type(method).__name__
        method.in_model_language_ = speaks_codes_and_labels(model.language)
        return as_model(method, name=f"{cls.name}-{model.name}", batch_size=model.batch_size), info

    def choice_text(self) -> str | None:
        """What the fit chose on validation rows, in words (None: it chose nothing).

        Returns
        -------
        str or None
        """
        return None

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
