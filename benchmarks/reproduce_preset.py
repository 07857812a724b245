"""Shared by the benchmarks that are presets of ``chiralfair reproduce`` (table2, seeds, retrain, aequitas_random):
flags, the call, and the copy of its table to ``benchmarks/results/``. Not a benchmark itself."""

from __future__ import annotations

import json
import os
import resource
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path

from chiralfair import __version__
from chiralfair.experiments.presets import reproduce
from chiralfair.experiments.tables import grid_frame

RESULTS = Path(__file__).parent / "results"


def add_common_arguments(parser, *, name: str, repeats: int = 10) -> None:
    parser.add_argument("--repeats", type=int, default=repeats, help="random states 0..N-1")
    parser.add_argument("--quick", action="store_true", help="3 repeats, budgets / 10: a smoke test")
    parser.add_argument("--name", default=name, help="results file stem")
    parser.add_argument("--grid-out", type=Path, default=None,
                        help="grid folder (default reproduce/<name>); a rerun runs only the missing cells")
    parser.add_argument("--scheduler", default="local", help="local, sync or a Dask scheduler address")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--results", type=Path, default=RESULTS, help="folder receiving the copies")


def run_preset(preset: str, args, overrides: dict, *, markdown=None):
    """Run ``preset`` with ``overrides``; copy its table, Parquet and plots to ``args.results`` as ``args.name``.

    ``markdown``, a function of the grid's cells (:func:`chiralfair.experiments.tables.grid_frame`) and the JSON
    record, gives ``<name>.md`` instead: the preset's files are then not copied and the cells' figures (one
    record per finished cell) go into ``<name>.json`` under ``cells``.
    """
    out = args.grid_out or Path("reproduce") / (args.name + ("-quick" if args.quick else ""))
    load_start, t0 = list(os.getloadavg()), time.perf_counter()
    cpu0 = _cpu_seconds()
    done = reproduce(preset, out, repeats=args.repeats, quick=args.quick, scheduler=args.scheduler,
                     workers=args.workers, overrides=overrides)
    wall = time.perf_counter() - t0
    cpu = _cpu_seconds() - cpu0
    args.results.mkdir(parents=True, exist_ok=True)
    copies = []
    # The Markdown and the plots only: the Parquet table stays in the grid folder (no data files in the repository).
    for path in (p for p in done.files if p.suffix != ".parquet") if markdown is None else ():
        target = args.results / path.name.replace(preset, args.name, 1)
        shutil.copyfile(path, target)
        copies.append(target.name)
    record = {"preset": preset, "overrides": overrides, "repeats": args.repeats, "quick": args.quick,
              "scheduler": args.scheduler, "workers": args.workers, "grid_folder": str(out), "files": copies,
              "n_failed": done.n_failed, "claims": list(done.claims), "wall_seconds": wall,
              "cpu_seconds": cpu, "cpu_seconds_note": "this process and its reaped children (the local cluster's "
              "worker processes), user + system, resource.getrusage",
              "loadavg_start": load_start, "loadavg_end": list(os.getloadavg()), "cpu_count": os.cpu_count(),
              "chiralfair": __version__, "date": datetime.now(UTC).isoformat(timespec="seconds")}
    if markdown is not None:
        frame = grid_frame(out)
        record["files"] = [f"{args.name}.md"]
        record["cells"] = json.loads(frame.to_json(orient="records"))
        (args.results / f"{args.name}.md").write_text(markdown(frame, record))
    (args.results / f"{args.name}.json").write_text(json.dumps(record, indent=2, default=str))
    print((args.results / f"{args.name}.md").read_text())
    print(f"{wall:.0f} s wall, {cpu:.0f} CPU s (children included), load average {record['loadavg_start'][0]:.2f} -> "
          f"{record['loadavg_end'][0]:.2f}")
    return done


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process and of its children that have ended (the cluster's workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
