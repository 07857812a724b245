import re

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import chiralfair
from chiralfair.exceptions import ChiralfairError, ConfigError, DatasetError, ModelCapabilityError
from chiralfair.models import language


def raw_frame(n=300, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"sex": rng.choice(["f", "m"], n), "race": rng.choice(["a", "b", "c", None], n),
                       "age": rng.integers(18, 80, n).astype(float), "hours": rng.normal(40, 10, n)})
    df.loc[rng.random(n) < 0.1, "age"] = np.nan
    df["y"] = np.where(((df["sex"] == "m") & (df["hours"] > 38)) | (df["hours"] > 50), ">50K", "<=50K")
    return df


def pipeline(df, *, handle_unknown="ignore"):
    pre = ColumnTransformer([("cat", OneHotEncoder(handle_unknown=handle_unknown), ["sex", "race"]),
                             ("num", make_pipeline(SimpleImputer(), StandardScaler()), ["age", "hours"])])
    return Pipeline([("pre", pre), ("lr", LogisticRegression())]).fit(df.drop(columns="y"), df["y"])


KW = dict(label="y", positive_class=">50K", protected=["sex"], bins={"age": [0, 30, 50, 90], "hours": 10},
          seeds="cluster", max_global=20, max_local=5)


@pytest.mark.slow
def test_raw_pipeline_audit_pairs_recheck_against_the_pipeline():
    df = raw_frame()
    pipe = pipeline(df)
    res = chiralfair.audit(pipe, df, **KW)
    assert res.n_idis > 0
    ds = res.dataset
    r = res.outcome.result
    own = pipe.predict(ds.to_frame(r.idis)) == ">50K"
    other = pipe.predict(ds.to_frame(r.counterparts)) == ">50K"
    assert (own != other).all()
    assert (own.astype(int) == r.idi_labels).all()
    text = res.summary()
    assert "n_idis" in text and f"{res.n_idis:,}" in text and "aequitas with cluster seeds" in text
    html = res._repr_html_()
    assert "<table>" in html and "First IDI pairs" in html
    assert res.to_dict()["meta"]["protected"] == ["sex"]


def test_same_random_state_same_result_and_meta_records_its_type():
    df = raw_frame()
    pipe = pipeline(df)
    a = chiralfair.audit(pipe, df, **KW, random_state=np.random.RandomState(3))
    b = chiralfair.audit(pipe, df, **KW, random_state=np.random.RandomState(3))
    assert (a.outcome.result.idis == b.outcome.result.idis).all() and a.n_idis == b.n_idis
    meta = a.to_dict()["meta"]["random_state"]
    assert "RandomState" in meta["random_state"] and isinstance(meta["resolved_random_state"], int)
    c = chiralfair.audit(pipe, df, **KW, random_state=meta["resolved_random_state"])
    assert (c.outcome.result.idis == a.outcome.result.idis).all()
    with pytest.raises(ConfigError, match="random_state"):
        chiralfair.audit(pipe, df, **KW, random_state="zero")


@pytest.mark.slow  # shap's permutation explainer compiles with numba on first use (10-30 s)
def test_iandd_trains_the_chiral_pipeline_on_decoded_frames():
    df = raw_frame()
    pipe = pipeline(df)
    kw = {**KW, "seeds": "iandd", "seed_params": {"max_explained_black_box": 10}}
    res = chiralfair.audit(pipe, df, **kw)
    seeds = res.to_dict()["seeds"]
    assert seeds["strategy"] == "iandd" and seeds["n_initial_idis"] > 0


def test_unseen_protected_value_is_left_out_with_a_note():
    df = raw_frame()
    df["race"] = df["race"].fillna("c")
    trained_on = df[df["race"] != "c"]
    pipe = pipeline(trained_on, handle_unknown="error")
    res = chiralfair.audit(pipe, df, **{**KW, "protected": ["race"]})
    dom = res.dataset.domain
    assert [dom.features[dom.protected[0]].label(v) for v in dom.protected_values[0]] == ["a", "b"]
    assert any("refuses race='c'" in n and "left out of the protected domain" in n for n in res.notes)
    assert not (res.dataset.X[:, dom.index("race")] == 2).any()


def test_protected_attribute_with_one_accepted_value_is_refused():
    df = raw_frame()
    pipe = pipeline(df[df["sex"] == "m"], handle_unknown="error")
    with pytest.raises(ModelCapabilityError, match="refuses protected attribute 'sex' values 'f'"):
        chiralfair.audit(pipe, df, **KW)


def test_model_on_other_columns_names_both_lists():
    df = raw_frame()
    pipe = pipeline(df)
    with pytest.raises(ModelCapabilityError, match=r"does not have: hours\. Model columns: sex, race, age, hours; "
                                                   r"data columns: sex, race, age"):
        chiralfair.audit(pipe, df.drop(columns="hours"), **{**KW, "bins": {"age": [0, 30, 50, 90]}})


def test_numpy_model_with_other_width_refused():
    df = raw_frame()
    est = LogisticRegression().fit(np.zeros((4, 3)) + np.arange(4)[:, None], [">50K", "<=50K"] * 2)
    with pytest.raises(ModelCapabilityError, match="takes 3 features but the data has 4"):
        chiralfair.audit(est, df, **KW, model_input="codes")


def test_model_classes_without_the_positive_class_refused():
    df = raw_frame()
    est = LogisticRegression().fit(np.zeros((4, 4)) + np.arange(4)[:, None], [0, 1, 0, 1])
    with pytest.raises(ConfigError, match="positive_class='>50K' is not one of the classes"):
        chiralfair.audit(est, df, **KW, model_input="codes")


def test_frame_input_refusals():
    df = raw_frame()
    pipe = pipeline(df)
    with pytest.raises(DatasetError, match="label= is needed"):
        chiralfair.audit(pipe, df, protected=["sex"])
    with pytest.raises(DatasetError, match="positive_class= is needed: label column 'y' holds '<=50K', '>50K'"):
        chiralfair.audit(pipe, df, label="y", protected=["sex"], bins=KW["bins"])
    with pytest.raises(ConfigError, match="unknown generator|generator"):
        chiralfair.audit(pipe, df, **{**KW, "generator": "nope"})


def test_black_box_callable_with_iandd_is_refused_before_the_search():
    df = raw_frame()
    with pytest.raises(ConfigError, match="cannot be retrained here; use seeds='cluster'"):
        chiralfair.audit(lambda X: (X[:, 3] > 5).astype(int), df, **{**KW, "seeds": "iandd"}, model_input="codes")


@pytest.mark.slow
def test_out_folder_written_and_left_clean_on_failure(tmp_path):
    df = raw_frame()
    pipe = pipeline(df)
    out = tmp_path / "run"
    res = chiralfair.audit(pipe, df, **KW, out=out)
    assert (out / "result.json").exists() and (out / "idis.parquet").exists()
    back = pd.read_parquet(out / "idis.parquet")
    assert len(back) == res.n_idis
    bad = tmp_path / "bad" / "run"
    with pytest.raises(ChiralfairError):
        chiralfair.audit(pipe, df.drop(columns="hours"), **{**KW, "bins": {"age": 3}}, out=bad)
    assert not (tmp_path / "bad").exists()


def test_integer_column_names_ask_what_the_model_takes():
    df = raw_frame()
    names = {c: i for i, c in enumerate(c for c in df.columns if c != "y")}
    numbered = df.rename(columns=names)
    categories = make_pipeline(SimpleImputer(strategy="constant", fill_value="NA"),
                               OneHotEncoder(handle_unknown="ignore"))
    pre = ColumnTransformer([("cat", categories, [names["sex"], names["race"]]),
                             ("num", make_pipeline(SimpleImputer(), StandardScaler()), [names["age"], names["hours"]])])
    pipe = Pipeline([("pre", pre), ("lr", LogisticRegression())]).fit(numbered.drop(columns="y"), numbered["y"])
    assert not hasattr(pipe, "feature_names_in_")  # sklearn records names only when all are strings
    kw = {**KW, "protected": [names["sex"]], "bins": {names["age"]: [0, 30, 50, 90], names["hours"]: 10}}
    with pytest.raises(ConfigError, match="model_input='frame'"):
        chiralfair.audit(pipe, numbered, **kw)
    res = chiralfair.audit(pipe, numbered, model_input="frame", **kw)
    r = res.outcome.result
    assert res.n_idis > 0
    assert ((pipe.predict(res.dataset.to_frame(r.idis)) == ">50K").astype(int) == r.idi_labels).all()


def test_a_model_without_the_protected_column_is_said_to_have_no_idis_on_it(monkeypatch):
    df = raw_frame()
    pre = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), ["race"]),
                             ("num", make_pipeline(SimpleImputer(), StandardScaler()), ["age", "hours"])])
    blind = Pipeline([("pre", pre), ("lr", LogisticRegression())]).fit(df[["race", "age", "hours"]], df["y"])
    monkeypatch.setattr(language, "_WARNED_EXTRA", set())  # warned once per process: not only in the first test
    with pytest.warns(UserWarning, match=r"fitted on fewer columns than the data: it ignores \['sex'\]"):
        res = chiralfair.audit(blind, df, **KW)
    assert res.n_idis == 0
    assert any("does not take protected attribute(s) sex" in n for n in res.notes)


@pytest.mark.parametrize(("change", "message"), [
    (lambda df: df[["sex", "y"]], "every column of the data is a protected attribute (sex)"),
    (lambda df: df.assign(y=1), "holds one class only: every one of the 200 rows is the positive class"),
])
def test_data_on_which_the_question_cannot_be_asked_is_refused_with_the_reason(change, message):
    from sklearn.dummy import DummyClassifier

    from chiralfair.exceptions import DatasetError

    rng = np.random.default_rng(0)
    df = change(pd.DataFrame({"sex": rng.choice(["f", "m"], 200), "h": rng.integers(0, 50, 200),
                              "y": rng.integers(0, 2, 200)}))
    model = DummyClassifier().fit(np.zeros((4, 1)), [0, 1, 0, 1])
    with pytest.raises(DatasetError, match=re.escape(message)):
        chiralfair.audit(model, df, label="y", positive_class=1, favourable=1, protected="sex", model_input="codes")


@pytest.mark.parametrize("test_size", [1e-9, 1 - 1e-9])
def test_a_test_size_that_leaves_a_side_without_a_class_is_refused_with_the_range(test_size):
    from chiralfair.exceptions import ConfigError

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"sex": rng.choice(["f", "m"], 200), "h": rng.integers(0, 50, 200),
                       "y": rng.integers(0, 2, 200)})
    with pytest.raises(ConfigError, match=r"for this data test_size must lie in \[0.01, 0.99\]"):
        chiralfair.audit(LogisticRegression(), df, label="y", positive_class=1, favourable=1, protected="sex",
                         test_size=test_size, model_input="codes")


@pytest.mark.parametrize(("call", "message"), [
    (lambda m, df, kw: chiralfair.audit(m, df, **kw, generator="aequitas", generator_params={"max_iterr": 5}),
     "generator 'aequitas' takes no parameter 'max_iterr'; its parameters: delta_pr, delta_v, max_global"),
    (lambda m, df, kw: chiralfair.audit(m, df, **kw, generator_params={"max_iter": 5}),
     "need a named generator: 'auto' picks"),
    (lambda m, df, kw: chiralfair.audit(m, df, **kw, seeds="random", seed_params={"explainer": "auto"}),
     "seed strategy 'random' takes no parameter 'explainer'; its parameters: none"),
    (lambda m, df, kw: chiralfair.audit(m, df, **kw, verdict_params={"margn": 0.1}),
     "verdict_params: unknown key 'margn'; valid: batch_size, confidence"),
    (lambda m, df, kw: chiralfair.estimate(m, df, **kw, margn=0.1),
     "estimate's keyword arguments: unknown key 'margn'"),
    (lambda m, df, kw: chiralfair.retrain(m, df, **kw, methd="unaware"),
     "retrain's keyword arguments: unknown key 'methd'; valid: ensemble"),
])
def test_every_parameter_name_is_checked_before_any_work_and_refused_with_the_valid_ones(call, message):
    df = pd.DataFrame({"sex": ["f", "m"] * 50, "h": np.arange(100), "y": [0, 1] * 50})
    model = LogisticRegression().fit(df[["h"]], df["y"])
    with pytest.raises(ConfigError, match=re.escape(message)):
        call(model, df, dict(label="y", positive_class=1, favourable=1, protected="sex"))


def test_an_own_model_is_searched_by_the_generator_auto_picks_and_the_cli_keeps_aequitas_for_benchmarks():
    from chiralfair.cli.options import Search

    df = raw_frame()
    res = chiralfair.audit(pipeline(df), df, **KW)
    choice = res.outcome.result.meta["generator_choice"]
    assert (choice["asked"], choice["generator"]) == ("auto", "aequitas") and "probabilities" in choice["reason"]
    assert "aequitas (picked by auto) with cluster seeds" in res.summary()
    assert Search().params(own_model=True)["generator"] == "auto"
    assert Search().params()["generator"] == "aequitas"
    assert Search(generator="kosei").params(own_model=True)["generator"] == "kosei"


@pytest.mark.parametrize("favourable, named", [(">50K", "favourable label 1 (>50K)"),
                                               ("<=50K", "favourable label 0 (<=50K)")])
def test_the_favourable_label_is_named_by_the_label_columns_own_value(favourable, named):
    df = raw_frame()
    verdict = chiralfair.estimate(pipeline(df), df, label="y", positive_class=">50K", favourable=favourable,
                                  protected="sex", bins={"age": [0, 30, 50, 90], "hours": 10})
    assert named in verdict.summary()
    assert "not >50K" not in verdict.summary()  # the label holds just one other value: it is named


def test_a_third_label_value_read_as_the_negative_class_is_warned_about_with_its_count():
    df = raw_frame()
    df.loc[:9, "y"] = "maybe"
    with pytest.warns(chiralfair.exceptions.DataWarning,
                      match=r"label column 'y' holds 2 values besides positive_class '>50K': '<=50K' \(\d+ rows\), "
                            r"'maybe' \(10 rows\); every one is read as label 0"):
        from_rows = chiralfair.datasets.from_frame(df, label="y", positive_class=">50K", protected="sex",
                                                   bins={"age": [0, 30, 50, 90], "hours": 10})
    assert int(from_rows.y[:10].sum()) == 0  # the 'maybe' rows are label 0, as the warning says
