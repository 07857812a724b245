"""Counting IDIs by the one rule of design §2, shared by every generator.

Every generator sends its candidates through :meth:`IDIRecorder.check`, so that ``n_idis``, ``n_global``,
``n_local``, ``n_tested`` and ``n_queries`` mean the same thing for all of them.
"""

from __future__ import annotations

import time

import numpy as np

from ..domain import Domain
from ..models.protocol import CountingModel
from ..oracle import CheckResult, DiscriminationCheck
from ..results import SearchResult

PHASES = ("global", "local")


class IDIRecorder:
    """Runs discrimination checks and records unique IDIs (key = non-protected projection).

    A key first found in the global phase stays global; the local phase only records keys not yet seen as
    IDIs, so ``n_global`` and ``n_local`` are disjoint. Repeated visits count once.

    Parameters
    ----------
    model : CountingModel
    domain : Domain
        With the protected attributes under test.
    """

    def __init__(self, model: CountingModel, domain: Domain):
        self.model = model
        self.domain = domain
        self.checker = DiscriminationCheck(model, domain)
        self._tested: set = set()
        self._idi_keys: set = set()
        self._parts: list[tuple] = []
        self._n_phase = dict.fromkeys(PHASES, 0)
        self.n_checked = dict.fromkeys(PHASES, 0)
        self.n_seed_idis = 0
        self._queries0 = model.n_queries
        self._t0 = time.perf_counter()

    def check(self, X, phase: str, *, with_proba: bool = False) -> tuple[CheckResult, np.ndarray]:
        """Check a batch of candidates and record the new IDIs among them.

        Parameters
        ----------
        X : numpy.ndarray of int64, shape (n_samples, n_features)
            Candidates inside the domain (callers clip first).
        phase : {"global", "local"}
        with_proba : bool
            Also return probabilities (see :meth:`DiscriminationCheck.check`).

        Returns
        -------
        result : CheckResult
        new : numpy.ndarray of bool, shape (n_samples,)
            Rows that are IDIs with a key not recorded before (the first row of a key within the batch).
        """
        if phase not in PHASES:
            raise ValueError(f"phase must be one of {PHASES}, got {phase!r}")
        res = self.checker.check(X, with_proba=with_proba)
        self.n_checked[phase] += len(res.X)
        keys = self.domain.keys(res.X)
        self._tested.update(keys.tolist())
        new = np.zeros(len(keys), dtype=bool)
        idx = np.flatnonzero(res.is_idi)
        if len(idx):
            seen = self._idi_keys
            for i, k in zip(idx.tolist(), keys[idx].tolist(), strict=True):
                if k not in seen:
                    seen.add(k)
                    new[i] = True
        if new.any():
            self._n_phase[phase] += int(new.sum())
            self._parts.append((res.X[new], res.counterparts(self.domain)[new], res.labels[new],
                                res.counterpart_label[new], np.full(int(new.sum()), phase)))
        return res, new

    def is_recorded(self, X) -> np.ndarray:
        """Whether each row's key is already a recorded IDI, shape (n_samples,)."""
        keys = self.domain.keys(X).tolist()
        return np.fromiter((k in self._idi_keys for k in keys), dtype=bool, count=len(keys))

    def is_tested(self, X) -> np.ndarray:
        """Whether each row's key was already checked (in either phase), shape (n_samples,)."""
        keys = self.domain.keys(X).tolist()
        return np.fromiter((k in self._tested for k in keys), dtype=bool, count=len(keys))

    @property
    def n_idis(self) -> int:
        """Unique IDI keys recorded so far."""
        return len(self._idi_keys)

    @property
    def n_tested(self) -> int:
        """Unique keys checked so far."""
        return len(self._tested)

    @property
    def n_queries(self) -> int:
        """Model queries since this recorder was created."""
        return self.model.n_queries - self._queries0

    @property
    def seconds(self) -> float:
        """Wall seconds since this recorder was created."""
        return time.perf_counter() - self._t0

    def result(self, *, generator: str, seed_strategy: str, n_seeds: int, n_seed_idis: int,
               notes=(), meta=None) -> SearchResult:
        """Freeze what was recorded into a :class:`SearchResult`."""
        d = self.domain.n_features
        if self._parts:
            X, C, y, yc, ph = (np.concatenate(p) for p in zip(*self._parts, strict=True))
        else:
            X = C = np.zeros((0, d), dtype=np.int64)
            y = yc = np.zeros(0, dtype=np.int64)
            ph = np.zeros(0, dtype="<U6")
        return SearchResult(
            generator=generator, seed_strategy=seed_strategy, n_seeds=int(n_seeds),
            n_seed_idis=int(n_seed_idis), n_idis=self.n_idis, n_global=self._n_phase["global"],
            n_local=self._n_phase["local"], n_tested=self.n_tested, n_queries=self.n_queries,
            seconds=self.seconds, idis=X, counterparts=C, idi_labels=y, counterpart_labels=yc,
            phase=ph.astype(str), notes=tuple(notes), meta=dict(meta or {}))
