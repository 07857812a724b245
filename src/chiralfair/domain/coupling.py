"""Coupled attributes: columns that change with a protected attribute, so counterparts can exist.

Changing only ``sex`` turns a married man (``relationship=Husband``) into a female husband, a person the data
never holds. A **coupling** belongs to a protected attribute and says how another column changes with it:
``{"sex": {"relationship": {"Husband": "Wife", "Wife": "Husband"}}}``. Every counterpart of the code base is built
by :meth:`chiralfair.domain.Domain.counterparts` / :meth:`~chiralfair.domain.Domain.counterpart_rows`, which apply
the couplings compiled here; the discrimination check, the generators' pair recording, the chiral mutation of
I&D and the verdict all go through them. See architecture: counterparts that could exist.

How a coupling is compiled
--------------------------
For each value ``v`` of the protected attribute a permutation ``frame[v]`` of the coupled column's codes is built
(an int64 table of shape ``(n_values, n_codes)``); moving an input from value ``a`` to value ``b`` maps code ``c`` to
``frame[b][inverse(frame[a])[c]]``. The code ``inverse(frame[a])[c]`` is the input's **role**: the code it would
have at the attribute's first value. Moving from ``a`` to ``a`` is the identity, and moving ``a -> b -> c`` equals
moving ``a -> c`` for every input, so an input and all its counterparts form one orbit that shares one role (the
IDI key rests on that, see :meth:`~chiralfair.domain.Domain.keys`).

Two declarations are accepted for each coupled column:

- a **swap map** ``{"Husband": "Wife", "Wife": "Husband"}`` (labels or codes), for an attribute with two values:
  when the value changes, the codes are swapped; codes not named stay. It must be an involution (every code
  it moves is moved back), else moving there and back would not return the input;
- **roles** ``[{"Male": "Husband", "Female": "Wife"}, ...]``, for any number of values: each class names the
  code a role takes at each value of the attribute (values left out keep the first value's code). Classes must
  not share codes. Moving a code of a class from one value to another gives that class's code at the other value.

References
----------
.. [1] Xiao, Y. et al. "LIMI: Latent imitator: generating natural individual discriminatory instances for
   black-box fairness testing." ISSTA 2023 (naturalness of generated instances, the problem this answers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from ..exceptions import ConfigError, DomainError


@dataclass(frozen=True)
class Coupling:
    """One column that changes with a protected attribute (a declaration; compiled by :func:`compile_frames`).

    Parameters
    ----------
    attribute : str
        Display name of the protected attribute (a feature name, or a group's name).
    column : str
        Name of the coupled column (a feature that is not protected).
    swaps : tuple of (int, int)
        Swap-map form: code pairs ``(c, m(c))`` of the column, one per moved code; empty for the roles form.
    roles : tuple of tuple of (str, int)
        Roles form: one class per role, as ``(attribute value, code)`` pairs; the value is a label (or a code as
        text) resolved against the attribute's values when the attribute is protected.
    """

    attribute: str
    column: str
    swaps: tuple[tuple[int, int], ...] = ()
    roles: tuple[tuple[tuple[str, int], ...], ...] = ()

    def describe(self, labels: Mapping[int, str] | None = None) -> str:
        """One line such as ``"sex -> relationship: Husband <-> Wife"`` (codes shown by their labels).

        Parameters
        ----------
        labels : mapping of int to str, optional
            The coupled column's code labels; default: codes shown as numbers.

        Returns
        -------
        str
        """
        def show(code):
            return (labels or {}).get(int(code), str(int(code)))

        if self.swaps:
            first: dict[frozenset[int], tuple[int, int]] = {}
            for p in self.swaps:  # a swap and its way back, shown once
                first.setdefault(frozenset(p), p)
            text = ", ".join(f"{show(a)} <-> {show(b)}" for a, b in first.values())
        else:
            text = "; ".join(", ".join(f"{v}: {show(c)}" for v, c in role) for role in self.roles)
        return f"{self.attribute} -> {self.column}: {text}"

    def to_dict(self, labels: Mapping[int, str] | None = None) -> dict | list[dict]:
        """The column's map in the form :func:`parse_couplings` reads (labels where the column has them).

        Parameters
        ----------
        labels : mapping of int to str, optional
            The coupled column's code labels; default: codes.

        Returns
        -------
        dict or list of dict
            ``{value: value, ...}`` or, for role classes, ``[{attribute value: value, ...}, ...]``: what
            ``{attribute: {column: ...}}`` holds for this coupling.
        """
        def show(code):
            return (labels or {}).get(int(code), int(code))

        if self.swaps:
            return {show(a): show(b) for a, b in self.swaps}
        return [{v: show(c) for v, c in role} for role in self.roles]


def parse_couplings(spec, features) -> tuple[Coupling, ...]:
    """Turn a ``couple=`` argument into :class:`Coupling` declarations, checking columns and codes.

    Parameters
    ----------
    spec : mapping, None or False
        ``{attribute: {column: swap map or list of role classes}}`` (see the module docstring); None, False or
        an empty mapping declare no coupling.
    features : sequence of Feature
        The domain's features: coupled columns must be among them; labels are matched first, then integers
        as codes.

    Returns
    -------
    tuple of Coupling

    Raises
    ------
    DomainError
        For an unknown column (the message lists the valid names), a label or code the column does not have,
        a column coupled twice, or a swap map that is not an involution.
    ConfigError
        If ``spec`` is not a mapping of mappings.
    """
    if spec is None or spec is False or (isinstance(spec, Mapping) and not spec):
        return ()
    if not isinstance(spec, Mapping):
        raise ConfigError(f"couple must be a mapping {{attribute: {{column: {{code: code}}}}}}, None or False; "
                          f"got {type(spec).__name__}")
    by_name = {f.name: f for f in features}
    out: list[Coupling] = []
    seen: dict[str, str] = {}
    for attribute, columns in spec.items():
        if not isinstance(columns, Mapping) or not columns:
            raise ConfigError(f"couple[{attribute!r}] must map coupled columns to their maps, e.g. "
                              "{'relationship': {'Husband': 'Wife', 'Wife': 'Husband'}}")
        for column, mapping in columns.items():
            column = str(column)
            if column not in by_name:
                raise DomainError(f"couple[{attribute!r}]: unknown column {column!r}; valid names: "
                                  f"{', '.join(map(repr, by_name))}")
            if column in seen:
                raise DomainError(f"column {column!r} is coupled to both {seen[column]!r} and {str(attribute)!r}; a "
                                  "column can change with one protected attribute only")
            seen[column] = str(attribute)
            out.append(_parse_one(str(attribute), by_name[column], mapping))
    return tuple(out)


def check_coupled_attributes(spec, protected_names) -> None:
    """Refuse a ``couple=`` that the user gave naming an attribute that is not protected (a misspelt name).

    A dataset's own default couplings may name an attribute not under test (census's sex coupling while race is
    tested): they stay inactive and are not checked here. A coupling the user writes is meant to act, so an
    attribute outside the protected ones would silently give the uncoupled answer.

    Parameters
    ----------
    spec : mapping, None or False
        The user's ``couple=``.
    protected_names : sequence of str
        The protected attributes under test.

    Raises
    ------
    DomainError
        Naming the attribute(s) and listing the protected ones.
    """
    if not isinstance(spec, Mapping) or not spec:
        return
    unknown = [str(a) for a in spec if str(a) not in {str(p) for p in protected_names}]
    if unknown:
        raise DomainError(f"couple names {', '.join(map(repr, unknown))}, which {'is' if len(unknown) == 1 else 'are'} "
                          f"not a protected attribute under test; protected: {', '.join(map(repr, protected_names))} "
                          "(a coupling changes columns with one of them)")


def _parse_one(attribute: str, feature, mapping) -> Coupling:
    where = f"couple[{attribute!r}][{feature.name!r}]"
    if isinstance(mapping, Mapping):
        swaps = tuple((_code(feature, k, where), _code(feature, v, where)) for k, v in mapping.items())
        moved = dict(swaps)
        for a, b in swaps:
            if moved.get(b, b) != a:
                raise DomainError(
                    f"{where}: the map sends {feature.label(a)!r} to {feature.label(b)!r} but "
                    f"{feature.label(b)!r} to {feature.label(moved.get(b, b))!r}; a swap map must send every "
                    f"code it moves back (add {feature.label(b)!r}: {feature.label(a)!r}), so that changing the "
                    "attribute twice gives back the input")
        return Coupling(attribute, feature.name, swaps=tuple((a, b) for a, b in swaps if a != b))
    if isinstance(mapping, Sequence) and not isinstance(mapping, str) and mapping:
        roles: list[tuple[tuple[str, int], ...]] = []
        used: dict[int, int] = {}
        for role in mapping:
            if not isinstance(role, Mapping) or not role:
                raise ConfigError(f"{where}: each role class must map attribute values to codes, e.g. "
                                  "{'Male': 'Husband', 'Female': 'Wife'}")
            pairs = tuple((str(v), _code(feature, c, where)) for v, c in role.items())
            for _, code in pairs:
                if used.get(code, len(roles)) != len(roles):
                    raise DomainError(f"{where}: code {feature.label(code)!r} is in two role classes; classes "
                                      "must not share codes")
                used[code] = len(roles)
            roles.append(pairs)
        return Coupling(attribute, feature.name, roles=tuple(roles))
    raise ConfigError(f"{where} must be a swap map {{code: code}} or a list of role classes "
                      f"[{{value: code}}, ...]; got {mapping!r}")


def _code(feature, value, where: str) -> int:
    """The code of ``value`` in ``feature``: a label, else an integer code inside the bounds."""
    if feature.labels:
        for code, label in feature.labels.items():
            if label == str(value):
                return int(code)
    try:
        code = int(value)
    except (TypeError, ValueError):
        code = None
    if code is not None and str(code) == str(value).strip() and feature.lo <= code <= feature.hi:
        return code
    valid = (", ".join(repr(v) for v in feature.labels.values()) if feature.labels
             else f"codes {feature.lo}..{feature.hi}")
    raise DomainError(f"{where}: column {feature.name!r} has no value {value!r}; valid: {valid}")


def compile_frames(coupling: Coupling, feature, value_labels: Sequence[str],
                   value_codes: Sequence[tuple[int, ...]]) -> np.ndarray:
    """The permutation of the column's codes at each value of the attribute (see the module docstring).

    Parameters
    ----------
    coupling : Coupling
    feature : Feature
        The coupled column.
    value_labels : sequence of str
        Text of each value of the protected attribute (:meth:`Domain.protected_value_labels`).
    value_codes : sequence of tuple of int
        Codes of each value (the attribute's value rows), also accepted as value names in role classes.

    Returns
    -------
    numpy.ndarray of int64, shape (n_values, n_codes)
        ``frames[v, i]``: the code offset (code - ``feature.lo``) at value ``v`` of role offset ``i``; row 0 is the
        identity.

    Raises
    ------
    DomainError
        For a swap map on an attribute with more than two values, or a role naming a value the attribute lacks.
    """
    n_values, size = len(value_labels), feature.size
    frames = np.tile(np.arange(size, dtype=np.int64), (n_values, 1))
    where = f"couple[{coupling.attribute!r}][{coupling.column!r}]"
    if coupling.swaps:
        if n_values != 2:
            raise DomainError(
                f"{where}: a swap map says what happens when the attribute changes, which is one change only for "
                f"an attribute with two values; {coupling.attribute!r} has {n_values}. Give role classes instead, "
                "e.g. [{'value A': 'code at A', 'value B': 'code at B', ...}]")
        for a, b in coupling.swaps:
            frames[1, a - feature.lo] = b - feature.lo
        return frames
    index = {}
    for v, (text, codes) in enumerate(zip(value_labels, value_codes, strict=True)):
        index[str(text)] = v
        index.setdefault(" ".join(map(str, codes)) if len(codes) > 1 else str(codes[0]), v)
    for role in coupling.roles:
        at = {}
        for value, code in role:
            if value not in index:
                raise DomainError(f"{where}: the protected attribute {coupling.attribute!r} has no value {value!r}; "
                                  f"valid: {', '.join(map(repr, value_labels))}")
            at[index[value]] = code - feature.lo
        base = at.get(0)
        if base is None:
            raise DomainError(f"{where}: each role class must name the code at the attribute's first value "
                              f"{value_labels[0]!r} (the role's own code); {dict(role)!r} does not")
        for v, offset in at.items():
            if v and offset != base:
                # a transposition of the role's first-value code and its code at v; classes use disjoint codes
                frames[v, base], frames[v, offset] = offset, base
    return frames


# Largest role table (codes of the attribute's column x codes of the coupled column) made for one coupling.
MAX_ROLE_TABLE = 1 << 20


@dataclass(frozen=True)
class CompiledCoupling:
    """An active coupling as the tables a search reads for every row it checks (made once per domain).

    When the attribute has one column, a row's **role** in the coupled column (see the module docstring) and the
    code its counterpart takes there at each PA-value combination are read from tables over the **joint offset**
    ``(attribute code - pa_lo) * n_codes + (coupled code - lo)``: one lookup per row instead of a value position,
    then a two-dimensional lookup per row and combination (what the coupled search paid on top of the uncoupled
    one, benchmarks/perf_guard.py). A group of columns reads roles from its value positions.

    Attributes
    ----------
    attribute : int
        Index of the protected attribute in ``Domain.attributes``.
    column : int
        Index of the coupled column.
    lo : int
        The coupled column's lowest code.
    inverse : numpy.ndarray of int64, shape (n_values, n_codes)
        ``inverse[v, code - lo]``: a code's role offset at the attribute's value ``v``.
    at_combinations : numpy.ndarray of int64, shape (n_codes, n_combinations)
        The code (``lo`` added) a role offset takes at each combination of ``Domain.combinations``.
    pa_column, pa_lo, pa_size : int
        The attribute's column, its lowest code and number of codes (-1, 0, 0 when there is no joint table).
    role_table : numpy.ndarray of int64, shape ((pa_size + 1) * n_codes,), or None
        Role offset at each joint offset; attribute offset ``pa_size`` stands for every code that is none of its
        values' (read at the first value, as everywhere). None for a group or a table past :data:`MAX_ROLE_TABLE`.
    counterpart_table : numpy.ndarray of int64, shape ((pa_size + 1) * n_codes, n_combinations), or None
        The coupled column's code (``lo`` added) at each combination, per joint offset.
    """

    attribute: int
    column: int
    lo: int
    inverse: np.ndarray
    at_combinations: np.ndarray
    pa_column: int = -1
    pa_lo: int = 0
    pa_size: int = 0
    role_table: np.ndarray | None = None
    counterpart_table: np.ndarray | None = None
    name: str = ""

    @classmethod
    def make(cls, attribute: int, column: int, lo: int, frames: np.ndarray, combination_values: np.ndarray,
             value_positions: np.ndarray | None = None, pa_column: int = -1, pa_lo: int = 0,
             name: str = "") -> CompiledCoupling:
        """The tables of one coupling.

        Parameters
        ----------
        attribute, column, lo : int
            As the attributes of the same names.
        frames : numpy.ndarray of int64, shape (n_values, n_codes)
            From :func:`compile_frames`.
        combination_values : numpy.ndarray of int64, shape (n_combinations,)
            The attribute's value position in each combination.
        value_positions : numpy.ndarray of int64, shape (pa_size + 1,), optional
            For a one-column attribute: each code's position among its values, -1 for none (last entry: codes
            outside its bounds).
        pa_column, pa_lo : int
            The attribute's column and its lowest code, with ``value_positions``.
        name : str
            The coupled column's name, for errors.

        Returns
        -------
        CompiledCoupling
        """
        inverse = np.argsort(frames, axis=1)
        at_combinations = np.ascontiguousarray(frames[combination_values].T) + lo
        inverse.setflags(write=False)
        at_combinations.setflags(write=False)
        if value_positions is None or len(value_positions) * frames.shape[1] * len(
                combination_values) > MAX_ROLE_TABLE:
            return cls(attribute, column, lo, inverse, at_combinations, name=name)
        role_table = np.ascontiguousarray(inverse[np.maximum(value_positions, 0)]).ravel()
        counterpart_table = at_combinations[role_table]
        role_table.setflags(write=False)
        counterpart_table.setflags(write=False)
        return cls(attribute, column, lo, inverse, at_combinations, pa_column=pa_column, pa_lo=pa_lo,
                   pa_size=len(value_positions) - 1, role_table=role_table, counterpart_table=counterpart_table,
                   name=name)

    @property
    def n_codes(self) -> int:
        """Codes of the coupled column."""
        return self.inverse.shape[1]

    def joint(self, X: np.ndarray, *, inside: bool = False) -> np.ndarray | None:
        """Each row's joint offset into :attr:`role_table` (None when there is no joint table), shape (n_samples,).

        Parameters
        ----------
        X : numpy.ndarray of int64, shape (n_samples, n_features)
            Codes; the coupled column inside its bounds.
        inside : bool, default=False
            Every code of ``X`` is inside its column's bounds (a local walk's clipped proposals), so the attribute's
            code needs no clamp and the coupled column's no comparison: two products and a sum. Not checked.

        Returns
        -------
        numpy.ndarray of int64, shape (n_samples,), or None

        Raises
        ------
        DomainError
            If a code of the coupled column lies outside its bounds (without ``inside``).
        """
        if self.role_table is None:
            return None
        if inside:  # the attribute's offset is then below pa_size, its last row (codes outside the bounds) unread
            joint = X[:, self.pa_column] * self.n_codes
            joint += X[:, self.column]
            if self.pa_lo or self.lo:  # wrapped into int64 as the product above wraps (pa_lo near 2**61: past it)
                joint -= (self.pa_lo * self.n_codes + self.lo + 2**63) % 2**64 - 2**63
            return joint
        # a code below pa_lo wraps to a huge offset, so every code outside the bounds lands on the last row (the
        # subtractions are skipped for columns coded from 0, the usual case: each numpy call counts on this path)
        pa = X[:, self.pa_column] if self.pa_lo == 0 else X[:, self.pa_column] - self.pa_lo
        joint = np.minimum(pa.view(np.uint64), self.pa_size).view(np.int64) * self.n_codes
        joint += self._offset(X)
        return joint

    def _offset(self, X: np.ndarray) -> np.ndarray:
        """The coupled column's code offsets; a DomainError naming the first code outside its bounds.

        Such a code has no role: read as an offset it would land on another row of the tables and give a wrong
        counterpart without an error.
        """
        offset = X[:, self.column] if self.lo == 0 else X[:, self.column] - self.lo
        if len(offset) and offset.view(np.uint64).max() >= self.n_codes:  # a negative offset wraps to a huge one
            row = int(np.flatnonzero(offset.view(np.uint64) >= self.n_codes)[0])
            raise DomainError(f"column {self.name or self.column!r}: code {int(X[row, self.column])} (row {row}) is "
                              f"outside its codes {self.lo}..{self.lo + self.n_codes - 1}, so its counterparts, which "
                              "change it with the protected attribute, cannot be built")
        return offset

    def roles(self, X: np.ndarray, position: np.ndarray | None = None) -> np.ndarray:
        """Each row's role offset in the coupled column, shape (n_samples,).

        Parameters
        ----------
        X : numpy.ndarray of int64, shape (n_samples, n_features)
            Codes; the coupled column inside its bounds.
        position : numpy.ndarray of int64, shape (n_samples, n_attributes), optional
            ``Domain.protected_value_index(X)``; needed when :attr:`role_table` is None.

        Returns
        -------
        numpy.ndarray of int64, shape (n_samples,)

        Raises
        ------
        ValueError
            If ``position`` is needed and not given.
        DomainError
            If a row's code in the coupled column lies outside its bounds.
        """
        joint = self.joint(X)
        if joint is not None:
            return cast(np.ndarray, self.role_table).take(joint)
        if position is None:
            raise ValueError("a coupling without a joint table reads roles from the value positions")
        return self.inverse[np.maximum(position[:, self.attribute], 0), self._offset(X)]

    def counterpart_codes(self, X: np.ndarray, position: np.ndarray | None = None, *,
                          inside: bool = False) -> np.ndarray:
        """The coupled column's code in each row's counterpart at each combination, shape (n_samples, n_combinations).

        Parameters
        ----------
        X, position
            As in :meth:`roles`.
        inside : bool, default=False
            As in :meth:`joint`.

        Returns
        -------
        numpy.ndarray of int64, shape (n_samples, n_combinations)
        """
        joint = self.joint(X, inside=inside)
        if joint is not None:
            return cast(np.ndarray, self.counterpart_table).take(joint, axis=0)
        return self.at_combinations.take(self.roles(X, position), axis=0)

    def counterpart_code(self, X: np.ndarray, combination: np.ndarray,
                         position: np.ndarray | None = None) -> np.ndarray:
        """The coupled column's code in row i's counterpart at combination ``combination[i]``, shape (n_samples,).

        Parameters
        ----------
        X, position
            As in :meth:`roles`.
        combination : numpy.ndarray of int64, shape (n_samples,)
            Indices into ``Domain.combinations``.

        Returns
        -------
        numpy.ndarray of int64, shape (n_samples,)
        """
        joint = self.joint(X)
        table = self.at_combinations if joint is None else cast(np.ndarray, self.counterpart_table)
        row = self.roles(X, position) if joint is None else joint
        return table.take(row * table.shape[1] + combination)


def parse_couple_text(text: str):
    """Parse the command line's ``--couple`` text into a ``couple=`` argument.

    ``"sex:relationship=Husband/Wife"`` gives ``{"sex": {"relationship": {"Husband": "Wife", "Wife": "Husband"}}}``;
    several swaps of one column are separated by ``,`` (``sex:relationship=Husband/Wife,A/B``), several columns
    by ``;``. ``"none"`` gives False (no coupling, e.g. to reproduce the I&D paper on census).

    Parameters
    ----------
    text : str

    Returns
    -------
    dict or False

    Raises
    ------
    ConfigError
        Naming the item that is not ``attribute:column=a/b``.
    """
    if text.strip().lower() == "none":
        return False
    out: dict = {}
    for item in filter(None, (t.strip() for t in text.split(";"))):
        head, sep, swaps = item.partition("=")
        attribute, colon, column = head.partition(":")
        pairs = [p.split("/") for p in swaps.split(",")] if sep else []
        if not (sep and colon and attribute.strip() and column.strip() and pairs
                and all(len(p) == 2 and p[0].strip() and p[1].strip() for p in pairs)):
            raise ConfigError(f"--couple item {item!r} is not attribute:column=a/b (swap a and b of column when the "
                              "attribute changes), e.g. --couple sex:relationship=Husband/Wife; 'none' turns "
                              "couplings off")
        mapping = out.setdefault(attribute.strip(), {}).setdefault(column.strip(), {})
        for a, b in pairs:
            mapping[a.strip()], mapping[b.strip()] = b.strip(), a.strip()
    if not out:
        raise ConfigError("--couple names no coupling; give attribute:column=a/b, or 'none'")
    return out
