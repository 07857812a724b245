"""Seed strategies ``random`` (uniform draws from the domain) and ``rows`` (uniform data rows)."""

from __future__ import annotations

import numpy as np

from .base import SeedStrategy, register_seed_strategy


@register_seed_strategy("random")
class RandomSeeds(SeedStrategy):
    """Uniform draws from the input domain (THEMIS; AEQUITAS's global phase).

    Most likely what the I&D paper's Table 3 calls *Random* (0.7–9.7% initialization rate).

    References
    ----------
    .. [1] Galhotra, Brun, Meliou. "Fairness testing: testing software for discrimination." FSE 2017.
    .. [2] Udeshi, Arora, Chattopadhyay. "Automated directed fairness testing." ASE 2018.
    """

    name = "random"

    def _choose(self, model, dataset, n_seeds, rng):
        return dataset.domain.sample(n_seeds, rng), {}


@register_seed_strategy("rows")
class RowSeeds(SeedStrategy):
    """Uniform data rows, without replacement while the data has enough rows, then with replacement.

    An easier baseline than ``random``: real rows sit where the model was trained.
    """

    name = "rows"

    def _choose(self, model, dataset, n_seeds, rng):
        n = dataset.n_samples
        idx = rng.choice(n, size=n_seeds, replace=n_seeds > n)
        notes = (f"n_seeds={n_seeds} exceeds the {n} data rows: rows are drawn with replacement",) \
            if n_seeds > n else ()
        return dataset.X[idx], {"notes": notes}


def random_rows(X: np.ndarray, n: int, rng: np.random.Generator, *, exclude=None) -> np.ndarray:
    """Draw ``n`` rows of ``X`` uniformly (without replacement when possible), skipping rows in ``exclude``.

    Parameters
    ----------
    X : numpy.ndarray, shape (n_samples, n_features)
    n : int
    rng : numpy.random.Generator
    exclude : numpy.ndarray of bool, shape (n_samples,), optional

    Returns
    -------
    numpy.ndarray, shape (n, n_features)
    """
    pool = np.flatnonzero(~exclude) if exclude is not None else np.arange(len(X))
    if len(pool) == 0:
        pool = np.arange(len(X))
    idx = rng.choice(pool, size=n, replace=n > len(pool))
    return X[idx]
