import warnings

import numpy as np
import pytest
from gradient_toys import (
    age_biased_model,
    age_domain,
    assert_reported_pairs_hold,
    bound_pushing_model,
    flat_biased_model,
)
from toys import is_biased_idi, toy_domain

from chiralfair.exceptions import ConfigError, ModelCapabilityError
from chiralfair.generators.adf import ADF, _adf_direction
from chiralfair.generators.base import GENERATORS
from chiralfair.models import as_model


def seeds_of(domain, n=40, seed=0):
    return domain.sample(n, np.random.default_rng(seed))


def test_registered():
    assert GENERATORS["adf"] is ADF
    gen = ADF(max_global=5, max_local=7)
    assert gen.params == {"max_global": 5, "max_local": 7, "max_iter": 10, "step_global": 1.0,
                          "step_local": 1.0, "epsilon": 1e-6}


def test_finds_only_true_idis_on_the_biased_toy(biased_model, domain):
    res = ADF(max_global=40, max_local=30).run(biased_model, domain, seeds_of(domain), random_state=0)
    assert res.n_global > 0 and res.n_local > 0
    assert is_biased_idi(res.idis).all()
    assert_reported_pairs_hold(res, biased_model, domain)
    assert res.n_queries <= ADF(max_global=40, max_local=30).query_budget(40, 2)


def test_fair_toy_gives_no_idis_after_real_search(fair_model, domain):
    res = ADF(max_global=30, max_local=30).run(fair_model, domain, seeds_of(domain), random_state=0)
    assert res.n_idis == 0
    assert res.n_tested > 30  # the chains did move


def test_same_random_state_same_result(biased_model, domain):
    a = ADF(max_global=20, max_local=20).run(biased_model, domain, seeds_of(domain), random_state=3)
    b = ADF(max_global=20, max_local=20).run(as_model(biased_model.estimator), domain, seeds_of(domain),
                                             random_state=3)
    np.testing.assert_array_equal(a.idis, b.idis)
    assert a.n_queries == b.n_queries


def test_zero_gradient_everywhere_moves_chains_without_nan():
    model, domain = flat_biased_model(), toy_domain()
    seeds = np.array([[0, 0, 0, 0, 0], [1, 2, 9, 9, 4]])  # far from the IDI band a + b in [8, 10]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a division by zero would warn
        res = ADF(max_global=2, max_local=50).run(model, domain, seeds, random_state=0)
    assert res.n_tested > 2  # with g = g' = 0 a random feature moves, so the chains leave their seeds
    if res.n_idis:
        assert is_biased_idi(res.idis).all()


def test_zero_gradient_local_walk_uses_uniform_probabilities():
    model, domain = flat_biased_model(), toy_domain()
    seed = np.array([[0, 0, 4, 5, 2]])  # an IDI: a + b = 9
    res = ADF(max_global=1, max_local=200).run(model, domain, seed, random_state=0)
    assert res.n_global == 1 and res.n_local > 5
    assert is_biased_idi(res.idis).all()


def test_direction_rules_for_zero_gradients():
    mask = np.array([False, True, True, True])
    g = np.array([[5.0, 0, 0, 0], [0, 1, -1, 0], [0, 1, 1, 0], [0, 1, -1, 0]])
    g_cf = np.array([[0, -1, 2, 0], [0, 0, 0, 0], [0, -1, -1, 0], [0, 1, 1, 0]])
    d = _adf_direction(g, g_cf, mask, np.random.default_rng(0))
    np.testing.assert_array_equal(d[0], [0, -1, 1, 0])  # g zero off the PA: follow g'
    np.testing.assert_array_equal(d[1], [0, 1, -1, 0])  # g' zero: follow g
    assert np.count_nonzero(d[2]) == 1 and d[2, 0] == 0 and d[2, 3] == 0  # no agreement: one random feature
    np.testing.assert_array_equal(d[3], [0, 1, 0, 0])  # agreement on feature 1 only


def test_both_gradients_zero_moves_one_non_protected_feature():
    mask = np.array([True, False, True, True, True])
    d = _adf_direction(np.zeros((50, 5)), np.zeros((50, 5)), mask, np.random.default_rng(1))
    assert (np.count_nonzero(d, axis=1) == 1).all()
    assert not d[:, 1].any()
    assert set(np.unique(d[d != 0])) == {-1.0, 1.0}


def test_chain_stuck_at_a_bound_costs_one_check_and_one_gradient_pair():
    model, domain = bound_pushing_model(), toy_domain()
    res = ADF(max_global=1, max_local=10).run(model, domain, np.array([[0, 1, 0, 3, 2]]), random_state=0)
    assert res.n_idis == 0 and res.n_tested == 1
    assert model.n_gradient_queries == 2
    assert res.n_queries == 2 + 2  # the 2-combination check, then the gradient at x and x'


def test_seed_already_an_idi_is_a_global_idi_without_gradient(biased_model, domain):
    res = ADF(max_global=1, max_local=0).run(biased_model, domain, np.array([[1, 0, 4, 5, 0]]), random_state=0)
    assert (res.n_seed_idis, res.n_global, res.n_local) == (1, 1, 0)
    assert res.n_queries == 2 and biased_model.n_gradient_queries == 0


def test_protected_attribute_with_nine_values():
    model, domain = age_biased_model(), age_domain()
    res = ADF(max_global=30, max_local=30).run(model, domain, seeds_of(domain, 30), random_state=0)
    s = res.idis[:, 1] + res.idis[:, 2]
    assert ((s >= 9) & (s <= 12)).all()
    assert_reported_pairs_hold(res, model, domain)
    assert res.n_queries <= ADF(max_global=30, max_local=30).query_budget(30, 9)


def test_several_protected_attributes_at_once(biased_model):
    domain = toy_domain(("sex", "race"))
    res = ADF(max_global=30, max_local=20).run(biased_model, domain, seeds_of(domain, 30), random_state=0)
    assert_reported_pairs_hold(res, biased_model, domain)
    assert res.n_queries <= ADF(max_global=30, max_local=20).query_budget(30, 6)


def test_black_box_model_is_refused_naming_model_and_method(domain):
    black_box = as_model(lambda X: (X[:, 2] + X[:, 3] > 9).astype(int), name="my-black-box")
    with pytest.raises(ModelCapabilityError) as err:
        ADF(max_global=2, max_local=2).run(black_box, domain, seeds_of(domain, 2), random_state=0)
    assert "my-black-box" in str(err.value) and "input_gradient" in str(err.value)


@pytest.mark.parametrize("bad", [{"max_iter": -1}, {"step_global": 0}, {"step_local": -1.0}, {"epsilon": 0}])
def test_bad_parameters_are_named(bad):
    with pytest.raises(ConfigError, match=next(iter(bad))):
        ADF(**bad)


@pytest.mark.parametrize(("seed", "steps"), [([0, 1, 0, 0, 2], 4), ([0, 1, 9, 9, 2], 4)])
def test_global_steps_walk_to_the_boundary_and_the_last_step_is_checked(biased_model, domain, seed, steps):
    # From a + b = 0 (label 0) or 18 (label 1), each step moves a and b by one toward a + b in [8, 10].
    # From 18 the counterpart's float32 sigmoid saturates to 1, so g' = 0 and the step follows g alone.
    seeds = np.array([seed])
    found = ADF(max_global=1, max_local=0, max_iter=steps).run(biased_model, domain, seeds, random_state=0)
    short = ADF(max_global=1, max_local=0, max_iter=steps - 1).run(biased_model, domain, seeds, random_state=0)
    assert (found.n_seed_idis, found.n_global) == (0, 1)
    assert is_biased_idi(found.idis).all()
    assert short.n_global == 0 and short.n_tested == steps


def test_adf_under_a_budget_leaves_its_local_phase_the_budget_the_global_steps_do_not_need():
    from toys import biased_module

    domain = toy_domain()
    seeds = domain.sample(200, np.random.default_rng(9))
    budget = 3000
    res = ADF(max_global=200, max_local=1000, max_queries=budget).run(as_model(biased_module()), domain, seeds,
                                                                      random_state=0)
    assert 0.75 * budget <= res.n_queries <= budget
    assert res.n_local > res.n_global > 0
    assert is_biased_idi(res.idis).all()
