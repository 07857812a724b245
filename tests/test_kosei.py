"""KOSEI's own behaviour (the contract tests cover determinism, re-checking and the budget bound)."""

import numpy as np
import pytest
from toys import biased_module, is_biased_idi, toy_domain

from chiralfair.generators import make_generator
from chiralfair.generators.kosei import _moves
from chiralfair.generators.recorder import IDIRecorder
from chiralfair.models import as_model

# On sex, the biased toy's IDI keys are (race, a, b, c) with 8 <= a + b <= 10: 3 * 28 * 5 of them, one region
# connected by ±1 steps of a or b.
ALL_SEX_IDIS = 3 * 28 * 5


def _run(protected=("sex",), n_seeds=30, seed=0, random_state=0, **params):
    domain = toy_domain(protected)
    seeds = domain.sample(n_seeds, np.random.default_rng(seed))
    model = as_model(biased_module())
    gen = make_generator("kosei", **{"max_global": 20, "max_local": 20, **params})
    return domain, seeds, gen.run(model, domain, seeds, random_state=random_state)


@pytest.mark.parametrize("protected", [("sex",), ("sex", "race")])
def test_never_checks_an_input_twice(protected):
    domain, seeds, res = _run(protected, max_local=50)
    assert len(set(domain.keys(seeds[:20]).tolist())) == 20  # distinct seeds: every check is a new key
    k = len(domain.combinations)
    if k == 2:  # every checked input costs its two queries: queries = 2 * checked inputs = 2 * tested keys
        assert res.n_queries == 2 * res.n_tested
    else:  # a local candidate its parent's flipping counterpart flips costs 2 queries, not k
        assert 2 * res.n_tested <= res.n_queries < k * res.n_tested
    assert res.n_local > 0


@pytest.mark.parametrize("protected", [("sex",), ("sex", "race")])
def test_the_flipping_counterpart_first_finds_the_same_keys(monkeypatch, protected):
    domain, _, res = _run(protected, max_local=50)
    with monkeypatch.context() as m:
        m.setattr(IDIRecorder, "check_first", lambda self, X, first, phase: self.check(X, phase))
        _, _, ref = _run(protected, max_local=50)
    np.testing.assert_array_equal(np.sort(domain.keys(res.idis)), np.sort(domain.keys(ref.idis)))
    assert res.n_tested == ref.n_tested and res.n_local == ref.n_local > 0
    if len(protected) == 1:
        assert res.n_queries == ref.n_queries
    else:  # six combinations; about half the candidates are IDIs, each at 2 queries instead of 6
        assert res.n_queries < 0.7 * ref.n_queries


def test_finds_the_whole_connected_idi_region_then_stops_on_an_empty_queue():
    _, _, res = _run(max_local=10_000)
    assert res.n_idis == ALL_SEX_IDIS
    assert is_biased_idi(res.idis).all()
    assert "queue empty" in res.notes[0]


def test_local_budget_is_max_local_checks_per_global_idi_pooled():
    _, _, res = _run(max_local=7)
    local_checks = res.n_tested - 20
    assert local_checks == 7 * res.n_global
    assert "local budget" in res.notes[0]


def test_batch_size_changes_nothing():
    _, _, a = _run(max_local=30, batch_size=1)
    _, _, b = _run(max_local=30, batch_size=3)
    _, _, c = _run(max_local=30)
    for other in (b, c):
        np.testing.assert_array_equal(a.idis, other.idis)
        np.testing.assert_array_equal(a.phase, other.phase)
        assert (a.n_tested, a.n_queries) == (other.n_tested, other.n_queries)


def test_every_local_idi_is_a_unit_step_from_an_earlier_idi():
    domain, _, res = _run(max_local=15)
    npa = domain.non_protected
    keys = res.idis[:, npa]
    for i in np.flatnonzero(res.phase == "local"):
        dist = np.abs(keys[:i] - keys[i]).sum(axis=1)
        assert (dist == 1).any()


def test_moves_skip_protected_and_single_valued_features():
    domain = toy_domain(("sex", "race"))
    moves = _moves(domain)
    assert moves.tolist() == [[2, -1], [2, 1], [3, -1], [3, 1], [4, -1], [4, 1]]


def test_time_budget_stops_with_a_note():
    _, _, res = _run(max_local=1000, time_budget=1e-9)
    assert "time budget" in res.notes[0]
    assert res.n_local == 0
