"""``individuals.parquet`` and certify's people lines as a fresh user reads them (their findings, each failing before):
each person's ``row`` is their label in the rows they gave (not a number after the training rows), ``prediction``
holds the model's own labels (as the output says), and a ``similar=`` radius wider than a column's range is said
to be clipped to that range, naming it.

Every figure is recounted here through the user's own objects: the pipeline's ``predict`` on pandas frames, the
torch module on numpy rows, the data's own minimum and maximum.
"""

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OrdinalEncoder
from sklearn.tree import DecisionTreeClassifier
from test_certify_people import FEATURES, labels, people_and_net, recount
from typer.testing import CliRunner

import chiralfair
from chiralfair.certification.result import IndividualCertificates
from chiralfair.cli import app
from chiralfair.models.threads import single_native_thread

COLUMNS = ["sex", "job", "age", "hours"]


def raw_people(n=600, seed=1):
    """Raw rows with text categories and whole numbers; the label is text (``high`` / ``low``) and leans on sex."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"sex": rng.choice(["F", "M"], n), "job": rng.choice(["clerk", "farm", "tech"], n),
                       "age": rng.integers(18, 60, n), "hours": rng.integers(10, 50, n)})
    score = df.age / 10 + df.hours / 10 + 2 * (df.sex == "M") + (df.job == "tech") + rng.normal(0, 1, n)
    df["y"] = np.where(score > 9.5, "high", "low")
    return df


def fitted_tree(train):
    pipe = make_pipeline(make_column_transformer((OrdinalEncoder(), ["sex", "job"]), remainder="passthrough"),
                         DecisionTreeClassifier(max_depth=6, random_state=0))
    with single_native_thread():
        return pipe.fit(train[COLUMNS], train["y"])


def predict(pipe, frame):
    with single_native_thread():
        return np.asarray(pipe.predict(frame[COLUMNS]))


def test_each_persons_row_is_their_label_in_the_test_rows_given(tmp_path):
    frame, net = people_and_net()
    train, test = frame.iloc[:600], frame.iloc[600:]
    names = [f"person-{i}" for i in range(len(test))]
    test = test.set_axis(pd.Index(names[::-1], name="who"))  # labels that are not positions, in reverse
    result = chiralfair.certify(net, train, test=test, label="y", protected="sex", max_seconds=None,
                                out=tmp_path / "run")
    table = pd.read_parquet(tmp_path / "run" / "individuals.parquet")
    assert list(table["row"]) == list(test.index)  # each row named as given, in the test rows' order
    expected = pd.Series(recount(net, test, None), index=test.index)
    assert 0 < expected.sum() < len(test)
    by_label = table.set_index("row")
    assert (by_label["status"] == np.where(expected.loc[by_label.index], "affected", "certified unaffected")).all()
    hit = by_label[by_label["status"] == "affected"]
    # on their own row, the witness x is the person named by that label
    assert (hit[FEATURES].to_numpy(dtype=np.int64) == test.loc[hit.index, FEATURES].to_numpy()).all()
    record = json.loads((tmp_path / "run" / "result.json").read_text())["individuals"]
    assert "index label" in record["row"] and "test=" in record["row"], record["row"]
    again = IndividualCertificates.from_json(result.individuals.to_json())
    assert list(again.to_frame()["row"]) == list(test.index)
    # the module answers 0 / 1 (P > 0.5): its own labels, named as such
    assert set(hit["prediction"]) == {0, 1} and (labels(net, hit[FEATURES].to_numpy()) == hit["prediction"]).all()
    assert "(f(x), f(x') as the model's own labels, 0 or 1; individuals.parquet" in str(result)


def test_a_held_out_split_names_each_person_by_the_datas_own_label(tmp_path):
    frame, net = people_and_net()
    data = frame.set_axis(pd.Index(np.arange(len(frame)) * 7 + 1000))  # labels that are not positions
    chiralfair.certify(net, data, test_size=0.25, label="y", protected="sex", max_seconds=None, out=tmp_path / "run")
    table = pd.read_parquet(tmp_path / "run" / "individuals.parquet")
    assert table["row"].isin(data.index).all() and table["row"].is_unique and len(table) == 225
    expected = recount(net, data.loc[table["row"]], None)
    assert (table["status"].to_numpy() == np.where(expected, "affected", "certified unaffected")).all()
    hit = table[table["status"] == "affected"]
    assert (hit[FEATURES].to_numpy(dtype=np.int64) == data.loc[hit["row"], FEATURES].to_numpy()).all()


def test_the_command_names_file_rows_from_zero_and_writes_the_models_own_labels(tmp_path):
    df = raw_people()
    train, test = df.iloc[:400].reset_index(drop=True), df.iloc[400:].reset_index(drop=True)
    pipe = fitted_tree(train)
    import skops.io as sio

    train.to_csv(tmp_path / "train.csv", index=False)
    test.to_csv(tmp_path / "test.csv", index=False)
    sio.dump(pipe, tmp_path / "tree.skops")
    res = CliRunner().invoke(app, ["certify", "--data", str(tmp_path / "train.csv"), "--test",
                                   str(tmp_path / "test.csv"), "--model", str(tmp_path / "tree.skops"),
                                   "--trust-model-file", "--label", "y", "--positive-class", "high", "--protected",
                                   "sex", "--out", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    table = pd.read_parquet(tmp_path / "run" / "individuals.parquet")
    assert list(table["row"]) == list(range(len(test)))  # the test file's rows, from 0 below its header
    # the truth per person: their own row and its sex flipped, through the pipeline's own predict
    flipped = test.assign(sex=np.where(test["sex"] == "F", "M", "F"))
    expected = predict(pipe, test) != predict(pipe, flipped)
    assert 0 < expected.sum() < len(test)
    assert (table["status"].to_numpy() == np.where(expected, "affected", "certified unaffected")).all()
    hit = table[table["status"] == "affected"]
    x = hit[COLUMNS].reset_index(drop=True)
    x_cf = hit[[f"{c}_counterpart" for c in COLUMNS]].set_axis(COLUMNS, axis=1).reset_index(drop=True)
    person = test.loc[hit["row"], COLUMNS].reset_index(drop=True)
    assert (x.astype(str).to_numpy() == person.astype(str).to_numpy()).all()  # each witness is the person named
    # prediction holds the model's own labels, as its own predict returns them, and the output says so
    assert set(hit["prediction"]) <= {"high", "low"} and len(set(hit["prediction"])) == 2
    assert (hit["prediction"].to_numpy() == predict(pipe, x)).all()
    assert (hit["prediction_counterpart"].to_numpy() == predict(pipe, x_cf)).all()
    text = " ".join(res.output.split())
    assert "in your own values (f(x), f(x') as the model's own labels, low or high;" in text, res.output
    record = json.loads((tmp_path / "run" / "result.json").read_text())["individuals"]
    assert record["prediction"] == "f(x), f(x') as the model's own labels, low or high"
    where = f"test file '{tmp_path / 'test.csv'}'"
    assert record["row"] == f"each person's row in {where}, numbered from 0 below its header"


@pytest.mark.parametrize("radius", [1e9, 3])
def test_a_radius_is_said_clipped_to_the_columns_range_in_the_data(tmp_path, radius):
    df = raw_people()
    train, test = df.iloc[:400].reset_index(drop=True), df.iloc[400:].reset_index(drop=True)
    pipe = fitted_tree(train)
    import skops.io as sio

    train.to_csv(tmp_path / "train.csv", index=False)
    test.to_csv(tmp_path / "test.csv", index=False)
    sio.dump(pipe, tmp_path / "tree.skops")
    res = CliRunner().invoke(app, ["certify", "--data", str(tmp_path / "train.csv"), "--test",
                                   str(tmp_path / "test.csv"), "--model", str(tmp_path / "tree.skops"),
                                   "--trust-model-file", "--label", "y", "--positive-class", "high", "--protected",
                                   "sex", "--similar", f"age={radius:g}", "--out", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    low, high = int(df["age"].min()), int(df["age"].max())  # the data's range: training and test rows
    text = " ".join(res.output.split())
    assert f"clipped to the data's range of each column: age {low} to {high}" in text, res.output
    assert ("spans all of it" in text) == (radius >= high - low), res.output
    record = json.loads((tmp_path / "run" / "result.json").read_text())["individuals"]
    assert record["similar_ranges"] == {"age": [low, high]}
    # the truth per person: every age of their box (clipped to the range) at each sex, through predict
    table = pd.read_parquet(tmp_path / "run" / "individuals.parquet")
    r = int(min(radius, high - low))
    affected = np.zeros(len(test), dtype=bool)
    for shift in range(-r, r + 1):
        moved = test.assign(age=np.clip(test["age"] + shift, low, high))
        flipped = moved.assign(sex=np.where(moved["sex"] == "F", "M", "F"))
        affected |= predict(pipe, moved) != predict(pipe, flipped)
    assert (table["status"].to_numpy() == np.where(affected, "affected", "certified unaffected")).all()
    hit = table[table["status"] == "affected"]
    assert hit["age"].between(low, high).all()
    assert (hit["prediction"].to_numpy() == predict(pipe, hit[COLUMNS])).all()

