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
- **whole domain**: ``certify_domain`` for ``--seconds``: certified + falsified share, undecided, stopped.

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


def one(dataset: str, protected: str, name: str, seconds: float) -> dict:
    import chiralfair
    from chiralfair.certification import certify_domain, certify_individuals
    from chiralfair.certification.tree_reading import read_tree_ensemble
    from chiralfair.datasets import load_dataset

    data = load_dataset(dataset, protected=[protected])
    model, test = model_for(name, data)
    row: dict = {"dataset": dataset, "protected": protected, "model": name,
                 "coupled": bool(data.domain.coupled_columns), "n_test": int(len(test))}
    started, before = time.perf_counter(), load()
    read = read_tree_ensemble(model, data.domain)
    row["read"] = {"kind": read.kind, "seconds": time.perf_counter() - started, "load": [before, load()]}
    before = load()
    own = certify_individuals(model, data, test, rows_name="test split")
    row["own"] = {**own.summary(), "load": [before, load()]}
    similar = SIMILAR[dataset]
    before = load()
    near = certify_individuals(model, data, test, rows_name="test split", similar=similar, max_seconds=seconds)
    row["similar"] = {**near.summary(), "radii": similar, "decided": 1 - near.undecided_share,
                      "engine_seconds": near.meta["stats"].get("seconds"), "boxes": near.meta["stats"].get("n_boxes"),
                      "cells": near.meta["stats"].get("n_cells"), "n_queries": near.meta["n_queries"],
                      "load": [before, load()]}
    before, started = load(), time.perf_counter()
    truth = exhaustive(model, data, test, similar)
    decided = (near.status == 0) | (near.status == 1)
    row["similar"]["exhaustive"] = {
        "seconds": time.perf_counter() - started, "load": [before, load()],
        "affected_share": float(truth[near.status != 3].mean()),
        "disagree": int(((near.status[decided] == 1) != (truth[decided] == 1)).sum())}
    before = load()
    domain = certify_domain(model, data, rows=test, rows_name="test split", max_seconds=seconds)
    row["domain"] = {"certified": domain.certified_share, "falsified": domain.falsified_share,
                     "decided": domain.certified_share + domain.falsified_share,
                     "undecided": domain.undecided_share, "stopped": domain.stopped, "seconds": domain.seconds,
                     "log2_keys": float(np.log2(domain.domain_volume)), "n_idis": domain.n_idis,
                     "boxes": domain.stats["n_boxes"], "cells": domain.stats["n_cells"],
                     "test_rows": dict(domain.row_counts), "load": [before, load()]}
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
             f"other jobs (`uptime` at the start: {results['uptime_start']}); budget {results['seconds']:g} s. Load "
             "is the 1-minute load average before-after each figure.", "",
             "## Per person (the test split)", "",
             "| case | model | read | own row: affected (s, load) | similar: decided | affected | s | load | "
             "exhaustive check: affected, disagree (s) | peak MiB |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results["cases"]:
        if "error" in r:
            lines.append(f"| {r['dataset']} {r['protected']} | {r['model']} | error: {r['error']} |||||||||")
            continue
        o, s, e = r["own"], r["similar"], r["similar"]["exhaustive"]
        lines.append(
            f"| {r['dataset']} {r['protected']} | {r['model']} | {r['read']['kind']} | {o['affected']:.2%} "
            f"({o['seconds']:.1f} s, {o['load'][0]}-{o['load'][1]}) | {s['decided']:.2%} | {s['affected']:.2%} | "
            f"{s['seconds']:.1f} | {s['load'][0]}-{s['load'][1]} | {e['affected_share']:.2%}, {e['disagree']} "
            f"({e['seconds']:.1f} s) | {r['peak_rss_mib']:.0f} |")
    lines += ["", "## The whole domain", "",
              "| case | model | log2 keys | certified | falsified | undecided | stopped | s | boxes | cells | load |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results["cases"]:
        if "error" in r:
            continue
        d = r["domain"]
        lines.append(f"| {r['dataset']} {r['protected']} | {r['model']} | {d['log2_keys']:.1f} | {d['certified']:.2%} "
                     f"| {d['falsified']:.4%} | {d['undecided']:.2%} | {d['stopped']} | {d['seconds']:.1f} | "
                     f"{d['boxes']:,} | {d['cells']:,} | {d['load'][0]}-{d['load'][1]} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--one", nargs=3, metavar=("DATASET", "PROTECTED", "MODEL"))
    parser.add_argument("--models", default=",".join(MODELS))
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(*args.one, seconds=args.seconds)))
        return
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    rows = []
    for dataset, protected in CASES:
        for name in args.models.split(","):
            proc = subprocess.run([sys.executable, __file__, "--seconds", str(args.seconds), "--one", dataset,
                                   protected, name], capture_output=True, text=True)
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
               "versions": versions(), "cases": rows}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "certify_trees.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / "certify_trees.md").write_text(markdown(results))
    print(markdown(results))


if __name__ == "__main__":
    main()
