"""One thread against two on each step of a run: training, chiral training, SHAP, clustering, prediction.

Run by hand:  python benchmarks/threads.py [--repeats 5] [--epochs 2]

Every step runs through the library's own code, whose thread-limited blocks (``single_intra_op_thread`` for
torch, ``single_native_thread`` for sklearn's OpenMP/BLAS pools, see ``chiralfair.models.threads``) are set to
one or two threads with ``thread_limit``. Steps, on census with sex protected (cached DNN not used: each step is
timed from scratch):

- DNN training: the paper's DNN on the 60% training split (19,536 rows), ``--epochs`` epochs (30 in a run);
- chiral training: the same, on the split with mutated protected attributes (``mutate_protected``);
- SHAP expected gradients: 2,000 initial-IDI-sized rows x 50 samples against 100 background rows (the DNN);
- DBSCAN (paper eps 0.09), HDBSCAN and KMeans + silhouette (2..8 clusters) on those 2,000 SHAP rows;
- sklearn LR and HGB fit on the training split (the zoo's ``lr`` and ``hgb``);
- batch prediction: the DNN and HGB on the 13,025 test rows, and the DNN on 1,000,000 rows.

Median wall seconds of ``--repeats`` runs per step and thread count, alternating one and two threads so that a
change of load hits both. Writes ``benchmarks/results/threads.json`` and ``threads.md`` with the load average
before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from chiralfair import __version__
from chiralfair.datasets import load_dataset
from chiralfair.models import ModelSpec
from chiralfair.models.threads import thread_limit
from chiralfair.seeds.chiral import mutate_protected
from chiralfair.seeds.diversity import cluster_explanations, kmeans_by_silhouette
from chiralfair.seeds.explainers import expected_gradients

RESULTS = Path(__file__).resolve().parent / "results"


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def hdbscan(values):
    from sklearn.cluster import HDBSCAN

    from chiralfair.models.threads import single_native_thread
    with single_native_thread():  # as cluster_explanations runs it
        return HDBSCAN(min_cluster_size=10, copy=True).fit_predict(values)


def dbscan(values):
    # Without repair, cluster_explanations is the paper's DBSCAN (eps 0.09, min_samples 10) and a degeneracy check.
    return cluster_explanations(values, repair=False)


def build_steps(epochs: int) -> tuple[dict, dict]:
    data = load_dataset("census", protected=["sex"])
    train, test = data.split(0)
    X_train, y_train, X_test = data.X[train], data.y[train], data.X[test]
    dnn_spec = ModelSpec("dnn", {"epochs": epochs})
    dnn = dnn_spec.fit(X_train, y_train, random_state=0)
    hgb = ModelSpec("hgb").fit(X_train, y_train, random_state=0)
    rng = np.random.default_rng(0)
    X_chiral = mutate_protected(X_train, data.domain, rng)
    rows = X_test[rng.choice(len(X_test), 2000, replace=False)].astype(np.float64)
    background = data.X[rng.choice(data.n_samples, 100, replace=False)].astype(np.float64)
    shap_rows = expected_gradients(dnn, rows, background, np.random.default_rng(1))
    million = data.domain.sample(1_000_000, np.random.default_rng(2))
    steps = {
        "dnn_training": lambda: dnn_spec.fit(X_train, y_train, random_state=0),
        "chiral_training": lambda: dnn_spec.fit(X_chiral, y_train, random_state=1),
        "shap_expected_gradients": lambda: expected_gradients(dnn, rows, background, np.random.default_rng(1)),
        "dbscan_2000_shap_rows": lambda: dbscan(shap_rows),
        "hdbscan_2000_shap_rows": lambda: hdbscan(shap_rows),
        "kmeans_silhouette_2000_shap_rows": lambda: kmeans_by_silhouette(shap_rows, random_state=0),
        "lr_fit": lambda: ModelSpec("lr").fit(X_train, y_train, random_state=0),
        "hgb_fit": lambda: ModelSpec("hgb").fit(X_train, y_train, random_state=0),
        "dnn_predict_13k": lambda: dnn.predict(X_test),
        "hgb_predict_13k": lambda: hgb.predict(X_test),
        "dnn_predict_1m": lambda: dnn.predict(million),
    }
    sizes = {"n_train": int(len(train)), "n_test": int(len(X_test)), "epochs": epochs, "shap_rows": 2000,
             "shap_samples": 50, "background": 100}
    return steps, sizes


def measure(steps: dict, repeats: int) -> dict:
    out = {}
    for name, fn in steps.items():
        runs = {1: [], 2: []}
        for _ in range(repeats):
            for n in (1, 2):
                with thread_limit(n):
                    runs[n].append(timed(fn))
        one, two = statistics.median(runs[1]), statistics.median(runs[2])
        out[name] = {"one_thread": one, "two_threads": two, "runs_one": runs[1], "runs_two": runs[2],
                     "faster": "one" if one <= two else "two"}
        print(f"{name:36s} 1 thread {one:8.3f} s   2 threads {two:8.3f} s", file=sys.stderr)
    return out


def markdown(results: dict) -> str:
    lines = [f"# One thread against two per step (median of {results['repeats']})", "",
             f"{results['date']}, chiralfair {results['versions']['chiralfair']}, torch "
             f"{results['versions']['torch']}, {results['cpu_count']} CPUs, load average before "
             f"{results['loadavg_start'][0]:.2f} / after {results['loadavg_end'][0]:.2f} (other jobs were running).",
             "", "Script: `python benchmarks/threads.py`. DNN training with "
             f"{results['sizes']['epochs']} epochs on {results['sizes']['n_train']:,} rows.", "",
             "| step | 1 thread (s) | 2 threads (s) | 2 / 1 | faster |", "|---|---|---|---|---|"]
    for name, r in results["steps"].items():
        lines.append(f"| {name} | {r['one_thread']:.3f} | {r['two_threads']:.3f} | "
                     f"{r['two_threads'] / r['one_thread']:.2f} | {r['faster']} |")
    lines.append("")
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    import torch
    loadavg_start = os.getloadavg()
    steps, sizes = build_steps(args.epochs)
    measured = measure(steps, args.repeats)
    results = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "repeats": args.repeats,
               "cpu_count": os.cpu_count(), "loadavg_start": loadavg_start, "loadavg_end": os.getloadavg(),
               "versions": {"chiralfair": __version__, "torch": torch.__version__,
                            "python": platform.python_version()},
               "sizes": sizes, "steps": measured}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "threads.json").write_text(json.dumps(results, indent=2))
    (args.out / "threads.md").write_text(markdown(results))
    return results


if __name__ == "__main__":
    main()
