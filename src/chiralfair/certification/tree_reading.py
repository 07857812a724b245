"""Reading the model under test as a :class:`~.tree_ensemble.TreeEnsemble` over the domain's codes, checked.

Accepted: scikit-learn ``DecisionTreeClassifier``, ``RandomForestClassifier``, ``ExtraTreesClassifier``,
``GradientBoostingClassifier`` and ``HistGradientBoostingClassifier``, LightGBM (``LGBMClassifier`` or a
``Booster``, read from ``dump_model()``) and XGBoost (``XGBClassifier`` or a ``Booster``, read from
``get_dump(dump_format="json")``), binary, alone or as the last step of a scikit-learn ``Pipeline`` whose earlier
steps transform each column on its own: :data:`ACCEPTED_STEPS` (scalers, ``OneHotEncoder`` with any
``handle_unknown`` and ``drop``, ``OrdinalEncoder``, ``"passthrough"``, a ``FunctionTransformer`` of one of the
increasing numpy functions :data:`MONOTONE_UFUNCS`, ...), and ``ColumnTransformer`` or ``Pipeline`` of those. The
model may take the integer codes or your own columns (a raw-frame pipeline, fed :attr:`Dataset.raw
<chiralfair.datasets.Dataset.raw>`'s columns): the reading goes through the model's own input
(:meth:`ModelLanguage.model_input <chiralfair.models.language.ModelLanguage.model_input>`).

A split is read as the set of codes of one feature that go left: the column the tree reads is computed for every
code of that feature through the model's input and the preprocessing (so a split on a scaled column is an interval
of codes, one on a one-hot column a set), and compared with the threshold in the library's own precision and
direction (scikit-learn trees: float32 inputs, ``x <= t``; histogram gradient boosting and LightGBM: float64,
``x <= t``; XGBoost: float32, ``x < t``). When the codes are your own raw values (the per-person grid of
:mod:`.people_grid`), each split is so a threshold, or a set of categories, over your raw column. A missing value
(NaN) follows the model's own rule at each node: histogram gradient boosting's and scikit-learn trees'
``missing_go_to_left``, LightGBM's default direction (``missing_type`` NaN or Zero; ``None`` reads NaN as 0), and
XGBoost's default child. Native categorical splits are read as the sets of categories going left (histogram gradient
boosting's bitsets, an unknown category or a negative one going where a missing value goes; LightGBM's category
lists). Refused, naming what is at fault: a preprocessing step not accepted, a step that mixes columns, XGBoost's
categorical splits, more than two classes, and any reading whose scores or labels on domain points differ from the
model's own.

Every code of every feature is evaluated once through the model's input and preprocessing, a block of codes at a
time (memory bounded by :data:`READ_CHUNK_VALUES`), and the codes of each feature are grouped into **segments**:
runs of consecutive codes on which every split of every tree decides alike, found from the trees' own thresholds
(compared as the library compares them) and categories, so a column of whole numbers spanning a million codes is
read as the few hundred segments its thresholds cut, exactly. The leaves are read over segments
(:class:`~.tree_ensemble.TreeEnsemble`'s ``starts``), and the reading is checked against the model at the first and
last code of every segment. A domain of more than :data:`MAX_READ_CODES` codes, or a reading larger than
:data:`MAX_READ_BYTES`, is refused before it is allocated, naming the columns to give ``bins`` for; a reading of more
than :data:`ANNOUNCE_CODES` codes says its size in advance (a log warning) and, given a ``deadline``, stops there with
a :class:`~chiralfair.exceptions.TimeLimitError` saying how far it got (a smaller one is not interrupted).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..exceptions import ConfigError, ModelCapabilityError, TimeLimitError
from .tree_ensemble import BLOCK, TreeEnsemble

logger = logging.getLogger(__name__)

# Domain points the reading is checked on (plus each feature's every code, one feature at a time).
N_CHECK_POINTS = 512
# Points checked in one block (the deadline is read between blocks).
CHECK_BLOCK = 2048
# Largest |score read - model's raw score| accepted, relative to 1 + |score|.
SCORE_TOLERANCE = 1e-6
# Values (codes x the preprocessing's output columns) computed in one call while reading: bounds its memory.
READ_CHUNK_VALUES = 1 << 22
# Most codes (summed over the features) the reading evaluates; a domain with more is refused, naming ``bins``.
MAX_READ_CODES = 1 << 25
# Most bytes the reading keeps at once (the columns' values per code, the leaves x segments table); beyond it the
# reading is refused before allocating, naming ``bins``.
MAX_READ_BYTES = 1 << 30
# Codes above which the reading says in advance (a log warning) how many codes it evaluates, and stops at its
# deadline; a smaller reading (well under a second) is not interrupted.
ANNOUNCE_CODES = 1 << 18

# Preprocessing steps read: each transforms every column on its own.
ACCEPTED_STEPS = ("StandardScaler", "MinMaxScaler", "MaxAbsScaler", "RobustScaler", "OneHotEncoder", "OrdinalEncoder",
                  "KBinsDiscretizer", "QuantileTransformer", "PowerTransformer", "SimpleImputer")
# numpy functions a FunctionTransformer may apply: element-wise and increasing where defined.
MONOTONE_UFUNCS = ("log", "log1p", "log2", "log10", "sqrt", "cbrt", "exp", "exp2", "expm1", "arctan", "arcsinh",
                   "tanh", "sinh")
_SKLEARN_FORESTS = ("RandomForestClassifier", "ExtraTreesClassifier")


@dataclass
class _Tree:
    """One tree over the estimator's input columns: for each node, its split or its leaf value."""

    feature: np.ndarray  # input column read (-1 at leaves)
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray  # leaf values (ignored at split nodes)
    missing_left: np.ndarray | None = None  # where a NaN goes at each split node (None: no NaN rule, read as number)
    rules: dict[int, Callable[[np.ndarray], np.ndarray]] = field(default_factory=dict)  # node -> goes left, exactly

    def goes_left(self, node: int, values: np.ndarray, precision: str) -> np.ndarray:
        """Whether each value of the column the node reads goes to its left child, as the library decides."""
        rule = self.rules.get(node)
        if rule is not None:
            return rule(values)
        left = _goes_left(values, float(self.threshold[node]), precision)
        missing = np.isnan(values)
        if missing.any():
            if self.missing_left is None:  # the library has no rule of its own: refused before reading
                return left
            left = np.where(missing, bool(self.missing_left[node]), left)
        return left


@dataclass
class _Columns:
    """The estimator's input columns as functions of one domain feature each: ``table[j][c - lower[source[j]]]``."""

    source: np.ndarray
    table: list
    varies: np.ndarray  # whether each column changes with its source feature (others: constant, read on feature 0)


def is_tree_ensemble(model) -> bool:
    """Whether the wrapped model's estimator is a tree ensemble :func:`read_tree_ensemble` reads (or tries to).

    Parameters
    ----------
    model : CountingModel

    Returns
    -------
    bool
    """
    estimator = getattr(model, "estimator", None)
    final = _final_step(estimator)
    return _kind(final) is not None


def _final_step(estimator):
    steps = getattr(estimator, "steps", None)
    if steps is not None and type(estimator).__name__ == "Pipeline" and steps:
        return steps[-1][1]
    return estimator


def _kind(estimator) -> str | None:
    if estimator is None:
        return None
    name = type(estimator).__name__
    module = type(estimator).__module__
    if module.startswith("sklearn.") and name in ("DecisionTreeClassifier", "ExtraTreeClassifier", *_SKLEARN_FORESTS,
                                                   "GradientBoostingClassifier", "HistGradientBoostingClassifier"):
        return name
    if module.startswith("lightgbm") and name in ("LGBMClassifier", "Booster"):
        return "lightgbm"
    if module.startswith("xgboost") and name in ("XGBClassifier", "Booster"):
        return "xgboost"
    return None


def read_tree_ensemble(model, domain, *, rng: np.random.Generator | None = None,
                       deadline: float | None = None, always_stop: bool = False) -> TreeEnsemble:
    """Read the model under test as a :class:`TreeEnsemble` over the domain's codes, checked against the model.

    Parameters
    ----------
    model : CountingModel
        The wrapped model under test; its ``estimator`` is read.
    domain : Domain
    rng : numpy.random.Generator, optional
        Draws the check points (default: seed 0).
    deadline : float, optional
        A :func:`time.perf_counter` time a reading of more than :data:`ANNOUNCE_CODES` codes must finish by
        (checked between blocks of codes).
    always_stop : bool, default=False
        Stop at ``deadline`` whatever the reading's size (a budget shared with a search that needs the reading).

    Returns
    -------
    TreeEnsemble

    Raises
    ------
    ModelCapabilityError
        Naming the model and what is at fault (see the module docstring).
    ConfigError
        For a domain of more than :data:`MAX_READ_CODES` codes or a reading of more than :data:`MAX_READ_BYTES`,
        naming the columns to give ``bins`` for (``--bins``).
    TimeLimitError
        When ``deadline`` passes during the reading (naming ``max_seconds`` / ``--max-seconds`` and ``bins``).
    """
    from ..models.protocol import CountingModel

    if not isinstance(model, CountingModel):
        raise ModelCapabilityError(f"certification needs a wrapped model under test (chiralfair.models.as_model), "
                                   f"got {type(model).__name__}")
    estimator = model.estimator
    final = _final_step(estimator)
    kind = _kind(final)
    if kind is None:
        raise ModelCapabilityError(f"model {model.name!r} ({type(final).__name__}) is not a tree ensemble "
                                   "certification reads")
    pre = estimator[:-1] if final is not estimator else None
    if pre is not None:
        for label, step in pre.steps:
            _check_columnwise(step, model.name, label)
    feed = _Feed(model, pre, final, domain)
    clock = _Clock(model.name, domain, deadline, always_stop=always_stop)
    columns = _columns(feed, domain, clock)
    classes = getattr(final, "classes_", None)
    if classes is not None and len(classes) != 2:
        raise ModelCapabilityError(f"model {model.name!r} has {len(classes)} classes; certification reads binary "
                                   "classifiers")
    trees, threshold, precision, description = _read(final, kind, model.name)
    n_inputs = len(columns.source)
    used = max((int(t.feature.max()) for t in trees if len(t.feature)), default=-1)
    if used >= n_inputs:
        raise ModelCapabilityError(f"model {model.name!r} reads input column {used}; its input has {n_inputs} "
                                   "columns")
    starts = _segment_starts(trees, columns, domain, precision)
    columns = _on_segments(columns, starts, domain)
    n_leaf_nodes = sum(int(((t.feature < 0) | (t.left < 0)).sum()) for t in trees)
    clock.refuse_bytes(*_reading_bytes(trees, columns, starts, domain, n_leaf_nodes))
    reach, value, start = _leaves(trees, columns, starts, precision)
    lower = domain.lower.astype(np.int64)
    upper = domain.upper.astype(np.int64)
    ensemble = TreeEnsemble(lower, upper, reach, value, start, 0.0, threshold, name=model.name,
                            kind=f"{description}, {len(trees)} trees, {len(value)} leaves", starts=tuple(starts))
    return _checked(ensemble, model, final, kind, feed, domain, rng if rng is not None else np.random.default_rng(0),
                    clock)


class _Clock:
    """The reading's budget: its size said in advance, refused beyond the limits, stopped at the deadline."""

    def __init__(self, name: str, domain, deadline: float | None, *, always_stop: bool = False):
        self.name, self.domain, self.deadline = name, domain, deadline
        self.started = time.perf_counter()
        self.sizes = (domain.upper.astype(np.int64) - domain.lower.astype(np.int64) + 1)
        self.total = int(self.sizes.sum())
        self.done = 0
        self.stops = deadline is not None and (always_stop or self.total > ANNOUNCE_CODES)
        if self.total > MAX_READ_CODES:
            raise ConfigError(f"model {name!r}: reading its trees evaluates every code of every column through its "
                              f"input and preprocessing, {self.total:,} codes here ({self.largest()}), more than "
                              f"{MAX_READ_CODES:,}; {self.advice()}")
        if self.total > ANNOUNCE_CODES:
            logger.warning("reading the trees of model %r: %s codes through its input and preprocessing (%s); "
                           "the reading stops at max_seconds; %s", name, f"{self.total:,}", self.largest(),
                           self.advice())

    def largest(self) -> str:
        order = np.argsort(-self.sizes, kind="stable")[:3]
        return ", ".join(f"{self.domain.names[f]} {int(self.sizes[f]):,}" for f in order)

    def advice(self) -> str:
        wide = [self.domain.names[f] for f in np.argsort(-self.sizes, kind="stable")[:3] if self.sizes[f] > 1024]
        shown = ",".join(f"{n}=20" for n in wide) or "COLUMN=20"
        return (f"give bins for the widest columns (bins={{{', '.join(repr(n) + ': 20' for n in wide)}}} in Python, "
                f"--bins {shown} on the command line): a column of whole numbers is otherwise one code per number")

    def tick(self, codes: int, what: str) -> None:
        """Count ``codes`` read, and stop once the deadline has passed."""
        self.done += codes
        if not self.stops:
            return
        now = time.perf_counter()
        if now > self.deadline:  # type: ignore[operator]
            spent = now - self.started
            rate = self.done / max(spent, 1e-9)
            raise TimeLimitError(
                f"model {self.name!r}: reading its trees did not finish within max_seconds (--max-seconds): "
                f"{what}, {min(self.done, self.total):,} of the domain's {self.total:,} codes read in {spent:.1f} s "
                f"(about {self.total / max(rate, 1e-9):.0f} s for all at this rate; {self.largest()}); give a larger "
                f"max_seconds (--max-seconds), or {self.advice()}")

    def refuse_bytes(self, n_bytes: int, what: str) -> None:
        """Refuse an allocation larger than :data:`MAX_READ_BYTES`, before it is made."""
        if n_bytes > MAX_READ_BYTES:
            raise ConfigError(f"model {self.name!r}: reading its trees needs {what}, {n_bytes / 2**20:,.0f} MiB (at "
                              f"most {MAX_READ_BYTES / 2**20:,.0f} MiB); {self.advice()}")


# ---------------------------------------------------------------------------------------------- preprocessing
def _check_columnwise(step, model_name: str, where: str) -> None:
    if step is None or (isinstance(step, str) and step in ("passthrough", "drop")):
        return
    name = type(step).__name__
    if name == "Pipeline":
        for label, sub in step.steps:
            _check_columnwise(sub, model_name, f"{where} > {label}")
        return
    if name == "ColumnTransformer":
        for label, sub, _ in step.transformers_:
            _check_columnwise(sub, model_name, f"{where} > {label}")
        return
    if name == "FunctionTransformer":
        func = getattr(step, "func", None)
        if func is None:
            return
        if isinstance(func, np.ufunc) and func.__name__ in MONOTONE_UFUNCS and not getattr(step, "kw_args", None):
            return
        raise ModelCapabilityError(
            f"model {model_name!r}: preprocessing step {where!r} is a FunctionTransformer of "
            f"{getattr(func, '__name__', repr(func))!r}, which certification cannot prove transforms each column on "
            f"its own; it reads FunctionTransformer of the numpy functions {', '.join(MONOTONE_UFUNCS)} (without "
            "kw_args), or none")
    if name not in ACCEPTED_STEPS:
        raise ModelCapabilityError(
            f"model {model_name!r}: preprocessing step {where!r} ({name}) may mix columns: it is not a step "
            f"certification reads, so its trees' splits cannot be read back on your columns; it reads steps that "
            f"transform each column on its own: {', '.join(ACCEPTED_STEPS)}, 'passthrough', FunctionTransformer of "
            f"{', '.join(MONOTONE_UFUNCS)}, and ColumnTransformer and Pipeline of those")


class _Feed:
    """Codes to the columns the trees read: the model's own input, then the preprocessing in front of the trees."""

    def __init__(self, model, pre, final, domain):
        self.model, self.pre, self.final, self.domain = model, pre, final, domain
        # histogram gradient boosting fed a frame of categoricals encodes them itself, column by column
        self.inner = getattr(final, "_preprocessor", None)

    def estimator_input(self, X: np.ndarray):
        """What the trees' estimator is given for codes ``X`` (after the pipeline's earlier steps)."""
        inputs = self.model.language.model_input(np.asarray(X, dtype=np.int64))
        if self.pre is None:
            return inputs
        try:
            return self.pre.transform(inputs)
        except Exception as err:  # a value the preprocessing refuses (e.g. OneHotEncoder(handle_unknown="error"))
            raise ModelCapabilityError(
                f"model {self.model.name!r}: its preprocessing fails on some value of the domain ({err}); "
                "certification reads every value of every column through it (an encoder must accept each value, "
                "e.g. OneHotEncoder(handle_unknown='ignore'))") from err

    def columns(self, X: np.ndarray) -> np.ndarray:
        """The columns the trees read for codes ``X``, as float64, shape (n, n_inputs)."""
        Z = self.estimator_input(X)
        if self.inner is not None:
            Z = self.inner.transform(Z)
        if hasattr(Z, "toarray"):
            Z = Z.toarray()
        if hasattr(Z, "dtypes") and hasattr(Z, "columns"):  # a frame: LightGBM reads a pandas categorical's codes
            Z = np.column_stack([_category_codes(Z[c]) for c in Z.columns]) if len(Z.columns) else np.zeros((len(Z), 0))
        try:
            return np.asarray(Z, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise ModelCapabilityError(
                f"model {self.model.name!r} is given non-numeric columns ({err}); certification reads trees over "
                "numbers: encode them in a Pipeline (OneHotEncoder, OrdinalEncoder) or as pandas categoricals of a "
                "HistGradientBoostingClassifier") from err


def _category_codes(column) -> np.ndarray:
    """A frame's column as the numbers a tree library reads: a pandas categorical's codes (missing: NaN)."""
    import pandas as pd

    if isinstance(column.dtype, pd.CategoricalDtype):
        codes = column.cat.codes.to_numpy().astype(np.float64)
        return np.where(codes < 0, np.nan, codes)
    return np.asarray(column, dtype=np.float64)


def _columns(feed: _Feed, domain, clock: _Clock) -> _Columns:
    """Each column the trees read as a function of the one feature it depends on: every code, a block at a time."""
    lower, upper = domain.lower.astype(np.int64), domain.upper.astype(np.int64)
    d = domain.n_features
    base = lower.copy()
    constant = feed.columns(base[None])[0]  # every column at the domain's first point
    width = len(constant)
    step = max(1, READ_CHUNK_VALUES // max(1, width))
    tables: dict[int, np.ndarray] = {}
    source: dict[int, int] = {}
    kept = 0  # values held in tables
    for f in range(d):
        n = int(upper[f] - lower[f] + 1)
        pieces: dict[int, list[tuple[int, np.ndarray]]] = {}
        for start in range(0, n, step):
            codes = np.arange(lower[f] + start, lower[f] + min(n, start + step), dtype=np.int64)
            rows = np.tile(base, (len(codes), 1))
            rows[:, f] = codes
            Z = feed.columns(rows)
            for j in map(int, np.flatnonzero(_differs(Z, constant).any(axis=0))):
                if j not in pieces:
                    kept += n
                    clock.refuse_bytes(8 * kept, f"{domain.names[f]!r}'s {n:,} codes' values on the columns its "
                                       "preprocessing outputs")
                pieces.setdefault(j, []).append((start, Z[:, j].copy()))
            clock.tick(len(codes), f"at column {domain.names[f]!r}")
        for j, parts in pieces.items():
            if j in source:
                raise ModelCapabilityError(
                    f"model {feed.model.name!r}: the preprocessing's output column {int(j)} depends on both "
                    f"{domain.names[source[j]]!r} and {domain.names[f]!r}; certification reads steps that "
                    "transform each column on its own")
            source[j] = f
            table = np.full(n, constant[j])
            for start, values in parts:
                table[start:start + len(values)] = values
            tables[j] = table
    out_source = np.zeros(width, dtype=np.int64)
    out_table: list[np.ndarray] = []
    varies = np.zeros(width, dtype=bool)
    for j in range(width):
        if j in source:
            out_source[j] = source[j]
            out_table.append(tables[j])
            varies[j] = True
        else:  # constant over the domain: read as a function of feature 0 that never changes
            out_table.append(np.full(upper[0] - lower[0] + 1, constant[j]))
    return _Columns(out_source, out_table, varies)


def _differs(Z: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Whether each row differs from ``first``, per column, a NaN equal to a NaN."""
    first = first[None]
    return ~((Z == first) | (np.isnan(Z) & np.isnan(first)))


# LightGBM reads |x| <= this as zero (its kZeroThreshold): a value's side of it may decide a split.
_ZERO = 1e-35


def _segment_starts(trees: list[_Tree], columns: _Columns, domain, precision: str) -> list[np.ndarray]:
    """For each feature, the first code of each run of codes on which every split of every tree decides alike.

    A numeric split sends a value left by comparing it with its threshold in the library's precision, so two values
    between the same two thresholds of a column (and both missing or both not) go the same way at every split on
    it; a categorical or other exact rule is evaluated on every code. Whether a value is 0 for LightGBM is a break
    too. Breaks are where any of these changes between consecutive codes: a superset of where a split does.
    """
    thresholds: dict[int, list[np.ndarray]] = {}
    rules: dict[int, list[Callable[[np.ndarray], np.ndarray]]] = {}
    for tree in trees:
        split = np.flatnonzero((tree.feature >= 0) & (tree.left >= 0))
        plain = np.array([int(i) not in tree.rules for i in split], dtype=bool) if tree.rules else np.ones(
            len(split), bool)
        for j in np.unique(tree.feature[split[plain]]):
            thresholds.setdefault(int(j), []).append(tree.threshold[split[plain][tree.feature[split[plain]] == j]])
        for node in split[~plain]:
            rule = tree.rules[int(node)]
            j = int(tree.feature[node])
            if getattr(rule, "threshold", None) is not None:  # LightGBM's numeric rule: x <= t in float64
                thresholds.setdefault(j, []).append(np.array([float(rule.threshold)]))  # type: ignore[attr-defined]
            else:
                rules.setdefault(j, []).append(rule)
    lower, upper = domain.lower.astype(np.int64), domain.upper.astype(np.int64)
    changes = [np.zeros(int(upper[f] - lower[f]), dtype=bool) for f in range(domain.n_features)]
    for j in set(thresholds) | set(rules):
        if not columns.varies[j]:
            continue
        values = columns.table[j]
        out = changes[int(columns.source[j])]
        for status in (np.isnan(values), np.abs(values) <= _ZERO):
            out |= status[1:] != status[:-1]
        if j in thresholds:
            out |= _changes(_threshold_rank(values, np.concatenate(thresholds[j]), precision))
        for rule in rules.get(j, []):
            out |= _changes(rule(values))
    return [lower[f] + np.concatenate([[0], 1 + np.flatnonzero(changes[f])]).astype(np.int64)
            for f in range(domain.n_features)]


def _changes(x: np.ndarray) -> np.ndarray:
    return x[1:] != x[:-1]


def _threshold_rank(values: np.ndarray, thresholds: np.ndarray, precision: str) -> np.ndarray:
    """How many of the thresholds each value passes, as the library compares (NaN: -1); equal ranks decide alike."""
    with np.errstate(invalid="ignore"):
        if precision == "sklearn":  # float32 value <= float64 threshold goes left
            rank = np.searchsorted(np.unique(thresholds), values.astype(np.float32).astype(np.float64), side="left")
        elif precision == "xgboost":  # float32 value < float32 threshold goes left
            rank = np.searchsorted(np.unique(thresholds.astype(np.float32)), values.astype(np.float32), side="right")
        else:  # float64 value <= threshold goes left
            rank = np.searchsorted(np.unique(thresholds), values, side="left")
    return np.where(np.isnan(values), -1, rank)


def _reading_bytes(trees: list[_Tree], columns: _Columns, starts: list[np.ndarray], domain,
                   n_leaves: int) -> tuple[int, str]:
    """The bytes the leaves' tables will hold at once, estimated before any is allocated, and what they are.

    The leaves x segments table of bools, a feature's block of it compared code by code while the hulls are read, and
    for each feature whose leaves may hold codes that are not an interval (a set of categories goes left, or a column
    the trees read is not monotone in the feature's codes, as a one-hot column is) the leaves' cumulative counts over
    its segments, 4 bytes each.
    """
    segments = np.array([len(s) for s in starts], dtype=np.int64)
    maybe_sets = np.zeros(domain.n_features, dtype=bool)
    for tree in trees:
        for node in tree.rules:
            j = int(tree.feature[node])
            if columns.varies[j] and getattr(tree.rules[node], "threshold", None) is None:
                maybe_sets[int(columns.source[j])] = True
    for column in map(int, np.flatnonzero(columns.varies)):
        step = np.diff(np.asarray(columns.table[column], dtype=np.float64))
        step = step[~np.isnan(step)]
        if (step > 0).any() and (step < 0).any():  # up and down: a leaf's codes there may not be an interval
            maybe_sets[int(columns.source[column])] = True
    total = int(segments.sum())
    n_bytes = n_leaves * total + 2 * n_leaves * int(segments.max(initial=0)) + 4 * n_leaves * int(
        (segments[maybe_sets] + 1).sum())
    what = f"the tables of {n_leaves:,} leaves x {total:,} segments of codes"
    if maybe_sets.any():
        names = ", ".join(repr(domain.names[f]) for f in np.flatnonzero(maybe_sets)[:3])
        what += f" (with the cumulative counts over the segments of {names}{', ...' if maybe_sets.sum() > 3 else ''})"
    return n_bytes, what


def _on_segments(columns: _Columns, starts: list[np.ndarray], domain) -> _Columns:
    """The columns' values at the first code of each segment (the same at every code of it)."""
    lower = domain.lower.astype(np.int64)
    table = [t[starts[int(f)] - lower[int(f)]] for t, f in zip(columns.table, columns.source, strict=True)]
    return _Columns(columns.source, table, columns.varies)


# ---------------------------------------------------------------------------------------------- trees
def _read(final, kind: str, name: str) -> tuple[list[_Tree], float, str, str]:
    """The trees, the threshold of the class at index 1, the comparison's precision and a description."""
    if kind in ("DecisionTreeClassifier", "ExtraTreeClassifier"):
        return [_sklearn_tree(final.tree_, 1.0, proba=True)], 0.5, "sklearn", kind
    if kind in _SKLEARN_FORESTS:
        n = len(final.estimators_)
        return [_sklearn_tree(t.tree_, 1.0 / n, proba=True) for t in final.estimators_], 0.5, "sklearn", kind
    if kind == "GradientBoostingClassifier":
        if final.estimators_.shape[1] != 1:
            raise ModelCapabilityError(f"model {name!r} has {final.estimators_.shape[1]} score columns; certification "
                                       "reads binary classifiers")
        rate = float(final.learning_rate)
        return [_sklearn_tree(t.tree_, rate, proba=False) for t in final.estimators_[:, 0]], 0.0, "sklearn", kind
    if kind == "HistGradientBoostingClassifier":
        predictors = final._predictors
        if predictors and len(predictors[0]) != 1:
            raise ModelCapabilityError(f"model {name!r} has {len(predictors[0])} score columns; certification reads "
                                       "binary classifiers")
        return [_hgb_tree(p[0], final, name) for p in predictors], 0.0, "float64", kind
    if kind == "lightgbm":
        booster = final.booster_ if hasattr(final, "booster_") else final
        dump = booster.dump_model()
        if dump.get("num_tree_per_iteration", 1) != 1:
            raise ModelCapabilityError(f"model {name!r} has {dump['num_tree_per_iteration']} trees per iteration; "
                                       "certification reads binary classifiers")
        return ([_lightgbm_tree(t["tree_structure"], name, dump.get("feature_names")) for t in dump["tree_info"]],
                0.0, "float64", f"LightGBM {type(final).__name__}")
    booster = final.get_booster() if hasattr(final, "get_booster") else final
    names = booster.feature_names
    trees = [_xgboost_tree(json.loads(t), names, name) for t in booster.get_dump(dump_format="json")]
    return trees, 0.0, "xgboost", f"XGBoost {type(final).__name__}"


def _sklearn_tree(tree, scale: float, *, proba: bool) -> _Tree:
    value = tree.value[:, 0, :]
    if proba:
        total = value.sum(axis=1)
        leaf = np.where(total > 0, value[:, -1] / np.where(total > 0, total, 1.0), 0.0)
    else:
        leaf = value[:, 0]
    feature = np.where(tree.children_left < 0, -1, tree.feature).astype(np.int64)
    missing = getattr(tree, "missing_go_to_left", None)  # scikit-learn >= 1.3: where a NaN goes at each node
    return _Tree(feature, tree.threshold.astype(np.float64), tree.children_left.astype(np.int64),
                 tree.children_right.astype(np.int64), leaf * scale,
                 None if missing is None else np.asarray(missing).astype(bool))


def _hgb_tree(predictor, final, name: str) -> _Tree:
    nodes = predictor.nodes
    leaf = nodes["is_leaf"].astype(bool)
    feature = np.where(leaf, -1, nodes["feature_idx"]).astype(np.int64)
    left = np.where(leaf, -1, nodes["left"]).astype(np.int64)
    right = np.where(leaf, -1, nodes["right"]).astype(np.int64)
    missing_left = nodes["missing_go_to_left"].astype(bool)
    rules: dict[int, Callable[[np.ndarray], np.ndarray]] = {}
    categorical = np.flatnonzero(~leaf & nodes["is_categorical"].astype(bool))
    if len(categorical):
        known, f_idx_map = final._bin_mapper.make_known_categories_bitsets()
        for node in map(int, categorical):
            rules[node] = _hgb_categorical_rule(predictor.raw_left_cat_bitsets[nodes["bitset_idx"][node]],
                                                known[f_idx_map[nodes["feature_idx"][node]]],
                                                bool(missing_left[node]))
    return _Tree(feature, nodes["num_threshold"].astype(np.float64), left, right, nodes["value"].astype(np.float64),
                 missing_left, rules)


def _in_bitset(bitset: np.ndarray, category: np.ndarray) -> np.ndarray:
    """Whether each category (0..255) is in a bitset of 8 uint32 words, as scikit-learn's ``in_bitset``."""
    words = np.asarray(bitset, dtype=np.uint32)
    return ((words[category // 32] >> (category % 32).astype(np.uint32)) & 1).astype(bool)


def _hgb_categorical_rule(left_bits: np.ndarray, known_bits: np.ndarray, missing_left: bool):
    """Histogram gradient boosting's categorical split, as its predictor decides.

    A category in the left bitset goes left; a known one not in it goes right; NaN, a negative value and an unknown
    category go where a missing value goes.
    """

    def rule(values: np.ndarray) -> np.ndarray:
        out = np.full(len(values), missing_left)
        ok = ~np.isnan(values) & (values >= 0)
        category = np.trunc(values[ok]).astype(np.int64) % 256  # the library casts to uint8
        inside = _in_bitset(left_bits, category)
        known = _in_bitset(known_bits, category)
        out[ok] = np.where(inside, True, np.where(known, False, missing_left))
        return out

    return rule


def _flatten(root: dict, child: tuple[str, str], visit) -> _Tree:
    """Number the nodes of a nested tree depth first; ``visit(node) -> (feature, threshold, value)``."""
    feature: list[int] = []
    threshold: list[float] = []
    left: list[int] = []
    right: list[int] = []
    value: list[float] = []
    stack = [(root, -1, 0)]
    while stack:
        node, parent, side = stack.pop()
        i = len(feature)
        if parent >= 0:
            (left if side == 0 else right)[parent] = i
        f, t, v = visit(node)
        feature.append(f)
        threshold.append(t)
        value.append(v)
        left.append(-1)
        right.append(-1)
        if f >= 0:
            stack.append((node[child[1]], i, 1))
            stack.append((node[child[0]], i, 0))
    return _Tree(np.asarray(feature, np.int64), np.asarray(threshold, np.float64), np.asarray(left, np.int64),
                 np.asarray(right, np.int64), np.asarray(value, np.float64))


def _lightgbm_tree(root: dict, name: str, feature_names) -> _Tree:
    rules: list[Callable[[np.ndarray], np.ndarray] | None] = []

    def visit(node):
        if "leaf_value" in node or "split_feature" not in node:
            rules.append(None)
            return -1, 0.0, float(node.get("leaf_value", 0.0))
        column = int(node["split_feature"])
        label = feature_names[column] if feature_names else f"column {column}"
        decision = node.get("decision_type", "<=")
        if decision == "==":
            rules.append(_lightgbm_categorical_rule(str(node["threshold"])))
            return column, 0.0, 0.0
        if decision != "<=":
            raise ModelCapabilityError(f"model {name!r} splits {label} with {decision!r}; certification reads "
                                       "LightGBM's '<=' and '==' splits")
        rules.append(_lightgbm_numeric_rule(float(node["threshold"]), str(node.get("missing_type", "None")),
                                            bool(node.get("default_left", True))))
        return column, float(node["threshold"]), 0.0

    tree = _flatten(root, ("left_child", "right_child"), visit)
    tree.rules = {i: rule for i, rule in enumerate(rules) if rule is not None}
    return tree


def _lightgbm_numeric_rule(threshold: float, missing_type: str, default_left: bool):
    """LightGBM's numerical decision, as its predictor decides.

    NaN is read as 0 unless ``missing_type`` is NaN; a missing value (NaN, or 0 under Zero) takes the default
    direction; otherwise ``x <= threshold`` goes left (float64).
    """

    def rule(values: np.ndarray) -> np.ndarray:
        nan = np.isnan(values)
        x = np.where(nan & (missing_type != "NaN"), 0.0, values)
        if missing_type == "NaN":
            missing = nan
        elif missing_type == "Zero":
            missing = np.abs(x) <= 1e-35  # LightGBM's kZeroThreshold
        else:
            missing = np.zeros(len(x), dtype=bool)
        with np.errstate(invalid="ignore"):
            return np.where(missing, default_left, x <= threshold)

    rule.threshold = threshold  # type: ignore[attr-defined]  # its breaks: the threshold, NaN and zero
    return rule


def _lightgbm_categorical_rule(threshold: str):
    """LightGBM's categorical decision: the integer categories listed in the threshold go left.

    NaN and negative values go right.
    """
    left = np.asarray([int(c) for c in threshold.split("||") if c != ""], dtype=np.int64)

    def rule(values: np.ndarray) -> np.ndarray:
        ok = ~np.isnan(values)
        out = np.zeros(len(values), dtype=bool)
        category = np.trunc(values[ok]).astype(np.int64)
        out[ok] = (category >= 0) & np.isin(category, left)
        return out

    return rule


def _xgboost_tree(root: dict, names, name: str = "model") -> _Tree:
    index = {n: i for i, n in enumerate(names)} if names else {}
    missing: list[bool] = []

    def visit(node):
        if "leaf" in node:
            missing.append(False)
            return -1, 0.0, float(node["leaf"])
        split = node["split"]
        if not isinstance(node.get("split_condition"), (int, float)) or "categories" in node:
            raise ModelCapabilityError(f"model {name!r} splits {split!r} as a categorical feature; certification "
                                       "reads XGBoost's numeric splits (encode the column in a Pipeline)")
        column = index[split] if split in index else int(str(split).lstrip("f"))
        missing.append(node.get("missing", node["yes"]) == node["yes"])  # NaN goes to the "missing" child
        return column, float(node["split_condition"]), 0.0

    tree = _flatten(root, ("_yes", "_no"), _xgboost_visit_wrapper(visit))
    tree.missing_left = np.asarray(missing, dtype=bool)
    return tree


def _xgboost_visit_wrapper(visit):
    """XGBoost's json nests children in a list; expose them as ``_yes`` / ``_no`` by node id."""

    def wrapped(node):
        f, t, v = visit(node)
        if f >= 0:
            by_id = {c["nodeid"]: c for c in node["children"]}
            node["_yes"], node["_no"] = by_id[node["yes"]], by_id[node["no"]]
        return f, t, v

    return wrapped


def _goes_left(values: np.ndarray, threshold: float, precision: str) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        if precision == "sklearn":  # X cast to float32, compared with a float64 threshold
            return values.astype(np.float32).astype(np.float64) <= threshold
        if precision == "xgboost":  # float32 on both sides, strictly less goes to "yes"
            return values.astype(np.float32) < np.float32(threshold)
        return values <= threshold


def _leaves(trees: list[_Tree], columns: _Columns, starts: list[np.ndarray], precision: str):
    """Every leaf as the segments of each feature that can reach it, and its value."""
    size = np.array([len(s) for s in starts], dtype=np.int64)
    offset = np.concatenate([[0], np.cumsum(size)]).astype(np.int64)
    n_codes = int(offset[-1])
    masks: list[np.ndarray] = []
    values: list[float] = []
    start: list[int] = []
    for tree in trees:
        start.append(len(values))
        stack = [(0, np.ones(n_codes, dtype=bool))]
        while stack:
            node, mask = stack.pop()
            j = int(tree.feature[node])
            if j < 0 or tree.left[node] < 0:
                masks.append(mask)
                values.append(float(tree.value[node]))
                continue
            f = int(columns.source[j])
            left = tree.goes_left(node, columns.table[j], precision)
            span = slice(offset[f], offset[f + 1])
            for child, keep in ((int(tree.right[node]), ~left), (int(tree.left[node]), left)):
                sub = mask.copy()
                sub[span] &= keep
                if sub[span].any():  # a branch no code reaches is left out
                    stack.append((child, sub))
    return np.asarray(masks, dtype=bool), np.asarray(values, dtype=np.float64), np.asarray(start, dtype=np.int64)


# ---------------------------------------------------------------------------------------------- check
def _raw_score(final, kind: str, Z: np.ndarray) -> np.ndarray:
    if kind in ("DecisionTreeClassifier", "ExtraTreeClassifier", *_SKLEARN_FORESTS):
        return final.predict_proba(Z)[:, 1]
    if kind in ("GradientBoostingClassifier", "HistGradientBoostingClassifier"):
        return np.asarray(final.decision_function(Z), dtype=np.float64).reshape(-1)
    if kind == "lightgbm":
        return np.asarray(final.predict(Z, raw_score=True), dtype=np.float64).reshape(-1)
    if hasattr(final, "get_booster"):
        return np.asarray(final.predict(Z, output_margin=True), dtype=np.float64).reshape(-1)
    import xgboost

    return np.asarray(final.predict(xgboost.DMatrix(Z), output_margin=True), dtype=np.float64).reshape(-1)


def check_points(domain, rng: np.random.Generator, ensemble: TreeEnsemble | None = None) -> np.ndarray:
    """Domain points a reading is checked on: random ones, and each feature's codes in turn.

    Parameters
    ----------
    domain : Domain
    rng : numpy.random.Generator
    ensemble : TreeEnsemble, optional
        Read over segments: each feature's first and last code of every segment (where a split may change its
        mind), not its every code.

    Returns
    -------
    numpy.ndarray of int64, shape (n, n_features)
    """
    parts = [domain.sample(N_CHECK_POINTS, rng)]
    base = domain.sample(1, rng)[0]
    for f in range(domain.n_features):
        if ensemble is None:
            codes = np.arange(domain.lower[f], domain.upper[f] + 1)
        else:
            codes = np.unique(np.concatenate(ensemble.segment_bounds(f)))
        rows = np.tile(base, (len(codes), 1))
        rows[:, f] = codes
        parts.append(rows)
    return np.concatenate(parts).astype(np.int64)


def _checked(ensemble: TreeEnsemble, model, final, kind: str, feed: _Feed, domain, rng,
             clock: _Clock | None = None) -> TreeEnsemble:
    """Set the ensemble's base score from the model's, and refuse it unless it gives the model's labels.

    The points are checked a block at a time (memory bounded by :data:`~.tree_ensemble.BLOCK` leaves x points).
    """
    from dataclasses import replace

    X = check_points(domain, rng, ensemble)
    n = len(X)
    raw, summed = np.empty(n), np.empty(n)
    labels = np.empty(n, dtype=np.int64)
    step = max(1, min(BLOCK // max(1, ensemble.n_leaves), READ_CHUNK_VALUES // max(1, domain.n_features), CHECK_BLOCK))
    before = model.n_queries
    try:
        for begin in range(0, n, step):
            part = slice(begin, min(n, begin + step))
            reach = ensemble.reached(X[part], X[part])  # once, for the leaves per tree and the score
            per_tree = np.add.reduceat(reach.astype(np.int64), ensemble.tree_start, axis=1)
            if (per_tree != 1).any():
                row, tree = np.argwhere(per_tree != 1)[0]
                raise ModelCapabilityError(f"model {model.name!r}: tree {int(tree)} read from the model sends "
                                           f"{dict(zip(domain.names, X[part][row].tolist(), strict=True))} to "
                                           f"{int(per_tree[row, tree])} leaves; it cannot be certified")
            raw[part] = _raw_score(final, kind, feed.estimator_input(X[part]))
            summed[part] = ensemble.bounds_of(reach)[0]
            labels[part] = model.predict(X[part])
            if clock is not None:
                clock.tick(0, f"checking the trees read on {n:,} points ({part.stop:,} done)")
    finally:
        model.n_queries = before
    base = float(np.median(raw - summed))
    gap = np.abs(raw - (summed + base)) / (1.0 + np.abs(raw))
    ensemble = replace(ensemble, base=base)
    positive_is_one = model.positive_index == 1
    read = (summed + base > ensemble.threshold) == positive_is_one
    clear = np.abs(raw - ensemble.threshold) > SCORE_TOLERANCE * (1.0 + abs(ensemble.threshold))
    differ = clear & (read.astype(np.int64) != labels)
    if gap.max() > SCORE_TOLERANCE or differ.any():
        row = int(np.argmax(differ)) if differ.any() else int(np.argmax(gap))
        raise ModelCapabilityError(
            f"model {model.name!r}: the trees read from it do not reproduce it (largest score difference "
            f"{float(gap.max()):.2g}, labels differ on {int(differ.sum())} of {len(X)} domain points, e.g. "
            f"{dict(zip(domain.names, X[row].tolist(), strict=True))}); it cannot be certified")
    return ensemble
