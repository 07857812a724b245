"""Tree ensembles inside your own pipelines, fed your rows: certified exactly on the rows as given.

The truth is recounted here through the user's own pipeline object (its ``predict`` on pandas frames): per person,
every row of their neighbourhood (the listed columns within the radius, in whole numbers inside the data's range,
every other value their own) at each sex; over the domain, every grid point decoded by the dataset, grouped by key.
The data hold missing values (NaN in a numeric column) that the models handle themselves.
"""

import functools
import itertools

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_selector, make_column_transformer
from sklearn.decomposition import PCA
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    MinMaxScaler,
    OneHotEncoder,
    OrdinalEncoder,
    RobustScaler,
    StandardScaler,
)
from sklearn.tree import DecisionTreeClassifier

from chiralfair import DataSpec
from chiralfair.certification import certify_domain, certify_individuals
from chiralfair.exceptions import ConfigError, ModelCapabilityError
from chiralfair.models.threads import single_native_thread
from chiralfair.pipeline.front import resolve_inputs

lightgbm = pytest.importorskip("lightgbm")
xgboost = pytest.importorskip("xgboost")

SIMILAR = {"age": 2, "hours": 3}


def people(n=900, seed=0):
    """Raw rows: text categories, whole numbers, a real column with missing values; the label leans on sex."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"sex": rng.choice(["F", "M"], n), "job": rng.choice(["clerk", "farm", "tech"], n),
                       "age": rng.integers(18, 60, n), "hours": rng.integers(10, 50, n),
                       "income": rng.normal(50, 20, n).round(2)})
    df.loc[rng.random(n) < 0.1, "income"] = np.nan
    score = df.age / 10 + df.hours / 10 + 2 * (df.sex == "M") + (df.job == "tech") + rng.normal(0, 1, n)
    df["y"] = (score > 9.5).astype(np.int64)
    return df


def onehot_scaled(estimator, **onehot):
    text = make_column_selector(dtype_exclude="number")
    return make_pipeline(make_column_transformer((OneHotEncoder(**onehot), text), remainder=StandardScaler()),
                         estimator)


PIPELINES = {
    "hgb+onehot+standard": lambda: onehot_scaled(HistGradientBoostingClassifier(max_iter=12, random_state=0),
                                                 handle_unknown="ignore"),
    "rf+ordinal+minmax": lambda: make_pipeline(
        make_column_transformer((OrdinalEncoder(), ["sex", "job"]), (MinMaxScaler(), ["age", "hours"]),
                                remainder="passthrough"),
        RandomForestClassifier(6, max_depth=5, random_state=0)),
    "lightgbm+onehot-drop+robust": lambda: make_pipeline(
        make_column_transformer((OneHotEncoder(drop="first"), ["sex", "job"]), remainder=RobustScaler()),
        lightgbm.LGBMClassifier(n_estimators=12, num_leaves=8, min_child_samples=5, n_jobs=1, verbose=-1)),
    "xgboost+log1p": lambda: make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore", sparse_output=False), ["sex", "job"]),
                                (FunctionTransformer(np.log1p), ["age", "hours"]), remainder="passthrough"),
        xgboost.XGBClassifier(n_estimators=12, max_depth=3, n_jobs=1)),
    "dt+passthrough": lambda: make_pipeline(
        make_column_transformer((OrdinalEncoder(), ["sex", "job"]), remainder="passthrough"),
        DecisionTreeClassifier(max_depth=6, random_state=0)),
    "hgb-native-categorical": lambda: make_pipeline(
        make_column_transformer((OrdinalEncoder(), ["sex", "job"]), remainder="passthrough"),
        HistGradientBoostingClassifier(max_iter=12, categorical_features=[0, 1], random_state=0)),
}


@functools.cache
def fitted(name):
    df = people()
    train, test = df.iloc[:600].reset_index(drop=True), df.iloc[600:].reset_index(drop=True)
    with single_native_thread():
        pipe = PIPELINES[name]().fit(train.drop(columns="y"), train["y"])
    spec = DataSpec(label="y", positive_class=1, protected="sex", bins={"hours": 4, "income": 4})
    inputs = resolve_inputs(pipe, train, test=test, spec=spec)
    return pipe, inputs


def labels(pipe, frame):
    with single_native_thread():
        return np.asarray(pipe.predict(frame[["sex", "job", "age", "hours", "income"]]))


def per_person_truth(pipe, inputs, similar):
    """Each test person affected (some neighbour's label changes with sex), by every row of their neighbourhood."""
    raw = inputs.dataset.raw
    rows = inputs.test_index
    span = {c: (raw[c].min(), raw[c].max()) for c in similar}
    frames, owner = [], []
    for i, row in enumerate(raw.iloc[rows].itertuples(index=False)):
        ranges = [range(max(getattr(row, c) - r, span[c][0]), min(getattr(row, c) + r, span[c][1]) + 1)
                  for c, r in similar.items()]
        for values in itertools.product(*ranges, ["F", "M"]):
            frames.append({**row._asdict(), **dict(zip([*similar, "sex"], values, strict=True))})
            owner.append(i)
    table = pd.DataFrame(frames)
    got = labels(pipe, table).reshape(-1, 2)
    differs = got[:, 0] != got[:, 1]
    out = np.zeros(len(rows), dtype=bool)
    np.logical_or.at(out, np.asarray(owner)[::2], differs)
    return out


@pytest.mark.parametrize("name", list(PIPELINES))
def test_each_person_is_certified_exactly_on_their_own_rows(name):
    pipe, inputs = fitted(name)
    model, data, rows = inputs.model, inputs.dataset, inputs.test_index
    assert data.raw["income"].isna().any()
    near = certify_individuals(model, data, rows, similar=SIMILAR)
    expected = per_person_truth(pipe, inputs, SIMILAR)
    assert near.undecided_share == 0 and not (near.status == 3).any()
    assert (near.status == np.where(expected, 1, 0)).all()
    assert 0 < expected.sum() < len(rows)
    own = certify_individuals(model, data, rows)
    expected_own = per_person_truth(pipe, inputs, {})
    assert (own.status == np.where(expected_own, 1, 0)).all()
    assert near.meta["read"].startswith("tree ensemble: ") and own.meta["read"].startswith("tree ensemble (not read")
    assert expected_own.sum() < expected.sum()


@pytest.mark.parametrize("name", list(PIPELINES))
def test_the_whole_domain_of_a_raw_pipeline_is_counted_exactly(name):
    pipe, inputs = fitted(name)
    data = inputs.dataset
    result = certify_domain(inputs.model, data, max_seconds=None)
    domain = data.domain
    ranges = [range(int(lo), int(hi) + 1) for lo, hi in zip(domain.lower, domain.upper, strict=True)]
    X = np.array(list(itertools.product(*ranges)), dtype=np.int64)
    got = labels(pipe, data.to_frame(X)) == 1
    keys, group = np.unique(np.delete(X, domain.protected, axis=1), axis=0, return_inverse=True)
    ones = np.bincount(group.reshape(-1), weights=got, minlength=len(keys))
    count = np.bincount(group.reshape(-1), minlength=len(keys))
    idi = (ones > 0) & (ones < count)
    assert result.stopped == "complete" and result.domain_volume == len(keys)
    assert result.falsified_volume == idi.sum() > 0 and result.certified_volume == (~idi).sum() > 0
    # every witness, decoded, re-queried through the pipeline itself: its label and its counterpart's differ
    assert (labels(pipe, data.to_frame(result.idis)) != labels(pipe, data.to_frame(result.counterparts))).all()


def test_a_categorical_set_and_missing_values_stay_exact():
    pipe, inputs = fitted("hgb-native-categorical")
    model, data, rows = inputs.model, inputs.dataset, inputs.test_index[:80]
    near = certify_individuals(model, data, rows, similar={"job": {"clerk", "tech"}, "age": 1})
    raw = data.raw.iloc[rows]
    low, high = data.raw["age"].min(), data.raw["age"].max()
    expected = np.zeros(len(rows), bool)
    for i, row in enumerate(raw.itertuples(index=False)):
        jobs = {row.job, "clerk", "tech"}
        table = pd.DataFrame([{**row._asdict(), "job": j, "age": a, "sex": s} for j in sorted(jobs)
                              for a in range(max(row.age - 1, low), min(row.age + 1, high) + 1) for s in "FM"])
        got = labels(pipe, table).reshape(-1, 2)
        expected[i] = (got[:, 0] != got[:, 1]).any()
    assert (near.status == np.where(expected, 1, 0)).all() and expected.any()


def test_steps_and_neighbourhoods_it_cannot_read_are_refused_by_name():
    df = people(300)
    spec = DataSpec(label="y", positive_class=1, protected="sex", bins={"hours": 4, "income": 4})
    X, y = df.drop(columns="y"), df["y"]
    cases = {
        "pca": (make_pipeline(make_column_transformer((OneHotEncoder(), ["sex", "job"]), remainder="drop"), PCA(2),
                              DecisionTreeClassifier(max_depth=3)), r"preprocessing step 'pca' \(PCA\) may mix"),
        "sin": (make_pipeline(make_column_transformer((OneHotEncoder(), ["sex", "job"]),
                                                      (FunctionTransformer(np.sin), ["age"]), remainder="drop"),
                              DecisionTreeClassifier(max_depth=3)),
                r"FunctionTransformer of 'sin'.*reads FunctionTransformer of the numpy functions log"),
    }
    for pipe, message in cases.values():
        pipe.fit(X, y)
        inputs = resolve_inputs(pipe, df, spec=spec, test_size=0.3)
        with pytest.raises(ModelCapabilityError, match=message):
            certify_domain(inputs.model, inputs.dataset, max_seconds=1)
    _, inputs = fitted("dt+passthrough")
    rows = inputs.test_index[:5]
    with pytest.raises(ConfigError, match="column 'income' holds values that are not whole numbers"):
        certify_individuals(inputs.model, inputs.dataset, rows, similar={"income": 1})
    with pytest.raises(ConfigError, match="column 'job' has no value 'pilot'"):
        certify_individuals(inputs.model, inputs.dataset, rows, similar={"job": {"pilot"}})
    with pytest.raises(ConfigError, match="fed your rows.*similar="):
        X0 = inputs.dataset.X[rows]
        certify_individuals(inputs.model, inputs.dataset, rows, boxes=(X0, X0))


def test_a_bare_hgb_on_pandas_categoricals_is_read_through_its_own_encoder():
    """categorical_features="from_dtype": the model encodes the categories itself; NaN in a numeric column."""
    df = people(700, seed=1).astype({"sex": "category", "job": "category"})
    train, test = df.iloc[:450].reset_index(drop=True), df.iloc[450:].reset_index(drop=True)
    with single_native_thread():
        model = HistGradientBoostingClassifier(max_iter=10, categorical_features="from_dtype", random_state=0)
        model.fit(train.drop(columns="y"), train["y"])
    assert model.is_categorical_.any()
    spec = DataSpec(label="y", positive_class=1, protected="sex", bins={"hours": 4, "income": 4})
    inputs = resolve_inputs(model, train, test=test, spec=spec)
    near = certify_individuals(inputs.model, inputs.dataset, inputs.test_index, similar={"age": 2})
    expected = per_person_truth(model, inputs, {"age": 2})
    assert near.undecided_share == 0 and (near.status == np.where(expected, 1, 0)).all()
    assert 0 < expected.sum() < len(expected)


def test_a_neighbourhood_it_cannot_read_is_refused_before_the_domain_is_searched(monkeypatch):
    import chiralfair
    from chiralfair.certification import certificates

    def searched(*args, **kwargs):
        raise AssertionError("the domain was searched before the neighbourhood was checked")

    monkeypatch.setattr(certificates, "certify_domain", searched)
    monkeypatch.setattr("chiralfair.certification.certify_domain", searched)
    df = people(300)
    pipe = PIPELINES["dt+passthrough"]().fit(df.drop(columns="y"), df["y"])
    with pytest.raises(ConfigError, match="column 'income' holds values that are not whole numbers"):
        chiralfair.certify(pipe, df, test_size=0.3, label="y", positive_class=1, protected="sex",
                           similar={"income": 1})


@pytest.mark.parametrize("similar", [SIMILAR, None], ids=["similar", "own row"])
def test_a_model_fed_your_rows_gets_witness_pairs_in_your_values_and_a_per_group_verdict(tmp_path, similar):
    """Each witness re-queried here through the pipeline itself; the groups recounted from the per-person truth."""
    import json

    import chiralfair
    from chiralfair.certification.result import IndividualCertificates
    from chiralfair.verdict.result import binomial_interval

    df = people()
    train, test = df.iloc[:600].reset_index(drop=True), df.iloc[600:].reset_index(drop=True)
    pipe, inputs = fitted("dt+passthrough")
    spec = DataSpec(label="y", positive_class=1, protected="sex", bins={"hours": 4, "income": 4})
    result = chiralfair.certify(pipe, train, test=test, spec=spec, similar=similar, max_seconds=None,
                                out=tmp_path / "run")
    found = result.individuals
    expected = per_person_truth(pipe, inputs, similar or {})
    k = int(expected.sum())
    assert found.undecided_share == 0 and (found.status == np.where(expected, 1, 0)).all() and 0 < k < len(test)
    assert found.n_witnesses == k and found.meta["n_witnesses_refuted"] == 0

    # each pair, in your values, through the pipeline's own predict: the labels differ and are those recorded
    table = pd.read_parquet(tmp_path / "run" / "individuals.parquet")
    hit = table[table["status"] == "affected"].reset_index(drop=True)
    assert len(hit) == k and table.loc[table["status"] != "affected", "prediction"].isna().all()
    columns = ["sex", "job", "age", "hours", "income"]
    x = hit[columns]
    x_cf = hit[[f"{c}_counterpart" for c in columns]].set_axis(columns, axis=1)
    person = test[columns].iloc[np.flatnonzero(expected)].reset_index(drop=True)
    assert (labels(pipe, x) == hit["prediction"].to_numpy()).all()
    assert (labels(pipe, x_cf) == hit["prediction_counterpart"].to_numpy()).all()
    assert (hit["prediction"] != hit["prediction_counterpart"]).all()
    # x is the person with only the listed columns moved (within the radius), their own sex; x' changes only sex
    assert (x["sex"] == person["sex"]).all() and (x_cf["sex"] != x["sex"]).all()
    for column in ("job", "income"):
        assert x[column].equals(person[column]) and x_cf[column].equals(person[column])
    for column in ("age", "hours"):
        radius = (similar or {}).get(column, 0)
        assert ((x[column] - person[column]).abs() <= radius).all() and x_cf[column].equals(x[column])
    assert x["income"].isna().any()  # the person's own missing value, kept as given

    # the per-group verdict, read by the one Verdict: groups by own sex, harmed = x gets the unfavourable label 0
    verdict = found.verdict
    assert verdict is not None and verdict.n_affected == k and verdict.n_individuals == len(test)
    harmed = np.zeros(len(test), dtype=bool)
    harmed[np.flatnonzero(expected)] = labels(pipe, x) == 0
    if similar is None:  # on their own row, the person themself gets the unfavourable label
        assert (harmed == (expected & (labels(pipe, test) == 0))).all()
    shares = {}
    for value in ("F", "M"):
        mask = (test["sex"] == value).to_numpy()
        group = verdict.group(f"sex={value}")
        assert (group["n"], group["n_affected"], group["n_harmed"]) == (
            int(mask.sum()), int((expected & mask).sum()), int((harmed & mask).sum()))
        assert (group["people_harmed_lower"], group["people_harmed_upper"]) == pytest.approx(
            binomial_interval(int((harmed & mask).sum()), int(mask.sum()), verdict.people_confidence), abs=1e-9)
        shares[f"sex={value}"] = (harmed & mask).sum() / mask.sum()
    assert verdict.worst_group == max(shares, key=shares.get)
    printed = "\n".join(result.lines())
    assert f"most harmed group: {verdict.worst_group}" in printed
    assert f"each of the {k:,} affected has a witness pair" in printed and "in your own values" in printed
    assert json.loads((tmp_path / "run" / "result.json").read_text())["individuals"]["verdict"]["worst_group"] == (
        verdict.worst_group)
    again = IndividualCertificates.from_json(found.to_json())
    assert again.witness_frame(None).equals(found.witness_frame(None))


# ------------------------------------------------------------------ a wide column of whole numbers, without bins
WIDE = {
    "hgb+onehot+standard": lambda: onehot_scaled(HistGradientBoostingClassifier(max_iter=10, random_state=0),
                                                 handle_unknown="ignore", sparse_output=False),
    "rf+ordinal+log1p": lambda: make_pipeline(
        make_column_transformer((OrdinalEncoder(), ["sex", "job"]), (FunctionTransformer(np.log1p), ["amount"]),
                                remainder="passthrough"),
        RandomForestClassifier(5, max_depth=6, random_state=0)),
    "xgboost+minmax": lambda: make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore", sparse_output=False), ["sex", "job"]),
                                remainder=MinMaxScaler()),
        xgboost.XGBClassifier(n_estimators=10, max_depth=3, n_jobs=1)),
    "lightgbm+robust": lambda: make_pipeline(
        make_column_transformer((OrdinalEncoder(), ["sex", "job"]), remainder=RobustScaler()),
        lightgbm.LGBMClassifier(n_estimators=10, num_leaves=8, min_child_samples=5, n_jobs=1, verbose=-1)),
}
WIDE_COLUMNS = ["sex", "job", "age", "amount"]


@functools.cache
def wide_fitted(name):
    """Rows with ``amount``, whole numbers over 0..4000 that no bins group: the domain has a code per number."""
    rng = np.random.default_rng(3)
    n = 900
    df = pd.DataFrame({"sex": rng.choice(["F", "M"], n), "job": rng.choice(["clerk", "farm", "tech"], n),
                       "age": rng.integers(18, 26, n), "amount": rng.integers(0, 4001, n)})
    df.loc[:1, "amount"] = [0, 4000]
    score = df.amount / 800 + (df.sex == "M") * 1.5 + (df.job == "tech") + df.age / 10 + rng.normal(0, 1, n)
    df["y"] = (score > 5.5).astype(np.int64)
    train, test = df.iloc[:600].reset_index(drop=True), df.iloc[600:].reset_index(drop=True)
    with single_native_thread():
        pipe = WIDE[name]().fit(train.drop(columns="y"), train["y"])
    return pipe, resolve_inputs(pipe, train, test=test, spec=DataSpec(label="y", positive_class=1, protected="sex"))


def wide_grid(domain):
    ranges = [range(int(lo), int(hi) + 1) for lo, hi in zip(domain.lower, domain.upper, strict=True)]
    return np.array(list(itertools.product(*ranges)), dtype=np.int64)


@pytest.mark.parametrize("name", list(WIDE))
def test_a_wide_column_is_read_at_the_models_own_thresholds_exactly(name):
    """Every code of the grid through the pipeline's predict: the reading agrees at each, over few segments."""
    from chiralfair.certification.tree_reading import read_tree_ensemble

    pipe, inputs = wide_fitted(name)
    data, model = inputs.dataset, inputs.model
    domain = data.domain
    f = domain.names.index("amount")
    assert domain.upper[f] - domain.lower[f] + 1 == 4001  # whole numbers are their own codes
    read = read_tree_ensemble(model, domain)
    n_segments = int(read.offset[f + 1] - read.offset[f])
    assert 1 < n_segments < 400  # the thresholds cut the column, not its 4,001 codes
    X = wide_grid(domain)
    with single_native_thread():
        truth = np.asarray(pipe.predict(data.to_frame(X)[WIDE_COLUMNS])) == 1
    assert (((read.score(X) > read.threshold) == (model.positive_index == 1)) == truth).all()
    result = certify_domain(model, data, max_seconds=None)
    keys, group = np.unique(np.delete(X, domain.protected, axis=1), axis=0, return_inverse=True)
    ones = np.bincount(group.reshape(-1), weights=truth, minlength=len(keys))
    idi = (ones > 0) & (ones < np.bincount(group.reshape(-1), minlength=len(keys)))
    assert result.stopped == "complete" and result.domain_volume == len(keys)
    assert result.falsified_volume == idi.sum() > 0 and result.certified_volume == (~idi).sum() > 0


def test_the_reading_is_the_same_a_few_codes_at_a_time_and_refuses_what_would_not_fit(monkeypatch):
    """Blocks of 2,000 values give the same reading; a size guard refuses before allocating, naming bins."""
    import time

    from chiralfair.certification import tree_reading
    from chiralfair.exceptions import TimeLimitError

    _, inputs = wide_fitted("hgb+onehot+standard")
    model, domain = inputs.model, inputs.dataset.domain
    whole = tree_reading.read_tree_ensemble(model, domain)
    monkeypatch.setattr(tree_reading, "READ_CHUNK_VALUES", 2000)
    calls = []
    columns = tree_reading._Feed.columns
    monkeypatch.setattr(tree_reading._Feed, "columns", lambda self, X: calls.append(len(X)) or columns(self, X))
    pieces = tree_reading.read_tree_ensemble(model, domain)
    assert max(calls) <= 2000 // 7 and sum(calls) > 4001
    assert all((a == b).all() for a, b in zip(whole.starts, pieces.starts, strict=True))
    assert (whole.reach == pieces.reach).all() and (whole.value == pieces.value).all()
    assert whole.base == pytest.approx(pieces.base, abs=1e-12)
    monkeypatch.setattr(tree_reading, "MAX_READ_BYTES", 4000 * 8)
    with pytest.raises(ConfigError, match=r"'amount'.*MiB.*bins=\{'amount': 20\}.*--bins amount=20"):
        tree_reading.read_tree_ensemble(model, domain)
    monkeypatch.setattr(tree_reading, "MAX_READ_CODES", 4000)
    with pytest.raises(ConfigError, match=r"4,014 codes here \(amount 4,001.*--bins amount=20"):
        certify_domain(model, inputs.dataset, max_seconds=None)
    monkeypatch.setattr(tree_reading, "MAX_READ_CODES", 1 << 25)
    monkeypatch.setattr(tree_reading, "MAX_READ_BYTES", 1 << 30)
    monkeypatch.setattr(tree_reading, "ANNOUNCE_CODES", 1000)
    with pytest.raises(TimeLimitError, match=r"did not finish within max_seconds \(--max-seconds\).*--bins amount"):
        tree_reading.read_tree_ensemble(model, domain, deadline=time.perf_counter() - 1)
    with pytest.raises(TimeLimitError, match="codes read in"):
        certify_domain(model, inputs.dataset, max_seconds=0)


def test_one_budget_covers_the_domain_and_the_people_and_says_how_it_was_split():
    """--max-seconds with --similar: the domain's search gets half, the people's what is left of the same budget."""
    import chiralfair

    df = people()
    train, test = df.iloc[:600].reset_index(drop=True), df.iloc[600:].reset_index(drop=True)
    pipe, inputs = fitted("hgb+onehot+standard")
    spec = DataSpec(label="y", positive_class=1, protected="sex", bins={"hours": 4, "income": 4})
    result = chiralfair.certify(pipe, train, test=test, spec=spec, similar=SIMILAR, max_seconds=30)
    given_domain = result.meta["params"]["max_seconds"]
    given_people = result.individuals.meta["params"]["max_seconds"]
    assert 0 < given_domain <= 15  # half of the one budget (less the reading of the trees)
    assert given_people <= 30 - result.seconds  # what the domain's search left of it
    budget = result.meta["budget"]
    assert budget["max_seconds"] == 30 and budget["people_seconds"] == given_people
    assert any(note.startswith("one budget of 30 s (max_seconds, --max-seconds) for the searches: the domain's got "
                               "15 s") for note in result.notes)
    # the answers are those of the whole budget: every person decided, as the recount through the pipeline says
    expected = per_person_truth(pipe, inputs, SIMILAR)
    assert (result.individuals.status == np.where(expected, 1, 0)).all()
    alone = chiralfair.certify(pipe, train, test=test, spec=spec, max_seconds=30)  # no people searched: no split
    assert alone.meta["params"]["max_seconds"] > 15 and "people_seconds" not in alone.meta["budget"]


def test_no_time_left_for_reading_the_trees_over_the_people_leaves_them_undecided_not_an_error():
    """The people's share of the budget spent before their trees are read: their own rows decide, the rest wait."""
    pipe, inputs = fitted("hgb+onehot+standard")
    people = certify_individuals(inputs.model, inputs.dataset, inputs.test_index, similar=SIMILAR, max_seconds=0)
    own = per_person_truth(pipe, inputs, {})  # each own row against the other sex, through the pipeline
    counted = people.status != 3
    assert own[counted].sum() > 0 and (people.status[counted & own] == 1).all()
    assert (people.status[counted & ~own] == 2).all() and people.meta["stats"]["unread"].startswith("model")
    assert "while the trees were read over the people's values" in people.undecided_text()


def test_a_reading_too_large_for_memory_is_refused_from_its_estimate_before_its_tables_exist(monkeypatch):
    """The leaves' tables counted whole (the bools, the hulls' comparison, the one-hot features' cumulative counts)."""
    from chiralfair.certification import tree_reading

    df = people()
    train, test = df.iloc[:600].reset_index(drop=True), df.iloc[600:].reset_index(drop=True)
    with single_native_thread():  # many leaves over few codes: the leaves' tables, not the codes' values, are large
        pipe = onehot_scaled(RandomForestClassifier(20, random_state=0), handle_unknown="ignore").fit(
            train.drop(columns="y"), train["y"])
    inputs = resolve_inputs(pipe, train, test=test, spec=DataSpec(label="y", positive_class=1, protected="sex",
                                                                  bins={"hours": 4, "income": 4}))
    model, domain = inputs.model, inputs.dataset.domain
    read = tree_reading.read_tree_ensemble(model, domain)
    n_segments = read.reach.shape[1]
    n_leaves = sum(int((tree.tree_.children_left < 0).sum()) for tree in pipe[-1].estimators_)  # the forest's own
    assert read._sets  # the one-hot features' leaves hold codes that are not intervals: cumulative counts kept
    monkeypatch.setattr(tree_reading, "MAX_READ_BYTES", n_leaves * n_segments + 1)  # the bools alone would fit
    with pytest.raises(ConfigError, match=rf"{n_leaves:,} leaves x {n_segments:,} segments of codes \(with the "
                       r"cumulative counts over the segments of 'job'\).*MiB.*--bins"):
        tree_reading.read_tree_ensemble(model, domain)
    monkeypatch.setattr(tree_reading, "MAX_READ_BYTES", 1 << 30)
    again = tree_reading.read_tree_ensemble(model, domain)  # within the limit: read as before
    assert (again.reach == read.reach).all()
