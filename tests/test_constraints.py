"""Constraints over the domain: parsing, repair, sampling, and impossible counterparts in the check.

See architecture: counterparts that could exist.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from toys import TOY_COUPLE, TOY_RULES, biased_module, breaks_toy_rules, coupled_toy_domain, toy_domain

from chiralfair.domain import Domain, Feature
from chiralfair.domain.constraints import AtLeast, Excludes, parse_constraint
from chiralfair.exceptions import DomainError
from chiralfair.models import as_model
from chiralfair.oracle import DiscriminationCheck

SETTINGS = settings(max_examples=80, deadline=None)
rows = st.lists(st.tuples(st.integers(0, 1), st.integers(0, 2), st.integers(0, 9), st.integers(0, 9),
                          st.integers(0, 4)), min_size=1, max_size=40).map(lambda r: np.array(r, dtype=np.int64))


def test_rules_parse_labels_codes_and_orderings():
    feats = toy_domain().features
    rule = parse_constraint("sex=Female excludes race=B|C", feats)
    assert rule == Excludes(0, (0,), 1, (1, 2), "sex=Female excludes race=B|C")
    assert parse_constraint("a >= b + 2", feats) == AtLeast(2, 3, 2, "a >= b + 2")
    assert parse_constraint("a < b", feats) == AtLeast(3, 2, 1, "b >= a + 1")
    assert parse_constraint("a <= c - 1", feats) == AtLeast(4, 2, 1, "c >= a + 1")


@pytest.mark.parametrize(("text", "match"), [
    ("sex=Female excludes colour=B", "unknown column 'colour'"),
    ("sex=Woman excludes race=B", "has no value 'Woman'"),
    ("sex=Female excludes sex=Male", "both sides name column 'sex'"),
    ("a likes b", "neither"),
    ("c >= a + 6", "holds for no input"),
])
def test_bad_rules_name_what_is_wrong(text, match):
    with pytest.raises(DomainError, match=match):
        toy_domain().with_constraints([text])


@SETTINGS
@given(rows)
def test_repair_satisfies_every_rule_keeps_good_rows_and_is_idempotent(X):
    domain = coupled_toy_domain()
    fixed = domain.repair(X)
    assert not breaks_toy_rules(fixed).any()
    good = ~breaks_toy_rules(X)
    np.testing.assert_array_equal(fixed[good], X[good])
    np.testing.assert_array_equal(domain.repair(fixed), fixed)
    np.testing.assert_array_equal(fixed[:, 0], X[:, 0])  # the protected attribute is not moved
    domain.validate(fixed)


@SETTINGS
@given(rows, st.sampled_from([("sex",), ("sex", "race")]))
def test_the_tabulated_rules_answer_and_repair_as_the_rules_do_for_rows_and_their_counterparts(X, protected):
    domain = coupled_toy_domain(protected)
    assert None not in (domain._constraint_table(), domain._counterpart_table(), domain._repair_table())
    np.testing.assert_array_equal(domain.satisfies(X), ~breaks_toy_rules(X))
    np.testing.assert_array_equal(domain.repair(X), domain._repair_rule_by_rule(X))
    C = domain.counterparts(X)
    expected = ~breaks_toy_rules(C.reshape(-1, X.shape[1])).reshape(C.shape[:2])
    np.testing.assert_array_equal(domain.possible_counterparts(X), expected)


@SETTINGS
@given(rows)
def test_repair_moves_names_the_rows_that_break_a_rule_and_what_repair_makes_of_them(X):
    domain = coupled_toy_domain()
    moved, repaired = domain.repair_moves(X)
    np.testing.assert_array_equal(moved, np.flatnonzero(breaks_toy_rules(X)))
    np.testing.assert_array_equal(repaired, domain._repair_rule_by_rule(X)[moved])
    assert not breaks_toy_rules(repaired).any()
    assert domain.repairs_stay_inside()
    assert ((repaired >= domain.lower) & (repaired <= domain.upper)).all()


def _one_column_moves(domain, X, seed):
    """Rows of X onto the rules, and one random move each of a column some rule reads, inside the bounds."""
    rng = np.random.default_rng(seed)
    X = domain._repair_rule_by_rule(X)
    columns = rng.choice(np.flatnonzero(domain.constrained_mask & domain.non_protected_mask), size=len(X))
    values = rng.integers(domain.lower[columns], domain.upper[columns] + 1)
    return X, columns, values


def _expected_one_column_repairs(domain, X, columns, values):
    """The walk's rule, recounted: make each move, repair the row rule by rule, compare with where it came from."""
    moved = X.copy()
    moved[np.arange(len(X)), columns] = values
    repaired = domain._repair_rule_by_rule(moved)
    changed = (repaired != moved).any(axis=1)
    back = (repaired == X).all(axis=1)
    return np.flatnonzero(changed & back), np.flatnonzero(changed & ~back), repaired[changed & ~back]


@SETTINGS
@given(rows, st.integers(0, 2**31))
def test_a_one_column_move_is_repaired_as_the_moved_row_is_taken_back_or_changed(X, seed):
    # the tabulated step in joint codes (the moved rows never built) against the moved rows repaired rule by rule
    domain = coupled_toy_domain()
    assert domain._repair_table() is not None
    X, columns, values = _one_column_moves(domain, X, seed)
    assert not breaks_toy_rules(X).any()
    undone, rows, repaired = domain.repair_one_column_moves(X, columns, values)
    expected = _expected_one_column_repairs(domain, X, columns, values)
    for got, want in zip((undone, rows, repaired), expected, strict=True):
        np.testing.assert_array_equal(got, want)
    assert not breaks_toy_rules(repaired).any()


def test_a_one_column_move_without_a_table_is_repaired_rule_by_rule():
    feats = (Feature("sex", 0, 1), Feature("a", 0, 999), Feature("b", 0, 999))
    domain = Domain(feats).with_protected(["sex"]).with_constraints(["a >= b"])
    assert domain._repair_table() is None
    X = np.array([[0, 6, 6], [1, 7, 7], [0, 999, 0], [1, 5, 2]])
    # a=6 -> 5 breaks a >= b=6 and is taken back; b=7 -> 9 is repaired to a=9; a 999 -> 998 meets it; b=2 -> 4 is ok
    undone, rows, repaired = domain.repair_one_column_moves(X, np.array([1, 2, 1, 2]), np.array([5, 9, 998, 4]))
    np.testing.assert_array_equal(undone, [0])
    np.testing.assert_array_equal(rows, [1])
    np.testing.assert_array_equal(repaired, [[1, 9, 9]])


def test_rules_over_too_many_joint_codes_are_answered_rule_by_rule():
    feats = (Feature("sex", 0, 1), Feature("a", 0, 999), Feature("b", 0, 999))
    domain = Domain(feats).with_protected(["sex"]).with_constraints(["a >= b"])
    assert domain._constraint_table() is None and domain._repair_table() is None
    X = np.array([[0, 5, 6], [1, 7, 7], [0, 999, 0]])
    np.testing.assert_array_equal(domain.satisfies(X), [False, True, True])
    np.testing.assert_array_equal(domain.repair(X), [[0, 6, 6], [1, 7, 7], [0, 999, 0]])
    moved, repaired = domain.repair_moves(X)
    np.testing.assert_array_equal(moved, [0])
    np.testing.assert_array_equal(repaired, [[0, 6, 6]])
    assert not domain.repairs_stay_inside()  # rule by rule: the walk compares its repairs with the bounds
    assert toy_domain().repairs_stay_inside()  # no rule: nothing is moved
    np.testing.assert_array_equal(domain.possible_counterparts(X), [[False, False], [True, True], [True, True]])


def test_repair_moves_the_excluded_column_to_its_nearest_allowed_code():
    domain = toy_domain().with_constraints(["sex=Female excludes c=1|2"])
    np.testing.assert_array_equal(domain.repair(np.array([[0, 0, 5, 5, 2], [0, 0, 5, 5, 1]]))[:, 4], [3, 0])


def test_a_rule_over_protected_columns_moves_to_the_nearest_allowed_combination():
    domain = toy_domain(("sex", "race")).with_constraints(["sex=Male excludes race=C"])
    fixed = domain.repair(np.array([[1, 2, 5, 5, 0]]))
    assert domain.satisfies(fixed).all() and np.abs(fixed - [[1, 2, 5, 5, 0]]).sum() == 1  # one code away
    np.testing.assert_array_equal(fixed[:, 2:], [[5, 5, 0]])


def test_conflicting_rules_are_refused_when_declared():
    with pytest.raises(DomainError, match="cannot all be met"):
        toy_domain().with_constraints(["a >= b + 5", "b >= a + 0"])
    with pytest.raises(DomainError, match="exclude every combination"):
        toy_domain(("sex", "race")).with_constraints(["sex=Female excludes race=A|B|C", "sex=Male excludes race=A|B|C"])


def test_sample_draws_only_inputs_that_satisfy_the_rules_uniformly():
    domain = coupled_toy_domain()
    X = domain.sample(20000, np.random.default_rng(0))
    assert not breaks_toy_rules(X).any()
    # uniform over the allowed inputs: c given a = 9 is uniform over the allowed codes (0..4 minus the excluded one)
    women = X[(X[:, 0] == 0) & (X[:, 2] == 9), 4]
    counts = np.bincount(women, minlength=5)
    assert counts[1] == 0 and counts[[0, 2, 3, 4]].min() > 0.7 * counts[[0, 2, 3, 4]].max()
    no_rules = toy_domain().sample(50, np.random.default_rng(3))
    np.testing.assert_array_equal(no_rules, toy_domain().with_constraints([]).sample(50, np.random.default_rng(3)))


def test_impossible_counterparts_are_not_queried_and_never_make_an_idi():
    # Without the coupling, a husband's counterpart is a female husband: impossible under the rules.
    domain = toy_domain().with_constraints(TOY_RULES)
    model = as_model(biased_module())
    husband, single = [1, 0, 5, 4, 1], [1, 0, 5, 4, 3]  # a + b = 9: the biased toy flips with sex
    res = DiscriminationCheck(model, domain).check(np.array([husband, single]), with_proba=True)
    assert model.n_queries == 3  # the husband alone, the single man and his counterpart
    np.testing.assert_array_equal(res.possible, [[False, True], [True, True]])
    np.testing.assert_array_equal(res.is_idi, [False, True])
    assert res.counterpart_labels[0, 0] == res.labels[0] and res.proba[0, 0] == res.own_proba[0]
    # with the coupling the husband's counterpart is a wife, who can exist
    coupled = coupled_toy_domain()
    res = DiscriminationCheck(as_model(biased_module()), coupled).check(np.array([husband]))
    assert res.possible.all() and res.is_idi[0]
    np.testing.assert_array_equal(res.counterparts(coupled), [[0, 0, 5, 4, 0]])


def test_data_rows_that_break_a_rule_are_warned_about():
    from chiralfair.exceptions import DataWarning

    domain = toy_domain()
    data = np.array([[0, 0, 1, 1, 1], [1, 0, 1, 1, 1]])
    with pytest.warns(DataWarning, match="broken by 1 of the 2 data rows"):
        domain.with_constraints(["sex=Female excludes c=1"], data=data)


def test_domain_round_trips_its_constraints():
    from chiralfair.domain import Domain

    domain = coupled_toy_domain()
    back = Domain.from_dict(domain.to_dict())
    assert back.constraints == domain.constraints
    assert back.describe_constraints() == ["sex=Female excludes c=1", "sex=Male excludes c=0", "a >= c"]


def test_a_rule_whose_other_column_cannot_move_is_a_rule_over_the_protected_attribute():
    # f0 has one value, so 'f0=0 excludes f1=-1' says f1 is never -1: the row moves its protected value (a
    # hypothesis case once refused as "the rules conflict").
    domain = Domain((Feature("f0", 0, 0), Feature("f1", -4, -1), Feature("f2", 0, 1)), protected=(1, 2),
                    protected_values=((-3, -2), (0, 1))).with_constraints(["f0=0 excludes f1=-1"])
    assert domain.repair([[0, -1, 0]]).tolist() == [[0, -2, 0]]
    assert domain.repair([[0, -3, 1]]).tolist() == [[0, -3, 1]]


@pytest.mark.parametrize(("rules", "always"), [(TOY_RULES[:2], True), (TOY_RULES, False)])
@SETTINGS
@given(X=rows)
def test_counterparts_of_rows_said_to_satisfy_the_rules_are_possible_only_when_the_table_says_so(rules, always, X):
    # The coupling swaps c 0 <-> 1 with sex, so under the two sex rules every counterpart of a row that satisfies
    # them satisfies them too and `satisfying=True` skips the lookup; "a >= c" breaks that (Female, c=0, a=0 has
    # the counterpart Male, c=1, a=0), and the lookup must still be made.
    domain = toy_domain().with_couplings(TOY_COUPLE).with_constraints(list(rules))
    X = domain.repair(X)
    assert domain.counterparts_of_satisfying_rows_possible() is always
    truth = domain.satisfies(domain.counterparts(X).reshape(-1, X.shape[1])).reshape(len(X), -1)
    np.testing.assert_array_equal(domain.possible_counterparts(X, satisfying=True), truth)
    np.testing.assert_array_equal(domain.possible_counterparts(X), truth)
