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


# ------------------------------------------------------------------ couplings and constraints (architecture:
# counterparts that could exist) On the toy domain, c plays a role that changes with sex: code 0 belongs to Female, code
# 1 to Male (a wife and a husband), 2..4 to neither. The coupling swaps 0 and 1 with sex; the rules say who can exist.
TOY_COUPLE = {"sex": {"c": {0: 1, 1: 0}}}
TOY_RULES = ("sex=Female excludes c=1", "sex=Male excludes c=0", "a >= c")


def coupled_toy_domain(protected=("sex",)) -> Domain:
    """:func:`toy_domain` with :data:`TOY_COUPLE` and :data:`TOY_RULES`."""
    return toy_domain(protected).with_couplings(TOY_COUPLE).with_constraints(TOY_RULES)


def breaks_toy_rules(X) -> np.ndarray:
    """Ground truth for :data:`TOY_RULES`, written out independently of the constraint parser."""
    X = np.asarray(X)
    sex, a, c = X[:, 0], X[:, 2], X[:, 4]
    return ((sex == 0) & (c == 1)) | ((sex == 1) & (c == 0)) | (a < c)


MARRIED_FEATURES = ("sex", "role", "a", "b", "c")


def married_dataset(n=600, seed=0, couple=None) -> Dataset:
    """Half the rows married: a woman's role is Wife, a man's Husband; the other half Single.

    sex {0: Female, 1: Male} is protected; role {0: Wife, 1: Husband, 2: Single}; a, b in [0, 9]; c in [0, 4].
    Labels follow the biased toy rule (a + b + 3 sex > 10.5). Flipping sex alone makes every married row's
    counterpart impossible (a female husband, a male wife): exactly n / 2 of the naive counterparts.
    The domain is measured on the rows (so it carries their support for plausibility).
    """
    rng = np.random.default_rng(seed)
    sex = rng.integers(0, 2, n)
    married = np.zeros(n, dtype=bool)
    married[rng.permutation(n)[: n // 2]] = True
    role = np.where(married, np.where(sex == 0, 0, 1), 2)
    a, b, c = rng.integers(0, 10, n), rng.integers(0, 10, n), rng.integers(0, 5, n)
    X = np.column_stack([sex, role, a, b, c]).astype(np.int64)
    y = (a + b + 3 * sex - 10.5 > 0).astype(np.int64)
    from chiralfair.domain import Domain as _Domain

    dom = _Domain.from_data(X, MARRIED_FEATURES, kinds=["categorical", "categorical", "ordinal", "ordinal", "ordinal"],
                            labels={"sex": {0: "Female", 1: "Male"}, "role": {0: "Wife", 1: "Husband", 2: "Single"}},
                            protected=["sex"])
    if couple is not None:
        dom = dom.with_couplings(couple)
    return Dataset("married", X, y, dom, label="y", positive_class="1")


def impossible_married(X) -> np.ndarray:
    """A female husband or a male wife."""
    X = np.asarray(X)
    return ((X[:, 0] == 0) & (X[:, 1] == 1)) | ((X[:, 0] == 1) & (X[:, 1] == 0))


def married_module() -> LinearToy:
    """The biased toy's rule on the married features (role and c ignored)."""
    return LinearToy([3, 0, 1, 1, 0], -10.5)
