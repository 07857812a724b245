"""Checks of user-facing parameters, each raising an error that names the parameter and the bound."""

from __future__ import annotations

import numbers

import numpy as np

from .exceptions import ConfigError


def check_int(value, name: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` as an int, or raise :class:`ConfigError` naming ``name`` and the violated bound."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ConfigError(f"{name} must be <= {maximum}, got {value}")
    return value


def check_float(value, name: str, *, minimum: float | None = None, maximum: float | None = None,
                exclusive_minimum: bool = False) -> float:
    """Return ``value`` as a float, or raise :class:`ConfigError` naming ``name`` and the violated bound."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if value != value:
        raise ConfigError(f"{name} must not be NaN")
    if minimum is not None:
        if exclusive_minimum and value <= minimum:
            raise ConfigError(f"{name} must be > {minimum}, got {value}")
        if not exclusive_minimum and value < minimum:
            raise ConfigError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ConfigError(f"{name} must be <= {maximum}, got {value}")
    return value


def check_choice(value, name: str, choices) -> str:
    """Return ``value`` if it is one of ``choices``, else raise :class:`ConfigError` listing them."""
    if value not in choices:
        raise ConfigError(f"unknown {name} {value!r}; valid: {', '.join(sorted(map(str, choices)))}")
    return value


def check_training_data(X, y) -> tuple[np.ndarray, np.ndarray]:
    """Return ``X`` as float64 (n_samples, n_features) and ``y`` as int64 (n_samples,) labels 0/1.

    Raises
    ------
    ConfigError
        If ``X`` is not a non-empty 2-D finite array, ``y`` does not match its length, or ``y`` does not hold
        both labels 0 and 1.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if X.ndim != 2 or X.shape[0] == 0:
        raise ConfigError(f"X must be a non-empty 2-D array (n_samples, n_features), got shape {X.shape}")
    if y.shape != (X.shape[0],):
        raise ConfigError(f"y must have shape ({X.shape[0]},) to match X, got {y.shape}")
    if not np.all(np.isfinite(X)):
        raise ConfigError("X contains NaN or infinite values")
    labels = np.unique(y)
    if not np.array_equal(labels, [0, 1]):
        raise ConfigError(f"y must hold both labels 0 and 1 (binary task), got labels {labels.tolist()}")
    return X, y.astype(np.int64)


def check_keywords(params, function, name: str, *, fixed=()) -> None:
    """Refuse keys of ``params`` that ``function`` does not take as keyword arguments, listing those it takes.

    Parameters
    ----------
    params : mapping
        Keyword arguments a caller passes on to ``function``.
    function : callable
    name : str
        What the caller called them (``"verdict_params"``, ``"retrain's keyword arguments"``), for the message.
    fixed : sequence of str
        Arguments the caller sets itself: not the user's to give.

    Raises
    ------
    ConfigError
        Naming the unknown keys and the valid ones.
    """
    import inspect

    valid = sorted(p.name for p in inspect.signature(function).parameters.values()
                   if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in set(fixed))
    unknown = sorted(set(params or {}) - set(valid))
    if unknown:
        raise ConfigError(f"{name}: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
                          f"valid: {', '.join(valid)}")
