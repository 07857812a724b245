"""Every kind of streamed source at both Python doors gives the counts of a recount through the user's own pipeline.

Kinds: a Parquet file, a Parquet folder of three files, a CSV file, a polars LazyFrame, a Dask DataFrame; doors:
``chiralfair.estimate`` and ``check_fairness`` (the gate). The recount is plain pandas: every person predicted as given
and with each combination of the protected values (sex, race), a person affected when some label differs, harmed
when affected while their own label is the unfavourable one.
"""

import itertools

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

import chiralfair
from chiralfair.pipeline import check_fairness

KW = {"label": "y", "positive_class": "yes", "protected": "sex,race"}
SEX, RACE = ["f", "m"], ["a", "b", "c"]
N, SAMPLE, BATCH = 300, 100, 64  # the domain is made from the first 100 rows; the rest are streamed past it


@pytest.fixture(scope="module")
def people():
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"sex": rng.choice(SEX, N), "race": rng.choice(RACE, N), "hours": rng.normal(40, 10, N)})
    frame["y"] = np.where(frame["hours"] + 8 * (frame["sex"] == "m") + 3 * (frame["race"] == "c")
                          + rng.normal(0, 5, N) > 45, "yes", "no")
    return frame


@pytest.fixture(scope="module")
def pipe(people):
    return make_pipeline(make_column_transformer((OneHotEncoder(), ["sex", "race"]), remainder="passthrough"),
                         LogisticRegression()).fit(people[["sex", "race", "hours"]], people["y"])


@pytest.fixture(scope="module")
def written(people, tmp_path_factory):
    root = tmp_path_factory.mktemp("matrix")
    people.to_parquet(root / "one.parquet")
    (root / "folder").mkdir()
    for i, s in enumerate(range(0, N, 100)):
        people.iloc[s:s + 100].to_parquet(root / "folder" / f"part{i}.parquet")
    people.to_csv(root / "people.csv", index=False)
    return root


KINDS = ["parquet file", "parquet folder", "csv", "polars", "dask"]


def source(kind, people, root):
    """The source of ``kind`` and the rows as the user's model reads them from it (a CSV's numbers as read back)."""
    if kind == "parquet file":
        return str(root / "one.parquet"), people
    if kind == "parquet folder":
        return str(root / "folder"), people
    if kind == "csv":
        return str(root / "people.csv"), pd.read_csv(root / "people.csv")
    if kind == "polars":
        pl = pytest.importorskip("polars")
        return pl.from_pandas(people).lazy(), people
    dd = pytest.importorskip("dask.dataframe")
    return dd.from_pandas(people, npartitions=3), people


def recount(pipe, rows):
    """Each person's (affected, harmed), predicting them and every counterpart through the pipeline."""
    X = rows[["sex", "race", "hours"]]
    own = pipe.predict(X)
    affected = np.zeros(len(X), dtype=bool)
    for sex, race in itertools.product(SEX, RACE):
        affected |= pipe.predict(X.assign(sex=sex, race=race)) != own
    return affected, affected & (own != "yes")  # "yes" is the favourable label


@pytest.mark.parametrize("door", ["estimate", "check"])
@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_at_every_door_counts_what_a_recount_through_the_pipeline_counts(people, pipe, written, kind,
                                                                                     door):
    data, rows = source(kind, people, written)
    options = {"batch_rows": BATCH, "domain_sample": SAMPLE, **KW}
    if door == "estimate":
        verdict = chiralfair.estimate(pipe, data, **options)
    else:
        decision = check_fairness(pipe, data, max_share=0.5, **options)
        verdict = decision.verdict
        assert (decision.n_individuals, decision.n_affected) == (verdict.n_individuals, verdict.n_affected)
    affected, harmed = recount(pipe, rows)
    assert (verdict.n_individuals, verdict.n_affected, verdict.n_harmed) == (N, affected.sum(), harmed.sum())
    assert 0 < affected.sum() < N and harmed.sum() > 0  # a recount that could disagree
    for column, values in (("sex", SEX), ("race", RACE)):
        for value in values:
            group = verdict.group(f"{column}={value}")
            mask = (rows[column] == value).to_numpy()
            assert (group["n"], group["n_affected"], group["n_harmed"]) == (
                mask.sum(), affected[mask].sum(), harmed[mask].sum()), (column, value)
    stream = verdict.meta["stream"]
    assert (stream["rows_read"], stream["rows_checked"], stream["rows_skipped"], stream["rows_left_out"]) == (
        N, N, 0, 0)
    own = pipe.predict(rows[["sex", "race", "hours"]])
    truth, said = rows["y"].to_numpy() == "yes", own == "yes"
    assert stream["model_quality"]["n_test"] == N
    assert stream["model_quality"]["accuracy"] == pytest.approx((truth == said).mean())


def test_a_streamed_verdict_names_a_numeric_label_by_its_column_as_the_in_memory_one_does(people, written, tmp_path):
    # a label whose values read as numbers (German credit's 1 and 2) is named with its column, not as "label value"
    numeric = people.assign(credit=np.where(people["y"] == "yes", 1, 2)).drop(columns="y")
    numeric.to_parquet(tmp_path / "credit.parquet")
    model = make_pipeline(make_column_transformer((OneHotEncoder(), ["sex", "race"]), remainder="passthrough"),
                          LogisticRegression()).fit(numeric[["sex", "race", "hours"]], numeric["credit"])
    options = {"label": "credit", "positive_class": 2, "protected": "sex,race"}
    streamed = chiralfair.estimate(model, str(tmp_path / "credit.parquet"), batch_rows=BATCH, domain_sample=SAMPLE,
                                   **options)
    in_memory = chiralfair.estimate(model, numeric, **options)
    assert streamed.label_text(1) == in_memory.label_text(1) == "label 1 (credit = 2)"
    assert streamed.label_text(0) == in_memory.label_text(0) == "label 0 (credit = 1)"
