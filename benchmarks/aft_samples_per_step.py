"""Aft's ``samples_per_step``: one sample per pair and model batch (the reference's rule) against ten (the default).

Run by hand from the repository root:

    CHIRALFAIR_DATA=/path/to/data python benchmarks/aft_samples_per_step.py [--repeats 3] [--processes 2]

The reference code (toda-lab/AFT) reads a pair's stopping rule after every sample; chiralfair's Aft draws
``samples_per_step`` samples of every open pair per model batch and reads it after each step. This runs Aft with 1
and with 10 on census sex, cluster seeds (1,000), the zoo's HistGradientBoosting, RandomForest and DecisionTree
(model random state 0), at 20,000 and 200,000 queries (max_local = the budget), with census's default coupling and
without (``benchmarks/blackbox.py``'s jobs; both settings start from the same seeds, whose selection is
deterministic for a random state), and reports per cell the IDIs found by each, their ratio, and the seconds per
search. Writes ``benchmarks/results/aft_samples_per_step.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from blackbox import RESULTS, _uptime, job, run_in_pool, run_record  # noqa: E402

MODELS = ("hgb", "rf", "dtc")
BUDGETS = (20_000, 200_000)
STEPS = (10, 1)
COUPLINGS = {"census's coupling": True, "no coupling": False}


def run_cell(model: str, couple: bool, state: int) -> list[dict]:
    out = []
    for step in STEPS:
        for r in job(model, "census:sex", "cluster", state, ["aft"], list(BUDGETS), 1000, None, couple,
                     {"aft": {"samples_per_step": step}}):
            out.append({**r, "samples_per_step": step, "couple": couple})
    return out


def _counts(runs: list[dict]) -> str:
    return ", ".join(f"{r['n_idis']:,}" for r in runs)


def geometric_mean(values) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))


def markdown(doc: dict) -> str:
    runs = doc["runs"]
    lines = ["# Aft: one sample per pair and step (the reference's rule) against ten (the default)", "",
             f"Written by `benchmarks/aft_samples_per_step.py` on {doc['date']}: census sex, cluster seeds (1,000), "
             "zoo models of model random state 0, max_local = the budget; per random state both settings start from "
             "the same seeds (the selection is deterministic). Libraries: "
             f"{', '.join(f'{k} {v}' for k, v in doc['versions'].items())}. "
             f"Load: before `{doc['uptime_before']}`; after `{doc['uptime_after']}`. {doc['seconds']:.0f} s wall.", "",
             "| coupling | model | budget | IDIs, 10 a step (per random state) | IDIs, 1 a step | 1 / 10 (median) | "
             "seconds per search, 10 / 1 (median) |", "|---|---|---:|---|---|---:|---:|"]
    ratios: dict[tuple, list[float]] = {}
    for label, couple in COUPLINGS.items():
        for model in MODELS:
            for budget in BUDGETS:
                cell = {s: sorted((r for r in runs if (r["couple"], r["model"], r["max_queries"], r["samples_per_step"])
                                   == (couple, model, budget, s)), key=lambda r: r["random_state"]) for s in STEPS}
                ten, one = cell[10], cell[1]
                rs = [b["n_idis"] / max(a["n_idis"], 1) for a, b in zip(ten, one, strict=True)]
                ratios.setdefault((label, budget), []).extend(rs)
                lines.append(f"| {label} | {model} | {budget:,} | {_counts(ten)} | {_counts(one)} | "
                             f"{statistics.median(rs):.2f} | "
                             f"{statistics.median(r['seconds'] for r in ten):.1f} / "
                             f"{statistics.median(r['seconds'] for r in one):.1f} |")
    lines += ["", "Geometric mean of 1 / 10 over the models and random states: "
              + "; ".join(f"{label}, {budget:,} queries: {geometric_mean(rs):.2f}x"
                          for (label, budget), rs in ratios.items()) + ".", ""]
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--processes", type=int, default=2)
    args = ap.parse_args(argv)
    uptime_before, t0 = _uptime(), time.perf_counter()
    cells = [(m, c, s) for c in COUPLINGS.values() for m in MODELS for s in range(args.repeats)]
    runs = run_in_pool(run_cell, cells, args.processes, t0)
    doc = {**run_record(uptime_before, t0), "repeats": args.repeats,
           "runs": sorted(runs, key=lambda r: (not r["couple"], r["model"], r["max_queries"], r["samples_per_step"],
                                               r["random_state"]))}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "aft_samples_per_step.json").write_text(json.dumps(doc, indent=1, default=str) + "\n")
    (RESULTS / "aft_samples_per_step.md").write_text(markdown(doc))
    print(markdown(doc))


if __name__ == "__main__":
    main()
