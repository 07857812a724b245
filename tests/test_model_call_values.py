"""A torch module's probabilities read on the model call's short path are torch's own, bit for bit.

The search calls the model about a thousand times on a few hundred rows each, so the call checks its output in numpy
instead of in small torch operations (:func:`chiralfair.models.torch_adapter.positive_probability_values`). The values
must be the ones torch computes: recounted here by running the user's module in torch and widening its output to
float64 as the module's own dtype gives it, for every output shape, dtype and positive class.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from chiralfair.exceptions import ModelOutputError
from chiralfair.models import as_model


class Net(torch.nn.Module):
    """A small ReLU net ending in a sigmoid (one column) or a softmax (two columns), or in logits."""

    def __init__(self, columns: int, squash: bool):
        super().__init__()
        gen = torch.Generator().manual_seed(3)
        self.hidden = torch.nn.Linear(4, 6)
        self.out = torch.nn.Linear(6, columns)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.randn(p.shape, generator=gen))
            if columns == 2:  # the two logits opposite
                self.out.weight[1] = -self.out.weight[0]
            # the first logit's median 0 over a grid of the test's inputs, so that both classes win somewhere
            self.out.bias.zero_()
            z = self.out(torch.relu(self.hidden(torch.cartesian_prod(*[torch.arange(-3.0, 4.0)] * 4))))
            self.out.bias[0] = -z[:, 0].median()
            if columns == 2:
                self.out.bias[1] = -self.out.bias[0]
        self.columns, self.squash = columns, squash

    def forward(self, x):
        z = self.out(torch.relu(self.hidden(x)))
        if not self.squash:
            return z
        return torch.sigmoid(z) if self.columns == 1 else torch.softmax(z, dim=1)


def recount(module, X, columns, squash, positive_first):
    """P(positive) as torch computes it from the module's output, then widened to float64."""
    dtype = next(module.parameters()).dtype
    with torch.no_grad():
        out = module(torch.as_tensor(X, dtype=dtype))
        if not squash:
            out = torch.sigmoid(out) if columns == 1 else torch.softmax(out, dim=1)
        p1 = out[:, 1] if columns == 2 else out[:, 0]
        p = 1 - p1 if positive_first else p1
    return p.double().numpy()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("columns", [1, 2])
@pytest.mark.parametrize("squash", [True, False], ids=["probability", "logit"])
@pytest.mark.parametrize("positive_first", [False, True])
def test_probabilities_are_torchs_own_bit_for_bit(dtype, columns, squash, positive_first):
    module = Net(columns, squash).to(dtype)
    X = np.random.default_rng(0).integers(-3, 4, (500, 4)).astype(float)
    classes = ("yes", "no") if positive_first else ("no", "yes")
    model = as_model(module, output="probability" if squash else "logit", classes=classes, positive_class="yes")
    expected = recount(module, X, columns, squash, positive_first)
    assert 0 < (expected > 0.5).mean() < 1, "both labels occur, so the labels below say something"
    np.testing.assert_array_equal(model.predict_proba(X)[:, 1], expected)
    labels, proba = model.predict_with_proba(X)
    np.testing.assert_array_equal(proba, expected)
    np.testing.assert_array_equal(labels, (expected > 0.5).astype(np.int64))
    np.testing.assert_array_equal(model.predict(X), (expected > 0.5).astype(np.int64))


@pytest.mark.parametrize("bad", [np.nan, 1.5, -0.25], ids=["nan", "above-1", "below-0"])
def test_a_probability_outside_the_unit_interval_is_still_refused(bad):
    class Bad(torch.nn.Module):
        def forward(self, x):
            out = torch.full((len(x), 1), 0.25)
            out[len(x) // 2] = bad
            return out

    model = as_model(Bad(), output="probability")
    match = "NaN or infinite" if np.isnan(bad) else "outside \\[0, 1\\].*output='logit'"
    with pytest.raises(ModelOutputError, match=match):
        model.predict(np.zeros((9, 3)))
