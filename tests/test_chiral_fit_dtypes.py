"""The chiral model (seed strategies ``i`` and ``iandd``) is fitted on rows of the columns and dtypes the user's model
takes: a HistGradientBoosting model fitted with ``categorical_features="from_dtype"`` on pandas categoricals crashed
("could not convert string to float") because the training and test frames, whose categories differed, were stacked
into text, and a CSV gives text for columns the model read as categorical. Each run's verdict is checked against a
recount through the user's own model: flip sex for every held-out person, count the label changes."""

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import chiralfair
from chiralfair.cli import app
from chiralfair.exceptions import ModelCapabilityError

CATEGORICAL = ["sex", "port", "deck"]


def people(n, seed, decks=("A", "B", "C", "D")):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"sex": rng.choice(["female", "male"], n), "port": rng.choice(["C", "Q", "S"], n),
                       "deck": rng.choice(list(decks), n), "fare": rng.lognormal(3, 1, n).round(2),
                       "alone": rng.random(n) < 0.4})
    score = (0.03 * df["fare"] - 1.2 * (df["sex"] == "male") + 0.8 * (df["port"] == "C")
             + 0.5 * (df["deck"] == "A") + rng.normal(0, 0.3, n))
    df["survived"] = (score > np.median(score)).astype(int)
    # each frame's categories are the values it holds: the held-out rows lack deck D, so the two dtypes differ
    return df.astype(dict.fromkeys(CATEGORICAL, "category"))


def fitted(kind, X, y):
    if kind == "hgb":
        from sklearn.ensemble import HistGradientBoostingClassifier

        return HistGradientBoostingClassifier(categorical_features="from_dtype", max_iter=20, random_state=0).fit(X, y)
    if kind == "pipeline":  # its encoder picks the columns by their dtype
        from sklearn.compose import make_column_selector, make_column_transformer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import OneHotEncoder

        encode = make_column_transformer(
            (OneHotEncoder(handle_unknown="ignore"), make_column_selector(dtype_include="category")),
            remainder="passthrough")
        return make_pipeline(encode, LogisticRegression(max_iter=500)).fit(X, y)
    if kind == "lightgbm":
        lightgbm = pytest.importorskip("lightgbm")
        return lightgbm.LGBMClassifier(n_estimators=20, verbose=-1, random_state=0).fit(X, y)
    xgboost = pytest.importorskip("xgboost")
    return xgboost.XGBClassifier(n_estimators=20, max_depth=3, enable_categorical=True, tree_method="hist",
                                 random_state=0).fit(X, y)


def recount(model, test):
    """Held-out people whose predicted label changes when only sex is flipped, through the model itself."""
    X = test.drop(columns="survived")
    flipped = X.assign(sex=X["sex"].map({"female": "male", "male": "female"}).astype(X["sex"].dtype))
    return int((model.predict(X) != model.predict(flipped)).sum())


KINDS = ["pipeline", "hgb", "lightgbm", "xgboost"]


@pytest.fixture(scope="module")
def frames():
    train, test = people(300, 1), people(150, 2, decks=("A", "B", "C"))
    assert train["deck"].dtype != test["deck"].dtype  # what made the stacked rows text
    return train, test


@pytest.mark.parametrize("kind", KINDS)
def test_audit_with_iandd_seeds_fits_the_chiral_model_on_the_models_dtypes(kind, frames):
    train, test = frames
    model = fitted(kind, train.drop(columns="survived"), train["survived"])
    result = chiralfair.audit(model, train, test=test, label="survived", positive_class=1, favourable=1,
                              protected="sex", seeds="iandd", max_global=10, max_local=5)
    assert result.to_dict()["seeds"]["strategy"] == "iandd"
    assert result.verdict.n_individuals == len(test)
    assert result.verdict.n_affected == recount(model, test) > 0


@pytest.mark.parametrize("kind", KINDS)
def test_chiralfair_run_with_iandd_seeds_on_parquet_files_of_categoricals(kind, frames, tmp_path):
    import joblib

    train, test = frames
    model = fitted(kind, train.drop(columns="survived"), train["survived"])
    train.to_parquet(tmp_path / "train.parquet")
    test.to_parquet(tmp_path / "test.parquet")
    joblib.dump(model, tmp_path / "model.joblib")
    res = CliRunner().invoke(app, ["run", "--data", str(tmp_path / "train.parquet"), "--test",
                                   str(tmp_path / "test.parquet"), "--model", str(tmp_path / "model.joblib"),
                                   "--trust-model-file", "--label", "survived", "--positive-class", "1",
                                   "--favourable", "1", "--protected", "sex", "--seeds", "iandd", "--max-global", "10",
                                   "--max-local", "5", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["seeds"]["strategy"] == "iandd"
    assert out["verdict"]["n_affected"] == recount(model, test) > 0


@pytest.mark.parametrize("seeds", ["i", "iandd"])
def test_a_csv_gives_text_where_the_hgb_model_read_categoricals(seeds, frames, tmp_path):
    """The CLI's CSV holds text; the chiral copy still reads the model's categorical columns as categoricals."""
    import joblib

    train, test = frames
    model = fitted("hgb", train.drop(columns="survived"), train["survived"])
    train.to_csv(tmp_path / "train.csv", index=False)
    test.to_csv(tmp_path / "test.csv", index=False)
    joblib.dump(model, tmp_path / "model.joblib")
    res = CliRunner().invoke(app, ["run", "--data", str(tmp_path / "train.csv"), "--test", str(tmp_path / "test.csv"),
                                   "--model", str(tmp_path / "model.joblib"), "--trust-model-file", "--label",
                                   "survived", "--positive-class", "1", "--favourable", "1", "--protected", "sex",
                                   "--seeds", seeds, "--max-global", "10", "--max-local", "5", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["seeds"]["strategy"] == seeds
    assert out["verdict"]["n_affected"] == recount(model, test) > 0


def test_a_copy_that_cannot_be_fitted_is_refused_naming_the_seeds_that_work(frames):
    """A pipeline choosing its columns by dtype, given text (as a CSV gives), cannot be refitted: said, no traceback."""
    train, test = frames
    model = fitted("pipeline", train.drop(columns="survived"), train["survived"])
    as_text = {c: str for c in CATEGORICAL}
    with pytest.raises(ModelCapabilityError, match=r"chiral model.*--seeds cluster"):
        chiralfair.audit(model, train.astype(as_text), test=test.astype(as_text), label="survived", positive_class=1,
                         favourable=1, protected="sex", seeds="iandd", max_global=10, max_local=5)
    result = chiralfair.audit(model, train.astype(as_text), test=test.astype(as_text), label="survived",
                              positive_class=1, favourable=1, protected="sex", seeds="cluster", max_global=10,
                              max_local=5)
    assert result.verdict.n_affected == recount(model, test)
