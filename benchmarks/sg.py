"""SG on census age with the paper's DNN: seconds to 1,000 IDIs, and cluster vs I&D seeds.

Run by hand:  python benchmarks/sg.py [--repeats 3] [--quick]

1. Seconds to 1,000 IDIs (ADF paper, Table 5: the reference SG needed 720.5 s on census age): 1,000 cluster
   seeds (KMeans round robin, as the reference), ``limit`` 3,000 tested inputs, default parameters; the wall
   and CPU time at which the 1,000th IDI is recorded, median over ``--repeats`` random states. Also, in the
   same run and as ratios to the default: ``batch_size=1`` (strict queue order), ``solver="z3"`` (every
   constraint by z3 instead of the interval shortcut for single-feature ones) and ``cap_local=False`` (the
   reference's uncapped local search).
2. Cluster vs I&D seeds, 100 seeds each, ``max_local`` 100, at the reference's ``limit`` of 1,000 tested
   inputs and at the default ``limit = max_global * (max_local + 1)`` = 10,100, with and without the
   per-global-IDI local cap (``cap_local``): IDIs (global/local), seeds that are IDIs, seeds reached, IDIs per
   1,000 queries, seconds.

Torch runs with ``--torch-threads`` intra-op threads (default 1): SG sends many small batches, and on a
shared 2-core machine torch's default of 2 threads made the same run 4.6 times slower (16.6 s against 3.6 s
to 1,000 IDIs).

Writes ``benchmarks/results/sg.json`` (figures, parameters, versions, CPU count, date) and ``sg.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import torch

from chiralfair import __version__
from chiralfair.datasets import load_dataset
from chiralfair.generators.sg import SymbolicGeneration
from chiralfair.models.training import train_model
from chiralfair.seeds import make_seed_strategy

RESULTS = Path(__file__).parent / "results"
TARGET_IDIS = 1000
PAPER_SECONDS_TO_1000 = 720.5  # ADF paper, census age, reference SG (GTX 1080Ti)


class _TimedSG(SymbolicGeneration):
    """SG that notes the wall and CPU seconds at which the ``TARGET_IDIS``-th IDI is recorded.

    CPU seconds (of this process) are less sensitive than wall seconds to other jobs on a shared machine.
    """

    seconds_to_target: float | None = None
    cpu_seconds_to_target: float | None = None
    tested_at_target: int | None = None

    def _search(self, recorder, seeds, rng):
        check = recorder.check
        cpu0 = time.process_time()

        def timed_check(X, phase, **kw):
            out = check(X, phase, **kw)
            if self.seconds_to_target is None and recorder.n_idis >= TARGET_IDIS:
                self.seconds_to_target, self.tested_at_target = recorder.seconds, recorder.n_tested
                self.cpu_seconds_to_target = time.process_time() - cpu0
            return out

        recorder.check = timed_check
        return super()._search(recorder, seeds, rng)


def _summary(res) -> dict:
    out = {k: v for k, v in res.summary().items() if k not in ("generator",)}
    out["idis_per_1000_queries"] = 1000 * res.n_idis / max(res.n_queries, 1)
    out["notes"] = list(res.notes)
    return out


def seconds_to_target(model, dataset, repeats: int, limit: int) -> dict:
    variants = {"default": {}, "batch_size=1": {"batch_size": 1}, "solver=z3": {"solver": "z3"},
                "cap_local=False": {"cap_local": False}}
    runs = {name: [] for name in variants}
    for r in range(repeats):
        seeds = make_seed_strategy("cluster").select(model, dataset, 1000, random_state=r)
        for name, kw in variants.items():
            if name != "default" and r > 0:
                continue  # the variants are compared once, in the same run as the first default
            gen = _TimedSG(max_global=1000, limit=limit, **kw)
            res = gen.run(model, dataset.domain, seeds, random_state=r)
            runs[name].append({"seconds_to_1000": gen.seconds_to_target,
                               "cpu_seconds_to_1000": gen.cpu_seconds_to_target,
                               "tested_at_1000": gen.tested_at_target, **_summary(res)})
            print(f"  {name:13s} repeat {r}: {gen.seconds_to_target} s ({gen.cpu_seconds_to_target} CPU s) "
                  f"to {TARGET_IDIS} IDIs "
                  f"({res.n_idis} IDIs, {res.n_tested} tested, {res.seconds:.1f} s)", flush=True)
    times = [x["seconds_to_1000"] for x in runs["default"] if x["seconds_to_1000"] is not None]
    median = statistics.median(times) if len(times) == repeats else None
    cpu = [x["cpu_seconds_to_1000"] for x in runs["default"] if x["cpu_seconds_to_1000"] is not None]
    cpu_median = statistics.median(cpu) if len(cpu) == repeats else None
    first = runs["default"][0]["seconds_to_1000"]
    ratios = {name: (v[0]["seconds_to_1000"] / first if v and v[0]["seconds_to_1000"] and first else None)
              for name, v in runs.items() if name != "default"}
    return {"median_seconds_to_1000": median, "median_cpu_seconds_to_1000": cpu_median,
            "paper_reference_seconds": PAPER_SECONDS_TO_1000,
            "ratio_to_default_same_seeds": ratios, "runs": runs}


def cluster_vs_iandd(model, dataset, repeats: int, limits) -> dict:
    out = {}
    seeds = {(s, r): make_seed_strategy(s).select(model, dataset, 100, random_state=r)
             for s in ("cluster", "iandd") for r in range(repeats)}
    for cap in (True, False):
        for limit in limits:
            for strategy in ("cluster", "iandd"):
                rows = []
                for r in range(repeats):
                    res = SymbolicGeneration(max_global=100, max_local=100, limit=limit, cap_local=cap).run(
                        model, dataset.domain, seeds[strategy, r], random_state=r)
                    rate = seeds[strategy, r].initialization_rate
                    rows.append({"initialization_rate": rate, **_summary(res)})
                    print(f"  cap_local={cap} limit {limit} {strategy:8s} repeat {r}: {res.n_idis} IDIs "
                          f"({res.n_global} global / {res.n_local} local), {res.seconds:.1f} s", flush=True)
                keys = ("n_idis", "n_global", "n_local", "n_seed_idis", "idis_per_1000_queries", "seconds")
                out[f"cap_local={cap}, limit={limit}, {strategy}"] = {
                    "median": {k: statistics.median(row[k] for row in rows) for k in keys}, "runs": rows}
    return out


def _fmt(v) -> str:
    return "n/a" if v is None else f"{v:.2f}"


def _markdown(report: dict) -> str:
    t = report["seconds_to_1000"]
    lines = ["# SG on census age (DNN)", "",
             f"{report['date']}, {report['cpu_count']} CPUs, chiralfair {report['chiralfair_version']}, "
             f"load average at start {report['load_average_at_start'][0]:.1f}. {report['note']}", "",
             "## Seconds to 1,000 IDIs (1,000 cluster seeds)", "",
             f"- median over {report['parameters']['repeats']} repeats: "
             f"**{_fmt(t['median_seconds_to_1000'])}** s "
             f"wall, {_fmt(t['median_cpu_seconds_to_1000'])} s CPU of this process "
             f"(reference SG in the ADF paper: {PAPER_SECONDS_TO_1000} s on a GPU machine)",
             "- time to 1,000 IDIs relative to the default, same seeds: "
             + ", ".join(f"{k}: {_fmt(v)}" for k, v in t["ratio_to_default_same_seeds"].items()), "",
             "## Cluster vs I&D seeds (100 seeds, medians)", "",
             "| setting | IDIs | global | local | seed IDIs | IDIs per 1k queries | seconds |",
             "|---|---|---|---|---|---|---|"]
    for key, v in report["cluster_vs_iandd"].items():
        m = v["median"]
        lines.append(f"| {key} | {m['n_idis']:g} | {m['n_global']:g} | {m['n_local']:g} "
                     f"| {m['n_seed_idis']:g} | {m['idis_per_1000_queries']:.2f} | {m['seconds']:.1f} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="1 repeat, limit 1,000 only for the seed comparison")
    ap.add_argument("--torch-threads", type=int, default=1, help="torch intra-op threads (default 1)")
    ap.add_argument("--note", default="", help="free text recorded with the results (e.g. machine load)")
    args = ap.parse_args()
    repeats = 1 if args.quick else args.repeats
    torch.set_num_threads(args.torch_threads)
    limits = (1000,) if args.quick else (1000, 10_100)
    dataset = load_dataset("census", protected="age")
    trained = train_model(dataset, "dnn", random_state=0)
    model = trained.model
    print(f"census age DNN: accuracy {trained.accuracy:.3f}, F1 {trained.f1:.3f}", flush=True)
    report = {
        "benchmark": "sg", "note": args.note, "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "chiralfair_version": __version__, "python": platform.python_version(), "cpu_count": os.cpu_count(),
        "numpy": np.__version__, "torch_threads": torch.get_num_threads(),
        "load_average_at_start": os.getloadavg(),
        "parameters": {"dataset": "census", "protected": "age", "model": "dnn", "model_random_state": 0,
                       "repeats": repeats, "limit_to_1000": 3000, "seed_comparison_limits": list(limits),
                       "sg_defaults": SymbolicGeneration().params},
        "model": {"accuracy": trained.accuracy, "f1": trained.f1},
    }
    print("seconds to 1,000 IDIs", flush=True)
    report["seconds_to_1000"] = seconds_to_target(model, dataset, repeats, limit=3000)
    print("cluster vs iandd seeds", flush=True)
    report["cluster_vs_iandd"] = cluster_vs_iandd(model, dataset, repeats, limits)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "sg.json").write_text(json.dumps(report, indent=2, default=float))
    (RESULTS / "sg.md").write_text(_markdown(report))
    print(_markdown(report))


if __name__ == "__main__":
    main()
