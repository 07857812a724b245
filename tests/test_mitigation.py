"""Mitigation methods side by side: leakage, each method on a planted bias, the guardrail, undefined group
metrics, small classes, and the scikit-learn conventions of the meta-estimators."""

from dataclasses import replace

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score
from toys import toy_dataset

from chiralfair.exceptions import ConfigError, ModelCapabilityError
from chiralfair.mitigation import METHODS, make_method, retrain
from chiralfair.mitigation.dnn import PaperDNNClassifier
from chiralfair.mitigation.evaluation import group_metrics
from chiralfair.mitigation.guardrail import judge
from chiralfair.mitigation.labelling import fit_ensemble
from chiralfair.mitigation.leakage import HeldOutProjections, LeakError
from chiralfair.mitigation.names import BUILTIN_METHODS
from chiralfair.models import ModelSpec, as_model
from chiralfair.models.dnn import train_dnn
from chiralfair.oracle import DiscriminationCheck
from chiralfair.pipeline import SearchPlan, inputs_from_objects
from chiralfair.pipeline import search_training_rows as pipeline_search


def search_training_rows(model, data, train, *, seeds="cluster", generator="aequitas", max_global=100,
                         max_local=100, random_state=0):
    """The pipeline's leak-free search on a model whose training rows are ``train`` (the others held out)."""
    inputs = inputs_from_objects(model, data, test=np.setdiff1d(np.arange(data.n_samples), train))
    plan = SearchPlan(seeds=seeds if isinstance(seeds, str) else "cluster", generator=generator,
                      max_global=max_global, max_local=max_local, random_state=random_state)
    return pipeline_search(inputs, plan, seeds=None if isinstance(seeds, str) else seeds)


def biased_history(n=3000, seed=0):
    """Fair labels (a + b > 9.5) on the test rows; on the training rows history favoured sex=1 near the threshold.

    A model trained on the training rows uses sex (a planted dependence); the test rows' labels do not, so removing
    the dependence costs no held-out F1.
    """
    data = toy_dataset(n=n, protected=("sex",), biased=False, seed=seed)
    train, _ = data.split(0)
    y = data.y.copy()
    near = (data.X[:, 2] + data.X[:, 3] >= 7) & (data.X[:, 2] + data.X[:, 3] <= 9)
    favoured = train[(data.X[train, 0] == 1) & near[train]]
    y[favoured] = 1
    return replace(data, y=y), train


@pytest.fixture(scope="module")
def history():
    data, train = biased_history()
    model = as_model(LogisticRegression().fit(data.X[train], data.y[train]), name="biased-lr")
    found, info = search_training_rows(model, data, train, generator="aequitas", seeds="cluster", max_global=50,
                                       max_local=50, random_state=0)
    assert found.n_idis > 50
    return data, train, model, found, info


def test_registry_holds_the_builtin_methods():
    make_method("unaware")  # the first use registers all
    builtin = {n for n in METHODS if METHODS[n].__module__.startswith("chiralfair.mitigation.")}
    assert builtin == set(BUILTIN_METHODS)  # a page of the docs may have registered its own beside them
    with pytest.raises(ConfigError, match="unknown mitigation method 'fairer'; valid: auto, .*counterfactual"):
        make_method("fairer")
    with pytest.raises(ConfigError, match="unknown mitigation method 'fairer'"):
        retrain(None, None, method="fairer")


# ------------------------------------------------------------------------------------------------ leakage
def test_a_planted_test_row_among_the_seeds_is_excluded(history):
    data, train, model, _, _ = history
    test = np.setdiff1d(np.arange(data.n_samples), train)
    projections = HeldOutProjections.of(data.domain, data.X[train], data.X[test])
    planted = test[projections.hits(data.domain, data.X[test])][:3]
    assert len(planted) == 3  # test rows whose projection no training row has
    seeds = np.vstack([data.X[planted], data.X[train[:20]]])
    found, info = search_training_rows(model, data, train, seeds=seeds, max_global=30, max_local=20)
    assert info["n_seeds_excluded"] == 3 and info["n_seeds"] == 20
    assert not projections.hits(data.domain, found.idis).any()


def test_retraining_excludes_idis_with_a_test_projection_and_counts_zero_added(history):
    data, train, model, found, _ = history
    test = np.setdiff1d(np.arange(data.n_samples), train)
    projections = HeldOutProjections.of(data.domain, data.X[train], data.X[test])
    leaked = data.X[test][projections.hits(data.domain, data.X[test])][:5]
    counterparts = leaked.copy()
    counterparts[:, 0] = 1 - counterparts[:, 0]
    idis = (np.vstack([found.idis, leaked]), np.vstack([found.counterparts, counterparts]))
    result = retrain(model, data, idis, method=["paper", "counterfactual"], train_index=train, random_state=0,
                     method_params={"counterfactual": {"with_idis": True}})
    assert result.leakage["n_idis_excluded"] == 5 and result.n_idis == found.n_idis
    assert result.leakage["n_test_projections_added"] == 0
    assert all(r["n_test_projections_added"] == 0 for r in result.rows)
    assert result.leakage["n_test_rows_seen"] + len(projections.keys) >= 1
    with pytest.raises(LeakError, match="5 rows added"):
        projections.verify(data.domain, leaked, "a test")


def test_the_seed_strategy_only_ever_sees_training_rows(history):
    data, train, model, _, _ = history
    test = np.setdiff1d(np.arange(data.n_samples), train)
    projections = HeldOutProjections.of(data.domain, data.X[train], data.X[test])
    _, info = search_training_rows(model, data, train, seeds="rows", max_global=200, max_local=0)
    assert info["n_seeds_excluded"] == 0  # rows of the training split only, so nothing to exclude
    assert len(projections.keys) > 0


# ------------------------------------------------------------------------------------------------ methods
def test_counterfactual_and_unaware_remove_a_planted_dependence_and_pass_the_guardrail(history):
    data, train, model, found, _ = history
    result = retrain(model, data, found, method=["paper", "counterfactual", "unaware"], train_index=train,
                     random_state=0)
    before, paper, counterfactual, unaware = result.rows
    assert before["test_idi_rate"] > 0.1
    assert counterfactual["test_idi_upper"] < before["test_idi_lower"]
    assert counterfactual["improved"] and counterfactual["guardrail"] == ""
    assert unaware["test_idi_rate"] == 0 and unaware["domain_idi_rate"] == 0
    assert unaware["n_rows_added"] == 0 and paper["n_rows_added"] == 2 * found.n_idis
    combinations = np.prod([len(values) for values in data.domain.protected_value_labels()])
    assert counterfactual["n_rows_added"] == len(train) * (combinations - 1)  # each person's counterparts
    assert result.how == {"paper": "sklearn-clone", "counterfactual": "CounterfactualAugmentation",
                          "unaware": "Unawareness"}
    assert result.models[2].name == "unaware-biased-lr"
    # kept: the model's own kind (an LR on the codes) behind the blinding, predicting the data's labels
    kept = result.model_of("unaware")
    assert [name for name, _ in kept.steps] == ["blind", "model"] and isinstance(kept["model"], LogisticRegression)
    assert (kept.predict(data.X) == result.models[2].predict(data.X)).all()


def test_consistency_lowers_the_held_out_idi_rate_of_a_dnn_and_chooses_lambda_on_validation(history):
    data, train, _, _, _ = history
    dnn = ModelSpec("dnn", {"epochs": 8}).fit(data.X[train], data.y[train], random_state=0)
    result = retrain(dnn, data, method="consistency", train_index=train, random_state=0, spread_seeds=0,
                     method_params={"consistency": {"lams": (1.0,)}})
    before, after = result.rows
    assert after["test_idi_upper"] < before["test_idi_lower"]
    assert "validation rows" in after["choice"] and after["choice"].startswith("λ = ")
    assert result.n_idis == 0 and result.ensemble is None


def test_a_method_that_cannot_lower_the_rate_or_costs_f1_triggers_the_guardrail(history):
    data, train, _, found, _ = history
    blind = make_method("unaware", estimator=LogisticRegression(), domain=data.domain).fit(data.X[train],
                                                                                           data.y[train])
    fair = as_model(blind, name="fair")
    result = retrain(fair, data, found, method="counterfactual", train_index=train, random_state=0)
    assert result.rows[0]["test_idi_rate"] == 0
    assert not result.improved and not result.rows[1]["improved"]
    assert "the held-out IDI rate is not lower" in result.rows[1]["guardrail"]
    text = result.to_markdown()
    assert text.index("**Not an improvement**") < text.index("| stage")  # said first
    biased = toy_dataset(n=2000, protected=("sex",))  # labels depend on sex: removing it costs F1
    tr, _ = biased.split(0)
    lr = as_model(LogisticRegression().fit(biased.X[tr], biased.y[tr]))
    costly = retrain(lr, biased, method="unaware", train_index=tr, random_state=0)
    assert not costly.improved and "F1 on the test rows" in costly.rows[1]["guardrail"]
    assert "more than the budget of 0.01" in costly.verdict_lines()[1]


def test_judge_names_a_higher_rate_and_an_f1_cost():
    before = {"test_idi_rate": 0.05, "test_idi_lower": 0.04, "test_idi_upper": 0.06, "f1": 0.7}
    worse = {"test_idi_rate": 0.10, "test_idi_lower": 0.08, "test_idi_upper": 0.12, "f1": 0.65}
    improved, words = judge(before, worse, 0.01)
    assert not improved and "is higher" in words and "costs 0.050 F1" in words
    better = {"test_idi_rate": 0.01, "test_idi_lower": 0.005, "test_idi_upper": 0.02, "f1": 0.695}
    assert judge(before, better, 0.01) == (True, "")
    assert not judge(before, better, 0.001)[0]


def test_an_equalized_odds_difference_with_a_group_without_positives_is_undefined():
    y_true = np.array([1, 0, 1, 0, 0, 0])
    y_pred = np.array([1, 0, 0, 1, 0, 1])
    groups = np.array(["A", "A", "A", "B", "B", "B"])  # group B has no positive row: its TPR is 0/0
    out = group_metrics(y_true, y_pred, groups)
    assert out["equalized_odds_difference"] is None
    assert out["equalized_odds_undefined"] == "undefined: group 'B' has no positive test row"
    assert out["demographic_parity_difference"] == pytest.approx(1 / 3)
    defined = group_metrics(np.array([1, 0, 1, 0]), np.array([1, 0, 0, 0]), np.array(["A", "A", "B", "B"]))
    assert defined["equalized_odds_difference"] == pytest.approx(1.0) and defined["equalized_odds_undefined"] is None


def test_the_vote_trains_with_two_positives_in_400_rows_and_refuses_one_label():
    data = toy_dataset(n=400, protected=("sex",), biased=False)
    y = np.zeros(data.n_samples, dtype=np.int64)
    y[[3, 7]] = 1
    rare = replace(data, y=y)
    voter, info = fit_ensemble(rare, np.arange(300), np.arange(300, 400), random_state=0)
    assert "without early stopping" in info["notes"][0]
    with pytest.raises(ConfigError, match="only label 0"):
        fit_ensemble(replace(data, y=np.zeros_like(y)), np.arange(300), np.arange(300, 400))


def test_consistency_refuses_a_model_that_is_not_the_zoo_dnn(history):
    data, train, model, _, _ = history
    with pytest.raises(ModelCapabilityError, match="not the zoo DNN"):
        retrain(model, data, method="consistency", train_index=train)
    with pytest.raises(ConfigError, match="add IDI pairs: pass idis="):
        retrain(model, data, method="paper", train_index=train)
    with pytest.raises(ConfigError, match="method_params names method"):
        retrain(model, data, method="unaware", train_index=train, method_params={"consistency": {}})


def test_same_random_state_same_figures_for_every_method(history):
    data, train, model, found, _ = history
    kwargs = {"method": ["paper", "counterfactual", "unaware"], "train_index": train, "random_state": 3,
              "share": [1.0, 0.5]}
    first, second = retrain(model, data, found, **kwargs), retrain(model, data, found, **kwargs)
    assert first.same_figures(second)
    back = type(first).from_json(first.to_json())
    assert back.same_figures(first) and back.improved == first.improved and back.methods == first.methods


# ------------------------------------------------------------------------------------------------ sklearn
@pytest.mark.parametrize("name", ["counterfactual", "unaware", "paper"])
def test_methods_are_cloneable_estimators_that_cross_validate(history, name):
    data, _, _, _, _ = history
    extra = {"max_global": 10, "max_local": 5, "random_state": 0} if name == "paper" else {}
    method = make_method(name, estimator=LogisticRegression(), domain=data.domain, **extra)
    copy = clone(method)
    assert copy.get_params()["domain"] is not None and type(copy) is type(method)
    assert "estimator" in copy.get_params() and repr(copy).startswith(type(method).__name__)
    scores = cross_val_score(method, data.X[:900], data.y[:900], cv=3, scoring="f1")
    assert scores.shape == (3,) and np.all(scores > 0.5)
    fitted = clone(method).fit(data.X[:900], data.y[:900])
    assert fitted.predict_proba(data.X[:5]).shape == (5, 2) and set(fitted.classes_) == {0, 1}


def test_the_unaware_estimator_has_no_idi_and_labels_can_be_strings(history):
    data, train, _, _, _ = history
    labels = np.where(data.y[train] == 1, "yes", "no")
    fitted = make_method("unaware", estimator=LogisticRegression(), domain=data.domain).fit(data.X[train], labels)
    assert list(fitted.classes_) == ["no", "yes"] and set(fitted.predict(data.X[:50])) <= {"no", "yes"}
    counted = as_model(fitted, positive_class="yes")
    assert not DiscriminationCheck(counted, data.domain).is_idi(data.X).any()


def test_consistency_estimator_clones_and_takes_a_given_lambda(history):
    data, train, _, _, _ = history
    method = make_method("consistency", estimator=PaperDNNClassifier(epochs=2), domain=data.domain, lam=1.0,
                         random_state=0)
    scores = cross_val_score(method, data.X[train][:600], data.y[train][:600], cv=2)
    assert scores.shape == (2,)
    fitted = clone(method).fit(data.X[train][:600], data.y[train][:600])
    assert fitted.lam_ == 1.0 and fitted.info_["how"] == "given"
    with pytest.raises(ModelCapabilityError, match="not a PaperDNNClassifier"):
        make_method("consistency", estimator=LogisticRegression(), domain=data.domain).fit(data.X[:50], data.y[:50])


def test_dnn_classifier_without_weights_or_penalty_trains_the_zoo_dnn_bit_for_bit(history):
    data, train, _, _, _ = history
    X, y = data.X[train][:500], data.y[train][:500]
    ours = PaperDNNClassifier(epochs=2, random_state=7).fit(X, y).module_
    zoo = train_dnn(X, y, epochs=2, random_state=7)
    assert all(torch.equal(a, b) for a, b in zip(ours.state_dict().values(), zoo.state_dict().values(),
                                                  strict=True))
    weighted = PaperDNNClassifier(epochs=2, random_state=7).fit(X, y, sample_weight=np.full(len(y), 0.5)).module_
    assert not torch.equal(weighted.layers[0].weight, zoo.layers[0].weight)


def test_counterfactual_augmentation_keeps_the_data_weight_and_every_label():
    from chiralfair.mitigation.counterfactual import augment

    data = toy_dataset(n=50, protected=("sex", "race"))
    rows, labels, weights, _ = augment(data.X, data.y, data.domain)
    assert rows.shape == (50 * 6, 5) and weights.sum() == pytest.approx(50)
    assert np.array_equal(labels, np.repeat(data.y, 6))
    # every row in every one of the 2 x 3 protected combinations, its other columns unchanged
    assert len(np.unique(rows[:, :2], axis=0)) == 6
    assert np.array_equal(rows[:, 2:], np.repeat(data.X[:, 2:], 6, axis=0))


def test_consistency_and_counterfactual_can_fine_tune_the_dnn_under_test_and_leave_it_unchanged(history):
    data, train, _, _, _ = history
    dnn = ModelSpec("dnn", {"epochs": 8}).fit(data.X[train], data.y[train], random_state=0)
    weights = {k: v.clone() for k, v in dnn.estimator.state_dict().items()}
    result = retrain(dnn, data, method=["consistency", "counterfactual"], train_index=train, random_state=0,
                     spread_seeds=0, method_params={"consistency": {"lams": (1.0,), "fine_tune_epochs": 3},
                                    "counterfactual": {"fine_tune_epochs": 3}})
    before, consistency, counterfactual = result.rows
    assert consistency["test_idi_upper"] < before["test_idi_lower"]
    assert counterfactual["test_idi_upper"] < before["test_idi_lower"]
    assert consistency["choice"].endswith("fine-tuned 3 epochs from the model's weights")
    assert all(torch.equal(v, dnn.estimator.state_dict()[k]) for k, v in weights.items())
    with pytest.raises(ModelCapabilityError, match="not a PaperDNNClassifier"):
        make_method("counterfactual", estimator=LogisticRegression(), domain=data.domain,
                    fine_tune_epochs=2).fit(data.X[:60], data.y[:60])


def test_unaware_blinds_coupled_columns_and_refits_a_raw_frame_pipeline():
    # Fixed (found in review): unaware kept relationship (coupled to sex) as an input, so it was not zero-IDI under the
    # coupling, and on a raw-frame pipeline it failed with "codes must have shape (n, 4), got (n, 3)".
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    from chiralfair.datasets import from_frame
    from chiralfair.models.probe import wrap_model

    rng = np.random.default_rng(0)
    n = 1200
    sex = rng.choice(["f", "m"], n)
    rel = np.where(rng.random(n) < 0.5, np.where(sex == "m", "husband", "wife"), "child")
    df = pd.DataFrame({"sex": sex, "rel": rel, "job": rng.choice(["a", "b", "c"], n),
                       "hours": rng.integers(20, 60, n)})
    score = (df["rel"] == "husband") * 1.5 + (df["job"] == "c") * 1.0 + 0.02 * df["hours"]
    df["y"] = np.where(score + rng.normal(0, 0.3, n) > 1.6, "yes", "no")
    pre = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), ["sex", "rel", "job"])],
                            remainder="passthrough")
    pipe = Pipeline([("pre", pre), ("lr", LogisticRegression(max_iter=500))]).fit(df.drop(columns="y"), df["y"])
    data = from_frame(df, label="y", positive_class="yes", protected="sex",
                      couple={"sex": {"rel": {"husband": "wife", "wife": "husband"}}})
    model = wrap_model(pipe, data, name="pipe")
    train, _ = data.split(0)
    result = retrain(model, data, method="unaware", train_index=train, random_state=0)
    before, unaware = result.rows
    assert before["test_idi_rate"] > 0.05  # the model reads the husband/wife role through rel
    assert unaware["test_idi_rate"] == 0 and unaware["domain_idi_rate"] == 0
    kept = result.model_of("unaware")  # a Pipeline: the blinding in raw values, then the pipeline refitted
    assert set(kept.predict(df.drop(columns="y").iloc[:50])) == {"yes", "no"}
    assert (kept.predict(df.drop(columns="y")) == np.where(result.models[0].predict(data.X) == 1, "yes", "no")).all()


def test_a_method_class_without_fit_is_refused_when_it_is_made():
    from chiralfair.mitigation.base import MitigationMethod

    class Forgetful(MitigationMethod):
        pass

    with pytest.raises(TypeError, match="abstract method '?_fit"):
        Forgetful()
