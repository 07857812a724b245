"""Local explanations for symbolic generation (SG).

A sampler around an input, a surrogate decision tree fitted on the model's labels of those samples, and the
input's decision path read off as predicates.

The sampler is genuinely local, unlike LIME's tabular sampler that SG's reference code used (it draws every
feature from the global training marginals, so the "local" tree approximates the model globally;
``algorithms.md`` §12.9). Here each sample keeps the input's values except for a random subset of features:
every feature is replaced independently with probability ``perturb_prob`` by a value drawn uniformly from its
domain (a protected attribute from its declared values). Uniform values are used because a generator sees the
domain, not the data, so data marginals are not available to it.

References
----------
.. [1] Aggarwal, Lohia, Nagar, Dey, Saha. "Black box fairness testing of machine learning models."
   ESEC/FSE 2019.
.. [2] Ribeiro, Singh, Guestrin. "Why should I trust you? Explaining the predictions of any classifier."
   KDD 2016.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..domain import Domain


class Predicate(NamedTuple):
    """One integer half-line constraint on a feature: ``x[feature] <= bound`` or ``x[feature] >= bound``.

    Attributes
    ----------
    feature : int
        Column index.
    upper : bool
        True for ``x[feature] <= bound``, False for ``x[feature] >= bound``.
    bound : int
        Inclusive integer bound.
    """

    feature: int
    upper: bool
    bound: int

    def negate(self) -> Predicate:
        """Return the complement over the integers: ``not (x <= b)`` is ``x >= b + 1`` and vice versa."""
        return Predicate(self.feature, not self.upper, self.bound + 1 if self.upper else self.bound - 1)

    def holds(self, X) -> np.ndarray:
        """Whether each row satisfies the predicate, shape (n_samples,)."""
        v = np.asarray(X)[:, self.feature]
        return v <= self.bound if self.upper else v >= self.bound


class PathStep(NamedTuple):
    """A predicate on an input's decision path and its confidence.

    Attributes
    ----------
    predicate : Predicate
    confidence : float
        Share of the parent node's training samples that went to the child on the path, in (0, 1].
    """

    predicate: Predicate
    confidence: float


def local_samples(X, domain: Domain, n_samples: int, perturb_prob: float,
                  rng: np.random.Generator) -> np.ndarray:
    """Draw samples around each input by re-drawing a random subset of its features uniformly from the domain.

    Parameters
    ----------
    X : numpy.ndarray of int64, shape (n_inputs, n_features)
        Inputs to explain.
    domain : Domain
    n_samples : int
        Samples per input.
    perturb_prob : float
        Probability that a feature of a sample is re-drawn (independently per sample and feature).
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray of int64, shape (n_inputs, n_samples, n_features)
    """
    X = np.asarray(X, dtype=np.int64)
    b, d = X.shape
    out = np.repeat(X[:, None, :], n_samples, axis=1)
    fresh = domain.sample(b * n_samples, rng).reshape(b, n_samples, d)
    mask = rng.random((b, n_samples, d)) < perturb_prob
    for attribute in domain.attributes:
        # A group (one-hot) is re-drawn as a whole, or a sample would be an impossible row.
        mask[:, :, list(attribute.columns)] = mask[:, :, attribute.columns[:1]]
    out[mask] = fresh[mask]
    return out


def fit_surrogate(samples: np.ndarray, labels: np.ndarray, *, random_state: int,
                  max_depth: int | None = None):
    """Fit the local surrogate tree on labelled samples.

    Parameters
    ----------
    samples : numpy.ndarray of int64, shape (n_samples, n_features)
    labels : numpy.ndarray of int64, shape (n_samples,)
        The model's labels of ``samples``.
    random_state : int
    max_depth : int, optional
        None grows the tree until its leaves are pure (the reference setting).

    Returns
    -------
    sklearn.tree.DecisionTreeClassifier
    """
    import sklearn
    from sklearn.tree import DecisionTreeClassifier

    # SG fits one tree per explained input; sklearn's checks of the inputs and of the parameters took 11 of the 44 s
    # of SG's 9,938 fits on census sex (DNN, I&D seeds, 100 x 100, under cProfile). The samples are int64 codes,
    # which float32 (the tree's own dtype) holds exactly, with no missing values: skipping those checks builds the
    # same tree (tests/test_sg.py).
    X = np.ascontiguousarray(samples, dtype=np.float32)
    with sklearn.config_context(skip_parameter_validation=True):
        return DecisionTreeClassifier(random_state=random_state, max_depth=max_depth).fit(X, labels, check_input=False)


def decision_path(tree, x: np.ndarray) -> list[PathStep]:
    """Read the predicates that route ``x`` from the root to its leaf.

    A split ``x[f] <= t`` (``t`` a midpoint between integers) becomes ``x[f] <= floor(t)`` on the left branch
    and ``x[f] >= floor(t) + 1`` on the right one, so negation is exact over the integers.

    Parameters
    ----------
    tree : sklearn.tree.DecisionTreeClassifier
        Fitted on integer inputs.
    x : numpy.ndarray of int, shape (n_features,)

    Returns
    -------
    list of PathStep
        Root first; empty when the tree is a single leaf (the model is constant on the samples).
    """
    t = tree.tree_
    left, right, feat, thr = t.children_left, t.children_right, t.feature, t.threshold
    count = t.n_node_samples
    steps: list[PathStep] = []
    node = 0
    while left[node] != -1:
        f = int(feat[node])
        b = int(np.floor(thr[node]))
        go_left = x[f] <= thr[node]
        child = left[node] if go_left else right[node]
        pred = Predicate(f, True, b) if go_left else Predicate(f, False, b + 1)
        steps.append(PathStep(pred, float(count[child]) / float(count[node])))
        node = child
    return steps
