"""SHAP explainers of I&D against shap's own output on a small nonlinear torch network, backgrounds, budgets."""

from __future__ import annotations

import numpy as np
import pytest
import shap
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from toys import toy_dataset

from chiralfair.exceptions import ConfigError
from chiralfair.models import as_model
from chiralfair.models.dnn import PaperDNN, train_dnn
from chiralfair.seeds import make_seed_strategy
from chiralfair.seeds.explainers import (
    expand_weighted,
    expected_gradients,
    explain,
    explanation_background,
    integrated_gradients,
)


def _mlp(d: int = 5) -> torch.nn.Module:
    """A small ReLU network with a sigmoid output (nn.Sigmoid, which shap.DeepExplainer hooks)."""
    g = torch.Generator().manual_seed(3)
    net = torch.nn.Sequential(torch.nn.Linear(d, 12), torch.nn.ReLU(), torch.nn.Linear(12, 6), torch.nn.ReLU(),
                              torch.nn.Linear(6, 1), torch.nn.Sigmoid())
    with torch.no_grad():
        for layer in net:
            if isinstance(layer, torch.nn.Linear):
                layer.weight.copy_(torch.randn(layer.weight.shape, generator=g) * 0.4)
                layer.bias.copy_(torch.randn(layer.bias.shape, generator=g) * 0.2)
    return net.eval()


def _paper_dnn(data) -> PaperDNN:
    module = PaperDNN(data.X.shape[1], mean=data.X.mean(0), std=data.X.std(0) + 0.5)
    with torch.no_grad():  # move away from Glorot's symmetric start so the output is not flat
        for layer in module.layers:
            if isinstance(layer, torch.nn.Linear):
                layer.bias.add_(0.1)
    return module.eval()


def _mlp_trainer(X, y, random_state):
    """Chiral trainer for ``_mlp``: the same architecture, 150 Adam steps from a seeded start."""
    torch.manual_seed(random_state)
    net = _mlp(X.shape[1])
    for layer in net:
        if isinstance(layer, torch.nn.Linear):
            layer.reset_parameters()
    opt = torch.optim.Adam(net.parameters(), lr=0.05)
    Xt, yt = torch.as_tensor(X, dtype=torch.float32), torch.as_tensor(y, dtype=torch.float32)[:, None]
    for _ in range(150):
        opt.zero_grad()
        torch.nn.functional.binary_cross_entropy(net(Xt), yt).backward()
        opt.step()
    return net.eval()


@pytest.fixture(scope="module")
def data():
    return toy_dataset(n=400)


def _shap_gradient(module, X, background, nsamples):
    """shap.GradientExplainer's values and their standard errors.

    shap returns ``var(samples) / sqrt(nsamples)`` as the "variance of the mean"; the standard error of a mean
    of ``nsamples`` draws is ``sqrt(var(samples) / nsamples)``, recovered here as ``sqrt(v / sqrt(nsamples))``.
    """
    explainer = shap.GradientExplainer(module, torch.as_tensor(background, dtype=torch.float32), local_smoothing=0)
    values, variances = explainer.shap_values(torch.as_tensor(X, dtype=torch.float32), nsamples=nsamples, rseed=0,
                                              return_variances=True)
    values, variances = np.asarray(values).reshape(X.shape), np.asarray(variances).reshape(X.shape)
    return values, np.sqrt(variances / np.sqrt(nsamples))


# ------------------------------------------------------------------ integrated gradients vs shap and completeness
@pytest.mark.slow
def test_integrated_gradients_from_one_baseline_matches_shap_gradient_explainer(data):
    # With one background row, shap.GradientExplainer estimates the same path integral by random points; our
    # 512-point quadrature error (<1e-5 here) is far below shap's sampling error, so 5 standard errors bound it.
    module = _mlp()
    X, b = data.X[:4].astype(float), data.X[10:11].astype(float)
    ours = integrated_gradients(as_model(module), X, b, n_steps=512)
    theirs, se = _shap_gradient(module, X, b, nsamples=2000)
    assert np.abs(ours).max() > 0.01  # a non-trivial comparison
    assert np.all(np.abs(ours - theirs) <= 5 * se + 1e-5)


@pytest.mark.slow
def test_weighted_integrated_gradients_match_shap_on_the_equivalent_uniform_background(data):
    # Weights 1/2, 1/4, 1/4 on rows (a, b, c) are the uniform background (a, a, b, c).
    module = _mlp()
    X = data.X[:3].astype(float)
    rows = data.X[20:23].astype(float)
    ours = integrated_gradients(as_model(module), X, rows, np.array([0.5, 0.25, 0.25]), n_steps=256)
    theirs, se = _shap_gradient(module, X, rows[[0, 0, 1, 2]], nsamples=3000)
    assert np.all(np.abs(ours - theirs) <= 5 * se + 1e-5)
    uniform = integrated_gradients(as_model(module), X, rows[[0, 0, 1, 2]], n_steps=256)
    np.testing.assert_allclose(ours, uniform, atol=1e-12)


@pytest.mark.parametrize("n_steps, tolerance", [(256, 5e-4), (16, 1e-2)])
def test_integrated_gradients_add_up_to_the_output_difference(data, n_steps, tolerance):
    # Completeness: sum = f(x) - sum_b w_b f(b) in the limit; the midpoint rule's error bounds the residual.
    # Measured on this network (output differences up to 0.31): max residual 2.1e-4 at 256 steps, 5.9e-3 at
    # 16; the ReLU kinks make the midpoint rule converge slowly (1.0e-4 at 1,024).
    module = _mlp()
    model = as_model(module)
    X, rows = data.X[:50].astype(float), data.X[100:110].astype(float)
    w = np.linspace(1, 2, 10) / np.linspace(1, 2, 10).sum()
    values = integrated_gradients(model, X, rows, w, n_steps=n_steps)
    expected = model.predict_proba(X)[:, 1] - w @ model.predict_proba(rows)[:, 1]
    assert np.abs(expected).max() > 0.05
    assert np.abs(values.sum(axis=1) - expected).max() < tolerance


@pytest.mark.slow
def test_expected_gradients_match_shap_gradient_explainer(data):
    # Both are Monte Carlo estimates of the same expectation: their difference has a standard error of about
    # sqrt(se_ours^2 + se_shap^2) ~ sqrt(2) se_shap for equal sample counts.
    module = _mlp()
    X, background = data.X[:4].astype(float), data.X[200:230].astype(float)
    ours = expected_gradients(as_model(module), X, background, np.random.default_rng(0), n_samples=2000)
    theirs, se = _shap_gradient(module, X, background, nsamples=2000)
    assert np.all(np.abs(ours - theirs) <= 5 * np.sqrt(2) * se + 1e-5)


def test_expected_gradients_draw_background_rows_by_their_weights(data):
    # Weight 0 on the second row: the estimate is integrated gradients from the first row alone (Monte Carlo
    # error of 3,000 samples: below 0.01 here), and far from the estimate that draws both rows.
    model = as_model(_mlp())
    X, rows = data.X[:5].astype(float), data.X[[30, 31]].astype(float)
    weighted = expected_gradients(model, X, rows, np.random.default_rng(0), n_samples=3000, weights=np.array([1.0, 0]))
    exact = integrated_gradients(model, X, rows[:1], n_steps=256)
    both = integrated_gradients(model, X, rows, n_steps=256)
    assert np.abs(weighted - exact).max() < 0.01 < np.abs(both - exact).max()


# ------------------------------------------------------------------------------------------ deep (DeepLIFT)
def test_deep_on_the_paper_dnn_equals_shap_deep_explainer_on_the_same_network_with_a_sigmoid_module(data):
    module = _paper_dnn(data)
    X, background = data.X[:6].astype(float), data.X[50:70].astype(float)
    ours, name = explain(as_model(module), X, background, np.random.default_rng(0), explainer="deep")

    class Reference(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net, self.sigmoid = module, torch.nn.Sigmoid()

        def forward(self, x):
            return self.sigmoid(self.net.logit(x))

    theirs = shap.DeepExplainer(Reference().eval(), torch.as_tensor(background, dtype=torch.float32)).shap_values(
        torch.as_tensor(X, dtype=torch.float32))
    assert name == "deep"
    np.testing.assert_allclose(ours, np.asarray(theirs).reshape(X.shape), atol=1e-6)
    # summation to delta, which DeepLIFT guarantees (float32: ~1e-7 here)
    model = as_model(module)
    expected = model.predict_proba(X)[:, 1] - model.predict_proba(background)[:, 1].mean()
    assert np.abs(expected).max() > 0.01
    np.testing.assert_allclose(ours.sum(axis=1), expected, atol=1e-5)


def test_weighted_deep_equals_deep_on_the_equivalent_uniform_background(data):
    model = as_model(_mlp())
    X, rows = data.X[:10].astype(float), data.X[20:23].astype(float)
    rng = np.random.default_rng(0)
    weighted, _ = explain(model, X, rows, rng, explainer="deep", background_weights=np.array([0.5, 0.25, 0.25]))
    uniform, _ = explain(model, X, rows[[0, 0, 1, 2]], rng, explainer="deep")
    np.testing.assert_allclose(weighted, uniform, atol=1e-6)  # float32 DeepLIFT, float64 weighting


class _FunctionalSigmoid(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return torch.sigmoid(self.net(x))


def test_deep_refuses_a_module_whose_attributions_do_not_add_up(data):
    inner = _mlp()[:-1]  # the logits; torch.sigmoid is not hooked by DeepExplainer
    with pytest.raises(ConfigError, match="do not sum to P\\(positive \\| x\\) - E P\\(positive \\| background\\)"):
        explain(as_model(_FunctionalSigmoid(inner)), data.X[:30].astype(float), data.X[50:70].astype(float),
                np.random.default_rng(0), explainer="deep")


# ------------------------------------------------ deep: every output convention, and the user's module untouched
def _logit_net(seed: int, d: int = 5, dtype=torch.float64):
    """Linear-ReLU-Linear with one logit column, random weights from ``seed``."""
    g = torch.Generator().manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(d, 7), torch.nn.ReLU(), torch.nn.Linear(7, 1)).to(dtype)
    with torch.no_grad():
        for layer in (net[0], net[2]):
            layer.weight.copy_(torch.randn(layer.weight.shape, generator=g, dtype=dtype) * 0.5)
            layer.bias.copy_(torch.randn(layer.bias.shape, generator=g, dtype=dtype) * 0.3)
    return net.eval()


class _Squeezed(torch.nn.Module):
    """Output shape (n,) instead of (n, 1)."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x)[:, 0]


def _two_columns(last: torch.nn.Linear, shift: float) -> torch.nn.Linear:
    """Two logits (z0, z1) with z1 - z0 = the one-column logit of ``last``; z0 an arbitrary shifted copy."""
    two = torch.nn.Linear(last.in_features, 2).to(last.weight.dtype)
    with torch.no_grad():
        two.weight.copy_(torch.cat([last.weight * shift, last.weight * (1 + shift)]))
        two.bias.copy_(torch.cat([last.bias * shift + 0.7, last.bias * (1 + shift) + 0.7]))
    return two


def _convention(name: str, net: torch.nn.Sequential):
    """The P(y=1) of the logit network ``net`` (ending in a one-column Linear) in each output convention."""
    body, last = net[:-1], net[-1]
    two = _two_columns(last, shift=0.3)
    return {
        "logit (n, 1)": (net, "logit"),
        "logit (n,)": (_Squeezed(net), "logit"),
        "sigmoid (n, 1)": (torch.nn.Sequential(body, last, torch.nn.Sigmoid()), "probability"),
        "sigmoid (n,)": (_Squeezed(torch.nn.Sequential(body, last, torch.nn.Sigmoid())), "probability"),
        "two logits": (torch.nn.Sequential(body, two), "logit"),
        "softmax": (torch.nn.Sequential(body, two, torch.nn.Softmax(dim=1)), "probability"),
    }[name]


CONVENTIONS = ["logit (n, 1)", "logit (n,)", "sigmoid (n, 1)", "sigmoid (n,)", "two logits", "softmax"]


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), name=st.sampled_from(CONVENTIONS),
       dtype=st.sampled_from([torch.float32, torch.float64]), positive=st.sampled_from([0, 1]))
def test_deep_explains_p_positive_of_every_output_convention_and_adds_up(data, seed, name, dtype, positive):
    # Fixed: two output columns crashed with a raw torch RuntimeError (shape '[100, 200]' is invalid);
    # a one-column logit network was refused with a wrong diagnosis (logit attributions vs probabilities).
    X, background = data.X[:12].astype(float), data.X[40:52].astype(float)
    module, output = _convention(name, _logit_net(seed, dtype=dtype))
    model = as_model(module, output=output, classes=[0, 1], positive_class=positive)
    values, used = explain(model, X, background, np.random.default_rng(0), explainer="deep")
    assert used == "deep"
    expected = model.predict_proba(X)[:, 1] - model.predict_proba(background)[:, 1].mean()
    np.testing.assert_allclose(values.sum(axis=1), expected, atol=1e-4 if dtype == torch.float32 else 1e-9)
    # every convention of one function is one explanation: that of the logit network in float64
    reference_net = _logit_net(seed, dtype=dtype).double()
    reference, _ = explain(as_model(reference_net, output="logit", classes=[0, 1], positive_class=positive), X,
                           background, np.random.default_rng(0), explainer="deep")
    # float32 DeepLIFT divides by small input differences (rescale rule): up to 1.3e-4 from float64 was seen
    np.testing.assert_allclose(values, reference, atol=1e-3 if dtype == torch.float32 else 1e-9)


def _module_state(module: torch.nn.Module) -> dict:
    """Everything explaining could change: state_dict (keys and bits), parameters, buffers, hooks, attributes."""
    hooks = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
    return {"state": {k: v.detach().clone() for k, v in module.state_dict().items()},
            "parameters": [n for n, _ in module.named_parameters()],
            "buffers": [n for n, _ in module.named_buffers()],
            "hooks": {n: [len(getattr(m, h)) for h in hooks] for n, m in module.named_modules()},
            "attributes": {n: sorted(vars(m)) for n, m in module.named_modules()},
            "training": {n: m.training for n, m in module.named_modules()}}


def _assert_same_state(before: dict, after: dict) -> None:
    assert {k: v for k, v in before.items() if k != "state"} == {k: v for k, v in after.items() if k != "state"}
    assert before["state"].keys() == after["state"].keys()
    assert all(torch.equal(before["state"][k], after["state"][k]) for k in before["state"])


@pytest.mark.parametrize("which", ["paper dnn", "softmax", "logit"])
def test_explaining_and_iandd_never_change_the_model_under_test(data, which):
    # Fixed: shap.DeepExplainer left its saved tensors on the user's module as nn.Parameters (the zoo DNN
    # gained 10), so a fine-tuned model.pt held them and a fresh PaperDNN refused to load it.
    trainer = _mlp_trainer
    if which == "paper dnn":  # trained: the toy labels depend on sex, so the chiral model disagrees somewhere
        module, output = train_dnn(data.X, data.y, epochs=5, random_state=0), "probability"

        def trainer(X, y, random_state):
            return train_dnn(X, y, epochs=5, random_state=random_state)
    else:
        module, output = _convention("softmax" if which == "softmax" else "logit (n, 1)", _mlp()[:-1])
    model = as_model(module, output=output)
    before = _module_state(module)
    explain(model, data.X[:20].astype(float), data.X[50:60].astype(float), np.random.default_rng(0),
            explainer="deep")
    _assert_same_state(before, _module_state(module))
    report = make_seed_strategy("iandd", chiral_trainer=trainer, min_samples=3).select(
        model, data, 30, random_state=0)
    assert report.clustering["explainer"] == "deep" and report.clustering["n_explained"] > 0
    _assert_same_state(before, _module_state(module))
    if which == "paper dnn":
        fresh = PaperDNN(data.X.shape[1])
        fresh.load_state_dict(module.state_dict())  # strict: no key was added


@pytest.mark.parametrize("dtype", [pytest.param(torch.float32, marks=pytest.mark.slow), torch.float64])
def test_iandd_auto_explains_a_two_output_network_by_deep(data, dtype):
    # The two-output crash above, through make_seed_strategy("iandd") and explainer="auto".
    module, output = _convention("softmax", _mlp()[:-1].to(dtype))
    report = make_seed_strategy("iandd", chiral_trainer=_mlp_trainer, min_samples=3).select(
        as_model(module, output=output), data, 30, random_state=0)
    assert report.clustering["explainer"] == "deep" and report.clustering["n_explained"] > 0


def test_iandd_auto_falls_back_to_integrated_gradients_for_a_torchscript_module(data, caplog):
    scripted = torch.jit.script(_mlp())
    with caplog.at_level("WARNING", logger="chiralfair.seeds.iandd"):
        report = make_seed_strategy("iandd", chiral_trainer=_mlp_trainer, min_samples=3).select(
            as_model(scripted), data, 30, random_state=0)
    assert report.clustering["explainer"] == "integrated_gradients" and report.clustering["n_explained"] > 0
    assert any("register_forward_hook is not supported on ScriptModules" in r.getMessage() for r in caplog.records)
    with pytest.raises(ConfigError, match="shap.DeepExplainer cannot explain model"):
        explain(as_model(scripted), data.X[:5].astype(float), data.X[50:60].astype(float),
                np.random.default_rng(0), explainer="deep")


# ------------------------------------------------------------------------------------------ backgrounds
def test_kmeans_background_is_shaps_weighted_summary_and_the_same_for_every_random_state(data):
    rows, w = explanation_background(data.X, "kmeans", 6, np.random.default_rng(0))
    summary = shap.kmeans(data.X.astype(float), 6)
    np.testing.assert_array_equal(rows, summary.data)
    np.testing.assert_allclose(w, summary.weights)
    assert w.sum() == pytest.approx(1.0) and rows.shape == (6, data.X.shape[1])
    rows[:] = -1  # the kept summary is not shared with the caller
    again, w2 = explanation_background(data.X, "kmeans", 6, np.random.default_rng(1))
    np.testing.assert_array_equal(again, summary.data)
    np.testing.assert_array_equal(w, w2)


def test_sample_and_mean_backgrounds(data):
    a, wa = explanation_background(data.X, "sample", 20, np.random.default_rng(0))
    b, _ = explanation_background(data.X, "sample", 20, np.random.default_rng(1))
    assert wa is None and a.shape == (20, 5) and not np.array_equal(a, b)
    data_rows = {tuple(r) for r in data.X}
    assert all(tuple(r) in data_rows for r in a.astype(np.int64))
    m, wm = explanation_background(data.X, "mean", 20)
    np.testing.assert_allclose(m, data.X.mean(0, keepdims=True))
    assert wm is None


def test_expand_weighted_repeats_rows_in_proportion():
    rows = np.arange(6.0).reshape(3, 2)
    out = expand_weighted(rows, np.array([0.301, 0.106, 0.593]), total=100)
    counts = [int((out[:, 0] == r).sum()) for r in (0, 2, 4)]
    assert counts == [30, 11, 59] and len(out) == 100  # largest remainder: 10.6 -> 11, 30.1 -> 30, 59.3 -> 59


def test_linear_explainer_on_a_weighted_background_uses_the_weighted_mean(data):
    from sklearn.linear_model import LogisticRegression
    lr = LogisticRegression().fit(data.X, data.y)
    rows, w = explanation_background(data.X, "kmeans", 5)
    X = data.X[:8].astype(float)
    values, name = explain(as_model(lr), X, rows, np.random.default_rng(0), background_weights=w)
    assert name == "linear"
    np.testing.assert_allclose(values, (X - w @ rows) * lr.coef_[0], atol=1e-10)


# ------------------------------------------------------------------------------------------ determinism
@pytest.mark.parametrize("explainer", ["deep", "integrated_gradients"])
def test_deterministic_explainers_on_a_fixed_background_give_the_same_bits_for_every_random_state(data, explainer):
    # The measured run-to-run noise of I&D's defaults is exactly zero (benchmarks/results/explanation_noise.md).
    model = as_model(_mlp())
    X = data.X[:40].astype(float)

    def run(state):
        rng = np.random.default_rng(state)
        rows, w = explanation_background(data.X, "fixed", 20, rng)
        return explain(model, X, rows, rng, explainer=explainer)[0]

    first = run(0)
    assert np.abs(first).max() > 0.01 and np.array_equal(first, run(1))


def test_expected_gradients_same_random_state_same_bits(data):
    model = as_model(_mlp())
    X = data.X[:40].astype(float)
    eg = [explain(model, X, data.X[:30], np.random.default_rng(s), explainer="expected_gradients")[0]
          for s in (0, 0, 1)]
    assert np.array_equal(eg[0], eg[1]) and not np.array_equal(eg[0], eg[2])


def test_iandd_default_for_a_torch_model_is_deep_and_its_clusters_do_not_depend_on_the_random_state(data):
    model = as_model(_mlp(), name="mlp-toy")
    reports = [make_seed_strategy("iandd", chiral_trainer=_mlp_trainer, chiral_random_state=0,
                                  min_samples=3).select(model, data, 30, random_state=s) for s in (0, 1)]
    c0, c1 = (r.clustering for r in reports)
    assert c0["explainer"] == "deep"
    assert c0["explainer_params"] == {"background": "fixed", "background_size": 50}
    assert c0["n_explained"] == c1["n_explained"] > 0
    assert c0["n_clusters"] >= 2
    assert (c0["n_clusters"], c0["noise_share"]) == (c1["n_clusters"], c1["noise_share"])


def test_iandd_explainer_deep_asked_for_explicitly_is_not_replaced(data):
    module = _FunctionalSigmoid(_mlp()[:-1])
    with pytest.raises(ConfigError, match="do not sum"):
        make_seed_strategy("iandd", chiral_trainer=_mlp_trainer, explainer="deep").select(
            as_model(module), data, 20, random_state=0)


@pytest.mark.slow
def test_iandd_on_an_sklearn_mlp_uses_integrated_gradients(data):
    from sklearn.neural_network import MLPClassifier
    mlp = MLPClassifier(hidden_layer_sizes=(8,), max_iter=2000, random_state=0).fit(data.X, data.y)  # converges
    report = make_seed_strategy("iandd").select(as_model(mlp), data, 20, random_state=0)
    assert report.clustering["explainer"] == "integrated_gradients"
    assert report.clustering["explainer_params"] == {"background": "fixed", "background_size": 20, "n_steps": 8}


def test_iandd_records_the_expected_gradients_budget(data):
    report = make_seed_strategy("iandd", chiral_trainer=_mlp_trainer, explainer="expected_gradients",
                                n_samples=30, background="sample", background_size=40).select(
        as_model(_mlp()), data, 20, random_state=0)
    assert report.clustering["explainer_params"] == {"background": "sample", "background_size": 40, "n_samples": 30}


# ------------------------------------------------------------------------------------------ validation
@pytest.mark.parametrize("params, named", [
    ({"explainer": "kernel"}, "explainer"), ({"background": "median"}, "background"),
    ({"background_size": 0}, "background_size"), ({"n_steps": 0}, "n_steps"), ({"n_samples": 0}, "n_samples"),
])
def test_iandd_names_the_bad_explainer_parameter(params, named):
    with pytest.raises(ConfigError, match=named):
        make_seed_strategy("iandd", **params)


def test_explain_names_bad_parameters(data):
    model, X = as_model(_mlp()), data.X[:3].astype(float)
    rng = np.random.default_rng(0)
    with pytest.raises(ConfigError, match="n_steps"):
        explain(model, X, data.X[:4], rng, explainer="integrated_gradients", n_steps=0)
    with pytest.raises(ConfigError, match="background_weights"):
        explain(model, X, data.X[:4], rng, explainer="integrated_gradients", background_weights=[0.5, 0.5])
    with pytest.raises(ConfigError, match="background"):
        explanation_background(data.X, "median")
    with pytest.raises(ConfigError, match="rng"):
        explanation_background(data.X, "sample", 5)


def test_the_run_report_names_the_explainer_budget():
    from chiralfair.reporting.report import describe_clustering
    text = describe_clustering({"method": "dbscan", "eps": 0.09, "min_samples": 10, "n_clusters": 5,
                                "noise_share": 0.3, "explainer": "integrated_gradients", "n_explained": 1716,
                                "explainer_params": {"background": "fixed", "background_size": 20, "n_steps": 8}})
    assert "SHAP (integrated_gradients, background fixed, background_size 20, n_steps 8) on 1716" in text
