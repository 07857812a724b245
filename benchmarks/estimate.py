"""The share of individuals each model discriminates, with its 95% interval, on the seven rows.

Run by hand from the repository root (data and model cache from CHIRALFAIR_DATA / CHIRALFAIR_CACHE):

    python benchmarks/estimate.py                        # dnn and lr, test split and domain, seven rows
    python benchmarks/estimate.py --targets census:sex --models lr --populations domain

For every dataset:protected-attribute target and zoo model (trained once with ``random_state=0``, cached by
``train_model``), :func:`chiralfair.verdict.estimate` checks the model's test split (enumerated exactly when
that costs no more queries than the worst-case sample, which it does for every row here) and uniform draws from
the input domain (sampled until the Wilson interval lies within ``--margin`` of the estimate). Seconds are the
wall seconds of the estimate alone (model training or loading excluded) on a shared machine.

Writes ``benchmarks/results/estimate.json`` (figures, parameters, versions, CPU count, date, load average) and
``estimate.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import UTC, datetime
from pathlib import Path

from chiralfair import __version__
from chiralfair.datasets import load_dataset
from chiralfair.models.training import library_versions, train_model
from chiralfair.verdict import estimate

SEVEN_ROWS = ("census:age", "census:race", "census:sex", "compas:age", "compas:race", "compas:sex", "bank:age")
RESULTS = Path(__file__).parent / "results"
MODEL_RANDOM_STATE = 0


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--targets", nargs="+", default=list(SEVEN_ROWS), help="dataset:protected-attribute")
    p.add_argument("--models", nargs="+", default=["dnn", "lr"])
    p.add_argument("--populations", nargs="+", default=["test", "domain"])
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--margin", type=float, default=0.005)
    p.add_argument("--random-state", type=int, default=0, help="sampling seed of the estimate")
    p.add_argument("--name", default="estimate")
    return p.parse_args(argv)


def cell(verdict) -> dict:
    """The figures of one estimate kept in the results."""
    worst = max((g for g in verdict.groups if g["harmed_share"] is not None and g["n_affected"] >= 10),
                key=lambda g: g["harmed_share"], default=None)
    return {"share": verdict.share, "lower": verdict.lower, "upper": verdict.upper, "exact": verdict.exact,
            "stopped_by": verdict.stopped_by, "n_individuals": verdict.n_individuals,
            "n_affected": verdict.n_affected, "population_size": verdict.population_size,
            "n_queries": verdict.n_queries, "seconds": verdict.seconds,
            "gap_median_affected": (verdict.gap or {}).get("quantiles_affected", {}).get("0.5"),
            "most_harmed_group": None if worst is None else {k: worst[k] for k in (
                "group", "n_affected", "harmed_share", "harmed_lower", "harmed_upper")},
            "top_rule": verdict.rules[0] if verdict.rules else None, "groups": list(verdict.groups),
            "notes": list(verdict.notes), "favourable": verdict.favourable}


def markdown(results: dict) -> str:
    p = results["parameters"]
    lines = [
        "# Share of individuals discriminated", "",
        f"{results['date']}, {results['cpu_count']} CPUs, chiralfair {results['chiralfair_version']}, "
        f"statsmodels {results['versions'].get('statsmodels')}; load average at start "
        f"{results['loadavg_start'][0]:.2f}, at end {results['loadavg_end'][0]:.2f}. Models trained with "
        f"random_state {MODEL_RANDOM_STATE} (60/40 split); estimate random_state {p['random_state']}, "
        f"{p['confidence']:.0%} Wilson intervals, margin {p['margin']}. *test*: the model's test split, enumerated "
        "(exact, each key once); *domain*: uniform draws from the input domain until the interval lies within the "
        "margin. Seconds: the estimate alone, wall clock, shared machine. Most harmed: among the groups with at "
        "least 10 affected individuals, the one whose affected most often get the unfavourable label while a "
        "counterpart gets the favourable one (census, bank: label 1 favourable; compas: label 0, as 1 is a decile "
        "score > 5); '-' when no group has 10 affected. Per-group Bonferroni intervals are in the JSON.", "",
        "| target | model | population | share affected [95% CI] | individuals | queries | seconds | most harmed |",
        "|---|---|---|---|---|---:|---:|---|"]
    for r in results["rows"]:
        share = (f"{r['share']:.2%} (exact)" if r["exact"] else
                 f"{r['share']:.2%} [{r['lower']:.2%}, {r['upper']:.2%}]")
        worst = r["most_harmed_group"]
        harmed = "-" if worst is None else (f"{worst['group']}: {worst['harmed_share']:.0%} of "
                                            f"{worst['n_affected']:,} affected")
        lines.append(f"| {r['target']} | {r['model']} | {r['population']} | {share} | {r['n_individuals']:,} | "
                     f"{r['n_queries']:,} | {r['seconds']:.2f} | {harmed} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    args = parse_args(argv)
    results = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "cpu_count": os.cpu_count(),
               "platform": platform.platform(), "chiralfair_version": __version__,
               "versions": {**library_versions(), "statsmodels": _statsmodels_version()},
               "parameters": {"targets": args.targets, "models": args.models, "populations": args.populations,
                              "confidence": args.confidence, "margin": args.margin,
                              "random_state": args.random_state, "model_random_state": MODEL_RANDOM_STATE,
                              "method": "wilson"},
               "loadavg_start": list(os.getloadavg()), "rows": []}
    for target in args.targets:
        name, pa = target.split(":")
        data = load_dataset(name, protected=[pa])
        for model in args.models:
            t = time.perf_counter()
            trained = train_model(data, model, random_state=MODEL_RANDOM_STATE)
            model_seconds = time.perf_counter() - t
            for population in args.populations:
                row = {"target": target, "model": model, "population": population, "model_f1": trained.f1,
                       "model_from_cache": trained.from_cache, "model_seconds": model_seconds}
                verdict = estimate(trained, data, population=population, confidence=args.confidence,
                                   margin=args.margin, method="wilson", random_state=args.random_state)
                row.update(cell(verdict))
                results["rows"].append(row)
                print(f"{target:12} {model:4} {population:6} share {verdict.share:.4f} "
                      f"[{verdict.lower:.4f}, {verdict.upper:.4f}] n={verdict.n_individuals} "
                      f"queries={verdict.n_queries} {verdict.seconds:.2f}s", flush=True)
    results["loadavg_end"] = list(os.getloadavg())
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(results, indent=2))
    (RESULTS / f"{args.name}.md").write_text(markdown(results))


def _statsmodels_version() -> str:
    import statsmodels

    return statsmodels.__version__


if __name__ == "__main__":
    main()
