"""Where a streamed verdict used to differ from the in-memory one: a missing label past the domain sample, and an
error in a later batch naming the row of the stream rather than of its file.

Every error raised from a batch names the file (or Dask partition) and the row within it, on one process and on a
cluster, and no verdict is given.
"""

import logging
import re

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

import chiralfair
from chiralfair.exceptions import DatasetError, ModelCallError, ModelInputError

KW = {"label": "y", "positive_class": "yes", "protected": "sex,race"}
N, SAMPLE, BAD = 300, 100, 260  # the faulty row lies past the domain sample, in the third file or partition


def people_frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    people = pd.DataFrame({"sex": rng.choice(["f", "m"], N), "race": rng.choice(["a", "b", "c"], N),
                           "job": rng.choice(["clerk", "nurse"], N), "hours": rng.normal(40, 10, N)})
    people["y"] = np.where(people["hours"] + 10 * (people["sex"] == "m") + rng.normal(0, 5, N) > 45, "yes", "no")
    return people


def fitted():
    people = people_frame()  # the encoder refuses a job it never saw: the model's own error
    return make_pipeline(make_column_transformer((OneHotEncoder(), ["sex", "race", "job"]), remainder="passthrough"),
                         LogisticRegression()).fit(people.drop(columns="y"), people["y"])


@pytest.fixture(scope="module")
def pipe():
    return fitted()


FAULTS = {  # what row BAD holds, and the start of the error it must raise
    "label": ("y", None, DatasetError, "label column 'y' has a missing value at "),
    "value": ("hours", np.nan, DatasetError, "column 'hours' holds a missing value ("),
    "model": ("job", "pilot", ModelInputError, ""),
}


def faulty(fault: str) -> pd.DataFrame:
    people = people_frame()
    column, value, _, _ = FAULTS[fault]
    people[column] = people[column].astype(object)
    people.loc[BAD, column] = value
    if column == "hours":
        people["hours"] = people["hours"].astype(float)
    return people


def written(people: pd.DataFrame, root, kind: str):
    """The rows as ``kind``, and how the in-memory door (or, for a Dask frame, its partition) names row BAD."""
    if kind == "folder":
        (root / "folder").mkdir()
        for i, s in enumerate(range(0, N, 100)):
            people.iloc[s:s + 100].to_parquet(root / "folder" / f"part{i}.parquet")
        return str(root / "folder"), f"data row {BAD - 200 + 1} of data file '{root / 'folder' / 'part2.parquet'}'"
    if kind == "csv":
        people.to_csv(root / "people.csv", index=False)
        return str(root / "people.csv"), f"data row {BAD + 1} (line {BAD + 2}) of data file '{root / 'people.csv'}'"
    dd = pytest.importorskip("dask.dataframe")
    frame = dd.from_pandas(people, npartitions=3)
    partition = int(np.searchsorted(frame.divisions[1:-1], BAD, side="right"))  # dask's own cut of the rows
    assert partition == 2
    return frame, f"row with index label {BAD} of partition {partition} of the Dask DataFrame (data=)"


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("kind", ["folder", "csv", "dask"])
def test_an_error_in_a_later_batch_names_the_file_or_partition_and_the_row_within_it(pipe, tmp_path, kind, fault):
    data, row = written(faulty(fault), tmp_path, kind)
    _, _, error, start = FAULTS[fault]
    with pytest.raises(error) as err:
        chiralfair.estimate(pipe, data, batch_rows=64, domain_sample=SAMPLE, **KW)
    assert str(err.value).startswith(start + row) if start else str(err.value).startswith(row)
    assert "of the stream" not in str(err.value)
    if fault == "model":
        assert "'pilot'" in str(err.value)  # the model's own error is kept


def test_a_missing_label_is_refused_where_the_in_memory_door_refuses_it(pipe, tmp_path):
    data, row = written(faulty("label"), tmp_path, "csv")
    with pytest.raises(DatasetError) as memory:
        chiralfair.estimate(pipe, data, population="rows", exact=True, **KW)
    with pytest.raises(DatasetError) as streamed:
        chiralfair.estimate(pipe, data, batch_rows=64, domain_sample=SAMPLE, **KW)
    assert str(memory.value) == f"label column 'y' has a missing value at {row}"
    assert str(streamed.value).startswith(str(memory.value))


def test_held_out_rows_are_named_as_the_test_files_rows(pipe, tmp_path):
    data, row = written(faulty("label"), tmp_path, "folder")
    with pytest.raises(DatasetError, match="^label column 'y' has a missing value at " + row.replace(
            "data file", "test file")):
        chiralfair.estimate(pipe, people_frame().iloc[:50], test=data, batch_rows=64, domain_sample=SAMPLE, **KW)


def test_a_value_the_schemas_type_refuses_in_a_later_batch_names_its_row_of_the_csv(pipe, tmp_path):
    from chiralfair.datasets.schema import infer_schema

    whole = people_frame().assign(hours=lambda d: d["hours"].round().astype("int64"))
    (tmp_path / "s.toml").write_text(infer_schema(whole, label="y", positive_class="yes", protected=["sex", "race"]))
    people = whole.astype({"hours": object})
    people.loc[BAD, "hours"] = "abc"
    data, row = written(people, tmp_path, "csv")
    with pytest.raises(DatasetError, match=r"^column 'hours' cannot be read as the schema's type 'int64' \(value "
                                           f"'abc' at {re.escape(row)}\\)"):
        chiralfair.estimate(pipe, data, batch_rows=64, domain_sample=SAMPLE, schema=str(tmp_path / "s.toml"),
                            protected="sex,race")


class Unreachable:
    """A model behind a connection that drops on the rows of long hours: an error no value of a row explains."""

    def __init__(self, pipe):
        self.pipe = pipe
        self.classes_ = pipe.classes_

    def predict(self, X):
        if (X["hours"] > 1000).any():
            raise ConnectionError("connection reset by peer")
        return self.pipe.predict(X)


def test_a_model_error_no_row_explains_names_the_rows_it_was_checking(pipe, tmp_path):
    people = people_frame()
    people.loc[BAD, "hours"] = 5000.0
    data, row = written(people, tmp_path, "folder")
    first = f"data row 1 of data file '{tmp_path / 'folder' / 'part2.parquet'}'"  # batches of 100: one file each
    with pytest.raises(ModelCallError, match=f"^checking the rows from {first} to .*part2.parquet'.*connection reset"):
        chiralfair.estimate(Unreachable(pipe), data, batch_rows=100, domain_sample=SAMPLE, model_input="frame", **KW)


# ------------------------------------------------------------------ on a Dask cluster
@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                       silence_logs=logging.ERROR)
    yield cluster
    cluster.close()


@pytest.mark.parametrize("fault", ["label", "model"])
@pytest.mark.parametrize("kind", ["folder", "dask"])
def test_on_a_cluster_an_error_names_the_file_or_partition_and_the_row_within_it(pipe, cluster, tmp_path, kind,
                                                                                   fault):
    data, row = written(faulty(fault), tmp_path, kind)
    _, _, error, start = FAULTS[fault]
    with pytest.raises(error) as err:
        chiralfair.estimate(pipe, data, batch_rows=64, domain_sample=SAMPLE, scheduler=cluster.scheduler_address,
                            **KW)
    assert str(err.value).startswith(start + row)


def test_halving_names_the_one_row_that_fails_alone_and_none_when_rows_fail_only_together():
    from chiralfair.datasets.frame import first_failing_row

    for n in range(1, 40):
        for bad in range(n):
            calls = []

            def fails(a, b, bad=bad, calls=calls):
                calls.append((a, b))
                return a <= bad < b

            assert first_failing_row(n, fails) == bad
            assert len(calls) <= 2 * max(n - 1, 1).bit_length()  # a few calls, not one per row
    assert first_failing_row(8, lambda a, b: b - a == 8) is None  # only all eight together fail
    assert first_failing_row(0, lambda a, b: True) is None
