"""I and I&D seed selection: chiral model, initial IDIs, SHAP explainers, DBSCAN repair, edge cases."""

import logging
import sys

import numpy as np
import pytest
import torch
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.svm import SVC
from sklearn.tree import DecisionTreeClassifier
from toys import LinearToy, biased_module, toy_dataset

from chiralfair.datasets.base import Dataset
from chiralfair.domain import Domain
from chiralfair.exceptions import ConfigError, ModelCapabilityError
from chiralfair.models import as_model
from chiralfair.oracle import DiscriminationCheck
from chiralfair.seeds import make_seed_strategy
from chiralfair.seeds.chiral import mutate_protected, train_chiral_model
from chiralfair.seeds.diversity import cluster_explanations, kdistance_knee
from chiralfair.seeds.explainers import choose_explainer, expected_gradients, explain


@pytest.fixture(scope="module")
def data():
    return toy_dataset(n=600)


@pytest.fixture(scope="module")
def tree(data):
    return DecisionTreeClassifier(random_state=0).fit(data.X, data.y)


# ------------------------------------------------------------------------------------------ chiral data
def test_mutation_flips_binary_and_changes_every_protected_attribute():
    data = toy_dataset(n=500, protected=("sex", "race"))
    rng = np.random.default_rng(0)
    Xc = mutate_protected(data.X, data.domain, rng)
    assert np.array_equal(Xc[:, 0], 1 - data.X[:, 0])
    assert (Xc[:, 1] != data.X[:, 1]).all()
    assert set(np.unique(Xc[:, 1])) <= {0, 1, 2}
    assert np.array_equal(Xc[:, 2:], data.X[:, 2:])


def test_mutation_of_a_nine_valued_attribute_is_uniform_over_the_other_values():
    values = np.arange(1, 10)
    X = np.column_stack([np.full(9000, 5), np.zeros(9000, dtype=int)])
    dom = Domain.from_data(np.column_stack([np.tile(values, 2), np.zeros(18, dtype=int)]), ["age", "z"],
                           protected=["age"])
    Xc = mutate_protected(X, dom, np.random.default_rng(1))
    assert (Xc[:, 0] != 5).all()
    counts = np.bincount(Xc[:, 0], minlength=10)[values]
    assert counts[4] == 0
    others = np.delete(counts, 4)
    assert others.min() > 9000 / 8 * 0.85 and others.max() < 9000 / 8 * 1.15


# ------------------------------------------------------------------------------------------ chiral model
def test_chiral_model_from_an_sklearn_estimator_is_a_clone_trained_on_mutated_training_split(data, tree):
    model = as_model(tree)
    chiral, info = train_chiral_model(model, data, np.random.default_rng(0), split_random_state=3)
    assert info["how"] == "sklearn-clone" and info["split_random_state"] == 3
    assert info["n_train"] == len(data.split(3)[0])
    assert isinstance(chiral.estimator, DecisionTreeClassifier) and chiral.estimator is not tree
    # A tree trained on flipped sex learns the opposite dependence: the models disagree where sex matters.
    assert (chiral.predict(data.X) != model.predict(data.X)).mean() > 0.1


def test_chiral_model_from_a_model_spec_uses_spec_fit(data, monkeypatch):
    calls = []

    class Spec:
        def fit(self, X, y, *, random_state):
            calls.append((X.copy(), random_state))
            return as_model(DecisionTreeClassifier(random_state=random_state).fit(X, y))

    model = as_model(DecisionTreeClassifier(random_state=0).fit(data.X, data.y))
    model.spec = Spec()
    monkeypatch.setitem(sys.modules, "chiralfair.models.training", None)  # the cache is optional
    chiral, info = train_chiral_model(model, data, np.random.default_rng(0))
    assert info["how"] == "spec" and len(calls) == 1
    X_fit, seed = calls[0]
    train_index = data.split(info["split_random_state"])[0]
    assert seed == info["train_random_state"]
    assert np.array_equal(X_fit[:, 0], 1 - data.X[train_index, 0])


def test_torch_module_without_trainer_raises_a_helpful_error(data):
    with pytest.raises(ModelCapabilityError, match="chiral_trainer"):
        make_seed_strategy("i").select(biased_module(), data, 10, random_state=0)


# ------------------------------------------------------------------------------------------ strategy i
def test_i_reports_candidates_and_unique_initial_idis(data, tree):
    report = make_seed_strategy("i").select(tree, data, 50, random_state=0)
    assert report.n_candidates >= report.n_initial_idis > 50
    assert report.is_idi.all()
    keys = data.domain.keys(report.seeds)
    assert len(np.unique(keys)) == len(keys)
    assert report.meta["chiral_model"]["how"] == "sklearn-clone"
    assert {"chiral_training", "prediction_and_check", "total"} <= set(report.seconds)


def test_chiral_that_never_disagrees_fills_with_random_rows_and_says_so(data, tree):
    report = make_seed_strategy("i", chiral_model=tree).select(tree, data, 30, random_state=0)
    assert report.n_candidates == 0 and report.n_initial_idis == 0
    assert any("never disagrees" in note for note in report.notes)
    assert len(report.seeds) == 30
    assert report.meta["chiral_model"]["how"] == "given"
    recheck = DiscriminationCheck(as_model(tree), data.domain).is_idi(report.seeds)
    np.testing.assert_array_equal(report.is_idi, recheck)
    # random data rows, not the first rows in data order
    assert not np.array_equal(report.seeds, data.X[:30])


def test_fewer_initial_idis_than_seeds_puts_idis_first_then_random_rows(data, tree):
    report = make_seed_strategy("i").select(tree, data, 500, random_state=0)
    k = report.n_initial_idis
    assert 0 < k < 500
    assert report.is_idi[:k].all()
    assert any("filled with" in note for note in report.notes)
    fill_keys = data.domain.keys(report.seeds[k:])
    assert not np.isin(fill_keys, data.domain.keys(report.seeds[:k])).any()


def test_more_seeds_than_data_rows(data, tree):
    report = make_seed_strategy("iandd").select(tree, data, 800, random_state=0)
    assert report.seeds.shape == (800, data.domain.n_features)
    assert any("exceeds" in note for note in report.notes)


# ------------------------------------------------------------------------------------------ strategy iandd
def test_iandd_beats_random_on_a_biased_model(data, tree):
    iandd = make_seed_strategy("iandd").select(tree, data, 100, random_state=0)
    rand = make_seed_strategy("random").select(tree, data, 100, random_state=0)
    assert iandd.initialization_rate > rand.initialization_rate + 0.3
    c = iandd.clustering
    assert c["explainer"] == "tree"
    assert {"method", "eps", "min_samples", "n_clusters", "noise_share", "repaired"} <= set(c)
    assert {"shap", "clustering"} <= set(iandd.seconds)


def test_iandd_order_is_round_robin_over_clusters_with_noise_as_a_bucket(data, tree, monkeypatch):
    labels = np.array([0] * 6 + [1] * 3 + [-1] * 3)
    monkeypatch.setattr("chiralfair.seeds.iandd.cluster_explanations",
                        lambda values, **kw: (labels, {"method": "stub"}))
    strategy = make_seed_strategy("iandd", max_explained=12)
    initial = data.X[:15]
    seconds = {}
    order, clustering = strategy._order(as_model(tree), data, initial, np.random.default_rng(0), seconds)
    assert order.tolist() == [9, 0, 6, 10, 1, 7, 11, 2, 8, 3, 4, 5, 12, 13, 14]
    assert clustering["n_explained"] == 12 and clustering["n_not_explained"] == 3
    assert clustering["explainer"] == "tree" and {"shap", "clustering"} <= set(seconds)


def test_linear_model_log_odds_shap_is_repaired_and_logged(data, caplog):
    lr = LogisticRegression(max_iter=1000).fit(data.X, data.y)
    with caplog.at_level(logging.INFO, logger="chiralfair.seeds.diversity"):
        report = make_seed_strategy("iandd").select(lr, data, 100, random_state=0)
    c = report.clustering
    assert c["explainer"] == "linear"
    assert c["degenerate"] is not None and c["repaired"] and c["method"] != "dbscan"
    assert c["n_clusters"] >= 2
    assert "degenerate" in caplog.text


def test_repair_can_be_switched_off(data):
    lr = LogisticRegression(max_iter=1000).fit(data.X, data.y)
    report = make_seed_strategy("iandd", repair=False).select(lr, data, 100, random_state=0)
    assert report.clustering["method"] == "dbscan" and not report.clustering["repaired"]
    assert report.clustering["degenerate"] is not None


def test_nine_valued_protected_attribute():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(1, 10, 800), rng.integers(0, 10, 800), rng.integers(0, 10, 800)])
    y = (X[:, 1] + X[:, 2] + 3 * (X[:, 0] >= 5) > 10).astype(np.int64)
    data = Dataset("nine", X, y, Domain.from_data(X, ["age", "a", "b"], protected=["age"]))
    assert len(data.domain.protected_values[0]) == 9
    tree = DecisionTreeClassifier(random_state=0).fit(X, y)
    # 100 IDI keys exist in all (a, b), so ask for few seeds
    report = make_seed_strategy("iandd").select(tree, data, 20, random_state=0)
    data.domain.validate(report.seeds)
    assert report.n_initial_idis >= 20 and report.is_idi.all()
    recheck = DiscriminationCheck(as_model(tree), data.domain).is_idi(report.seeds)
    np.testing.assert_array_equal(report.is_idi, recheck)


def test_several_protected_attributes():
    data = toy_dataset(n=600, protected=("race", "sex"))
    forest = RandomForestClassifier(n_estimators=10, random_state=0).fit(data.X, data.y)
    report = make_seed_strategy("iandd").select(forest, data, 60, random_state=0)
    assert report.meta["protected"] == ["race", "sex"]
    assert report.clustering["explainer"] == "tree"
    assert report.initialization_rate > 0.5


class _TorchLogistic(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.linear = torch.nn.Linear(d, 1)

    def forward(self, x):
        return torch.sigmoid(self.linear(x))


def _torch_trainer(X, y, random_state):
    assert isinstance(random_state, int)  # sklearn-friendly: the chiral trainer gets an int seed
    torch.manual_seed(random_state)
    net = _TorchLogistic(X.shape[1])
    opt = torch.optim.Adam(net.parameters(), lr=0.1)
    Xt, yt = torch.as_tensor(X, dtype=torch.float32), torch.as_tensor(y, dtype=torch.float32)[:, None]
    for _ in range(200):
        opt.zero_grad()
        torch.nn.functional.binary_cross_entropy(net(Xt), yt).backward()
        opt.step()
    return net.eval()


# shap.DeepExplainer warns that it has no rule for the toy's own module class (LinearToy), before chiralfair
# finds that the attributions do not add up and explains by integrated gradients instead.
@pytest.mark.filterwarnings("ignore:unrecognized nn.Module. LinearToy:UserWarning:shap")
def test_torch_model_with_chiral_trainer(data):
    model = as_model(biased_module(), name="biased-toy")
    strategy = make_seed_strategy("iandd", chiral_trainer=_torch_trainer)
    report = strategy.select(model, data, 60, random_state=0)
    rand = make_seed_strategy("random").select(model, data, 60, random_state=0)
    # DeepLIFT does not add up through the functional torch.sigmoid of this module: integrated gradients instead
    assert report.clustering["explainer"] == "integrated_gradients"
    assert report.clustering["explainer_params"] == {"background": "fixed", "background_size": 20, "n_steps": 8}
    assert report.meta["chiral_model"]["how"] == "chiral_trainer"
    assert report.n_initial_idis > 0
    assert report.initialization_rate > rand.initialization_rate
    again = make_seed_strategy("iandd", chiral_trainer=_torch_trainer).select(model, data, 60, random_state=0)
    assert np.array_equal(report.seeds, again.seeds)


def test_bad_parameters_are_named():
    with pytest.raises(ConfigError, match="explainer"):
        make_seed_strategy("iandd", explainer="kernel")
    with pytest.raises(ConfigError, match="eps"):
        make_seed_strategy("iandd", eps=0)


# ------------------------------------------------------------------------------------------ clustering
def test_identical_shap_rows_are_one_cluster_and_not_repaired(caplog):
    with caplog.at_level(logging.WARNING):
        labels, info = cluster_explanations(np.ones((50, 4)))
    assert info["n_clusters"] == 1 and not info["repaired"]
    assert "identical" in info["reason"]
    assert (labels == labels[0]).all()


def test_far_apart_shap_rows_are_repaired_by_the_k_distance_knee(caplog):
    rng = np.random.default_rng(0)
    centers = np.array([[0.0, 0.0], [50.0, 0.0], [0.0, 50.0]])
    values = np.concatenate([c + rng.normal(size=(40, 2)) for c in centers])
    with caplog.at_level(logging.INFO, logger="chiralfair.seeds.diversity"):
        labels, info = cluster_explanations(values)
    assert info["degenerate"].endswith("noise")
    assert info["repaired"] and info["method"] in ("dbscan-kdist", "hdbscan")
    assert info["n_clusters"] == 3 and info["noise_share"] < 0.2
    assert "degenerate" in caplog.text
    assert len(np.unique(labels[:40][labels[:40] >= 0])) == 1


def test_k_distance_knee_separates_within_and_between_cluster_distances():
    rng = np.random.default_rng(1)
    values = np.concatenate([c + rng.normal(scale=0.5, size=(50, 2)) for c in ([0, 0], [30, 30])])
    eps = kdistance_knee(values, 10)
    assert 0.1 < eps < 10


def test_few_explained_idis_are_not_clustered():
    labels, info = cluster_explanations(np.arange(10.0)[:, None])
    assert info["method"] == "none" and (labels == 0).all()


# ------------------------------------------------------------------------------------------ explainers
def test_explainer_choice_by_model_type(data, tree):
    assert choose_explainer(as_model(tree)) == "tree"
    assert choose_explainer(as_model(LogisticRegression().fit(data.X, data.y))) == "linear"
    assert choose_explainer(as_model(biased_module())) == "expected_gradients"
    assert choose_explainer(as_model(SVC().fit(data.X, data.y))) == "permutation"
    assert choose_explainer(as_model(lambda X: (X[:, 2] > 4).astype(int))) == "permutation"


def test_scaled_linear_pipeline_uses_linear_shap_on_scaled_inputs(data):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(data.X, data.y)
    model = as_model(pipe)
    assert choose_explainer(model) == "linear"
    X = data.X[:20].astype(float)
    values, name = explain(model, X, data.X[:200].astype(float), np.random.default_rng(0))
    assert name == "linear"
    margin = pipe.decision_function(X)
    # linear SHAP rows add up to the log-odds minus its background mean: row differences equal margin differences
    np.testing.assert_allclose(values.sum(1) - values.sum(1)[0], margin - margin[0], atol=1e-6)


def test_deep_forests_get_approximate_tree_shap(data, monkeypatch):
    from sklearn.ensemble import RandomForestClassifier

    from chiralfair.seeds import explainers

    forest = RandomForestClassifier(n_estimators=5, random_state=0).fit(data.X, data.y)
    X = data.X[:30].astype(float)
    exact, name = explain(as_model(forest), X, data.X[:50], np.random.default_rng(0))
    assert name == "tree"
    monkeypatch.setattr(explainers, "EXACT_TREE_SHAP_BUDGET", explainers.tree_shap_cost(forest, len(X)) - 1)
    approx, name = explain(as_model(forest), X, data.X[:50], np.random.default_rng(0))
    assert name == "tree-approximate"
    p = forest.predict_proba(X)[:, 1]
    # Saabas attributions also add up to f(x) - E f
    np.testing.assert_allclose(approx.sum(1) - approx.sum(1)[0], p - p[0], atol=1e-6)
    assert not np.allclose(approx, exact)


def test_tree_shap_explains_the_positive_class(data, tree):
    model = as_model(tree)
    X = data.X[:20].astype(float)
    values, name = explain(model, X, data.X[:50], np.random.default_rng(0))
    p = tree.predict_proba(X)[:, 1]
    # SHAP rows add up to f(x) - E f: differences between rows equal differences of P(y=1)
    np.testing.assert_allclose(values.sum(1) - values.sum(1)[0], p - p[0], atol=1e-6)


def test_expected_gradients_is_exact_for_a_model_linear_in_probability():
    module = LinearToy([0.01, 0.0, 0.02, 0.03, 0.0], 0.2, scale=1.0)
    model = as_model(_Linear(module))
    X = np.array([[1.0, 2, 3, 4, 0], [0, 1, 9, 2, 4]])
    background = np.array([[0.0, 0, 1, 1, 1]])
    values = expected_gradients(model, X, background, np.random.default_rng(0), n_samples=5)
    np.testing.assert_allclose(values, (X - background) * np.array([0.01, 0, 0.02, 0.03, 0]), atol=1e-6)


class _Linear(torch.nn.Module):
    """P(y=1) = x @ w + bias (no sigmoid), so its gradient is constant."""

    def __init__(self, toy):
        super().__init__()
        self.toy = toy

    def forward(self, x):
        return (x @ self.toy.w + self.toy.bias)[:, None]


@pytest.mark.slow  # shap's permutation explainer compiles numba code on first use: 10-25 s
def test_permutation_explainer_for_a_black_box(data):
    def black_box(X):
        return (X[:, 2] + X[:, 3] + 3 * X[:, 0] > 10.5).astype(int)

    values, name = explain(as_model(black_box), data.X[:8], data.X[:30], np.random.default_rng(0))
    assert name == "permutation" and values.shape == (8, data.domain.n_features)
    assert np.abs(values[:, [1, 4]]).max() == 0  # features the black box ignores get no credit


def test_structureless_explanations_fall_back_to_kmeans_by_silhouette(caplog):
    # A single Gaussian blob in 5-D: DBSCAN and HDBSCAN see no density structure (all noise or one cluster).
    values = np.random.default_rng(0).normal(size=(400, 5))
    with caplog.at_level(logging.INFO, logger="chiralfair.seeds.diversity"):
        labels, info = cluster_explanations(values)
    assert info["method"] == "kmeans-silhouette" and info["repaired"]
    assert info["n_clusters"] >= 2 and len(np.unique(labels)) == info["n_clusters"]
    assert "KMeans" in caplog.text


def test_kmeans_by_silhouette_finds_separated_groups():
    from chiralfair.seeds.diversity import kmeans_by_silhouette

    rng = np.random.default_rng(1)
    centers = np.array([[0, 0], [10, 0], [0, 10]])
    values = np.concatenate([c + rng.normal(0, 0.1, size=(50, 2)) for c in centers])
    labels, k = kmeans_by_silhouette(values)
    assert k == 3
    assert all(len(np.unique(labels[i * 50:(i + 1) * 50])) == 1 for i in range(3))


@pytest.mark.slow  # shap's permutation explainer compiles numba code on first use: 10-25 s
def test_black_box_explanations_are_capped(data):
    from sklearn.svm import SVC

    from chiralfair.seeds.iandd import IandDSeeds

    svc = SVC(random_state=0).fit(data.X, data.y)
    report = IandDSeeds(max_explained_black_box=15).select(as_model(svc), data, 40, random_state=0)
    c = report.clustering
    assert c["explainer"] == "permutation"
    assert c["n_explained"] == min(15, report.n_initial_idis)
    assert c["n_explained"] + c["n_not_explained"] == report.n_initial_idis


def test_a_training_split_with_one_label_is_refused_before_training():
    from dataclasses import replace

    from sklearn.linear_model import LogisticRegression
    from toys import toy_dataset

    from chiralfair.exceptions import DatasetError

    data = toy_dataset(60)
    model = LogisticRegression().fit(data.X, data.y)
    one_label = replace(data, y=np.zeros_like(data.y))
    with pytest.raises(DatasetError, match="holds only label 0"):
        make_seed_strategy("i").select(model, one_label, 5, random_state=0)
