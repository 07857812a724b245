"""How much the paper's DNN's test F1 moves with its training seed alone: the noise floor of an F1 budget.

Run by hand from the repository root (data from CHIRALFAIR_DATA):

    python benchmarks/dnn_f1_spread.py --seeds 5

Trains the zoo DNN (30 epochs, the paper's recipe) on the same 60% split (``dataset.split(0)``) with training seeds
0..N-1 and scores F1 on the same test rows; the protected attribute does not matter for F1, so one row per dataset.
Through ``train_model``, as every door: seed 0 is the shipped reference network (the model under test of every
benchmark), the other seeds are trained on this machine (or read from its model cache); the file names each.
Writes ``benchmarks/results/dnn_f1_spread.json`` and ``.md``. A mitigation's F1 loss below this spread cannot be
told from a retraining with another seed (the mitigation goal's budget is 0.01 F1).
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
from chiralfair.models.training import train_model

RESULTS = Path(__file__).parent / "results"


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and its children."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--datasets", nargs="+", default=["census", "compas", "bank"])
    args = p.parse_args(argv)
    load_start, t0, cpu0 = list(os.getloadavg()), time.perf_counter(), cpu_seconds()
    rows = []
    for name in args.datasets:
        data = load_dataset(name)
        train, test = data.split(0)
        scores, networks = [], []
        for seed in range(args.seeds):
            # train_index: the same split for every seed (random_state alone would also move the split)
            trained = train_model(data, "dnn", random_state=seed, train_index=train,
                                  cache_dir=os.environ.get("CHIRALFAIR_CACHE"))
            if not (np.array_equal(trained.train_index, train) and np.array_equal(trained.test_index, test)):
                raise RuntimeError(f"{name}: train_model's split is not split(0)")
            scores.append(float(f1_score(data.y[test], trained.model.predict(data.X[test]))))
            networks.append(trained.network)
        rows.append({"dataset": name, "f1": scores, "min": min(scores), "max": max(scores),
                     "range": max(scores) - min(scores), "std": float(np.std(scores, ddof=1)),
                     "networks": networks})
    record = {"rows": rows, "seeds": args.seeds, "wall_seconds": time.perf_counter() - t0,
              "cpu_seconds": cpu_seconds() - cpu0,
              "loadavg_start": load_start, "loadavg_end": list(os.getloadavg()), "cpu_count": os.cpu_count(),
              "chiralfair": __version__, "date": datetime.now(UTC).isoformat(timespec="seconds")}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "dnn_f1_spread.json").write_text(json.dumps(record, indent=2))
    lines = ["# The DNN's test F1 against its training seed alone", "",
             f"`python benchmarks/dnn_f1_spread.py --seeds {args.seeds}`, {record['date']}: same split (`split(0)`), "
             f"seeds 0..{args.seeds - 1}, 30 epochs; {record['wall_seconds']:.0f} wall s, {record['cpu_seconds']:.0f} "
             f"CPU s (user + system, with children); load {load_start[0]:.1f} -> {record['loadavg_end'][0]:.1f}.",
             "", "| dataset | F1 per seed | range | std |", "|---|---|---|---|"]
    lines += [f"| {r['dataset']} | {', '.join(f'{v:.3f}' for v in r['f1'])} | {r['range']:.3f} | {r['std']:.3f} |"
              for r in rows]
    lines += ["", "Networks, seed by seed:", ""]
    lines += [f"- {r['dataset']}: " + "; ".join(f"{seed}: {net}" for seed, net in enumerate(r["networks"]))
              for r in rows]
    (RESULTS / "dnn_f1_spread.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
