"""One share affected, one interval: ``retrain`` printed a Wilson interval ([0.0642, 0.0829]) for the held-out share
that ``run``, ``estimate``, ``check`` and the model card give with Clopper-Pearson ([6.39%, 8.29%]) for the same rows
and model. Each door is called as a user calls it; the interval is recounted here with scipy."""

import json

import joblib
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from typer.testing import CliRunner

import chiralfair
from chiralfair.cli import app


def people(n, seed):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"sex": rng.choice(["Female", "Male"], n), "job": rng.choice(["a", "b", "c"], n),
                       "hours": rng.integers(20, 60, n), "age": rng.integers(18, 70, n)})
    score = 0.05 * df["hours"] + 0.6 * (df["sex"] == "Male") + 0.4 * (df["job"] == "a") + rng.normal(0, 0.8, n)
    df["income"] = np.where(score > np.quantile(score, 0.7), ">50K", "<=50K")
    return df


def fitted(train):
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    encode = make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["sex", "job"]),
                                     remainder=StandardScaler())
    return make_pipeline(encode, LogisticRegression(max_iter=500)).fit(train.drop(columns="income"), train["income"])


def clopper_pearson(k, n, confidence=0.95):
    """The exact binomial interval, from the beta quantiles (0 and 1 at the ends)."""
    alpha = 1 - confidence
    lower = 0.0 if k == 0 else stats.beta.ppf(alpha / 2, k, n - k + 1)
    upper = 1.0 if k == n else stats.beta.ppf(1 - alpha / 2, k + 1, n - k)
    return float(lower), float(upper)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("one_interval")
    train, test = people(600, 0), people(400, 1)
    train.to_csv(folder / "train.csv", index=False)
    test.to_csv(folder / "test.csv", index=False)
    model = fitted(train)
    joblib.dump(model, folder / "model.joblib")
    X = test.drop(columns="income")
    flipped = X.assign(sex=X["sex"].map({"Female": "Male", "Male": "Female"}))
    affected = int((model.predict(X) != model.predict(flipped)).sum())
    assert 0 < affected < len(test)
    return folder, affected, len(test)


def own_data(folder):
    return ["--data", str(folder / "train.csv"), "--test", str(folder / "test.csv"), "--model",
            str(folder / "model.joblib"), "--trust-model-file", "--label", "income", "--positive-class", ">50K",
            "--protected", "sex"]


def before_cell(console: str) -> str:
    """The ``test_idi_rate`` cell of the table's row before retraining, as printed."""
    rows = [line.strip().strip("|").split("|") for line in console.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in rows[0]]
    before = next(r for r in rows[1:] if r[0].strip() == "before")
    return before[header.index("test_idi_rate")].strip()


def test_retrain_prints_the_interval_estimate_gives_for_the_same_rows_and_model(files):
    folder, affected, n = files
    runner = CliRunner()
    estimated = runner.invoke(app, ["estimate", *own_data(folder), "--json"])
    assert estimated.exit_code == 0, estimated.output
    verdict = json.loads(estimated.stdout)
    assert verdict["n_affected"] == affected and verdict["people_method"] == "clopper-pearson"
    expected = clopper_pearson(affected, n)
    assert (verdict["people_lower"], verdict["people_upper"]) == pytest.approx(expected, abs=1e-12)

    ran = runner.invoke(app, ["run", *own_data(folder), "--seeds", "cluster", "--max-global", "10", "--max-local",
                              "5", "--out", str(folder / "run")])
    assert ran.exit_code == 0, ran.output
    retrained = runner.invoke(app, ["retrain", "--from-run", str(folder / "run"), "--method", "counterfactual",
                                    "--trust-model-file", "--out", str(folder / "retrain")])
    assert retrained.exit_code == 0, retrained.output
    console = retrained.stdout
    shown = f"{affected / n:.4f} [{verdict['people_lower']:.4f}, {verdict['people_upper']:.4f}]"
    assert before_cell(console) == shown == f"{affected / n:.4f} [{expected[0]:.4f}, {expected[1]:.4f}]"
    assert "IDI rate intervals: 95% Clopper-Pearson" in console  # the console says which interval it is
    report = (folder / "retrain" / "report.md").read_text()
    assert shown in report and "95% Clopper-Pearson intervals" in report and "Wilson" not in report


def test_the_python_retrain_gives_the_verdicts_interval(files):
    folder, affected, n = files
    train, test = pd.read_csv(folder / "train.csv"), pd.read_csv(folder / "test.csv")
    model = joblib.load(folder / "model.joblib")
    result = chiralfair.retrain(model, train, test=test, label="income", positive_class=">50K", protected="sex",
                                method=["counterfactual"])
    before = result.rows[0]
    verdict = chiralfair.estimate(model, train, test=test, label="income", positive_class=">50K", protected="sex")
    assert verdict.n_affected == affected
    assert (before["test_idi_lower"], before["test_idi_upper"]) == (verdict.people_lower, verdict.people_upper)
    assert (before["test_idi_lower"], before["test_idi_upper"]) == pytest.approx(clopper_pearson(affected, n),
                                                                                 abs=1e-12)
