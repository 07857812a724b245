"""Black-box generators at an equal query budget: IDIs found by grft, maft, aft, aequitas, expga, kosei and sg.

Run by hand:  python benchmarks/blackbox.py [--models hgb rf] [--seeds cluster random] [--repeats 3]
              [--max-queries 20000] [--max-global 1000] [--max-local 1000] [--generators grft maft ...] [--sg-repeats 3]
              [--processes 2] [--name blackbox]

Census, protected attribute sex; the zoo's HistGradientBoostingClassifier (``hgb``) and RandomForest (``rf``),
trained once with model random state 0 on the 60% split. For each model, seed strategy and random state
0 .. ``--repeats`` - 1, the seeds (``--max-global`` of them) are selected once and shared by every generator;
every generator then runs through the pipeline (:func:`chiralfair.pipeline.run_pipeline`, no verdict) with
``max_queries = --max-queries``: the seeds' queries count against the budget, and the search stops at the first
model call that would pass it. ``max_local`` (``--max-local``, 1,000) is large so that the budget, not the local
phase, ends the searches.
Reported per cell: the median over the random states of IDIs found (and of the queries used). SG runs for the
first ``--sg-repeats`` random states only (it is slow; its cells are then single runs).

Writes ``benchmarks/results/<name>.json`` (every run, versions, load) and ``<name>.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from datetime import UTC, datetime
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
GENERATORS = ("grft", "maft", "aft", "aequitas", "expga", "kosei", "sg")
MODEL_NAMES = {"hgb": "HistGradientBoostingClassifier", "rf": "RandomForestClassifier"}
MODEL_RANDOM_STATE = 0


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def job(model: str, seeds: str, state: int, generators: list[str], max_queries: int, max_global: int,
        max_local: int) -> list[dict]:
    """Every generator from one shared seed selection of ``seeds`` on ``model`` at ``state``."""
    from chiralfair.models.threads import single_native_thread
    from chiralfair.pipeline import RunConfig, SearchPlan, run_pipeline
    from chiralfair.pipeline.inputs import inputs_from_names
    from chiralfair.seeds import make_seed_strategy

    config = RunConfig(dataset="census", protected=("sex",), model=model, model_random_state=MODEL_RANDOM_STATE,
                       random_state=state)
    inputs = inputs_from_names(config)
    inputs.model.reset_queries()
    with single_native_thread():
        t = time.perf_counter()
        report = make_seed_strategy(seeds).select(inputs.model, inputs.dataset, max_global, random_state=state)
        seed_seconds = time.perf_counter() - t
    out = []
    for name in generators:
        plan = SearchPlan(seeds=seeds, generator=name, max_global=max_global, max_local=max_local, random_state=state,
                          max_queries=max_queries)
        load = os.getloadavg()[0]
        t = time.perf_counter()
        with single_native_thread():
            outcome = run_pipeline(inputs, plan, verdict=False, reuse_seeds=lambda select: report)
        seconds = time.perf_counter() - t
        budget = outcome.result.meta["query_budget"]
        out.append({"model": model, "seeds": seeds, "random_state": state, "generator": name,
                    "n_idis": outcome.result.n_idis, "n_global": outcome.result.n_global,
                    "n_local": outcome.result.n_local, "n_queries": budget["n_queries"],
                    "n_seed_queries": budget["n_seed_queries"], "hit": budget["hit"], "seconds": round(seconds, 2),
                    "seed_seconds": round(seed_seconds, 2), "load_1min": load, "f1": inputs.quality.get("f1")})
    return out


def versions() -> dict[str, str]:
    import numpy
    import sklearn

    import chiralfair

    return {"python": platform.python_version(), "numpy": numpy.__version__, "scikit-learn": sklearn.__version__,
            "chiralfair": chiralfair.__version__}


def write_markdown(doc: dict, path: Path) -> None:
    runs = doc["runs"]
    p = doc["parameters"]
    gens = [g for g in GENERATORS if any(r["generator"] == g for r in runs)]
    lines = [f"# Black-box generators at an equal query budget ({p['max_queries']:,} queries)", "",
             f"Written by `benchmarks/blackbox.py` on {doc['date']}. Census, protected attribute sex; zoo models "
             f"trained with model random state {MODEL_RANDOM_STATE} on the 60% split: "
             + ", ".join(f"`{m}` = sklearn {MODEL_NAMES[m]} (test F1 {doc['f1'][m]:.3f})" for m in p["models"])
             + f". scikit-learn {doc['versions']['scikit-learn']}, numpy {doc['versions']['numpy']}, python "
             f"{doc['versions']['python']} (no LightGBM model in this table). {doc['cpu_count']} CPUs.", "",
             f"Each cell: median over random states {p['random_states']} of the IDIs found (queries used in "
             f"brackets). Per random state the seeds ({p['max_global']} per strategy) are selected once and shared "
             f"by every generator; their queries count against the budget of {p['max_queries']:,} (the pipeline's "
             f"`max_queries`), and max_local = {p['max_local']:,} so that the budget ends the searches. "
             f"SG: random states "
             f"{p['sg_random_states']} only.", "",
             f"Load: before `{doc['uptime_before']}`; after `{doc['uptime_after']}`. Wall time "
             f"{doc['seconds']:.0f} s with {p['processes']} processes.", ""]
    if p.get("shrunk"):
        lines += [f"Grid shrunk to keep the run under ~15 minutes on a loaded 2-core machine: {p['shrunk']}", ""]
    lines += ["| model | seeds | " + " | ".join(gens) + " | best / aequitas |",
              "|---|---|" + "---:|" * len(gens) + "---:|"]
    for model in p["models"]:
        for seeds in p["seeds"]:
            cells, medians = [], {}
            for g in gens:
                rs = [r for r in runs if (r["model"], r["seeds"], r["generator"]) == (model, seeds, g)]
                if not rs:
                    cells.append("-")
                    continue
                medians[g] = statistics.median(r["n_idis"] for r in rs)
                q = statistics.median(r["n_queries"] for r in rs)
                cells.append(f"{medians[g]:,.0f} ({q:,.0f})")
            ratio = "-"
            if medians.get("aequitas"):
                best = max((g for g in medians if g != "aequitas"), key=medians.get)
                ratio = f"{best} {medians[best] / medians['aequitas']:.2f}x"
            lines.append(f"| {model} | {seeds} | " + " | ".join(cells) + f" | {ratio} |")
    lines += ["", "Seconds per search (median), for scale (measured beside the other process and other jobs):", "",
              "| model | seeds | " + " | ".join(gens) + " |", "|---|---|" + "---:|" * len(gens)]
    for model in p["models"]:
        for seeds in p["seeds"]:
            cells = []
            for g in gens:
                rs = [r["seconds"] for r in runs if (r["model"], r["seeds"], r["generator"]) == (model, seeds, g)]
                cells.append(f"{statistics.median(rs):.1f}" if rs else "-")
            lines.append(f"| {model} | {seeds} | " + " | ".join(cells) + " |")
    if doc.get("findings"):
        lines += ["", doc["findings"]]
    path.write_text("\n".join(lines) + "\n")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["hgb", "rf"])
    ap.add_argument("--seeds", nargs="+", default=["cluster", "random"])
    ap.add_argument("--generators", nargs="+", default=list(GENERATORS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sg-repeats", type=int, default=3)
    ap.add_argument("--max-queries", type=int, default=20_000)
    ap.add_argument("--max-global", type=int, default=1000)
    ap.add_argument("--max-local", type=int, default=1000)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--shrunk", default="", help="What was cut from the grid, and why (said in the Markdown).")
    ap.add_argument("--findings", default="", help="A Markdown file appended to the results as they are written.")
    ap.add_argument("--name", default="blackbox")
    args = ap.parse_args(argv)
    uptime_before, t0 = _uptime(), time.perf_counter()
    jobs = []
    for model in args.models:
        for seeds in args.seeds:
            for state in range(args.repeats):
                gens = [g for g in args.generators if g != "sg" or state < args.sg_repeats]
                jobs.append((model, seeds, state, gens, args.max_queries, args.max_global, args.max_local))
    runs = []
    with ProcessPoolExecutor(args.processes) as pool:
        for done in as_completed([pool.submit(job, *j) for j in jobs]):
            runs += done.result()
            print(f"{time.perf_counter() - t0:6.0f} s: {len(runs)} runs", file=sys.stderr, flush=True)
    doc = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "versions": versions(),
           "cpu_count": os.cpu_count(), "uptime_before": uptime_before, "uptime_after": _uptime(),
           "seconds": time.perf_counter() - t0,
           "parameters": {"models": args.models, "seeds": args.seeds, "generators": args.generators,
                          "random_states": list(range(args.repeats)),
                          "sg_random_states": list(range(min(args.sg_repeats, args.repeats))),
                          "max_queries": args.max_queries, "max_global": args.max_global, "max_local": args.max_local,
                          "processes": args.processes, "shrunk": args.shrunk},
           "f1": {m: next(r["f1"] for r in runs if r["model"] == m) for m in args.models},
           "findings": Path(args.findings).read_text() if args.findings else "",
           "runs": sorted(runs, key=lambda r: (r["model"], r["seeds"], r["random_state"], r["generator"]))}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(doc, indent=1, default=str) + "\n")
    write_markdown(doc, RESULTS / f"{args.name}.md")
    print(f"wrote {RESULTS / args.name}.json and .md in {doc['seconds']:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
