"""A protected attribute over several columns ('+' on the command line): its values' names, the combinations only
the held-out rows hold, and a group holding part of a one-hot set. Every figure is recounted through the model."""

import itertools
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

import chiralfair

RACES, SEXES = ("a", "b", "c"), ("f", "m")


def people(n, seed, combos=None):
    """Rows of race (codes 0-2) and sex (codes 0-1): (a, m) and (b, f) are the code rows (0, 1) and (1, 0)."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"race": rng.choice(RACES, n), "sex": rng.choice(SEXES, n), "hours": rng.integers(10, 60, n)})
    if combos is not None:  # keep only these (race, sex) combinations
        df = df[[(r, s) in combos for r, s in zip(df["race"], df["sex"], strict=True)]].reset_index(drop=True)
    noise = rng.normal(0, 5, len(df))
    return df.assign(y=(df["hours"] + 8 * (df["sex"] == "m") + 6 * (df["race"] == "a") + noise > 40).astype(int))


def fitted(train, categorical=("race", "sex")):
    return make_pipeline(make_column_transformer((OneHotEncoder(handle_unknown="ignore"), list(categorical)),
                                                 remainder="passthrough"),
                         LogisticRegression(max_iter=500)).fit(train.drop(columns="y"), train["y"])


def recount(pipe, X, settings):
    """Per row: affected (some counterpart among ``settings``, each a dict column -> value, changes the label) and
    harmed (own label 0 while a counterpart gets 1)."""
    own = pipe.predict(X)
    affected, harmed = np.zeros(len(X), dtype=bool), np.zeros(len(X), dtype=bool)
    for setting in settings:
        other = pipe.predict(X.assign(**setting))
        affected |= other != own
        harmed |= (own == 0) & (other == 1)
    return affected, harmed


def test_a_group_of_two_categorical_columns_names_each_value_by_both_columns():
    train, test = people(600, 3), people(300, 4)
    pipe = fitted(train)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = chiralfair.audit(pipe, train, test=test, label="y", positive_class=1, favourable=1,
                                  protected=[("race", "sex")], seeds="random", max_global=5, max_local=2)
    X = test.drop(columns="y")
    affected, harmed = recount(pipe, X, [{"race": r, "sex": s} for r, s in itertools.product(RACES, SEXES)])
    own = test["race"] + "/" + test["sex"]
    expected = {f"race+sex={r}/{s}" for r, s in itertools.product(RACES, SEXES)}

    rows = result.held_out_rows()
    assert rows["race+sex"].astype(str).tolist() == own.tolist()
    assert rows["is_idi"].to_numpy().tolist() == affected.tolist()

    groups = result.group_metrics.to_frame().set_index("group")
    assert set(groups.index) - {"all"} == expected
    verdict_groups = {g["group"]: g for g in result.verdict.groups}
    assert set(verdict_groups) == expected
    for value, people_of in own.groupby(own).groups.items():
        name = f"race+sex={value}"
        mask = own.index.isin(people_of)
        assert groups.loc[name, "n"] == verdict_groups[name]["n"] == mask.sum()
        assert groups.loc[name, "n_idis"] == verdict_groups[name]["n_affected"] == affected[mask].sum()
        assert verdict_groups[name]["n_harmed"] == harmed[mask].sum()
    summary = result.summary()
    assert "race+sex=a/m" in summary or "race+sex=b/f" in summary
    assert "race+sex=sex" not in summary and "race+sex=race" not in summary


@pytest.mark.parametrize("door", ["audit", "estimate", "estimate-parquet"])
def test_a_combination_only_the_held_out_rows_hold_is_left_out(door, tmp_path):
    combos = set(itertools.product(RACES, SEXES)) - {("c", "f")}
    train, test = people(700, 5, combos=combos), people(300, 6)
    pipe = fitted(train)
    n_cf = int(((test["race"] == "c") & (test["sex"] == "f")).sum())
    assert n_cf > 0
    kw = {"label": "y", "positive_class": 1, "favourable": 1, "protected": [("race", "sex")]}
    with pytest.warns(chiralfair.exceptions.DataWarning, match=r"'race\+sex' value\(s\) 'c/f' appear only in the "
                                                                rf"held-out rows \({n_cf} of them\)"):
        if door == "audit":
            verdict = chiralfair.audit(pipe, train, test=test, seeds="random", max_global=5, max_local=2,
                                       **kw).verdict
        elif door == "estimate":
            verdict = chiralfair.estimate(pipe, train, test=test, **kw)
        else:
            folder = tmp_path / "test"
            folder.mkdir()
            test.iloc[:150].to_parquet(folder / "a.parquet")
            test.iloc[150:].to_parquet(folder / "b.parquet")
            verdict = chiralfair.estimate(pipe, train, test=str(folder), batch_rows=100, **kw)
    kept = test[~((test["race"] == "c") & (test["sex"] == "f"))].drop(columns="y")
    affected, _ = recount(pipe, kept, [{"race": r, "sex": s} for r, s in sorted(combos)])
    assert verdict.n_individuals == len(test) - n_cf
    assert verdict.n_affected == int(affected.sum())


def one_hot_people(n, seed):
    """``people`` with sex as the one-hot columns sex_f and sex_m."""
    df = people(n, seed)
    return df.assign(sex_f=(df["sex"] == "f").astype(int), sex_m=(df["sex"] == "m").astype(int)).drop(columns="sex")


@pytest.mark.parametrize("group", [("sex_f", "race"), ("race", "sex_m"), ("sex_f",)])
def test_an_attribute_holding_part_of_a_one_hot_set_is_refused(group):
    from chiralfair.datasets import from_frame
    from chiralfair.exceptions import DomainError

    df = one_hot_people(200, 7)
    with pytest.raises(DomainError, match=r"one-hot columns 'sex_f', 'sex_m'.*impossible"):
        from_frame(df, label="y", positive_class=1, protected=[group] if len(group) > 1 else list(group))
    whole = from_frame(df, label="y", positive_class=1, protected=[("race", "sex_f", "sex_m")]).domain
    # the whole set is accepted: its values are the (race, sex) rows the data holds, one 1 among sex_f, sex_m
    observed = df[["race", "sex_f", "sex_m"]].drop_duplicates()
    assert whole.attributes[0].size == len(observed) == 6
    assert (whole.attributes[0].value_array()[:, 1:].sum(axis=1) == 1).all()


@pytest.mark.parametrize(("group", "whole"), [(("sex_f", "race"), "sex_f+sex_m+race"),
                                              (("race", "sex_m"), "race+sex_f+sex_m")])
def test_the_refusal_of_part_of_a_one_hot_set_suggests_the_whole_set_in_the_attributes_order(group, whole):
    from chiralfair.datasets import from_frame
    from chiralfair.exceptions import DomainError

    with pytest.raises(DomainError, match=rf"--protected '{re.escape(whole)}'"):
        from_frame(one_hot_people(200, 7), label="y", positive_class=1, protected=[group])


@pytest.mark.parametrize("protected", [[["sex_f", "race"]], [["sex_f", "sex_f"]], ["sex_m"], ["race", ["race", "sex_f",
                                                                                                            "sex_m"]]])
def test_schema_infer_writes_no_part_of_a_one_hot_set_and_no_column_twice(protected):
    from chiralfair.datasets.schema import infer_schema
    from chiralfair.exceptions import DatasetError

    df = one_hot_people(100, 8)
    with pytest.raises(DatasetError, match="one-hot columns 'sex_f', 'sex_m'|named twice"):
        infer_schema(df, label="y", positive_class=1, protected=protected)
    text = infer_schema(df, label="y", positive_class=1, protected=[["sex_f", "sex_m", "race"]])
    assert 'protected = [["sex_f", "sex_m", "race"]]' in text


@pytest.mark.parametrize("door", ["audit", "estimate"])
def test_a_one_hot_row_with_no_1_is_a_missing_value_never_a_counterpart(door):
    train, test = one_hot_people(600, 9), one_hot_people(300, 10)
    for df, n in ((train, 20), (test, 15)):  # rows whose sex_f and sex_m are both 0
        df.loc[df.index[:n], ["sex_f", "sex_m"]] = 0
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["race"]),
                                                 remainder="passthrough"),
                         LogisticRegression(max_iter=500)).fit(train.drop(columns="y"), train["y"])
    kw = {"label": "y", "positive_class": 1, "favourable": 1, "protected": [("sex_f", "sex_m")]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if door == "audit":
            result = chiralfair.audit(pipe, train, test=test, seeds="random", max_global=5, max_local=2, **kw)
            verdict = result.verdict
        else:
            verdict = chiralfair.estimate(pipe, train, test=test, **kw)
    none = (test["sex_f"] == 0) & (test["sex_m"] == 0)
    kept = test[~none].drop(columns="y")
    # counterparts are the two one-hot rows only: (0, 0) is never one
    affected, harmed = recount(pipe, kept, [{"sex_f": 1, "sex_m": 0}, {"sex_f": 0, "sex_m": 1}])
    assert verdict.n_individuals == len(test) - none.sum()
    assert verdict.unplaced == {"sex": int(none.sum())}
    assert verdict.n_affected == affected.sum()
    groups = {g["group"]: g for g in verdict.groups}
    assert set(groups) == {"sex=sex_f", "sex=sex_m"}
    for name, column in (("sex=sex_f", "sex_f"), ("sex=sex_m", "sex_m")):
        mask = (kept[column] == 1).to_numpy()
        assert groups[name]["n"] == mask.sum() and groups[name]["n_affected"] == affected[mask].sum()
        assert groups[name]["n_harmed"] == harmed[mask].sum()
    if door == "audit":
        rows = result.held_out_rows()
        assert rows["left_out"].to_numpy().tolist() == none.tolist()
        assert rows.loc[~rows["left_out"], "is_idi"].to_numpy().tolist() == affected.tolist()
        assert result.dataset.domain.protected_value_labels() == [["sex_m", "sex_f"]]
