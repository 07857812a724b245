"""Adapters from torch modules, sklearn estimators and pipelines, and plain callables to models under test.

Each returns a :class:`~chiralfair.models.protocol.CountingModel` that speaks chiralfair's one language
(integer codes in; labels in {0, 1} with 1 = the positive class, P(positive class) and its gradient out),
whatever the model's own language; :mod:`chiralfair.models.language` holds the rules.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..exceptions import ConfigError, ModelCapabilityError
from .language import (
    LabelDecoder,
    ModelLanguage,
    check_feature_names,
    check_output,
    finite_probabilities,
    native_categories,
    positive_probability,
    resolve_classes,
)
from .protocol import DEFAULT_BATCH_SIZE, CountingModel, from_positive_probability, is_frame
from .threads import single_native_thread


def as_model(obj, *, name: str | None = None, batch_size: int = DEFAULT_BATCH_SIZE, output: str = "auto",
             positive_class=None, classes=None, to_frame=None, as_values: bool = False) -> CountingModel:
    """Wrap a model under test, declaring its language once.

    Parameters
    ----------
    obj : torch.nn.Module, sklearn estimator or pipeline, CountingModel, or callable
        A torch module maps inputs (n, d), in its own parameter dtype, to (n,), (n, 1) or (n, 2) outputs; an
        sklearn estimator is read through ``predict`` and ``predict_proba``; a callable maps inputs (n, d) to
        what ``output`` says (a black box: no gradient).
    name : str, optional
        Shown in errors and reports; defaults to the class name.
    batch_size : int
        Largest number of rows per call.
    output : {"auto", "label", "probability", "logit"}
        What the model returns. ``"auto"``: labels for a callable, ``predict``/``predict_proba`` for an sklearn
        estimator, probabilities for a torch module. ``"label"``: labels only (an sklearn estimator is then
        used as a black box). ``"probability"``: P(``classes[1]``) in one column, or one column per class;
        labels are P(positive) > 0.5. ``"logit"``: the same as logits (torch modules and callables).
    positive_class : optional
        The class that counts as 1 (the favourable decision). Needed unless the classes are {0, 1},
        {-1, 1} or {False, True} (then 1 / True). A string matches a numeric class by its text
        (``"2"`` -> 2).
    classes : sequence of two labels, optional
        The model's classes in its column order. sklearn estimators have ``classes_`` (a declared value must
        equal it); torch modules default to (0, 1); a callable returning labels other than {0, 1} / {-1, 1}
        needs them.
    to_frame : callable, optional
        ``to_frame(X)`` maps int64 codes, shape (n, d), to the pandas DataFrame the model was fitted on
        (original column names, values and dtypes), e.g. ``Dataset.to_frame`` of a dataset from
        ``from_frame``. Required for an estimator fitted on a DataFrame (string ``feature_names_in_``); its
        columns are sent in the order of ``feature_names_in_``. Such a model has no gradient.
    as_values : bool, default=False
        Send ``to_frame``'s frame as a float64 array of its values, in its column order, rather than the frame
        (``model_input="values"``: a torch module, a callable or an estimator fitted on a numpy array of the raw
        columns). Needs ``to_frame``; every column must be numeric. Such a model has no gradient in codes.

    Returns
    -------
    CountingModel
        Its ``language`` records the declarations.

    Raises
    ------
    ConfigError
        If a declaration is invalid or missing: an unknown ``output``, more than two classes, an ambiguous
        positive class without ``positive_class``, ``classes`` contradicting ``classes_``, or a
        frame-fitted estimator without ``to_frame``. The message names the parameter that fixes it.
    ModelCapabilityError
        If ``obj`` has no ``predict`` and is neither a torch module nor callable.

    Notes
    -----
    Outputs are checked on every call (vectorised) and raise
    :class:`~chiralfair.exceptions.ModelOutputError` when they contradict the declaration: non-integer
    "labels" (probabilities?), a two-column matrix where labels were expected, a label outside the classes,
    "probabilities" outside [0, 1]. A logit network whose outputs all happen to lie in [0, 1] cannot be told
    from a probability network: declare ``output="logit"`` for networks without a final sigmoid/softmax.
    A model fitted on a different number of columns than the domain (``n_features_in_``) is refused at its
    first call, naming both numbers.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from chiralfair.models import as_model
    >>> X, y = np.array([[0, 1], [1, 1], [0, 5], [1, 5]]), np.array([0, 0, 1, 1])
    >>> model = as_model(LogisticRegression().fit(X, y), name="lr")
    >>> model.predict(X).tolist(), model.n_queries
    ([0, 0, 1, 1], 4)
    >>> model.predict_proba(X).shape      # positive-class probabilities, one column per class
    (4, 2)
    >>> labels = as_model(LogisticRegression().fit(X, np.array(["no", "no", "yes", "yes"])), positive_class="yes")
    >>> labels.predict(X).tolist()        # generators see 1 for the positive class, whatever its label
    [0, 0, 1, 1]
    """
    if isinstance(obj, CountingModel):
        if (output != "auto" or positive_class is not None or classes is not None or to_frame is not None
                or as_values):
            raise ConfigError(f"model {obj.name!r} is already wrapped: declare output=, positive_class=, "
                              "classes=, to_frame= and as_values= when wrapping the model itself")
        return obj
    check_output(output)
    if as_values and to_frame is None:
        raise ConfigError("as_values=True needs to_frame=<callable codes -> DataFrame of the data's columns> "
                          "(Dataset.to_frame): the values sent are that frame's")
    model = _wrap(obj, name=name, batch_size=batch_size, output=output, positive_class=positive_class,
                  classes=classes, to_frame=to_frame, as_values=bool(as_values))
    model.wrapping = (obj, {"name": name, "batch_size": batch_size, "output": output,
                            "positive_class": positive_class, "classes": classes, "to_frame": to_frame,
                            "as_values": bool(as_values)})
    return model


def rewrapped(model: CountingModel, **changes) -> CountingModel:
    """The model wrapped again by :func:`as_model` with some declarations changed (e.g. a new ``to_frame``).

    Parameters
    ----------
    model : CountingModel
        Made by :func:`as_model`.
    **changes
        Keyword arguments of :func:`as_model` to change.

    Returns
    -------
    CountingModel
        A new wrapper of the same model object (its query counters at zero); ``spec`` is kept, and so is
        ``n_rows`` (the rows sent to the model object so far).

    Raises
    ------
    ConfigError
        If ``model`` was not made by :func:`as_model`.
    """
    wrapping = getattr(model, "wrapping", None)
    if wrapping is None:
        raise ConfigError(f"model {model.name!r} was not wrapped by as_model, so it cannot be wrapped again")
    obj, kwargs = wrapping
    again = as_model(obj, **{**kwargs, **changes})
    again.spec = model.spec
    again.n_rows = model.n_rows
    return again


def _wrap(obj, *, name, batch_size, output, positive_class, classes, to_frame, as_values) -> CountingModel:
    if _is_torch_module(obj):
        if to_frame is not None and not as_values:
            raise ConfigError("to_frame= alone applies to sklearn estimators and callables: a torch module takes a "
                              "tensor of numbers; for one trained on the data's raw values pass as_values=True too "
                              "(model_input='values')")
        from .torch_adapter import torch_model
        return torch_model(obj, name=name, batch_size=batch_size, output=output, positive_class=positive_class,
                           classes=classes, to_frame=to_frame)
    if hasattr(obj, "predict"):
        return _sklearn_model(obj, name=name or type(obj).__name__, batch_size=batch_size, output=output,
                              positive_class=positive_class, classes=classes, to_frame=to_frame,
                              as_values=as_values)
    if callable(obj):
        return _callable_model(obj, name=name or getattr(obj, "__name__", "callable"), batch_size=batch_size,
                               output=output, positive_class=positive_class, classes=classes, to_frame=to_frame,
                               estimator=obj, as_values=as_values)
    raise ModelCapabilityError(f"cannot use {type(obj).__name__} as a model: it has no predict() and is not callable")


def _is_torch_module(obj) -> bool:
    from ._torch import is_torch_module
    return is_torch_module(obj)


# ---------------------------------------------------------------------------------------- callables
def _callable_model(fn, *, name: str, batch_size: int, output: str, positive_class, classes, to_frame,
                    estimator, n_features_in=None, feature_names=None, as_values: bool = False) -> CountingModel:
    output = "label" if output == "auto" else output
    if classes is not None:
        classes, positive_class = resolve_classes(classes, positive_class, model_name=name, where="classes=")
    elif output != "label":
        classes, positive_class = _default_column_classes(positive_class, name)
    language = ModelLanguage(classes=classes, positive_class=positive_class, output=output, to_frame=to_frame,
                             feature_names=feature_names, as_values=as_values)
    model_input = _input_function(language, name, n_features_in)
    if output == "label":
        decode = LabelDecoder(language, name)

        def predict(X):
            return decode(fn(model_input(X)), len(X))

        return CountingModel(predict, name=name, batch_size=batch_size, estimator=estimator, language=language)

    def proba1(X):
        return finite_probabilities(positive_probability(fn(model_input(X)), language, len(X), name), name)

    return from_positive_probability(proba1, name=name, batch_size=batch_size, estimator=estimator,
                                      language=language)


def _default_column_classes(positive_class, name: str) -> tuple[tuple, object]:
    if positive_class is None or any(positive_class == c for c in (0, 1)):
        return resolve_classes((0, 1), positive_class, model_name=name, where="the default classes")
    raise ConfigError(f"model {name!r}: positive_class={positive_class!r} but no classes=: declare the classes in "
                      "the order of the model's output columns, e.g. classes=[negative, positive]")


def _input_function(language: ModelLanguage, name: str, n_features_in: int | None):
    """``X -> what the model takes``, refusing inputs whose width differs from the model's ``n_features_in_``."""
    def model_input(X):
        if is_frame(X):  # the population: rows as the user gave them
            frame = language.frame_input(X)
            if n_features_in is not None and frame.shape[1] != n_features_in:
                _refuse_width(name, n_features_in, frame.shape[1], "the rows have")
            return frame
        if language.takes_frame:
            frame = language.model_input(np.rint(X).astype(np.int64))
            if n_features_in is not None and frame.shape[1] != n_features_in:
                _refuse_width(name, n_features_in, frame.shape[1], "to_frame's frame has")
            return frame
        if n_features_in is not None and X.shape[1] != n_features_in:
            _refuse_width(name, n_features_in, X.shape[1], "the inputs (the domain's features) have")
        return X
    return model_input


def _refuse_width(name: str, n_model: int, n_data: int, what: str):
    raise ConfigError(f"model {name!r} was fitted on {n_model} columns (n_features_in_) but {what} {n_data}: "
                      "wrap a model fitted on the same features as the dataset's domain")


# ---------------------------------------------------------------------------------------- sklearn
def _sklearn_model(est, *, name: str, batch_size: int, output: str, positive_class, classes,
                   to_frame, as_values: bool = False) -> CountingModel:
    if output == "logit":
        raise ConfigError(f"output='logit' does not apply to {name!r}: an sklearn estimator is read through "
                          "predict() and predict_proba(); use output='auto', 'label' or 'probability'")
    feature_names = check_feature_names(getattr(est, "feature_names_in_", None), model_name=name,
                                        to_frame=to_frame)
    n_features_in = getattr(est, "n_features_in_", None)
    est_classes = _classes_of(est)
    if est_classes is None:  # a predict() without classes_: a black box whose labels are checked like a callable's
        return _callable_model(_native(est.predict), name=name, batch_size=batch_size, output=output,
                               positive_class=positive_class, classes=classes, to_frame=to_frame,
                               estimator=est, n_features_in=n_features_in, feature_names=feature_names,
                               as_values=as_values)
    if classes is not None and np.asarray(classes).tolist() != np.asarray(est_classes).tolist():
        raise ConfigError(f"classes={np.asarray(classes).tolist()} contradicts the classes_ "
                          f"{np.asarray(est_classes).tolist()} of model "
                          f"{name!r}; leave classes= out for sklearn estimators")
    classes, positive_class = resolve_classes(est_classes, positive_class, model_name=name, where="classes_")
    output = "label" if output == "auto" else output
    language = ModelLanguage(classes=classes, positive_class=positive_class, output=output, to_frame=to_frame,
                             feature_names=feature_names, categories=native_categories(est), as_values=as_values)
    model_input = _input_function(language, name, n_features_in)
    has_proba = _has_predict_proba(est)
    if output == "probability" and not has_proba:
        raise ConfigError(f"output='probability' but model {name!r} has no predict_proba()")
    gradient = None if language.takes_frame else _sklearn_gradient(est, language.positive_index)
    column = language.positive_index

    def proba1(X):
        with single_native_thread():
            return finite_probabilities(est.predict_proba(model_input(X))[:, column], name)

    if output == "probability":
        return from_positive_probability(proba1, name=name, batch_size=batch_size, estimator=est,
                                          language=language, gradient=gradient)
    decode = LabelDecoder(language, name)

    def predict(X):
        with single_native_thread():
            return decode(est.predict(model_input(X)), len(X))

    def predict_proba(X):
        p = proba1(X)
        return np.column_stack([1 - p, p])

    return CountingModel(predict, predict_proba=predict_proba if has_proba else None, input_gradient=gradient,
                         name=name, batch_size=batch_size, estimator=est, language=language)


def _native(fn):
    def call(X):
        with single_native_thread():
            return fn(X)
    return call


def _classes_of(est):
    try:
        return getattr(est, "classes_", None)
    except AttributeError:  # a Pipeline whose final step has no classes_
        return None


def _has_predict_proba(est) -> bool:
    try:
        return hasattr(est, "predict_proba")  # SVC(probability=False) raises AttributeError here
    except AttributeError:
        return False


def _sklearn_gradient(est, positive_index: int = 1):
    """Analytic d P(positive class)/dx for LogisticRegression and MLPClassifier, optionally behind StandardScalers.

    Both models compute P(``classes_[1]``); when the positive class is ``classes_[0]`` the gradient changes
    sign. Returns None for any other model.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    scale = None
    final = est
    if isinstance(est, Pipeline):
        pre = [s for _, s in est.steps[:-1] if s not in (None, "passthrough")]
        if not all(isinstance(s, StandardScaler) for s in pre):
            return None
        final = est.steps[-1][1]
        scale = _pipeline_scale(pre)
    from scipy.special import expit  # here: the command line's refusals import no scipy

    sign = 1.0 if positive_index == 1 else -1.0
    if isinstance(final, LogisticRegression) and len(final.classes_) == 2:
        def grad(X):
            with single_native_thread():
                z = est.decision_function(X)
            # sigma(z) sigma(-z) rather than p (1 - p): exact for either class in the saturated tails.
            g = (sign * expit(z) * expit(-z))[:, None] * final.coef_[0][None, :]
            return g if scale is None else g / scale
        return grad
    if isinstance(final, MLPClassifier) and len(final.classes_) == 2:
        def grad(X):
            Z = X if scale is None else _apply_scalers(est, X)
            g = sign * _mlp_positive_proba_gradient(final, Z)
            return g if scale is None else g / scale
        return grad
    return None


def _pipeline_scale(scalers) -> np.ndarray:
    s = 1.0
    for sc in scalers:
        if sc.with_std and sc.scale_ is not None:
            s = s * sc.scale_
    return np.asarray(s, dtype=float)


def _apply_scalers(pipe, X):
    for _, step in pipe.steps[:-1]:
        if step not in (None, "passthrough"):
            X = step.transform(X)
    return X


_Activation = tuple[Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray, np.ndarray], np.ndarray]]
# an MLP's activation and its derivative (given its input z and its output a)
_ACTIVATIONS: dict[str, _Activation] = {
    "relu": (lambda z: np.maximum(z, 0), lambda z, a: (z > 0).astype(float)),
    "tanh": (np.tanh, lambda z, a: 1 - a ** 2),
    "logistic": (lambda z: 1 / (1 + np.exp(-z)), lambda z, a: a * (1 - a)),
    "identity": (lambda z: z, lambda z, a: np.ones_like(z)),
}


def _mlp_positive_proba_gradient(mlp, X) -> np.ndarray:
    """Backpropagate P(classes_[1]) through an sklearn MLPClassifier's weights (binary: logistic output unit)."""
    from scipy.special import expit

    act, dact = _ACTIVATIONS[mlp.activation]
    a = np.asarray(X, dtype=float)
    derivs = []
    for W, b in zip(mlp.coefs_[:-1], mlp.intercepts_[:-1], strict=True):
        z = a @ W + b
        a = act(z)
        derivs.append(dact(z, a))
    z = a @ mlp.coefs_[-1] + mlp.intercepts_[-1]
    delta = expit(z) * expit(-z)  # (n, 1): sigma'(z), exact in the saturated tails
    delta = delta @ mlp.coefs_[-1].T
    for W, d in zip(reversed(mlp.coefs_[:-1]), reversed(derivs), strict=True):
        delta = (delta * d) @ W.T
    return delta
