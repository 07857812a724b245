"""Before a search: does the model take the data, and which protected values does it accept.

A user's model speaks its own language (a raw-frame pipeline, a model file): :func:`wrap_model` wraps it in the
language of a dataset once, and the checks below send it a few rows before any expensive step, so that a model
fitted on other columns, or one whose encoder refuses a protected value, is told apart from a model that
discriminates: :func:`check_model_columns` compares column names, :func:`check_model_accepts_rows` sends five
data rows, and :func:`restrict_to_accepted_values` probes one counterpart per protected value (``sum(domain
sizes)`` queries, not counted in the search) and leaves refused values out of the protected domain.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import numpy as np

from ..exceptions import ConfigError, ModelCapabilityError
from .adapters import as_model

logger = logging.getLogger(__name__)


def wrap_model(obj, dataset, *, name: str | None = None, output: str | None = None, model_input: str = "auto"):
    """Wrap ``obj`` with :func:`~chiralfair.models.as_model` in the language of ``dataset``.

    An estimator fitted on a DataFrame (string ``feature_names_in_``), or any model with ``model_input="frame"``,
    gets ``to_frame=dataset.to_frame``; a model with ``classes_`` gets ``positive_class=dataset.positive_class``
    (the label value of the raw data, matched by its text against the classes).

    Returns
    -------
    CountingModel

    Raises
    ------
    ConfigError
        For an unknown ``model_input``, or ``"auto"`` when the model's input cannot be told (see :func:`audit`).
    """
    if model_input not in ("auto", "frame", "codes"):
        raise ConfigError(f"model_input must be 'auto', 'frame' or 'codes', got {model_input!r}")
    kwargs: dict[str, Any] = {"name": name}
    if output is not None:
        kwargs["output"] = output
    if model_input == "auto" and _frame_feature_names(obj) is None and _unnamed_frame_columns(dataset):
        raise ConfigError(
            f"cannot tell whether model {name!r} takes the data frame or integer codes: the frame's column names "
            f"are not all strings ({_unnamed_frame_columns(dataset)[:5]}), so scikit-learn recorded no "
            "feature_names_in_; pass model_input='frame' (fitted on the frame) or model_input='codes', or give the "
            "columns string names")
    if model_input == "frame" or (model_input == "auto" and _frame_feature_names(obj) is not None):
        kwargs["to_frame"] = dataset.to_frame
    if getattr(obj, "classes_", None) is not None:
        kwargs["positive_class"] = dataset.positive_class
    return as_model(obj, **kwargs)


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

    Raises
    ------
    ModelCapabilityError
        Quoting the model's own error, with the model's and the data's columns.
    """
    names = _frame_feature_names(model.estimator)
    data_columns = _data_columns(dataset)
    try:
        model.predict(dataset.X[:5])
    except Exception as err:
        if isinstance(err, ModelCapabilityError):
            raise
        raise ModelCapabilityError(
            f"model {model.name!r} fails on the first data rows: {type(err).__name__}: {err}. Model columns: "
            f"{', '.join(names) if names else '(unnamed)'}; data columns: {', '.join(data_columns)}") from err
    finally:
        model.reset_queries()


def restrict_to_accepted_values(model, dataset):
    """Probe the model with one counterpart per protected value; leave out the values it refuses.

    One data row gets each value of each protected attribute in turn (one row per call, so a refused value
    is told apart from the others): ``sum(domain sizes)`` queries, not counted in the search.

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
        If fewer than two values of a protected attribute are accepted.
    """
    domain = dataset.domain
    row = dataset.X[0]
    accepted: dict[str, list[int]] = {}
    notes = []
    keep = np.ones(dataset.n_samples, dtype=bool)
    for col, values in zip(domain.protected, domain.protected_values, strict=True):
        feature = domain.features[col]
        ok, refused = [], {}
        for v in values:
            probe = row.copy()
            probe[col] = v
            try:
                model.predict(probe[None, :])
                ok.append(v)
            except Exception as err:  # the model's own error (e.g. sklearn's "Found unknown categories")
                refused[feature.label(v)] = f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
        if refused:
            labels = ", ".join(map(repr, refused))
            if len(ok) < 2:
                model.reset_queries()
                raise ModelCapabilityError(
                    f"model {model.name!r} refuses protected attribute {feature.name!r} values {labels} "
                    f"({next(iter(refused.values()))}); fewer than two values are left to test")
            accepted[feature.name] = ok
            keep &= np.isin(dataset.X[:, col], ok)
            notes.append(f"model {model.name!r} refuses {feature.name}={labels} "
                         f"({next(iter(refused.values()))}): left out of the protected domain, and "
                         f"{int((~np.isin(dataset.X[:, col], ok)).sum())} data rows holding it left out (of the "
                         "seeds and of the verdict's population: the model cannot decide on them)")
    model.reset_queries()
    if not accepted:
        return dataset, notes, None
    kept = replace(dataset, X=dataset.X[keep], y=dataset.y[keep])
    values = {n: accepted.get(n, list(v)) for n, v in zip(domain.protected_names, domain.protected_values,
                                                          strict=True)}
    return replace(kept, domain=domain.with_protected(domain.protected_names, values=values)), notes, keep
