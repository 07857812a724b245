"""The gradient of a black box, estimated by finite differences of its probabilities (MAFT's zero-order gradient).

d P(y=1)/dx_j is estimated as (P(x + δ_j e_j) - P(x)) / δ_j for every movable non-protected feature j at once:
one probe row per input and feature, all inputs' probes in one ``predict_proba`` batch. P(x) itself is known
from the discrimination check of x, so an input costs exactly one query per movable non-protected feature.
Probes stay inside the domain: δ_j is ``+step`` where x_j + step fits the feature's bounds, else ``-step``,
else the longer of the two moves that reach a bound. Protected attributes and single-valued features get 0: the
gradient generators never step along them. A change of P smaller than :data:`MIN_CHANGE` counts as none. With
constraints over the domain (architecture: counterparts that could exist), a probe that breaks one is not sent: the
opposite step is tried, else that feature's estimate is 0.

References
----------
.. [1] Wang, Zhao, Xu, Wang, Wang, Bu. "MAFT: Efficient model-agnostic fairness testing for deep neural
   networks via zero-order gradient search." ICSE 2024. Code: ``wangzh1998/MAFT`` (``MAFT.py``,
   ``compute_grad``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..domain import Domain
from ..models.protocol import CountingModel

# Largest number of probe rows built at once (inputs x probed features), as the discrimination check's chunks.
CHUNK_ROWS = 1 << 18

# A change of P(y=1) this small is rounding, not signal, and estimates 0: float64 resolves a probability near 1
# to 1.1e-16 but one near 0 to far less, so without it a saturated model (P = 1 - 1e-20 in float64 is 1.0) would
# give 0 with one class positive and a tiny nonzero slope, whose sign steers EIDIG's step, with the other.
MIN_CHANGE = 1e-14


def probed_features(domain: Domain) -> np.ndarray:
    """Column indices that the estimate probes: non-protected features with more than one value, shape (m,).

    Parameters
    ----------
    domain : Domain

    Returns
    -------
    numpy.ndarray of int64, shape (m,)
    """
    idx = domain.non_protected
    return idx[domain.upper[idx] > domain.lower[idx]]


def probe_steps(X: np.ndarray, domain: Domain, columns: np.ndarray, step: float) -> np.ndarray:
    """Signed probe step δ of every input and probed feature, shape (n, m); never 0, and x + δ in the bounds.

    ``+step`` where x + step <= hi, else ``-step`` where x - step >= lo, else the longer of hi - x and lo - x
    (a feature narrower than ``step``).

    Parameters
    ----------
    X : numpy.ndarray of int64, shape (n, n_features)
        Inputs.
    domain : Domain
    columns : numpy.ndarray of int64, shape (m,)
        :func:`probed_features`.
    step : float
        The probe's size, in codes.

    Returns
    -------
    numpy.ndarray of float64, shape (n, m)
    """
    x = np.asarray(X, dtype=np.float64)[:, columns]
    lo, hi = domain.lower[columns], domain.upper[columns]
    partial = np.where(hi - x >= x - lo, hi - x, lo - x)
    return np.where(x + step <= hi, step, np.where(x - step >= lo, -step, partial))


def finite_difference_gradient(model: CountingModel, domain: Domain, X, p, *, step: float = 1.0,
                               across_plateaus: bool = False) -> np.ndarray:
    """Estimate d P(y=1)/dx at every row of ``X`` from the model's probabilities.

    Parameters
    ----------
    model : CountingModel
        Needs ``predict_proba``; the probes are counted by it like every other query.
    domain : Domain
    X : array-like of int, shape (n, n_features)
        Inputs inside the domain.
    p : array-like of float, shape (n,)
        P(y=1) at ``X`` (known from the inputs' discrimination checks, so not queried again).
    step : float
        Probe size, in encoded units (default 1.0: the nearest other code).
    across_plateaus : bool, default=False
        Where a probe sees no change (a tree's plateau), probe again: on the other side (``-δ``), then, where that
        is flat too, a quarter of the feature's range away (at least ``2 * step``), and take the first change
        seen, divided by its own step. On a smooth model no probe is flat and nothing more is sent.

    Returns
    -------
    numpy.ndarray of float64, shape (n, n_features)
        0 on the protected attributes and on single-valued features (and, across plateaus, where every probe was
        flat). Costs ``n * m`` model queries, m = ``len(probed_features(domain))`` (fewer where a probe would break
        a constraint), plus one or two per flat probe ``across_plateaus``.

    Raises
    ------
    ModelCapabilityError
        If the model has no ``predict_proba``.
    """
    X = np.asarray(X, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    n, d = X.shape
    out = np.zeros((n, d))
    columns = probed_features(domain)
    m = len(columns)
    if n == 0 or m == 0:
        return out
    delta = probe_steps(X, domain, columns, step)
    per_chunk = max(1, CHUNK_ROWS // m)
    wide = np.maximum(2 * step, np.ceil((domain.upper[columns] - domain.lower[columns]) / 4))
    for start in range(0, n, per_chunk):
        rows = slice(start, start + per_chunk)
        chunk, dchunk = X[rows], _allowed_steps(X[rows], domain, columns, delta[rows])
        change = _probe_changes(model, chunk, p[rows], columns, dchunk)
        if across_plateaus:
            for retry in (-dchunk, np.sign(dchunk) * wide):
                _probe_flat_again(model, domain, chunk, p[rows], columns, dchunk, change, retry)
        out[rows, columns] = np.where(np.abs(change) > MIN_CHANGE, change, 0.0) / np.where(dchunk != 0, dchunk, 1.0)
    return out


def _probe_flat_again(model: CountingModel, domain: Domain, X: np.ndarray, p: np.ndarray, columns: np.ndarray,
                      delta: np.ndarray, change: np.ndarray, retry: np.ndarray) -> None:
    """Probe the flat entries of ``change`` again at ``retry`` (clipped, allowed); where P moves, update in place.

    ``delta`` and ``change`` (shape (n, m)) take the new step and change of every entry where the probe saw one.
    """
    flat = (np.abs(change) <= MIN_CHANGE) & (delta != 0)
    rows = np.flatnonzero(flat.any(axis=1))
    if not len(rows):
        return
    sub = X[rows]
    x = sub[:, columns]
    proposal = np.where(flat[rows], np.clip(x + retry[rows], domain.lower[columns], domain.upper[columns]) - x, 0.0)
    proposal = _allowed_steps(sub, domain, columns, proposal)
    again = _probe_changes(model, sub, p[rows], columns, proposal)
    seen = (np.abs(again) > MIN_CHANGE) & flat[rows]
    block_change, block_delta = change[rows], delta[rows]
    block_change[seen], block_delta[seen] = again[seen], proposal[seen]
    change[rows], delta[rows] = block_change, block_delta


def _probe_changes(model: CountingModel, X: np.ndarray, p: np.ndarray, columns: np.ndarray,
                   delta: np.ndarray) -> np.ndarray:
    """P(x + delta_j e_j) - P(x) for every row and probed column, shape (n, m); 0 where delta is 0 (not sent)."""
    n, m = delta.shape
    probes = np.repeat(X, m, axis=0)
    probes[np.arange(len(probes)), np.tile(columns, n)] += delta.ravel()
    sent = delta.ravel() != 0
    change: np.ndarray = np.zeros(len(probes))
    if sent.any():
        change[sent] = model.predict_proba(probes[sent])[:, 1] - np.repeat(p, m)[sent]
    return change.reshape(n, m)


def _probe_allowed(X, domain: Domain, cols, step, lo, hi) -> np.ndarray:
    """Whether each probe (row of ``X`` repeated per probed feature, ``cols`` moved by ``step``) is a valid input."""
    probes = np.repeat(X, len(cols) // max(len(X), 1), axis=0)
    value = probes[np.arange(len(cols)), cols] + step
    inside = (value >= lo) & (value <= hi)
    probes[np.arange(len(cols)), cols] = np.clip(value, lo, hi)
    return inside & domain.satisfies(probes)


def _allowed_steps(X: np.ndarray, domain: Domain, columns: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """``delta`` where the probe satisfies the domain's constraints, else the opposite step, else 0 (no probe).

    A probe that breaks a constraint (architecture: counterparts that could exist) is an input that cannot occur: it is
    not sent, and the feature's estimate there is 0, so the gradient steps never lean on it.
    """
    if not domain.constraints:
        return delta
    n, m = delta.shape
    cols = np.tile(columns, n)
    lo, hi = domain.lower[cols], domain.upper[cols]
    forward = delta.reshape(-1)
    ok_forward = _probe_allowed(X, domain, cols, forward, lo, hi)
    ok_backward = _probe_allowed(X, domain, cols, -forward, lo, hi)
    out = np.where(ok_forward, forward, np.where(ok_backward, -forward, 0.0))
    return out.reshape(n, m)


@dataclass(frozen=True)
class FiniteDifferences:
    """A gradient source (:class:`~chiralfair.generators.gradient_steps.GradientSource`) for black boxes.

    Parameters
    ----------
    step : float
        Probe size, in encoded units (see :func:`finite_difference_gradient`).
    across_plateaus : bool
        Probe flat entries again (see :func:`finite_difference_gradient`).
    """

    step: float = 1.0
    across_plateaus: bool = False
    capability: ClassVar[str] = "predict_proba"

    def pair(self, model: CountingModel, domain: Domain, X: np.ndarray, C: np.ndarray, p: np.ndarray,
             p_counterpart: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Estimates at the inputs ``X`` and their counterparts ``C``, shape (n, n_features) each, in one batch.

        Costs ``2 n m`` queries (m probed features).

        Parameters
        ----------
        model : CountingModel
        domain : Domain
        X : numpy.ndarray of int64, shape (n, n_features)
            Inputs.
        C : numpy.ndarray of int64, shape (n, n_features)
            Their counterparts.
        p : numpy.ndarray of float64, shape (n,)
            P(y=1) at ``X``.
        p_counterpart : numpy.ndarray of float64, shape (n,)
            P(y=1) at ``C``.

        Returns
        -------
        gradient : numpy.ndarray of float64, shape (n, n_features)
            At ``X``.
        gradient_counterpart : numpy.ndarray of float64, shape (n, n_features)
            At ``C``.
        """
        n = len(X)
        g = finite_difference_gradient(model, domain, np.concatenate([X, C]), np.concatenate([p, p_counterpart]),
                                       step=self.step, across_plateaus=self.across_plateaus)
        return g[:n], g[n:]

    def rows_per_pair(self, n_features: int) -> int:
        """Upper bound on queries per input and counterpart: ``2 (n_features - 1)`` (at least one PA column).

        Three times that ``across_plateaus`` (up to three probes per feature).

        Parameters
        ----------
        n_features : int

        Returns
        -------
        int
        """
        return 2 * (3 if self.across_plateaus else 1) * max(int(n_features) - 1, 0)
