"""The input domain: features in order, integer bounds, code labels and the protected attributes.

Every generator clips and rounds into a :class:`Domain`; the discrimination check takes the protected
attributes' value sets from it; an IDI's key (its identity for counting, design §2) is computed here.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np
import pandas as pd

from .exceptions import DomainError

Kind = Literal["categorical", "ordinal"]

# Largest product of protected-attribute domain sizes: each checked input costs this many model queries.
MAX_COMBINATIONS = 4096


@dataclass(frozen=True)
class Feature:
    """One encoded feature.

    Parameters
    ----------
    name : str
        Column name.
    lo, hi : int
        Inclusive integer bounds of the encoded values.
    kind : {"categorical", "ordinal"}
        Categorical codes have no order; ordinal codes (binned numbers) do.
    labels : mapping of int to str, optional
        Human-readable label of each code (e.g. ``{0: "Female", 1: "Male"}``); for ordinal features the
        label of a bin such as ``"30-39"``.
    """

    name: str
    lo: int
    hi: int
    kind: Kind = "ordinal"
    labels: Mapping[int, str] | None = None

    def __post_init__(self):
        if int(self.lo) != self.lo or int(self.hi) != self.hi:
            raise DomainError(f"feature {self.name!r}: bounds must be integers, got [{self.lo}, {self.hi}]")
        if self.lo > self.hi:
            raise DomainError(f"feature {self.name!r}: lower bound {self.lo} > upper bound {self.hi}")
        if self.kind not in ("categorical", "ordinal"):
            raise DomainError(f"feature {self.name!r}: kind must be 'categorical' or 'ordinal', got {self.kind!r}")

    @property
    def size(self) -> int:
        """Number of integer values in ``[lo, hi]``."""
        return int(self.hi - self.lo + 1)

    def label(self, code: int) -> str:
        """Return the label of ``code``, or the code itself as text when it has none."""
        if self.labels and int(code) in self.labels:
            return self.labels[int(code)]
        return str(int(code))


@dataclass(frozen=True)
class Domain:
    """Features in order, with the protected attributes (PAs) and each PA's domain of values.

    Parameters
    ----------
    features : sequence of Feature
        The encoded features, in column order.
    protected : sequence of int
        Column indices of the protected attributes under test (one or several).
    protected_values : sequence of sequence of int
        For each protected attribute, the values its counterparts may take (the values that the data holds or
        that the caller declares). Every value must lie inside the feature's bounds.

    Raises
    ------
    DomainError
        On duplicate names, a protected index out of range, a protected attribute with fewer than two
        values, or a protected value outside its feature's bounds.
    """

    features: tuple[Feature, ...]
    protected: tuple[int, ...] = ()
    protected_values: tuple[tuple[int, ...], ...] = ()
    _radix: tuple = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "features", tuple(self.features))
        object.__setattr__(self, "protected", tuple(int(i) for i in self.protected))
        object.__setattr__(self, "protected_values",
                           tuple(tuple(sorted({int(v) for v in vals})) for vals in self.protected_values))
        names = [f.name for f in self.features]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise DomainError(f"duplicate feature names: {dupes}")
        if len(set(self.protected)) != len(self.protected):
            raise DomainError(f"a protected attribute is listed twice: {self.protected_names}")
        if len(self.protected_values) != len(self.protected):
            raise DomainError("protected_values must give one value set per protected attribute")
        for idx, vals in zip(self.protected, self.protected_values, strict=True):
            if not 0 <= idx < len(self.features):
                raise DomainError(f"protected index {idx} is outside 0..{len(self.features) - 1}")
            feat = self.features[idx]
            if len(vals) < 2:
                raise DomainError(
                    f"protected attribute {feat.name!r} has only one value {list(vals)}: no counterpart "
                    "can differ from an input, so the discrimination check would always report 'fair'")
            bad = [v for v in vals if not feat.lo <= v <= feat.hi]
            if bad:
                raise DomainError(
                    f"protected attribute {feat.name!r}: values {bad} lie outside its bounds [{feat.lo}, {feat.hi}]")
        n_combinations = int(np.prod([len(v) for v in self.protected_values], dtype=float))
        if n_combinations > MAX_COMBINATIONS:
            sizes = ", ".join(f"{self.features[i].name}: {len(v)}"
                              for i, v in zip(self.protected, self.protected_values, strict=True))
            raise DomainError(
                f"the protected attributes have {n_combinations:,} value combinations ({sizes}); the discrimination "
                f"check would cost that many model queries per input. At most {MAX_COMBINATIONS:,} are allowed: "
                "test fewer protected attributes at once, or declare fewer values")

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_data(cls, X, names: Sequence[str], *, kinds: Sequence[Kind] | None = None,
                  labels: Mapping[str, Mapping[int, str]] | None = None,
                  protected: Sequence[str] = ()) -> Domain:
        """Build a domain whose bounds and protected domains are measured on encoded data.

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Encoded data.
        names : sequence of str, length n_features
        kinds : sequence of {"categorical", "ordinal"}, optional
            Defaults to ordinal for every feature.
        labels : mapping of name to (mapping of code to label), optional
        protected : sequence of str
            Names of the protected attributes; each one's domain is the set of values observed in ``X``.

        Returns
        -------
        Domain

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
        lo, hi = X.min(axis=0), X.max(axis=0)
        feats = tuple(Feature(n, int(a), int(b), k, labels.get(n))
                      for n, a, b, k in zip(names, lo, hi, kinds, strict=True))
        domain = cls(feats)
        if protected:
            domain = domain.with_protected(protected, data=X)
        return domain

    def with_protected(self, names: Sequence[str], *, data=None,
                       values: Mapping[str, Sequence[int]] | None = None) -> Domain:
        """Return a copy of this domain with other protected attributes.

        Parameters
        ----------
        names : sequence of str
            Protected attribute names, one or several.
        data : array-like, shape (n_samples, n_features), optional
            Encoded data; each PA's domain is the set of values observed in it.
        values : mapping of name to sequence of int, optional
            Declared PA domains; override the observed ones. Without ``data`` or ``values`` the PA domain
            is every integer in the feature's bounds.

        Raises
        ------
        DomainError
            If a name is unknown (the message lists the valid names) or a PA has fewer than two values.
        """
        if isinstance(names, str):
            names = [names]
        if not names:
            raise DomainError("at least one protected attribute is needed")
        idx = [self.index(n) for n in names]
        values = values or {}
        pv = []
        for i, n in zip(idx, names, strict=True):
            if n in values:
                pv.append(tuple(values[n]))
            elif data is not None:
                pv.append(tuple(np.unique(np.asarray(data)[:, i]).astype(int)))
            else:
                f = self.features[i]
                pv.append(tuple(range(f.lo, f.hi + 1)))
        return replace(self, protected=tuple(idx), protected_values=tuple(pv), _radix=None)

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
        return np.array([f.lo for f in self.features], dtype=np.int64)

    @property
    def upper(self) -> np.ndarray:
        """Upper bounds, shape (n_features,), int64."""
        return np.array([f.hi for f in self.features], dtype=np.int64)

    @property
    def protected_names(self) -> list[str]:
        """Names of the protected attributes under test."""
        return [self.features[i].name for i in self.protected]

    @property
    def non_protected(self) -> np.ndarray:
        """Column indices of the non-protected attributes, shape (n_features - n_protected,)."""
        mask = np.ones(self.n_features, dtype=bool)
        mask[list(self.protected)] = False
        return np.flatnonzero(mask)

    @property
    def non_protected_mask(self) -> np.ndarray:
        """Boolean mask of the non-protected attributes, shape (n_features,)."""
        mask = np.ones(self.n_features, dtype=bool)
        mask[list(self.protected)] = False
        return mask

    def index(self, name: str) -> int:
        """Column index of feature ``name``.

        Raises
        ------
        DomainError
            If there is no such feature; the message lists the valid names.
        """
        for i, f in enumerate(self.features):
            if f.name == name:
                return i
        raise DomainError(f"unknown feature {name!r}; valid names: {', '.join(self.names)}")

    # ------------------------------------------------------------------ counterparts
    @property
    def combinations(self) -> np.ndarray:
        """Every combination of the PA values (the product of their domains), shape (n_combinations, n_protected).

        Raises
        ------
        DomainError
            If no protected attribute is set.
        """
        self._require_protected()
        return np.array(list(itertools.product(*self.protected_values)), dtype=np.int64)

    def counterparts(self, X) -> np.ndarray:
        """Every PA-value combination applied to each input.

        The input itself is among them when its PA values lie in the PA domains.

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)

        Returns
        -------
        numpy.ndarray of int64, shape (n_samples, n_combinations, n_features)
        """
        X = np.asarray(X, dtype=np.int64)
        combos = self.combinations
        out = np.repeat(X[:, None, :], len(combos), axis=1)
        out[:, :, list(self.protected)] = combos[None, :, :]
        return out

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
        """Draw ``n`` inputs uniformly from the domain (PAs uniformly from their value sets).

        Returns
        -------
        numpy.ndarray of int64, shape (n, n_features)
        """
        X = rng.integers(self.lower, self.upper + 1, size=(n, self.n_features), dtype=np.int64)
        for i, vals in zip(self.protected, self.protected_values, strict=True):
            X[:, i] = rng.choice(np.asarray(vals, dtype=np.int64), size=n)
        return X

    # ------------------------------------------------------------------ identity (design §2)
    def keys(self, X) -> np.ndarray:
        """IDI keys: the non-protected projection of each input, as one comparable value per row.

        The key is a mixed-radix int64 when the non-protected part of the domain has fewer than 2**63 points,
        else a bytes object per row. Two inputs that differ only in PAs have the same key.

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)

        Returns
        -------
        numpy.ndarray, shape (n_samples,)
            int64 keys, or an object array of bytes keys for very large domains.
        """
        X = np.asarray(X, dtype=np.int64)
        idx = self.non_protected
        radix = self._key_radix()
        if radix is not None:
            return (X[:, idx] - self.lower[idx]) @ radix
        proj = np.ascontiguousarray(X[:, idx])
        return np.array([r.tobytes() for r in proj], dtype=object)

    def _key_radix(self):
        if self._radix is None:
            sizes = [self.features[i].size for i in self.non_protected]
            total = 1
            for s in sizes:
                total *= s
            if total >= 2**63:
                radix = (None,)
            else:
                mult = np.cumprod([1] + sizes[:-1], dtype=object)
                radix = (np.array([int(m) for m in mult], dtype=np.int64),)
            object.__setattr__(self, "_radix", radix)
        return self._radix[0]

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
        """JSON-ready description (round trip with :meth:`from_dict`)."""
        return {
            "features": [{"name": f.name, "lo": f.lo, "hi": f.hi, "kind": f.kind,
                          "labels": {str(k): v for k, v in (f.labels or {}).items()} or None}
                         for f in self.features],
            "protected": self.protected_names,
            "protected_values": [list(v) for v in self.protected_values],
        }

    @classmethod
    def from_dict(cls, d: dict) -> Domain:
        """Rebuild a domain from :meth:`to_dict` output."""
        feats = tuple(Feature(f["name"], f["lo"], f["hi"], f["kind"],
                              {int(k): v for k, v in f["labels"].items()} if f.get("labels") else None)
                      for f in d["features"])
        dom = cls(feats)
        if d.get("protected"):
            dom = dom.with_protected(d["protected"], values=dict(zip(d["protected"], d["protected_values"],
                                                                     strict=True)))
        return dom


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
