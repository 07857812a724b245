"""Refitting a copy of your estimator in its own language: its input (codes or your raw frame) and its labels.

A mitigation method on chiralfair's integer codes and labels {0, 1} can stand in for a model that speaks them (the
zoo models, an estimator fitted on the codes). A model that takes your raw DataFrame, or labels such as ``">50K"``,
is refitted here instead: the method's training rows are built in codes, then fed as your own rows with only the
columns a method changes decoded (:func:`training_input`; an IDI, nobody's row, decoded whole) and a
copy of your estimator (same hyper-parameters, :func:`~chiralfair.mitigation.base.unfitted_copy`) is fitted on
them, so the model saved is your kind of model and ``--model`` loads it back.

One function per method builds those rows and fits the copy: :func:`counterfactual_in_its_own_language`,
:func:`unaware_in_its_own_language`, and :func:`refit_copy` (the model itself on other rows: ``paper``'s added IDI
pairs, the training-seed spread and ``auto``'s reference).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ..exceptions import ConfigError, ModelCapabilityError
from ..models.adapters import as_model
from ..models.protocol import CountingModel
from .base import fit_plain, fit_with_weights, unfitted_copy


def speaks_codes_and_labels(language) -> bool:
    """Whether a model of this language takes the integer codes and labels {0, 1}, as every mitigation method does.

    Then a fitted method can stand in for the model (``--model`` loads it back); a raw-frame Pipeline with labels
    such as ``">50K"`` is spoken to through ``to_frame`` and ``model_labels``, which a saved method does not do.

    Parameters
    ----------
    language : ModelLanguage

    Returns
    -------
    bool
    """
    classes = language.classes
    return not language.takes_frame and (classes is None or [str(c) for c in classes] == ["0", "1"])


def refits_in_its_own_language(model: CountingModel, params: dict) -> bool:
    """Whether a method refits the user's own estimator on its own input and labels (see the module docstring).

    For an sklearn estimator that does not speak codes and labels {0, 1} (a raw-frame Pipeline, labels such as
    ``">50K"``), unless the method fine-tunes the paper's DNN.

    Parameters
    ----------
    model : CountingModel
    params : dict
        The method's parameters.

    Returns
    -------
    bool
    """
    from sklearn.base import BaseEstimator

    return (getattr(model, "spec", None) is None and isinstance(model.estimator, BaseEstimator)
            and params.get("fine_tune_epochs") is None and not speaks_codes_and_labels(model.language))


def like_the_model(fitted, model: CountingModel, name: str) -> CountingModel:
    """``fitted`` (your kind of estimator, in your model's language) wrapped as ``model`` is.

    Parameters
    ----------
    fitted : sklearn estimator
        Fitted on the model's own input and labels.
    model : CountingModel
        The model under test, whose language is kept.
    name : str

    Returns
    -------
    CountingModel
    """
    language = model.language
    return as_model(fitted, name=name, batch_size=model.batch_size,
                    output="auto" if language.output == "label" else language.output,
                    positive_class=language.positive_class, to_frame=language.to_frame, as_values=language.as_values,
                    classes=None if hasattr(fitted, "classes_") else language.classes)


def training_input(model: CountingModel, dataset, codes: np.ndarray, origin: np.ndarray):
    """The model's own input for training rows given in codes, each made from one person or from the domain.

    For a model fed frames, over a dataset that holds the user's rows (:attr:`Dataset.raw
    <chiralfair.datasets.Dataset.raw>`), a row made from person ``origin[i]`` is that person's own row with only
    the columns its codes change decoded (:meth:`Population.counterparts
    <chiralfair.datasets.population.Population.counterparts>`): the estimator is fitted on the user's values, not
    on the representatives of their bins. A row with ``origin[i] == -1`` (an IDI the search found: a point of the
    domain, nobody's row) is decoded whole. Otherwise the codes go through the model's language.

    Parameters
    ----------
    model : CountingModel
    dataset : Dataset
    codes : numpy.ndarray of int64, shape (n_rows, n_features)
    origin : numpy.ndarray of int, shape (n_rows,)
        The dataset row each training row was made from, or -1.

    Returns
    -------
    numpy.ndarray or pandas.DataFrame, n_rows rows in the order of ``codes``
    """
    import pandas as pd

    from ..datasets.population import population_of

    language = model.language
    people = population_of(dataset) if language.reads_people else None
    origin = np.asarray(origin, dtype=np.int64)
    own = origin >= 0
    if people is None or not own.any():
        return with_categorical_dtypes(model.estimator, language.model_input(codes))
    # rows built as frames, then sent as the model takes them (a frame, or its values as numbers)
    as_frame = replace(language, as_values=False)
    from_people = as_frame.frame_input(people.take(origin[own]).counterparts(codes[own]))
    if own.all():
        return language.frame_input(from_people) if language.as_values else with_categorical_dtypes(
            model.estimator, from_people)
    from_domain = as_frame.model_input(codes[~own])
    order = np.concatenate([np.flatnonzero(own), np.flatnonzero(~own)])
    joined = pd.concat([from_people.reset_index(drop=True), from_domain.reset_index(drop=True)], ignore_index=True)
    joined = joined.iloc[np.argsort(order, kind="stable")].reset_index(drop=True)
    return language.frame_input(joined) if language.as_values else with_categorical_dtypes(model.estimator, joined)


def with_categorical_dtypes(estimator, X):
    """``X`` with the columns a ``categorical_features="from_dtype"`` estimator read as categorical made categoricals.

    A HistGradientBoosting model fitted with ``categorical_features="from_dtype"`` reads a column as categorical only
    when its dtype is a pandas categorical (its ``is_categorical_``); it predicts on the same column as text (its
    encoder maps values, not dtypes), but a copy fitted on text fails ("could not convert string to float"). Those
    columns of a training frame that are not categoricals already become categoricals of the values they hold, so
    the copy reads them as the model did; any other estimator or input is returned as it is.

    Parameters
    ----------
    estimator : object
        The model's estimator (a Pipeline is returned as it is: its own steps encode).
    X : pandas.DataFrame or numpy.ndarray

    Returns
    -------
    pandas.DataFrame or numpy.ndarray
    """
    import pandas as pd

    mask = getattr(estimator, "is_categorical_", None)
    names = getattr(estimator, "feature_names_in_", None)
    if (getattr(estimator, "categorical_features", None) != "from_dtype" or mask is None or names is None
            or not isinstance(X, pd.DataFrame)):
        return X
    columns = [str(c) for c, categorical in zip(names, mask, strict=True) if categorical]
    text = [c for c in columns if c in X.columns and not isinstance(X[c].dtype, pd.CategoricalDtype)]
    return X.astype(dict.fromkeys(text, "category")) if text else X


def refit_copy(model: CountingModel, dataset, rows, seed: int, name: str, added=None) -> CountingModel:
    """A copy of the model's sklearn estimator fitted on dataset rows (and added rows), in its own language.

    Parameters
    ----------
    model : CountingModel
        An sklearn estimator or pipeline under test.
    dataset : Dataset
    rows : numpy.ndarray of int
        The dataset rows fitted on (fed as the user gave them, see :func:`training_input`).
    seed : int
        The ``random_state`` of every ``random_state`` left at None.
    name : str
    added : (numpy.ndarray of int64, shape (m, n_features), numpy.ndarray of {0, 1}, shape (m,)), optional
        Labelled rows in codes that are nobody's row (``paper``'s IDI pairs), decoded whole.

    Returns
    -------
    CountingModel
    """
    rows = np.asarray(rows, dtype=np.int64)
    X, y, origin = dataset.X[rows], dataset.y[rows], rows
    if added is not None and len(added[0]):
        X = np.vstack([X, np.asarray(added[0], dtype=np.int64)])
        y = np.concatenate([y, np.asarray(added[1])])
        origin = np.concatenate([rows, np.full(len(added[0]), -1, dtype=np.int64)])
    fitted = fit_plain(unfitted_copy(model.estimator, seed), training_input(model, dataset, X, origin),
                       model.language.model_labels(y))
    return like_the_model(fitted, model, name)


def counterfactual_in_its_own_language(model: CountingModel, dataset, train, added, params: dict, seed: int):
    """Counterfactual augmentation's rows and weights, fitted by a copy of the user's estimator.

    The rows are :class:`~chiralfair.mitigation.counterfactual.CounterfactualAugmentation`'s (its function
    :func:`~chiralfair.mitigation.counterfactual.augmented_training_rows`), in the model's input and labels.

    Parameters
    ----------
    model : CountingModel
    dataset : Dataset
    train : numpy.ndarray of int64
        The training rows.
    added : (numpy.ndarray, numpy.ndarray) or None
        Labelled IDI rows (``with_idis``).
    params : dict
        ``with_idis``, ``reweigh``.
    seed : int

    Returns
    -------
    retrained : CountingModel
    info : dict

    Raises
    ------
    ConfigError
        For another parameter, or ``with_idis`` without IDI pairs.
    """
    from .counterfactual import augmented_training_rows
    from .reweighing import reweighed

    unknown = set(params) - {"with_idis", "reweigh"}
    if unknown:
        raise ConfigError(f"counterfactual: unknown parameters {sorted(unknown)} for a model refitted in its own "
                          "language (with_idis, reweigh)")
    if params.get("with_idis") and added is None:
        raise ConfigError("counterfactual with_idis=True needs labelled IDI pairs")
    domain, language = dataset.domain, model.language
    train = np.asarray(train, dtype=np.int64)
    X, y = dataset.X[train], dataset.y[train]
    weight = reweighed(domain, X, y, params.get("reweigh", 0.0))
    rows, labels, weights, n_added, origin = augmented_training_rows(
        X, y, domain, weight, added=added if params.get("with_idis") else None)
    origin = np.where(origin >= 0, train[np.maximum(origin, 0)], -1)
    fitted = fit_with_weights(unfitted_copy(model.estimator, seed), training_input(model, dataset, rows, origin),
                              language.model_labels(labels), weights)
    info = {"n_rows_augmented": int(len(rows)), "n_combinations": int(len(domain.combinations)),
            "n_rows_added": n_added, "start": "scratch", "how": "CounterfactualAugmentation",
            "reweigh": float(params.get("reweigh", 0.0)),
            "language": "refitted in the model's own input and labels (saved as your kind of model)"}
    return like_the_model(fitted, model, f"counterfactual-{model.name}"), info


def unaware_in_its_own_language(model: CountingModel, dataset, train, params: dict, seed: int):
    """Unawareness in the user's language: a copy of the user's estimator fitted on the blinded training rows.

    As :class:`~chiralfair.mitigation.unaware.Unawareness`, with the blinding saved in the model's own raw values.

    Parameters
    ----------
    model : CountingModel
    dataset : Dataset
    train : numpy.ndarray of int64
    params : dict
        ``reweigh``.
    seed : int

    Returns
    -------
    retrained : CountingModel
        Its estimator is a scikit-learn Pipeline (:func:`~chiralfair.mitigation.blinding.blinded_pipeline`): a
        :class:`~chiralfair.mitigation.blinding.Blinder` that blinds the protected and coupled columns in the
        model's own input (your raw values), then your estimator refitted on blinded rows.
    info : dict

    Raises
    ------
    ConfigError
        For another parameter, or a coupling a raw frame cannot be blinded by (:func:`.blinding.frame_blinding`).
    """
    from .blinding import blind, blinded_pipeline, codes_blinding, frame_blinding
    from .reweighing import reweighed

    unknown = set(params) - {"reweigh"}
    if unknown:
        raise ConfigError(f"unaware: unknown parameters {sorted(unknown)} for a model refitted in its own language "
                          "(reweigh)")
    domain, language = dataset.domain, model.language
    if language.as_values:
        raise ModelCapabilityError(
            f"method 'unaware' cannot refit model {model.name!r}, which is fed the data's values "
            "(model_input='values'): the blinding it saves with the model is kept by column name (a frame) or by "
            "code, neither of which such a model takes; use method 'counterfactual' or 'paper'")
    train = np.asarray(train, dtype=np.int64)
    X, y = dataset.X[train], dataset.y[train]
    codes = codes_blinding(domain)
    weight = reweighed(domain, X, y, params.get("reweigh", 0.0))
    inputs, labels = training_input(model, dataset, blind(X, codes), train), language.model_labels(y)
    copy = unfitted_copy(model.estimator, seed)
    fitted = fit_plain(copy, inputs, labels) if weight is None else fit_with_weights(copy, inputs, labels, weight)
    blinding: dict[str, Any] = (frame_blinding(domain, language.to_frame, language.feature_names)
                                if language.takes_frame else codes)
    info = {"n_columns_blinded": int(len(domain.protected) + len(domain.coupled_columns)), "how": "Unawareness",
            "reweigh": float(params.get("reweigh", 0.0)),
            "language": "refitted in the model's own input and labels, the blinding saved with it"}
    return like_the_model(blinded_pipeline(fitted, blinding), model, f"unaware-{model.name}"), info
