"""``chiralfair run --data FILE --model FILE`` and ``chiralfair schema infer``: the path and every refusal."""

import json
import subprocess
import sys
import tomllib
import warnings

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from chiralfair.cli import app
from chiralfair.cli.console import parse_bins
from chiralfair.exceptions import ConfigError, DataWarning

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def raw_frame(n=300, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"sex": rng.choice(["f", "m"], n), "race": rng.choice(["a", "b", "c", None], n),
                       "age": rng.integers(18, 80, n).astype(float), "hours": rng.normal(40, 10, n).round(2)})
    df.loc[rng.random(n) < 0.1, "age"] = np.nan
    df["y"] = np.where(((df["sex"] == "m") & (df["hours"] > 38)) | (df["hours"] > 50), ">50K", "<=50K")
    return df


def fitted_pipeline(df):
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline, make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    pre = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), ["sex", "race"]),
                             ("num", make_pipeline(SimpleImputer(), StandardScaler()), ["age", "hours"])])
    return Pipeline([("pre", pre), ("lr", LogisticRegression())]).fit(df.drop(columns="y"), df["y"])


@pytest.fixture
def files(tmp_path):
    import skops.io as sio

    df = raw_frame()
    csv = tmp_path / "people.csv"
    df.to_csv(csv, index=False)
    model = tmp_path / "pipe.skops"
    sio.dump(fitted_pipeline(df), model)
    return csv, model


# skops lists numpy.dtype (stored by OneHotEncoder) as untrusted: a reviewed file is loaded with --trust-model-file.
BASE = ("--label", "y", "--positive-class", ">50K", "--protected", "sex", "--bins", "age=0:30:50:90,hours=10",
        "--trust-model-file")


@pytest.mark.slow
def test_cli_data_path_with_iandd_writes_the_run(files, tmp_path):
    csv, model = files
    out = tmp_path / "run"
    res = invoke("run", "--data", csv, "--model", model, *BASE, "--max-global", 30, "--max-local", 10, "--out", out)
    assert res.exit_code == 0, res.output
    assert "iandd seeds" in res.output and "n_idis" in res.output
    summary = json.loads((out / "result.json").read_text())
    assert summary["n_idis"] > 0 and summary["seeds"]["strategy"] == "iandd"
    assert summary["meta"]["config"]["model"] == "pipe.skops"
    pairs = pd.read_parquet(out / "idis.parquet")
    assert len(pairs) == summary["n_idis"]


def test_cli_data_path_json_with_cluster_seeds(files):
    csv, model = files
    res = invoke("run", "--data", csv, "--model", model, *BASE, "--seeds", "cluster", "--max-global", 20,
                 "--max-local", 5, "--json")
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["meta"]["protected"] == ["sex"] and summary["n_idis"] > 0


def test_schema_infer_then_run_with_schema(files, tmp_path):
    csv, model = files
    res = invoke("schema", "infer", csv, "--label", "y", "--protected", "sex", "--positive-class", ">50K",
                 "--bins", "age=0:30:50:90")
    assert res.exit_code == 0, res.output
    doc = tomllib.loads(res.stdout)
    assert doc["label"] == "y" and doc["positive_class"] == ">50K" and doc["protected"] == ["sex"]
    assert doc["columns"]["sex"]["categories"] == ["f", "m"] and doc["columns"]["age"]["bins"] == [0, 30, 50, 90]
    assert len(doc["columns"]["hours"]["bins"]) == 11 and doc["columns"]["race"]["missing"] > 0
    schema = tmp_path / "schema.toml"
    schema.write_text(res.stdout)
    run = invoke("run", "--data", csv, "--model", model, "--schema", schema, "--seeds", "cluster", "--trust-model-file",
                 "--max-global", 10, "--max-local", 2, "--json")
    assert run.exit_code == 0, run.output
    assert json.loads(run.stdout)["meta"]["protected"] == ["sex"]


def test_schema_with_unknown_category_refused(files, tmp_path):
    csv, model = files
    schema = tmp_path / "schema.toml"
    schema.write_text('label = "y"\npositive_class = ">50K"\nprotected = ["sex"]\n[columns.sex]\n'
                      'categories = ["m"]\n[columns.hours]\nbins = 10\n[columns.age]\nbins = 3\n')
    res = invoke("run", "--data", csv, "--model", model, "--schema", schema, "--trust-model-file")
    assert res.exit_code == 2 and "column 'sex'" in res.output and "['f']" in res.output


@pytest.mark.parametrize(("args", "message"), [
    (("--dataset", "census"), "--data and --dataset are two forms of run"),
    (("--protected", "sex"), "command line: --label COLUMN"),
    (("--label", "y"), "command line: --protected A[,B]"),
    (("--label", "y", "--protected", "sex"), "command line: --model FILE"),
    (("--label", "nope", "--protected", "sex", "--model", "MODEL"), "label column 'nope' is not in the data"),
    (("--label", "y", "--protected", "sex", "--positive-class", "yes", "--model", "MODEL"),
     "--positive-class 'yes' does not occur in label column 'y'"),
    (("--label", "y", "--protected", "sex", "--bins", "age", "--model", "MODEL"), "--bins item 'age'"),
])
def test_data_path_refusals(files, args, message):
    csv, model = files
    args = [model if a == "MODEL" else a for a in args]
    res = invoke("run", "--data", csv, *args)
    assert res.exit_code == 2 and message in res.output, res.output
    assert "Traceback" not in res.output


def test_refusals_of_files(files, tmp_path):
    csv, model = files
    res = invoke("run", "--data", csv, "--model", model, *BASE[:-1])
    assert res.exit_code == 2 and "outside skops' trusted set: numpy.dtype" in res.output
    res = invoke("run", "--data", tmp_path / "missing.csv", "--model", model, *BASE)
    assert res.exit_code == 2 and "does not exist" in res.output
    xlsx = tmp_path / "data.xlsx"
    xlsx.write_bytes(b"x")
    res = invoke("run", "--data", xlsx, "--model", model, *BASE)
    assert res.exit_code == 2 and "unsupported suffix '.xlsx'" in res.output
    pkl = tmp_path / "model.pkl"
    pkl.write_bytes(b"x")
    res = invoke("run", "--data", csv, "--model", pkl, *BASE[:-1])
    assert res.exit_code == 2 and "pickle: loading it runs whatever code" in res.output
    res = invoke("run", "--data", csv, "--model", pkl, *BASE)
    assert res.exit_code == 2 and "cannot be unpickled" in res.output
    res = invoke("run", "--data", csv, "--model", "lr", *BASE)
    assert res.exit_code == 2 and "model file 'lr' does not exist" in res.output


def test_data_flags_without_data_refused():
    res = invoke("run", "--dataset", "german", "--label", "y", "--trust-model-file")
    assert res.exit_code == 2 and "--label, --trust-model-file apply to your own data" in res.output


def test_model_on_other_columns_named_in_the_cli(files, tmp_path):
    csv, model = files
    narrow = tmp_path / "narrow.csv"
    pd.read_csv(csv).drop(columns="hours").to_csv(narrow, index=False)
    res = invoke("run", "--data", narrow, "--model", model, "--label", "y", "--positive-class", ">50K",
                 "--protected", "sex", "--bins", "age=3", "--seeds", "cluster", "--trust-model-file",
                 "--out", tmp_path / "o")
    assert res.exit_code == 2 and "Model columns: sex, race, age, hours; data columns: sex, race, age" in res.output
    assert not (tmp_path / "o").exists()


def test_parse_bins():
    assert parse_bins("age=0:25:45:65:120, hours=10") == {"age": [0, 25, 45, 65, 120], "hours": 10}
    with pytest.raises(ConfigError, match="'=3'"):
        parse_bins("=3")


def test_python_dash_m_runs_the_cli():
    res = subprocess.run([sys.executable, "-m", "chiralfair", "--version"], capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.startswith("chiralfair ")


def test_schema_infer_bins_an_integer_column_with_missing_values():
    from chiralfair.datasets.schema import infer_schema

    frame = pd.DataFrame({"age": [20.0, 35.0, None, 61.0] * 5, "y": ["a", "b"] * 10})
    doc = tomllib.loads(infer_schema(frame, label="y", positive_class="b", protected=[], n_bins=4))
    # the outer bins open-ended: a later file's value beyond 20..61 falls in them
    assert doc["columns"]["age"]["missing"] == 5 and doc["columns"]["age"]["bins"] == [-np.inf, 27.5, 48.0, np.inf]


def test_couple_and_constraint_reach_the_own_data_run_from_flags_and_schema(files, tmp_path):
    csv, model = files
    # the rows that break the rule are real: the CLI says so in one line on standard error
    broken = ("warning: DataWarning: constraint 'sex=f excludes race=c' is broken by 37 of the 300 data rows: they "
              "exist, so the rule may be too strict; seeds drawn from them are repaired")
    with warnings.catch_warnings():
        warnings.simplefilter("always", DataWarning)
        res = invoke("run", "--data", csv, "--model", model, *BASE, "--seeds", "cluster", "--max-global", 20,
                     "--max-local", 5, "--json", "--couple", "sex:race=a/b", "--constraint", "sex=f excludes race=c")
    assert res.exit_code == 0, res.output
    assert [line for line in res.stderr.splitlines() if line.startswith("warning:")] == [broken]
    counterparts = json.loads(res.stdout)["counterparts"]
    assert counterparts["couplings"] == ["sex -> race: a <-> b"]
    assert counterparts["constraints"] == ["sex=f excludes race=c"]
    schema = tmp_path / "schema.toml"
    schema.write_text('label = "y"\npositive_class = ">50K"\nprotected = ["sex"]\n'
                      'constraints = ["sex=f excludes race=c"]\n[couple.sex]\nrace = {a = "b", b = "a"}\n'
                      '[columns.age]\nbins = [0, 30, 50, 90]\n[columns.hours]\nbins = 10\n')
    with warnings.catch_warnings():
        warnings.simplefilter("always", DataWarning)
        run = invoke("run", "--data", csv, "--model", model, "--schema", schema, "--seeds", "cluster",
                     "--trust-model-file", "--max-global", 10, "--max-local", 2, "--json")
    assert run.exit_code == 0, run.output
    assert [line for line in run.stderr.splitlines() if line.startswith("warning:")] == [broken]
    assert json.loads(run.stdout)["counterparts"]["couplings"] == ["sex -> race: a <-> b"]


def test_schema_infer_writes_quantile_bins():
    from chiralfair.datasets.schema import infer_schema

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"fare": rng.lognormal(3, 1, 1000), "y": rng.choice(["a", "b"], 1000)})
    edges = tomllib.loads(infer_schema(frame, label="y", positive_class="b", protected=[]))["columns"]["fare"]["bins"]
    counts = np.histogram(frame["fare"], bins=edges)[0]
    assert len(edges) == 11 and counts.min() >= 90  # deciles: about a tenth of the rows each, not equal widths


def test_schema_keys_and_types_are_checked_all_at_once(files, tmp_path):
    csv, model = files
    schema = tmp_path / "schema.toml"
    # 'positive_clas' misspelt; 'bins' and 'protected' written after [columns.age] belong to that table in TOML;
    # a type pandas does not know
    schema.write_text('label = "y"\npositive_clas = ">50K"\n[columns.sex]\ntype = "catgory"\n'
                      '[columns.age]\nbins = 3\nprotected = ["sex"]\n')
    res = invoke("run", "--data", csv, "--model", model, "--schema", schema, "--trust-model-file")
    assert res.exit_code == 2, res.output
    for part in ("unknown key 'positive_clas'", "[columns.\"age\"] has unknown key 'protected'",
                 "type 'catgory' is not a pandas dtype"):
        assert part in res.output, res.output
    assert "Traceback" not in res.output


def test_schema_types_are_honoured():
    from chiralfair.datasets.schema import typed_frames

    train = pd.DataFrame({"g": ["b", "a"], "n": [1, 2]})
    test = pd.DataFrame({"g": ["c", "a"], "n": [3, 4]})
    typed = typed_frames([train, test], {"g": "category", "n": "float64"}, {})
    assert [list(f["g"].cat.categories) for f in typed] == [["a", "b", "c"]] * 2  # one set, in both frames
    assert typed[0]["n"].dtype == np.float64
    ordered = typed_frames([train], {"g": "category"}, {"g": ["b", "a"]})[0]
    assert list(ordered["g"].cat.categories) == ["b", "a"]
    with pytest.raises(Exception, match="column 'n' cannot be read as the schema's type 'bool'|cannot be read"):
        typed_frames([pd.DataFrame({"n": ["x", "y"]})], {"n": "int64"}, {})


def test_every_problem_before_the_search_comes_in_one_message_in_the_command_lines_syntax(files, tmp_path):
    csv, model = files
    # an untrusted skops file and a misspelt protected attribute: both named before the data is read
    res = invoke("run", "--data", csv, "--model", model, "--label", "y", "--positive-class", ">50K", "--protected",
                 "sexx")
    assert res.exit_code == 2, res.output
    assert "2 problems, to fix together" in res.output and "--trust-model-file" in res.output
    assert "in Python" not in res.output and "protected attribute 'sexx' is not in the data" in res.output
    # with the data read: a bins column that does not exist and a many-valued numeric protected attribute
    df = raw_frame().assign(age=lambda d: d["age"].fillna(30).astype(int))
    df.to_csv(tmp_path / "ages.csv", index=False)
    res = invoke("run", "--data", tmp_path / "ages.csv", "--model", model, "--label", "y", "--positive-class", ">50K",
                 "--protected", "sex,age", "--bins", "hour=10", "--trust-model-file")
    assert res.exit_code == 2, res.output
    assert "2 problems" in res.output and "['hour']" in res.output
    assert "protected attribute 'age' is a number" in res.output
    assert "--bins age=" in res.output


def test_a_python_fix_is_written_as_a_flag_on_the_command_line():
    from chiralfair.cli.console import command_line_syntax

    assert command_line_syntax("pass bins={'fare': 10} or bins={'age': [0, 30, 60]}") == (
        "pass --bins fare=10 or --bins age=0:30:60")
    assert command_line_syntax("pass --trust-model-file (in Python: trust_model_file=True)") == (
        "pass --trust-model-file")


@pytest.mark.parametrize("command", ["run", "estimate", "check", "schema infer"])
def test_a_data_file_with_a_header_and_no_rows_is_refused_by_every_command(files, tmp_path, command):
    csv, model = files
    header = tmp_path / "header.csv"
    raw_frame().iloc[:0].to_csv(header, index=False)
    if command == "schema infer":
        args = ["schema", "infer", header, "--label", "y", "--protected", "sex"]
    else:
        args = [command, "--data", header, "--model", model, *BASE] + (["--max-share", "0.1"] if command == "check"
                                                                        else [])
    res = invoke(*args)
    assert res.exit_code not in (0, 1), res.output
    assert f"data file '{header}' has no rows (a header only: sex, race, age, hours, y)" in res.output, res.output
    assert "Traceback" not in res.output and "categories = []" not in res.output


def test_infer_schema_refuses_a_frame_without_rows():
    from chiralfair.datasets.schema import infer_schema
    from chiralfair.exceptions import DatasetError

    with pytest.raises(DatasetError, match="the frame has no rows"):
        infer_schema(raw_frame().iloc[:0], label="y", positive_class=">50K", protected=["sex"])


def test_a_schema_unknown_key_lists_the_toml_keys_and_a_column_table_the_data_lacks_is_refused(files, tmp_path):
    csv, model = files
    misspelt = tmp_path / "misspelt.toml"
    misspelt.write_text('label = "y"\npostive_class = ">50K"\nprotected = ["sex"]\n')
    res = invoke("run", "--data", csv, "--model", model, "--schema", misspelt, "--trust-model-file")
    assert res.exit_code == 2, res.output
    keys = "(keys: 'label', 'positive_class', 'protected', 'columns', 'couple', 'constraints')"
    assert f"unknown key 'postive_class' {keys}" in " ".join(res.output.split()), res.output
    agee = tmp_path / "agee.toml"
    agee.write_text('label = "y"\npositive_class = ">50K"\nprotected = ["sex"]\n[columns."agee"]\ntype = "int64"\n'
                    '[columns."hours"]\nbins = 3\n')
    res = invoke("estimate", "--data", csv, "--model", model, "--schema", agee, "--trust-model-file")
    assert res.exit_code == 2, res.output
    assert ('describes column the data does not have: [columns."agee"]; the data\'s columns: sex, race, age, hours, '
            'y') in " ".join(res.output.split()), res.output
