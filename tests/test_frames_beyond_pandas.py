"""Polars frames (and Parquet read by polars) through narwhals give the results the same data gives in pandas."""

import json

import numpy as np
import pandas as pd
import pytest
import realdata
from typer.testing import CliRunner

import chiralfair
from chiralfair.cli import app
from chiralfair.datasets import from_frame
from chiralfair.datasets.census import RAW_COLUMNS
from chiralfair.exceptions import DatasetError

pl = pytest.importorskip("polars")
runner = CliRunner()


def own_frame(n=300, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"sex": rng.choice(["m", "f"], n), "race": rng.choice(["c", "a", "b", None], n),
                       "age": rng.integers(18, 80, n).astype(float), "hours": rng.integers(10, 70, n),
                       "member": rng.choice([True, False], n)})
    df.loc[rng.random(n) < 0.1, "age"] = np.nan
    df["y"] = np.where(((df["sex"] == "m") & (df["hours"] > 38)) | (df["hours"] > 55), ">50K", "<=50K")
    return df


def same_dataset(a, b):
    assert (a.X == b.X).all() and (a.y == b.y).all()
    assert a.domain.to_dict() == b.domain.to_dict()


def comparable(summary: dict) -> dict:
    """The figures of an audit, without wall times and the type names of the objects given."""
    out = json.loads(json.dumps(summary, default=str))
    out.pop("seconds", None)
    out.pop("seconds_by_step", None)
    out["seeds"].pop("seconds", None)
    out["verdict"].pop("seconds", None)
    out["meta"].pop("source", None)
    out["meta"].pop("versions", None)
    return out


def test_from_frame_of_a_polars_frame_is_the_pandas_one():
    df = own_frame()
    kw = dict(label="y", positive_class=">50K", protected=["sex"], bins={"age": [0, 30, 50, 90]})
    same_dataset(from_frame(pl.from_pandas(df), **kw), from_frame(df, **kw))
    same_dataset(from_frame(pl.from_pandas(df).lazy(), **kw), from_frame(df, **kw))


def test_a_polars_categorical_codes_as_text_and_an_enum_keeps_its_declared_categories():
    values = ["m", "f", "f", "m", "x"]
    frame = pl.DataFrame({"sex": pl.Series(values, dtype=pl.Categorical), "y": [1, 0, 1, 0, 1],
                          "size": pl.Series(["big", "small", "big", "mid", "small"],
                                            dtype=pl.Enum(["small", "mid", "big"]))})
    ds = from_frame(frame, label="y", positive_class=1, protected=["sex"])
    sex, size = ds.domain.features[0], ds.domain.features[1]
    assert sex.labels == {0: "f", 1: "m", 2: "x"}  # sorted, as a string column: not the order first seen
    assert size.labels == {0: "small", 1: "mid", 2: "big"} and size.kind == "categorical"


def test_something_that_is_no_frame_is_refused_by_name():
    with pytest.raises(DatasetError, match="data must be a DataFrame .*got list"):
        chiralfair.estimate(lambda X: X[:, 0], [[1, 2]], label="y", protected="sex")


def fitted(df, label):
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline, make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    X = df.drop(columns=label)
    text = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c]) or X[c].dtype == bool]
    numbers = [c for c in X.columns if c not in text]
    pre = ColumnTransformer([("text", OneHotEncoder(handle_unknown="ignore"), text),
                             ("num", make_pipeline(SimpleImputer(), StandardScaler()), numbers)])
    return Pipeline([("pre", pre), ("lr", LogisticRegression(max_iter=300))]).fit(X, df[label])


def test_own_csv_read_by_polars_audits_as_read_by_pandas(tmp_path):
    own_frame(400).to_csv(tmp_path / "own.csv", index=False)
    by_pandas, by_polars = pd.read_csv(tmp_path / "own.csv"), pl.read_csv(tmp_path / "own.csv")
    model = fitted(by_pandas, "y")
    kw = dict(label="y", positive_class=">50K", protected=["sex"], bins={"age": [0, 30, 50, 90], "hours": 6},
              seeds="cluster", max_global=20, max_local=5, random_state=1)
    a, b = chiralfair.audit(model, by_pandas, **kw), chiralfair.audit(model, by_polars, **kw)
    assert a.n_idis > 0
    assert comparable(a.to_dict()) == comparable(b.to_dict())
    pd.testing.assert_frame_equal(a.idis(), b.idis())
    pd.testing.assert_frame_equal(a.held_out_rows(), b.held_out_rows())


def test_census_raw_data_read_by_polars_audits_as_read_by_pandas():
    path = realdata.real_data_home_or_skip() / "census" / "raw" / "adult.data"
    n = 3000
    by_pandas = pd.read_csv(path, names=RAW_COLUMNS, skipinitialspace=True, nrows=n)
    # polars reads the raw file's " 77516" as text: strip every text column, then let numbers be numbers
    by_polars = pl.read_csv(path, has_header=False, new_columns=list(RAW_COLUMNS), n_rows=n).with_columns(
        pl.col(pl.String).str.strip_chars())
    numeric = [c for c in RAW_COLUMNS if pd.api.types.is_integer_dtype(by_pandas[c])]
    by_polars = by_polars.with_columns([pl.col(c).cast(pl.Int64) for c in numeric])
    model = fitted(by_pandas, "income")
    kw = dict(label="income", positive_class=">50K", protected=["sex"],
              bins={"age": [0, 25, 35, 45, 55, 65, 100], "fnlwgt": 10, "capital-gain": 5, "capital-loss": 5,
                    "hours-per-week": [0, 20, 35, 40, 50, 100]},
              seeds="cluster", max_global=20, max_local=5, random_state=0)
    a, b = chiralfair.audit(model, by_pandas, **kw), chiralfair.audit(model, by_polars, **kw)
    assert a.verdict is not None and a.n_idis > 0
    assert comparable(a.to_dict()) == comparable(b.to_dict())


def test_the_cli_on_a_parquet_written_by_polars_gives_the_csv_figures(tmp_path):
    import skops.io as sio

    df = own_frame(400).sort_values("sex", ascending=False, kind="stable").reset_index(drop=True)  # "m" first
    df.to_csv(tmp_path / "own.csv", index=False)
    # a polars Categorical is dictionary-encoded in the file, in the order first seen ("m" before "f")
    pl.read_csv(tmp_path / "own.csv").with_columns(pl.col("sex").cast(pl.Categorical)).write_parquet(
        tmp_path / "own.parquet")
    sio.dump(fitted(df, "y"), tmp_path / "model.skops")

    def verdict(data):
        res = runner.invoke(app, ["estimate", "--data", str(data), "--model", str(tmp_path / "model.skops"),
                                  "--label", "y", "--positive-class", ">50K", "--protected", "sex", "--bins",
                                  "age=0:30:50:90,hours=6", "--trust-model-file", "--json"])
        assert res.exit_code == 0, res.output
        v = json.loads(res.stdout)
        return v["share"], v["n_individuals"], v["groups"]

    assert verdict(tmp_path / "own.parquet") == verdict(tmp_path / "own.csv")
    from chiralfair.datasets import read_frame

    assert not isinstance(read_frame(tmp_path / "own.parquet")["sex"].dtype, pd.CategoricalDtype)
    declared = df.assign(sex=pd.Categorical(df["sex"], categories=["m", "f"]))  # pandas' own keep their order
    declared.to_parquet(tmp_path / "declared.parquet")
    assert list(read_frame(tmp_path / "declared.parquet")["sex"].cat.categories) == ["m", "f"]
