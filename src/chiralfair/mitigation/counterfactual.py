"""Method ``counterfactual``: counterfactual data augmentation (every training row with every protected value).

Each training row appears once per combination of the protected attributes' values (its own included), with its
own label and weight ``1/k`` for ``k`` combinations, so the data's total weight, and therefore the balance between
data and regularisation, does not change. A model fitted on it cannot gain from a protected value: every value
comes with the same label. With ``with_idis=True`` the labelled IDI pairs that :func:`~chiralfair.mitigation.retrain`
hands over (``added=``) join the augmented rows, each pair also in every combination, weight 1 per pair.

A row whose protected value is missing appears with the valid combinations only (architecture: the model under test: a
missing value is never a counterpart). Coupled columns move with the protected values, and a counterpart that breaks one
of the domain's constraints is left out (:func:`augment`), as the discrimination check builds counterparts.

References
----------
.. [1] Kusner, Loftus, Russell, Silva. "Counterfactual Fairness." NeurIPS 2017.
.. [2] Garg et al. "Counterfactual Fairness in Text Classification through Robustness." AIES 2019
   (counterfactual augmentation as the baseline of logit pairing).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from sklearn.base import clone

from ..exceptions import ConfigError
from .base import MitigationMethod, fit_with_weights, register_method

if TYPE_CHECKING:
    from ..models.protocol import CountingModel


def augment(X: np.ndarray, y: np.ndarray, domain, weight=None):
    """Every row in every protected combination (couplings applied), weights summing to sum(weight).

    A counterpart that breaks one of the domain's constraints is left out, its row's weight shared by the copies
    that can exist, so the rows are those the discrimination check would ask about.

    Parameters
    ----------
    X : numpy.ndarray of int64, shape (n_samples, n_features)
    y : numpy.ndarray, shape (n_samples,)
    domain : Domain
    weight : numpy.ndarray of float, shape (n_samples,), optional
        Each row's weight (default 1), shared by its ``k`` copies.

    Returns
    -------
    rows : numpy.ndarray of int64, shape (m, n_features)
        ``m = n_samples * k`` for ``k`` combinations, less the counterparts that break a constraint.
    labels : numpy.ndarray, shape (m,)
    weights : numpy.ndarray of float64, shape (m,)
    origin : numpy.ndarray of int64, shape (m,)
        The row of ``X`` each row was made from.
    """
    n, d = X.shape
    every = domain.counterparts(X)  # (n, k, d), couplings applied
    k = every.shape[1]
    rows = every.reshape(-1, d)
    base = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)
    origin = np.repeat(np.arange(n, dtype=np.int64), k)
    if not domain.constraints:
        return rows, np.repeat(y, k), np.repeat(base / k, k), origin
    # A counterpart that breaks a constraint cannot exist (the discrimination check never asks about it): it is
    # left out, and the row's weight is shared by the copies that can exist (the row itself always among them).
    keep = domain.satisfies(rows).reshape(n, k) | (every == X[:, None, :]).all(axis=2)
    share = base / np.maximum(keep.sum(axis=1), 1)
    flat = keep.reshape(-1)
    return rows[flat], np.repeat(y, k)[flat], np.repeat(share, k)[flat], origin[flat]


def augmented_training_rows(X: np.ndarray, y: np.ndarray, domain, weight=None, added=None):
    """The rows counterfactual augmentation fits on, with their weights (see :func:`augment`).

    Every training row, and every added IDI row, in every protected combination.

    Parameters
    ----------
    X : numpy.ndarray of int64, shape (n_samples, n_features)
    y : numpy.ndarray, shape (n_samples,)
    domain : Domain
    weight : numpy.ndarray of float, shape (n_samples,), optional
        The training rows' weights (default 1).
    added : (numpy.ndarray of int64, shape (m, n_features), numpy.ndarray of shape (m,)), optional
        Labelled IDI rows to add, each of weight 1.

    Returns
    -------
    rows : numpy.ndarray of int64, shape ((n_samples + m) * k, n_features)
    labels : numpy.ndarray, shape ((n_samples + m) * k,)
    weights : numpy.ndarray of float64, shape ((n_samples + m) * k,)
    n_added : int
        ``m``.
    origin : numpy.ndarray of int64
        The row of ``X`` each row was made from; -1 for one made from an added IDI row.
    """
    rows, labels, weights, origin = augment(X, y, domain, weight)
    if added is None:
        return rows, labels, weights, 0, origin
    X_add, y_add = np.asarray(added[0], dtype=np.int64), np.asarray(added[1], dtype=np.int64)
    extra_rows, extra_labels, extra_weights, extra_origin = augment(X_add, y_add, domain)
    return (np.vstack([rows, extra_rows]), np.concatenate([labels, extra_labels]),
            np.concatenate([weights, extra_weights]), int(len(X_add)),
            np.concatenate([origin, np.full(len(extra_origin), -1, dtype=np.int64)]))


@register_method("counterfactual")
class CounterfactualAugmentation(MitigationMethod):
    """Counterfactual data augmentation: the estimator refitted on every training row in every protected value.

    Parameters
    ----------
    estimator : sklearn classifier
        Unfitted; its ``fit`` (or a Pipeline's last step's) must take ``sample_weight``. Cloned.
    domain : Domain
        Names the protected attributes (``domain.protected``) whose values are combined.
    with_idis : bool, default=False
        Also add labelled IDI pairs, passed to :meth:`fit` as ``added=(rows, labels)``.
    fine_tune_epochs : int, optional
        For a :class:`~chiralfair.mitigation.dnn.PaperDNNClassifier`: train it this many epochs on the augmented
        rows from its fitted weights (from a fit on the same rows if it is not fitted) instead of from scratch.
    reweigh : float, default=0.0
        Strength of the reweighing of the training rows by group and label (:mod:`.reweighing`; 0: none); each
        row's copies share its weight.

    Attributes
    ----------
    estimator_ : the fitted clone
    info_ : dict
        ``n_rows_augmented`` (rows the estimator saw), ``n_combinations``, ``n_rows_added`` (rows beyond the
        training rows: their counterparts and any IDI rows with theirs), ``n_idi_rows_added`` (IDI rows).

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression                    # doctest: +SKIP
    >>> fair = CounterfactualAugmentation(LogisticRegression(), domain).fit(X, y)  # doctest: +SKIP

    References
    ----------
    .. [1] Kusner et al., NeurIPS 2017; Garg et al., AIES 2019.
    """

    uses_idis = False

    @classmethod
    def candidate_params(cls, run) -> list[dict]:
        """``auto``'s candidates: each reweighing strength (:mod:`.auto`), from scratch.

        Parameters
        ----------
        run : MitigationRun

        Returns
        -------
        list of dict
        """
        from .auto import reweigh_candidates
        return reweigh_candidates(run)

    @classmethod
    def in_its_own_language(cls, run, params, added=None):
        """Your estimator on your rows and their counterparts, in its own values and labels.

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
        return counterfactual_in_its_own_language(run.model, run.dataset, run.train, added, params,
                                                  run.train_seed)

    def __init__(self, estimator=None, domain=None, *, with_idis: bool = False, fine_tune_epochs: int | None = None,
                 reweigh: float = 0.0):
        self.estimator = estimator
        self.domain = domain
        self.with_idis = with_idis
        self.fine_tune_epochs = fine_tune_epochs
        self.reweigh = reweigh

    def _fit(self, X, y, sample_weight=None, added=None) -> None:
        if self.estimator is None:
            raise ConfigError("CounterfactualAugmentation needs estimator=<an sklearn classifier>")
        if self.with_idis and added is None:
            raise ConfigError("with_idis=True: pass the labelled IDI pairs as fit(X, y, added=(rows, labels))")
        if self.with_idis:
            added = (self._codes(added[0]), added[1])
        from .reweighing import reweighed

        rows, labels, weights, n_added, _ = augmented_training_rows(
            X, y, self.domain, reweighed(self.domain, X, y, self.reweigh, sample_weight),
            added if self.with_idis else None)
        if self.fine_tune_epochs is None:
            self.estimator_ = fit_with_weights(clone(self.estimator), rows, labels, weights)
        else:
            start = fitted_start(self.estimator, X, y)
            self.estimator_ = start.fine_tune(rows, labels, epochs=self.fine_tune_epochs, sample_weight=weights,
                                              random_state=start.random_state)
        self.info_ = {"n_rows_augmented": int(len(rows)), "n_combinations": int(len(self.domain.combinations)),
                      "n_rows_added": int(len(rows) - len(X)), "n_idi_rows_added": n_added,
                      "reweigh": float(self.reweigh),
                      "start": "scratch" if self.fine_tune_epochs is None else
                      f"fine-tuned {self.fine_tune_epochs} epochs from the model's weights"}

    def deployable_model(self):
        """The fitted model as it is saved: the estimator fitted on the augmented codes (it needs no wrapper).

        Returns
        -------
        sklearn estimator or torch.nn.Module
            ``estimator_``, or for the paper's DNN its network (TorchScript); ``self`` when the labels are not
            {0, 1} (the estimator predicts 0/1, not them).
        """
        return deployable_estimator(self)


def deployable_estimator(method):
    """A fitted method's ``estimator_`` as a model on its own: the network of a PaperDNNClassifier, else itself.

    Parameters
    ----------
    method : MitigationMethod
        Fitted; its ``estimator_`` takes the codes as they are.

    Returns
    -------
    object
        ``method`` itself when its labels are not {0, 1}.
    """
    from .dnn import PaperDNNClassifier

    if [str(c) for c in method.classes_] != ["0", "1"]:
        return method
    if isinstance(method.estimator_, PaperDNNClassifier):
        return method.estimator_.module_
    return method.estimator_


def fitted_start(estimator, X, y):
    """The fitted PaperDNNClassifier to fine-tune from: ``estimator`` itself, or a fit of it on ``(X, y)``.

    Parameters
    ----------
    estimator : PaperDNNClassifier
        Fitted or not.
    X : array-like of int, shape (n_samples, n_features)
    y : array-like of int, shape (n_samples,)
        Used only when ``estimator`` is not fitted.

    Returns
    -------
    PaperDNNClassifier
        Fitted.

    Raises
    ------
    ModelCapabilityError
        If ``estimator`` is not a PaperDNNClassifier (only the DNN is fine-tuned).
    """
    from ..exceptions import ModelCapabilityError
    from .dnn import PaperDNNClassifier

    if not isinstance(estimator, PaperDNNClassifier):
        raise ModelCapabilityError(f"fine_tune_epochs continues training the paper's DNN from its weights; "
                                   f"{type(estimator).__name__} is not a PaperDNNClassifier")
    return estimator if hasattr(estimator, "module_") else clone(estimator).fit(X, y)


def counterfactual_in_its_own_language(model: CountingModel, dataset, train, added, params: dict, seed: int):
    """Counterfactual augmentation's rows and weights, fitted by a copy of the user's estimator.

    The rows are :class:`~chiralfair.mitigation.counterfactual.CounterfactualAugmentation`'s (its function
    :func:`~chiralfair.mitigation.counterfactual.augmented_training_rows`), in the model's input and labels.

    Parameters
    ----------
    model : CountingModel
    dataset : Dataset
    train : numpy.ndarray of int64
        The training rows.
    added : (numpy.ndarray, numpy.ndarray) or None
        Labelled IDI rows (``with_idis``).
    params : dict
        ``with_idis``, ``reweigh``.
    seed : int

    Returns
    -------
    retrained : CountingModel
    info : dict

    Raises
    ------
    ConfigError
        For another parameter, or ``with_idis`` without IDI pairs.
    """
    from .fitting import unfitted_copy
    from .refit import like_the_model, training_input
    from .reweighing import reweighed

    unknown = set(params) - {"with_idis", "reweigh"}
    if unknown:
        raise ConfigError(f"counterfactual: unknown parameters {sorted(unknown)} for a model refitted in its own "
                          "language (with_idis, reweigh)")
    if params.get("with_idis") and added is None:
        raise ConfigError("counterfactual with_idis=True needs labelled IDI pairs")
    domain, language = dataset.domain, model.language
    train = np.asarray(train, dtype=np.int64)
    X, y = dataset.X[train], dataset.y[train]
    weight = reweighed(domain, X, y, params.get("reweigh", 0.0))
    rows, labels, weights, n_added, origin = augmented_training_rows(
        X, y, domain, weight, added=added if params.get("with_idis") else None)
    origin = np.where(origin >= 0, train[np.maximum(origin, 0)], -1)
    fitted = fit_with_weights(unfitted_copy(model.estimator, seed), training_input(model, dataset, rows, origin),
                              language.model_labels(labels), weights)
    info = {"n_rows_augmented": int(len(rows)), "n_combinations": int(len(domain.combinations)),
            "n_rows_added": int(len(rows) - len(X)), "n_idi_rows_added": n_added, "start": "scratch",
            "how": "CounterfactualAugmentation",
            "reweigh": float(params.get("reweigh", 0.0)),
            "language": "refitted in the model's own input and labels (saved as your kind of model)"}
    return like_the_model(fitted, model, f"counterfactual-{model.name}"), info
