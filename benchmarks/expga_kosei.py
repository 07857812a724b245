"""ExpGA and KOSEI beside AEQUITAS and SG: Table-2-style rows, and seconds per IDI (ExpGA's DSS) on census age.

Run by hand:  python benchmarks/expga_kosei.py [--rows census:age census:sex ...] [--repeats 1]
              [--generators expga kosei aequitas sg] [--seeds random cluster iandd] [--budget 100]
              [--dss-models dnn svc] [--dss-size N] [--skip-table] [--skip-dss] [--name expga_kosei]
              [--scheduler local|sync|ADDRESS] [--workers N] [--quick] [--grid-out DIR]

Part 1 (Table 2 style): experiment grids (:func:`chiralfair.experiments.execution.run_grid`) of the rows with the
paper's DNN trained once (``model_random_state`` 0): each generator with random / cluster / I&D seeds at
``max_global = max_local = --budget``, random states 0 .. ``--repeats`` - 1; ExpGA also from its own seeds
(strategy ``expga``), in a second grid since a grid crosses every seed strategy with every generator. The grid
folders (default ``reproduce/<name>/shared_seeds`` and ``.../expga_seeds``) keep one folder per cell, so a
stopped run resumes where it stopped. Reported per group: median IDIs, IDIs per 1,000 model queries (median
over the repeats of 1,000 n_idis / n_queries), search seconds.

Part 2 (DSS), measured outside the grids since it needs time-budgeted runs sized to find well over 1,000 IDIs:
on census age with the DNN and with the sklearn SVC, seconds per IDI = search seconds / IDIs, and the same with
seed selection included (``max_global = max_local = n_seeds = DSS_BUDGET[model]`` or ``--dss-size``;
``time_budget`` 300 s for ExpGA and KOSEI). ExpGA's paper reports DSS for one-hour runs of its own tool
(census, MLP: 0.03 s per IDI on gender); 1,000 x DSS is the seconds to 1,000 IDIs at that run's average rate.

The results are written after every grid and every DSS run, so an interrupted run leaves what it measured.
Writes ``benchmarks/results/<name>.json`` (every run, load averages, versions, CPU count, date) and ``<name>.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path

from reproduce_preset import add_common_arguments

from chiralfair import __version__
from chiralfair.datasets import load_dataset
from chiralfair.experiments.execution import run_grid
from chiralfair.experiments.grid import load_grid
from chiralfair.experiments.presets import quick_grid
from chiralfair.experiments.tables import grid_frame
from chiralfair.generators import make_generator
from chiralfair.models.training import train_model
from chiralfair.seeds import make_seed_strategy
from chiralfair.seeds.names import chiral_params

ROWS = ("census:age", "census:race", "census:sex", "compas:age", "compas:race", "compas:sex", "bank:age")
GENERATORS = ("expga", "kosei", "aequitas", "sg")
STRATEGIES = ("random", "cluster", "iandd")
MODEL_RANDOM_STATE = 0
# (generator, seed strategy) of the DSS runs; n_seeds = max_global and max_local are DSS_BUDGET[model].
DSS_RUNS = (("expga", "expga"), ("expga", "iandd"), ("kosei", "random"), ("kosei", "iandd"), ("aequitas", "iandd"))
# The DNN answers 10^6 rows in about a second; the SVC (about 10^4 support vectors) is some 100x slower.
DSS_BUDGET = {"dnn": 1000, "svc": 100}
DSS_TIME_BUDGET = 300.0
# The figures of a cell's run kept in the JSON, as named there (search seconds as "seconds").
RUN_FIGURES = {"n_idis": "n_idis", "n_global": "n_global", "n_local": "n_local", "n_queries": "n_queries",
               "n_tested": "n_tested", "n_seeds": "n_seeds", "n_seed_idis": "n_seed_idis",
               "seconds": "seconds_search", "seed_seconds": "seconds_seeds",
               "initialization_rate": "initialization_rate"}
MEDIAN_FIGURES = ("n_idis", "n_global", "n_local", "n_queries", "seconds", "initialization_rate")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _versions() -> dict:
    import numpy
    import sklearn
    import torch

    return {"chiralfair": __version__, "numpy": numpy.__version__, "torch": torch.__version__,
            "sklearn": sklearn.__version__, "python": platform.python_version()}


def table_grids(rows, generators, strategies, budget: int, repeats: int, quick: bool = False) -> dict[str, dict]:
    """Part 1's grids by folder name: every generator with the shared seed strategies, and ExpGA with its own.

    A grid crosses every seed strategy with every generator, so ExpGA's own seeds, which only ExpGA searches
    from, are a second grid.
    """
    def grid(seeds, gens) -> dict:
        g = {"name": "expga_kosei", "task": "search", "repeats": repeats, "model_random_state": MODEL_RANDOM_STATE,
             "axes": {"rows": list(rows), "models": ["dnn"], "seeds": list(seeds), "generators": list(gens),
                      "budgets": [[budget, budget]]}}
        return quick_grid(g) if quick else g

    grids = {}
    if generators and strategies:
        grids["shared_seeds"] = grid(strategies, generators)
    if "expga" in generators:
        grids["expga_seeds"] = grid(["expga"], ["expga"])
    return grids


def table_rows(results: dict, args) -> None:
    """Run Part 1's grids and put each (row, generator, seeds) group's runs and medians into ``results["table"]``."""
    grid_out = args.grid_out or Path("reproduce") / (args.name + ("-quick" if args.quick else ""))
    grids = table_grids(args.rows, args.generators, args.seeds, args.budget, args.repeats, args.quick)
    for folder, grid in grids.items():
        load = os.getloadavg()[0]
        out = grid_out / folder
        done = run_grid(load_grid(grid), out, scheduler=args.scheduler, workers=args.workers)
        frame = grid_frame(out)
        for (row, generator, strategy), runs in frame.groupby(["row", "generator", "seeds"], sort=False):
            cells = results["table"].setdefault(row, {})
            cells["model"] = {"f1": float(runs["f1"].iloc[0]), "accuracy": float(runs["accuracy"].iloc[0])}
            records = [{"random_state": int(r["random_state"]),
                        **{name: _number(r[column]) for name, column in RUN_FIGURES.items()}}
                       for _, r in runs.sort_values("random_state").iterrows()]
            cells.setdefault(generator, {})[strategy] = {
                "runs": records, "median": {f: statistics.median(r[f] for r in records) for f in MEDIAN_FIGURES},
                "loadavg_1min_before": load, "grid_folder": str(out)}
        for key in done.status.failed:
            cell = done.status.cells[key]
            group = results["table"].setdefault(cell.row, {}).setdefault(cell.generator, {})
            group.setdefault(cell.seeds[0], {"runs": [], "grid_folder": str(out)})["error"] = (
                f"random_state {cell.random_state}: {done.status.errors[key]}")
        write(results, args.name, args.results)


def _number(value) -> float | int:
    value = float(value)
    return int(value) if value.is_integer() else value


def _strategy_params(strategy: str) -> dict:
    # As in a grid cell: the chiral model of i / iandd is seeded by the model under test's random_state.
    return chiral_params(strategy, MODEL_RANDOM_STATE)


def dss_run(model, dataset, generator, strategy, n_seeds, max_local, time_budget) -> dict:
    t = time.perf_counter()
    report = make_seed_strategy(strategy, **_strategy_params(strategy)).select(model, dataset, n_seeds,
                                                                                random_state=0)
    seed_seconds = time.perf_counter() - t
    params = {"max_global": n_seeds, "max_local": max_local}
    if generator in ("expga", "kosei"):
        params["time_budget"] = time_budget
    res = make_generator(generator, **params).run(model, dataset.domain, report, random_state=0)
    return {"generator": generator, "strategy": strategy, "params": params, "n_idis": res.n_idis,
            "n_global": res.n_global, "n_local": res.n_local, "n_tested": res.n_tested,
            "n_queries": res.n_queries, "seconds": res.seconds, "seed_seconds": seed_seconds,
            "dss": res.seconds / res.n_idis if res.n_idis else None,
            "dss_with_seeds": (res.seconds + seed_seconds) / res.n_idis if res.n_idis else None,
            "notes": list(res.notes), "seed_notes": list(report.notes)}


def dss(results: dict, args) -> None:
    """Part 2: the DSS runs on census age for each of ``args.dss_models``, appended to ``results["dss"]``."""
    dataset = load_dataset("census", protected=["age"])
    for model_name in args.dss_models:
        trained = train_model(dataset, model_name, random_state=MODEL_RANDOM_STATE)
        out = results["dss"].setdefault(model_name, {"f1": trained.f1, "runs": []})
        size = args.dss_size or DSS_BUDGET.get(model_name, 100)
        for generator, strategy in DSS_RUNS:
            load = os.getloadavg()[0]
            try:
                run = dss_run(trained.model, dataset, generator, strategy, size, size, args.dss_time_budget)
            except Exception as exc:  # noqa: BLE001 - a failure is a result to report
                traceback.print_exc()
                run = {"generator": generator, "strategy": strategy, "error": f"{type(exc).__name__}: {exc}"}
            run["loadavg_1min_before"] = load
            print(f"  dss {model_name} {generator} {strategy}: {run}", flush=True)
            out["runs"].append(run)
            write(results, args.name, args.results)


def _per_kq(m: dict) -> float:
    return 1000 * m["n_idis"] / m["n_queries"] if m["n_queries"] else 0.0


def markdown(results: dict) -> str:
    p = results["parameters"]
    datasets = "/".join(dict.fromkeys(row.partition(":")[0] for row in results["table"])) or "census"
    lines = [f"# ExpGA and KOSEI beside AEQUITAS and SG ({datasets} DNN, max_global = max_local = "
             f"{p['budget']}, {p['repeats']} random state(s))", "",
             f"Started {results['date']}, last written {results['last_written']}; chiralfair "
             f"{results['versions']['chiralfair']}, {results['cpu_count']} CPUs shared with other jobs; load average "
             f"at start {results['loadavg_start'][0]:.2f}, at last write {results['loadavg_last'][0]:.2f} (each "
             "cell's 1-minute load is in the JSON): seconds are noisy.", "",
             "Counting rule: unique non-protected projections, global ∪ local. Each cell: median "
             "IDIs / IDIs per 1,000 model queries / search seconds. `expga` seeds = ExpGA's own "
             "explanation-filtered random seeds (its `original`).", ""]
    strategies = [*p["strategies"], "expga"]
    for row, cells in results["table"].items():
        lines += [f"## {row} (DNN F1 {cells['model']['f1']:.3f})", "",
                  "| generator | " + " | ".join(strategies) + " |", "|---|" + "---|" * len(strategies)]
        for generator in p["generators"]:
            out = []
            for s in strategies:
                c = cells.get(generator, {}).get(s)
                if c is None:
                    out.append("")
                elif "error" in c:
                    out.append(f"error: {c['error']}")
                else:
                    m = c["median"]
                    per_kq = statistics.median(_per_kq(r) for r in c["runs"])
                    runs = "" if len(c["runs"]) == p["repeats"] else f" ({len(c['runs'])} run)"
                    digits = 0 if per_kq >= 10 else 2
                    out.append(f"{m['n_idis']:,.0f} / {per_kq:.{digits}f} / {m['seconds']:.1f} s{runs}")
            lines.append(f"| {generator} | " + " | ".join(out) + " |")
        lines.append("")
    if results["dss"]:
        lines += ["## Seconds per IDI (ExpGA's DSS) on census age", "",
                  "| model | generator | seeds | max_global / max_local | IDIs | queries | search s | seed s | "
                  "DSS s/IDI | DSS incl. seeds | 1,000 × DSS (s) | stop |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for model_name, d in results["dss"].items():
            for r in d["runs"]:
                if "error" in r:
                    lines.append(f"| {model_name} | {r['generator']} | {r['strategy']} | error: {r['error']} |")
                    continue
                dss_s = "–" if r["dss"] is None else f"{r['dss']:.2e}"
                incl = "–" if r["dss_with_seeds"] is None else f"{r['dss_with_seeds']:.2e}"
                k = "–" if r["dss"] is None else f"{1000 * r['dss']:.3f}"
                stop = "; ".join(r["notes"])[:80]
                lines.append(f"| {model_name} (F1 {d['f1']:.3f}) | {r['generator']} | {r['strategy']} | "
                             f"{r['params']['max_global']} / {r['params']['max_local']} | {r['n_idis']:,} | "
                             f"{r['n_queries']:,} | {r['seconds']:.1f} | {r['seed_seconds']:.1f} | {dss_s} | {incl} | "
                             f"{k} | {stop} |")
        lines += ["", "ExpGA paper, Table 3 (census gender, MLP, one hour, its own counting of full vectors): "
                  "ExpGA 0.03 s/IDI, ADF 0.14, AEQUITAS 2.00, SG 4.13.", ""]
    return "\n".join(lines) + "\n"


def write(results: dict, name: str, folder: Path) -> None:
    """Write ``<name>.json`` and ``<name>.md`` into ``folder``."""
    results["last_written"] = _now()
    results["loadavg_last"] = list(os.getloadavg())
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(results, indent=2, default=str))
    (folder / f"{name}.md").write_text(markdown(results))


def merge(name: str, other: str, folder: Path) -> dict:
    """Copy the table cells and DSS runs of ``<other>.json`` into ``<name>.json`` (both in ``folder``)."""
    results = json.loads((folder / f"{name}.json").read_text())
    part = json.loads((folder / f"{other}.json").read_text())
    for row, cells in part["table"].items():
        mine = results["table"].setdefault(row, {"model": cells["model"]})
        for generator, by_seeds in cells.items():
            if generator != "model":
                mine.setdefault(generator, {}).update(by_seeds)
    for model_name, d in part["dss"].items():
        results["dss"].setdefault(model_name, {"f1": d["f1"], "runs": []})["runs"] += d["runs"]
    results["commands"] += [f"[merged from {other}.json] {c}" for c in part["commands"]]
    results["merged"] = [*results.get("merged", []), {"name": other, "date": part["date"],
                                                       "loadavg_start": part["loadavg_start"]}]
    write(results, name, folder)
    return results


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", default=list(ROWS), help="dataset:protected_attribute")
    parser.add_argument("--generators", nargs="+", default=list(GENERATORS))
    parser.add_argument("--seeds", nargs="+", default=list(STRATEGIES))
    parser.add_argument("--budget", type=int, default=100, help="max_global = max_local = number of seeds")
    parser.add_argument("--dss-models", nargs="+", default=["dnn", "svc"])
    parser.add_argument("--dss-size", type=int, default=None,
                        help="max_global = max_local = n_seeds of the DSS runs (default: DSS_BUDGET per model)")
    parser.add_argument("--dss-time-budget", type=float, default=DSS_TIME_BUDGET,
                        help="seconds, time_budget of ExpGA and KOSEI in the DSS runs")
    parser.add_argument("--skip-table", action="store_true")
    parser.add_argument("--skip-dss", action="store_true")
    add_common_arguments(parser, name="expga_kosei", repeats=1)
    parser.add_argument("--markdown-only", action="store_true", help="Re-render <name>.md from <name>.json.")
    parser.add_argument("--merge-from", help="Copy the table cells and DSS runs of <merge_from>.json (measured by a "
                        "parallel invocation) into <name>.json, replacing cells of the same row, generator and seeds.")
    args = parser.parse_args(argv)
    path = args.results / f"{args.name}.json"
    if args.merge_from:
        return merge(args.name, args.merge_from, args.results)
    if args.markdown_only:
        results = json.loads(path.read_text())
        (args.results / f"{args.name}.md").write_text(markdown(results))
        return results
    results = json.loads(path.read_text()) if path.exists() else {
        "parameters": {"generators": args.generators, "strategies": args.seeds, "budget": args.budget,
                       "repeats": args.repeats, "model_random_state": MODEL_RANDOM_STATE, "dss_runs": DSS_RUNS,
                       "dss_budget": {m: args.dss_size or DSS_BUDGET.get(m, 100) for m in args.dss_models},
                       "dss_time_budget": args.dss_time_budget, "quick": args.quick},
        "versions": _versions(), "cpu_count": os.cpu_count(), "date": _now(),
        "loadavg_start": list(os.getloadavg()), "table": {}, "dss": {}, "commands": []}
    results["commands"].append(" ".join(sys.argv))
    results["loadavg_start_of_commands"] = [*results.get("loadavg_start_of_commands", []), list(os.getloadavg())]
    if not args.skip_dss:
        dss(results, args)
    if not args.skip_table:
        table_rows(results, args)
    write(results, args.name, args.results)
    return results


if __name__ == "__main__":
    main()
