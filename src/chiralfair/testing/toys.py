"""Toy models and data whose fairness is known by construction, for the contract checks (:mod:`.contract`).

Domain: sex {0: Female, 1: Male} and race {0, 1, 2} (the protected attributes), a and b in [0, 9], c in [0, 4].

- fair: P(y=1) = sigmoid(2 (a + b - 9.5)); it ignores the protected attributes, so it has no IDI;
- biased: P(y=1) = sigmoid(2 (a + b + 3 sex - 10.5)); an input is an IDI on sex exactly when 8 <= a + b <= 10.

Both are numpy functions with their analytic input gradient, so gradient, probability and label-only generators
all run on them without torch.
"""

from __future__ import annotations

import numpy as np

from ..datasets.base import Dataset
from ..domain import Domain, Feature
from ..models.protocol import CountingModel, from_positive_probability

FAIR = (np.array([0.0, 0.0, 1.0, 1.0, 0.0]), -9.5)
BIASED = (np.array([3.0, 0.0, 1.0, 1.0, 0.0]), -10.5)
SCALE = 2.0
# c plays a role that changes with sex: 0 belongs to Female, 1 to Male (a wife and a husband), 2..4 to neither.
TOY_COUPLE = {"sex": {"c": {0: 1, 1: 0}}}
TOY_RULES = ("sex=Female excludes c=1", "sex=Male excludes c=0", "a >= c")


def toy_domain(protected=("sex",)) -> Domain:
    """The toy domain with ``protected`` as its protected attributes (sex, race or both).

    Parameters
    ----------
    protected : sequence of str
        Names among ``"sex"`` and ``"race"``.

    Returns
    -------
    Domain
    """
    features = (Feature("sex", 0, 1, "categorical", {0: "Female", 1: "Male"}),
                Feature("race", 0, 2, "categorical", {0: "A", 1: "B", 2: "C"}),
                Feature("a", 0, 9), Feature("b", 0, 9), Feature("c", 0, 4))
    return Domain(features).with_protected(list(protected))


def coupled_toy_domain(protected=("sex",)) -> Domain:
    """:func:`toy_domain` with :data:`TOY_COUPLE` and the rules :data:`TOY_RULES`.

    Parameters
    ----------
    protected : sequence of str
        Names among ``"sex"`` and ``"race"``.

    Returns
    -------
    Domain
    """
    return toy_domain(protected).with_couplings(TOY_COUPLE).with_constraints(TOY_RULES)


def toy_model(*, biased: bool, name: str | None = None) -> CountingModel:
    """The fair or the biased toy as a CountingModel with ``predict``, ``predict_proba`` and ``input_gradient``.

    Parameters
    ----------
    biased : bool
    name : str, optional
        Default ``"biased-toy"`` / ``"fair-toy"``.

    Returns
    -------
    CountingModel
    """
    w, bias = BIASED if biased else FAIR

    def proba1(X):
        return 1.0 / (1.0 + np.exp(-SCALE * (np.asarray(X, dtype=np.float64) @ w + bias)))

    def gradient(X):
        p = proba1(X)
        return (SCALE * p * (1 - p))[:, None] * w[None, :]

    return from_positive_probability(proba1, name=name or ("biased-toy" if biased else "fair-toy"),
                                     batch_size=65_536, estimator=None, language=None, gradient=gradient)


def is_biased_idi(X) -> np.ndarray:
    """Ground truth for the biased toy on sex: an IDI exactly when 8 <= a + b <= 10.

    Parameters
    ----------
    X : array-like of shape (n, 5)
        Inputs of the toy domain.

    Returns
    -------
    numpy.ndarray of shape (n,), bool
    """
    X = np.asarray(X)
    s = X[:, 2] + X[:, 3]
    return (s >= 8) & (s <= 10)


def breaks_toy_rules(X) -> np.ndarray:
    """Ground truth for :data:`TOY_RULES`, written out apart from the constraint parser.

    Parameters
    ----------
    X : array-like of shape (n, 5)
        Inputs of the toy domain.

    Returns
    -------
    numpy.ndarray of shape (n,), bool
    """
    X = np.asarray(X)
    sex, a, c = X[:, 0], X[:, 2], X[:, 4]
    return ((sex == 0) & (c == 1)) | ((sex == 1) & (c == 0)) | (a < c)


def toy_dataset(n: int = 600, protected=("sex",), *, biased: bool = True, seed: int = 0, reads: str = "sex") -> Dataset:
    """Rows drawn uniformly from the toy domain, labelled by the biased (or fair) toy's rule.

    Parameters
    ----------
    n : int
        Number of rows.
    protected : sequence of str
        As in :func:`toy_domain`.
    biased : bool
        Label by the biased toy's rule (else the fair one's).
    seed : int
        Seed of the draw.
    reads : {"sex", "race"}
        The protected attribute the biased rule reads: ``"race"`` puts race's weight (3 for race C) where sex's
        was, so that a check over sex and race tells a strategy that flips sex alone from one that flips both.

    Returns
    -------
    Dataset
        ``X`` int64 of shape (n, 5).
    """
    rng = np.random.default_rng(seed)
    domain = toy_domain(protected)
    X = domain.sample(n, rng)
    w, bias = BIASED if biased else FAIR
    score = X @ w + bias
    if biased and reads == "race":
        score = score - 3.0 * X[:, 0] + 3.0 * (X[:, 1] == 2)
    y = (score > 0).astype(np.int64)
    return Dataset("toy", X, y, domain, label="y", positive_class="1")
