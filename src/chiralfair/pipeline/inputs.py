"""The model under test on its data, resolved once: from names (a benchmark and a zoo model) or from objects/files.

Both resolvers return a :class:`RunInputs`: the encoded dataset (protected attributes set), the wrapped model,
the rows it was trained on and the **held-out rows** every F1 and every verdict is measured on, the favourable
label, the model's quality on the held-out rows, and a record of where everything came from (``source``, written
to ``result.json["meta"]["source"]`` so that ``chiralfair retrain --from-run`` can rebuild the inputs).

- :func:`inputs_from_names`: a benchmark dataset built from its raw files and a zoo model trained (or loaded from
  the cache) on the paper's 60/40 stratified split; the held-out rows are its 40% test split.
- :func:`inputs_from_objects`: your data (a DataFrame, a ``.csv``/``.parquet`` file, or an encoded
  :class:`~chiralfair.datasets.Dataset`) and your fitted model (an estimator, pipeline, torch module, callable
  or a model file). The held-out rows are ``test=`` (a frame or file of rows the model never saw, encoded
  together with the data so both share one domain), or else a stratified ``test_size`` split of the data with
  ``random_state`` — and then the output says plainly that those rows may include rows the model was fitted on,
  because chiralfair cannot know which rows those were.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..exceptions import ConfigError, DatasetError
from .checks import held_out_share
from .spec import DataSpec

logger = logging.getLogger(__name__)



@dataclass(frozen=True, eq=False)  # holds arrays and a model: compared by identity
class RunInputs:
    """The model under test on its data, with the rows each figure is measured on.

    Attributes
    ----------
    dataset : Dataset
        Encoded data, protected attributes set (their domains restricted to the values the model accepts).
    model : CountingModel
        The model under test, speaking codes in and {0, 1} positive-class labels out.
    model_name : str
    train_index, test_index : numpy.ndarray of int64
        Rows of ``dataset``: those the model was (or is taken to be) trained on, and the held-out rows that F1
        and the verdict are measured on.
    test_rows : str
        What the held-out rows are, in words (printed beside every F1 and verdict).
    favourable : int or None
        The favourable label (0 or 1); None when it is not known (the verdict is then not computed).
    quality : dict
        ``f1`` and ``accuracy`` on the held-out rows, ``evaluated_on`` (= ``test_rows``), ``train_seconds`` and
        ``from_cache`` (zoo models).
    source : dict
        Where the data and the model came from (``kind`` ``"benchmark"``, ``"files"`` or ``"objects"``, with
        names, paths and SHA-256 digests); recorded in ``result.json``.
    notes : tuple of str
        What a reader must know: refused protected values, a model not taking a protected attribute, a raw file
        that is not the published one, held-out rows that may include training rows.
    seconds : dict of str to float
        Wall seconds of the ``data`` and ``model`` steps.
    trained : TrainedModel or None
        For a zoo model: its training record (cache path, split, random state).
    random_state : int
        The resolved random state of the split and the model (the zoo model's training seed).
    favourable_note : str or None
        Where :attr:`favourable` comes from, when it is not a benchmark's (given, or the positive class by default).
    left_out : tuple of dict
        The protected values the model refuses, left out with their rows (:func:`~.steps.left_out_values`).
    spec : DataSpec or None
        The description of the data and the model's language the inputs were made from (None for a benchmark
        by name).
    probe_rows : int
        Rows sent to the model while it was checked before the search (its accepted values, its F1 on the
        held-out rows, the bins' agreement): outside the query budget, and said beside it. 0 for a zoo model.
    reference : bool
        Whether a zoo model's chiral model may be the network shipped with the package when its recipe matches
        (:class:`~.config.RunConfig` ``reference``); False trains it on this machine.
    row_names : pandas.Index or None
        Each row of ``dataset`` as the user named it, in order: the index of the frames given (a file's rows
        numbered from 0 below its header), its outer level the source when data and test rows were stacked
        (:func:`~chiralfair.datasets.frame.stacked_frames`). None for a benchmark or a ``Dataset`` given.
    """

    dataset: Any
    model: Any
    model_name: str
    train_index: np.ndarray
    test_index: np.ndarray
    test_rows: str
    favourable: int | None
    quality: dict[str, Any]
    source: dict[str, Any]
    notes: tuple[str, ...] = ()
    seconds: dict[str, float] = field(default_factory=dict)
    trained: Any = None
    random_state: int = 0
    favourable_note: str | None = None
    left_out: tuple[dict[str, Any], ...] = ()
    spec: DataSpec | None = None
    probe_rows: int = 0
    reference: bool = True
    row_names: Any = None

    @property
    def domain(self):
        """The dataset's :class:`~chiralfair.domain.Domain`."""
        return self.dataset.domain

    def training_rows(self):
        """The dataset restricted to :attr:`train_index` (same domain): the rows seeds for retraining come from.

        Its name gains ``"[train]"`` (:func:`chiralfair.mitigation.leakage.training_rows`), so a chiral model
        trained on it gets its own cache entry.

        Returns
        -------
        Dataset
        """
        from ..mitigation.leakage import training_rows

        return training_rows(self.dataset, self.train_index)


# ------------------------------------------------------------------------------------------------- from names
def inputs_from_names(config, *, step: Callable[[str], None] = lambda name: None) -> RunInputs:
    """Load a benchmark dataset and train (or load) a zoo model on its 60/40 split.

    Parameters
    ----------
    config : RunConfig
        ``dataset``, ``protected``, ``model``, ``model_params``, ``resolved_model_random_state``, ``data_home``,
        ``cache_dir``, ``allow_checksum_mismatch``, ``reference`` are used.
    step : callable
        Called with ``"data"`` and ``"model"`` as each step starts.

    Returns
    -------
    RunInputs

    Raises
    ------
    DatasetError, DataHomeError, ChecksumError, DomainError
        From loading the data.
    MissingDependencyError
        For the DNN without torch.
    """
    from ..datasets import load_dataset
    from ..models.training import train_model
    from ..verdict import FAVOURABLE

    seconds = {}
    step("data")
    t = time.perf_counter()
    dataset = load_dataset(config.dataset, protected=list(config.protected) or None, data_home=config.data_home,
                           allow_checksum_mismatch=config.allow_checksum_mismatch, couple=config.dataset_couple,
                           constraints=list(config.constraints) or None)
    seconds["data"] = time.perf_counter() - t
    notes = _benchmark_notes(config, dataset)

    step("model")
    t = time.perf_counter()
    state = config.resolved_model_random_state
    trained = train_model(dataset, config.model_spec, random_state=state, cache_dir=config.cache_dir,
                          reference=config.reference)
    seconds["model"] = time.perf_counter() - t
    logger.info("model %s: test F1 %.3f (%s)", config.model, trained.f1,
                trained.network if trained.reference is not None or trained.from_cache
                else f"trained in {trained.train_seconds:.1f} s")
    test_rows = (f"the test split of {dataset.name} ({len(trained.test_index):,} rows, 40%, stratified, "
                 f"random_state {state}), never used to train the model")
    known = FAVOURABLE.get((dataset.name, dataset.positive_class))
    quality = {"name": config.model, "f1": trained.f1, "accuracy": trained.accuracy, "evaluated_on": test_rows,
               "n_test": int(len(trained.test_index)), "train_seconds": trained.train_seconds,
               "from_cache": trained.from_cache, "network": trained.network,
               "reference": None if trained.reference is None else trained.reference.to_dict()}
    source = {"kind": "benchmark", "dataset": config.dataset, "protected": list(dataset.domain.protected_names),
              "model": config.model, "model_params": dict(config.model_params), "model_random_state": state,
              "raw_files": {rel: _sha256(path) for rel, path in dataset.sources.items()},
              "reference": config.reference}
    return RunInputs(dataset=dataset, model=trained.model, model_name=config.model, train_index=trained.train_index,
                     test_index=trained.test_index, test_rows=test_rows,
                     favourable=None if known is None else known[0], quality=quality, source=source,
                     notes=tuple(notes), seconds=seconds, trained=trained, random_state=state,
                     reference=config.reference)


def _benchmark_notes(config, dataset) -> list[str]:
    """Notes a reader of the results must see: a raw file that is not the published one, an unusual PA."""
    from ..datasets import dataset_spec
    from ..datasets.home import checksum_mismatch, raw_file

    notes = []
    spec = dataset_spec(config.dataset)
    for rel, path in dataset.sources.items():
        actual = checksum_mismatch(path, raw_file(rel))
        if actual is not None:
            notes.append(f"raw file {path} is not the published {rel} (SHA-256 {actual}); results are not "
                         "comparable with the benchmark")
    others = [p for p in dataset.domain.protected_names if p not in spec.protected]
    if others:
        notes.append(f"{', '.join(others)} tested as protected attribute(s); {spec.name}'s protected attributes "
                     f"are {', '.join(spec.protected)}")
    if config.dataset_couple is None:
        for text in dataset.domain.describe_couplings():
            if "inactive" not in text:
                notes.append(f"coupled ({spec.name}'s default): {text}; couple=False (--couple none) "
                             "turns it off, as in the I&D paper")
    return notes


# ----------------------------------------------------------------------------------------------- from objects
def inputs_from_objects(model, data, *, settings: DataSpec | None = None, test=None,
                        test_size: float | None = None, random_state: int = 0, trust_model_file: bool = False,
                        name: str | None = None, step: Callable[[str], None] = lambda name: None) -> RunInputs:
    """Encode your data, load and wrap your model, check that it takes the data, and set the held-out rows.

    Parameters
    ----------
    model : estimator, pipeline, torch module, callable, CountingModel, or path
        A fitted model, or a model file (``.skops``, TorchScript, ``.onnx``, or joblib/pickle with
        ``trust_model_file``; see :mod:`chiralfair.models.files`).
    data : pandas.DataFrame, path, or Dataset
        A raw frame (or ``.csv``/``.parquet`` file) holding the features and the label column, or an encoded
        Dataset.
    settings : DataSpec
        Label, positive/favourable class, protected attributes, bins and the model's language (``model_input``,
        ``model_output``); a Dataset takes only ``protected``, ``favourable`` (the label 0 or 1) and the model's
        language.
    test : pandas.DataFrame, path, or array-like of int, optional
        Held-out rows the model was not fitted on: a frame or file with the same columns as ``data`` (encoded with
        it), or, with a Dataset, row numbers of it. Default: a stratified ``test_size`` split of ``data``.
    test_size : float, optional
        Share of ``data`` held out when ``test`` is not given, in (0, 1); default 0.4. Refused beside ``test``.
    random_state : int
        Seeds that split.
    trust_model_file, name
        As in :func:`chiralfair.audit`.
    step : callable
        Called with ``"data"`` and ``"model"`` as each step starts.

    Returns
    -------
    RunInputs

    Raises
    ------
    ConfigError, DatasetError, DomainError, ModelFileError, ModelCapabilityError
        Naming the column, value, file or parameter at fault.
    """
    from ..datasets import Dataset

    settings = settings or DataSpec()
    test_size = held_out_share(test, test_size)
    _refuse_before_reading(model, data, settings, trust_model_file)
    seconds = {}
    step("data")
    t = time.perf_counter()
    if isinstance(data, Dataset):
        dataset, train_index, test_index, test_rows, data_source = _dataset_rows(data, settings, test, test_size,
                                                                                  random_state)
        row_names = None
    else:
        dataset, train_index, test_index, test_rows, data_source, row_names = _frame_rows(
            data, settings, test, test_size, random_state, name)
    seconds["data"] = time.perf_counter() - t
    _refuse_degenerate(dataset)

    step("model")
    t = time.perf_counter()
    counting, model_name, model_source = _load_model(model, dataset, trust_model_file, settings.model_output,
                                                     settings.model_input)
    rows_before = counting.n_rows  # a wrapped model given may have answered calls before this run
    from .steps import left_out_values

    probed = dataset
    counting, dataset, keep, probe_notes = _check_model(counting, dataset, row_names)
    left_out = () if keep is None else left_out_values(probed, dataset, test_index)
    train_index, test_index = _kept_rows(keep, train_index, test_index)
    if row_names is not None and keep is not None:  # the rows left out leave their names too
        row_names = row_names[keep]
    if len(test_index) == 0:
        raise DatasetError("no held-out row is left once the rows holding protected values the model refuses are "
                           "left out; give more test rows")
    unseen: list[str] = []
    if test is not None and not isinstance(data, Dataset):  # the values the model takes but the data never held
        from ..datasets.unseen_values import held_out_only_values

        dataset, unseen = held_out_only_values(dataset, train_index, test_index)
    quality = _quality(counting, dataset, test_index, test_rows)
    seconds["model"] = time.perf_counter() - t
    notes = [*unseen, *probe_notes]
    agreement = _binning_agreement(counting, dataset)
    if agreement is not None:
        quality["binning"] = agreement
        notes.append(_binning_note(agreement))
    one_class = _one_class_note(quality)
    if one_class:
        logger.warning(one_class)
        notes.append(one_class)
    worse_than_a_coin = _inverted_labels_note(quality, dataset.positive_class)
    if worse_than_a_coin:
        logger.warning(worse_than_a_coin)
        notes.append(worse_than_a_coin)
    if "may include" in test_rows:
        notes.append(f"F1 and the verdict are measured on {test_rows}; pass test= (CLI: --test FILE) with rows the "
                     "model never saw")
    favourable, favourable_note = _favourable(dataset, settings)
    source = {**data_source, **model_source, "test_size": None if test is not None else test_size,
              "random_state": random_state}
    return RunInputs(dataset=dataset, model=counting, model_name=model_name, train_index=train_index,
                     test_index=test_index, test_rows=test_rows, favourable=favourable, quality=quality,
                     source=source, notes=tuple(notes), seconds=seconds, random_state=random_state,
                     favourable_note=favourable_note, left_out=left_out, spec=settings,
                     probe_rows=int(counting.n_rows - rows_before), row_names=row_names)


def _refuse_before_reading(model, data, settings: DataSpec, trust: bool) -> None:
    """Every problem found without the data's rows, at once: missing settings, the model file, unknown columns.

    The model file's checks (it exists, its kind, a pickle or skops types that need trust) and the settings' run
    before the data is read; when one fails, the names the settings give are also checked against the data file's
    header (a cheap read), so that one message lists them all.

    Raises
    ------
    ChiralfairError or Refusals
    """
    from ..datasets import Dataset
    from ..exceptions import Problems

    problems = Problems()
    if not isinstance(data, Dataset):
        with problems.check():
            settings.check()
    with problems.check():
        if model is None:
            raise ConfigError("model= is needed: the fitted model to test (command line: --model FILE, a .skops, "
                              "TorchScript, .onnx, or .joblib/.pkl file with --trust-model-file)")
        if isinstance(model, str | os.PathLike):
            from ..models.files import check_model_file

            check_model_file(model, trust=trust)
    if problems and isinstance(data, str | os.PathLike):
        with problems.check():
            _check_header(data, settings)
    problems.raise_all()


def _check_header(path, settings: DataSpec) -> None:
    """Refuse the names the settings give that the data file's columns do not hold (read from its header)."""
    from ..datasets.frame import read_frame_header
    from ..exceptions import Problems

    columns = [str(c) for c in read_frame_header(path)]
    problems = Problems()
    named = [("label column", [settings.label] if settings.label is not None else []),
             ("protected attribute", [str(p) for p in settings.protected if isinstance(p, str)]),
             ("bins column", list(settings.bins))]
    for what, names in named:
        unknown = [n for n in names if str(n) not in columns]
        if unknown:
            with problems.check():
                are = "is" if len(unknown) == 1 else "are"
                raise DatasetError(f"{what}{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} {are} "
                                   f"not in the data; columns: {', '.join(columns)}")
    if settings.label is not None and str(settings.label) in columns:
        from ..datasets.frame import match_label_value, read_frame_column

        labels = read_frame_column(path, str(settings.label))
        for what, value in (("positive_class", settings.positive_class), ("favourable", settings.favourable)):
            if value is not None:
                with problems.check():
                    match_label_value(labels, str(settings.label), value, what=what)
    problems.raise_all()


def _frame_rows(data, settings: DataSpec, test, test_size, random_state, name):
    """Encode a frame (and its test frame, jointly); the rows of each, and the index naming each row.

    The index names each row in its own file or frame (:func:`~chiralfair.datasets.frame.row_text`).
    """
    from ..datasets.frame import (
        binary_positive_class,
        from_frame,
        match_label_value,
        read_frame,
        refuse_no_rows,
        stacked_frames,
    )
    from ..datasets.native import as_pandas

    source: dict[str, Any] = {"kind": "objects"}
    if isinstance(data, str | os.PathLike):
        path = Path(data)
        frame = read_frame(path)
        source = {"kind": "files", "data": str(path.resolve()), "data_sha256": _sha256(path)}
        name = name or path.stem
    else:
        # an empty frame said as such, before its label column is searched for a positive class it cannot hold
        frame = refuse_no_rows(as_pandas(data, what="data"), what=DATA_FRAME)
    settings.check()
    label = settings.label
    if label not in frame.columns:
        raise DatasetError(f"label column {label!r} is not in the data; columns: {', '.join(map(str, frame.columns))}")
    positive = settings.positive_class
    if positive is None:
        positive = binary_positive_class(frame, label)
        if positive is None:
            shown = ", ".join(map(repr, sorted(frame[label].dropna().unique().tolist(), key=str)[:10]))
            raise DatasetError(f"positive_class= is needed: label column {label!r} holds {shown}; say which value is "
                               "the positive class (command line: --positive-class VALUE)")
    else:
        positive = match_label_value(frame, label, positive)
    if settings.favourable is not None:  # a value the label never holds would silently mean "not the positive class"
        match_label_value(frame, label, settings.favourable, what="favourable")
    _check_schema_categories(frame, settings)
    test_frame = _test_frame(test, frame, label)
    # each row keeps its source and its own number, so that a refusal about a row names the file and the row there
    sources = [_source_text(data, DATA_FRAME, "data file")]
    if test_frame is not None:
        sources.append(_source_text(test, TEST_FRAME, "test file"))
    if settings.types:
        from ..datasets.schema import typed_frames

        typed = typed_frames([frame] if test_frame is None else [frame, test_frame], settings.types,
                             settings.categories, sources=sources)
        frame, test_frame = typed[0], (typed[1] if test_frame is not None else None)
    if test_frame is not None and isinstance(test, str | os.PathLike):
        source.update(test=str(Path(test).resolve()), test_sha256=_sha256(Path(test)))
    frames = [frame] if test_frame is None else [frame, test_frame]
    whole = stacked_frames(frames, sources)
    dataset = from_frame(whole, label=label, positive_class=positive, protected=list(settings.protected),
                         bins=dict(settings.bins), name=name or "data", couple=settings.couple,
                         constraints=list(settings.constraints) or None)
    source.update(label=str(label), positive_class=_plain(positive), protected=_plain(list(settings.protected)),
                  bins=_plain(dict(settings.bins)), schema=settings.schema, favourable=_plain(settings.favourable),
                  couple=_plain(settings.couple), constraints=list(settings.constraints))
    if test_frame is None:
        train_index, test_index = _split(dataset, test_size, random_state)
        test_rows = (f"a held-out split of the given data ({len(test_index):,} rows, {test_size:.0%}, stratified, "
                     f"random_state {random_state}) that may include rows the model was fitted on")
    else:
        train_index = np.arange(len(frame), dtype=np.int64)
        test_index = np.arange(len(frame), len(frame) + len(test_frame), dtype=np.int64)
        test_rows = f"the given test rows ({len(test_index):,})" + _also_in_data(test_frame, frame)
    return dataset, train_index, test_index, test_rows, source, whole.index


# Test rows that repeat a row of the data are suspect beyond this share, and beyond twice the share of the data's
# rows that repeat another of its rows (data with few distinct rows repeats itself by chance; Adult: 26 of its 16,281
# test rows, 0.16%, repeat a training row): the test rows were then likely cut from the data the model was fitted on.
MAX_SHARED_TEST_SHARE = 0.01


def _also_in_data(test_frame, frame) -> str:
    """``", N of which (x%) are also rows of the data ..."`` when many test rows repeat a data row; else ``""``."""
    import pandas as pd

    seen = pd.util.hash_pandas_object(frame, index=False)
    shared = int(pd.util.hash_pandas_object(test_frame, index=False).isin(seen).sum())
    by_chance = float(seen.duplicated(keep=False).mean())
    if shared <= max(MAX_SHARED_TEST_SHARE, 2 * by_chance) * len(test_frame):
        return ""
    return (f", {shared:,} of which ({shared / len(test_frame):.0%}) are also rows of the data, so they may include "
            "rows the model was fitted on")


# How a frame given as an object (not a file) is named in a refusal about its rows.
DATA_FRAME = "the data frame (data=)"
TEST_FRAME = "the test frame (test=)"


def _source_text(given, frame_text: str, file_kind: str) -> str:
    """Where rows come from, in words: ``data file 'train.csv'``, or ``frame_text`` for a frame."""
    return f"{file_kind} {str(given)!r}" if isinstance(given, str | os.PathLike) else frame_text


def _test_frame(test, frame, label):
    from ..datasets.frame import read_frame, refuse_no_rows
    from ..datasets.native import as_pandas

    if test is None:
        return None
    if isinstance(test, str | os.PathLike):
        test_frame = read_frame(test, what="test file")
    else:
        test_frame = refuse_no_rows(as_pandas(test, what="test"), what=TEST_FRAME)
    missing = [c for c in frame.columns if c not in test_frame.columns]
    extra = [c for c in test_frame.columns if c not in frame.columns]
    if missing or extra:
        raise DatasetError(f"{_source_text(test, TEST_FRAME, 'test file')} must have the data's columns: missing "
                           f"{missing or 'none'}, extra {extra or 'none'}")
    return test_frame[list(frame.columns)]


def _check_schema_categories(frame, settings: DataSpec) -> None:
    """Refuse a schema's column table the data has no column for, and a value its categories do not list."""
    columns = [str(c) for c in frame.columns]
    unknown_columns = sorted({str(c) for c in (*settings.types, *settings.categories)} - set(columns))
    if unknown_columns:
        where = f"schema {settings.schema!r}" if settings.schema else "the schema"
        tables = ", ".join(f"[columns.\"{c}\"]" for c in unknown_columns)
        raise DatasetError(f"{where} describes column{'s' if len(unknown_columns) > 1 else ''} the data does not "
                           f"have: {tables}; the data's columns: {', '.join(columns)}")
    for column, categories in settings.categories.items():
        if column in frame.columns:
            unknown = sorted(set(map(str, frame[column].dropna().unique())) - set(map(str, categories)))
            if unknown:
                raise DatasetError(f"column {column!r} holds values the schema does not list: {unknown[:10]}; re-run "
                                   "'chiralfair schema infer' or edit the schema")


def _dataset_rows(data, settings: DataSpec, test, test_size, random_state):
    """A Dataset's protected attributes and rows."""
    if settings.label is not None or settings.bins:
        raise ConfigError("label and bins apply to a DataFrame; data is an already encoded Dataset")
    dataset = data.with_protected(list(settings.protected)) if settings.protected else data
    if settings.couple is not None or settings.constraints:
        dataset = dataset.with_protected(dataset.domain.protected_declaration, couple=settings.couple,
                                         constraints=list(settings.constraints) or None)
    if test is None:
        train_index, test_index = _split(dataset, test_size, random_state)
        test_rows = (f"a held-out split of {dataset.name} ({len(test_index):,} rows, {test_size:.0%}, stratified, "
                     f"random_state {random_state}) that may include rows the model was fitted on")
    else:
        test_index = np.unique(np.asarray(test, dtype=np.int64))
        if test_index.size == 0 or test_index.min() < 0 or test_index.max() >= dataset.n_samples:
            raise ConfigError(f"test must hold row numbers in [0, {dataset.n_samples - 1}] of the Dataset")
        train_index = np.setdiff1d(np.arange(dataset.n_samples), test_index)
        test_rows = f"the given test rows of {dataset.name} ({len(test_index):,})"
    return dataset, train_index, test_index, test_rows, {"kind": "objects", "dataset": dataset.name}


def _split(dataset, test_size, random_state):
    from .._validation import check_float

    test_size = check_float(test_size, "test_size", minimum=0.0, maximum=1.0, exclusive_minimum=True)
    if test_size >= 1.0:
        raise ConfigError(f"test_size must be < 1, got {test_size}")
    n, n_classes = dataset.n_samples, len(np.unique(dataset.y))
    n_test = math.ceil(test_size * n)
    if n_test < n_classes or n - n_test < n_classes:
        low, high = n_classes / n, 1 - n_classes / n
        raise ConfigError(f"test_size {test_size!r} of {n:,} rows holds out {n_test:,} rows and keeps {n - n_test:,}: "
                          f"each side needs a row of each of the {n_classes} classes; for this data test_size must "
                          f"lie in [{low:.3g}, {high:.3g}] (or pass test= rows the model never saw)")
    return dataset.split(random_state, test_size=test_size)


def _refuse_degenerate(dataset) -> None:
    """Refuse data on which the question cannot be asked: one class only, or nothing but protected columns.

    Raises
    ------
    DatasetError
    """
    from ..exceptions import Problems

    problems = Problems()
    classes = np.unique(dataset.y)
    if len(classes) < 2:
        with problems.check():
            which = "every one" if classes[0] == 1 else "none"
            raise DatasetError(f"label column {dataset.label!r} holds one class only: {which} of the "
                               f"{dataset.n_samples:,} rows is the positive class {dataset.positive_class!r}; F1 and "
                               "the chiral model need both classes: check the label column and positive_class")
    if not len(dataset.domain.non_protected):
        with problems.check():
            raise DatasetError(f"every column of the data is a protected attribute ({', '.join(dataset.domain.names)}):"
                               " an individual is then nothing but their protected values, so no two individuals "
                               "differ only in them — compare the groups instead (the group metrics), or give the "
                               "other columns the model decides on")
    problems.raise_all()


def _load_model(model, dataset, trust: bool, output: str | None, model_input: str):
    from ..models.probe import wrap_model
    from ..models.protocol import CountingModel

    if isinstance(model, str | os.PathLike):
        from ..models.files import load_model_file

        path = Path(model)
        obj = load_model_file(path, trust=trust, output=output)
        model_name = path.name
        source = {"model_file": str(path.resolve()), "model_sha256": _sha256(path), "model_output": output,
                  "trust_model_file": bool(trust), "model_input": model_input}
    else:
        obj = model
        model_name = getattr(model, "name", None) or type(model).__name__
        source = {"model_object": type(model).__name__, "model_output": output, "model_input": model_input}
    if isinstance(obj, CountingModel):
        if model_input not in ("auto", obj.language.input_kind):
            raise ConfigError(f"model {obj.name!r} is already wrapped, in its own language (it takes "
                              f"{obj.language.input_kind}): model_input={model_input!r} applies to the model itself; "
                              "pass it unwrapped, or wrap it with as_model(..., to_frame=..., as_values=...)")
        return obj, model_name, {**source, "model_input": obj.language.input_kind}
    counting = wrap_model(obj, dataset, name=model_name, output=output, model_input=model_input)
    if model_input == "auto":  # what auto told, so that a run folder rebuilds the same model (retrain --from-run)
        source["model_input"] = counting.language.input_kind
    return counting, model_name, source


def _check_model(model, dataset, row_names=None):
    """Columns, protected values, the other values, first rows: the probes of :mod:`chiralfair.models.probe`.

    Returns the model too: an integer column with gaps that the model refuses is re-encoded to its observed values
    (:func:`~chiralfair.models.probe.check_model_accepts_values`), and the model wrapped again to decode them.
    ``row_names`` (the index of the rows as read, :func:`~chiralfair.datasets.frame.row_text`) names the first data
    row holding a refused value in its own file or frame.
    """
    from ..datasets.frame import row_text
    from ..models.probe import (
        check_model_accepts_rows,
        check_model_accepts_values,
        check_model_columns,
        restrict_to_accepted_values,
    )

    column_notes = check_model_columns(model, dataset)
    restricted, probe_notes, keep = restrict_to_accepted_values(model, dataset)
    where = None
    if row_names is not None:
        kept = np.arange(len(row_names)) if keep is None else np.flatnonzero(keep)
        where = lambda position: row_text(row_names, int(kept[position]))  # noqa: E731
    model, restricted, value_notes = check_model_accepts_values(model, restricted, where=where)
    check_model_accepts_rows(model, restricted)
    return model, restricted, keep, [*column_notes, *probe_notes, *value_notes]


def _kept_rows(keep: np.ndarray | None, train_index: np.ndarray, test_index: np.ndarray):
    """Row numbers after the rows ``keep`` leaves out are dropped (None: all rows kept)."""
    if keep is None:
        return train_index, test_index
    new_number = np.cumsum(keep) - 1
    return new_number[train_index[keep[train_index]]], new_number[test_index[keep[test_index]]]


def _binning_agreement(model, dataset):
    from ..models.probe import binning_agreement

    return binning_agreement(model, dataset)


def _binning_note(agreement) -> str:
    from ..models.probe import binning_note

    return binning_note(agreement)


def _quality(model, dataset, test_index: np.ndarray, test_rows: str) -> dict[str, Any]:
    """F1 and accuracy of the model on the held-out rows, as given for a model fed frames (queries not counted)."""
    from sklearn.metrics import accuracy_score, f1_score

    as_given = model.reads_people and dataset.raw is not None
    pred = model.predict(dataset.raw.iloc[test_index] if as_given else dataset.X[test_index])
    model.reset_queries()
    y = dataset.y[test_index]
    classes = np.unique(y)
    return {"name": model.name, "f1": float(f1_score(y, pred, zero_division=0.0)),
            "accuracy": float(accuracy_score(y, pred)), "evaluated_on": test_rows, "n_test": int(len(test_index)),
            "train_seconds": 0.0, "from_cache": False,
            "one_class": int(classes[0]) if len(classes) == 1 else None,
            "one_label": int(np.asarray(pred).ravel()[0]) if len(pred) and len(np.unique(pred)) == 1 else None}


def _one_class_note(quality: dict[str, Any]) -> str | None:
    """A note when the held-out labels hold one class: the F1 printed (0.000 or 1.000) then says nothing."""
    label = quality.get("one_class")
    if label is None:
        return None
    return (f"F1 is undefined here: the labels of {quality['evaluated_on']} hold one class only (label {label}), so "
            f"the F1 of {quality['f1']:.3f} says nothing of the model; give held-out rows with both classes (--test)")


# Fewer held-out rows than this say too little about a model's accuracy to suspect its labels.
MIN_ROWS_TO_SUSPECT_LABELS = 50


def _inverted_labels_note(quality: dict[str, Any], positive_class) -> str | None:
    """A note when the model is right on fewer than half the held-out rows: its label 1 is likely the other class.

    A two-class model below a coin's accuracy agrees with the flipped labels on most rows, which a model that
    learnt the task does only if chiralfair reads its labels the wrong way round (a callable or ONNX graph whose 1
    means the negative class, a positive class named wrongly); F1 and the direction of harm would then be wrong.
    """
    if quality["n_test"] < MIN_ROWS_TO_SUSPECT_LABELS or quality["accuracy"] >= 0.5:
        return None
    return (f"the model is right on {quality['accuracy']:.1%} of {quality['evaluated_on']} (F1 {quality['f1']:.3f}), "
            f"below a coin's 50%: its label 1 is probably not the positive class {positive_class!r}. Check "
            "positive_class (--positive-class) and what the model's outputs mean (as_model(classes=..., "
            "positive_class=...)); until then F1 and who is harmed are read the wrong way round")


def _favourable(dataset, settings: DataSpec) -> tuple[int, str | None]:
    """The favourable label (given, else the benchmark's, else 1: the positive class) and where it comes from.

    Returns
    -------
    favourable : int
    note : str or None
        None for a benchmark's own (the verdict says it).

    Raises
    ------
    ConfigError
        For a Dataset's favourable label that is not 0 or 1, or a label value the data does not hold.
    """
    from ..verdict import FAVOURABLE

    given = settings.favourable
    positive = dataset.positive_class
    if given is not None:
        if dataset.codec is None:
            if isinstance(given, bool) or given not in (0, 1):
                raise ConfigError(f"favourable must be the label 0 or 1 of the Dataset, got {given!r}")
            return int(given), f"favourable label {int(given)}, as given"
        label = 1 if str(given) == str(positive) else 0
        return label, f"favourable outcome {given!r} (label {label}; positive class {positive!r}), as given"
    known = FAVOURABLE.get((dataset.name, positive))
    if known is not None:
        return known[0], None
    return 1, (f"favourable outcome: the positive class {positive!r} (label 1), by default; pass favourable= "
               "(--favourable) if the other label is the favourable one")


def _sha256(path) -> str:
    from ..results.provenance import file_sha256

    return file_sha256(path)


def _plain(value):
    """A value as JSON can hold it (numpy scalars as Python ones, tuples as lists)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value
