import warnings

import numpy as np
import pytest
from gradient_toys import (
    Bowl,
    age_biased_model,
    age_domain,
    assert_reported_pairs_hold,
    bound_pushing_model,
    flat_biased_model,
)
from toys import biased_module, is_biased_idi, toy_domain

from chiralfair.exceptions import ConfigError, ModelCapabilityError
from chiralfair.generators.base import GENERATORS
from chiralfair.generators.eidig import EIDIG, EIDIG5, EIDIGINF
from chiralfair.models import as_model

PRESETS = ["eidig", "eidig-5", "eidig-inf"]


def seeds_of(domain, n=40, seed=0):
    return domain.sample(n, np.random.default_rng(seed))


def test_presets_are_registered_as_documented():
    assert GENERATORS["eidig"] is EIDIG and GENERATORS["eidig-5"] is EIDIG5 and GENERATORS["eidig-inf"] is EIDIGINF
    assert EIDIG().update_interval is None  # eidig = EIDIG-INF, as in the I&D paper
    assert EIDIG5().update_interval == 5 and EIDIG5().params["update_interval"] == 5
    assert EIDIGINF().update_interval is None
    assert EIDIG(update_interval=3).update_interval == 3
    with pytest.raises(ConfigError, match="eidig-5"):
        EIDIG5(update_interval=2)


@pytest.mark.parametrize("name", PRESETS)
def test_finds_only_true_idis_on_the_biased_toy(name, biased_model, domain):
    gen = GENERATORS[name](max_global=40, max_local=30)
    res = gen.run(biased_model, domain, seeds_of(domain), random_state=0)
    assert res.generator == name
    assert res.n_global > 0 and res.n_local > 0
    assert is_biased_idi(res.idis).all()
    assert_reported_pairs_hold(res, biased_model, domain)
    assert res.n_queries <= gen.query_budget(40, 2)


@pytest.mark.parametrize("name", PRESETS)
def test_fair_toy_gives_no_idis(name, fair_model, domain):
    res = GENERATORS[name](max_global=30, max_local=30).run(fair_model, domain, seeds_of(domain), random_state=0)
    assert res.n_idis == 0 and res.n_tested > 30


def test_same_random_state_same_result(biased_model, domain):
    gen = EIDIG5(max_global=20, max_local=40)
    a = gen.run(biased_model, domain, seeds_of(domain), random_state=5)
    b = gen.run(as_model(biased_model.estimator), domain, seeds_of(domain), random_state=5)
    np.testing.assert_array_equal(a.idis, b.idis)
    assert a.n_queries == b.n_queries


def _gradient_rows(name, max_local, domain, seeds):
    model = as_model(biased_module())
    res = GENERATORS[name](max_global=len(seeds), max_local=max_local).run(model, domain, seeds, random_state=0)
    return res, model.n_gradient_queries


def test_eidig_inf_computes_local_gradients_once_per_global_idi_and_eidig_5_refreshes(domain):
    seeds = seeds_of(domain, 40)
    res0, rows_global = _gradient_rows("eidig-inf", 0, domain, seeds)
    res_inf, rows_inf = _gradient_rows("eidig-inf", 60, domain, seeds)
    res_5, rows_5 = _gradient_rows("eidig-5", 60, domain, seeds)
    assert res0.n_global == res_inf.n_global == res_5.n_global > 0  # the global phase does not depend on them
    assert rows_inf - rows_global == 2 * res_inf.n_global  # x0 and its counterpart, never refreshed
    local_5 = rows_5 - rows_global
    assert 2 * res_5.n_global < local_5 <= res_5.n_global * 2 * (1 + 59 // 5)


def test_momentum_carries_the_chain_past_a_zero_gradient():
    domain, seed = toy_domain(), np.array([[0, 0, 0, 3, 2]])
    plain = EIDIG(max_global=1, max_local=0, decay=0.0).run(as_model(Bowl()), domain, seed, random_state=0)
    momentum = EIDIG(max_global=1, max_local=0, decay=0.5).run(as_model(Bowl()), domain, seed, random_state=0)
    assert plain.n_tested == 6  # a = 0..5, then the gradient is 0 and the chain stops
    assert momentum.n_tested > 6  # the momentum overshoots a = 5


@pytest.mark.parametrize("name", PRESETS)
def test_zero_gradient_everywhere_gives_no_nan_and_a_uniform_local_walk(name):
    model, domain = flat_biased_model(), toy_domain()
    seeds = np.array([[0, 0, 4, 5, 2], [0, 0, 0, 0, 0]])  # an IDI, and a non-IDI far from the band
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a division by zero would warn
        res = GENERATORS[name](max_global=2, max_local=200).run(model, domain, seeds, random_state=0)
    assert res.n_seed_idis == 1 and res.n_global == 1
    assert res.n_local > 5
    assert is_biased_idi(res.idis).all()


@pytest.mark.parametrize("name", PRESETS)
def test_chain_stuck_at_a_bound_costs_one_check_and_one_gradient_pair(name):
    model, domain = bound_pushing_model(), toy_domain()
    res = GENERATORS[name](max_global=1, max_local=10).run(model, domain, np.array([[0, 1, 0, 3, 2]]),
                                                           random_state=0)
    assert res.n_idis == 0 and res.n_tested == 1
    assert model.n_gradient_queries == 2
    assert res.n_queries == 2 + 2


def test_seed_already_an_idi_is_a_global_idi_without_gradient(biased_model, domain):
    res = EIDIG(max_global=1, max_local=0).run(biased_model, domain, np.array([[0, 2, 4, 4, 3]]), random_state=0)
    assert (res.n_seed_idis, res.n_global, res.n_local) == (1, 1, 0)
    assert res.n_queries == 2 and biased_model.n_gradient_queries == 0


def test_duplicate_seed_idis_count_once(biased_model, domain):
    seeds = np.array([[0, 2, 4, 4, 3], [1, 2, 4, 4, 3], [0, 2, 4, 4, 3]])  # one key three times
    res = EIDIG(max_global=3, max_local=0).run(biased_model, domain, seeds, random_state=0)
    assert (res.n_seed_idis, res.n_global, res.n_idis) == (3, 1, 1)


@pytest.mark.parametrize("name", PRESETS)
def test_protected_attribute_with_nine_values(name):
    model, domain = age_biased_model(), age_domain()
    gen = GENERATORS[name](max_global=30, max_local=30)
    res = gen.run(model, domain, seeds_of(domain, 30), random_state=0)
    s = res.idis[:, 1] + res.idis[:, 2]
    assert ((s >= 9) & (s <= 12)).all()
    assert_reported_pairs_hold(res, model, domain)
    assert res.n_queries <= gen.query_budget(30, 9)


def test_several_protected_attributes_at_once(biased_model):
    domain = toy_domain(("sex", "race"))
    gen = EIDIG5(max_global=30, max_local=20)
    res = gen.run(biased_model, domain, seeds_of(domain, 30), random_state=0)
    assert_reported_pairs_hold(res, biased_model, domain)
    assert res.n_queries <= gen.query_budget(30, 6)


def test_black_box_model_is_refused_naming_model_and_method(domain):
    black_box = as_model(lambda X: (X[:, 2] + X[:, 3] > 9).astype(int), name="my-black-box")
    with pytest.raises(ModelCapabilityError) as err:
        EIDIG5(max_global=2, max_local=2).run(black_box, domain, seeds_of(domain, 2), random_state=0)
    assert "my-black-box" in str(err.value) and "input_gradient" in str(err.value)


@pytest.mark.parametrize("bad", [{"decay": 1.5}, {"update_interval": 0}, {"max_iter": -2}, {"epsilon": -1.0}])
def test_bad_parameters_are_named(bad):
    with pytest.raises(ConfigError, match=next(iter(bad))):
        EIDIG(**bad)


@pytest.mark.parametrize("name", PRESETS)
@pytest.mark.parametrize(("seed", "steps"), [([0, 1, 0, 0, 2], 4), ([0, 1, 7, 7, 2], 2)])
def test_global_steps_walk_to_the_boundary_and_the_last_step_is_checked(name, biased_model, domain, seed, steps):
    # From a + b = 0 (label 0) or 14 (label 1), each step moves a and b by one toward a + b in [8, 10].
    # (From 18 the counterpart's float32 sigmoid saturates to 1, its gradient is 0 and EIDIG, which has no
    # zero-gradient rule, cannot move: see the ADF test.)
    seeds = np.array([seed])
    found = GENERATORS[name](max_global=1, max_local=0, max_iter=steps).run(biased_model, domain, seeds,
                                                                             random_state=0)
    short = GENERATORS[name](max_global=1, max_local=0, max_iter=steps - 1).run(biased_model, domain, seeds,
                                                                                 random_state=0)
    assert (found.n_seed_idis, found.n_global) == (0, 1)
    assert is_biased_idi(found.idis).all()
    assert short.n_global == 0 and short.n_tested == steps
