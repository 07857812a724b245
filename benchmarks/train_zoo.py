"""Train every zoo model on every benchmark dataset (cached) and tabulate test F1, accuracy and seconds.

Run by hand from the repository root:

    python benchmarks/train_zoo.py                       # all datasets x all zoo models
    python benchmarks/train_zoo.py --datasets census --models dnn lr --force

Writes benchmarks/results/train_zoo.json (figures, parameters, versions, CPU count, date) and train_zoo.md.
Seconds are wall seconds of one training on a possibly shared machine: compare models within one run only.
A model loaded from the cache reports the seconds of the training that produced it (column "cached").
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import platform
import sys
import time
import traceback
import warnings
from pathlib import Path

import numpy as np
from sklearn.metrics import f1_score

from chiralfair.datasets import dataset_names, load_dataset
from chiralfair.models import model_names, train_model
from chiralfair.models.training import library_versions

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="+", default=None, help="default: chiralfair.datasets.dataset_names()")
    p.add_argument("--models", nargs="+", default=None, help="default: every zoo model")
    p.add_argument("--random-state", type=int, default=0)
    p.add_argument("--cache-dir", default=None, help="model cache folder (default: CHIRALFAIR_CACHE / XDG)")
    p.add_argument("--force", action="store_true", help="retrain even if a cached model exists")
    p.add_argument("--threads", type=int, default=None,
                   help="limit BLAS/OpenMP threads of the whole run (threadpoolctl); default: no limit")
    p.add_argument("--out-dir", type=Path, default=RESULTS, help="where train_zoo.json/.md go")
    return p.parse_args(argv)


def run_cell(dataset, model: str, args) -> dict:
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trained = train_model(dataset, model, random_state=args.random_state, cache_dir=args.cache_dir,
                              force=args.force)
    wall = time.perf_counter() - start
    y_test = dataset.y[trained.test_index]
    predicted = trained.model.predict(dataset.X[trained.test_index])
    return {
        "dataset": dataset.name, "model": model, "params": trained.spec.params,
        "n_train": int(len(trained.train_index)), "n_test": int(len(trained.test_index)),
        "positive_share_test": float(np.mean(y_test)),
        "f1": trained.f1, "macro_f1": float(f1_score(y_test, predicted, average="macro")),
        "accuracy": trained.accuracy, "train_seconds": trained.train_seconds,
        "wall_seconds": wall, "from_cache": trained.from_cache, "cache_file": trained.cache_path.name,
        "warnings": sorted({f"{w.category.__name__}: {str(w.message).splitlines()[0]}" for w in caught}),
    }


def markdown(report: dict) -> str:
    lines = [
        "# Zoo models on the benchmark datasets",
        "",
        f"{report['date']}, {report['cpu_count']} CPUs, random_state {report['parameters']['random_state']}, "
        f"threads limit {report['parameters']['threads']}. "
        "F1 of the positive class (label 1), macro-F1 and accuracy on the 40% test split; seconds of one "
        "training (the cached column says whether the model was loaded).",
        "",
        "| dataset | model | F1 | macro-F1 | accuracy | train s | cached | notes |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in report["results"]:
        if "error" in r:
            lines.append(f"| {r['dataset']} | {r['model']} | | | | | | error: {r['error']} |")
            continue
        notes = "; ".join(w[:80] for w in r["warnings"])
        lines.append(f"| {r['dataset']} | {r['model']} | {r['f1']:.4f} | {r['macro_f1']:.4f} | "
                     f"{r['accuracy']:.4f} | {r['train_seconds']:.2f} | "
                     f"{'yes' if r['from_cache'] else 'no'} | {notes} |")
    versions = ", ".join(f"{k} {v}" for k, v in report["versions"].items())
    lines += ["", f"Versions: {versions}.", ""]
    return "\n".join(lines)


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    datasets = args.datasets or list(dataset_names())
    models = args.models or model_names()
    limiter = None
    if args.threads is not None:
        from threadpoolctl import threadpool_limits
        limiter = threadpool_limits(args.threads)
    results = []
    try:
        for name in datasets:
            dataset = load_dataset(name)
            for model in models:
                try:
                    row = run_cell(dataset, model, args)
                except Exception as err:  # one failing cell must not lose the others
                    traceback.print_exc()
                    row = {"dataset": name, "model": model, "error": f"{type(err).__name__}: {err}"}
                results.append(row)
                if "error" not in row:
                    print(f"{name:10s} {model:4s} F1 {row['f1']:.4f} macro-F1 {row['macro_f1']:.4f} "
                          f"acc {row['accuracy']:.4f} train {row['train_seconds']:.2f} s "
                          f"{'(cached)' if row['from_cache'] else ''}", flush=True)
    finally:
        if limiter is not None:
            limiter.restore_original_limits()
    report = {
        "benchmark": "train_zoo",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(), "loadavg_at_end": list(os.getloadavg()),
        "machine": platform.machine(),
        "versions": library_versions(),
        "parameters": {"datasets": datasets, "models": models, "random_state": args.random_state,
                       "force": args.force, "threads": args.threads,
                       "split": "dataset.split(random_state), 60/40 stratified"},
        "results": results,
    }
    args.out_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out_dir / "train_zoo.json", json.dumps(report, indent=2) + "\n")
    write_atomic(args.out_dir / "train_zoo.md", markdown(report))
    print(f"wrote {args.out_dir / 'train_zoo.json'} and {args.out_dir / 'train_zoo.md'}")
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
