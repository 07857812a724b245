"""Whole-command wall time and peak memory of ``chiralfair run`` at growing budgets.

Run by hand from the repository root (the model must be in the cache; the first, warming run puts it there):

    CHIRALFAIR_CACHE=/tmp/cfcache python benchmarks/whole_command.py                  # median of 3
    CHIRALFAIR_CACHE=/tmp/cfcache python benchmarks/whole_command.py --repeats 1 --budgets 100x100 1000x1000

Each run is ``chiralfair run --dataset census --protected sex --model dnn --seeds iandd --generator eidig-inf
--max-global G --max-local L --out DIR`` in a subprocess under ``/usr/bin/time -v``: wall seconds and
"Maximum resident set size" come from there, the split into steps (data, model, seeds, search, write) from the
run folder's ``result.json`` (``seconds_by_step``). The goal: writing the folder costs at most as
much as the search, and the peak memory stays under 1 GB at every budget.

Also measures the recorder's key table (int64 keys and their flags: a hash table, then sorted numpy runs) against a
Python set of ints at 10^7 keys, in the same process (``--no-key-sets`` skips it).

Writes benchmarks/results/whole_command.json (figures, parameters, package versions, CPU count, date, load)
and whole_command.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from importlib.metadata import version
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
BUDGETS = ("100x100", "1000x1000", "10000x1000", "100000x100")
COMMAND = ["--dataset", "census", "--protected", "sex", "--model", "dnn", "--seeds", "iandd",
           "--generator", "eidig-inf"]
# The console script, through this interpreter (so PYTHONPATH picks the code under test).
CLI = [sys.executable, "-c", "from chiralfair.cli import app; app()", "run"]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--budgets", nargs="+", default=list(BUDGETS), help="max_global x max_local, e.g. 1000x1000")
    p.add_argument("--repeats", type=int, default=3, help="runs per budget; the median is reported")
    p.add_argument("--once", nargs="*", default=["99999x999"],
                   help="budgets run a single time (default: the largest accepted, max_global x (max_local + 1) "
                        "just under experiments.MAX_BUDGET)")
    p.add_argument("--random-state", type=int, default=0)
    p.add_argument("--no-key-sets", action="store_true", help="skip the key-set measurement")
    p.add_argument("--out-dir", type=Path, default=RESULTS, help="where whole_command.json/.md go")
    return p.parse_args(argv)


def run_once(max_global: int, max_local: int, random_state: int, folder: Path) -> dict:
    """One ``chiralfair run`` under /usr/bin/time -v; its wall time, peak memory and result.json figures."""
    shutil.rmtree(folder, ignore_errors=True)
    argv = ["/usr/bin/time", "-v", *CLI, *COMMAND, "--max-global", str(max_global), "--max-local",
            str(max_local), "--random-state", str(random_state), "--out", str(folder), "--json"]
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr).group(1))
    summary = json.loads((folder / "result.json").read_text())
    steps = summary["seconds_by_step"]
    pairs = folder / "idis.parquet"
    files = [pairs] if pairs.is_file() else sorted(pairs.glob("*.parquet"))
    return {
        "wall_seconds": wall, "peak_rss_mb": rss_kb / 1024, "seconds_by_step": steps,
        "search_seconds": steps["search"], "write_seconds": steps["write"],
        "write_over_search": steps["write"] / steps["search"] if steps["search"] else None,
        "n_idis": summary["n_idis"], "n_global": summary["n_global"], "n_local": summary["n_local"],
        "n_tested": summary["n_tested"], "n_queries": summary["n_queries"], "partial": summary["partial"],
        "parquet_mb": sum(f.stat().st_size for f in files) / 2**20, "parquet_parts": len(files),
        "model_from_cache": summary["model"]["from_cache"], "load_after": os.getloadavg(),
    }


def median_row(runs: list[dict]) -> dict:
    keys = ("wall_seconds", "peak_rss_mb", "search_seconds", "write_seconds", "write_over_search")
    out = {k: statistics.median(r[k] for r in runs) for k in keys}
    out["peak_rss_mb_max"] = max(r["peak_rss_mb"] for r in runs)
    for k in ("n_idis", "n_global", "n_local", "n_tested", "n_queries", "parquet_mb", "parquet_parts"):
        out[k] = runs[0][k]
    out["same_counts_every_repeat"] = len({(r["n_idis"], r["n_tested"], r["n_queries"]) for r in runs}) == 1
    return out


def key_set_figures(n: int = 10**7, batch: int = 10**4, seed: int = 0) -> dict:
    """Add ``n`` random int64 keys (half repeated) in batches: the recorder's key table against a Python set of ints."""
    from chiralfair.generators.key_table import TESTED, IntKeyTable

    rng = np.random.default_rng(seed)
    keys = rng.integers(0, 2 * n, size=n, dtype=np.int64)
    out = {"n_keys_added": n, "batch": batch}
    for name in ("key_table", "python_set"):
        tracemalloc.start()
        t0 = time.perf_counter()
        if name == "key_table":
            store = IntKeyTable()
            for i in range(0, n, batch):
                store.mark(keys[i:i + batch], TESTED)
            probe = store.flags(keys[:batch]) & TESTED != 0
        else:
            store = set()
            for i in range(0, n, batch):
                store.update(keys[i:i + batch].tolist())
            probe = np.fromiter((k in store for k in keys[:batch].tolist()), dtype=bool, count=batch)
        seconds = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        out[name] = {"seconds": seconds, "peak_mb": peak / 2**20, "size": len(store),
                     "probe_all_found": bool(probe.all())}
        del store
    return out


def markdown(report: dict) -> str:
    p = report["parameters"]
    lines = [
        "# Whole command: `chiralfair run` wall time and peak memory",
        "",
        f"{report['date']}, {report['cpu_count']} CPUs, load before {report['load_before']}, after "
        f"{report['load_after']} (1/5/15 min). `chiralfair run {' '.join(COMMAND)} --max-global G --max-local L "
        f"--out DIR`, model from the cache, random_state {p['random_state']}, median of {p['repeats']} "
        "run(s). Peak memory: /usr/bin/time -v maximum resident set size of the whole process. search and write "
        "are the result.json steps (the search includes streaming the pairs to idis.parquet; write is the rest of "
        "the folder: plot, report.md, result.json).",
        "",
        "| G x L | n_idis | n_tested | wall s | seeds s | search s | write s | write / search | peak MB | "
        "idis.parquet MB (parts) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for budget, r in report["results"].items():
        seeds = statistics.median(run["seconds_by_step"]["seeds"] for run in r["runs"])
        once = "" if r["repeats"] == p["repeats"] else f" ({r['repeats']} run)"
        lines.append(f"| {budget}{once} | {r['n_idis']:,} | {r['n_tested']:,} | {r['wall_seconds']:.1f} | "
                     f"{seeds:.2f} | {r['search_seconds']:.2f} | {r['write_seconds']:.2f} | "
                     f"{r['write_over_search']:.2f} | {r['peak_rss_mb']:.0f} | "
                     f"{r['parquet_mb']:.1f} ({r['parquet_parts']}) |")
    ks = report.get("key_sets")
    if ks:
        lines += ["", f"Key sets, {ks['n_keys_added']:,} random int64 keys added in batches of {ks['batch']:,} "
                      "(tracemalloc peak):", "",
                  "| key set | seconds | peak MB | keys held |", "|---|---|---|---|"]
        for name in ("key_table", "python_set"):
            lines.append(f"| {name} | {ks[name]['seconds']:.2f} | {ks[name]['peak_mb']:.0f} | {ks[name]['size']:,} |")
    versions = ", ".join(f"{k} {v}" for k, v in report["versions"].items())
    lines += ["", f"Versions: {versions}.", ""]
    return "\n".join(lines)


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def main(argv=None) -> int:
    args = parse_args(argv)
    load_before = os.getloadavg()
    results = {}
    with tempfile.TemporaryDirectory(prefix="whole_command_") as tmp:
        run_once(100, 100, args.random_state, Path(tmp) / "warm")  # puts the model in the cache
        plan = [(b, args.repeats) for b in args.budgets] + [(b, 1) for b in args.once]
        for budget, repeats in plan:
            g, loc = (int(x) for x in budget.lower().split("x"))
            runs = []
            for r in range(repeats):
                row = run_once(g, loc, args.random_state, Path(tmp) / f"run-{budget}-{r}")
                print(f"{budget} #{r}: {row['wall_seconds']:.1f} s wall, search {row['search_seconds']:.2f} s, "
                      f"write {row['write_seconds']:.2f} s, peak {row['peak_rss_mb']:.0f} MB, "
                      f"{row['n_idis']:,} IDIs, load {os.getloadavg()[0]:.2f}", flush=True)
                runs.append(row)
            results[budget] = {**median_row(runs), "repeats": repeats, "runs": runs}
    key_sets = None if args.no_key_sets else key_set_figures()
    report = {
        "date": dt.datetime.now().isoformat(timespec="seconds"), "cpu_count": os.cpu_count(),
        "platform": platform.platform(), "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "parameters": {"command": COMMAND, "budgets": args.budgets, "repeats": args.repeats, "once": args.once,
                       "random_state": args.random_state, "cache": os.environ.get("CHIRALFAIR_CACHE")},
        "versions": {"python": platform.python_version(),
                     **{k: version(k) for k in ("chiralfair", "numpy", "pandas", "pyarrow", "torch", "matplotlib")}},
        "results": results, "key_sets": key_sets,
    }
    args.out_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out_dir / "whole_command.json", json.dumps(report, indent=2))
    write_atomic(args.out_dir / "whole_command.md", markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
