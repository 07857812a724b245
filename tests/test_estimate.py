"""chiralfair.verdict.estimate: the share discriminated with its interval, who is harmed, how badly."""

import json
import math
from dataclasses import replace

import numpy as np
import pytest
from toys import fair_module, is_biased_idi, toy_dataset, toy_domain

from chiralfair.datasets.base import Dataset
from chiralfair.exceptions import ConfigError, DataWarning, ModelCapabilityError
from chiralfair.models import as_model
from chiralfair.verdict import GROUP_COLUMNS, Verdict, estimate

# The biased toy discriminates on sex exactly when 8 <= a + b <= 10: 9 + 10 + 9 of the 100 (a, b) pairs.
BIASED_SHARE = 28 / 100
Z95 = 1.959963984540054


def all_points(domain):
    grids = np.meshgrid(*[np.arange(f.lo, f.hi + 1) for f in domain.features], indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=1)


def brute_force_affected(model, domain, X, gamma=None):
    """Whether each row of X has a counterpart with another label (and a gap >= gamma), one model call per PA combo."""
    own_label, own_p = model.predict_with_proba(X)
    affected = np.zeros(len(X), dtype=bool)
    for combo in domain.combinations:
        Xc = X.copy()
        Xc[:, list(domain.protected)] = combo
        label, p = model.predict_with_proba(Xc)
        pair = label != own_label
        if gamma is not None:
            pair &= np.abs(p - own_p) >= gamma
        affected |= pair
    return affected, own_label


def test_interval_covers_the_true_share_in_at_least_93_of_100_repetitions(biased_model):
    data = toy_dataset(50)
    covered = 0
    for seed in range(100):
        v = estimate(biased_model, data, population="domain", exact=False, margin=0.03, favourable=1,
                     random_state=seed)
        covered += v.lower <= BIASED_SHARE <= v.upper
    assert covered >= 93


def test_the_ground_truth_share_is_what_the_toy_docstring_says(domain, biased_model):
    assert is_biased_idi(all_points(domain)).mean() == pytest.approx(BIASED_SHARE)


def test_fair_model_estimate_is_zero_with_upper_bound_below_the_margin(fair_model):
    v = estimate(fair_model, toy_dataset(50, biased=False), population="domain", exact=False, margin=0.005,
                 favourable=1)
    assert v.n_affected == 0 and v.share == 0.0
    assert v.upper < 0.005
    assert v.stopped_by == "margin" and not v.exact


def test_harm_table_names_the_group_the_model_disfavours(biased_model):
    # The biased toy adds 3 to the logit of sex=1 (Male): affected women get the unfavourable label 0.
    v = estimate(biased_model, toy_dataset(50), population="domain", exact=False, margin=0.02, favourable=1)
    groups = {g["group"]: g for g in v.groups}
    assert groups["sex=Female"]["harmed_share"] == 1.0 and groups["sex=Male"]["harmed_share"] == 0.0
    assert groups["sex=Female"]["harmed_lower"] > 0.9 and groups["sex=Male"]["harmed_upper"] < 0.1
    worst = max(v.groups, key=lambda g: g["harmed_share"])
    assert worst["group"] == "sex=Female"
    # with label 0 favourable the same pairs harm the men
    flipped = estimate(biased_model, toy_dataset(50), population="domain", exact=False, margin=0.02, favourable=0)
    assert max(flipped.groups, key=lambda g: g["harmed_share"])["group"] == "sex=Male"


def test_stopping_rule_half_width_within_margin_and_queries_near_the_analytic_sample_size(biased_model):
    margin = 0.005
    analytic = Z95**2 * BIASED_SHARE * (1 - BIASED_SHARE) / margin**2  # about 30,978 individuals
    v = estimate(biased_model, toy_dataset(50), population="domain", exact=False, margin=margin, favourable=1,
                 random_state=3)
    assert v.stopped_by == "margin"
    assert v.half_width <= margin
    assert 0.97 * analytic <= v.n_individuals <= 1.05 * analytic
    assert v.n_queries == 2 * v.n_individuals  # sex has two values: two queries per individual


def test_exact_enumeration_of_a_tiny_domain_equals_a_brute_force_count(biased_model):
    dom = toy_domain(("sex", "race"))
    data = replace(toy_dataset(50), domain=dom)
    v = estimate(biased_model, data, population="domain", favourable=1, gamma=0.3)
    assert v.exact and v.stopped_by == "exact" and v.lower == v.upper == v.share
    X = all_points(dom)
    affected, own_label = brute_force_affected(biased_model, dom, X, gamma=0.3)
    assert v.n_individuals == len(X) == v.population_size
    assert v.n_affected == int(affected.sum())
    assert v.n_harmed == int((affected & (own_label == 0)).sum())
    for g in v.groups:
        if g["attribute"] == "sex":
            mask = X[:, 0] == (0 if g["group"] == "sex=Female" else 1)
            assert g["n_affected"] == int(affected[mask].sum())
    # one query per key and combination: a sixth of checking every point (6 combinations each)
    assert v.n_queries == len(X)


def test_exact_enumeration_of_rows_counts_duplicate_rows_as_individuals(biased_model):
    data = toy_dataset(400)
    data = replace(data, X=np.concatenate([data.X, data.X[:100]]), y=np.concatenate([data.y, data.y[:100]]))
    v = estimate(biased_model, data, population="rows", favourable=1)
    assert v.exact and v.n_individuals == 500
    affected, _ = brute_force_affected(biased_model, data.domain, data.X)
    assert v.n_affected == int(affected.sum())
    assert v.n_queries == 2 * len(np.unique(data.domain.keys(data.X)))


def test_sampled_rows_without_replacement_say_no_finite_population_correction(biased_model):
    data = toy_dataset(3000)
    v = estimate(biased_model, data, population="rows", exact=False, margin=0.03, favourable=1)
    assert v.stopped_by == "margin" and v.n_individuals < 3000
    assert any("finite-population correction" in n for n in v.notes)
    assert any("Bonferroni" in n for n in v.notes)


def test_test_population_takes_the_test_rows_and_refuses_without_them(biased_model):
    data = toy_dataset(300)
    with pytest.raises(ConfigError, match="test_index"):
        estimate(biased_model, data, population="test", favourable=1)
    v = estimate(biased_model, data, population="test", test_index=np.arange(100), favourable=1)
    assert v.population_size == 100 and v.n_individuals == 100


def test_query_budget_stops_before_the_margin_and_says_so(biased_model):
    v = estimate(biased_model, toy_dataset(50), population="domain", exact=False, margin=0.001, max_queries=3000,
                 favourable=1)
    assert v.stopped_by == "budget" and v.n_queries <= 3000 and v.half_width > 0.001
    assert any("budget" in n for n in v.notes)


def test_black_box_model_has_no_gap_and_refuses_gamma():
    black_box = as_model(lambda X: (X[:, 2] + X[:, 3] + 3 * X[:, 0] > 10.5).astype(int), name="box")
    v = estimate(black_box, toy_dataset(50), population="domain", favourable=1)
    assert v.gap is None and v.share == pytest.approx(BIASED_SHARE)
    assert "no probabilities" in v.summary()
    with pytest.raises(ModelCapabilityError, match="predict_proba"):
        estimate(black_box, toy_dataset(50), population="domain", favourable=1, gamma=0.1)


def test_rules_describe_the_affected_individuals():
    # Label 1 only for men with c >= 3: exactly the individuals with c >= 3 are affected.
    box = as_model(lambda X: ((X[:, 0] == 1) & (X[:, 4] >= 3)).astype(int), name="c-box")
    v = estimate(box, toy_dataset(50), population="domain", favourable=1)
    assert v.share == pytest.approx(2 / 5)
    assert v.rules[0]["rule"] == "c >= 3"
    assert v.rules[0]["affected_share"] == 1.0 and v.rules[0]["coverage"] == 1.0


def test_gap_distribution_and_gamma_shrink_the_affected_share(biased_model):
    data = toy_dataset(50)
    v0 = estimate(biased_model, data, population="domain", favourable=1)
    v1 = estimate(biased_model, data, population="domain", favourable=1, gamma=0.8)
    assert v1.share < v0.share
    q = v0.gap["quantiles"]
    assert 0 <= q["0.5"] <= q["0.9"] <= q["0.99"] <= q["1.0"] <= 1
    assert sum(v0.gap["histogram"]["counts"]) == v0.n_individuals
    assert sum(v0.gap["histogram"]["counts_affected"]) == v0.n_affected


def test_favourable_defaults_for_benchmarks_and_must_be_given_otherwise(biased_model):
    data = toy_dataset(50)
    with pytest.raises(ConfigError, match="favourable"):
        estimate(biased_model, data, population="domain")
    compas_like = replace(data, name="compas", positive_class="> 5")
    assert estimate(biased_model, compas_like, population="domain").favourable == 0
    census_like = replace(data, name="census", positive_class=">50K")
    assert estimate(biased_model, census_like, population="domain").favourable == 1
    with pytest.raises(ConfigError, match="favourable"):
        estimate(biased_model, data, population="domain", favourable=2)


@pytest.mark.parametrize("bad, match", [({"margin": 0}, "margin"), ({"confidence": 1.0}, "confidence"),
                                        ({"population": "people"}, "population"), ({"method": "wald"}, "method"),
                                        ({"gamma": 1.5}, "gamma"), ({"max_queries": 1}, "max_queries")])
def test_bad_parameters_are_named(biased_model, bad, match):
    params = {"population": "domain", "favourable": 1, "exact": False, **bad}
    with pytest.raises(ConfigError, match=match):
        estimate(biased_model, toy_dataset(50), **params)


def test_same_random_state_same_verdict(biased_model):
    data = toy_dataset(50)
    a, b = (estimate(biased_model, data, population="domain", exact=False, margin=0.02, favourable=1,
                     random_state=7) for _ in range(2))
    assert replace(a, seconds=0.0) == replace(b, seconds=0.0)


def test_clopper_pearson_interval_is_at_least_as_wide_as_wilson_on_the_same_sample(biased_model):
    data = toy_dataset(50)
    w = estimate(biased_model, data, population="domain", exact=False, margin=0.02, max_queries=2000, favourable=1)
    cp = estimate(biased_model, data, population="domain", exact=False, margin=0.02, max_queries=2000, favourable=1,
                  method="clopper-pearson")
    assert w.n_individuals == cp.n_individuals == 1000 and w.n_affected == cp.n_affected
    assert cp.upper - cp.lower >= w.upper - w.lower


def test_verdict_json_round_trip_and_frame(biased_model):
    data = replace(toy_dataset(50), domain=toy_domain(("sex", "race")))
    v = estimate(biased_model, data, population="domain", exact=False, margin=0.02, favourable=1)
    back = Verdict.from_json(v.to_json())
    assert back == v
    assert json.loads(v.to_json())["half_width"] == pytest.approx(v.half_width)
    frame = v.to_frame()
    assert list(frame.columns) == [*GROUP_COLUMNS, "confidence"]
    assert len(frame) == 1 + 2 + 3 + 6  # all, sex values, race values, combinations
    assert frame.iloc[0]["share_affected"] == v.share
    assert math.isclose(frame.iloc[1]["confidence"], 1 - 0.05 / (3 * 11))
    assert "Bonferroni" in v.summary()


def test_verdict_of_a_toy_dataset_built_by_hand_keeps_its_names():
    dom = toy_domain()
    X = all_points(dom)
    data = Dataset("hand", X, np.zeros(len(X), dtype=np.int64), dom, positive_class="approved")
    v = estimate(as_model(fair_module()), data, population="rows", favourable=1)
    assert v.meta["dataset"] == "hand" and v.share == 0.0 and v.exact
    assert v.protected == ("sex",)


@pytest.mark.slow
def test_cli_estimate_prints_the_verdict_first(tmp_path):
    from realdata import real_data_home_or_skip
    from typer.testing import CliRunner

    from chiralfair.cli import app

    home = str(real_data_home_or_skip())
    args = ["estimate", "--dataset", "german", "--protected", "sex", "--model", "lr", "--population", "domain",
            "--margin", "0.02", "--data-home", home, "--cache-dir", str(tmp_path)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert res.output.startswith("Share of individuals affected")
    assert "Who is harmed" in res.output and "How badly" in res.output
    res = CliRunner().invoke(app, [*args, "--json"])
    v = Verdict.from_json(res.output)
    assert v.population == "domain" and v.half_width <= 0.02 and v.meta["model_f1"] > 0
    res = CliRunner().invoke(app, [*args, "--margin", "0"])
    assert res.exit_code == 2 and "--margin" in res.output


def test_a_one_hot_group_is_one_attribute_in_the_harm_table():
    from test_domain_groups import RACE, grouped, one_hot_data, race_biased_module

    dom = grouped([RACE])
    X = one_hot_data(400)
    data = Dataset("one-hot", X, np.zeros(len(X), dtype=np.int64), dom, positive_class="approved")
    v = estimate(as_model(race_biased_module()), data, population="rows", favourable=1)
    groups = {g["group"]: g for g in v.groups}
    assert set(groups) == {"race=race_A", "race=race_B", "race=race_C"}
    # race_B adds 3 to the logit: the affected of the other two races get the unfavourable label
    assert groups["race=race_B"]["harmed_share"] == 0.0
    assert groups["race=race_A"]["harmed_share"] == 1.0 and groups["race=race_C"]["harmed_share"] == 1.0
    assert sum(g["n"] for g in v.groups) == len(X)


def test_rules_over_binned_ordinal_features_read_as_rules():
    from chiralfair.domain import Feature
    from chiralfair.verdict.estimation import _range_rule

    age = Feature("age", 1, 9, kind="ordinal", labels={v: f"{10 * v}-{10 * v + 9}" for v in range(1, 10)})
    assert _range_rule(age, 1, 4) == "age 40-49 or below"
    assert _range_rule(age, 4, 9) == "age 40-49 or above"
    assert _range_rule(age, 3, 5) == "age from 30-39 to 50-59"
    assert _range_rule(age, 4, 4) == "age in 40-49"


def test_every_group_says_the_share_of_its_individuals_harmed(dataset, biased_model):
    v = estimate(biased_model, dataset, population="rows", favourable=1)
    for g in v.groups:
        assert g["share_harmed"] == g["n_harmed"] / g["n"]
        assert g["share_harmed"] <= g["share_affected"]
    assert sum(g["n_harmed"] for g in v.groups if g["attribute"] == v.protected[0]) == v.n_harmed


def test_people_no_counterpart_of_whom_could_exist_are_left_out_of_the_share_and_counted():
    import pandas as pd

    from chiralfair.datasets import from_frame

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"sex": rng.choice(["f", "m"], 300), "role": rng.choice(["wife", "husband", "single"], 300),
                       "h": rng.integers(0, 50, 300)})
    df["y"] = ((df["h"] + 10 * (df["sex"] == "m")) > 30).astype(int)
    with pytest.warns(DataWarning):
        data = from_frame(df, label="y", positive_class=1, protected="sex",
                          constraints=["sex=f excludes role=husband", "sex=m excludes role=wife"])
    from sklearn.linear_model import LogisticRegression

    model = as_model(LogisticRegression().fit(data.X, data.y))
    verdict = estimate(model, data, population="rows", favourable=1)
    # a husband's only counterpart is a female husband, a wife's a male wife: neither could exist
    stuck = ((df["sex"] == "m") & (df["role"] == "husband")) | ((df["sex"] == "f") & (df["role"] == "wife"))
    assert verdict.n_left_out == int(stuck.sum()) > 0
    assert verdict.n_individuals == 300 - verdict.n_left_out
    assert verdict.share == verdict.n_affected / verdict.n_individuals
    assert verdict.notes[0].startswith(f"{verdict.n_left_out} of the 300 individuals read are left out")
    assert sum(g["n"] for g in verdict.groups) == verdict.n_individuals
    assert Verdict.from_json(verdict.to_json()) == verdict


def husbands_and_wives(n=300):
    import pandas as pd

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"sex": rng.choice(["f", "m"], n), "role": rng.choice(["wife", "husband", "single"], n),
                       "h": rng.integers(0, 50, n)})
    df["y"] = ((df["h"] + 10 * (df["sex"] == "m")) > 30).astype(int)
    return df


def test_estimate_and_the_gate_say_who_is_left_out_by_a_constraint_on_the_first_screen():
    import warnings

    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    import chiralfair
    from chiralfair.pipeline import check_fairness
    from chiralfair.verdict import decide

    df = husbands_and_wives()
    train, test = df.iloc[:200], df.iloc[200:]
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["sex", "role"]), remainder="passthrough"),
                         LogisticRegression()).fit(train.drop(columns="y"), train["y"])
    rules = ["sex=f excludes role=husband", "sex=m excludes role=wife"]
    kwargs = {"test": test, "label": "y", "positive_class": 1, "favourable": 1, "protected": "sex",
              "constraints": rules}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        verdict = chiralfair.estimate(pipe, train, **kwargs)
        decision = check_fairness(pipe, train, max_share=0.5, **kwargs)
    stuck = int((((test["sex"] == "m") & (test["role"] == "husband")) |
                 ((test["sex"] == "f") & (test["role"] == "wife"))).sum())
    assert verdict.n_left_out == stuck > 0
    head = "\n".join(verdict.summary().splitlines()[:4])
    assert f"  left out: {stuck} individuals, none of whose counterparts could exist (each breaks: " in head
    checked = f"left out: {stuck} of the 100 individuals read were left out, none of whose counterparts"
    assert checked in decision.line()
    # a threshold on the share itself: undecided, and the hint says the constraint took the rows, not the data
    undecided = decide(verdict, verdict.share)
    assert undecided.outcome == "undecided"
    assert (f"undecided: {100 - stuck} held-out rows are too few to tell at this confidence, because the "
            f"constraint(s) left the other {stuck} out (above): loosen them") in undecided.line()
    assert checked in undecided.line()


def test_estimate_counts_the_rows_of_a_protected_value_the_model_refuses_as_left_out_on_the_first_screen():
    import warnings

    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    import chiralfair

    df = husbands_and_wives(400)
    df["race"] = np.where(np.arange(400) % 20 == 0, "x", np.where(np.arange(400) % 2 == 0, "a", "b"))
    train, test = df.iloc[:300], df.iloc[300:]
    fit_on = train[train["race"] != "x"]  # the model's encoder never meets 'x', and refuses it
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(handle_unknown="error"), ["sex", "role", "race"]),
                                                 remainder="passthrough"),
                         LogisticRegression()).fit(fit_on.drop(columns="y"), fit_on["y"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        verdict = chiralfair.estimate(pipe, train, test=test, label="y", positive_class=1, favourable=1,
                                      protected="race")
    n_x = int((test["race"] == "x").sum())
    assert verdict.n_individuals == len(test) - n_x
    head = "\n".join(verdict.summary().splitlines()[:4])
    assert f"  left out: {n_x} individuals with race=x, a value the model refuses" in head


def test_a_model_that_gives_every_held_out_row_one_label_says_so_on_the_first_screen():
    import warnings

    from sklearn.dummy import DummyClassifier

    import chiralfair
    from chiralfair.pipeline import check_fairness

    df = husbands_and_wives()
    train, test = df.iloc[:200], df.iloc[200:]
    constant = DummyClassifier(strategy="constant", constant=0).fit(train.drop(columns="y"), train["y"])
    kwargs = {"test": test, "label": "y", "positive_class": 1, "favourable": 1, "protected": "sex"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        verdict = chiralfair.estimate(constant, train, **kwargs)
        decision = check_fairness(constant, train, max_share=0.05, **kwargs)
    assert verdict.n_affected == 0 and verdict.meta["one_label"] == 0
    line = "note: the model predicts one label (0) for every held-out row, so no counterpart can change it: 0% " \
           "affected is no evidence of fairness"
    assert line in "\n".join(verdict.summary().splitlines()[:4])
    assert line in decision.line()


def test_held_out_labels_of_one_class_say_f1_is_undefined():
    import warnings

    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    import chiralfair

    df = husbands_and_wives()
    train, test = df.iloc[:200], df.iloc[200:]
    test = test[test["y"] == 0]
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["sex", "role"]), remainder="passthrough"),
                         LogisticRegression()).fit(train.drop(columns="y"), train["y"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        verdict = chiralfair.estimate(pipe, train, test=test, label="y", positive_class=1, favourable=1,
                                      protected="sex")
    assert verdict.meta["model_one_class"] == 0
    assert any(n.startswith("F1 is undefined here: the labels of the given test rows") and "(label 0)" in n
               for n in verdict.notes)


def test_a_model_whose_probabilities_are_nan_is_refused_naming_it_and_the_rows():
    import warnings

    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    import chiralfair
    from chiralfair.exceptions import ModelOutputError

    class NaNForWives(ClassifierMixin, BaseEstimator):
        def __init__(self, inner=None):
            self.inner = inner

        def fit(self, X, y):
            self.inner.fit(X, y)
            self.classes_, self.feature_names_in_ = self.inner.classes_, self.inner.feature_names_in_
            return self

        def predict(self, X):
            return self.inner.predict(X)

        def predict_proba(self, X):
            p = self.inner.predict_proba(X).copy()
            p[X["role"].to_numpy() == "wife"] = np.nan
            return p

    df = husbands_and_wives()
    train, test = df.iloc[:200], df.iloc[200:]
    inner = make_pipeline(make_column_transformer((OneHotEncoder(), ["sex", "role"]), remainder="passthrough"),
                          LogisticRegression())
    model = NaNForWives(inner).fit(train.drop(columns="y"), train["y"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ModelOutputError, match=r"model 'NaNForWives' returned probabilities that are NaN or "
                                                   r"infinite for [\d,]+ of [\d,]+ rows \(predict_proba\)"):
            chiralfair.estimate(model, train, test=test, label="y", positive_class=1, favourable=1, protected="sex")


@pytest.mark.parametrize("kind", ["callable", "torch"])
def test_nan_probabilities_of_any_model_kind_are_refused_naming_the_model(kind):
    from chiralfair.exceptions import ModelOutputError

    X = np.zeros((4, 2), dtype=np.int64)
    if kind == "callable":
        def proba(X):
            return np.where(np.arange(len(X))[:, None] % 2 == 0, np.nan, 0.5) * np.ones((len(X), 2))

        model = as_model(proba, name="nan-callable", output="probability")
    else:
        torch = pytest.importorskip("torch")

        class NaNLogit(torch.nn.Module):
            def forward(self, x):
                return torch.full((len(x), 1), float("nan"))

        model = as_model(NaNLogit(), name="nan-torch", output="logit")
    with pytest.raises(ModelOutputError, match=rf"model 'nan-{kind}' returned .*NaN or infinite .*for [24] of 4 rows"):
        model.predict_proba(X)
