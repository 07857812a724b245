"""The steps after the inputs: seeds, search, verdict; each a function of :class:`~.inputs.RunInputs`.

A :class:`SearchPlan` names the seed strategy, the generator and the budget; :func:`prepare_search` builds
both (validating their parameters) and checks them against the model once, before any seed is selected.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..exceptions import ConfigError
from .checks import (
    check_budget,
    check_gradient,
    check_max_queries,
    check_probabilities,
    check_seed_strategy,
    generator_needs_gradient,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SearchPlan:
    """How to search: seed strategy, generator, budget, their parameters and the random state.

    Attributes
    ----------
    seeds : str
        Seed strategy name (``iandd``, ``i``, ``data_rows``, ``cluster``, ``random``, ``rows``, ``expga``).
    generator : str
        Generator name, or ``"auto"``: picked by what the model offers (:func:`resolve_generator`).
    max_global, max_local : int
        Budget: seeds of the global phase, local iterations per global IDI.
    random_state : int
        Drives the seeds and the search.
    generator_params, seed_params : dict
        Extra parameters of the generator and of the seed strategy.
    max_queries : int or None
        Query budget of the seeds and the search together, in model queries (rows sent to the model); None: none
        but ``max_global`` and ``max_local`` (:func:`run_pipeline`).
    """

    seeds: str = "iandd"
    generator: str = "aequitas"
    max_global: int = 100
    max_local: int = 100
    random_state: int = 0
    generator_params: Mapping[str, Any] = field(default_factory=dict)
    seed_params: Mapping[str, Any] = field(default_factory=dict)
    max_queries: int | None = None

    def check(self) -> None:
        """Names and budget (light: no heavy import).

        Raises
        ------
        ConfigError
        """
        check_budget(self.max_global, self.max_local)
        check_max_queries(self.max_queries)
        check_seed_strategy(self.seeds)
        generator_needs_gradient(self.generator)  # the name; the model is checked in prepare_search
        if self.generator_params and self.generator == "auto":
            raise ConfigError(f"generator_params {dict(self.generator_params)!r} need a named generator: 'auto' picks "
                              "eidig or aequitas by what the model offers, each with its own parameters; name "
                              "the generator (--generator NAME) to pass them")
        if self.generator_params:  # names of parameters: needs the classes (heavier), only when some are given
            from ..generators import (
                GENERATORS,
                _load_all,  # noqa: F401  (registers the built-in generators)
            )

            GENERATORS.check_parameters(self.generator, {"max_global": 1, "max_local": 0, **self.generator_params})
        if self.seed_params:
            from ..seeds import SEED_STRATEGIES
            from ..seeds import _load_all as _seeds  # noqa: F401  (registers the built-in strategies)

            SEED_STRATEGIES.check_parameters(self.seeds, self.seed_params)


@dataclass(frozen=True, eq=False)
class PreparedSearch:
    """A search ready to run: the seed strategy and the generator, built and checked against the model."""

    plan: SearchPlan
    strategy: Any
    generator: Any
    #: How ``generator="auto"`` was resolved (``asked``, ``generator``, ``reason``); None for a named generator.
    generator_choice: dict[str, str] | None = None


def prepare_search(plan: SearchPlan, inputs, *, cache_dir=None) -> PreparedSearch:
    """Build the seed strategy and the generator of ``plan`` and check them against the model under test.

    The chiral model of ``i`` and ``iandd`` belongs to the model under test: it is seeded by the model's random
    state (``inputs.random_state``) and cached beside the zoo model (:func:`chiralfair.seeds.names.chiral_params`).

    Parameters
    ----------
    plan : SearchPlan
        Seed strategy, generator, budget, random state and their parameters.
    inputs : RunInputs
        The model and data.
    cache_dir : str or path-like, optional
        Model cache folder for the chiral model (default ``$CHIRALFAIR_CACHE``).

    Returns
    -------
    PreparedSearch
        The strategy, the generator and the plan, checked.

    Raises
    ------
    ConfigError
        For an unknown name or parameter, or a chiral seed strategy for a model that cannot be retrained.
    ModelCapabilityError
        For a gradient generator on a model without ``input_gradient``.
    """
    from ..generators import make_generator
    from ..seeds import make_seed_strategy
    from ..seeds.names import CHIRAL_SEED_STRATEGIES, chiral_params

    name, choice = resolve_generator(plan.generator, inputs.model)
    generator = make_generator(name, max_global=plan.max_global, max_local=plan.max_local,
                               **dict(plan.generator_params))
    check_gradient(name, inputs.model_name, inputs.model.has_gradient)
    check_probabilities(name, inputs.model_name, inputs.model.has_proba)
    seed_params = dict(plan.seed_params)
    if plan.seeds in CHIRAL_SEED_STRATEGIES:
        _check_chiral_trainable(plan.seeds, seed_params, inputs.model)
        reference = getattr(inputs, "reference", True)
        for key, value in chiral_params(plan.seeds, inputs.random_state, cache_dir, reference).items():
            seed_params.setdefault(key, value)
    strategy = make_seed_strategy(plan.seeds, **seed_params)
    return PreparedSearch(plan, strategy, generator, choice)


def resolve_generator(name: str, model) -> tuple[str, dict[str, str] | None]:
    """The generator a plan names, ``"auto"`` resolved by what ``model`` offers.

    ``auto``: EIDIG on a model with an input gradient and probabilities, AEQUITAS on any other (the black-box
    generator that found the most IDIs at an equal query budget in ``benchmarks/results/blackbox_grid.md``;
    :func:`chiralfair.generators.names.auto_generator`).

    Parameters
    ----------
    name : str
        A generator name, or ``"auto"``.
    model : CountingModel
        The model under test.

    Returns
    -------
    name : str
        The generator to build.
    choice : dict or None
        For ``"auto"``: ``asked``, ``generator`` and ``reason``; None for a named generator.
    """
    from ..generators.names import AUTO, auto_generator

    if name != AUTO:
        return name, None
    chosen, reason = auto_generator(has_gradient=model.has_gradient, has_proba=model.has_proba)
    return chosen, {"asked": AUTO, "generator": chosen, "reason": reason}


def with_generator_choice(result, choice: dict[str, str]):
    """``result`` saying which generator ``"auto"`` picked and why (``meta["generator_choice"]`` and a note).

    Parameters
    ----------
    result : SearchResult
    choice : dict
        Of :func:`resolve_generator`.

    Returns
    -------
    SearchResult
    """
    note = f"generator auto: {choice['generator']}, since {choice['reason']}"
    return result.with_meta({"generator_choice": dict(choice)}, notes=(note,))


def _check_chiral_trainable(seeds: str, seed_params: dict, model) -> None:
    if "chiral_model" in seed_params or "chiral_trainer" in seed_params:
        return
    from sklearn.base import BaseEstimator

    if getattr(model, "spec", None) is None and not isinstance(model.estimator, BaseEstimator):
        raise ConfigError(
            f"seed strategy {seeds!r} retrains the model under test on mutated data (the chiral model), and "
            f"{model.name!r} ({type(model.estimator).__name__}) cannot be retrained here; use seeds='cluster' or "
            "'random' (CLI: --seeds cluster), or pass seed_params={'chiral_trainer': ...}")


def select_seeds(prepared: PreparedSearch, inputs, *, dataset=None,
                 reuse_seeds: Callable[[Callable[[], Any]], Any] | None = None):
    """Select ``max_global`` seeds for the model under test.

    Parameters
    ----------
    prepared : PreparedSearch
    inputs : RunInputs
    dataset : Dataset, optional
        The rows to draw data seeds from; default ``inputs.dataset`` (all rows). Retraining passes the training
        rows only (:meth:`RunInputs.training_rows`), so that no held-out individual enters training.
    reuse_seeds : callable, optional
        Called with the function that selects the seeds; returns the :class:`~chiralfair.results.SeedReport` to
        use (an experiment grid returns a stored one). Default: select.

    Returns
    -------
    SeedReport
    """
    plan = prepared.plan
    inputs.model.reset_queries()

    def select():
        return prepared.strategy.select(inputs.model, inputs.dataset if dataset is None else dataset,
                                        plan.max_global, random_state=plan.random_state)

    return (reuse_seeds or (lambda pick: pick()))(select)


def run_search(prepared: PreparedSearch, inputs, seed_report, *, out: str | os.PathLike | None = None, meta=None):
    """Run the generator from the seeds; with ``out``, stream the IDI pairs to ``out/idis.parquet``.

    ``out/result.json`` says ``"partial": true`` from the start of the search until the folder is finished. A
    Ctrl-C keeps the pairs found so far, readable, and marks the folder interrupted.

    Parameters
    ----------
    prepared : PreparedSearch
        Of :func:`prepare_search`.
    inputs : RunInputs
    seed_report : SeedReport
        The seeds (:func:`select_seeds`).
    out : str or path-like, optional
        Run folder to stream the pairs to; None keeps them in memory.
    meta : dict, optional
        Recorded in the result's ``meta``.

    Returns
    -------
    SearchResult
    """
    from ..results.run_folder import PAIRS_NAME, PairSink, fed_codec, mark_interrupted, mark_partial

    sink = None
    if out is not None:
        mark_partial(out, meta or {})
        sink = PairSink(Path(out) / PAIRS_NAME, codec=fed_codec(inputs.model))  # pairs as the model was fed them
    try:
        return prepared.generator.run(inputs.model, inputs.domain, seed_report,
                                      random_state=prepared.plan.random_state, sink=sink)
    except KeyboardInterrupt:
        if out is not None:
            n_pairs = mark_interrupted(out, sink)
            logger.warning("search interrupted: %d IDI pairs kept in %s (result.json marked partial)", n_pairs,
                           Path(out) / PAIRS_NAME)
        raise


def estimate_verdict(inputs, *, random_state: int, population: str = "test", **params):
    """The verdict over the held-out rows (or ``population``), with the inputs' favourable label.

    Parameters
    ----------
    inputs : RunInputs
    random_state : int
    population : {"test", "rows", "domain"}
        ``"test"``: the held-out rows (``inputs.test_index``); ``"rows"``: every row of the data (the model's
        training rows included); ``"domain"``: uniform draws from the input domain.
    **params
        Passed to :func:`chiralfair.verdict.estimate` (``confidence``, ``margin``, ``max_queries``, ``method``,
        ``gamma``, ``favourable``, ``exact``, ``batch_size``).

    Returns
    -------
    Verdict
        ``meta["population_rows"]`` says which rows were checked.

    Raises
    ------
    ConfigError
        When the favourable label is not known and not given.
    """
    from dataclasses import replace

    from ..verdict import estimate

    favourable = params.pop("favourable", None)
    note = None
    if favourable is None:
        favourable, note = inputs.favourable, inputs.favourable_note
    if favourable is None:
        raise ConfigError(f"the favourable label of {inputs.dataset.name!r} is not known: pass favourable= (the label "
                          "0 or 1 that is the favourable outcome)")
    inputs.model.reset_queries()
    benchmark_default = favourable == inputs.favourable and inputs.favourable_note is None and note is None
    verdict = estimate(inputs.model, inputs.dataset, population=population, test_index=inputs.test_index,
                       favourable=None if benchmark_default else favourable, random_state=random_state, **params)
    rows = {"test": inputs.test_rows, "rows": f"every row of the data ({inputs.dataset.n_samples:,}), the model's "
            "training rows included", "domain": "uniform draws from the input domain"}[population]
    notes = verdict.notes
    if note is not None:  # say where the favourable label came from, rather than "as given" to estimate()
        notes = tuple(note if n.startswith("favourable label") else n for n in notes)
    left_out = list(getattr(inputs, "left_out", ())) if population != "domain" else []
    verdict = replace(verdict, notes=notes, meta={**verdict.meta, "population_rows": rows,
                                                  "model_f1": inputs.quality["f1"],
                                                  "model_one_class": inputs.quality.get("one_class"),
                                                  "model_accuracy": inputs.quality["accuracy"],
                                                  "model_evaluated_on": inputs.quality["evaluated_on"],
                                                  "left_out": left_out})
    if verdict.n_affected == 0 and population == "test" and inputs.quality.get("one_label") is not None:
        verdict = replace(verdict, meta={**verdict.meta, "one_label": inputs.quality["one_label"]})
    return with_blind_spot(verdict, inputs, random_state) if verdict.n_affected == 0 else verdict


def with_blind_spot(verdict, inputs, random_state: int):
    """A verdict of no one affected, with what the test cannot see: the proxies' strength (first note, and meta).

    Every front door's verdict passes here (``run``, ``audit``, ``estimate``, ``check``), so each of them says,
    beside a 0% verdict, how well the other columns stand in for the protected attribute.

    Parameters
    ----------
    verdict : Verdict
        With ``n_affected == 0``.
    inputs : RunInputs
    random_state : int
        Seeds the proxy model.

    Returns
    -------
    Verdict
        ``meta["proxies"]`` (:func:`chiralfair.verdict.proxies.proxy_strength`), the note first.
    """
    from dataclasses import replace

    from ..verdict.proxies import blind_spot_note, proxy_strength

    proxies = proxy_strength(inputs.dataset, inputs.train_index, inputs.test_index, random_state=random_state)
    return replace(verdict, notes=(blind_spot_note(verdict, proxies), *verdict.notes),
                   meta={**verdict.meta, "proxies": proxies})


def left_out_values(before, after, test_index) -> tuple[dict[str, Any], ...]:
    """The protected values the model refuses, left out of ``after``'s domain with their rows (none: empty).

    Parameters
    ----------
    before, after : Dataset
        The data before and after the probe (:func:`chiralfair.models.probe.restrict_to_accepted_values`).
    test_index : numpy.ndarray of int
        The held-out rows of ``before``.

    Returns
    -------
    tuple of dict
        ``attribute``, ``value`` (its label), ``n_rows`` (data rows holding it) and ``n_held_out`` (of them, held
        out): what :func:`chiralfair.verdict.gate.untested_groups` names.
    """
    out = []
    domain = before.domain
    for col, values, kept in zip(domain.protected, domain.protected_values, after.domain.protected_values,
                                 strict=True):
        feature = domain.features[col]
        for value in sorted(set(values) - set(kept)):
            out.append({"attribute": feature.name, "value": feature.label(value),
                        "n_rows": int((before.X[:, col] == value).sum()),
                        "n_held_out": int((before.X[test_index, col] == value).sum())})
    return tuple(out)


def diversities(inputs, result, seed_report, random_state: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Diversity of the IDIs found and of the seeds, against one reference per model.

    The reference is seeded by the model's random state, so every seed strategy and repeat of a fixed model is
    measured against the same clusters and surrogate tree; the sampling of the inputs by the run's random_state.

    Parameters
    ----------
    inputs : RunInputs
    result : SearchResult
    seed_report : SeedReport
    random_state : int
        Drives the sampling of the inputs explained.

    Returns
    -------
    idis : dict
        The diversity of the IDIs found (:class:`~chiralfair.seeds.diversity_report.DiversityReport` as a dict).
    seeds : dict
        The diversity of the seeds.
    """
    from ..seeds.diversity_report import diversity_reference, seed_diversity

    reference = diversity_reference(inputs.model, inputs.dataset, random_state=inputs.random_state)
    return (seed_diversity(result.idis, reference, random_state=random_state).to_dict(),
            seed_diversity(seed_report.seeds, reference, random_state=random_state).to_dict())


def budget_spent_on_seeds(prepared: PreparedSearch, inputs, spent):
    """The seed report of a seed strategy that the query budget stopped: no seeds, and why.

    Parameters
    ----------
    prepared : PreparedSearch
    inputs : RunInputs
    spent : QueryBudgetSpent
        What :meth:`~chiralfair.models.protocol.CountingModel.query_budget` refused.

    Returns
    -------
    SeedReport
        No seeds; ``n_queries`` the rows the strategy sent before the refused call; a note naming the budget.
    """
    import numpy as np

    from ..results import SeedReport

    used = int(inputs.model.n_queries)
    cheaper = [s for s in ("random", "cluster") if s != prepared.plan.seeds]
    note = (f"query budget of {spent.max_queries:,} model queries: seed strategy {prepared.plan.seeds!r} had used "
            f"{spent.spent:,} of them when its next call, of {spent.asked:,} rows, would have passed it "
            f"({spent.spent + spent.asked:,} > {spent.max_queries:,}); that call was not made. Not done: the rest of "
            "the seed selection (no seed was selected) and the whole search (0 queries). The seeds alone need at "
            f"least {spent.spent + spent.asked:,}: raise --max-queries / max_queries"
            + (f", or use seeds that cost fewer queries ({', '.join(cheaper)})" if cheaper else ""))
    n = inputs.domain.n_features
    return SeedReport(strategy=prepared.plan.seeds, seeds=np.zeros((0, n), dtype=np.int64),
                      is_idi=np.zeros(0, dtype=bool), n_queries=used, notes=(note,),
                      meta={"stopped_by": "max_queries", "max_queries": spent.max_queries,
                            "refused_call": spent.asked})


def no_search(prepared: PreparedSearch, inputs, seed_report, spent, *, out: str | os.PathLike | None = None,
              meta=None):
    """The search result of a run whose query budget was spent before the search: nothing searched, said so.

    Parameters
    ----------
    prepared : PreparedSearch
    inputs : RunInputs
    seed_report : SeedReport
        Of :func:`budget_spent_on_seeds`.
    spent : QueryBudgetSpent
    out : str or path-like, optional
        Run folder: an empty ``idis.parquet`` is written there.
    meta : dict, optional
        Recorded in the result's ``meta``.

    Returns
    -------
    SearchResult
        No seed, no query, no IDI; ``meta["stopped_by"] == "max_queries"`` and the seed report's note.
    """
    from ..generators.recorder import IDIRecorder
    from ..results import base_meta
    from ..results.run_folder import PAIRS_NAME, PairSink, fed_codec, mark_partial

    sink = None
    if out is not None:
        mark_partial(out, meta or {})
        sink = PairSink(Path(out) / PAIRS_NAME, codec=fed_codec(inputs.model))
    generator = prepared.generator
    recorder = IDIRecorder(inputs.model, inputs.domain, sink=sink)
    return recorder.result(
        generator=generator.name, seed_strategy=prepared.plan.seeds, n_seeds=0, n_seed_idis=0,
        notes=seed_report.notes,
        meta=base_meta(params=generator.params, random_state=prepared.plan.random_state, model=inputs.model.name,
                       protected=inputs.domain.protected_names, stopped_by="max_queries",
                       max_queries=spent.max_queries))


def with_query_budget(result, seed_report, max_queries: int):
    """``result`` saying what a run's query budget allowed and what the seeds and the search used of it.

    Parameters
    ----------
    result : SearchResult
    seed_report : SeedReport
    max_queries : int
        The budget of the seeds and the search together.

    Returns
    -------
    SearchResult
        With ``meta["query_budget"]``: ``max_queries``, ``n_queries`` (seeds and search, never more than
        ``max_queries``), ``n_seed_queries``, ``n_search_queries`` and ``hit`` (True when a call was refused
        because it would have passed the budget), and a note saying the same.
    """
    n_seeds, n_search = int(seed_report.n_queries), int(result.n_queries)
    used = n_seeds + n_search
    hit = result.meta.get("stopped_by") == "max_queries"
    in_seeds = (seed_report.meta or {}).get("stopped_by") == "max_queries"
    budget = {"max_queries": int(max_queries), "n_queries": used, "n_seed_queries": n_seeds,
              "n_search_queries": n_search, "hit": hit, "stopped_in": "seeds" if in_seeds else "search" if hit
              else None}
    if in_seeds:
        refused = (seed_report.meta or {}).get("refused_call")
        ended = (f"hit during the seed selection: its next call{f', of {refused:,} rows,' if refused else ''} was "
                 "not made, no seed was selected and no search ran")
    elif hit:
        ended = "hit: the search stopped at the first call that would have passed it"
    else:
        ended = "not hit: max_global and max_local ended the search first"
    note = (f"query budget: {used:,} of {max_queries:,} model queries used ({n_seeds:,} by the seeds, {n_search:,} "
            f"by the search); {ended}")
    return result.with_meta({"query_budget": budget}, notes=(note,))
