"""The discrimination check (design §2): does some counterpart of ``x`` get another label.

Every combination of the protected attributes' domain values is tried, for a whole batch of inputs in one
model call; a protected attribute that spans several columns (one-hot) contributes only its valid rows. The
combination equal to the input's own PA values is the input itself, so its prediction comes for free: a
candidate costs exactly ``n_combinations`` model queries (one more if its PA values lie outside the PA domains:
a missing protected value, or a group row that is none of the valid ones).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .domain import Domain
from .models.protocol import CountingModel


@dataclass(frozen=True)
class CheckResult:
    """Outcome of the discrimination check for a batch of inputs.

    Attributes
    ----------
    X : numpy.ndarray of int64, shape (n_samples, n_features)
        The inputs checked.
    labels : numpy.ndarray of int64, shape (n_samples,)
        f(x).
    counterpart_labels : numpy.ndarray of int64, shape (n_samples, n_combinations)
        f(x') for every PA-value combination (columns follow :attr:`Domain.combinations`).
    is_idi : numpy.ndarray of bool, shape (n_samples,)
        Whether some counterpart has a label different from f(x).
    counterpart_index : numpy.ndarray of int64, shape (n_samples,)
        Index of the reported counterpart's combination: the first whose label differs, or, for non-IDIs,
        the one whose positive-class probability differs most from x's (when probabilities were asked for),
        else -1.
    proba : numpy.ndarray of float64, shape (n_samples, n_combinations), or None
        Positive-class probability of every counterpart, when asked for.
    own_proba : numpy.ndarray of float64, shape (n_samples,), or None
        Positive-class probability of x itself, when asked for.
    """

    X: np.ndarray
    labels: np.ndarray
    counterpart_labels: np.ndarray
    is_idi: np.ndarray
    counterpart_index: np.ndarray
    proba: np.ndarray | None = None
    own_proba: np.ndarray | None = None

    def counterparts(self, domain: Domain) -> np.ndarray:
        """The reported counterpart of each input (the input itself where ``counterpart_index`` is -1).

        Returns
        -------
        numpy.ndarray of int64, shape (n_samples, n_features)
        """
        out = self.X.copy()
        has = self.counterpart_index >= 0
        out[np.ix_(has, list(domain.protected))] = domain.combinations[self.counterpart_index[has]]
        return out

    @property
    def counterpart_label(self) -> np.ndarray:
        """Label of the reported counterpart, shape (n_samples,)."""
        idx = np.maximum(self.counterpart_index, 0)
        lab = self.counterpart_labels[np.arange(len(idx)), idx]
        return np.where(self.counterpart_index >= 0, lab, self.labels)


# Largest number of model rows built at once by one check (inputs x combinations).
CHUNK_ROWS = 1 << 18


class DiscriminationCheck:
    """Batched discrimination check of a model over a domain's protected attributes.

    Parameters
    ----------
    model : CountingModel
        The model under test (queries are counted by it).
    domain : Domain
        Must have at least one protected attribute.

    Raises
    ------
    DomainError
        If the domain has no protected attribute.

    References
    ----------
    .. [1] Galhotra, Brun, Meliou. "Fairness testing: testing software for discrimination." FSE 2017.
    .. [2] Zhang et al. "White-box fairness testing through adversarial sampling." ICSE 2020.
    """

    def __init__(self, model: CountingModel, domain: Domain):
        self.model = model
        self.domain = domain
        self.combinations = domain.combinations
        sizes = [a.size for a in domain.attributes]
        # Position of an attribute's value in the combination index (the last attribute varies fastest).
        self._strides = np.cumprod([1] + sizes[::-1][:-1])[::-1].astype(np.int64)
        self._pa_values = [a.value_array() for a in domain.attributes]

    @property
    def n_combinations(self) -> int:
        """Number of PA-value combinations (model queries per checked input)."""
        return len(self.combinations)

    def own_combination(self, X: np.ndarray) -> np.ndarray:
        """Index of each input's own PA combination, shape (n_samples,).

        -1 when some PA value is outside its domain (a missing protected value, or a group's row that is
        none of its valid rows): such an input is checked against every valid combination, at one more
        query, and is never itself a counterpart.
        """
        position = self.domain.protected_value_index(X)
        idx = np.maximum(position, 0) @ self._strides
        return np.where((position >= 0).all(axis=1), idx, -1)

    def check(self, X, *, with_proba: bool = False) -> CheckResult:
        """Run the discrimination check on every row of ``X`` in one model batch.

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Inputs inside the domain.
        with_proba : bool
            Also return positive-class probabilities (needs ``predict_proba``; labels still come from
            ``predict``; each row counts as one query all the same).

        Returns
        -------
        CheckResult
            Costs n_samples × n_combinations model queries (plus one per input whose PA values are outside
            the PA domains).
        """
        X = np.asarray(X, dtype=np.int64)
        n, k = len(X), self.n_combinations
        if n == 0:
            empty = np.zeros((0, k), dtype=np.int64)
            return CheckResult(X.reshape(0, self.domain.n_features), np.zeros(0, np.int64), empty,
                               np.zeros(0, bool), np.zeros(0, np.int64),
                               np.zeros((0, k)) if with_proba else None,
                               np.zeros(0) if with_proba else None)
        own = self.own_combination(X)
        inside = own >= 0
        cf_labels, outside_labels, proba, outside_proba = self._predict_counterparts(X, inside, with_proba)
        labels = np.empty(n, dtype=np.int64)
        labels[inside] = cf_labels[inside, own[inside]]
        labels[~inside] = outside_labels
        differs = cf_labels != labels[:, None]
        is_idi = differs.any(axis=1)
        cf_index = np.where(is_idi, differs.argmax(axis=1), -1)
        own_proba = None
        if with_proba:
            own_proba = np.empty(n)
            own_proba[inside] = proba[inside, own[inside]]
            own_proba[~inside] = outside_proba
            far = np.abs(proba - own_proba[:, None]).argmax(axis=1)
            cf_index = np.where(is_idi, cf_index, far)
        return CheckResult(X, labels, cf_labels, is_idi, cf_index.astype(np.int64), proba, own_proba)

    def _predict_counterparts(self, X: np.ndarray, inside: np.ndarray, with_proba: bool):
        """Labels (and P(y=1)) of every counterpart, shape (n, K), and of the inputs outside the PA domains.

        Inputs go in chunks of at most ``CHUNK_ROWS`` model rows, so that the (n, K, d) counterpart array
        never has to exist at once for a large batch.
        """
        n, k = len(X), self.n_combinations
        step = max(1, CHUNK_ROWS // k)
        parts = []
        for start in range(0, n, step):
            chunk, chunk_inside = X[start:start + step], inside[start:start + step]
            rows = self.domain.counterparts(chunk).reshape(len(chunk) * k, -1)
            rows = np.concatenate([rows, chunk[~chunk_inside]])
            if with_proba:
                parts.append(self.model.predict_with_proba(rows))
            else:
                parts.append((self.model.predict(rows), None))
        cut = [len(X[s:s + step]) * k for s in range(0, n, step)]
        cf = np.concatenate([lab[:c] for (lab, _), c in zip(parts, cut, strict=True)]).reshape(n, k)
        out = np.concatenate([lab[c:] for (lab, _), c in zip(parts, cut, strict=True)])
        if not with_proba:
            return cf, out, None, None
        pcf = np.concatenate([p[:c] for (_, p), c in zip(parts, cut, strict=True)]).reshape(n, k)
        pout = np.concatenate([p[c:] for (_, p), c in zip(parts, cut, strict=True)])
        return cf, out, pcf, pout

    def is_idi(self, X) -> np.ndarray:
        """Shortcut for ``check(X).is_idi``, shape (n_samples,)."""
        return self.check(X).is_idi
