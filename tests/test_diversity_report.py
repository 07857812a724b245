"""Diversity report: each measure on sets whose answer is known, determinism and JSON."""

import json
import math

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier
from toys import biased_module, toy_dataset

from chiralfair.exceptions import ChiralfairError, ConfigError
from chiralfair.models import as_model
from chiralfair.results import SearchResult
from chiralfair.seeds.diversity_report import (
    DiversityReport,
    diversity_reference,
    mean_gower_distance,
    seed_diversity,
)


@pytest.fixture(scope="module")
def data():
    return toy_dataset(n=400)


@pytest.fixture(scope="module")
def logistic(data):
    # Log-odds SHAP values of a linear model: w_j (x_j - mean of the background), exact and deterministic.
    return LogisticRegression(max_iter=1000).fit(data.X, data.y)


# Three rows far apart in a and b (the model's large weights): their explanations differ by far more than eps.
PROTOTYPES = np.array([[0, 0, 0, 0, 0], [1, 1, 9, 0, 2], [0, 2, 9, 9, 4]])


@pytest.fixture(scope="module")
def three_clusters(data, logistic):
    """Reference whose clusters are the three prototypes (20 copies each: three dense DBSCAN clusters)."""
    return diversity_reference(logistic, data, rows=np.repeat(PROTOTYPES, 20, axis=0), random_state=0)


def test_reference_built_on_three_prototypes_has_three_clusters(three_clusters):
    assert three_clusters.n_clusters == 3
    assert three_clusters.info["clustering"]["method"] == "dbscan"
    assert three_clusters.info["rows"] == "given rows"


def test_identical_inputs_cover_one_cluster_one_leaf_at_distance_zero(three_clusters):
    report = seed_diversity(np.repeat(PROTOTYPES[1:2], 30, axis=0), three_clusters)
    assert report.clusters_covered == 1
    assert report.cluster_entropy == 0.0
    assert report.mean_pairwise_distance == 0.0
    assert report.leaves_covered == 1
    assert report.n_inputs == report.n_explained == report.n_distance_rows == 30


def test_inputs_spread_over_k_clusters_cover_k_with_entropy_log_k(three_clusters):
    for k in (2, 3):
        report = seed_diversity(np.repeat(PROTOTYPES[:k], 7, axis=0), three_clusters)
        assert report.clusters_covered == k
        assert math.isclose(report.cluster_entropy, math.log(k), rel_tol=1e-12)


def test_uneven_shares_give_the_shannon_entropy_of_the_shares(three_clusters):
    inputs = np.concatenate([np.repeat(PROTOTYPES[:1], 3, axis=0), PROTOTYPES[1:2]])  # shares 3/4, 1/4
    report = seed_diversity(inputs, three_clusters)
    assert report.clusters_covered == 2
    assert math.isclose(report.cluster_entropy, -(0.75 * math.log(0.75) + 0.25 * math.log(0.25)), rel_tol=1e-12)


def test_gower_distance_by_hand(data):
    dom = data.domain  # sex (protected, categorical), race (categorical 0-2), a, b (0-9), c (0-4)
    two = np.array([[0, 0, 0, 0, 0], [1, 1, 9, 0, 2]])
    # race differs (1), a spans its range (1), b equal (0), c half its range (0.5); sex is protected: left out
    assert math.isclose(mean_gower_distance(two, dom), (1 + 1 + 0 + 0.5) / 4)
    third = np.array([[0, 1, 9, 9, 4]])  # to row 0: (1 + 1 + 1 + 1) / 4; to row 1: (0 + 0 + 1 + 0.5) / 4
    expected = ((1 + 1 + 0 + 0.5) / 4 + 1.0 + 1.5 / 4) / 3
    assert math.isclose(mean_gower_distance(np.concatenate([two, third]), dom), expected)
    only_protected_differs = np.array([[0, 2, 3, 4, 1], [1, 2, 3, 4, 1]])
    assert mean_gower_distance(only_protected_differs, dom) == 0.0
    assert mean_gower_distance(two[:1], dom) is None


def test_every_data_row_together_covers_every_leaf_of_the_surrogate(data):
    tree_model = DecisionTreeClassifier(random_state=0).fit(data.X, data.y)
    reference = diversity_reference(tree_model, data, n_reference=100, random_state=0)
    report = seed_diversity(data.X, reference, max_explained=50)
    assert report.n_leaves == reference.tree.get_n_leaves() > 1
    assert report.leaves_covered == report.n_leaves and report.leaf_share == 1.0
    assert reference.info["surrogate_fidelity"] > 0.9  # the toy rule is a + b + 3 sex > 10.5: a small tree fits


def test_caps_sample_the_explained_and_distance_rows(data, three_clusters):
    report = seed_diversity(data.X, three_clusters, max_explained=25, max_distance_rows=40)
    assert (report.n_inputs, report.n_explained, report.max_explained, report.n_distance_rows) == (400, 25, 25, 40)


def test_same_random_state_gives_the_same_report_with_a_sampling_explainer(data):
    model = as_model(biased_module(), name="biased-toy")
    reference = diversity_reference(model, data, n_reference=200, random_state=3, explainer="expected_gradients")
    again = diversity_reference(model, data, n_reference=200, random_state=3, explainer="expected_gradients")
    assert np.array_equal(reference.cluster_values, again.cluster_values)

    def measured(ref, rs):
        d = seed_diversity(data.X, ref, max_explained=60, max_distance_rows=80, random_state=rs).to_dict()
        d.pop("seconds")
        return d

    assert measured(reference, 5) == measured(again, 5)
    assert measured(reference, 5)["explainer"] == "expected_gradients"
    assert measured(reference, 5)["n_queries"] > 0


# shap.DeepExplainer warns that it has no rule for the toy's own module class (LinearToy), before chiralfair
# finds that the attributions do not add up and explains by integrated gradients instead.
@pytest.mark.filterwarnings("ignore:unrecognized nn.Module. LinearToy:UserWarning:shap")
def test_a_torch_model_is_explained_as_iandd_does_the_same_under_every_random_state(data):
    model = as_model(biased_module(), name="biased-toy")
    rows = data.X[:300]
    a = diversity_reference(model, data, rows=rows, random_state=1)
    b = diversity_reference(model, data, rows=rows, random_state=2)
    # DeepLIFT, or integrated gradients where DeepExplainer does not hook the module's operations (this toy).
    assert a.explainer in ("deep", "integrated_gradients")
    assert a.info["background_size"] == {"deep": 50, "integrated_gradients": 20}[a.explainer]
    # The rows are shuffled by the random state; their explanations are not: same rows, same values.
    order_a, order_b = np.lexsort(a.cluster_values.T), np.lexsort(b.cluster_values.T)
    assert np.array_equal(a.cluster_values[order_a], b.cluster_values[order_b])


def test_report_json_round_trip_and_search_result_carries_it(three_clusters, data):
    report = seed_diversity(data.X[:50], three_clusters, random_state=1)
    assert DiversityReport.from_json(report.to_json()) == report
    assert json.loads(report.to_json())["leaf_share"] == report.leaf_share
    empty = np.zeros((0, 5), dtype=np.int64)
    result = SearchResult("aequitas", "iandd", 0, 0, 0, 0, 0, 0, 0, 0.0, empty, empty, np.zeros(0, np.int64),
                          np.zeros(0, np.int64), np.zeros(0, dtype=str))
    assert result.diversity is None and "diversity" not in result.summary()
    carried = result.with_diversity(report.to_dict())
    back = SearchResult.from_json(carried.to_json())
    assert DiversityReport.from_dict(back.diversity) == report
    assert back.summary()["diversity"] == report.to_dict()
    old = json.loads(result.to_json())
    del old["diversity"]  # a result.json written before the field existed
    assert SearchResult.from_json(json.dumps(old)).diversity is None


def test_empty_set_and_bad_input(three_clusters):
    report = seed_diversity(np.zeros((0, 5), dtype=np.int64), three_clusters)
    assert (report.clusters_covered, report.leaves_covered, report.mean_pairwise_distance) == (0, 0, None)
    with pytest.raises(ChiralfairError, match="inputs"):
        seed_diversity(np.zeros((3, 4), dtype=np.int64), three_clusters)
    with pytest.raises(ChiralfairError, match="'a'"):
        seed_diversity(np.array([[0, 0, 10, 0, 0]]), three_clusters)
    with pytest.raises(ConfigError, match="max_explained"):
        seed_diversity(PROTOTYPES, three_clusters, max_explained=0)


# shap's permutation explainer compiles its numba code on first use (about 20 s).
@pytest.mark.slow
def test_a_model_explained_by_permutation_gets_the_lower_caps(data):
    def label_only(X):  # a plain callable: no gradient, no estimator, so shap's permutation explainer
        X = np.asarray(X)
        return ((X[:, 2] + X[:, 3] + 3 * X[:, 0]) > 10.5).astype(np.int64)

    model = as_model(label_only, name="rule", classes=[0, 1])
    reference = diversity_reference(model, data, n_reference=300, n_reference_black_box=30, random_state=0)
    assert reference.info["explainer"] == "permutation" and reference.info["n_reference_rows"] == 30
    report = seed_diversity(data.X[:50], reference, max_explained=40, max_explained_black_box=12)
    assert (report.n_explained, report.max_explained) == (12, 12)
