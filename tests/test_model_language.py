"""The model's language, declared once in the adapter (architecture: the model under test).

Frame models, callables, torch logits, string labels, labels {1, 2} and random_state: each has a test with the right
value: the declared model gives the IDIs of the same model in chiralfair's own language ({0, 1} labels,
P(positive)), and the undeclared one is refused naming the fix.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.tree import DecisionTreeClassifier
from toys import biased_module, toy_dataset, toy_domain

import chiralfair.generators._load_all  # noqa: F401
from chiralfair._random import resolve_random_state
from chiralfair.exceptions import ConfigError, ModelOutputError
from chiralfair.generators import make_generator
from chiralfair.models import as_model
from chiralfair.seeds import make_seed_strategy
from chiralfair.seeds.chiral import train_chiral_model
from chiralfair.seeds.explainers import choose_explainer, explain

BUDGET = {"max_global": 30, "max_local": 30}


@pytest.fixture(scope="module")
def data():
    return toy_dataset()


def _run(gen, model, random_state=0, protected=("sex",)):
    domain = toy_domain(protected)
    seeds = domain.sample(40, np.random.default_rng(1))
    return make_generator(gen, **BUDGET).run(model, domain, seeds, random_state=random_state)


def _same(a, b):
    assert a.n_idis > 0
    np.testing.assert_array_equal(a.idis, b.idis)
    np.testing.assert_array_equal(a.counterparts, b.counterparts)
    assert a.n_queries == b.n_queries


def _lr(data, relabel=lambda y: y):
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(data.X, relabel(data.y))


# ------------------------------------------------------------------------------------- callables
def test_case2_probability_callable_declared_gives_the_label_idis(data):
    lr = _lr(data)
    reference = _run("aequitas", as_model(lambda X: lr.predict(X)))
    one = _run("aequitas", as_model(lambda X: lr.predict_proba(X)[:, 1], output="probability"))
    two = _run("aequitas", as_model(lambda X: lr.predict_proba(X), output="probability"))
    _same(one, reference)
    _same(two, reference)


def test_case2_probability_callable_undeclared_is_refused(data):
    lr = _lr(data)
    with pytest.raises(ModelOutputError, match=r"'p1'.*non-integer value 0\.\d+.*output='probability'"):
        _run("aequitas", as_model(lambda X: lr.predict_proba(X)[:, 1], name="p1"))
    with pytest.raises(ModelOutputError, match=r"'p2' returned a \(\d+, 2\) matrix.*output='probability'"):
        _run("aequitas", as_model(lambda X: lr.predict_proba(X), name="p2"))


def test_probability_callable_outside_unit_interval_is_refused():
    model = as_model(lambda X: X[:, 2] - 4.5, output="probability", name="scores")
    with pytest.raises(ModelOutputError, match=r"'scores'.*outside \[0, 1\].*output='logit'"):
        model.predict(np.zeros((3, 5)) + np.arange(3)[:, None] * 4)


def test_label_outside_declared_classes_names_model_and_value():
    model = as_model(lambda X: np.full(len(X), 3), classes=[1, 2], positive_class=2, name="grades")
    with pytest.raises(ModelOutputError, match=r"'grades' returned the label 3, not one of its classes \[1, 2\]"):
        model.predict(np.zeros((4, 5)))


def test_undeclared_callable_mixing_0_and_minus_1_is_refused():
    model = as_model(lambda X: np.where(X[:, 0] > 0, 1, np.where(X[:, 1] > 0, -1, 0)), name="three")
    with pytest.raises(ModelOutputError, match="more than two classes"):
        model.predict(np.array([[0, 1, 0, 0, 0], [0, 0, 0, 0, 0], [1, 0, 0, 0, 0]]))


# ------------------------------------------------------------------------------------- torch logits
class _Logits(torch.nn.Module):
    """The biased toy without its final sigmoid (trained with BCEWithLogitsLoss, it would end like this)."""

    def __init__(self, shift=0.0):
        super().__init__()
        self.linear = torch.nn.Linear(5, 1)
        with torch.no_grad():
            self.linear.weight.copy_(torch.tensor([[6.0, 0, 2, 2, 0]]))
            self.linear.bias.fill_(-21.0 + shift)

    def forward(self, x):
        return self.linear(x)


def test_case3_logit_module_with_output_logit_gives_the_sigmoid_idis():
    _same(_run("adf", as_model(_Logits(), output="logit")), _run("adf", as_model(biased_module())))
    _same(_run("aequitas", as_model(_Logits(), output="logit")), _run("aequitas", as_model(biased_module())))


def test_case3_logit_module_wrapped_as_probability_is_refused():
    with pytest.raises(ModelOutputError, match=r"'_Logits'.*outside \[0, 1\].*output='logit'"):
        _run("aequitas", as_model(_Logits()))


def test_logits_that_all_lie_in_the_unit_interval_cannot_be_detected():
    # Documented limit: a logit network whose outputs stay in [0, 1] reads as probabilities.
    module = _Logits()
    with torch.no_grad():
        module.linear.weight.zero_()
        module.linear.bias.fill_(0.3)
    assert (as_model(module).predict_proba(np.zeros((2, 5)))[:, 1] == np.float32(0.3)).all()


def test_two_column_probabilities_must_sum_to_one():
    class Two(torch.nn.Module):
        def forward(self, x):
            return torch.full((len(x), 2), 0.7)

    with pytest.raises(ModelOutputError, match="do not sum to 1.*output='logit'"):
        as_model(Two()).predict(np.zeros((2, 5)))


def test_float64_module_matches_float32():
    m32, m64 = as_model(biased_module()), as_model(biased_module().double())
    X = toy_domain().sample(200, np.random.default_rng(0)).astype(float)
    np.testing.assert_array_equal(m32.predict(X), m64.predict(X))
    np.testing.assert_allclose(m32.input_gradient(X), m64.input_gradient(X), atol=1e-6)


def test_torch_positive_class_first_negates_probability_and_gradient():
    module = _Logits()
    plain = as_model(module, output="logit")
    reversed_ = as_model(module, output="logit", classes=["approve", "deny"], positive_class="deny")
    X = toy_domain().sample(50, np.random.default_rng(0)).astype(float)
    first = as_model(module, output="logit", classes=["deny", "approve"], positive_class="deny")
    np.testing.assert_allclose(first.predict_proba(X)[:, 1], 1 - plain.predict_proba(X)[:, 1], atol=1e-6)
    np.testing.assert_allclose(first.input_gradient(X), -plain.input_gradient(X), atol=1e-6)
    np.testing.assert_array_equal(reversed_.predict(X), plain.predict(X))


# ------------------------------------------------------------------------------------- string labels
def test_case4_string_labels_refused_without_positive_class(data):
    lr = _lr(data, lambda y: np.where(y == 1, ">50K", "<=50K"))
    with pytest.raises(ConfigError, match=r"classes \['<=50K', '>50K'\].*positive_class="):
        as_model(lr)


def test_case4_string_labels_with_positive_class_give_the_01_idis(data):
    lr = _lr(data, lambda y: np.where(y == 1, ">50K", "<=50K"))
    _same(_run("aequitas", as_model(lr, positive_class=">50K")), _run("aequitas", as_model(_lr(data))))
    _same(_run("sg", as_model(lr, positive_class=">50K")), _run("sg", as_model(_lr(data))))


# ------------------------------------------------------------------------------------- labels {1, 2}
@pytest.mark.parametrize("gen", ["adf", "eidig"])
@pytest.mark.parametrize("positive", [1, 2])
def test_case5_lr_on_1_2_behind_scaler_gives_the_01_idis(data, gen, positive):
    # German credit's own coding: 1 = good (the positive class), 2 = bad; or the other way round.
    relabel = (lambda y: 2 - y) if positive == 1 else (lambda y: 1 + y)
    declared = as_model(_lr(data, relabel), positive_class=positive)
    _same(_run(gen, declared), _run(gen, as_model(_lr(data))))


def test_case5_1_2_refused_without_positive_class(data):
    with pytest.raises(ConfigError, match=r"classes \[1, 2\].*positive_class="):
        as_model(_lr(data, lambda y: 1 + y))


def test_positive_class_as_text_matches_a_numeric_class(data):
    assert as_model(_lr(data, lambda y: 1 + y), positive_class="2").language.positive_class == 2


def test_sklearn_gradient_of_positive_class_first_matches_finite_differences(data):
    model = as_model(_lr(data, lambda y: 2 - y), positive_class=1)
    assert model.positive_index == 0
    X = toy_domain().sample(30, np.random.default_rng(2)).astype(float)
    h = 1e-4
    numeric = np.stack([(model.predict_proba(X + h * e)[:, 1] - model.predict_proba(X - h * e)[:, 1]) / (2 * h)
                        for e in np.eye(5)], axis=1)
    np.testing.assert_allclose(model.input_gradient(X), numeric, atol=1e-6)


@pytest.mark.slow
def test_case5_german_credit_adf_and_eidig_counts_equal_the_01_model():
    from chiralfair.datasets import load_dataset
    german = load_dataset("german")
    X = german.X.astype(float)
    lr01 = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(X, german.y)
    lr12 = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(X, np.where(german.y == 1, 1, 2))
    seeds = make_seed_strategy("cluster").select(as_model(lr01), german, 100, random_state=0).seeds
    for gen in ("adf", "eidig"):
        runs = [make_generator(gen, max_global=100, max_local=100).run(m, german.domain, seeds, random_state=0)
                for m in (as_model(lr01), as_model(lr12, positive_class=1))]
        assert runs[0].n_idis > 100 and runs[0].n_idis == runs[1].n_idis


# ------------------------------------------------------------------------------------- other refusals
def test_multiclass_is_refused(data):
    y3 = data.y + (data.X[:, 4] > 2)
    with pytest.raises(ConfigError, match=r"3 classes \[0, 1, 2\].*binary"):
        as_model(LogisticRegression(max_iter=500).fit(data.X, y3))


def test_declared_classes_must_match_classes_(data):
    with pytest.raises(ConfigError, match=r"classes=\[2, 1\] contradicts the classes_ \[1, 2\]"):
        as_model(_lr(data, lambda y: 1 + y), classes=[2, 1], positive_class=2)


def test_positive_class_outside_classes_is_refused(data):
    with pytest.raises(ConfigError, match=r"positive_class='yes' is not one of the classes \[1, 2\]"):
        as_model(_lr(data, lambda y: 1 + y), positive_class="yes")


def test_logit_output_for_sklearn_is_refused(data):
    with pytest.raises(ConfigError, match="output='logit' does not apply"):
        as_model(_lr(data), output="logit")


def test_declarations_on_an_already_wrapped_model_are_refused():
    with pytest.raises(ConfigError, match="already wrapped"):
        as_model(as_model(biased_module()), positive_class=1)


def test_model_fitted_on_other_width_names_both_numbers(data):
    lr = LogisticRegression().fit(data.X[:, :4], data.y)
    with pytest.raises(ConfigError, match=r"fitted on 4 columns \(n_features_in_\).*have 5"):
        _run("aequitas", as_model(lr))


# ------------------------------------------------------------------------------------- frame models
SEX, RACE = np.array(["Female", "Male"]), np.array(["A", "B", "C"])


def toy_frame(X) -> pd.DataFrame:
    """Codes -> the raw frame a practitioner's pipeline was fitted on (strings for the categories)."""
    X = np.asarray(X, dtype=np.int64)
    return pd.DataFrame({"sex": SEX[X[:, 0]], "race": RACE[X[:, 1]], "a": X[:, 2], "b": X[:, 3], "c": X[:, 4]})


def frame_pipeline(data, labels=None) -> Pipeline:
    pre = ColumnTransformer([("cat", OneHotEncoder(), ["sex", "race"]), ("num", StandardScaler(), ["a", "b", "c"])])
    y = data.y if labels is None else labels(data.y)
    return Pipeline([("pre", pre), ("lr", LogisticRegression(max_iter=1000))]).fit(toy_frame(data.X), y)


def test_case1_frame_model_without_to_frame_is_refused_naming_it(data):
    with pytest.raises(ConfigError, match=r"fitted on a DataFrame with columns \['sex', 'race', 'a', 'b', 'c'\]"
                                          r".*to_frame=.*audit"):
        as_model(frame_pipeline(data))


def test_case1_frame_model_with_to_frame_speaks_codes(data):
    pipe = frame_pipeline(data)
    model = as_model(pipe, to_frame=toy_frame, name="raw-pipe")
    assert model.takes_frame and not model.has_gradient
    res = _run("aequitas", model, protected=("sex", "race"))
    assert res.n_idis > 0
    # Every pair re-checked against the pipeline itself, on its own raw frames.
    np.testing.assert_array_equal(pipe.predict(toy_frame(res.idis)), res.idi_labels)
    np.testing.assert_array_equal(pipe.predict(toy_frame(res.counterparts)), res.counterpart_labels)


def test_case1_frame_model_gives_the_same_idis_as_its_codes_twin(data):
    # A to_frame that only renames the columns: the frame pipeline and a codes pipeline are one function.
    def named(X):
        return pd.DataFrame(np.asarray(X, dtype=float), columns=["sex", "race", "a", "b", "c"])
    frame_lr = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(named(data.X), data.y)
    _same(_run("sg", as_model(frame_lr, to_frame=named)), _run("sg", as_model(_lr(data))))


def test_frame_missing_a_column_names_both_lists(data):
    model = as_model(frame_pipeline(data), to_frame=lambda X: toy_frame(X).drop(columns="race"))
    with pytest.raises(ConfigError, match=r"lacks columns \['race'\].*model columns.*\['sex', 'race', 'a', 'b', 'c'\]"
                                          r".*frame columns.*\['sex', 'a', 'b', 'c'\]"):
        model.predict(np.zeros((2, 5)))


def test_frame_with_extra_columns_warns_naming_both_lists(data):
    model = as_model(frame_pipeline(data), to_frame=lambda X: toy_frame(X).assign(id=np.arange(len(X))))
    with pytest.warns(UserWarning, match=r"fewer columns than the data: it ignores \['id'\]"):
        model.predict(np.zeros((2, 5)))


@pytest.mark.slow  # trains a chiral clone of a frame pipeline and explains it
def test_frame_model_with_string_labels_chiral_clone_speaks_the_models_language(data):
    pipe = frame_pipeline(data, lambda y: np.where(y == 1, ">50K", "<=50K"))
    model = as_model(pipe, to_frame=toy_frame, positive_class=">50K")
    chiral, info = train_chiral_model(model, data, np.random.default_rng(0))
    assert info["how"] == "sklearn-clone"
    assert chiral.takes_frame and list(chiral.estimator.classes_) == ["<=50K", ">50K"]
    assert chiral.language.positive_class == ">50K"
    X = data.X[:50]
    agree = (chiral.predict(X) == model.predict(X)).mean()
    assert agree > 0.5  # the chiral model learnt the same task (labels not inverted)
    report = make_seed_strategy("iandd").select(model, data, 20, random_state=0)
    # the pipeline's last step is linear: explained by linear SHAP on it, through the measured raw-column map
    assert report.clustering["explainer"] == "pipeline-linear" and choose_explainer(model) == "pipeline"


def test_given_chiral_model_speaks_the_language_of_the_model_under_test(data):
    model = as_model(_lr(data, lambda y: 2 - y), positive_class=1)
    chiral = _lr(data, lambda y: 2 - y)  # classes [1, 2]: refused alone, read with the model's positive_class
    report = make_seed_strategy("i", chiral_model=chiral).select(model, data, 20, random_state=0)
    assert report.meta["chiral_model"]["how"] == "given"
    reference = make_seed_strategy("i", chiral_model=_lr(data)).select(as_model(_lr(data)), data, 20, random_state=0)
    np.testing.assert_array_equal(report.seeds, reference.seeds)


# ------------------------------------------------------------------------------------- explainers
def test_linear_explainer_follows_the_positive_class(data):
    ref = as_model(_lr(data))
    first = as_model(_lr(data, lambda y: np.where(y == 1, "good", "poor")), positive_class="good")
    X, background = data.X[:20].astype(float), data.X[100:150].astype(float)
    rng = np.random.default_rng(0)
    a, name = explain(ref, X, background, rng)
    b, _ = explain(first, X, background, rng)
    assert name == "linear"
    np.testing.assert_allclose(b, a, atol=1e-6)


def test_tree_explainer_follows_the_positive_class(data):
    ref = as_model(DecisionTreeClassifier(max_depth=4, random_state=0).fit(data.X, data.y))
    first = as_model(DecisionTreeClassifier(max_depth=4, random_state=0).fit(data.X, 2 - data.y), positive_class=1)
    X, background = data.X[:20].astype(float), data.X[100:150].astype(float)
    a, name = explain(ref, X, background, np.random.default_rng(0))
    b, _ = explain(first, X, background, np.random.default_rng(0))
    assert name == "tree"
    np.testing.assert_allclose(b, a, atol=1e-9)
    assert np.abs(a).sum() > 0


# ------------------------------------------------------------------------------------- random_state
def test_case9_chiral_trainer_gets_an_int_seed(data):
    model = as_model(GradientBoostingClassifier(random_state=0, n_estimators=20).fit(data.X, data.y))
    seen = []

    def trainer(X, y, rs):
        seen.append(rs)
        return GradientBoostingClassifier(random_state=rs, n_estimators=20).fit(X, y)

    a = make_seed_strategy("i", chiral_trainer=trainer).select(model, data, 30, random_state=0)
    b = make_seed_strategy("i", chiral_trainer=trainer).select(model, data, 30, random_state=0)
    assert all(type(s) is int for s in seen) and seen[0] == seen[1]
    assert a.meta["chiral_model"]["how"] == "chiral_trainer"
    np.testing.assert_array_equal(a.seeds, b.seeds)


def test_case9_random_state_accepts_sklearn_types_and_records_them(data):
    model = as_model(biased_module())
    rs = np.random.RandomState(0)
    first = _run("aequitas", model, random_state=rs)
    second = _run("aequitas", model, random_state=rs)  # the RandomState advanced, as sklearn's do
    seed = int(first.meta["random_state"].rsplit(" ", 1)[1])
    again = _run("aequitas", model, random_state=seed)
    np.testing.assert_array_equal(first.idis, again.idis)
    assert first.meta["random_state"] == f"numpy.random.RandomState, drew seed {seed}"
    assert second.meta["random_state"] != first.meta["random_state"]
    gen = _run("aequitas", model, random_state=np.random.default_rng(4))
    assert gen.meta["random_state"].startswith("numpy.random.Generator(PCG64), state digest ")
    assert gen.meta["random_state"] == _run("aequitas", model, random_state=np.random.default_rng(4)).meta[
        "random_state"]
    fresh = make_seed_strategy("random").select(model, data, 10, random_state=None)
    redo = make_seed_strategy("random").select(model, data, 10,
                                               random_state=int(fresh.meta["random_state"].rsplit(" ", 1)[1]))
    np.testing.assert_array_equal(fresh.seeds, redo.seeds)
    assert _run("aequitas", model, random_state=7).meta["random_state"] == 7


@pytest.mark.parametrize("bad", [-1, 1.5, "0", True])
def test_random_state_of_another_type_is_refused(bad):
    with pytest.raises(ConfigError, match="random_state"):
        resolve_random_state(bad)


def test_no_warning_for_a_codes_model(data):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        as_model(_lr(data)).predict(data.X[:5])


@pytest.mark.parametrize("output", ["probability", "logit"])
def test_nan_outputs_are_refused_as_nan_not_as_logits(output):
    def half_nan(X):
        p = np.full(len(X), 0.7)
        p[::2] = np.nan
        return p

    model = as_model(half_nan, output=output)
    with pytest.raises(ModelOutputError, match=r"NaN or infinite values for 2 of 4 rows \(first: row 0\)"):
        model.predict(np.zeros((4, 5)))


# ------------------------------------------------ output shapes x labels, probabilities, logits
def _outputs(p: np.ndarray, shape: str, kind: str, classes: tuple) -> np.ndarray:
    """P(classes[1]) = p written as a model of ``kind`` with output ``shape`` would return it."""
    logit = np.log(p) - np.log1p(-p)
    if kind == "label":
        out = np.where(p > 0.5, classes[1], classes[0])
    elif kind == "probability":
        out = np.column_stack([1 - p, p]) if shape == "(n, 2)" else p
    else:  # two logits whose difference is the logit, shifted by an arbitrary constant
        out = np.column_stack([np.full_like(p, 0.3), logit + 0.3]) if shape == "(n, 2)" else logit
    if kind == "label" and shape == "(n, 2)":
        return np.column_stack([1 - p, p])  # class probabilities where labels were declared: refused below
    return out[:, None] if shape == "(n, 1)" else out


@given(p=st.lists(st.floats(0.01, 0.99).filter(lambda v: abs(v - 0.5) > 1e-6), min_size=1, max_size=40),
       shape=st.sampled_from(["(n,)", "(n, 1)", "(n, 2)"]), kind=st.sampled_from(["label", "probability", "logit"]),
       classes=st.sampled_from([(0, 1), (1, 2), ("<=50K", ">50K"), (False, True), (-1, 1)]),
       positive_first=st.booleans())
def test_every_output_shape_and_kind_gives_p_positive_and_labels_or_a_refusal_naming_the_fix(p, shape, kind, classes,
                                                                                             positive_first):
    p = np.asarray(p)
    out = _outputs(p, shape, kind, classes)
    positive = classes[0] if positive_first else classes[1]
    model = as_model(lambda X: out[: len(X)], output=kind, classes=list(classes), positive_class=positive)
    X = np.zeros((len(p), 3))
    p_positive = 1 - p if positive_first else p
    if kind == "label" and shape == "(n, 2)":
        with pytest.raises(ModelOutputError, match="output='probability'"):
            model.predict(X)
        return
    np.testing.assert_array_equal(model.predict(X), (p_positive > 0.5).astype(int))
    if kind != "label":
        np.testing.assert_allclose(model.predict_proba(X)[:, 1], p_positive, atol=1e-9)
        labels, proba = model.predict_with_proba(X)
        np.testing.assert_array_equal(labels, (p_positive > 0.5).astype(int))
        np.testing.assert_allclose(proba, p_positive, atol=1e-9)
