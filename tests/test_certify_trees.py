"""Certifying tree ensembles: exact against an enumeration of every grid point, witnesses re-queried, refusals named.

The truth is recounted here in plain numpy through each model's own ``predict``: every input of the toy grid is
labelled, inputs are grouped by their key (the non-protected columns, a coupled column read as its role) and a key
is an IDI when two of its inputs that satisfy the rules get different labels.
"""

import functools
import itertools

import numpy as np
import pandas as pd
import pytest
from sklearn.decomposition import PCA
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.tree import DecisionTreeClassifier
from toys import breaks_toy_rules, coupled_toy_domain, toy_domain

from chiralfair.certification import KeySpace, certify_domain, certify_individuals
from chiralfair.certification.neighbourhood import check_similar
from chiralfair.certification.result import IndividualCertificates
from chiralfair.certification.tree_ensemble import TreeEnsemble
from chiralfair.certification.tree_reading import read_tree_ensemble
from chiralfair.certification.tree_search import TreeBranchAndBound, _code_dtype
from chiralfair.datasets.base import Dataset
from chiralfair.exceptions import ConfigError, ModelCapabilityError
from chiralfair.models import as_model
from chiralfair.models.threads import single_native_thread
from chiralfair.oracle import DiscriminationCheck

lightgbm = pytest.importorskip("lightgbm")


def _xgboost():
    try:
        import xgboost
    except ImportError:  # pragma: no cover - the test extra installs it
        return None
    return xgboost


XGB = _xgboost()

MODELS = {
    "dt": lambda: DecisionTreeClassifier(max_depth=6, random_state=0),
    "rf10": lambda: RandomForestClassifier(10, max_depth=6, random_state=0),
    "et": lambda: ExtraTreesClassifier(10, max_depth=5, random_state=0),
    "gb": lambda: GradientBoostingClassifier(n_estimators=15, random_state=0),
    "hgb": lambda: HistGradientBoostingClassifier(max_iter=15, random_state=0),
    "lightgbm": lambda: lightgbm.LGBMClassifier(n_estimators=15, num_leaves=8, min_child_samples=5, n_jobs=1,
                                                verbose=-1),
    "hgb-native": lambda: HistGradientBoostingClassifier(max_iter=15, categorical_features=[1, 4], random_state=0),
    "lightgbm-categorical": lambda: lightgbm.LGBMClassifier(n_estimators=15, num_leaves=8, min_child_samples=5,
                                                            min_data_per_group=5, cat_smooth=1, categorical_column=[4],
                                                            n_jobs=1, verbose=-1),
    "onehot-rf": lambda: make_pipeline(OneHotEncoder(handle_unknown="ignore"),
                                       RandomForestClassifier(10, max_depth=6, random_state=0)),
    "scaled-dt": lambda: make_pipeline(StandardScaler(), DecisionTreeClassifier(max_depth=6, random_state=0)),
}
if XGB is not None:
    MODELS["xgboost"] = lambda: XGB.XGBClassifier(n_estimators=15, max_depth=3, n_jobs=1)

DOMAINS = {"sex+race": lambda: toy_domain(("sex", "race")), "coupled+constraints": coupled_toy_domain}


def grid(domain):
    """Every input of the domain, shape (n, n_features)."""
    ranges = [range(int(lo), int(hi) + 1) for lo, hi in zip(domain.lower, domain.upper, strict=True)]
    return np.array(list(itertools.product(*ranges)), dtype=np.int64)


def key_of(X, kind):
    """The key written out by hand: non-protected columns, the coupled c read as its role at sex=Female."""
    X = np.asarray(X)
    if kind == "sex+race":
        return X[:, 2:]
    role = X[:, 4].copy()
    male = X[:, 0] == 1
    role[male & (X[:, 4] == 0)] = 1
    role[male & (X[:, 4] == 1)] = 0
    return np.column_stack([X[:, 1], X[:, 2], X[:, 3], role])


@functools.cache
def trained(name, kind, seed=0):
    """A model of kind ``name`` fitted on 600 rows of the toy domain, labels leaning on sex; and its dataset."""
    domain = DOMAINS[kind]()
    rng = np.random.default_rng(seed)
    X = domain.sample(600, rng)
    y = ((X[:, 2] + X[:, 3] + 3 * X[:, 0] - X[:, 1] + rng.normal(0, 1.5, 600)) > 10).astype(np.int64)
    with single_native_thread():  # OpenMP threads only spin on a loaded machine
        estimator = MODELS[name]().fit(X, y)
    return estimator, Dataset("toy", X, y, domain, label="y", positive_class="1")


def truth(estimator, domain, kind):
    """Per key of the grid: whether it is in the domain and whether it is an IDI (the estimator's own predict)."""
    X = grid(domain)
    with single_native_thread():
        labels = np.asarray(estimator.predict(X.astype(np.float64))).astype(np.int64)
    ok = ~breaks_toy_rules(X) if kind == "coupled+constraints" else np.ones(len(X), bool)
    keys, group = np.unique(key_of(X, kind), axis=0, return_inverse=True)
    group = group.reshape(-1)
    n = len(keys)
    n_ok = np.bincount(group, weights=ok, minlength=n)
    ones = np.bincount(group, weights=ok & (labels == 1), minlength=n)
    inside = n_ok > 0
    idi = inside & (ones > 0) & (ones < n_ok)
    return keys, inside, idi


def witnesses_are_real(result, estimator, kind):
    """Every reported IDI and its counterpart: the same key, both possible, labels differ by the model's predict."""
    assert len(result.idis) == result.n_idis > 0
    own = np.asarray(estimator.predict(result.idis.astype(np.float64)))
    other = np.asarray(estimator.predict(result.counterparts.astype(np.float64)))
    assert (own != other).all()
    assert (key_of(result.idis, kind) == key_of(result.counterparts, kind)).all()
    if kind == "coupled+constraints":
        assert not breaks_toy_rules(result.idis).any() and not breaks_toy_rules(result.counterparts).any()


# ------------------------------------------------------------------ the whole domain
@pytest.mark.parametrize("kind", list(DOMAINS))
@pytest.mark.parametrize("name", list(MODELS))
def test_the_whole_domain_is_counted_exactly(name, kind):
    estimator, data = trained(name, kind)
    result = certify_domain(as_model(estimator), data, max_seconds=None)
    _, inside, idi = truth(estimator, data.domain, kind)
    assert result.stopped == "complete" and result.undecided_volume == 0
    assert result.domain_volume == inside.sum()
    assert result.falsified_volume == idi.sum() > 0
    assert result.certified_volume == (inside & ~idi).sum() > 0
    witnesses_are_real(result, estimator, kind)


@pytest.mark.parametrize("kind", list(DOMAINS))
@pytest.mark.parametrize("name", ["dt", "rf10", "hgb", "lightgbm", "onehot-rf",
                                  *(["xgboost"] if XGB is not None else [])])
def test_bounds_and_splits_alone_are_exact(name, kind):
    """No box is enumerated (one cell per box at most): every decision comes from the bounds or a single cell."""
    estimator, data = trained(name, kind)
    model = as_model(estimator)
    space = KeySpace(data.domain)
    lo, hi, _ = space.domain_boxes()
    engine = TreeBranchAndBound(max_seconds=None, cells_per_box=1, regions_per_box=0)
    tally = engine.run(read_tree_ensemble(model, data.domain), space, DiscriminationCheck(model, data.domain), lo, hi)
    _, inside, idi = truth(estimator, data.domain, kind)
    assert tally.stats["stopped"] == "complete" and tally.stats["n_decided_by_bounds"] > 0
    assert tally.stats["n_splits"] > 0
    assert tally.stats["n_reach_cached"] > 0  # split boxes read their leaves from their parent's, on one feature
    assert tally.falsified.sum() == idi.sum() and tally.certified.sum() == (inside & ~idi).sum()


@pytest.mark.parametrize("kind", list(DOMAINS))
@pytest.mark.parametrize("name", ["dt", "rf10", "et", "gb", "hgb", "lightgbm", "scaled-dt",
                                  *(["xgboost"] if XGB is not None else [])])
@pytest.mark.parametrize("per_box", [64, 4096])
def test_boxes_cut_into_regions_of_one_leaf_per_tree_are_exact(name, kind, per_box):
    """Regions alone (no box enumerated cell by cell): each region's scores exact, the model deciding the rest."""
    estimator, data = trained(name, kind)
    model = as_model(estimator)
    space = KeySpace(data.domain)
    lo, hi, _ = space.domain_boxes()
    rows = np.arange(300)
    engine = TreeBranchAndBound(max_seconds=None, cells_per_box=1, regions_per_box=per_box)
    check = DiscriminationCheck(model, data.domain)
    tracked = {"row_keys": space.keys_of(data.X[rows])} if len(lo) == 1 else {}
    tally = engine.run(read_tree_ensemble(model, data.domain), space, check, lo, hi, **tracked)
    keys, inside, idi = truth(estimator, data.domain, kind)
    assert tally.stats["stopped"] == "complete" and (tally.stats["n_region_boxes"] > 0 or per_box < 4096)
    assert tally.falsified.sum() == idi.sum() > 0 and tally.certified.sum() == (inside & ~idi).sum() > 0
    if len(lo) == 1:  # every tracked row has its key's answer
        where = {tuple(k): i for i, k in enumerate(keys)}
        row_key = np.array([where[tuple(k)] for k in key_of(data.X[rows], kind)])
        assert (tally.row_status == np.where(idi[row_key], 1, 0)).all()
    assert len(tally.idis) > 0
    X = np.concatenate(tally.idis)
    other = np.concatenate(tally.counterparts)
    assert (np.asarray(estimator.predict(X.astype(np.float64))) !=
            np.asarray(estimator.predict(other.astype(np.float64)))).all()


@pytest.mark.parametrize("kind", list(DOMAINS))
@pytest.mark.parametrize("name", ["rf10", "hgb", *(["xgboost"] if XGB is not None else [])])
def test_the_work_shared_among_processes_is_counted_exactly_and_the_same_every_time(name, kind, monkeypatch):
    """Rounds of a few boxes over 2 and 3 processes: the brute force's counts, the rows' answers, the same IDIs."""
    from chiralfair.certification import tree_search

    monkeypatch.setattr(tree_search, "ROUND_BOXES", 6)  # many rounds: boxes dealt out again and again
    estimator, data = trained(name, kind)
    model = as_model(estimator)
    space = KeySpace(data.domain)
    lo, hi, _ = space.domain_boxes()
    rows = np.arange(300)
    keys, inside, idi = truth(estimator, data.domain, kind)
    read = read_tree_ensemble(model, data.domain)
    runs = {}
    for n_jobs, again in [(1, 0), (2, 0), (2, 1), (3, 0)]:
        engine = TreeBranchAndBound(max_seconds=None, batch_size=4, cells_per_box=1, regions_per_box=64,
                                    n_jobs=n_jobs, parallel_after=4)
        counted = as_model(estimator)
        runs[n_jobs, again] = tally = engine.run(read, space, DiscriminationCheck(counted, data.domain), lo, hi,
                                                 row_keys=space.keys_of(data.X[rows]), row_owner=_owners(space, lo, hi,
                                                                                                        data.X[rows]))
        assert tally.stats["stopped"] == "complete" and tally.stats["n_jobs"] == n_jobs
        assert (tally.stats["n_rounds"] > 1) == (n_jobs > 1)
        assert tally.falsified.sum() == idi.sum() > 0 and tally.certified.sum() == (inside & ~idi).sum() > 0
        where = {tuple(k): i for i, k in enumerate(keys)}
        row_key = np.array([where[tuple(k)] for k in key_of(data.X[rows], kind)])
        known = inside[row_key]
        assert (tally.row_status[known] == np.where(idi[row_key], 1, 0)[known]).all()
        X, other = np.concatenate(tally.idis), np.concatenate(tally.counterparts)
        with single_native_thread():
            assert (estimator.predict(X.astype(np.float64)) != estimator.predict(other.astype(np.float64))).all()
        # the model's rows are counted wherever they were sent: each IDI and its counterpart at least
        assert counted.n_queries >= 2 * len(np.unique(key_of(X, kind), axis=0)) > 0
    one, two, three = runs[1, 0], runs[2, 0], runs[3, 0]
    assert (one.falsified == two.falsified).all() and (one.certified == three.certified).all()
    assert (np.concatenate(two.idis) == np.concatenate(runs[2, 1].idis)).all()  # the same inputs, the same answer
    assert two.stats["n_boxes"] == runs[2, 1].stats["n_boxes"]


def test_a_box_budget_shared_among_processes_gives_the_same_answer_every_time(monkeypatch):
    from chiralfair.certification import tree_search

    monkeypatch.setattr(tree_search, "ROUND_BOXES", 8)
    estimator, data = trained("rf10", "coupled+constraints")
    model = as_model(estimator)
    first = certify_domain(model, data, max_seconds=None, max_boxes=40, n_jobs=2)
    again = certify_domain(as_model(estimator), data, max_seconds=None, max_boxes=40, n_jobs=2)
    assert first.stopped == again.stopped == "boxes" and 0 < first.undecided_share < 1
    assert (first.certified_volume, first.falsified_volume, first.n_idis) == (
        again.certified_volume, again.falsified_volume, again.n_idis)
    assert (first.idis == again.idis).all()
    with pytest.raises(ConfigError, match="n_jobs"):
        certify_domain(model, data, n_jobs=0)


def test_a_shared_run_interrupted_mid_round_reports_every_key_it_had_not_decided_as_open(monkeypatch):
    from chiralfair.certification import tree_search

    monkeypatch.setattr(tree_search, "ROUND_BOXES", 8)
    estimator, data = trained("rf10", "coupled+constraints")
    model = as_model(estimator)
    space = KeySpace(data.domain)
    lo, hi, _ = space.domain_boxes()
    calls = []

    def stop(progress):
        calls.append(progress)
        if len(calls) == 9:  # inside the second round: the other process holds a share
            raise KeyboardInterrupt

    engine = TreeBranchAndBound(max_seconds=None, batch_size=2, cells_per_box=1, regions_per_box=64, n_jobs=2,
                                parallel_after=4)
    tally = engine.run(read_tree_ensemble(model, data.domain), space, DiscriminationCheck(model, data.domain), lo, hi,
                       on_progress=stop)
    _, inside, idi = truth(estimator, data.domain, "coupled+constraints")
    assert tally.stats["stopped"] == "interrupted" and tally.stats["n_rounds"] >= 1
    assert tally.certified.sum() + tally.falsified.sum() + tally.stats["open_volume"] == inside.sum()
    assert 0 < tally.stats["open_volume"] and tally.falsified.sum() <= idi.sum()


def _owners(space, lo, hi, X):
    keys = space.keys_of(X)
    inside = np.all((keys[:, None] >= lo[None]) & (keys[:, None] <= hi[None]), axis=2)
    return np.where(inside.any(axis=1), inside.argmax(axis=1), -1)


@pytest.mark.parametrize(("lower", "upper", "width"), [(0, 32766, 2), (0, 32767, 4), (-32767, 5, 2), (-32768, 5, 4),
                                                      (0, 2**31 - 2, 4), (0, 2**31 - 1, 8)])
def test_regions_keep_their_codes_in_integers_that_hold_one_past_each_bound(lower, upper, width):
    """An empty leaf hull is one past a bound: the regions' integers hold it, or a wide code would wrap around."""
    ensemble = TreeEnsemble(np.array([lower]), np.array([upper]), np.ones((1, 1), bool), np.array([0.5]),
                            np.array([0]), 0.0, 0.5, starts=(np.array([lower]),))
    kind = np.dtype(_code_dtype(ensemble))
    assert kind.itemsize == width
    assert np.array([lower - 1, upper + 1]).astype(kind).tolist() == [lower - 1, upper + 1]


@pytest.mark.parametrize("kind", list(DOMAINS))
@pytest.mark.parametrize("name", ["dt", "hgb", "lightgbm"])
def test_boxes_where_the_trees_ignore_the_protected_columns_are_certified_exactly(name, kind):
    """Sex matters only where a >= 6: boxes elsewhere are certified by their leaves alone, however the score goes."""
    domain = DOMAINS[kind]()
    rng = np.random.default_rng(0)
    X = domain.sample(800, rng)
    y = ((X[:, 2] + X[:, 3] + 4 * X[:, 0] * (X[:, 2] >= 6) + rng.normal(0, 1.0, 800)) > 10).astype(np.int64)
    with single_native_thread():
        estimator = MODELS[name]().fit(X, y)
    model = as_model(estimator)
    space = KeySpace(domain)
    lo, hi, _ = space.domain_boxes()
    _, inside, idi = truth(estimator, domain, kind)
    boxes = {}
    for blind in (True, False):
        engine = TreeBranchAndBound(max_seconds=None, cells_per_box=1, blind=blind, regions_per_box=0)
        tally = engine.run(read_tree_ensemble(model, domain), space, DiscriminationCheck(model, domain), lo, hi)
        assert tally.stats["stopped"] == "complete"
        assert tally.falsified.sum() == idi.sum() > 0 and tally.certified.sum() == (inside & ~idi).sum()
        assert (tally.stats["n_blind"] > 0) == blind
        boxes[blind] = tally.stats["n_boxes"]
    assert boxes[True] < boxes[False]


def test_a_budget_leaves_part_undecided_and_rows_follow_their_keys():
    estimator, data = trained("hgb", "coupled+constraints")
    model = as_model(estimator)
    nothing = certify_domain(model, data, max_seconds=0)
    assert nothing.stopped == "time" and nothing.undecided_share == 1
    rows = np.arange(200)
    result = certify_domain(model, data, rows=rows, max_seconds=None, max_boxes=2)
    assert result.stopped == "boxes" and result.undecided_volume > 0
    full = certify_domain(model, data, rows=rows, max_seconds=None)
    keys, inside, idi = truth(estimator, data.domain, "coupled+constraints")
    where = {tuple(k): i for i, k in enumerate(keys)}
    row_key = np.array([where[tuple(k)] for k in key_of(data.X[rows], "coupled+constraints")])
    assert full.row_counts == {"certified": int((inside[row_key] & ~idi[row_key]).sum()),
                               "falsified": int(idi[row_key].sum()), "undecided": 0,
                               "outside": int((~inside[row_key]).sum())}


# ------------------------------------------------------------------ per person
@pytest.mark.parametrize("name", ["dt", "rf10", "hgb", "lightgbm", *(["xgboost"] if XGB is not None else [])])
@pytest.mark.parametrize("kind", list(DOMAINS))
def test_each_person_is_certified_exactly_on_their_own_row_and_within_similar(name, kind):
    estimator, data = trained(name, kind)
    model = as_model(estimator)
    rows = np.arange(0, 600, 4)
    keys, inside, idi = truth(estimator, data.domain, kind)
    where = {tuple(k): i for i, k in enumerate(keys)}
    X = data.X[rows]
    own = certify_individuals(model, data, rows)
    expected_own = idi[[where[tuple(k)] for k in key_of(X, kind)]]
    similar = certify_individuals(model, data, rows, similar={"a": 1, "b": 2})
    expected = np.zeros(len(rows), bool)
    for i, x in enumerate(X):  # the neighbourhood written out: a within 1, b within 2, everything else fixed
        for a, b in itertools.product(range(x[2] - 1, x[2] + 2), range(x[3] - 2, x[3] + 3)):
            if 0 <= a <= 9 and 0 <= b <= 9:
                z = x.copy()
                z[2], z[3] = a, b
                expected[i] |= idi[where[tuple(key_of(z[None], kind)[0])]]
    left_out = own.status == 3
    if kind == "coupled+constraints":  # a=0 with c in {0, 1}: the other sex's coupled role breaks a >= c
        assert (left_out == ((X[:, 2] == 0) & (X[:, 4] <= 1))).all()
    else:
        assert not left_out.any()
    assert (own.status[~left_out] == np.where(expected_own, 1, 0)[~left_out]).all()
    assert (similar.status[~left_out] == np.where(expected, 1, 0)[~left_out]).all()
    assert similar.undecided_share == 0 and similar.affected_share > own.affected_share > 0
    assert (similar.status[left_out] == 3).all()


@pytest.mark.parametrize("kind", list(DOMAINS))
def test_a_person_whose_own_row_is_an_idi_is_affected_with_that_witness_whatever_the_budget(kind):
    """No time for the neighbourhoods' search: a person whose own row is an IDI is still affected, witnessed there."""
    estimator, data = trained("rf10", kind)
    rows = np.arange(0, 600, 3)
    X = data.X[rows]
    keys, inside, idi = truth(estimator, data.domain, kind)
    where = {tuple(k): i for i, k in enumerate(keys)}
    own_idi = idi[[where[tuple(k)] for k in key_of(X, kind)]]
    with single_native_thread():  # the recount: each own row against every counterpart of its key, by predict
        labels = dict(zip(map(tuple, grid(data.domain)), estimator.predict(grid(data.domain).astype(np.float64))
                          .tolist(), strict=True))
    people = certify_individuals(as_model(estimator), data, rows, similar={"a": 1, "b": 2}, max_seconds=0)
    counted = people.status != 3
    assert own_idi[counted].sum() > 0
    assert (people.status[counted & own_idi] == 1).all()  # none left undecided
    assert (people.status[counted & ~own_idi] == 2).all()  # the others wait for the search, which had no time
    assert people.meta["stats"]["n_own_row_idis"] == own_idi[counted].sum()
    for i in np.flatnonzero(counted & own_idi):
        assert (people.witness[i] == X[i]).all()  # the witness is the person's own row
        other = people.witness_counterpart[i]
        assert (key_of(other[None], kind) == key_of(X[i][None], kind)).all()
        assert labels[tuple(X[i])] != labels[tuple(other)] == people.witness_labels[i, 1]


def test_a_left_out_person_is_outside_the_shares_and_survives_json():
    people = IndividualCertificates(rows=np.arange(4), status=np.array([0, 1, 3, 0], np.int8), seconds=0.1)
    assert people.n_left_out == 1 and people.n_individuals == 3 and people.certified_share == 2 / 3
    with pytest.raises(ConfigError, match="the left out are in no share"):
        people.share("left out")
    again = IndividualCertificates.from_json(people.to_json())
    assert (again.status == people.status).all() and again.summary()["n_left_out"] == 1


def test_a_categorical_feature_widens_only_to_the_values_given():
    domain = toy_domain(("sex",))
    rng = np.random.default_rng(1)
    X = domain.sample(600, rng)
    y = ((X[:, 2] + X[:, 3] + 3 * X[:, 0] + 2 * (X[:, 1] == 2) + rng.normal(0, 1.5, 600)) > 10).astype(np.int64)
    estimator = RandomForestClassifier(10, max_depth=6, random_state=0).fit(X, y)
    data = Dataset("toy", X, y, domain, label="y", positive_class="1")
    rows = np.arange(60)
    people = certify_individuals(as_model(estimator), data, rows, similar={"race": {"C"}, "a": 1})
    every = grid(domain)
    labels = dict(zip(map(tuple, every), estimator.predict(every.astype(np.float64)).tolist(), strict=True))
    for i, x in enumerate(data.X[rows]):
        affected = False
        for race, a in itertools.product({int(x[1]), 2}, range(max(x[2] - 1, 0), min(x[2] + 1, 9) + 1)):
            z = x.copy()
            z[1], z[2] = race, a
            affected |= len({labels[(s, *z[1:])] for s in (0, 1)}) > 1
        assert people.status[i] == int(affected)


# ------------------------------------------------------------------ refusals
@pytest.fixture(scope="module")
def case():
    return trained("dt", "sex+race")


@pytest.mark.parametrize("similar, message", [
    ({"age": 2}, "unknown feature 'age'; the features are a, b, c"),
    ({"sex": 1}, "'sex' is a protected attribute"),
    ({"a": -1}, "the radius of 'a' must be a finite number >= 0"),
    ({"a": float("nan")}, "the radius of 'a' must be a finite number >= 0"),
    ({"a": "x"}, "the radius of 'a' must be a number"),
    ({"a": {1, 2}}, "'a' is numeric; give it a radius"),
    ({}, "similar must map feature names to radii"),
])
def test_bad_neighbourhoods_are_refused_by_name(case, similar, message):
    estimator, data = case
    with pytest.raises(ConfigError, match=message):
        certify_individuals(as_model(estimator), data, np.arange(5), similar=similar)


def test_other_neighbourhood_refusals():
    domain = coupled_toy_domain()
    with pytest.raises(ConfigError, match="'c' is coupled to a protected attribute"):
        check_similar({"c": 1}, domain)
    with pytest.raises(ConfigError, match="'race' is categorical; give it a set of values"):
        check_similar({"race": 1}, domain)
    data = Dataset("toy", domain.sample(10, np.random.default_rng(0)), np.zeros(10, int), domain)
    from chiralfair.certification.neighbourhood import similar_boxes

    with pytest.raises(ConfigError, match="'race' has no value 'D'"):
        similar_boxes(data, np.arange(3), {"race": {"D"}})


def test_boxes_and_similar_together_are_refused(case):
    estimator, data = case
    X = data.X[:3]
    with pytest.raises(ConfigError, match="give boxes or similar, not both"):
        certify_individuals(as_model(estimator), data, np.arange(3), boxes=(X, X), similar={"a": 1})


def test_unreadable_tree_models_are_refused_naming_what_is_at_fault(case):
    _, data = case
    X, y = data.X.astype(np.float64), data.y
    domain = data.domain
    pca = make_pipeline(PCA(2), DecisionTreeClassifier(max_depth=3, random_state=0)).fit(X, y)
    with pytest.raises(ModelCapabilityError, match=r"preprocessing step 'pca' \(PCA\) may mix columns"):
        read_tree_ensemble(as_model(pca), domain)
    if XGB is not None:
        frame = pd.DataFrame(data.X, columns=domain.names).astype({"c": "category"})
        native = XGB.XGBClassifier(n_estimators=3, max_depth=2, enable_categorical=True, tree_method="hist",
                                   n_jobs=1).fit(frame, data.X[:, 4] % 2)  # a label the categories decide
        wrapped = as_model(native, to_frame=lambda codes: pd.DataFrame(codes, columns=domain.names).astype(
            {"c": pd.CategoricalDtype(sorted(frame["c"].unique()))}))
        with pytest.raises(ModelCapabilityError, match="splits 'c' as a categorical feature"):
            read_tree_ensemble(wrapped, domain)


def test_a_reading_that_does_not_reproduce_the_model_is_refused(case):
    estimator, data = case
    model = as_model(estimator)
    flipped = estimator.tree_.threshold.copy()
    estimator.tree_.threshold[:] = flipped + 0.5  # every split moved after the model's own labels were wrapped
    try:
        def other_labels(X):
            estimator.tree_.threshold[:] = flipped
            try:
                return np.asarray(estimator.predict(X))
            finally:
                estimator.tree_.threshold[:] = flipped + 0.5
        model._predict = other_labels
        with pytest.raises(ModelCapabilityError, match="do not reproduce it"):
            read_tree_ensemble(model, data.domain)
    finally:
        estimator.tree_.threshold[:] = flipped


def test_the_zoo_trees_are_accepted_and_others_refused_before_training():
    from chiralfair.certification.options import check_zoo_model

    for name in ("dtc", "rf", "hgb", "lightgbm", "dnn"):
        check_zoo_model(name)
    with pytest.raises(ModelCapabilityError, match="'lr' is not a ReLU network or a tree ensemble"):
        check_zoo_model("lr")


def test_the_cli_reads_similar_and_refuses_a_malformed_one():
    from chiralfair.cli.certify import parse_similar

    assert parse_similar(["age=2", "workclass=Private|State-gov"]) == {"age": 2.0,
                                                                      "workclass": {"Private", "State-gov"}}
    assert parse_similar(None) is None
    with pytest.raises(ConfigError, match="--similar takes NAME=RADIUS"):
        parse_similar(["age"])
    with pytest.raises(ConfigError, match="'age' is given twice"):
        parse_similar(["age=1", "age=2"])
