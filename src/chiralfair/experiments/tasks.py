"""What one grid cell runs, per task, and the seed selections its cells share.

- ``search``: :func:`chiralfair.pipeline.run_experiment` (data, model, seeds, search, and the verdict if asked);
  on a row of your own data, :func:`chiralfair.pipeline.resolve_inputs` with your data, schema and model file, then
  the same steps (:func:`chiralfair.pipeline.run_pipeline`).
- ``seeds``: seed selection only (initialization rate, initial IDIs, time).
- ``retrain``: leak-free mitigation (architecture: mitigation). A search with each listed seed strategy, its seeds drawn
  from the model's training rows only (:func:`chiralfair.pipeline.search_training_rows`), then
  :func:`chiralfair.mitigation.retrain` with each one's IDIs for the methods that add IDIs (``paper``), the other
  strategies' IDIs re-checked with them (the I&D paper's Table 4/5, as ``benchmarks/retrain.py``); the methods
  that add no IDIs (``counterfactual``, ``unaware``, ``consistency``) do not depend on the search and run once per
  dataset, protected attributes, model and random state, shared by the cells of every generator
  (``<out>/shared/mitigation/``).

:func:`run_cell` writes the cell's folder (:mod:`.cells`) and never raises for a failing cell: the error goes to
``error.json`` and the grid goes on. Models and chiral models are trained once through the model cache (under
its file lock); seed selections are stored under ``<out>/shared/seeds/`` and reused by every cell with the same
dataset, protected attributes, model, model random state, strategy, parameters, number of seeds and random state
(e.g. the cells of the other generators).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._deadline import check_deadline, time_limit
from ..mitigation.names import BUILTIN_METHODS
from ..storage import atomic_path, atomic_write_text, canonical_json, json_default
from .cells import PAIRS_NAME, Cell, cell_folder, fail_cell, finish_cell, start_cell

logger = logging.getLogger(__name__)


def run_cell(cell: Cell, out: str | os.PathLike, *, limit: float | None = None, data_home: str | None = None,
             cache_dir: str | None = None, log_level: int | None = None) -> dict[str, Any]:
    """Run one cell and write its folder; a failure is recorded in ``error.json``, not raised.

    Parameters
    ----------
    cell : Cell
    out : str or path-like
        The grid's output folder.
    limit : float, optional
        Time limit in seconds (cooperative: checked between steps and at each batch of a search, see
        :mod:`chiralfair._deadline`); a cell over it fails with a ``TimeLimitError``.
    data_home, cache_dir : str, optional
        Raw data and model cache folders (default: ``$CHIRALFAIR_DATA`` and ``$CHIRALFAIR_CACHE``).
    log_level : int, optional
        Level of the ``chiralfair`` logger while the cell runs (restored after); None leaves it as it is.

    Returns
    -------
    dict
        ``key``, ``state`` (``"done"`` or ``"failed"``), ``seconds``, and ``error`` (first line) when failed.

    Raises
    ------
    KeyboardInterrupt
        Passed on: the cell stays missing (no result.json, no error.json) and runs again on resume.
    """
    with _library_log_level(log_level):
        return _run_cell(cell, out, limit, data_home, cache_dir)


@contextlib.contextmanager
def _library_log_level(level: int | None):
    library = logging.getLogger("chiralfair")
    before = library.level
    if level is not None:
        library.setLevel(level)
    try:
        yield
    finally:
        library.setLevel(before)


def _run_cell(cell: Cell, out, limit, data_home, cache_dir) -> dict[str, Any]:
    folder = cell_folder(out, cell.key)
    start_cell(folder, cell)
    start = time.perf_counter()
    try:
        with time_limit(limit), _one_thread(cell):
            result = TASKS[cell.task](cell, Path(out), folder, data_home, cache_dir)
        result["seconds_cell"] = time.perf_counter() - start
        finish_cell(folder, result)
    except Exception as err:
        record = fail_cell(folder, err, time.perf_counter() - start)
        first = (record["message"].splitlines() or [""])[0]
        logger.warning("cell %s (%s) failed: %s: %s", cell.key, describe(cell), record["type"], first)
        return {"key": cell.key, "state": "failed", "seconds": record["seconds"], "error": f"{record['type']}: {first}"}
    logger.info("cell %s (%s) done in %.1f s", cell.key, describe(cell), result["seconds_cell"])
    return {"key": cell.key, "state": "done", "seconds": result["seconds_cell"]}


def describe(cell: Cell) -> str:
    """One line naming the cell's axis values.

    Parameters
    ----------
    cell : Cell

    Returns
    -------
    str
    """
    parts = [cell.row, cell.model, "+".join(cell.seeds), cell.generator or "",
             f"{cell.max_global}/{cell.max_local}",
             "" if cell.max_queries is None else f"max_queries {cell.max_queries}", f"random_state {cell.random_state}"]
    return " ".join(p for p in parts if p)


@contextlib.contextmanager
def _one_thread(cell: Cell):
    """One BLAS/OpenMP thread, and one torch thread when torch is in use: a cell is one core's work."""
    from ..models.threads import single_intra_op_thread, single_native_thread

    with contextlib.ExitStack() as stack:
        stack.enter_context(single_native_thread())
        if cell.model == "dnn" or "torch" in sys.modules:
            stack.enter_context(single_intra_op_thread())
        yield


class SeedStore:
    """One seed selection shared between cells, stored in ``<out>/shared/seeds/<key>.json``.

    ``store(select)`` loads the stored report, or runs ``select()`` and stores its report, under a file lock so
    that two workers never select it twice. Under a query budget (``cell.max_queries``) a stored report is reused
    only if it cost at most the budget: a selection is the same whatever budget it ran under as long as it fits, and
    one that does not fit must be stopped by the budget in this cell (``select()`` then raises
    :class:`~chiralfair.models.protocol.QueryBudgetSpent`, and nothing is stored).

    The report a cell uses is always the one read back from JSON, so the cell that selected and the cells that
    reuse its selection search from identical seeds.

    Parameters
    ----------
    out : pathlib.Path
        The grid's output folder.
    cell : Cell
    strategy : str
        The seed strategy (one of the cell's).
    pool : str
        ``"rows"`` (every data row, the default) or ``"train"`` (the model's training rows only).
    """

    def __init__(self, out: Path, cell: Cell, strategy: str, *, pool: str = "rows"):
        import hashlib

        config = {"dataset": cell.dataset, "protected": list(cell.protected), "model": cell.model,
                  "model_random_state": cell.model_random_state, "seeds": strategy,
                  "seed_params": cell.seed_params.get(strategy, {}), "n_seeds": cell.max_global,
                  "random_state": cell.random_state, **({"couple": True} if cell.couple else {}),
                  **({"own": cell.own} if cell.own else {})}
        if pool != "rows":  # seeds drawn from another pool (the training rows) are another selection
            config["pool"] = pool
        key = hashlib.sha256(canonical_json(config).encode()).hexdigest()[:16]
        self.path = out / "shared" / "seeds" / f"{key}.json"
        self.reused = False
        self.max_queries = cell.max_queries

    def __call__(self, select: Callable[[], Any]):
        """The stored report, or the one ``select()`` returns (then stored)."""
        from filelock import FileLock

        from ..results import SeedReport

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(self.path.parent / f".{self.path.name}.lock"):
            if self.path.is_file():
                stored = self._stored(SeedReport)
                if stored is not None and (self.max_queries is None or stored.n_queries <= self.max_queries):
                    self.reused = True
                    return stored
            text = select().to_json()  # under a budget it raises unless it fits: then it is the stored one
            atomic_write_text(self.path, text)
        return SeedReport.from_json(text)

    def _stored(self, report_class):
        """The stored report, or None (with a warning naming the file) when the file is damaged: select anew."""
        try:
            return report_class.from_json(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as err:
            logger.warning("shared seed selection %s is damaged (%s: %s); selecting the seeds again and replacing "
                           "it", self.path, type(err).__name__, str(err)[:200])
            return None


def _run_config(cell: Cell, strategy: str, data_home, cache_dir):
    from ..pipeline import RunConfig

    return RunConfig(dataset=cell.dataset, protected=cell.protected, model=cell.model, seeds=strategy,
                     generator=cell.generator or "aequitas", max_global=cell.max_global, max_local=cell.max_local,
                     random_state=cell.random_state, model_random_state=cell.model_random_state,
                     data_home=data_home, cache_dir=cache_dir, generator_params=dict(cell.generator_params),
                     seed_params=dict(cell.seed_params.get(strategy, {})), verdict=cell.verdict,
                     diversity=cell.diversity, model_params=dict(cell.model_params), couple=cell.couple,
                     max_queries=cell.max_queries)


def _meta(cell: Cell, data_home, extra_states: dict[str, Any] | None = None) -> dict[str, Any]:
    from ..datasets.home import find_raw
    from ..datasets.published import PUBLISHED
    from ..results.provenance import manifest

    states = {"random_state": cell.random_state, "model_random_state": cell.model_random_state,
              "chiral_random_state": cell.model_random_state, **(extra_states or {})}
    if cell.own:
        return manifest({role: path for role, path in cell.paths.items()}, states)
    rel = PUBLISHED[cell.dataset]["raw"]
    path = find_raw(rel, data_home)
    return manifest({rel: str(path)} if path is not None else {}, states)


def _own_inputs(cell: Cell, step=lambda name: None):
    """The inputs of a row of your own data: your data, schema and model file, checked against their digests."""
    from ..exceptions import ConfigError
    from ..pipeline import resolve_inputs
    from ..results.provenance import file_sha256

    for role, path in cell.paths.items():
        recorded = cell.own[f"{role}_sha256"]
        try:
            now = file_sha256(path)
        except OSError as err:
            raise ConfigError(f"the {role} file {path!r} of grid row {cell.row} cannot be read "
                              f"({err.strerror or err}): give it back where the grid's grid.toml says") from None
        if now != recorded:
            raise ConfigError(f"the {role} file {path!r} of grid row {cell.row} changed since the grid started "
                              f"(SHA-256 {recorded[:12]}... then, {now[:12]}... now): restore it, or run the grid "
                              "into a new folder")
    return resolve_inputs(cell.paths["model"], cell.paths["data"], schema=cell.paths["schema"],
                          protected=list(cell.protected), test=cell.paths.get("test"),
                          test_size=cell.own.get("test_size"), random_state=cell.model_random_state,
                          trust_model_file=bool(cell.own.get("trust_model_file")), name=cell.dataset, on_step=step)


def _search(cell: Cell, out: Path, folder: Path, data_home, cache_dir) -> dict[str, Any]:
    import json

    from ..pipeline import run_experiment

    store = SeedStore(out, cell, cell.seeds[0])
    if cell.own:
        from ..pipeline import run_pipeline

        inputs = _inputs(cell, data_home, cache_dir)
        outcome = run_pipeline(inputs, _plan(cell, cell.seeds[0]), verdict=cell.verdict, diversity=cell.diversity,
                               reuse_seeds=store, cache_dir=cache_dir)
    else:
        outcome = run_experiment(_run_config(cell, cell.seeds[0], data_home, cache_dir), reuse_seeds=store)
    if cell.save_pairs:
        _write_pairs(outcome, folder)
    summary = json.loads(json.dumps(outcome.summary(), default=json_default))
    s = outcome.result
    figures = {"n_idis": s.n_idis, "n_plausible_idis": s.n_plausible_idis, "n_global": s.n_global,
               "n_local": s.n_local, "n_tested": s.n_tested,
               "n_queries": s.n_queries, "n_seeds": outcome.seed_report.n_seeds, "n_seed_idis": s.n_seed_idis,
               "initialization_rate": outcome.seed_report.initialization_rate,
               "n_initial_idis": outcome.seed_report.n_initial_idis,
               "candidate_idi_share": outcome.seed_report.candidate_idi_share,
               "initial_idis_per_1000_queries": outcome.seed_report.initial_idis_per_1000_queries,
               "n_candidates": outcome.seed_report.n_candidates,
               # queries as the model wrapper counts them: the seed selection's (a stored selection's too) and the
               # search's, which a query budget (cell.max_queries) bounds together
               "n_seed_queries": outcome.seed_report.n_queries, "n_search_queries": s.n_queries,
               "n_total_queries": outcome.seed_report.n_queries + s.n_queries,
               "budget_hit": float(bool((s.meta.get("query_budget") or {}).get("hit"))),
               "seeds_over_budget": float(outcome.seed_report.meta.get("stopped_by") == "max_queries"),
               "f1": outcome.model_info["f1"],
               "accuracy": outcome.model_info["accuracy"]}
    figures.update(_diversity_figures("idi", s.diversity))
    figures.update(_diversity_figures("seed", outcome.seed_diversity))
    if outcome.verdict is not None:
        verdict = outcome.verdict  # the people's interval as the verdict decided it, as every other door shows
        figures.update(share_affected=verdict.share, share_affected_lower=verdict.people_lower,
                       share_affected_upper=verdict.people_upper,
                       share_affected_plausible=(verdict.plausibility or {}).get("share_plausible"))
    figures.update({f"seconds_{step}": value for step, value in outcome.seconds.items()})
    meta = _meta(cell, data_home)
    if s.meta.get("generator_choice"):  # the axis says auto; the cell says what auto picked for its model, and why
        meta["generator_choice"] = s.meta["generator_choice"]
    return {"config": cell.to_dict(), "task": cell.task, "figures": figures, "summary": summary,
            "seeds_reused": store.reused, "meta": meta}


def _diversity_figures(prefix: str, diversity: dict[str, Any] | None) -> dict[str, Any]:
    """The diversity measures of a cell as figures (``idi_*`` for the IDIs found, ``seed_*`` for the seeds)."""
    if diversity is None:
        return {}
    keys = ("clusters_covered", "cluster_entropy", "mean_pairwise_distance", "leaves_covered", "leaf_share")
    return {f"{prefix}_{key}": diversity[key] for key in keys}


def _write_pairs(outcome, folder: Path) -> None:
    with atomic_path(folder / PAIRS_NAME) as tmp:
        outcome.result.to_frame(outcome.domain, codec=outcome.codec).to_parquet(tmp, index=False)


def _inputs(cell: Cell, data_home, cache_dir):
    """The cell's model on its data (:func:`chiralfair.pipeline.inputs_from_names`, or your files), in time."""
    from ..pipeline import inputs_from_names

    def step(name: str) -> None:
        check_deadline(f"the cell, before step {name!r}")

    if cell.own:
        inputs = _own_inputs(cell, step)
    else:
        inputs = inputs_from_names(_run_config(cell, cell.seeds[0], data_home, cache_dir), step=step)
    check_deadline("the cell, after training or loading the model")
    return inputs


def _plan(cell: Cell, strategy: str):
    from ..pipeline import SearchPlan

    return SearchPlan(seeds=strategy, generator=cell.generator or "aequitas", max_global=cell.max_global,
                      max_local=cell.max_local, random_state=cell.random_state,
                      generator_params=dict(cell.generator_params),
                      seed_params=dict(cell.seed_params.get(strategy, {})), max_queries=cell.max_queries)


def _prepared(cell: Cell, strategy: str, inputs, cache_dir):
    from ..pipeline import prepare_search

    return prepare_search(_plan(cell, strategy), inputs, cache_dir=cache_dir)


def _select(cell: Cell, out: Path, prepared, inputs):
    from ..pipeline import select_seeds

    store = SeedStore(out, cell, prepared.plan.seeds)
    return select_seeds(prepared, inputs, reuse_seeds=store), store.reused


def _seeds(cell: Cell, out: Path, folder: Path, data_home, cache_dir) -> dict[str, Any]:
    import json

    t = time.perf_counter()
    inputs = _inputs(cell, data_home, cache_dir)
    t_seeds = time.perf_counter()
    report, reused = _select(cell, out, _prepared(cell, cell.seeds[0], inputs, cache_dir), inputs)
    figures = {"initialization_rate": report.initialization_rate, "n_initial_idis": report.n_initial_idis,
               "n_candidates": report.n_candidates, "n_seeds": report.n_seeds,
               "n_seed_idis": int(report.is_idi.sum()), "n_queries": report.n_queries, "f1": inputs.quality["f1"],
               "seconds_selection": float(report.seconds.get("total", float("nan"))),
               "seconds_seeds": time.perf_counter() - t_seeds}
    if cell.diversity:
        from ..seeds.diversity_report import diversity_reference, seed_diversity

        t_diversity = time.perf_counter()
        reference = diversity_reference(inputs.model, inputs.dataset, random_state=cell.model_random_state)
        figures.update(_diversity_figures("seed", seed_diversity(report.seeds, reference,
                                                                 random_state=cell.random_state).to_dict()))
        figures["seconds_diversity"] = time.perf_counter() - t_diversity
    figures.update(candidate_idi_share=report.candidate_idi_share,
                   initial_idis_per_1000_queries=report.initial_idis_per_1000_queries,
                   seconds_total=time.perf_counter() - t)
    summary = json.loads(report.to_json())
    summary.pop("seeds")  # the seeds themselves are in <out>/shared/seeds/
    summary.pop("is_idi")
    return {"config": cell.to_dict(), "task": cell.task, "figures": figures, "summary": summary,
            "seeds_reused": reused, "meta": _meta(cell, data_home)}


def _retrain(cell: Cell, out: Path, folder: Path, data_home, cache_dir) -> dict[str, Any]:
    import json

    import numpy as np

    from ..mitigation.base import method_class
    from ..mitigation.names import DEFAULT_METHOD
    from ..mitigation.retraining import retrain
    from ..pipeline import search_training_rows

    t_all = time.perf_counter()
    inputs = _inputs(cell, data_home, cache_dir)
    params = dict(cell.retrain)
    methods = list(params.pop("methods", [DEFAULT_METHOD]))
    method_params = dict(params.pop("method_params", {}))
    with_idis = [m for m in methods if method_class(m).needs_idis(method_params.get(m, {}))]
    without = [m for m in methods if m not in with_idis]
    trained = inputs.trained
    figures: dict[str, dict[str, Any]] = {s: {} for s in cell.seeds}
    found, summary = {}, {}
    for strategy in (cell.seeds if with_idis else ()):
        t = time.perf_counter()
        found[strategy], info = search_training_rows(
            inputs, _plan(cell, strategy), cache_dir=cache_dir,
            reuse_seeds=SeedStore(out, cell, strategy, pool="train"))
        check_deadline(f"the cell, after the {strategy} search")
        figures[strategy] = {"n_idis": found[strategy].n_idis, "n_seeds_excluded": info["n_seeds_excluded"],
                             "n_idis_excluded": info["n_idis_excluded"], "seconds_search": time.perf_counter() - t}
    shared = None
    if without:
        check_deadline("the cell, before the methods that add no IDIs")
        shared = MitigationStore(out, cell, without, method_params, params)(lambda: retrain(
            trained, inputs.dataset, method=without, method_params={m: method_params[m] for m in without
                                                                    if m in method_params},
            cache_dir=cache_dir, random_state=cell.random_state, **params))
        summary["shared"] = json.loads(shared.to_json())
    spread = None if shared is None else shared.spread  # the model's own F1 spread, measured once per cell
    for strategy in cell.seeds:
        result = None
        if with_idis and found[strategy].n_idis == 0:  # nothing to add: the strategy's IDI figures stay empty
            summary[strategy] = {"note": f"the {strategy} search found no IDI: nothing to retrain with"}
        elif with_idis:
            check_deadline(f"the cell, before retraining with the {strategy} IDIs")
            others = [found[o].idis for o in cell.seeds if o != strategy]
            t = time.perf_counter()
            result = retrain(trained, inputs.dataset, found[strategy], method=with_idis,
                             method_params={m: method_params[m] for m in with_idis if m in method_params},
                             recheck=np.vstack(others) if others else None, cache_dir=cache_dir,
                             random_state=cell.random_state, own_spread=spread, **params)
            spread = spread if spread is not None else result.spread
            figures[strategy]["seconds_retrain"] = time.perf_counter() - t
            summary[strategy] = json.loads(result.to_json())
        for part in (result, shared):
            if part is not None:
                figures[strategy].update(retrain_figures(part))
    return {"config": cell.to_dict(), "task": cell.task, "figures": figures, "summary": summary,
            "seconds_total": time.perf_counter() - t_all,
            "meta": _meta(cell, data_home, {"retrain_random_state": cell.random_state})}


# The methods auto can pick, by index (the auto_method figure of a retrain cell): the built-in ones; a plugin's
# pick is NaN there and named in the cell's summary.
AUTO_METHODS = BUILTIN_METHODS
# Figures of a row kept in a retrain cell, before and after each method (``<method>_<field>_after``).
ROW_FIGURES = ("f1", "accuracy", "test_idi_rate", "test_idi_lower", "test_idi_upper", "domain_idi_rate",
               "demographic_parity_difference", "equalized_odds_difference", "n_rows_added", "improved")


def retrain_figures(result) -> dict[str, Any]:
    """A :class:`~chiralfair.mitigation.RetrainResult` as flat figures for the grid's tables.

    ``<field>_before``, ``<method>_<field>_after`` (the method's largest share), and for a method that adds IDIs
    (``paper``) also
    ``<field>_after`` and the paper protocol's ``remaining_idis`` / ``n_rechecked``; an undefined figure is NaN.
    ``f1_spread`` (the model's own F1 spread over training seeds, NaN when not measured), ``couplings_on`` (1 when
    the counterparts moved coupled columns) and, for ``auto``, what it picked: ``auto_method`` (its index in
    :data:`AUTO_METHODS`), ``auto_lam``, ``auto_reweigh``, ``auto_fine_tuned``.

    Parameters
    ----------
    result : RetrainResult

    Returns
    -------
    dict of str to float
    """
    from ..mitigation.base import method_class

    before = result.rows[0]
    out: dict[str, Any] = {f"{f}_before": _number(before[f]) for f in ROW_FIGURES
                           if f not in ("improved", "n_rows_added")}
    out["n_test_projections_added"] = result.leakage["n_test_projections_added"]
    out["f1_spread"] = _number(None if not result.spread else result.spread["spread"])
    out["couplings_on"] = float(bool(result.meta.get("couplings")))
    # the test IDI rates' intervals are the verdict's (Clopper-Pearson); a cell stored without this figure holds
    # Wilson intervals, which retraining gave before (a table names each cell's rule from it)
    out["test_idi_clopper_pearson"] = 1.0
    pick = result.meta.get("auto_pick")
    if pick:  # numbers, as every figure: the method by its place in AUTO_METHODS
        out.update(auto_method=float(AUTO_METHODS.index(pick["method"])) if pick["method"] in AUTO_METHODS
                   else float("nan"),
                   auto_lam=_number(pick["params"].get("lam")), auto_reweigh=float(pick["params"].get("reweigh", 0)),
                   auto_fine_tuned=float(bool(pick["params"].get("fine_tune_epochs"))))
    for method in result.methods:
        rows = [r for r in result.after if r["method"] == method]
        row = max(rows, key=lambda r: r["share"] or 0.0)
        out.update({f"{method}_{f}_after": _number(row[f]) for f in ROW_FIGURES})
        out[f"{method}_seconds"] = float(sum(s for r, s in zip(result.after, result.seconds["train"], strict=True)
                                            if r["method"] == method))
        if method_class(method).uses_idis:
            out.update({f"{f}_after": _number(row[f]) for f in ROW_FIGURES if f != "improved"})
            out.update(remaining_idis=row["remaining_idis"], n_rechecked=row["n_rechecked"])
    return out


def _number(value):
    """A figure as a number for the tables: True/False as 1/0, None (undefined) as NaN."""
    if value is None:
        return float("nan")
    return float(value) if isinstance(value, bool) else value


class MitigationStore:
    """The result of the methods that add no IDIs, shared by the cells that differ only in generator or budget.

    Stored in ``<out>/shared/mitigation/<key>.json`` under a file lock, keyed by dataset, protected attributes,
    model, model random state, methods, their parameters, the retrain parameters and the random state.
    """

    def __init__(self, out: Path, cell: Cell, methods, method_params: dict, params: dict):
        import hashlib

        config = {"dataset": cell.dataset, "protected": list(cell.protected), "model": cell.model,
                  "model_params": dict(cell.model_params), "model_random_state": cell.model_random_state,
                  "methods": list(methods), "method_params": {m: method_params.get(m, {}) for m in methods},
                  "params": params, "random_state": cell.random_state}
        key = hashlib.sha256(canonical_json(config).encode()).hexdigest()[:16]
        self.path = out / "shared" / "mitigation" / f"{key}.json"

    def __call__(self, run: Callable[[], Any]):
        """The stored result, or the one ``run()`` returns (then stored)."""
        from filelock import FileLock

        from ..mitigation.retraining import RetrainResult

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(self.path.parent / f".{self.path.name}.lock"):
            if self.path.is_file():
                return RetrainResult.from_json(self.path.read_text(encoding="utf-8"))
            text = run().to_json()
            atomic_write_text(self.path, text)
        return RetrainResult.from_json(text)


TASKS: dict[str, Callable[..., dict[str, Any]]] = {"search": _search, "seeds": _seeds, "retrain": _retrain}
