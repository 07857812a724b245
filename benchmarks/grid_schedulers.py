"""The whole `chiralfair reproduce` command under the sync scheduler and a LocalCluster, and a resumed run.

Run by hand:  python benchmarks/grid_schedulers.py [--preset table2] [--quick] [--repeats 3] [--workers 2]
              [--root /tmp/grids/schedulers] [--name grid_schedulers]

Three runs of the same preset, each into its own fresh grid folder, with the model cache warm (CHIRALFAIR_CACHE):

1. ``chiralfair reproduce PRESET --scheduler sync``: the cells one after another in one process;
2. ``chiralfair reproduce PRESET --scheduler local --workers N``: a Dask LocalCluster of N processes;
3. the LocalCluster run interrupted with SIGINT (Ctrl-C) once half of its cells have a result, then the same
   command again: the resume overhead is (interrupted + resumed) against run 2.

Each wall time is the whole command (interpreter start, imports, cluster start, cells, tables and plots). The
tables of the three runs (timings left out) are compared: they must be identical.

Writes ``benchmarks/results/<name>.json`` and ``<name>.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from chiralfair import __version__
from chiralfair.experiments.tables import grid_table, without_timings

RESULTS = Path(__file__).parent / "results"
CLI = [sys.executable, "-m", "chiralfair"]


def command(preset: str, out: Path, scheduler: str, args) -> list[str]:
    cmd = [*CLI, "reproduce", preset, "--out", str(out), "--scheduler", scheduler]
    cmd += ["--quick"] if args.quick else ["--repeats", str(args.repeats)]
    if scheduler == "local":
        cmd += ["--workers", str(args.workers)]
    return cmd


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def interrupted_at_half(cmd: list[str], out: Path, n_cells: int) -> tuple[float, int]:
    """Run ``cmd`` and send SIGINT once half the cells are done; return its wall time and the cells done."""
    t0 = time.perf_counter()
    process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while process.poll() is None:
        if n_done(out) >= n_cells // 2:
            process.send_signal(signal.SIGINT)
            break
        time.sleep(0.2)
    process.wait()
    return time.perf_counter() - t0, n_done(out)


def n_done(out: Path) -> int:
    return len(list((out / "cells").glob("*/result.json"))) if (out / "cells").is_dir() else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="table2")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=3, help="ignored with --quick (3 repeats)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--root", type=Path, default=Path("/tmp/grids/schedulers"))
    parser.add_argument("--name", default="grid_schedulers")
    args = parser.parse_args(argv)

    shutil.rmtree(args.root, ignore_errors=True)
    folders = {k: args.root / k for k in ("sync", "local", "resumed")}
    load = {"start": list(os.getloadavg())}
    wall = {"sync": timed(command(args.preset, folders["sync"], "sync", args))}
    load["after_sync"] = list(os.getloadavg())
    wall["local"] = timed(command(args.preset, folders["local"], "local", args))
    n_cells = n_done(folders["local"])
    load["after_local"] = list(os.getloadavg())
    wall["interrupted"], n_before = interrupted_at_half(command(args.preset, folders["resumed"], "local", args),
                                                        folders["resumed"], n_cells)
    wall["resumed"] = timed(command(args.preset, folders["resumed"], "local", args))
    load["end"] = list(os.getloadavg())

    tables = {k: without_timings(grid_table(folder)) for k, folder in folders.items()}
    same = {k: tables[k].equals(tables["sync"]) for k in ("local", "resumed")}
    record = {"preset": args.preset, "quick": args.quick, "repeats": args.repeats, "workers": args.workers,
              "n_cells": n_cells, "wall_seconds": wall, "cells_done_when_interrupted": n_before,
              "tables_equal_to_sync": same, "loadavg": load, "cpu_count": os.cpu_count(), "chiralfair": __version__,
              "date": datetime.now(UTC).isoformat(timespec="seconds")}
    total_resumed = wall["interrupted"] + wall["resumed"]
    variant = f"{args.preset} --quick" if args.quick else f"{args.preset} --repeats {args.repeats}"
    lines = [f"# `chiralfair reproduce {variant}`: sync vs LocalCluster, and resume", "",
             f"{record['date']}, chiralfair {__version__}, {os.cpu_count()} CPUs, {n_cells} cells, model cache warm; "
             f"load average {load['start'][0]:.2f} at start, {load['end'][0]:.2f} at end.", "",
             "| run | wall s | tables (timings left out) |", "|---|---|---|",
             f"| `--scheduler sync` | {wall['sync']:.1f} | reference |",
             f"| `--scheduler local --workers {args.workers}` | {wall['local']:.1f} | "
             f"{'identical' if same['local'] else 'DIFFERENT'} |",
             f"| local, Ctrl-C after {n_before} of {n_cells} cells + the same command again | "
             f"{wall['interrupted']:.1f} + {wall['resumed']:.1f} = {total_resumed:.1f} | "
             f"{'identical' if same['resumed'] else 'DIFFERENT'} |", "",
             f"LocalCluster / sync: {wall['local'] / wall['sync']:.2f}; interrupted and resumed / uninterrupted: "
             f"{total_resumed / wall['local']:.2f}.", ""]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(record, indent=1))
    (RESULTS / f"{args.name}.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
