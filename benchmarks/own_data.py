"""The audit of your own data and model, timed step by step: the raw Adult CSV with HGB and LightGBM pipelines.

Run by hand from the repository root (needs the data home and, for the LightGBM pipeline, ``lightgbm``):

    CHIRALFAIR_DATA=../shared/data python benchmarks/own_data.py                    # median of 3
    CHIRALFAIR_DATA=../shared/data python benchmarks/own_data.py --repeats 1 --models hgb

The user's view: ``adult.data`` (32,561 rows) and ``adult.test`` (16,281 rows, its labels' trailing
dot removed) read with pandas as they are, strings and ``?`` included; a raw-frame
``Pipeline(ColumnTransformer(OneHotEncoder(handle_unknown="ignore") on the strings, passthrough on the numbers),
classifier)`` fitted on adult.data; then ``chiralfair.audit(pipe, train, test=test, protected="sex", bins=...)``
with I&D seeds and AEQUITAS, 100 x 100, the verdict over the 16,281 held-out rows. Each audit runs twice: with
the pipeline explainer (the default for a Pipeline ending in trees) and with ``explainer="permutation"`` (the
default before it). The benchmark DNN on census (``run_experiment``, the model cached) is timed in the same process
as the reference of the goal: the own-data audit within 2x the benchmark's.

The whole commands are timed too (``--whole-command``, the default): the files written once (adult.data and
adult.test as CSV, each pipeline saved with skops), then ``chiralfair run --data train.csv --test test.csv --model
MODEL.skops ...`` against ``chiralfair run --dataset census --protected sex --model dnn`` (its model cached), each
in a fresh process, A B A B ..., medians and the ratio pair by pair: imports, reading and encoding the CSV, loading
the model file, the chiral model's training (not cached for a user's model), the search, the verdict.

Writes benchmarks/results/own_data.json (figures, parameters, versions, CPU count, date, load) and own_data.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
           "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
           "income"]
BINS = {"fnlwgt": 20, "capital-gain": 10, "capital-loss": 10, "hours-per-week": 10}
SEARCH = {"seeds": "iandd", "generator": "aequitas", "max_global": 100, "max_local": 100}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=["hgb", "lightgbm"])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out-dir", type=Path, default=RESULTS)
    p.add_argument("--no-whole-command", action="store_true", help="skip the timing of the whole commands")
    return p.parse_args(argv)


def read_adult(home: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    raw = home / "census" / "raw"
    train = pd.read_csv(raw / "adult.data", names=COLUMNS, skipinitialspace=True)
    test = pd.read_csv(raw / "adult.test", names=COLUMNS, skipinitialspace=True, skiprows=1)
    test["income"] = test["income"].str.rstrip(".")
    return train.dropna(how="all"), test.dropna(how="all")


def pipeline(kind: str, train: pd.DataFrame):
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    strings = [c for c in train.columns if not pd.api.types.is_numeric_dtype(train[c]) and c != "income"]
    numbers = [c for c in train.columns if c not in strings and c != "income"]
    pre = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), strings),
                             ("num", "passthrough", numbers)])
    if kind == "hgb":
        from sklearn.ensemble import HistGradientBoostingClassifier
        clf = HistGradientBoostingClassifier(random_state=0)
    else:
        from lightgbm import LGBMClassifier
        clf = LGBMClassifier(random_state=0, verbose=-1, n_jobs=1)
    return Pipeline([("pre", pre), ("clf", clf)]).fit(train.drop(columns="income"), train["income"])


def audit_once(model, train, test, explainer: str) -> dict:
    import chiralfair

    t = time.perf_counter()
    res = chiralfair.audit(model, train, test=test, label="income", positive_class=">50K", protected="sex",
                           bins=BINS, seed_params={"explainer": explainer}, random_state=0, **SEARCH)
    wall = time.perf_counter() - t
    s = res.to_dict()
    seeds = s["seeds"]
    return {"wall": wall, "steps": s["seconds_by_step"], "shap": seeds["seconds"].get("shap"),
            "explainer": (seeds.get("clustering") or {}).get("explainer"), "n_idis": s["n_idis"],
            "initialization_rate": s["initialization_rate"], "share_affected": s["verdict"]["share"],
            "f1": s["model"]["f1"], "evaluated_on": s["model"]["evaluated_on"]}


def benchmark_once(cache_dir) -> dict:
    from chiralfair.pipeline import RunConfig, run_experiment

    t = time.perf_counter()
    outcome = run_experiment(RunConfig(dataset="census", protected=("sex",), model="dnn", cache_dir=cache_dir,
                                       **SEARCH))
    return {"wall": time.perf_counter() - t, "steps": dict(outcome.seconds), "n_idis": outcome.result.n_idis}


def whole_commands(models: dict, train, test, repeats: int) -> dict:
    """Wall seconds of the whole CLI commands, own data (per model) against the benchmark, A B A B ..."""
    import skops.io as sio

    folder = Path(tempfile.mkdtemp(prefix="own-data-"))
    train.to_csv(folder / "train.csv", index=False)
    test.to_csv(folder / "test.csv", index=False)
    cli = [sys.executable, "-m", "chiralfair", "run"]
    bins = ",".join(f"{c}={n}" for c, n in BINS.items())
    benchmark = [*cli, "--dataset", "census", "--protected", "sex", "--model", "dnn"]
    out = {}
    for kind, model in models.items():
        sio.dump(model, folder / f"{kind}.skops")
        own = [*cli, "--data", str(folder / "train.csv"), "--test", str(folder / "test.csv"), "--model",
               str(folder / f"{kind}.skops"), "--trust-model-file", "--label", "income", "--positive-class", ">50K",
               "--protected", "sex", "--bins", bins]
        a, b = [], []
        _timed(benchmark), _timed(own)  # warm: caches, file system
        for _ in range(repeats):
            b.append(_timed(benchmark))
            a.append(_timed(own))
        out[kind] = {"own_seconds": statistics.median(a), "benchmark_seconds": statistics.median(b),
                     "ratio": statistics.median(x / y for x, y in zip(a, b, strict=True)), "own_runs": a,
                     "benchmark_runs": b}
    return out


def _timed(command: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env={**os.environ})
    return time.perf_counter() - t


def median_of(runs: list[dict]) -> dict:
    out = {k: statistics.median(r[k] for r in runs) for k in ("wall",)}
    steps = sorted({k for r in runs for k in r["steps"]})
    out["steps"] = {k: statistics.median(r["steps"].get(k, 0.0) for r in runs) for k in steps}
    if runs[0].get("shap") is not None:
        out["shap"] = statistics.median(r["shap"] for r in runs)
    for k in ("explainer", "n_idis", "initialization_rate", "share_affected", "f1", "evaluated_on"):
        if k in runs[0]:
            out[k] = runs[0][k]
    return out


def main(argv=None) -> None:
    args = parse_args(argv)
    home = Path(os.environ.get("CHIRALFAIR_DATA", HERE.parent.parent / "shared" / "data"))
    train, test = read_adult(home)
    load = [os.getloadavg()[0]]
    benchmark_once(None)  # warm: trains or loads the DNN and its chiral model into the cache
    reference = median_of([benchmark_once(None) for _ in range(args.repeats)])
    results = {"benchmark census/sex/dnn": reference}
    models = {}
    for kind in args.models:
        t = time.perf_counter()
        models[kind] = model = pipeline(kind, train)
        fit_seconds = time.perf_counter() - t
        for explainer in ("auto", "permutation"):
            runs = [audit_once(model, train, test, explainer) for _ in range(args.repeats)]
            results[f"{kind} ({explainer})"] = {**median_of(runs), "fit_seconds": fit_seconds}
            load.append(os.getloadavg()[0])
    commands = None if args.no_whole_command else whole_commands(models, train, test, args.repeats)
    load.append(os.getloadavg()[0])
    record = {"script": "benchmarks/own_data.py", "date": dt.datetime.now().isoformat(timespec="seconds"),
              "repeats": args.repeats, "search": SEARCH, "bins": BINS, "rows": {"data": len(train), "test": len(test)},
              "load_average": {"min": min(load), "max": max(load)}, "cpu_count": os.cpu_count(),
              "versions": {p: version(p) for p in ("numpy", "scikit-learn", "shap", "torch", "lightgbm")
                           if _installed(p)} | {"python": platform.python_version()},
              "results": results, "whole_commands": commands}
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "own_data.json").write_text(json.dumps(record, indent=2))
    (args.out_dir / "own_data.md").write_text(markdown(record))
    print(markdown(record))


def _installed(name: str) -> bool:
    try:
        version(name)
        return True
    except Exception:
        return False


def markdown(record: dict) -> str:
    ref = record["results"]["benchmark census/sex/dnn"]["wall"]
    steps = ("data", "model", "seeds", "search", "verdict")
    lines = [f"# Your own data: the audit timed by step ({record['date']})", "",
             f"`python benchmarks/own_data.py`, median of {record['repeats']}, load average "
             f"{record['load_average']['min']:.1f}-{record['load_average']['max']:.1f}, {record['cpu_count']} CPUs. "
             f"Raw Adult: {record['rows']['data']:,} rows to audit (the model's training rows), "
             f"{record['rows']['test']:,} held-out rows (adult.test) for F1 and the verdict; protected sex; I&D seeds, "
             "AEQUITAS 100 x 100. Seconds inside one Python process (imports excluded).", "",
             "| run | explainer | whole audit s | " + " | ".join(f"{s} s" for s in steps)
             + " | SHAP s | x benchmark | IDIs | share affected | F1 (held out) |",
             "|---|---|---|" + "---|" * len(steps) + "---|---|---|---|---|"]
    for name, r in record["results"].items():
        cells = " | ".join(f"{r['steps'].get(s, 0.0):.2f}" for s in steps)
        shap = f"{r['shap']:.2f}" if r.get("shap") is not None else "-"
        share = f"{r['share_affected']:.2%}" if "share_affected" in r else "-"
        f1 = f"{r['f1']:.3f}" if "f1" in r else "-"
        lines.append(f"| {name} | {r.get('explainer', '-')} | {r['wall']:.2f} | {cells} | {shap} | "
                     f"{r['wall'] / ref:.2f} | {r['n_idis']:,} | {share} | {f1} |")
    if record.get("whole_commands"):
        lines += ["", "The whole command, each in a fresh process (imports, reading the CSV, loading the model file, "
                      "the chiral model's training, search, verdict), A B A B ..., median and median ratio:", "",
                  "| model file | `run --data ... --model FILE` s | `run --dataset census --model dnn` s | ratio |",
                  "|---|---|---|---|"]
        for kind, w in record["whole_commands"].items():
            lines.append(f"| {kind}.skops | {w['own_seconds']:.2f} | {w['benchmark_seconds']:.2f} | "
                         f"{w['ratio']:.2f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
