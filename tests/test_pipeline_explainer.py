"""The pipeline explainer: a Pipeline's last step explained on its transformed features, summed onto raw columns."""

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from chiralfair.datasets import from_frame
from chiralfair.models.probe import wrap_model
from chiralfair.seeds.explainers import choose_stable_explainer, explain
from chiralfair.seeds.pipeline_explainer import raw_column_map


def frame(n=600, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"sex": rng.choice(["f", "m"], n), "job": rng.choice(["a", "b", "c", "d"], n),
                       "age": rng.integers(18, 70, n), "hours": rng.integers(10, 60, n)})
    score = (df["sex"] == "m") * 1.0 + (df["job"] == "c") * 1.5 + 0.03 * df["hours"] - 0.02 * df["age"]
    df["y"] = np.where(score + rng.normal(0, 0.5, n) > 1.0, "yes", "no")
    return df


def model_on(df, final):
    pre = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), ["sex", "job"]),
                             ("num", StandardScaler(), ["age", "hours"])])
    pipe = Pipeline([("pre", pre), ("clf", final)]).fit(df.drop(columns="y"), df["y"])
    data = from_frame(df, label="y", positive_class="yes", protected=["sex"])
    return wrap_model(pipe, data, name="pipe"), data


def test_one_hot_groups_map_back_onto_their_raw_column():
    model, data = model_on(frame(), LogisticRegression())
    pre = model.estimator[:-1]
    parents = raw_column_map(pre, model.language.model_input, data.X[:100])
    # 2 sex + 4 job one-hot columns, then age and hours; raw columns in the frame's order: sex, job, age, hours
    expected = np.zeros((8, 4))
    expected[0:2, 0] = expected[2:6, 1] = expected[6, 2] = expected[7, 3] = 1
    np.testing.assert_array_equal(parents, expected)


@pytest.mark.parametrize("final", [LogisticRegression(), HistGradientBoostingClassifier(max_iter=15)])
def test_per_column_values_are_additive(final):
    model, data = model_on(frame(), final)
    assert choose_stable_explainer(model) == "pipeline"
    X, background = data.X[:200], data.X[200:300]
    values, name = explain(model, X, background, np.random.default_rng(0), explainer="pipeline")
    assert values.shape == (200, 4) and name.startswith("pipeline-")
    margin = model.estimator.decision_function(model.language.model_input(X))
    if name == "pipeline-linear":  # linear SHAP: relative to the background's mean margin
        base = model.estimator.decision_function(model.language.model_input(background)).mean()
        np.testing.assert_allclose(values.sum(axis=1), margin - base, atol=1e-9)
    else:  # path-dependent TreeSHAP: relative to the training data's expected value, the same for every row
        residual = margin - values.sum(axis=1)
        assert np.ptp(residual) < 1e-8


@pytest.mark.slow  # shap's permutation explainer compiles its numba code on first use (10+ s)
def test_agrees_with_permutation_shap_on_the_raw_columns():
    import shap

    model, data = model_on(frame(), LogisticRegression())
    X, background = data.X[:40], data.X[300:340]
    values, _ = explain(model, X, background, np.random.default_rng(0), explainer="pipeline")

    def margin(codes):
        return model.estimator.decision_function(model.language.model_input(np.asarray(codes, dtype=np.int64)))

    masker = shap.maskers.Independent(background, max_samples=len(background))
    reference = shap.PermutationExplainer(margin, masker, seed=0)(X, max_evals=2 * X.shape[1] + 1, silent=True)
    # A linear model's permutation SHAP is exact: every permutation gives coef * (x - background mean)
    np.testing.assert_allclose(values, reference.values, atol=1e-6)


def test_a_pipeline_that_is_neither_linear_nor_trees_keeps_permutation():
    from sklearn.neural_network import MLPClassifier

    model, _ = model_on(frame(300), MLPClassifier(max_iter=400, random_state=0))  # converges
    assert choose_stable_explainer(model) == "permutation"


def test_a_category_no_probed_row_holds_is_found_through_the_domain():
    df = frame()
    df.loc[len(df) - 1, "job"] = "rare"  # one row of 600: not among the rows probed below
    model, data = model_on(df, HistGradientBoostingClassifier(max_iter=15))
    pre, probed = model.estimator[:-1], data.X[:100]
    without = raw_column_map(pre, model.language.model_input, probed)
    with_domain = raw_column_map(pre, model.language.model_input, probed, data.domain)
    assert (without.sum(axis=1) == 0).sum() == 1  # the one-hot column of "rare" never moved
    assert (with_domain.sum(axis=1) == 1).all()
    values, name = explain(model, data.X[:50], data.X[100:150], np.random.default_rng(0), explainer="pipeline",
                           domain=data.domain)
    assert name == "pipeline-tree" and np.isfinite(values).all()
