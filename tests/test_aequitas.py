"""AEQUITAS variants (random, semi, fully) and the THEMIS baseline."""

import numpy as np
import pytest
from toys import biased_module, fair_module, is_biased_idi, toy_domain

from chiralfair.domain import Domain, Feature
from chiralfair.exceptions import ConfigError
from chiralfair.generators import make_generator
from chiralfair.generators.aequitas import Aequitas, _LocalWalk
from chiralfair.generators.recorder import IDIRecorder
from chiralfair.generators.themis import Themis
from chiralfair.models import as_model

# IDIs of the biased toy on sex: 8 <= a + b <= 10 (columns sex, race, a, b, c)
BAND_SEEDS = np.array([[0, 2, 4, 4, 1], [1, 0, 9, 0, 4], [0, 1, 5, 5, 0]])


def walk(variant, starts=BAND_SEEDS, protected=("sex",), seed=0, **params):
    domain = toy_domain(protected)
    recorder = IDIRecorder(as_model(biased_module()), domain)
    gen = Aequitas(variant=variant, max_global=10, max_local=10, **params)
    movable = domain.non_protected
    return _LocalWalk(starts, movable, domain, gen, np.random.default_rng(seed)), recorder


def test_fully_directed_updates_both_probabilities():
    w, rec = walk("fully")
    for _ in range(50):
        w.step(rec)
    assert not np.allclose(w.sigma_v, 0.5)
    assert not np.allclose(w.sigma_pr, 1 / 4)
    np.testing.assert_allclose(w.sigma_pr.sum(axis=1), 1.0)
    assert (w.sigma_v >= 0).all() and (w.sigma_v <= 1).all() and (w.sigma_pr >= 0).all()


def test_semi_directed_updates_direction_only():
    w, rec = walk("semi")
    for _ in range(50):
        w.step(rec)
    assert not np.allclose(w.sigma_v, 0.5)
    np.testing.assert_array_equal(w.sigma_pr, 1 / 4)


def test_random_variant_updates_nothing():
    w, rec = walk("random")
    for _ in range(50):
        w.step(rec)
    np.testing.assert_array_equal(w.sigma_v, 0.5)
    np.testing.assert_array_equal(w.sigma_pr, 1 / 4)


def test_update_rule_rewards_the_direction_that_found_an_idi():
    w, _ = walk("fully", starts=np.repeat(BAND_SEEDS[:1], 4, axis=0), delta_v=0.01, delta_pr=0.01)
    rows = np.arange(4)
    p = np.zeros(4, dtype=np.int64)
    direction = np.array([-1, 1, 1, -1])
    idi = np.array([True, False, True, False])
    w._update(rows, p, direction, idi)
    # σ_v is P(direction = -1): up for an IDI going -1 or a miss going +1, down otherwise
    np.testing.assert_allclose(w.sigma_v[:, 0], [0.51, 0.51, 0.49, 0.49])
    np.testing.assert_allclose(w.sigma_pr[:, 0], [0.26 / 1.01, 0.24 / 0.99, 0.26 / 1.01, 0.24 / 0.99])
    np.testing.assert_array_equal(w.sigma_v[:, 1:], 0.5)


def test_fully_directed_picks_features_by_sigma_pr():
    w, rec = walk("fully", starts=np.repeat(BAND_SEEDS, 20, axis=0))
    w.sigma_pr[:] = [0.0, 0.0, 1.0, 0.0]  # movable features: race, a, b, c (sex is the PA)
    np.testing.assert_array_equal(w._choose_features(), 2)
    w.sigma_pr[:] = [0.5, 0.0, 0.0, 0.5]
    assert set(w._choose_features().tolist()) == {0, 3}


def test_protected_attributes_never_perturbed_by_the_step():
    for protected in [("sex",), ("sex", "race")]:
        domain = toy_domain(protected)
        gen = Aequitas(variant="random", max_global=1, max_local=300)
        res = gen.run(as_model(biased_module()), domain, BAND_SEEDS[:1], random_state=3)
        assert res.n_local > 0
        pa = list(domain.protected)
        np.testing.assert_array_equal(res.idis[:, pa], np.repeat(BAND_SEEDS[:1, pa], res.n_idis, axis=0))


def test_chains_stay_on_idis_and_move_by_one_unit():
    w, rec = walk("fully", starts=np.repeat(BAND_SEEDS, 10, axis=0))
    before = w.X.copy()
    for _ in range(30):
        found = w.step(rec)
        assert is_biased_idi(w.X).all()
        moved = (w.X != before).sum(axis=1)
        assert (moved <= 1).all() and (moved[~found] == 0).all()
        assert (np.abs(w.X - before).max(axis=1) <= 1).all()
        before = w.X.copy()


def test_local_phase_finds_idis_around_the_biased_band():
    domain = toy_domain()
    seeds = domain.sample(100, np.random.default_rng(1))
    gen = Aequitas(max_global=100, max_local=100)
    res = gen.run(as_model(biased_module()), domain, seeds, random_state=0)
    assert res.n_global == len(np.unique(domain.keys(seeds[is_biased_idi(seeds)]))) > 0
    assert res.n_local > 5 * res.n_global
    assert is_biased_idi(res.idis).all()
    base = Themis(max_global=100, max_local=100).run(as_model(biased_module()), domain, seeds, random_state=0)
    assert res.success_rate > base.success_rate


def test_step_clipped_onto_its_own_idi_costs_no_query():
    # Every movable feature is binary, so every step sits at a bound and half the coins are no-ops.
    domain = Domain((Feature("sex", 0, 1), Feature("a", 0, 1), Feature("b", 0, 1)), protected=(0,),
                    protected_values=((0, 1),))
    model = as_model(lambda X: (X.sum(axis=1) >= 2).astype(int), name="band")
    seeds = np.array([[0, 1, 0], [1, 0, 1]] * 10)
    gen = Aequitas(max_global=20, max_local=50)
    res = gen.run(model, domain, seeds, random_state=0)
    n_chains = 1 + 1  # keys (a, b) = (1, 0) and (0, 1)
    assert 0 < res.n_queries - 20 * 2 < n_chains * 50 * 2
    assert res.n_idis == 2  # the band a + b == 1 has two keys


def test_no_movable_feature_is_reported_not_silent():
    domain = Domain((Feature("sex", 0, 1), Feature("a", 3, 3)), protected=(0,), protected_values=((0, 1),))
    model = as_model(lambda X: X[:, 0], name="sex-only")
    res = Aequitas(max_global=2, max_local=10).run(model, domain, np.array([[0, 3], [1, 3]]), random_state=0)
    assert res.n_idis == 1 and res.n_local == 0
    assert any("cannot move" in note for note in res.notes)


def test_max_local_zero_checks_only_the_seeds():
    domain = toy_domain()
    gen = Aequitas(max_global=3, max_local=0)
    res = gen.run(as_model(biased_module()), domain, BAND_SEEDS, random_state=0)
    assert res.n_global == 3 and res.n_local == 0 and res.n_queries == 3 * 2


def test_duplicate_seed_keys_get_one_chain():
    domain = toy_domain()
    seeds = np.array([[0, 2, 4, 4, 1], [1, 2, 4, 4, 1]])  # same key, different sex
    res = Aequitas(max_global=2, max_local=10).run(as_model(biased_module()), domain, seeds, random_state=0)
    assert res.n_seed_idis == 2 and res.n_global == 1
    assert res.n_queries <= 2 * 2 + 1 * 10 * 2


def test_variant_and_presets():
    assert make_generator("aequitas").variant == "fully"
    assert make_generator("aequitas-semi", max_local=5).params["variant"] == "semi"
    assert make_generator("aequitas-random").name == "aequitas-random"
    with pytest.raises(ConfigError, match="variant"):
        make_generator("aequitas", variant="directed")
    with pytest.raises(ConfigError, match="fixes variant"):
        make_generator("aequitas-random", variant="fully")
    with pytest.raises(ConfigError, match="perturbation_unit"):
        Aequitas(perturbation_unit=0)


def test_query_budget_formula():
    gen = Aequitas(max_global=10, max_local=7)
    assert gen.query_budget(30, 6) == 10 * 6 + 10 * 7 * 6
    assert gen.query_budget(4, 2) == 4 * 2 + 4 * 7 * 2


def test_themis_checks_max_local_random_inputs_per_global_idi():
    domain = toy_domain(("sex", "race"))
    seeds = domain.sample(40, np.random.default_rng(2))
    res = Themis(max_global=40, max_local=25, chunk_size=7).run(as_model(biased_module()), domain, seeds,
                                                                 random_state=0)
    assert res.n_global > 0
    assert res.n_queries == (40 + res.n_global * 25) * 6
    assert is_biased_idi(res.idis).all()


def test_themis_local_inputs_do_not_depend_on_global_idis():
    domain = toy_domain()
    seeds = domain.sample(50, np.random.default_rng(3))
    res = Themis(max_global=50, max_local=200).run(as_model(biased_module()), domain, seeds, random_state=0)
    local = res.idis[res.phase == "local"]
    # uniform draws cover the whole band, not only the neighbourhood of the seeds
    assert len(np.unique(local[:, 2] + local[:, 3])) == 3
    assert res.success_rate < 0.6


def test_themis_on_fair_model_checks_only_seeds():
    domain = toy_domain()
    res = Themis(max_global=20, max_local=20).run(as_model(fair_module()), domain, domain.sample(
        20, np.random.default_rng(0)), random_state=0)
    assert res.n_idis == 0 and res.n_queries == 20 * 2


class _LocalSpy:
    """Collects every row the local phase sends to the model (a nested check inside check_first counted once)."""

    def __init__(self, monkeypatch):
        self.batches, self.nested = [], False
        for name in ("check", "check_first"):
            monkeypatch.setattr(IDIRecorder, name, self._wrap(getattr(IDIRecorder, name)))

    def _wrap(self, original):
        def spied(recorder, X, *args, **kwargs):
            if self.nested or (args[-1] if args else kwargs.get("phase")) != "local":
                return original(recorder, X, *args, **kwargs)
            self.batches.append((np.asarray(X).copy(), recorder.is_tested(X)))
            self.nested = True
            try:
                return original(recorder, X, *args, **kwargs)
            finally:
                self.nested = False
        return spied


def _band_run(protected, variant, reference=False, monkeypatch=None, max_local=60):
    domain = toy_domain(protected)
    seeds = domain.sample(60, np.random.default_rng(4))
    if reference:  # the walk before it knew outcomes: every real proposal is checked, all combinations
        monkeypatch.setattr(_LocalWalk, "_outcomes",
                            lambda self, recorder, rows, proposal: recorder.check(proposal, "local")[0].is_idi)
    gen = Aequitas(variant=variant, max_global=60, max_local=max_local)
    return domain, gen.run(as_model(biased_module()), domain, seeds, random_state=5)


@pytest.mark.parametrize("protected", [("sex",), ("sex", "race")])
@pytest.mark.parametrize("variant", ["random", "fully"])
def test_knowing_outcomes_finds_the_same_keys_at_fewer_queries(monkeypatch, protected, variant):
    domain, res = _band_run(protected, variant)
    with monkeypatch.context() as m:
        _, ref = _band_run(protected, variant, reference=True, monkeypatch=m)
    keys = np.sort(domain.keys(res.idis))
    np.testing.assert_array_equal(keys, np.sort(domain.keys(ref.idis)))
    assert (res.n_global, res.n_local) == (ref.n_global, ref.n_local) and res.n_local > 0
    assert res.n_queries < ref.n_queries
    if len(protected) == 2:  # six combinations: the chain's flipping counterpart first saves more than re-asks
        assert res.n_queries < 0.6 * ref.n_queries


def test_local_walk_never_asks_a_known_key(monkeypatch):
    spy = _LocalSpy(monkeypatch)
    domain, res = _band_run(("sex",), "fully")
    assert res.n_local > 0 and spy.batches
    for X, tested in spy.batches:
        assert not tested.any()  # checked by the global phase or an earlier step: its outcome was known
        assert len(np.unique(domain.keys(X))) == len(X)  # two chains proposing one key: asked once


def test_a_known_idi_is_moved_to_and_rewarded_as_if_checked():
    w, rec = walk("fully", starts=BAND_SEEDS[:1].copy(), delta_v=0.01, delta_pr=0.01)
    w.know(rec, BAND_SEEDS[:1] + [0, 0, 1, 0, 0], np.array([True]))  # a + 1: inside the band, an IDI
    w.sigma_pr[:] = [0.0, 1.0, 0.0, 0.0]  # feature a
    w.sigma_v[:] = 0.0  # direction +1
    queries = rec.n_queries
    assert w.step(rec).all()
    assert rec.n_queries == queries
    np.testing.assert_array_equal(w.X, [[0, 2, 5, 4, 1]])
    np.testing.assert_allclose(w.sigma_pr[0], [0.0, 1.0, 0.0, 0.0])  # renormalised after the reward
    np.testing.assert_allclose(w.sigma_v[0, 1], 0.0)  # rewarded towards +1 (clamped at 0)
    w.close()
