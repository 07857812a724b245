"""Certification of tree ensembles: per person (own row and a neighbourhood) and the whole domain, with timings.

Run by hand:  python benchmarks/certify_trees.py [--seconds 60]

Cases: census sex (the default coupling, relationship Husband <-> Wife, and its constraints) and compas race. Models,
all on the pipeline's 60/40 split (random_state 0): the zoo's ``hgb`` and ``lightgbm``, an XGBoost
``XGBClassifier(n_estimators=100, max_depth=6, n_jobs=1)`` fitted on the same training rows, a depth-8 decision tree
(``dtc``, ``max_depth=8``) and 10-tree random forests (``rf``, ``n_estimators=10``), grown fully and to depth 8.

Per model, each in its own process (so its peak memory is its own, read from ``ru_maxrss``):

- **own row**: every test individual's own row (``certify_individuals``; exact by construction);
- **similar**: each test individual within ``age`` +-2 and ``hours_per_week`` +-4 (census) or ``age`` +-2 and
  ``priors_count`` +-1 (compas), budget ``--seconds``: the share decided and the seconds; then the same statuses
  recounted by an exhaustive check of every key of every person's box (every counterpart, through the model), and the
  number of people where the two differ (must be 0);
- **whole domain**: ``certify_domain`` for ``--seconds``: certified + falsified share, undecided, stopped; for the
  models of ``--curve`` (default: the fully grown forest and XGBoost), a second run of ``--long`` seconds whose
  decided share is read at 60, 120 and ``--long`` seconds, beside how the model's trees read the protected and
  coupled columns (why a domain stays undecided);
- **verdict**: the own-row statuses against the discrimination check of every counterpart of every test row (the
  verdict's check), the number of people where the two agree.

Every phase records wall seconds and CPU seconds (``resource.getrusage``: the process and its children, plus the CPU
seconds the tree search's other processes report for their shares, ``stats["shared_cpu_seconds"]``: they live on
between calls, so ``getrusage`` does not count them). The domain's search shares its boxes among ``--n-jobs``
processes (default: the CPUs available).

Every time is printed beside the load average around it (the machine is shared). Writes
``benchmarks/results/certify_trees.json`` and ``certify_trees.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
CASES = [("census", "sex"), ("compas", "race")]
MODELS = ["hgb", "lightgbm", "xgboost", "dtc8", "rf10", "rf10d8"]
SIMILAR = {"census": {"age": 2, "hours_per_week": 4}, "compas": {"age": 2, "priors_count": 1}}


def load():
    return round(os.getloadavg()[0], 1)


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and its children (``resource.getrusage``)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def model_for(name, data):
    from chiralfair.models import as_model
    from chiralfair.models.threads import single_native_thread
    from chiralfair.models.training import train_model
    from chiralfair.models.zoo import ModelSpec

    if name == "xgboost":
        import xgboost

        base = train_model(data, "hgb", random_state=0)  # the same split
        train = base.train_index
        with single_native_thread():
            est = xgboost.XGBClassifier(n_estimators=100, max_depth=6, n_jobs=1, random_state=0)
            est.fit(data.X[train], data.y[train])
        return as_model(est), base.test_index
    spec = {"hgb": ModelSpec("hgb"), "lightgbm": ModelSpec("lightgbm"), "dtc8": ModelSpec("dtc", {"max_depth": 8}),
            "rf10": ModelSpec("rf", {"n_estimators": 10}),
            "rf10d8": ModelSpec("rf", {"n_estimators": 10, "max_depth": 8})}[name]
    trained = train_model(data, spec, random_state=0)
    return trained.model, trained.test_index


def exhaustive(model, data, rows, similar) -> np.ndarray:
    """Each person affected (1) or not (0), by checking every key of their box through the model."""
    from chiralfair.certification.neighbourhood import similar_boxes
    from chiralfair.oracle import DiscriminationCheck

    lo, hi, person = similar_boxes(data, rows, similar)
    sizes = (hi - lo + 1)
    n = np.prod(sizes, axis=1)
    box = np.repeat(np.arange(len(lo)), n)
    offset = np.arange(len(box)) - np.repeat(np.cumsum(n) - n, n)
    X = lo[box].copy()
    for f in range(lo.shape[1]):  # mixed radix: the offset's digit for column f
        X[:, f] += offset % sizes[box, f]
        offset //= sizes[box, f]
    idi = DiscriminationCheck(model, data.domain).check(X).is_idi
    out = np.zeros(len(rows), dtype=np.int8)
    np.maximum.at(out, person[box], idi.astype(np.int8))
    return out


def structure(read, domain) -> dict:
    """How the trees read the protected and coupled columns, and how finely they cut the key columns."""
    columns = sorted(set(domain.protected) | set(domain.coupled_columns))
    touched = np.zeros(read.n_leaves, dtype=bool)
    for f in columns:
        block = read.reach[:, read.offset[f]:read.offset[f + 1]]
        touched |= ~block.all(axis=1)
    trees = np.add.reduceat(touched.astype(np.int64), read.tree_start) > 0
    keys = [f for f in range(domain.n_features) if f not in set(domain.protected)]
    return {"trees_reading_protected_or_coupled": int(trees.sum()), "n_trees": int(read.n_trees),
            "leaves_reading_protected_or_coupled": int(touched.sum()), "n_leaves": int(read.n_leaves),
            "log2_cells_of_cut_grid": float(sum(np.log2(len(read.cuts[f]) + 1) for f in keys)),
            "cuts_per_key_column": {domain.names[f]: int(len(read.cuts[f])) for f in keys}}


def curve(model, data, test, seconds: float, n_jobs=None) -> dict:
    """The domain's decided share at 60, 120 and ``seconds`` wall seconds of one run."""
    from chiralfair.certification import certify_domain

    marks = [m for m in (60.0, 120.0) if m < seconds]
    seen: list[dict] = []

    def progress(p):
        seen.append(p)

    before, cpu = load(), cpu_seconds()
    result = certify_domain(model, data, rows=test, rows_name="test split", max_seconds=seconds,
                            on_progress=progress, n_jobs=n_jobs)
    volume = result.domain_volume
    points = []
    for m in marks:
        first = next((p for p in seen if p["seconds"] >= m), seen[-1] if seen else None)
        if first is not None:
            points.append({"seconds": first["seconds"], "certified": first["certified"] / volume,
                           "falsified": first["falsified"] / volume})
    points.append({"seconds": result.seconds, "certified": result.certified_share,
                   "falsified": result.falsified_share})
    return {"points": points, "stopped": result.stopped, "boxes": result.stats["n_boxes"],
            "cells": result.stats["n_cells"], "region_boxes": result.stats.get("n_region_boxes", 0),
            "cpu_seconds": cpu_seconds() - cpu + result.stats.get("shared_cpu_seconds", 0.0),
            "n_jobs": result.stats.get("n_jobs", 1), "rounds": result.stats.get("n_rounds", 0),
            "shared_peak_rss_mib": result.stats.get("shared_peak_rss_mib", 0.0), "load": [before, load()]}


def one(dataset: str, protected: str, name: str, seconds: float, long: float = 0.0, n_jobs=None) -> dict:
    import chiralfair
    from chiralfair.certification import certify_domain, certify_individuals
    from chiralfair.certification.tree_reading import read_tree_ensemble
    from chiralfair.datasets import load_dataset
    from chiralfair.oracle import DiscriminationCheck

    data = load_dataset(dataset, protected=[protected])
    model, test = model_for(name, data)
    row: dict = {"dataset": dataset, "protected": protected, "model": name,
                 "coupled": bool(data.domain.coupled_columns), "n_test": int(len(test))}
    started, before = time.perf_counter(), load()
    read = read_tree_ensemble(model, data.domain)
    row["read"] = {"kind": read.kind, "seconds": time.perf_counter() - started, "load": [before, load()]}
    row["structure"] = structure(read, data.domain)
    before, cpu = load(), cpu_seconds()
    own = certify_individuals(model, data, test, rows_name="test split")
    row["own"] = {**own.summary(), "cpu_seconds": cpu_seconds() - cpu, "load": [before, load()]}
    before, cpu, started = load(), cpu_seconds(), time.perf_counter()
    check = DiscriminationCheck(model, data.domain)
    verdict = check.check(data.X[test]).is_idi
    counted = own.status != 3
    row["verdict"] = {"people": int(counted.sum()), "affected": int(verdict[counted].sum()),
                      "agree": int(((own.status[counted] == 1) == verdict[counted]).sum()),
                      "seconds": time.perf_counter() - started, "cpu_seconds": cpu_seconds() - cpu,
                      "load": [before, load()]}
    similar = SIMILAR[dataset]
    before, cpu = load(), cpu_seconds()
    near = certify_individuals(model, data, test, rows_name="test split", similar=similar, max_seconds=seconds)
    row["similar"] = {**near.summary(), "radii": similar, "decided": 1 - near.undecided_share,
                      "cpu_seconds": cpu_seconds() - cpu,
                      "engine_seconds": near.meta["stats"].get("seconds"), "boxes": near.meta["stats"].get("n_boxes"),
                      "cells": near.meta["stats"].get("n_cells"), "n_queries": near.meta["n_queries"],
                      "load": [before, load()]}
    before, started, cpu = load(), time.perf_counter(), cpu_seconds()
    truth = exhaustive(model, data, test, similar)
    decided = (near.status == 0) | (near.status == 1)
    row["similar"]["exhaustive"] = {
        "seconds": time.perf_counter() - started, "cpu_seconds": cpu_seconds() - cpu,
        "load": [before, load()], "affected_share": float(truth[near.status != 3].mean()),
        "disagree": int(((near.status[decided] == 1) != (truth[decided] == 1)).sum())}
    before, cpu = load(), cpu_seconds()
    domain = certify_domain(model, data, rows=test, rows_name="test split", max_seconds=seconds, n_jobs=n_jobs)
    row["domain"] = {"cpu_seconds": cpu_seconds() - cpu + domain.stats.get("shared_cpu_seconds", 0.0),
                     "n_jobs": domain.stats.get("n_jobs", 1), "rounds": domain.stats.get("n_rounds", 0),
                     "shared_peak_rss_mib": domain.stats.get("shared_peak_rss_mib", 0.0),
                     "certified": domain.certified_share, "falsified": domain.falsified_share,
                     "decided": domain.certified_share + domain.falsified_share,
                     "undecided": domain.undecided_share, "stopped": domain.stopped, "seconds": domain.seconds,
                     "log2_keys": float(np.log2(domain.domain_volume)), "n_idis": domain.n_idis,
                     "boxes": domain.stats["n_boxes"], "cells": domain.stats["n_cells"],
                     "region_boxes": domain.stats.get("n_region_boxes", 0), "regions": domain.stats.get("n_regions", 0),
                     "test_rows": dict(domain.row_counts), "load": [before, load()]}
    if long:
        row["curve"] = curve(model, data, test, long, n_jobs)
    row["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    row["chiralfair"] = chiralfair.__version__
    return row


def versions() -> dict:
    from importlib.metadata import version

    out = {}
    for lib in ("chiralfair", "numpy", "scikit-learn", "lightgbm", "xgboost", "dtai-veritas"):
        try:
            out[lib] = version(lib)
        except Exception:  # noqa: BLE001 - a library not installed
            out[lib] = None
    return out


def markdown(results: dict) -> str:
    v = results["versions"]
    lines = ["# Certification of tree ensembles (`benchmarks/certify_trees.py`)", "",
             f"{results['date']}, chiralfair {v['chiralfair']}, scikit-learn {v['scikit-learn']}, LightGBM "
             f"{v['lightgbm']}, XGBoost {v['xgboost']}, numpy {v['numpy']}; {results['cpu_count']} CPUs shared with "
             f"other jobs (`uptime` at the start: {results['uptime_start']}; at the end: {results['uptime_end']}); "
             f"budget {results['seconds']:g} s; `{results.get('command', '')}`; CPU seconds of all cases' processes: "
             f"{results['cpu_seconds_children']:.0f}. Load "
             "is the 1-minute load average before-after each figure.", "",
             *[f"{note}" for note in results.get("regenerated", [])],
             *([""] if results.get("regenerated") else []),
             "## Per person (the test split)", "",
             "| case | model | read | own row: affected (wall s, CPU s, load) | verdict: agree / people | "
             "similar: decided | affected | wall s | CPU s | load | exhaustive check: affected, disagree (wall s) "
             "| peak MiB |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results["cases"]:
        if "error" in r:
            lines.append(f"| {r['dataset']} {r['protected']} | {r['model']} | error: {r['error']} |||||||||||")
            continue
        o, s, e, v = r["own"], r["similar"], r["similar"]["exhaustive"], r["verdict"]
        lines.append(
            f"| {r['dataset']} {r['protected']} | {r['model']} | {r['read']['kind']} | {o['affected']:.2%} "
            f"({o['seconds']:.1f}, {o['cpu_seconds']:.1f}, {o['load'][0]}-{o['load'][1]}) | "
            f"{v['agree']:,} / {v['people']:,} | {s['decided']:.2%} | {s['affected']:.2%} | "
            f"{s['seconds']:.1f} | {s['cpu_seconds']:.1f} | {s['load'][0]}-{s['load'][1]} | "
            f"{e['affected_share']:.2%}, {e['disagree']} ({e['seconds']:.1f} s) | {r['peak_rss_mib']:.0f} |")
    lines += ["", "## The whole domain", "",
              "| case | model | log2 keys | certified | falsified | undecided | stopped | wall s | CPU s | boxes | "
              "cells / boxes cut into regions | load |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results["cases"]:
        if "error" in r:
            continue
        d = r["domain"]
        lines.append(f"| {r['dataset']} {r['protected']} | {r['model']} | {d['log2_keys']:.1f} | {d['certified']:.2%} "
                     f"| {d['falsified']:.4%} | {d['undecided']:.2%} | {d['stopped']}"
                     + (f" ({d['n_jobs']} processes)" if d.get("n_jobs", 1) > 1 else "") + f" | {d['seconds']:.1f} | "
                     f"{d['cpu_seconds']:.1f} | {d['boxes']:,} | {d['cells']:,} / {d.get('region_boxes', 0):,} | "
                     f"{d['load'][0]}-{d['load'][1]} |")
    lines += ["", "## How the trees read the protected columns, and the domain's share over time", "",
              "| case | model | trees reading a protected or coupled column | leaves doing so | log2 cells of the cut "
              "grid | decided share at (wall s) | CPU s | boxes | cells | load |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results["cases"]:
        if "error" in r:
            continue
        t = r["structure"]
        c = r.get("curve")
        at = ("; ".join(f"{p['certified'] + p['falsified']:.2%} ({p['seconds']:.0f})" for p in c["points"])
              if c else "(60 s run above)")
        lines.append(f"| {r['dataset']} {r['protected']} | {r['model']} | {t['trees_reading_protected_or_coupled']} "
                     f"/ {t['n_trees']} | {t['leaves_reading_protected_or_coupled']:,} / {t['n_leaves']:,} | "
                     f"{t['log2_cells_of_cut_grid']:.1f} | {at} | "
                     + (f"{c['cpu_seconds']:.1f} | {c['boxes']:,} | {c['cells']:,} | {c['load'][0]}-{c['load'][1]} |"
                        if c else " | | | |"))
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--one", nargs=3, metavar=("DATASET", "PROTECTED", "MODEL"))
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--long", type=float, default=300.0, help="seconds of the longer domain runs")
    parser.add_argument("--curve", default="rf10,xgboost", help="models whose domain also runs --long seconds")
    parser.add_argument("--n-jobs", type=int, default=None, help="processes of the domain's search (default: the CPUs)")
    parser.add_argument("--into", action="store_true",
                        help="with --one: put the case into certify_trees.json and .md in place of its earlier row")
    args = parser.parse_args()
    if args.one and args.into:
        uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
        long = args.long if args.one[2] in args.curve.split(",") else 0.0
        row = one(*args.one, seconds=args.seconds, long=long, n_jobs=args.n_jobs)
        results = json.loads((RESULTS / "certify_trees.json").read_text())
        results["cases"] = [row if (c["dataset"], c["protected"], c["model"]) == tuple(args.one) else c
                            for c in results["cases"]]
        end = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        results.setdefault("regenerated", []).append(
            f"The {' '.join(args.one)} rows were run again on {started}–{datetime.now(UTC).strftime('%H:%M')} UTC "
            f"(`python benchmarks/certify_trees.py {' '.join(sys.argv[1:])}`; `uptime` at the start: {uptime}; at "
            f"the end: {end}; chiralfair {row['chiralfair']}), the other rows are of the run above.")
        (RESULTS / "certify_trees.json").write_text(json.dumps(results, indent=2) + "\n")
        (RESULTS / "certify_trees.md").write_text(markdown(results))
        print(json.dumps(row))
        return
    if args.one:
        long = args.long if args.one[2] in args.curve.split(",") else 0.0
        print(json.dumps(one(*args.one, seconds=args.seconds, long=long, n_jobs=args.n_jobs)))
        return
    cpu_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    rows = []
    for dataset, protected in CASES:
        for name in args.models.split(","):
            proc = subprocess.run([sys.executable, __file__, "--seconds", str(args.seconds), "--long", str(args.long),
                                   "--curve", args.curve, "--one", dataset, protected, name]
                                  + ([] if args.n_jobs is None else ["--n-jobs", str(args.n_jobs)]),
                                  capture_output=True, text=True)
            if proc.returncode:
                row = {"dataset": dataset, "protected": protected, "model": name,
                       "error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed"}
            else:
                row = json.loads(proc.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(json.dumps(row), flush=True)
    results = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "seconds": args.seconds,
               "cpu_count": os.cpu_count(), "platform": platform.platform(), "uptime_start": uptime,
               "uptime_end": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
               "versions": versions(), "cases": rows, "command": "python benchmarks/certify_trees.py "
               + " ".join(sys.argv[1:]),
               "cpu_seconds_children": (lambda u: u.ru_utime + u.ru_stime - cpu_children.ru_utime
                                        - cpu_children.ru_stime)(resource.getrusage(resource.RUSAGE_CHILDREN))}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "certify_trees.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / "certify_trees.md").write_text(markdown(results))
    print(markdown(results))


if __name__ == "__main__":
    main()
