import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import Pipeline
from toys import toy_dataset

from chiralfair.exceptions import ConfigError
from chiralfair.models import ModelSpec, as_model, as_spec, model_names
from chiralfair.models.zoo import default_params

# MLPs on the toy rarely converge in their iteration budget; that warning is tested once, for lr, below.
pytestmark = [pytest.mark.filterwarnings("ignore:model 'mlp' did not converge"),
              pytest.mark.usefixtures("one_blas_thread")]


@pytest.fixture(scope="module")
def easy():
    return toy_dataset(n=900, seed=2)


def _fast(name):
    # The smallest settings that still learn the toy rule, so the whole file runs in seconds.
    return {"dnn": {"epochs": 8}, "rf": {"n_estimators": 20}, "hgb": {"max_iter": 30},
            "lightgbm": {"n_estimators": 30}}.get(name, {})


def test_registry_names():
    assert model_names() == ["dnn", "lr", "svc", "dtc", "mlp", "rf", "hgb", "lightgbm"]


@pytest.mark.parametrize("name", ["dnn", "lr", "svc", "dtc", "mlp", "rf", "hgb", "lightgbm"])
def test_each_zoo_model_learns_the_easy_toy(easy, name):
    spec = ModelSpec(name, _fast(name))
    model = spec.fit(easy.X[:600], easy.y[:600], random_state=0)
    assert model.name == name and model.spec is spec
    pred = model.predict(easy.X[600:])
    assert set(np.unique(pred)) <= {0, 1}
    assert (pred == easy.y[600:]).mean() > 0.85
    proba = model.predict_proba(easy.X[600:605])
    assert proba.shape == (5, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


@pytest.mark.parametrize("name", ["dtc", "rf", "hgb", "lightgbm", "mlp", "svc"])
def test_sklearn_models_are_deterministic(easy, name):
    spec = ModelSpec(name, _fast(name))
    a = spec.fit(easy.X[:300], easy.y[:300], random_state=7).predict_proba(easy.X)
    b = spec.fit(easy.X[:300], easy.y[:300], random_state=7).predict_proba(easy.X)
    np.testing.assert_array_equal(a, b)


def test_random_state_reaches_the_estimator(easy):
    a = ModelSpec("rf", {"n_estimators": 5}).fit(easy.X, easy.y, random_state=1).estimator
    b = ModelSpec("rf", {"n_estimators": 5}).fit(easy.X, easy.y, random_state=2).estimator
    assert a.random_state == 1 and b.random_state == 2


def test_defaults_follow_the_paper_and_documented_choices():
    assert ModelSpec("svc").params == {"probability": True, "standardize": True}
    assert ModelSpec("dtc").params == {"standardize": False}
    assert ModelSpec("lr").params == {"standardize": True}
    assert ModelSpec("mlp").params == {"standardize": True}
    assert default_params("dnn") == {"standardize": True, "epochs": 30, "batch_size": 128, "lr": 0.01,
                                     "device": "cpu"}
    assert isinstance(ModelSpec("lr").build(), Pipeline)
    assert not isinstance(ModelSpec("lr", {"standardize": False}).build(), Pipeline)


@pytest.mark.slow
def test_chiral_model_reuses_the_spec(easy):
    spec = ModelSpec("mlp", {"hidden_layer_sizes": (3,), "max_iter": 300, "standardize": True})
    model = spec.fit(easy.X, easy.y, random_state=0)
    X_chiral = easy.X.copy()
    X_chiral[:, 0] = 1 - X_chiral[:, 0]
    chiral = model.spec.fit(X_chiral, easy.y, random_state=0)
    assert chiral.spec == spec
    assert chiral.estimator[-1].hidden_layer_sizes == (3,)
    assert not np.array_equal(chiral.predict_proba(easy.X), model.predict_proba(easy.X))


def test_spec_equality_and_hash_use_canonical_params():
    a = ModelSpec("mlp", {"hidden_layer_sizes": (3,)})
    b = ModelSpec("mlp", {"hidden_layer_sizes": [3]})
    assert a == b and hash(a) == hash(b) and a.key() == b.key()
    assert a != ModelSpec("mlp") and a.key() != ModelSpec("mlp").key()
    assert a.with_params(hidden_layer_sizes=(3,)) == a
    assert as_spec("dtc") == ModelSpec("dtc") and as_spec(a) is a


def test_unknown_model_name_lists_valid_names():
    with pytest.raises(ConfigError, match="unknown model name 'xgb'.*dnn.*hgb.*lr.*mlp.*rf.*svc"):
        ModelSpec("xgb")
    with pytest.raises(ConfigError, match="unknown model name"):
        as_spec("nope")
    with pytest.raises(ConfigError, match="ModelSpec"):
        as_spec(3)


def test_bad_params_are_named():
    with pytest.raises(ConfigError, match="unknown parameter.*'C_value'.*model 'svc'.*valid:.*kernel"):
        ModelSpec("svc", {"C_value": 1})
    with pytest.raises(ConfigError, match="unknown parameter.*'hidden'.*'dnn'"):
        ModelSpec("dnn", {"hidden": 3})
    with pytest.raises(ConfigError, match="random_state.*fit"):
        ModelSpec("lr", {"random_state": 1})
    with pytest.raises(ConfigError, match="JSON-like"):
        ModelSpec("lr", {"C": object()})
    with pytest.raises(ConfigError, match="standardize"):
        ModelSpec("lr", {"standardize": "yes"})
    with pytest.raises(ConfigError, match="both labels"):
        ModelSpec("dtc").fit(np.zeros((3, 2)), np.zeros(3))


def test_convergence_warning_names_the_model(easy, caplog):
    spec = ModelSpec("lr", {"max_iter": 1, "standardize": False})
    with pytest.warns(ConvergenceWarning, match="model 'lr' did not converge"):
        model = spec.fit(easy.X, easy.y, random_state=0)
    assert model.predict(easy.X[:3]).shape == (3,)
    assert "model 'lr' did not converge" in caplog.text


def _finite_difference(model, X, h=1e-4):
    fd = np.empty_like(X)
    for j in range(X.shape[1]):
        e = np.zeros(X.shape[1])
        e[j] = h
        fd[:, j] = (model.predict_proba(X + e)[:, 1] - model.predict_proba(X - e)[:, 1]) / (2 * h)
    return fd


@pytest.mark.parametrize("standardize", [False, True])
@pytest.mark.parametrize("name", ["lr", pytest.param("mlp", marks=pytest.mark.slow)])
def test_sklearn_gradient_matches_finite_differences(easy, name, standardize):
    params = {"standardize": standardize, "max_iter": 500}
    if name == "mlp":
        params["activation"] = "tanh"  # smooth, so finite differences are exact up to O(h^2)
    model = ModelSpec(name, params).fit(easy.X, easy.y, random_state=0)
    assert model.has_gradient
    X = np.random.default_rng(0).uniform(0, 5, size=(15, 5))
    grad = model.input_gradient(X)
    assert np.abs(grad).max() > 1e-4
    np.testing.assert_allclose(grad, _finite_difference(model, X), rtol=1e-4, atol=1e-7)


def test_trees_have_no_gradient(easy):
    model = ModelSpec("dtc").fit(easy.X, easy.y, random_state=0)
    assert not model.has_gradient and model.has_proba


def test_as_model_wraps_fitted_spec_estimators_without_spec(easy):
    model = ModelSpec("dtc").fit(easy.X, easy.y, random_state=0)
    assert as_model(model.estimator).spec is None


def test_svc_labels_are_the_svcs_and_probabilities_are_platt_scaled(easy):
    from sklearn.svm import SVC

    from chiralfair.models.zoo import PlattSVC

    model = ModelSpec("svc").fit(easy.X[:300], easy.y[:300], random_state=0)
    platt = model.estimator[-1]
    assert isinstance(platt, PlattSVC) and isinstance(platt.svc_, SVC)
    Z = model.estimator[0].transform(easy.X)
    np.testing.assert_array_equal(model.predict(easy.X), platt.svc_.predict(Z))
    np.testing.assert_array_equal(model.predict(easy.X), (platt.decision_function(Z) > 0).astype(int))
    proba = model.predict_proba(easy.X)[:, 1]
    np.testing.assert_allclose(proba, platt.calibrated_.predict_proba(Z)[:, 1])
    # Platt's sigmoid is increasing in the decision value.
    order = np.argsort(platt.decision_function(Z))
    assert np.all(np.diff(proba[order]) >= -1e-12)
    bare = ModelSpec("svc", {"probability": False}).fit(easy.X[:300], easy.y[:300], random_state=0)
    assert not bare.has_proba


@pytest.mark.parametrize("name", ["lr", "svc", "dtc", "mlp", "rf", "hgb", "lightgbm"])
def test_default_params_are_valid_without_importing_the_estimator(name):
    # ModelSpec(name) checks only parameters beyond the defaults (so the zoo imports no sklearn for a name);
    # this keeps the defaults themselves honest.
    import importlib

    from chiralfair.models.zoo import _SKLEARN

    module, cls_name, overrides, _ = _SKLEARN[name]
    cls = getattr(importlib.import_module(module), cls_name)
    assert set(default_params(name)) - {"standardize"} <= set(cls(**overrides).get_params())


def test_old_cache_files_find_plattsvc_in_the_zoo():
    from chiralfair.models import zoo
    from chiralfair.models.platt_svc import PlattSVC

    assert zoo.PlattSVC is PlattSVC


def test_lightgbm_without_its_package_is_a_config_error_naming_it(monkeypatch, easy):
    import importlib

    real = importlib.import_module

    def no_lightgbm(name, *args, **kwargs):
        if name == "lightgbm":
            raise ModuleNotFoundError("No module named 'lightgbm'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", no_lightgbm)
    with pytest.raises(ConfigError, match="model 'lightgbm' needs the 'lightgbm' package.*pip install lightgbm"):
        ModelSpec("lightgbm").fit(easy.X[:100], easy.y[:100])


def test_lightgbm_version_is_in_its_library_versions():
    from importlib.metadata import version

    from chiralfair.models.training import library_versions

    assert library_versions(ModelSpec("lightgbm"))["lightgbm"] == version("lightgbm")
    assert "lightgbm" not in library_versions(ModelSpec("hgb"))
