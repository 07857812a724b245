"""The whole domain's decided share at equal CPU seconds, for several versions of the code: load or regression?

Run by hand:  python benchmarks/certify_trees_equal_cpu.py --src OLD/src --src NEW/src [--case compas race hgb]

A 60 wall-second budget on a shared machine gives a run however many CPU seconds the load leaves it, so two runs'
decided shares differ with the load as well as with the code. Here each version (a source tree, e.g.
``git archive <commit> src | tar -x -C DIR``) certifies the case's whole domain in a process of its own, on one
process (``n_jobs=1`` where the code has it), with no time budget, and is stopped once it has used the last of
``--cpu`` CPU seconds (``time.process_time``, read after each batch); the decided share (certified + falsified) is read
at the first batch past each mark. Writes ``benchmarks/results/certify_trees_equal_cpu.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"

CHILD = r'''
import inspect, json, os, sys, time
sys.path.insert(0, sys.argv[1])
from certify_trees import model_for
from chiralfair.certification import certify_domain
from chiralfair.datasets import load_dataset
dataset, protected, name = sys.argv[2:5]
marks = [float(x) for x in sys.argv[5].split(",")]
data = load_dataset(dataset, protected=[protected])
model, test = model_for(name, data)
seen = []
start = time.process_time()
def progress(p):
    cpu = time.process_time() - start
    seen.append((cpu, p["certified"], p["falsified"]))
    if cpu >= marks[-1]:
        raise KeyboardInterrupt  # the engine stops there and reports what it proved
extra = {"n_jobs": 1} if "n_jobs" in inspect.signature(certify_domain).parameters else {}
load, wall = os.getloadavg()[0], time.perf_counter()
result = certify_domain(model, data, rows=test, max_seconds=None, on_progress=progress, **extra)
points = []
for mark in marks:
    cpu, certified, falsified = next((s for s in seen if s[0] >= mark), seen[-1])
    points.append({"mark": mark, "cpu_seconds": cpu, "decided": (certified + falsified) / result.domain_volume})
print("RESULT " + json.dumps({"points": points, "stopped": result.stopped, "boxes": result.stats["n_boxes"],
                              "wall_seconds": time.perf_counter() - wall, "load": [load, os.getloadavg()[0]]}))
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", action="append", required=True, help="a source tree (its src folder); repeatable")
    parser.add_argument("--case", nargs=3, default=["compas", "race", "hgb"], metavar=("DATASET", "PROTECTED", "MODEL"))
    parser.add_argument("--cpu", default="13.3,22.1,27.3", help="CPU-second marks, the last one stops the run")
    args = parser.parse_args()
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    rows = []
    for src in args.src:
        env = {**os.environ, "PYTHONPATH": src}
        proc = subprocess.run([sys.executable, "-c", CHILD, str(Path(__file__).resolve().parent), *args.case, args.cpu],
                              capture_output=True, text=True, env=env)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
        row = json.loads(lines[-1][7:]) if lines else {"error": proc.stderr[-400:]}
        rows.append({"src": src, **row})
        print(json.dumps(rows[-1]), flush=True)
    out = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "case": args.case, "uptime_start": uptime,
           "uptime_end": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
           "command": "python benchmarks/certify_trees_equal_cpu.py " + " ".join(sys.argv[1:]), "runs": rows}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "certify_trees_equal_cpu.json").write_text(json.dumps(out, indent=2) + "\n")
    marks = [float(x) for x in args.cpu.split(",")]
    lines = ["# The whole domain at equal CPU seconds (`benchmarks/certify_trees_equal_cpu.py`)", "",
             f"{out['date']}; `{out['command']}`; {' '.join(args.case)}; one process each, stopped after the batch "
             f"past {marks[-1]:g} CPU seconds; `uptime` at the start: {uptime}; at the end: {out['uptime_end']}.", "",
             "| source | " + " | ".join(f"decided at {m:g} CPU s (CPU s read)" for m in marks) + " | boxes | wall s "
             "| load |", "|---|" + "---|" * (len(marks) + 3)]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['src']} | error: {r['error'][-200:]} |")
            continue
        cells = " | ".join(f"{p['decided']:.2%} ({p['cpu_seconds']:.1f})" for p in r["points"])
        lines.append(f"| {r['src']} | {cells} | {r['boxes']:,} | {r['wall_seconds']:.1f} | "
                     f"{r['load'][0]:.1f}-{r['load'][1]:.1f} |")
    (RESULTS / "certify_trees_equal_cpu.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
