"""Frozen result records with a JSON round trip: :class:`SearchResult` and :class:`SeedReport`.

A :class:`SearchResult` holds its IDI pairs in memory, or, when the search streamed them to a run folder,
reads them from its ``idis.parquet`` on first access (see :mod:`chiralfair.results.run_folder`).
See architecture: results and files.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np
import pandas as pd

from .. import __version__
from ..domain import Domain
from ..exceptions import ConfigError
from ..storage import json_default
from .run_folder import decode_side, read_pairs

SUMMARY_FIELDS = ("n_seeds", "n_seed_idis", "n_idis", "n_global", "n_local", "n_tested", "n_queries",
                  "success_rate", "seconds")


def base_meta(**extra) -> dict:
    """Metadata common to every result: package version plus the given entries.

    Parameters
    ----------
    **extra
        Entries to add (parameters, dataset, model, random state).

    Returns
    -------
    dict
    """
    return {"chiralfair_version": __version__, **extra}


def _arr(a, dtype, width=None) -> np.ndarray:
    a = np.asarray(a, dtype=dtype)
    if width is not None and a.size == 0:
        a = a.reshape(0, width)
    return a


PAIR_ARRAYS = ("idis", "counterparts", "idi_labels", "counterpart_labels", "phase")


class _LazyPairs:
    """Data descriptor for a pair array: the array given at construction, else read from ``pairs_path`` once."""

    def __init__(self, name: str):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return None  # the dataclass default
        store = obj.__dict__.setdefault("_pairs", {})
        if store.get(self.name) is None and obj.pairs_path is not None and not store.get("_read"):
            store.update(read_pairs(obj.pairs_path), _read=True)
        return store.get(self.name)

    def __set__(self, obj, value):
        obj.__dict__.setdefault("_pairs", {})[self.name] = value


def _lazy_pairs(name: str) -> Any:
    """The :class:`_LazyPairs` of ``name``, typed for type checkers as the array it gives (a dataclass default)."""
    return _LazyPairs(name)


# Up to this many distinct codes (or one per row), protected_pair_counts counts with a bincount, not a sort.
BINCOUNT_CODES = 1 << 16


def protected_pair_counts(own: np.ndarray, counterpart: np.ndarray) -> list[tuple[tuple[int, ...], int]]:
    """Count IDIs by (own protected values, counterpart protected values), vectorised.

    Parameters
    ----------
    own, counterpart : numpy.ndarray of int64, shape (n_idis, n_protected)
        Protected-attribute codes of the IDIs and of their counterparts.

    Returns
    -------
    list of (tuple of int, int)
        ``((own codes..., counterpart codes...), number of IDIs)`` for each combination that occurs.
    """
    # one row of ``columns`` per protected column: numpy reduces along rows far faster than down the few columns
    # of an (n, k) array (30x for census's 16,384 pairs of three columns)
    columns = np.concatenate([own.T, counterpart.T]).astype(np.int64, copy=False)
    if not columns.shape[1]:
        return []
    lo = columns.min(axis=1)
    spans = [int(s) for s in columns.max(axis=1) - lo + 1]
    size = math.prod(spans)
    if size < 2**62:  # one int64 code per row: a 1-D count, far faster than unique over rows
        strides = np.array([math.prod(spans[j + 1:]) for j in range(len(spans))], dtype=np.int64)
        codes = strides @ (columns - lo[:, None])
        if size <= max(BINCOUNT_CODES, columns.shape[1]):  # few codes (census sex: 8): counted without sorting
            every = np.bincount(codes, minlength=size)
            code = every.nonzero()[0]
            counts = every[code]
            values = (code[:, None] // strides % np.array(spans)) + lo
        else:
            _, first, counts = np.unique(codes, return_index=True, return_counts=True)
            values = columns[:, first].T
    else:
        values, counts = np.unique(columns.T, axis=0, return_counts=True)
    return [(tuple(v), int(c)) for v, c in zip(values.tolist(), counts.tolist(), strict=True)]


@dataclass(frozen=True)
class SearchResult:
    """What a generator found, counted by the one rule of architecture: the counting rule.

    Attributes
    ----------
    generator : str
        Registered generator name.
    seed_strategy : str
        Name of the seed strategy that produced the seeds (``"given"`` for user-supplied seeds).
    n_seeds : int
        Seeds used by the global phase.
    n_seed_idis : int
        Seeds that are IDIs themselves.
    n_idis : int
        Unique IDI keys (non-protected projections), global ∪ local.
    n_global, n_local : int
        Unique IDI keys found in the global and in the local phase (disjoint; ``n_global + n_local == n_idis``).
    n_tested : int
        Unique keys checked.
    n_queries : int
        Queries of the search: rows passed to the model's methods (labels and probabilities of a row are two
        unless one call returns both; architecture: the model under test).
    seconds : float
        Wall time of the search, in seconds.
    idis, counterparts : numpy.ndarray of int64, shape (n_idis, n_features)
        Each IDI and one counterpart that gets a different label (coupled columns changed with the protected
        attributes, architecture: counterparts that could exist). Read from ``pairs_path`` on first access when the
        pairs were streamed there (pass ``pairs_path`` instead of the five arrays).
    idi_labels, counterpart_labels : numpy.ndarray of int64, shape (n_idis,)
    phase : numpy.ndarray of str, shape (n_idis,)
        ``"global"`` or ``"local"``.
    notes : tuple of str
        Anything a user must know, e.g. that a time budget stopped the run early.
    meta : dict
        Package version, parameters, resolved ``random_state``, dataset and model identifiers.
    pa_pair_counts : numpy.ndarray of int64, shape (n_combinations_found, 2 * n_protected + 1), or None
        IDIs counted by (own protected codes, counterpart protected codes), accumulated while searching,
        most frequent first; ``None`` when not recorded (then :meth:`protected_value_counts` counts the pairs).
    pa_label_counts : numpy.ndarray of int64, shape (n_combinations_found, 2 * n_protected + 2), or None
        IDIs counted by (own protected codes, counterpart protected codes, the IDI's predicted label),
        accumulated while searching; ``None`` when not recorded (then :meth:`idi_directions` counts the pairs).
    pairs_path : str or None
        The ``idis.parquet`` dataset folder the pairs were streamed to, or ``None`` for pairs held in memory.
    diversity : dict or None
        Diversity of the IDIs found (:meth:`chiralfair.seeds.diversity_report.DiversityReport.to_dict`), when
        measured (``RunConfig(diversity=True)``, ``chiralfair run --diversity``); None otherwise.
    n_plausible_idis : int or None
        IDIs whose pair is plausible: the IDI and its counterpart both hold only (protected value, categorical
        value) pairs that the data shows (:meth:`Domain.plausible <chiralfair.domain.Domain.plausible>`); None
        when the domain has no support (not built from data).
    plausible : numpy.ndarray of bool, shape (n_idis,), or None
        Each pair's plausibility (``n_plausible_idis`` counts the True ones); None when not scored.

    Raises
    ------
    ConfigError
        If neither the five pair arrays nor ``pairs_path`` are given.
    """

    generator: str
    seed_strategy: str
    n_seeds: int
    n_seed_idis: int
    n_idis: int
    n_global: int
    n_local: int
    n_tested: int
    n_queries: int
    seconds: float
    idis: np.ndarray = _lazy_pairs("idis")
    counterparts: np.ndarray = _lazy_pairs("counterparts")
    idi_labels: np.ndarray = _lazy_pairs("idi_labels")
    counterpart_labels: np.ndarray = _lazy_pairs("counterpart_labels")
    phase: np.ndarray = _lazy_pairs("phase")
    notes: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)
    pa_pair_counts: np.ndarray | None = None
    pa_label_counts: np.ndarray | None = None
    pairs_path: str | None = None
    diversity: dict[str, Any] | None = None
    n_plausible_idis: int | None = None
    plausible: np.ndarray | None = _lazy_pairs("plausible")

    def __post_init__(self):
        given = [self.__dict__["_pairs"].get(k) is not None for k in PAIR_ARRAYS]
        if self.pairs_path is None and not all(given):
            missing = [k for k, g in zip(PAIR_ARRAYS, given, strict=True) if not g]
            raise ConfigError(f"SearchResult needs the five pair arrays or pairs_path; missing {', '.join(missing)}")

    def __repr__(self) -> str:
        where = f"pairs in {self.pairs_path!r}" if self.pairs_path else "pairs in memory"
        return (f"SearchResult(generator={self.generator!r}, seed_strategy={self.seed_strategy!r}, "
                f"n_idis={self.n_idis}, n_global={self.n_global}, n_local={self.n_local}, "
                f"n_tested={self.n_tested}, n_queries={self.n_queries}, seconds={self.seconds:.3g}, {where})")

    @property
    def success_rate(self) -> float:
        """``n_idis / n_tested`` (0 when nothing was tested)."""
        return self.n_idis / self.n_tested if self.n_tested else 0.0

    def summary(self) -> dict[str, Any]:
        """The headline figures under their result.json names (with ``diversity`` when it was measured).

        ``n_plausible_idis`` is there when pairs were scored for plausibility.

        Returns
        -------
        dict
        """
        out = {k: getattr(self, k) for k in SUMMARY_FIELDS}
        if self.n_plausible_idis is not None:
            out["n_plausible_idis"] = self.n_plausible_idis
        out.update(generator=self.generator, seed_strategy=self.seed_strategy)
        if self.diversity is not None:
            out["diversity"] = self.diversity
        return out

    def with_diversity(self, diversity: dict[str, Any] | None) -> SearchResult:
        """A copy carrying ``diversity``; streamed pairs stay on disk (they are not read to copy them).

        Parameters
        ----------
        diversity : dict or None
            :func:`~chiralfair.pipeline.steps.diversities` of the IDIs.

        Returns
        -------
        SearchResult
        """
        kept = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in (*PAIR_ARRAYS, "plausible")}
        if self.pairs_path is None:
            kept.update({k: getattr(self, k) for k in (*PAIR_ARRAYS, "plausible")})
        return SearchResult(**{**kept, "diversity": diversity})

    def with_pairs_path(self, pairs_path: str) -> SearchResult:
        """A copy reading its streamed pairs from ``pairs_path`` (the run folder moved into place).

        Parameters
        ----------
        pairs_path : str
            The ``idis.parquet`` the pairs are now in.

        Returns
        -------
        SearchResult
        """
        kept = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in (*PAIR_ARRAYS, "plausible")}
        return SearchResult(**{**kept, "pairs_path": pairs_path})

    def with_meta(self, meta: dict[str, Any], notes: Sequence[str] = ()) -> SearchResult:
        """A copy with ``meta`` entries added and ``notes`` appended; streamed pairs stay on disk.

        Parameters
        ----------
        meta : dict
            Entries laid over :attr:`meta`.
        notes : sequence of str, default=()

        Returns
        -------
        SearchResult
        """
        kept = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in (*PAIR_ARRAYS, "plausible")}
        if self.pairs_path is None:
            kept.update({k: getattr(self, k) for k in (*PAIR_ARRAYS, "plausible")})
        return SearchResult(**{**kept, "meta": {**self.meta, **meta}, "notes": (*self.notes, *notes)})

    def to_frame(self, domain: Domain | None = None, *, codec=None) -> pd.DataFrame:
        """One row per IDI: the IDI, its counterpart (suffix ``_counterpart``), both predictions and the phase.

        Parameters
        ----------
        domain : Domain, optional
            When given, columns carry feature names and decoded labels; else ``x0..`` codes.
        codec : FrameCodec, optional
            With ``domain``, for a model fed the data's own rows
            (:func:`~chiralfair.results.run_folder.fed_codec`): each binned column holds the value the model was
            fed (its bin's representative, in the dtype of the data's column), followed by ``<column> (bin)``
            with the bin's label, as in ``idis.parquet``.

        Returns
        -------
        pandas.DataFrame, shape (n_idis, 2 * (n_features + n_binned) + 3), or + 4 with a ``plausible`` column
            ``plausible`` when the pairs were scored for plausibility; ``n_binned`` is 0 without ``codec``.
        """
        if domain is not None:
            left = decode_side(self.idis, domain, codec)
            right = decode_side(self.counterparts, domain, codec, suffix="_counterpart")
        else:
            d = self.idis.shape[1] if self.idis.ndim == 2 else 0
            left = pd.DataFrame(self.idis, columns=[f"x{j}" for j in range(d)])
            right = pd.DataFrame(self.counterparts, columns=[f"x{j}_counterpart" for j in range(d)])
        frame = pd.concat([left, right], axis=1)
        frame["prediction"] = self.idi_labels
        frame["prediction_counterpart"] = self.counterpart_labels
        frame["phase"] = pd.Series(self.phase, dtype="string")
        if self.plausible is not None:
            frame["plausible"] = np.asarray(self.plausible, dtype=bool)
        return frame

    def protected_value_counts(self, domain: Domain) -> pd.DataFrame:
        """IDIs counted by own and counterpart protected values, most frequent first.

        Uses the counts accumulated during the search when present, so no pair is read back.

        Parameters
        ----------
        domain : Domain
            The domain searched (gives the protected attributes and their labels).

        Returns
        -------
        pandas.DataFrame, shape (n_combinations_found, 2 * n_attributes + 1)
            Decoded protected values (columns named after the protected attributes, a group of columns being one
            attribute, then with suffix ``_counterpart``) and ``n_idis``.
        """
        width = 2 * len(domain.protected) + 1
        if self.pa_pair_counts is not None:
            table = np.asarray(self.pa_pair_counts, dtype=np.int64).reshape(-1, width)
        else:
            pa = list(domain.protected)
            found = protected_pair_counts(self.idis[:, pa], self.counterparts[:, pa])
            table = np.array([[*v, n] for v, n in found], dtype=np.int64).reshape(-1, width)
        table = table[np.lexsort((*table[:, :-1].T[::-1], -table[:, -1]))]
        k = len(domain.protected)
        frame = {}
        for side, suffix in ((0, ""), (1, "_counterpart")):
            rows = np.zeros((len(table), domain.n_features), dtype=np.int64)
            rows[:, list(domain.protected)] = table[:, side * k:(side + 1) * k]
            # one column per protected attribute (a one-hot group is one attribute); only the few distinct rows
            for name, text in domain.describe_protected(rows).items():
                frame[name + suffix] = text
        frame["n_idis"] = table[:, -1]
        return pd.DataFrame(frame)

    def idi_directions(self, domain: Domain, favourable: int) -> pd.DataFrame:
        """IDI pairs counted by own and counterpart protected values and by the side the model favours.

        Uses the counts accumulated during the search when present, so no pair is read back.

        Parameters
        ----------
        domain : Domain
            The domain searched.
        favourable : {0, 1}
            The favourable label.

        Returns
        -------
        pandas.DataFrame, shape (n_combinations_found, 2 * n_attributes + 3)
            Decoded protected values (as in :meth:`protected_value_counts`), ``n_idis``, ``n_idi_favoured``
            (the IDI gets the favourable label, its counterpart the other) and ``n_counterpart_favoured``;
            most IDIs first. The two counts add up to ``n_idis``.
        """
        k = len(domain.protected)
        if self.pa_label_counts is not None:
            table = np.asarray(self.pa_label_counts, dtype=np.int64).reshape(-1, 2 * k + 2)
        else:
            pa = list(domain.protected)
            found = protected_pair_counts(self.idis[:, pa],
                                          np.hstack([self.counterparts[:, pa], self.idi_labels[:, None]]))
            table = np.array([[*v, n] for v, n in found], dtype=np.int64).reshape(-1, 2 * k + 2)
        favoured = table[:, 2 * k] == favourable
        codes = pd.DataFrame(table[:, :2 * k])
        counts = pd.DataFrame({"n_idis": table[:, -1], "n_idi_favoured": np.where(favoured, table[:, -1], 0),
                               "n_counterpart_favoured": np.where(favoured, 0, table[:, -1])})
        merged = counts.groupby([codes[c] for c in codes.columns], sort=False).sum().reset_index()
        merged = merged.sort_values("n_idis", ascending=False, kind="stable").reset_index(drop=True)
        pairs = merged.iloc[:, :2 * k].to_numpy(dtype=np.int64)
        frame = {}
        for side, suffix in ((0, ""), (1, "_counterpart")):
            rows = np.zeros((len(pairs), domain.n_features), dtype=np.int64)
            rows[:, list(domain.protected)] = pairs[:, side * k:(side + 1) * k]
            for name, text in domain.describe_protected(rows).items():
                frame[name + suffix] = text
        for col in ("n_idis", "n_idi_favoured", "n_counterpart_favoured"):
            frame[col] = merged[col].to_numpy(dtype=np.int64)
        return pd.DataFrame(frame)

    def to_json(self) -> str:
        """Serialize everything (arrays as lists; streamed pairs are read back first).

        Returns
        -------
        str
        """
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        for k in (*PAIR_ARRAYS, "plausible", "pa_pair_counts", "pa_label_counts"):
            d[k] = None if d[k] is None else np.asarray(d[k]).tolist()
        d["notes"] = list(self.notes)
        d["success_rate"] = self.success_rate
        # an empty result keeps its width
        d["n_features"] = int(self.idis.shape[1]) if self.idis.ndim == 2 else 0
        return json.dumps(d, default=json_default)

    @classmethod
    def from_json(cls, text: str) -> SearchResult:
        """Inverse of :meth:`to_json`.

        Parameters
        ----------
        text : str
            What :meth:`to_json` returned.

        Returns
        -------
        SearchResult
        """
        d = json.loads(text)
        d.pop("success_rate", None)
        width = d.pop("n_features", None)
        if width is None:
            width = len(d["idis"][0]) if d["idis"] else 0
        d["idis"] = _arr(d["idis"], np.int64, width)
        d["counterparts"] = _arr(d["counterparts"], np.int64, width)
        d["idi_labels"] = _arr(d["idi_labels"], np.int64)
        d["counterpart_labels"] = _arr(d["counterpart_labels"], np.int64)
        d["phase"] = np.asarray(d["phase"], dtype=str)
        if d.get("plausible") is not None:
            d["plausible"] = np.asarray(d["plausible"], dtype=bool)
        d["notes"] = tuple(d["notes"])
        for k in ("pa_pair_counts", "pa_label_counts"):
            if d.get(k) is not None:
                d[k] = np.asarray(d[k], dtype=np.int64)
        return cls(**d)


def disfavoured_groups(directions: pd.DataFrame, protected_names) -> pd.DataFrame:
    """Per protected value: in how many IDI pairs differing in that attribute it is the disfavoured side.

    Parameters
    ----------
    directions : pandas.DataFrame
        :meth:`SearchResult.idi_directions`.
    protected_names : sequence of str
        The protected attributes (:attr:`Domain.protected_names`).

    Returns
    -------
    pandas.DataFrame
        Columns ``attribute``, ``group`` (``"sex=Female"``), ``n_disfavoured`` (pairs where this value gets
        the unfavourable label and the other side, with another value of the attribute, the favourable one),
        ``n_favoured``; most disfavoured first. Pairs that agree on an attribute do not count for it.
    """
    rows = []
    for name in protected_names:
        own, other = directions[name].astype(str), directions[name + "_counterpart"].astype(str)
        differs = (own != other).to_numpy()
        idi_fav = directions["n_idi_favoured"].to_numpy()
        cf_fav = directions["n_counterpart_favoured"].to_numpy()
        # the IDI is disfavoured when its counterpart is favoured, and the other way round
        disfavoured = pd.concat([pd.Series(cf_fav[differs], index=own[differs].to_numpy()),
                                 pd.Series(idi_fav[differs], index=other[differs].to_numpy())])
        favoured = pd.concat([pd.Series(idi_fav[differs], index=own[differs].to_numpy()),
                              pd.Series(cf_fav[differs], index=other[differs].to_numpy())])
        by_value = pd.DataFrame({"n_disfavoured": disfavoured.groupby(level=0).sum(),
                                 "n_favoured": favoured.groupby(level=0).sum()}).fillna(0).astype(np.int64)
        for value, r in by_value.iterrows():
            rows.append({"attribute": name, "group": f"{name}={value}", "n_disfavoured": int(r["n_disfavoured"]),
                         "n_favoured": int(r["n_favoured"])})
    frame = pd.DataFrame(rows, columns=["attribute", "group", "n_disfavoured", "n_favoured"])
    return frame.sort_values("n_disfavoured", ascending=False, kind="stable").reset_index(drop=True)


@dataclass(frozen=True)
class SeedReport:
    """Seeds chosen by a seed strategy, which of them are IDIs, and how they were found.

    Attributes
    ----------
    strategy : str
        Registered seed-strategy name.
    seeds : numpy.ndarray of int64, shape (n_seeds, n_features)
    is_idi : numpy.ndarray of bool, shape (n_seeds,)
        Result of the discrimination check on each seed.
    n_initial_idis : int or None
        For I / I&D: unique initial IDIs found where the chiral and the original model disagree.
    n_candidates : int or None
        Rows the strategy checked to find its initial IDIs: for I / I&D, the data rows where the chiral and the
        original model disagree; for ``data_rows``, the data rows checked within its query budget; for ``expga``,
        the random rows explained.
    n_candidate_idis : int or None
        Candidates that are IDIs (before deduplication by IDI key).
    n_initial_queries : int or None
        Model queries spent finding the initial IDIs: for I / I&D, one prediction per data row plus the
        discrimination check of the candidates; for ``data_rows``, the checks of the rows within the budget.
    chiral_training_rows : int or None
        For I / I&D: rows the chiral model was trained on (0 for a given chiral model), counted as queries by
        :attr:`initial_idis_per_1000_queries`.
    clustering : dict or None
        For I&D: method (``"dbscan"``, ``"dbscan-kdist"``, ``"hdbscan"``), parameters, number of clusters,
        noise share, explainer used, and whether a degenerate clustering was repaired.
    seconds : dict of str to float
        Wall time per phase, in seconds (e.g. ``chiral_training``, ``prediction_and_check``, ``shap``,
        ``clustering``, ``total``).
    n_queries : int
        Rows sent to the model under test while selecting the seeds.
    notes : tuple of str
    meta : dict
    """

    strategy: str
    seeds: np.ndarray
    is_idi: np.ndarray
    n_initial_idis: int | None = None
    n_candidates: int | None = None
    clustering: dict[str, Any] | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    n_queries: int = 0
    notes: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)
    n_candidate_idis: int | None = None
    n_initial_queries: int | None = None
    chiral_training_rows: int | None = None

    @property
    def n_seeds(self) -> int:
        """Number of seeds."""
        return int(len(self.seeds))

    @property
    def initialization_rate(self) -> float:
        """Share of seeds that are IDIs (the I&D paper's Table 3); 0 for no seeds."""
        return float(np.mean(self.is_idi)) if len(self.is_idi) else 0.0

    @property
    def candidate_idi_share(self) -> float | None:
        """``n_candidate_idis / n_candidates``; None when not recorded or no candidate.

        For I / I&D the share of IDIs among the rows where the chiral model disagrees with the model under test:
        unlike the initialization rate, it does not saturate at 100% when the initial IDIs outnumber the seeds.
        """
        if self.n_candidate_idis is None or not self.n_candidates:
            return None
        return self.n_candidate_idis / self.n_candidates

    @property
    def initial_idis_per_1000_queries(self) -> float | None:
        """Unique initial IDIs per 1,000 model queries, the chiral model's training rows counted as queries.

        ``1000 * n_initial_idis / (n_initial_queries + chiral_training_rows)``. The chiral model learns the
        data's labels, so its training rows cost no query here; they are counted as the queries a tester without
        those labels would spend labelling them with the model under test, which puts I / I&D and a strategy
        without a chiral model (``data_rows``) on one scale. None when not recorded or nothing was spent.
        """
        if self.n_initial_idis is None or self.n_initial_queries is None:
            return None
        spent = self.n_initial_queries + (self.chiral_training_rows or 0)
        return 1000.0 * self.n_initial_idis / spent if spent else None

    def to_json(self) -> str:
        """Serialize everything (arrays as lists), with the derived rates.

        Returns
        -------
        str
        """
        d = asdict(self)
        d["seeds"] = np.asarray(self.seeds).tolist()
        d["is_idi"] = np.asarray(self.is_idi).tolist()
        d["notes"] = list(self.notes)
        for name in SEED_RATES:
            d[name] = getattr(self, name)
        return json.dumps(d, default=json_default)

    @classmethod
    def from_json(cls, text: str) -> SeedReport:
        """Inverse of :meth:`to_json` (also reads reports written before the later fields existed).

        Parameters
        ----------
        text : str
            What :meth:`to_json` returned.

        Returns
        -------
        SeedReport
        """
        d = json.loads(text)
        for name in SEED_RATES:
            d.pop(name, None)
        width = len(d["seeds"][0]) if d["seeds"] else 0
        d["seeds"] = _arr(d["seeds"], np.int64, width)
        d["is_idi"] = np.asarray(d["is_idi"], dtype=bool)
        d["notes"] = tuple(d["notes"])
        return cls(**d)


# Derived figures of a SeedReport, written to its JSON and dropped when read back.
SEED_RATES = ("initialization_rate", "candidate_idi_share", "initial_idis_per_1000_queries")
