"""Why a boosted ensemble's domain stays undecided: XGBoost against the zoo's HGB at an equal number of boxes.

Run by hand:  python benchmarks/certify_trees_why.py [--boxes 20000]

On census sex (the default coupling), all models on the pipeline's 60/40 split (random_state 0): the zoo's ``hgb``
(learning rate 0.1, at most 31 leaves a tree), the XGBoost model of ``certify_trees.py`` (``n_estimators=100,
max_depth=6``, XGBoost's default learning rate 0.3) and the same XGBoost at learning rate 0.1 and at depth 4. For
each: how much one tree can move the score (the spread, largest minus smallest leaf, summed over the trees, and its
median per tree), how many trees and leaves read the protected or coupled columns, and the domain's decided share
after the same number of boxes bounded (``max_boxes``: the same work on every machine, whatever the load), with the
wall and CPU seconds it took. Writes ``benchmarks/results/certify_trees_why.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
VARIANTS = {"hgb": None, "xgboost": {"max_depth": 6}, "xgboost-lr0.1": {"max_depth": 6, "learning_rate": 0.1},
            "xgboost-depth4": {"max_depth": 4}}


def model_for(name, data):
    from chiralfair.models import as_model
    from chiralfair.models.threads import single_native_thread
    from chiralfair.models.training import train_model

    base = train_model(data, "hgb", random_state=0)
    if name == "hgb":
        return base.model, base.test_index
    import xgboost

    with single_native_thread():
        est = xgboost.XGBClassifier(n_estimators=100, n_jobs=1, random_state=0, **VARIANTS[name])
        est.fit(data.X[base.train_index], data.y[base.train_index])
    return as_model(est), base.test_index


def one(name: str, boxes: int) -> dict:
    from certify_trees import structure

    from chiralfair.certification import certify_domain
    from chiralfair.certification.tree_reading import read_tree_ensemble
    from chiralfair.datasets import load_dataset

    data = load_dataset("census", protected=["sex"])
    model, test = model_for(name, data)
    read = read_tree_ensemble(model, data.domain)
    spread = np.maximum.reduceat(read.value, read.tree_start) - np.minimum.reduceat(read.value, read.tree_start)
    before, cpu, wall = os.getloadavg()[0], time.process_time(), time.perf_counter()
    result = certify_domain(model, data, rows=test, max_seconds=None, max_boxes=boxes)
    return {"model": name, "params": VARIANTS[name], "kind": read.kind, "structure": structure(read, data.domain),
            "spread_sum": float(spread.sum()), "spread_median": float(np.median(spread)),
            "certified": result.certified_share, "falsified": result.falsified_share, "boxes": result.stats["n_boxes"],
            "cells": result.stats["n_cells"], "wall_seconds": time.perf_counter() - wall,
            "cpu_seconds": time.process_time() - cpu, "load": [round(before, 1), round(os.getloadavg()[0], 1)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boxes", type=int, default=20000)
    parser.add_argument("--one")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.boxes)))
        return
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    rows = []
    for name in VARIANTS:
        proc = subprocess.run([sys.executable, __file__, "--boxes", str(args.boxes), "--one", name],
                              capture_output=True, text=True, cwd=Path(__file__).parent)
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else
                    {"model": name, "error": (proc.stderr.strip().splitlines() or ["failed"])[-1]})
        print(json.dumps(rows[-1]), flush=True)
    from importlib.metadata import version

    out = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "boxes": args.boxes, "uptime_start": uptime,
           "uptime_end": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
           "versions": {lib: version(lib) for lib in ("chiralfair", "scikit-learn", "xgboost", "numpy")},
           "cases": rows}
    (RESULTS / "certify_trees_why.json").write_text(json.dumps(out, indent=2) + "\n")
    lines = ["# Why XGBoost's census domain stays undecided (`benchmarks/certify_trees_why.py`)", "",
             f"{out['date']}, {out['versions']}; `uptime` at the start: {uptime}; at the end: {out['uptime_end']}. "
             f"Census sex (coupled), the pipeline's split; every model bounded the same {args.boxes:,} boxes.", "",
             "| model | read | spread: sum over trees (median a tree) | trees / leaves reading sex or relationship | "
             "certified | falsified | wall s | CPU s | load |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | error: {r['error']} ||||||||")
            continue
        t = r["structure"]
        lines.append(f"| {r['model']} {r['params'] or ''} | {r['kind']} | {r['spread_sum']:.1f} "
                     f"({r['spread_median']:.3f}) | {t['trees_reading_protected_or_coupled']} / "
                     f"{t['leaves_reading_protected_or_coupled']:,} | {r['certified']:.2%} | {r['falsified']:.4%} | "
                     f"{r['wall_seconds']:.1f} | {r['cpu_seconds']:.1f} | {r['load'][0]}-{r['load'][1]} |")
    (RESULTS / "certify_trees_why.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
