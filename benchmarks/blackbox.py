"""Black-box generators at equal query budgets: IDIs found by grft, maft, aft, aequitas, expga, kosei and sg.

Run by hand:  python benchmarks/blackbox.py [--models hgb rf lightgbm pipeline] [--cases census:sex census:race ...]
              [--seeds cluster random iandd] [--budgets 20000 200000] [--repeats 3] [--max-global 1000]
              [--max-local N] [--generators grft maft ...] [--sg-repeats 3] [--processes 2] [--name blackbox]
              [--rewrite]   (only the Markdown again, from the JSON)
              [--ceiling blackbox_grid blackbox_dtc ...]   (only the ceiling table, from those JSON files)
              [--couple none] [--param aft:samples_per_step=1 ...]

The whole grid (``benchmarks/results/blackbox_grid.md``):

    python benchmarks/blackbox.py --models hgb rf lightgbm pipeline \
        --cases census:sex census:race compas:race bank:age --seeds cluster random iandd \
        --budgets 20000 200000 --repeats 3 --sg-repeats 1 --name blackbox_grid

Models, trained once per case with model random state 0: the zoo's HistGradientBoostingClassifier (``hgb``),
RandomForestClassifier (``rf``), DecisionTreeClassifier (``dtc``, the model Aft's surrogate can copy exactly) and
LGBMClassifier (``lightgbm``) on the dataset's 60% split, and ``pipeline``: a
scikit-learn Pipeline (OneHotEncoder on the text columns in a ColumnTransformer, then HistGradientBoosting) fitted
on the raw Adult rows (``adult.data``; held out: ``adult.test``) and run through chiralfair as an own model, as in
the README's own-data example (its bins, and for ``sex`` its coupling sex <-> relationship): census cases only.
A case is ``dataset:protected``. For each model, case, seed strategy and random state 0 .. ``--repeats`` - 1, the
seeds (``--max-global`` of them) are selected once and shared by every generator and budget; every generator then
runs through the pipeline (:func:`chiralfair.pipeline.run_pipeline`, no verdict) with ``max_queries`` = each budget:
the seeds' queries count against it, and the search stops at the first model call that would pass it.
``max_local`` (``--max-local``) is by default the budget itself, so that the budget, not the local phase, ends
the searches (with 1,000, AEQUITAS and KOSEI stopped at 12,378-60,000 of 200,000 queries, and AEQUITAS at 12,378 of
20,000 with random seeds); a search may still end first (KOSEI's queue empties, no global IDI to walk from).
Reported per cell: the median over the random states of IDIs found (and of the queries used). SG runs for the
first ``--sg-repeats`` random states only (it is slow; its cells are then single runs). ``--max-queries N`` is
``--budgets N``.

Writes ``benchmarks/results/<name>.json`` (every run, versions, load) and ``<name>.md``.

``--ceiling NAME ...`` writes ``benchmarks/results/blackbox_ceiling.md`` from those result files: per cell, the IDIs
AEQUITAS found per query and whether 1.5x that fits under the counting rule's ceiling. A new key is an IDI only when
the input and at least one counterpart with another label were queried, so no search finds more than one IDI per
two queries (:data:`MAX_IDIS_PER_QUERY`): where AEQUITAS already finds more than a third of an IDI per query, no
generator can find 1.5x its IDIs at the same budget.
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
MODEL_NAMES = {"hgb": "sklearn HistGradientBoostingClassifier", "rf": "sklearn RandomForestClassifier",
               "dtc": "sklearn DecisionTreeClassifier",
               "lightgbm": "lightgbm LGBMClassifier",
               "pipeline": "sklearn Pipeline(ColumnTransformer(OneHotEncoder on text columns), "
                           "HistGradientBoostingClassifier) on the raw Adult rows"}
MODEL_RANDOM_STATE = 0
# A new IDI key costs at least two queries: the input and one counterpart that gets another label.
MAX_IDIS_PER_QUERY = 0.5
ADULT = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
         "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country", "income"]
README_BINS = {"fnlwgt": 20, "capital-gain": 10, "capital-loss": 10, "hours-per-week": 10}
README_COUPLE = {"sex": {"relationship": {"Husband": "Wife", "Wife": "Husband"}}}


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def _raw_adult():
    import pandas as pd

    raw = Path(os.environ.get("CHIRALFAIR_DATA", "")) / "census" / "raw"
    train = pd.read_csv(raw / "adult.data", names=ADULT, skipinitialspace=True).dropna(how="all")
    test = pd.read_csv(raw / "adult.test", names=ADULT, skipinitialspace=True, skiprows=1).dropna(how="all")
    test["income"] = test["income"].str.rstrip(".")
    return train, test


def pipeline_inputs(protected: str, couple: bool = True):
    """The raw-frame pipeline on the raw Adult rows, as chiralfair's own-model path reads it."""
    from sklearn.compose import make_column_selector, make_column_transformer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    from chiralfair.pipeline import DataSpec, inputs_from_objects

    train, test = _raw_adult()
    pre = make_column_transformer((OneHotEncoder(handle_unknown="ignore", sparse_output=False),
                                   make_column_selector(dtype_exclude="number")), remainder="passthrough")
    pipe = make_pipeline(pre, HistGradientBoostingClassifier(random_state=MODEL_RANDOM_STATE))
    pipe.fit(train.drop(columns="income"), train["income"])
    settings = DataSpec.build(label="income", positive_class=">50K", protected=protected, bins=README_BINS,
                              couple=README_COUPLE if protected == "sex" and couple else None)
    return inputs_from_objects(pipe, train, settings=settings, test=test, name="pipeline")


def model_inputs(model: str, case: str, couple: bool = True):
    """RunInputs of ``model`` on ``case`` (``dataset:protected``), with the dataset's coupling or none."""
    from chiralfair.pipeline import RunConfig
    from chiralfair.pipeline.inputs import inputs_from_names

    dataset, protected = case.split(":")
    if model == "pipeline":
        return pipeline_inputs(protected, couple)
    config = RunConfig(dataset=dataset, protected=(protected,), model=model, model_random_state=MODEL_RANDOM_STATE,
                       random_state=0, couple=couple)
    return inputs_from_names(config)


def job(model: str, case: str, seeds: str, state: int, generators: list[str], budgets: list[int], max_global: int,
        max_local: int | None, couple: bool = True, params: dict | None = None) -> list[dict]:
    """Every generator at every budget from one shared seed selection of ``seeds`` on ``model`` at ``state``."""
    from chiralfair.models.threads import single_native_thread
    from chiralfair.pipeline import SearchPlan, run_pipeline
    from chiralfair.seeds import make_seed_strategy

    inputs = model_inputs(model, case, couple)
    inputs.model.reset_queries()
    with single_native_thread():
        t = time.perf_counter()
        report = make_seed_strategy(seeds).select(inputs.model, inputs.dataset, max_global, random_state=state)
        seed_seconds = time.perf_counter() - t
    out = []
    for max_queries in budgets:
        for name in generators:
            plan = SearchPlan(seeds=seeds, generator=name, max_global=max_global,
                              max_local=max_queries if max_local is None else max_local,
                              random_state=state, max_queries=max_queries,
                              generator_params=(params or {}).get(name, {}))
            load = os.getloadavg()[0]
            t = time.perf_counter()
            with single_native_thread():
                outcome = run_pipeline(inputs, plan, verdict=False, reuse_seeds=lambda select: report)
            seconds = time.perf_counter() - t
            budget = outcome.result.meta["query_budget"]
            out.append({"model": model, "case": case, "seeds": seeds, "random_state": state, "generator": name,
                        "max_queries": max_queries, "n_idis": outcome.result.n_idis,
                        "n_global": outcome.result.n_global, "n_local": outcome.result.n_local,
                        "n_queries": budget["n_queries"], "n_seed_queries": budget["n_seed_queries"],
                        "hit": budget["hit"], "seconds": round(seconds, 2), "seed_seconds": round(seed_seconds, 2),
                        "load_1min": load, "f1": inputs.quality.get("f1"), "test_rows": inputs.test_rows})
    return out


def parse_params(ap: argparse.ArgumentParser, items: list[str], generators: list[str]) -> dict[str, dict]:
    """``--param GEN:NAME=VALUE`` items as {generator: {name: value}}, each generator built once to refuse bad ones."""
    from chiralfair.generators import make_generator

    params: dict[str, dict] = {}
    for item in items:
        name, _, assignment = item.partition(":")
        key, _, value = assignment.partition("=")
        if not (name and key and value):
            ap.error(f"--param takes GENERATOR:NAME=VALUE (e.g. aft:samples_per_step=1), got {item!r}")
        if name not in generators:
            ap.error(f"--param {item!r}: generator {name!r} is not among --generators {generators}")
        if key in params.get(name, {}):
            ap.error(f"--param {item!r}: {name}'s {key} is given twice")
        try:
            params.setdefault(name, {})[key] = json.loads(value)
        except ValueError:
            ap.error(f"--param {item!r}: the value must be JSON (a number, true/false, or a quoted string)")
    for name, kv in params.items():
        try:
            make_generator(name, **kv)
        except (TypeError, ValueError) as err:
            ap.error(f"--param for {name}: {err}")
    return params


def run_in_pool(fn, jobs: list[tuple], processes: int, t0: float) -> list[dict]:
    """``fn(*job)`` for every job on ``processes`` processes; their runs, in the order they finish."""
    runs: list[dict] = []
    with ProcessPoolExecutor(processes) as pool:
        for done in as_completed([pool.submit(fn, *j) for j in jobs]):
            runs += done.result()
            print(f"{time.perf_counter() - t0:6.0f} s: {len(runs)} runs", file=sys.stderr, flush=True)
    return runs


def run_record(uptime_before: str, t0: float) -> dict:
    """What every result file records of its run: date, versions, CPUs, load before and after, wall seconds."""
    return {"date": datetime.now(UTC).isoformat(timespec="seconds"), "versions": versions(),
            "cpu_count": os.cpu_count(), "uptime_before": uptime_before, "uptime_after": _uptime(),
            "seconds": time.perf_counter() - t0}


def versions() -> dict[str, str]:
    import lightgbm
    import numpy
    import sklearn

    import chiralfair

    return {"python": platform.python_version(), "numpy": numpy.__version__, "scikit-learn": sklearn.__version__,
            "lightgbm": lightgbm.__version__, "chiralfair": chiralfair.__version__}


def _cells(runs: list[dict], key: tuple, gens: list[str]) -> tuple[list[str], dict[str, float]]:
    cells, medians = [], {}
    for g in gens:
        rs = [r for r in runs if (r["model"], r["case"], r["seeds"], r["max_queries"], r["generator"]) == (*key, g)]
        if not rs:
            cells.append("-")
            continue
        if all(r["n_seed_queries"] >= r["max_queries"] for r in rs):  # nothing left for the generator
            seed_q = statistics.median(r["n_seed_queries"] for r in rs)
            cells.append(f"seeds {seed_q:,.0f} q")
            continue
        medians[g] = statistics.median(r["n_idis"] for r in rs)
        q = statistics.median(r["n_queries"] for r in rs)
        cells.append(f"{medians[g]:,.0f} ({q:,.0f})")
    return cells, medians


def write_markdown(doc: dict, path: Path) -> None:
    runs = doc["runs"]
    p = doc["parameters"]
    v = doc["versions"]
    gens = [g for g in GENERATORS if any(r["generator"] == g for r in runs)]
    budgets = ", ".join(f"{b:,}" for b in p["budgets"])
    lines = [f"# Black-box generators at equal query budgets ({budgets} queries)", "",
             f"Written by `benchmarks/blackbox.py` on {doc['date']}. Models trained with model random state "
             f"{MODEL_RANDOM_STATE}: " + "; ".join(f"`{m}` = {MODEL_NAMES[m]}" for m in p["models"])
             + f". Libraries of the models under test: scikit-learn {v['scikit-learn']}, lightgbm {v['lightgbm']}, "
             f"numpy {v['numpy']}, python {v['python']}; chiralfair {v['chiralfair']}. {doc['cpu_count']} CPUs.",
             "", "Test F1 of each model (rows held out from training): "
             + "; ".join(f"`{m}` {case} {f1:.3f}" for (m, case), f1 in sorted(_f1(runs).items())) + ".", "",
             f"Each cell: median over random states {p['random_states']} of the IDIs found (queries used in "
             f"brackets). Per random state the seeds ({p['max_global']} per strategy) are selected once and shared "
             f"by every generator and budget; their queries count against the budget (the pipeline's "
             f"`max_queries`), and max_local = {_max_local_text(p)} so that the budget ends the searches. SG: random "
             f"states {p['sg_random_states']} only. `pipeline`: census cases only (raw Adult rows). `seeds N q`: "
             "the seed strategy alone spent N queries, the whole budget or more, so no generator could run (I&D "
             "predicts every data row and checks the disagreements before any search). Generator parameters: "
             + (", ".join(f"{g} {k}={v}" for g, kv in p.get("generator_params", {}).items() for k, v in kv.items())
                or "the defaults") + ". Coupling: "
             + ("none (`--couple none`, as in the I&D paper)." if p.get("couple") == "none" else
                "the dataset's default (census: sex -> relationship Husband <-> Wife)."), "",
             f"Load: before `{doc['uptime_before']}`; after `{doc['uptime_after']}`. Wall time "
             f"{doc['seconds']:.0f} s with {p['processes']} processes.", ""]
    if p.get("shrunk"):
        lines += [f"Grid shrunk: {p['shrunk']}", ""]
    keys = [(m, c, s) for m in p["models"] for c in p["cases"] for s in p["seeds"]]
    for budget in p["budgets"]:
        lines += [f"## {budget:,} queries", "", "| model | case | seeds | " + " | ".join(gens) + " | best / aequitas |",
                  "|---|---|---|" + "---:|" * len(gens) + "---:|"]
        for model, case, seeds in keys:
            cells, medians = _cells(runs, (model, case, seeds, budget), gens)
            if all(c == "-" for c in cells):
                continue
            ratio = "-"
            if medians.get("aequitas") and len(medians) > 1:
                best = max((g for g in medians if g != "aequitas"), key=medians.get)
                ratio = f"{best} {medians[best] / medians['aequitas']:.2f}x"
            lines.append(f"| {model} | {case} | {seeds} | " + " | ".join(cells) + f" | {ratio} |")
        lines.append("")
    lines += ["Seconds per search (median, all budgets), for scale (measured beside other jobs):", "",
              "| model | case | seeds | " + " | ".join(gens) + " |", "|---|---|---|" + "---:|" * len(gens)]
    for model, case, seeds in keys:
        cells = []
        for g in gens:
            rs = [r["seconds"] for r in runs if (r["model"], r["case"], r["seeds"], r["generator"])
                  == (model, case, seeds, g)]
            cells.append(f"{statistics.median(rs):.1f}" if rs else "-")
        if any(c != "-" for c in cells):
            lines.append(f"| {model} | {case} | {seeds} | " + " | ".join(cells) + " |")
    if doc.get("findings"):
        lines += ["", doc["findings"]]
    path.write_text("\n".join(lines) + "\n")


def write_ceiling(names: list[str], path: Path) -> None:
    """The ceiling table (module docstring) of the result files ``names``, written to ``path``."""
    lines = ["# How far above AEQUITAS a black-box generator could go at equal budgets", "",
             f"Written by `benchmarks/blackbox.py --ceiling {' '.join(names)}` from those result files. A new key is "
             "an IDI only when the input and at least one counterpart with another label were queried, so no search "
             f"finds more than {MAX_IDIS_PER_QUERY} IDIs per query. Each row: AEQUITAS's IDIs per query (median over "
             "the random states) and the IDIs per query 1.5x as many would need; **no**: the ceiling rules 1.5x "
             "out, yes: it does not (which is not to say a generator reaches it). The result files say which code "
             "measured them.", "",
             "| results | model | case | seeds | budget | random states | aequitas IDIs / query | 1.5x needs | "
             "ruled out |", "|---|---|---|---|---:|---:|---:|---:|---|"]
    n_cells = n_out = 0
    for name in names:
        runs = json.loads((RESULTS / f"{name}.json").read_text())["runs"]
        cells: dict[tuple, list[float]] = {}
        for r in runs:
            if r["generator"] == "aequitas":
                cells.setdefault((r["model"], r["case"], r["seeds"], r["max_queries"]), []).append(
                    r["n_idis"] / r["max_queries"])
        for (model, case, seeds, budget), rates in sorted(cells.items()):
            rate = statistics.median(rates)
            ruled_out = 1.5 * rate > MAX_IDIS_PER_QUERY
            n_cells, n_out = n_cells + 1, n_out + ruled_out
            lines.append(f"| {name} | {model} | {case} | {seeds} | {budget:,} | {len(rates)} | {rate:.3f} | "
                         f"{1.5 * rate:.3f} | {'**yes**' if ruled_out else 'no'} |")
    lines += ["", f"{n_out} of {n_cells} cells: 1.5x AEQUITAS's IDIs would pass the ceiling.", ""]
    path.write_text("\n".join(lines))


def _max_local_text(p: dict) -> str:
    return "the budget" if p["max_local"] is None else f"{p['max_local']:,}"


def _f1(runs: list[dict]) -> dict[tuple[str, str], float]:
    return {(r["model"], r["case"]): r["f1"] for r in runs}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["hgb", "rf"], choices=list(MODEL_NAMES))
    ap.add_argument("--cases", nargs="+", default=["census:sex"], help="dataset:protected, e.g. compas:race")
    ap.add_argument("--seeds", nargs="+", default=["cluster", "random"])
    ap.add_argument("--generators", nargs="+", default=list(GENERATORS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sg-repeats", type=int, default=3)
    ap.add_argument("--budgets", nargs="+", type=int, default=None, help="query budgets (default: --max-queries)")
    ap.add_argument("--max-queries", type=int, default=20_000)
    ap.add_argument("--max-global", type=int, default=1000)
    ap.add_argument("--max-local", type=int, default=None, help="default: each budget")
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--param", action="append", default=[], metavar="GEN:NAME=VALUE",
                    help="a generator parameter (a JSON value), e.g. aft:samples_per_step=1; repeatable")
    ap.add_argument("--couple", choices=["dataset", "none"], default="dataset",
                    help="the dataset's default coupling (census: sex -> relationship), or none (the I&D paper's)")
    ap.add_argument("--shrunk", default="", help="What was cut from the grid, and why (said in the Markdown).")
    ap.add_argument("--findings", default="", help="A Markdown file appended to the results as they are written.")
    ap.add_argument("--name", default="blackbox")
    ap.add_argument("--rewrite", action="store_true", help="Only write <name>.md again from <name>.json.")
    ap.add_argument("--ceiling", nargs="+", metavar="NAME", help="Only write blackbox_ceiling.md from these results.")
    args = ap.parse_args(argv)
    if args.ceiling:
        write_ceiling(args.ceiling, RESULTS / "blackbox_ceiling.md")
        return
    if args.rewrite:
        write_markdown(json.loads((RESULTS / f"{args.name}.json").read_text()), RESULTS / f"{args.name}.md")
        return
    budgets = args.budgets or [args.max_queries]
    params = parse_params(ap, args.param, args.generators)
    for case in args.cases:
        if case.count(":") != 1:
            ap.error(f"--cases takes dataset:protected (e.g. census:sex), got {case!r}")
    uptime_before, t0 = _uptime(), time.perf_counter()
    jobs = []
    for model in args.models:
        for case in args.cases:
            if model == "pipeline" and not case.startswith("census:"):
                continue  # the raw-frame pipeline is fitted on the raw Adult rows
            for seeds in args.seeds:
                for state in range(args.repeats):
                    gens = [g for g in args.generators if g != "sg" or state < args.sg_repeats]
                    jobs.append((model, case, seeds, state, gens, budgets, args.max_global, args.max_local,
                                 args.couple != "none", params))
    runs = run_in_pool(job, jobs, args.processes, t0)
    doc = {**run_record(uptime_before, t0),
           "parameters": {"models": args.models, "cases": args.cases, "seeds": args.seeds,
                          "generators": args.generators, "random_states": list(range(args.repeats)),
                          "sg_random_states": list(range(min(args.sg_repeats, args.repeats))),
                          "budgets": budgets, "max_global": args.max_global, "max_local": args.max_local,
                          "processes": args.processes, "shrunk": args.shrunk, "couple": args.couple,
                          "generator_params": params},
           "f1": {f"{m} {c}": f1 for (m, c), f1 in _f1(runs).items()},
           "findings": Path(args.findings).read_text() if args.findings else "",
           "runs": sorted(runs, key=lambda r: (r["model"], r["case"], r["seeds"], r["max_queries"], r["random_state"],
                                               r["generator"]))}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(doc, indent=1, default=str) + "\n")
    write_markdown(doc, RESULTS / f"{args.name}.md")
    print(f"wrote {RESULTS / args.name}.json and .md in {doc['seconds']:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
