import os
from dataclasses import replace

import numpy as np
import pytest
import torch
from toys import toy_dataset

from chiralfair.exceptions import ConfigError
from chiralfair.models import ModelSpec, TrainedModel, resolve_cache_dir, train_model
from chiralfair.models.training import cache_key

pytestmark = pytest.mark.usefixtures("one_blas_thread")


@pytest.fixture(scope="module")
def data():
    return toy_dataset(n=800, seed=3)


FAST_DNN = ModelSpec("dnn", {"epochs": 5})


def test_split_scores_and_fields(data, tmp_path):
    t = train_model(data, "dtc", random_state=2, cache_dir=tmp_path)
    assert isinstance(t, TrainedModel)
    train, test = data.split(2)
    np.testing.assert_array_equal(t.train_index, train)
    np.testing.assert_array_equal(t.test_index, test)
    pred = t.model.predict(data.X[test])
    assert t.accuracy == pytest.approx((pred == data.y[test]).mean())
    assert 0.9 < t.f1 <= 1.0 and 0.9 < t.accuracy <= 1.0
    assert t.spec == ModelSpec("dtc") and t.model.spec == t.spec and t.model.name == "dtc"
    assert t.dataset == "toy" and t.random_state == 2 and t.train_seconds > 0
    assert t.cache_path.parent == tmp_path and t.cache_path.exists()


def test_queries_start_at_zero(data, tmp_path):
    t = train_model(data, "lr", cache_dir=tmp_path)
    assert t.model.n_queries == 0


@pytest.mark.parametrize("model", ["lr", FAST_DNN])
def test_second_call_loads_from_cache_with_identical_predictions(data, tmp_path, model):
    first = train_model(data, model, random_state=1, cache_dir=tmp_path)
    second = train_model(data, model, random_state=1, cache_dir=tmp_path)
    assert not first.from_cache and second.from_cache
    assert second.cache_path == first.cache_path
    assert second.train_seconds == pytest.approx(first.train_seconds)
    np.testing.assert_array_equal(second.model.predict_proba(data.X), first.model.predict_proba(data.X))
    assert second.f1 == first.f1 and second.accuracy == first.accuracy
    assert [p.name for p in tmp_path.iterdir() if p.suffix != ".lock"] == [first.cache_path.name]  # no temp files left


def test_cached_dnn_has_bit_identical_weights(data, tmp_path):
    first = train_model(data, FAST_DNN, cache_dir=tmp_path)
    second = train_model(data, FAST_DNN, cache_dir=tmp_path)
    a, b = first.model.estimator.state_dict(), second.model.estimator.state_dict()
    assert second.from_cache and all(torch.equal(a[k], b[k]) for k in a)


def test_same_random_state_without_cache_is_deterministic(data, tmp_path):
    a = train_model(data, FAST_DNN, cache_dir=tmp_path / "a")
    b = train_model(data, FAST_DNN, cache_dir=tmp_path / "b")
    assert not b.from_cache
    np.testing.assert_array_equal(a.model.predict_proba(data.X), b.model.predict_proba(data.X))


def test_chiral_data_random_state_and_spec_get_their_own_entries(data, tmp_path):
    base = train_model(data, "lr", cache_dir=tmp_path)
    X_chiral = data.X.copy()
    X_chiral[:, 0] = 1 - X_chiral[:, 0]
    chiral = train_model(replace(data, X=X_chiral), "lr", cache_dir=tmp_path)
    other_seed = train_model(data, "lr", random_state=5, cache_dir=tmp_path)
    other_spec = train_model(data, ModelSpec("lr", {"C": 0.5}), cache_dir=tmp_path)
    paths = {base.cache_path, chiral.cache_path, other_seed.cache_path, other_spec.cache_path}
    assert len(paths) == 4
    assert not (chiral.from_cache or other_seed.from_cache or other_spec.from_cache)


def test_cache_key_depends_on_training_rows_only_through_their_values(data):
    spec = ModelSpec("lr")
    k = cache_key("toy", data.X, data.y, spec, 0)
    assert k == cache_key("toy", data.X.astype(float), data.y, spec, 0)
    assert k != cache_key("toy", data.X[1:], data.y[1:], spec, 0)
    y2 = data.y.copy()
    y2[0] = 1 - y2[0]
    assert k != cache_key("toy", data.X, y2, spec, 0)
    assert k != cache_key("other", data.X, data.y, spec, 0)
    assert len(k) == 64


def test_force_retrains(data, tmp_path):
    train_model(data, "dtc", cache_dir=tmp_path)
    again = train_model(data, "dtc", cache_dir=tmp_path, force=True)
    assert not again.from_cache


@pytest.mark.parametrize("model", ["dtc", FAST_DNN])
def test_corrupt_cache_file_is_retrained_with_warning(data, tmp_path, model):
    first = train_model(data, model, cache_dir=tmp_path)
    first.cache_path.write_bytes(b"not a model")
    with pytest.warns(UserWarning, match="cannot be used.*retraining"):
        second = train_model(data, model, cache_dir=tmp_path)
    assert not second.from_cache
    np.testing.assert_array_equal(second.model.predict(data.X), first.model.predict(data.X))
    assert train_model(data, model, cache_dir=tmp_path).from_cache


def test_cache_dir_resolution(tmp_path, monkeypatch):
    monkeypatch.setenv("CHIRALFAIR_CACHE", str(tmp_path / "env"))
    assert resolve_cache_dir() == tmp_path / "env" / "models"
    assert resolve_cache_dir(tmp_path / "arg") == tmp_path / "arg"
    monkeypatch.delenv("CHIRALFAIR_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert resolve_cache_dir() == tmp_path / "xdg" / "chiralfair" / "models"
    assert (tmp_path / "xdg" / "chiralfair" / "models").is_dir()


def test_env_cache_is_used_by_train_model(data, tmp_path, monkeypatch):
    monkeypatch.setenv("CHIRALFAIR_CACHE", str(tmp_path))
    t = train_model(data, "dtc")
    assert t.cache_path.parent == tmp_path / "models"


def test_explicit_train_index(data, tmp_path):
    train = np.arange(0, 800, 2)
    t = train_model(data, "dtc", cache_dir=tmp_path, train_index=train[::-1])
    np.testing.assert_array_equal(t.train_index, train)
    np.testing.assert_array_equal(t.test_index, np.arange(1, 800, 2))
    assert t.cache_path != train_model(data, "dtc", cache_dir=tmp_path).cache_path


@pytest.mark.parametrize(("index", "message"), [
    (np.array([0, 0, 1]), "duplicate"),
    (np.array([0, 800]), "outside"),
    (np.arange(800), "no test rows"),
    (np.array([0.5, 1.0]), "row numbers"),
])
def test_bad_train_index_is_named(data, tmp_path, index, message):
    with pytest.raises(ConfigError, match=message):
        train_model(data, "dtc", cache_dir=tmp_path, train_index=index)


def test_bad_model_and_random_state(data, tmp_path):
    with pytest.raises(ConfigError, match="unknown model name 'svm'"):
        train_model(data, "svm", cache_dir=tmp_path)
    with pytest.raises(ConfigError, match="random_state"):
        train_model(data, "dtc", random_state=-1, cache_dir=tmp_path)
    assert os.listdir(tmp_path) == []
