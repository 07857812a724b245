"""Each person's neighbourhood of similar inputs, as boxes of codes: the ``similar=`` option of per-person certificates.

``similar={"age": 2, "hours_per_week": 4}`` asks, for each held-out person ``x``, about every input ``z`` with
``|z_j - x_j| <= r_j`` on the listed features and ``z_j = x_j`` on every other one (the protected attributes aside:
every combination of theirs is compared, as always). Radii are in the data's own units: for a benchmark (already
encoded) and a column of whole numbers the code is the value, so a radius of 2 holds the codes ``x_j - 2 .. x_j + 2``
that lie in the domain. A categorical feature stays fixed unless it is given a set of values (``{"workclass":
{"Private", "State-gov"}}``): the person's own value and those, one box per value. Refused, naming the feature: a
name the data does not have (the valid names listed), a protected attribute or a column coupled to one, a negative,
infinite or NaN radius, a radius on a categorical feature or a set on a numeric one, and a radius on a binned column
(its codes are bins, whose widths vary: give the radius in bins by binning it as whole numbers, or leave it fixed).
For a model fed your own rows the neighbourhood is read on those rows instead, in your units, binned columns included
(:mod:`.people_grid`).

The boxes serve any certificate of boxes (:func:`~chiralfair.certification.certify_individuals` with ``boxes=``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import cast

import numpy as np

from ..exceptions import ConfigError


def check_similar(similar, domain, codec=None, *, raw: bool = False) -> dict[str, object]:
    """Check a ``similar=`` mapping against the domain; return it with names resolved.

    Parameters
    ----------
    similar : mapping of str to number or set of values
    domain : Domain
    codec : FrameCodec, optional
        The dataset's codec (binned columns are refused, unless ``raw``).
    raw : bool, default=False
        The neighbourhoods are read on your rows (a model fed them: :mod:`.people_grid`), so a radius is in your
        column's units even where the search bins it.

    Returns
    -------
    dict
        Feature name to radius (float) or tuple of values.

    Raises
    ------
    ConfigError
        Naming the feature and what is wrong.
    """
    if not isinstance(similar, Mapping) or not similar:
        raise ConfigError(f"similar must map feature names to radii, e.g. {{'age': 2}}, got {similar!r}")
    names = list(domain.names)
    protected = {names[c] for c in domain.protected}
    coupled = {names[c] for c in domain.coupled_columns}
    how = {} if codec is None else {str(c.name): c.how for c in codec.columns}
    out: dict[str, object] = {}
    for name, radius in similar.items():
        if name not in names:
            valid = [n for n in names if n not in protected]
            raise ConfigError(f"similar: unknown feature {name!r}; the features are {', '.join(valid)}")
        if name in protected:
            raise ConfigError(f"similar: {name!r} is a protected attribute; every value of it is compared already")
        if name in coupled:
            raise ConfigError(f"similar: {name!r} is coupled to a protected attribute and changes with it")
        feature = domain.features[names.index(name)]
        if isinstance(radius, (set, frozenset, list, tuple)):
            if feature.kind != "categorical":
                raise ConfigError(f"similar: {name!r} is numeric; give it a radius, not a set of values")
            out[name] = tuple(radius)
            continue
        if isinstance(radius, bool) or not isinstance(radius, (int, float, np.integer, np.floating)):
            raise ConfigError(f"similar: the radius of {name!r} must be a number, got {radius!r}")
        if not math.isfinite(float(radius)) or float(radius) < 0:
            raise ConfigError(f"similar: the radius of {name!r} must be a finite number >= 0, got {radius!r}")
        if feature.kind == "categorical":
            raise ConfigError(f"similar: {name!r} is categorical; give it a set of values (its own is kept), "
                              "not a radius")
        if how.get(name) in ("bin", "rank") and not raw:
            raise ConfigError(f"similar: {name!r} is binned (its codes are bins of unequal widths), so a radius in "
                              "its units has no box of codes; bin it as whole numbers or leave it out")
        out[name] = float(radius)
    return out


def similar_ranges(dataset, similar, *, raw: bool = False) -> dict[str, tuple]:
    """The range each radius of ``similar=`` is clipped to: a person's box never leaves it.

    Parameters
    ----------
    dataset : Dataset
    similar : mapping
        As :func:`check_similar` returns it.
    raw : bool, default=False
        The neighbourhoods are read on your rows (:mod:`.people_grid`): the range is the smallest and largest value
        of your column over every row of the data; else the domain's first and last code, as their values.

    Returns
    -------
    dict
        Feature name to ``(low, high)`` in your values, for each feature given a radius (not a set of values).
    """
    out: dict[str, tuple] = {}
    names = list(dataset.domain.names)
    for name, radius in similar.items():
        if isinstance(radius, tuple):
            continue
        if raw:
            column = dataset.raw[name]
            values = column.to_numpy(dtype=np.float64)[column.notna().to_numpy()]
            low, high = float(values.min()), float(values.max())
            out[name] = (int(low), int(high)) if low.is_integer() and high.is_integer() else (low, high)
        else:
            feature = dataset.domain.features[names.index(name)]
            out[name] = (feature.label(feature.lo), feature.label(feature.hi))
    return out


def similar_ranges_note(similar, ranges: dict[str, tuple]) -> str:
    """The output's note on the ranges the boxes were clipped to, naming each radius that spans its whole range.

    Parameters
    ----------
    similar : mapping
        As :func:`check_similar` returns it.
    ranges : dict
        As :func:`similar_ranges` returns it.

    Returns
    -------
    str
        E.g. ``similar: each person's box is clipped to the data's range of each column: age 17 to 90 (age=1e+09
        spans all of it: every person's box holds every age in it)``.
    """
    parts, whole = [], []
    for name, (low, high) in ranges.items():
        parts.append(f"{name} {low} to {high}")
        try:
            span = float(high) - float(low)
        except (TypeError, ValueError):  # a range of labels that are not numbers
            continue
        if float(similar[name]) >= span:
            whole.append(f"{name}={float(similar[name]):g}")
    text = "similar: each person's box is clipped to the data's range of each column: " + ", ".join(parts)
    if whole:
        text += (f" ({', '.join(whole)} {'spans' if len(whole) == 1 else 'span'} all of it: every person's box "
                 "holds every value of " + ("that column" if len(whole) == 1 else "those columns") + " in it)")
    return text


def similar_boxes(dataset, rows: np.ndarray, similar) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each person's neighbourhood as boxes of codes (one per chosen value of the categorical features given sets).

    Parameters
    ----------
    dataset : Dataset
    rows : numpy.ndarray of int64, shape (n_people,)
        The people (dataset rows).
    similar : mapping
        As :func:`check_similar` accepts.

    Returns
    -------
    lo, hi : numpy.ndarray of int64, shape (n_boxes, n_features)
        Protected columns hold the person's own codes (every combination is compared anyway).
    person : numpy.ndarray of int64, shape (n_boxes,)
        The position in ``rows`` of each box's person.

    Raises
    ------
    ConfigError
        As :func:`check_similar`, and for a value not among a categorical feature's.
    """
    domain = dataset.domain
    checked = check_similar(similar, domain, getattr(dataset, "codec", None))
    X = np.asarray(dataset.X[rows], dtype=np.int64)
    lo, hi = X.copy(), X.copy()
    sets: list[tuple[int, np.ndarray]] = []
    for name, radius in checked.items():
        f = list(domain.names).index(name)
        feature = domain.features[f]
        if isinstance(radius, tuple):
            sets.append((f, _codes_of(feature, radius)))
            continue
        r = int(math.floor(cast(float, radius) + 1e-9))
        lo[:, f] = np.maximum(X[:, f] - r, feature.lo)
        hi[:, f] = np.minimum(X[:, f] + r, feature.hi)
    person = np.arange(len(X), dtype=np.int64)
    if not sets:
        return lo, hi, person
    parts_lo, parts_hi, parts_person = [], [], []
    for choice in itertools.product(*[np.concatenate([[-1], codes]) for _, codes in sets]):
        keep = np.ones(len(X), dtype=bool)
        p_lo, p_hi = lo.copy(), hi.copy()
        for (f, _), code in zip(sets, choice, strict=True):
            if code < 0:  # the person's own value
                continue
            keep &= X[:, f] != code  # own value already in the box where code == -1
            p_lo[:, f] = code
            p_hi[:, f] = code
        parts_lo.append(p_lo[keep])
        parts_hi.append(p_hi[keep])
        parts_person.append(person[keep])
    return np.concatenate(parts_lo), np.concatenate(parts_hi), np.concatenate(parts_person)


def _codes_of(feature, values) -> np.ndarray:
    codes = []
    labels = {feature.label(c): c for c in range(feature.lo, feature.hi + 1)}
    for v in values:
        if str(v) in labels:
            codes.append(labels[str(v)])
        else:
            raise ConfigError(f"similar: {feature.name!r} has no value {v!r}; its values are "
                              f"{', '.join(list(labels)[:20])}")
    return np.unique(np.asarray(codes, dtype=np.int64))
