"""MAFT and its finite-difference gradient: the estimate against analytic gradients, its cost, its probes' domain."""

import numpy as np
import pandas as pd
import pytest
import torch
from gradient_toys import assert_reported_pairs_hold
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from toys import biased_module, is_biased_idi, toy_dataset, toy_domain

from chiralfair.domain import Domain, Feature
from chiralfair.exceptions import ConfigError, ModelCapabilityError
from chiralfair.generators import GENERATORS, make_generator
from chiralfair.generators.finite_differences import (
    FiniteDifferences,
    finite_difference_gradient,
    probe_steps,
    probed_features,
)
from chiralfair.generators.maft import MAFT
from chiralfair.models import as_model


def _lr_model():
    data = toy_dataset()
    return as_model(make_pipeline(StandardScaler(), LogisticRegression(C=0.5)).fit(data.X, data.y), name="lr")


class Smooth64(torch.nn.Module):
    """A small tanh network in float64 with fixed random weights (smooth: finite differences converge)."""

    def __init__(self, seed=0):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.w1 = torch.nn.Parameter(torch.tensor(rng.normal(size=(5, 8)) / 3, dtype=torch.float64))
        self.w2 = torch.nn.Parameter(torch.tensor(rng.normal(size=(8, 1)), dtype=torch.float64))

    def forward(self, x):
        return torch.sigmoid(torch.tanh(x @ self.w1 - 1.0) @ self.w2)


@pytest.mark.parametrize("make", [_lr_model, lambda: as_model(Smooth64(), name="tanh64")], ids=["lr", "torch64"])
@pytest.mark.parametrize("protected", [("sex",), ("sex", "race")])
def test_estimate_matches_the_analytic_gradient_on_the_probed_features(make, protected):
    model, domain = make(), toy_domain(protected)
    X = domain.sample(60, np.random.default_rng(1))
    X[:5, 2:] = domain.upper[2:]  # at the upper bounds: the probes go backwards
    exact = model.input_gradient(X)
    p = model.predict_proba(X)[:, 1]
    estimate = finite_difference_gradient(model, domain, X, p, step=1e-6)
    cols = probed_features(domain)
    np.testing.assert_allclose(estimate[:, cols], exact[:, cols], rtol=1e-3, atol=1e-8)
    others = np.setdiff1d(np.arange(domain.n_features), cols)
    assert (estimate[:, others] == 0).all()  # the protected attributes are never probed
    # A probe of one code is a secant, not the tangent, but it points the same way on this smooth model.
    coarse = finite_difference_gradient(model, domain, X, p, step=1.0)
    agree = np.sign(coarse[:, cols]) == np.sign(exact[:, cols])
    assert agree.mean() > 0.9


def test_estimate_costs_one_query_per_input_and_probed_feature_and_no_gradient_query():
    model, domain = _lr_model(), toy_domain(("sex", "race"))
    X = domain.sample(40, np.random.default_rng(2))
    p = model.predict_proba(X)[:, 1]
    model.reset_queries()
    finite_difference_gradient(model, domain, X, p)
    m = len(probed_features(domain))
    assert m == 3  # a, b, c: the two protected attributes are not probed
    assert model.n_queries == 40 * m and model.n_gradient_queries == 0
    model.reset_queries()
    g, g_cf = FiniteDifferences().pair(model, domain, X, X[::-1], p, p[::-1])
    assert model.n_queries == 2 * 40 * m <= 40 * FiniteDifferences().rows_per_pair(domain.n_features)
    np.testing.assert_array_equal(g_cf, g[::-1])


def test_probes_stay_inside_the_domain_and_touch_one_non_protected_feature():
    domain = toy_domain(("sex", "race"))
    sent = []

    def proba(X):
        sent.append(np.array(X))
        return 1 / (1 + np.exp(-(X[:, 2] - X[:, 3])))

    model = as_model(proba, output="probability", name="recording")
    X = np.vstack([domain.lower, domain.upper, domain.sample(20, np.random.default_rng(3))])
    finite_difference_gradient(model, domain, X, proba(X.astype(float)), step=1.0)
    probes = np.concatenate(sent[1:])
    domain.validate(probes.astype(np.int64), what="probes")
    base = np.repeat(X, 3, axis=0)
    changed = probes != base
    assert (changed.sum(axis=1) == 1).all()
    assert not changed[:, list(domain.protected)].any()


def test_probe_steps_go_back_at_the_upper_bound_and_fit_a_narrow_feature():
    domain = Domain((Feature("s", 0, 1), Feature("a", 0, 9), Feature("n", 0, 1))).with_protected(["s"])
    cols = probed_features(domain)
    X = np.array([[0, 0, 0], [0, 9, 1], [1, 4, 0]])
    np.testing.assert_array_equal(probe_steps(X, domain, cols, 1.0), [[1, 1], [-1, -1], [1, 1]])
    np.testing.assert_array_equal(probe_steps(X, domain, cols, 2.0), [[2, 1], [-2, -1], [2, 1]])


def test_a_change_below_rounding_estimates_zero_whichever_class_is_positive():
    domain = toy_domain()
    X = domain.sample(10, np.random.default_rng(4))
    saturated = as_model(lambda X: np.full(len(X), 1e-20) * (1 + X[:, 2]), output="probability")
    g = finite_difference_gradient(saturated, domain, X, np.full(len(X), 1e-20) * (1 + X[:, 2]))
    assert (g == 0).all()


# ---------------------------------------------------------------------------------------------- the generator
def seeds_of(domain, n=40, seed=0):
    return domain.sample(n, np.random.default_rng(seed))


def test_maft_is_registered_as_a_probability_generator_without_gradient():
    assert GENERATORS["maft"] is MAFT
    assert MAFT.needs_proba and not MAFT.needs_gradient
    assert MAFT().params["perturbation_size"] == 1.0 and MAFT().update_interval is None
    with pytest.raises(ConfigError, match="perturbation_size"):
        MAFT(perturbation_size=0)


@pytest.mark.parametrize("update_interval", [None, 5])
def test_maft_on_a_model_with_a_gradient_still_estimates_it(update_interval):
    domain = toy_domain()
    model = as_model(biased_module())
    gen = MAFT(max_global=40, max_local=30, update_interval=update_interval)
    res = gen.run(model, domain, seeds_of(domain), random_state=0)
    assert model.n_gradient_queries == 0
    assert res.n_global > 0 and res.n_local > 0 and is_biased_idi(res.idis).all()
    assert_reported_pairs_hold(res, model, domain)
    assert res.n_queries <= gen.query_budget(40, 2, n_features=domain.n_features)


def test_maft_finds_about_as_many_idis_as_eidig_on_a_linear_model():
    domain, model = toy_domain(), _lr_model()
    seeds = seeds_of(domain, 60)
    eidig = make_generator("eidig", max_global=60, max_local=60).run(model, domain, seeds, random_state=0)
    maft = make_generator("maft", max_global=60, max_local=60).run(model, domain, seeds, random_state=0)
    assert eidig.n_idis > 0 and maft.n_idis >= 0.8 * eidig.n_idis


def test_maft_runs_on_a_callable_with_probabilities_and_refuses_labels_only_naming_the_model():
    domain = toy_domain()
    lr = _lr_model()
    proba = as_model(lambda X: lr.predict_proba(X)[:, 1], output="probability", name="proba-callable")
    assert make_generator("maft", max_global=30, max_local=20).run(proba, domain, seeds_of(domain)).n_idis > 0
    labels = as_model(lambda X: lr.predict(X), name="labels-callable")
    with pytest.raises(ModelCapabilityError, match=r"'maft' needs predict_proba\(\).*'labels-callable'"):
        make_generator("maft").run(labels, domain, seeds_of(domain))


def test_maft_query_budget_needs_the_number_of_features():
    with pytest.raises(ConfigError, match="n_features"):
        MAFT().query_budget(10, 2)
    gen = MAFT(max_global=10, max_local=10)
    assert gen.query_budget(10, 2, n_features=5) < gen.query_budget(10, 2, n_features=13)


SEX, RACE = np.array(["Female", "Male"]), np.array(["A", "B", "C"])


def _frame(X) -> pd.DataFrame:
    X = np.asarray(X, dtype=np.int64)
    return pd.DataFrame({"sex": SEX[X[:, 0]], "race": RACE[X[:, 1]], "a": X[:, 2], "b": X[:, 3], "c": X[:, 4]})


def test_maft_on_a_raw_frame_pipeline_probes_whole_codes_and_refuses_a_fractional_step():
    data = toy_dataset()
    pre = ColumnTransformer([("cat", OneHotEncoder(), ["sex", "race"]), ("num", "passthrough", ["a", "b", "c"])])
    pipe = Pipeline([("pre", pre), ("lr", LogisticRegression(C=0.5, max_iter=1000))]).fit(_frame(data.X), data.y)
    model = as_model(pipe, to_frame=_frame, name="frame-pipe")
    domain = toy_domain()
    res = MAFT(max_global=30, max_local=20).run(model, domain, seeds_of(domain), random_state=0)
    assert res.n_idis > 0
    np.testing.assert_array_equal(pipe.predict(_frame(res.idis)), res.idi_labels)
    with pytest.raises(ConfigError, match=r"perturbation_size=0\.5.*'frame-pipe'.*whole number"):
        MAFT(perturbation_size=0.5).run(model, domain, seeds_of(domain))


def test_probes_that_would_break_a_constraint_are_not_sent():
    from toys import breaks_toy_rules, coupled_toy_domain

    domain = coupled_toy_domain()
    sent = []

    def proba(X):
        sent.append(np.array(X))
        return 1 / (1 + np.exp(-(X[:, 2] - X[:, 3] + X[:, 4])))

    model = as_model(proba, output="probability", name="recording")
    X = domain.sample(200, np.random.default_rng(5))
    assert not breaks_toy_rules(X).any()
    g = finite_difference_gradient(model, domain, X, proba(X.astype(float)))
    sent = np.concatenate(sent[1:])
    assert len(sent) < 200 * len(probed_features(domain))  # some probes would break a rule (a < c, sex/c)
    assert not breaks_toy_rules(sent).any()
    assert np.isfinite(g).all()


# ------------------------------------------------------------------------------- plateaus and the query budget
def _step_proba(X):
    """P(y=1) of a piecewise-constant model: 0.8 where a >= 4 (Male) or a >= 5 (Female), else 0.2: IDIs at a = 4."""
    X = np.asarray(X)
    return np.where(X[:, 2] >= 4 + (X[:, 0] == 0), 0.8, 0.2)


def _step_model():
    return as_model(_step_proba, output="probability", name="step")


def _low_seeds(domain, n=40):
    seeds = domain.sample(n, np.random.default_rng(7))
    seeds[:, 2] = np.arange(n) % 3  # a in {0, 1, 2}: one code away the model is flat
    return seeds


def test_probes_across_plateaus_see_a_step_the_plain_probe_misses_and_change_nothing_on_a_smooth_model():
    domain, model = toy_domain(), _step_model()
    X = _low_seeds(domain)
    X[:, 0] = 1
    p = _step_proba(X)
    assert (finite_difference_gradient(model, domain, X, p) == 0).all()
    across = finite_difference_gradient(model, domain, X, p, across_plateaus=True)
    a_reaches = X[:, 2] + 3 >= 4  # the wide probe (a quarter of a's range, 3 codes) reaches the Male step
    assert (across[a_reaches, 2] > 0).all() and (across[~a_reaches, 2] == 0).all()
    assert (across[:, 3:] == 0).all()  # b and c are flat everywhere
    lr = _lr_model()
    Y = domain.sample(50, np.random.default_rng(8))
    q = lr.predict_proba(Y)[:, 1]
    lr.reset_queries()
    plain = finite_difference_gradient(lr, domain, Y, q)
    plain_queries = lr.n_queries
    lr.reset_queries()
    np.testing.assert_array_equal(finite_difference_gradient(lr, domain, Y, q, across_plateaus=True), plain)
    assert lr.n_queries == plain_queries  # no flat probe, nothing sent again


def test_maft_moves_on_a_piecewise_constant_model_where_the_plain_estimate_is_zero():
    domain, model = toy_domain(), _step_model()
    seeds = _low_seeds(domain)
    plain = MAFT(max_global=40, max_local=0).run(model, domain, seeds, random_state=0)
    moving = MAFT(max_global=40, max_local=0, across_plateaus=True).run(_step_model(), domain, seeds, random_state=0)
    assert plain.n_idis == 0  # no seed is an IDI and the plain estimate never moves a chain
    assert moving.n_global > 0 and (moving.idis[:, 2] == 4).all()
    assert_reported_pairs_hold(moving, _step_model(), domain)


@pytest.mark.parametrize("max_local", [50, 1000])
def test_maft_under_a_budget_spends_it_instead_of_stopping_at_the_first_gradient_batch(max_local):
    domain = toy_domain()
    seeds = domain.sample(200, np.random.default_rng(9))
    budget = 3000
    # the seeds' check costs 400, the first estimate for 200 chains up to 200 * 2 * 4 * 3 = 4800 rows > 2600 left:
    # refused whole, that batch would end the search at 400 queries (this toy domain is small enough that the
    # search may run out of chains before the budget does)
    res = MAFT(max_global=200, max_local=max_local, max_queries=budget).run(as_model(biased_module()), domain, seeds,
                                                                            random_state=0)
    assert 0.75 * budget <= res.n_queries <= budget
    assert res.n_local > 0
    assert is_biased_idi(res.idis).all()


@pytest.mark.parametrize("budget", [None, 2500])
def test_maft_gives_the_same_idis_bit_for_bit_for_the_same_random_state(budget):
    domain = toy_domain(("sex", "race"))
    seeds = domain.sample(80, np.random.default_rng(10))
    a, b = (MAFT(max_global=80, max_local=40, max_queries=budget, update_interval=5).run(
        as_model(biased_module()), domain, seeds, random_state=3) for _ in range(2))
    np.testing.assert_array_equal(a.idis, b.idis)
    np.testing.assert_array_equal(a.counterparts, b.counterparts)
    assert (a.n_queries, a.n_global, a.n_local) == (b.n_queries, b.n_global, b.n_local)


def test_across_plateaus_must_be_a_bool():
    with pytest.raises(ConfigError, match="across_plateaus"):
        MAFT(across_plateaus="yes")
    assert MAFT().params["across_plateaus"] is False and MAFT(global_share=0.2).params["global_share"] == 0.2
