"""Protected attributes spanning several columns: one-hot race over race_A/race_B/race_C.

See architecture: the model under test.
"""

import json
import warnings

import numpy as np
import pytest
from toys import LinearToy

import chiralfair.generators._load_all  # noqa: F401  (fills the registry)
from chiralfair.datasets.base import Dataset
from chiralfair.domain import Domain, Feature, ProtectedAttribute, group_name
from chiralfair.exceptions import DataWarning, DomainError
from chiralfair.generators import GENERATORS, make_generator
from chiralfair.generators.surrogate import local_samples
from chiralfair.models import as_model
from chiralfair.oracle import DiscriminationCheck
from chiralfair.seeds import make_seed_strategy
from chiralfair.seeds.chiral import mutate_protected

RACE = ("race_A", "race_B", "race_C")
ONE_HOT = [(0, 0, 1), (0, 1, 0), (1, 0, 0)]


def features():
    return (Feature("sex", 0, 1, "categorical", {0: "F", 1: "M"}),
            Feature("race_A", 0, 1), Feature("race_B", 0, 1), Feature("race_C", 0, 1),
            Feature("a", 0, 9), Feature("b", 0, 9), Feature("c", 0, 4))


def one_hot_data(n=300, seed=0):
    """Rows with a valid one-hot race (column 1..3) and uniform other features."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, 2, n), np.eye(3, dtype=np.int64)[rng.integers(0, 3, n)],
                         rng.integers(0, 10, n), rng.integers(0, 10, n), rng.integers(0, 5, n)])
    return X.astype(np.int64)


def race_biased_module():
    """P(y=1) = sigmoid(2 (a + b + 3 race_B - 10.5)): for a valid race row, an IDI iff 8 <= a + b <= 10."""
    return LinearToy([0, 0, 3, 0, 1, 1, 0], -10.5)


def grouped(protected=(RACE,)):
    return Domain(features()).with_protected(list(protected), data=one_hot_data())


def test_group_is_one_attribute_with_valid_rows():
    dom = grouped(["sex", RACE])
    assert dom.protected_names == ["sex", "race"]
    assert dom.protected == (0, 1, 2, 3) and dom.protected_column_names == ["sex", *RACE]
    assert dom.non_protected.tolist() == [4, 5, 6]
    race = dom.attributes[1]
    assert race.is_group and race.values == tuple(ONE_HOT)
    combos = dom.combinations
    assert combos.shape == (6, 4)
    assert (combos[:, 1:].sum(axis=1) == 1).all()
    # keys ignore the whole group
    X = one_hot_data(5)
    Y = X.copy()
    Y[:, 1:4] = [0, 1, 0]
    np.testing.assert_array_equal(dom.keys(X), dom.keys(Y))


@pytest.mark.parametrize("spec", [
    lambda d: d.with_protected([RACE], data=one_hot_data()),
    lambda d: d.with_protected({"race": list(RACE)}, data=one_hot_data()),
    lambda d: d.with_protected(["race"], groups={"race": RACE}, data=one_hot_data()),
    lambda d: d.with_protected([RACE]),  # 0/1 columns without data: one-hot rows
    lambda d: d.with_protected({"race": RACE}, values={"race": ONE_HOT}),
], ids=["tuple", "mapping", "groups", "no-data", "declared"])
def test_every_way_to_declare_the_group_gives_the_same_domain(spec):
    dom = spec(Domain(features()))
    assert dom.protected_names == ["race"] and dom.protected == (1, 2, 3)
    assert dom.attributes[0].values == tuple(ONE_HOT)


def test_group_name():
    assert group_name(RACE) == "race"
    assert group_name(["x", "y"]) == "x+y"


def test_check_tries_only_valid_rows_and_costs_three_queries_per_input():
    X = one_hot_data(200, seed=1)
    grouped_model = as_model(race_biased_module())
    res = DiscriminationCheck(grouped_model, grouped()).check(X)
    assert grouped_model.n_queries == 3 * len(X)
    s = X[:, 4] + X[:, 5]
    np.testing.assert_array_equal(res.is_idi, (s >= 8) & (s <= 10))
    cps = res.counterparts(grouped())[res.is_idi]
    assert (cps[:, 1:4].sum(axis=1) == 1).all() and (cps[:, 1:4] != X[res.is_idi, 1:4]).any(axis=1).all()

    separate_model = as_model(race_biased_module())
    with pytest.warns(DataWarning, match=r"'race_A', 'race_B', 'race_C' look like one one-hot attribute"):
        separate = Domain(features()).with_protected(list(RACE), data=X)
    DiscriminationCheck(separate_model, separate).check(X)
    assert separate_model.n_queries == 8 * len(X)


def test_random_seed_idis_are_valid_rows_with_group_and_often_impossible_without():
    rng = np.random.default_rng(0)
    dom = grouped()
    X = dom.sample(2000, rng)
    assert (X[:, 1:4].sum(axis=1) == 1).all()
    res = DiscriminationCheck(as_model(race_biased_module()), dom).check(X)
    assert res.is_idi.sum() > 100
    assert (res.X[res.is_idi, 1:4].sum(axis=1) == 1).all()
    assert (res.counterparts(dom)[res.is_idi, 1:4].sum(axis=1) == 1).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        separate = Domain(features()).with_protected(list(RACE), data=one_hot_data())
    Xs = separate.sample(2000, np.random.default_rng(0))
    rs = DiscriminationCheck(as_model(race_biased_module()), separate).check(Xs)
    impossible = rs.X[rs.is_idi, 1:4].sum(axis=1) != 1
    assert impossible.mean() > 0.5  # 5 of the 8 race rows are impossible


def test_input_with_invalid_group_row_is_checked_and_never_a_counterpart():
    dom = grouped()
    x = np.array([[0, 0, 0, 0, 5, 4, 0], [0, 1, 1, 0, 5, 4, 0], [0, 0, 1, 0, 5, 4, 0]])
    model = as_model(race_biased_module())
    check = DiscriminationCheck(model, dom)
    assert check.own_combination(x).tolist() == [-1, -1, 1]
    res = check.check(x)
    assert model.n_queries == 3 * 3 + 2  # one more query per outside input
    # (0,0,0): P = sigmoid(2(9-10.5)) -> 0; race_B counterpart -> 1: an IDI whose counterpart is a valid row
    assert res.is_idi.tolist() == [True, True, True]
    cps = res.counterparts(dom)
    assert [tuple(r) for r in cps[:, 1:4]] == [(0, 1, 0), (0, 0, 1), (0, 0, 1)]


def test_mutate_protected_moves_group_to_another_valid_row():
    dom = grouped(["sex", RACE])
    X = one_hot_data(500)
    out = mutate_protected(X, dom, np.random.default_rng(0))
    assert (out[:, 1:4].sum(axis=1) == 1).all()
    assert (out[:, 1:4] != X[:, 1:4]).any(axis=1).all() and (out[:, 0] != X[:, 0]).all()
    np.testing.assert_array_equal(out[:, 4:], X[:, 4:])
    # every other valid row is reached
    moved_from_a = out[X[:, 1] == 1, 1:4]
    assert {tuple(r) for r in moved_from_a.tolist()} == {(0, 1, 0), (0, 0, 1)}


def test_surrogate_samples_redraw_a_group_as_a_whole():
    dom = grouped()
    S = local_samples(one_hot_data(20), dom, 50, 0.5, np.random.default_rng(0))
    assert (S[:, :, 1:4].sum(axis=2) == 1).all()


def test_round_trip_through_json():
    dom = grouped(["sex", RACE])
    back = Domain.from_dict(json.loads(json.dumps(dom.to_dict())))
    assert back == dom
    assert back.attributes[1] == ProtectedAttribute("race", (1, 2, 3), tuple(ONE_HOT))


def test_old_to_dict_form_still_loads():
    d = {"features": [{"name": "s", "lo": 0, "hi": 2, "kind": "ordinal", "labels": None},
                      {"name": "a", "lo": 0, "hi": 3, "kind": "ordinal", "labels": None}],
         "protected": ["s"], "protected_values": [[0, 2]]}
    assert Domain.from_dict(d).protected_values == ((0, 2),)


def test_bad_groups():
    d = Domain(features())
    with pytest.raises(DomainError, match=r"listed twice: \['race_A'\]"):
        d.with_protected(["race_A", RACE])
    with pytest.raises(DomainError, match=r"value \(1, 0\) has 2 codes, the attribute has 3 columns"):
        d.with_protected({"race": RACE}, values={"race": [(1, 0), (0, 1)]})
    with pytest.raises(DomainError, match=r"groups the columns \['a', 'b'\], which are not all 0/1"):
        d.with_protected([("a", "b")])
    with pytest.raises(DomainError, match=r"'race', column 'race_B': values \[2\] lie outside"):
        d.with_protected({"race": RACE}, values={"race": [(1, 0, 0), (0, 2, 0)]})
    with pytest.raises(DomainError, match=r"unknown feature 'race_D'"):
        d.with_protected([("race_A", "race_D")])


def test_no_warning_for_a_declared_group_or_non_one_hot_columns():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        grouped(["sex", RACE])
        X = one_hot_data()
        X[0, 1:4] = 0  # not one-hot on every row: no claim
        Domain(features()).with_protected(list(RACE), data=X)


def group_dataset():
    X = one_hot_data(400)
    dom = grouped(["sex", RACE])
    y = (X[:, 4] + X[:, 5] + 3 * X[:, 2] > 10.5).astype(np.int64)
    return Dataset("groups", X, y, dom)


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_generators_never_produce_an_impossible_group_row(name):
    ds = group_dataset()
    model = as_model(race_biased_module())
    seeds = ds.domain.sample(20, np.random.default_rng(0))
    res = make_generator(name, max_global=20, max_local=20).run(model, ds.domain, seeds, random_state=0)
    assert res.n_idis > 0
    assert (res.idis[:, 1:4].sum(axis=1) == 1).all()
    assert (res.counterparts[:, 1:4].sum(axis=1) == 1).all()
    np.testing.assert_array_equal(res.idis[:, 4:], res.counterparts[:, 4:])


@pytest.mark.parametrize("strategy", ["random", "rows", "cluster"])
def test_seed_strategies_give_valid_group_rows(strategy):
    ds = group_dataset()
    rep = make_seed_strategy(strategy).select(as_model(race_biased_module()), ds, 30, random_state=0)
    assert (rep.seeds[:, 1:4].sum(axis=1) == 1).all()


def test_protected_value_counts_name_a_group_as_one_attribute():
    dom = grouped([RACE])
    res = make_generator("aequitas", max_global=30, max_local=20).run(
        as_model(race_biased_module()), dom, dom.sample(30, np.random.default_rng(0)), random_state=0)
    counts = res.protected_value_counts(dom)
    assert list(counts.columns) == ["race", "race_counterpart", "n_idis"]
    assert set(counts["race"]) | set(counts["race_counterpart"]) <= set(RACE)
    assert counts["n_idis"].sum() == res.n_idis > 0


def test_one_column_of_a_one_hot_group_protected_alone_is_refused():
    # race_B alone: every counterpart of (0, 1, 0) would be (0, 0, 0), an impossible row
    with pytest.raises(DomainError, match=r"race_B.*one-hot.*impossible.*race_A"):
        Domain(features()).with_protected(["race_B"], data=one_hot_data())
    # the same column with independent 0/1 neighbours is an ordinary protected attribute
    X = one_hot_data()
    X[:, 1] = np.random.default_rng(1).integers(0, 2, len(X))
    assert Domain(features()).with_protected(["race_B"], data=X).protected_names == ["race_B"]
