"""Blinding the protected side of an input, as plain data a saved model carries (method ``unaware``).

Blinding sets the protected attributes to their first combination of values and moves each coupled column with
them, exactly as :meth:`Domain.counterpart_rows <chiralfair.domain.Domain.counterpart_rows>` does at combination 0
(census: a man who is a husband reads as a woman who is a wife; a wife stays one). An input and each of its
counterparts blind to one input, so a model fed blinded inputs gives them one label.

A fitted ``unaware`` model is kept with its blinding, so that it predicts on its own and loads back from its file:
the blinding is a dict of lists and numbers (:func:`codes_blinding` for a model on the integer codes,
:func:`frame_blinding` for one on a DataFrame of your raw columns), held by a :class:`Blinder`, the first step of a
scikit-learn Pipeline whose second step is your estimator refitted on blinded inputs (:func:`blinded_pipeline`;
skops saves it and :func:`chiralfair.models.files.load_model_file` loads it) or, for a torch network,
:class:`~chiralfair.mitigation.blinded_network.BlindedNetwork` (TorchScript). :class:`BlindedClassifier`, the
meta-estimator earlier versions saved, still loads.

References
----------
.. [1] Dwork, Hardt, Pitassi, Reingold, Zemel. "Fairness Through Awareness." ITCS 2012.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, TransformerMixin
from sklearn.utils.metaestimators import available_if

from ..exceptions import ConfigError


def codes_blinding(domain) -> dict[str, Any]:
    """The blinding of ``domain``'s protected side on integer codes, as plain data.

    Parameters
    ----------
    domain : Domain
        With its protected attributes (and couplings) set.

    Returns
    -------
    dict
        ``kind`` ("codes"), ``columns`` (protected column indices), ``values`` (their codes at the first
        combination) and ``couplings``: one dict per coupled column with ``attribute_columns``,
        ``attribute_values`` (the attribute's values, one list per value), ``column``, ``lo`` and ``table``
        (``table[v][code - lo]``: the column's blinded code for an input at the attribute's ``v``-th value).
    """
    couplings = []
    for attribute, column in _coupled(domain):
        values = attribute.value_array()
        feature = domain.features[column]
        codes = np.arange(feature.lo, feature.hi + 1, dtype=np.int64)
        rows = np.tile(domain.lower, (len(values) * len(codes), 1))
        rows[:, list(attribute.columns)] = np.repeat(values, len(codes), axis=0)
        rows[:, column] = np.tile(codes, len(values))
        blinded = domain.counterpart_rows(rows, np.zeros(len(rows), dtype=np.int64))[:, column]
        couplings.append({"attribute_columns": [int(c) for c in attribute.columns],
                          "attribute_values": values.tolist(), "column": int(column), "lo": int(feature.lo),
                          "table": blinded.reshape(len(values), len(codes)).tolist()})
    return {"kind": "codes", "columns": [int(c) for c in domain.protected],
            "values": [int(v) for v in domain.combinations[0]], "couplings": couplings}


def frame_blinding(domain, to_frame, columns=None) -> dict[str, Any]:
    """The same blinding in the raw values of a model that takes a DataFrame (``to_frame`` decodes codes).

    Parameters
    ----------
    domain : Domain
    to_frame : callable
        ``to_frame(codes) -> pandas.DataFrame`` with the model's columns (its language).
    columns : sequence of str, optional
        The columns the model takes (``feature_names_in_``); a protected or coupled column it does not take is
        left out.

    Returns
    -------
    dict
        ``kind`` ("frame"), ``columns`` (protected column names), ``values`` (their raw values at the first
        combination) and ``couplings``: per coupled column ``attribute_columns`` (names), ``attribute_values``
        (raw values, one list per value), ``column`` and, per attribute value, ``from`` / ``to`` (the column's raw
        values and their blinded raw values).

    Raises
    ------
    ConfigError
        When a coupled attribute's protected column is not categorical: its raw values (a binned number) are not
        the decoded bin values, so the coupled column cannot be moved by them.
    """
    blinding = codes_blinding(domain)
    taken = None if columns is None else {str(c) for c in columns}
    names = domain.names

    def raw(codes: np.ndarray, column: int) -> list:
        rows = np.tile(domain.lower, (len(codes), 1))
        rows[:, column] = codes
        return [_plain(v) for v in to_frame(rows)[names[column]].tolist()]

    keep = [(c, v) for c, v in zip(blinding["columns"], blinding["values"], strict=True)
            if taken is None or names[c] in taken]
    couplings = []
    for coupling in blinding["couplings"]:
        column = coupling["column"]
        if taken is not None and names[column] not in taken:
            continue
        for c in coupling["attribute_columns"]:
            if domain.features[c].kind != "categorical":
                raise ConfigError(f"unaware: column {names[c]!r} is coupled to {names[column]!r} but is a binned "
                                  "number, so your model's raw values cannot be blinded by its bins; declare it "
                                  "categorical or drop the coupling")
        codes = np.arange(coupling["lo"], coupling["lo"] + len(coupling["table"][0]), dtype=np.int64)
        source = raw(codes, column)
        attribute_values = [[raw(np.array([value[i]]), c)[0] for i, c in enumerate(coupling["attribute_columns"])]
                            for value in coupling["attribute_values"]]
        couplings.append({"attribute_columns": [names[c] for c in coupling["attribute_columns"]],
                          "attribute_values": attribute_values, "column": names[column],
                          "from": [source] * len(attribute_values),
                          "to": [raw(np.asarray(row, dtype=np.int64), column) for row in coupling["table"]]})
    return {"kind": "frame", "columns": [names[c] for c, _ in keep],
            "values": [raw(np.array([v]), c)[0] for c, v in keep], "couplings": couplings}


def blind(X, blinding: dict[str, Any]):
    """``X`` blinded: the protected columns at their first combination, each coupled column moved with them.

    Parameters
    ----------
    X : numpy.ndarray of int, shape (n_samples, n_features), or pandas.DataFrame
        Codes (``kind == "codes"``) or the model's raw frame (``kind == "frame"``).
    blinding : dict
        :func:`codes_blinding` or :func:`frame_blinding`.

    Returns
    -------
    numpy.ndarray of int64 or pandas.DataFrame
        A new array or frame; ``X`` is unchanged.
    """
    if blinding["kind"] == "frame":
        return _blind_frame(X, blinding)
    X = np.asarray(X, dtype=np.int64)
    out = X.copy()
    for c in blinding["couplings"]:
        position = _position(X[:, c["attribute_columns"]], np.asarray(c["attribute_values"], dtype=np.int64))
        table = np.asarray(c["table"], dtype=np.int64)
        code = np.clip(X[:, c["column"]] - c["lo"], 0, table.shape[1] - 1)
        out[:, c["column"]] = table[position, code]
    out[:, blinding["columns"]] = np.asarray(blinding["values"], dtype=np.int64)
    return out


def _blind_frame(frame, blinding: dict[str, Any]):
    import pandas as pd

    out = frame.copy()
    for c in blinding["couplings"]:
        column = c["column"]
        at = np.zeros(len(frame), dtype=np.int64)  # an unknown protected value reads as the first (as in codes)
        for v, value in enumerate(c["attribute_values"]):
            hit = np.ones(len(frame), dtype=bool)
            for name, raw in zip(c["attribute_columns"], value, strict=True):
                hit &= (frame[name] == raw).to_numpy()
            at[hit] = v
        moved = frame[column].copy()
        for v in np.unique(at):
            rows = at == v
            mapping = dict(zip(c["from"][v], c["to"][v], strict=True))
            moved.loc[rows] = frame[column][rows].map(lambda x, m=mapping: m.get(x, x)).to_numpy()
        out[column] = moved
    for name, value in zip(blinding["columns"], blinding["values"], strict=True):
        dtype = frame[name].dtype
        # a native categorical stays one (a model fitted on pandas categoricals reads them by their dtype)
        out[name] = (pd.Series(value, index=out.index, dtype=dtype) if isinstance(dtype, pd.CategoricalDtype)
                     else value)
    return out


def _position(block: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Index of each row of ``block`` among ``values`` (rows), 0 where it is none of them."""
    match = (block[:, None, :] == values[None, :, :]).all(axis=2)
    return np.where(match.any(axis=1), match.argmax(axis=1), 0)


def _coupled(domain):
    """(attribute, column) of each active coupling."""
    active = set(domain.coupled_columns)
    by_name = {a.name: a for a in domain.attributes}
    out = []
    for coupling in domain.couplings:
        column = domain.index(coupling.column)
        if column in active and coupling.attribute in by_name:
            out.append((by_name[coupling.attribute], column))
    return out


def _plain(value):
    """A numpy scalar as the Python value it holds (skops stores plain values without trusting numpy types)."""
    return value.item() if isinstance(value, np.generic) else value


class BlindedClassifier(MetaEstimatorMixin, ClassifierMixin, BaseEstimator):
    """A classifier fed blinded inputs: the saved form of an ``unaware`` model.

    Holds the fitted estimator and the ``blinding`` (lists and numbers) only, so skops saves it and
    :func:`chiralfair.models.files.load_model_file` loads it (chiralfair trusts this one type of its own; with
    ``skops.io.load`` pass ``trusted=["chiralfair.mitigation.blinding.BlindedClassifier"]`` besides the
    estimator's own types).

    Parameters
    ----------
    estimator : sklearn classifier
        Cloned and fitted on blinded inputs by :meth:`fit`; :meth:`of` wraps one already fitted on them.
    blinding : dict
        :func:`codes_blinding` (the input is codes) or :func:`frame_blinding` (a DataFrame of raw columns).

    Attributes
    ----------
    estimator_ : the fitted classifier (it takes blinded inputs)
    classes_ : numpy.ndarray
        Its classes.
    """

    def __init__(self, estimator=None, blinding=None):
        self.estimator = estimator
        self.blinding = blinding

    @classmethod
    def of(cls, fitted, blinding: dict[str, Any]) -> BlindedClassifier:
        """Wrap a classifier already fitted on blinded inputs.

        Parameters
        ----------
        fitted : fitted sklearn classifier
        blinding : dict

        Returns
        -------
        BlindedClassifier
            Fitted.
        """
        out = cls(estimator=fitted, blinding=blinding)
        out._fitted(fitted)
        return out

    def fit(self, X, y, **fit_params) -> BlindedClassifier:
        """Fit a clone of ``estimator`` on the blinded ``X``.

        Parameters
        ----------
        X : array-like of int (n_samples, n_features), or pandas.DataFrame
        y : array-like, shape (n_samples,)
        **fit_params
            Passed to the estimator's ``fit`` (e.g. ``sample_weight``).

        Returns
        -------
        BlindedClassifier
            ``self``, fitted.
        """
        from sklearn.base import clone

        self._fitted(clone(self.estimator).fit(blind(X, self._blinding()), y, **fit_params))
        return self

    def predict(self, X):
        """Labels of the blinded inputs, shape (n_samples,).

        Parameters
        ----------
        X : array-like of int (n_samples, n_features), or pandas.DataFrame

        Returns
        -------
        numpy.ndarray, shape (n_samples,)
        """
        return self.estimator_.predict(blind(X, self._blinding()))

    @available_if(lambda self: hasattr(self.estimator_ if hasattr(self, "estimator_") else self.estimator,
                                       "predict_proba"))
    def predict_proba(self, X):
        """Class probabilities of the blinded inputs, shape (n_samples, n_classes).

        Parameters
        ----------
        X : array-like of int (n_samples, n_features), or pandas.DataFrame

        Returns
        -------
        numpy.ndarray, shape (n_samples, n_classes)
        """
        return self.estimator_.predict_proba(blind(X, self._blinding()))

    def _fitted(self, fitted) -> None:
        self.estimator_ = fitted
        self.classes_ = fitted.classes_
        for name in ("feature_names_in_", "n_features_in_"):
            if hasattr(fitted, name):
                setattr(self, name, getattr(fitted, name))

    def _blinding(self) -> dict[str, Any]:
        if not isinstance(self.blinding, dict) or "kind" not in self.blinding:
            raise ConfigError("BlindedClassifier needs blinding=<codes_blinding(domain) or frame_blinding(...)>")
        return self.blinding


class Blinder(TransformerMixin, BaseEstimator):
    """The blinding of an ``unaware`` model as a Pipeline step: inputs in, the same inputs blinded out.

    Stateless: it holds the ``blinding`` (lists and numbers) only, so a Pipeline of it and a fitted estimator is
    saved by skops and loaded by :func:`chiralfair.models.files.load_model_file` (chiralfair trusts this type of its
    own; with ``skops.io.load`` pass ``trusted=["chiralfair.mitigation.blinding.Blinder"]`` besides the
    estimator's own types).

    Parameters
    ----------
    blinding : dict
        :func:`codes_blinding` (the input is codes) or :func:`frame_blinding` (a DataFrame of raw columns).

    Examples
    --------
    >>> import pandas as pd
    >>> from chiralfair.mitigation.blinding import Blinder
    >>> blinding = {"kind": "frame", "columns": ["sex"], "values": ["f"], "couplings": []}
    >>> Blinder(blinding).fit_transform(pd.DataFrame({"sex": ["m", "f"], "hours": [40, 30]}))["sex"].tolist()
    ['f', 'f']
    """

    def __init__(self, blinding=None):
        self.blinding = blinding

    def fit(self, X, y=None) -> Blinder:
        """Record the input's width (and its column names, for a DataFrame); nothing is learnt.

        Parameters
        ----------
        X : array-like of int (n_samples, n_features), or pandas.DataFrame
        y : ignored

        Returns
        -------
        Blinder
            ``self``.

        Raises
        ------
        ConfigError
            When ``blinding`` is not one of :func:`codes_blinding` or :func:`frame_blinding`.
        """
        _checked(self.blinding)
        self.n_features_in_ = int(np.shape(X)[1])
        columns = getattr(X, "columns", None)
        if columns is not None:
            self.feature_names_in_ = np.asarray([str(c) for c in columns], dtype=object)
        return self

    def transform(self, X):
        """``X`` blinded (a new array or frame; ``X`` is unchanged).

        Parameters
        ----------
        X : array-like of int (n_samples, n_features), or pandas.DataFrame

        Returns
        -------
        numpy.ndarray of int64 or pandas.DataFrame
        """
        return blind(X, _checked(self.blinding))

    def __sklearn_is_fitted__(self) -> bool:
        return True  # stateless: the blinding is all it needs


def blinded_pipeline(fitted, blinding: dict[str, Any]):
    """``fitted`` (an estimator fitted on blinded inputs) behind a :class:`Blinder`, as a scikit-learn Pipeline.

    Parameters
    ----------
    fitted : fitted sklearn classifier or Pipeline
        Fitted on inputs blinded by ``blinding``; kept as the step ``"model"`` (a Pipeline stays one, inside).
    blinding : dict
        :func:`codes_blinding` or :func:`frame_blinding`.

    Returns
    -------
    sklearn.pipeline.Pipeline
        Steps ``("blind", Blinder)`` and ``("model", fitted)``; fitted, it takes the inputs ``fitted`` takes and
        predicts its labels.
    """
    from sklearn.pipeline import Pipeline

    step = Blinder(blinding)
    for name in ("feature_names_in_", "n_features_in_"):  # what the Pipeline says it takes: what fitted takes
        if hasattr(fitted, name):
            setattr(step, name, getattr(fitted, name))
    return Pipeline([("blind", step), ("model", fitted)])


def _checked(blinding) -> dict[str, Any]:
    if not isinstance(blinding, dict) or blinding.get("kind") not in ("codes", "frame"):
        raise ConfigError("Blinder needs blinding=<codes_blinding(domain) or frame_blinding(...)>, got "
                          f"{type(blinding).__name__}")
    return blinding
