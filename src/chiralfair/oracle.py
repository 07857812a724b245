"""The discrimination check (architecture: the counting rule): does some counterpart of ``x`` get another label.

Every combination of the protected attributes' domain values is tried, for a whole batch of inputs in one
model call; a protected attribute that spans several columns (one-hot) contributes only its valid rows. The
combination equal to the input's own PA values is the input itself, so its prediction comes for free: a
candidate costs at most ``n_combinations`` model queries (one more if its PA values lie outside the PA domains:
a missing protected value, or a group row that is none of the valid ones).

Counterparts come from :meth:`Domain.counterparts <chiralfair.domain.Domain.counterparts>`, so coupled columns
change with their attribute (architecture: counterparts that could exist). A counterpart that breaks one of the domain's
constraints cannot exist: it is not sent to the model (no query), carries the input's own label and probability, and
never makes the input an IDI (``CheckResult.possible``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np

from .domain import Domain
from .models.protocol import CountingModel

if TYPE_CHECKING:
    from .datasets.population import Population


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
    possible : numpy.ndarray of bool, shape (n_samples, n_combinations), or None
        Whether each counterpart satisfies the domain's constraints (the input's own combination: whether x
        does); None when the domain has none (every counterpart is possible). An impossible counterpart was not
        sent to the model: its ``counterpart_labels`` and ``proba`` entries are x's own.
    plausible : numpy.ndarray of bool, shape (n_samples, n_combinations), or None
        Whether each counterpart is plausible (:meth:`Domain.plausible <chiralfair.domain.Domain.plausible>`),
        when asked for and the domain has a support.
    """

    X: np.ndarray
    labels: np.ndarray
    counterpart_labels: np.ndarray
    is_idi: np.ndarray
    counterpart_index: np.ndarray
    proba: np.ndarray | None = None
    own_proba: np.ndarray | None = None
    possible: np.ndarray | None = None
    plausible: np.ndarray | None = None

    def counterparts(self, domain: Domain) -> np.ndarray:
        """The reported counterpart of each input (the input itself where ``counterpart_index`` is -1).

        Built by :meth:`Domain.counterpart_rows <chiralfair.domain.Domain.counterpart_rows>`, couplings applied.

        Parameters
        ----------
        domain : Domain
            The domain the check ran on.

        Returns
        -------
        numpy.ndarray of int64, shape (n_samples, n_features)
        """
        out = self.X.copy()
        has = self.counterpart_index >= 0
        out[has] = domain.counterpart_rows(self.X[has], self.counterpart_index[has])
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
        none of its valid rows): such an input is never itself a counterpart, and the verdict leaves it out of
        every share and group (:func:`chiralfair.verdict.result.left_out_mask`).

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Codes.

        Returns
        -------
        numpy.ndarray of int64, shape (n_samples,)
        """
        position = self.domain.protected_value_index(X)
        if position.shape[1] == 1:  # one attribute: its value's position is the combination (-1 stays -1)
            return position[:, 0]
        idx = np.maximum(position, 0) @ self._strides
        return np.where((position >= 0).all(axis=1), idx, -1)

    def check(self, X, *, with_proba: bool = False, with_plausibility: bool = False,
              population: Population | None = None, satisfying: bool = False,
              own: np.ndarray | None = None, inside: bool = False) -> CheckResult:
        """Run the discrimination check on every row of ``X`` in one model batch.

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Inputs inside the domain.
        with_proba : bool
            Also return positive-class probabilities (needs ``predict_proba``; labels still come from
            ``predict``; each row counts as one query all the same).
        with_plausibility : bool
            Also say which counterparts are plausible (``CheckResult.plausible``; needs the domain's support,
            else it stays None). Costs no query.
        population : Population, optional
            The people ``X`` codes, as the user gave them (:mod:`chiralfair.datasets.population`), for a model
            fed frames: each person and their counterparts are then sent as rows (the protected and coupled
            columns changed, every other value the person's own), not as decoded codes.
        satisfying : bool, default=False
            Every row of ``X`` satisfies the domain's constraints (a caller that repaired them, as the search's
            recorder does), so the counterparts' possibility may come without a lookup
            (:meth:`Domain.possible_counterparts <chiralfair.domain.Domain.possible_counterparts>`). Not checked.
        own : numpy.ndarray of int64, shape (n_samples,), optional
            :meth:`own_combination` of ``X``, when the caller has it (a local walk reads it for its own bookkeeping).
            Not checked.
        inside : bool, default=False
            Every code of ``X`` is inside its column's bounds (a local walk's clipped moves), so the counterparts'
            coupled codes are read without comparing them (:meth:`Domain.counterparts
            <chiralfair.domain.Domain.counterparts>`). Not checked.

        Returns
        -------
        CheckResult
            Costs n_samples × n_combinations model queries (plus one per input whose PA values are outside
            the PA domains), less one per impossible counterpart.
        """
        X = np.asarray(X, dtype=np.int64)
        n, k = len(X), self.n_combinations
        if population is not None and (len(population) != n or not self.model.reads_people):
            raise ValueError("population must hold the people X codes, for a model fed frames")
        if n == 0:
            empty = np.zeros((0, k), dtype=np.int64)
            return CheckResult(X.reshape(0, self.domain.n_features), np.zeros(0, np.int64), empty,
                               np.zeros(0, bool), np.zeros(0, np.int64),
                               np.zeros((0, k)) if with_proba else None,
                               np.zeros(0) if with_proba else None,
                               np.zeros((0, k), bool) if self.domain.constraints else None,
                               np.zeros((0, k), bool) if with_plausibility and self.domain.support else None)
        own = self.own_combination(X) if own is None else np.asarray(own, dtype=np.int64)
        in_pa_domains = own >= 0
        cf_labels, outside_labels, proba, outside_proba, possible, plausible, some_impossible = (
            self._predict_counterparts(X, own, with_proba, with_plausibility, population, satisfying, inside))
        labels = np.empty(n, dtype=np.int64)
        labels[in_pa_domains] = cf_labels[in_pa_domains, own[in_pa_domains]]
        labels[~in_pa_domains] = outside_labels
        own_proba = None
        if with_proba:
            own_proba = np.empty(n)
            own_proba[in_pa_domains] = proba[in_pa_domains, own[in_pa_domains]]
            own_proba[~in_pa_domains] = outside_proba
        if some_impossible:  # impossible counterparts were not queried: they take x's own outcome
            cf_labels = np.where(possible, cf_labels, labels[:, None])
            if own_proba is not None:
                proba = np.where(possible, proba, own_proba[:, None])
        differs = cf_labels != labels[:, None]
        is_idi = _any_per_row(differs)
        cf_index = np.where(is_idi, differs.argmax(axis=1), -1)
        if own_proba is not None:  # with_proba
            gap = np.abs(proba - own_proba[:, None])
            if some_impossible:
                gap = np.where(possible, gap, -1.0)
            cf_index = np.where(is_idi, cf_index, gap.argmax(axis=1))
        return CheckResult(X, labels, cf_labels, is_idi, cf_index.astype(np.int64), proba, own_proba, possible,
                           plausible)

    def _predict_counterparts(self, X: np.ndarray, own: np.ndarray, with_proba: bool, with_plausibility: bool,
                              population: Population | None = None, satisfying: bool = False,
                              inside: bool = False):
        """Labels (and P(y=1)) of every counterpart, shape (n, K), and of the inputs outside the PA domains.

        Inputs go in chunks of at most ``CHUNK_ROWS`` model rows, so that the (n, K, d) counterpart array
        never has to exist at once for a large batch. With constraints, only the possible counterparts and the
        input itself are sent; the others' entries are left at -1 (labels) and NaN (probabilities), and
        ``possible`` (n, K) says which they are (None without constraints), and the last value whether some
        counterpart is impossible. ``plausible`` (n, K) when asked. With ``population``, the rows sent are the
        people's own rows with the counterparts' changes.
        """
        n, k = len(X), self.n_combinations
        domain = self.domain
        constrained = bool(domain.constraints)
        step = max(1, CHUNK_ROWS // k)
        cf = np.full((n, k), -1, dtype=np.int64)
        pcf = np.full((n, k), np.nan) if with_proba else None
        possible = np.ones((n, k), dtype=bool) if constrained else None
        # rows that meet the rules have only possible counterparts under some couplings (census's): nothing to look up
        look_up = constrained and not (satisfying and domain.counterparts_of_satisfying_rows_possible())
        plausible = np.ones((n, k), dtype=bool) if with_plausibility and domain.support is not None else None
        out, pout = [], []
        some_impossible = False
        for start in range(0, n, step):
            chunk, chunk_own = X[start:start + step], own[start:start + step]
            m = len(chunk)
            rows = domain.counterparts(chunk, inside=inside).reshape(m * k, -1)
            send = None  # every counterpart is sent
            if possible is not None and look_up:
                ok = domain.possible_counterparts(chunk, satisfying=satisfying)
                if not ok.all():
                    some_impossible = True
                    possible[start:start + m] = ok
                    itself = np.zeros((m, k), dtype=bool)
                    itself[np.flatnonzero(chunk_own >= 0), chunk_own[chunk_own >= 0]] = True
                    send = (ok | itself).ravel()
            if plausible is not None:
                # an array, not None: the domain has a support
                plausible[start:start + m] = cast(np.ndarray, domain.plausible(rows)).reshape(m, k)
            outside = chunk[chunk_own < 0]
            sent = rows if send is None else rows[send]
            if population is None:
                batch = np.concatenate([sent, outside]) if len(outside) else sent
            else:
                batch = _people_batch(population.take(np.arange(start, start + m)), sent, send, k, chunk_own < 0)
            lab, prob = self.model.predict_with_proba(batch) if with_proba else (self.model.predict(batch), None)
            n_sent = len(sent)
            self._fill(cf[start:start + m], send, lab[:n_sent])
            out.append(lab[n_sent:])
            if pcf is not None and prob is not None:  # with_proba
                self._fill(pcf[start:start + m], send, prob[:n_sent])
                pout.append(prob[n_sent:])
        return (cf, np.concatenate(out).astype(np.int64), pcf, np.concatenate(pout) if with_proba else None,
                possible, plausible, some_impossible)

    @staticmethod
    def _fill(block: np.ndarray, send: np.ndarray | None, values: np.ndarray) -> None:
        """Write the model's answers for the sent counterparts into ``block`` (m, K) in place (all: ``send`` None)."""
        if send is None:
            block[...] = values.reshape(block.shape)
        else:
            block.reshape(-1)[send] = values

    def is_idi(self, X, *, population: Population | None = None) -> np.ndarray:
        """Shortcut for ``check(X).is_idi``, shape (n_samples,).

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Codes.
        population : Population, optional
            As in :meth:`check`.

        Returns
        -------
        numpy.ndarray of bool, shape (n_samples,)
        """
        return self.check(X, population=population).is_idi


def _people_batch(people: Population, sent: np.ndarray, send: np.ndarray | None, k: int, outside: np.ndarray):
    """The rows sent for ``people``: their counterparts ``sent``, then the people ``outside`` the protected domains.

    ``sent`` are the (m * k, d) counterpart codes where ``send`` (all of them when it is None). Each counterpart is
    its person's own row with the columns it changes set to their new values.
    """
    import pandas as pd

    who = np.repeat(np.arange(len(people)), k)
    if send is not None:
        who = who[send]
    parts = [people.take(who).counterparts(sent)]
    if outside.any():
        parts.append(people.take(outside).frame)
    return parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)


def _any_per_row(flags: np.ndarray) -> np.ndarray:
    """``flags.any(axis=1)`` for a (n, k) bool array: column by column when k is small.

    numpy's reduction along a short row costs a loop per row (7 microseconds for 350 rows of two columns, against
    under 1 for or-ing the two columns), at every check of a search.
    """
    if flags.shape[1] > 8:
        return np.asarray(flags.any(axis=1))
    out = np.zeros(len(flags), dtype=bool)
    for j in range(flags.shape[1]):
        out |= flags[:, j]
    return out

