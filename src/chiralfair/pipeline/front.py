"""The front doors from Python: :func:`audit`, :func:`estimate` and :func:`retrain` (``chiralfair.audit``, ...).

All three take the same objects: your fitted model (an estimator, pipeline, torch module, callable, or a model
file) and your data (a raw DataFrame, a ``.csv``/``.parquet`` file, or an encoded Dataset), with ``label=``,
``positive_class=`` and ``protected=``; the held-out rows are ``test=`` or a ``test_size`` split. They resolve
the inputs once (:func:`~.inputs.inputs_from_objects`) and run the steps of the pipeline
(:mod:`chiralfair.pipeline.run`): ``audit`` searches for IDIs and gives the verdict, ``estimate`` gives the
verdict alone, ``retrain`` makes a fairer model with the IDIs and measures it on the held-out rows.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from .._validation import check_keywords
from .inputs import RunInputs, inputs_from_objects
from .run import run_folder_guard, run_pipeline
from .spec import DataSpec, resolve_spec, stated_fields
from .steps import SearchPlan

logger = logging.getLogger(__name__)


def resolve_seed(random_state) -> tuple[int, dict[str, Any]]:
    """One int seed for every step, and what to record in ``meta``.

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
    from .._random import derive_seed, resolve_random_state

    rng, described = resolve_random_state(random_state)
    seed = described if isinstance(described, int) else derive_seed(rng)
    return seed, {"random_state": described, "resolved_random_state": seed}


def resolve_inputs(model, data, *, spec: DataSpec | None = None, label=None, positive_class=None, favourable=None,
                   protected=None, bins=None, schema=None, test=None, test_size: float | None = None,
                   random_state: int = 0, trust_model_file: bool = False, model_output: str | None = None,
                   model_input: str = "auto", name: str | None = None, on_step: Callable[[str], None] | None = None,
                   couple=None, constraints=None) -> RunInputs:
    """The inputs of a run on your model and data: the first step of :func:`audit`, :func:`estimate`, :func:`retrain`.

    The data description is made once here (:func:`~chiralfair.pipeline.resolve_spec`): ``spec`` or the keyword
    arguments of the same names, laid over the schema. See :func:`audit` for the parameters.

    Parameters
    ----------
    model, data, spec, label, positive_class, favourable, protected, bins, schema, test, test_size, random_state
        As in :func:`audit` (``random_state`` as an int here: :func:`resolve_seed` makes one).
    trust_model_file, model_output, model_input, name, on_step, couple, constraints
        As in :func:`audit`.

    Returns
    -------
    RunInputs
        ``spec`` is the description used.
    """
    settings = resolve_spec(spec, label=label, positive_class=positive_class, favourable=favourable,
                            protected=protected, bins=bins, schema=schema, couple=couple, constraints=constraints,
                            model_input=model_input, model_output=model_output)
    return inputs_from_objects(model, data, settings=settings, test=test, test_size=test_size,
                               random_state=random_state, trust_model_file=trust_model_file, name=name,
                               step=on_step or (lambda s: None))


def audit(model, data, *, spec: DataSpec | None = None, label=None, positive_class=None, favourable=None,
          protected: str | Sequence | None = None, bins: Mapping[str, int | Sequence[float]] | None = None,
          schema: str | os.PathLike | None = None,
          test=None, test_size: float | None = None, generator: str = "auto", seeds: str = "iandd",
          max_global: int = 100, max_local: int = 100, random_state=0, verdict: bool = True,
          verdict_params: Mapping[str, Any] | None = None, out: str | os.PathLike | None = None,
          trust_model_file: bool = False, model_output: str | None = None, model_input: str = "auto",
          name: str | None = None, generator_params: Mapping[str, Any] | None = None,
          seed_params: Mapping[str, Any] | None = None, diversity: bool = False,
          on_step: Callable[[str], None] | None = None, couple=None, constraints=None,
          max_queries: int | None = None, batch_rows: int | None = None, domain_sample: int | None = None,
          workers: int | None = None, scheduler: str | None = None, progress: bool = False) -> AuditResult:
    """Find IDIs of your fitted model on your data, and say how many people it affects and whom it harms.

    Steps: encode the data (with the held-out rows); load the model if it is a file; wrap it so that an sklearn
    estimator with string ``feature_names_in_`` gets ``dataset.to_frame(X)[feature_names_in_]``; check that it
    takes the data and probe it with one counterpart per protected value; select seeds; run the generator;
    estimate the verdict over the held-out rows.

    A protected value the model refuses (e.g. a category its ``OneHotEncoder`` never saw) is **left out of the
    protected domain**, and the rows holding it are left out, with a note in the result: the model cannot decide
    on such an input. With fewer than two accepted values the run is refused before the search.

    Parameters
    ----------
    model : estimator, pipeline, torch module, callable, CountingModel, or path
        A fitted model, or a model file (``.skops``, TorchScript, ``.onnx``, or joblib/pickle with
        ``trust_model_file``; see :mod:`chiralfair.models.files`).
    data : pandas.DataFrame, path, or Dataset
        A raw frame (or a ``.csv``/``.parquet`` file) holding the feature columns and the ``label`` column, or an
        encoded Dataset.
    spec : DataSpec, optional
        What the data and the model mean (label, classes, protected attributes, bins, couplings, constraints,
        ``model_input``, ``model_output``), made once and handed to every door. Its fields may instead be given one
        by one as the keyword arguments below; a field given both ways is refused.
    label : column name
        Label column of ``data`` (a frame or file only).
    positive_class : object, optional
        Label value encoded as 1, the model's positive class. Required unless the label holds only 0/1 (then 1).
    favourable : object, optional
        Label value of the favourable outcome; default: the positive class (a benchmark Dataset: its own).
    protected : str or sequence
        Protected attributes under test; a tuple of columns is one attribute over several (one-hot) columns.
    bins : mapping, optional
        Binning of numeric columns (see :func:`~chiralfair.datasets.from_frame`); binned columns are fed to the
        model as each bin's representative value.
    schema : path, optional
        A schema TOML (``chiralfair schema infer``) giving label, positive class, protected attributes and bins;
        the keyword arguments override it.
    test : pandas.DataFrame, path, or array-like of int, optional
        Held-out rows the model was not fitted on (a frame/file with the data's columns; row numbers for a
        Dataset). F1 and the verdict are measured on them. Default: a stratified ``test_size`` split of ``data``,
        which may include rows the model was fitted on (the result says so).
    test_size : float, optional
        Share of ``data`` held out when ``test`` is not given (default 0.4); refused beside ``test``.
    generator, seeds : str, default="auto", "iandd"
        Registered generator and seed strategy names; ``"auto"`` picks the generator by what the model offers
        (EIDIG with an input gradient, else the black-box generator that found the most IDIs at equal query budgets,
        :func:`chiralfair.generators.names.auto_generator`) and says which and why.
    max_global, max_local : int, default=100
        Budget (global seeds, local iterations per global IDI).
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator, default=0
        Resolved once to an int seed that drives the split, the seeds and the search; both the given value and the
        int are recorded in ``meta``.
    max_queries : int, optional
        Query budget: the seed strategy and the generator together send at most this many queries to the model
        (every row passed to any of its methods: labels and probabilities of a row are two unless one call returns
        both; gradients count); the search stops before the call that would pass it, and the result says so
        (``result.meta["query_budget"]``, a note). The probes before the search and the verdict's and group
        metrics' held-out rows are outside it, said beside it (``summary()["queries"]``, the ``n_queries`` line);
        the verdict has its own (``verdict_params={"max_queries": ...}``). Default: no budget but ``max_global``
        and ``max_local``.
    verdict : bool, default=True
        Estimate the share of the held-out rows affected (:func:`chiralfair.verdict.estimate`).
    verdict_params : mapping, optional
        Parameters of the estimate (``confidence``, ``margin``, ``max_queries``, ``method``, ``gamma``).
    out : path, optional
        Run folder to write (``result.json``, ``idis.parquet``, ``report.md``, ``report.html``).
    trust_model_file : bool, default=False
        Load pickles and skops files with untrusted types.
    model_output : {"probability", "logit"}, optional
        For torch modules and one-column ONNX models: what the output is.
    model_input : {"auto", "frame", "codes", "values"}, default="auto"
        What the model takes: ``"frame"`` the raw frame's columns; ``"values"`` their raw numbers as a float64
        array, in the frame's column order (a torch module, a TorchScript or ONNX file, a callable or an
        estimator fitted on a numpy array of the raw columns; every column numeric); ``"codes"`` the integer
        codes. ``"auto"``: the frame for an estimator with string ``feature_names_in_``; codes where the data's
        codes are its values (already encoded data, integer or 0/1 columns); otherwise refused, asking for it
        (:func:`~chiralfair.models.probe.resolve_model_input`). Recorded in ``meta["source"]["model_input"]``.
    name : str, optional
        Dataset name in reports (default: the file's stem, or ``"data"``).
    generator_params, seed_params : mapping, optional
        Extra parameters of the generator and of the seed strategy.
    diversity : bool, default=False
        Measure the diversity of the seeds and of the IDIs found.
    on_step : callable, optional
        Called with ``"data"``, ``"model"``, ``"seeds"``, ``"search"``, ``"verdict"`` as each step starts.
    couple : mapping, optional
        Columns that change with a protected attribute (architecture: counterparts that could exist), e.g. ``{"sex":
        {"relationship": {"Husband": "Wife", "Wife": "Husband"}}}`` in the data's own values
        (:func:`~chiralfair.datasets.from_frame`); default: the schema's ``[couple]`` table, else none.
    constraints : str or sequence of str, optional
        Rules every input satisfies, e.g. ``"sex=Female excludes relationship=Husband"``; default: the schema's.
    batch_rows, domain_sample, workers, scheduler, progress : optional
        Stream the held-out rows ``test`` (a Parquet file or folder, an fsspec URL, a Dask DataFrame or a polars
        LazyFrame) as :func:`estimate` does: the search runs on ``data`` beside the first ``domain_sample`` held-out
        rows (the model's F1 and the group metrics are measured on those), and the verdict checks every held-out
        row in batches (:mod:`chiralfair.pipeline.stream`).

    Returns
    -------
    AuditResult
        ``verdict`` (when the favourable label is known), the search figures, the IDI pairs (:meth:`idis`).

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
        When the model does not take the data (naming both column lists), refuses all but one value of a
        protected attribute, or lacks the gradient a gradient generator needs.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from sklearn.compose import make_column_transformer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import OneHotEncoder
    >>> import chiralfair
    >>> rng = np.random.default_rng(0)
    >>> people = pd.DataFrame({"sex": rng.choice(["f", "m"], 600), "hours": rng.integers(20, 60, 600)})
    >>> people["y"] = np.where(people["hours"] + 10 * (people["sex"] == "m") > 45, "yes", "no")  # biased
    >>> train, test = people.iloc[:400], people.iloc[400:]
    >>> pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["sex"]), remainder="passthrough"),
    ...                      LogisticRegression()).fit(train[["sex", "hours"]], train["y"])
    >>> result = chiralfair.audit(pipe, train, test=test, label="y", positive_class="yes", protected="sex",
    ...                           max_global=20, max_local=10)
    >>> print(result.summary().splitlines()[0])
    share of test individuals affected: 27.00% (exact)
    >>> result.verdict.population, result.verdict.n_individuals
    ('test', 200)
    >>> pairs = result.idis()               # one row per IDI, beside its counterpart
    >>> len(pairs) == result.n_idis
    True

    References
    ----------
    .. [1] Ma et al. "Enhanced Fairness Testing via Generating Effective Initial Individual Discriminatory
       Instances." arXiv:2209.08321.
    """
    seed, random_state_meta = resolve_seed(random_state)
    plan = SearchPlan(seeds=seeds, generator=generator, max_global=max_global, max_local=max_local,
                      random_state=seed, generator_params=dict(generator_params or {}),
                      seed_params=dict(seed_params or {}), max_queries=max_queries)
    plan.check()
    _check_verdict_params(verdict_params)
    t_all = time.perf_counter()
    held_out_verdict, test = _streamed_held_out(data, test, verdict_params, batch_rows=batch_rows,
                                                domain_sample=domain_sample, workers=workers, scheduler=scheduler,
                                                progress=progress)
    with run_folder_guard(out) as folder:  # an earlier run in out is replaced only once this one is written whole
        inputs = resolve_inputs(model, data, spec=spec, label=label, positive_class=positive_class,
                                favourable=favourable, protected=protected, bins=bins, schema=schema, test=test,
                                test_size=test_size,
                                random_state=seed, trust_model_file=trust_model_file, model_output=model_output,
                                model_input=model_input, name=name, on_step=on_step, couple=couple,
                                constraints=constraints)
        outcome = run_pipeline(inputs, plan, verdict=verdict, verdict_params=dict(verdict_params or {}),
                               diversity=diversity, out=folder.path, on_step=on_step,
                               random_state_meta=random_state_meta, started=t_all,
                               held_out_verdict=held_out_verdict)
        if folder.path is not None:
            AuditResult(outcome, inputs).write(folder.path)
    return AuditResult(dataclasses.replace(outcome, result=folder.moved(outcome.result)), inputs)


def _streamed_held_out(data, test, verdict_params, *, batch_rows, domain_sample, workers, scheduler, progress):
    """For an audit whose held-out rows stream: the verdict step over them, and their sample (else (None, test))."""
    from ..exceptions import ConfigError
    from .stream import open_with_sample, verdict_over_stream, wants_stream

    if test is None or not wants_stream(None, test, batch_rows):
        if wants_stream(data, None, batch_rows) or domain_sample is not None or workers is not None or \
                scheduler is not None:
            raise ConfigError("audit streams the held-out rows only (test=, --test): the search reads data in "
                              "memory; give the rows to stream as test")
        return None, test
    params = dict(verdict_params or {})
    stream, sample, settings = open_with_sample(test, batch_rows=batch_rows, domain_sample=domain_sample,
                                                workers=workers, scheduler=scheduler, params=params)

    def held_out_verdict(inputs, *, random_state: int, **given):
        verdict, _ = verdict_over_stream(inputs, stream, sample, held_out=True, random_state=random_state,
                                         progress=progress, **settings,
                                         **{k: v for k, v in given.items() if k not in SAMPLING_KEYS})
        note = (f"the group metrics (selection rate, TPR, FPR) are measured on the first {len(sample):,} held-out "
                "rows (the domain sample), the verdict on every held-out row")
        return dataclasses.replace(verdict, notes=(*verdict.notes, note))

    return held_out_verdict, sample


# The verdict's sampling parameters, which a streamed verdict (every row checked) has no use for.
SAMPLING_KEYS = ("margin", "max_queries", "exact", "batch_size")


def estimate(model, data, *, spec: DataSpec | None = None, label=None, positive_class=None, favourable=None,
             protected=None, bins=None, schema=None, test=None, test_size: float | None = None,
             population: str = "test",
             random_state=0, trust_model_file: bool = False, model_output: str | None = None,
             model_input: str = "auto", name: str | None = None, couple=None, constraints=None,
             batch_rows: int | None = None, domain_sample: int | None = None, workers: int | None = None,
             scheduler: str | None = None, progress: bool = False, **params):
    """The verdict on your model and data: the share of people affected (with an interval), whom it harms, how badly.

    An individual is affected when a counterpart differing only in protected attributes gets another label. Takes
    the model and data as :func:`audit` does (same parameters), and checks the individuals of ``population``
    (default: the held-out rows).

    Parameters
    ----------
    model, data, spec, label, positive_class, favourable, protected, bins, schema, test, test_size, random_state
        As in :func:`audit`.
    trust_model_file, model_output, model_input, name
        As in :func:`audit`.
    population : {"test", "rows", "domain"}, default="test"
        The held-out rows, every row of the data, or uniform draws from the input domain.
    couple, constraints : optional
        As in :func:`audit` (architecture: counterparts that could exist).
    batch_rows : int, optional
        Stream the rows (``test`` when given, else ``data``) in batches of this many and check every one of them
        (:mod:`chiralfair.pipeline.stream`): memory is bounded by the batch, not by the rows, and the verdict equals
        the in-memory exact verdict over the same rows. Streaming is also chosen, with 65,536 rows a batch, when
        ``data`` or ``test`` is a Parquet folder, an fsspec URL, a Dask DataFrame or a polars LazyFrame.
    domain_sample : int, optional
        Rows of the stream the domain (categories, bins) is made from (default 100,000), said in the verdict.
    workers, scheduler : optional
        Score the stream's partitions on a local Dask cluster of ``workers`` processes, or on the cluster at the
        ``scheduler`` address; the model is sent once per worker. A local cluster starts its workers as new
        processes, which import the calling script again: call ``estimate`` with ``workers`` from a script under
        ``if __name__ == "__main__":``, as Dask asks.
    progress : bool, default=False
        A progress bar (rows per second) while streaming.
    **params
        Of :func:`chiralfair.verdict.estimate`: ``confidence`` (default 0.95), ``margin`` (0.005),
        ``max_queries``, ``method`` (``"clopper-pearson"``, as the gate's), ``gamma``, ``exact``, ``batch_size``,
        ``plausible_only`` (a streamed verdict takes ``confidence``, ``method``, ``gamma``, ``favourable`` and
        ``plausible_only``).

    Returns
    -------
    Verdict
        ``meta["population_rows"]`` says which rows were checked, ``meta["model_f1"]`` the model's F1 on the
        held-out rows, ``meta["queries"]`` the rows sent to the model, within the budget and outside it
        (:func:`with_queries`).

    Raises
    ------
    ConfigError, DatasetError, DomainError, ModelFileError, ModelCapabilityError
        As :func:`audit`.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from sklearn.compose import make_column_transformer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import OneHotEncoder
    >>> import chiralfair
    >>> rng = np.random.default_rng(0)
    >>> people = pd.DataFrame({"sex": rng.choice(["f", "m"], 600), "hours": rng.integers(20, 60, 600)})
    >>> people["y"] = np.where(people["hours"] + 10 * (people["sex"] == "m") > 45, "yes", "no")  # biased
    >>> train, test = people.iloc[:400], people.iloc[400:]
    >>> pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["sex"]), remainder="passthrough"),
    ...                      LogisticRegression()).fit(train[["sex", "hours"]], train["y"])
    >>> verdict = chiralfair.estimate(pipe, train, test=test, label="y", positive_class="yes", protected="sex")
    >>> f"{verdict.share:.2%} of {verdict.n_individuals} held-out individuals (exact: {verdict.exact})"
    '27.00% of 200 held-out individuals (exact: True)'
    >>> verdict.meta["population_rows"]
    'the given test rows (200)'
    """
    from ..exceptions import ConfigError
    from ..verdict.params import check_estimate_params
    from .steps import estimate_verdict
    from .stream import stream_estimate, wants_stream

    _check_verdict_params(params, "estimate's keyword arguments")
    check_estimate_params(population=population, **{k: v for k, v in params.items() if k != "favourable"})
    seed, _ = resolve_seed(random_state)
    if wants_stream(data, test, batch_rows):
        def resolve(rows, held_out):
            return resolve_inputs(model, rows, spec=spec, label=label, positive_class=positive_class,
                                  favourable=favourable, protected=protected, bins=bins, schema=schema, test=held_out,
                                  test_size=test_size, random_state=seed, trust_model_file=trust_model_file,
                                  model_output=model_output, model_input=model_input, name=name, couple=couple,
                                  constraints=constraints)

        verdict, inputs = stream_estimate(model, data, test=test, batch_rows=batch_rows, domain_sample=domain_sample,
                                          workers=workers, scheduler=scheduler, progress=progress, random_state=seed,
                                          population=population, resolve=resolve, favourable=None, **params)
        return with_notes(with_queries(verdict, inputs, None), inputs.notes)
    if domain_sample is not None or workers is not None or scheduler is not None:
        for what, rows in (("data file", data), ("test file", test)):  # a misspelt folder is missing, not a file
            if isinstance(rows, str | os.PathLike) and "://" not in os.fspath(rows) and not os.path.exists(rows):
                from ..exceptions import DatasetError

                raise DatasetError(f"{what} {os.fspath(rows)!r} does not exist")
        raise ConfigError("domain_sample, workers and scheduler apply to a streamed verdict: give batch_rows, or a "
                          "Parquet folder, a Dask DataFrame or a polars LazyFrame")
    inputs = resolve_inputs(model, data, spec=spec, label=label, positive_class=positive_class,
                            favourable=favourable, protected=protected, bins=bins, schema=schema, test=test,
                            test_size=test_size,
                            random_state=seed, trust_model_file=trust_model_file, model_output=model_output,
                            model_input=model_input, name=name, couple=couple, constraints=constraints)
    return with_notes(with_queries(estimate_verdict(inputs, random_state=seed, population=population, **params),
                                   inputs, params.get("max_queries")), inputs.notes)


def estimate_benchmark(config, *, population: str = "test", **params):
    """The verdict on a zoo model trained on a benchmark (:class:`~.config.RunConfig` of names); see :func:`estimate`.

    Parameters
    ----------
    config : RunConfig
        The benchmark dataset, the zoo model, the protected attributes, the random state.
    population : {"test", "rows", "domain"}, default="test"
        As in :func:`estimate`.
    **params
        Of :func:`chiralfair.verdict.estimate` (``confidence``, ``margin``, ``max_queries``, ``method``, ``gamma``,
        ``exact``, ``batch_size``, ``plausible_only``).

    Returns
    -------
    Verdict

    Raises
    ------
    ConfigError, DatasetError
        For a bad name, random state or estimate parameter.
    """
    from ..verdict.params import check_estimate_params
    from .config import validate_config
    from .inputs import inputs_from_names
    from .steps import estimate_verdict

    check_estimate_params(population=population, **{k: v for k, v in params.items() if k != "favourable"})
    validate_config(config, search=False)
    inputs = inputs_from_names(config)
    verdict = estimate_verdict(inputs, random_state=config.random_state, population=population, **params)
    return with_notes(with_queries(verdict, inputs, params.get("max_queries")), inputs.notes)


def with_queries(verdict, inputs, max_queries: int | None):
    """The verdict with what was sent outside its budget: the probes before it (``meta["queries"]``).

    As a run's ``result.json`` says it (``queries``: ``max_queries``, ``n_queries``, ``outside_budget``), so that
    the verdict's summary and the gate's line name every row the model received (architecture: the model under
    test).

    Parameters
    ----------
    verdict : Verdict
    inputs : RunInputs
        Its ``probe_rows``: the rows the checks before the verdict sent (accepted values, F1, bins' agreement).
    max_queries : int or None
        The verdict's budget.

    Returns
    -------
    Verdict
        A copy.
    """
    record = {"max_queries": max_queries, "n_queries": int(verdict.n_queries),
              "outside_budget": {"probes": int(getattr(inputs, "probe_rows", 0))}}
    return dataclasses.replace(verdict, meta={**verdict.meta, "queries": record})


def with_notes(verdict, notes: Sequence[str]):
    """The verdict with the inputs' notes (refused values, held-out rows that may include training rows) first.

    Parameters
    ----------
    verdict : Verdict
    notes : sequence of str
        The inputs' notes.

    Returns
    -------
    Verdict
        A copy (``verdict`` itself without notes).
    """
    from dataclasses import replace

    return replace(verdict, notes=tuple(notes) + tuple(verdict.notes)) if notes else verdict


def retrain(model, data, *, spec: DataSpec | None = None, idis=None, label=None, positive_class=None,
            favourable=None, protected=None, bins=None, schema=None, test=None, test_size: float | None = None,
            generator: str = "auto",
            seeds: str = "iandd", max_global: int = 100, max_local: int = 100, random_state=0,
            trust_model_file: bool = False, model_output: str | None = None, model_input: str = "auto",
            name: str | None = None, out: str | os.PathLike | None = None,
            on_step: Callable[[str], None] | None = None, couple=None, constraints=None, **retrain_params):
    """Make your model fairer with the IDIs found, and measure it before and after on the held-out rows.

    Takes the model and data as :func:`audit` does. The IDIs are ``idis`` (an :class:`AuditResult`, a
    ``SearchResult``, or a pair of arrays ``(idis, counterparts)`` of codes), or, by default, those of a fresh
    search (``generator``, ``seeds``, budget) whose seeds come from the training rows only, so that no held-out
    individual enters training.

    Parameters
    ----------
    model, data, spec, label, positive_class, favourable, protected, bins, schema, test, test_size, random_state
        As in :func:`audit`; with ``spec`` and none of its fields given, the ``spec`` of ``idis`` (an
        :class:`AuditResult`) is used, so the IDIs are read in the meaning they were found in.
    generator, seeds, max_global, max_local
        The search that finds the IDIs when ``idis`` is not given, as in :func:`audit` (defaults ``"auto"``,
        ``"iandd"``, 100, 100).
    trust_model_file, model_output, model_input, name
        As in :func:`audit`.
    idis : AuditResult, SearchResult or (numpy.ndarray, numpy.ndarray), optional
        The IDIs to retrain with; default: a fresh search whose seeds come from the training rows.
    out : path, optional
        Retrain folder (``retrain.json``, ``report.md``, the trade-off plot, and the retrained model saved in the
        format the model came in: ``.skops`` for sklearn models, ``.pt`` TorchScript for torch).
    on_step : callable, optional
        Called with each step's name as it starts.
    couple, constraints : optional
        As in :func:`audit` (architecture: counterparts that could exist).
    **retrain_params
        Of :func:`chiralfair.mitigation.retrain` (``method``, ``protocol``, ``share``, ``pairs``, ``mode``, ``trainer``,
        ``ensemble``, ``margin``, ...).

    Returns
    -------
    RetrainResult
        Row 0 is the model before, the others after; every F1 and IDI rate on the held-out rows.

    Raises
    ------
    ConfigError, DatasetError, DomainError, ModelFileError, ModelCapabilityError
        As :func:`audit`; also for a model chiralfair cannot train again (an ONNX file, a TorchScript module
        without ``trainer=``).

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from sklearn.compose import make_column_transformer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import OneHotEncoder
    >>> import chiralfair
    >>> rng = np.random.default_rng(0)
    >>> people = pd.DataFrame({"sex": rng.choice(["f", "m"], 600), "hours": rng.integers(20, 60, 600)})
    >>> people["y"] = np.where(people["hours"] + 10 * (people["sex"] == "m") > 45, "yes", "no")  # biased
    >>> train, test = people.iloc[:400], people.iloc[400:]
    >>> pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["sex"]), remainder="passthrough"),
    ...                      LogisticRegression()).fit(train[["sex", "hours"]], train["y"])
    >>> fairer = chiralfair.retrain(pipe, train, test=test, label="y", positive_class="yes", protected="sex",
    ...                             method="counterfactual", max_global=20, max_local=10)
    >>> before, after = fairer.rows
    >>> before["test_idi_rate"], after["test_idi_rate"]
    (0.27, 0.0)
    >>> fairer.improved                     # no IDI left, but more F1 lost than max_f1_loss allows
    False
    >>> fairer.leakage["n_test_projections_added"]
    0
    """
    seed, random_state_meta = resolve_seed(random_state)
    from ..mitigation.retraining import retrain as retrain_model

    if spec is None and isinstance(idis, AuditResult) and idis.spec is not None and not stated_fields(
            label=label, positive_class=positive_class, favourable=favourable, protected=protected, bins=bins,
            schema=schema, couple=couple, constraints=constraints, model_input=model_input,
            model_output=model_output):
        spec = idis.spec

    check_keywords(retrain_params, retrain_model, "retrain's keyword arguments", fixed=RETRAIN_SETS)
    plan = None
    if idis is None:
        plan = SearchPlan(seeds=seeds, generator=generator, max_global=max_global, max_local=max_local,
                          random_state=seed)
        plan.check()
    inputs = resolve_inputs(model, data, spec=spec, label=label, positive_class=positive_class,
                            favourable=favourable, protected=protected, bins=bins, schema=schema, test=test,
                            test_size=test_size,
                            random_state=seed, trust_model_file=trust_model_file, model_output=model_output,
                            model_input=model_input, name=name, on_step=on_step, couple=couple,
                            constraints=constraints)
    from .retraining import retrain_inputs

    return retrain_inputs(inputs, idis=_idis_of(idis), plan=plan, random_state=seed, out=out, on_step=on_step,
                          **retrain_params)


# Arguments of chiralfair.mitigation.retrain that the front door sets from the inputs.
RETRAIN_SETS = ("model", "dataset", "idis", "train_index", "searched_with", "cache_dir", "random_state")


def _check_verdict_params(params, name: str = "verdict_params") -> None:
    """Refuse keys of ``params`` that :func:`chiralfair.verdict.estimate` does not take (before any work)."""
    from ..verdict import estimate

    check_keywords(params, estimate, name, fixed=("model", "dataset", "population", "test_index",
                                                               "random_state"))


def _idis_of(idis):
    """The search result inside an :class:`AuditResult`; anything else as it is."""
    return idis.outcome.result if isinstance(idis, AuditResult) else idis


class AuditResult:
    """What :func:`audit` found: the verdict, the figures of ``chiralfair run``, the IDI pairs, and the notes.

    Attributes
    ----------
    outcome : chiralfair.pipeline.RunOutcome
        Verdict, search result, seed report, model quality and timings.
    inputs : chiralfair.pipeline.RunInputs
        The model and data as tested (protected domain restricted to the values the model accepts), with the
        held-out rows.
    """

    def __init__(self, outcome, inputs: RunInputs):
        self.outcome = outcome
        self.inputs = inputs

    @property
    def dataset(self):
        """The encoded data (:class:`~chiralfair.datasets.Dataset`)."""
        return self.inputs.dataset

    @property
    def verdict(self):
        """The :class:`~chiralfair.verdict.Verdict` over the held-out rows (None when not estimated)."""
        return self.outcome.verdict

    @property
    def group_metrics(self):
        """Selection rate, TPR, FPR and IDI rate per protected group on the held-out rows (None without a verdict).

        A :class:`~chiralfair.verdict.group_metrics.GroupMetrics`; ``.to_frame()`` gives the table.
        """
        return self.outcome.group_metrics

    def held_out_rows(self):
        """Each held-out person's labels, ``is_idi``, ``left_out`` and protected values, for your own ``MetricFrame``.

        ``is_idi`` and ``left_out`` follow the verdict: the people it leaves out (a missing protected value, no
        counterpart that could exist) are ``left_out`` and never ``is_idi``, so ``is_idi.sum()`` is the verdict's
        ``n_affected`` and the mean of ``is_idi`` over the rows not ``left_out`` its share.

        Returns
        -------
        pandas.DataFrame, shape (n_held_out, 6 + n_protected)
            See :func:`chiralfair.verdict.group_metrics.held_out_rows`; one batch of the discrimination check
            (``n_held_out × n_combinations`` model queries).

        Examples
        --------
        >>> rows = result.held_out_rows()                                              # doctest: +SKIP
        >>> counted = rows[~rows.left_out]                                             # doctest: +SKIP
        >>> MetricFrame(metrics=selection_rate, y_true=counted.y_true, y_pred=counted.is_idi,
        ...             sensitive_features=counted["sex"])                             # doctest: +SKIP
        """
        from .held_out import held_out_frame

        return held_out_frame(self.inputs, self.verdict)

    @property
    def spec(self) -> DataSpec | None:
        """The description of the data and the model's language this audit read (None for a benchmark by name)."""
        return self.inputs.spec

    @property
    def result(self):
        """The :class:`~chiralfair.results.SearchResult` of the search."""
        return self.outcome.result

    @property
    def n_idis(self) -> int:
        """Unique IDIs found (global ∪ local)."""
        return int(self.outcome.result.n_idis)

    @property
    def notes(self) -> list[str]:
        """Everything a reader must know about this run (refused protected values, seed notes, ...)."""
        s = self.to_dict()
        return list(s["notes"]) + list(s["seeds"]["notes"])

    def to_dict(self) -> dict[str, Any]:
        """The figures of ``result.json``.

        Returns
        -------
        dict
        """
        return self.outcome.summary()

    def idis(self):
        """IDI pairs as the model was fed them, one row per IDI (``pandas.DataFrame``, columns as in ``idis.parquet``).

        Each labelled column shows its code's label; for a model fed your rows, a binned column holds the value the
        model was fed (its bin's representative, in your column's dtype), followed by ``<column> (bin)`` with the
        bin (:meth:`SearchResult.to_frame <chiralfair.results.SearchResult.to_frame>`).

        Returns
        -------
        pandas.DataFrame, shape (n_idis, 2 * (n_features + n_binned) + 4)
        """
        return self.outcome.result.to_frame(self.outcome.domain, codec=self.outcome.codec)

    def summary(self) -> str:
        """What ``chiralfair run`` prints: the verdict, then the search's figures, seed clustering and notes.

        Returns
        -------
        str
        """
        from ..reporting.report import outcome_lines

        return "\n".join(outcome_lines(self.to_dict()))

    def write(self, out: str | os.PathLike) -> Path:
        """Write the run folder (``result.json``, ``idis.parquet``, ``report.md``, ``report.html``).

        Parameters
        ----------
        out : str or path-like
            The run folder; refused if it holds files of something else.

        Returns
        -------
        pathlib.Path
            The folder.
        """
        from ..reporting.report import write_run

        return write_run(self.outcome, out)

    def _repr_html_(self) -> str:
        from ..reporting.report import NO_IDI_TEXT, summary_rows, verdict_lines

        summary = self.to_dict()
        verdict = "".join(f"<p><b>{escape(line)}</b></p>" for line in verdict_lines(summary))
        rows = "".join(f"<tr><td>{escape(k)}</td><td>{escape(v)}</td></tr>" for k, v in summary_rows(summary))
        notes = "".join(f"<li>{escape(n)}</li>" for n in self.notes)
        pairs = self.idis().head(10)
        return (f"<div>{verdict}<p>{escape(self.summary().splitlines()[len(verdict_lines(summary))])}</p>"
                f"<table>{rows}</table>" + (f"<p>Notes:</p><ul>{notes}</ul>" if notes else "")
                + (f"<p>First IDI pairs:</p>{pairs.to_html(index=False)}" if len(pairs) else
                   f"<p>{escape(NO_IDI_TEXT)}</p>") + "</div>")

    def __repr__(self) -> str:
        return self.summary()


__all__ = ["AuditResult", "audit", "estimate", "estimate_benchmark", "resolve_inputs", "resolve_seed", "retrain"]
