"""--mlflow: parameters, figures (fair_*) and the run folder logged into an MLflow run.

Most tests log into a local file store (allowed with MLFLOW_ALLOW_FILE_STORE, and quick to create); MLflow's own
default, ``sqlite:///mlflow.db`` with no variable set, takes seconds to create its tables and is tested under the
slow mark (and measured in a fresh venv by benchmarks/workflow.py).
"""

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
    assert res.output.index("individuals affected") < res.output.index("MLflow run:")  # the verdict first
    summary = json.loads((tmp_path / "run" / "result.json").read_text())
    params, metrics = run.data.params, run.data.metrics
    assert params["fair_generator"] == "aequitas" and params["fair_seeds"] == "cluster"
    assert params["fair_generator_asked"] == "auto"  # an own model: the generator auto picked is the one logged
    assert params["fair_max_global"] == "20" and params["fair_protected"] == '["sex"]'
    assert metrics["fair_n_idis"] == summary["n_idis"] and metrics["fair_n_queries"] == summary["n_queries"]
    assert metrics["fair_share_affected"] == pytest.approx(summary["verdict"]["share"])
    # the people's interval as the verdict decided it; an exact share has no interval of its own (width 0)
    assert metrics["fair_share_affected_people_upper"] == pytest.approx(summary["verdict"]["people_upper"])
    assert ("fair_share_affected_upper" in metrics) == (not summary["verdict"]["exact"])
    assert metrics["fair_model_f1"] == pytest.approx(summary["model"]["f1"])
    assert {"fair_group/sex.3Df/share_harmed", "fair_group/sex.3Dm/tpr",
            "fair_group/all/selection_rate"} <= set(metrics)
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


# ------------------------------------------------------------------------------------- keys, stores, failures
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from chiralfair.exceptions import ConfigError, MissingDependencyError  # noqa: E402
from chiralfair.reporting.tracking import check_tracking_store, group_key, group_name, key  # noqa: E402


def mlflow_takes(name):
    from mlflow.utils.validation import _validate_metric_name

    _validate_metric_name(name)
    return True


@settings(max_examples=30, deadline=None)
@given(st.text(min_size=1, max_size=30))  # a group's name is never empty: "attribute=value"
def test_a_group_name_escapes_into_a_key_mlflow_takes_and_back(group):
    part = group_key(group)
    assert group_name(part) == group
    assert "/" not in part and mlflow_takes(key(f"group/{part}/share_harmed"))
    assert all(c.isascii() and (c.isalnum() or c in "_- .") for c in part)


def test_groups_that_differ_only_in_punctuation_get_their_own_keys():
    assert group_key("<40") == ".3C40" and group_key(">40") == ".3E40"
    assert len({group_key(g) for g in ("<40", ">40", "=40", "40", ".40", "_40")}) == 6
    assert group_key("sex=f") == "sex.3Df" and group_name("race.3Db.2C sex.3Dm") == "race=b, sex=m"


def test_two_groups_that_differ_in_punctuation_keep_their_own_figures():
    from dataclasses import replace

    from toys import biased_module, toy_dataset

    from chiralfair.reporting.tracking import figures_of
    from chiralfair.verdict import estimate

    v = estimate(biased_module(), toy_dataset(100), population="rows", favourable=1)
    young, old = ({**v.groups[0], "group": "age<40", "share_harmed": 0.1},
                  {**v.groups[1], "group": "age>40", "share_harmed": 0.2})
    _, metrics, _, _ = figures_of(replace(v, groups=(young, old)))
    assert metrics["group/age.3C40/share_harmed"] == 0.1 and metrics["group/age.3E40/share_harmed"] == 0.2


@pytest.fixture
def no_tracking_uri(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    monkeypatch.chdir(tmp_path)
    mlflow.set_tracking_uri(None)
    yield tmp_path
    mlflow.set_tracking_uri(None)


def test_with_no_variable_set_the_store_is_mlflows_default_sqlite_which_the_extra_can_open(no_tracking_uri):
    assert check_tracking_store() == f"sqlite:///{no_tracking_uri / 'mlflow.db'}"
    assert not (no_tracking_uri / "mlflow.db").exists()  # checked, not created


def test_a_store_the_installed_mlflow_cannot_open_is_refused_in_one_line(no_tracking_uri, monkeypatch):
    import importlib.util

    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "sqlalchemy" else found(name, *a))
    with pytest.raises(MissingDependencyError, match=r"needs sqlalchemy, which mlflow-skinny does not bring: pip "
                                                     r"install 'chiralfair\[mlflow\]'"):
        check_tracking_store()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", (no_tracking_uri / "mlruns").as_uri())
    with pytest.raises(ConfigError, match="only with MLFLOW_ALLOW_FILE_STORE=true") as err:
        check_tracking_store()
    assert "\n" not in str(err.value)


def test_the_command_refuses_such_a_store_before_any_work_in_one_line(files, no_tracking_uri, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", (no_tracking_uri / "mlruns").as_uri())
    res = runner.invoke(app, [str(a) for a in own(files, "estimate", "--mlflow")])
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    assert "MLFLOW_ALLOW_FILE_STORE=true" in res.output and "Share of individuals" not in res.output


def test_a_logging_failure_never_hides_the_verdict_and_keeps_the_run_folder(files, store, tmp_path, monkeypatch):
    import chiralfair.pipeline.exports

    def failing(*args, **kwargs):
        raise mlflow.exceptions.MlflowException("the tracking server is down\nand a long traceback")

    monkeypatch.setattr(chiralfair.pipeline.exports, "track", failing)
    res = runner.invoke(app, [str(a) for a in own(files, "run", "--seeds", "random", "--max-global", 5,
                                                  "--max-local", 1, "--out", tmp_path / "run", "--mlflow")])
    assert res.exit_code == 2, res.output
    assert "individuals affected" in res.stdout and (tmp_path / "run" / "result.json").is_file()
    assert (f"error: the MLflow run was not written: MlflowException: the tracking server is down (the figures above "
            f"stand; the run folder {tmp_path / 'run'} is written)") in res.output
    assert "Traceback" not in res.output


@pytest.mark.slow  # MLflow creates its SQLite tables (several seconds)
def test_run_logs_into_mlflows_default_store_with_no_variable_set(files, no_tracking_uri):
    invoke(own(files, "estimate", "--mlflow"))
    client = mlflow.tracking.MlflowClient(f"sqlite:///{no_tracking_uri / 'mlflow.db'}")
    assert "fair_share_affected" in only_run(client).data.metrics


def test_a_gate_decision_logs_its_reading_interval_and_untested_groups():
    from toys import biased_module, toy_dataset

    from chiralfair.reporting.tracking import figures_of
    from chiralfair.verdict import decide, estimate

    v = estimate(biased_module(), toy_dataset(100), population="rows", favourable=1, method="clopper-pearson")
    d = decide(v, 0.5)
    params, metrics, name, document = figures_of(d)
    assert params["gate_reading"] == "superpopulation" and params["gate_outcome"] == d.outcome
    assert (metrics["gate_lower"], metrics["gate_upper"]) == (d.lower, d.upper) and d.lower < v.share < d.upper
    assert metrics["gate_n_untested"] == 0 and name == "check" and document["line"] == d.line()
