import numpy as np
import pytest
import torch
from toys import toy_dataset

from chiralfair.exceptions import ConfigError
from chiralfair.models.dnn import HIDDEN_LAYERS, PaperDNN, train_dnn
from chiralfair.models.zoo import ModelSpec

pytestmark = pytest.mark.usefixtures("one_blas_thread")


@pytest.fixture(scope="module")
def easy():
    return toy_dataset(n=1500, seed=1)


def _weights(module):
    return {k: v.clone() for k, v in module.state_dict().items()}


def test_architecture_is_the_papers():
    m = PaperDNN(13)
    linear = [layer for layer in m.layers if isinstance(layer, torch.nn.Linear)]
    assert [(layer.in_features, layer.out_features) for layer in linear] == [
        (13, 30), (30, 20), (20, 15), (15, 10), (10, 5), (5, 1)]
    assert HIDDEN_LAYERS == (30, 20, 15, 10, 5)
    assert sum(isinstance(layer, torch.nn.ReLU) for layer in m.layers) == 5
    p = m(torch.randn(7, 13))
    assert p.shape == (7, 1) and torch.all((p > 0) & (p < 1))


@pytest.mark.parametrize("standardize", [False, True])
def test_same_random_state_gives_bit_identical_weights(easy, standardize):
    a = train_dnn(easy.X, easy.y, random_state=3, epochs=2, standardize=standardize)
    b = train_dnn(easy.X, easy.y, random_state=3, epochs=2, standardize=standardize)
    c = train_dnn(easy.X, easy.y, random_state=4, epochs=2, standardize=standardize)
    wa, wb, wc = _weights(a), _weights(b), _weights(c)
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    assert not all(torch.equal(wa[k], wc[k]) for k in wa)


def test_training_does_not_touch_global_torch_rng(easy):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    train_dnn(easy.X[:200], easy.y[:200], random_state=0, epochs=1)
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.slow
@pytest.mark.parametrize("standardize", [False, True])
def test_learns_the_easy_toy_rule(easy, standardize):
    model = ModelSpec("dnn", {"standardize": standardize}).fit(easy.X[:1000], easy.y[:1000], random_state=0)
    pred = model.predict(easy.X[1000:])
    accuracy = (pred == easy.y[1000:]).mean()
    assert accuracy > 0.9


def test_standardisation_is_a_fixed_layer_with_training_moments(easy):
    m = train_dnn(easy.X, easy.y, random_state=0, epochs=1, standardize=True)
    np.testing.assert_allclose(m.input_mean.numpy(), easy.X.mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(m.input_std.numpy(), easy.X.std(axis=0), rtol=1e-5)
    assert "input_mean" not in dict(m.named_parameters())


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_scripts_as_torchscript_with_its_buffers():
    # A retrained DNN is saved with torch.jit.script (models.files); a class-level annotation of the buffers would make
    # scripting fail and the save fall back to tracing without a word.
    m = PaperDNN(4, mean=[1.0, 2.0, 3.0, 4.0], std=[1.0, 2.0, 4.0, 8.0])
    x = torch.randn(5, 4, generator=torch.Generator().manual_seed(0))
    assert torch.equal(torch.jit.script(m)(x), m(x))


@pytest.mark.parametrize("standardize", [False, True])
def test_input_gradient_matches_finite_differences(easy, standardize):
    model = ModelSpec("dnn", {"standardize": standardize, "epochs": 3}).fit(easy.X, easy.y, random_state=0)
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 5, size=(20, 5))  # off the integer grid, away from ties
    grad = model.input_gradient(X)
    h = 1e-3
    fd = np.empty_like(X)
    for j in range(X.shape[1]):
        e = np.zeros(X.shape[1])
        e[j] = h
        fd[:, j] = (model.predict_proba(X + e)[:, 1] - model.predict_proba(X - e)[:, 1]) / (2 * h)
    assert np.abs(grad).max() > 1e-3
    np.testing.assert_allclose(grad, fd, atol=2e-3, rtol=0.05)


def test_bad_training_data_is_named():
    with pytest.raises(ConfigError, match="both labels"):
        train_dnn(np.zeros((4, 2)), np.zeros(4), epochs=1)
    with pytest.raises(ConfigError, match="y must have shape"):
        train_dnn(np.zeros((4, 2)), np.array([0, 1]), epochs=1)
    with pytest.raises(ConfigError, match="epochs"):
        train_dnn(np.zeros((4, 2)), np.array([0, 1, 0, 1]), epochs=0)


def test_training_restores_torch_thread_setting(easy):
    before = torch.get_num_threads()
    train_dnn(easy.X[:200], easy.y[:200], random_state=0, epochs=1)
    assert torch.get_num_threads() == before


# ------------------------------------------------------- the model wrapper's inference path without module calls
def _wrapped_probability(module, X):
    """P(y = 1) through the model wrapper (which takes PaperDNN.forward_unhooked when it can)."""
    from chiralfair.models import as_model

    return as_model(module).predict_proba(X)[:, 1]


def _module_probability(module, X):
    """P(y = 1) from calling the module itself, hooks and all, as float64."""
    with torch.no_grad():
        return module(torch.as_tensor(X, dtype=torch.float32)).numpy().ravel().astype(np.float64)


def test_the_wrappers_probabilities_are_the_modules_bit_for_bit(easy):
    module = train_dnn(easy.X, easy.y, random_state=0, epochs=2)
    X = easy.X[:500].astype(float)
    assert module.forward_unhooked(torch.as_tensor(X, dtype=torch.float32)) is not None
    np.testing.assert_array_equal(_wrapped_probability(module, X), _module_probability(module, X))
    # and the gradient, through the same path
    from chiralfair.models import as_model

    x = torch.as_tensor(X[:50], dtype=torch.float32).requires_grad_(True)
    (expected,) = torch.autograd.grad(module(x).sum(), x)
    np.testing.assert_array_equal(as_model(module).input_gradient(X[:50]), expected.double().numpy())


def test_a_hooked_or_changed_network_is_called_as_a_module(easy):
    X = easy.X[:200].astype(float)

    def halve(layer, inputs, output):
        return output * 0.5

    hooked = train_dnn(easy.X, easy.y, random_state=0, epochs=2)
    plain = _wrapped_probability(hooked, X)
    handle = hooked.layers[-1].register_forward_hook(halve)  # halves the logit
    assert hooked.forward_unhooked(torch.as_tensor(X, dtype=torch.float32)) is None
    np.testing.assert_array_equal(_wrapped_probability(hooked, X), _module_probability(hooked, X))
    assert np.abs(_wrapped_probability(hooked, X) - plain).max() > 1e-3
    handle.remove()
    everywhere = torch.nn.modules.module.register_module_forward_hook(
        lambda layer, inputs, output: halve(layer, inputs, output) if isinstance(layer, torch.nn.Linear) else None)
    try:
        np.testing.assert_array_equal(_wrapped_probability(hooked, X), _module_probability(hooked, X))
        assert np.abs(_wrapped_probability(hooked, X) - plain).max() > 1e-3
    finally:
        everywhere.remove()
    np.testing.assert_array_equal(_wrapped_probability(hooked, X), plain)

    class Sharper(PaperDNN):  # a subclass's own forward
        def forward(self, x):
            return torch.sigmoid(2 * self.logit(x))

    sharper = Sharper(easy.X.shape[1])
    sharper.load_state_dict(hooked.state_dict())
    np.testing.assert_array_equal(_wrapped_probability(sharper, X), _module_probability(sharper, X))
    swapped = train_dnn(easy.X, easy.y, random_state=0, epochs=2)
    swapped.layers[1] = torch.nn.Tanh()  # a layer this class does not build
    assert swapped.forward_unhooked(torch.as_tensor(X, dtype=torch.float32)) is None
    np.testing.assert_array_equal(_wrapped_probability(swapped, X), _module_probability(swapped, X))
    assert np.abs(_wrapped_probability(swapped, X) - plain).max() > 1e-3
