"""Turning a ``random_state`` into a :class:`numpy.random.Generator`, once, at each entry point."""

from __future__ import annotations

import numpy as np

from .exceptions import ConfigError

RandomState = int | np.random.Generator | None


def as_generator(random_state: RandomState) -> np.random.Generator:
    """Return a generator for ``random_state``.

    Parameters
    ----------
    random_state : int, numpy.random.Generator or None
        An int seeds a new PCG64 generator; a generator is returned as is; ``None`` draws fresh entropy
        (not reproducible).

    Returns
    -------
    numpy.random.Generator

    Raises
    ------
    ConfigError
        If ``random_state`` is a negative int or of another type.
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, bool) or not isinstance(random_state, int | np.integer):
        raise ConfigError(f"random_state must be an int, a numpy Generator or None, got {random_state!r}")
    if random_state < 0:
        raise ConfigError(f"random_state must be >= 0, got {random_state}")
    return np.random.default_rng(int(random_state))


def derive_seed(rng: np.random.Generator) -> int:
    """Draw an int seed from ``rng`` for a library that takes an int (sklearn, torch)."""
    return int(rng.integers(0, 2**31 - 1))
