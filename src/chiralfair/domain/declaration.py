"""Declaring the protected attributes of a domain: what :meth:`Domain.with_protected` builds from names and data.

Which columns each name stands for (:func:`attribute_columns`), which values each attribute takes (declared, observed
in the data, or its columns' range: :func:`attribute_values`), and what the data says against a declaration: single
protected columns that are one one-hot attribute (:func:`warn_one_hot_columns`), declared values outside the
measured bounds (:func:`widened_to_declared`) or that no row holds (:func:`warn_unobserved_values`).
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from ..exceptions import DataWarning, DomainError
from .features import Feature, MissingPolicy, ProtectedAttribute, group_name, holds_no_value

if TYPE_CHECKING:
    from .domain import Domain

logger = logging.getLogger(__name__)


def attribute_columns(domain: Domain, names, groups) -> list[tuple[str, tuple[int, ...]]]:
    """The display name and the columns of each protected attribute that ``names`` declares.

    Parameters
    ----------
    domain : Domain
        The domain whose features the names refer to.
    names : str, sequence or mapping
        As :meth:`Domain.with_protected <chiralfair.domain.Domain.with_protected>` takes them.
    groups : mapping of str to sequence of str, optional
        Named groups of columns.

    Returns
    -------
    list of (str, tuple of int)
        (display name, column indices), one per attribute, in the order given.

    Raises
    ------
    DomainError
        If a name is unknown (listing the valid names), or an attribute names no column.
    """
    groups = {str(k): v for k, v in (groups or {}).items()}
    if isinstance(names, Mapping):
        groups.update({str(k): v for k, v in names.items()})
        names = [str(k) for k in names]
    if isinstance(names, str | int | np.integer) or not isinstance(names, Sequence | np.ndarray):
        names = [names]
    specs = []
    for item in names:
        if not isinstance(item, str) and isinstance(item, Sequence | np.ndarray):
            cols = tuple(domain.index(c) for c in item)
            specs.append((group_name([domain.features[c].name for c in cols]), cols))
        elif str(item) in groups:
            members = groups[str(item)]
            members = [members] if isinstance(members, str) or not isinstance(members, Sequence) else members
            specs.append((str(item), tuple(domain.index(c) for c in members)))
        else:
            i = domain.index(item)
            specs.append((domain.features[i].name, (i,)))
    for name, cols in specs:
        if not cols:
            raise DomainError(f"protected attribute {name!r} names no column")
    return specs


def attribute_values(features: Sequence[Feature], name: str, cols: tuple[int, ...], data, values,
                     policy: MissingPolicy) -> tuple:
    """The valid values of one protected attribute: declared, observed in ``data``, or its columns' whole range.

    Parameters
    ----------
    features : sequence of Feature
        The domain's features.
    name : str
        The attribute's display name.
    cols : tuple of int
        Its columns.
    data : numpy.ndarray of int, shape (n_samples, n_features), or None
        Encoded data; the attribute's values are the distinct rows of its columns there.
    values : mapping of str to sequence
        Declared values by attribute name; they are taken as given.
    policy : {"exclude", "value"}
        Whether a feature's missing-value code is left out of the observed values (``"exclude"``); so is, then, a
        one-hot group's row with no 1 (every column a 0/1 indicator column): it holds no value of the attribute.

    Returns
    -------
    tuple of tuple of int
        One row of codes per value (one code each for a single column).

    Raises
    ------
    DomainError
        For a group of columns that are not all 0/1, without data or declared values.
    """
    if name in values:
        declared = values[name]
        return tuple(tuple(np.atleast_1d(np.asarray(v, dtype=np.int64)).tolist()) for v in declared)
    feats = [features[c] for c in cols]
    if data is not None:
        rows = np.unique(np.asarray(data)[:, list(cols)].astype(np.int64), axis=0)
        if policy == "exclude":
            rows = rows[~holds_no_value(features, cols, rows)]
        return tuple(map(tuple, rows.tolist()))
    if len(cols) == 1:
        f = feats[0]
        excluded = f.missing if policy == "exclude" else None
        return tuple((v,) for v in range(f.lo, f.hi + 1) if v != excluded)
    if all(f.lo >= 0 and f.hi <= 1 for f in feats):
        return tuple(map(tuple, np.eye(len(cols), dtype=np.int64).tolist()))
    raise DomainError(f"protected attribute {name!r} groups the columns {[f.name for f in feats]}, which are "
                      "not all 0/1: give its valid rows as values={name: [[...], ...]} or pass data=")


ONE_HOT_SEPARATORS = "_.=:"


def warn_one_hot_columns(domain: Domain, attributes: Sequence[ProtectedAttribute], data: np.ndarray) -> None:
    """Refuse or warn when single protected columns belong to a one-hot encoded attribute.

    Columns are taken as one-hot when they share the name prefix before their last ``_``, ``.``, ``=`` or
    ``:``, hold only 0 and 1, and sum to 1 on every row of ``data``.

    - Some columns of such a group protected on their own, the others not (``sex_Male`` protected,
      ``sex_Female`` a feature): every counterpart is an impossible row (``(1, 0)`` becomes ``(0, 0)``), so
      this is refused.
    - All columns of the group protected one by one: the check tries every 0/1 combination of them, most of
      which are impossible rows; this is warned about.
    - An attribute over several columns holding some but not all of the group's (``sex_Female+race``): its
      counterparts set the columns it holds and keep the others, so most are impossible rows; this is refused,
      as the first case.

    Parameters
    ----------
    domain : Domain
        The domain whose features the attributes refer to.
    attributes : sequence of ProtectedAttribute
        The protected attributes being declared.
    data : numpy.ndarray of int64, shape (n_samples, n_features)
        The data rows, to tell one-hot columns.

    Raises
    ------
    DomainError
        In the first and the third case, naming the group to declare.

    Warns
    -----
    DataWarning
        In the second case.
    """
    single = {a.columns[0] for a in attributes if not a.is_group}
    for prefix, cols in _one_hot_groups(domain, data).items():
        for a in attributes:
            inside = [c for c in a.columns if c in cols]
            if a.is_group and inside and len(inside) < len(cols):
                names = tuple(domain.features[c].name for c in cols)
                shown = ", ".join(repr(domain.features[c].name) for c in inside)
                whole = [name for c in a.columns if c not in inside[1:]  # the group where its first held column is
                         for name in ((domain.features[c].name,) if c not in cols else names)]
                raise DomainError(
                    f"protected attribute {a.name!r} holds {shown} but not all of the one-hot columns "
                    f"{', '.join(map(repr, names))} (0/1, exactly one 1 per row): its counterparts would be "
                    "impossible rows (no 1, or two 1s); give the attribute every one of them: on the command line "
                    f"--protected {'+'.join(whole)!r}, in a schema protected = [{json.dumps(whole)}]")
        protected = [c for c in cols if c in single]
        if not protected:
            continue
        names = tuple(domain.features[c].name for c in cols)
        declare = (f"declare them as one attribute: protected=[..., {names!r}], or protected=[..., {prefix!r}] "
                   f"with protected_groups={{{prefix!r}: {list(names)!r}}} (groups= in Domain.with_protected); "
                   f"on the command line --protected {_command_line(domain, attributes, cols)!r}, in a schema "
                   f"protected = [{json.dumps(list(names))}]")
        if len(protected) < len(cols):
            shown = ", ".join(repr(domain.features[c].name) for c in protected)
            raise DomainError(
                f"protected column(s) {shown} are part of the one-hot columns {', '.join(map(repr, names))} (0/1, "
                "exactly one 1 per row): changing them alone gives only impossible counterparts (no 1, or two 1s); "
                + declare)
        n_products = 2 ** len(cols)
        message = (
            f"protected columns {', '.join(map(repr, names))} look like one one-hot attribute (0/1, exactly one "
            f"1 per row): as {len(cols)} separate protected attributes the check tries {n_products} combinations, "
            f"{n_products - len(cols)} of them impossible rows; " + declare)
        # Logged at INFO: the warning itself reaches the user; a WARNING log would print it twice.
        logger.info(message)
        warnings.warn(message, DataWarning, stacklevel=3)


def _command_line(domain: Domain, attributes: Sequence[ProtectedAttribute], group: Sequence[int]) -> str:
    """The ``--protected`` value declaring ``attributes`` with the columns ``group`` as one attribute ('+'-joined)."""
    joined = "+".join(domain.features[c].name for c in group)
    items: list[str] = []
    for a in attributes:
        if not a.is_group and a.columns[0] in group:
            if joined not in items:
                items.append(joined)
            continue
        items.append("+".join(domain.features[c].name for c in a.columns) if a.is_group else a.name)
    if joined not in items:
        items.append(joined)
    return ",".join(items)


def _one_hot_groups(domain: Domain, data: np.ndarray) -> dict[str, list[int]]:
    """Columns sharing a name prefix (before the last separator) that are one-hot on every row of ``data``."""
    by_prefix: dict[str, list[int]] = {}
    for c, f in enumerate(domain.features):
        cut = max(f.name.rfind(s) for s in ONE_HOT_SEPARATORS)
        if cut > 0 and f.lo >= 0 and f.hi <= 1:
            by_prefix.setdefault(f.name[:cut], []).append(c)
    out = {}
    for prefix, cols in by_prefix.items():
        block = data[:, cols]
        if len(cols) >= 2 and np.isin(block, (0, 1)).all() and (block.sum(axis=1) == 1).all():
            out[prefix] = cols
    return out


def widened_to_declared(features: tuple[Feature, ...], declared: Sequence[ProtectedAttribute]) -> tuple:
    """The features, with bounds widened to every declared protected value outside them (with a warning).

    Bounds are measured on the data; a value the caller declares but the data never holds (``values=[0, 1]``
    on data holding only 1) is still a value of the attribute.

    Parameters
    ----------
    features : tuple of Feature
        The domain's features.
    declared : sequence of ProtectedAttribute
        The single-column attributes whose values were declared.

    Returns
    -------
    tuple of Feature

    Warns
    -----
    DataWarning
        For each feature whose bounds are widened, naming the attribute and the values.
    """
    widened = list(features)
    for a in declared:
        rows = a.value_array()
        for j, c in enumerate(a.columns):
            f = widened[c]
            lo, hi = min(f.lo, int(rows[:, j].min())), max(f.hi, int(rows[:, j].max()))
            if (lo, hi) != (f.lo, f.hi):
                outside = sorted({int(v) for v in rows[:, j] if not f.lo <= v <= f.hi})
                message = (f"protected attribute {a.name!r}: declared values {outside} lie outside the bounds "
                           f"[{f.lo}, {f.hi}] of feature {f.name!r} (measured on data that never holds them); the "
                           f"bounds are widened to [{lo}, {hi}]")
                logger.info(message)
                warnings.warn(message, DataWarning, stacklevel=4)
                widened[c] = replace(f, lo=lo, hi=hi)
    return tuple(widened)


def warn_unobserved_values(domain: Domain, data, *, only: Sequence[str] | None = None) -> dict[str, list[str]]:
    """Warn about protected values that no row of ``data`` holds, and return them.

    As :meth:`Domain.unobserved_protected_values`. Such a value is still tried as a counterpart, but no data row,
    seed or group has it, and IDIs against it compare with inputs that do not occur.

    Parameters
    ----------
    domain : Domain
    data : array-like of int, shape (n_samples, n_features)
    only : sequence of str, optional
        Attribute names to check (default: all).

    Returns
    -------
    dict of str to list of str
        Attribute -> the labels of its values no row holds (attributes without such values left out).

    Warns
    -----
    DataWarning
        Naming each attribute and its values.
    """
    absent = {k: v for k, v in domain.unobserved_protected_values(data).items() if only is None or k in only}
    if absent:
        shown = "; ".join(f"{name}: {', '.join(map(repr, values))}" for name, values in absent.items())
        message = (f"declared protected values that the data never holds ({shown}): they are tried as counterparts, "
                   "but no data row has them, so no seed or group does, and IDIs against them compare with inputs "
                   "that do not occur")
        logger.info(message)
        warnings.warn(message, DataWarning, stacklevel=4)
    return absent
