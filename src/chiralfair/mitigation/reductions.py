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

The estimator must take ``sample_weight`` in ``fit`` (the reductions reweigh rows); it is fitted on chiralfair's
codes, so a model that takes your raw frame or other labels is refused with a sentence that says so, as is the zoo
DNN (``consistency`` with ``group`` serves it).

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


class ExpectedPositive(ClassifierMixin, BaseEstimator):
    """A deterministic mixture: ``P(y = 1 | x) = sum_i w_i h_i(x)`` over fitted 0/1 predictors, label at >= 0.5.

    Parameters
    ----------
    predictors : list of fitted classifiers
        Each predicts labels in {0, 1}.
    weights : sequence of float
        Their weights (non-negative, summing to 1).

    Attributes
    ----------
    classes_ : numpy.ndarray
        ``[0, 1]``.
    """

    def __init__(self, predictors=(), weights=()):
        self.predictors = predictors
        self.weights = weights

    def fit(self, X=None, y=None):
        """Nothing to fit: the predictors are fitted already.

        Parameters
        ----------
        X, y : ignored

        Returns
        -------
        ExpectedPositive
        """
        self.classes_ = np.array([0, 1])
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
        for h, w in zip(self.predictors, self.weights, strict=True):
            p += float(w) * np.asarray(h.predict(X), dtype=np.float64)
        p = np.clip(p, 0.0, 1.0)
        return np.column_stack([1.0 - p, p])

    def predict(self, X) -> np.ndarray:
        """1 where the expected positive probability is at least 0.5, else 0 (the same label every time).

        Parameters
        ----------
        X : array-like, shape (n_samples, n_features)

        Returns
        -------
        numpy.ndarray of int64, shape (n_samples,)
        """
        return (self.predict_proba(X)[:, 1] >= 0.5).astype(np.int64)


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
        from .refit import speaks_codes_and_labels

        model = run.model
        if run.trainer is None and is_zoo_dnn(model):
            return (f"method 'reductions' refits the estimator many times with fairlearn's sample weights; model "
                    f"{model.name!r} is the zoo DNN (use consistency with group= for it)")
        why = super().cannot_run(run, params)
        if why:
            return why
        if not speaks_codes_and_labels(model.language):
            return (f"method 'reductions' fits fairlearn's reductions on chiralfair's integer codes and labels 0/1; "
                    f"model {model.name!r} takes your raw frame or other labels (use counterfactual or unaware for "
                    "it, which refit it in its own language)")
        final, _ = _weight_route(base_estimator(cls.name, model, 0, None))
        if not has_fit_parameter(final, "sample_weight"):
            return (f"method 'reductions' reweighs the rows each round; {type(final).__name__}.fit of model "
                    f"{model.name!r} takes no sample_weight")
        return None

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
        from fairlearn.reductions import (
            DemographicParity,
            EqualizedOdds,
            ExponentiatedGradient,
            GridSearch,
            TruePositiveRateParity,
        )

        from ..models.threads import single_native_thread
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
        moment = {"demographic_parity": DemographicParity, "equalized_odds": EqualizedOdds,
                  "true_positive_rate_parity": TruePositiveRateParity}[constraint](difference_bound=self.eps)
        inputs = self._model_input(rows)
        _, weight_name = _weight_route(self.estimator)
        with single_native_thread(), warnings.catch_warnings():
            # fairlearn 0.15 grows pandas Series with .at and sets bools into float Series, which pandas deprecates
            # (the operations still run as before); said once here rather than failing a strict warnings filter
            warnings.filterwarnings("ignore", message="Setting a value on a Series via .at")
            warnings.filterwarnings("ignore", message="Setting an item of incompatible dtype")
            if algorithm == "exponentiated":
                fitted = ExponentiatedGradient(clone(self.estimator), moment, eps=self.eps, max_iter=self.max_iter,
                                               sample_weight_name=weight_name)
                fitted.fit(inputs, labels, sensitive_features=groups)
                weights = np.asarray(fitted.weights_, dtype=np.float64)
                keep = weights > 0
                predictors = [p for p, k in zip(fitted.predictors_, keep, strict=True) if k]
                self.estimator_ = ExpectedPositive(predictors, (weights[keep] / weights[keep].sum()).tolist()).fit()
                n_predictors = len(predictors)
            else:
                fitted = GridSearch(clone(self.estimator), moment, grid_size=self.grid_size,
                                    sample_weight_name=weight_name)
                fitted.fit(inputs, labels, sensitive_features=groups)
                self.estimator_ = fitted.predictors_[fitted.best_idx_]
                n_predictors = 1
        self.info_ = {"constraint": constraint, "algorithm": algorithm, "blind": bool(self.blind),
                      "augment": bool(self.augment), "n_predictors": n_predictors, "n_rows_fitted": int(len(rows)),
                      "deterministic": "the mixture's expected positive probability thresholded at 0.5"
                      if algorithm == "exponentiated" else "grid search's best predictor"}

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
