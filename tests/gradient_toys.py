"""Toy models and domains for the gradient generators' edge cases (zero gradients, bounds, many PA values)."""

from __future__ import annotations

import numpy as np
import torch
from toys import LinearToy, biased_module

from chiralfair.domain import Domain, Feature
from chiralfair.models import as_model
from chiralfair.oracle import DiscriminationCheck


class RoundedInput(torch.nn.Module):
    """The wrapped module applied to round(x): the same predictions, but d P/dx = 0 everywhere (a flat model)."""

    def __init__(self, inner: torch.nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(torch.round(x))


def flat_biased_model():
    """Predicts like the biased toy (IDI iff 8 <= a + b <= 10) with an all-zero input gradient."""
    return as_model(RoundedInput(biased_module()), name="flat-biased-toy")


def bound_pushing_model():
    """Never an IDI; its loss gradient points to smaller ``a`` only, so a chain with a = 0 cannot move."""
    return as_model(LinearToy([3, 0, -1, 0, 0], -20.0), name="bound-pushing-toy")


def age_domain() -> Domain:
    """A domain whose protected attribute ``age`` takes 9 values: age in [0, 8], a, b in [0, 9], c in [0, 4]."""
    feats = (Feature("age", 0, 8), Feature("a", 0, 9), Feature("b", 0, 9), Feature("c", 0, 4))
    return Domain(feats).with_protected(["age"])


def age_biased_model():
    """P(y=1) = sigmoid(2 (a + b + age / 2 - 12.25)): an input is an IDI iff 9 <= a + b <= 12."""
    return as_model(LinearToy([0.5, 1, 1, 0], -12.25), name="age-biased-toy")


def assert_reported_pairs_hold(result, model, domain):
    """Every reported IDI is one (re-checked directly), and its counterpart differs only in PA values."""
    assert result.n_idis == len(result.idis) > 0
    res = DiscriminationCheck(model, domain).check(result.idis)
    assert res.is_idi.all()
    npa = domain.non_protected
    np.testing.assert_array_equal(result.idis[:, npa], result.counterparts[:, npa])
    for col, values in zip(domain.protected, domain.protected_values, strict=True):
        assert np.isin(result.counterparts[:, col], values).all()
    np.testing.assert_array_equal(model.predict(result.idis), result.idi_labels)
    np.testing.assert_array_equal(model.predict(result.counterparts), result.counterpart_labels)
    assert (result.idi_labels != result.counterpart_labels).all()


class Bowl(torch.nn.Module):
    """P(y=1) = sigmoid(-(a - 5)^2 - 1) < 0.5: never an IDI; the gradient in ``a`` changes sign at a = 5."""

    def forward(self, x):
        return torch.sigmoid(-(x[:, 2] - 5) ** 2 - 1)[:, None]
