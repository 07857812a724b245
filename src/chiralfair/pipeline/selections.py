"""Seed selection alone, repeated (``chiralfair seeds``): the initialization rate, its spread, time and diversity."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from typing import Any

from .checks import check_seed_strategy
from .config import RunConfig, validate_config
from .inputs import inputs_from_names
from .steps import SearchPlan, prepare_search, select_seeds


def select_repeatedly(config: RunConfig, *, n_seeds: int, repeats: int, diversity: bool = True,
                      progress: Callable[[Iterable[int]], Iterable[int]] = lambda r: r) -> dict[str, Any]:
    """Select ``n_seeds`` seeds ``repeats`` times (random states ``config.random_state + r``) on one model.

    The repeats share one model and one chiral model (trained with the model's random state).

    Parameters
    ----------
    config : RunConfig
        ``dataset``, ``protected``, ``model``, ``seeds`` (the strategy) and ``random_state`` are used.
    n_seeds, repeats : int
        >= 1.
    diversity : bool
        Measure each selection's diversity against one reference per model.
    progress : callable
        Wraps the range of repeats (e.g. a tqdm bar).

    Returns
    -------
    dict
        ``summary`` (JSON-ready figures: initialization rate mean/std/min/max/values, initial IDIs, median
        seconds by phase, clustering, ...), ``reports`` (the SeedReports), ``diversities`` (DiversityReports),
        ``model_f1``.

    Raises
    ------
    ConfigError, DatasetError
        For a bad name or number.
    """
    from .._validation import check_int

    n_seeds = check_int(n_seeds, "n_seeds", minimum=1)
    repeats = check_int(repeats, "repeats", minimum=1)
    check_seed_strategy(config.seeds)
    validate_config(config, search=False)
    inputs = inputs_from_names(config)
    reports = []
    for r in progress(range(repeats)):
        plan = SearchPlan(seeds=config.seeds, max_global=n_seeds, random_state=config.random_state + r,
                          seed_params=dict(config.seed_params))
        reports.append(select_seeds(prepare_search(plan, inputs, cache_dir=config.cache_dir), inputs))
    diversities = []
    if diversity:
        from ..seeds.diversity_report import diversity_reference, seed_diversity

        reference = diversity_reference(inputs.model, inputs.dataset, random_state=config.random_state)
        diversities = [seed_diversity(rep.seeds, reference, random_state=config.random_state + i)
                       for i, rep in enumerate(reports)]
    return {"summary": _summary(config, inputs, reports, diversities, n_seeds, repeats), "reports": reports,
            "diversities": diversities, "model_f1": inputs.quality["f1"]}


def _summary(config, inputs, reports, diversities, n_seeds, repeats) -> dict[str, Any]:
    rates = [r.initialization_rate for r in reports]
    phases = sorted({k for r in reports for k in r.seconds})
    return {
        "dataset": config.dataset, "protected": inputs.domain.protected_names, "model": config.model,
        "strategy": config.seeds, "n_seeds": n_seeds, "repeats": repeats, "random_state": config.random_state,
        "model_f1": inputs.quality["f1"], "model_evaluated_on": inputs.test_rows,
        "initialization_rate": {"mean": statistics.fmean(rates),
                                "std": statistics.stdev(rates) if len(rates) > 1 else 0.0,
                                "min": min(rates), "max": max(rates), "values": rates},
        "n_initial_idis": [r.n_initial_idis for r in reports],
        "seconds_median": {k: statistics.median(r.seconds.get(k, 0.0) for r in reports) for k in phases},
        "clustering": [r.clustering for r in reports],
        "chiral_model_from_cache": [r.meta.get("chiral_model", {}).get("from_cache") for r in reports],
        "initial_idis_per_1000_queries": [r.initial_idis_per_1000_queries for r in reports],
        "candidate_idi_share": [r.candidate_idi_share for r in reports],
        "diversity": [d.to_dict() for d in diversities],
        "notes": sorted({n for r in reports for n in [*inputs.notes, *r.notes]}),
    }
