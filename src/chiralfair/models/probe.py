"""Before a search: does the model take the data, and which protected values does it accept.

A user's model speaks its own language (a raw-frame pipeline, a model file): :func:`wrap_model` wraps it in the
language of a dataset once, and the checks below send it a few rows before any expensive step, so that a model
fitted on other columns, or one whose encoder refuses a value, is told apart from a model that discriminates:
:func:`check_model_columns` compares column names, :func:`check_model_accepts_rows` sends five data rows,
:func:`restrict_to_accepted_values` probes one counterpart per protected value and leaves refused values out of
the protected domain, and :func:`check_model_accepts_values` probes every value of every other feature that a
generator may propose (one batch of ``sum(feature sizes)`` rows). Probes are batched (a refused row is found by
splitting a failing batch in halves, :meth:`~chiralfair.models.protocol.CountingModel.refused`) and not counted
in the search.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..exceptions import ConfigError, ModelCapabilityError, ModelInputError
from .adapters import as_model, rewrapped
from .protocol import in_domain_terms, with_column_named

if TYPE_CHECKING:
    from ..datasets.base import Dataset

logger = logging.getLogger(__name__)


# What ``model_input=`` (``--model-input``) takes: what the model under test is fed.
MODEL_INPUTS = ("auto", "frame", "codes", "values")


def wrap_model(obj, dataset, *, name: str | None = None, output: str | None = None, model_input: str = "auto"):
    """Wrap ``obj`` with :func:`~chiralfair.models.as_model` in the language of ``dataset``.

    What the model is fed is declared by ``model_input`` (:func:`resolve_model_input` holds the rule): a model fed
    a frame or values gets ``to_frame=dataset.to_frame`` (and ``as_values=True`` for values); a model with
    ``classes_`` gets ``positive_class=dataset.positive_class`` (the label value of the raw data, matched by its
    text against the classes).

    Parameters
    ----------
    obj : estimator, pipeline, torch module, callable or CountingModel
        A CountingModel keeps the language it was wrapped with (``model_input`` must then be ``"auto"``).
    dataset : Dataset
        The encoded data, whose ``to_frame`` and ``positive_class`` the wrapper takes.
    name : str, optional
        The model's name in reports.
    output : {"probability", "logit"}, optional
        For torch modules and one-column ONNX models.
    model_input : {"auto", "frame", "codes", "values"}, default="auto"
        As :func:`resolve_model_input`.

    Returns
    -------
    CountingModel

    Raises
    ------
    ConfigError
        For an unknown ``model_input``, ``"auto"`` when the model's input cannot be told, or ``"values"`` with a
        column that is not numeric (:func:`resolve_model_input`).
    """
    from .protocol import CountingModel

    if isinstance(obj, CountingModel) and model_input == "auto":
        return obj
    kind = resolve_model_input(obj, dataset, model_input, name=name)
    kwargs: dict[str, Any] = {"name": name}
    if output is not None:
        kwargs["output"] = output
    if kind in ("frame", "values"):
        kwargs["to_frame"] = dataset.to_frame
    if kind == "values":
        kwargs["as_values"] = True
    if getattr(obj, "classes_", None) is not None:
        kwargs["positive_class"] = dataset.positive_class
    return as_model(obj, **kwargs)


def resolve_model_input(obj, dataset, model_input: str = "auto", *, name: str | None = None) -> str:
    """What the model under test is fed, declared or told from the model and the data, never guessed.

    - ``"frame"``: a DataFrame of the data's columns (its values and dtypes), e.g. an sklearn pipeline fitted on
      the frame.
    - ``"values"``: the data's feature columns' raw values, in the frame's column order, as a float64 array (a
      torch module, a TorchScript or ONNX file, a callable, or an estimator fitted on a numpy array of the raw
      columns); every column must be numeric. The search's codes are sent as their decoded values (a bin's
      representative); the population as given. Where every column's codes are its values, the numbers sent
      are the codes, and the model is wrapped as taking them (keeping its gradient).
    - ``"codes"``: chiralfair's integer codes (``Dataset.X``), for a model trained on them.
    - ``"auto"``: ``"frame"`` for a model with string ``feature_names_in_`` (fitted on a frame); otherwise
      ``"codes"`` only where the data's codes are its values (the benchmarks, already encoded; a frame of integer
      or 0/1 columns); anything else is refused: a binned column, text or any other coding means codes and
      values differ, and which of them the model was trained on cannot be told from the model.

    Parameters
    ----------
    obj : object
        The model under test, unwrapped.
    dataset : Dataset
    model_input : {"auto", "frame", "codes", "values"}, default="auto"
    name : str, optional
        The model's name, for messages.

    Returns
    -------
    {"frame", "codes", "values"}

    Raises
    ------
    ConfigError
        For an unknown ``model_input``; for ``"auto"`` where it cannot be told (naming the columns whose codes
        differ from their values, ``model_input=`` with its choices and ``--model-input``); for ``"values"``
        with a column that is not numeric (naming the columns and ``model_input="frame"``).
    """
    if model_input not in MODEL_INPUTS:
        raise ConfigError(f"model_input must be one of {', '.join(map(repr, MODEL_INPUTS))} (--model-input), got "
                          f"{model_input!r}")
    if model_input == "values":
        _check_numeric_columns(dataset)
        return "values" if codes_differ_from_values(dataset) else "codes"
    if model_input != "auto":
        return model_input
    if _frame_feature_names(obj) is not None:
        return "frame"
    if _unnamed_frame_columns(dataset):
        raise ConfigError(
            f"cannot tell whether model {name!r} takes the data frame or integer codes: the frame's column names "
            f"are not all strings ({_unnamed_frame_columns(dataset)[:5]}), so scikit-learn recorded no "
            "feature_names_in_; pass model_input='frame' (fitted on the frame), model_input='values' (fitted on its "
            "numbers as an array) or model_input='codes', or give the columns string names")
    differ = codes_differ_from_values(dataset)
    if differ:
        shown = "; ".join(differ[:5]) + ("; ..." if len(differ) > 5 else "")
        raise ConfigError(
            f"cannot tell what model {name or type(obj).__name__!r} takes: it records no column names (a torch "
            "module, a TorchScript or ONNX file, a callable, an estimator fitted on a numpy array), and the data's "
            f"codes are not its values ({shown}), so feeding it codes would test it on inputs it was never trained "
            "on. Declare it with model_input= (--model-input on the command line): 'values' (trained on the raw "
            "numbers of the feature columns, in the data's column order), 'frame' (a DataFrame of the columns) or "
            "'codes' (trained on chiralfair's integer codes, Dataset.X)")
    return "codes"


def codes_differ_from_values(dataset) -> list[str]:
    """The feature columns whose codes are not their values, each with why (empty for data already encoded).

    Parameters
    ----------
    dataset : Dataset

    Returns
    -------
    list of str
        ``"age: 10 quantile bins, chosen automatically"``, ``"sex: text"``, ... (see
        :attr:`~chiralfair.datasets.codec.ColumnCodec.codes_are_values`).
    """
    if dataset.codec is None:
        return []
    why = {"bin": None, "rank": "integers beyond 2**53, coded by rank", "category": "categories coded 0, 1, ..."}
    out = []
    for column in dataset.codec.columns:
        if not column.codes_are_values:
            reason = (column.binning or "binned") if column.how == "bin" else why.get(column.how, column.how)
            if column.how == "category" and getattr(column.dtype, "kind", "O") not in "biuf":
                reason = f"not numeric ({column.dtype})"
            out.append(f"{column.name}: {reason}")
    return out


def _check_numeric_columns(dataset) -> None:
    """Refuse ``model_input="values"`` for data with a feature column that is not numeric, naming the columns."""
    if dataset.codec is None:
        return
    text = [str(c.name) for c in dataset.codec.columns if getattr(c.dtype, "kind", "O") not in "biuf"]
    if text:
        raise ConfigError(f"model_input='values' sends the feature columns' values as numbers, but columns {text} "
                          "are not numeric: a model that takes them was fitted on the frame itself (pass "
                          "model_input='frame', --model-input frame) or on chiralfair's codes (model_input='codes')")


def _unnamed_frame_columns(dataset) -> list:
    """Column names of a raw-frame dataset that are not strings (empty for a dataset without a codec)."""
    if dataset.codec is None:
        return []
    return [c for c in dataset.codec.names if not isinstance(c, str)]


def _frame_feature_names(obj) -> list[str] | None:
    names = getattr(obj, "feature_names_in_", None)
    if names is None or not all(isinstance(n, str) for n in names):
        return None
    return list(names)


def _data_columns(dataset) -> list[str]:
    return [str(c) for c in (dataset.codec.names if dataset.codec is not None else dataset.domain.names)]


def check_model_columns(model, dataset) -> list[str]:
    """Refuse before the search a model that was trained on other columns than the data holds.

    A model with named inputs (``feature_names_in_``) must find each of them among the data's columns; a
    protected attribute it does not take is returned as a note (it cannot have IDIs on it); a model without names
    must take as many features as the data has.

    Parameters
    ----------
    model : CountingModel
    dataset : Dataset

    Returns
    -------
    list of str
        Notes for the result.

    Raises
    ------
    ModelCapabilityError
        Naming both column lists.
    """
    est = model.estimator
    data_columns = _data_columns(dataset)
    names = _frame_feature_names(est)
    if names is not None:
        missing = [n for n in names if n not in data_columns]
        if missing:
            raise ModelCapabilityError(
                f"model {model.name!r} was trained on columns the data does not have: {', '.join(missing)}. "
                f"Model columns: {', '.join(names)}; data columns: {', '.join(data_columns)}")
        unused = [a.name for a in dataset.domain.attributes
                  if not any(str(dataset.domain.features[c].name) in names for c in a.columns)]
        if unused:
            note = (f"model {model.name!r} does not take protected attribute(s) {', '.join(map(str, unused))} as "
                    "input: no counterpart can change its label on them, so it has no IDIs for them (it may still "
                    "use proxies of them, which individual fairness testing does not see)")
            logger.warning(note)
            return [note]
    else:
        n_in = getattr(est, "n_features_in_", None)
        if n_in is not None and int(n_in) != dataset.domain.n_features:
            raise ModelCapabilityError(
                f"model {model.name!r} takes {int(n_in)} features but the data has {dataset.domain.n_features}: "
                f"{', '.join(data_columns)}. Fit the model on these columns (in this order), or on a DataFrame so "
                "that its columns are matched by name")
    return []


def check_model_accepts_rows(model, dataset) -> None:
    """Send the first five data rows to the model; refuse before the search if it fails on them.

    Parameters
    ----------
    model : CountingModel
    dataset : Dataset

    Raises
    ------
    ModelCapabilityError
        Quoting the model's own error, with the model's and the data's columns.
    """
    names = _frame_feature_names(model.estimator)
    data_columns = _data_columns(dataset)
    try:
        model.predict(dataset.X[:5])
        if model.reads_people and dataset.raw is not None:  # the rows as given, which F1 and the verdict are on
            model.predict(dataset.raw.iloc[:5])
    except Exception as err:
        if isinstance(err, ModelInputError):
            raise in_domain_terms(err, dataset.domain) from err
        if isinstance(err, ModelCapabilityError):
            raise
        raise ModelCapabilityError(
            f"model {model.name!r} fails on the first data rows: {type(err).__name__}: {err}. Model columns: "
            f"{', '.join(names) if names else '(unnamed)'}; data columns: {', '.join(data_columns)}") from err
    finally:
        model.reset_queries()


def binning_agreement(model, dataset, rows=None) -> dict | None:
    """How much the search's bins change the model's answers: its label on each row as given against on its codes.

    A model fed frames answers the search at each bin's representative value; this says on how many data rows
    that answer differs from the one it gives the row itself (its own values). Costs ``2 n_rows`` model queries,
    not counted (the counters are reset).

    Parameters
    ----------
    model : CountingModel
    dataset : Dataset
    rows : array-like of int, optional
        Row numbers (default: every row).

    Returns
    -------
    dict or None
        ``{"n_rows", "n_differ", "share", "binned"}`` (``binned``: the binned columns and how their bins were
        chosen); None when the model takes codes, the dataset has no raw rows or no column is binned.
    """
    if not model.reads_people or dataset.raw is None or dataset.codec is None or not dataset.codec.binned:
        return None
    index = np.arange(dataset.n_samples) if rows is None else np.asarray(rows, dtype=np.int64)
    try:
        as_given = model.predict(dataset.raw.iloc[index])
        as_searched = model.predict(dataset.X[index])
    finally:
        model.reset_queries()
    n_differ = int((as_given != as_searched).sum())
    return {"n_rows": int(len(index)), "n_differ": n_differ, "share": n_differ / max(len(index), 1),
            "binned": dataset.codec.binned}


def binning_note(agreement: dict) -> str:
    """The sentence that says how much the search's bins change the model's answers (:func:`binning_agreement`).

    Parameters
    ----------
    agreement : dict

    Returns
    -------
    str
    """
    binned = "; ".join(f"{c}: {how}" for c, how in agreement["binned"].items())
    return (f"the search sees {binned}: the model's label differs on {agreement['share']:.1%} of the "
            f"{agreement['n_rows']:,} data rows ({agreement['n_differ']:,}) between their own values and their bins' "
            "representatives; F1, the verdict and the group metrics are computed on the rows as given")


# Data rows tried for a row the model accepts, the row every probe varies.
BASE_ROWS = 64


def accepted_data_row(model, dataset) -> np.ndarray:
    """The first data row (of the first :data:`BASE_ROWS`, missing protected values aside) that the model accepts.

    Parameters
    ----------
    model : CountingModel
    dataset : Dataset

    Returns
    -------
    numpy.ndarray of int64, shape (n_features,)

    Raises
    ------
    ModelCapabilityError
        If the model fails on every one of them, quoting its error and both column lists.
    """
    rows = dataset.X[~dataset.missing_protected][:BASE_ROWS]
    if not len(rows):
        rows = dataset.X[:BASE_ROWS]
    error = None
    for row in rows:  # one row per call: the first accepted row usually comes within a few calls
        refused, first = model.refused(row[None, :])
        if not refused[0]:
            return row
        error = error or first
    hint = _category_dtype_hint(model, dataset)
    if hint:
        raise ModelCapabilityError(f"{hint}. The model's own error: {error}")
    names = _frame_feature_names(model.estimator)
    data_columns = _data_columns(dataset)
    columns = (f"Model and data columns are the same: {', '.join(data_columns)}" if names == data_columns else
               f"Model columns: {', '.join(names) if names else '(unnamed)'}; data columns: {', '.join(data_columns)}")
    raise ModelCapabilityError(
        f"model {model.name!r} fails on each of the first {len(rows)} data rows: {error}. {columns}")


def _category_dtype_hint(model, dataset) -> str | None:
    """Why an XGBoost model fitted on pandas category columns fails on these rows: they are not categories.

    XGBoost fitted with ``enable_categorical=True`` marks those columns ``"c"`` in its booster's ``feature_types``
    and refuses a frame whose columns hold text instead; a CSV cannot carry the dtype, so the data must say it.
    """
    estimator = model.estimator
    get_booster = getattr(estimator, "get_booster", None)
    if get_booster is None or not type(estimator).__module__.startswith("xgboost"):
        return None
    try:
        booster = get_booster()
        types, names = list(booster.feature_types or []), list(booster.feature_names or [])
    except Exception:  # an unfitted model, a booster without names: no hint, the model's error is shown
        return None
    import pandas as pd

    raw = getattr(dataset, "raw", None)
    if raw is None or len(types) != len(names):
        return None
    wanted = [n for n, t in zip(names, types, strict=True) if t == "c"]
    not_category = [n for n in wanted if n in raw.columns and not isinstance(raw[n].dtype, pd.CategoricalDtype)]
    if not not_category:
        return None
    shown = ", ".join(map(repr, not_category))
    return (f"model {model.name!r} is an XGBoost model fitted on pandas category columns, and {shown} reach it as "
            f"{raw[not_category[0]].dtype} (a CSV file holds text: it cannot carry a category dtype). Give the "
            "columns their category dtype: data in a Parquet file written from frames with those dtypes "
            "(df.to_parquet(...), then --data/--test FILE.parquet), or a schema declaring them (--schema FILE.toml "
            "from 'chiralfair schema infer', with type = \"category\" and the categories in the order the model was "
            "fitted with, in each of those columns' tables); in Python, pass frames with those category dtypes")


def restrict_to_accepted_values(model, dataset) -> tuple[Dataset, list[str], np.ndarray | None]:
    """Probe the model with one counterpart per protected value; leave out the values it refuses.

    A data row the model accepts (:func:`accepted_data_row`) gets each value of each protected attribute in turn,
    one batch per protected column (:meth:`~chiralfair.models.protocol.CountingModel.refused` splits a failing
    batch to find the refused values): ``sum(domain sizes)`` rows, not counted in the search.

    Parameters
    ----------
    model : CountingModel
    dataset : Dataset

    Returns
    -------
    dataset : Dataset
        With the refused values out of each protected domain, and the data rows holding them left out.
    notes : list of str
        One per protected attribute with refused values: the values and the model's error.
    keep : numpy.ndarray of bool, shape (n_samples,), or None
        The rows of ``dataset`` that are kept; None when every value is accepted (nothing left out).

    Raises
    ------
    ModelCapabilityError
        If fewer than two values of a protected attribute are accepted, or the model accepts no data row.
    """
    domain = dataset.domain
    row = accepted_data_row(model, dataset)
    accepted: dict[str, list[int]] = {}
    notes = []
    keep = np.ones(dataset.n_samples, dtype=bool)
    for col, values in zip(domain.protected, domain.protected_values, strict=True):
        feature = domain.features[col]
        probes = np.repeat(row[None, :], len(values), axis=0)
        probes[:, col] = values
        no, error = model.refused(probes)  # one batch per protected column, its error quoted for it
        ok = [v for v, refused_value in zip(values, no, strict=True) if not refused_value]
        refused = [feature.label(v) for v, refused_value in zip(values, no, strict=True) if refused_value]
        if refused:
            labels = ", ".join(map(repr, refused))
            named = with_column_named(error or "", feature.name)
            if len(ok) < 2:
                model.reset_queries()
                raise ModelCapabilityError(
                    f"model {model.name!r} refuses protected attribute {feature.name!r} values {labels} "
                    f"({named}); fewer than two values are left to test")
            accepted[feature.name] = ok
            keep &= np.isin(dataset.X[:, col], ok)
            notes.append(f"model {model.name!r} refuses {feature.name}={labels} "
                         f"({named}): left out of the protected domain, and "
                         f"{int((~np.isin(dataset.X[:, col], ok)).sum())} data rows holding it left out (of the "
                         "seeds and of the verdict's population: the model cannot decide on them)")
    model.reset_queries()
    if not accepted:
        return dataset, notes, None
    kept = dataset.rows(keep)
    values = {n: accepted.get(n, list(v)) for n, v in zip(domain.protected_names, domain.protected_values,
                                                          strict=True)}
    return replace(kept, domain=domain.with_protected(domain.protected_declaration, values=values)), notes, keep


# A feature with at most this many codes has every code probed; a wider one (an integer column such as fnlwgt,
# 12,285..1,484,705) has every value the data holds probed, and this many of the codes between them.
MAX_PROBED_CODES = 4096
PROBED_GAP_CODES = 1024


def _probed_codes(feature, column: np.ndarray) -> np.ndarray:
    """The codes of one feature that :func:`check_model_accepts_values` sends (sorted, unique)."""
    if feature.size <= MAX_PROBED_CODES:
        return np.arange(feature.lo, feature.hi + 1)
    spread = np.unique(np.linspace(feature.lo, feature.hi, PROBED_GAP_CODES).round().astype(np.int64))
    return np.union1d(np.unique(column), spread)


def check_model_accepts_values(model, dataset, *, where=None):
    """Probe every value a generator may give a non-protected feature; refuse, or keep to the values the data holds.

    A data row the model accepts (:func:`accepted_data_row`) gets, one feature at a time, every code in that
    feature's bounds: one batch of ``sum(feature sizes)`` rows (not counted in the search). A feature with more
    than :data:`MAX_PROBED_CODES` codes (a wide integer column) gets every value the data holds and
    :data:`PROBED_GAP_CODES` codes spread between them: every value of the data is still checked, and a refused gap
    re-encodes the column, after which only checked values remain. A refused value is:

    - **held by the data** (a category the model never saw when fitted, e.g. ``workclass='Never-worked'`` and an
      ``OneHotEncoder(handle_unknown='error')``): refused, naming the column, the values and their data rows;
    - **not held by the data**, in an integer column of a dataset from :func:`~chiralfair.datasets.from_frame`
      fed to a model that takes the frame (codes 1, 3, ..., 15 one-hot encoded: a generator steps to 2): the
      column is re-encoded to take only the values the data holds
      (:meth:`~chiralfair.datasets.Dataset.with_observed_values_only`), so no generator proposes another, with
      a note; the model is fed the same frame;
    - otherwise (a model taking codes, whose inputs cannot be re-encoded): refused, naming the codes.

    Parameters
    ----------
    model : CountingModel
    dataset : Dataset
    where : callable, optional
        ``where(position) -> str``: the data row at ``position`` in words, in its own file or frame (``data row 3
        (line 4) of data file 'train.csv'``); the refusal names the first row holding each refused value with it.

    Returns
    -------
    model : CountingModel
        ``model``, or, when columns were re-encoded, the same model wrapped again to decode the new codes.
    dataset : Dataset
        ``dataset``, or a copy with re-encoded columns.
    notes : list of str
        One per re-encoded column.

    Raises
    ------
    ModelInputError
        Naming each column and its refused values, the model's error, and what to do.
    ModelCapabilityError
        If the model accepts no data row.
    """
    domain = dataset.domain
    columns = [int(j) for j in domain.non_protected]
    if not columns:
        return model, dataset, []
    row = accepted_data_row(model, dataset)
    probed = [_probed_codes(domain.features[j], dataset.X[:, j]) for j in columns]
    feature_of = np.concatenate([np.full(len(c), j) for j, c in zip(columns, probed, strict=True)])
    codes = np.concatenate(probed)
    probes = np.repeat(row[None, :], len(codes), axis=0)
    probes[np.arange(len(codes)), feature_of] = codes
    refused, error = model.refused(probes)
    model.reset_queries()
    if not refused.any():
        return model, dataset, []
    held, gaps = [], {}
    for j in columns:
        values = codes[refused & (feature_of == j)]
        if not len(values):
            continue
        in_data = np.isin(values, dataset.X[:, j])
        held += [(j, int(v), int((dataset.X[:, j] == v).sum())) for v in values[in_data]]
        if (~in_data).any():
            gaps[j] = values[~in_data].tolist()
    if held:
        names = {domain.features[j].name for j, _, _ in held}
        error = with_column_named(error or "", names.pop() if len(names) == 1 else None)
        def first(j: int, v: int) -> str:
            return "" if where is None else f", the first at {where(int(np.argmax(dataset.X[:, j] == v)))}"

        shown = "; ".join(f"{domain.features[j].name}={domain.features[j].label(v)!r} ({n:,} data "
                          f"row{'s' if n != 1 else ''}{first(j, v)})" for j, v, n in held)
        raise ModelInputError(
            f"model {model.name!r} refuses values that the data holds in non-protected columns: {shown} ({error}). "
            "It most likely never saw them when it was fitted (e.g. an encoder with handle_unknown='error'); a "
            "search would send such inputs and fail, and those data rows cannot be decided. Leave those rows out "
            "of the data, or refit the model so that it accepts them (e.g. OneHotEncoder(handle_unknown='ignore'))",
            model_name=model.name, column=held[0][0], code=held[0][1], model_error=error or "")
    from ..datasets.base import columns_in_rules

    in_rules = columns_in_rules(domain)
    recodable = {j for j in gaps if dataset.codec is not None and model.reads_people
                 and dataset.codec.columns[j].how == "integer" and j not in in_rules}
    if set(gaps) - recodable:
        names = {domain.features[j].name for j in set(gaps) - recodable}
        error = with_column_named(error or "", names.pop() if len(names) == 1 else None)
        shown = "; ".join(f"{domain.features[j].name}: codes {v[:10]}{' ...' if len(v) > 10 else ''} inside its "
                          f"bounds [{domain.features[j].lo}, {domain.features[j].hi}]"
                          for j, v in gaps.items() if j not in recodable)
        raise ModelInputError(
            f"model {model.name!r} refuses values that no data row holds but a generator may propose: {shown} "
            f"({error}). Encode those columns so that every code in their bounds is a value the model knows "
            "(for a frame: make the column categorical, df[col] = df[col].astype('category'), so that only the "
            "values it holds become codes)", model_name=model.name, model_error=error or "")
    recoded_names = [domain.features[j].name for j in sorted(recodable)]
    error = with_column_named(error or "", recoded_names[0] if len(recoded_names) == 1 else None)
    notes = [f"model {model.name!r} refuses values of {name!r} between the values the data holds (e.g. "
             f"{domain.features[j].label(gaps[j][0])}; {error}): {name!r} now takes only its "
             f"{len(np.unique(dataset.X[:, j]))} values in the data, so no generator proposes another"
             for name, j in zip(recoded_names, sorted(recodable), strict=True)]
    for note in notes:
        logger.warning(note)
    recoded = dataset.with_observed_values_only(recoded_names)
    return rewrapped(model, to_frame=recoded.to_frame), recoded, notes
