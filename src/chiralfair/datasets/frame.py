"""The user's own data: a pandas DataFrame turned into an integer-encoded :class:`Dataset`."""

from __future__ import annotations

import json
import logging
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from ..domain import Domain
from ..domain.coupling import check_coupled_attributes
from ..exceptions import DatasetError, DataWarning, DomainError, Problems
from ._spec import Column, Encoded
from .base import Dataset
from .codec import ColumnCodec, FrameCodec, bin_codec, category_codec, integer_codec, rank_codec
from .native import as_pandas, read_parquet_frame
from .protected import check_protected_columns
from .values import alike_groups, is_missing_token, show_spelling, spelling_key

if TYPE_CHECKING:
    from ..domain.features import MissingPolicy

MISSING_LABEL = "missing"

# The name of the outer index level that says where each row comes from when frames read from several places are
# encoded together (the data and its test rows): a refusal about a row then names the file and the row in its own
# numbering ("row 12 of test file 'test.csv'"), never a row number counted across both.
ROW_SOURCE = "chiralfair.row_source"

logger = logging.getLogger(__name__)


def from_frame(df: pd.DataFrame, *, label, positive_class, protected,
               name: str = "custom", bins: Mapping[Any, int | Sequence[float]] | None = None,
               protected_groups: Mapping[str, Sequence] | None = None,
               missing_protected: MissingPolicy = "exclude", couple=None, constraints=None) -> Dataset:
    """Encode a DataFrame as a :class:`Dataset`: every column but ``label`` becomes an integer feature.

    - string, object, boolean and categorical columns become codes 0..k-1 of their sorted distinct values
      (a pandas categorical keeps its declared category order); a missing value (NaN, None) is a category of
      its own, the next code, labelled ``"missing"`` (recorded as :attr:`Feature.missing`). Text that is
      ``"?"`` once stripped (UCI Adult's ``" ?"``) is a missing value too when the column has no NaN: its code
      is labelled ``"missing"`` and recorded as :attr:`Feature.missing`, and the model is still fed the text
      itself. Values that differ only in Unicode normal form or whitespace (``"Zürich"`` composed and
      decomposed, ``"Male"`` and ``" Male"``) stay apart (the model may tell them apart) with a warning; in a
      protected attribute they are refused;
    - integer columns are kept as they are (the code is the value), read without a detour through float64;
      a column holding an integer beyond ±2**53 (which float64, the type models are called with, cannot
      hold exactly) gets the codes 0..k-1 of its sorted distinct values instead, decoded to the exact values;
    - a **continuous** column (numbers that are not all integers, or with a missing value) not listed in
      ``bins`` is searched on :data:`AUTO_BINS` quantile bins chosen automatically (one bin per value when it
      holds that few; a missing value gets a bin of its own), recorded in ``codec.binned``. Bins are the
      search's view only: the verdict, F1 and group metrics of a model fed frames are computed on
      :attr:`Dataset.raw`, the rows as given;
    - a numeric protected attribute with more than
      :data:`~chiralfair.datasets.protected.MAX_NUMERIC_PROTECTED_VALUES` distinct values (an age in years)
      must be given ``bins`` (or made categorical): the check would otherwise try every value as a category;
    - a column in ``bins`` is cut into intervals: ``bins[column]`` is a number of equal-width bins or a
      sequence of bin edges; a value outside finite edges is an error naming its row, and a first edge ``-inf``
      or a last edge ``inf`` makes the outer bin open-ended (``chiralfair schema infer`` writes them so, so a
      held-out value beyond the inferred file's range falls in the outer bin); missing values get a bin of their
      own.

    Feature names are the frame's column labels as text (``str(label)``); every lookup (``label``,
    ``protected``, ``bins``, ``protected_groups``) accepts the original label, integer or text, and matches it
    by ``str()``.

    Parameters
    ----------
    df : pandas.DataFrame, shape (n_samples, n_features + 1)
        Or a polars (or other narwhals) frame, encoded as the same data in pandas would be
        (:func:`chiralfair.datasets.native.as_pandas`).
    label : hashable
        Label column.
    positive_class : object
        Value of ``label`` encoded as 1; every other value is 0.
    protected : str, sequence or mapping
        The protected attributes, as :meth:`Domain.with_protected` takes them: column names; a tuple of
        columns for one attribute spread over several columns (e.g. one-hot ``("race_A", "race_B",
        "race_C")``, named ``"race"``); names from ``protected_groups``; or a mapping display name -> column(s).
        Each attribute's domain is the set of values (rows, for a group) observed in the data.
    name : str
        Dataset name.
    bins : mapping of column name to int or sequence of float, optional
    protected_groups : mapping of str to sequence, optional
        Named groups of columns that form one protected attribute each, e.g. ``{"race": ["race_A",
        "race_B", "race_C"]}`` with ``protected=["sex", "race"]``. The check then tries only the group's
        observed rows (3 queries per input for a 3-value one-hot race, not 2**3 = 8).
    missing_protected : {"exclude", "value"}
        ``"exclude"`` (default): a protected attribute's missing value is not one of its values, so it is
        never a counterpart; rows holding it are reported apart (:attr:`Dataset.missing_protected`), left out of
        the verdict's shares and groups (counted and named: their own value is missing, so no group holds them),
        and seed strategies do not draw them as seeds. ``"value"``: the missing value is a value like the others
        (the behaviour before this option).
    couple : mapping, optional
        Columns that change with a protected attribute (architecture: counterparts that could exist), e.g. ``{"sex":
        {"relationship": {"Husband": "Wife", "Wife": "Husband"}}}`` (labels are the frame's values as text);
        see :meth:`Domain.with_couplings <chiralfair.domain.Domain.with_couplings>`. None: no coupling.
    constraints : str or sequence of str, optional
        Rules every input satisfies, e.g. ``"sex=Female excludes relationship=Husband"`` or
        ``"age >= education_num + 1"`` (codes); see :meth:`Domain.with_constraints
        <chiralfair.domain.Domain.with_constraints>`.

    Returns
    -------
    Dataset
        ``X`` int64 of shape (n_samples, n_features), features in the frame's column order; code labels in
        ``domain.features[j].labels``.

    Raises
    ------
    DatasetError
        Naming the column (and the value or row) at fault: a missing label column or ``positive_class``, a
        missing label value, a protected attribute holding non-integer numbers or missing values without bins, a
        value outside the bin edges, an infinite value in a continuous column, ``bins`` naming an unknown column,
        two columns with the same name as text, ``protected`` naming the label column, a protected attribute with
        two spellings of one value, a label column that spells ``positive_class`` in another way too (``">50K"``
        and ``">50K."``), or a numeric protected attribute with many values and no bins.
    DomainError
        If a protected attribute is unknown (lists the valid names) or has one observed value.

    Warns
    -----
    DataWarning
        (also logged) for a feature with a distinct value on every row (an identifier, at least
        ``ID_MIN_ROWS`` rows), a label column with other values that differ only in spelling (``"<=50K"`` and
        ``"<=50K."`` beside ``positive_class=">50K"``; the message gives the counts), a label column with several
        values besides ``positive_class`` (all read as label 0), a feature with values that
        differ only in Unicode normal form or whitespace, a column with several missing markers (NaN and ``"?"``),
        and one-hot-looking protected columns listed one by one.

    Examples
    --------
    >>> import pandas as pd
    >>> from chiralfair.datasets import from_frame
    >>> df = pd.DataFrame({"sex": ["f", "m", "f", "m", None], "hours": [30.5, 40.0, 50.2, 60.0, 45.0],
    ...                    "y": ["no", "no", "yes", "yes", "no"]})
    >>> data = from_frame(df, label="y", positive_class="yes", protected="sex", bins={"hours": [20, 40, 60, 80]})
    >>> data.X.tolist(), data.y.tolist()
    ([[0, 0], [1, 0], [0, 1], [1, 1], [2, 1]], [0, 0, 1, 1, 0])
    >>> data.domain.features[0].labels, data.domain.features[1].labels
    ({0: 'f', 1: 'm', 2: 'missing'}, {0: '20-40', 1: '40-60', 2: '60-80'})
    >>> data.n_missing_protected          # a missing sex is never a counterpart
    1
    >>> data.to_frame(data.X[:2])         # what a model fitted on the frame is fed: each bin's lower median
      sex  hours
    0   f   30.5
    1   m   30.5
    """
    df = as_pandas(df, what="df")
    if df.shape[0] == 0:
        raise DatasetError("df has no rows")
    columns = _columns_by_text(df)
    problems = Problems()  # every unknown name and every column's problem at once, not one run each
    label, features, bins = _checked_names(problems, df, columns, label, bins, protected, protected_groups)
    buildable = problems.none_but(_UNKNOWN_BINS)  # then the domain can be built, to check the protected attributes
    if label in df.columns:
        with problems.check():
            y = _encode_label(df[label], label, positive_class)
    never_auto = {str(ref) for ref in _protected_references(protected, protected_groups)}
    encoded_columns, codecs = [], []
    for c in features:
        with problems.check():
            column, column_codec = _encode_column(df[c], str(c), bins.get(c), auto=str(c) not in never_auto)
            encoded_columns.append(column)
            codecs.append(column_codec)
    if not buildable or len(encoded_columns) < len(features) or not problems.none_but(_UNKNOWN_BINS):
        problems.raise_all()
    _warn_identifier_columns(df, features, bins)
    encoded = Encoded.from_columns(list(encoded_columns), y)
    missing = {col.name: int(col.missing) for col in encoded_columns if col.missing is not None}
    domain = Domain.from_data(encoded.X, encoded.names, kinds=encoded.kinds, labels=encoded.labels,
                              protected=[protected] if isinstance(protected, str | int) else protected,
                              groups=protected_groups, missing=missing, missing_protected=missing_protected)
    domain = _with_declared_categories(domain, df, columns)
    codec = FrameCodec(tuple(codecs))
    with problems.check():
        check_protected_columns(domain, codec, encoded.X)
    problems.raise_all()
    _warn_alike_values(df, features, codec, domain)
    check_coupled_attributes(couple, domain.protected_names)
    domain = domain.with_couplings(couple)
    if constraints:
        domain = domain.with_constraints(constraints, data=encoded.X)
    return Dataset(name=name, X=encoded.X, y=encoded.y, domain=domain, label=str(label),
                   positive_class=str(positive_class), negative_class=_negative_class(df[label], positive_class),
                   sources={}, codec=codec,
                   raw=df[features].reset_index(drop=True))


def _with_declared_categories(domain: Domain, df: pd.DataFrame, columns: dict) -> Domain:
    """The domain with every category a protected column's pandas category dtype declares among its values.

    A category no row holds (``sex`` of categories Female, Male, Nonbinary, no row Nonbinary) is still a value the
    model can be fed, and the dtype says it is one of the attribute's: counterparts take it, with a warning naming
    it and how to test only the values the rows hold (``remove_unused_categories``).
    """
    extra: dict[str, list[str]] = {}
    values: dict[str, list] = {a.name: [row[0] if len(row) == 1 else row for row in a.values]
                               for a in domain.attributes}
    for a in domain.attributes:
        if a.is_group:
            continue
        feature = domain.features[a.columns[0]]
        dtype = df[columns[feature.name]].dtype
        if not isinstance(dtype, pd.CategoricalDtype):
            continue
        declared = [i for i in range(len(dtype.categories)) if i != feature.missing]
        unused = [i for i in declared if (i,) not in a.values]
        if unused:
            values[a.name] = declared
            extra[a.name] = [str(dtype.categories[i]) for i in unused]
    if not extra:
        return domain
    names = domain.protected_declaration
    with warnings.catch_warnings():  # the bounds widened to the declared codes: said below, in the data's terms
        warnings.simplefilter("ignore", DataWarning)
        widened = domain.with_protected(names, values=values)
    for name, labels in extra.items():
        column = names[name][0]  # a single column: a group's categories are not widened
        _data_warning(
            f"protected attribute {name!r}: its category dtype declares {', '.join(map(repr, labels))}, which no row "
            f"holds; a value the model can be fed, so counterparts take it (no row, seed or group has it). To test "
            f"only the values the rows hold: df[{column!r}] = df[{column!r}].cat.remove_unused_categories()")
    return widened


# A feature with a distinct value on every row is reported as an identifier from this many rows on.
ID_MIN_ROWS = 20


_UNKNOWN_BINS = "bins names columns that are not features:"


def _checked_names(problems: Problems, df: pd.DataFrame, columns: dict, label, bins, protected, groups):
    """The label column, the features and the bins by column; every unknown name is kept in ``problems``.

    An unknown column in ``bins`` is kept last, so that the data can still be encoded and the protected attributes
    checked: one message then lists all.
    """
    if str(label) not in columns:
        with problems.check():
            raise DatasetError(f"label column {label!r} is not in the frame; columns: "
                               f"{', '.join(map(repr, df.columns))}")
    label = columns.get(str(label), label)
    features = [c for c in df.columns if c != label]
    if not features:
        raise DatasetError(f"the frame has no column besides the label {label!r}")
    unknown = [c for c in (bins or {}) if str(c) not in columns or columns[str(c)] == label]
    if unknown:
        with problems.check():
            raise DatasetError(f"{_UNKNOWN_BINS} {unknown}; features: {', '.join(map(repr, features))}")
    joined = _joined_names(protected, columns)
    with problems.check():
        _refuse_joined_name(joined, columns)
    for ref in _protected_references(protected, groups):
        if str(ref) not in columns and not any(ref in item for item in joined):  # refused once, above
            with problems.check():  # the protected attribute is named as Domain.with_protected names it
                raise DomainError(f"unknown feature {ref!r}; valid names: {', '.join(repr(str(c)) for c in features)}")
    with problems.check():
        _refuse_protected_label(protected, groups, label)
    return label, features, {columns[str(c)]: spec for c, spec in (bins or {}).items() if str(c) in columns}


def _columns_by_text(df: pd.DataFrame) -> dict[str, object]:
    """Map each column label's text to the label; two labels with the same text (1 and "1") are refused."""
    out: dict[str, object] = {}
    for c in df.columns:
        if str(c) in out:
            raise DatasetError(f"columns {out[str(c)]!r} and {c!r} have the same name as text; feature names "
                               "must differ: rename one")
        out[str(c)] = c
    return out


def _protected_references(protected, groups) -> list:
    """Every column label that ``protected`` and ``groups`` name (group display names left out)."""
    groups = {str(k): v for k, v in (groups or {}).items()}
    if isinstance(protected, Mapping):
        groups.update({str(k): v for k, v in protected.items()})
        protected = list(protected)
    if isinstance(protected, str | int) or not isinstance(protected, Sequence):
        protected = [protected]
    refs = []
    for item in protected:
        members = groups.get(str(item), item) if isinstance(item, str | int) else item
        if isinstance(members, str | int) or not isinstance(members, Sequence):
            members = [members]
        refs.extend(members)
    return refs


def _joined_names(protected, columns: dict) -> list[Sequence]:
    """The groups of columns in ``protected`` whose '+'-joined spelling is itself a column."""
    if isinstance(protected, str | int | Mapping) or not isinstance(protected, Sequence):
        return []
    return [item for item in protected
            if not isinstance(item, str | int) and isinstance(item, Sequence) and "+".join(map(str, item)) in columns]


def _refuse_joined_name(joined_names: list[Sequence], columns: dict) -> None:
    """Refuse a group of columns whose '+'-joined spelling is itself a column: which one was meant is not known.

    ``--protected "a+b"`` is the attribute over the columns ``a`` and ``b``; a column named ``a+b`` is named as it
    is in a list (a schema's ``protected = ["a+b"]``, Python's ``protected=["a+b"]``). ``joined_names`` are those
    groups (:func:`_joined_names`).
    """
    for item in joined_names:
        joined = "+".join(map(str, item))
        members = ", ".join(repr(str(c)) for c in item)
        if all(str(c) in columns for c in item):
            raise DatasetError(
                f"protected attribute {joined!r} is ambiguous: the frame has a column {joined!r} and the columns "
                f"{members}; for the column, name it in a list as it is (schema: protected = [{json.dumps(joined)}]); "
                f"for one attribute over the columns, in a list of lists (schema: protected = "
                f"[{json.dumps([str(c) for c in item])}]), or rename the column")
        raise DatasetError(
            f"column {joined!r} holds '+', which joins the columns of one attribute in --protected (here {members}, "
            f"not columns of the frame); name the column in a list as it is (schema: protected = "
            f"[{json.dumps(joined)}]), or rename it")


def _refuse_protected_label(protected, groups, label) -> None:
    for ref in _protected_references(protected, groups):
        if str(ref) == str(label):
            raise DatasetError(f"protected attribute {ref!r} is the label column {label!r}: the label is what "
                               "the model predicts, not an input; name a feature as the protected attribute")


def _warn_identifier_columns(df: pd.DataFrame, features: list, bins: Mapping) -> None:
    n = len(df)
    if n < ID_MIN_ROWS:
        return
    for c in features:
        if c in bins or pd.api.types.is_float_dtype(df[c].dtype):
            continue
        if df[c].nunique(dropna=False) == n:
            _data_warning(f"column {c!r} has a distinct value on each of the {n} rows: it looks like an "
                          "identifier, not a feature (a model that uses it can memorise rows, and changing it "
                          f"means nothing); drop it: df.drop(columns=[{c!r}])")


def _data_warning(message: str) -> None:
    # Logged at INFO: the warning itself reaches the user; a WARNING log would print it twice.
    logger.info(message)
    warnings.warn(message, DataWarning, stacklevel=4)


def first_failing_row(n: int, fails: Callable[[int, int], bool]) -> int | None:
    """The one of ``n`` rows that fails alone, found by halving them: a few calls, no loop over the rows.

    For rows known to fail together (a conversion, a model call), to name the row at fault.

    Parameters
    ----------
    n : int
        Rows.
    fails : callable
        ``fails(a, b)``: whether rows ``a`` to ``b - 1`` fail.

    Returns
    -------
    int or None
        The row's position; None when neither half of some failing span fails on its own (the rows fail only
        together), or ``n`` is 0.
    """
    lo, hi = 0, n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fails(lo, mid):
            hi = mid
        elif fails(mid, hi):
            lo = mid
        else:
            return None
    return lo if hi - lo == 1 else None


def row_text(index: pd.Index, position: int) -> str:
    """The row at ``position`` in words, unambiguously: ``data row 12 (line 13) of test file 'test.csv'``.

    A row of a file is counted from 1 below its header (its line counts the header too); a row of a frame given as
    an object is named by its index label (``row with index label 12 of the test frame (test=)``), and so is a row
    of a frame of no source (``row with index label 12``).

    Parameters
    ----------
    index : pandas.Index
        A frame's index; when its outer level is named :data:`ROW_SOURCE` (frames of several sources stacked by
        :func:`stacked_frames`), that level names the source and the inner one the row in the source's own numbering.
    position : int
        The row's position in the frame.

    Returns
    -------
    str
    """
    label = index[position]
    if isinstance(index, pd.MultiIndex) and index.names[0] == ROW_SOURCE:
        source, row = label
        return f"{source_row_text(source, row)} of {source}"
    return f"row with index label {_show(label)}"


def source_row_text(source: str, row) -> str:
    """A row of ``source`` (as :func:`stacked_frames` names it) in words, without the source.

    ``data row 12 (line 13)`` for row 11 of a CSV file as read (0-based, below its header; a Parquet file has no
    lines), ``row with index label 11`` for a frame's row.

    Parameters
    ----------
    source : str
        ``"data file 'train.csv'"``, ``"test file 'test.parquet'"``, or a frame's name in words.
    row : object
        The row's label in the source's own index (a file's rows are numbered from 0 as read).

    Returns
    -------
    str
    """
    file = _FILE_SOURCE.fullmatch(str(source))
    if file is None or isinstance(row, bool) or not isinstance(row, int | np.integer):
        return f"row with index label {_show(row)}"
    number = int(row) + 1
    if file.group(1).lower().endswith(".csv"):
        return f"data row {number} (line {number + 1})"
    return f"data row {number}"


# How stacked_frames' sources name a file (``data file 'train.csv'``): its rows are numbered as read, from 0.
_FILE_SOURCE = re.compile(r"(?:data|test) file '(.*)'")


def stacked_frames(frames: Sequence[pd.DataFrame], sources: Sequence[str]) -> pd.DataFrame:
    """``frames`` one below the other, each row's index saying where it comes from (:data:`ROW_SOURCE`).

    :func:`from_frame` names a row of the result with :func:`row_text`: ``data row 13 (line 14) of test file
    'test.csv'``.

    Parameters
    ----------
    frames : sequence of pandas.DataFrame
        Frames with the same columns.
    sources : sequence of str
        Each frame's source in words (``"data file 'train.csv'"``, ``"test="``).

    Returns
    -------
    pandas.DataFrame
        The rows of every frame, in order; the index's outer level (:data:`ROW_SOURCE`) is the source, the inner
        one the frame's own index. A frame whose rows already name their sources so (the first rows of a stream
        of several files: :meth:`~chiralfair.datasets.stream.RowStream.head`) keeps its own. A column that is an
        unordered pandas categorical in every frame stays one, of the first frame's categories followed by the
        others' new ones (:func:`shared_categories`), where ``pd.concat`` makes text of categoricals whose
        categories differ: the rows keep the dtype the user gave them, and a copy of the model fitted on them (the
        chiral model, a mitigated model) reads those columns as categorical as the model did.
    """
    parts = [frame if isinstance(frame.index, pd.MultiIndex) and frame.index.names[0] == ROW_SOURCE
             else pd.concat([frame], keys=[source], names=[ROW_SOURCE, "row"])
             for frame, source in zip(frames, sources, strict=True)]
    return pd.concat(shared_categories(parts))


def shared_categories(frames: Sequence[pd.DataFrame]) -> list[pd.DataFrame]:
    """``frames`` with each column that is an unordered categorical in all of them given one categorical dtype.

    Parameters
    ----------
    frames : sequence of pandas.DataFrame
        Frames with the same columns.

    Returns
    -------
    list of pandas.DataFrame
        The frames, those whose categorical dtype differs from the shared one cast to it: the first frame's
        categories in their order, then each other frame's categories it lacks, in that frame's order (the first
        frame's rows keep their category codes). Other columns are untouched.
    """
    frames = list(frames)
    if len(frames) < 2:
        return frames
    shared = {}
    for column in frames[0].columns:
        dtypes = [frame[column].dtype for frame in frames if column in frame.columns]
        if (len(dtypes) == len(frames) and all(isinstance(d, pd.CategoricalDtype) and not d.ordered for d in dtypes)
                and any(d != dtypes[0] for d in dtypes)):
            categories = pd.Index(dtypes[0].categories)
            for d in dtypes[1:]:
                categories = categories.append(pd.Index(d.categories).difference(categories, sort=False))
            shared[column] = pd.CategoricalDtype(categories)
    if not shared:
        return frames
    return [frame.astype({c: d for c, d in shared.items() if frame[c].dtype != d}) for frame in frames]


def _encode_label(series: pd.Series, label, positive_class) -> np.ndarray:
    missing = series.isna().to_numpy()
    if missing.any():
        where = row_text(series.index, int(np.argmax(missing)))
        raise DatasetError(f"label column {label!r} has a missing value at {where}")
    positive = (series == positive_class).to_numpy(dtype=bool)
    if not positive.any():
        values = ", ".join(map(repr, sorted(series.unique().tolist(), key=str)[:10]))
        raise DatasetError(f"positive_class {positive_class!r} does not occur in label column {label!r}; "
                           f"its values include {values}")
    _warn_label_spellings(series, label, positive_class)
    _warn_label_values(series[~positive], label, positive_class)
    return positive.astype(np.int64)


def _warn_label_values(negatives: pd.Series, label, positive_class) -> None:
    """Warn when the rows read as label 0 hold several values (not spellings of one): a class folded into another."""
    counts = negatives.value_counts(sort=True)
    if len({_label_spelling(v) for v in counts.index}) < 2:  # one other value, or its spellings (warned about above)
        return
    shown = ", ".join(f"{_show(v)} ({n} rows)" for v, n in counts.head(10).items())
    _data_warning(f"label column {label!r} holds {len(counts)} values besides positive_class {_show(positive_class)}: "
                  f"{shown}; every one is read as label 0 (the negative class), in F1 and any retraining. If that "
                  f"is not meant, map the column to two values first (in both the data and the test rows)")


def _negative_class(series: pd.Series, positive_class) -> str | None:
    """The label's one value besides ``positive_class``, as text; None when it holds no other or several."""
    others = series.dropna().loc[series.dropna() != positive_class].unique()
    return str(others[0]) if len(others) == 1 else None


def _warn_label_spellings(series: pd.Series, label, positive_class) -> None:
    """Warn when label values differ only by case, whitespace, Unicode normal form or a trailing dot (``">50K."``).

    Refuse (:class:`DatasetError`) when one of those spellings is the positive class's: its other spellings would
    silently become the negative class.
    """
    counts = series.value_counts(sort=False)
    spelling = pd.Series([_label_spelling(v) for v in counts.index], index=counts.index)
    clashes = [group for _, group in counts.groupby(spelling.to_numpy(), sort=True) if len(group) > 1]
    if not clashes:
        return
    shown = "; ".join(" and ".join(f"{_show(v)} ({n} rows)" for v, n in group.items()) for group in clashes)
    n_positive = int((series == positive_class).sum())
    positive_spellings = [group for group in clashes if any(_same_value(v, positive_class) for v in group.index)]
    if positive_spellings:  # the other spelling would be encoded 0: F1 and any retraining silently wrong
        others = ", ".join(f"{_show(v)} ({n} rows)" for v, n in positive_spellings[0].items()
                           if not _same_value(v, positive_class))
        raise DatasetError(
            f"label column {label!r} spells the positive class {_show(positive_class)} ({n_positive} rows) in other "
            f"ways too: {others}; those rows would be read as the negative class (label 0), so F1 and any retraining "
            f"would be wrong. Normalise the column first (in both the data and the test rows), e.g. "
            f"df[{label!r}] = df[{label!r}].str.strip().str.rstrip('.')")
    _data_warning(
        f"label column {label!r} has values that differ only in spelling: {shown}. Only rows equal to "
        f"positive_class {_show(positive_class)} ({n_positive} rows) are encoded as 1, every other spelling as 0; "
        f"normalise the column first, e.g. df[{label!r}] = df[{label!r}].str.strip().str.rstrip('.')")


def _label_spelling(value) -> str:
    """A label value's text up to case, whitespace, Unicode normal form and a trailing dot (``">50K."``)."""
    # a text always has a spelling key (None is for values that are not text)
    return cast(str, spelling_key(str(value))).rstrip(".").strip().casefold()


def _same_value(value, positive_class) -> bool:
    try:
        return bool(value == positive_class)
    except (TypeError, ValueError):
        return False


def _encode_column(series: pd.Series, name: str, spec, *, auto: bool = True) -> tuple[Column, ColumnCodec]:
    """The column's codes and labels, and how to decode them back (:mod:`chiralfair.datasets.codec`).

    A continuous column without ``spec`` (numbers that are not all integers, or that miss some values) gets
    :data:`AUTO_BINS` quantile bins when ``auto`` (every column but a protected attribute, whose groups the user
    must choose).
    """
    if len(series) and series.isna().all():  # read as float64 whatever it held: no value to encode, no bin to cut
        raise DatasetError(f"column {name!r} is missing on every row ({len(series):,}): it holds no value to test; "
                           f"drop it (df.drop(columns=[{name!r}])) or fill it")
    if spec is not None:
        return _binned(series, name, spec)
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return _categorical(series, name, list(dtype.categories), ordered=bool(dtype.ordered))
    if pd.api.types.is_bool_dtype(dtype) and not series.isna().any():
        return _categorical(series, name, [False, True], ordered=False)
    if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype):
        if auto and _is_continuous(series):
            return _binned(series, name, None)
        return _integer_valued(series, name)
    distinct = series.dropna().unique().tolist()
    return _categorical(series, name, sorted(distinct, key=_sort_key), ordered=False)


def _sort_key(value):
    # Sorting mixed types (e.g. 1 and "a") would fail; numbers sort before text, each group in natural order.
    return (0, value, "") if isinstance(value, int | float | np.number) else (1, 0, str(value))


def _categorical(series: pd.Series, name: str, categories: list, *,
                 ordered: bool) -> tuple[Column, ColumnCodec]:
    codes = pd.Categorical(series, categories=categories).codes.astype(np.int64)
    labels = {i: str(c) for i, c in enumerate(categories)}
    missing = codes < 0
    missing_code = None
    if missing.any():
        missing_code = len(categories)
        codes[missing] = missing_code
        labels[missing_code] = MISSING_LABEL
    tokens = [i for i, c in enumerate(categories) if is_missing_token(c)]
    if tokens and missing_code is None:
        # The most frequent spelling of "?" is the missing value; the model is still fed that text (the codec).
        missing_code = max(tokens, key=lambda i: int((codes == i).sum()))
        labels[missing_code] = MISSING_LABEL
    others = [i for i in tokens if i != missing_code]
    if others:
        shown = ", ".join(f"{show_spelling(categories[i])} ({int((codes == i).sum())} rows)" for i in others)
        _data_warning(f"column {name!r} has several missing markers: {shown} besides the missing value "
                      f"({int((codes == missing_code).sum())} rows); only that one is a missing value, the others "
                      f"are categories of their own. Use one marker, e.g. df[{name!r}] = "
                      f"df[{name!r}].replace({categories[others[0]]!r}, None)")
    column = Column(name, codes, "ordinal" if ordered else "categorical", labels, missing_code)
    return column, category_codec(series, categories, bool(missing.any()))


# Integers float64 holds exactly: models are called with float64 codes, so a code beyond this would change.
EXACT_FLOAT_INTEGER = 2**53


def _integer_valued(series: pd.Series, name: str) -> tuple[Column, ColumnCodec]:
    """An integer-valued numeric column: the values as codes, or their ranks beyond ±2**53 (module docstring)."""
    missing = series.isna().to_numpy()
    if missing.any():
        raise DatasetError(
            f"column {name!r} has a missing value at {row_text(series.index, int(np.argmax(missing)))}; fill it, or "
            f"pass bins={{{name!r}: ...}} so that missing values get a bin of their own")
    dtype = series.dtype
    # Integer columns are read in their own integer type (never through float64, which rounds beyond 2**53).
    values = series.to_numpy(dtype=getattr(dtype, "numpy_dtype", dtype))
    if values.dtype.kind == "f":
        fractional = ~np.isfinite(values) | (values != np.round(values))
        if fractional.any():
            row = int(np.argmax(fractional))
            raise DatasetError(
                f"column {name!r} holds the non-integer value {_show(values[row])} ({row_text(series.index, row)}); "
                f"encoded features must be integers: pass bins={{{name!r}: 10}} (10 equal-width bins) or "
                f"bins={{{name!r}: [edges...]}}, or round the column")
    low, high = values.min(), values.max()
    if -EXACT_FLOAT_INTEGER <= low and high <= EXACT_FLOAT_INTEGER:
        return Column(name, values.astype(np.int64), "ordinal"), integer_codec(series)
    table, codes = np.unique(values, return_inverse=True)
    logger.info("column %r holds integers beyond 2**53 (%s to %s), which float64 model inputs cannot hold exactly: "
                "its codes are the ranks 0..%d of its %d distinct values, decoded to the exact values", name,
                _show(low), _show(high), len(table) - 1, len(table))
    labels = {i: str(v) for i, v in enumerate(table.tolist())}
    return Column(name, codes.astype(np.int64), "ordinal", labels), rank_codec(series, table)


# Bins of a continuous column that is given none: deciles of its values (ties merge bins).
AUTO_BINS = 10


def _is_continuous(series: pd.Series) -> bool:
    """Whether a numeric column needs bins to be searched: a missing value, or a value that is not an integer."""
    values = series.to_numpy(dtype=float, na_value=np.nan)
    finite = np.isfinite(values)
    return bool((~finite).any() or (values[finite] != np.round(values[finite])).any())


def auto_edges(series: pd.Series, name: str, n_bins: int = AUTO_BINS) -> np.ndarray:
    """Quantile edges of a column's values (``n_bins`` bins, ties merged), or one bin per value when it has few.

    Parameters
    ----------
    series : pandas.Series
        A numeric column (missing values are left out).
    name : str
        Its name, for messages.
    n_bins : int, default=AUTO_BINS

    Returns
    -------
    numpy.ndarray of float64, shape (n_edges,)
        Increasing edges, the first the smallest value and the last the largest.

    Raises
    ------
    DatasetError
        If the column has no value, or an infinite one.
    """
    present = series.to_numpy(dtype=float, na_value=np.nan)
    present = present[~np.isnan(present)]
    if present.size == 0:
        raise DatasetError(f"column {name!r} has no value to bin")
    if not np.isfinite(present).all():
        raise DatasetError(f"column {name!r} holds an infinite value; replace it (e.g. by NaN, which gets a bin of "
                           "its own) before testing")
    distinct = np.unique(present)
    if distinct.size == 1:
        return np.array([distinct[0], distinct[0] + 1.0])
    if distinct.size <= n_bins:
        return np.concatenate([[distinct[0]], (distinct[:-1] + distinct[1:]) / 2, [distinct[-1]]])
    edges = np.unique(np.quantile(present, np.linspace(0.0, 1.0, n_bins + 1)))
    if edges.size == 2:
        _warn_one_bin(present, name, n_bins)
    return edges


def _warn_one_bin(present: np.ndarray, name: str, n_bins: int) -> None:
    """Warn that a column's quantile bins collapsed to one (mostly one value): the search cannot move it."""
    values, counts = np.unique(present, return_counts=True)
    at = int(np.argmax(counts))
    mode = values[at]
    # edges that give the common value a bin of its own, and split the values above it at their median
    inner = [(values[at - 1] + mode) / 2] if at > 0 else []
    if at + 1 < values.size:
        above = present[present > mode]
        inner.append((mode + values[at + 1]) / 2)
        inner.append(float(np.quantile(above, 0.5)))
    edges = ":".join(["-inf", *dict.fromkeys(f"{e:.6g}" for e in sorted(inner)), "inf"])
    _data_warning(
        f"column {name!r}: its {n_bins} quantile bins collapse to 1 ({counts.max() / present.size:.0%} of its "
        f"values are {mode:g}), so the search cannot change it: every step and every counterpart of the search keeps "
        f"its one bin, and IDIs that need another {name} are not found (the verdict, on the rows as given, is not "
        f"affected); give it bins: equal-width (--bins {name}=10, bins={{{name!r}: 10}}) or edges (--bins "
        f"{name}={edges})")


def _binned(series: pd.Series, name: str, spec) -> tuple[Column, ColumnCodec]:
    """Bin codes of a numeric column: ``spec`` bins (an int: equal width; a sequence: edges), None: automatic.

    Edges may open the outer bins: a first edge ``-inf`` or a last edge ``inf`` (what ``chiralfair schema infer``
    writes) puts every value below (above) the inner edges in the outer bin. A value beyond a finite outer edge is
    refused, naming the column, the value and its row.
    """
    if not pd.api.types.is_numeric_dtype(series.dtype) or pd.api.types.is_bool_dtype(series.dtype):
        raise DatasetError(f"bins given for column {name!r}, which is not numeric ({series.dtype})")
    values = series.to_numpy(dtype=float, na_value=np.nan)
    infinite = np.isinf(values)
    if infinite.any():
        where = row_text(series.index, int(np.argmax(infinite)))
        raise DatasetError(f"column {name!r} holds an infinite value ({where}); replace it (e.g. by NaN, which gets a "
                           "bin of its own) before testing")
    if spec is None:
        edges = auto_edges(series, name)
        binning = f"{len(edges) - 1} quantile bins, chosen automatically"
    elif isinstance(spec, int | np.integer):
        if spec < 1:
            raise DatasetError(f"bins[{name!r}] must be at least 1, got {spec}")
        present = series.dropna()
        if present.empty:
            raise DatasetError(f"column {name!r} has no value to bin")
        low, high = float(present.min()), float(present.max())
        edges = np.linspace(low, high if high > low else low + 1.0, int(spec) + 1)
        binning = f"{int(spec)} equal-width bins, as given"
    else:
        edges = _given_edges(name, spec)
        binning = f"{edges.size - 1} bins at the given edges"
        if np.isinf(edges).any():
            binning += ", the outer ones open-ended"
    # Intervals (a, b], the first one closed on the left too.
    cut = pd.cut(series, bins=edges, include_lowest=True, labels=False)
    codes = cut.to_numpy(dtype=float, na_value=np.nan)
    outside = np.isnan(codes) & series.notna().to_numpy()
    if outside.any():
        row = int(np.argmax(outside))
        raise DatasetError(f"column {name!r} value {_show(series.iloc[row])} ({row_text(series.index, row)}) "
                           f"lies outside the bin edges [{edges[0]:g}, {edges[-1]:g}]; to put values beyond them in "
                           "the outer bins, make the first edge -inf and the last inf (a schema written by an older "
                           "'chiralfair schema infer' closes them at its file's range: infer it again)")
    n_bins = len(edges) - 1
    labels = {i: _bin_label(edges[i], edges[i + 1]) for i in range(n_bins)}
    missing = np.isnan(codes)
    codes = np.where(missing, n_bins, codes).astype(np.int64)
    if missing.any():
        labels[n_bins] = MISSING_LABEL
    return (Column(name, codes, "ordinal", labels, n_bins if missing.any() else None),
            bin_codec(series, codes, edges, bool(missing.any()), binning))


def _given_edges(name: str, spec) -> np.ndarray:
    """Edges given by the user: increasing, at least two, finite but for an open first (-inf) or last (inf) one."""
    try:
        edges = np.asarray(spec, dtype=float)
    except (TypeError, ValueError):
        edges = np.array([])
    if (edges.ndim != 1 or edges.size < 2 or np.isnan(edges).any() or np.isinf(edges[1:-1]).any()
            or edges[0] == np.inf or edges[-1] == -np.inf or np.any(np.diff(edges) <= 0)):
        raise DatasetError(f"bins[{name!r}] must be an int or at least two increasing edges (the first may be -inf "
                           f"and the last inf, for open-ended outer bins), got {spec!r}")
    return edges


def _bin_label(low: float, high: float) -> str:
    """A bin's label: ``20-40``; an open outer bin ``<=40`` or ``>60``; a single open bin ``all``."""
    if np.isinf(low) and np.isinf(high):
        return "all"
    if np.isinf(low):
        return f"<={high:g}"
    if np.isinf(high):
        return f">{low:g}"
    return f"{low:g}-{high:g}"


def _warn_alike_values(df: pd.DataFrame, features: list, codec: FrameCodec, domain: Domain) -> None:
    """Warn about feature values that differ only in Unicode normal form or whitespace.

    Protected attributes are refused instead (:func:`~chiralfair.datasets.protected.check_protected_columns`).
    """
    protected = {domain.features[c].name for c in domain.protected}
    for column, column_codec in zip(features, codec.columns, strict=True):
        if str(column) in protected or column_codec.how != "category":
            continue
        groups = alike_groups(cast(np.ndarray, column_codec.table))  # a category codec has its table
        if not groups:
            continue
        counts = df[column].value_counts(dropna=True)
        shown = "; ".join(" and ".join(f"{show_spelling(v)} ({int(counts.get(v, 0))} rows)" for v in group)
                          for group in groups)
        _data_warning(f"column {str(column)!r} has values that differ only in Unicode normal form or whitespace: "
                      f"{shown}. They stay separate categories (the model may have learnt them apart); if they are "
                      f"one value, normalise the column first, e.g. df[{column!r}] = "
                      f"df[{column!r}].str.normalize('NFC').str.strip()")


def _show(value) -> str:
    """``repr`` of a value, without the numpy type wrapper (``1.5``, not ``np.float64(1.5)``)."""
    return repr(value.item() if isinstance(value, np.generic) else value)


FRAME_SUFFIXES = (".csv", ".parquet")


def read_frame(path, *, what: str = "data file") -> pd.DataFrame:
    """Read a data file (``.csv`` or ``.parquet``) into a DataFrame, as it is (no type guessing beyond pandas').

    Parameters
    ----------
    path : str or path-like
        A ``.csv`` or ``.parquet`` file.
    what : str, default="data file"
        What the file is, for the messages (``"test file"``).

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    DatasetError
        Naming the file: a missing file, an unsupported suffix, a file pandas cannot read, or one with no rows.
    """
    from pathlib import Path

    path = Path(path)
    if not path.exists():  # before the suffix: a misspelt folder has none, and is missing, not of a bad type
        raise DatasetError(f"{what} {str(path)!r} does not exist")
    if path.suffix.lower() not in FRAME_SUFFIXES:
        raise DatasetError(f"{what} {str(path)!r}: unsupported suffix {path.suffix or '(none)'!r}; use a .csv or "
                           ".parquet file")
    if not path.is_file():
        raise DatasetError(f"{what} {str(path)!r} is not a file")
    try:
        frame = read_parquet_frame(path) if path.suffix.lower() == ".parquet" else pd.read_csv(path)
    except (OSError, ValueError) as err:
        raise DatasetError(f"cannot read {what} {str(path)!r}: {err}") from err
    return refuse_no_rows(frame, path, what=what)


def refuse_no_rows(frame: pd.DataFrame, path=None, *, what: str = "data file",
                   columns: Sequence | None = None) -> pd.DataFrame:
    """``frame``, refused when it has no rows (a file with a header alone, an empty DataFrame).

    Parameters
    ----------
    frame : pandas.DataFrame
        As read from ``path``, or as given.
    path : str or path-like, optional
        The file it was read from, for the message; None for a frame given as an object.
    what : str, default="data file"
        What it is, for the message: ``"data file"``, ``"test file"`` (followed by ``path``), or a frame's name in
        words (``"the data (data=)"``) when there is no ``path``.
    columns : sequence, optional
        The file's columns, when ``frame`` holds only some of them (one column read alone).

    Returns
    -------
    pandas.DataFrame
        ``frame`` itself.

    Raises
    ------
    DatasetError
        Naming the file (or the frame) and its columns.
    """
    if len(frame) == 0:
        columns = list(frame.columns if columns is None else columns)
        shown = ", ".join(map(str, columns[:10])) + (", ..." if len(columns) > 10 else "")
        if path is None:
            raise DatasetError(f"{what} has no rows (columns: {shown}): there are no people to test; give a frame "
                               "with rows")
        raise DatasetError(f"{what} {str(path)!r} has no rows (a header only: {shown}): there is nothing to read "
                           "values or people from; give a file with rows")
    return frame


def read_frame_header(path) -> list:
    """The column names of a data file (``.csv`` or ``.parquet``), read without its rows.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    list

    Raises
    ------
    DatasetError
        As :func:`read_frame`.
    """
    from pathlib import Path

    path = Path(path)
    if path.suffix.lower() not in FRAME_SUFFIXES or not path.is_file():
        return list(read_frame(path).columns)  # read_frame refuses it with the reason
    try:
        if path.suffix.lower() == ".parquet":
            import pyarrow.parquet as pq

            return list(pq.read_schema(path).names)
        return list(pd.read_csv(path, nrows=0).columns)
    except (OSError, ValueError) as err:
        raise DatasetError(f"cannot read data file {str(path)!r}: {err}") from err


def read_frame_column(path, column: str) -> pd.DataFrame:
    """One column of a data file (``.csv`` or ``.parquet``), read alone, as a one-column frame.

    Parameters
    ----------
    path : str or path-like
    column : str

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    DatasetError
        As :func:`read_frame`.
    """
    from pathlib import Path

    path = Path(path)
    try:
        if path.suffix.lower() == ".parquet":
            frame = pd.read_parquet(path, columns=[column])
        else:
            frame = pd.read_csv(path, usecols=[column])
    except (OSError, ValueError) as err:
        raise DatasetError(f"cannot read column {column!r} of data file {str(path)!r}: {err}") from err
    if len(frame) == 0:
        refuse_no_rows(frame, path, columns=read_frame_header(path))
    return frame


def match_label_value(frame: pd.DataFrame, label, value, *, what: str = "positive_class"):
    """The value of ``frame[label]`` written as ``value`` (a command line gives ``"1"`` for the integer 1).

    Parameters
    ----------
    frame : pandas.DataFrame
    label : hashable
        The label column.
    value : object
        The value as given (``"1"`` matches the integer 1).
    what : str, default="positive_class"
        The parameter's name, for the message.

    Returns
    -------
    object
        The frame's own value equal to ``value``, or equal to it as text.

    Raises
    ------
    DatasetError
        If ``label`` is not a column, or no value of it matches (the message lists some values).
    """
    if label not in frame.columns:
        raise DatasetError(f"label column {label!r} is not in the frame; columns: {', '.join(map(str, frame.columns))}")
    values = frame[label].dropna().unique().tolist()
    for v in values:
        if v == value and type(v) is type(value):
            return v
    matches = [v for v in values if str(v) == str(value)]
    if not matches:
        shown = ", ".join(map(repr, sorted(map(str, values))[:10]))
        raise DatasetError(f"{what} {value!r} does not occur in label column {label!r}; its values include {shown}")
    return matches[0]


def binary_positive_class(frame: pd.DataFrame, label):
    """The positive class of a label that holds only 0 and 1 (then 1); None when it cannot be told.

    Parameters
    ----------
    frame : pandas.DataFrame
    label : hashable
        The label column.

    Returns
    -------
    object or None
        1 (in the column's own type) when the label holds exactly 0 and 1, else None.
    """
    values = set(frame[label].dropna().unique().tolist())
    if values <= {0, 1} and 1 in values:
        return 1
    return None
