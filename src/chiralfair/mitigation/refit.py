"""Refitting a copy of your estimator in its own language: its input (codes or your raw frame) and its labels.

A mitigation method on chiralfair's integer codes and labels {0, 1} can stand in for a model that speaks them (the
zoo models, an estimator fitted on the codes). A model that takes your raw DataFrame, or labels such as ``">50K"``,
is refitted here instead: the method's training rows are built in codes, then fed as your own rows with only the
columns a method changes decoded (:func:`training_input`; an IDI, nobody's row, decoded whole) and a
copy of your estimator (same hyper-parameters, :func:`~chiralfair.mitigation.base.unfitted_copy`) is fitted on
them, so the model saved is your kind of model and ``--model`` loads it back.

Each method builds those rows and fits the copy in its own module (``counterfactual_in_its_own_language`` in
:mod:`.counterfactual`, ``unaware_in_its_own_language`` in :mod:`.unaware`), with :func:`training_input` and
:func:`like_the_model` from here; :func:`refit_copy` fits the model itself on other rows (``paper``'s added IDI
pairs, the training-seed spread and ``auto``'s reference).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..models.adapters import as_model
from ..models.language import with_categorical_dtypes
from ..models.protocol import CountingModel
from .fitting import fit_plain, unfitted_copy


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
