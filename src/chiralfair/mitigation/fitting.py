"""Fitting a copy of an estimator: weights routed through a Pipeline, one native thread, a reproducible clone.

Used by every mitigation method and by :mod:`.kinds` and :mod:`.refit` (which refit the user's kind of model).
"""

from __future__ import annotations

from ..exceptions import ModelCapabilityError


def fit_with_weights(estimator, X, y, sample_weight):
    """Fit ``estimator`` with ``sample_weight`` (routed to a Pipeline's last step, through nested ones), returning it.

    Parameters
    ----------
    estimator : sklearn estimator or Pipeline
        Unfitted; fitted in place.
    X : array-like, shape (n_samples, n_features)
    y : array-like, shape (n_samples,)
    sample_weight : numpy.ndarray of float, shape (n_samples,)

    Returns
    -------
    estimator
        The fitted ``estimator``.

    Raises
    ------
    ModelCapabilityError
        If the estimator (or a Pipeline's last step) takes no ``sample_weight`` in ``fit``.
    """
    from sklearn.pipeline import Pipeline
    from sklearn.utils.validation import has_fit_parameter

    from ..models.threads import single_native_thread

    target, route = estimator, []
    while isinstance(target, Pipeline):  # your Pipeline inside ours (codes -> frame): route to the final step
        name, target = target.steps[-1]
        route.append(name)
    if not has_fit_parameter(target, "sample_weight"):
        raise ModelCapabilityError(
            f"{type(target).__name__}.fit takes no sample_weight; counterfactual augmentation weights each row's "
            "copies so that the data's size does not change the fit. Use an estimator that takes sample_weight")
    with single_native_thread():
        return estimator.fit(X, y, **{"__".join([*route, "sample_weight"]): sample_weight})


def fit_plain(estimator, X, y):
    """Fit ``estimator`` on one native thread, returning it.

    Parameters
    ----------
    estimator : sklearn estimator
        Unfitted; fitted in place.
    X : array-like, shape (n_samples, n_features)
    y : array-like, shape (n_samples,)

    Returns
    -------
    estimator
        The fitted ``estimator``.
    """
    from ..models.threads import single_native_thread

    with single_native_thread():
        return estimator.fit(X, y)


def unfitted_copy(est, seed: int):
    """A clone with the same hyper-parameters; a ``random_state`` left at None gets ``seed`` (reproducible).

    Parameters
    ----------
    est : sklearn estimator
    seed : int
        The ``random_state`` given to every ``random_state`` parameter left at None.

    Returns
    -------
    sklearn estimator
        Unfitted.
    """
    from sklearn.base import clone
    copy = clone(est)
    unset = {k: seed for k, v in copy.get_params(deep=True).items()
             if (k == "random_state" or k.endswith("__random_state")) and v is None}
    return copy.set_params(**unset) if unset else copy
