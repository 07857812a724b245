"""Properties the counting rule rests on, over random small domains, each against a brute force; JSON round trips.

See architecture: the counting rule; counterparts that could exist. The JSON round trips are those of the result
records (architecture: results and files).

A drawn domain has 2-6 features with random bounds (negative codes, one-code columns, now and then columns so wide
that the keys no longer fit an int64), one or two protected attributes over a random subset of their codes (so an
input can hold a protected code outside the attribute's values, as a missing value does), and optionally a column
coupled to one attribute (a swap map or role classes) and a few random rules. The brute forces below read the
definitions (the module docstrings of ``domain/coupling.py`` and ``domain/constraints.py``,
architecture: the counting rule) one input, one combination at a time, and call none of the code under test. Each
property was seen failing on a broken copy of the code it guards (the keys without roles, the coupling without its
offset, a chiral mutation that may keep the value, clip by floor, an unclamped ordering repair, an exclusion tie broken
upwards, sampling without rejection, the check counting impossible counterparts or not asking the input itself, the
enumeration reading the wrong row's label, an interval without its edge guard, a result forgetting its width, round
robin bucket by bucket).
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass
from unittest import mock

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from chiralfair import oracle
from chiralfair.datasets.base import Dataset
from chiralfair.domain import Domain, Feature
from chiralfair.exceptions import DomainError
from chiralfair.models import as_model
from chiralfair.oracle import DiscriminationCheck
from chiralfair.results import SearchResult, SeedReport
from chiralfair.seeds.chiral import mutate_protected
from chiralfair.seeds.cluster import round_robin
from chiralfair.verdict import estimate
from chiralfair.verdict.result import binomial_interval as _interval

SETTINGS = settings(max_examples=40, deadline=None)
WIDE = 2**40  # two such columns make the non-protected part larger than 2**63 points: keys become bytes


# ------------------------------------------------------------------ random domains, and what they were built from
@dataclass(frozen=True)
class Case:
    """A drawn domain, and the plain description it was built from (what the brute forces read)."""

    domain: Domain
    lo: tuple[int, ...]
    hi: tuple[int, ...]
    pa: tuple[int, ...]                      # the column of each protected attribute
    values: tuple[tuple[int, ...], ...]      # each attribute's values, sorted (the first is the roles' reference)
    coupled: tuple | None = None             # (attribute, column, "swap", {code: code}) or (..., "roles", [{v: c}])
    rules: tuple = ()                        # ("excludes", a, codes, b, codes) or ("at_least", left, right, offset)

    @property
    def n_features(self) -> int:
        return len(self.lo)

    @property
    def free(self) -> list[int]:
        """Columns that neither are protected nor change with a protected attribute."""
        coupled = {self.coupled[1]} if self.coupled else set()
        return [c for c in range(self.n_features) if c not in self.pa and c not in coupled]


def _swap_map(draw, codes):
    order = draw(st.permutations(codes))
    swap = {}
    for i in range(draw(st.integers(1, len(codes) // 2))):
        a, b = order[2 * i], order[2 * i + 1]
        swap[a], swap[b] = b, a
    return swap


def _role_classes(draw, codes, values):
    """Classes with disjoint codes; each names its code at the first value, and at some of the others."""
    order = list(draw(st.permutations(codes)))
    classes = []
    while order and len(classes) < 3:
        named = [values[0]] + draw(st.lists(st.sampled_from(values[1:]), unique=True, max_size=len(order) - 1))
        if len(named) > len(order):
            break
        classes.append({v: order.pop() for v in named})
        if not draw(st.booleans()):
            break
    return classes


def _rule(draw, lo, hi):
    a, b = draw(st.permutations(range(len(lo))))[:2]
    if draw(st.booleans()):
        def codes(c):
            span = range(lo[c], min(hi[c], lo[c] + 5) + 1)
            return tuple(sorted(draw(st.lists(st.sampled_from(span), min_size=1, max_size=3, unique=True))))
        return ("excludes", a, codes(a), b, codes(b))
    return ("at_least", a, b, draw(st.integers(-3, 3)))


def _rule_text(rule) -> str:
    if rule[0] == "excludes":
        _, a, ca, b, cb = rule
        return f"f{a}={'|'.join(map(str, ca))} excludes f{b}={'|'.join(map(str, cb))}"
    _, left, right, offset = rule
    return f"f{left} >= f{right} {'-' if offset < 0 else '+'} {abs(offset)}"


@st.composite
def cases(draw, *, couple=True, constrain=False, wide=True):
    n = draw(st.integers(2, 6))
    lo, hi = [], []
    n_pa = draw(st.integers(1, min(2, n - 1)))
    pa = tuple(draw(st.permutations(range(n)))[:n_pa])
    for c in range(n):
        low = draw(st.integers(-5, 5))
        if c in pa:
            size = draw(st.integers(2, 5))
        else:
            size = draw(st.integers(1, 6) | st.just(WIDE)) if wide else draw(st.integers(1, 6))
        lo.append(low)
        hi.append(low + size - 1)
    values = []
    for c in pa:  # two values half the time (a swap map needs two), else any number
        n_values = 2 if draw(st.booleans()) else draw(st.integers(2, hi[c] - lo[c] + 1))
        values.append(tuple(sorted(draw(st.lists(st.integers(lo[c], hi[c]), min_size=n_values, max_size=n_values,
                                                 unique=True)))))
    values = tuple(values)
    features = [Feature(f"f{c}", lo[c], hi[c], draw(st.sampled_from(["categorical", "ordinal"]))) for c in range(n)]
    domain = Domain(features, protected=pa, protected_values=values)
    coupled = None
    candidates = [c for c in range(n) if c not in pa and 2 <= hi[c] - lo[c] + 1 <= 6]
    if couple and candidates and draw(st.booleans()):
        j, column = draw(st.integers(0, n_pa - 1)), draw(st.sampled_from(candidates))
        codes = list(range(lo[column], hi[column] + 1))
        if len(values[j]) == 2 and draw(st.booleans()):
            coupled = (j, column, "swap", _swap_map(draw, codes))
            spec = coupled[3]
        else:
            coupled = (j, column, "roles", _role_classes(draw, codes, values[j]))
            spec = [{str(v): code for v, code in cls.items()} for cls in coupled[3]]
        domain = domain.with_couplings({f"f{pa[j]}": {f"f{column}": spec}})
    rules = ()
    if constrain:
        rules = tuple(_rule(draw, lo, hi) for _ in range(draw(st.integers(1, 3))))
        try:
            domain = domain.with_constraints([_rule_text(r) for r in rules])
        except DomainError:  # rules no input meets, or that cannot all be met together: refused when declared
            assume(False)
    return Case(domain, tuple(lo), tuple(hi), pa, values, coupled, rules)


@st.composite
def inputs(draw, case: Case, max_rows: int = 12):
    """Rows inside the bounds; some are copies of others with their protected and coupled columns redrawn."""
    column = [st.integers(case.lo[c], case.hi[c]) for c in range(case.n_features)]
    rows = draw(st.lists(st.tuples(*column), min_size=1, max_size=max_rows))
    moved = {*case.pa, *([case.coupled[1]] if case.coupled else [])}
    for i in draw(st.lists(st.integers(0, len(rows) - 1), max_size=max_rows)):
        rows.append(tuple(draw(column[c]) if c in moved else v for c, v in enumerate(rows[i])))
    return np.array(rows, dtype=np.int64).reshape(len(rows), case.n_features)


@st.composite
def case_and_inputs(draw, **kw):
    case = draw(cases(**kw))
    return case, draw(inputs(case))


# ------------------------------------------------------------------ brute forces of the definitions
def _frame(case: Case, value: int, code: int) -> int:
    """The coupled column's code at attribute value ``value`` of role ``code`` (an involution, so its own inverse)."""
    _, _, kind, spec = case.coupled
    if kind == "swap":
        return spec.get(code, code) if value != case.values[case.coupled[0]][0] else code
    for cls in spec:
        base = cls[case.values[case.coupled[0]][0]]
        at = cls.get(value, base)
        if code == base:
            return at
        if code == at:
            return base
    return code


def brute_counterparts(case: Case, x) -> list[list[int]]:
    """Every combination of the attributes' values applied to ``x`` (the last attribute fastest), couplings too."""
    out = []
    for combo in itertools.product(*case.values):
        y = [int(v) for v in x]
        for c, v in zip(case.pa, combo, strict=True):
            y[c] = v
        if case.coupled:
            j, column = case.coupled[:2]
            own = int(x[case.pa[j]]) if x[case.pa[j]] in case.values[j] else case.values[j][0]
            y[column] = _frame(case, combo[j], _frame(case, own, int(x[column])))
        out.append(y)
    return out


def own_combination(case: Case, x) -> int:
    combos = list(itertools.product(*case.values))
    own = tuple(int(x[c]) for c in case.pa)
    return combos.index(own) if own in combos else -1


def breaks_a_rule(case: Case, y) -> bool:
    for rule in case.rules:
        if rule[0] == "excludes" and y[rule[1]] in rule[2] and y[rule[3]] in rule[4]:
            return True
        if rule[0] == "at_least" and y[rule[1]] < y[rule[2]] + rule[3]:
            return True
    return False


def threshold_model(weights, bias):
    """P(y=1) of the score ``x @ weights + bias``: above 1/2 exactly when the score is positive.

    Divisions and sums only, so a row gets the same probability in any batch (no transcendental function whose
    vectorised and scalar results may differ in the last bit).
    """
    w = np.asarray(weights, dtype=np.int64)

    def proba(X):
        score = (np.asarray(X, dtype=np.float64).round().astype(np.int64) @ w + bias).astype(np.float64)
        return 0.5 + 0.5 * score / (np.abs(score) + 1.0)

    return proba


@st.composite
def threshold_models(draw, case: Case, X):
    """A threshold model that reads every protected attribute, its threshold among the scores of ``X``.

    So that many inputs lie near it, and changing a protected value often changes the label: IDIs are common.
    """
    nonzero = st.integers(-3, 3).filter(bool)
    w = [draw(nonzero if c in case.pa else st.integers(-3, 3)) for c in range(case.n_features)]
    scores = np.asarray(X, dtype=np.int64) @ np.asarray(w, dtype=np.int64)
    return threshold_model(w, draw(st.integers(-2, 2)) - int(np.median(scores)))


def brute_check(case: Case, proba, x):
    """(label, counterpart labels, P(y=1) of each, possible, queries) of one input, by the definition."""
    own = own_combination(case, x)
    p_x = proba(np.array([x]))[0]
    labels, probs, possible, queries = [], [], [], 1 if own < 0 else 0
    for k, y in enumerate(brute_counterparts(case, x)):
        ok = not breaks_a_rule(case, y)
        p = proba(np.array([y]))[0] if ok or k == own else p_x  # an impossible counterpart is not asked
        queries += ok or k == own
        possible.append(ok)
        labels.append(int(p > 0.5) if ok else int(p_x > 0.5))
        probs.append(p if ok else p_x)
    return int(p_x > 0.5), labels, probs, possible, queries


# ------------------------------------------------------------------ keys (architecture: the counting rule)
@SETTINGS
@given(case_and_inputs())
def test_an_input_and_each_of_its_counterparts_share_a_key(drawn):
    case, X = drawn
    C = case.domain.counterparts(X)
    keys = case.domain.keys(X)
    for k in range(C.shape[1]):
        assert (case.domain.keys(C[:, k]) == keys).all()


@SETTINGS
@given(case_and_inputs())
def test_two_inputs_share_a_key_exactly_when_they_have_the_same_counterparts(drawn):
    # The keys are the orbits of the counterpart map: an IDI and its counterparts count once, other inputs apart.
    case, X = drawn
    keys = case.domain.keys(X)
    brute = [brute_counterparts(case, x) for x in X]
    for i, j in itertools.product(range(len(X)), repeat=2):
        assert (keys[i] == keys[j]) == (brute[i] == brute[j]), (X[i], X[j])


@SETTINGS
@given(case_and_inputs())
def test_inputs_whose_free_columns_differ_have_different_keys_and_without_a_coupling_only_they(drawn):
    case, X = drawn
    keys = case.domain.keys(X)
    free = case.free
    for i, j in itertools.product(range(len(X)), repeat=2):
        same_free = (X[i, free] == X[j, free]).all()
        if not same_free:
            assert keys[i] != keys[j]
        elif case.coupled is None:
            assert keys[i] == keys[j]


def test_two_wide_columns_make_bytes_keys():
    # what WIDE is for: the drawn domains test the bytes keys as well as the int64 ones
    features = [Feature("s", 0, 1), Feature("w0", 0, WIDE - 1), Feature("w1", 0, WIDE - 1)]
    domain = Domain(features, protected=(0,), protected_values=((0, 1),))
    assert domain.keys(np.zeros((1, 3), dtype=np.int64)).dtype == object


# ------------------------------------------------------------------ counterparts
# (architecture: the counting rule; counterparts that could exist)
@SETTINGS
@given(case_and_inputs())
def test_counterparts_are_the_brute_force_ones_and_change_only_protected_and_coupled_columns(drawn):
    case, X = drawn
    C = case.domain.counterparts(X)
    assert C.dtype == np.int64 and C.shape == (len(X), math.prod(map(len, case.values)), case.n_features)
    for x, row in zip(X, C, strict=True):
        assert row.tolist() == brute_counterparts(case, x)
    assert (C[:, :, case.free] == X[:, None, case.free]).all()
    case.domain.validate(C.reshape(-1, case.n_features))  # inside the bounds
    for i, x in enumerate(X):
        own = own_combination(case, x)
        if own >= 0:  # an input whose protected values are in their domains is its own counterpart
            assert (C[i, own] == x).all()
    combination = np.arange(len(X)) % C.shape[1]
    assert (case.domain.counterpart_rows(X, combination) == C[np.arange(len(X)), combination]).all()


@SETTINGS
@given(case_and_inputs(), st.integers(0, 2**32 - 1))
def test_the_chiral_mutation_moves_every_attribute_to_another_value_and_gives_a_counterpart(drawn, seed):
    case, X = drawn
    M = mutate_protected(X, case.domain, np.random.default_rng(seed))
    for x, m in zip(X, M, strict=True):
        assert all(m[c] != x[c] and m[c] in vals for c, vals in zip(case.pa, case.values, strict=True))
        assert m.tolist() in brute_counterparts(case, x)


# ------------------------------------------------------------------ clip, validate, repair
@SETTINGS
@given(cases(), st.data())
def test_clip_gives_the_nearest_integer_inside_the_bounds(case, data):
    lo, hi = np.array(case.lo, dtype=float), np.array(case.hi, dtype=float)
    n = data.draw(st.integers(1, 8))
    Z = data.draw(arrays(np.float64, (n, case.n_features), elements=st.floats(-1e6, 1e6)))
    clipped = case.domain.validate(case.domain.clip(Z))
    # distance from z to the nearest integer of [lo, hi]
    nearest = np.where(Z < lo, lo - Z, np.where(Z > hi, Z - hi, np.minimum(Z - np.floor(Z), np.ceil(Z) - Z)))
    np.testing.assert_allclose(np.abs(clipped - Z), nearest, rtol=0, atol=1e-9)
    assert (case.domain.clip(clipped) == clipped).all()


def _rules_share_a_column(case: Case) -> bool:
    read = [c for r in case.rules for c in ((r[1], r[3]) if r[0] == "excludes" else (r[1], r[2]))]
    return len(read) > len(set(read))


@SETTINGS
@given(case_and_inputs(constrain=True))
def test_repair_meets_every_rule_inside_the_bounds_and_keeps_the_rows_that_met_them(drawn):
    case, X = drawn
    try:
        fixed = case.domain.repair(X)
    except DomainError as err:
        # Each rule repairs its own columns: rules that share one can send a row back and forth (the xfail below).
        # The declaration's trial repairs catch that on narrow columns; a wide column can hide it until a search.
        assert "cannot all be met" in str(err) and _rules_share_a_column(case)
        return
    case.domain.validate(fixed)
    assert not any(breaks_a_rule(case, y) for y in fixed)
    good = np.array([not breaks_a_rule(case, x) for x in X])
    assert (fixed[good] == X[good]).all()
    assert (case.domain.repair(fixed) == fixed).all()
    if not any(case.domain._reads_only_protected(r) for r in case.domain.constraints):
        assert (fixed[:, list(case.pa)] == X[:, list(case.pa)]).all()  # only rules over protected columns move them
    assert (case.domain.satisfies(X) == good).all()


@pytest.mark.xfail(strict=True, raises=DomainError, reason="known limit, not fixed here: each exclusion moves f0 on "
                   "its own (0 -> 1 -> 0 ...), so these two rules are refused as conflicting though f0=2 meets both")
def test_two_exclusions_of_neighbouring_codes_of_one_column_are_met_together():
    domain = Domain([Feature("f0", 0, 9), Feature("s", 0, 1)], protected=(1,), protected_values=((0, 1),))
    assert domain.with_constraints(["f0=0|1 excludes s=0"]).repair([[0, 0]]).tolist() == [[2, 0]]  # one rule: met
    two = domain.with_constraints(["f0=0 excludes s=0", "f0=1 excludes s=0"])
    assert two.repair([[0, 0]]).tolist() == [[2, 0]]


def _nearest_allowed_by_walking(code: int, excluded, lo: int, hi: int) -> int:
    for d in itertools.count():
        for c in (code - d, code + d):  # the lower first
            if lo <= c <= hi and c not in excluded:
                return c


@SETTINGS
@given(st.integers(-5, 5), st.integers(2, 12) | st.just(WIDE), st.data())
def test_an_exclusion_moves_the_excluded_column_to_its_nearest_allowed_code(lo, size, data):
    hi = lo + size - 1
    near = st.integers(lo, min(hi, lo + 15)) | st.integers(max(lo, hi - 15), hi)
    excluded = data.draw(st.lists(near, min_size=1, max_size=min(size - 1, 8), unique=True))
    domain = Domain([Feature("s", 0, 1), Feature("w", lo, hi)], protected=(0,), protected_values=((0, 1),))
    domain = domain.with_constraints([f"s=1 excludes w={'|'.join(map(str, excluded))}"])
    X = np.array([[1, c] for c in data.draw(st.lists(st.sampled_from(excluded), min_size=1, max_size=5))])
    fixed = domain.repair(X)
    assert fixed[:, 1].tolist() == [_nearest_allowed_by_walking(c, excluded, lo, hi) for c in X[:, 1]]
    assert (fixed[:, 0] == 1).all()


@SETTINGS
@given(cases(constrain=True, wide=False), st.integers(0, 2**32 - 1))
def test_sample_draws_inside_the_bounds_the_values_and_the_rules(case, seed):
    X = case.domain.sample(20, np.random.default_rng(seed))
    case.domain.validate(X)
    assert not any(breaks_a_rule(case, x) for x in X)
    for c, vals in zip(case.pa, case.values, strict=True):
        assert np.isin(X[:, c], vals).all()


@SETTINGS
@given(case_and_inputs(constrain=True))
def test_a_domain_survives_its_json_round_trip(drawn):
    case, X = drawn
    back = Domain.from_dict(json.loads(json.dumps(case.domain.to_dict())))
    assert back == case.domain
    assert (back.keys(X) == case.domain.keys(X)).all()
    assert (back.counterparts(X) == case.domain.counterparts(X)).all()
    assert (back.satisfies(X) == case.domain.satisfies(X)).all()


# ------------------------------------------------------------------ the discrimination check
# (architecture: the counting rule)
@SETTINGS
@given(case_and_inputs(constrain=True), st.sampled_from([1, 5, oracle.CHUNK_ROWS]), st.data())
def test_the_check_agrees_with_a_brute_force_check_on_a_threshold_model(drawn, chunk, data):
    case, X = drawn
    proba = data.draw(threshold_models(case, X))
    model = as_model(proba, output="probability", classes=[0, 1])
    with mock.patch.object(oracle, "CHUNK_ROWS", chunk):  # 1 and 5 model rows: one input or a few per chunk
        res = DiscriminationCheck(model, case.domain).check(X, with_proba=True)
    queries = 0
    for i, x in enumerate(X):
        label, labels, probs, possible, n = brute_check(case, proba, x)
        queries += n
        differs = [lab != label for lab in labels]
        assert res.labels[i] == label and res.counterpart_labels[i].tolist() == labels
        assert res.proba[i].tolist() == probs and res.own_proba[i] == proba(x[None])[0]
        assert res.is_idi[i] == any(differs)
        if any(differs):
            assert res.counterpart_index[i] == differs.index(True)
        else:  # the possible counterpart whose probability is farthest from x's (the first of equals)
            gaps = [abs(p - res.own_proba[i]) if ok else -1.0 for p, ok in zip(probs, possible, strict=True)]
            assert res.counterpart_index[i] == gaps.index(max(gaps))
        if case.rules:
            assert res.possible[i].tolist() == possible
    assert res.possible is None or case.rules
    assert model.n_queries == queries


# ------------------------------------------------------------------ the verdict
def _dataset(case: Case, X, seed: int) -> Dataset:
    y = np.random.default_rng(seed).integers(0, 2, len(X))
    return Dataset("drawn", X, y, case.domain, label="y", positive_class="1")


@SETTINGS
@given(case_and_inputs(constrain=True, wide=False), st.data())
def test_the_exact_share_of_rows_is_the_share_of_rows_the_brute_force_check_finds_discriminated(drawn, data):
    # The enumeration checks each key once and reads the other rows of the key off its counterparts.
    case, X = drawn
    proba = data.draw(threshold_models(case, X))
    checked = [brute_check(case, proba, x) for x in X]
    # a person whose own protected value is outside its values is in no group and has no counterpart
    placed = [own_combination(case, x) >= 0 for x in X]
    if not any(p and any(ok for k, ok in enumerate(possible) if k != own_combination(case, x))
               for p, x, (_, _, _, possible, _) in zip(placed, X, checked, strict=True)):
        with pytest.raises(DomainError, match="has a counterpart that could exist"):
            estimate(as_model(proba, output="probability", classes=[0, 1]), _dataset(case, X, 0),
                     population="rows", favourable=1, exact=True)
        return
    verdict = estimate(as_model(proba, output="probability", classes=[0, 1]), _dataset(case, X, 0),
                       population="rows", favourable=1, exact=True)
    # an individual none of whose counterparts could exist is left out of the share (and counted apart)
    countable = [p and any(ok for k, ok in enumerate(possible) if k != own_combination(case, x))
                 for p, x, (_, _, _, possible, _) in zip(placed, X, checked, strict=True)]
    affected = [c and any(lab != label for lab in labels)
                for c, (label, labels, *_) in zip(countable, checked, strict=True)]
    harmed = [a and label != 1 for a, (label, *_) in zip(affected, checked, strict=True)]  # favourable label 1
    n = sum(countable)
    assert verdict.exact and verdict.n_individuals == n and verdict.n_unplaced == len(X) - sum(placed)
    assert verdict.n_left_out == sum(placed) - n
    assert (verdict.n_affected, verdict.n_harmed) == (sum(affected), sum(harmed))
    assert verdict.lower == verdict.share == verdict.upper == sum(affected) / n


@settings(max_examples=20, deadline=None)
@given(cases(constrain=True, wide=False), st.floats(0.05, 0.5), st.floats(0.5, 0.999),
       st.sampled_from(["wilson", "clopper-pearson"]), st.integers(0, 2**32 - 1), st.data())
def test_a_sampled_verdict_interval_holds_its_share_inside_0_1_and_so_do_its_groups(case, margin, confidence, method,
                                                                                     seed, drawn):
    X = case.domain.sample(30, np.random.default_rng(seed))
    proba = drawn.draw(threshold_models(case, X))
    data = _dataset(case, X, seed)
    try:
        verdict = estimate(as_model(proba, output="probability", classes=[0, 1]), data, population="domain",
                           favourable=1, exact=False, margin=margin, confidence=confidence, method=method,
                           random_state=seed)
    except DomainError as err:  # every point drawn had no counterpart that could exist: refused, never a 0 share
        assert "has a counterpart that could exist" in str(err)
        return
    assert not verdict.exact and verdict.n_individuals > 0
    assert 0.0 <= verdict.lower <= verdict.share <= verdict.upper <= 1.0
    for g in verdict.groups:
        if g["n"]:
            assert 0.0 <= g["lower"] <= g["share_affected"] <= g["upper"] <= 1.0
            assert 0.0 <= g["share_harmed_lower"] <= g["share_harmed"] <= g["share_harmed_upper"] <= 1.0


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 10**9), st.data(), st.floats(0.5, 0.999999), st.sampled_from(["wilson", "clopper-pearson"]))
def test_every_interval_holds_its_share_inside_0_1(nobs, data, confidence, method):
    count = data.draw(st.integers(0, nobs) | st.sampled_from([0, 1, nobs - 1, nobs]).filter(lambda c: c >= 0))
    lower, upper = _interval(count, nobs, confidence, method)
    assert 0.0 <= lower <= count / nobs <= upper <= 1.0


# ------------------------------------------------------------------ result records (architecture: results and files)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**64) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8)
counts = st.integers(0, 2**53)
codes = st.integers(-2**63, 2**63 - 1)


@st.composite
def search_results(draw):
    n, d, k = draw(st.integers(0, 5)), draw(st.integers(1, 5)), draw(st.integers(1, 2))
    plausible = draw(st.none() | arrays(np.bool_, n))

    def counted(width):
        return draw(st.none() | arrays(np.int64, (draw(st.integers(0, 4)), width), elements=codes))

    return SearchResult(
        generator=draw(st.text(max_size=8)), seed_strategy=draw(st.text(max_size=8)), n_seeds=draw(counts),
        n_seed_idis=draw(counts), n_idis=n, n_global=draw(counts), n_local=draw(counts), n_tested=draw(counts),
        n_queries=draw(counts), seconds=draw(st.floats(0, 1e9)),
        idis=draw(arrays(np.int64, (n, d), elements=codes)),
        counterparts=draw(arrays(np.int64, (n, d), elements=codes)),
        idi_labels=draw(arrays(np.int64, n, elements=st.integers(0, 1))),
        counterpart_labels=draw(arrays(np.int64, n, elements=st.integers(0, 1))),
        phase=np.array(draw(st.lists(st.sampled_from(["global", "local"]), min_size=n, max_size=n)), dtype=str),
        notes=tuple(draw(st.lists(st.text(max_size=20), max_size=3))),
        meta=draw(st.dictionaries(st.text(max_size=5), json_values, max_size=4)),
        pa_pair_counts=counted(2 * k + 1), pa_label_counts=counted(2 * k + 2),
        diversity=draw(st.none() | st.dictionaries(st.text(max_size=5), json_values, max_size=3)),
        n_plausible_idis=None if plausible is None else int(plausible.sum()), plausible=plausible)


def _same_array(a, b, width=None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if width is not None:  # an empty count table comes back as [] (readers reshape it to its width)
        a = a.reshape(-1, width)
    return a.shape == b.shape and a.dtype.kind == b.dtype.kind and np.array_equal(a, b)


@SETTINGS
@given(search_results())
def test_a_search_result_survives_its_json_round_trip(result):
    back = SearchResult.from_json(result.to_json())
    for name in ("idis", "counterparts", "idi_labels", "counterpart_labels", "phase", "plausible"):
        assert _same_array(getattr(back, name), getattr(result, name)), name
    for name in ("pa_pair_counts", "pa_label_counts"):
        table = getattr(result, name)
        assert _same_array(getattr(back, name), table, None if table is None else table.shape[1]), name
    assert back.summary() == result.summary() and back.notes == result.notes and back.meta == result.meta
    assert (back.diversity, back.n_plausible_idis, back.pairs_path) == (result.diversity, result.n_plausible_idis,
                                                                        None)
    assert back.to_json() == result.to_json()


@SETTINGS
@given(st.integers(1, 6), st.integers(1, 5), st.data())
def test_a_seed_report_survives_its_json_round_trip(n, d, data):  # a strategy selects at least one seed
    report = SeedReport(
        strategy=data.draw(st.text(max_size=8)), seeds=data.draw(arrays(np.int64, (n, d), elements=codes)),
        is_idi=data.draw(arrays(np.bool_, n)), n_initial_idis=data.draw(st.none() | counts),
        n_candidates=data.draw(st.none() | counts), clustering=data.draw(st.none() | st.dictionaries(
            st.text(max_size=5), json_values, max_size=3)),
        seconds=data.draw(st.dictionaries(st.text(max_size=5), st.floats(0, 1e6), max_size=3)),
        n_queries=data.draw(counts), notes=tuple(data.draw(st.lists(st.text(max_size=20), max_size=3))),
        meta=data.draw(st.dictionaries(st.text(max_size=5), json_values, max_size=4)),
        n_candidate_idis=data.draw(st.none() | counts), n_initial_queries=data.draw(st.none() | counts),
        chiral_training_rows=data.draw(st.none() | counts))
    back = SeedReport.from_json(report.to_json())
    assert _same_array(back.seeds, report.seeds) and _same_array(back.is_idi, report.is_idi)
    assert back.to_json() == report.to_json()


# ------------------------------------------------------------------ I&D's seed order
@SETTINGS
@given(st.lists(st.lists(codes, max_size=6), max_size=5))
def test_round_robin_takes_one_item_of_each_bucket_in_turn(buckets):
    expected = [b[r] for r in range(max(map(len, buckets), default=0)) for b in buckets if r < len(b)]
    out = round_robin([np.array(b, dtype=np.int64) for b in buckets])
    assert out.tolist() == expected
