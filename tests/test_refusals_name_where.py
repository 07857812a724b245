"""Refusals a new user met, at the door they typed: a cell that cannot be read is named with its file and its row
(counted from 1, with the file's line); ``retrain --from-run`` of a run with no IDIs refuses only the methods that
add IDI pairs; ``RetrainResult.save`` creates its folder; a NaN fed to a torch module names its column; a model that
fails whatever its input is a ModelCallError, not advice about its values."""

import json

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder
from typer.testing import CliRunner

import chiralfair
from chiralfair.cli import app
from chiralfair.datasets.schema import infer_schema_file
from chiralfair.exceptions import ConfigError, DatasetError, ModelCallError, ModelInputError
from chiralfair.mitigation import retrain
from chiralfair.models import as_model

runner = CliRunner()


def people(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"age": rng.integers(18, 80, n), "work": rng.choice(["gov", "private", "self"], n),
                       "sex": rng.choice(["f", "m"], n)})
    df["y"] = np.where(df["age"] + 10 * (df["sex"] == "m") + 5 * (df["work"] == "gov") > 55, "yes", "no")
    return df


def pipeline(columns, train: pd.DataFrame) -> Pipeline:
    categorical = [c for c in columns if c != "age"]
    pre = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), categorical)]
                            + ([("num", "passthrough", ["age"])] if "age" in columns else []))
    return Pipeline([("pre", pre), ("lr", LogisticRegression(max_iter=1000))]).fit(train.drop(columns="y"),
                                                                                   train["y"])


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("newuser")
    train, test = people(300, 0), people(120, 1)
    train.to_csv(folder / "train.csv", index=False)
    test.to_csv(folder / "test.csv", index=False)
    joblib.dump(pipeline(["age", "work", "sex"], train), folder / "model.joblib")
    joblib.dump(pipeline(["age", "work"], train), folder / "blind.joblib")  # never reads sex: no IDI
    (folder / "schema.toml").write_text(infer_schema_file(
        folder / "train.csv", label="y", protected=["sex"], positive_class="yes"))
    return folder, train, test


def with_bad_cell(frame: pd.DataFrame, row: int, path) -> None:
    bad = frame.astype({"age": object})
    bad.loc[row, "age"] = "abc"
    bad.to_csv(path, index=False)


FLAGS = ("--label", "y", "--positive-class", "yes", "--protected", "sex", "--trust-model-file")


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


# ------------------------------------------------------------------------ an unreadable cell: its file, its row
def test_a_cell_the_schema_type_cannot_read_is_named_with_its_file_and_row(files, tmp_path):
    folder, train, test = files
    bad = tmp_path / "test_bad.csv"
    with_bad_cell(test, 12, bad)
    # the file's own numbering, recounted here: row 12 as read is the 13th data row, on line 14 below the header
    line = next(i for i, text in enumerate(bad.read_text().splitlines(), start=1) if text.startswith("abc,"))
    assert line == 14
    res = invoke("estimate", "--data", folder / "train.csv", "--test", bad, "--schema", folder / "schema.toml",
                 "--model", folder / "model.joblib", "--trust-model-file")
    assert res.exit_code != 0
    text = " ".join(res.output.split())
    assert f"value 'abc' at data row 13 (line {line}) of test file '{bad}'" in text, res.output


def test_a_cell_the_model_refuses_is_named_with_its_file_and_row_without_a_schema(files, tmp_path):
    folder, train, _ = files
    bad = tmp_path / "train_bad.csv"
    with_bad_cell(train, 4, bad)
    line = next(i for i, text in enumerate(bad.read_text().splitlines(), start=1) if text.startswith("abc,"))
    res = invoke("estimate", "--data", bad, "--test", folder / "test.csv", "--model", folder / "model.joblib",
                 *FLAGS)
    assert res.exit_code != 0
    text = " ".join(res.output.split())
    assert f"age='abc' (1 data row, the first at data row 5 (line {line}) of data file '{bad}')" in text, res.output


def test_a_frame_row_is_named_by_its_index_label(files):
    _, train, test = files
    test = test.set_index(test.index + 1000).astype({"age": object})
    test.loc[1007, "age"] = "abc"
    with pytest.raises(DatasetError, match=r"value 'abc' at row with index label 1007 of the test frame "
                                                      r"\(test=\)"):
        chiralfair.estimate(pipeline(["age", "work", "sex"], train), train, test=test, label="y",
                            positive_class="yes", protected="sex", schema=str(files[0] / "schema.toml"))


# ------------------------------------------------------------------------ retrain --from-run of a run with no IDIs
@pytest.mark.slow
def test_retrain_from_a_run_with_no_idis_runs_the_methods_that_need_none(files, tmp_path):
    folder, train, test = files
    blind = joblib.load(folder / "blind.joblib")
    flipped = test.assign(sex=np.where(test["sex"] == "m", "f", "m"))
    assert (blind.predict(test.drop(columns="y")) == blind.predict(flipped.drop(columns="y"))).all()
    run = invoke("run", "--data", folder / "train.csv", "--test", folder / "test.csv", "--model",
                 folder / "blind.joblib", *FLAGS, "--seeds", "random", "--generator", "aequitas", "--max-global",
                 20, "--max-local", 5, "--out", tmp_path / "run", "--json")
    assert run.exit_code == 0, run.output
    assert json.loads(run.stdout)["n_idis"] == 0
    paper = invoke("retrain", "--from-run", tmp_path / "run", "--method", "paper", "--trust-model-file")
    assert paper.exit_code != 0 and "method(s) 'paper' retrain with its IDIs" in " ".join(paper.output.split())
    cf = invoke("retrain", "--from-run", tmp_path / "run", "--method", "counterfactual", "--trust-model-file",
                "--out", tmp_path / "retrained", "--json")
    assert cf.exit_code == 0, cf.output
    assert (tmp_path / "retrained" / "model-counterfactual.joblib").is_file()
    after = [r for r in json.loads(cf.stdout)["rows"] if r["stage"] == "after"]
    assert [r["method"] for r in after] == ["counterfactual"]


# ------------------------------------------------------------------------ save into a folder that does not exist
def test_save_creates_the_folder_and_refuses_a_file(files, tmp_path):
    _, train, _ = files
    data = chiralfair.datasets.from_frame(train, label="y", positive_class="yes", protected="sex")
    fit, held = data.split(random_state=0)
    model = LogisticRegression(max_iter=1000).fit(data.X[fit], data.y[fit])
    result = retrain(model, data, method="counterfactual", train_index=fit)
    path = result.save("counterfactual", tmp_path / "not" / "yet")
    assert path.parent == tmp_path / "not" / "yet" and path.is_file()
    from chiralfair.models.files import load_model_file

    again = load_model_file(path)
    np.testing.assert_array_equal(again.predict(data.X[held]), result.model_of("counterfactual").predict(data.X[held]))
    (tmp_path / "a_file").write_text("")
    with pytest.raises(ConfigError, match=r"folder '.*a_file' is a file"):
        result.save("counterfactual", tmp_path / "a_file")


# ------------------------------------------------------------------------ NaN fed to a torch module: its column
def test_a_nan_fed_to_a_torch_module_names_its_column():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame({"hours": rng.normal(40, 8, n), "gain": rng.normal(0, 1, n), "sex": rng.integers(0, 2, n)})
    df["y"] = ((df["hours"] + 5 * df["sex"]) > 42).astype(int)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1), torch.nn.Sigmoid())
    test = df.iloc[300:].reset_index(drop=True)
    test.loc[17, "gain"] = np.nan
    # the module itself, independently: only that row gets NaN, and only gain is missing there
    with torch.no_grad():
        out = net(torch.tensor(test[["hours", "gain", "sex"]].to_numpy(), dtype=torch.float32))[:, 0].numpy()
    assert np.flatnonzero(np.isnan(out)).tolist() == [17]
    with pytest.raises(ModelInputError, match=r"NaN or infinite, and \d+ of the \d+ rows sent hold missing "
                                              r"values \(NaN\) in gain='missing'"):
        chiralfair.estimate(net, df.iloc[:300], test=test, label="y", positive_class=1, protected="sex",
                            model_input="values", bins={"hours": 4, "gain": 4})


# ------------------------------------------------------------------------ a model failing whatever its input
def test_a_model_failing_on_every_row_is_a_call_error_even_when_the_rows_tried_share_a_value():
    from chiralfair.models.protocol import _spread

    def broken(X):  # fails whatever the row, as an unfitted model does
        raise RuntimeError("boom after 12 calls")

    rng = np.random.default_rng(0)
    X = rng.integers(0, 5, (64, 4)).astype(float)
    X[:, 1] = 3.0
    X[1, 1] = 2.0  # column 1 is 3 on every row tried one by one, not on every row of the batch
    assert 1 not in _spread(64) and (X[_spread(64), 1] == 3).all()
    with pytest.raises(ModelCallError, match=r"whatever their values .*RuntimeError: boom after 12 calls"):
        as_model(broken, name="broken").predict(X)

    def refuses_three(X):  # and a model that refuses the shared value is still about its input
        X = np.asarray(X)
        if (X[:, 1] == 3).any():
            raise ValueError("Found unknown categories [3] in column 1")
        return np.zeros(len(X), dtype=np.int64)

    with pytest.raises(ModelInputError, match=r"such as codes \[\d, 3, \d, \d\] \(ValueError"):
        as_model(refuses_three, name="refuses").predict(X)
