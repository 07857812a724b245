"""Turning a ``random_state`` into a :class:`numpy.random.Generator`, once, at each entry point.

``random_state`` accepts what scikit-learn accepts: None, an int, a :class:`numpy.random.RandomState`, and also
a :class:`numpy.random.Generator`. :func:`resolve_random_state` also returns a description for a result's
``meta``, so that every run records what drove it, whatever the type.
"""

from __future__ import annotations

import hashlib
import numbers
from typing import cast

import numpy as np

from .exceptions import ConfigError

RandomState = int | np.integer | np.random.RandomState | np.random.Generator | None

# The largest seed drawn from a RandomState, as scikit-learn draws them (np.iinfo(np.int32).max).
_MAX_DRAWN_SEED = 2**31 - 1


def as_generator(random_state: RandomState) -> np.random.Generator:
    """Return a generator for ``random_state``.

    Parameters
    ----------
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        An int seeds a new PCG64 generator; a generator is returned as is (and advances); a RandomState gives
        a new generator seeded by an int drawn from it (so the RandomState advances, as scikit-learn's
        estimators advance it); ``None`` draws fresh entropy (not reproducible).

    Returns
    -------
    numpy.random.Generator

    Raises
    ------
    ConfigError
        If ``random_state`` is a negative int or of another type.
    """
    return resolve_random_state(random_state)[0]


def resolve_random_state(random_state: RandomState) -> tuple[np.random.Generator, int | str]:
    """Return a generator for ``random_state`` and a readable description of it for a result's ``meta``.

    Parameters
    ----------
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        As in :func:`as_generator`.

    Returns
    -------
    rng : numpy.random.Generator
    description : int or str
        The int itself for an int (pass it again to reproduce the run). Otherwise a string: for None and a
        RandomState, the int seed drawn (``random_state=<that int>`` reproduces the run); for a Generator, its
        bit generator and a digest of its state at the start (equal digests, equal streams).

    Raises
    ------
    ConfigError
        If ``random_state`` is a negative int or of another type.
    """
    if isinstance(random_state, np.random.Generator):
        return random_state, _describe_generator(random_state)
    if isinstance(random_state, np.random.RandomState):
        seed = int(random_state.randint(0, _MAX_DRAWN_SEED))
        return np.random.default_rng(seed), f"numpy.random.RandomState, drew seed {seed}"
    if random_state is None:
        seed = int(cast(int, np.random.SeedSequence().entropy))  # without a given entropy, one int is drawn
        return np.random.default_rng(seed), f"None (fresh entropy), drew seed {seed}"
    if isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral):
        raise ConfigError("random_state must be None, an int >= 0, a numpy.random.RandomState or a "
                          f"numpy.random.Generator, got {random_state!r}")
    if random_state < 0:
        raise ConfigError(f"random_state must be >= 0, got {random_state}")
    return np.random.default_rng(int(random_state)), int(random_state)


def _describe_generator(rng: np.random.Generator) -> str:
    bit_generator = rng.bit_generator
    digest = hashlib.sha256(repr(bit_generator.state).encode()).hexdigest()[:12]
    return f"numpy.random.Generator({type(bit_generator).__name__}), state digest {digest}"


def derive_seed(rng: np.random.Generator) -> int:
    """Draw an int seed from ``rng`` for a library that takes an int (sklearn, torch)."""
    return int(rng.integers(0, 2**31 - 1))
