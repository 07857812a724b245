"""The team's workflow on the raw Adult CSV: the gate's exit codes, model cards, MLflow, polars vs pandas.

Run by hand from the repository root (needs the data home; MLflow and polars from the test extra):

    CHIRALFAIR_DATA=../shared/data python benchmarks/workflow.py

- ``chiralfair check`` (a real process, its exit code) on sklearn pipelines fitted on adult.data: a fair one (sex
  dropped by its ColumnTransformer), an unfair one (logistic regression on every column) and the unfair one at a
  borderline threshold (its own share, with a query budget that makes the verdict sample); a typo; the zoo DNN.
- The sequential decision's saving: queries of ``estimate`` against ``check`` on uniform draws from the domain.
- ``--model-card`` of ``run``, ``estimate``, ``check`` and ``retrain``, each validated against the CycloneDX 1.6
  JSON schema bundled with cyclonedx-python-lib.
- ``run --mlflow`` into a local file store: the logged parameter, metric and artifact keys read back.
- ``chiralfair.audit`` of the raw Adult data read by polars and by pandas (32,561 rows), and of an own CSV: the
  figures compared for equality; and the cost of the group metrics step.

Writes benchmarks/results/workflow.json (figures, parameters, versions, CPU count, date, load) and workflow.md.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
           "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
           "income"]
BINS = "fnlwgt=20,capital-gain=10,capital-loss=10,hours-per-week=10"
BINS_DICT = {"fnlwgt": 20, "capital-gain": 10, "capital-loss": 10, "hours-per-week": 10}
CLI = [sys.executable, "-m", "chiralfair"]


def read_adult(home: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    raw = home / "census" / "raw"
    train = pd.read_csv(raw / "adult.data", names=COLUMNS, skipinitialspace=True)
    test = pd.read_csv(raw / "adult.test", names=COLUMNS, skipinitialspace=True, skiprows=1)
    test["income"] = test["income"].str.rstrip(".")
    return train.dropna(how="all"), test.dropna(how="all")


def pipeline(train: pd.DataFrame, *, drop_sex: bool):
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    strings = [c for c in train.columns if not pd.api.types.is_numeric_dtype(train[c]) and c != "income"]
    if drop_sex:
        strings.remove("sex")
    numbers = [c for c in train.columns if pd.api.types.is_numeric_dtype(train[c]) and c != "income"]
    pre = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), strings),
                             ("num", StandardScaler(), numbers)], remainder="drop")
    return Pipeline([("pre", pre), ("lr", LogisticRegression(max_iter=1000))]).fit(train.drop(columns="income"),
                                                                                 train["income"])


def cli(*args) -> tuple[int, str, float]:
    """Exit code, the line printed (or the error's line, out of its box) and wall seconds of one CLI process."""
    t = time.perf_counter()
    res = subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True)
    errors = [line.strip("│╭╮╰╯─ ") for line in res.stderr.splitlines()]
    error = next((line for line in errors if line.startswith(("No such", "Missing", "Invalid", "error:"))), "")
    return res.returncode, (res.stdout.strip().splitlines() or [""])[-1] or error, time.perf_counter() - t


def own(folder: Path, model: str) -> list:
    return ["--data", folder / "train.csv", "--test", folder / "test.csv", "--model", folder / model, "--label",
            "income", "--positive-class", ">50K", "--protected", "sex", "--bins", BINS, "--trust-model-file"]


def gate_codes(folder: Path) -> dict:
    out = {}
    for name, model, extra in (("fair model (sex dropped)", "fair.skops", ["--max-share", 0.01]),
                               ("unfair model (LR on every column)", "unfair.skops", ["--max-share", 0.01])):
        code, line, seconds = cli("check", *own(folder, model), *extra)
        out[name] = {"exit_code": code, "line": line, "seconds": seconds}
    verdict = json.loads(subprocess.run([*CLI, "check", *map(str, own(folder, "unfair.skops")), "--max-share", "0.01",
                                         "--json"], capture_output=True, text=True).stdout)
    share = verdict["share"]
    code, line, seconds = cli("check", *own(folder, "unfair.skops"), "--max-share", f"{share:.4f}", "--max-queries",
                              4000)
    out[f"borderline: unfair model, --max-share {share:.4f} (its exact share), --max-queries 4000"] = {
        "exit_code": code, "line": line, "seconds": seconds}
    code, line, seconds = cli("check", *own(folder, "unfair.skops"), "--max-share", 0.01, "--modle", "x")
    out["typo: --modle"] = {"exit_code": code, "line": line, "seconds": seconds}
    code, line, seconds = cli("check", "--dataset", "census", "--protected", "sex", "--model", "dnn", "--max-share",
                              0.02)
    out["zoo DNN on census (sex), --max-share 0.02"] = {"exit_code": code, "line": line, "seconds": seconds}
    return out


def sequential_saving(unfair, train, test) -> dict:
    import chiralfair
    from chiralfair.pipeline import check_fairness

    kw = dict(label="income", positive_class=">50K", protected="sex", bins=BINS_DICT, test=test,
              population="domain", random_state=0)
    out = {}
    for threshold in (0.01, 0.05):
        t = time.perf_counter()
        plain = chiralfair.estimate(unfair, train, method="clopper-pearson", **kw)
        t_plain = time.perf_counter() - t
        t = time.perf_counter()
        decision = check_fairness(unfair, train, max_share=threshold, **kw)
        t_gate = time.perf_counter() - t
        out[f"max share {threshold}"] = {
            "estimate": {"queries": plain.n_queries, "share": plain.share, "interval": [plain.lower, plain.upper],
                         "stopped_by": plain.stopped_by, "seconds": t_plain},
            "check": {"queries": decision.verdict.n_queries, "outcome": decision.outcome,
                      "interval": [decision.lower, decision.upper], "stopped_by": decision.verdict.stopped_by,
                      "looks": decision.verdict.meta["sequential"]["looks"], "seconds": t_gate},
            "query_ratio": plain.n_queries / decision.verdict.n_queries}
    return out


def validate(card_path: Path) -> dict:
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    from chiralfair.reporting.model_card import cyclonedx_bom

    card = json.loads(card_path.read_text())
    errors = JsonStrictValidator(SchemaVersion.V1_6).validate_str(json.dumps(cyclonedx_bom(card)), all_errors=True)
    considerations = card.get("considerations", {})
    return {"valid": errors is None, "errors": [] if errors is None else [str(e) for e in errors][:3],
            "performance_metrics": len(card["quantitativeAnalysis"]["performanceMetrics"]),
            "fairness_assessments": [a["groupAtRisk"] for a in considerations.get("fairnessAssessments", [])]}


def model_cards_and_mlflow(folder: Path, work: Path) -> tuple[dict, dict]:
    env = {**os.environ, "MLFLOW_ALLOW_FILE_STORE": "true", "MLFLOW_TRACKING_URI": (work / "mlruns").as_uri()}
    search = ["--seeds", "cluster", "--max-global", 50, "--max-local", 20]
    commands = {"run": ["run", *own(folder, "unfair.skops"), *search, "--out", work / "run", "--mlflow"],
                "estimate": ["estimate", *own(folder, "unfair.skops")],
                "check": ["check", *own(folder, "unfair.skops"), "--max-share", 0.01],
                "retrain": ["retrain", *own(folder, "unfair.skops"), *search, "--out", work / "retrain"]}
    cards = {}
    for name, args in commands.items():
        card = work / f"{name}.card.json"
        t = time.perf_counter()
        res = subprocess.run([*CLI, *map(str, args), "--model-card", str(card)], capture_output=True, text=True,
                             env=env)
        cards[name] = {"exit_code": res.returncode, "seconds": time.perf_counter() - t,
                       **(validate(card) if card.exists() else {"valid": False, "errors": [res.stderr[-300:]]})}
    import mlflow

    mlflow.set_tracking_uri(env["MLFLOW_TRACKING_URI"])
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    client = mlflow.tracking.MlflowClient(env["MLFLOW_TRACKING_URI"])
    (run,) = client.search_runs(["0"])
    logged = {"run_id": run.info.run_id, "params": sorted(run.data.params), "metrics": sorted(run.data.metrics),
              "artifacts": sorted(a.path for a in client.list_artifacts(run.info.run_id, "chiralfair")),
              "fair_share_affected": run.data.metrics.get("fair_share_affected"),
              "fair_n_idis": run.data.metrics.get("fair_n_idis")}
    return cards, logged


def comparable(summary: dict) -> dict:
    out = json.loads(json.dumps(summary, default=str))
    for key in ("seconds", "seconds_by_step"):
        out.pop(key, None)
    out["seeds"].pop("seconds", None)
    if out.get("verdict"):
        out["verdict"].pop("seconds", None)
    out["meta"].pop("source", None)
    out["meta"].pop("versions", None)
    return out


def polars_vs_pandas(home: Path, unfair, test: pd.DataFrame, work: Path) -> dict:
    import polars as pl

    import chiralfair

    path = home / "census" / "raw" / "adult.data"
    by_pandas = pd.read_csv(path, names=COLUMNS, skipinitialspace=True).dropna(how="all")
    numeric = [c for c in COLUMNS if pd.api.types.is_integer_dtype(by_pandas[c])]
    by_polars = (pl.read_csv(path, has_header=False, new_columns=COLUMNS)
                 .with_columns(pl.col(pl.String).str.strip_chars())
                 .filter(pl.col("income").is_not_null())
                 .with_columns([pl.col(c).cast(pl.Int64) for c in numeric]))
    kw = dict(label="income", positive_class=">50K", protected="sex", bins=BINS_DICT, seeds="cluster", max_global=100,
              max_local=100, random_state=0)
    out = {}
    for name, frames in (("census raw adult.data", (by_pandas, by_polars)),
                         ("own CSV (5,000 rows)", _own_csv(work))):
        model = unfair if name.startswith("census") else _own_model(frames[0])
        extra = {"test": test} if name.startswith("census") else {"label": "y", "positive_class": ">50K",
                                                                    "bins": {"age": [0, 30, 50, 90], "hours": 6}}
        args = {**kw, **extra}
        t = time.perf_counter()
        a = chiralfair.audit(model, frames[0], **args)
        t_a = time.perf_counter() - t
        t = time.perf_counter()
        b = chiralfair.audit(model, frames[1], **args)
        t_b = time.perf_counter() - t
        same = comparable(a.to_dict()) == comparable(b.to_dict())
        same_pairs = a.idis().equals(b.idis())
        same_rows = a.held_out_rows().equals(b.held_out_rows())
        out[name] = {"rows": len(frames[0]), "identical_figures": same, "identical_idi_pairs": same_pairs,
                     "identical_held_out_rows": same_rows, "n_idis": a.n_idis, "share_affected": a.verdict.share,
                     "seconds_pandas": t_a, "seconds_polars": t_b,
                     "group_metrics_seconds": a.to_dict()["seconds_by_step"].get("group_metrics"),
                     "verdict_seconds": a.to_dict()["seconds_by_step"].get("verdict")}
    return out


def _own_csv(work: Path):
    import polars as pl

    rng = np.random.default_rng(0)
    n = 5000
    df = pd.DataFrame({"sex": rng.choice(["m", "f"], n), "race": rng.choice(["c", "a", "b", None], n),
                       "age": rng.integers(18, 80, n).astype(float), "hours": rng.integers(10, 70, n)})
    df.loc[rng.random(n) < 0.1, "age"] = np.nan
    df["y"] = np.where(((df["sex"] == "m") & (df["hours"] > 38)) | (df["hours"] > 55), ">50K", "<=50K")
    df.to_csv(work / "own.csv", index=False)
    return pd.read_csv(work / "own.csv"), pl.read_csv(work / "own.csv")


def _own_model(df: pd.DataFrame):
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline, make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    pre = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), ["sex", "race"]),
                             ("num", make_pipeline(SimpleImputer(), StandardScaler()), ["age", "hours"])])
    return Pipeline([("pre", pre), ("lr", LogisticRegression())]).fit(df.drop(columns="y"), df["y"])


def main() -> None:
    import skops.io as sio

    home = Path(os.environ.get("CHIRALFAIR_DATA", HERE.parent.parent / "shared" / "data"))
    train, test = read_adult(home)
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        train.to_csv(folder / "train.csv", index=False)
        test.to_csv(folder / "test.csv", index=False)
        fair, unfair = pipeline(train, drop_sex=True), pipeline(train, drop_sex=False)
        sio.dump(fair, folder / "fair.skops")
        sio.dump(unfair, folder / "unfair.skops")
        record = {"script": "benchmarks/workflow.py", "date": dt.datetime.now().isoformat(timespec="seconds"),
                  "rows": {"data": len(train), "test": len(test)}, "cpu_count": os.cpu_count()}
        record["gate"] = gate_codes(folder)
        load.append(os.getloadavg()[0])
        record["sequential"] = sequential_saving(unfair, train, test)
        load.append(os.getloadavg()[0])
        record["model_cards"], record["mlflow"] = model_cards_and_mlflow(folder, folder)
        load.append(os.getloadavg()[0])
        record["polars_vs_pandas"] = polars_vs_pandas(home, unfair, test, folder)
        load.append(os.getloadavg()[0])
    record["load_average"] = {"min": min(load), "max": max(load)}
    record["versions"] = {p: version(p) for p in ("numpy", "pandas", "polars", "narwhals", "scikit-learn", "fairlearn",
                                                  "skops", "mlflow-skinny", "cyclonedx-python-lib", "pooch")} | {
        "python": platform.python_version()}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "workflow.json").write_text(json.dumps(record, indent=2, default=str))
    (RESULTS / "workflow.md").write_text(markdown(record))
    print(markdown(record))


def markdown(r: dict) -> str:
    lines = [f"# The team's workflow on the raw Adult CSV ({r['date']})", "",
             f"`python benchmarks/workflow.py`, load average {r['load_average']['min']:.1f}-"
             f"{r['load_average']['max']:.1f}, {r['cpu_count']} CPUs; adult.data ({r['rows']['data']:,} rows) to fit "
             f"and audit, adult.test ({r['rows']['test']:,} rows) held out; protected sex.", "",
             "## `chiralfair check` exit codes", "", "| case | exit | seconds | line |", "|---|---|---|---|"]
    for name, g in r["gate"].items():
        lines.append(f"| {name} | {g['exit_code']} | {g['seconds']:.1f} | {g['line'][:260]} |")
    lines += ["", "## The sequential decision (uniform draws from the domain, unfair model)", "",
              "| threshold | estimate queries | check queries | ratio | check outcome | looks | check interval |",
              "|---|---|---|---|---|---|---|"]
    for name, s in r["sequential"].items():
        c = s["check"]
        lines.append(f"| {name} | {s['estimate']['queries']:,} | {c['queries']:,} | {s['query_ratio']:.1f} | "
                     f"{c['outcome']} ({c['stopped_by']}) | {c['looks']} | "
                     f"[{c['interval'][0]:.2%}, {c['interval'][1]:.2%}] |")
    lines += ["", "## Model cards (CycloneDX 1.6 schema of cyclonedx-python-lib)", "",
              "| command | exit | valid | performance metrics | groups at risk |", "|---|---|---|---|---|"]
    for name, c in r["model_cards"].items():
        lines.append(f"| {name} | {c['exit_code']} | {c['valid']} | {c.get('performance_metrics', '-')} | "
                     f"{', '.join(c.get('fairness_assessments', [])) or '-'} |")
    m = r["mlflow"]
    lines += ["", "## MLflow (`run --mlflow`, local file store)", "",
              f"{len(m['params'])} parameters: {', '.join(m['params'])}.", "",
              f"{len(m['metrics'])} metrics: {', '.join(m['metrics'])}.", "",
              f"Artifacts: {', '.join(m['artifacts'])}.", "",
              "## polars vs pandas (`chiralfair.audit`, cluster seeds, AEQUITAS 100 x 100)", "",
              "| data | rows | identical figures | identical IDI pairs | identical held-out rows | IDIs "
              "| share affected | pandas s | polars s | group metrics s | verdict s |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, p in r["polars_vs_pandas"].items():
        lines.append(f"| {name} | {p['rows']:,} | {p['identical_figures']} | {p['identical_idi_pairs']} | "
                     f"{p['identical_held_out_rows']} | {p['n_idis']:,} | {p['share_affected']:.2%} | "
                     f"{p['seconds_pandas']:.1f} | {p['seconds_polars']:.1f} | {p['group_metrics_seconds']:.2f} | "
                     f"{p['verdict_seconds']:.2f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
