"""Aft: leaves read as integer boxes, pairs across protected splits, sampling inside them, budget and restarts."""

import numpy as np
import pytest
from gradient_toys import assert_reported_pairs_hold
from sklearn.tree import DecisionTreeClassifier
from toys import is_biased_idi, toy_domain

from chiralfair.exceptions import ConfigError
from chiralfair.generators import GENERATORS
from chiralfair.generators.aft import Aft, discriminatory_regions, leaf_boxes
from chiralfair.models import as_model


def _tree(domain, rule, n=3000, seed=0):
    X = domain.sample(n, np.random.default_rng(seed))
    return DecisionTreeClassifier(random_state=0).fit(X, rule(X)), X


def test_leaf_boxes_are_integer_boxes_that_hold_exactly_their_leafs_inputs():
    domain = toy_domain(("sex", "race"))
    tree, X = _tree(domain, lambda X: ((X[:, 0] == 1) & (X[:, 2] > 4)) | (X[:, 3] > 7))
    boxes = leaf_boxes(tree, domain)
    leaf_of = tree.apply(X)
    leaves = np.flatnonzero(tree.tree_.children_left < 0)
    inside = ((X[:, None, :] >= boxes.lower[None]) & (X[:, None, :] <= boxes.upper[None])).all(axis=2)
    np.testing.assert_array_equal(inside.argmax(axis=1), np.searchsorted(leaves, leaf_of))
    assert (inside.sum(axis=1) == 1).all()  # the boxes partition the domain's inputs
    np.testing.assert_array_equal(boxes.label, tree.predict(X[np.unique(leaf_of, return_index=True)[1]]))
    assert (boxes.lower >= domain.lower).all() and (boxes.upper <= domain.upper).all()


def test_pairs_lie_across_a_protected_split_and_regions_keep_the_discriminatory_ones():
    domain = toy_domain()
    # label 1 iff (sex == 1 and a > 4) or b > 7: sex matters only where a > 4 and b <= 7
    tree, _ = _tree(domain, lambda X: ((X[:, 0] == 1) & (X[:, 2] > 4)) | (X[:, 3] > 7))
    boxes = leaf_boxes(tree, domain)
    a, b = boxes.pairs.T
    assert len(a) > 0
    assert ((boxes.upper[a, 0] < boxes.lower[b, 0]) | (boxes.upper[b, 0] < boxes.lower[a, 0])).all()
    regions = discriminatory_regions(boxes, domain)
    assert len(regions) > 0
    X = regions.sample(np.repeat(np.arange(len(regions)), 50), domain, np.random.default_rng(1))
    domain.validate(X, what="samples")
    assert (X[:, 2] > 4).all() and (X[:, 3] <= 7).all()  # only where the PA decides the label


def test_aft_finds_only_true_idis_and_keeps_its_local_budget(biased_model, domain):
    seeds = domain.sample(30, np.random.default_rng(0))
    gen = Aft(max_global=30, max_local=20, n_train=300)
    res = gen.run(biased_model, domain, seeds, random_state=0)
    assert GENERATORS["aft"] is Aft
    assert res.n_local > 0 and is_biased_idi(res.idis).all()
    assert_reported_pairs_hold(res, biased_model, domain)
    assert res.n_tested <= 30 + 20 * 30
    assert res.n_queries <= gen.query_budget(30, 2)


def test_aft_on_a_fair_model_stops_after_its_restarts_and_says_so(fair_model, domain):
    seeds = domain.sample(30, np.random.default_rng(0))
    res = Aft(max_global=30, max_local=50, n_train=200, max_restarts=2).run(fair_model, domain, seeds,
                                                                            random_state=0)
    assert res.n_idis == 0
    assert "2 restarts" in res.notes[0]
    assert res.n_queries <= Aft(max_global=30, max_local=50, n_train=200, max_restarts=2).query_budget(30, 2)


def test_aft_works_on_a_labels_only_black_box():
    domain = toy_domain(("sex", "race"))
    model = as_model(lambda X: (X[:, 2] + X[:, 3] + 3 * X[:, 0] > 10.5).astype(int), name="labels-only")
    res = Aft(max_global=20, max_local=30, n_train=300).run(model, domain, domain.sample(20, np.random.default_rng(2)),
                                                           random_state=1)
    assert res.n_idis > 0 and is_biased_idi(res.idis).all()


@pytest.mark.parametrize("param", ["n_train", "max_pairs", "max_samples_per_pair", "max_failures_per_pair",
                                   "samples_per_step"])
def test_bad_parameters_are_refused_by_name(param):
    with pytest.raises(ConfigError, match=param):
        Aft(**{param: 0})
