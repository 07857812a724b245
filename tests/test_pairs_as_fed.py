"""Every reported IDI pair is real as the user reads it: the rows shown are what the model was fed.

A model fed the user's rows is fed each bin's representative value during the search; the pairs show that value
(the user's dtype) and the bin beside it in ``<column> (bin)``. Each test feeds the shown rows to the user's own
model object and compares its labels with the labels the pairs report.
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
from chiralfair.results.run_folder import BIN_SUFFIX, DOMAIN_KEY, read_pairs

pytestmark = pytest.mark.usefixtures("one_blas_thread")

FEATURES = ["sex", "race", "age", "hours"]
SETTINGS = dict(label="y", positive_class="yes", protected="sex", bins={"age": [0, 30, 45, 60, 90]})
BUDGET = dict(generator="aequitas", seeds="rows", max_global=40, max_local=20, verdict=False, random_state=0)


def people(n=500, seed=0):
    """A raw frame: text columns, an integer age and a float hours column the search bins (quantile bins)."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"sex": rng.choice(["f", "m"], n), "race": rng.choice(["a", "b", "c"], n),
                       "age": rng.integers(18, 80, n), "hours": rng.normal(40, 10, n).round(2)})
    # the label turns within bins (hours 38..50, age 40): a bin's interval alone cannot say it
    score = (df["sex"] == "m") * 1.5 + (df["hours"] - 42) / 4 + (df["age"] - 40) / 15
    df["y"] = np.where(score + rng.normal(0, 0.3, n) > 0.5, "yes", "no")
    return df


def pipeline(kind, df):
    if kind == "lr":
        pre = make_column_transformer((OneHotEncoder(handle_unknown="ignore"),
                                       make_column_selector(dtype_exclude="number")), remainder=StandardScaler())
        model = make_pipeline(pre, LogisticRegression(max_iter=1000))
    else:
        pre = make_column_transformer((OrdinalEncoder(), make_column_selector(dtype_exclude="number")),
                                      remainder="passthrough")
        model = make_pipeline(pre, HistGradientBoostingClassifier(max_iter=30, random_state=0))
    return model.fit(df[FEATURES], df["y"])


def sides(pairs):
    """The IDIs and their counterparts as shown, each under the user's column names."""
    own = pairs[FEATURES]
    other = pairs[[c + "_counterpart" for c in FEATURES]].set_axis(FEATURES, axis=1)
    return own, other


def assert_real(pairs, predict):
    """Every shown pair gets the reported labels from ``predict`` (the user's model), and they differ."""
    assert len(pairs) > 0
    own, other = sides(pairs)
    got, got_other = predict(own), predict(other)
    np.testing.assert_array_equal(got, pairs["prediction"].to_numpy())
    np.testing.assert_array_equal(got_other, pairs["prediction_counterpart"].to_numpy())
    assert (got != got_other).all()


def as_positive(model):
    return lambda rows: (np.asarray(model.predict(rows)) == "yes").astype(np.int64)


@pytest.mark.parametrize("kind", ["lr", "hgb"])
def test_python_door_pairs_reproduce_on_your_model(kind, tmp_path):
    df = people()
    model = pipeline(kind, df)
    result = chiralfair.audit(model, df, **SETTINGS, **BUDGET, out=tmp_path / "run")
    pairs = result.idis()
    assert_real(pairs, as_positive(model))
    for column in ("age", "hours"):  # the value fed, in your dtype, with its bin beside it
        assert pairs[column].dtype == df[column].dtype
        assert pairs[column + BIN_SUFFIX].dtype == "string"
        assert pairs[column + BIN_SUFFIX + "_counterpart"].dtype == "string"
    # the file holds the same rows as idis(), and reads back to the search's codes exactly
    on_disk = pd.read_parquet(tmp_path / "run" / "idis.parquet")
    pd.testing.assert_frame_equal(on_disk[pairs.columns].astype(pairs.dtypes.to_dict()), pairs,
                                  check_categorical=False)
    back = read_pairs(tmp_path / "run" / "idis.parquet")
    found = result.result
    np.testing.assert_array_equal(back["idis"], found.idis)
    np.testing.assert_array_equal(back["counterparts"], found.counterparts)
    # retraining's reader takes the frame the user holds, as shown, and the file (retrain --from-run)
    for shown in (pairs, on_disk):
        own, other = idis_from_frame(shown, result.outcome.domain)
        np.testing.assert_array_equal(own, found.idis)
        np.testing.assert_array_equal(other, found.counterparts)


@pytest.mark.parametrize("kind", ["lr", "hgb"])
def test_cli_run_pairs_file_reproduces_on_your_model(kind, tmp_path):
    import skops.io as sio

    df = people()
    model = pipeline(kind, df)
    csv, path, out = tmp_path / "people.csv", tmp_path / "pipe.skops", tmp_path / "run"
    df.to_csv(csv, index=False)
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


def test_certify_pairs_file_reproduces_on_your_model(tmp_path):
    df = people()
    model = pipeline("hgb", df)
    chiralfair.certify(model, df, **SETTINGS, max_seconds=20, individuals=False, out=tmp_path / "run")
    pairs = pd.read_parquet(tmp_path / "run" / "idis.parquet")
    assert_real(pairs, as_positive(model))
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
