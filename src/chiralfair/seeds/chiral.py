"""The chiral model of I&D (Ma et al.).

The chiral model is the model under test retrained, with the same architecture and hyper-parameters, on data
whose protected attributes were mutated.

Where the chiral model and the model under test disagree, the decision depends on the protected attributes,
so those inputs are likely IDIs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from .._random import derive_seed
from ..datasets.base import Dataset
from ..datasets.population import population_of
from ..domain import Domain
from ..exceptions import DatasetError, ModelCapabilityError
from ..models.adapters import as_model
from ..models.language import with_categorical_dtypes
from ..models.protocol import CountingModel
from ..models.threads import single_native_thread

# chiral_trainer(X, y, random_state): X int codes (n, d), y labels in {0, 1} (1 = positive), random_state an int.
ChiralTrainer = Callable[[np.ndarray, np.ndarray, int], object]


def mutate_protected(X, domain: Domain, rng: np.random.Generator) -> np.ndarray:
    """Replace every protected attribute of every row with a different value of that attribute's domain.

    A binary protected attribute is flipped; otherwise the new value is drawn uniformly among the other values
    of the domain. A group of columns (one-hot) moves to another of its valid rows, all its columns at once. A
    value outside the domain (a missing protected value, or a group row that is none of the valid ones) becomes
    any domain value. Each mutated row is a counterpart of its row (:meth:`Domain.counterpart_rows
    <chiralfair.domain.Domain.counterpart_rows>`), so coupled columns change with their attribute: the chiral
    model of census with sex coupled to relationship learns from married women who are wives, not husbands.

    Parameters
    ----------
    X : array-like of int, shape (n_samples, n_features)
    domain : Domain
        Names the protected attributes and their value sets.
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray of int64, shape (n_samples, n_features)
        A copy of ``X`` in which each protected attribute differs from ``X`` in every row.

    Notes
    -----
    The reference code (``generate_random``) picks a side (below/above the current value) by a coin flip and
    then a value within that side, which is not uniform over the other values; this draws uniformly.

    References
    ----------
    .. [1] Ma et al. "Enhanced Fairness Testing via Generating Effective Initial Individual Discriminatory
       Instances." arXiv:2209.08321, §3.1.
    """
    X = np.asarray(X, dtype=np.int64)
    position = domain.protected_value_index(X)
    combination = np.zeros(len(X), dtype=np.int64)
    for j, attribute in enumerate(domain.attributes):
        k = attribute.size
        pos = position[:, j]
        inside = pos >= 0
        # Draw among the k-1 other positions by skipping the current one; outside values draw among all k.
        r = rng.integers(0, np.where(inside, k - 1, k))
        new_pos = np.where(inside & (r >= pos), r + 1, r)
        combination = combination * k + new_pos  # the last attribute varies fastest, as in Domain.combinations
    return domain.counterpart_rows(X, combination)


def train_chiral_model(model: CountingModel, dataset: Dataset, rng: np.random.Generator, *,
                       chiral_trainer: ChiralTrainer | None = None,
                       split_random_state: int | None = None, cache_dir=None,
                       reference: bool = True) -> tuple[CountingModel, dict]:
    """Train the chiral model of ``model`` on the training split of ``dataset``, protected attributes mutated.

    The way to train "the same model" is chosen in this order:

    1. ``chiral_trainer(X, y, random_state)`` if given (any model :func:`~chiralfair.models.as_model` accepts;
       it learns labels {0, 1} from the codes, and is wrapped so, keeping ``output="logit"`` and ``to_frame``);
    2. ``model.spec.fit(X, y, random_state=...)`` if the model carries a model spec (the project's model zoo);
       through ``chiralfair.models.training.train_model`` when that is available (its disk cache, and the
       chiral networks shipped with the package when the recipe matches one: ``reference``);
    3. ``sklearn.base.clone(model.estimator).fit(X, y)`` for sklearn estimators and pipelines (a
       ``random_state`` left at None is set from ``rng``, so the chiral model is reproducible), fitted in the
       model's own language: for a model that takes a DataFrame, the training rows as given (``Dataset.raw``)
       with their protected and coupled values mutated (``to_frame(X)`` for a dataset without raw rows), and
       labels mapped from {0, 1} back to the model's classes (1 -> its positive class); on one native thread.

    Parameters
    ----------
    model : CountingModel
        The model under test.
    dataset : Dataset
        Its protected attributes are the ones mutated.
    rng : numpy.random.Generator
        Drives the mutation, the split (unless ``split_random_state`` is given) and the training seed.
    chiral_trainer : callable, optional
        ``chiral_trainer(X, y, random_state) -> model`` training the model's architecture on the given data:
        ``X`` int codes, shape (n_train, n_features), protected attributes mutated; ``y`` labels in {0, 1}
        (1 = the positive class), shape (n_train,); ``random_state`` an int, so that e.g.
        ``lambda X, y, rs: GradientBoostingClassifier(random_state=rs).fit(X, y)`` works.
    split_random_state : int, optional
        ``random_state`` of :meth:`Dataset.split`; the chiral model is trained on the 60% training split
        (paper §4.2). Defaults to a seed drawn from ``rng``.
    cache_dir : str or os.PathLike, optional
        Model cache folder for way 2 (see :func:`~chiralfair.models.training.resolve_cache_dir` for the
        default); pass the one the model under test was trained with, so both models are cached together.
    reference : bool, default=True
        Way 2: load the chiral network shipped with the package when the recipe matches one
        (:mod:`chiralfair.models.reference`); False trains it on this machine.

    Returns
    -------
    chiral : CountingModel
    info : dict
        ``how`` (``"chiral_trainer"``, ``"spec"``, ``"spec+cache"``, ``"sklearn-clone"``),
        ``split_random_state``, ``train_random_state``, ``n_train`` (rows), ``from_cache`` (loaded from the
        model cache instead of trained), ``cache`` (``"disk"`` or None) and, for way 2, ``network`` (which network:
        ``"reference network census-chiral-sex-dnn v1, sha256 ..."`` or ``"trained on this machine"``).

    Raises
    ------
    ModelCapabilityError
        If none of the ways applies; the message says how to provide a chiral model.
    DatasetError
        If the training split holds one label only (nothing to train on).

    References
    ----------
    .. [1] Ma et al. arXiv:2209.08321, §3.1 and §4.2.
    """
    split_seed = derive_seed(rng) if split_random_state is None else int(split_random_state)
    train_seed = derive_seed(rng)
    train_index, _ = dataset.split(split_seed)
    X_chiral = mutate_protected(dataset.X[train_index], dataset.domain, rng)
    y = dataset.y[train_index]
    if len(np.unique(y)) < 2:
        raise DatasetError(
            f"cannot train a chiral model on dataset {dataset.name!r}: its training split ({len(y)} of "
            f"{dataset.n_samples} rows) holds only label {int(y[0]) if len(y) else '-'}; I and I&D seeds need "
            "data with both labels (use more rows, or seeds='cluster' / 'random')")
    info = {"split_random_state": split_seed, "train_random_state": train_seed,
            "n_train": int(len(train_index)), "from_cache": False, "cache": None}
    if chiral_trainer is not None:
        trained = chiral_trainer(X_chiral, y, train_seed)
        return _wrap_trained(trained, model), {**info, "how": "chiral_trainer"}
    spec = getattr(model, "spec", None)
    if spec is not None and hasattr(spec, "fit"):
        return _fit_spec(model, spec, dataset, X_chiral, train_index, train_seed, info, cache_dir, reference)
    est = model.estimator
    if est is not None and _is_sklearn_estimator(est):
        language = model.language
        # a clone's encoder must know every category the user's model accepts: the rows for the rare ones added
        extra = missing_category_rows(dataset, train_index)
        if len(extra):
            train_index = np.concatenate([train_index, extra])
            X_chiral = np.vstack([X_chiral, mutate_protected(dataset.X[extra], dataset.domain, rng)])
            y = dataset.y[train_index]
            info["n_train"], info["n_added_for_categories"] = int(len(train_index)), int(len(extra))
        people = population_of(dataset, train_index) if model.reads_people else None
        # fed frames: the people as given with their protected (and coupled) values mutated, not bin representatives
        rows = language.model_input(X_chiral) if people is None else language.frame_input(people.counterparts(X_chiral))
        if not language.as_values:  # the columns the model read as categorical by their dtype, categoricals again
            rows = with_categorical_dtypes(est, rows)
        try:
            with single_native_thread():  # OpenMP pools spin on busy cores (models/threads.py)
                fitted = _seeded_clone(est, train_seed).fit(rows, language.model_labels(y))
        except Exception as error:  # the user's estimator's own failure, quoted; the seeds that need no copy named
            raise ModelCapabilityError(
                f"cannot train a chiral model for {model.name!r} (seed strategies 'i' and 'iandd'): a copy of "
                f"{type(est).__name__} with the same hyper-parameters failed to fit on the {len(y):,} training rows "
                f"with their protected values mutated: {type(error).__name__}: {error}. Use seeds='cluster' "
                "(command line: --seeds cluster), or pass chiral_model=<a model trained like it on data with "
                "mutated protected attributes> to the seed strategy") from error
        return wrap_like(fitted, model), {**info, "how": "sklearn-clone"}
    raise ModelCapabilityError(
        f"cannot train a chiral model for {model.name!r}: it has no model spec and is not an sklearn "
        "estimator. "
        "Pass chiral_model=<a model trained like it on data with mutated protected attributes "
        "(chiralfair.seeds.chiral.mutate_protected)> or chiral_trainer=<callable(X, y, random_state) -> model> "
        "to the seed strategy.")


def missing_category_rows(dataset: Dataset, train_index: np.ndarray) -> np.ndarray:
    """One row for each categorical value of the data that the training split lacks.

    The chiral model is later asked about every data row: a clone of a pipeline whose encoder refuses unknown
    categories (``OneHotEncoder(handle_unknown="error")``) would refuse a rare value that only the other split
    holds, although the user's model, fitted on all its rows, accepts it. One row per missing value (the first
    that holds it), added to the split, is enough for the encoder to know it; none when the split holds every
    value (the chiral model is then the one trained on the split alone).

    Parameters
    ----------
    dataset : Dataset
    train_index : numpy.ndarray of int
        The chiral model's training split.

    Returns
    -------
    numpy.ndarray of int64
        Row indices in column then value order (reproducible); empty when none is missing.
    """
    extra = []
    domain = dataset.domain
    for j, feature in enumerate(domain.features):
        if feature.kind != "categorical" or j in domain.protected:  # protected values are mutated over all values
            continue
        column = dataset.X[:, j]
        missing = np.setdiff1d(np.unique(column), column[train_index])
        extra += [int(np.flatnonzero(column == value)[0]) for value in missing]
    return np.asarray(extra, dtype=np.int64)


def wrap_like(chiral, model: CountingModel) -> CountingModel:
    """Wrap a chiral model that speaks the language of ``model`` (same classes, positive class, input frame).

    Parameters
    ----------
    chiral : object
        Anything :func:`~chiralfair.models.as_model` accepts; a CountingModel is returned as is.
    model : CountingModel
        The model under test, whose declarations are reused (``classes`` only for a model without
        ``classes_``; ``output`` unless it is ``"label"``, which the chiral model's kind decides).

    Returns
    -------
    CountingModel
    """
    if isinstance(chiral, CountingModel):
        return chiral
    language = model.language
    return as_model(chiral, name=f"chiral-{model.name}", batch_size=model.batch_size,
                    output="auto" if language.output == "label" else language.output,
                    positive_class=language.positive_class, to_frame=language.to_frame, as_values=language.as_values,
                    classes=None if hasattr(chiral, "classes_") else language.classes)


def _wrap_trained(trained, model: CountingModel) -> CountingModel:
    """Wrap what ``chiral_trainer`` returned: it learnt labels {0, 1} (1 = positive) from the integer codes.

    It keeps the model's ``output="logit"`` declaration, and its ``to_frame`` if it was fitted on a frame.
    """
    if isinstance(trained, CountingModel):
        return trained
    language = model.language
    to_frame = language.to_frame if getattr(trained, "feature_names_in_", None) is not None else None
    return as_model(trained, name=f"chiral-{model.name}", batch_size=model.batch_size, to_frame=to_frame,
                    output="logit" if language.output == "logit" else "auto")


def _fit_spec(model, spec, dataset, X_chiral, train_index, train_seed, info, cache_dir, reference):
    train_model: Callable[..., Any] | None
    try:
        from ..models.training import train_model
    except ImportError:
        train_model = None
    if train_model is None:
        fitted = spec.fit(X_chiral, dataset.y[train_index], random_state=train_seed)
        return as_model(fitted, name=f"chiral-{model.name}"), {**info, "how": "spec"}
    # Only the training rows are mutated and used; the cache key covers them, and the name marks the entry.
    X_full = dataset.X.copy()
    X_full[train_index] = X_chiral
    chiral_data = replace(dataset, X=X_full, raw=None, name=f"{dataset.name}-chiral")  # not the people: mutated
    trained = train_model(chiral_data, spec, random_state=train_seed, train_index=train_index,
                          cache_dir=cache_dir, reference=reference)
    chiral = as_model(getattr(trained, "model", trained), name=f"chiral-{model.name}")
    from_cache = bool(getattr(trained, "from_cache", False))
    return chiral, {**info, "how": "spec+cache", "from_cache": from_cache, "cache": "disk" if from_cache else None,
                    "network": getattr(trained, "network", None),
                    "recipe_digest": getattr(trained, "recipe_digest", None)}


def _seeded_clone(est, seed: int):
    """Return an unfitted copy with the same hyper-parameters.

    A ``random_state`` left at None gets ``seed``, so the chiral model is reproducible; a set one is kept.
    """
    from sklearn.base import clone
    copy = clone(est)
    unset = {k: seed for k, v in copy.get_params(deep=True).items()
             if (k == "random_state" or k.endswith("__random_state")) and v is None}
    return copy.set_params(**unset) if unset else copy


def _is_sklearn_estimator(obj) -> bool:
    from sklearn.base import BaseEstimator
    return isinstance(obj, BaseEstimator)
