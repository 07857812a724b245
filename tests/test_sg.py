"""SG: surrogate paths, constraint solving (interval arithmetic against z3), budgets and the search itself."""

import numpy as np
import pytest
import z3
from sklearn.tree import DecisionTreeClassifier
from toys import is_biased_idi, toy_dataset, toy_domain

from chiralfair.exceptions import ConfigError
from chiralfair.generators import sg as sg_module
from chiralfair.generators.sg import (
    SolverTimeout,
    SymbolicGeneration,
    global_constraint,
    local_constraints,
    solve,
    solve_interval,
    solve_z3,
)
from chiralfair.generators.surrogate import PathStep, Predicate, decision_path, fit_surrogate, local_samples
from chiralfair.models import as_model

SMALL = dict(n_samples=200, limit=150)


def seeds_of(domain, n=20, seed=0):
    return domain.sample(n, np.random.default_rng(seed))


# ------------------------------------------------------------------ constraints and solvers
def test_predicate_negation_is_the_integer_complement():
    v = np.arange(-3, 12)[:, None]
    for p in (Predicate(0, True, 4), Predicate(0, False, 4)):
        np.testing.assert_array_equal(p.negate().holds(v), ~p.holds(v))
        assert p.negate().negate() == p


@pytest.mark.parametrize("solver", ["interval", "z3", "auto"])
def test_unsatisfiable_constraint_gives_no_candidate(domain, solver):
    x = np.array([0, 0, 5, 5, 2])
    contradictory = [Predicate(2, True, 2), Predicate(2, False, 5)]
    outside_domain = [Predicate(4, False, 7)]            # c lies in [0, 4]
    two_features = [Predicate(2, True, 3), Predicate(3, False, 10)]  # b lies in [0, 9]
    for constraint in (contradictory, outside_domain, two_features):
        assert solve(constraint, x, domain, solver=solver) is None


def test_interval_solver_agrees_with_z3():
    """The interval shortcut is exact: same satisfiability and, off protected attributes, the same nearest
    solution as z3's Optimize; on a protected attribute with gaps in its values, a solution as near."""
    dom = toy_domain(("sex", "race")).with_protected(["sex", "race"], values={"sex": [0, 1], "race": [0, 2]})
    rng = np.random.default_rng(0)
    n_sat = 0
    for _ in range(150):
        x = rng.integers(dom.lower, dom.upper + 1)  # race may be 1, outside its declared values
        k = int(rng.integers(1, 5))
        feats = rng.integers(0, dom.n_features, size=k)
        bounds = [int(rng.integers(dom.lower[f] - 1, dom.upper[f] + 2)) for f in feats]
        cons = [Predicate(int(f), bool(rng.integers(2)), b) for f, b in zip(feats, bounds, strict=True)]
        a = solve_interval(cons, x, dom)
        b = solve_z3(cons, x, dom, timeout_ms=5000)
        assert (a is None) == (b is None), cons
        if a is None:
            continue
        n_sat += 1
        for sol in (a, b):
            assert all(p.holds(sol[None, :])[0] for p in cons)
            dom.validate(sol)
            for i, vals in zip(dom.protected, dom.protected_values, strict=True):
                assert sol[i] in vals or (sol[i] == x[i] and i not in feats)  # unconstrained: kept
        assert np.abs(a - x).sum() == np.abs(b - x).sum()
        not_race = np.arange(dom.n_features) != 1  # race 1 is as near to 0 as to 2: either is right
        np.testing.assert_array_equal(a[not_race], b[not_race])
    assert 20 < n_sat < 150


def test_solution_changes_only_the_constrained_features(domain):
    x = np.array([1, 2, 5, 5, 2])
    out = solve([Predicate(2, False, 7), Predicate(3, True, 1)], x, domain, solver="z3")
    np.testing.assert_array_equal(out, [1, 2, 7, 1, 2])  # the nearest solution, other features kept


def test_z3_time_out_raises(domain, monkeypatch):
    monkeypatch.setattr(z3.Optimize, "check", lambda self, *a: z3.unknown)
    with pytest.raises(SolverTimeout):
        solve_z3([Predicate(2, True, 3)], np.array([0, 0, 5, 5, 2]), domain, timeout_ms=1)


def test_solver_time_outs_are_reported_and_the_run_continues(domain, biased_model, monkeypatch):
    monkeypatch.setattr(z3.Optimize, "check", lambda self, *a: z3.unknown)
    res = SymbolicGeneration(solver="z3", solver_timeout_ms=1, max_global=10, **SMALL).run(
        biased_model, domain, seeds_of(domain, 10), random_state=0)
    assert any("z3 queries timed out" in n for n in res.notes)
    assert res.n_local == 0          # every candidate came from a timed-out query
    assert res.n_tested == 10        # the seeds were still tested


# ------------------------------------------------------------------ surrogate
def test_local_samples_stay_in_domain_and_near_the_input(domain):
    X = seeds_of(domain, 3)
    S = local_samples(X, domain, 400, 0.2, np.random.default_rng(0))
    assert S.shape == (3, 400, domain.n_features)
    domain.validate(S.reshape(-1, domain.n_features))
    changed = (S != X[:, None, :]).mean()
    assert 0.05 < changed < 0.2  # a re-drawn value may equal the old one


def test_decision_path_predicates_hold_and_confidences_are_child_shares(domain):
    X = domain.sample(500, np.random.default_rng(1))
    y = is_biased_idi(X).astype(int)
    tree = fit_surrogate(X, y, random_state=0)
    t = tree.tree_
    for x in X[:20]:
        path = decision_path(tree, x)
        assert len(path) == tree.decision_path(x[None, :]).nnz - 1
        assert all(s.predicate.holds(x[None, :])[0] for s in path)
        node = 0
        for s in path:
            child = t.children_left[node] if s.predicate.upper else t.children_right[node]
            assert s.confidence == pytest.approx(t.n_node_samples[child] / t.n_node_samples[node])
            node = child


def test_constant_model_gives_a_depth_zero_tree_and_nothing_to_negate(domain):
    X = domain.sample(50, np.random.default_rng(0))
    tree = fit_surrogate(X, np.zeros(50, int), random_state=0)
    assert tree.get_depth() == 0 and decision_path(tree, X[0]) == []
    res = SymbolicGeneration(max_global=5, **SMALL).run(lambda Z: np.zeros(len(Z)), domain, X[:5],
                                                        random_state=0)
    assert res.n_idis == 0 and res.n_tested == 5
    assert res.notes[0].startswith("stopped: queue empty")


def test_path_on_protected_attributes_only_is_not_negated(domain):
    """A model that looks only at sex: every input is an IDI, but no predicate may be negated."""
    seeds = seeds_of(domain, 6)
    res = SymbolicGeneration(max_global=6, **SMALL).run(lambda Z: Z[:, 0], domain, seeds, random_state=0)
    assert res.n_idis == res.n_tested == len(np.unique(domain.keys(seeds)))
    assert res.n_local == 0 and res.notes[0].startswith("stopped: queue empty")


def test_local_and_global_constraints_from_a_path():
    path = [PathStep(Predicate(2, True, 4), 0.9), PathStep(Predicate(3, False, 6), 0.2),
            PathStep(Predicate(2, False, 1), 0.5)]
    local = list(local_constraints(path))
    assert len(local) == 3
    negated, constraint, conf = local[0]
    assert negated[0] == Predicate(2, False, 5) and negated[1:] == (path[1].predicate, path[2].predicate)
    assert constraint == [Predicate(2, False, 5), Predicate(2, False, 1)]  # only the negated feature
    assert conf == pytest.approx((0.1 + 0.2 + 0.5) / 3)
    constraint, conf = global_constraint(path, 0.3)
    assert constraint == (Predicate(2, True, 4), Predicate(3, True, 5))
    assert conf == pytest.approx((0.9 + 0.8) / 2)
    assert global_constraint(path, 0.1) is None


# ------------------------------------------------------------------ the search
def test_finds_true_idis_on_the_biased_toy(domain, biased_model):
    gen = SymbolicGeneration(max_global=20, **SMALL)
    res = gen.run(biased_model, domain, seeds_of(domain), random_state=0)
    assert res.n_idis > res.n_seed_idis > 0 and res.n_local > 0
    assert is_biased_idi(res.idis).all()
    assert res.n_tested <= SMALL["limit"]
    assert res.n_queries <= SymbolicGeneration(**SMALL).query_budget(20, 2)


def test_no_idis_on_the_fair_toy(domain, fair_model):
    res = SymbolicGeneration(max_global=20, **SMALL).run(fair_model, domain, seeds_of(domain), random_state=0)
    assert res.n_idis == 0 and res.n_tested >= 20
    # global-marginal samples (LIME's) make low-confidence predicates, hence global candidates, common
    gen = SymbolicGeneration(max_global=20, perturb_prob=1.0, **SMALL)
    res = gen.run(fair_model, domain, seeds_of(domain), random_state=0)
    assert res.n_idis == 0 and res.n_tested > 20


def test_works_with_a_sklearn_model(domain):
    data = toy_dataset(n=800)
    tree = DecisionTreeClassifier(random_state=0).fit(data.X, data.y)
    res = SymbolicGeneration(max_global=20, **SMALL).run(tree, domain, data.X[:20], random_state=0)
    assert res.n_idis > 0
    model = as_model(tree)
    assert (model.predict(res.idis) != model.predict(res.counterparts)).all()


def test_works_with_a_black_box_callable(domain):
    def black_box(Z):
        return (Z[:, 2] + Z[:, 3] + 3 * Z[:, 0] > 10.5).astype(int)
    res = SymbolicGeneration(max_global=20, **SMALL).run(black_box, domain, seeds_of(domain), random_state=0)
    assert res.n_idis > 0 and is_biased_idi(res.idis).all()


def test_limit_defaults_to_seeds_times_one_plus_max_local_and_stops_the_run(domain, biased_model):
    gen = SymbolicGeneration(max_global=20, max_local=3, n_samples=100, perturb_prob=1.0, cap_local=False)
    assert gen.limit == 80
    res = gen.run(biased_model, domain, seeds_of(domain), random_state=0)
    assert res.n_tested == 80 and res.notes[0] == "stopped: limit of 80 tested inputs reached"


def test_max_local_caps_the_local_search_of_each_global_idi(domain, biased_model):
    kw = dict(max_global=20, n_samples=100, perturb_prob=1.0, limit=300)
    capped = SymbolicGeneration(max_local=2, **kw).run(biased_model, domain, seeds_of(domain), random_state=0)
    assert 0 < capped.n_local <= 2 * capped.n_global
    assert any("max_local=2" in n for n in capped.notes)
    free = SymbolicGeneration(max_local=2, cap_local=False, **kw).run(biased_model, domain, seeds_of(domain),
                                                                      random_state=0)
    assert free.n_local > 2 * free.n_global
    none = SymbolicGeneration(max_local=0, **kw).run(biased_model, domain, seeds_of(domain), random_state=0)
    assert none.n_local == 0 and none.n_global > 0


def test_seeds_not_reached_are_reported(domain, biased_model):
    res = SymbolicGeneration(max_global=20, n_samples=200, limit=10).run(
        biased_model, domain, seeds_of(domain), random_state=0)
    assert any("seeds were not reached" in n for n in res.notes)


def test_wall_clock_budget_stops_the_run_and_says_so(domain, biased_model):
    res = SymbolicGeneration(max_global=20, time_budget=1e-9, **SMALL).run(
        biased_model, domain, seeds_of(domain), random_state=0)
    assert res.n_tested < SMALL["limit"]
    assert "time budget" in res.notes[0] and "not reproducible" in res.notes[0]


@pytest.mark.parametrize("batch_size", [1, 16])
def test_same_random_state_same_result_for_any_batch_size(domain, biased_model, batch_size):
    runs = [SymbolicGeneration(max_global=20, batch_size=batch_size, **SMALL).run(
        biased_model, domain, seeds_of(domain), random_state=3) for _ in range(2)]
    np.testing.assert_array_equal(runs[0].idis, runs[1].idis)
    assert runs[0].n_queries == runs[1].n_queries


def test_solvers_give_the_same_search(domain, biased_model):
    results = [SymbolicGeneration(max_global=10, solver=s, n_samples=200, limit=60).run(
        biased_model, domain, seeds_of(domain, 10), random_state=1) for s in ("interval", "z3")]
    np.testing.assert_array_equal(results[0].idis, results[1].idis)


@pytest.mark.parametrize("bad", [dict(solver="cvc5"), dict(n_samples=1), dict(perturb_prob=0.0),
                                 dict(threshold=1.5), dict(limit=0), dict(time_budget=-1.0),
                                 dict(batch_size=0), dict(solver_timeout_ms=0), dict(cap_local=1)])
def test_bad_parameters_are_named(bad):
    with pytest.raises(ConfigError, match=next(iter(bad))):
        SymbolicGeneration(**bad)


def test_registered_as_sg():
    assert sg_module.SymbolicGeneration.name == "sg"
    from chiralfair.generators.base import GENERATORS
    assert GENERATORS["sg"] is SymbolicGeneration


def test_surrogate_fit_without_sklearn_checks_builds_the_tree_sklearn_builds():
    from sklearn.tree import DecisionTreeClassifier

    from chiralfair.generators.surrogate import fit_surrogate

    rng = np.random.default_rng(0)
    X = rng.integers(0, 10, size=(1000, 6))
    y = ((X[:, 0] + X[:, 1] + rng.integers(0, 3, 1000)) > 10).astype(np.int64)
    ours, plain = fit_surrogate(X, y, random_state=5).tree_, DecisionTreeClassifier(random_state=5).fit(X, y).tree_
    for attribute in ("feature", "threshold", "children_left", "children_right", "n_node_samples", "value"):
        np.testing.assert_array_equal(getattr(ours, attribute), getattr(plain, attribute))
