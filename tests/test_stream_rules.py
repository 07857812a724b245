"""A streamed verdict answers as the in-memory one, rules ("who is harmed") included, whatever files hold the rows;
and a refusal about a row of a streamed file names the file and the row within it."""

import json
import re

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

import chiralfair
from chiralfair.exceptions import DatasetError

KW = {"label": "y", "positive_class": "yes", "protected": "sex", "favourable": "yes"}
COLUMNS = ["sex", "race", "hours", "years"]
# Fields of the answer that say how it was computed, not what it is: the streamed verdict checks every row (exact,
# margin 0) and says what it read, and how long it took, in its notes and meta.
HOW = {"notes", "meta", "margin", "seconds"}


def people_frame(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    people = pd.DataFrame({"sex": rng.choice(["f", "m"], n), "race": rng.choice(["a", "b", "c"], n),
                           "hours": rng.integers(4, 12, n) * 5, "years": rng.integers(0, 10, n)})
    people["y"] = np.where(people["hours"] + 8 * (people["sex"] == "m") + 2 * people["years"]
                           + rng.normal(0, 6, n) > 55, "yes", "no")
    return people


@pytest.fixture(scope="module")
def fitted():
    people = people_frame(1500)
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["sex", "race"]), remainder="passthrough"),
                         LogisticRegression(max_iter=1000)).fit(people[COLUMNS], people["y"])
    return people.iloc[:900].reset_index(drop=True), people.iloc[900:].reset_index(drop=True), pipe


def write(frame: pd.DataFrame, kind: str, folder, name: str):
    """``frame`` as a CSV file, a Parquet file, or a Parquet folder of two files; the path."""
    if kind == "csv":
        frame.to_csv(folder / f"{name}.csv", index=False)
        return folder / f"{name}.csv"
    if kind == "parquet":
        frame.to_parquet(folder / f"{name}.parquet")
        return folder / f"{name}.parquet"
    (folder / name).mkdir()
    half = len(frame) // 2
    frame.iloc[:half].to_parquet(folder / name / "a.parquet")
    frame.iloc[half:].to_parquet(folder / name / "b.parquet")
    return folder / name


def affected_by_recount(pipe, people: pd.DataFrame) -> np.ndarray:
    """Whether each person's predicted label changes with their sex, through the user's pipeline, plain pandas."""
    X = people[COLUMNS]
    own = pipe.predict(X)
    affected = np.zeros(len(X), dtype=bool)
    for sex in ("f", "m"):
        affected |= pipe.predict(X.assign(sex=sex)) != own
    return affected


def rule_mask(rule: str, people: pd.DataFrame) -> pd.Series:
    """The people a rule's text describes, read in pandas (categories by name, integer columns by value)."""
    mask = pd.Series(True, index=people.index)
    for part in rule.split(" and "):
        if (m := re.fullmatch(r"(\w+) (not in|in) \{(.*)\}", part)):
            inside = people[m[1]].astype(str).isin(m[3].split(", "))
            mask &= ~inside if m[2] == "not in" else inside
        elif (m := re.fullmatch(r"(\w+) in (\d+) \.\. (\d+)", part)):
            mask &= people[m[1]].between(int(m[2]), int(m[3]))
        elif (m := re.fullmatch(r"(\w+) (<=|>=|=) (\d+)", part)):
            value = int(m[3])
            column = people[m[1]]
            mask &= column <= value if m[2] == "<=" else column >= value if m[2] == ">=" else column == value
        else:
            raise AssertionError(f"a rule part this test cannot read: {part!r}")
    return mask


@pytest.mark.parametrize("test_kind", ["csv", "folder"])
@pytest.mark.parametrize("data_kind", ["csv", "parquet", "folder"])
def test_the_streamed_verdict_equals_the_in_memory_one_rules_included(fitted, tmp_path, data_kind, test_kind):
    train, test, pipe = fitted
    data_path, test_path = write(train, data_kind, tmp_path, "train"), write(test, test_kind, tmp_path, "test")
    in_memory = chiralfair.estimate(pipe, train, test=test, **KW)
    streamed = chiralfair.estimate(pipe, str(data_path), test=str(test_path), batch_rows=128, **KW)
    assert streamed.meta["stream"]["batches"] == -(-len(test) // 128)  # streamed indeed, in several batches
    assert "population_rows" in streamed.meta and "every row of" in streamed.meta["population_rows"]
    a, b = json.loads(in_memory.to_json()), json.loads(streamed.to_json())
    assert {k: v for k, v in a.items() if k not in HOW} == {k: v for k, v in b.items() if k not in HOW}
    for key in ("model_f1", "model_accuracy"):
        assert streamed.meta[key] == pytest.approx(in_memory.meta[key])
    # the answer itself, recounted through the user's pipeline on the rows as given
    affected = affected_by_recount(pipe, test)
    assert streamed.n_affected == affected.sum() and streamed.n_individuals == len(test)
    assert len(streamed.rules) >= 2
    for rule in streamed.rules:
        mask = rule_mask(rule["rule"], test).to_numpy()
        assert (rule["n"], rule["n_affected"]) == (mask.sum(), affected[mask].sum()), rule["rule"]
        assert rule["coverage"] == pytest.approx(affected[mask].sum() / affected.sum())


@pytest.mark.parametrize(("test_kind", "row", "named"), [
    ("csv", 40, "data row 41 (line 42) of test file '{path}'"),
    ("folder", 320, "data row 21 of test file '{path}{sep}b.parquet'"),  # row 20 of the second file (300 rows)
])
@pytest.mark.parametrize("batch_rows", [None, 128])
def test_a_missing_label_in_streamed_rows_names_the_file_and_the_row_within_it(fitted, tmp_path, test_kind, row,
                                                                                named, batch_rows):
    import os

    train, test, pipe = fitted
    test = test.astype({"y": object})
    test.loc[row, "y"] = None
    data_path = write(train, "folder", tmp_path, "train")  # a stream as the data: the test rows are streamed too
    test_path = write(test, test_kind, tmp_path, "test")
    with pytest.raises(DatasetError) as err:
        chiralfair.estimate(pipe, str(data_path), test=str(test_path), batch_rows=batch_rows, **KW)
    assert str(err.value) == ("label column 'y' has a missing value at "
                              + named.format(path=test_path, sep=os.sep))


def test_a_missing_label_in_a_streamed_data_folder_names_its_file_and_row(fitted, tmp_path):
    train, test, pipe = fitted
    train = train.astype({"y": object})
    train.loc[455, "y"] = None  # row 5 of the second file (450 rows in the first)
    data_path = write(train, "folder", tmp_path, "train")
    with pytest.raises(DatasetError, match=re.escape(f"data row 6 of data file '{data_path / 'b.parquet'}'")):
        chiralfair.estimate(pipe, str(data_path), test=str(write(test, "csv", tmp_path, "test")), **KW)
