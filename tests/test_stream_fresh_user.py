"""What a first streamed verdict met: the model's F1 over every streamed row (not the domain sample), a Parquet
folder beside a CSV test file, and a number beyond the domain sample's range used as given and counted."""

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

import chiralfair
from chiralfair.exceptions import DatasetError

KW = {"label": "y", "positive_class": "yes", "protected": "sex"}
COLUMNS = ["sex", "race", "hours", "years"]


def people_frame(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    people = pd.DataFrame({"sex": rng.choice(["f", "m"], n), "race": rng.choice(["a", "b", "c"], n),
                           "hours": rng.normal(40, 10, n), "years": rng.integers(0, 10, n)})
    people["y"] = np.where(people["hours"] + 10 * (people["sex"] == "m") + people["years"]
                           + rng.normal(0, 5, n) > 50, "yes", "no")
    return people


@pytest.fixture(scope="module")
def fitted():
    people = people_frame(900)
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["sex", "race"]), remainder="passthrough"),
                         LogisticRegression(max_iter=1000)).fit(people[COLUMNS], people["y"])
    return people, pipe


def recount(pipe, people):
    """Affected and harmed people, through the user's pipeline at each sex, plain pandas."""
    X = people[COLUMNS]
    own = pipe.predict(X)
    affected = np.zeros(len(X), dtype=bool)
    for sex in ("f", "m"):
        affected |= pipe.predict(X.assign(sex=sex)) != own
    return affected, affected & (own != "yes")


def test_the_models_f1_is_measured_on_every_streamed_row_not_the_domain_sample(fitted, tmp_path):
    people, pipe = fitted
    people.to_parquet(tmp_path / "p.parquet")
    verdict = chiralfair.estimate(pipe, str(tmp_path / "p.parquet"), batch_rows=128, domain_sample=60,
                                  favourable="yes", **KW)
    pred = pipe.predict(people[COLUMNS])
    whole = f1_score(people["y"], pred, pos_label="yes")
    assert whole != pytest.approx(f1_score(people["y"][:60], pred[:60], pos_label="yes"))  # the sample differs
    assert verdict.meta["model_f1"] == pytest.approx(whole)
    assert verdict.meta["model_accuracy"] == pytest.approx(accuracy_score(people["y"], pred))
    assert verdict.meta["model_evaluated_on"].count(f"{len(people):,} rows") == 1  # the count, said once


def test_a_parquet_folder_beside_a_csv_test_file_streams_the_test_rows_read_as_csv(fitted, tmp_path):
    import skops.io as sio
    from typer.testing import CliRunner

    from chiralfair.cli import app

    people, pipe = fitted
    (tmp_path / "data").mkdir()
    people.iloc[:300].to_parquet(tmp_path / "data" / "a.parquet")
    people.iloc[300:500].to_parquet(tmp_path / "data" / "b.parquet")
    test = people.iloc[500:].reset_index(drop=True)
    test.to_csv(tmp_path / "test.csv", index=False)
    sio.dump(pipe, tmp_path / "model.skops")
    args = ["--model", tmp_path / "model.skops", "--data", tmp_path / "data", "--test", tmp_path / "test.csv",
            "--label", "y", "--positive-class", "yes", "--protected", "sex", "--favourable", "yes"]
    res = CliRunner().invoke(app, ["estimate", *map(str, args), "--json"])
    assert res.exit_code == 0, res.output
    printed = json.loads(res.stdout[res.stdout.index("{"):])
    affected, harmed = recount(pipe, test)
    assert (printed["n_individuals"], printed["n_affected"], printed["n_harmed"]) == (
        len(test), affected.sum(), harmed.sum())
    assert printed["population"] == "test"


def test_a_number_beyond_the_domain_samples_range_is_used_as_given_and_counted(fitted, tmp_path):
    people, pipe = fitted
    odd = people.copy()
    odd.loc[odd.index[-7:], "years"] = 12  # integers: the first 600 rows hold 0-9 only
    odd.loc[odd.index[-3:], "years"] = -1
    odd.to_parquet(tmp_path / "odd.parquet")
    verdict = chiralfair.estimate(pipe, str(tmp_path / "odd.parquet"), batch_rows=100, domain_sample=600,
                                  favourable="yes", **KW)
    affected, harmed = recount(pipe, odd)
    assert (verdict.n_individuals, verdict.n_affected, verdict.n_harmed) == (len(odd), affected.sum(), harmed.sum())
    assert verdict.meta["stream"]["rows_beyond_domain"] == {"years": 7}
    assert any("years" in n and "7 rows" in n and "as given" in n for n in verdict.notes)
    # a model fed codes would be asked about another person: refused, naming the parameter that fixes it
    from chiralfair.datasets import from_frame

    codes = from_frame(people.iloc[:600], **KW)
    model = LogisticRegression(max_iter=1000).fit(codes.X, people["y"].iloc[:600])
    with pytest.raises(DatasetError, match=r"column 'years' holds the value 12.*domain_sample"):
        chiralfair.estimate(model, str(tmp_path / "odd.parquet"), batch_rows=100, domain_sample=600,
                            favourable="yes", model_input="codes", **KW)


@pytest.mark.parametrize("batch_rows", [64, 150])
def test_one_large_file_is_cut_into_several_partitions_that_hold_its_rows_once(fitted, tmp_path, monkeypatch,
                                                                                batch_rows):
    import pyarrow.parquet as pq

    from chiralfair.datasets.stream import open_stream
    from chiralfair.verdict import streaming

    people, _ = fitted
    pq.write_table(__import__("pyarrow").Table.from_pandas(people), tmp_path / "one.parquet", row_group_size=333)
    monkeypatch.setattr(streaming, "PARTITION_ROWS", 100)
    readers = streaming.partition_readers(open_stream(str(tmp_path / "one.parquet")), batch_rows)
    size = max(100, batch_rows)
    assert len(readers) == -(-len(people) // size) > 1
    frames = [frame for read in readers for frame in read(batch_rows)]
    assert all(len(f) <= batch_rows for f in frames)
    pd.testing.assert_frame_equal(pd.concat(frames, ignore_index=True), people.reset_index(drop=True))
    assert readers[1].where.startswith(f"rows {size:,} to {2 * size - 1:,} of file ")
