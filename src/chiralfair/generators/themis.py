"""THEMIS-style random testing (Galhotra et al., FSE'17): uniform random inputs + the discrimination check."""

from __future__ import annotations

import numpy as np

from .._validation import check_int
from .base import Generator, register_generator
from .recorder import IDIRecorder


@register_generator("themis")
class Themis(Generator):
    """Uniform random inputs from the domain, each put through the discrimination check: the floor to beat.

    Global phase: the seeds (the first ``max_global``) are checked in one batch; the IDIs among them are the
    global IDIs. Local phase: ``max_local`` inputs drawn uniformly from the whole domain per global IDI, so
    the query budget equals that of the other generators; they are checked in chunks of ``chunk_size``.
    Nothing is directed: the "local" inputs do not depend on the global IDIs, only their number does.

    Parameters
    ----------
    max_global : int
        Seeds checked by the global phase.
    max_local : int
        Uniform random inputs checked per global IDI.
    chunk_size : int
        Inputs per discrimination check in the local phase (one model batch of ``chunk_size * K`` rows).

    Notes
    -----
    THEMIS itself estimates causal and group discrimination scores of attribute subsets with a confidence
    stopping rule (``LASER-UMASS/Themis``); benchmarks reduce it to "uniform random sampling + discrimination
    check", which is what this generator does. Repeated draws of one key count once (the original experiments
    counted duplicates). PA values are drawn uniformly from the PA domains.

    References
    ----------
    .. [1] Galhotra, Brun, Meliou. "Fairness testing: testing software for discrimination." FSE 2017.
    .. [2] Aggarwal et al. "Black box fairness testing of machine learning models." FSE 2019 (compares
       against THEMIS as random testing; §4.3.1 notes that THEMIS counted duplicate tests).
    """

    name = "themis"

    def __init__(self, *, max_global: int = 1000, max_local: int = 1000, max_queries: int | None = None,
                 chunk_size: int = 100_000):
        self.chunk_size = check_int(chunk_size, "chunk_size", minimum=1)
        super().__init__(max_global=max_global, max_local=max_local, max_queries=max_queries,
                         chunk_size=self.chunk_size)

    def _search(self, recorder: IDIRecorder, seeds: np.ndarray, rng: np.random.Generator):
        res, new = recorder.check(seeds, "global")
        recorder.n_seed_idis = int(res.is_idi.sum())
        remaining = int(new.sum()) * self.max_local
        while remaining > 0:
            n = min(remaining, self.chunk_size)
            recorder.check(recorder.domain.sample(n, rng), "local")
            remaining -= n
        return ()
