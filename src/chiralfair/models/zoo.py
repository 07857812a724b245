"""The model zoo: named, hashable model configurations that train into a :class:`CountingModel`.

A :class:`ModelSpec` is a model family name plus its hyper-parameters. It is what makes a *chiral* model
possible: the model under test carries its spec (``model.spec``), and
``model.spec.fit(X_chiral, y, random_state=...)`` trains the same architecture with the same
hyper-parameters on the mutated data (I&D §3.1).

Names (architecture: the model under test; the paper's RQ2 uses ``lr``, ``svc``, ``dtc`` and ``mlp`` at sklearn
defaults):

========  ==================================================  =========================================
name      model                                               defaults that differ from the library's
========  ==================================================  =========================================
dnn       :class:`~chiralfair.models.dnn.PaperDNN` (torch)    paper §4.2; ``standardize=True`` (see dnn)
lr        ``sklearn.linear_model.LogisticRegression``         ``standardize=True``
svc       ``sklearn.svm.SVC``                                 ``probability=True`` (see below),
                                                              ``standardize=True``
dtc       ``sklearn.tree.DecisionTreeClassifier``             none
mlp       ``sklearn.neural_network.MLPClassifier``            ``standardize=True``
rf        ``sklearn.ensemble.RandomForestClassifier``         none
hgb       ``sklearn.ensemble.HistGradientBoostingClassifier``  none
lightgbm  ``lightgbm.LGBMClassifier`` (the ``bench`` extra)  ``verbose=-1`` (no per-fit log lines)
========  ==================================================  =========================================

``lightgbm`` needs the ``lightgbm`` package (``pip install lightgbm``, or the ``bench`` extra); its version is part
of the model's cache key and :func:`~chiralfair.models.training.library_versions`, since its trees change between
releases.

``standardize=True`` puts a ``StandardScaler`` in front of the estimator (a ``Pipeline``), so the fitted
model still takes the raw integer codes and the estimator keeps its own defaults. Every scale-sensitive model
(``dnn``, ``lr``, ``svc``, ``mlp``) standardises; trees do not need it. Measured, test F1 of class 1 on 60/40
stratified splits, scaled vs raw codes:

- LR, census: 0.494 vs 0.497, but on the raw codes ``lbfgs`` stops at ``max_iter=100`` unconverged.
- SVC (RBF), census: 0.563 vs 0.421 (distances in code units are dominated by wide codes).
- MLP, two splits each: census 0.603/0.607 vs 0.593/0.653, bank 0.489/0.510 vs 0.495/0.472, compas
  0.763/0.751 vs 0.762/0.748: no systematic difference, and no convergence in 200 iterations either way;
  sklearn's guide recommends scaling for MLPs and I&D's reference code scales too.

The reference code of I&D uses other settings again (``max_iter=30`` for every sklearn model,
``StandardScaler`` + ``MLP(hidden_layer_sizes=(3,))``); they are reachable through ``params``.

``svc`` with ``probability=True`` is a :class:`~chiralfair.models.platt_svc.PlattSVC`, because sklearn 1.9 deprecates
``SVC(probability=True)`` (removed in 1.11). It is the slow member of the zoo: on census's 19.5k training
rows the probabilistic fit took 20 s (53 s on a loaded machine) against 6 s without probabilities, and
predicting 13k rows took 4 s, about 0.3 ms per model query.

References
----------
Ma, M. et al. "Enhanced Fairness Testing via Generating Effective Initial Individual Discriminatory
Instances", arXiv:2209.08321, §3.1 (chiral model), §4.2 (DNN) and RQ2 (sklearn models).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import numbers
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._random import RandomState, derive_seed
from .._validation import check_choice, check_training_data
from ..exceptions import ConfigError
from ..storage import canonical_json
from ._torch import require_torch
from .adapters import as_model
from .protocol import DEFAULT_BATCH_SIZE, CountingModel
from .threads import single_native_thread

# sklearn is imported when a model is built or a non-default parameter is checked, not with this module, so
# that names, defaults and capabilities (``has_input_gradient``) are known quickly, e.g. to refuse a bad flag.

logger = logging.getLogger(__name__)

DNN_DEFAULTS: dict[str, Any] = {"standardize": True, "epochs": 30, "batch_size": 128, "lr": 0.01,
                                "device": "cpu"}

# name -> (module, class, defaults that differ from the library's, standardize default)
_SKLEARN: dict[str, tuple[str, str, dict[str, Any], bool]] = {
    "lr": ("sklearn.linear_model", "LogisticRegression", {}, True),
    "svc": ("sklearn.svm", "SVC", {"probability": True}, True),
    "dtc": ("sklearn.tree", "DecisionTreeClassifier", {}, False),
    "mlp": ("sklearn.neural_network", "MLPClassifier", {}, True),
    "rf": ("sklearn.ensemble", "RandomForestClassifier", {}, False),
    "hgb": ("sklearn.ensemble", "HistGradientBoostingClassifier", {}, False),
    "lightgbm": ("lightgbm", "LGBMClassifier", {"verbose": -1}, False),
}

MODEL_NAMES: tuple[str, ...] = ("dnn", *_SKLEARN)


def model_names() -> list[str]:
    """Names accepted by :class:`ModelSpec`, in the order of the module docstring's table.

    Returns
    -------
    list of str
    """
    return list(MODEL_NAMES)


def default_params(name: str) -> dict[str, Any]:
    """Return the hyper-parameters that ``ModelSpec(name)`` uses (not the library's full defaults).

    Parameters
    ----------
    name : str
        A zoo model: ``dnn``, ``lr``, ``svc``, ``dtc``, ``mlp``, ``rf``, ``hgb``, ``lightgbm``.

    Returns
    -------
    dict

    Raises
    ------
    ConfigError
        If ``name`` is not a zoo model (the message lists the valid names).
    """
    check_choice(name, "model name", MODEL_NAMES)
    if name == "dnn":
        return dict(DNN_DEFAULTS)
    _, _, overrides, standardize = _SKLEARN[name]
    return {"standardize": standardize, **overrides}


@dataclass(frozen=True)
class ModelSpec:
    """A zoo model's name and hyper-parameters; trains a model with :meth:`fit`.

    Parameters
    ----------
    name : str
        One of :func:`model_names`.
    params : mapping, optional
        Hyper-parameters laid over :func:`default_params` of ``name``: the DNN's ``standardize``, ``epochs``,
        ``batch_size``, ``lr``, ``device`` (see :func:`~chiralfair.models.dnn.train_dnn`), or an sklearn
        estimator's constructor arguments plus ``standardize``. Values must be JSON-like (numbers, strings,
        booleans, None, lists, dicts) because they enter the cache key. ``random_state`` is not a parameter:
        pass it to :meth:`fit`.

    Attributes
    ----------
    params : dict
        The full parameter set (defaults merged in). Treat it as read-only: it defines the hash.

    Raises
    ------
    ConfigError
        If the name is unknown (the message lists the valid names), a parameter is unknown to the model (the
        message lists the valid ones), a value is not JSON-like, or ``random_state`` is given as a parameter.
    """

    name: str
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        check_choice(self.name, "model name", MODEL_NAMES)
        if not isinstance(self.params, Mapping):
            raise ConfigError(f"params must be a mapping, got {type(self.params).__name__}")
        if "random_state" in self.params:
            raise ConfigError("random_state is not a model parameter; "
                              "pass it to ModelSpec.fit(..., random_state=)")
        defaults = default_params(self.name)
        given = set(self.params) - set(defaults)
        merged = {**defaults, **self.params}
        # Canonical JSON form: tuples become lists, so equal configurations compare and hash equal.
        merged = json.loads(_canonical_json(merged, what=f"params of model {self.name!r}"))
        object.__setattr__(self, "params", merged)
        self._check_param_names(given)

    def __hash__(self) -> int:
        return hash(self.key())

    def key(self) -> str:
        """Canonical JSON of name and params, the spec's part of a cache key.

        Returns
        -------
        str
        """
        return _canonical_json({"name": self.name, "params": self.params}, what="model spec")

    def with_params(self, **params) -> ModelSpec:
        """Copy with some parameters replaced.

        Parameters
        ----------
        **params
            Hyper-parameters to replace (validated as the constructor does).

        Returns
        -------
        ModelSpec
        """
        return ModelSpec(self.name, {**self.params, **params})

    @property
    def has_input_gradient(self) -> bool:
        """Whether fitted models of this spec provide ``input_gradient`` (the DNN, LR and MLP)."""
        return self.name in ("dnn", "lr", "mlp")

    @property
    def has_predict_proba(self) -> bool:
        """Whether fitted models of this spec provide ``predict_proba`` (all but ``svc`` with ``probability=False``)."""
        return not (self.name == "svc" and not self.params.get("probability", False))

    @property
    def is_torch(self) -> bool:
        """Whether the model is the torch DNN (else an sklearn estimator)."""
        return self.name == "dnn"

    # ------------------------------------------------------------------ training
    def build(self, random_state: RandomState = 0):
        """Return an unfitted sklearn estimator (a ``Pipeline`` when ``standardize``) for this spec.

        Parameters
        ----------
        random_state : None, int, numpy.random.RandomState or numpy.random.Generator, default=0
            Given to the estimator's ``random_state``.

        Returns
        -------
        sklearn estimator or Pipeline
            Unfitted.

        Raises
        ------
        ConfigError
            For ``dnn``, which has no unfitted estimator object: use :meth:`fit`.
        """
        if self.is_torch:
            raise ConfigError("model 'dnn' is a torch module trained by fit(); build() is for sklearn models")
        cls = _estimator_class(self.name)
        kwargs = {k: _estimator_value(v) for k, v in self.params.items() if k != "standardize"}
        if "random_state" in cls().get_params():
            kwargs["random_state"] = _sklearn_seed(random_state)
        if self.name == "svc" and kwargs.pop("probability", False):
            from .platt_svc import PlattSVC
            estimator = PlattSVC(cls(**kwargs))
        else:
            estimator = cls(**kwargs)
        if not self.params["standardize"]:
            return estimator
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import StandardScaler
        return Pipeline([("scale", StandardScaler()), (self.name, estimator)])

    def fit(self, X, y, *, random_state: RandomState = 0) -> CountingModel:
        """Train this configuration on ``(X, y)``.

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Encoded training inputs (raw codes; any standardisation is part of the model).
        y : array-like of {0, 1}, shape (n_samples,)
        random_state : int, numpy.random.Generator or None
            Seeds initialisation and shuffling; the same int gives the same model.

        Returns
        -------
        CountingModel
            Named ``self.name``, with attribute ``spec`` = ``self``.

        Raises
        ------
        ConfigError
            If ``X`` and ``y`` disagree in length or ``y`` does not hold both labels 0 and 1.
        MissingDependencyError
            For ``dnn`` when torch is not installed (the message says how to install it).

        Warns
        -----
        sklearn.exceptions.ConvergenceWarning
            If the estimator stopped before converging; the message names the model.
        """
        X, y = check_training_data(X, y)
        if self.is_torch:
            require_torch(f"model {self.name!r}")
            from .dnn import train_dnn
            fitted = train_dnn(X, y, random_state=random_state, **self.params)
        else:
            fitted = self.build(random_state)
            with _named_convergence_warnings(self.name), single_native_thread():
                fitted.fit(X, y)
        return self.wrap(fitted)

    def wrap(self, fitted) -> CountingModel:
        """Wrap a fitted model of this spec (a :class:`PaperDNN` or sklearn estimator) as a CountingModel.

        Parameters
        ----------
        fitted : PaperDNN or sklearn estimator
            A model of this spec, trained.

        Returns
        -------
        CountingModel
        """
        if self.is_torch:
            require_torch(f"model {self.name!r}")
            from .torch_adapter import torch_model
            model = torch_model(fitted, name=self.name, batch_size=DEFAULT_BATCH_SIZE,
                                device=self.params["device"])
        else:
            model = as_model(fitted, name=self.name)
        model.spec = self
        return model

    def _check_param_names(self, given: set[str]) -> None:
        """Check the parameters ``given`` beyond the defaults (the defaults are valid: tests/test_zoo.py)."""
        if not given:
            valid = set(self.params)
        elif self.is_torch:
            valid = set(DNN_DEFAULTS)
        else:
            cls = _estimator_class(self.name)
            # built with the zoo's overrides: LightGBM lists a keyword argument (its ``verbose``) once it is set
            valid = (set(cls(**_SKLEARN[self.name][2]).get_params()) - {"random_state"}) | {"standardize"}
        unknown = sorted(set(self.params) - valid)
        if unknown:
            raise ConfigError(f"unknown parameter(s) {unknown} for model {self.name!r}; "
                              f"valid: {', '.join(sorted(valid))}")
        if not isinstance(self.params["standardize"], bool):
            raise ConfigError(f"standardize must be True or False, got {self.params['standardize']!r}")


def _estimator_class(name: str) -> type:
    """The estimator class of the zoo's sklearn-style model ``name``; a ConfigError if its library is missing."""
    module, cls_name, _, _ = _SKLEARN[name]
    try:
        return getattr(importlib.import_module(module), cls_name)
    except ModuleNotFoundError as err:
        raise ConfigError(f"model {name!r} needs the {module!r} package, which is not installed: "
                          f"pip install {module}") from err


def as_spec(model: str | ModelSpec) -> ModelSpec:
    """Return ``model`` as a :class:`ModelSpec` (a name gets the zoo defaults).

    Parameters
    ----------
    model : str or ModelSpec

    Returns
    -------
    ModelSpec

    Raises
    ------
    ConfigError
        If ``model`` is an unknown name or neither a str nor a ModelSpec.
    """
    if isinstance(model, ModelSpec):
        return model
    if isinstance(model, str):
        return ModelSpec(model)
    raise ConfigError(f"model must be a zoo model name ({', '.join(MODEL_NAMES)}) or a ModelSpec, "
                      f"got {type(model).__name__}")


@contextlib.contextmanager
def _named_convergence_warnings(name: str):
    """Re-issue sklearn ConvergenceWarnings of the block with the zoo model's name, and log them."""
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for w in caught:
        if issubclass(w.category, ConvergenceWarning):
            message = f"model {name!r} did not converge: {w.message}"
            logger.warning(message)
            warnings.warn(message, ConvergenceWarning, stacklevel=4)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _sklearn_seed(random_state: RandomState) -> int | None:
    if random_state is None:
        return None
    if isinstance(random_state, np.random.Generator):
        return derive_seed(random_state)
    if isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral) or random_state < 0:
        raise ConfigError(f"random_state must be an int >= 0, a numpy Generator or None, "
                          f"got {random_state!r}")
    return int(random_state)


def _estimator_value(value):
    """JSON lists back to the tuples sklearn expects (e.g. ``hidden_layer_sizes``)."""
    return tuple(value) if isinstance(value, list) else value


def _canonical_json(obj, *, what: str) -> str:
    try:
        return canonical_json(obj)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{what} must be JSON-like (numbers, strings, booleans, None, lists, dicts): "
                          f"{err}") from None


def __getattr__(name: str):
    # Model cache files written before PlattSVC moved to its own module pickle it as models.zoo.PlattSVC.
    if name == "PlattSVC":
        from .platt_svc import PlattSVC
        return PlattSVC
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
