"""Toy models and data whose fairness is known by construction, for contract tests.

Domain: sex {0,1} (PA), race {0,1,2} (PA), a, b in [0,9], c in [0,4].
- fair: P(y=1) = sigmoid(2 (a + b - 9.5)); ignores the PAs, so it has 0 IDIs.
- biased: P(y=1) = sigmoid(2 (a + b + 3 sex - 10.5)); an input is an IDI exactly when 8 <= a + b <= 10.
"""

from __future__ import annotations

import numpy as np
import torch

from chiralfair.datasets.base import Dataset
from chiralfair.domain import Domain, Feature

NAMES = ["sex", "race", "a", "b", "c"]


def toy_domain(protected=("sex",)) -> Domain:
    feats = (Feature("sex", 0, 1, "categorical", {0: "Female", 1: "Male"}),
             Feature("race", 0, 2, "categorical", {0: "A", 1: "B", 2: "C"}),
             Feature("a", 0, 9), Feature("b", 0, 9), Feature("c", 0, 4))
    return Domain(feats).with_protected(list(protected))


class LinearToy(torch.nn.Module):
    """sigmoid(scale * (x @ w + bias)), output shape (n, 1)."""

    def __init__(self, w, bias, scale=2.0):
        super().__init__()
        self.register_buffer("w", torch.tensor(w, dtype=torch.float32))
        self.bias = float(bias)
        self.scale = float(scale)

    def forward(self, x):
        return torch.sigmoid(self.scale * (x @ self.w + self.bias))[:, None]


def fair_module() -> LinearToy:
    return LinearToy([0, 0, 1, 1, 0], -9.5)


def biased_module() -> LinearToy:
    return LinearToy([3, 0, 1, 1, 0], -10.5)


def is_biased_idi(X) -> np.ndarray:
    """Ground truth for the biased toy on sex: an IDI iff 8 <= a + b <= 10."""
    s = np.asarray(X)[:, 2] + np.asarray(X)[:, 3]
    return (s >= 8) & (s <= 10)


def toy_dataset(n=600, protected=("sex",), biased=True, seed=0) -> Dataset:
    """Rows drawn uniformly from the toy domain, labelled by the biased (or fair) toy rule."""
    rng = np.random.default_rng(seed)
    dom = toy_domain(protected)
    X = dom.sample(n, rng)
    w = np.array([3, 0, 1, 1, 0]) if biased else np.array([0, 0, 1, 1, 0])
    b = -10.5 if biased else -9.5
    y = (X @ w + b > 0).astype(np.int64)
    return Dataset("toy", X, y, dom, label="y", positive_class="1")
