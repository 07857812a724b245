"""One call from Python: test the model you have on the data you have (:func:`audit`, exported as ``chiralfair.audit``).

The module is not named ``audit`` because importing ``chiralfair.audit`` would then replace the function
``chiralfair.audit`` with the module.

``audit(model, frame, label=..., positive_class=..., protected=[...])`` encodes the frame
(:func:`~chiralfair.datasets.from_frame`), wraps the model so that it is fed the frame it was trained on
(:meth:`~chiralfair.datasets.Dataset.to_frame`), checks that the model accepts the data and every protected
value, selects seeds, runs a generator and returns an :class:`AuditResult` with the figures of
``chiralfair run``.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from .exceptions import ConfigError, DatasetError
from .models.probe import check_model_accepts_rows, check_model_columns, restrict_to_accepted_values, wrap_model

logger = logging.getLogger(__name__)

# Seed strategies that retrain the model under test (the chiral model of I&D).
CHIRAL_SEEDS = ("i", "iandd")


def audit(model, data, *, label=None, positive_class=None, protected: str | Sequence[str],
          bins: Mapping[str, int | Sequence[float]] | None = None, generator: str = "aequitas",
          seeds: str = "iandd", max_global: int = 100, max_local: int = 100, random_state=0,
          out: str | os.PathLike | None = None, trust_model_file: bool = False, model_output: str | None = None,
          model_input: str = "auto",
          name: str = "data", generator_params: Mapping[str, Any] | None = None,
          seed_params: Mapping[str, Any] | None = None,
          on_step: Callable[[str], None] | None = None) -> AuditResult:
    """Find IDIs of a fitted model on a raw DataFrame (or a chiralfair Dataset) in one call.

    Steps: encode the data; load the model if it is a file; wrap it so that an sklearn estimator with string
    ``feature_names_in_`` gets ``dataset.to_frame(X)[feature_names_in_]``; check on a few data rows that it
    accepts the data, and probe it with one counterpart per protected value; select seeds; run the generator.

    A protected value the model refuses (e.g. a category its ``OneHotEncoder`` never saw) is **left out of the
    protected domain**, and the data rows holding it are left out of seed selection, with a note in the
    result: the model cannot decide on such an input, so no counterpart may take that value, while the other
    values can still be tested. With fewer than two accepted values the run is refused before the search.

    Parameters
    ----------
    model : estimator, pipeline, torch module, callable, CountingModel, or path
        A fitted model, or a model file (``.skops``, TorchScript, ``.onnx``, or joblib/pickle with
        ``trust_model_file``; see :mod:`chiralfair.models.files`).
    data : pandas.DataFrame or Dataset
        A raw frame holding the feature columns and the ``label`` column, or an encoded Dataset.
    label : column name
        Label column of ``data`` (a frame only).
    positive_class : object, optional
        Label value of the favourable outcome. Required unless the label holds only 0/1 (then 1).
    protected : str or sequence of str
        Protected attributes under test.
    bins : mapping, optional
        Binning of numeric columns (see :func:`~chiralfair.datasets.from_frame`); binned columns are fed to
        the model as each bin's representative value.
    generator, seeds : str
        Registered generator and seed strategy names.
    max_global, max_local : int
        Budget (global seeds, local iterations per global IDI).
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        Resolved once to an int seed (drawn from a RandomState/Generator, fresh for None) that drives seeds and
        search; both the given value's type and the int are recorded in ``meta``.
    out : path, optional
        Run folder to write (``result.json``, ``idis.parquet``, ``report.md``).
    trust_model_file : bool
        Load pickles and skops files with untrusted types.
    model_output : {"probability", "logit"}, optional
        For torch modules and one-column ONNX models: what the output is.
    model_input : {"auto", "frame", "codes"}
        What the model takes: ``"frame"`` the raw frame's columns (``data.to_frame``), ``"codes"`` the integer
        codes. ``"auto"``: the frame for an estimator with string ``feature_names_in_``, codes otherwise; refused
        when a raw frame has non-string column names and the estimator records none (scikit-learn keeps names only
        when all are strings, so the model's input cannot be told).
    name : str
        Dataset name in reports.
    generator_params, seed_params : mapping, optional
        Extra parameters of the generator and of the seed strategy.
    on_step : callable, optional
        Called with ``"data"``, ``"model"``, ``"seeds"``, ``"search"`` as each step starts.

    Returns
    -------
    AuditResult

    Raises
    ------
    ConfigError
        Unknown generator/seed strategy, a bad budget or ``random_state``, or a seed strategy that needs a
        chiral model for a model that cannot be retrained.
    DatasetError, DomainError
        From encoding the frame (naming the column at fault).
    ModelFileError
        For a model file that cannot (or may not) be loaded.
    ModelCapabilityError
        When the model does not accept the data (naming the model's and the data's columns), refuses all but
        one value of a protected attribute, or lacks the gradient a gradient generator needs.

    References
    ----------
    .. [1] Ma et al. "Enhanced Fairness Testing via Generating Effective Initial Individual Discriminatory
       Instances." arXiv:2209.08321.
    """
    from ._validation import check_int
    from .experiments import MAX_BUDGET
    from .generators import make_generator
    from .seeds import make_seed_strategy

    step = on_step or (lambda s: None)
    t_all = time.perf_counter()
    check_int(max_global, "max_global", minimum=1)
    check_int(max_local, "max_local", minimum=0)
    if max_global * (max_local + 1) > MAX_BUDGET:
        raise ConfigError(f"max_global x (max_local + 1) = {max_global * (max_local + 1):,} exceeds {MAX_BUDGET:,}")
    seed, random_state_meta = resolve_seed(random_state)
    search = make_generator(generator, max_global=max_global, max_local=max_local, **dict(generator_params or {}))
    make_seed_strategy(seeds, **dict(seed_params or {}))
    if out is not None:
        from .report import prepare_run_folder, remove_empty_folders
        created = prepare_run_folder(out)
    else:
        created = []
    try:
        seconds: dict[str, float] = {}
        step("data")
        t = time.perf_counter()
        dataset = _as_dataset(data, label=label, positive_class=positive_class, protected=protected, bins=bins,
                              name=name)
        seconds["data"] = time.perf_counter() - t

        step("model")
        t = time.perf_counter()
        obj, model_name = _load(model, trust_model_file, model_output)
        wrapped = wrap_model(obj, dataset, name=model_name, output=model_output, model_input=model_input)
        column_notes = check_model_columns(wrapped, dataset)
        dataset, probe_notes = restrict_to_accepted_values(wrapped, dataset)
        probe_notes = [*column_notes, *probe_notes]
        check_model_accepts_rows(wrapped, dataset)
        search.require_capabilities(wrapped)
        strategy = make_seed_strategy(seeds, **_seed_params(seeds, seed_params, wrapped))
        quality = _quality(wrapped, dataset)
        seconds["model"] = time.perf_counter() - t

        step("seeds")
        t = time.perf_counter()
        wrapped.reset_queries()
        seed_report = strategy.select(wrapped, dataset, max_global, random_state=seed)
        seconds["seeds"] = time.perf_counter() - t

        step("search")
        t = time.perf_counter()
        result = search.run(wrapped, dataset.domain, seed_report, random_state=seed)
        seconds["search"] = time.perf_counter() - t
        seconds["total"] = time.perf_counter() - t_all

        outcome = _outcome(dataset, model_name, generator, seeds, max_global, max_local, seed, generator_params,
                           result, seed_report, quality, seconds, probe_notes, random_state_meta)
        audited = AuditResult(outcome, dataset)
        if out is not None:
            audited.write(out)
    except BaseException:
        if out is not None:
            remove_empty_folders(created)
        raise
    return audited


# ---------------------------------------------------------------------------------------------- steps
def resolve_seed(random_state) -> tuple[int, dict[str, Any]]:
    """One int seed for every step (as ``chiralfair run`` passes its int), and what to record in ``meta``.

    Parameters
    ----------
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator

    Returns
    -------
    seed : int
        The int itself, else an int drawn from the generator :func:`chiralfair._random.resolve_random_state`
        makes of ``random_state``.
    meta : dict
        ``random_state`` (its readable description) and ``resolved_random_state`` (the int seed:
        ``random_state=<it>`` reproduces the run).

    Raises
    ------
    ConfigError
        For a negative int or another type.
    """
    from ._random import derive_seed, resolve_random_state

    rng, described = resolve_random_state(random_state)
    seed = described if isinstance(described, int) else derive_seed(rng)
    return seed, {"random_state": described, "resolved_random_state": seed}


def _as_dataset(data, *, label, positive_class, protected, bins, name):
    import pandas as pd

    from .datasets import Dataset, from_frame

    if isinstance(data, Dataset):
        if label is not None or bins:
            raise ConfigError("label and bins apply to a DataFrame; data is an already encoded Dataset")
        return data.with_protected([protected] if isinstance(protected, str) else list(protected))
    if not isinstance(data, pd.DataFrame):
        raise DatasetError(f"data must be a pandas DataFrame or a chiralfair Dataset, got {type(data).__name__}")
    if label is None:
        raise DatasetError(f"label= is needed to tell the label column of the frame; columns: "
                           f"{', '.join(map(str, data.columns))}")
    if label not in data.columns:
        raise DatasetError(f"label column {label!r} is not in the frame; columns: {', '.join(map(str, data.columns))}")
    if positive_class is None:
        positive_class = _binary_positive(data[label], label)
    return from_frame(data, label=label, positive_class=positive_class, protected=protected, bins=bins, name=name)


def _binary_positive(series, label):
    values = set(series.dropna().unique().tolist())
    if values <= {0, 1} and 1 in values:
        return 1
    shown = ", ".join(map(repr, sorted(values, key=str)[:10]))
    raise DatasetError(f"positive_class= is needed: label column {label!r} holds {shown}; say which value is the "
                       "favourable outcome")


def _load(model, trust: bool, output: str | None):
    if isinstance(model, str | os.PathLike):
        from .models.files import load_model_file
        return load_model_file(model, trust=trust, output=output), Path(model).name
    return model, getattr(model, "name", None) or type(model).__name__


def _seed_params(seeds: str, seed_params, model) -> dict:
    params = dict(seed_params or {})
    if seeds not in CHIRAL_SEEDS or "chiral_model" in params or "chiral_trainer" in params:
        return params
    from sklearn.base import BaseEstimator
    if getattr(model, "spec", None) is None and not isinstance(model.estimator, BaseEstimator):
        raise ConfigError(
            f"seed strategy {seeds!r} retrains the model under test on mutated data (the chiral model), and "
            f"{model.name!r} ({type(model.estimator).__name__}) cannot be retrained here; use seeds='cluster' or "
            "'random' (CLI: --seeds cluster), or pass seed_params={'chiral_trainer': ...}")
    return params


def _quality(model, dataset) -> dict[str, Any]:
    """F1 and accuracy of the model on all rows of the given data (it may include the model's training rows)."""
    from sklearn.metrics import accuracy_score, f1_score

    pred = model.predict(dataset.X)
    model.reset_queries()
    return {"f1": float(f1_score(dataset.y, pred, zero_division=0.0)),
            "accuracy": float(accuracy_score(dataset.y, pred)), "evaluated_on": "all rows of the given data",
            "train_seconds": 0.0, "from_cache": False}


def _outcome(dataset, model_name, generator, seeds, max_global, max_local, seed, generator_params, result,
             seed_report, quality, seconds, notes, random_state_meta):
    from .experiments import RunConfig, RunOutcome

    config = RunConfig(dataset=dataset.name, protected=tuple(dataset.domain.protected_names), model=model_name,
                       seeds=seeds, generator=generator, max_global=max_global, max_local=max_local,
                       random_state=seed, generator_params=dict(generator_params or {}))
    info = {"name": model_name, **quality, "random_state": random_state_meta}
    return RunOutcome(config, result, seed_report, dataset.domain, info, seconds, tuple(notes))


# ---------------------------------------------------------------------------------------------- result
class AuditResult:
    """What :func:`audit` found: the figures of ``chiralfair run``, the IDI pairs, and the notes.

    Attributes
    ----------
    outcome : chiralfair.experiments.RunOutcome
        Search result, seed report, model quality and timings.
    dataset : Dataset
        The encoded data (protected domain restricted to the values the model accepts).
    """

    def __init__(self, outcome, dataset):
        self.outcome = outcome
        self.dataset = dataset

    @property
    def n_idis(self) -> int:
        """Unique IDIs found (global ∪ local)."""
        return int(self.outcome.result.n_idis)

    @property
    def notes(self) -> list[str]:
        """Everything a reader must know about this run (refused protected values, seed notes, ...)."""
        s = self.outcome.summary()
        return list(s["notes"]) + list(s["seeds"]["notes"])

    def to_dict(self) -> dict[str, Any]:
        """The figures of ``result.json``."""
        return self.outcome.summary()

    def idis(self):
        """IDI pairs with decoded values, one row per IDI (``pandas.DataFrame``, columns as in ``idis.parquet``)."""
        return self.outcome.result.to_frame(self.outcome.domain)

    def rows(self) -> list[tuple[str, str]]:
        """The headline figures as (name, value) rows, as ``chiralfair run`` prints them."""
        from .report import summary_rows
        return summary_rows(self.to_dict())

    def title(self) -> str:
        """One line: data, protected attributes, model, generator, seeds and budget."""
        s = self.to_dict()
        cfg = s["meta"]["config"]
        return (f"{cfg['dataset']} / {','.join(s['meta']['protected'])} / {cfg['model']} (F1 {s['model']['f1']:.3f}"
                f" on the given data) — {cfg['generator']} with {cfg['seeds']} seeds, max_global "
                f"{cfg['max_global']}, max_local {cfg['max_local']}")

    def summary(self) -> str:
        """A readable text summary: title, figures, seed clustering and notes."""
        from .report import describe_clustering
        rows = self.rows()
        width = max(len(k) for k, _ in rows)
        lines = [self.title(), *[f"  {k:<{width}}  {v}" for k, v in rows]]
        clustering = self.to_dict()["seeds"].get("clustering")
        if clustering:
            lines.append(f"  seed clustering: {describe_clustering(clustering)}")
        lines += [f"  note: {n}" for n in self.notes]
        if self.n_idis == 0:
            lines.append("  no IDI found within this budget — not a proof of fairness.")
        return "\n".join(lines)

    def write(self, out: str | os.PathLike) -> Path:
        """Write the run folder (``result.json``, ``idis.parquet``, ``report.md``); returns its path."""
        from .report import write_run
        return write_run(self.outcome, out)

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td>{escape(k)}</td><td>{escape(v)}</td></tr>" for k, v in self.rows())
        notes = "".join(f"<li>{escape(n)}</li>" for n in self.notes)
        pairs = self.idis().head(10)
        return (f"<div><p><b>{escape(self.title())}</b></p><table>{rows}</table>"
                + (f"<p>Notes:</p><ul>{notes}</ul>" if notes else "")
                + (f"<p>First IDI pairs:</p>{pairs.to_html(index=False)}" if len(pairs) else
                   "<p>No IDI found within this budget — not a proof of fairness.</p>")
                + "</div>")

    def __repr__(self) -> str:
        return self.summary()
