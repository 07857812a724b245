"""Train the reference networks shipped with chiralfair and write their manifest (docs: the model under test).

Run by hand from the repository root, on the machine whose networks are to be shipped:

    python benchmarks/train_reference.py

For each benchmark dataset (census, compas, bank, german: the benchmark encodings, the default 60/40 split with
``random_state=0``, the DNN's default parameters, training ``random_state=0``) it trains the paper's DNN on this
machine (never from a cache or an earlier reference), and for each of the dataset's benchmark protected
attributes the chiral model that I and I&D seeds train for it (``chiral_random_state`` = the model's
``random_state`` 0, the dataset's default couplings, and without them where there are some: census sex with
``couple = false``, the presets' setting), exactly as ``chiralfair run`` and the presets ask for it. Each network is
written to ``src/chiralfair/models/reference/<name>.npz`` (plain arrays) and listed in ``manifest.json`` there
with its SHA-256, recipe (and recipe digest, what a request is matched on), test-set F1 and library versions.

Writes benchmarks/results/train_reference.json and .md too (F1 per network, wall and CPU seconds, load).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import f1_score

from chiralfair.datasets import dataset_spec, load_dataset
from chiralfair.models import reference as ref
from chiralfair.models.training import library_versions, train_model
from chiralfair.models.zoo import ModelSpec
from chiralfair.seeds.chiral import train_chiral_model

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
DATASETS = ("census", "compas", "bank", "german")
VERSION = 1


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="+", default=list(DATASETS))
    p.add_argument("--random-state", type=int, default=0, help="split and training seed (the recipe's)")
    p.add_argument("--folder", type=Path, default=ref.FOLDER, help="where the .npz files and manifest.json go")
    p.add_argument("--out-dir", type=Path, default=RESULTS, help="where train_reference.json/.md go")
    return p.parse_args(argv)


def cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def entry(name, module, folder: Path, recipe: dict, digest: str, f1: float, spec: ModelSpec) -> dict:
    file = f"{name}.npz"
    sha = ref.save_network(module, folder / file)
    return {"name": name, "version": VERSION, "file": file, "sha256": sha, "recipe": recipe, "recipe_digest": digest,
            "f1": f1, "trained_with": library_versions(spec)}


def main(argv=None) -> None:
    args = parse_args(argv)
    spec = ModelSpec("dnn")
    networks, rows = [], []
    start_wall, start_cpu = time.perf_counter(), cpu_seconds()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as cache:  # nothing read from this machine's cache
        for name in args.datasets:
            protected = dataset_spec(name).protected
            dataset = load_dataset(name, protected=[protected[0]])
            t, c = time.perf_counter(), cpu_seconds()
            trained = train_model(dataset, spec, random_state=args.random_state, cache_dir=cache, reference=False,
                                  force=True)
            recipe = {"kind": "model under test", "dataset": name, "encoding": "benchmark",
                      "split": f"{name}.split({args.random_state}): 60/40 stratified",
                      "n_train": int(len(trained.train_index)), "spec": json.loads(spec.key()),
                      "random_state": args.random_state}
            networks.append(entry(f"{name}-dnn", trained.model.estimator, args.folder, recipe, trained.recipe_digest,
                                  trained.f1, spec))
            rows.append({"network": f"{name}-dnn", "f1": trained.f1, "wall_s": time.perf_counter() - t,
                         "cpu_s": cpu_seconds() - c})
            for attribute in protected:
                data = load_dataset(name, protected=[attribute])
                t, c = time.perf_counter(), cpu_seconds()
                chiral, info = train_chiral_model(trained.model, data, np.random.default_rng(args.random_state),
                                                  cache_dir=cache, reference=False)
                _, test = data.split(info["split_random_state"])
                f1 = float(f1_score(data.y[test], chiral.predict(data.X[test]), pos_label=1, zero_division=0))
                recipe = {"kind": "chiral model", "dataset": name, "encoding": "benchmark", "protected": [attribute],
                          "couplings": list(data.domain.describe_couplings()),
                          "chiral_random_state": args.random_state,
                          "split": f"{name}.split({info['split_random_state']}): 60/40 stratified",
                          "n_train": info["n_train"], "spec": json.loads(spec.key()),
                          "random_state": info["train_random_state"]}
                label = f"{name}-chiral-{attribute}-dnn"
                networks.append(entry(label, chiral.estimator, args.folder, recipe, info["recipe_digest"], f1, spec))
                rows.append({"network": label, "f1": f1, "wall_s": time.perf_counter() - t,
                             "cpu_s": cpu_seconds() - c})
                if not recipe["couplings"] or all("inactive" in text for text in recipe["couplings"]):
                    continue
                # the presets' (and the I&D paper's) setting, couple = false: another mutation, another chiral model
                data = load_dataset(name, protected=[attribute], couple=False)
                t, c = time.perf_counter(), cpu_seconds()
                chiral, info = train_chiral_model(trained.model, data, np.random.default_rng(args.random_state),
                                                  cache_dir=cache, reference=False)
                f1 = float(f1_score(data.y[test], chiral.predict(data.X[test]), pos_label=1, zero_division=0))
                recipe = {**recipe, "couplings": [], "couple": False}
                label = f"{name}-chiral-{attribute}-uncoupled-dnn"
                networks.append(entry(label, chiral.estimator, args.folder, recipe, info["recipe_digest"], f1, spec))
                rows.append({"network": label, "f1": f1, "wall_s": time.perf_counter() - t,
                             "cpu_s": cpu_seconds() - c})
    manifest = {"format": ref.RECIPE_FORMAT, "generated_by": "benchmarks/train_reference.py",
                "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "networks": networks}
    (args.folder / ref.MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    summary = {"command": "python benchmarks/train_reference.py " + " ".join(argv or []),
               "date": manifest["date"], "load_before": load_before, "load_after": os.getloadavg(),
               "cpu_count": os.cpu_count(), "platform": platform.platform(), "versions": library_versions(spec),
               "wall_s": time.perf_counter() - start_wall, "cpu_s": cpu_seconds() - start_cpu, "networks": rows}
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "train_reference.json").write_text(json.dumps(summary, indent=1) + "\n")
    lines = ["# Reference networks (benchmarks/train_reference.py)", "",
             f"{summary['date']}, load {load_before[0]:.2f} before / {summary['load_after'][0]:.2f} after, "
             f"torch {summary['versions']['torch']}; total {summary['wall_s']:.1f} s wall, "
             f"{summary['cpu_s']:.1f} s CPU (children included)", "",
             "| network | test F1 | wall s | CPU s |", "|---|---|---|---|"]
    lines += [f"| {r['network']} | {r['f1']:.4f} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} |" for r in rows]
    (args.out_dir / "train_reference.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
