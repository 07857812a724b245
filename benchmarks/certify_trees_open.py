"""What the last undecided boxes of the depth-8 10-tree forest are: few leaf combinations across many cells.

Run by hand:  python benchmarks/certify_trees_open.py [--boxes 200000]

Census sex (coupled) with the zoo's ``rf`` (10 trees, ``max_depth=8``, the pipeline's split, random_state 0). The tree
search runs with boxes only (``regions_per_box=0``, the engine before regions) for ``--boxes`` boxes; of the boxes
still open, the largest 2,000 are read: how many cells of the cut grid each holds (every cut of every leaf inside
it), how many leaf combinations its trees reach (the product over trees of the leaves it reaches, at each protected
combination), how many trees tell the protected combinations apart there, and the spread of its score bounds. Then
the same number of boxes with regions (the landing engine), for the decided share of each. Wall and CPU seconds
(``resource.getrusage``) and load beside each. Writes ``benchmarks/results/certify_trees_open.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def load():
    return round(os.getloadavg()[0], 1)


def cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boxes", type=int, default=200_000)
    args = parser.parse_args()
    from chiralfair.certification import KeySpace, tree_search
    from chiralfair.certification.tree_reading import read_tree_ensemble
    from chiralfair.datasets import load_dataset
    from chiralfair.models.training import train_model
    from chiralfair.models.zoo import ModelSpec
    from chiralfair.oracle import DiscriminationCheck

    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    data = load_dataset("census", protected=["sex"])
    model = train_model(data, ModelSpec("rf", {"n_estimators": 10, "max_depth": 8}), random_state=0).model
    read = read_tree_ensemble(model, data.domain)
    space = KeySpace(data.domain)
    lo, hi, _ = space.domain_boxes()
    runs = {}
    left: dict = {}
    original = tree_search.close_tally

    def keep(tally, stats, space_, parts, started):
        left["lo"] = np.concatenate([p[0] for p in parts])
        left["hi"] = np.concatenate([p[1] for p in parts])
        return original(tally, stats, space_, parts, started)

    tree_search.close_tally = keep
    for name, per_box in (("boxes only", 0), ("with regions", 4096)):
        engine = tree_search.TreeBranchAndBound(max_seconds=None, max_boxes=args.boxes, regions_per_box=per_box)
        before, wall, cpu = load(), time.perf_counter(), cpu_seconds()
        tally = engine.run(read, space, DiscriminationCheck(model, data.domain), lo, hi)
        runs[name] = {"decided": float((tally.certified.sum() + tally.falsified.sum()) / space.volume(lo, hi).sum()),
                      "stopped": tally.stats["stopped"], "boxes": tally.stats["n_boxes"],
                      "region_boxes": tally.stats.get("n_region_boxes", 0), "cells": tally.stats["n_cells"],
                      "wall_seconds": time.perf_counter() - wall, "cpu_seconds": cpu_seconds() - cpu,
                      "load": [before, load()], "n_open": tally.stats["n_open"]}
        if per_box == 0:
            open_lo, open_hi = left["lo"], left["hi"]
    tree_search.close_tally = original
    volume = space.volume(open_lo, open_hi)
    top = np.argsort(-volume)[:2000]
    k = space.n_combinations
    xlo, xhi = space.input_boxes(open_lo[top], open_hi[top])
    m = len(top)
    reach = read.reached(xlo.reshape(m * k, -1), xhi.reshape(m * k, -1))
    leaves = np.add.reduceat(reach.astype(np.int64), read.tree_start, axis=1).reshape(m, k, -1)
    combos = np.prod(leaves.astype(np.float64), axis=2).max(axis=1)
    cells = np.prod((read.cuts_inside(open_lo[top], open_hi[top], space.columns) + 1).astype(np.float64), axis=1)
    columns = np.unique(np.concatenate([np.asarray(data.domain.protected), np.asarray(data.domain.coupled_columns,
                                                                                       dtype=np.int64)]))
    held = read.holds(xlo.reshape(m * k, -1), xhi.reshape(m * k, -1), columns).reshape(m, k, -1).all(axis=1)
    telling = reach.reshape(m, k, -1).any(axis=1) & ~held
    trees_telling = (np.add.reduceat(telling.astype(np.int64), read.tree_start, axis=1) > 0).sum(axis=1)
    lower, upper = read.bounds_of(reach)
    spread = (upper.reshape(m, k).max(axis=1) - lower.reshape(m, k).min(axis=1))
    q = [10, 50, 90]
    result = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "uptime_start": uptime,
              "uptime_end": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
              "read": read.kind, "boxes_budget": args.boxes, "runs": runs,
              "open_volume_share": float(volume.sum() / space.volume(lo, hi).sum()),
              "top2000_share_of_open": float(volume[top].sum() / volume.sum()),
              "cells_quantiles": np.percentile(cells, q).tolist(),
              "leaf_combinations_quantiles": np.percentile(combos, q).tolist(),
              "trees_telling_combinations_apart_quantiles": np.percentile(trees_telling, q).tolist(),
              "score_spread_quantiles": np.percentile(spread, q).tolist()}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "certify_trees_open.json").write_text(json.dumps(result, indent=2) + "\n")
    b = runs["boxes only"]
    lines = ["# The last undecided boxes of the depth-8 10-tree forest (`benchmarks/certify_trees_open.py`)", "",
             f"{result['date']}; `python benchmarks/certify_trees_open.py --boxes {args.boxes}`; `uptime` at the "
             f"start: {uptime}; at the end: {result['uptime_end']}. Census sex (coupled), zoo `rf` 10 trees depth 8 "
             f"({read.kind}), the same {args.boxes:,} boxes bounded by each engine.", "",
             "| engine | decided | stopped | boxes | cut into regions | cells | wall s | CPU s | load |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, x in runs.items():
        lines.append(f"| {name} | {x['decided']:.2%} | {x['stopped']} | {x['boxes']:,} | {x['region_boxes']:,} | "
                     f"{x['cells']:,} | {x['wall_seconds']:.1f} | {x['cpu_seconds']:.1f} | "
                     f"{x['load'][0]}-{x['load'][1]} |")
    lines += ["", f"Open after boxes only: {b['n_open']:,} boxes, {result['open_volume_share']:.2%} of the keys; the "
              f"largest 2,000 hold {result['top2000_share_of_open']:.0%} of that. Quantiles 10 / 50 / 90% over them:",
              "",
              "| what | 10% | 50% | 90% |", "|---|---|---|---|"]
    for label, key in (("cells of the cut grid inside", "cells_quantiles"),
                       ("leaf combinations reached (product over trees, worst combination)",
                        "leaf_combinations_quantiles"),
                       ("trees telling the protected combinations apart", "trees_telling_combinations_apart_quantiles"),
                       ("score bound spread (threshold 0.5)", "score_spread_quantiles")):
        values = result[key]
        lines.append(f"| {label} | " + " | ".join(f"{v:,.3g}" for v in values) + " |")
    lines += ["", "So a box left open holds some 10^8 cells (the cuts of leaves it does not reach cross it) but a few "
              "hundred leaf combinations: cutting it into its regions, one leaf per tree and combination, decides it "
              "exactly; the table above gives what that costs and decides at the same number of boxes."]
    (RESULTS / "certify_trees_open.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
