"""What the command line says and reads where a fresh user tripped: one-hot protected attributes, budgets, labels.

Each figure is recounted here through the user's own model object with plain numpy and pandas.
"""

import json
import tomllib
import warnings

import numpy as np
import pandas as pd
import pytest
import realdata
from typer.testing import CliRunner

from chiralfair.cli import app
from chiralfair.exceptions import ConfigError, DatasetError, DataWarning
from chiralfair.pipeline import protected_list

runner = CliRunner()
RACE = ["race_a", "race_b", "race_c"]


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def one_hot_frame(n=600, seed=0):
    """A one-hot race over three columns, a 0/1 sex, two numbers; the label depends on race_a and hours."""
    rng = np.random.default_rng(seed)
    race = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    df = pd.DataFrame({c: (race == c[-1]).astype(int) for c in RACE})
    df["sex"] = rng.integers(0, 2, n)
    df["hours"] = rng.integers(20, 61, n)
    df["years"] = rng.integers(0, 30, n)
    score = df["hours"] + 8 * df["race_a"] - 4 * df["race_c"] + 0.3 * df["years"] + rng.normal(0, 4, n)
    df["y"] = (score > 47).astype(int)
    return df


@pytest.fixture(scope="module")
def one_hot_files(tmp_path_factory):
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression

    tmp = tmp_path_factory.mktemp("onehot")
    train, test = one_hot_frame(600, 0), one_hot_frame(400, 1)
    model = LogisticRegression(max_iter=2000).fit(train.drop(columns="y"), train["y"])
    train.to_csv(tmp / "train.csv", index=False)
    test.to_csv(tmp / "test.csv", index=False)
    sio.dump(model, tmp / "lr.skops")
    return tmp, model, train, test


def recount_one_hot(model, test: pd.DataFrame, group: list[str]) -> int:
    """People whose label changes when the one-hot group is moved to another valid row (each column set alone)."""
    X = test.drop(columns="y")
    own = model.predict(X)
    affected = np.zeros(len(X), bool)
    for c in group:
        moved = X.copy()
        moved[group] = 0
        moved[c] = 1
        affected |= (X[c].to_numpy() == 0) & (model.predict(moved) != own)
    return int(affected.sum())


def test_plus_joins_the_columns_of_one_attribute():
    assert protected_list("race_a+race_b+race_c,sex") == (("race_a", "race_b", "race_c"), "sex")
    assert protected_list(" race_a + race_b ") == (("race_a", "race_b"),)
    assert protected_list(["a+b"]) == ("a+b",)  # a list names columns as they are
    for bad in ("race_a+", "+race_a", "race_a++race_b"):
        with pytest.raises(ConfigError, match=r"'\+' joins the columns of one attribute"):
            protected_list(bad)


def test_cli_one_hot_attribute_gives_the_python_verdict_and_the_recount(one_hot_files):
    from chiralfair import estimate

    tmp, model, train, test = one_hot_files
    expected = recount_one_hot(model, test, RACE)
    assert 0 < expected < len(test)
    args = ("estimate", "--data", tmp / "train.csv", "--test", tmp / "test.csv", "--model", tmp / "lr.skops",
            "--label", "y", "--positive-class", 1, "--json")
    res = invoke(*args, "--protected", "race_a+race_b+race_c")
    assert res.exit_code == 0, res.output
    cli = json.loads(res.output[res.output.index("{"):])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        py = estimate(model, train, test=test, label="y", positive_class=1, protected=[tuple(RACE)])
    assert py.n_affected == expected
    assert cli["n_affected"] == expected and cli["n_individuals"] == len(test)
    # listed one by one: another (wrong) count, and a warning showing the option that declares them as one
    with warnings.catch_warnings():
        warnings.simplefilter("always", DataWarning)
        res = invoke(*args, "--protected", "sex,race_a,race_b,race_c")
    assert res.exit_code == 0, res.output
    message = "\n".join(line for line in res.stderr.splitlines() if "look like one one-hot attribute" in line)
    assert json.loads(res.stdout)["n_affected"] != expected  # the impossible rows count
    assert "--protected 'sex,race_a+race_b+race_c'" in message
    assert 'protected = [["race_a", "race_b", "race_c"]]' in message


def test_schema_infer_writes_one_attribute_and_a_run_reads_it(one_hot_files):
    tmp, model, _, test = one_hot_files
    res = invoke("schema", "infer", tmp / "train.csv", "--label", "y", "--protected", "race_a+race_b+race_c,sex")
    assert res.exit_code == 0, res.output
    schema = tomllib.loads(res.output)
    assert schema["protected"] == [RACE, "sex"]
    (tmp / "schema.toml").write_text(res.output)
    res = invoke("estimate", "--data", tmp / "train.csv", "--test", tmp / "test.csv", "--model", tmp / "lr.skops",
                 "--schema", tmp / "schema.toml", "--positive-class", 1, "--json")
    assert res.exit_code == 0, res.output
    X = test.drop(columns="y")
    own = model.predict(X)
    affected = np.zeros(len(X), bool)
    for c in RACE:  # every combination of the two attributes: a race row and a sex value
        for s in (0, 1):
            moved = X.copy()
            moved[RACE] = 0
            moved[c] = 1
            moved["sex"] = s
            affected |= model.predict(moved) != own
    assert json.loads(res.output[res.output.index("{"):])["n_affected"] == int(affected.sum())


def test_a_joined_spelling_that_is_also_a_column_is_refused(one_hot_files):
    from chiralfair.datasets import from_frame

    _, _, train, _ = one_hot_files
    both = train.assign(**{"race_a+race_b": 0})
    with pytest.raises(DatasetError, match=r"ambiguous.*protected = \[\"race_a\+race_b\"\].*"
                                           r"\[\[\"race_a\", \"race_b\"\]\]"):
        from_frame(both, label="y", positive_class=1, protected=[("race_a", "race_b")])
    one = train.rename(columns={"race_a": "race+a"})
    with pytest.raises(DatasetError, match=r"column 'race\+a' holds '\+'.*protected = \[\"race\+a\"\]"):
        from_frame(one, label="y", positive_class=1, protected=[("race", "a")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        data = from_frame(one, label="y", positive_class=1, protected=["race+a"])
    assert list(data.domain.protected_names) == ["race+a"]


def test_a_sampled_check_names_each_interval_it_prints(one_hot_files):
    from scipy.stats import beta

    tmp, model, _, test = one_hot_files
    res = invoke("check", "--data", tmp / "train.csv", "--test", tmp / "test.csv", "--model", tmp / "lr.skops",
                 "--label", "y", "--positive-class", 1, "--protected", "race_a+race_b+race_c", "--reading", "rows",
                 "--max-share", 0.05, "--max-queries", 600)
    line = res.output.splitlines()[0]
    n = int(line.split(" individuals sampled")[0].rsplit("(", 1)[1].replace(",", ""))
    X = test.drop(columns="y")
    assert n < len(X)  # sampled: the budget did not cover every person

    def clopper_pearson(k, n, level):
        a = 1 - level
        return (beta.ppf(a / 2, k, n - k + 1) if k else 0.0), (beta.ppf(1 - a / 2, k + 1, n - k) if k < n else 1.0)

    share = float(line.split("share affected ")[1].split("%")[0]) / 100
    k = round(share * n)
    first_look = 1 - 0.05 * 6 / np.pi ** 2
    decided, once = clopper_pearson(k, n, first_look), clopper_pearson(k, n, 0.95)
    shown = lambda lo_hi: f"[{lo_hi[0]:.2%}, {lo_hi[1]:.2%}]"  # noqa: E731
    assert f"share affected {k / n:.2%} {shown(decided)}" in line
    assert (f"{first_look:.2%} Clopper-Pearson (the level of look 1 of a sequential decision, so that 95% holds over "
            "all its looks); the gate decided on that interval") in line
    assert f"The same sample read once, as estimate reads it: {shown(once)}, 95% Clopper-Pearson" in line


GERMAN = ["checking", "duration", "history", "purpose", "amount", "savings", "employment", "installment", "personal",
          "debtors", "residence", "property", "age", "plans", "housing", "credits", "job", "dependents", "telephone",
          "foreign", "credit"]


def test_german_labels_are_named_by_the_credit_column_not_read_as_codes(tmp_path):
    import skops.io as sio
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    raw = pd.read_csv(realdata.real_data_home_or_skip() / "german" / "raw" / "german.data", sep=" ", names=GERMAN)
    train, test = raw.iloc[:600].reset_index(drop=True), raw.iloc[600:].reset_index(drop=True)
    X = train.drop(columns="credit")
    text = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(handle_unknown="ignore"), text),
                                                 remainder=StandardScaler()),
                         LogisticRegression(max_iter=1000)).fit(X, train["credit"])
    train.to_csv(tmp_path / "train.csv", index=False)
    test.to_csv(tmp_path / "test.csv", index=False)
    sio.dump(pipe, tmp_path / "pipe.skops")
    # credit 1 is good credit (favourable), 2 bad; positive class 2 makes the favourable outcome label 0
    res = invoke("estimate", "--data", tmp_path / "train.csv", "--test", tmp_path / "test.csv", "--model",
                 tmp_path / "pipe.skops", "--trust-model-file", "--label", "credit", "--positive-class", 2,
                 "--favourable", 1, "--protected", "personal")
    assert res.exit_code == 0, res.output
    assert "Who is harmed (favourable label 0 (credit = 1))" in res.output and "label 0 (1)" not in res.output
    # harmed: the model's bad credit (2) for the person while a counterpart gets good credit (1), recounted
    Xt = test.drop(columns="credit")
    own = pipe.predict(Xt)
    gets_good = np.zeros(len(Xt), bool)
    for value in sorted(train["personal"].unique()):
        gets_good |= (Xt["personal"].to_numpy() != value) & (pipe.predict(Xt.assign(personal=value)) == 1)
    harmed = int(((own == 2) & gets_good).sum())
    assert 0 < harmed
    line = next(row for row in res.output.splitlines() if "most harmed group" in row)
    per_group = [int(row.split("(")[1].split(")")[0].replace(",", "")) for row in res.output.splitlines()
                 if row.startswith("  personal=")]
    assert sum(per_group) == harmed, line


def test_a_column_whose_quantile_bins_collapse_to_one_is_named_with_the_bins_that_fix_it():
    from chiralfair.cli.console import parse_bins
    from chiralfair.datasets import from_frame

    rng = np.random.default_rng(0)
    n = 500
    gain = np.where(rng.random(n) < 0.92, 0.0, rng.uniform(100, 9000, n).round(1))
    df = pd.DataFrame({"sex": rng.choice(["f", "m"], n), "gain": gain, "hours": rng.normal(40, 9, n).round(1)})
    df["y"] = (df["gain"] > 0) | (df["hours"] > 45)
    with pytest.warns(DataWarning, match=r"column 'gain': its 10 quantile bins collapse to 1 \(\d+% of its values "
                                         r"are 0\), so the search cannot change it") as caught:
        data = from_frame(df, label="y", positive_class=True, protected="sex")
    assert [str(w.message) for w in caught if "collapse" in str(w.message) and "'hours'" in str(w.message)] == []
    j = list(data.domain.names).index("gain")
    assert data.domain.features[j].lo == data.domain.features[j].hi  # one bin: nothing for the search to move
    message = next(str(w.message) for w in caught if "collapse" in str(w.message))
    assert "--bins gain=10" in message
    option = message.split("(--bins ")[-1].rstrip(")")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        fixed = from_frame(df, label="y", positive_class=True, protected="sex", bins=parse_bins(option))
    codes = fixed.X[:, j]
    assert (codes[gain == 0] == codes[gain == 0][0]).all()  # the zeros in a bin of their own
    assert not np.isin(codes[gain > 0], codes[gain == 0]).any() and np.unique(codes).size == 3


def test_an_unused_category_of_a_protected_dtype_is_a_counterpart_value_and_said():
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OrdinalEncoder

    from chiralfair import estimate

    sexes = pd.CategoricalDtype(["Female", "Male", "Nonbinary"])

    def frame(n, seed):
        r = np.random.default_rng(seed)
        df = pd.DataFrame({"sex": pd.Series(r.choice(["Female", "Male"], n)).astype(sexes),
                           "hours": r.integers(20, 61, n)})
        df["y"] = (df["hours"] + 6 * (df["sex"] == "Male") + r.normal(0, 3, n) > 43).astype(int)
        return df

    train, test = frame(600, 0), frame(300, 1)
    assert (train["sex"] == "Nonbinary").sum() == 0 == (test["sex"] == "Nonbinary").sum()
    # the model's encoder knows the dtype's three categories (Nonbinary: code 2, beyond Male)
    pipe = make_pipeline(make_column_transformer((OrdinalEncoder(categories=[list(sexes.categories)]), ["sex"]),
                                                 remainder="passthrough"),
                         LogisticRegression(max_iter=2000)).fit(train.drop(columns="y"), train["y"])
    with pytest.warns(DataWarning, match=r"protected attribute 'sex': its category dtype declares 'Nonbinary', "
                                         r"which no row holds.*remove_unused_categories"):
        v = estimate(pipe, train, test=test, label="y", positive_class=1, protected="sex")
    X = test.drop(columns="y")
    own = pipe.predict(X)
    affected = {}
    for values in (["Female", "Male", "Nonbinary"], ["Female", "Male"]):
        changed = np.zeros(len(X), bool)
        for value in values:
            changed |= pipe.predict(X.assign(sex=pd.Series(value, index=X.index).astype(sexes))) != own
        affected[len(values)] = int(changed.sum())
    assert affected[3] > affected[2]  # Nonbinary counterparts change labels the two others do not
    assert v.n_affected == affected[3] and v.n_individuals == len(X)
    # without the unused category, the values the rows hold only, and no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        kept = estimate(pipe, train.assign(sex=train["sex"].cat.remove_unused_categories()),
                        test=test.assign(sex=test["sex"].cat.remove_unused_categories()), label="y",
                        positive_class=1, protected="sex")
    assert kept.n_affected == affected[2]


def test_an_xgboost_model_on_category_columns_read_from_a_csv_is_told_how_to_pass_the_dtypes(tmp_path):
    xgb = pytest.importorskip("xgboost")
    import joblib

    rng = np.random.default_rng(0)

    def frame(n):
        df = pd.DataFrame({"sex": rng.choice(["f", "m"], n), "job": rng.choice(["a", "b", "c"], n),
                           "hours": rng.integers(20, 61, n)})
        df["y"] = ((df["hours"] + 5 * (df["sex"] == "m") + 4 * (df["job"] == "c")) > 45).astype(int)
        return df

    train, test = frame(400), frame(200)
    as_category = {c: pd.CategoricalDtype(sorted(train[c].unique())) for c in ("sex", "job")}
    model = xgb.XGBClassifier(n_estimators=20, max_depth=3, enable_categorical=True, tree_method="hist")
    model.fit(train.drop(columns="y").astype(as_category), train["y"])
    joblib.dump(model, tmp_path / "xgb.joblib")
    train.to_csv(tmp_path / "train.csv", index=False)
    test.to_csv(tmp_path / "test.csv", index=False)
    args = ("estimate", "--data", tmp_path / "train.csv", "--test", tmp_path / "test.csv", "--model",
            tmp_path / "xgb.joblib", "--trust-model-file", "--positive-class", 1)
    res = invoke(*args, "--label", "y", "--protected", "sex")
    assert res.exit_code != 0
    assert "is an XGBoost model fitted on pandas category columns, and 'sex', 'job' reach it as" in res.output
    assert 'type = \\"category\\"' not in res.output and 'type = "category"' in res.output
    assert "Parquet" in res.output and "Model columns" not in res.output
    # the fix the message gives: a schema declaring the dtype
    res = invoke("schema", "infer", tmp_path / "train.csv", "--label", "y", "--protected", "sex")
    (tmp_path / "schema.toml").write_text(res.output.replace('type = "str"', 'type = "category"')
                                          .replace('type = "object"', 'type = "category"'))
    res = invoke(*args, "--schema", tmp_path / "schema.toml", "--json")
    assert res.exit_code == 0, res.output
    X = test.drop(columns="y").astype(as_category)
    own = model.predict(X)
    flipped = X.assign(sex=X["sex"].map({"f": "m", "m": "f"}).astype(as_category["sex"]))
    assert json.loads(res.output[res.output.index("{"):])["n_affected"] == int((model.predict(flipped) != own).sum())


def test_a_joined_attribute_on_a_benchmark_is_refused_with_the_comma_spelling():
    res = invoke("estimate", "--dataset", "census", "--protected", "sex+race", "--model", "lr")
    assert res.exit_code != 0
    assert "'sex+race' joins columns of census into one attribute" in res.output and "(e.g. sex,race)" in res.output
