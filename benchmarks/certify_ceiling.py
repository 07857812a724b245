"""How much of census's domain boxes of a given size could certify at best: the ceiling of input splitting.

Run by hand:  python benchmarks/certify_ceiling.py [--cells 400] [--points 256]

Certification by input splitting can certify a box only if no input of it has a counterpart with another label;
with exact bounds, the certified share at a split depth is the share of boxes at that depth whose inputs all get one
label at every protected combination (or, at least, contain no IDI). This script estimates that share for the paper's
DNN on census sex (coupled), without any bound: it cuts the domain into a grid of ``2 ** depth`` cells (the bits of
each depth given greedily to the column whose ``|first-layer weight| * range`` per cell is largest, the columns the
influence split picks first; relationship enumerated by role, as certification does), draws ``--cells`` random cells
and ``--points`` random inputs in each, and counts the cells where the sampled inputs all share one label across both
combinations (``one label``) and where none of them is an IDI (``no IDI``). Sampling can miss the few inputs that
break a cell, so both are upper bounds of what any box-splitting certifier, however tight its bounds, certifies with
boxes that size; together with the number of cells at that depth they say how many boxes a budget would need.

Writes ``benchmarks/results/certify_ceiling.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from chiralfair import __version__
from chiralfair.certification import KeySpace, relu_network
from chiralfair.datasets import load_dataset
from chiralfair.models.training import train_model

RESULTS = Path(__file__).resolve().parent / "results"
DEPTHS = (8, 16, 24, 32, 40)


def bits_for(depth: int, influence: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    bits = np.zeros(len(sizes), dtype=np.int64)
    for _ in range(depth):
        score = np.where(2 ** bits < sizes, influence / 2.0 ** bits, -1.0)
        bits[np.argmax(score)] += 1
    return bits


def ceiling(network, space: KeySpace, depth: int, cells: int, points: int, rng) -> dict:
    lower, upper = space.lower, space.upper
    sizes = upper - lower + 1
    columns = space.columns
    influence = (np.abs(network.weights[0][:, columns]) * (sizes - 1)).sum(axis=0)
    influence[list(space.coupled)] = 0.0  # roles are enumerated
    bits = bits_for(depth, influence, np.where(np.isin(np.arange(len(sizes)), space.coupled), 1, sizes))
    pieces = np.minimum(2 ** bits, sizes)
    one_label = no_idi = drawn = 0
    while drawn < cells:
        cell = rng.integers(0, pieces)
        edges_lo = lower + (cell * sizes) // pieces
        edges_hi = lower + ((cell + 1) * sizes) // pieces - 1
        for i in space.coupled:
            edges_lo[i] = edges_hi[i] = rng.integers(lower[i], upper[i] + 1)
        keys = rng.integers(edges_lo, edges_hi + 1, size=(points, len(sizes)))
        X, _ = space.input_boxes(keys, keys)
        possible = space.domain.satisfies(X.reshape(-1, X.shape[-1])).reshape(points, -1)
        if not possible.any(axis=1).all():  # a role outside the domain: no input of the cell can exist
            continue
        drawn += 1
        labels = network.logit(X.reshape(-1, X.shape[-1])).reshape(points, -1) > 0
        labels = np.where(possible, labels, labels[np.arange(points), possible.argmax(axis=1)][:, None])
        same = labels.all(axis=1) | ~labels.any(axis=1)
        one_label += bool(same.all() and (labels.all() or not labels.any()))
        no_idi += bool(same.all())
    n_cells = float(np.prod(pieces.astype(float)) * np.prod(sizes[list(space.coupled)].astype(float)))
    return {"depth": depth, "cells_per_column": pieces.tolist(), "n_cells": n_cells,
            "one_label": one_label / cells, "no_idi": no_idi / cells}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=400)
    parser.add_argument("--points", type=int, default=256)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    data = load_dataset("census", protected=["sex"])
    trained = train_model(data, "dnn", random_state=0)
    network = relu_network(trained.model, data.domain)
    space = KeySpace(data.domain)
    load_before = os.getloadavg()
    rng = np.random.default_rng(0)
    rows = [ceiling(network, space, d, args.cells, args.points, rng) for d in DEPTHS]
    results = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "chiralfair": __version__,
               "cpu_count": os.cpu_count(), "cells": args.cells, "points": args.points,
               "columns": [data.domain.names[c] for c in space.columns], "rows": rows,
               "loadavg_before": load_before, "loadavg_after": os.getloadavg()}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "certify_ceiling.json").write_text(json.dumps(results, indent=2))
    lines = ["# The ceiling of input splitting on census sex (`benchmarks/certify_ceiling.py`)", "",
             f"{results['date']}, chiralfair {__version__}; {args.cells} random cells per depth, {args.points} "
             "random inputs per cell; upper bounds (sampling can miss an input that breaks a cell).", "",
             "| split depth | cells in the grid | cells with one label | cells with no IDI |", "|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['depth']} | {r['n_cells']:.3g} | {r['one_label']:.1%} | {r['no_idi']:.1%} |")
    (args.out / "certify_ceiling.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
