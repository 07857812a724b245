"""DeepLIFT values of the zoo's DNN are kept on disk and read back only under the same key.

Every value checked here is recounted in the test: DeepLIFT's attributions of P(positive) sum to
P(positive | x) - mean P(positive | background), computed by calling the network itself with torch.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
import shap
import torch
from toys import toy_dataset

from chiralfair.models import as_model
from chiralfair.models.dnn import PaperDNN
from chiralfair.models.protocol import QueryBudgetSpent
from chiralfair.seeds import explanation_cache
from chiralfair.seeds.explainers import explain


@pytest.fixture(scope="module")
def data():
    return toy_dataset(n=300)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CHIRALFAIR_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "explanations"


@pytest.fixture
def shap_calls(monkeypatch):
    """How many times shap.DeepExplainer was made (each one explains rows)."""
    calls = []
    original = shap.DeepExplainer

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(shap, "DeepExplainer", counted)
    return calls


def _dnn(data, shift: float = 0.1) -> PaperDNN:
    module = PaperDNN(data.X.shape[1], mean=data.X.mean(0), std=data.X.std(0) + 0.5)
    with torch.no_grad():  # away from Glorot's symmetric start, so that the output is not flat
        for layer in module.layers:
            if isinstance(layer, torch.nn.Linear):
                layer.bias.add_(shift)
    return module.eval()


def _rows(data):
    return data.X[:40].astype(float), data.X[100:110].astype(float)


def _deep(module, X, background, random_state=0, **kwargs):
    model = as_model(module)
    values, name = explain(model, X, background, np.random.default_rng(random_state), explainer="deep", **kwargs)
    assert name == "deep"
    return values, model


def _delta(module, X, background):
    """P(positive | x) - mean P(positive | background), from the network itself."""
    with torch.no_grad():
        fx = module(torch.as_tensor(X, dtype=torch.float32)).numpy().ravel().astype(float)
        fb = module(torch.as_tensor(background, dtype=torch.float32)).numpy().ravel().astype(float)
    return fx - fb.mean()


def test_the_same_rows_are_read_back_without_shap_with_the_same_bits_and_queries(data, cache, shap_calls):
    module = _dnn(data)
    X, background = _rows(data)
    first, first_model = _deep(module, X, background)
    assert len(shap_calls) == 1 and len(list(cache.iterdir())) == 1
    second, second_model = _deep(module, X, background)
    assert len(shap_calls) == 1, "the second explanation was computed again"
    np.testing.assert_array_equal(second, first)
    delta = _delta(module, X, background)
    assert np.abs(delta).max() > 0.01
    np.testing.assert_allclose(second.sum(axis=1), delta, atol=1e-5)
    # charged as computing them: one query a (row, reference) pair and one for the output's columns, and the
    # summation check's rows (X and the background) sent to the model
    expected_queries = len(X) * len(background) + 1 + len(X) + len(background)
    assert first_model.n_queries == second_model.n_queries == expected_queries
    assert first_model.n_rows == second_model.n_rows


def test_a_changed_network_is_explained_again(data, cache, shap_calls):
    X, background = _rows(data)
    _deep(_dnn(data), X, background)
    changed = _dnn(data)
    with torch.no_grad():
        changed.layers[-1].weight[0, 0] += 0.5  # one weight of the last layer
    values, _ = _deep(changed, X, background)
    assert len(shap_calls) == 2 and len(list(cache.iterdir())) == 2
    np.testing.assert_allclose(values.sum(axis=1), _delta(changed, X, background), atol=1e-5)
    moved = _dnn(data)
    moved.input_mean += 1.0  # a buffer, not a parameter
    values, _ = _deep(moved, X, background)
    assert len(shap_calls) == 3
    np.testing.assert_allclose(values.sum(axis=1), _delta(moved, X, background), atol=1e-5)


def test_other_rows_background_weights_or_random_state_are_explained_again(data, cache, shap_calls):
    module = _dnn(data)
    X, background = _rows(data)
    _deep(module, X, background)
    other_rows = X.copy()
    other_rows[0, 0] += 1
    values, _ = _deep(module, other_rows, background)
    np.testing.assert_allclose(values.sum(axis=1), _delta(module, other_rows, background), atol=1e-5)
    _deep(module, X, background[:9])
    _deep(module, X, background, background_weights=np.full(len(background), 1 / len(background)))
    _deep(module, X, background, random_state=1)
    calls = len(shap_calls)  # weighted: one call per background row
    assert calls == 4 + len(background) and len(list(cache.iterdir())) == 5
    _deep(module, X, background, random_state=1)
    assert len(shap_calls) == calls


def test_a_budget_refuses_a_cached_explanation_where_it_refuses_a_computed_one(data, cache, shap_calls):
    module = _dnn(data)
    X, background = _rows(data)
    pairs = len(X) * len(background)
    for _ in range(2):  # computed, then read back
        model = as_model(module)
        with pytest.raises(QueryBudgetSpent), model.query_budget(pairs):  # the pairs and the output's one row
            explain(model, X, background, np.random.default_rng(0), explainer="deep")
        assert model.n_queries == 1, "only the output's columns were charged before the refusal"
        if not cache.exists():
            _deep(module, X, background)  # now kept
    assert len(shap_calls) == 1 and len(list(cache.iterdir())) == 1


def test_a_users_network_or_a_hooked_one_is_not_kept(data, cache, shap_calls):
    X, background = _rows(data)

    class Mine(PaperDNN):  # its own code, which the key cannot hold
        pass

    mine = Mine(data.X.shape[1], mean=data.X.mean(0), std=data.X.std(0) + 0.5).eval()
    sequential = torch.nn.Sequential(torch.nn.Linear(X.shape[1], 4), torch.nn.ReLU(), torch.nn.Linear(4, 1),
                                     torch.nn.Sigmoid()).eval()
    hooked = _dnn(data)
    hooked.layers[0].register_forward_hook(lambda module, inputs, output: output * 2)
    for module in (mine, sequential, hooked):
        assert explanation_cache.network_fingerprint(module) is None
        for _ in range(2):
            values, _ = _deep(module, X, background)
    assert len(shap_calls) == 6 and not cache.exists()
    np.testing.assert_allclose(values.sum(axis=1), _delta(hooked, X, background), atol=1e-5)


def test_an_entry_that_does_not_read_is_ignored_and_written_again(data, cache, shap_calls, caplog):
    module = _dnn(data)
    X, background = _rows(data)
    first, _ = _deep(module, X, background)
    (entry,) = cache.iterdir()
    entry.write_bytes(b"not an npz file")
    with caplog.at_level(logging.WARNING):
        again, _ = _deep(module, X, background)
    assert "ignoring the explanation cache entry" in caplog.text and str(entry) in caplog.text
    assert len(shap_calls) == 2
    np.testing.assert_array_equal(again, first)
    np.testing.assert_array_equal(np.load(entry)["values"], first)


def test_an_entry_whose_values_do_not_add_up_is_refused(data, cache, shap_calls):
    module = _dnn(data)
    X, background = _rows(data)
    first, _ = _deep(module, X, background)
    (entry,) = cache.iterdir()
    stored = np.load(entry)
    np.savez(entry, values=stored["values"] * 2, key=stored["key"])  # a damaged entry under the right key
    with pytest.raises(ValueError, match="do not sum to"):
        _deep(module, X, background)


def test_without_the_code_s_sources_nothing_is_kept(data, cache, shap_calls, monkeypatch):
    monkeypatch.setattr(explanation_cache, "CODE", (*explanation_cache.CODE, "seeds/not_there.py"))
    explanation_cache._code_fingerprint.cache_clear()
    try:
        module = _dnn(data)
        X, background = _rows(data)
        for _ in range(2):
            values, _ = _deep(module, X, background)
        assert len(shap_calls) == 2 and not cache.exists()
        np.testing.assert_allclose(values.sum(axis=1), _delta(module, X, background), atol=1e-5)
    finally:
        monkeypatch.undo()
        explanation_cache._code_fingerprint.cache_clear()
