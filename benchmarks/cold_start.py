"""The README's quick-start command from an empty model cache, split into steps; and how fast the CLI refuses.

Run by hand from the repository root, with the benchmark data home set:

    CHIRALFAIR_DATA=../shared/data python benchmarks/cold_start.py              # 3 cold + 3 warm runs
    CHIRALFAIR_DATA=../shared/data python benchmarks/cold_start.py --repeats 1

A cold run is the quick-start command (``chiralfair run --dataset census --protected sex --model dnn --seeds iandd
--generator aequitas --out DIR``) in a subprocess under ``/usr/bin/time -v`` with a new, empty
``CHIRALFAIR_CACHE``; a warm run repeats it with the cache the cold run filled. The split comes from the run
folder's ``result.json``: ``model`` (training the DNN), ``seeds.seconds.chiral_training``, the rest of ``seeds``
(selection), ``search``, ``verdict``, ``write``; ``import and start`` is the process's wall time minus all of those
(Python start-up, imports, argument checks). The CLI's answer times (``--help``, ``--version``,
``datasets`` and the refusal of ``run --max-global 0``) are whole-process wall times, median of ``--quick-repeats``.

Writes benchmarks/results/cold_start.json (figures, parameters, package versions, CPU count, date, load) and
cold_start.md.
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
from importlib.metadata import version
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
QUICK_START = ["run", "--dataset", "census", "--protected", "sex", "--model", "dnn", "--seeds", "iandd",
               "--generator", "aequitas"]
QUICK_COMMANDS = {"--help": ["--help"], "--version": ["--version"], "datasets": ["datasets"],
                  "run --max-global 0 (refused)": ["run", "--max-global", "0"]}
STEPS = ("import and start", "data", "model (train or load)", "chiral training", "selection", "search", "verdict",
         "write")


def chiralfair() -> str:
    """The console script beside this interpreter, else the one on PATH."""
    here = Path(sys.executable).parent / "chiralfair"
    return str(here) if here.exists() else shutil.which("chiralfair") or "chiralfair"


def timed_run(args: list[str], env: dict) -> tuple[float, float]:
    """Wall seconds and peak resident MiB of one process, from ``/usr/bin/time -v``."""
    proc = subprocess.run(["/usr/bin/time", "-v", chiralfair(), *args], env=env, capture_output=True, text=True)
    if proc.returncode not in (0, 2):
        raise RuntimeError(f"{args} failed:\n{proc.stderr[-2000:]}")
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", proc.stderr).group(1)
    parts = [float(p) for p in wall.split(":")]
    seconds = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
    peak_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr).group(1))
    return seconds, peak_kb / 1024


def split(result: dict, wall: float) -> dict[str, float]:
    """Seconds per step of one run (see the module docstring)."""
    steps = result["seconds_by_step"]
    chiral = result["seeds"]["seconds"].get("chiral_training", 0.0)
    inside = steps["total"] + steps.get("write", 0.0)
    return {"import and start": wall - inside, "data": steps["data"], "model (train or load)": steps["model"],
            "chiral training": chiral, "selection": steps["seeds"] - chiral, "search": steps["search"],
            "verdict": steps.get("verdict", 0.0), "write": steps.get("write", 0.0), "wall": wall}


def quick_start(env: dict, cache: Path, out: Path) -> dict:
    wall, peak = timed_run([*QUICK_START, "--out", str(out)], {**env, "CHIRALFAIR_CACHE": str(cache)})
    result = json.loads((out / "result.json").read_text())
    return {**split(result, wall), "peak_mib": peak, "n_idis": result["n_idis"], "f1": result["model"]["f1"],
            "model_from_cache": result["model"]["from_cache"]}


def median_row(runs: list[dict]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in runs) for k in (*STEPS, "wall", "peak_mib")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="cold (and warm) runs")
    parser.add_argument("--quick-repeats", type=int, default=5, help="runs of each fast command")
    args = parser.parse_args()
    env = dict(os.environ)
    load_start = os.getloadavg()
    cold, warm = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            cache = Path(tmp) / f"cache{r}"
            cold.append(quick_start(env, cache, Path(tmp) / f"cold{r}"))
            warm.append(quick_start(env, cache, Path(tmp) / f"warm{r}"))
    quick = {}
    for name, cmd in QUICK_COMMANDS.items():
        times = [timed_run(cmd, env)[0] for _ in range(args.quick_repeats)]
        quick[name] = {"median": statistics.median(times), "min": min(times), "max": max(times)}
    record = {
        "benchmark": "cold_start", "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "parameters": {"command": ["chiralfair", *QUICK_START, "--out", "DIR"], "repeats": args.repeats,
                       "quick_repeats": args.quick_repeats},
        "versions": {p: version(p) for p in ("chiralfair", "numpy", "torch", "scikit-learn", "shap")},
        "python": platform.python_version(), "cpu_count": os.cpu_count(),
        "loadavg_start": load_start, "loadavg_end": os.getloadavg(),
        "cold": cold, "warm": warm, "cold_median": median_row(cold), "warm_median": median_row(warm),
        "quick_commands": quick,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cold_start.json").write_text(json.dumps(record, indent=2) + "\n")
    (RESULTS / "cold_start.md").write_text(render(record))
    print(render(record))


def render(record: dict) -> str:
    load = ", ".join(f"{x:.2f}" for x in record["loadavg_start"])
    load_end = ", ".join(f"{x:.2f}" for x in record["loadavg_end"])
    lines = [
        "# The quick-start command from an empty cache, and the CLI's answer times",
        "",
        f"{record['date']}, chiralfair {record['versions']['chiralfair']}, {record['cpu_count']} CPUs, load average "
        f"at start {load}, at end {load_end} (shared machine). Command: `{' '.join(record['parameters']['command'])}`;"
        f" median of {record['parameters']['repeats']} runs (`python benchmarks/cold_start.py`).",
        "",
        "| seconds | " + " | ".join(STEPS) + " | wall | peak MiB |",
        "|---|" + "---|" * (len(STEPS) + 2),
    ]
    for name in ("cold", "warm"):
        m = record[f"{name}_median"]
        lines.append(f"| {name} | " + " | ".join(f"{m[s]:.2f}" for s in STEPS) + f" | {m['wall']:.2f} |"
                     f" {m['peak_mib']:.0f} |")
    lines += ["", "Cold: empty model cache (the DNN and its chiral model are trained); warm: the same command again.",
              "", "| command | median s | min | max |", "|---|---|---|---|"]
    for name, q in record["quick_commands"].items():
        lines.append(f"| `chiralfair {name}` | {q['median']:.2f} | {q['min']:.2f} | {q['max']:.2f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
