"""Training a model's kind again: the estimator a method wraps, and why a kind cannot be trained (in words).

Every mitigation method refits the user's kind of model on the user's rows (architecture: mitigation). This module
is the one place that knows how: the zoo models through their :class:`~chiralfair.models.ModelSpec`, an sklearn
estimator (or Pipeline) as an unfitted copy with the same hyper-parameters, the zoo DNN as a
:class:`~chiralfair.mitigation.dnn.PaperDNNClassifier`, and anything else through ``trainer(X, y, random_state)``
(the ``paper`` method only). A kind it cannot train is refused with a sentence that names the model and says what
to pass (:func:`why_not`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..datasets.base import Dataset
from ..exceptions import ConfigError, ModelCapabilityError
from ..models.adapters import as_model
from ..models.protocol import CountingModel
from .fitting import unfitted_copy


def is_sklearn_estimator(obj) -> bool:
    """Whether ``obj`` is an sklearn estimator (or Pipeline).

    Parameters
    ----------
    obj : object

    Returns
    -------
    bool
    """
    from sklearn.base import BaseEstimator
    return isinstance(obj, BaseEstimator)


def is_zoo_dnn(model: CountingModel) -> bool:
    """Whether ``model`` is the zoo DNN (a torch network chiralfair knows the training recipe of).

    Parameters
    ----------
    model : CountingModel

    Returns
    -------
    bool
    """
    spec = getattr(model, "spec", None)
    return spec is not None and spec.is_torch


def kind_of(model: CountingModel) -> str:
    """The model's kind in words, as the notes name it: ``"the zoo DNN"``, ``"zoo model 'lr'"``, an estimator's class.

    Parameters
    ----------
    model : CountingModel

    Returns
    -------
    str
    """
    spec = getattr(model, "spec", None)
    if spec is not None:
        return "the zoo DNN" if spec.is_torch else f"zoo model {spec.name!r}"
    return type(model.estimator).__name__


def why_not(model: CountingModel) -> str:
    """Why chiralfair cannot train a model's kind again (its methods train the zoo models and sklearn estimators).

    Parameters
    ----------
    model : CountingModel

    Returns
    -------
    str
    """
    from ..models._torch import is_torch_module
    from ..models.files import OnnxClassifier

    estimator = model.estimator
    if isinstance(estimator, OnnxClassifier):
        return ("it is an ONNX graph, which holds no training recipe; retrain the model it was exported from (an "
                "sklearn estimator, the zoo DNN) and export it again")
    if is_torch_module(estimator):
        return ("it is a torch module whose training recipe chiralfair does not know; the methods train the zoo DNN "
                "and sklearn estimators, and 'paper' trains any model with trainer=<callable(X, y, random_state)> "
                "(Python)")
    return f"it is neither a zoo model nor an sklearn estimator ({type(estimator).__name__})"


def base_estimator(name: str, model: CountingModel, seed: int, trainer):
    """An unfitted estimator of the model's architecture, on int codes and labels {0, 1}, for method ``name``.

    Parameters
    ----------
    name : str
        The method, for the messages.
    model : CountingModel
    seed : int
        The ``random_state`` of the copy.
    trainer : callable or None
        Given: refused (it serves the ``paper`` method only).

    Returns
    -------
    PaperDNNClassifier, sklearn estimator or Pipeline
        A Pipeline ``[("to_frame", ...), ("model", copy)]`` for a model fed a frame.

    Raises
    ------
    ModelCapabilityError
        For a kind chiralfair cannot train, or a ``trainer``.
    """
    from .dnn import PaperDNNClassifier

    if trainer is not None:
        raise ModelCapabilityError(f"method {name!r} trains the model's architecture itself; trainer= serves the "
                                   "paper method only. Pass a zoo model or an sklearn estimator")
    spec = getattr(model, "spec", None)
    if spec is not None and spec.is_torch:
        p = spec.params
        return PaperDNNClassifier(epochs=p["epochs"], batch_size=p["batch_size"], lr=p["lr"],
                                  standardize=p["standardize"], device=p["device"], random_state=seed)
    if spec is not None:
        return spec.build(seed)
    if is_sklearn_estimator(model.estimator):
        copy = unfitted_copy(model.estimator, seed)
        if not model.language.takes_frame:
            return copy
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import FunctionTransformer
        decode = model.language.model_input if model.language.as_values else model.language.to_frame
        return Pipeline([("to_frame", FunctionTransformer(decode)), ("model", copy)])
    raise ModelCapabilityError(f"method {name!r} cannot train model {model.name!r} again: {why_not(model)}")


def can_fit_kind(model: CountingModel, trainer) -> bool:
    """Whether chiralfair can train the model's kind from scratch (a trainer, a zoo model, an sklearn estimator).

    Parameters
    ----------
    model : CountingModel
    trainer : callable or None

    Returns
    -------
    bool
    """
    return trainer is not None or getattr(model, "spec", None) is not None or is_sklearn_estimator(model.estimator)


def fit_model_kind(model: CountingModel, dataset: Dataset, rows, seed: int, trainer) -> CountingModel:
    """The model's kind trained from scratch on dataset rows ``rows`` with training seed ``seed``.

    Parameters
    ----------
    model : CountingModel
    dataset : Dataset
    rows : numpy.ndarray of int
    seed : int
    trainer : callable or None

    Returns
    -------
    CountingModel
    """
    from .refit import refit_copy

    spec = getattr(model, "spec", None)
    X, y = dataset.X[rows], dataset.y[rows]
    if trainer is not None:
        X_own = trainer_input(model, dataset, X, np.asarray(rows))
        return wrap_trained(trainer(X_own, y, int(seed)), model, f"seed{seed}-{model.name}")
    if spec is not None:
        return spec.fit(X, y, random_state=int(seed))
    return refit_copy(model, dataset, rows, int(seed), f"seed{seed}-{model.name}")


def check_trainable(model: CountingModel, mode: str, trainer) -> None:
    """Refuse a model the ``paper`` method cannot train again in ``mode`` (with ``trainer``, if given).

    Parameters
    ----------
    model : CountingModel
    mode : {"retrain", "fine-tune"}
    trainer : callable or None

    Raises
    ------
    ModelCapabilityError
        Saying what to pass.
    ConfigError
        For a ``trainer`` that is not callable.
    """
    spec = getattr(model, "spec", None)
    if mode == "fine-tune" and not (spec is not None and spec.is_torch and trainer is None):
        raise ModelCapabilityError(
            f"mode='fine-tune' continues training the zoo DNN from its weights; model {model.name!r} is not the "
            "zoo DNN (use mode='retrain')")
    if trainer is not None:
        if not callable(trainer):
            raise ConfigError(f"trainer must be callable as trainer(X, y, random_state), got {type(trainer).__name__}")
        return
    if spec is not None or is_sklearn_estimator(model.estimator):
        return
    raise ModelCapabilityError(
        f"cannot train model {model.name!r} again: {why_not(model)}. Pass trainer=<callable(X, y, random_state) -> "
        "model> that trains its architecture on int codes X (n, d) and labels y in {0, 1}")


def paper_mode(model: CountingModel, mode: str, trainer) -> str:
    """``mode`` resolved: ``"auto"`` fine-tunes the zoo DNN (without a trainer) and retrains anything else.

    Parameters
    ----------
    model : CountingModel
    mode : {"auto", "retrain", "fine-tune"}
    trainer : callable or None

    Returns
    -------
    str
    """
    if mode != "auto":
        return mode
    return "fine-tune" if is_zoo_dnn(model) and trainer is None else "retrain"


def train_again(model: CountingModel, dataset: Dataset, train, X_new, y_new, *, mode, trainer, random_state,
                cache_dir, epochs: int):
    """The model trained again on the training rows plus the new rows (codes, labels {0, 1}), and how.

    Parameters
    ----------
    model : CountingModel
    dataset : Dataset
    train : numpy.ndarray of int64
    X_new : numpy.ndarray of int64, shape (m, n_features)
    y_new : numpy.ndarray of {0, 1}, shape (m,)
    mode : {"retrain", "fine-tune"}
    trainer : callable or None
    random_state : int
    cache_dir : path or None
        Model cache of the zoo models.
    epochs : int
        Fine-tuning epochs of the zoo DNN.

    Returns
    -------
    retrained : CountingModel
    how : {"trainer", "fine-tune", "spec", "sklearn-clone"}
    """
    X = np.vstack([dataset.X[train], X_new])
    y = np.concatenate([dataset.y[train], y_new])
    name = f"retrained-{model.name}"
    if trainer is not None:
        origin = np.concatenate([np.asarray(train, dtype=np.int64), np.full(len(X_new), -1, dtype=np.int64)])
        X_own = trainer_input(model, dataset, X, origin)
        return wrap_trained(trainer(X_own, y, int(random_state)), model, name), "trainer"
    spec = getattr(model, "spec", None)
    if spec is not None and mode == "fine-tune":
        from ..models.dnn import fine_tune_dnn
        tuned = fine_tune_dnn(model.estimator, X, y, epochs=epochs, random_state=random_state,
                              batch_size=spec.params["batch_size"], lr=spec.params["lr"])
        return spec.wrap(tuned), "fine-tune"
    if spec is not None:
        from ..models.training import train_model
        augmented = replace(dataset, X=np.vstack([dataset.X, X_new]), y=np.concatenate([dataset.y, y_new]),
                            raw=None, name=f"{dataset.name}-retrained")
        rows = np.concatenate([train, np.arange(dataset.n_samples, dataset.n_samples + len(X_new))])
        trained = train_model(augmented, spec, random_state=random_state, train_index=rows, cache_dir=cache_dir)
        return trained.model, "spec"
    from .refit import refit_copy

    return refit_copy(model, dataset, train, int(random_state), name, added=(X_new, y_new)), "sklearn-clone"


def trainer_input(model: CountingModel, dataset: Dataset, X: np.ndarray, origin: np.ndarray):
    """What ``trainer`` is given for training rows ``X`` (codes): the codes, or a model fed values its own values.

    A row made from person ``origin[i]`` is that person's values with the columns its codes change decoded; an
    added row (``origin[i] == -1``) is decoded whole (:func:`~chiralfair.mitigation.refit.training_input`).

    Parameters
    ----------
    model : CountingModel
    dataset : Dataset
    X : numpy.ndarray of int64
    origin : numpy.ndarray of int64

    Returns
    -------
    numpy.ndarray
    """
    if not model.language.as_values:
        return X
    from .refit import training_input

    return training_input(model, dataset, X, origin)


def wrap_trained(trained, model: CountingModel, name: str) -> CountingModel:
    """What ``trainer`` returned, read as learning labels {0, 1} from what it was given.

    The codes, or its frame if it was fitted on one, or the values if the model under test is fed values.

    Parameters
    ----------
    trained : object
    model : CountingModel
    name : str

    Returns
    -------
    CountingModel
    """
    if isinstance(trained, CountingModel):
        return trained
    language = model.language
    if language.as_values:
        return as_model(trained, name=name, batch_size=model.batch_size, to_frame=language.to_frame, as_values=True,
                        output="logit" if language.output == "logit" else "auto")
    to_frame = language.to_frame if getattr(trained, "feature_names_in_", None) is not None else None
    return as_model(trained, name=name, batch_size=model.batch_size, to_frame=to_frame,
                    output="logit" if language.output == "logit" else "auto")
