"""How much the paper's DNN's test F1 moves with its training seed alone: the noise floor of an F1 budget.

Run by hand from the repository root (data from CHIRALFAIR_DATA):

    python benchmarks/dnn_f1_spread.py --seeds 5

Trains the zoo DNN (30 epochs, the paper's recipe) on the same 60% split (``dataset.split(0)``) with training seeds
0..N-1 and scores F1 on the same test rows; the protected attribute does not matter for F1, so one row per dataset.
Writes ``benchmarks/results/dnn_f1_spread.json`` and ``.md``. A mitigation's F1 loss below this spread cannot be
told from a retraining with another seed (issue 21's budget is 0.01).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from sklearn.metrics import f1_score

from chiralfair import __version__
from chiralfair.datasets import load_dataset
from chiralfair.models import ModelSpec

RESULTS = Path(__file__).parent / "results"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--datasets", nargs="+", default=["census", "compas", "bank"])
    args = p.parse_args(argv)
    load_start, t0 = list(os.getloadavg()), time.perf_counter()
    rows = []
    for name in args.datasets:
        data = load_dataset(name)
        train, test = data.split(0)
        scores = []
        for seed in range(args.seeds):
            model = ModelSpec("dnn").fit(data.X[train], data.y[train], random_state=seed)
            scores.append(float(f1_score(data.y[test], model.predict(data.X[test]))))
        rows.append({"dataset": name, "f1": scores, "min": min(scores), "max": max(scores),
                     "range": max(scores) - min(scores), "std": float(np.std(scores, ddof=1))})
    record = {"rows": rows, "seeds": args.seeds, "wall_seconds": time.perf_counter() - t0,
              "loadavg_start": load_start, "loadavg_end": list(os.getloadavg()), "cpu_count": os.cpu_count(),
              "chiralfair": __version__, "date": datetime.now(UTC).isoformat(timespec="seconds")}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "dnn_f1_spread.json").write_text(json.dumps(record, indent=2))
    lines = ["# The DNN's test F1 against its training seed alone", "",
             f"Same split (`split(0)`), seeds 0..{args.seeds - 1}, 30 epochs; load {load_start[0]:.1f} -> "
             f"{record['loadavg_end'][0]:.1f}.", "", "| dataset | F1 per seed | range | std |", "|---|---|---|---|"]
    lines += [f"| {r['dataset']} | {', '.join(f'{v:.3f}' for v in r['f1'])} | {r['range']:.3f} | {r['std']:.3f} |"
              for r in rows]
    (RESULTS / "dnn_f1_spread.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
