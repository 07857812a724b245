"""What certification proved: :class:`CertifyResult` (the domain) and :class:`IndividualCertificates` (each person).

Both are frozen records with ``to_frame()`` and a JSON round trip; ``meta`` records the package versions, the
parameters and the resolved ``random_state``. :meth:`CertifyResult.write` writes a run folder: ``result.json``,
``idis.parquet`` (the concrete IDIs found, as every run folder holds them) and, with per-person certificates,
``individuals.parquet`` (each person's status, and each affected person's witness pair in the user's units).

Volumes are numbers of **keys** (non-protected projections, design's counting rule): a key and all its
counterparts are one point, so the shares do not depend on how many protected values there are.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..domain import Domain
from ..storage import atomic_path, atomic_write_bytes, json_default
from ..verdict.result import Verdict

ANSWERS = ("certified fair", "falsified", "undecided")
PERSON_STATUSES = ("certified unaffected", "affected", "undecided", "left out")
# A person none of whose counterparts could exist: in no share (the verdict's left-out rule), counted and named.
LEFT_OUT = 3
PAIR_FIELDS = ("idis", "counterparts", "idi_labels", "counterpart_labels")
WITNESS_FIELDS = ("witness", "witness_counterpart", "witness_labels")
# Level of the per-person shares' intervals for the people the model will meet (the verdict's default level).
CONFIDENCE = 0.95


def _share(part: float, whole: float) -> float:
    return float(part) / float(whole) if whole else 0.0


@dataclass(frozen=True)
class IndividualCertificates:
    """Per person: certified unaffected, affected (an IDI, proven), undecided (the budget ran out), or left out.

    Certified unaffected: no counterpart of any point of their box gets another label. Left out: none of their
    counterparts could exist (each breaks a constraint), so no decision could treat them differently; as in the
    verdict (:attr:`Verdict.n_left_out <chiralfair.verdict.Verdict>`), they are counted and named, and in no
    share: the shares are of the :attr:`n_individuals` others.
    A person's box holds every value of their own non-protected codes' bins; for a model over codes (every model
    certification reads) a bin is one code, so the box is the person's own point and the answer is exact: certified
    unaffected or affected, never undecided.

    Each affected person carries a **witness**: an input ``x`` of their box (their own row when the box is that row;
    else a neighbour with their own protected values where one is an IDI) and a counterpart ``x'`` of it with another
    label, both sent to the model once more after the search (``f(x)``, ``f(x')`` are those answers). A person whose
    witness the model does not confirm is undecided, never affected.

    The shares are exact for these rows; for the people the model will meet (these rows read as a sample of them),
    each share has a Clopper-Pearson interval at :data:`CONFIDENCE` (:meth:`interval`; the verdict's interval rule,
    :func:`chiralfair.verdict.result.binomial_interval`). With undecided people, the share affected among those people
    lies between the lower end of ``affected`` and the upper end of ``affected`` plus ``undecided``
    (:meth:`affected_bounds`).

    Attributes
    ----------
    rows : numpy.ndarray of int64, shape (n_rows,)
        The dataset rows certified (the left out among them included).
    status : numpy.ndarray of int8, shape (n_rows,)
        0 certified unaffected, 1 affected, 2 undecided, 3 left out (:data:`PERSON_STATUSES`).
    seconds : float
        Wall seconds.
    rows_name : str
        What the rows are, in words (e.g. the held-out test split).
    meta : dict
    witness, witness_counterpart : numpy.ndarray of int64, shape (n_rows, n_features), or None
        Codes of each affected person's witness ``x`` and its counterpart ``x'`` (rows of the others: -1). None
        when no witnesses were recorded.
    witness_labels : numpy.ndarray of int64, shape (n_rows, 2), or None
        ``f(x)`` and ``f(x')`` as the model answered when re-queried (-1 for the others).
    witness_rows : pandas.DataFrame or None
        For a model fed your rows (its witnesses are rows in your values, not codes: ``witness`` is then None): one
        row per person with a witness (those with ``witness_labels[:, 0] >= 0``, in order), ``x`` under your
        columns' names and ``x'`` under the names with the suffix ``_counterpart``, in your columns' dtypes.
    verdict : Verdict or None
        When every counted person is decided and the favourable label is known: the same people as a
        :class:`~chiralfair.verdict.Verdict` (:func:`~chiralfair.certification.certificates.people_verdict`), which
        decides the people's interval, the groups and the most harmed group as for every other door.
    row_labels : numpy.ndarray, shape (n_rows,), or None
        Each person's row as you named it: their label in the index of the rows you gave (the test rows, a file's
        rows numbered from 0 below its header); None for a benchmark, whose :attr:`rows` are its own row numbers.
        ``individuals.parquet``'s ``row`` column holds these where there are some, :attr:`rows` otherwise.
    prediction_labels : tuple or None
        The model's own labels for the answers 0 and 1 (1: the positive class), e.g. ``("<=50K", ">50K")``:
        ``prediction`` and ``prediction_counterpart`` are written in them. None: written as 0 / 1 (1: the
        positive class).
    """

    rows: np.ndarray
    status: np.ndarray
    seconds: float
    rows_name: str = "rows"
    meta: dict[str, Any] = field(default_factory=dict)
    witness: np.ndarray | None = None
    witness_counterpart: np.ndarray | None = None
    witness_labels: np.ndarray | None = None
    verdict: Verdict | None = None
    witness_rows: pd.DataFrame | None = None
    row_labels: np.ndarray | None = None
    prediction_labels: tuple | None = None

    @property
    def n_individuals(self) -> int:
        """Individuals in the shares: the rows certified, less the left out."""
        return int(len(self.rows)) - self.n_left_out

    @property
    def n_left_out(self) -> int:
        """Individuals left out of every share: none of their counterparts could exist."""
        return int((self.status == LEFT_OUT).sum())

    def share(self, status: str) -> float:
        """Share of the individuals (:attr:`n_individuals`, the left out not among them) with ``status``.

        Parameters
        ----------
        status : {"certified unaffected", "affected", "undecided"}

        Returns
        -------
        float

        Raises
        ------
        ConfigError
            For ``"left out"`` (in no share: :attr:`n_left_out` counts them) or another word.
        """
        from ..exceptions import ConfigError

        if status not in PERSON_STATUSES[:LEFT_OUT]:
            raise ConfigError(f"status {status!r}: the shares are of {', '.join(map(repr, PERSON_STATUSES[:LEFT_OUT]))}"
                              "; the left out are in no share (n_left_out counts them)")
        return _share(int((self.status == PERSON_STATUSES.index(status)).sum()), self.n_individuals)

    @property
    def certified_share(self) -> float:
        """Share of the individuals certified unaffected."""
        return self.share("certified unaffected")

    @property
    def affected_share(self) -> float:
        """Share of the individuals proven affected (IDIs)."""
        return self.share("affected")

    @property
    def undecided_share(self) -> float:
        """Share of the individuals left undecided."""
        return self.share("undecided")

    def summary(self) -> dict[str, Any]:
        """The headline figures (JSON-ready).

        Returns
        -------
        dict
        """
        counts = {status: self.count(status) for status in PERSON_STATUSES[:LEFT_OUT]}
        intervals = {status.replace(" ", "_"): list(self.interval(status)) if self.n_individuals else None
                     for status in PERSON_STATUSES[:LEFT_OUT]}
        return {"rows": self.rows_name, "n_individuals": self.n_individuals, "n_left_out": self.n_left_out,
                "certified_unaffected": self.certified_share, "affected": self.affected_share,
                "undecided": self.undecided_share,
                "counts": {k.replace(" ", "_"): v for k, v in counts.items()},
                "people_intervals": intervals, "people_confidence": CONFIDENCE,
                "people_method": "clopper-pearson", "n_witnesses": self.n_witnesses, "seconds": self.seconds,
                # what individuals.parquet's row and prediction columns hold, and the ranges similar= was clipped to
                **{key: self.meta[key] for key in ("row", "prediction", "similar_ranges") if key in self.meta},
                **({} if self.verdict is None else {"verdict": {
                    "share_affected": self.verdict.share, "people_lower": self.verdict.people_lower,
                    "people_upper": self.verdict.people_upper, "people_method": self.verdict.people_method,
                    "n_harmed": self.verdict.n_harmed, "worst_group": self.verdict.worst_group,
                    "too_small": list(self.verdict.too_small)}})}

    def count(self, status: str) -> int:
        """How many rows have ``status`` (the left out included: ``"left out"`` counts them).

        Parameters
        ----------
        status : {"certified unaffected", "affected", "undecided", "left out"}

        Returns
        -------
        int

        Raises
        ------
        ConfigError
            For another word.
        """
        from ..exceptions import ConfigError

        if status not in PERSON_STATUSES:
            raise ConfigError(f"status {status!r}: the statuses are {', '.join(map(repr, PERSON_STATUSES))}")
        return int((self.status == PERSON_STATUSES.index(status)).sum())

    def interval(self, status: str, confidence: float | None = None) -> tuple[float, float]:
        """The share with ``status``, for the people the model will meet: its Clopper-Pearson interval.

        These rows are read as a sample of those people, as the verdict reads an exact share
        (:func:`chiralfair.verdict.result.people_interval`): the interval of :meth:`count` among
        :attr:`n_individuals`.

        Parameters
        ----------
        status : {"certified unaffected", "affected", "undecided"}
        confidence : float, optional
            Default :data:`CONFIDENCE`.

        Returns
        -------
        (float, float)

        Raises
        ------
        ConfigError
            For ``"left out"``, another word, or no individual in the shares.
        """
        from ..exceptions import ConfigError
        from ..verdict.result import binomial_interval

        self.share(status)  # refuses "left out" and other words
        if not self.n_individuals:
            raise ConfigError("no individual is in the shares (every one is left out): no interval")
        return binomial_interval(self.count(status), self.n_individuals, CONFIDENCE if confidence is None
                                 else float(confidence))

    def affected_bounds(self) -> tuple[float, float]:
        """The share affected for the people the model will meet, with the undecided counted both ways.

        Returns
        -------
        (float, float)
            The Clopper-Pearson lower end of ``affected`` and the upper end of ``affected`` plus ``undecided`` (the
            undecided may be either); equal to :meth:`interval` ``("affected")`` when no one is undecided.
        """
        from ..verdict.result import binomial_interval

        if not self.n_individuals:
            return 0.0, 0.0
        lower = self.interval("affected")[0]
        upper = binomial_interval(self.count("affected") + self.count("undecided"), self.n_individuals, CONFIDENCE)[1]
        return lower, upper

    @property
    def n_witnesses(self) -> int:
        """Affected people whose witness pair the model confirmed when re-queried (all of the affected)."""
        if self.witness_labels is None:
            return 0
        return int(((self.status == 1) & (self.witness_labels[:, 0] >= 0)).sum())

    def shares_text(self) -> str:
        """The shares with their intervals for the people, as the console prints them.

        Returns
        -------
        str
            ``"77.50% certified unaffected [73.09%, 81.50%], 22.50% affected [18.50%, 26.91%], 0.00% undecided
            [0.00%, 0.92%] of 400 (95% Clopper-Pearson, these rows read as a sample of them)"``.
        """
        if not self.n_individuals:
            return "no individual in the shares"
        parts = []
        for status in PERSON_STATUSES[:LEFT_OUT]:
            lower, upper = self.interval(status)
            parts.append(f"{self.share(status):.2%} {status} [{lower:.2%}, {upper:.2%}]")
        return (", ".join(parts) + f" of {self.n_individuals:,} ({CONFIDENCE:.0%} Clopper-Pearson, these rows read "
                "as a sample of them)")

    def left_out_text(self) -> str | None:
        """Who is left out and why, in the verdict's words (None when no one is).

        Returns
        -------
        str or None
            Naming the domain's constraints (``meta["constraints"]``).
        """
        from ..verdict.result import left_out_line

        unplaced = self.meta.get("unplaced") or {}  # their own protected value is missing: another reason
        return left_out_line(self.n_left_out - sum(unplaced.values()), self.meta.get("constraints", ()), (), "test",
                             unplaced=unplaced)

    def undecided_text(self) -> str | None:
        """Why people are undecided, in words (None when no one is).

        Returns
        -------
        str or None
            Counting the boxes partly outside the domain (``meta["stats"]["n_partly_inside_undecided"]``), the
            witnesses the model did not confirm (``meta["n_witnesses_refuted"]``) and the rest, left when the search
            stopped (``meta["stats"]["stopped"]``: ``"time"``, ``"boxes"`` or ``"interrupted"``; ``"unread"``: the
            budget ran out while the trees were read).
        """
        n = self.count("undecided")
        if not n:
            return None
        stats = self.meta.get("stats") or {}
        partly = int(stats.get("n_partly_inside_undecided") or 0)
        refuted = int(self.meta.get("n_witnesses_refuted") or 0)
        rest = n - partly - refuted
        why = {"time": "the time budget (max_seconds, --max-seconds) ran out", "boxes": "the box budget ran out",
               "interrupted": "the run was interrupted"}.get(str(stats.get("stopped")), "the search stopped")
        if stats.get("unread"):
            why += " while the trees were read over the people's values (their boxes were not searched)"
        parts = [f"{rest:,} not decided when {why}, after {self.seconds:.2f} s; a larger budget decides more"] * (
            rest > 0)
        if partly:
            parts.append(f"{partly:,} whose box lies partly outside the domain")
        if refuted:
            parts.append(f"{refuted:,} whose IDI the model did not confirm when re-queried")
        return f"{n:,} undecided: " + "; ".join(parts)

    def answers_text(self) -> str:
        """What ``prediction`` and ``prediction_counterpart`` hold, in words.

        Returns
        -------
        str
            ``f(x), f(x') as the model's own labels, <=50K or >50K`` (:attr:`prediction_labels`), else ``f(x),
            f(x') as 1 for the positive class, 0 for the other``.
        """
        if self.prediction_labels is None:
            return "f(x), f(x') as 1 for the positive class, 0 for the other"
        negative, positive = self.prediction_labels
        return f"f(x), f(x') as the model's own labels, {negative} or {positive}"

    def to_frame(self, domain: Domain | None = None, population=None) -> pd.DataFrame:
        """One row per individual: ``row``, ``status`` (text) and, given the domain, each affected person's witness.

        Parameters
        ----------
        domain : Domain, optional
            The domain certified; with it, the witness pairs are added in the data's values.
        population : Population, optional
            Every row of the dataset as the user gave it (:func:`~chiralfair.datasets.population.population_of`):
            the witnesses are then each person's own row with only the columns the witness changes set to their
            decoded values (the user's units: an income of 51,234.5 stays 51,234.5). Without it (a benchmark,
            already encoded), the codes are decoded by the domain.

        Returns
        -------
        pandas.DataFrame, shape (n_rows, 2) or (n_rows, 4 + 2 * n_features)
            The left out included, with status ``"left out"``. ``row``: each person's row as you named it
            (:attr:`row_labels`), else the dataset's row number (:attr:`rows`). With ``domain``: the witness ``x``
            under the features' names, its counterpart ``x'`` under the names with the suffix ``_counterpart``, and
            ``prediction`` and ``prediction_counterpart`` (``f(x)``, ``f(x')``, the model's answers when re-queried,
            in its own labels when :attr:`prediction_labels` is known); missing for everyone but the affected.
        """
        labels = np.asarray(PERSON_STATUSES, dtype=object)[self.status.astype(np.int64)]
        frame = pd.DataFrame({"row": self._row_column(np.arange(len(self.rows))),
                              "status": pd.Series(labels, dtype="string")})
        if self.witness_labels is None or (self.witness_rows is None and (domain is None or self.witness is None)):
            return frame
        has = np.flatnonzero(self.witness_labels[:, 0] >= 0)
        pairs = self.witness_frame(domain, population).drop(columns="row")
        pairs.index = has
        for name in pairs.columns:  # the others' rows are missing: integer columns keep integers
            kind = getattr(pairs[name].dtype, "kind", "O")
            if kind in "iub":
                pairs[name] = pairs[name].astype("Int64" if kind != "b" else "boolean")
        out = pd.concat([frame, pairs.reindex(range(len(frame)))], axis=1)
        if self.prediction_labels is None:
            for name in ("prediction", "prediction_counterpart"):
                out[name] = out[name].astype("Int64")
        return out

    def _row_column(self, positions: np.ndarray) -> pd.Series:
        """``row`` of the people at ``positions``: their :attr:`row_labels`, else their dataset row numbers.

        Whole-number labels stay integers; any other label is written as text.
        """
        if self.row_labels is None:
            return pd.Series(self.rows[positions].astype(np.int64))
        labels = np.asarray(self.row_labels, dtype=object)[positions]
        if all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in labels):
            return pd.Series(labels.astype(np.int64))
        return pd.Series([str(v) for v in labels], dtype="string")

    def _answers(self, codes: np.ndarray) -> pd.Series:
        """The model's answers 0 / 1 in its own labels (:attr:`prediction_labels`), or as 0 / 1 without them."""
        codes = np.asarray(codes, dtype=np.int64)
        if self.prediction_labels is None:
            return pd.Series(codes)
        values = pd.Series(list(self.prediction_labels))
        if pd.api.types.is_bool_dtype(values):
            values = values.astype("boolean")
        elif pd.api.types.is_integer_dtype(values):
            values = values.astype("Int64")
        elif pd.api.types.is_float_dtype(values):
            values = values.astype("Float64")
        else:
            values = values.astype("string")
        return values.iloc[codes].reset_index(drop=True)

    def witness_frame(self, domain: Domain | None, population=None) -> pd.DataFrame:
        """The affected people's witness pairs: ``row``, ``x``, ``x'`` (suffix ``_counterpart``), ``f(x)``, ``f(x')``.

        Parameters
        ----------
        domain, population
            As :meth:`to_frame`; ``domain`` may be None when the pairs are :attr:`witness_rows` (a model fed your
            rows: already in your values).

        Returns
        -------
        pandas.DataFrame, shape (n_witnesses, 3 + 2 * n_features)

        Raises
        ------
        ConfigError
            For witnesses in codes and no domain to decode them.
        """
        if self.witness_labels is None:
            return pd.DataFrame({"row": np.zeros(0, np.int64)})
        has = np.flatnonzero(self.witness_labels[:, 0] >= 0)
        if self.witness_rows is not None:  # a model fed your rows: the pairs as they were sent, in your values
            out = self.witness_rows.reset_index(drop=True).copy()
            out.insert(0, "row", self._row_column(has))
            out["prediction"] = self._answers(self.witness_labels[has, 0])
            out["prediction_counterpart"] = self._answers(self.witness_labels[has, 1])
            return out
        if self.witness is None or self.witness_counterpart is None:
            return pd.DataFrame({"row": np.zeros(0, np.int64)})
        if domain is None:
            from ..exceptions import ConfigError

            raise ConfigError("witness_frame: these witnesses are codes; give the domain certified to decode them")
        x, x_cf = self.witness[has], self.witness_counterpart[has]
        if population is not None:
            people = population.take(self.rows[has])
            own = people.counterparts(x).reset_index(drop=True)
            other = people.counterparts(x_cf).reset_index(drop=True)
            other.columns = [f"{c}_counterpart" for c in other.columns]
        else:
            own, other = domain.decode(x), domain.decode(x_cf, suffix="_counterpart")
        out = pd.concat([own, other], axis=1)
        out.insert(0, "row", self._row_column(has))
        out["prediction"] = self._answers(self.witness_labels[has, 0])
        out["prediction_counterpart"] = self._answers(self.witness_labels[has, 1])
        return out

    def to_json(self) -> str:
        """Serialize (arrays as lists).

        Returns
        -------
        str
        """
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["rows"] = self.rows.tolist()
        d["status"] = self.status.tolist()
        for name in WITNESS_FIELDS:
            d[name] = None if d[name] is None else np.asarray(d[name]).tolist()
        d["verdict"] = None if self.verdict is None else json.loads(self.verdict.to_json())
        d["row_labels"] = None if self.row_labels is None else [
            v.item() if isinstance(v, np.generic) else v for v in np.asarray(self.row_labels, dtype=object)]
        d["prediction_labels"] = None if self.prediction_labels is None else list(self.prediction_labels)
        d["witness_rows"] = None if self.witness_rows is None else {
            "frame": json.loads(self.witness_rows.to_json(orient="split", index=False)),
            "dtypes": {str(c): str(t) for c, t in self.witness_rows.dtypes.items()}}
        return json.dumps(d, default=json_default)

    @classmethod
    def from_json(cls, text: str) -> IndividualCertificates:
        """Inverse of :meth:`to_json`.

        Parameters
        ----------
        text : str

        Returns
        -------
        IndividualCertificates
        """
        d = json.loads(text)
        d["rows"] = np.asarray(d["rows"], dtype=np.int64)
        d["status"] = np.asarray(d["status"], dtype=np.int8)
        for name in WITNESS_FIELDS:
            if d.get(name) is not None:
                d[name] = np.asarray(d[name], dtype=np.int64).reshape(len(d["rows"]), -1)
        if d.get("verdict") is not None:
            d["verdict"] = Verdict.from_json(json.dumps(d["verdict"]))
        if d.get("row_labels") is not None:
            d["row_labels"] = np.asarray(d["row_labels"], dtype=object)
        if d.get("prediction_labels") is not None:
            d["prediction_labels"] = tuple(d["prediction_labels"])
        if d.get("witness_rows") is not None:
            part = d["witness_rows"]
            frame = pd.DataFrame(part["frame"]["data"], columns=part["frame"]["columns"])
            d["witness_rows"] = frame.astype(part["dtypes"])
        return cls(**d)


@dataclass(frozen=True)
class CertifyResult:
    """How much of the input domain is provably fair, provably discriminatory, or undecided.

    Attributes
    ----------
    protected : tuple of str
        The protected attributes; every combination of their values was compared with every other.
    n_combinations : int
    domain_volume : float
        Keys in the domain (those with at least one input that satisfies the constraints).
    outside_volume : float
        Keys of the grid outside the domain (every input of theirs breaks a constraint).
    certified_volume : float
        Keys proven fair: no counterpart of any of their inputs gets another label.
    falsified_volume : float
        Keys proven IDIs (boxes every point of which is one, and single keys checked on the model).
    n_idis : int
        Concrete IDIs found (unique keys; the usual counting rule), proven or met at the leaves.
    idis, counterparts : numpy.ndarray of int64, shape (n_idis, n_features)
        The IDIs and the counterpart that gets the other label.
    idi_labels, counterpart_labels : numpy.ndarray of int64, shape (n_idis,)
    rows_name : str
        What the data rows counted in ``row_counts`` are.
    row_counts : dict of str to int
        Rows whose key lies in a certified, falsified or undecided part, or outside the domain.
    seconds : float
        Wall seconds of the branch and bound.
    stopped : str
        ``"complete"`` (nothing left undecided above the depth budget), ``"time"``, ``"boxes"`` or
        ``"interrupted"``.
    stats : dict
        Of the branch and bound (:class:`~chiralfair.certification.branch_and_bound.Tally`).
    individuals : IndividualCertificates or None
        Per-person certificates, when asked for.
    notes : tuple of str
    meta : dict
        ``chiralfair_version``, ``versions``, ``params``, ``random_state``, dataset and model.
    """

    protected: tuple[str, ...]
    n_combinations: int
    domain_volume: float
    outside_volume: float
    certified_volume: float
    falsified_volume: float
    n_idis: int
    idis: np.ndarray
    counterparts: np.ndarray
    idi_labels: np.ndarray
    counterpart_labels: np.ndarray
    rows_name: str
    row_counts: dict[str, int]
    seconds: float
    stopped: str
    stats: dict[str, Any] = field(default_factory=dict)
    individuals: IndividualCertificates | None = None
    notes: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------------ figures
    @property
    def undecided_volume(self) -> float:
        """Keys of the domain neither certified nor falsified."""
        return max(self.domain_volume - self.certified_volume - self.falsified_volume, 0.0)

    @property
    def certified_share(self) -> float:
        """Share of the domain's keys certified fair."""
        return _share(self.certified_volume, self.domain_volume)

    @property
    def falsified_share(self) -> float:
        """Share of the domain's keys proven IDIs."""
        return _share(self.falsified_volume, self.domain_volume)

    @property
    def undecided_share(self) -> float:
        """Share of the domain's keys left undecided."""
        return _share(self.undecided_volume, self.domain_volume)

    @property
    def n_rows(self) -> int:
        """Data rows counted in :attr:`row_counts`."""
        return int(sum(self.row_counts.values()))

    @property
    def n_rows_inside(self) -> int:
        """Data rows in the row shares: those outside the domain (no input of their key could exist) are left out."""
        return self.n_rows - int(self.row_counts.get("outside", 0))

    def summary(self) -> dict[str, Any]:
        """The headline figures under their ``result.json`` names.

        Returns
        -------
        dict
        """
        out = {"protected": list(self.protected), "n_combinations": self.n_combinations,
               "domain_volume": self.domain_volume, "outside_volume": self.outside_volume,
               "certified_share": self.certified_share, "falsified_share": self.falsified_share,
               "undecided_share": self.undecided_share, "certified_volume": self.certified_volume,
               "falsified_volume": self.falsified_volume, "n_idis": self.n_idis, "rows": self.rows_name,
               "row_counts": dict(self.row_counts), "seconds": self.seconds, "stopped": self.stopped,
               "stats": dict(self.stats), "notes": list(self.notes)}
        if self.individuals is not None:
            out["individuals"] = self.individuals.summary()
        return out

    def to_frame(self) -> pd.DataFrame:
        """One row per answer: its volume (keys), its share of the domain, its data rows and their share.

        Returns
        -------
        pandas.DataFrame, shape (3, 5)
            Columns ``answer``, ``volume``, ``share``, ``rows``, ``row_share``; rows follow :data:`ANSWERS`. A row
            share is of the rows inside the domain: the rows outside it are left out (``row_counts["outside"]``).
        """
        volumes = [self.certified_volume, self.falsified_volume, self.undecided_volume]
        rows = [self.row_counts.get(k, 0) for k in ("certified", "falsified", "undecided")]
        return pd.DataFrame({"answer": list(ANSWERS), "volume": volumes,
                             "share": [_share(v, self.domain_volume) for v in volumes],
                             "rows": rows, "row_share": [_share(r, self.n_rows_inside) for r in rows]})

    def idis_frame(self, domain: Domain, *, codec=None) -> pd.DataFrame:
        """The concrete IDIs with decoded values, beside their counterparts (suffix ``_counterpart``).

        Parameters
        ----------
        domain : Domain
            The domain certified.
        codec : FrameCodec, optional
            For a model fed the data's own rows (:func:`~chiralfair.results.run_folder.fed_codec`): each binned
            column holds the value the model was fed, followed by ``<column> (bin)`` with its bin, as in
            ``idis.parquet``.

        Returns
        -------
        pandas.DataFrame, shape (n_idis, 2 * (n_features + n_binned) + 2)
        """
        from ..results.run_folder import decode_side

        frame = pd.concat([decode_side(self.idis, domain, codec),
                           decode_side(self.counterparts, domain, codec, suffix="_counterpart")], axis=1)
        frame["prediction"] = self.idi_labels
        frame["prediction_counterpart"] = self.counterpart_labels
        return frame

    def lines(self) -> list[str]:
        """What ``chiralfair certify`` prints (the people's figures as their :class:`Verdict` decides them).

        Returns
        -------
        list of str
        """
        from ..verdict.result import most_harmed_line, too_small_text

        pa = ", ".join(self.protected)
        out = [f"certified fair: {self.certified_share:.2%} of the domain ({pa}; {self.n_combinations} protected "
               "combinations, every pair compared)",
               f"falsified: {self.falsified_share:.4%} of the domain proven IDIs; {self.n_idis:,} concrete IDIs found",
               f"undecided: {self.undecided_share:.2%} ({self.stopped} after {self.seconds:.1f} s, "
               f"{self.stats.get('n_boxes', 0):,} boxes bounded)"]
        if self.n_rows:
            c, inside = self.row_counts, self.n_rows_inside
            outside = c.get("outside", 0)
            out.append(f"{self.rows_name}: {_share(c.get('certified', 0), inside):.2%} in certified parts, "
                       f"{_share(c.get('falsified', 0), inside):.2%} falsified, "
                       f"{_share(c.get('undecided', 0), inside):.2%} undecided"
                       + (f"; {outside:,} row{'' if outside == 1 else 's'} left out, outside the domain (no input of "
                          "their key could exist)" if outside else ""))
        if self.individuals is not None:
            ind = self.individuals
            out.append(f"individuals ({ind.rows_name}): {ind.certified_share:.2%} certified unaffected, "
                       f"{ind.affected_share:.2%} affected, {ind.undecided_share:.2%} undecided "
                       f"({ind.seconds:.2f} s; {ind.meta.get('boxes', 'each row itself')})")
            if ind.n_individuals:
                out.append(f"  for the people the model will meet: {ind.shares_text()}")
                if ind.verdict is not None and (worst := most_harmed_line(ind.verdict)) is not None:
                    out.append(f"  {worst}")
                if ind.verdict is not None and (small := too_small_text(ind.verdict)):
                    out.append(f"  too small to tell, not ranked: {small}")
                if ind.count("affected") and ind.n_witnesses:
                    out.append(f"  each of the {ind.count('affected'):,} affected has a witness pair (x, x', f(x), "
                               "f(x')) re-queried on the model"
                               + (", in your own values" if ind.witness_rows is not None else "")
                               + f" ({ind.answers_text()}; individuals.parquet in the run folder)")
                elif ind.count("affected"):
                    out.append(f"  the {ind.count('affected'):,} affected were found on your rows (a model fed your "
                               "rows): individuals.parquet holds their status, no witness pair in codes")
            if undecided := ind.undecided_text():
                out.append(f"  {undecided}")
            if left_out := ind.left_out_text():
                out.append(f"left out: {left_out}")
        out += [f"note: {n}" for n in self.notes]
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    # ------------------------------------------------------------------ files
    def to_json(self) -> str:
        """Serialize everything (arrays as lists).

        Returns
        -------
        str
        """
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        for k in PAIR_FIELDS:
            d[k] = np.asarray(d[k]).tolist()
        d["n_features"] = int(self.idis.shape[1]) if self.idis.ndim == 2 else 0
        d["individuals"] = None if self.individuals is None else json.loads(self.individuals.to_json())
        d["protected"] = list(self.protected)
        d["notes"] = list(self.notes)
        return json.dumps(d, default=json_default)

    @classmethod
    def from_json(cls, text: str) -> CertifyResult:
        """Inverse of :meth:`to_json`.

        Parameters
        ----------
        text : str

        Returns
        -------
        CertifyResult
        """
        d = json.loads(text)
        width = d.pop("n_features")
        for k in ("idis", "counterparts"):
            d[k] = np.asarray(d[k], dtype=np.int64).reshape(-1, width)
        for k in ("idi_labels", "counterpart_labels"):
            d[k] = np.asarray(d[k], dtype=np.int64)
        if d.get("individuals") is not None:
            d["individuals"] = IndividualCertificates.from_json(json.dumps(d["individuals"]))
        d["protected"] = tuple(d["protected"])
        d["notes"] = tuple(d["notes"])
        return cls(**d)

    def write(self, out: str | os.PathLike, domain: Domain, population=None, *, codec=None) -> Path:
        """Write the run folder: ``result.json``, ``idis.parquet`` and ``individuals.parquet``.

        ``individuals.parquet`` only with per-person certificates; each file is written whole (atomically).

        Parameters
        ----------
        out : str or path-like
            The folder; refused if it holds files of something else.
        domain : Domain
            The domain certified (the pairs' decoded columns).
        population : Population, optional
            The dataset's rows as the user gave them: the witnesses of ``individuals.parquet`` in the user's units
            (:meth:`IndividualCertificates.to_frame`).
        codec : FrameCodec, optional
            For a model fed the data's own rows: the pairs' binned columns as the value it was fed
            (:class:`~chiralfair.results.run_folder.PairSink`).

        Returns
        -------
        pathlib.Path

        Raises
        ------
        RunFolderError
            See :func:`~chiralfair.results.run_folder.prepare_run_folder`.
        """
        from ..results.run_folder import PAIRS_NAME, PairSink, prepare_run_folder

        prepare_run_folder(out)
        folder = Path(out)
        sink = PairSink(folder / PAIRS_NAME, codec=codec)
        sink.open(domain)
        if len(self.idis):
            sink.write(self.idis, self.counterparts, self.idi_labels, self.counterpart_labels, "leaf")
        sink.close()
        if self.individuals is not None:
            with atomic_path(folder / "individuals.parquet") as tmp:
                self.individuals.to_frame(domain, population).to_parquet(tmp, index=False)
        record = {"kind": "certify", "partial": False, **self.summary(), "meta": self.meta}
        atomic_write_bytes(folder / "result.json", json.dumps(record, indent=2, default=json_default).encode())
        return folder
