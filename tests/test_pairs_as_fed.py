"""Every reported IDI pair is real as the user reads it: the rows shown are what the model was fed.

A model fed the user's rows is fed each bin's representative value during the search; the pairs show that value
(the user's dtype) and the bin beside it in ``<column> (bin)``. A missing value is shown as the data held it (the
``"?"`` a file wrote, NaN or None), a boolean as a boolean, a pandas category in its dtype. Each test feeds the shown
rows to the user's own model object and compares its labels with the labels the pairs report.
"""

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from sklearn.compose import make_column_selector, make_column_transformer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler
from typer.testing import CliRunner

import chiralfair
from chiralfair.cli import app
from chiralfair.datasets import from_frame
from chiralfair.exceptions import ConfigError
from chiralfair.mitigation import idis_from_frame
from chiralfair.models import ModelSpec
from chiralfair.results.run_folder import BIN_SUFFIX, DOMAIN_KEY, read_pairs, read_run

pytestmark = pytest.mark.usefixtures("one_blas_thread")

FEATURES = ["sex", "race", "age", "hours"]
SETTINGS = dict(label="y", positive_class="yes", protected="sex", bins={"age": [0, 30, 45, 60, 90]})
BUDGET = dict(generator="aequitas", seeds="rows", max_global=40, max_local=20, verdict=False, random_state=0)


# What the data holds besides plain text and numbers (people's ``missing``): every kind a model is fed differently from
# the label its code has in the domain (a missing value is labelled "missing", a boolean "True").
MISSING = [None, "token", "nan"]
KINDS = [*MISSING, "none", "kinds"]


def people(n=500, seed=0, missing=None):
    """A raw frame: text columns, an integer age and a float hours column the search bins (quantile bins).

    ``missing``: ``"token"`` writes a fifth of the races as ``"?"`` (UCI Adult's missing value; the data has no NaN),
    ``"nan"`` makes them NaN and a tenth of the hours NaN (a missing bin), ``"none"`` makes them None, ``"kinds"``
    makes race a pandas category with NaN and adds a boolean column. The label depends on a race being missing, so
    a pair shown with any other value than the one the model was fed gets other labels.
    """
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"sex": rng.choice(["f", "m"], n), "race": rng.choice(["a", "b", "c"], n),
                       "age": rng.integers(18, 80, n), "hours": rng.normal(40, 10, n).round(2)})
    # the label turns within bins (hours 38..50, age 40): a bin's interval alone cannot say it
    score = (df["sex"] == "m") * 1.5 + (df["hours"] - 42) / 4 + (df["age"] - 40) / 15
    gone = rng.random(n) < 0.2
    if missing is not None:
        score = score + np.where(gone, 0.8, 0.0)
        df["race"] = df["race"].astype(object)
        df.loc[gone, "race"] = {"token": "?", "none": None}.get(missing, np.nan)
    if missing == "nan":
        df.loc[rng.random(n) < 0.1, "hours"] = np.nan
    if missing == "kinds":
        df["race"] = df["race"].astype(pd.CategoricalDtype(["a", "b", "c"]))
        df["union"] = rng.random(n) < 0.4
        score = score - df["union"] * 1.5
    df["y"] = np.where(score + rng.normal(0, 0.3, n) > 0.5, "yes", "no")
    return df


def features(df):
    return [c for c in df.columns if c != "y"]


def pipeline(kind, df):
    if kind == "lr":
        pre = make_column_transformer((OneHotEncoder(handle_unknown="ignore"),
                                       make_column_selector(dtype_exclude="number")),
                                      remainder=make_pipeline(SimpleImputer(), StandardScaler()))
        model = make_pipeline(pre, LogisticRegression(max_iter=1000))
    else:
        pre = make_column_transformer((OrdinalEncoder(), make_column_selector(dtype_exclude="number")),
                                      remainder="passthrough")
        model = make_pipeline(pre, HistGradientBoostingClassifier(max_iter=30, random_state=0))
    return model.fit(df[features(df)], df["y"])


def sides(pairs, names=FEATURES):
    """The IDIs and their counterparts as shown, each under the user's column names."""
    own = pairs[names]
    other = pairs[[c + "_counterpart" for c in names]].set_axis(names, axis=1)
    return own, other


def assert_real(pairs, predict, names=FEATURES):
    """Every shown pair gets the reported labels from ``predict`` (the user's model), and they differ."""
    assert len(pairs) > 0
    own, other = sides(pairs, names)
    got, got_other = predict(own), predict(other)
    np.testing.assert_array_equal(got, pairs["prediction"].to_numpy())
    np.testing.assert_array_equal(got_other, pairs["prediction_counterpart"].to_numpy())
    assert (got != got_other).all()


def read_file(path, missing):
    """``idis.parquet`` read by pandas; a null is None where the data held None (Parquet has one null, read as NaN)."""
    pairs = pd.read_parquet(path)
    if missing == "none":
        for column in ("race", "race_counterpart"):
            pairs[column] = pairs[column].astype(object).where(pairs[column].notna(), None)
    return pairs


def as_positive(model):
    return lambda rows: (np.asarray(model.predict(rows)) == "yes").astype(np.int64)


def assert_read_back(path, shown_frames, result):
    """The pair file reads back to the search's codes exactly, and so does retraining's reader of the frames as shown
    (the frame the user holds and the file: retrain --from-run)."""
    found = result.result
    back = read_pairs(path)
    np.testing.assert_array_equal(back["idis"], found.idis)
    np.testing.assert_array_equal(back["counterparts"], found.counterparts)
    for shown in shown_frames:
        own, other = idis_from_frame(shown, result.outcome.domain)
        np.testing.assert_array_equal(own, found.idis)
        np.testing.assert_array_equal(other, found.counterparts)


@pytest.mark.parametrize("missing", KINDS)
@pytest.mark.parametrize("kind", ["lr", "hgb"])
def test_python_door_pairs_reproduce_on_your_model(kind, missing, tmp_path):
    df = people(missing=missing)
    names = features(df)
    model = pipeline(kind, df)
    result = chiralfair.audit(model, df, **SETTINGS, **BUDGET, out=tmp_path / "run")
    pairs = result.idis()
    assert_real(pairs, as_positive(model), names)
    for column in names:  # every column as fed, in your dtype
        assert pairs[column].dtype == df[column].dtype, column
        assert pairs[column + "_counterpart"].dtype == df[column].dtype, column
    for column in ("age", "hours"):  # a binned column: the value fed, with its bin beside it
        assert pairs[column + BIN_SUFFIX].dtype == "string"
        assert pairs[column + BIN_SUFFIX + "_counterpart"].dtype == "string"
    if missing is not None:  # the missing values the model was fed are among the shown ones, as the data held them
        shown = pd.concat([pairs["race"], pairs["race_counterpart"]]).astype(object)
        assert (shown == "?").any() if missing == "token" else shown.isna().any()
        assert not (shown == "missing").any()
    # the file holds the same rows as idis(), and reads back to the search's codes exactly
    on_disk = read_file(tmp_path / "run" / "idis.parquet", missing)
    assert_real(on_disk, as_positive(model), names)
    pd.testing.assert_frame_equal(on_disk[pairs.columns].astype(pairs.dtypes.to_dict()), pairs,
                                  check_categorical=False)
    assert_read_back(tmp_path / "run" / "idis.parquet", (pairs, on_disk), result)


@pytest.mark.parametrize("missing", MISSING)
@pytest.mark.parametrize("kind", ["lr", "hgb"])
def test_cli_run_pairs_file_reproduces_on_your_model(kind, missing, tmp_path):
    import skops.io as sio

    csv, path, out = tmp_path / "people.csv", tmp_path / "pipe.skops", tmp_path / "run"
    people(missing=missing).to_csv(csv, index=False)
    df = pd.read_csv(csv)  # as the user reads the file: a missing race is NaN in a text column, or "?"
    model = pipeline(kind, df)
    sio.dump(model, path)
    res = CliRunner().invoke(app, [str(a) for a in (
        "run", "--data", csv, "--model", path, "--label", "y", "--positive-class", "yes", "--protected", "sex",
        "--bins", "age=0:30:45:60:90", "--generator", "aequitas", "--seeds", "rows", "--max-global", 40,
        "--max-local", 20, "--trust-model-file", "--out", out)])
    assert res.exit_code == 0, res.output
    pairs = pd.read_parquet(out / "idis.parquet")
    assert len(pairs) == json.loads((out / "result.json").read_text())["n_idis"]
    assert_real(pairs, as_positive(model))  # the object the user dumped, not the file chiralfair read
    assert pairs["age"].dtype == pd.read_csv(csv)["age"].dtype
    # the shown values read back to the codes searched: a missing value (as the data held it) to the missing code
    back, domain = read_pairs(out / "idis.parquet"), read_run(out)["domain"]
    for codes, suffix in ((back["idis"], ""), (back["counterparts"], "_counterpart")):
        for j, f in enumerate(domain.features):
            if f.name in ("sex", "race"):
                code_of = {text: code for code, text in f.labels.items() if code != f.missing}
                expected = [f.missing if pd.isna(v) or v == "?" else code_of[v] for v in pairs[f.name + suffix]]
                np.testing.assert_array_equal(codes[:, j], expected)
    for read, codes in zip(idis_from_frame(pairs, domain), (back["idis"], back["counterparts"]), strict=True):
        np.testing.assert_array_equal(read, codes)


@pytest.mark.parametrize("missing", KINDS)
def test_certify_pairs_file_reproduces_on_your_model(missing, tmp_path):
    df = people(missing=missing)
    model = pipeline("hgb", df)
    chiralfair.certify(model, df, **SETTINGS, max_seconds=20, individuals=False, out=tmp_path / "run")
    pairs = read_file(tmp_path / "run" / "idis.parquet", missing)
    assert_real(pairs, as_positive(model), features(df))
    assert (pairs["phase"] == "leaf").all() and pairs["hours"].dtype == df["hours"].dtype


def test_zoo_dnn_on_codes_pairs_reproduce_through_their_labels():
    df = people()
    data = from_frame(df, **SETTINGS)
    module = ModelSpec("dnn", {"epochs": 5}).fit(data.X, data.y, random_state=0).estimator
    result = chiralfair.audit(module, data, model_input="codes", **BUDGET)
    pairs = result.idis()
    domain = result.outcome.domain
    assert not any(c.endswith(BIN_SUFFIX) for c in pairs.columns)  # fed codes: each code's label is what it was

    def predict(rows):  # each shown label read as its code (the domain's labels), then the module itself
        codes = np.column_stack([
            rows[f.name].astype("string").map({t: c for c, t in f.labels.items()}).to_numpy(np.int64)
            if f.labels else rows[f.name].to_numpy(np.int64) for f in domain.features])
        with torch.no_grad():
            return (module(torch.as_tensor(codes, dtype=torch.float32))[:, 0] > 0.5).numpy().astype(np.int64)

    assert_real(pairs, predict)


def old_format_file(path, result, domain):
    """An ``idis.parquet`` as the previous version wrote it: a binned column holds its bin's label, nothing else."""
    columns, names = [], []
    for X, suffix in ((result.idis, ""), (result.counterparts, "_counterpart")):
        for j, f in enumerate(domain.features):
            names.append(f.name + suffix)
            if f.labels:
                labels = pa.array([f.label(c) for c in range(f.lo, f.hi + 1)], type=pa.string())
                columns.append(pa.DictionaryArray.from_arrays(pa.array((X[:, j] - f.lo).astype(np.int32)), labels))
            else:
                columns.append(pa.array(X[:, j], type=pa.int64()))
    phases = pa.array(["global", "local", "leaf"], type=pa.string())
    phase = pa.array(np.where(result.phase == "local", 1, 0).astype(np.int8))
    columns += [pa.array(result.idi_labels, type=pa.int64()), pa.array(result.counterpart_labels, type=pa.int64()),
                pa.DictionaryArray.from_arrays(phase, phases)]
    names += ["prediction", "prediction_counterpart", "phase"]
    table = pa.Table.from_arrays(columns, names=names).replace_schema_metadata(
        {DOMAIN_KEY: json.dumps(domain.to_dict()).encode()})
    path.mkdir()
    pq.write_table(table, path / "part-000000.parquet")


def test_a_pairs_file_of_the_previous_version_reads_back_exactly(tmp_path):
    df = people()
    result = chiralfair.audit(pipeline("lr", df), df, **SETTINGS, **BUDGET)
    found, domain = result.result, result.outcome.domain
    assert found.n_idis > 0
    old_format_file(tmp_path / "idis.parquet", found, domain)
    back = read_pairs(tmp_path / "idis.parquet")
    np.testing.assert_array_equal(back["idis"], found.idis)
    np.testing.assert_array_equal(back["counterparts"], found.counterparts)
    np.testing.assert_array_equal(back["idi_labels"], found.idi_labels)
    own, other = idis_from_frame(pd.read_parquet(tmp_path / "idis.parquet"), domain)
    np.testing.assert_array_equal(own, found.idis)
    np.testing.assert_array_equal(other, found.counterparts)


def test_a_column_named_as_a_binned_columns_bin_is_refused_before_the_search(tmp_path):
    df = people()
    df["hours (bin)"] = df["hours"] * 2  # continuous too: both binned, and "hours (bin)" would name two columns
    model = make_pipeline(make_column_transformer((OneHotEncoder(), ["sex", "race"]), remainder=StandardScaler()),
                          LogisticRegression()).fit(df.drop(columns="y"), df["y"])
    with pytest.raises(ConfigError, match=r"column 'hours \(bin\)' of the data .* binned column 'hours'; rename"):
        chiralfair.audit(model, df, **SETTINGS, **BUDGET, out=tmp_path / "run")
    assert not (tmp_path / "run" / "idis.parquet").exists()


def test_numbers_held_as_categories_and_beyond_float_read_back_exactly(tmp_path):
    """Numbers a search codes by rank or as categories are shown as the numbers fed, and read back to the codes."""
    df = people()
    rng = np.random.default_rng(1)
    # whole numbers with a missing one in an object column (categories 1, 2, 3 and missing) and integers beyond
    # 2**53 (coded by rank): both shown as the numbers fed, each read back from its number
    df.insert(4, "grade", pd.Series(rng.choice([1, 2, 3, None], len(df)), dtype=object))
    df.insert(5, "id", (2**60 + rng.integers(0, 4, len(df)) * 3).astype(np.int64))
    names = features(df)
    model = make_pipeline(make_column_transformer((OrdinalEncoder(), ["sex", "race"]), remainder="passthrough"),
                          HistGradientBoostingClassifier(max_iter=30, random_state=0)).fit(df[names], df["y"])
    result = chiralfair.audit(model, df, **SETTINGS, **BUDGET, out=tmp_path / "run")
    pairs = result.idis()
    assert_real(pairs, as_positive(model), names)
    assert set(pairs["id"]) <= set(df["id"]) and pairs["id"].dtype == np.int64  # exact, not rounded by a float
    on_disk = pd.read_parquet(tmp_path / "run" / "idis.parquet")
    assert set(on_disk["id"]) <= set(df["id"]) and set(on_disk["grade"].dropna()) <= {1, 2, 3}
    assert_read_back(tmp_path / "run" / "idis.parquet", (pairs, on_disk), result)
