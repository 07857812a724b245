"""Models that take native categoricals (LightGBM fitted on pandas categoricals) get them, from Python and the CLI,
whatever dtype the data was read with: a CSV gives text, and LightGBM refused it ("categorical_feature do not
match")."""

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import chiralfair
from chiralfair.cli import app
from chiralfair.models import as_model
from chiralfair.models.language import native_categories

lightgbm = pytest.importorskip("lightgbm")


def people(n, seed):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"gender": rng.choice(["female", "male"], n), "port": rng.choice(["C", "Q", "S"], n),
                       "fare": rng.lognormal(3, 1, n).round(2)})
    score = 0.03 * df["fare"] - 1.2 * (df["gender"] == "male") + rng.normal(0, 0.3, n)
    df["survived"] = (score > np.median(score)).astype(int)
    return df


def fitted(df):
    X = df.drop(columns="survived").astype({"gender": "category", "port": "category"})
    return lightgbm.LGBMClassifier(n_estimators=20, verbose=-1, random_state=0).fit(X, df["survived"])


def test_the_categories_lightgbm_was_fitted_with_are_read_from_the_model():
    model = fitted(people(200, 0))
    assert native_categories(model) == {"gender": ("female", "male"), "port": ("C", "Q", "S")}
    assert native_categories(lightgbm.LGBMClassifier()) is None  # not fitted: nothing recorded


def test_a_frame_read_as_text_is_given_to_lightgbm_as_its_categoricals():
    train, test = people(300, 1), people(150, 2)
    model = fitted(train)
    result = chiralfair.audit(model, train, test=test, label="survived", positive_class=1, favourable=1,
                              protected="gender", seeds="random", max_global=10, max_local=5)
    X = test.drop(columns="survived").astype({"gender": pd.CategoricalDtype(["female", "male"]),
                                              "port": pd.CategoricalDtype(["C", "Q", "S"])})
    flipped = X.assign(gender=X["gender"].map({"female": "male", "male": "female"}).astype(X["gender"].dtype))
    own = model.predict(X)
    assert result.verdict.n_affected == int((own != model.predict(flipped)).sum()) > 0
    from sklearn.metrics import f1_score
    assert result.to_dict()["model"]["f1"] == f1_score(test["survived"], own)


def test_the_cli_runs_a_lightgbm_model_on_a_csv(tmp_path):
    import joblib

    train, test = people(300, 3), people(150, 4)
    train.to_csv(tmp_path / "train.csv", index=False)
    test.to_csv(tmp_path / "test.csv", index=False)
    joblib.dump(fitted(train), tmp_path / "model.joblib")
    res = CliRunner().invoke(app, ["run", "--data", str(tmp_path / "train.csv"), "--test", str(tmp_path / "test.csv"),
                                   "--model", str(tmp_path / "model.joblib"), "--trust-model-file", "--label",
                                   "survived", "--positive-class", "1", "--favourable", "1", "--protected", "gender",
                                   "--seeds", "random", "--max-global", "10", "--max-local", "5", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["verdict"]["n_individuals"] == 150


def test_a_wrapped_model_casts_only_the_columns_it_takes_as_categoricals():
    model = as_model(fitted(people(100, 5)), to_frame=lambda X: None)
    frame = people(5, 6).drop(columns="survived")
    sent = model.language.frame_input(frame)
    assert isinstance(sent["gender"].dtype, pd.CategoricalDtype) and sent["fare"].dtype == np.float64
