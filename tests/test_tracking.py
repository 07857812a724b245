"""--mlflow: parameters, figures (fair_*) and the run folder logged into an MLflow run (a local file store)."""

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from chiralfair.cli import app

mlflow = pytest.importorskip("mlflow")
runner = CliRunner()


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A local ``file:`` tracking store (MLflow 3 keeps the file store behind MLFLOW_ALLOW_FILE_STORE)."""
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    uri = (tmp_path / "mlruns").as_uri()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    mlflow.set_tracking_uri(uri)
    yield mlflow.tracking.MlflowClient(uri)
    mlflow.set_tracking_uri("")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    import skops.io as sio
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame({"sex": rng.choice(["f", "m"], n), "hours": rng.integers(0, 60, n)})
    df["y"] = np.where(df["hours"] + 12 * (df["sex"] == "m") + rng.normal(0, 4, n) > 36, "high", "low")
    folder = tmp_path_factory.mktemp("track")
    df.to_csv(folder / "data.csv", index=False)
    pre = ColumnTransformer([("sex", OneHotEncoder(), ["sex"]), ("num", StandardScaler(), ["hours"])])
    sio.dump(Pipeline([("pre", pre), ("lr", LogisticRegression())]).fit(df.drop(columns="y"), df["y"]),
             folder / "model.skops")
    return folder


def own(files, *args):
    return [*args, "--data", files / "data.csv", "--model", files / "model.skops", "--label", "y", "--positive-class",
            "high", "--protected", "sex", "--trust-model-file"]


def only_run(client):
    (experiment,) = client.search_experiments()
    (run,) = client.search_runs([experiment.experiment_id])
    return run


def invoke(args):
    res = runner.invoke(app, [str(a) for a in args])
    assert res.exit_code == 0, res.output
    return res


def test_run_logs_parameters_verdict_search_figures_and_the_run_folder(files, store, tmp_path):
    res = invoke(own(files, "run", "--seeds", "cluster", "--max-global", 20, "--max-local", 5, "--out",
                     tmp_path / "run", "--mlflow", "--model-card", tmp_path / "card.json"))
    run = only_run(store)
    assert f"MLflow run: {run.info.run_id}" in res.output
    summary = json.loads((tmp_path / "run" / "result.json").read_text())
    params, metrics = run.data.params, run.data.metrics
    assert params["fair_generator"] == "aequitas" and params["fair_seeds"] == "cluster"
    assert params["fair_max_global"] == "20" and params["fair_protected"] == '["sex"]'
    assert metrics["fair_n_idis"] == summary["n_idis"] and metrics["fair_n_queries"] == summary["n_queries"]
    assert metrics["fair_share_affected"] == pytest.approx(summary["verdict"]["share"])
    assert metrics["fair_share_affected_upper"] == pytest.approx(summary["verdict"]["upper"])
    assert metrics["fair_model_f1"] == pytest.approx(summary["model"]["f1"])
    assert {"fair_group/sex_f/share_harmed", "fair_group/sex_m/tpr", "fair_group/all/selection_rate"} <= set(metrics)
    assert all(k.startswith("fair_") for k in [*params, *metrics])
    logged = {a.path for a in store.list_artifacts(run.info.run_id, "chiralfair")}
    assert {"chiralfair/result.json", "chiralfair/report.md", "chiralfair/idis.parquet",
            "chiralfair/card.json"} <= logged
    assert run.info.status == "FINISHED"  # a run chiralfair started, it ends


def test_estimate_logs_the_verdict_into_the_run_named_by_mlflow_run_id(files, store, monkeypatch):
    with mlflow.start_run() as parent:
        mlflow.log_param("team_param", "kept")
    monkeypatch.setenv("MLFLOW_RUN_ID", parent.info.run_id)
    invoke(own(files, "estimate", "--mlflow"))
    run = store.get_run(parent.info.run_id)
    assert run.data.params["team_param"] == "kept" and "fair_share_affected" in run.data.metrics
    assert run.data.params["fair_verdict_population"] == "test"
    logged = {a.path for a in store.list_artifacts(run.info.run_id, "chiralfair")}
    assert logged == {"chiralfair/verdict.json"}


def test_retrain_logs_before_and_after(files, store, tmp_path):
    invoke(own(files, "retrain", "--seeds", "cluster", "--max-global", 10, "--max-local", 2, "--out",
               tmp_path / "retrain", "--mlflow"))
    run = only_run(store)
    metrics = run.data.metrics
    assert "fair_retrain/before/f1" in metrics and any(k.startswith("fair_retrain/after_") for k in metrics)
    assert run.data.params["fair_protocol"] == "holdout"
    logged = {a.path for a in store.list_artifacts(run.info.run_id, "chiralfair")}
    assert "chiralfair/retrain.json" in logged


def test_python_logging_into_the_callers_active_run_leaves_it_open(store):
    import sys

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from toys import biased_module, toy_dataset

    import chiralfair
    from chiralfair.reporting.tracking import log_to_mlflow

    verdict = chiralfair.estimate(biased_module(), toy_dataset(300), favourable=1)
    with mlflow.start_run() as active:
        run_id = log_to_mlflow(verdict)
        assert mlflow.active_run().info.run_id == active.info.run_id == run_id
    assert store.get_run(run_id).data.metrics["fair_share_affected"] == pytest.approx(verdict.share)
