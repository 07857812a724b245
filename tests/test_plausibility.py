"""Plausibility: support counts, scored pairs, and a verdict over counterparts that could exist.

The toy: half the rows are married (a woman is a wife, a man a husband), so flipping sex alone makes
exactly half the naive counterparts impossible people. See architecture: counterparts that could exist.
"""

from dataclasses import replace

import numpy as np
import pytest
from toys import impossible_married, married_dataset, married_module

from chiralfair.domain import Domain
from chiralfair.domain.plausibility import Support, suggested_couplings
from chiralfair.exceptions import ConfigError, DomainError
from chiralfair.generators import make_generator
from chiralfair.models import as_model
from chiralfair.results import SearchResult
from chiralfair.verdict import estimate

COUPLE = {"sex": {"role": {"Husband": "Wife", "Wife": "Husband"}}}
RULES = ["sex=Female excludes role=Husband", "sex=Male excludes role=Wife"]


def test_the_rarity_rule_against_independence():
    from chiralfair.domain import Feature

    feats = (Feature("s", 0, 1), Feature("r", 0, 2))
    # 1,000 rows: s=0 with r=1 once (expected 250), s=1 with r=2 never but expected 0.5 only
    X = np.array([[0, 0]] * 499 + [[0, 1]] + [[1, 1]] * 499 + [[1, 2]] * 0 + [[0, 2]] * 1, dtype=np.int64)
    support = Support.from_data(X, feats)
    pairs = np.array([[0, 1]])
    assert not support.plausible(np.array([[0, 1]]), pairs)[0]   # 1 row where 250 were expected: rare
    assert support.plausible(np.array([[1, 2]]), pairs)[0]       # never seen, but 0.5 expected: no evidence
    assert support.plausible(np.array([[1, 1], [0, 0]]), pairs).all()
    literal = Support.from_data(X, feats, min_lift=0.0)             # min_lift 0: only a zero count with E >= 5
    assert literal.plausible(np.array([[0, 1]]), pairs)[0]
    with pytest.raises(ConfigError, match="min_lift"):
        Support.from_data(X, feats, min_lift=-1)


def test_the_data_suggests_the_coupling_and_the_rules():
    data = married_dataset()
    rules = [r["constraint"] for r in data.domain.rare_pairs()]
    assert rules == RULES
    assert suggested_couplings(data.domain.rare_pairs(), data.domain) == ["sex:role=Husband/Wife"]


def test_without_the_coupling_half_the_verdicts_counterparts_are_implausible():
    data = married_dataset()
    model = as_model(married_module())
    verdict = estimate(model, data, population="rows", exact=True, favourable=1)
    n_married = int((data.X[:, 1] < 2).sum())
    assert n_married == 300
    p = verdict.plausibility
    # the analytic count: every married row's only counterpart is a female husband or a male wife
    assert p["n_counterparts"] == 600
    assert p["n_implausible_counterparts"] == p["n_with_implausible_counterpart"] == n_married
    assert impossible_married(data.domain.counterparts(data.X)[:, :, :].reshape(-1, 5)).sum() == n_married
    assert p["n_affected_plausible"] < p["n_affected_possible"] == verdict.n_affected


def test_plausible_only_refuses_a_share_of_individuals_with_no_plausible_counterpart():
    # Every married row's only counterpart is a female husband or a male wife: through plausible counterparts
    # only, nothing is checked for them. Over married rows alone the headline read 0.00% exact: "fair".
    data = married_dataset()
    model = as_model(married_module())
    married = np.flatnonzero(data.X[:, 1] < 2)
    with pytest.raises(DomainError, match=r"none of the 300 individuals checked has a plausible counterpart"):
        estimate(model, data, population="test", test_index=married, exact=True, favourable=1, plausible_only=True)
    everyone = estimate(model, data, population="rows", exact=True, favourable=1, plausible_only=True)
    assert everyone.plausibility["n_without_plausible_counterpart"] == 300
    assert any(n.startswith("300 individuals have no plausible counterpart") for n in everyone.notes)
    possible = estimate(model, data, population="test", test_index=married, exact=True, favourable=1)
    assert possible.plausibility["n_without_plausible_counterpart"] == 300  # said beside the headline too


def test_with_the_coupling_no_verdict_counterpart_is_impossible():
    data = married_dataset(couple=COUPLE)
    model = as_model(married_module())
    rows = estimate(model, data, population="rows", exact=True, favourable=1)
    assert rows.plausibility["n_implausible_counterparts"] == 0
    assert rows.couplings == ("sex -> role: Husband <-> Wife",)
    assert not impossible_married(data.domain.counterparts(data.X).reshape(-1, 5)).any()
    # the verdict over the rows equals a direct forward pass over the coupled counterparts
    direct = model.predict(data.domain.counterparts(data.X).reshape(-1, 5)).reshape(-1, 2)
    assert rows.n_affected == int((direct[:, 0] != direct[:, 1]).sum())
    # uniform draws from the domain: with the rules every drawn person and every counterpart can exist
    ruled = replace(data, domain=data.domain.with_constraints(RULES))
    drawn = estimate(model, ruled, population="domain", favourable=1, random_state=0, margin=0.02)
    assert drawn.plausibility["n_implausible_counterparts"] == 0
    # small enough to enumerate: the 2,000 of the 3,000 points that can exist, and a direct count of the affected
    assert drawn.exact and drawn.population_size == drawn.n_individuals == 2000
    points = np.array(np.meshgrid(*[np.arange(f.size) for f in ruled.domain.features], indexing="ij")).reshape(5, -1).T
    points = points[ruled.domain.satisfies(points)]
    labels = model.predict(ruled.domain.counterparts(points).reshape(-1, 5)).reshape(-1, 2)
    assert drawn.n_affected == int((labels[:, 0] != labels[:, 1]).sum())


def test_plausible_only_makes_the_plausible_share_the_headline():
    data = married_dataset()
    model = as_model(married_module())
    both = estimate(model, data, population="rows", exact=True, favourable=1)
    plausible = estimate(model, data, population="rows", exact=True, favourable=1, plausible_only=True)
    assert plausible.counterparts == "plausible"
    assert plausible.n_affected == both.plausibility["n_affected_plausible"]
    assert plausible.plausibility == both.plausibility
    assert "plausible counterpart" in plausible.summary()
    from chiralfair.verdict import Verdict
    assert Verdict.from_json(plausible.to_json()) == plausible
    unsupported = replace(data, domain=Domain(data.domain.features).with_protected(["sex"]))
    with pytest.raises(ConfigError, match="plausible_only=True needs"):
        estimate(model, unsupported, population="rows", favourable=1, plausible_only=True)


@pytest.mark.parametrize("name", ["aequitas", "adf", "kosei"])
def test_with_the_coupling_and_the_rules_no_reported_pair_is_impossible(name):
    data = married_dataset(couple=COUPLE)
    domain = data.domain.with_constraints(RULES)
    model = as_model(married_module())
    res = make_generator(name, max_global=40, max_local=40).run(model, domain, data.X[:40], random_state=0)
    assert res.n_idis > 0
    assert not impossible_married(res.idis).any() and not impossible_married(res.counterparts).any()
    assert res.n_plausible_idis == res.n_idis
    # without the coupling the married people have no counterpart that can exist, so none of them is an IDI
    uncoupled = data.domain.with_couplings(None).with_constraints(RULES)
    res = make_generator(name, max_global=40, max_local=40).run(model, uncoupled, data.X[:40], random_state=0)
    assert not impossible_married(res.counterparts).any()
    assert (res.idis[:, 1] == 2).all()


def test_each_pair_is_scored_and_the_score_streams_to_parquet(tmp_path):
    from chiralfair.results.run_folder import PairSink

    data = married_dataset()  # no coupling: generators find implausible pairs
    model = as_model(married_module())
    res = make_generator("aequitas", max_global=60, max_local=30).run(model, data.domain, data.X[:60],
                                                                      random_state=0)
    expected = data.domain.plausible(res.idis) & data.domain.plausible(res.counterparts)
    np.testing.assert_array_equal(res.plausible, expected)
    assert 0 < res.n_plausible_idis == int(expected.sum()) < res.n_idis
    assert "plausible" in res.to_frame(data.domain) and res.summary()["n_plausible_idis"] == res.n_plausible_idis
    back = SearchResult.from_json(res.to_json())
    np.testing.assert_array_equal(back.plausible, res.plausible)
    streamed = make_generator("aequitas", max_global=60, max_local=30).run(
        model, data.domain, data.X[:60], random_state=0, sink=PairSink(tmp_path / "idis.parquet"))
    assert streamed.n_plausible_idis == res.n_plausible_idis
    np.testing.assert_array_equal(streamed.plausible, res.plausible)


@pytest.mark.parametrize("protected_codes", [2, 64, 65, 300], ids=lambda n: f"{n}-codes")
def test_plausible_is_the_pair_by_pair_lookup(protected_codes):
    # Support.plausible reads a protected column of at most 64 codes through per-column bit masks; recounted here
    # pair by pair from the rare table, with two protected attributes (each one's column against the other's too)
    rng = np.random.default_rng(protected_codes)
    n = 9000
    p = rng.integers(0, protected_codes, n)
    q = rng.integers(0, 3, n)
    c1 = np.where(p % 2 == 0, 0, rng.integers(0, 2, n))  # an even p is never seen with c1 = 1: a rare pair
    c2 = rng.integers(0, 7, n)
    X = np.column_stack([c1, p, c2, q, rng.integers(0, 10, n)]).astype(np.int64)
    domain = Domain.from_data(X, ["c1", "p", "c2", "q", "o"], kinds=["categorical"] * 4 + ["ordinal"],
                              protected=["p", "q"])
    support = domain.support
    pairs = support.pair_columns(domain)
    assert {(1, 0), (1, 2), (1, 3), (3, 1)} <= set(map(tuple, pairs.tolist()))
    rows = np.concatenate([X, domain.sample(2000, rng)])
    expected = np.ones(len(rows), dtype=bool)
    for a, b in pairs.tolist():
        i = rows[:, a] - support.lower[a] + support.offsets[a]
        j = rows[:, b] - support.lower[b] + support.offsets[b]
        expected &= ~support.rare[i, j]
    assert 0 < expected.sum() < len(rows), "some rows are implausible, some are not"
    np.testing.assert_array_equal(domain.plausible(rows), expected)


def _pair_by_pair(domain, rows):
    support, expected = domain.support, np.ones(len(rows), dtype=bool)
    for a, b in support.pair_columns(domain).tolist():
        i = rows[:, a] - support.lower[a] + support.offsets[a]
        j = rows[:, b] - support.lower[b] + support.offsets[b]
        expected &= ~support.rare[i, j]
    return expected


@pytest.mark.parametrize("case", ["2-codes", "65-codes", "coupled"])
def test_a_row_and_its_counterpart_are_plausible_together_as_each_alone(case):
    # Domain.plausible(X, counterparts) reads the columns a counterpart keeps once for both; recounted pair by pair
    # on each side. The coupled case moves the coupled column (role) with the protected one, so it is read twice.
    rng = np.random.default_rng(7)
    if case == "coupled":
        domain = married_dataset(n=2000, couple=COUPLE).domain
    else:
        codes, n = int(case.split("-")[0]), 9000
        p = rng.integers(0, codes, n)
        c1 = np.where(p % 2 == 0, 0, rng.integers(0, 2, n))
        X = np.column_stack([c1, p, rng.integers(0, 7, n), rng.integers(0, 10, n)]).astype(np.int64)
        domain = Domain.from_data(X, ["c1", "p", "c2", "o"], kinds=["categorical"] * 3 + ["ordinal"], protected=["p"])
    rows = domain.sample(3000, rng)
    index = rng.integers(0, len(domain.combinations), len(rows))
    counterparts = domain.counterpart_rows(rows, index)
    if case == "coupled":
        assert (counterparts[:, 1] != rows[:, 1]).any(), "the coupled column moves with the protected one"
    expected = _pair_by_pair(domain, rows) & _pair_by_pair(domain, counterparts)
    assert 0 < expected.sum() < len(rows)
    np.testing.assert_array_equal(domain.plausible(rows, counterparts), expected)
