"""A new user's workflow end to end (README: your own data and model): schema infer, run, check, retrain --from-run.

Each test goes through a door a user types (the Python API or the command line) and checks the value or the words of
the refusal against a recount written here.
"""

import json
import tomllib

import numpy as np
import pandas as pd
import pytest
from sklearn.pipeline import Pipeline
from test_cli_data import fitted_pipeline, invoke, raw_frame

from chiralfair.exceptions import DatasetError, ModelCallError


@pytest.fixture
def split_files(tmp_path):
    """train.csv (the model's rows), test.csv (held out, some values beyond the training range), model.skops."""
    import skops.io as sio

    df = raw_frame(n=500, seed=1)
    train, test = df.iloc[:350].reset_index(drop=True), df.iloc[350:].reset_index(drop=True)
    # held-out people beyond the range of the training rows, on both sides
    test.loc[7, "hours"] = train["hours"].max() + 12.5
    test.loc[9, "hours"] = train["hours"].min() - 3.25
    test.loc[11, "age"] = train["age"].max() + 4
    paths = {name: tmp_path / f"{name}.csv" for name in ("train", "test")}
    train.to_csv(paths["train"], index=False)
    test.to_csv(paths["test"], index=False)
    model = tmp_path / "model.skops"
    pipe = fitted_pipeline(train)
    sio.dump(pipe, model)
    return {"train": paths["train"], "test": paths["test"], "model": model, "pipe": pipe, "train_frame": train,
            "test_frame": test}


def inferred_schema(files, tmp_path):
    res = invoke("schema", "infer", files["train"], "--label", "y", "--positive-class", ">50K", "--protected", "sex")
    assert res.exit_code == 0, res.output
    schema = tmp_path / "schema.toml"
    schema.write_text(res.stdout)
    return schema


# ------------------------------------------------------------------ the schema's outer bins are open-ended
def test_an_inferred_schema_takes_held_out_values_beyond_the_training_range(split_files, tmp_path):
    import chiralfair

    files = split_files
    schema = inferred_schema(files, tmp_path)
    edges = tomllib.loads(schema.read_text())["columns"]["hours"]["bins"]
    assert edges[0] == -np.inf and edges[-1] == np.inf
    result = chiralfair.audit(files["pipe"], files["train_frame"], test=files["test_frame"], schema=schema,
                              max_global=10, max_local=2)
    # every held-out person is in the verdict, in the bin pandas.cut's (a, b] intervals put them in
    test = files["test_frame"]
    assert result.verdict.n_individuals == len(test)
    j = result.dataset.domain.names.index("hours")
    codes = result.dataset.X[result.inputs.test_index, j]
    inner = np.asarray(edges[1:-1])
    expected = np.searchsorted(inner, test["hours"].to_numpy(), side="left")
    np.testing.assert_array_equal(codes, expected)
    assert codes[7] == len(edges) - 2 and codes[9] == 0  # the outer bins
    # the bins are the search's view only: F1 is the model's on the rows as given
    from sklearn.metrics import f1_score

    f1 = f1_score(test["y"] == ">50K", files["pipe"].predict(test.drop(columns="y")) == ">50K")
    assert result.inputs.quality["f1"] == pytest.approx(f1)


@pytest.mark.parametrize("command", ["run", "check"])
def test_the_cli_runs_and_gates_held_out_rows_beyond_the_inferred_range(split_files, tmp_path, command):
    files = split_files
    schema = inferred_schema(files, tmp_path)
    extra = ["--max-share", "0.99"] if command == "check" else ["--max-global", "10", "--max-local", "2", "--json"]
    res = invoke(command, "--data", files["train"], "--test", files["test"], "--schema", schema, "--model",
                 files["model"], "--trust-model-file", *extra)
    assert res.exit_code in ((0,) if command == "run" else (0, 1, 2)), res.output
    assert "outside the bin edges" not in res.output
    if command == "run":
        assert json.loads(res.stdout)["verdict"]["n_individuals"] == 150


def test_explicit_finite_edges_still_refuse_a_value_beyond_them_and_open_edges_take_it(split_files):
    import chiralfair

    files = split_files
    kw = dict(label="y", positive_class=">50K", protected="sex", max_global=5, max_local=2)
    value = float(files["test_frame"].loc[7, "hours"])
    top = round(files["train_frame"]["hours"].max()) + 1  # every value but test row 7's
    with pytest.raises(DatasetError, match=rf"column 'hours' value {value!r} \(row with index label 7 of the "
                                           rf"test frame \(test=\)\) "
                                           rf"lies outside the bin edges \[0, {top}\]"):
        chiralfair.audit(files["pipe"], files["train_frame"], test=files["test_frame"],
                         bins={"hours": [0, 40, top], "age": [0, 30, 50, 200]}, **kw)
    result = chiralfair.audit(files["pipe"], files["train_frame"], test=files["test_frame"],
                              bins={"hours": [-np.inf, 40, np.inf], "age": [0, 30, 50, 200]}, **kw)
    j = result.dataset.domain.names.index("hours")
    assert result.dataset.domain.features[j].labels == {0: "<=40", 1: ">40"}
    hours = files["test_frame"]["hours"].to_numpy()
    np.testing.assert_array_equal(result.dataset.X[result.inputs.test_index, j], (hours > 40).astype(int))


# ------------------------------------------------------------------ a refusal names the file and its own row
def test_a_refusal_about_a_row_names_the_file_and_the_row_in_that_files_numbering(split_files, tmp_path):
    files = split_files
    top = round(files["train_frame"]["hours"].max()) + 1  # every value but test row 7's
    common = ["--model", files["model"], "--trust-model-file", "--label", "y", "--positive-class", ">50K",
              "--protected", "sex", "--bins", f"hours=0:40:{top},age=0:30:50:200"]
    res = invoke("run", "--data", files["train"], "--test", files["test"], *common)
    assert res.exit_code == 2, res.output
    value = float(files["test_frame"].loc[7, "hours"])
    # the file's own numbering: row 7 as read is its 8th data row, on line 9 below the header
    assert f"column 'hours' value {value!r} (data row 8 (line 9) of test file '{files['test']}')" in res.output, \
        res.output
    # a training row: the data file, its own row number
    train = files["train_frame"].copy()
    train.loc[4, "hours"] = 180.0
    bad = tmp_path / "bad_train.csv"
    train.to_csv(bad, index=False)
    res = invoke("run", "--data", bad, "--test", files["test"], *common)
    assert res.exit_code == 2 and f"value 180.0 (data row 5 (line 6) of data file '{bad}')" in res.output, res.output
    # a missing label in the held-out frame, in Python
    import chiralfair

    test = files["test_frame"].copy()
    test.loc[21, "y"] = None
    with pytest.raises(DatasetError, match=r"label column 'y' has a missing value at row with index label 21 of "
                                               r"the test frame"):
        chiralfair.audit(files["pipe"], files["train_frame"], test=test, label="y", positive_class=">50K",
                         protected="sex", bins={"age": [0, 30, 50, 200]})


# ------------------------------------------------------------------ data without rows is said to be so
def test_data_without_rows_is_refused_as_such_at_every_door(split_files, tmp_path):
    import chiralfair

    files = split_files
    kw = dict(label="y", positive_class=">50K", protected="sex")
    empty = files["train_frame"].iloc[:0]
    with pytest.raises(DatasetError, match=r"the data frame \(data=\) has no rows \(columns: sex, race, age, hours, y"):
        chiralfair.audit(files["pipe"], empty, test=files["test_frame"], **kw)
    with pytest.raises(DatasetError, match=r"the test frame \(test=\) has no rows"):
        chiralfair.estimate(files["pipe"], files["train_frame"], test=empty, **kw)
    header = tmp_path / "header.csv"
    empty.to_csv(header, index=False)
    res = invoke("run", "--data", files["train"], "--test", header, "--model", files["model"], "--trust-model-file",
                 "--label", "y", "--positive-class", ">50K", "--protected", "sex")
    assert res.exit_code == 2, res.output
    assert f"test file '{header}' has no rows (a header only: sex, race, age, hours, y)" in res.output, res.output
    # refused with another problem: the file's whole header is named, not the one column read
    res = invoke("run", "--data", header, "--model", files["model"], "--label", "y", "--positive-class", ">50K",
                 "--protected", "sex")
    assert res.exit_code == 2, res.output
    assert f"data file '{header}' has no rows (a header only: sex, race, age, hours, y)" in res.output, res.output


# ------------------------------------------------------------------ retrain --from-run after a run with generator auto
BINS = ("--bins", "age=0:30:50:200,hours=0:35:45:200")


def test_retrain_from_a_default_run_uses_the_generator_auto_picked(split_files, tmp_path):
    files = split_files
    run = tmp_path / "run"
    res = invoke("run", "--data", files["train"], "--test", files["test"], "--model", files["model"],
                 "--trust-model-file", "--label", "y", "--positive-class", ">50K", "--protected", "sex", *BINS,
                 "--max-global", 20, "--max-local", 5, "--out", run)
    assert res.exit_code == 0, res.output
    summary = json.loads((run / "result.json").read_text())
    # a raw-frame pipeline gives probabilities and no gradient: auto is AEQUITAS, and the folder says both
    assert summary["meta"]["config"]["generator"] == "auto"
    assert summary["generator"] == "aequitas" and summary["generator_choice"]["asked"] == "auto"
    out = tmp_path / "fairer"
    res = invoke("retrain", "--from-run", run, "--trust-model-file", "--spread-seeds", 0, "--out", out)
    assert res.exit_code == 0, res.output
    record = json.loads((out / "retrain.json").read_text())
    assert any(note.startswith("generator auto: the run's search ran aequitas") for note in record["notes"])
    before = next(row for row in record["rows"] if row["stage"] == "before")
    assert before["search_n_idis"] > 0  # the fresh search ran (AEQUITAS, as the run)


def test_auto_is_a_valid_generator_name_and_listed(split_files):
    from chiralfair.generators import make_generator
    from chiralfair.pipeline.checks import generator_needs_gradient

    files = split_files
    res = invoke("run", "--data", files["train"], "--model", files["model"], "--trust-model-file", "--label", "y",
                 "--positive-class", ">50K", "--protected", "sex", "--generator", "nope")
    assert res.exit_code == 2 and "unknown generator 'nope'; valid: " in res.output, res.output
    listed = res.output.split("valid: ")[1].split(",")
    assert "auto" in [name.strip() for name in listed]
    assert generator_needs_gradient("auto") is False
    from chiralfair.exceptions import ConfigError

    with pytest.raises(ConfigError, match="generator 'auto' is the one the model under test offers"):
        make_generator("auto", max_global=5, max_local=2)


def test_retrain_given_arrays_searched_with_auto_searches_with_what_auto_stands_for():
    from sklearn.linear_model import LogisticRegression

    from chiralfair.datasets import from_frame
    from chiralfair.generators.names import auto_generator
    from chiralfair.mitigation import retrain
    from chiralfair.models import as_model

    df = raw_frame(n=300, seed=3).drop(columns=["race", "age"])
    data = from_frame(df, label="y", positive_class=">50K", protected="sex", bins={"hours": 6})
    train, test = data.split(random_state=0)
    model = LogisticRegression().fit(data.X[train], data.y[train])
    counting = as_model(model)
    X = data.X[train][:20]
    C = X.copy()
    C[:, 0] = 1 - C[:, 0]
    searched = {"generator": "auto", "seed_strategy": "random", "params": {"max_global": 10, "max_local": 2},
                "random_state": 0}
    result = retrain(model, data, (X, C), train_index=train, searched_with=searched, spread_seeds=0)
    expected = auto_generator(has_gradient=counting.has_gradient, has_proba=counting.has_proba)[0]
    assert result.meta["source"]["generator"] == expected != "auto"
    assert result.meta["source"]["generator_asked"] == "auto"


# ------------------------------------------------------------------ a failed re-run leaves the earlier run as it was
class FlakyPipeline(Pipeline):
    """A fitted pipeline that raises on its ``fail_at``-th call, counted over the class (a model file loaded anew)."""

    calls = 0
    fail_at: int | None = None

    def _count(self):
        cls = type(self)
        cls.calls += 1
        if cls.fail_at is not None and cls.calls >= cls.fail_at:
            raise RuntimeError("the model's server went away")

    def predict(self, X, **params):
        self._count()
        return super().predict(X, **params)

    def predict_proba(self, X, **params):
        self._count()
        return super().predict_proba(X, **params)


def flaky_pipeline(train):
    fitted = fitted_pipeline(train)
    return FlakyPipeline(fitted.steps)


def folder_bytes(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


AUDIT = dict(label="y", positive_class=">50K", protected="sex", bins={"age": [0, 30, 50, 200], "hours": 6},
             max_global=20, max_local=5)


def test_a_rerun_that_fails_mid_search_leaves_the_earlier_run_byte_identical(split_files, tmp_path):
    import chiralfair

    files = split_files
    pipe = flaky_pipeline(files["train_frame"])
    out = tmp_path / "runs" / "mine"
    FlakyPipeline.calls, FlakyPipeline.fail_at = 0, None
    first = chiralfair.audit(pipe, files["train_frame"], test=files["test_frame"], **AUDIT, out=out)
    before = folder_bytes(out)
    assert {"report.html", "report.md", "result.json", "harm_by_group.png"} <= set(before)
    assert any(name.startswith("idis.parquet/part-") for name in before)
    assert len(pd.read_parquet(out / "idis.parquet")) == first.n_idis > 0

    def break_during_search(step):
        if step == "search":  # three calls into the search
            FlakyPipeline.fail_at = FlakyPipeline.calls + 3

    FlakyPipeline.calls, FlakyPipeline.fail_at = 0, None
    # the model's failure, named (ModelCallError: not an input problem) with what the model raised
    with pytest.raises(ModelCallError, match="server went away") as failed:
        chiralfair.audit(pipe, files["train_frame"], test=files["test_frame"], **AUDIT, out=out,
                         on_step=break_during_search)
    assert folder_bytes(out) == before  # every file of the earlier run, byte for byte, and nothing else
    partial = [p for p in out.parent.iterdir() if p != out]
    assert len(partial) == 1 and partial[0].name.startswith("mine.partial-")
    assert json.loads((partial[0] / "result.json").read_text())["partial"] is True
    assert failed.value.__notes__ == [f"the earlier run in '{out}' is untouched; this run's partial output is in "
                                      f"'{partial[0]}'"]
    # a re-run that succeeds replaces the earlier run, and reads its pairs from where they now are
    FlakyPipeline.calls, FlakyPipeline.fail_at = 0, None
    again = chiralfair.audit(pipe, files["train_frame"], test=files["test_frame"], **{**AUDIT, "max_global": 15},
                             out=out)
    summary = json.loads((out / "result.json").read_text())
    assert summary["partial"] is False and summary["meta"]["config"]["max_global"] == 15
    assert len(again.idis()) == again.n_idis == len(pd.read_parquet(out / "idis.parquet"))
    assert sorted(p.name for p in out.parent.iterdir()) == sorted(["mine", partial[0].name])


def test_a_cli_rerun_that_fails_keeps_the_earlier_run_and_says_where_the_partial_output_is(split_files, tmp_path):
    import joblib

    import chiralfair

    files = split_files
    model = tmp_path / "flaky.joblib"
    joblib.dump(flaky_pipeline(files["train_frame"]), model)
    args = ["run", "--data", files["train"], "--test", files["test"], "--model", model, "--trust-model-file",
            "--label", "y", "--positive-class", ">50K", "--protected", "sex", "--bins", "age=0:30:50:200,hours=6",
            "--max-global", 20, "--max-local", 5]
    out = tmp_path / "cli"
    FlakyPipeline.calls, FlakyPipeline.fail_at = 0, None
    res = invoke(*args, "--out", out)
    assert res.exit_code == 0, res.output
    before = folder_bytes(out)
    # where the search starts, counted through the same run in Python (same data, model and random state)
    at_search = {}
    FlakyPipeline.calls = 0
    chiralfair.audit(joblib.load(model), files["train_frame"], test=files["test_frame"], **AUDIT,
                     on_step=lambda step: at_search.setdefault(step, FlakyPipeline.calls))
    FlakyPipeline.calls, FlakyPipeline.fail_at = 0, at_search["search"] + 3
    res = invoke(*args, "--out", out)
    FlakyPipeline.fail_at = None
    assert res.exit_code == 2 and "server went away" in res.output, res.output
    assert folder_bytes(out) == before
    partial = [p for p in tmp_path.iterdir() if p.name.startswith("cli.partial-")]
    assert len(partial) == 1 and (partial[0] / "result.json").is_file()
    assert (f"note: the earlier run in '{out}' is untouched; this run's partial output is in '{partial[0]}'"
            in res.output), res.output
    # refused before its search: nothing written beside the earlier run, nothing to note
    res = invoke(*[("nope" if a == "y" else a) for a in args], "--out", out)
    assert res.exit_code == 2 and "label column 'nope'" in res.output and "note:" not in res.output, res.output
    assert folder_bytes(out) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("cli")) == ["cli", partial[0].name]


def test_a_retrain_rerun_that_fails_mid_search_leaves_the_earlier_retrain_byte_identical(split_files, tmp_path):
    import chiralfair

    files = split_files
    pipe = flaky_pipeline(files["train_frame"])
    out = tmp_path / "fairer"
    kw = dict(AUDIT, test=files["test_frame"], spread_seeds=0, out=out)
    FlakyPipeline.calls, FlakyPipeline.fail_at = 0, None
    chiralfair.retrain(pipe, files["train_frame"], method="paper", **kw)  # a search, written to out/search
    (out / "notes.txt").write_text("mine")  # a file of the user's beside the retrain's
    before = folder_bytes(out)
    assert {"retrain.json", "report.md", "search/report.md", "search/result.json"} <= set(before)

    def break_during_search(step):
        if step == "search":
            FlakyPipeline.fail_at = FlakyPipeline.calls + 3

    with pytest.raises(ModelCallError, match="server went away") as failed:
        chiralfair.retrain(pipe, files["train_frame"], method="paper", on_step=break_during_search, **kw)
    FlakyPipeline.fail_at = None
    assert folder_bytes(out) == before
    partial = [p for p in tmp_path.iterdir() if p.name.startswith("fairer.partial-")]
    assert len(partial) == 1 and (partial[0] / "search" / "result.json").is_file()
    assert failed.value.__notes__[-1] == (f"the earlier retrain in '{out}' is untouched; this retrain's partial "
                                          f"output is in '{partial[0]}'")
    # a re-run that succeeds replaces the retrain's own files (no search this time) and keeps the user's
    chiralfair.retrain(pipe, files["train_frame"], method="counterfactual", **kw)
    names = {p.name for p in out.iterdir()}
    assert "search" not in names and "model-paper.skops" not in names and "model-counterfactual.skops" in names
    assert (out / "notes.txt").read_text() == "mine"
    assert json.loads((out / "retrain.json").read_text())["methods"] == ["counterfactual"]


def test_an_empty_open_outer_bin_is_fed_a_value_inside_it():
    from chiralfair.datasets import from_frame

    df = pd.DataFrame({"sex": ["f", "m"] * 10, "hours": np.linspace(11.5, 19.5, 20), "y": [0, 1] * 10})
    edges = [-np.inf, 10.0, 20.0, np.inf]
    data = from_frame(df, label="y", positive_class=1, protected="sex", bins={"hours": edges})
    j = data.domain.names.index("hours")
    codes = np.zeros((3, 2), dtype=np.int64)
    codes[:, j] = [0, 1, 2]
    fed = data.to_frame(codes)["hours"].to_numpy()
    # each representative is a number in its own bin (pandas.cut's intervals), the empty outer ones included
    assert np.isfinite(fed).all()
    np.testing.assert_array_equal(pd.cut(fed, bins=edges, include_lowest=True, labels=False), [0, 1, 2])
    assert fed[1] == np.sort(df["hours"])[9]  # the lower median of the rows in the middle bin
