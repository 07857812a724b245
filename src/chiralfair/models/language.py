"""A model's language: its input, its class labels, its positive class and what it outputs.

The language is declared once, when a model is wrapped by :func:`~chiralfair.models.as_model`; from then on
every algorithm sees integer codes in and, out, labels in {0, 1} (1 = the positive class), P(positive class)
in [0, 1] and gradients of P(positive class). This module turns what a model returns into that form and refuses,
with a message naming the fix, what it cannot read without guessing. See architecture: the model under test.

Rules
-----
- **Classes** come from ``classes_`` (scikit-learn) or are declared (``classes=``); a model with more than two
  classes is refused.
- **The positive class** is ``positive_class=`` if given; otherwise only an unambiguous default is taken:
  {0, 1} -> 1, {-1, 1} -> 1, {False, True} -> True. Any other pair (strings such as ``">50K"``, {1, 2}) is
  refused with a message listing the classes and naming ``positive_class=``.
- **Labels** a model returns are checked against its classes on every call (vectorised); a value outside them
  raises :class:`~chiralfair.exceptions.ModelOutputError` naming the model and the value.
- **Probabilities**: a one-column output is the probability of ``classes[1]`` (scikit-learn's
  ``predict_proba(X)[:, 1]``, a network's sigmoid unit); a two-column output has one column per class, in the
  order of ``classes``. Values outside [0, 1], or two-column rows not summing to 1 within 1e-4, are refused
  with a message naming ``output="logit"``.
- **Logits**: one column is the logit of ``classes[1]`` (a sigmoid gives its probability); two columns are
  per-class logits (a softmax gives the probabilities). Any real number is a valid logit, so a network that
  outputs logits but was declared ``output="probability"`` is only caught when some output leaves [0, 1]; a
  logit network whose outputs all happen to lie in [0, 1] cannot be told from a probability network.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..exceptions import ConfigError, ModelOutputError

OUTPUTS = ("auto", "label", "probability", "logit")
# Tolerance on the row sums of a two-column probability output (float32 softmax rounding is ~1e-7).
ROW_SUM_TOLERANCE = 1e-4
# Class pairs whose positive class is unambiguous: the larger label, as in scikit-learn's metrics.
_DEFAULT_PAIRS = ({0, 1}, {-1, 1})


@dataclass(frozen=True)
class ModelLanguage:
    """How to talk to one model under test, declared once when it is wrapped.

    Attributes
    ----------
    classes : tuple or None
        The model's two class labels in the order of its probability columns (``classes_``); None for a
        callable whose labels were not declared (then they must be {0, 1} or {-1, 1}).
    positive_class : object or None
        The label that counts as 1 in everything chiralfair reports; None only when ``classes`` is None and
        the default (label 1) applies.
    output : {"label", "probability", "logit"}
        What the model's own output is.
    to_frame : callable or None
        ``to_frame(X_codes) -> pandas.DataFrame`` with the model's original columns, for models that take a
        frame; None for models that take the integer codes.
    feature_names : tuple of str or None
        Columns the model was fitted on (``feature_names_in_``), selected from ``to_frame``'s frame in order.
    categories : mapping of str to tuple, or None
        The columns a model takes as native categoricals (LightGBM fitted on pandas categoricals), each with the
        categories it was fitted with, in their order: every frame sent to it holds those columns as pandas
        categoricals of exactly those categories (:func:`native_categories`), whatever dtype the data was read
        with (a CSV gives text).
    as_values : bool
        Whether the model takes the frame's values as a float64 array (``model_input="values"``: a torch module,
        a callable or an estimator fitted on a numpy array of the raw columns) rather than the frame itself;
        only with ``to_frame``.
    """

    classes: tuple | None = (0, 1)
    positive_class: object = 1
    output: str = "label"
    to_frame: Callable | None = None
    feature_names: tuple | None = None
    categories: Mapping[str, tuple] | None = None
    as_values: bool = False

    def __post_init__(self) -> None:
        if self.as_values and self.to_frame is None:
            raise ConfigError("as_values=True needs to_frame=<callable codes -> DataFrame of the data's columns>: the "
                              "values sent are that frame's")

    @property
    def positive_index(self) -> int:
        """Index of the positive class in :attr:`classes` (its column in ``predict_proba``), 1 by default."""
        if self.classes is None:
            return 1
        return _index_of(self.classes, self.positive_class)

    @property
    def takes_frame(self) -> bool:
        """Whether the model is fed the data's own values rather than the integer codes.

        Through :attr:`to_frame`: a DataFrame, or its values as an array when :attr:`as_values`; the population
        is then sent as rows.
        """
        return self.to_frame is not None

    @property
    def reads_people(self) -> bool:
        """Whether the data's rows as given are in this model's language (``to_frame`` is ``Dataset.to_frame``).

        The rows are :attr:`Dataset.raw <chiralfair.datasets.Dataset.raw>`, the people. A ``to_frame`` of the
        user's own (codes to the frame a model was fitted on, whatever its columns mean) says the model reads codes
        through it: its people are then the codes, decoded by that ``to_frame``, and the data's raw rows are never
        sent to it.
        """
        from ..datasets.base import Dataset

        return isinstance(getattr(self.to_frame, "__self__", None), Dataset)

    @property
    def input_kind(self) -> str:
        """What the model takes: ``"codes"``, ``"frame"`` or ``"values"`` (``model_input=``'s words)."""
        return "codes" if self.to_frame is None else "values" if self.as_values else "frame"

    def model_input(self, X: np.ndarray):
        """The input the model itself takes for codes ``X`` of shape (n_samples, n_features).

        Parameters
        ----------
        X : numpy.ndarray of int64, shape (n_samples, n_features)
            Codes.

        Returns
        -------
        numpy.ndarray or pandas.DataFrame
            ``X`` itself, ``to_frame(X)[feature_names]``, or (:attr:`as_values`) that frame's values as float64.

        Raises
        ------
        ConfigError
            If ``to_frame`` does not return a DataFrame holding every column in :attr:`feature_names`.
        """
        if self.to_frame is None:
            return X
        frame = self.to_frame(X)
        if not hasattr(frame, "columns") or not hasattr(frame, "iloc"):
            raise ConfigError(f"to_frame must return a pandas DataFrame, got {type(frame).__name__}")
        return self.frame_input(frame)

    def frame_input(self, frame):
        """The input the model takes for rows given as a DataFrame with the data's columns (the population).

        Parameters
        ----------
        frame : pandas.DataFrame, shape (n_samples, n_columns)
            Rows in the data's own columns, values and dtypes (e.g. :attr:`Dataset.raw
            <chiralfair.datasets.Dataset.raw>`).

        Returns
        -------
        pandas.DataFrame or numpy.ndarray
            ``frame[feature_names]`` (the columns the model was fitted on, in its order), or ``frame``; with
            :attr:`as_values`, that frame's values as a float64 array of shape (n_samples, n_columns), every value
            exact (a missing value is NaN).

        Raises
        ------
        ConfigError
            If the model takes codes (no ``to_frame``), or ``frame`` lacks a column in :attr:`feature_names`, or
            (:attr:`as_values`) a column is not numeric.
        """
        if self.to_frame is None:
            raise ConfigError("this model takes integer codes, not a DataFrame: send it codes (Dataset.X)")
        if self.as_values:
            chosen = frame if self.feature_names is None else self._named_columns(frame)
            return frame_values(chosen)
        if self.feature_names is None:
            return self._with_categories(frame)
        return self._with_categories(self._named_columns(frame))

    def _named_columns(self, frame):
        """``frame[feature_names]``, refusing a frame that lacks one of them."""
        feature_names = list(self.feature_names or ())
        columns = [str(c) for c in frame.columns]
        missing = [c for c in feature_names if c not in columns]
        if missing:
            raise ConfigError(f"to_frame's frame lacks columns {missing} that the model was fitted on; model "
                              f"columns (feature_names_in_): {feature_names}; frame columns: "
                              f"{columns}")
        warn_extra_columns(columns, tuple(feature_names))
        return frame[feature_names]

    def _with_categories(self, frame):
        """``frame`` with the model's native categorical columns as categoricals of the model's categories."""
        if not self.categories:
            return frame
        import pandas as pd

        out = frame.copy()
        for column, categories in self.categories.items():
            if column in out.columns:
                dtype = pd.CategoricalDtype(list(categories))
                if out[column].dtype != dtype:
                    values = out[column]
                    if isinstance(values.dtype, pd.CategoricalDtype):
                        values = values.astype(object)
                    out[column] = pd.Categorical(values, dtype=dtype)
        return out

    def model_labels(self, y) -> np.ndarray:
        """Map labels in {0, 1} (1 = positive) to the model's own classes, e.g. to fit a clone of it.

        Parameters
        ----------
        y : array-like of int, shape (n_samples,)

        Returns
        -------
        numpy.ndarray, shape (n_samples,)
            ``positive_class`` where ``y == 1``, the other class elsewhere.
        """
        y = np.asarray(y)
        if self.classes is None:
            return y.astype(np.int64)
        index = np.where(y == 1, self.positive_index, 1 - self.positive_index)
        return np.asarray(self.classes)[index]


def non_numeric_columns(frame) -> list:
    """The columns of ``frame`` whose values are not numbers (text, categories, objects), in order.

    Parameters
    ----------
    frame : pandas.DataFrame

    Returns
    -------
    list
        Their labels; booleans and numbers (numpy or pandas nullable dtypes) are numeric.
    """
    return [c for c, dtype in frame.dtypes.items() if getattr(dtype, "kind", "O") not in "biuf"]


def frame_values(frame) -> np.ndarray:
    """A frame's values as float64, shape (n_samples, n_columns), in its column order (a missing value is NaN).

    Parameters
    ----------
    frame : pandas.DataFrame
        Numeric columns only.

    Returns
    -------
    numpy.ndarray of float64

    Raises
    ------
    ConfigError
        Naming the columns that are not numeric and ``model_input="frame"``.
    """
    text = non_numeric_columns(frame)
    if text:
        raise ConfigError(f"model_input='values' sends the columns' values as numbers, but columns "
                          f"{[str(c) for c in text]} are not numeric: a model that takes them was fitted on the "
                          "frame itself (pass model_input='frame', --model-input frame) or on their codes "
                          "(model_input='codes')")
    return frame.to_numpy(dtype=np.float64, na_value=np.nan)


def check_output(output: str) -> str:
    """Return ``output`` if it is one of :data:`OUTPUTS`.

    Parameters
    ----------
    output : str
        One of ``"auto"``, ``"label"``, ``"probability"``, ``"logit"``.

    Returns
    -------
    str

    Raises
    ------
    ConfigError
        Naming the parameter and the accepted values.
    """
    if output not in OUTPUTS:
        raise ConfigError(f"output must be one of {OUTPUTS}, got {output!r}")
    return output


def resolve_classes(classes, positive_class, *, model_name: str, where: str) -> tuple[tuple, object]:
    """Check a model's two classes and pick the positive one.

    Parameters
    ----------
    classes : sequence
        The model's class labels, in column order.
    positive_class : object or None
        Declared positive class; None takes the unambiguous default ({0, 1} -> 1, {-1, 1} -> 1,
        {False, True} -> True) or refuses.
    model_name : str
    where : str
        Where the classes come from (``"classes_"`` or ``"classes="``), for messages.

    Returns
    -------
    classes : tuple
    positive_class : object
        An element of ``classes``.

    Raises
    ------
    ConfigError
        If there are not exactly two classes, if ``positive_class`` is not one of them, or if it is needed
        (the classes have no unambiguous default) and missing. The message lists the classes.
    """
    classes = tuple(np.asarray(classes).tolist())
    if len(set(classes)) != len(classes):
        raise ConfigError(f"model {model_name!r}: {where} {list(classes)} repeats a class")
    if len(classes) > 2:
        raise ConfigError(f"model {model_name!r} has {len(classes)} classes {list(classes)} ({where}); "
                          "chiralfair tests binary classifiers only. Wrap a binary decision of it, e.g. "
                          "as_model(lambda X: model.predict(X) == c, classes=[False, True]).")
    if len(classes) < 2:
        raise ConfigError(f"model {model_name!r} knows only the class {list(classes)} ({where}); a model "
                          "under test must have two classes")
    if positive_class is not None:
        return classes, classes[_declared_index(classes, positive_class, model_name)]
    if _has_default_positive(classes):
        return classes, classes[_index_of(classes, 1)]
    raise ConfigError(f"model {model_name!r} has classes {list(classes)} ({where}): which one is positive is "
                      f"ambiguous. Pass positive_class=<one of {list(classes)}> (e.g. "
                      f"positive_class={classes[1]!r}).")


def _has_default_positive(classes: tuple) -> bool:
    kinds = {np.asarray(classes).dtype.kind}
    return kinds <= set("biuf") and set(classes) in _DEFAULT_PAIRS


def _index_of(classes: tuple, value) -> int:
    for i, c in enumerate(classes):
        if c == value:
            return i
    raise ConfigError(f"positive_class {value!r} is not one of the classes {list(classes)}")


def _declared_index(classes: tuple, positive_class, model_name: str) -> int:
    """Index of a declared positive class; a string such as ``"2"`` (from a command line) matches the class 2."""
    exact = [i for i, c in enumerate(classes) if c == positive_class]
    if len(exact) == 1:
        return exact[0]
    by_text = [i for i, c in enumerate(classes) if str(c) == str(positive_class)]
    if len(by_text) == 1:
        return by_text[0]
    raise ConfigError(f"positive_class={positive_class!r} is not one of the classes {list(classes)} of model "
                      f"{model_name!r}")


class LabelDecoder:
    """Maps the labels a model returns to {0, 1} (1 = positive class), checking them on every call.

    Parameters
    ----------
    language : ModelLanguage
    model_name : str

    Notes
    -----
    With declared classes, a label outside them is refused. Without (a callable whose ``classes`` were not
    declared), labels must be {0, 1} or {-1, 1} (or booleans), 1 being positive, unless ``positive_class`` was
    declared; then every other label is the negative class, and a second distinct other label seen in any call
    is refused.
    """

    def __init__(self, language: ModelLanguage, model_name: str):
        self.language = language
        self.model_name = model_name
        self._negatives_seen: set = set()

    def __call__(self, raw, n_rows: int) -> np.ndarray:
        """Return int64 labels in {0, 1}, shape (n_rows,), for the raw output of one call.

        Raises
        ------
        ModelOutputError
            If the output is not one label per row, holds non-integer numbers (probabilities?), a two-column
            matrix, or a label outside the classes.
        """
        labels = _one_column(np.asarray(raw), n_rows, self.model_name, what="labels")
        if labels.dtype.kind == "f":
            _refuse_non_integer(labels, self.model_name)
        classes = self.language.classes
        if classes is not None:
            known = (labels == classes[0]) | (labels == classes[1])
            if not known.all():
                self._refuse_label(labels[~known][0], f"not one of its classes {list(classes)}")
            return (labels == self.language.positive_class).astype(np.int64)
        return self._undeclared(labels)

    def _undeclared(self, labels: np.ndarray) -> np.ndarray:
        positive = self.language.positive_class
        if positive is not None:
            is_positive = labels == positive
            others = set(np.unique(labels[~is_positive]).tolist())
            self._negatives_seen |= others
            if len(self._negatives_seen) > 1:
                raise ModelOutputError(
                    f"model {self.model_name!r} returned labels {sorted(map(str, self._negatives_seen))} besides "
                    f"positive_class={positive!r}: more than two classes. Declare classes=[negative, positive].")
            return is_positive.astype(np.int64)
        if labels.dtype.kind not in "biuf":
            values = np.unique(labels).tolist()[:5]
            raise ModelOutputError(f"model {self.model_name!r} returns labels such as {values}: declare its "
                                   f"classes and positive class, e.g. as_model(..., classes={values[:2]}, "
                                   f"positive_class={values[-1]!r})")
        known = (labels == 1) | (labels == 0) | (labels == -1)
        if not known.all():
            self._refuse_label(labels[~known][0], "not in {0, 1} or {-1, 1}, the classes assumed when none are "
                               "declared; pass classes=[...] and positive_class=...")
        self._negatives_seen |= set(np.unique(labels[labels != 1]).tolist())
        if len(self._negatives_seen) > 1:
            raise ModelOutputError(f"model {self.model_name!r} returned the labels -1, 0 and 1 across calls: "
                                   "more than two classes. Declare classes=[...] and positive_class=...")
        return (labels == 1).astype(np.int64)

    def _refuse_label(self, value, why: str):
        raise ModelOutputError(f"model {self.model_name!r} returned the label {_plain(value)!r}, {why}")


def positive_probability(raw, language: ModelLanguage, n_rows: int, model_name: str) -> np.ndarray:
    """P(positive class), float64 of shape (n_rows,), from a callable's probability or logit output.

    Parameters
    ----------
    raw : array-like, shape (n_rows,), (n_rows, 1) or (n_rows, 2)
        One column: the probability (or logit) of ``classes[1]``; two columns: one per class.
    language : ModelLanguage
        ``output`` is ``"probability"`` or ``"logit"``.
    n_rows : int
    model_name : str

    Returns
    -------
    numpy.ndarray of float64, shape (n_rows,)

    Raises
    ------
    ModelOutputError
        If the shape is not one of the above, or probabilities leave [0, 1] or do not sum to 1.
    """
    out = np.asarray(raw, dtype=np.float64)
    if out.ndim == 1:
        out = out[:, None]
    if out.ndim != 2 or out.shape[0] != n_rows or out.shape[1] not in (1, 2):
        raise ModelOutputError(f"model {model_name!r} returned an output of shape {np.shape(raw)} for {n_rows} "
                               f"rows; with output={language.output!r} it must be ({n_rows},), ({n_rows}, 1) or "
                               f"({n_rows}, 2)")
    check_finite(out, model_name)
    if language.output == "probability":
        check_probabilities(out, model_name)
        p1 = out[:, 1] if out.shape[1] == 2 else out[:, 0]
    elif out.shape[1] == 1:
        p1 = 1.0 / (1.0 + np.exp(-out[:, 0]))
    else:
        z = out - out.max(axis=1, keepdims=True)
        e = np.exp(z)
        p1 = e[:, 1] / e.sum(axis=1)
    return p1 if language.positive_index == 1 else 1.0 - p1


def check_finite(out: np.ndarray, model_name: str) -> None:
    """Refuse NaN or infinite outputs: no label can be read from them.

    Parameters
    ----------
    out : numpy.ndarray
        The model's raw output.
    model_name : str
        For the message.

    Raises
    ------
    ModelOutputError
        Naming the model, how many rows and the first one.
    """
    bad = ~np.isfinite(out).all(axis=1) if out.ndim == 2 else ~np.isfinite(out)
    if bad.any():
        raise ModelOutputError(f"model {model_name!r} returned NaN or infinite values for {int(bad.sum())} of "
                               f"{len(bad)} rows (first: row {int(np.argmax(bad))}); a model must give a number "
                               "for every input: check how it handles the inputs it is sent (integer codes, or "
                               "to_frame's frame)")


def finite_probabilities(p, name: str) -> np.ndarray:
    """The positive-class probabilities ``p``, refused when any is NaN or infinite (no share or gap could be read).

    Parameters
    ----------
    p : array-like of float, shape (n,) or (n, k)
    name : str
        The model's name, for the message.

    Returns
    -------
    numpy.ndarray, shape of ``p``

    Raises
    ------
    ModelOutputError
        Naming the model and how many of the rows got no finite probability.
    """
    p = np.asarray(p)
    bad = ~np.isfinite(p)
    if p.ndim == 2:
        bad = bad.any(axis=1)
    if bad.any():
        raise ModelOutputError(f"model {name!r} returned probabilities that are NaN or infinite for {int(bad.sum()):,} "
                               f"of {len(p):,} rows (predict_proba): no label or probability gap can be read from "
                               "them; fix the model, or wrap it as chiralfair.models.as_model(model, output='label') "
                               "to read only its labels")
    return p


def check_probabilities(out: np.ndarray, model_name: str) -> None:
    """Refuse outputs, shape (n, 1) or (n, 2), that cannot be probabilities (naming ``output="logit"``).

    Parameters
    ----------
    out : numpy.ndarray, shape (n, 1) or (n, 2)
        The model's raw output.
    model_name : str
        For the message.

    Raises
    ------
    ModelOutputError
    """
    if out.size == 0:
        return
    finite_probabilities(out, model_name)
    lo, hi = float(np.min(out)), float(np.max(out))
    if not (lo >= 0.0 and hi <= 1.0):  # also catches NaN
        raise ModelOutputError(f"model {model_name!r} was declared output='probability' but returned values "
                               f"from {lo:.4g} to {hi:.4g}, outside [0, 1]: if it outputs logits (no sigmoid or "
                               "softmax at the end), pass output='logit'")
    if out.shape[1] == 2:
        worst = float(np.max(np.abs(out.sum(axis=1) - 1.0)))
        if worst > ROW_SUM_TOLERANCE:
            raise ModelOutputError(f"model {model_name!r} was declared output='probability' but its two columns "
                                   f"do not sum to 1 (off by up to {worst:.3g}): if they are logits, pass "
                                   "output='logit'")


def _one_column(a: np.ndarray, n_rows: int, model_name: str, *, what: str) -> np.ndarray:
    if a.ndim == 2 and a.shape[1] == 1:
        a = a[:, 0]
    if a.ndim == 2 and a.shape == (n_rows, 2):
        raise ModelOutputError(f"model {model_name!r} returned a ({n_rows}, 2) matrix where {what} were expected: "
                               "if these are class probabilities, pass output='probability' (or "
                               "output='logit' for logits)")
    if a.shape != (n_rows,):
        raise ModelOutputError(f"model {model_name!r} returned {what} of shape {a.shape} for {n_rows} rows; "
                               f"expected ({n_rows},)")
    return a


def _refuse_non_integer(labels: np.ndarray, model_name: str) -> None:
    bad = ~np.isfinite(labels) | (labels != np.round(labels))
    if bad.any():
        value = _plain(labels[bad][0])
        raise ModelOutputError(f"model {model_name!r} returned the non-integer value {value!r} where labels were "
                               "expected: if it returns probabilities, pass output='probability' (or "
                               "output='logit' for logits)")


def _plain(value):
    """A numpy scalar as the Python value it holds, so that messages read ``3``, not ``np.int64(3)``."""
    return value.item() if isinstance(value, np.generic) else value


def native_categories(est) -> dict[str, tuple] | None:
    """The columns a model takes as native categoricals, with the categories it was fitted with.

    LightGBM fitted on a frame with pandas categorical columns records their categories
    (``booster_.pandas_categorical``) and refuses a frame whose columns are not categoricals of exactly those
    ("train and valid dataset categorical_feature do not match"); which columns they are is read from the
    booster's model text (``[categorical_feature: ...]``).

    Parameters
    ----------
    est : object
        The model (an sklearn-API LightGBM classifier; any other model gives None).

    Returns
    -------
    dict of str to tuple, or None
        Column name -> categories, in their order; None when the model records none.
    """
    booster = _fitted_attribute(est, "booster_")
    categories = getattr(booster, "pandas_categorical", None)
    if not categories:
        return None
    text = booster.model_to_string(num_iteration=0)
    line = next((ln for ln in text.splitlines() if ln.startswith("[categorical_feature:")), None)
    if line is None:
        return None
    indices = [int(i) for i in line.split(":", 1)[1].strip(" ]").split(",") if i.strip()]
    names = booster.feature_name()
    if len(indices) != len(categories):
        return None
    return {str(names[i]): tuple(c) for i, c in zip(indices, categories, strict=True)}


def with_categorical_dtypes(estimator, X):
    """``X`` with the columns a ``categorical_features="from_dtype"`` estimator read as categorical made categoricals.

    A HistGradientBoosting model fitted with ``categorical_features="from_dtype"`` reads a column as categorical only
    when its dtype is a pandas categorical (its ``is_categorical_``); it predicts on the same column as text (its
    encoder maps values, not dtypes), but a copy fitted on text fails ("could not convert string to float"). Those
    columns of a training frame that are not categoricals already become categoricals of the values they hold, so
    the copy reads them as the model did; any other estimator or input is returned as it is. Every copy of a model
    fitted on the user's rows goes through here: the chiral model (:mod:`chiralfair.seeds.chiral`) and the
    mitigated models (:mod:`chiralfair.mitigation.refit`).

    Parameters
    ----------
    estimator : object
        The model's estimator (a Pipeline is returned as it is: its own steps encode).
    X : pandas.DataFrame or numpy.ndarray

    Returns
    -------
    pandas.DataFrame or numpy.ndarray
    """
    import pandas as pd

    mask = getattr(estimator, "is_categorical_", None)
    names = getattr(estimator, "feature_names_in_", None)
    if (getattr(estimator, "categorical_features", None) != "from_dtype" or mask is None or names is None
            or not isinstance(X, pd.DataFrame)):
        return X
    columns = [str(c) for c, categorical in zip(names, mask, strict=True) if categorical]
    text = [c for c in columns if c in X.columns and not isinstance(X[c].dtype, pd.CategoricalDtype)]
    return X.astype(dict.fromkeys(text, "category")) if text else X


def _fitted_attribute(est, name: str):
    try:
        return getattr(est, name, None)
    except Exception:  # an unfitted LightGBM model raises on booster_
        return None


def check_feature_names(names: Sequence | None, *, model_name: str, to_frame) -> tuple | None:
    """The string ``feature_names_in_`` of a frame-fitted model, refusing it when no ``to_frame`` is given.

    Parameters
    ----------
    names : sequence or None
        The model's ``feature_names_in_``.
    model_name : str
        For the message.
    to_frame : callable or None
        Codes -> DataFrame (:meth:`Dataset.to_frame`).

    Returns
    -------
    tuple of str or None
        The names when they are all strings, else None.

    Raises
    ------
    ConfigError
        If the model was fitted on a DataFrame (string column names) and ``to_frame`` is None.
    """
    if names is None:
        return None
    names = tuple(str(n) for n in np.asarray(names).tolist())
    if to_frame is None:
        raise ConfigError(f"model {model_name!r} was fitted on a DataFrame with columns {list(names)}, but "
                          "chiralfair works on integer codes: pass to_frame=<callable codes -> DataFrame with "
                          "those columns> (Dataset.to_frame for a dataset built by from_frame); "
                          "chiralfair.audit(model, df, ...) does it for you.")
    return names


_WARNED_EXTRA: set[tuple] = set()


def warn_extra_columns(frame_columns: list, names: tuple) -> None:
    """Warn that to_frame's frame has columns the model was not fitted on (they are not sent to it).

    Once per process for a given pair of column lists: the frame is built on every model call, from many places.

    Parameters
    ----------
    frame_columns : list
        The columns ``to_frame`` returns.
    names : tuple of str
        The model's ``feature_names_in_``.
    """
    extra = [c for c in frame_columns if c not in names]
    key = (tuple(frame_columns), tuple(names))
    if extra and key not in _WARNED_EXTRA:
        _WARNED_EXTRA.add(key)
        warnings.warn(f"the model was fitted on fewer columns than the data: it ignores {extra}. "
                      f"Model columns (feature_names_in_): {list(names)}; data columns: {frame_columns}",
                      UserWarning, stacklevel=5)
