"""The run pipeline: inputs → seeds → search → verdict → write, the one place a run is wired.

:func:`run_pipeline` takes resolved :class:`~.inputs.RunInputs` (from names or from objects) and a
:class:`~.steps.SearchPlan`; :func:`run_experiment` is the same from a :class:`~.config.RunConfig` of names.
Every front door (``chiralfair run``, ``chiralfair.audit``, grid cells) calls one of them.
See architecture: layers and habits.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from .. import __version__
from .._deadline import check_deadline
from ..models.protocol import QueryBudgetSpent
from ..results.run_folder import StagedFolder, fed_codec, fed_columns
from .config import RunConfig, validate_config
from .held_out import measure_group_metrics
from .inputs import RunInputs, inputs_from_names
from .outcome import RunOutcome
from .steps import (
    SearchPlan,
    budget_spent_on_seeds,
    diversities,
    estimate_verdict,
    no_search,
    prepare_search,
    run_search,
    select_seeds,
    with_generator_choice,
    with_query_budget,
)

logger = logging.getLogger(__name__)

STEPS = ("data", "model", "seeds", "search", "verdict")


def run_experiment(config: RunConfig, *, on_step: Callable[[str], None] | None = None,
                   out: str | os.PathLike | None = None,
                   reuse_seeds: Callable[[Callable[[], Any]], Any] | None = None) -> RunOutcome:
    """Run one configuration of names end to end: benchmark data, zoo model, seeds, search, verdict.

    Parameters
    ----------
    config : RunConfig
    on_step : callable, optional
        Called with the name of each step as it starts (``"data"``, ``"model"``, ``"seeds"``, ``"search"``,
        ``"verdict"``), e.g. to drive a progress display.
    out : str or path-like, optional
        Run folder. When given, the search streams its IDI pairs to ``out/idis.parquet`` with bounded memory,
        ``out/result.json`` says ``"partial": true`` until :func:`chiralfair.reporting.report.write_run` finishes the
        folder, and the result reads the pairs back lazily. Without it the pairs are kept in memory.
    reuse_seeds : callable, optional
        Called with the function that selects the seeds; returns the :class:`SeedReport` to use (an experiment
        grid returns the report an earlier cell stored). Default: select the seeds.

    Returns
    -------
    RunOutcome

    Raises
    ------
    ConfigError, DatasetError, DomainError, DataHomeError, ChecksumError, ModelCapabilityError
        Names, budgets and random states are checked first (:func:`validate_config`), before any import of
        torch, scikit-learn, shap or z3.
    RunFolderError
        If ``out`` cannot receive a run; checked before any work.
    TimeLimitError
        Inside :func:`chiralfair._deadline.time_limit`, once the limit has passed.

    Examples
    --------
    >>> from chiralfair.pipeline import RunConfig, run_experiment
    >>> config = RunConfig(dataset="census", protected=("sex",), model="lr", max_global=20, max_local=10)
    >>> outcome = run_experiment(config)            # trains (and caches) the zoo LR and its chiral model
    >>> outcome.result.n_idis > 0, outcome.verdict.population
    (True, 'test')
    """
    validate_config(config)
    plan = SearchPlan(seeds=config.seeds, generator=config.generator, max_global=config.max_global,
                      max_local=config.max_local, random_state=config.random_state,
                      generator_params=dict(config.generator_params), seed_params=dict(config.seed_params),
                      max_queries=config.max_queries)
    with run_folder_guard(out) as folder:  # an earlier run in out is replaced only once this one succeeds
        step = _checked_steps(on_step)
        t_all = time.perf_counter()
        inputs = inputs_from_names(config, step=step)
        outcome = run_pipeline(inputs, plan, config=config, verdict=config.verdict, diversity=config.diversity,
                               out=folder.path, on_step=step, reuse_seeds=reuse_seeds, cache_dir=config.cache_dir,
                               started=t_all,
                               verdict_params={"plausible_only": True} if config.plausible_only else None)
    return replace(outcome, result=folder.moved(outcome.result))


def run_pipeline(inputs: RunInputs, plan: SearchPlan, *, config: RunConfig | None = None, verdict: bool = True,
                 verdict_params: dict[str, Any] | None = None, diversity: bool = False,
                 out: str | os.PathLike | None = None, on_step: Callable[[str], None] | None = None,
                 reuse_seeds=None, cache_dir=None, random_state_meta: dict[str, Any] | None = None,
                 started: float | None = None, seeds_from_training_rows: bool = False,
                 held_out_verdict: Callable[..., Any] | None = None) -> RunOutcome:
    """Seeds, search and verdict for resolved inputs.

    Parameters
    ----------
    inputs : RunInputs
    plan : SearchPlan
    config : RunConfig, optional
        The parameters recorded in the outcome; default: made from ``inputs`` and ``plan``.
    verdict : bool
        Estimate the verdict over the held-out rows (when the favourable label is known).
    verdict_params : dict, optional
        Passed to :func:`chiralfair.verdict.estimate` (``confidence``, ``margin``, ...).
    diversity : bool
        Measure the diversity of the seeds and the IDIs found.
    out, on_step, reuse_seeds
        As in :func:`run_experiment`.
    cache_dir : path, optional
        Cache of the chiral model.
    random_state_meta : dict, optional
        How the random state was given (recorded in ``meta``).
    started : float, optional
        ``time.perf_counter()`` at the start of the run (default: now), for ``seconds["total"]``.
    seeds_from_training_rows : bool
        Draw data seeds from the training rows only (retraining: no held-out individual may enter training);
        default: from every row, as the paper does.
    held_out_verdict : callable, optional
        Makes the verdict instead of :func:`~.steps.estimate_verdict`, with its arguments (held-out rows read as a
        stream: :mod:`chiralfair.pipeline.stream`).

    Returns
    -------
    RunOutcome
    """
    step = on_step or (lambda name: None)
    t_all = time.perf_counter() if started is None else started
    seconds = dict(inputs.seconds)
    if config is None:
        config = RunConfig(dataset=inputs.dataset.name, protected=tuple(inputs.domain.protected_names),
                           model=inputs.model_name, seeds=plan.seeds, generator=plan.generator,
                           max_global=plan.max_global, max_local=plan.max_local, random_state=plan.random_state,
                           generator_params=dict(plan.generator_params), seed_params=dict(plan.seed_params),
                           verdict=verdict, diversity=diversity, max_queries=plan.max_queries)
    codec = fed_codec(inputs.model)
    fed_columns(inputs.domain, codec)  # a column named as a binned column's bin in the pairs: refused before the search
    prepared = prepare_search(plan, inputs, cache_dir=cache_dir)

    meta = {"chiralfair_version": __version__, "config": config.to_dict(), "source": inputs.source,
            "protected": inputs.domain.protected_names, "domain": inputs.domain.to_dict()}
    rows = ModelRows(inputs)
    with inputs.model.query_budget(plan.max_queries):  # the seeds and the search share it
        step("seeds")
        t = time.perf_counter()
        seeds_spent: QueryBudgetSpent | None = None
        try:
            seed_report = select_seeds(prepared, inputs, reuse_seeds=reuse_seeds,
                                       dataset=inputs.training_rows() if seeds_from_training_rows else None)
        except QueryBudgetSpent as spent:
            seed_report, seeds_spent = budget_spent_on_seeds(prepared, inputs, spent), spent
        seconds["seeds"] = time.perf_counter() - t

        step("search")
        t = time.perf_counter()
        if seeds_spent is None:
            # what the seeds cost counts even when they were not selected here (reuse_seeds: a stored report)
            left = None if plan.max_queries is None else max(plan.max_queries - seed_report.n_queries, 0)
            with inputs.model.query_budget(left):
                result = run_search(prepared, inputs, seed_report, out=out, meta=meta)
        else:
            result = no_search(prepared, inputs, seed_report, seeds_spent, out=out, meta=meta)
        seconds["search"] = time.perf_counter() - t
    if plan.max_queries is not None:
        result = with_query_budget(result, seed_report, plan.max_queries)
    if prepared.generator_choice is not None:
        result = with_generator_choice(result, prepared.generator_choice)
    rows.mark("budget")
    seed_diversity = None
    if diversity:
        t = time.perf_counter()
        idi_diversity, seed_diversity = diversities(inputs, result, seed_report, plan.random_state)
        result = result.with_diversity(idi_diversity)
        seconds["diversity"] = time.perf_counter() - t
    rows.mark("diversity")

    found_verdict = found_group_metrics = None
    if verdict and inputs.favourable is not None:
        step("verdict")
        t = time.perf_counter()
        found_verdict = (held_out_verdict or estimate_verdict)(inputs, random_state=plan.random_state,
                                                               **dict(verdict_params or {}))
        seconds["verdict"] = time.perf_counter() - t
        rows.mark("verdict")
        t = time.perf_counter()
        found_group_metrics = measure_group_metrics(inputs, verdict=found_verdict, random_state=plan.random_state)
        seconds["group_metrics"] = time.perf_counter() - t
        rows.mark("group_metrics")
    seconds["total"] = time.perf_counter() - t_all
    return RunOutcome(config, result, seed_report, inputs.domain, dict(inputs.quality), seconds, inputs.notes,
                      verdict=found_verdict, favourable=inputs.favourable, seed_diversity=seed_diversity,
                      group_metrics=found_group_metrics,
                      source=inputs.source, queries=query_record(plan.max_queries, seed_report, result, rows),
                      random_state=random_state_meta or {"random_state": plan.random_state,
                                                         "resolved_random_state": plan.random_state},
                      codec=codec)


class ModelRows:
    """The rows a run sends to the model under test, step by step, read from :attr:`CountingModel.n_rows`.

    Every row passed to the model counts, the calls outside the query budget included (architecture: the model
    under test), so that a run can say what it sent beside the budget.

    Parameters
    ----------
    inputs : RunInputs
        Its ``probe_rows`` are the rows the checks before the search sent.
    """

    def __init__(self, inputs) -> None:
        self.model = inputs.model
        self.by_step: dict[str, int] = {"probes": int(getattr(inputs, "probe_rows", 0))}
        self._last = self.model.n_rows

    def mark(self, step: str) -> None:
        """Record the rows sent since the last mark as ``step``'s.

        Parameters
        ----------
        step : str
        """
        now = self.model.n_rows
        self.by_step[step] = self.by_step.get(step, 0) + int(now - self._last)
        self._last = now


def query_record(max_queries: int | None, seed_report, result, rows: ModelRows) -> dict[str, Any]:
    """What a run sent to the model: the queries of the budget, and the rows outside it, by step (``result.json``).

    Parameters
    ----------
    max_queries : int or None
        The budget of the seeds and the search together; None without one.
    seed_report : SeedReport
    result : SearchResult
    rows : ModelRows

    Returns
    -------
    dict
        ``max_queries``, ``n_queries`` (the seeds' and the search's), and ``outside_budget``: the rows the checks
        before the search (``probes``: the probes of the model's accepted values, its F1, the bins' agreement),
        the ``verdict``, the ``group_metrics`` and the ``diversity`` measurement sent, each counted as the model
        received them (0 for a step that did not run).
    """
    outside = {step: int(rows.by_step.get(step, 0)) for step in ("probes", "verdict", "group_metrics", "diversity")}
    return {"max_queries": max_queries, "n_queries": int(seed_report.n_queries) + int(result.n_queries),
            "outside_budget": outside}


class run_folder_guard(StagedFolder):
    """Check ``out`` before any work; write the run at ``.path``, which replaces an earlier run only on success.

    A :class:`~chiralfair.results.run_folder.StagedFolder` of a run: an earlier run in ``out`` stays untouched while
    this one is written beside it, and a failed run's error says where its partial output is.

    Parameters
    ----------
    out : str, path-like or None
        The run folder asked for; None writes nothing.
    """

    def __init__(self, out) -> None:
        super().__init__(out)


def _checked_steps(on_step: Callable[[str], None] | None) -> Callable[[str], None]:
    """``on_step`` preceded by a check of the time limit (:func:`chiralfair._deadline.time_limit`), if any."""
    def step(name: str) -> None:
        check_deadline(f"the run, before step {name!r}")
        if on_step is not None:
            on_step(name)
    return step
