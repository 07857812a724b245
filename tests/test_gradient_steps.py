import numpy as np
import pytest
from toys import TOY_COUPLE, TOY_RULES, LinearToy, toy_domain

from chiralfair.domain import Domain, Feature
from chiralfair.exceptions import ConfigError
from chiralfair.generators import gradient_steps, make_generator
from chiralfair.generators.gradient_steps import (
    ChainChecks,
    KnownOutcomes,
    confidence_gradient,
    cross_entropy_gradient,
    inverse_saliency,
    local_gradient_rows,
    sample_features,
)
from chiralfair.generators.recorder import IDIRecorder
from chiralfair.models import as_model
from chiralfair.oracle import DiscriminationCheck


def test_cross_entropy_gradient_points_to_the_boundary_and_scales_by_own_probability():
    g = np.array([[0.2, -0.1], [0.2, -0.1]])
    p1 = np.array([0.8, 0.25])
    labels = np.array([1, 0])
    out = cross_entropy_gradient(g, p1, labels)
    np.testing.assert_allclose(out[0], -g[0] / 0.8)  # label 1: lower P(y=1)
    np.testing.assert_allclose(out[1], g[1] / 0.75)  # label 0: raise P(y=1)


def test_cross_entropy_gradient_is_finite_when_probability_and_label_disagree():
    out = cross_entropy_gradient(np.ones((2, 3)), np.array([0.0, 1.0]), np.array([1, 0]))
    assert np.isfinite(out).all()


def test_confidence_gradient_negates_label_zero_rows():
    g = np.array([[1.0, -2.0], [1.0, -2.0]])
    np.testing.assert_array_equal(confidence_gradient(g, np.array([1, 0])), [[1, -2], [-1, 2]])


def test_inverse_saliency_zero_gradients_are_uniform_over_non_protected():
    mask = np.array([False, True, True, True])
    p = inverse_saliency(np.zeros((2, 4)), np.zeros((2, 4)), mask, 1e-6)
    np.testing.assert_allclose(p, [[0, 1 / 3, 1 / 3, 1 / 3]] * 2)


def test_inverse_saliency_prefers_insensitive_features_and_survives_a_zero_component():
    mask = np.array([True, True, True])
    g = np.array([[0.0, 1.0, 10.0]])
    p = inverse_saliency(g, np.zeros_like(g), mask, 1e-6)
    assert np.isfinite(p).all() and p[0, 0] > p[0, 1] > p[0, 2] > 0
    np.testing.assert_allclose(p.sum(axis=1), 1)


def test_sample_features_never_draws_a_zero_probability_feature():
    rng = np.random.default_rng(0)
    prob = np.tile([0.0, 0.5, 0.0, 0.5, 0.0], (5000, 1))
    f = sample_features(prob, rng)
    assert set(np.unique(f)) == {1, 3}
    assert 0.45 < (f == 1).mean() < 0.55


def test_chain_checks_counterpart_choices():
    checks = ChainChecks(labels=np.array([0, 0]), counterpart_labels=np.array([[0, 1, 1], [0, 0, 0]]),
                         proba=np.array([[0.4, 0.6, 0.9], [0.4, 0.1, 0.3]]), own_proba=np.array([0.4, 0.4]))
    np.testing.assert_array_equal(checks.is_idi, [True, False])
    np.testing.assert_array_equal(checks.first_flip(), [1, 1])
    np.testing.assert_array_equal(checks.max_difference(), [2, 1])
    picks = {int(checks.random_flip(np.random.default_rng(s))[0]) for s in range(50)}
    assert picks == {1, 2}


def test_chain_checks_refuse_a_check_without_probabilities():
    # Without probabilities, set_rows would write None (NaN) into the chains' P(y=1) without a word.
    domain = toy_domain()
    model = as_model(LinearToy([3, 0.5, 1, 0.8, 0.6], -11.45))
    check = DiscriminationCheck(model, domain).check(domain.sample(3, np.random.default_rng(0)))
    with pytest.raises(ConfigError, match="with_proba=True"):
        ChainChecks.from_result(check)


@pytest.mark.parametrize(("max_local", "interval", "rows"), [(0, 1, 0), (1, 1, 2), (10, 1, 20), (10, 5, 4),
                                                             (11, 5, 6), (10, None, 2)])
def test_local_gradient_rows(max_local, interval, rows):
    assert local_gradient_rows(max_local, interval) == rows


# ------------------------------------------------------------------------------------- known outcomes in the walk
W, BIAS = np.array([3, 0.5, 1, 0.8, 0.6]), -11.45


def _row_wise_probability(X):
    # Row by row (a sum per row, no BLAS), so a row's P(y=1) does not depend on the batch it is sent in.
    return 1 / (1 + np.exp(-2 * ((X * W).sum(axis=1) + BIAS)))


def _search(name, protected, params):
    domain = toy_domain(protected)
    seeds = domain.sample(40, np.random.default_rng(0))
    gen = make_generator(name, max_global=40, max_local=60, **params)
    # Every non-protected feature moves P(y=1), so stale probabilities would change the estimate of maft, and
    # x @ w + bias is never 0. The gradient generators need a torch module, whose float rounding depends on the
    # batch: it may change a probability in its last bit, which maft's estimate would carry into its draws.
    model = (as_model(_row_wise_probability, output="probability") if name == "maft"
             else as_model(LinearToy(W.tolist(), BIAS).double()))
    return gen.run(model, domain, seeds, random_state=2)


# maft with update_interval: its refreshes read P(y=1) from the check records of a chain's current input, so a
# chain that reached a known IDI unchecked must be checked before its refresh.
@pytest.mark.parametrize(("name", "params"), [("eidig", {}), ("eidig-5", {}), ("adf", {}), ("maft", {}),
                                              ("maft", {"update_interval": 3})], ids=str)
@pytest.mark.parametrize("protected", [("sex",), ("sex", "race")])
def test_known_keys_cost_no_query_and_change_no_idi(name, params, protected, monkeypatch):
    skipping = _search(name, protected, params)
    monkeypatch.setattr(gradient_steps.KnownOutcomes, "lookup",
                        lambda self, X, **kw: (np.zeros(len(X), bool), np.zeros(len(X), bool)))
    checking_all = _search(name, protected, params)
    np.testing.assert_array_equal(skipping.idis, checking_all.idis)
    np.testing.assert_array_equal(skipping.counterparts, checking_all.counterparts)
    np.testing.assert_array_equal(skipping.phase, checking_all.phase)
    assert skipping.n_tested == checking_all.n_tested
    assert skipping.n_queries < checking_all.n_queries


def test_known_outcomes_ignore_inputs_outside_the_protected_domain():
    # sex code 2 stands for "missing": not a value of the PA, so such an input's outcome is not its key's.
    domain = Domain((Feature("sex", 0, 2, missing=2), Feature("a", 0, 9))).with_protected(["sex"])
    known = KnownOutcomes(IDIRecorder(as_model(lambda X: X[:, 1] > 4), domain))
    known.add(np.array([[0, 3], [2, 4]]), np.array([True, False]))
    is_known, is_idi = known.lookup(np.array([[1, 3], [2, 3], [0, 4], [1, 5]]))
    np.testing.assert_array_equal(is_known, [True, False, False, False])
    np.testing.assert_array_equal(is_idi, [True, False, False, False])


@pytest.mark.parametrize(("name", "params"), [("eidig-5", {}), ("adf", {}), ("maft", {"update_interval": 2})],
                         ids=str)
def test_every_refresh_sees_the_check_records_of_its_inputs(name, params, monkeypatch):
    # Records travel with the chains (kept moves, returns to the global IDI, unchecked moves onto known IDIs);
    # a refresh reading another input's records would steer the walk by the wrong labels and probabilities.
    module = {"eidig-5": "eidig", "adf": "adf", "maft": "eidig"}[name]
    original = gradient_steps.local_walk
    refreshed = []

    def spied_walk(recorder, x0, checks0, prob0, *, refresh, **kw):
        checker = DiscriminationCheck(recorder.model, recorder.domain)

        def checked_refresh(X, checks, rng):
            truth = checker.check(X, with_proba=True)
            np.testing.assert_array_equal(checks.labels, truth.labels)
            np.testing.assert_array_equal(checks.counterpart_labels, truth.counterpart_labels)
            np.testing.assert_allclose(checks.own_proba, truth.own_proba)
            refreshed.append(len(X))
            return refresh(X, checks, rng)

        return original(recorder, x0, checks0, prob0, refresh=checked_refresh, **kw)

    monkeypatch.setattr(f"chiralfair.generators.{module}.local_walk", spied_walk)
    _search(name, ("sex", "race"), params)
    assert sum(refreshed) > 50


def _constrained_search(name, monkeypatch=None, **params):
    domain = toy_domain(("sex", "race")).with_couplings(TOY_COUPLE).with_constraints(list(TOY_RULES))
    seeds = domain.repair(domain.sample(40, np.random.default_rng(0)))
    model = as_model(LinearToy(W.tolist(), BIAS).double())
    return make_generator(name, max_global=30, max_local=30, **params).run(model, domain, seeds, random_state=2)


def _same_search(a, b):
    np.testing.assert_array_equal(a.idis, b.idis)
    np.testing.assert_array_equal(a.counterparts, b.counterparts)
    np.testing.assert_array_equal(a.phase, b.phase)
    assert (a.n_tested, a.n_queries, a.n_plausible_idis) == (b.n_tested, b.n_queries, b.n_plausible_idis)


@pytest.mark.parametrize("name", ["eidig", "adf"])
def test_a_walk_repairs_only_the_moves_of_columns_a_rule_reads(name, monkeypatch):
    # A chain's input meets the constraints, so a move of any other column cannot break one: repairing every
    # move finds the same IDIs with the same queries.
    only_risky = _constrained_search(name)
    assert only_risky.n_local > 0
    monkeypatch.setattr(Domain, "constrained_mask", property(lambda self: np.ones(self.n_features, dtype=bool)))
    _same_search(only_risky, _constrained_search(name))


def test_a_walk_without_refreshes_needs_no_probabilities():
    # eidig-inf keeps no check records and asks labels only; an interval longer than the walk refreshes never
    # too but keeps them and asks probabilities: the same IDIs, tested keys and queries.
    _same_search(_constrained_search("eidig-inf"), _constrained_search("eidig", update_interval=31))


def test_the_walks_draw_down_columns_is_the_row_draw_feature_for_feature():
    # the local walk keeps its cumulative probabilities one chain a column; the features drawn must be those of the
    # row layout, draw for draw (zero-probability features never drawn, ties at a cumulative value included)
    from chiralfair.generators.gradient_steps import _sample_from_cumulative, _sample_from_cumulative_columns

    rng = np.random.default_rng(4)
    prob = rng.random((700, 13))
    prob[rng.random(prob.shape) < 0.3] = 0.0
    prob[:, 0] = 0.0
    prob[5] = 0.0
    prob[5, 7] = 1.0  # one possible feature
    cum = np.cumsum(prob, axis=1)
    a, b = np.random.default_rng(9), np.random.default_rng(9)
    for _ in range(20):
        rows = _sample_from_cumulative(cum, a)
        cols = _sample_from_cumulative_columns(np.ascontiguousarray(cum.T), b)
        np.testing.assert_array_equal(cols, rows)
        assert (prob[np.arange(len(prob)), cols] > 0).all() and cols[5] == 7
