"""The input domain: features in order, integer bounds, code labels and the protected attributes.

Every generator clips and rounds into a :class:`Domain`; the discrimination check takes the protected attributes' value
sets from it; an IDI's key (its identity for counting, architecture: the counting rule) is computed here.

Counterparts are built here and only here (:meth:`Domain.counterparts`, :meth:`Domain.counterpart_rows`), with
the domain's couplings applied (:mod:`chiralfair.domain.coupling`: columns that change with a protected attribute, such
as census ``relationship`` Husband/Wife with ``sex``). Its constraints (:mod:`chiralfair.domain.constraints`) say which
inputs can exist: :meth:`Domain.repair` moves proposals onto them, :meth:`Domain.satisfies` tells a possible
counterpart from an impossible one. Its support (:mod:`chiralfair.domain.plausibility`, measured on the data) says
whether an input's protected and categorical values occur together in the data (:meth:`Domain.plausible`).

The features and protected attributes themselves are in :mod:`chiralfair.domain.features`; how
:meth:`Domain.with_protected` turns names and data into protected attributes, and what it warns about, in
:mod:`chiralfair.domain.declaration`.
"""

from __future__ import annotations

import itertools
import logging
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import cast

import numpy as np
import pandas as pd

from ..exceptions import ConfigError, DataWarning, DomainError
from .constraints import Constraint, Excludes, JointCodes, parse_constraints
from .coupling import CompiledCoupling, Coupling, compile_frames, parse_couplings
from .declaration import (
    attribute_columns,
    attribute_values,
    warn_one_hot_columns,
    warn_unobserved_values,
    widened_to_declared,
)
from .features import MISSING_POLICIES, Feature, Kind, MissingPolicy, ProtectedAttribute, holds_no_value, is_one_hot
from .plausibility import Support

logger = logging.getLogger(__name__)

# Model files (skops, joblib) saved before Feature and ProtectedAttribute moved to features.py name them as this
# module's: the imports above keep those files loading.

# Largest product of protected-attribute domain sizes: each checked input costs this many model queries.
MAX_COMBINATIONS = 4096
# Passes of Domain.repair over the constraints before a row that still breaks one is refused.
MAX_REPAIR_PASSES = 8
# A one-column protected attribute whose feature has at most this many codes finds its values' positions in a table.
MAX_POSITION_TABLE = 1 << 16
# Rounds of redrawing in Domain.sample before constraints that exclude almost every point are refused.
MAX_SAMPLE_ROUNDS = 200
# Uniform draws that Domain.with_constraints repairs to check that its rules can be met together.
FEASIBILITY_DRAWS = 512


@dataclass(frozen=True)
class Domain:
    """Features in order, with the protected attributes (PAs) and each PA's domain of values.

    A PA is one column, or a group of columns declared as one attribute whose values are the valid rows of
    those columns (a one-hot encoded race over ``race_A``, ``race_B``, ``race_C`` has the three values
    ``(1, 0, 0)``, ``(0, 1, 0)``, ``(0, 0, 1)``); see :meth:`with_protected`. Give either ``protected`` and
    ``protected_values`` (one column per PA) or ``attributes``.

    Parameters
    ----------
    features : sequence of Feature
        The encoded features, in column order.
    protected : sequence of int
        Column indices of the protected attributes under test (one or several). With ``attributes``, it is
        derived: every PA column, attribute after attribute.
    protected_values : sequence of sequence of int
        For each protected column, the values its counterparts may take (the values that the data holds or
        that the caller declares). Every value must lie inside the feature's bounds. With ``attributes``, it
        is derived: for each protected column, the codes it takes in the attribute's valid rows.
    attributes : sequence of ProtectedAttribute, optional
        The protected attributes, single columns or groups.
    couplings : sequence of Coupling, optional
        Columns that change with a protected attribute (:func:`chiralfair.domain.coupling.parse_couplings`; see
        :meth:`with_couplings`). A coupling is *active* while its attribute is protected and its column is not.
    constraints : sequence of Constraint, optional
        Rules every input satisfies (:mod:`chiralfair.domain.constraints`; see :meth:`with_constraints`).
    support : Support, optional
        Co-occurrence counts of the data (:mod:`chiralfair.domain.plausibility`), set by :meth:`from_data`; without it
        :meth:`plausible` returns None.

    Raises
    ------
    DomainError
        On duplicate names, a protected index out of range or listed twice, a protected attribute with fewer
        than two values, a protected value outside its feature's bounds, more than ``MAX_COMBINATIONS`` value
        combinations, an active coupling that cannot be compiled, or a constraint on a column of a protected
        attribute that spans several columns.
    """

    features: tuple[Feature, ...]
    protected: tuple[int, ...] = ()
    protected_values: tuple[tuple[int, ...], ...] = ()
    attributes: tuple[ProtectedAttribute, ...] = ()
    couplings: tuple[Coupling, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    support: Support | None = field(default=None, repr=False, compare=False)
    # Derived tables (key radix, combinations, compiled couplings), filled on first use; fresh for every copy.
    _derived: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "_derived", {})
        object.__setattr__(self, "features", tuple(self.features))
        object.__setattr__(self, "couplings", tuple(self.couplings))
        object.__setattr__(self, "constraints", tuple(self.constraints))
        names = [f.name for f in self.features]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise DomainError(f"duplicate feature names: {dupes}")
        attributes = self._attributes_from_fields()
        flat = tuple(c for a in attributes for c in a.columns)
        for c in flat:
            if not 0 <= c < len(self.features):
                raise DomainError(f"protected index {c} is outside 0..{len(self.features) - 1}")
        if len(set(flat)) != len(flat):
            twice = sorted({self.features[c].name for c in flat if flat.count(c) > 1})
            raise DomainError(f"a protected attribute is listed twice: {twice}")
        attr_names = [a.name for a in attributes]
        if len(set(attr_names)) != len(attr_names):
            raise DomainError(f"two protected attributes have the same name: {attr_names}")
        for a in attributes:
            self._check_attribute(a)
        per_column = tuple(tuple(sorted({row[j] for row in a.values})) for a in attributes
                           for j in range(len(a.columns)))
        object.__setattr__(self, "attributes", attributes)
        object.__setattr__(self, "protected", flat)
        object.__setattr__(self, "protected_values", per_column)
        n_combinations = int(np.prod([a.size for a in attributes], dtype=float))
        if n_combinations > MAX_COMBINATIONS:
            sizes = ", ".join(f"{a.name}: {a.size}" for a in attributes)
            raise DomainError(
                f"the protected attributes have {n_combinations:,} value combinations ({sizes}); the discrimination "
                f"check would cost that many model queries per input. At most {MAX_COMBINATIONS:,} are allowed: "
                "test fewer protected attributes at once, or declare fewer values")
        self._check_constraints()
        self._compiled_couplings()  # refuse a coupling that cannot be applied now, not in the middle of a search

    def _attributes_from_fields(self) -> tuple[ProtectedAttribute, ...]:
        protected = tuple(int(i) for i in self.protected)
        values = tuple(tuple(sorted({int(v) for v in vals})) for vals in self.protected_values)
        if self.attributes:
            attributes = tuple(self.attributes)
            flat = tuple(c for a in attributes for c in a.columns)
            if protected and protected != flat:
                raise DomainError(f"protected={list(protected)} disagrees with the attributes' columns {list(flat)}")
            return attributes
        if len(values) != len(protected):
            raise DomainError("protected_values must give one value set per protected attribute")
        for idx in protected:
            if not 0 <= idx < len(self.features):
                raise DomainError(f"protected index {idx} is outside 0..{len(self.features) - 1}")
        return tuple(ProtectedAttribute(self.features[i].name, (i,), tuple((v,) for v in vals))
                     for i, vals in zip(protected, values, strict=True))

    def _check_constraints(self) -> None:
        grouped = {c: a.name for a in self.attributes if a.is_group for c in a.columns}
        for rule in self.constraints:
            for c in rule.columns:
                if not 0 <= c < len(self.features):
                    raise DomainError(f"constraint {rule.text!r}: column index {c} is outside "
                                      f"0..{len(self.features) - 1}")
                if c in grouped:
                    raise DomainError(f"constraint {rule.text!r} reads column {self.features[c].name!r} of the "
                                      f"protected attribute {grouped[c]!r}, which spans several columns; constraints "
                                      "over one column of such an attribute are not supported")

    def _check_attribute(self, a: ProtectedAttribute) -> None:
        if a.size < 2:
            shown = [r[0] for r in a.values] if not a.is_group else [list(r) for r in a.values]
            raise DomainError(
                f"protected attribute {a.name!r} has only one value {shown}: no counterpart "
                "can differ from an input, so the discrimination check would always report 'fair'")
        rows = a.value_array()
        for j, c in enumerate(a.columns):
            feat = self.features[c]
            bad = sorted({int(v) for v in rows[:, j] if not feat.lo <= v <= feat.hi})
            if bad:
                where = f"protected attribute {a.name!r}" + (f", column {feat.name!r}" if a.is_group else "")
                raise DomainError(f"{where}: values {bad} lie outside its bounds [{feat.lo}, {feat.hi}]")

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_data(cls, X, names: Sequence[str], *, kinds: Sequence[Kind] | None = None,
                  labels: Mapping[str, Mapping[int, str]] | None = None,
                  protected=(), groups: Mapping[str, Sequence[str]] | None = None,
                  missing: Mapping[str, int] | None = None,
                  missing_protected: MissingPolicy = "exclude") -> Domain:
        """Build a domain whose bounds and protected domains are measured on encoded data.

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Encoded data.
        names : sequence of str, length n_features
        kinds : sequence of {"categorical", "ordinal"}, optional
            Defaults to ordinal for every feature.
        labels : mapping of name to (mapping of code to label), optional
        protected : sequence
            The protected attributes, as :meth:`with_protected` takes them; each one's domain is the set of
            values (rows, for a group) observed in ``X``.
        groups : mapping of str to sequence of str, optional
            Named groups of columns (see :meth:`with_protected`).
        missing : mapping of name to int, optional
            Each feature's missing-value code, if it has one (:attr:`Feature.missing`).
        missing_protected : {"exclude", "value"}
            What a protected attribute's missing code is (see :meth:`with_protected`).

        Returns
        -------
        Domain
            With its :attr:`support` measured on ``X`` (:meth:`Support.from_data
            <chiralfair.domain.plausibility.Support.from_data>`, default thresholds).

        Raises
        ------
        DomainError
            If ``X`` is empty, not integer-valued, or its width differs from ``names``; or on a bad
            protected attribute (see :meth:`with_protected`).
        """
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[0] == 0:
            raise DomainError(f"X must be a non-empty 2-D array, got shape {X.shape}")
        if X.shape[1] != len(names):
            raise DomainError(f"X has {X.shape[1]} columns but {len(names)} names were given")
        Xf = X.astype(float)
        if not np.all(np.isfinite(Xf)) or not np.array_equal(Xf, np.round(Xf)):
            col = int(np.argmax(~np.isfinite(Xf).all(0) | (Xf != np.round(Xf)).any(0)))
            raise DomainError(f"column {names[col]!r} holds non-integer or missing values; encode it first")
        kinds = list(kinds) if kinds is not None else ["ordinal"] * len(names)
        labels = labels or {}
        missing = missing or {}
        lo, hi = X.min(axis=0), X.max(axis=0)
        feats = tuple(Feature(n, int(a), int(b), k, labels.get(n), missing.get(n))
                      for n, a, b, k in zip(names, lo, hi, kinds, strict=True))
        domain = cls(feats, support=Support.from_data(X, feats))
        if protected or groups:
            domain = domain.with_protected(protected if protected else list(groups or ()), data=X, groups=groups,
                                           missing_protected=missing_protected)
        return domain

    def with_protected(self, names, *, data=None, values: Mapping[str, Sequence] | None = None,
                       groups: Mapping[str, Sequence[str]] | None = None,
                       missing_protected: MissingPolicy = "exclude") -> Domain:
        """Return a copy of this domain with other protected attributes.

        Parameters
        ----------
        names : str, sequence or mapping
            The protected attributes, one or several. Each item of a sequence is either a feature name (one
            column; an ``int`` or other label is matched by ``str()``), a name from ``groups``, or a tuple of
            feature names that form **one** attribute (a group, e.g. the one-hot columns
            ``("race_A", "race_B", "race_C")``; its display name is their common prefix without a trailing
            ``_``, ``.``, ``=`` or ``:``, here ``"race"``, else the names joined by ``+``). A mapping
            ``{display name: column or columns}`` declares the attributes and their names at once.
        data : array-like, shape (n_samples, n_features), optional
            Encoded data; each PA's domain is the set of values (distinct rows, for a group) observed in it.
        values : mapping of name to sequence, optional
            Declared PA domains, by attribute (display) name; override the observed ones. A single column's
            values are codes; a group's values are rows of codes, one per column. Without ``data`` or
            ``values`` a single column's domain is every integer in its bounds, and a group of 0/1 columns
            is taken as one-hot (one row per column, with a 1 in that column). A declared value of a single
            column outside the feature's bounds (measured on data that never holds it) widens the bounds to
            include it, with a warning; a group's rows must lie inside its columns' bounds.
        groups : mapping of str to sequence of str, optional
            Named groups of columns: ``with_protected(["sex", "race"], groups={"race": ["race_A", "race_B",
            "race_C"]})`` is the same as ``with_protected({"sex": "sex", "race": [...]})``.
        missing_protected : {"exclude", "value"}
            ``"exclude"`` (default): a feature's missing-value code (:attr:`Feature.missing`) is left out of
            the attribute's observed values, so it is never used as a counterpart; an input holding it lies
            outside the PA domain: it is still checked (one more query), against the valid values only.
            ``"value"``: the missing code is a value like any other (counterparts may take it). Declared
            ``values`` are used as given.

        Returns
        -------
        Domain
            Couplings, constraints and support are kept; a coupling is active while its attribute is protected
            and its column is not.

        Raises
        ------
        DomainError
            If a name is unknown (the message lists the valid names), a column is listed twice, a PA has fewer
            than two values, or a group has neither data, declared values nor 0/1 columns.
        ConfigError
            If ``missing_protected`` is not one of its values.

        Warns
        -----
        DataWarning
            When ``data`` is given and several single protected columns look like one one-hot attribute
            (0/1 columns sharing a name prefix, exactly one 1 per row): the message names the group to declare.
            When a declared single-column value lies outside its feature's bounds (they are widened), or ``data`` never
            holds it (it is still a counterpart value; no data row, seed or group has it): the message names
            the attribute and the values.
        """
        if missing_protected not in MISSING_POLICIES:
            raise ConfigError(f"missing_protected must be one of {MISSING_POLICIES}, got {missing_protected!r}")
        specs = attribute_columns(self, names, groups)
        if not specs:
            raise DomainError("at least one protected attribute is needed")
        values = {str(k): v for k, v in (values or {}).items()}
        data = None if data is None else np.asarray(data)
        attributes = tuple(
            ProtectedAttribute(name, cols, attribute_values(self.features, name, cols, data, values, missing_protected))
            for name, cols in specs)
        features = widened_to_declared(self.features, [a for a in attributes if a.name in values and not a.is_group])
        if data is not None:
            warn_one_hot_columns(self, attributes, data)
            warn_unobserved_values(replace(self, features=features, protected=(), protected_values=(),
                                           attributes=attributes), data,
                                   only=[a.name for a in attributes if a.name in values])
        return replace(self, features=features, protected=(), protected_values=(), attributes=attributes)

    def unobserved_protected_values(self, X) -> dict[str, list[str]]:
        """Values of each PA that no row of ``X`` holds, as text (the PAs whose values all occur are left out).

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)

        Returns
        -------
        dict of str to list of str
            Attribute name -> labels of its values absent from ``X``.
        """
        position = self.protected_value_index(X)
        out = {}
        for j, (a, labels) in enumerate(zip(self.attributes, self.protected_value_labels(), strict=True)):
            seen = np.zeros(a.size, dtype=bool)
            seen[position[:, j][position[:, j] >= 0]] = True
            if not seen.all():
                out[a.name] = [labels[i] for i in np.flatnonzero(~seen)]
        return out

    def with_couplings(self, couple) -> Domain:
        """Return a copy whose couplings are ``couple`` (replacing the ones declared before).

        Parameters
        ----------
        couple : mapping, None or False
            ``{attribute: {column: map}}`` as :func:`chiralfair.domain.coupling.parse_couplings` reads it, e.g.
            ``{"sex": {"relationship": {"Husband": "Wife", "Wife": "Husband"}}}``; None, False or ``{}`` remove
            every coupling.

        Returns
        -------
        Domain

        Raises
        ------
        DomainError, ConfigError
            As :func:`~chiralfair.domain.coupling.parse_couplings`, or when an active coupling cannot be compiled (a
            swap map on an attribute with more than two values, a role naming a value the attribute lacks).
        """
        return replace(self, couplings=parse_couplings(couple, self.features))

    def with_constraints(self, rules, *, data=None) -> Domain:
        """Return a copy whose constraints are ``rules`` (replacing the ones declared before).

        Parameters
        ----------
        rules : str, Constraint, sequence of them, or None
            Text such as ``"sex=Female excludes relationship=Husband"`` or ``"age >= education + 1"``
            (:mod:`chiralfair.domain.constraints`); None or ``()`` remove every constraint.
        data : array-like, shape (n_samples, n_features), optional
            Encoded data: rules its rows break are warned about (the rows are real, so the rule may be too
            strict; seeds drawn from them are repaired).

        Returns
        -------
        Domain

        Raises
        ------
        DomainError
            As :func:`~chiralfair.domain.constraints.parse_constraints`, or when the rules cannot be met together:
            :data:`FEASIBILITY_DRAWS` uniform draws are repaired, and a row that no repair satisfies, or a rule
            over protected columns that excludes every combination of their values, is refused.

        Warns
        -----
        DataWarning
            For each rule that rows of ``data`` break.
        """
        domain = replace(self, constraints=parse_constraints(rules, self.features))
        if domain.constraints:
            if domain.protected and not domain._allowed_combinations().any():
                raise DomainError(f"the constraints {[r.text for r in domain.constraints]} exclude every combination "
                                  f"of the protected attributes' values: no input could exist")
            domain.repair(self._draw(FEASIBILITY_DRAWS, np.random.default_rng(0)))
        if data is not None and domain.constraints:
            data = np.asarray(data, dtype=np.int64)
            for rule in domain.constraints:
                n_bad = int(rule.violated(data).sum())
                if n_bad:
                    message = (f"constraint {rule.text!r} is broken by {n_bad:,} of the {len(data):,} data rows: they "
                               "exist, so the rule may be too strict; seeds drawn from them are repaired")
                    logger.info(message)
                    warnings.warn(message, DataWarning, stacklevel=2)
        return domain

    def with_support(self, data, *, min_lift: float = 0.01, min_expected: float = 5.0) -> Domain:
        """Return a copy whose :attr:`support` (for :meth:`plausible`) is measured on ``data``.

        Parameters
        ----------
        data : array-like of int, shape (n_samples, n_features)
        min_lift, min_expected : float
            The rarity rule of :mod:`chiralfair.domain.plausibility` (defaults 0.01 and 5).

        Returns
        -------
        Domain
        """
        return replace(self, support=Support.from_data(self.validate(data, what="data"), self.features,
                                                       min_lift=min_lift, min_expected=min_expected))

    # ------------------------------------------------------------------ properties
    @property
    def names(self) -> list[str]:
        """Feature names in column order."""
        return [f.name for f in self.features]

    @property
    def n_features(self) -> int:
        """Number of features."""
        return len(self.features)

    @property
    def lower(self) -> np.ndarray:
        """Lower bounds, shape (n_features,), int64."""
        return self._cached("lower", lambda: np.array([f.lo for f in self.features], dtype=np.int64)).copy()

    @property
    def upper(self) -> np.ndarray:
        """Upper bounds, shape (n_features,), int64."""
        return self._cached("upper", lambda: np.array([f.hi for f in self.features], dtype=np.int64)).copy()

    def _cached(self, name: str, make) -> np.ndarray:
        """A derived array, made on first use and kept read-only (public properties hand out copies of it)."""
        if name not in self._derived:
            value = make()
            value.setflags(write=False)
            self._derived[name] = value
        return self._derived[name]

    @property
    def protected_names(self) -> list[str]:
        """Names of the protected attributes under test, one per attribute (a group's display name)."""
        return [a.name for a in self.attributes]

    @property
    def protected_declaration(self) -> dict[str, list[str]]:
        """The protected attributes as :meth:`with_protected` takes them back: display name -> its columns' names.

        Pass this, never :attr:`protected_names`, to re-declare the same attributes (a group's display name, such
        as ``"race+sex"`` or ``"sex"`` for ``sex_Female``/``sex_Male``, is no column).
        """
        return {a.name: [self.features[c].name for c in a.columns] for a in self.attributes}

    @property
    def protected_column_names(self) -> list[str]:
        """Names of the protected columns, attribute after attribute (as :attr:`protected`)."""
        return [self.features[i].name for i in self.protected]

    @property
    def non_protected(self) -> np.ndarray:
        """Column indices of the non-protected attributes, shape (n_features - n_protected,)."""
        return self._non_protected().copy()

    @property
    def non_protected_mask(self) -> np.ndarray:
        """Boolean mask of the non-protected attributes, shape (n_features,)."""
        return self._non_protected_mask().copy()

    def _non_protected_mask(self) -> np.ndarray:
        def make():
            mask = np.ones(self.n_features, dtype=bool)
            mask[list(self.protected)] = False
            return mask
        return self._cached("non_protected_mask", make)

    def _non_protected(self) -> np.ndarray:
        return self._cached("non_protected", lambda: np.flatnonzero(self._non_protected_mask()))

    def index(self, name) -> int:
        """Column index of feature ``name``.

        Names are matched by ``str()``, so a frame's integer column label ``1`` finds the feature ``"1"``.

        Parameters
        ----------
        name : str or hashable
            A feature name.

        Returns
        -------
        int

        Raises
        ------
        DomainError
            If there is no such feature; the message lists the valid names (as ``repr``, so that ``1`` and
            ``'1'`` can be told apart).
        """
        key = str(name)
        for i, f in enumerate(self.features):
            if f.name == key:
                return i
        raise DomainError(f"unknown feature {name!r}; valid names: {', '.join(map(repr, self.names))}")

    # ------------------------------------------------------------------ counterparts
    @property
    def combinations(self) -> np.ndarray:
        """Every combination of the PA values (the product of their domains).

        A group contributes its valid rows, so every combination is a possible input.

        Returns
        -------
        numpy.ndarray of int64, shape (n_combinations, n_protected_columns)
            Columns follow :attr:`protected`; rows follow the product of the attributes' values, the last
            attribute varying fastest.

        Raises
        ------
        DomainError
            If no protected attribute is set.
        """
        self._require_protected()
        if "combinations" not in self._derived:
            width = len(self.protected)
            rows = [sum(parts, ()) for parts in itertools.product(*(a.values for a in self.attributes))]
            combos = np.array(rows, dtype=np.int64).reshape(len(rows), width)
            combos.setflags(write=False)
            self._derived["combinations"] = combos
        return self._derived["combinations"]

    def _combination_positions(self) -> np.ndarray:
        """Position of each attribute's value in each combination, shape (n_combinations, n_attributes)."""
        if "positions" not in self._derived:
            grid = np.indices([a.size for a in self.attributes]).reshape(len(self.attributes), -1).T
            self._derived["positions"] = grid.astype(np.int64)
        return self._derived["positions"]

    def protected_value_index(self, X) -> np.ndarray:
        """Position of each input's value of each PA among that attribute's values, -1 where it is none of them.

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)

        Returns
        -------
        numpy.ndarray of int64, shape (n_samples, n_attributes)
        """
        X = np.asarray(X, dtype=np.int64)
        out = np.empty((len(X), len(self.attributes)), dtype=np.int64)
        for j, (a, table) in enumerate(zip(self.attributes, self._value_position_tables(), strict=True)):
            if table is None:
                out[:, j] = _row_position(X[:, list(a.columns)], a.value_array())
            else:  # one column: its code's position is a table lookup (a code below lo wraps to a huge offset)
                offset = (X[:, a.columns[0]] - self.features[a.columns[0]].lo).view(np.uint64)
                out[:, j] = table.take(np.minimum(offset, len(table) - 1))
        return out

    def _value_position_tables(self) -> list[np.ndarray | None]:
        """:meth:`_value_position_table` of every attribute, made once."""
        if "value_position_tables" not in self._derived:
            self._derived["value_position_tables"] = [self._value_position_table(j)
                                                      for j in range(len(self.attributes))]
        return self._derived["value_position_tables"]

    def _value_position_table(self, j: int) -> np.ndarray | None:
        """For a one-column attribute ``j``: each code's position among its values, then one -1 for any other code.

        Entry ``code - lo`` for the feature's codes, the last entry for codes outside its bounds; None for a group
        or a feature with more than :data:`MAX_POSITION_TABLE` codes.
        """
        a = self.attributes[j]
        if len(a.columns) != 1 or self.features[a.columns[0]].size > MAX_POSITION_TABLE:
            return None

        def make():
            feature = self.features[a.columns[0]]
            table = np.full(feature.size + 1, -1, dtype=np.int64)
            values = a.value_array()[:, 0]
            table[values - feature.lo] = np.arange(len(values))
            return table
        return self._cached(f"value_positions_{j}", make)

    def missing_protected(self, X) -> np.ndarray:
        """Rows holding a missing-value code in a protected column that is not one of the PA's values.

        A one-hot group's row with no 1 among its columns holds no value either: it is read as a missing one.
        Under the default policy (``missing_protected="exclude"`` in :meth:`with_protected`) these are the
        rows whose protected value is missing: they are checked against the valid values, never used as
        counterparts. Under ``"value"`` no row is marked.

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)

        Returns
        -------
        numpy.ndarray of bool, shape (n_samples,)
        """
        X = np.asarray(X, dtype=np.int64)
        out = np.zeros(len(X), dtype=bool)
        if not self.attributes:
            return out
        position = self.protected_value_index(X)
        for j, a in enumerate(self.attributes):
            out |= holds_no_value(self.features, a.columns, X[:, list(a.columns)]) & (position[:, j] < 0)
        return out

    def protected_value_labels(self) -> list[list[str]]:
        """Text of every value of every PA, in the order of :meth:`protected_value_index`.

        A single column shows its code's label; a one-hot group (every column a 0/1 indicator column) shows the
        name of the column holding the 1; any other group row shows its columns' labels joined by ``"/"``
        (``race+sex``: ``"Asian-Pac-Islander/Female"``).

        Returns
        -------
        list (one per attribute) of list of str (one per value)
        """
        return [[_value_text(self.features, a, row) for row in a.value_array()] for a in self.attributes]

    def describe_protected(self, X) -> pd.DataFrame:
        """Each input's value of each PA, as text: one column per attribute (:attr:`protected_names`).

        As :meth:`protected_value_labels`: a single column shows its code's label; a one-hot group (every column a
        0/1 indicator column) shows the name of the column holding the 1; any other group row shows its columns'
        labels joined by ``"/"``.

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Codes.

        Returns
        -------
        pandas.DataFrame, shape (n_samples, n_attributes)
        """
        X = np.asarray(X, dtype=np.int64)
        cols = {}
        for a in self.attributes:
            # each distinct row described once, then spread to the rows holding it
            distinct, inverse = np.unique(X[:, list(a.columns)].reshape(len(X), len(a.columns)), axis=0,
                                          return_inverse=True)
            text = np.array([_value_text(self.features, a, row) for row in distinct] or [""], dtype=object)
            cols[a.name] = pd.Series(text[inverse.reshape(-1)] if len(X) else [], dtype="string")
        return pd.DataFrame(cols)

    def counterparts(self, X, *, inside: bool = False) -> np.ndarray:
        """Every PA-value combination applied to each input, coupled columns changed with it.

        The one place (with :meth:`counterpart_rows`) where counterparts are built: the discrimination check,
        the generators, the chiral mutation and the verdict all take theirs from here. A coupled column moves
        from the input's value to the combination's by the coupling's frames (:mod:`chiralfair.domain.coupling`); an
        input whose protected value lies outside its domain (a missing value) is read at the attribute's first
        value. The input itself is among the counterparts when its PA values lie in the PA domains.

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
        inside : bool, default=False
            Every code of ``X`` is inside its column's bounds (:meth:`keys`). Not checked.

        Returns
        -------
        numpy.ndarray of int64, shape (n_samples, n_combinations, n_features)

        Raises
        ------
        DomainError
            If a code of a coupled column lies outside its bounds (without ``inside``).
        """
        X = np.asarray(X, dtype=np.int64)
        combos = self.combinations
        out = np.repeat(X[:, None, :], len(combos), axis=1)
        out[:, :, list(self.protected)] = combos[None, :, :]
        position = self._coupling_positions(X)
        for coupling in self._compiled_couplings():
            out[:, :, coupling.column] = coupling.counterpart_codes(X, position, inside=inside)
        return out

    def counterpart_rows(self, X, combination) -> np.ndarray:
        """``X`` with its protected attributes set to combination ``combination[i]`` in row i, couplings applied.

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
        combination : array-like of int, shape (n_samples,)
            Indices into :attr:`combinations`.

        Returns
        -------
        numpy.ndarray of int64, shape (n_samples, n_features)
            Row i equals ``counterparts(X)[i, combination[i]]``.
        """
        X = np.asarray(X, dtype=np.int64)
        combination = np.asarray(combination, dtype=np.int64)
        out = X.copy()
        out[:, list(self.protected)] = self.combinations[combination]
        combination = combination % len(self.combinations)  # -1 is the last combination, as numpy reads it above
        position = self._coupling_positions(X)
        for coupling in self._compiled_couplings():
            out[:, coupling.column] = coupling.counterpart_code(X, combination, position)
        return out

    # ------------------------------------------------------------------ couplings
    def _compiled_couplings(self) -> list[CompiledCoupling]:
        """The active couplings, compiled (:class:`~chiralfair.domain.coupling.CompiledCoupling`), made once."""
        if "couplings" not in self._derived:
            compiled = []
            names = {a.name: j for j, a in enumerate(self.attributes)}
            labels = None
            for coupling in self.couplings:
                column = self.index(coupling.column)
                if coupling.attribute not in names or column in self.protected:
                    continue
                j = names[coupling.attribute]
                labels = labels if labels is not None else self.protected_value_labels()
                feature = self.features[column]
                frames = compile_frames(coupling, feature, labels[j], self.attributes[j].values)
                positions = self._value_position_tables()[j]
                pa_column = self.attributes[j].columns[0]
                compiled.append(CompiledCoupling.make(
                    j, column, feature.lo, frames, self._combination_positions()[:, j], positions, pa_column,
                    self.features[pa_column].lo, name=feature.name))
            self._derived["couplings"] = compiled
        return self._derived["couplings"]

    def _coupling_positions(self, X: np.ndarray) -> np.ndarray | None:
        """:meth:`protected_value_index` of ``X`` when some coupling reads roles from it (no joint table), else None."""
        if "roles_read_from_positions" not in self._derived:
            self._derived["roles_read_from_positions"] = any(c.role_table is None for c in self._compiled_couplings())
        if self._derived["roles_read_from_positions"]:
            return self.protected_value_index(X)
        return None

    def _coupled_roles(self, X: np.ndarray) -> list[np.ndarray]:
        """Each row's role offset in each active coupling's column (:meth:`_compiled_couplings` order)."""
        position = self._coupling_positions(X)
        return [c.roles(X, position) for c in self._compiled_couplings()]

    def _key_terms(self) -> tuple[np.ndarray, np.int64, list[np.ndarray | None]]:
        """The int64 keys' terms: ``keys = X @ weights - base + sum of corrections[c].take(joint offset of c)``.

        ``weights`` (n_features,) holds each non-protected column's radix weight and 0 on the protected ones; ``base``
        is the key part of the lowest codes, ``lower @ weights``. Both wrap modulo 2**64 as numpy's int64 products
        do, so a key, which fits in int64, comes out exact. Per coupling, its correction at each joint offset: what a
        key gains (role less code, times the column's weight), ``base`` taken off the first such table; None for a
        coupling without a joint table. Made once; None when the keys are not int64.
        """
        if "key_terms" not in self._derived:
            radix = self._key_radix()
            terms = None
            if radix is not None:
                weights = np.zeros(self.n_features, dtype=np.int64)
                weights[self._non_protected()] = radix
                with np.errstate(over="ignore"):
                    base = np.int64(self._cached("lower", lambda: self.lower) @ weights)
                corrections: list[np.ndarray | None] = []
                for c in self._compiled_couplings():
                    if c.role_table is None:
                        corrections.append(None)
                        continue
                    codes = np.tile(np.arange(c.n_codes, dtype=np.int64), c.pa_size + 1)
                    table = (c.role_table - codes) * weights[c.column]
                    corrections.append(table)
                first = next((t for t in corrections if t is not None), None)
                if first is not None:
                    with np.errstate(over="ignore"):
                        first -= base
                    base = np.int64(0)
                for table in corrections:
                    if table is not None:
                        table.setflags(write=False)
                weights.setflags(write=False)
                terms = (weights, base, corrections)
            self._derived["key_terms"] = terms
        return self._derived["key_terms"]

    @property
    def coupled_columns(self) -> tuple[int, ...]:
        """Column indices of the active couplings (columns that change with a protected attribute)."""
        return tuple(c.column for c in self._compiled_couplings())

    def describe_couplings(self) -> list[str]:
        """One line per declared coupling, e.g. ``"sex -> relationship: Husband <-> Wife"``.

        A coupling that is not active says why: its attribute is not protected, or its column is.

        Returns
        -------
        list of str
        """
        active = set(self.coupled_columns)
        out = []
        for c in self.couplings:
            column = self.index(c.column)
            text = c.describe(self.features[column].labels)
            if column in self.protected:
                text += f" (inactive: {c.column!r} is itself protected)"
            elif column not in active:
                text += f" (inactive: {c.attribute!r} is not protected)"
            out.append(text)
        return out

    def couple_spec(self) -> dict:
        """The couplings as the ``couple=`` mapping that declares them (labels where the columns have them).

        Returns
        -------
        dict
            ``{attribute: {column: {value: value}}}`` (role classes as lists), as :meth:`with_couplings` takes it.
        """
        out: dict = {}
        for c in self.couplings:
            out.setdefault(c.attribute, {})[c.column] = c.to_dict(self.features[self.index(c.column)].labels)
        return out

    def _roles(self, X: np.ndarray) -> np.ndarray:
        """``X`` with every actively coupled column replaced by its role code (its code at the first value)."""
        couplings = self._compiled_couplings()
        if not couplings:
            return X
        roles = self._coupled_roles(X)
        X = X.copy()
        for coupling, role in zip(couplings, roles, strict=True):
            X[:, coupling.column] = role + coupling.lo
        return X

    # ------------------------------------------------------------------ constraints
    def satisfies(self, X) -> np.ndarray:
        """Whether each row satisfies every constraint, shape (n_samples,), bool (all True without constraints).

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Codes.

        Returns
        -------
        numpy.ndarray of bool, shape (n_samples,)
        """
        X = np.asarray(X, dtype=np.int64)
        tabulated = self._constraint_table()
        index = None if tabulated is None else tabulated[0].index(X)
        if tabulated is None or index is None:
            return self._satisfies_rule_by_rule(X)
        return tabulated[1].take(index)

    def _satisfies_rule_by_rule(self, X: np.ndarray) -> np.ndarray:
        ok = np.ones(len(X), dtype=bool)
        for rule in self.constraints:
            ok &= ~rule.violated(X)
        return ok

    def _constraint_table(self) -> tuple[JointCodes, np.ndarray] | None:
        """Whether each joint code of the columns the rules read satisfies them all (None: too many codes)."""
        if "constraint_table" not in self._derived:
            codes = JointCodes.over([c for r in self.constraints for c in r.columns], self.lower, self.upper)
            self._derived["constraint_table"] = (
                None if codes is None else (codes, self._satisfies_rule_by_rule(codes.rows(self.lower))))
        return self._derived["constraint_table"]

    def possible_counterparts(self, X, *, satisfying: bool = False) -> np.ndarray:
        """Whether each counterpart of each input satisfies the constraints, shape (n_samples, n_combinations).

        Equal to ``satisfies(counterparts(X).reshape(-1, d)).reshape(n, k)``, answered from a table over the
        joint codes of the columns the rules read and the counterparts change (protected and coupled columns),
        when that table is small: a counterpart's values there depend on the input's values there only.

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Codes.
        satisfying : bool, default=False
            Every row of ``X`` satisfies the constraints (the caller repaired them, :meth:`repair`). When the
            couplings make every counterpart of such a row possible (census: sex coupled to relationship
            Husband <-> Wife under "a Female is no Husband, a Male no Wife"), the answer is all True with no
            lookup. Not checked: a row that breaks a rule gets a wrong answer.

        Returns
        -------
        numpy.ndarray of bool, shape (n_samples, n_combinations); all True without constraints
        """
        X = np.asarray(X, dtype=np.int64)
        k = len(self.combinations)
        if not self.constraints or (satisfying and self.counterparts_of_satisfying_rows_possible()):
            return np.ones((len(X), k), dtype=bool)
        tabulated = self._counterpart_table()
        index = None if tabulated is None else tabulated[0].index(X)
        if tabulated is not None and index is not None:
            return tabulated[1].take(index, axis=0)
        return self.satisfies(self.counterparts(X).reshape(-1, self.n_features)).reshape(len(X), k)

    def counterparts_of_satisfying_rows_possible(self) -> bool:
        """Whether every counterpart of every row that satisfies the constraints satisfies them too.

        Answered from the table of :meth:`possible_counterparts` (False when there is none): census with sex coupled
        to relationship Husband <-> Wife under "a Female is no Husband, a Male no Wife" says True.

        Returns
        -------
        bool
        """
        if "satisfying_counterparts_possible" not in self._derived:
            tabulated = self._counterpart_table()
            answer = False
            if tabulated is not None:
                codes, table = tabulated
                answer = bool(table[self.satisfies(codes.rows(self.lower))].all())
            self._derived["satisfying_counterparts_possible"] = answer
        return self._derived["satisfying_counterparts_possible"]

    def _counterpart_table(self) -> tuple[JointCodes, np.ndarray] | None:
        if "counterpart_table" not in self._derived:
            k = len(self.combinations)
            columns = [c for r in self.constraints for c in r.columns] + list(self.protected) + list(
                self.coupled_columns)
            codes = JointCodes.over(columns, self.lower, self.upper, per_code=k)
            entry = None
            if codes is not None:
                rows = codes.rows(self.lower)
                table = self.satisfies(self.counterparts(rows).reshape(-1, self.n_features)).reshape(len(rows), k)
                table.setflags(write=False)
                entry = (codes, table)
            self._derived["counterpart_table"] = entry
        return self._derived["counterpart_table"]

    def repair(self, X) -> np.ndarray:
        """Move every row that breaks a constraint to a nearby row that satisfies them all (vectorised).

        Rows that satisfy the constraints are returned unchanged, so ``repair`` is idempotent. Each pass lets
        every rule repair its violating rows by moving a non-protected column (:mod:`chiralfair.domain.constraints`);
        a rule over protected columns only moves the protected attributes to the nearest allowed combination
        of their values (L1 over codes; ties: the first in :attr:`combinations`). Passes repeat until every row
        satisfies every rule.

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Inside the bounds.

        Returns
        -------
        numpy.ndarray of int64, shape (n_samples, n_features)
            A new array when a row was moved; ``X`` itself (as int64) otherwise.

        Raises
        ------
        DomainError
            If some row still breaks a rule after :data:`MAX_REPAIR_PASSES` passes (the rules conflict); the
            message names the rules and the row.
        """
        X = np.asarray(X, dtype=np.int64)
        rows, repaired = self.repair_moves(X)
        if not len(rows):
            return X
        X = X.copy()
        X[rows] = repaired
        return X

    def repair_moves(self, X) -> tuple[np.ndarray, np.ndarray]:
        """The rows :meth:`repair` moves, and what it moves them to.

        For a caller that proposes rows and then needs only the few a repair changed.

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Inside the bounds.

        Returns
        -------
        rows : numpy.ndarray of int64, shape (n_moved,)
            Indices of the rows that break a constraint, in order.
        repaired : numpy.ndarray of int64, shape (n_moved, n_features)
            Those rows repaired: ``repair(X)[rows]``.

        Raises
        ------
        DomainError
            As :meth:`repair`.
        """
        X = np.asarray(X, dtype=np.int64)
        if not self.constraints or not len(X):
            return np.zeros(0, dtype=np.int64), X[:0]
        tabulated = self._repair_table()
        index = None if tabulated is None else tabulated[0].index(X)
        if tabulated is None or index is None:
            repaired = self._repair_rule_by_rule(X)
            rows = (repaired != X).any(axis=1).nonzero()[0] if repaired is not X else np.zeros(0, dtype=np.int64)
            return rows, repaired[rows]
        codes, target, values = tabulated
        rows = (index != target.take(index)).nonzero()[0]
        repaired = X[rows]
        if len(rows):
            repaired[:, codes.columns] = values[index[rows]]
        return rows, repaired

    def repair_one_column_moves(self, X: np.ndarray, columns: np.ndarray,
                                values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What :meth:`repair` makes of moves of one column each, from rows that meet the constraints.

        A local walk moves one column of each chain's input; a move of a column some rule reads can break a rule,
        and its repair can take the move back. With the repairs tabulated, each move is a step in joint codes (the
        input's code plus the change times the column's stride), so the moved rows are never built.

        Parameters
        ----------
        X : numpy.ndarray of int64, shape (n, n_features)
            Rows that meet the constraints, inside the bounds. Not checked.
        columns : numpy.ndarray of int64, shape (n,)
            The column row i's move changes.
        values : numpy.ndarray of int64, shape (n,)
            Its new code, inside the column's bounds.

        Returns
        -------
        undone : numpy.ndarray of int64, shape (n_undone,)
            The moves the repair takes back (repaired, the row is ``X[i]`` again), in order.
        rows : numpy.ndarray of int64, shape (n_repaired,)
            The other moves the repair changes, in order.
        repaired : numpy.ndarray of int64, shape (n_repaired, n_features)
            Those moves repaired: ``repair(moved)[rows]``, ``moved`` being ``X`` with the moves made.

        Raises
        ------
        DomainError
            As :meth:`repair`.
        """
        none = np.zeros(0, dtype=np.int64)
        if not len(X) or not self.constraints:
            return none, none, X[:0]
        tabulated = self._repair_table()
        picks = np.arange(len(X))
        if tabulated is None:
            moved = X.copy()
            moved[picks, columns] = values
            rows, repaired = self.repair_moves(moved)
            back = (repaired == X[rows]).all(axis=1)
            return rows[back], rows[~back], repaired[~back]
        codes, target, table_values = tabulated
        before = cast(np.ndarray, codes.index(X, inside=True))
        after = before + (values - X[picks, columns]) * self._cached("repair_strides", lambda: codes.strides_by_column(
            self.n_features))[columns]
        repaired_to = target.take(after)
        changed = (repaired_to != after).nonzero()[0]
        if not len(changed):
            return none, none, X[:0]
        back = repaired_to[changed] == before[changed]
        rows = changed[~back]
        repaired = X[rows]
        repaired[:, codes.columns] = table_values[after[rows]]
        return changed[back], rows, repaired

    def repairs_stay_inside(self) -> bool:
        """Whether :meth:`repair` is known to keep every row inside the bounds.

        True without constraints (nothing is moved) and when the repairs are tabulated: the table holds each joint
        code's repair, all inside the bounds (a repair outside them has no joint code, so no table is made). The
        rule-by-rule repair is not known to.

        Returns
        -------
        bool
        """
        return not self.constraints or self._repair_table() is not None

    def _repair_table(self) -> tuple[JointCodes, np.ndarray, np.ndarray] | None:
        """The joint code (and its columns' codes) each joint code of the rules' and protected columns is repaired to.

        A row's repair reads and moves only those columns (the rules' own columns, and the protected ones for a
        rule over protected columns only), so it is a function of their joint code. Rules that conflict for some
        joint code are not tabulated: the rows that meet them get the rule-by-rule repair and its error. None when
        there is no table (too many joint codes, or such a conflict).
        """
        if "repair_table" not in self._derived:
            columns = [c for r in self.constraints for c in r.columns] + list(self.protected)
            codes = JointCodes.over(columns, self.lower, self.upper)
            entry = None
            if codes is not None:
                try:
                    repaired = self._repair_rule_by_rule(codes.rows(self.lower))
                except DomainError:
                    repaired = None
                index = None if repaired is None else codes.index(repaired)
                if repaired is not None and index is not None:  # every repair inside the bounds (repairs_stay_inside)
                    entry = (codes, index, repaired[:, codes.columns])
            self._derived["repair_table"] = entry
        return self._derived["repair_table"]

    def _repair_rule_by_rule(self, X: np.ndarray) -> np.ndarray:
        bad = ~self.satisfies(X)
        if not bad.any():
            return X
        X = X.copy()
        movable, lower, upper = self.non_protected_mask, self.lower, self.upper
        for _ in range(MAX_REPAIR_PASSES):
            rows = X[bad]
            for rule in self.constraints:
                rule.repair(rows, movable, lower, upper)
            rows = self._nearest_allowed_combination(rows)
            X[bad] = rows
            bad = ~self.satisfies(X)
            if not bad.any():
                return X
        row = X[np.argmax(bad)]
        broken = [r.text for r in self.constraints if r.violated(row[None, :])[0]]
        raise DomainError(f"the constraints cannot all be met: row {dict(zip(self.names, row.tolist(), strict=True))} "
                          f"still breaks {broken} after {MAX_REPAIR_PASSES} repair passes; the rules conflict")

    def _allowed_combinations(self) -> np.ndarray:
        """Which combinations the rules over protected columns only allow, shape (n_combinations,), bool."""
        if "allowed" not in self._derived:
            pure = [r for r in self.constraints if self._reads_only_protected(r)]
            rows = np.tile(self.lower, (len(self.combinations), 1))
            rows[:, list(self.protected)] = self.combinations
            allowed = np.ones(len(rows), dtype=bool)
            for rule in pure:
                allowed &= ~rule.violated(rows)
            self._derived["allowed"] = (allowed, pure)
        return self._derived["allowed"][0]

    def _reads_only_protected(self, rule) -> bool:
        """Whether ``rule`` constrains only protected columns.

        It reads no other column, or every other column it reads is pinned: an exclusion whose codes cover that
        column's whole range, so that no move of it mends a row.
        """
        protected = set(self.protected)
        if set(rule.columns) <= protected:
            return True
        if not isinstance(rule, Excludes):
            return False
        def pinned(column: int, codes) -> bool:
            lo, hi = int(self.lower[column]), int(self.upper[column])
            return hi - lo + 1 <= len(set(codes)) and set(range(lo, hi + 1)) <= set(codes)

        sides = ((rule.if_column, rule.if_codes), (rule.then_column, rule.then_codes))
        return all(column in protected or pinned(column, codes) for column, codes in sides)

    def _nearest_allowed_combination(self, rows: np.ndarray) -> np.ndarray:
        if not self.protected:
            return rows
        allowed = self._allowed_combinations()
        pure = self._derived["allowed"][1]
        if not pure:
            return rows
        bad = np.zeros(len(rows), dtype=bool)
        for rule in pure:
            bad |= rule.violated(rows)
        if bad.any():
            options = self.combinations[allowed]
            pa = list(self.protected)
            nearest = np.abs(rows[bad][:, None, pa] - options[None, :, :]).sum(axis=2).argmin(axis=1)
            rows[np.ix_(np.flatnonzero(bad), np.asarray(pa))] = options[nearest]
        return rows

    @property
    def constrained_mask(self) -> np.ndarray:
        """Which columns some constraint reads, shape (n_features,), bool (all False without constraints).

        A row that satisfies the constraints still does after a change of columns outside this mask.
        """
        def make():
            mask = np.zeros(self.n_features, dtype=bool)
            for rule in self.constraints:
                mask[list(rule.columns)] = True
            return mask
        return self._cached("constrained_mask", make).copy()

    def describe_constraints(self) -> list[str]:
        """The constraints as text, one per rule.

        Returns
        -------
        list of str
        """
        return [r.text for r in self.constraints]

    # ------------------------------------------------------------------ plausibility
    def plausible(self, X, counterparts=None) -> np.ndarray | None:
        """Whether each row's (protected value, categorical value) pairs all occur in the data.

        See :mod:`chiralfair.domain.plausibility` for the rule. Reads the protected attributes under test.
        See architecture: counterparts that could exist.

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
        counterparts : array-like of int, shape (n_samples, n_features), optional
            A counterpart of each row (:meth:`counterpart_rows`): then whether the row and its counterpart are both
            plausible, the columns a counterpart keeps read once for both.

        Returns
        -------
        numpy.ndarray of bool, shape (n_samples,), or None
            None when the domain has no :attr:`support` (it was not built from data).
        """
        if self.support is None:
            return None
        if counterparts is None:
            return self.support.plausible(X, self._plausibility_pairs(self.support))
        if "counterpart_columns" not in self._derived:  # the columns a counterpart may change
            self._derived["counterpart_columns"] = frozenset((*self.protected, *self.coupled_columns))
        return self.support.plausible(X, self._plausibility_pairs(self.support), counterparts,
                                      self._derived["counterpart_columns"])

    def without_plausibility_of(self, columns) -> Domain:
        """A copy of this domain whose :meth:`plausible` reads no pair with one of ``columns``.

        For a person holding a value of those columns that the data never held (a category met after the domain
        was made): a value with no count says nothing of which protected values go with it (a pair is rare only
        when the data had the chance to show it, :mod:`chiralfair.domain.plausibility`).

        Parameters
        ----------
        columns : sequence of int
            Non-protected feature indices.

        Returns
        -------
        Domain
        """
        out = replace(self)
        if self.support is not None:
            pairs = self._plausibility_pairs(self.support)
            out._derived["pairs"] = pairs[~np.isin(pairs[:, 1], np.asarray(columns, dtype=np.int64))]
        return out

    def _plausibility_pairs(self, support: Support) -> np.ndarray:
        if "pairs" not in self._derived:
            self._derived["pairs"] = support.pair_columns(self)
        return self._derived["pairs"]

    def rare_pairs(self) -> list[dict]:
        """Rules the data suggests: protected values (hardly) never seen with a categorical value of another column.

        Returns
        -------
        list of dict
            :meth:`Support.rare_pairs <chiralfair.domain.plausibility.Support.rare_pairs>` (each with its rule as
            ``constraint`` text), most expected first; empty without :attr:`support` or protected attributes.
        """
        if self.support is None or not self.protected:
            return []
        return self.support.rare_pairs(self, self._plausibility_pairs(self.support))

    def _require_protected(self):
        if not self.protected:
            raise DomainError("no protected attribute is set on this domain; call with_protected(...) first")

    # ------------------------------------------------------------------ inputs
    def clip(self, X) -> np.ndarray:
        """Round to the nearest integer and clip into the bounds.

        Parameters
        ----------
        X : array-like, shape (n_samples, n_features)

        Returns
        -------
        numpy.ndarray of int64, shape (n_samples, n_features)
        """
        X = np.asarray(X, dtype=float)
        return np.clip(np.rint(X), self.lower, self.upper).astype(np.int64)

    def validate(self, X, *, what: str = "X") -> np.ndarray:
        """Check that ``X`` is integer-valued, of the right width and inside the bounds.

        Parameters
        ----------
        X : array-like, shape (n_samples, n_features)
        what : str
            Name of the array, used in error messages.

        Returns
        -------
        numpy.ndarray of int64, shape (n_samples, n_features)

        Raises
        ------
        DomainError
            Naming the first column, value and bound at fault.
        """
        X = np.asarray(X)
        if X.ndim == 1 and X.shape[0] == self.n_features:
            X = X[None, :]
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise DomainError(f"{what} must have shape (n_samples, {self.n_features}), got {X.shape}")
        Xf = X.astype(float)
        bad = ~np.isfinite(Xf) | (Xf != np.round(Xf))
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise DomainError(f"{what}: column {self.names[c]!r} holds non-integer value {X[r, c]!r} (row {r})")
        low = Xf < self.lower
        high = Xf > self.upper
        if low.any() or high.any():
            r, c = np.argwhere(low | high)[0]
            f = self.features[c]
            raise DomainError(f"{what}: column {f.name!r} value {X[r, c]:g} (row {r}) is outside [{f.lo}, {f.hi}]")
        return Xf.astype(np.int64)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``n`` inputs uniformly from the domain (each PA uniformly from its values; a group's valid rows).

        With constraints, rows that break one are drawn again (rejection), so the draws are uniform over the
        inputs that satisfy them; without, one draw per row (the same stream as before constraints existed).

        Parameters
        ----------
        n : int
            Number of inputs, >= 0.
        rng : numpy.random.Generator

        Returns
        -------
        numpy.ndarray of int64, shape (n, n_features)

        Raises
        ------
        DomainError
            If the constraints reject rows :data:`MAX_SAMPLE_ROUNDS` times in a row (they leave almost no input).
        """
        X = self._draw(n, rng)
        if not self.constraints:
            return X
        bad = np.flatnonzero(~self.satisfies(X))
        for _ in range(MAX_SAMPLE_ROUNDS):
            if not len(bad):
                return X
            X[bad] = self._draw(len(bad), rng)
            bad = bad[~self.satisfies(X[bad])]
        raise DomainError(f"the constraints {self.describe_constraints()} reject almost every uniform draw "
                          f"({len(bad)} of {n} rows still rejected after {MAX_SAMPLE_ROUNDS} rounds)")

    def _draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        X = rng.integers(self.lower, self.upper + 1, size=(n, self.n_features), dtype=np.int64)
        for a in self.attributes:
            X[:, list(a.columns)] = a.value_array()[rng.integers(0, a.size, size=n)]
        return X

    # ------------------------------------------------------------------ identity (architecture: the counting rule)
    def keys(self, X, *, inside: bool = False) -> np.ndarray:
        """IDI keys: the non-protected projection of each input (:meth:`projection`), one comparable value per row.

        The key is a mixed-radix int64 when the non-protected part of the domain has fewer than 2**63 points,
        else a bytes object per row. An input and each of its counterparts (:meth:`counterparts`) have the same
        key, and two inputs have the same key only if one is a counterpart of the other.

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
        inside : bool, default=False
            Every code of ``X`` is inside its column's bounds (a local walk's clipped proposals), so a coupled
            column's offset is not compared with them. Not checked.

        Returns
        -------
        numpy.ndarray, shape (n_samples,)
            int64 keys, or an object array of bytes keys for very large domains.

        Raises
        ------
        DomainError
            If a code of a coupled column lies outside its bounds (without ``inside``).
        """
        X = np.asarray(X, dtype=np.int64)
        if self._key_radix() is not None:
            return self._radix_keys(X, inside)
        proj = np.ascontiguousarray(self.projection(X))
        return np.array([r.tobytes() for r in proj], dtype=object)

    def _radix_keys(self, X: np.ndarray, inside: bool) -> np.ndarray:
        """:meth:`keys` as mixed-radix int64: a coupled column's role enters as a correction of its code's term."""
        weights, base, corrections = self._key_terms()
        keys = X @ weights
        if base:
            keys -= base
        couplings = self._compiled_couplings()
        if couplings:
            position = None
            for coupling, correction in zip(couplings, corrections, strict=True):
                if correction is not None:
                    keys += correction.take(cast(np.ndarray, coupling.joint(X, inside=inside)))
                else:
                    position = self._coupling_positions(X) if position is None else position
                    weight = int(weights[coupling.column])
                    keys += (coupling.roles(X, position) - (X[:, coupling.column] - coupling.lo)) * weight
        return keys

    def projection(self, X) -> np.ndarray:
        """The non-protected projection of each input, with coupled columns read as roles: what a key encodes.

        Without couplings this is ``X[:, non_protected]``. A coupled column is part of the protected side: it
        changes with its attribute, so it is replaced by its **role**, the code it takes when the attribute is
        moved to its first value (:mod:`chiralfair.domain.coupling`). Census with sex coupled to relationship
        Husband <-> Wife: a married man (Male, Husband) and his counterpart (Female, Wife) both project to
        ``relationship=Wife`` (the role's code at Female); (Male, Wife), an input of its own whose counterpart
        is (Female, Husband), projects to ``Husband``; every other relationship projects to itself.

        Why roles and not the coupled column dropped, or its class {Husband, Wife}: dropping the column would
        merge (Husband, rest) with (Own-child, rest), two people the check tells apart; the class would make an
        IDI and its counterpart one key but also merge (Male, Husband) with (Male, Wife), whose counterpart sets
        are different (the verdict's enumeration reads one key's labels for all of its rows, which would then
        be wrong). Roles make the keys exactly the orbits of the counterpart map: ``keys(x) == keys(x')`` for
        every counterpart ``x'``, and different orbits have different keys. The number of keys is unchanged
        (a role is a permutation of the codes).

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)

        Returns
        -------
        numpy.ndarray of int64, shape (n_samples, n_features - n_protected)
            Columns follow :attr:`non_protected`.
        """
        X = np.asarray(X, dtype=np.int64)
        return self._roles(X)[:, self._non_protected()]

    def _key_radix(self):
        if "radix" not in self._derived:
            sizes = [self.features[i].size for i in self.non_protected]
            total = 1
            for s in sizes:
                total *= s
            if total >= 2**63:
                radix = None
            else:
                mult = np.cumprod([1] + sizes[:-1], dtype=object)
                radix = np.array([int(m) for m in mult], dtype=np.int64)
            self._derived["radix"] = radix
        return self._derived["radix"]

    # ------------------------------------------------------------------ presentation and serialization
    def decode(self, X, *, suffix: str = "") -> pd.DataFrame:
        """Turn encoded inputs into a frame with feature names as columns and labels as values.

        Vectorised: each labelled column is a lookup of its codes in the feature's label table, built once.

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
        suffix : str
            Appended to every column name (e.g. ``"_counterpart"``).

        Returns
        -------
        pandas.DataFrame, shape (n_samples, n_features)
            Labelled features as ``string`` columns (a code without a label shows as the code itself), the
            others as int64 codes.
        """
        X = np.asarray(X, dtype=np.int64).reshape(-1, self.n_features)
        cols = {}
        for j, f in enumerate(self.features):
            cols[f.name + suffix] = _labels_of(f, X[:, j]) if f.labels else X[:, j]
        return pd.DataFrame(cols)

    def to_dict(self) -> dict:
        """JSON-ready description (round trip with :meth:`from_dict`).

        ``protected`` holds one display name per attribute, ``protected_columns`` each attribute's column
        names, and ``protected_values`` each attribute's values: codes for a single column, rows of codes for
        a group.

        Returns
        -------
        dict
        """
        return {
            "features": [{"name": f.name, "lo": f.lo, "hi": f.hi, "kind": f.kind,
                          "labels": {str(k): v for k, v in (f.labels or {}).items()} or None,
                          "missing": f.missing}
                         for f in self.features],
            "protected": self.protected_names,
            "protected_columns": [[self.features[c].name for c in a.columns] for a in self.attributes],
            "protected_values": [[list(r) if a.is_group else r[0] for r in a.values] for a in self.attributes],
            "couple": self.couple_spec(),
            "constraints": self.describe_constraints(),
        }

    @classmethod
    def from_dict(cls, d: dict) -> Domain:
        """Rebuild a domain from :meth:`to_dict` output.

        Also reads older forms without ``protected_columns``, couplings or constraints. The support is not
        serialised: the rebuilt domain has none (:meth:`plausible` is None).

        Parameters
        ----------
        d : dict
            What :meth:`to_dict` returned (or its JSON, parsed).

        Returns
        -------
        Domain
        """
        feats = tuple(Feature(f["name"], f["lo"], f["hi"], f["kind"],
                              {int(k): v for k, v in f["labels"].items()} if f.get("labels") else None,
                              f.get("missing"))
                      for f in d["features"])
        dom = cls(feats, couplings=parse_couplings(d.get("couple"), feats),
                  constraints=parse_constraints(d.get("constraints") or None, feats))
        if not d.get("protected"):
            return dom
        names = d["protected"]
        columns = d.get("protected_columns") or [[n] for n in names]
        values = dict(zip(names, d["protected_values"], strict=True))
        return dom.with_protected(dict(zip(names, columns, strict=True)), values=values)


def _row_position(rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Position of each row of ``rows`` among the sorted unique rows ``values``, -1 where absent.

    Parameters
    ----------
    rows : numpy.ndarray of int64, shape (n, k)
    values : numpy.ndarray of int64, shape (m, k), sorted lexicographically

    Returns
    -------
    numpy.ndarray of int64, shape (n,)
    """
    if values.shape[1] == 1:
        flat, targets = values[:, 0], rows[:, 0]
    else:
        # Mixed-radix code of each row over the joint range of both arrays; lexicographic order is kept.
        low = np.minimum(values.min(axis=0), rows.min(axis=0, initial=np.iinfo(np.int64).max))
        span = np.maximum(values.max(axis=0), rows.max(axis=0, initial=np.iinfo(np.int64).min)) - low + 1
        radix = np.cumprod(np.concatenate([[1], span[::-1][:-1]]))[::-1]
        flat, targets = (values - low) @ radix, (rows - low) @ radix
    i = np.clip(np.searchsorted(flat, targets), 0, len(flat) - 1)
    return np.where(flat[i] == targets, i, -1).astype(np.int64)


def _value_text(features, attribute: ProtectedAttribute, row) -> str:
    """One value of ``attribute`` as text: a one-hot group's hot column's name, else the labels joined by "/"."""
    feats = [features[c] for c in attribute.columns]
    if is_one_hot(features, attribute) and sum(row) == 1 and all(v in (0, 1) for v in row):
        return feats[int(np.argmax(row))].name
    return "/".join(f.label(v) for f, v in zip(feats, row, strict=True))


def _labels_of(feature: Feature, codes: np.ndarray) -> pd.Series:
    """Labels of ``codes`` as a ``string`` Series: one dictionary lookup through Arrow, no per-row Python."""
    import pyarrow as pa

    inside = (codes >= feature.lo) & (codes <= feature.hi)
    table = [feature.label(c) for c in range(feature.lo, feature.hi + 1)]
    index = codes - feature.lo
    if not inside.all():  # codes outside the bounds are shown as themselves, after the in-bound labels
        outside = np.unique(codes[~inside])
        table += [str(int(c)) for c in outside]
        index = np.where(inside, index, feature.size + np.searchsorted(outside, codes))
    labels = pa.DictionaryArray.from_arrays(pa.array(index.astype(np.int32)), pa.array(table, type=pa.string()))
    return pd.Series(pd.array(labels.cast(pa.string()), dtype="string"))
