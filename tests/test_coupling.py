"""Coupled attributes: counterparts change coupled columns, keys are the orbits of the counterpart map.

See architecture: counterparts that could exist.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from realdata import real_data_home_or_skip
from toys import TOY_COUPLE, toy_domain

from chiralfair.datasets import load_dataset
from chiralfair.domain import Domain, Feature
from chiralfair.domain.coupling import parse_couple_text, parse_couplings
from chiralfair.exceptions import ConfigError, DomainError
from chiralfair.seeds.chiral import mutate_protected

SETTINGS = settings(max_examples=60, deadline=None)


# ------------------------------------------------------------------ domains drawn by hypothesis
@st.composite
def coupled_domains(draw):
    """A protected attribute with 2-4 values, a coupled column of 3-7 codes, and one free column.

    Two values: a random swap map (an involution). More: random role classes (disjoint codes).
    """
    n_values = draw(st.integers(2, 4))
    size = draw(st.integers(max(3, n_values), 7))
    feats = (Feature("pa", 0, n_values - 1, "categorical"), Feature("role", 0, size - 1, "categorical"),
             Feature("x", 0, 3))
    codes = draw(st.permutations(list(range(size))))
    if n_values == 2:
        n_swaps = draw(st.integers(1, size // 2))
        swap = {}
        for i in range(n_swaps):
            a, b = codes[2 * i], codes[2 * i + 1]
            swap[a], swap[b] = b, a
        couple = {"pa": {"role": swap}}
    else:
        n_roles = draw(st.integers(1, size // n_values))
        roles = [{str(v): codes[r * n_values + v] for v in range(n_values)} for r in range(n_roles)]
        couple = {"pa": {"role": roles}}
    domain = Domain(feats).with_protected(["pa"]).with_couplings(couple)
    X = draw(st.lists(st.tuples(st.integers(0, n_values - 1), st.integers(0, size - 1), st.integers(0, 3)),
                      min_size=1, max_size=30))
    return domain, np.array(X, dtype=np.int64)


@SETTINGS
@given(coupled_domains())
def test_an_input_and_each_of_its_counterparts_share_a_key(case):
    domain, X = case
    C = domain.counterparts(X)
    for k in range(C.shape[1]):
        np.testing.assert_array_equal(domain.keys(C[:, k]), domain.keys(X))


@SETTINGS
@given(coupled_domains())
def test_keys_are_unique_per_orbit(case):
    # Two inputs share a key exactly when one is a counterpart of the other.
    domain, X = case
    keys = domain.keys(X)
    C = domain.counterparts(X)
    same_key = keys[:, None] == keys[None, :]
    counterpart_of = (C[:, :, None, :] == X[None, None, :, :]).all(axis=3).any(axis=1)
    np.testing.assert_array_equal(same_key, counterpart_of)


@SETTINGS
@given(coupled_domains())
def test_a_key_encodes_the_projection_with_roles(case):
    domain, X = case
    proj = domain.projection(X)
    sizes = domain.upper[domain.non_protected] - domain.lower[domain.non_protected] + 1
    radix = np.cumprod(np.concatenate([[1], sizes[:-1]]))
    np.testing.assert_array_equal(domain.keys(X), (proj - domain.lower[domain.non_protected]) @ radix)


@SETTINGS
@given(coupled_domains())
def test_counterparts_of_a_counterpart_are_the_same_counterparts(case):
    # Moving a -> b -> c is moving a -> c, for every input (also one that is not "consistent").
    domain, X = case
    C = domain.counterparts(X)
    for k in range(C.shape[1]):
        np.testing.assert_array_equal(domain.counterparts(C[:, k]), C)


@SETTINGS
@given(coupled_domains())
def test_counterpart_rows_is_one_column_of_counterparts(case):
    domain, X = case
    combo = np.arange(len(X)) % len(domain.combinations)
    np.testing.assert_array_equal(domain.counterpart_rows(X, combo), domain.counterparts(X)[np.arange(len(X)), combo])
    assert len(np.unique(domain.keys(domain.counterparts(X).reshape(-1, 3)))) == len(np.unique(domain.keys(X)))


@SETTINGS
@given(coupled_domains(), st.integers(0, 2**31))
def test_the_chiral_mutation_gives_another_counterpart(case, seed):
    domain, X = case
    M = mutate_protected(X, domain, np.random.default_rng(seed))
    assert (M[:, 0] != X[:, 0]).all()
    C = domain.counterparts(X)
    assert (C == M[:, None, :]).all(axis=2).any(axis=1).all()
    domain.validate(M)


def test_census_style_keys_keep_husband_and_own_child_apart_and_join_husband_and_wife():
    dom = toy_domain().with_couplings(TOY_COUPLE)  # c: 0 = wife, 1 = husband, 2..4 other roles
    man_husband, woman_wife = [1, 0, 3, 4, 1], [0, 0, 3, 4, 0]
    man_wife, man_other = [1, 0, 3, 4, 0], [1, 0, 3, 4, 2]
    keys = dom.keys(np.array([man_husband, woman_wife, man_wife, man_other]))
    assert keys[0] == keys[1]                     # an IDI and its counterpart: one key
    assert len({keys[0], keys[2], keys[3]}) == 3  # other orbits: other keys
    np.testing.assert_array_equal(dom.counterparts(np.array([man_husband]))[0, :, 4], [0, 1])


def test_without_couplings_keys_and_counterparts_are_as_before():
    plain, coupled = toy_domain(), toy_domain().with_couplings(TOY_COUPLE)
    X = plain.sample(50, np.random.default_rng(0))
    X[:, 4] = 3  # no coupled code: the coupling changes nothing
    np.testing.assert_array_equal(plain.keys(X), coupled.keys(X))
    np.testing.assert_array_equal(plain.counterparts(X), coupled.counterparts(X))
    np.testing.assert_array_equal(coupled.projection(X), X[:, 1:])


def test_coupling_is_active_only_while_its_attribute_is_protected():
    dom = toy_domain(("race",)).with_couplings(TOY_COUPLE)
    assert dom.coupled_columns == ()
    assert "inactive" in dom.describe_couplings()[0]
    assert dom.with_protected(["sex"]).coupled_columns == (4,)
    both = toy_domain(("sex", "race")).with_couplings(TOY_COUPLE)
    assert both.coupled_columns == (4,)
    assert toy_domain(("sex",)).with_couplings({"sex": {"race": {"A": "B", "B": "A"}}}) \
        .with_protected(["sex", "race"]).coupled_columns == ()  # the column is protected itself


@pytest.mark.parametrize(("couple", "match"), [
    ({"sex": {"colour": {0: 1, 1: 0}}}, "unknown column 'colour'"),
    ({"sex": {"c": {0: 7, 7: 0}}}, "has no value 7"),
    ({"sex": {"c": {0: 1}}}, "send every code it moves back"),
    ({"sex": {"c": {0: 1, 1: 2, 2: 0}}}, "send every code it moves back"),
    ({"sex": {"c": {0: 1, 1: 0}}, "race": {"c": {2: 3, 3: 2}}}, "coupled to both"),
])
def test_bad_couplings_name_the_column_and_value(couple, match):
    with pytest.raises(DomainError, match=match):
        toy_domain().with_couplings(couple)


def test_a_swap_map_on_an_attribute_of_three_values_is_refused_with_the_roles_form():
    with pytest.raises(DomainError, match="role classes"):
        toy_domain(("race",)).with_couplings({"race": {"c": {0: 1, 1: 0}}})
    roles = toy_domain(("race",)).with_couplings({"race": {"c": [{"A": 0, "B": 1, "C": 2}]}})
    np.testing.assert_array_equal(roles.counterparts(np.array([[0, 0, 1, 1, 0]]))[0, :, 4], [0, 1, 2])


def test_couple_text_of_the_command_line():
    assert parse_couple_text("sex:relationship=Husband/Wife") == {
        "sex": {"relationship": {"Husband": "Wife", "Wife": "Husband"}}}
    assert parse_couple_text("none") is False
    assert parse_couple_text("sex:c=0/1,2/3; race:b=1/2") == {"sex": {"c": {"0": "1", "1": "0", "2": "3", "3": "2"}},
                                                             "race": {"b": {"1": "2", "2": "1"}}}
    with pytest.raises(ConfigError, match="attribute:column=a/b"):
        parse_couple_text("sex=Husband/Wife")


def test_domain_round_trips_its_couplings():
    dom = toy_domain().with_couplings(TOY_COUPLE)
    back = Domain.from_dict(dom.to_dict())
    assert back.couplings == dom.couplings and back.coupled_columns == (4,)
    assert parse_couplings(False, dom.features) == ()


# ------------------------------------------------------------------ census
@pytest.fixture(scope="module")
def home():
    return real_data_home_or_skip()


def test_census_couples_relationship_to_sex_by_default_and_can_turn_it_off(home):
    census = load_dataset("census", protected="sex", data_home=home)
    assert census.domain.describe_couplings() == ["sex -> relationship: Husband <-> Wife"]
    rel = census.domain.index("relationship")
    husband = census.X[census.X[:, rel] == 2][:5]
    np.testing.assert_array_equal(census.domain.counterparts(husband)[:, 0, rel], 0)  # Female: Wife
    assert load_dataset("census", protected="sex", data_home=home, couple=False).domain.couplings == ()
    assert load_dataset("census", protected="age", data_home=home).domain.coupled_columns == ()


def test_census_rare_pairs_are_the_husband_wife_rules(home):
    census = load_dataset("census", protected="sex", data_home=home, couple=False)
    rules = [r["constraint"] for r in census.domain.rare_pairs()]
    assert rules == ["sex=Female excludes relationship=Husband", "sex=Male excludes relationship=Wife"]
    from chiralfair.domain.plausibility import suggested_couplings
    assert suggested_couplings(census.domain.rare_pairs(), census.domain) == ["sex:relationship=Husband/Wife"]


def test_a_coupling_the_user_names_must_act_on_a_protected_attribute():
    import pandas as pd

    from chiralfair.datasets import from_frame

    df = pd.DataFrame({"sex": ["f", "m"] * 10, "role": ["wife", "husband"] * 10, "y": [0, 1] * 10})
    with pytest.raises(DomainError, match=r"couple names 'sexx', which is not a protected attribute under test; "
                                          r"protected: 'sex'"):
        from_frame(df, label="y", positive_class=1, protected="sex",
                   couple={"sexx": {"role": {"wife": "husband", "husband": "wife"}}})
    data = from_frame(df, label="y", positive_class=1, protected="sex")
    with pytest.raises(DomainError, match="couple names 'role'"):
        data.with_protected(["sex"], couple={"role": {"role": {"wife": "husband", "husband": "wife"}}})


@st.composite
def offset_coupled_domains(draw):
    """A two-valued protected attribute and a swap-coupled column, both coded from a drawn lowest code."""
    pa_lo, lo = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    size = draw(st.integers(3, 7))
    codes = [lo + c for c in draw(st.permutations(list(range(size))))]
    swap = {}
    for i in range(draw(st.integers(1, size // 2))):
        swap[codes[2 * i]], swap[codes[2 * i + 1]] = codes[2 * i + 1], codes[2 * i]
    feats = (Feature("pa", pa_lo, pa_lo + 1, "categorical"), Feature("role", lo, lo + size - 1, "categorical"),
             Feature("x", 0, 3))
    domain = Domain(feats).with_protected(["pa"]).with_couplings({"pa": {"role": swap}})
    X = draw(st.lists(st.tuples(st.integers(pa_lo, pa_lo + 1), st.integers(lo, lo + size - 1), st.integers(0, 3)),
                      min_size=1, max_size=30))
    return domain, np.array(X, dtype=np.int64), swap


@SETTINGS
@given(offset_coupled_domains())
def test_the_joint_tables_give_the_counterparts_and_keys_of_the_swap_map_and_of_the_value_positions(case):
    # The joint tables (one lookup per row) against the swap map itself and against the value-position path
    # they replaced, with columns coded from 0 and from higher codes.
    import dataclasses

    domain, X, swap = case
    assert all(c.role_table is not None for c in domain._compiled_couplings())
    C = domain.counterparts(X)
    for k, (pa,) in enumerate(domain.combinations):
        expected = X.copy()
        expected[:, 0] = pa
        moved = X[:, 0] != pa
        expected[moved, 1] = [swap.get(int(c), int(c)) for c in X[moved, 1]]
        np.testing.assert_array_equal(C[:, k], expected)
    by_positions = Domain(domain.features).with_protected(["pa"]).with_couplings(domain.couple_spec())
    by_positions._derived["couplings"] = [dataclasses.replace(c, role_table=None, counterpart_table=None)
                                          for c in by_positions._compiled_couplings()]
    combo = np.arange(len(X)) % 2
    np.testing.assert_array_equal(by_positions.counterparts(X), C)
    np.testing.assert_array_equal(by_positions.counterpart_rows(X, combo), domain.counterpart_rows(X, combo))
    np.testing.assert_array_equal(by_positions.keys(X), domain.keys(X))
    np.testing.assert_array_equal(by_positions.projection(X), domain.projection(X))


@SETTINGS
@given(offset_coupled_domains())
def test_rows_said_inside_their_bounds_get_the_keys_and_counterparts_of_the_swap_map(case):
    # The walk's shortcut (inside=True: no clamp, no bounds comparison) against a recount from the swap map: the
    # role is the code at the attribute's first value, the key its offset plus the free column's times the sizes.
    from chiralfair.models import CountingModel
    from chiralfair.oracle import DiscriminationCheck

    domain, X, swap = case
    pa, role = domain.features[0], domain.features[1]
    moved = [swap.get(int(c), int(c)) for c in X[:, 1]]
    roles = np.where(X[:, 0] == pa.lo, X[:, 1], moved)
    expected_keys = (roles - role.lo) + X[:, 2] * role.size
    np.testing.assert_array_equal(domain.keys(X, inside=True), expected_keys)
    np.testing.assert_array_equal(domain.keys(X), expected_keys)
    C = domain.counterparts(X, inside=True)
    for k, (value,) in enumerate(domain.combinations):
        np.testing.assert_array_equal(C[:, k, 0], np.full(len(X), value))
        np.testing.assert_array_equal(C[:, k, 1], np.where(X[:, 0] == value, X[:, 1], moved))
        np.testing.assert_array_equal(C[:, k, 2], X[:, 2])

    def predict(Z):
        return ((np.asarray(Z)[:, 1] - role.lo) % 2 == 0).astype(int)
    res = DiscriminationCheck(CountingModel(predict), domain).check(X, inside=True)
    flips = np.array([predict(C[i]).min() != predict(C[i]).max() for i in range(len(X))])
    np.testing.assert_array_equal(res.is_idi, flips)


def test_keys_are_exact_when_the_lowest_codes_weigh_past_int64():
    # X @ weights wraps modulo 2**64 for codes near 2**53 times weights up to 4e6, as the subtraction of the lowest
    # codes' part does, so the key (which fits) comes out exact, with a coupling's correction and without
    lo = 2**53 - 10**6
    feats = (Feature("pa", 0, 1, "categorical"), Feature("role", lo, lo + 3, "categorical"),
             Feature("a", lo, lo + 999), Feature("b", lo, lo + 999), Feature("c", lo, lo + 10**6 - 1))
    X = np.array([[0, lo + 1, lo + 999, lo + 7, lo + 10**6 - 1], [1, lo, lo, lo + 999, lo],
                  [1, lo + 3, lo + 500, lo, lo + 123_456]], dtype=np.int64)
    offsets = [[int(v) - lo for v in row[1:]] for row in X]
    plain = Domain(feats).with_protected(["pa"])
    np.testing.assert_array_equal(plain.keys(X), [r + a * 4 + b * 4000 + c * 4_000_000 for r, a, b, c in offsets])
    coupled = plain.with_couplings({"pa": {"role": {lo: lo + 1, lo + 1: lo}}})
    swapped = {0: 1, 1: 0}  # the role is read at pa=0: a row at pa=1 has its offset 0 <-> 1 swapped
    roles = [swapped.get(offsets[i][0], offsets[i][0]) if X[i, 0] == 1 else offsets[i][0] for i in range(3)]
    expected = [roles[i] + offsets[i][1] * 4 + offsets[i][2] * 4000 + offsets[i][3] * 4_000_000 for i in range(3)]
    for inside in (False, True):
        np.testing.assert_array_equal(coupled.keys(X, inside=inside), expected)


@pytest.mark.parametrize("pa_lo", [2**53 - 1, -2**53], ids=["high", "negative"])
def test_rows_said_inside_get_their_keys_when_the_attributes_lowest_code_times_the_roles_is_past_int64(pa_lo):
    # The joint offset of rows said inside takes pa_lo * n_codes + lo off in one subtraction: for an attribute coded
    # from near 2**53 (or -2**53) and a coupled column of 2,048 codes that constant is past int64, and must wrap as
    # the products of the codes do, not overflow (the walk of every gradient generator reads its keys so)
    from chiralfair.generators import make_generator
    from chiralfair.models import CountingModel

    feats = (Feature("pa", pa_lo, pa_lo + 1, "categorical"), Feature("role", 0, 2047, "categorical"),
             Feature("a", 0, 9), Feature("b", 0, 9))
    domain = Domain(feats).with_protected(["pa"]).with_couplings({"pa": {"role": {0: 1, 1: 0}}})
    X = np.array([[pa_lo, 0, 3, 1], [pa_lo + 1, 0, 5, 0], [pa_lo + 1, 4, 9, 9], [pa_lo, 1, 0, 2]], dtype=np.int64)
    roles = np.where(X[:, 0] == pa_lo, X[:, 1], [{0: 1, 1: 0}.get(int(c), int(c)) for c in X[:, 1]])
    np.testing.assert_array_equal(domain.keys(X), roles + 2048 * X[:, 2] + 20480 * X[:, 3])
    np.testing.assert_array_equal(domain.keys(X, inside=True), roles + 2048 * X[:, 2] + 20480 * X[:, 3])
    np.testing.assert_array_equal(domain.counterparts(X, inside=True), domain.counterparts(X))

    def proba(Z):  # the role decides (the attribute's codes are alike as float64)
        p = 1 / (1 + np.exp(-2 * (np.asarray(Z)[:, 2:] @ [1.0, 1.0] - 9.5 + 3 * (np.asarray(Z)[:, 1] == 1))))
        return np.column_stack([1 - p, p])

    model = CountingModel(lambda Z: (proba(Z)[:, 1] > 0.5).astype(int), predict_proba=proba,
                          input_gradient=lambda Z: np.tile([0.0, 0.3, 1.0, 1.0], (len(Z), 1)))
    rng = np.random.default_rng(0)
    seeds = np.column_stack([rng.integers(pa_lo, pa_lo + 2, 30), rng.integers(0, 5, 30),
                             rng.integers(0, 10, (30, 2))])
    res = make_generator("eidig-inf", max_global=10, max_local=20).run(model, domain, seeds, random_state=0)
    assert res.n_local > 0
    assert len(np.unique(domain.keys(res.idis))) == res.n_idis


def test_a_coupled_code_outside_its_bounds_is_refused_not_read_as_another_row():
    # (pa=0, r=4) with r coded 0..3: read as a joint offset, 4 is (pa=1, r=0), whose counterparts differ
    from chiralfair.models import CountingModel
    from chiralfair.oracle import DiscriminationCheck

    domain = Domain((Feature("pa", 0, 1, "categorical"), Feature("r", 0, 3, "categorical"), Feature("x", 0, 3))
                    ).with_protected(["pa"]).with_couplings({"pa": {"r": {0: 1, 1: 0}}})
    model = CountingModel(lambda X: (np.asarray(X)[:, 1] == 0).astype(int))
    for call in (lambda: domain.counterparts([[0, 4, 2]]), lambda: domain.keys([[1, 0, 2], [0, -1, 2]]),
                 lambda: DiscriminationCheck(model, domain).check(np.array([[0, 4, 2]]))):
        with pytest.raises(DomainError, match=r"column 'r': code (4|-1) \(row (0|1)\) is outside its codes 0\.\.3"):
            call()


def test_combination_minus_one_is_the_last_combination_in_the_coupled_column_too():
    domain = Domain((Feature("pa", 0, 1, "categorical"), Feature("r", 0, 3, "categorical"), Feature("x", 0, 3))
                    ).with_protected(["pa"]).with_couplings({"pa": {"r": {0: 1, 1: 0}}})
    X = np.array([[0, 0, 2], [1, 0, 2]])
    np.testing.assert_array_equal(domain.counterpart_rows(X, [-1, -1]), domain.counterpart_rows(X, [1, 1]))
    np.testing.assert_array_equal(domain.counterpart_rows(X, [1, 1]), [[1, 1, 2], [1, 0, 2]])
