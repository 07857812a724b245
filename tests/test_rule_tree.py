"""The rule tree fitted level by level from additive histograms is scikit-learn's Gini tree on every row, whatever
the batches, in memory or spilled to a temporary file."""

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier

from chiralfair.verdict.rule_tree import RuleRows, fit_rule_tree


def rows_with_structure(n, seed):
    rng = np.random.default_rng(seed)
    sizes = np.array([7, 3, 12, 2, 300])
    Z = np.column_stack([rng.integers(0, s, n) for s in sizes])
    score = 0.9 * (Z[:, 0] >= 4) + 0.6 * (Z[:, 2] < 5) + 0.4 * (Z[:, 1] == 2) + 0.003 * Z[:, 4] + rng.normal(0, 0.5, n)
    return Z, score > 1.2, sizes


def sklearn_leaves(Z, affected):
    """(individuals, affected) of each leaf of scikit-learn's depth-3 tree fitted on every row, counted with numpy."""
    tree = DecisionTreeClassifier(max_depth=3, random_state=0).fit(Z, affected)
    leaf = tree.apply(Z)
    return sorted((int((leaf == v).sum()), int(affected[leaf == v].sum())) for v in np.unique(leaf))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("spill", [False, True])
def test_the_histogram_tree_is_sklearns_tree_on_every_row(seed, spill):
    Z, affected, sizes = rows_with_structure(5_000, seed)
    store = RuleRows(sizes, spill=spill)
    for s in range(0, len(Z), 777):  # batches of any size
        store.add(Z[s:s + 777], affected[s:s + 777])
    leaves = fit_rule_tree(store.chunks, sizes, 3)
    assert sorted((leaf.n, leaf.n_affected) for leaf in leaves) == sklearn_leaves(Z, affected)
    for leaf in leaves:  # each leaf's counts recounted from its code ranges
        inside = np.all([(Z[:, j] >= lo) & (Z[:, j] <= hi) for j, (lo, hi) in enumerate(leaf.bounds)], axis=0)
        assert (inside.sum(), affected[inside].sum()) == (leaf.n, leaf.n_affected)
    store.close()


def test_a_spilled_table_split_differently_gives_the_same_leaves_and_holds_no_rows_in_memory():
    Z, affected, sizes = rows_with_structure(3_000, 5)
    whole = RuleRows(sizes)
    whole.add(Z, affected)
    spilled = RuleRows(sizes, spill=True)
    for s in range(0, len(Z), 1000):
        part = RuleRows(sizes)
        part.add(Z[s:s + 1000], affected[s:s + 1000])
        spilled.extend(part)
    assert spilled.n == len(Z) and spilled._parts == []
    assert fit_rule_tree(spilled.chunks, sizes, 3) == fit_rule_tree(whole.chunks, sizes, 3)


def test_a_pure_or_empty_table_has_one_leaf_or_none():
    sizes = np.array([4, 4])
    store = RuleRows(sizes)
    assert fit_rule_tree(store.chunks, sizes, 3) == []
    store.add(np.array([[0, 1], [3, 2]]), np.array([True, True]))
    (leaf,) = fit_rule_tree(store.chunks, sizes, 3)
    assert (leaf.n, leaf.n_affected, leaf.bounds) == (2, 2, ((0, 3), (0, 3)))
