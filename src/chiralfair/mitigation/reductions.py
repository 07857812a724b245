"""Method ``reductions``: fairlearn's reductions over your estimator, deterministic, blind to the protected side.

Fair for individuals and for groups at once. The estimator is fitted by fairlearn's reductions [1]_ under a group
constraint on the protected attributes' groups (their joint values): ``demographic_parity``, ``equalized_odds`` or
``true_positive_rate_parity``; ``algorithm="exponentiated"`` (``ExponentiatedGradient``) or ``"grid"``
(``GridSearch``). Two options combine it with the individual methods:

- ``blind=True`` (default): the estimator sees every input blinded as :mod:`.unaware` blinds it (the protected
  columns at their first combination of values, each coupled column moved with them), while the constraint is on
  the true groups. An input and each of its counterparts are one input to the estimator: zero IDIs by
  construction, and the constraint narrows the group gaps that the proxies left in place would keep open.
- ``augment=True``: counterfactual augmentation (:mod:`.counterfactual`): every training row in every protected
  combination, each copy in the group it now belongs to.

**Deterministic**: fairlearn's exponentiated gradient returns a *randomized* classifier (a mixture of predictors,
each input labelled by a draw), and a draw would make a person and their counterpart differ by chance, an IDI
that is nobody's decision. The predictor kept here is the mixture's expected positive probability thresholded at
0.5 (:class:`ExpectedPositive`: ``sum_i w_i h_i(x) >= 0.5``), the same label every time; ``GridSearch``'s is its
best predictor (one deterministic estimator). Neither ever reads the protected attributes at prediction time
when ``blind``.

Post-processing with a per-group threshold (fairlearn's ``ThresholdOptimizer``) is not offered: it decides by the
protected attribute, so it makes IDIs by construction.

The estimator (a Pipeline's final step) must take ``sample_weight`` in ``fit`` (the reductions reweigh rows). A
model on chiralfair's codes is fitted on them; a scikit-learn model that takes your raw frame or other labels (the
README's own-data Pipeline) is refitted in its own language (:func:`reductions_in_its_own_language`): copies of your
estimator fitted on your rows and labels, fairlearn's weights routed to the final step, the sensitive feature the
protected group of each row, the deterministic predictor made of your fitted estimators and saved with the
blinding in your values. The zoo DNN is refused (``consistency`` with ``group`` serves it), as is a model fed the
data's values as numbers with ``blind`` (its blinding is kept by column name or code).

References
----------
.. [1] Agarwal, Beygelzimer, Dudík, Langford, Wallach. "A Reductions Approach to Fair Classification." ICML 2018.
.. [2] Bird et al. "Fairlearn: A toolkit for assessing and improving fairness in AI." Microsoft, 2020.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone

from .._validation import check_choice
from ..exceptions import ConfigError, ModelCapabilityError
from .base import MitigationMethod, register_method

CONSTRAINTS = ("demographic_parity", "equalized_odds", "true_positive_rate_parity")
ALGORITHMS = ("exponentiated", "grid")
DETERMINISTIC = {"exponentiated": "the mixture's expected positive probability thresholded at 0.5",
                 "grid": "grid search's best predictor"}


def reduction_text(info: dict[str, Any], eps: float) -> str:
    """What a reduction fitted, in words: fairlearn's algorithm and constraint, the rows, how it is deterministic.

    Parameters
    ----------
    info : dict
        ``info_`` of a fitted :class:`GroupReduction` (``constraint``, ``algorithm``, ``blind``, ``augment``,
        ``n_predictors``, ``deterministic``).
    eps : float
        The constraint's difference bound.

    Returns
    -------
    str
    """
    algorithm = {"exponentiated": "ExponentiatedGradient", "grid": "GridSearch"}[info["algorithm"]]
    return (f"fairlearn {algorithm} under {info['constraint'].replace('_', ' ')} (bound {eps:g}), the estimator "
            + ("blind to the protected attributes" if info["blind"] else "seeing the protected attributes")
            + (", on counterfactually augmented rows" if info["augment"] else "")
            + f"; {info['n_predictors']} predictor{'s' if info['n_predictors'] != 1 else ''}, made deterministic "
            f"by {info['deterministic']}")


def fit_reduction(estimator, inputs, labels, groups, weight_name: str, *, constraint: str, algorithm: str,
                  eps: float, max_iter: int, grid_size: int) -> tuple[list, list[float]]:
    """The fairlearn reduction fitted: the predictors it keeps and their weights (one predictor, weight 1, for grid).

    Parameters
    ----------
    estimator : sklearn classifier
        Unfitted; fairlearn clones it for each round. It takes ``inputs`` and labels {0, 1}.
    inputs : array-like or pandas.DataFrame
    labels : numpy.ndarray of {0, 1}
    groups : array-like, shape (n_samples,)
        The sensitive feature (each row's protected group).
    weight_name : str
        The fit keyword that reaches the step taking ``sample_weight`` (:func:`_weight_route`).
    constraint, algorithm : str
    eps : float
    max_iter, grid_size : int

    Returns
    -------
    predictors : list of fitted classifiers
        Exponentiated gradient's with a non-zero weight; grid search's best.
    weights : list of float
        Summing to 1.
    """
    from fairlearn.reductions import (
        DemographicParity,
        EqualizedOdds,
        ExponentiatedGradient,
        GridSearch,
        TruePositiveRateParity,
    )

    from ..models.threads import single_native_thread

    moment = {"demographic_parity": DemographicParity, "equalized_odds": EqualizedOdds,
              "true_positive_rate_parity": TruePositiveRateParity}[constraint](difference_bound=eps)
    with single_native_thread(), warnings.catch_warnings():
        # fairlearn 0.15 grows pandas Series with .at and sets bools into float Series, which pandas deprecates
        # (the operations still run as before); said once here rather than failing a strict warnings filter
        warnings.filterwarnings("ignore", message="Setting a value on a Series via .at")
        warnings.filterwarnings("ignore", message="Setting an item of incompatible dtype")
        if algorithm == "exponentiated":
            fitted = ExponentiatedGradient(clone(estimator), moment, eps=eps, max_iter=max_iter,
                                           sample_weight_name=weight_name)
            fitted.fit(inputs, labels, sensitive_features=groups)
            weights = np.asarray(fitted.weights_, dtype=np.float64)
            keep = weights > 0
            predictors = [p for p, k in zip(fitted.predictors_, keep, strict=True) if k]
            return predictors, (weights[keep] / weights[keep].sum()).tolist()
        fitted = GridSearch(clone(estimator), moment, grid_size=grid_size, sample_weight_name=weight_name)
        fitted.fit(inputs, labels, sensitive_features=groups)
        return [fitted.predictors_[fitted.best_idx_]], [1.0]


class ExpectedPositive(ClassifierMixin, BaseEstimator):
    """A deterministic mixture: ``P(y = 1 | x) = sum_i w_i h_i(x)`` over fitted 0/1 predictors, label at >= 0.5.

    Parameters
    ----------
    predictors : list of fitted classifiers
        Each predicts labels in ``classes`` (default {0, 1}).
    weights : sequence of float
        Their weights (non-negative, summing to 1).
    classes : sequence of two labels, default=(0, 1)
        The labels the predictors speak, the positive one second (a raw-frame pipeline's own, e.g. ``("<=50K",
        ">50K")``); ``predict`` answers in them.

    Attributes
    ----------
    classes_ : numpy.ndarray
        ``classes``.
    """

    def __init__(self, predictors=(), weights=(), classes=(0, 1)):
        self.predictors = predictors
        self.weights = weights
        self.classes = classes

    def fit(self, X=None, y=None):
        """Nothing to fit: the predictors are fitted already.

        Parameters
        ----------
        X, y : ignored

        Returns
        -------
        ExpectedPositive

        Raises
        ------
        ModelCapabilityError
            When a predictor is not fitted (a ``clone`` of the mixture): the mixture comes from fairlearn's
            reduction over the protected groups, which ``X`` and ``y`` alone cannot repeat.
        """
        from sklearn.exceptions import NotFittedError
        from sklearn.utils.validation import check_is_fitted

        try:
            for predictor in self.predictors:
                check_is_fitted(predictor)
        except NotFittedError:
            raise ModelCapabilityError(
                "a fairlearn mixture (ExpectedPositive, made by method 'reductions') cannot be fitted again from "
                "rows and labels: its predictors and weights come from the reduction over the protected groups; "
                "refit it with method='reductions'") from None
        self.classes_ = np.asarray(self.classes)
        return self

    def predict_proba(self, X) -> np.ndarray:
        """``[1 - p, p]`` per row, ``p = sum_i w_i h_i(x)``.

        Parameters
        ----------
        X : array-like, shape (n_samples, n_features)

        Returns
        -------
        numpy.ndarray of float64, shape (n_samples, 2)
        """
        p = np.zeros(len(X), dtype=np.float64)
        positive = np.asarray(self.classes)[1]
        for h, w in zip(self.predictors, self.weights, strict=True):
            p += float(w) * (np.asarray(h.predict(X)) == positive)
        p = np.clip(p, 0.0, 1.0)
        return np.column_stack([1.0 - p, p])

    def predict(self, X) -> np.ndarray:
        """The positive class where the expected positive probability is at least 0.5 (the same label every time).

        Parameters
        ----------
        X : array-like, shape (n_samples, n_features)

        Returns
        -------
        numpy.ndarray, shape (n_samples,)
            In ``classes`` (int64 0/1 by default).
        """
        return np.asarray(self.classes)[(self.predict_proba(X)[:, 1] >= 0.5).astype(np.int64)]


class InItsOwnLabels(ClassifierMixin, BaseEstimator):
    """Your estimator as fairlearn's reductions see it: fitted on labels {0, 1} mapped to your own, predicting 0/1.

    fairlearn's moments need labels 0 and 1; a raw-frame pipeline is fitted in its own labels (e.g. ``">50K"``).
    ``fit`` maps fairlearn's 0/1 to ``classes`` (the positive one second) and fits a clone of ``estimator`` on your
    rows in those labels, passing every fit argument through (``<final step>__sample_weight``); ``predict`` maps
    back. The fitted ``estimator_`` is your kind of model, in your labels, and is what is kept.

    Parameters
    ----------
    estimator : sklearn classifier or Pipeline
    classes : sequence of two labels
        Your negative and positive class.
    """

    def __init__(self, estimator=None, classes=(0, 1)):
        self.estimator = estimator
        self.classes = classes

    def fit(self, X, y, **fit_params):
        """Fit a clone of ``estimator`` on ``X`` and ``classes[y]``.

        Parameters
        ----------
        X : pandas.DataFrame or array-like
            Your rows, as your estimator takes them.
        y : array-like of {0, 1}
        **fit_params
            Passed to the estimator's ``fit`` (fairlearn's sample weights).

        Returns
        -------
        InItsOwnLabels
        """
        labels = np.asarray(self.classes)[np.asarray(y, dtype=np.int64)]
        self.estimator_ = clone(self.estimator).fit(X, labels, **fit_params)
        self.classes_ = np.array([0, 1])
        return self

    def predict(self, X) -> np.ndarray:
        """1 where your estimator predicts the positive class, else 0.

        Parameters
        ----------
        X : pandas.DataFrame or array-like

        Returns
        -------
        numpy.ndarray of int64, shape (n_samples,)
        """
        return (np.asarray(self.estimator_.predict(X)) == np.asarray(self.classes)[1]).astype(np.int64)


def _weight_route(estimator):
    """The step taking ``sample_weight`` (a Pipeline's last, through nested ones), and the keyword reaching it."""
    from sklearn.pipeline import Pipeline

    target, route = estimator, []
    while isinstance(target, Pipeline):
        name, target = target.steps[-1]
        route.append(name)
    return target, "__".join([*route, "sample_weight"])


@register_method("reductions")
class GroupReduction(MitigationMethod):
    """Your estimator fitted by fairlearn's reductions under a group constraint, deterministic (module docstring).

    Parameters
    ----------
    estimator : sklearn classifier
        Takes ``sample_weight`` in ``fit``; cloned.
    domain : Domain
    constraint : {"demographic_parity", "equalized_odds", "true_positive_rate_parity"}, default="equalized_odds"
    algorithm : {"exponentiated", "grid"}, default="exponentiated"
    blind : bool, default=True
        The estimator sees the protected side blinded (zero IDIs by construction).
    augment : bool, default=False
        Fit on every training row in every protected combination (counterfactual augmentation).
    eps : float, default=0.01
        The constraint's bound (``difference_bound``) and exponentiated gradient's ``eps``.
    max_iter : int, default=50
        Exponentiated gradient's iterations.
    grid_size : int, default=10
        Grid search's number of Lagrange multipliers tried.

    Attributes
    ----------
    estimator_ : ExpectedPositive or sklearn classifier
        The deterministic predictor; it takes the (blinded) codes.
    info_ : dict
        ``constraint``, ``algorithm``, ``blind``, ``augment``, ``n_predictors`` (with a non-zero weight).

    References
    ----------
    .. [1] Agarwal et al., ICML 2018.
    """

    def __init__(self, estimator=None, domain=None, *, constraint: str = "equalized_odds",
                 algorithm: str = "exponentiated", blind: bool = True, augment: bool = False, eps: float = 0.01,
                 max_iter: int = 50, grid_size: int = 10):
        self.estimator = estimator
        self.domain = domain
        self.constraint = constraint
        self.algorithm = algorithm
        self.blind = blind
        self.augment = augment
        self.eps = eps
        self.max_iter = max_iter
        self.grid_size = grid_size

    @classmethod
    def cannot_run(cls, run, params) -> str | None:
        """Why not: the zoo DNN, a model fed your raw frame or labels, or an estimator without ``sample_weight``.

        Parameters
        ----------
        run : MitigationRun
        params : dict

        Returns
        -------
        str or None
        """
        from sklearn.utils.validation import has_fit_parameter

        from .kinds import base_estimator, is_zoo_dnn
        from .refit import refits_in_its_own_language, speaks_codes_and_labels

        model = run.model
        if run.trainer is None and is_zoo_dnn(model):
            return (f"method 'reductions' refits the estimator many times with fairlearn's sample weights; model "
                    f"{model.name!r} is the zoo DNN (use consistency with group= for it)")
        if refits_in_its_own_language(model, params):
            if model.language.as_values and params.get("blind", True):
                return (f"method 'reductions' with blind=True cannot refit model {model.name!r}, which is fed the "
                        "data's values (model_input='values'): the blinding it saves with the model is kept by "
                        "column name (a frame) or by code, neither of which such a model takes; pass blind=False")
            final, _ = _weight_route(model.estimator)
            if not has_fit_parameter(final, "sample_weight"):
                return (f"method 'reductions' reweighs the rows each round; {type(final).__name__}.fit of model "
                        f"{model.name!r} takes no sample_weight")
            return None
        why = super().cannot_run(run, params)
        if why:
            return why
        if not speaks_codes_and_labels(model.language):
            return (f"method 'reductions' fits fairlearn's reductions on chiralfair's integer codes and labels 0/1 "
                    f"or refits a scikit-learn estimator in its own language; model {model.name!r} is neither (use "
                    "counterfactual or unaware for it)")
        final, _ = _weight_route(base_estimator(cls.name, model, 0, None))
        if not has_fit_parameter(final, "sample_weight"):
            return (f"method 'reductions' reweighs the rows each round; {type(final).__name__}.fit of model "
                    f"{model.name!r} takes no sample_weight")
        return None

    @classmethod
    def in_its_own_language(cls, run, params, added=None):
        """Reductions over your estimator (fairlearn), in its own values and labels.

        Parameters
        ----------
        run : MitigationRun
        params : dict
        added : (numpy.ndarray, numpy.ndarray), optional

        Returns
        -------
        retrained : CountingModel
        info : dict
        """
        return reductions_in_its_own_language(run.model, run.dataset, run.train, params, run.train_seed)

    @classmethod
    def left_out_of_auto(cls, run) -> str | None:
        """Left out of ``auto`` on a model refitted in its own values (a pipeline fed your rows): too costly there.

        Each candidate fits up to ``max_iter`` copies of your pipeline on each of ``auto``'s validation splits:
        on the README's own-data example this made ``auto`` take 20x the audit's CPU seconds, and none of its
        candidates met every bound there. ``method="reductions"`` still runs it.

        Parameters
        ----------
        run : MitigationRun

        Returns
        -------
        str or None
        """
        from .refit import refits_in_its_own_language

        if not refits_in_its_own_language(run.model, {}):
            return None
        return (f"not tried by auto on model {run.model.name!r}, which is refitted in its own values: each of its "
                f"candidates fits up to {cls().max_iter} copies of the model on each validation split; ask for it "
                "by name (method 'reductions')")

    @classmethod
    def candidate_params(cls, run) -> list[dict[str, Any]]:
        """``auto``'s candidates: each constraint, blind; and equalized odds blind with counterfactual augmentation.

        Parameters
        ----------
        run : MitigationRun

        Returns
        -------
        list of dict
        """
        return [*({"constraint": c} for c in CONSTRAINTS), {"constraint": "equalized_odds", "augment": True}]

    @classmethod
    def describe(cls, params: dict[str, Any]) -> str:
        """E.g. ``"reductions equalized_odds, blind, exponentiated"``.

        Parameters
        ----------
        params : dict

        Returns
        -------
        str
        """
        words = [f"reductions {params.get('constraint', 'equalized_odds')}",
                 "blind" if params.get("blind", True) else "aware", params.get("algorithm", "exponentiated")]
        if params.get("augment"):
            words.append("augmented")
        return ", ".join(words)

    def _fit(self, X, y, sample_weight=None) -> None:
        from .counterfactual import augmented_training_rows
        from .reweighing import protected_groups

        if self.estimator is None:
            raise ConfigError("GroupReduction needs estimator=<an sklearn classifier that takes sample_weight>")
        if sample_weight is not None:
            raise ModelCapabilityError(f"{type(self).__name__} takes no sample_weight (the reductions set the weights)")
        constraint = check_choice(self.constraint, "constraint", CONSTRAINTS)
        algorithm = check_choice(self.algorithm, "algorithm", ALGORITHMS)
        rows, labels = X, y
        if self.augment:
            rows, labels, _, _, _ = augmented_training_rows(X, y, self.domain)
        groups = protected_groups(self.domain, rows)
        _, weight_name = _weight_route(self.estimator)
        predictors, weights = fit_reduction(self.estimator, self._model_input(rows), labels, groups, weight_name,
                                            constraint=constraint, algorithm=algorithm, eps=self.eps,
                                            max_iter=self.max_iter, grid_size=self.grid_size)
        self.estimator_ = (ExpectedPositive(predictors, weights).fit() if algorithm == "exponentiated"
                           else predictors[0])
        self.info_ = {"constraint": constraint, "algorithm": algorithm, "blind": bool(self.blind),
                      "augment": bool(self.augment), "n_predictors": len(predictors), "n_rows_fitted": int(len(rows)),
                      "deterministic": DETERMINISTIC[algorithm]}

    def choice_text(self) -> str:
        """The algorithm, constraint and rows of the fit, and how its predictor is made deterministic.

        Returns
        -------
        str
        """
        return reduction_text(self.info_, self.eps)

    def _model_input(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.int64)
        if not self.blind:
            return X
        return self.domain.counterpart_rows(X, np.zeros(len(X), dtype=np.int64))

    def deployable_model(self):
        """The fitted model as it is saved: the predictor, behind its blinding when ``blind`` (skops).

        Returns
        -------
        sklearn estimator or Pipeline
            ``self`` when the labels are not {0, 1}.
        """
        from .blinding import blinded_pipeline, codes_blinding

        if [str(c) for c in self.classes_] != ["0", "1"]:
            return self
        return blinded_pipeline(self.estimator_, codes_blinding(self.domain)) if self.blind else self.estimator_


def reductions_in_its_own_language(model, dataset, train, params: dict, seed: int):
    """The fairlearn reductions over your own estimator (a raw-frame Pipeline), fitted in your values and labels.

    The training rows are your rows as given (:func:`~chiralfair.mitigation.refit.training_input`; with
    ``blind``, the protected and coupled columns blinded in your values as :mod:`.unaware` blinds them; with
    ``augment``, each row in every protected combination); the sensitive feature is each row's protected group as
    the domain names it (your protected column's values; a binned numeric one, its bins), never blinded. fairlearn
    fits copies of your estimator (:func:`~chiralfair.mitigation.fitting.unfitted_copy`, same hyper-parameters) in
    your labels through :class:`InItsOwnLabels`, its sample weights routed to your Pipeline's final step
    (``<step>__sample_weight``). The predictor kept is deterministic: exponentiated gradient's mixture of your
    fitted estimators as :class:`ExpectedPositive` (the label whose expected probability under the mixture is at
    least 0.5, answered in your labels), grid search's best estimator; with ``blind`` behind the blinding
    (:func:`~chiralfair.mitigation.blinding.blinded_pipeline`), so it takes your raw rows and answers in your labels.

    Parameters
    ----------
    model : CountingModel
        Your estimator (not speaking the codes and labels 0/1, :func:`~chiralfair.mitigation.refit.\
speaks_codes_and_labels`).
    dataset : Dataset
    train : numpy.ndarray of int64
    params : dict
        :class:`GroupReduction`'s parameters.
    seed : int
        The ``random_state`` of every ``random_state`` your estimator leaves at None.

    Returns
    -------
    retrained : CountingModel
    info : dict

    Raises
    ------
    ConfigError
        For a parameter :class:`GroupReduction` does not take.
    """
    import pandas as pd

    from .blinding import blind, blinded_pipeline, codes_blinding, frame_blinding
    from .counterfactual import augmented_training_rows
    from .evaluation import protected_groups_frame
    from .fitting import unfitted_copy
    from .refit import like_the_model, training_input

    GroupReduction.check_params(params)
    method = GroupReduction(**params)  # the defaults of the parameters not given
    constraint = check_choice(method.constraint, "constraint", CONSTRAINTS)
    algorithm = check_choice(method.algorithm, "algorithm", ALGORITHMS)
    domain, language = dataset.domain, model.language
    train = np.asarray(train, dtype=np.int64)
    rows, labels, origin = dataset.X[train], np.asarray(dataset.y[train], dtype=np.int64), train
    if method.augment:
        rows, labels, _, _, from_row = augmented_training_rows(rows, labels, domain)
        origin = train[from_row]
    groups = protected_groups_frame(domain, rows).astype(str).agg("/".join, axis=1).to_numpy(dtype=str)
    codes = codes_blinding(domain)
    inputs = training_input(model, dataset, blind(rows, codes) if method.blind else rows, origin)
    if isinstance(inputs, pd.DataFrame):
        inputs = inputs.reset_index(drop=True)
    own = tuple(language.model_labels(np.array([0, 1])).tolist())
    copy = unfitted_copy(model.estimator, seed)
    _, weight_name = _weight_route(copy)
    predictors, weights = fit_reduction(InItsOwnLabels(copy, own), inputs, labels, groups, weight_name,
                                        constraint=constraint, algorithm=algorithm, eps=method.eps,
                                        max_iter=method.max_iter, grid_size=method.grid_size)
    yours = [p.estimator_ for p in predictors]  # your kind of model, in your labels
    fitted = ExpectedPositive(yours, weights, classes=own).fit() if algorithm == "exponentiated" else yours[0]
    if method.blind:
        blinding: dict[str, Any] = (frame_blinding(domain, language.to_frame, language.feature_names)
                                    if language.takes_frame else codes)
        fitted = blinded_pipeline(fitted, blinding)
    info = {"constraint": constraint, "algorithm": algorithm, "blind": bool(method.blind),
            "augment": bool(method.augment), "n_predictors": len(predictors), "n_rows_fitted": int(len(rows)),
            "deterministic": DETERMINISTIC[algorithm], "how": "GroupReduction",
            "language": "refitted in the model's own input and labels (fairlearn's sample weights routed to its "
                        f"final step as {weight_name}), the sensitive feature the protected group"
                        + (", the blinding saved with it" if method.blind else "")}
    info["choice"] = reduction_text(info, method.eps)
    return like_the_model(fitted, model, f"reductions-{model.name}"), info
