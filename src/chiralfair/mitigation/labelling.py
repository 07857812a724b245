"""The labelling vote: one label per IDI pair from an ensemble that never sees the protected attributes.

An IDI and its counterpart differ only in the protected attributes, so they must get *one* label, or
retraining teaches nothing. Each pair's non-protected projection is labelled by the majority vote of an ensemble
trained on the training rows with the protected columns removed (the I&D paper's LR, SVC, DTC and MLP, as a
hard-voting :class:`sklearn.ensemble.VotingClassifier`).

Small classes: the MLP's early stopping holds out a stratified 10% of the rows, which scikit-learn refuses when
the rarer label has a single row ("least populated classes"). With fewer than :data:`MIN_EARLY_STOPPING_ROWS`
rows of the rarer label the MLP trains without early stopping; a training split with one label only is refused,
since a vote trained on it could only ever say that label.

References
----------
.. [1] Ma et al. "Enhanced Fairness Testing via Generating Effective Initial Individual Discriminatory
   Instances." arXiv:2209.08321, §4.4.
.. [2] Zhang et al. "White-box Fairness Testing through Adversarial Sampling." ICSE 2020 (majority-vote labels).
"""

from __future__ import annotations

import numpy as np

from ..domain import Domain
from ..exceptions import ConfigError

# Rows of the rarer label below which the MLP voter trains without early stopping: its 10% stratified hold-out
# then gets at least 2 of them.
MIN_EARLY_STOPPING_ROWS = 20


def default_ensemble(random_state: int = 0):
    """The labelling ensemble: hard vote of LR, a linear SVM, a decision tree and an MLP.

    LR, the SVM and the MLP see standardised inputs. The SVM is ``LinearSVC`` rather than the RBF ``SVC`` of
    the paper: on census's 19.5k training rows (protected attribute removed) the RBF SVC took 10.7 s to fit
    and 7.8 s to predict the 13k test rows (test accuracy 0.837) against 0.08 s and 0.01 s for LinearSVC
    (0.811), on a loaded 2-core machine. With four voters a 2-2 tie goes to label 0 (sklearn's hard vote takes
    the first of the tied classes).

    Parameters
    ----------
    random_state : int, default=0

    Returns
    -------
    sklearn.ensemble.VotingClassifier
        Unfitted.
    """
    from sklearn.ensemble import VotingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC
    from sklearn.tree import DecisionTreeClassifier

    return VotingClassifier([
        ("lr", make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))),
        ("svc", make_pipeline(StandardScaler(), LinearSVC(random_state=random_state))),
        ("dtc", DecisionTreeClassifier(random_state=random_state)),
        ("mlp", make_pipeline(StandardScaler(), MLPClassifier(early_stopping=True, random_state=random_state))),
    ], voting="hard")


def fit_vote(X, y, domain: Domain, ensemble=None, *, random_state: int = 0):
    """Fit the labelling ensemble on rows ``X`` (n, n_features) without their protected columns.

    Parameters
    ----------
    X : numpy.ndarray of int64, shape (n_samples, n_features)
        Training rows only.
    y : numpy.ndarray of {0, 1}, shape (n_samples,)
    domain : Domain
        Names the protected columns that are removed.
    ensemble : sklearn classifier, optional
        Cloned before fitting; default :func:`default_ensemble`.
    random_state : int

    Returns
    -------
    fitted : sklearn classifier
    notes : list of str
        Said when the MLP voter trains without early stopping.

    Raises
    ------
    ConfigError
        If ``y`` holds one label only (the counts are named), ``ensemble`` has no ``fit``/``predict``, or a
        given ensemble cannot be fitted on these rows (its error, with the label counts).
    """
    import warnings

    from sklearn.base import clone
    from sklearn.exceptions import ConvergenceWarning

    from ..models.threads import single_native_thread

    y = np.asarray(y, dtype=np.int64)
    counts = {int(k): int(v) for k, v in zip(*np.unique(y, return_counts=True), strict=True)}
    if len(counts) < 2:
        raise ConfigError(f"the labelling vote needs training rows of both labels; the {len(y)} training rows hold "
                          f"only label {next(iter(counts), 'none')} ({counts})")
    notes = []
    if ensemble is None:
        ensemble = default_ensemble(random_state)
        rarest = min(counts.values())
        if rarest < MIN_EARLY_STOPPING_ROWS:
            ensemble.set_params(mlp__mlpclassifier__early_stopping=False)
            notes.append(f"the rarer label has {rarest} training rows (< {MIN_EARLY_STOPPING_ROWS}): the MLP voter "
                         "trains without early stopping, whose stratified hold-out would be too small")
    elif not (hasattr(ensemble, "fit") and hasattr(ensemble, "predict")):
        raise ConfigError(f"ensemble must be an sklearn classifier with fit() and predict(), got "
                          f"{type(ensemble).__name__}")
    else:
        ensemble = clone(ensemble)
    with warnings.catch_warnings(), single_native_thread():
        warnings.simplefilter("ignore", ConvergenceWarning)
        try:  # the non-protected projection, coupled columns as roles (architecture: counterparts that could exist)
            fitted = ensemble.fit(domain.projection(X), y)
        except ValueError as err:
            raise ConfigError(f"the labelling ensemble cannot be fitted on the {len(y)} training rows (label counts "
                              f"{counts}): {err}") from None
    return fitted, notes


def fit_ensemble(dataset, train, test, ensemble=None, *, random_state: int = 0):
    """Fit the labelling ensemble on the training rows without the protected columns; score it on the test rows.

    Parameters
    ----------
    dataset : Dataset
    train, test : numpy.ndarray of int64
        Row indices.
    ensemble : sklearn classifier, optional
        Cloned before fitting; default :func:`default_ensemble`.
    random_state : int

    Returns
    -------
    fitted : sklearn classifier
    info : dict
        ``members``, ``test_accuracy`` (share of test rows whose label the vote gets right), ``n_train``,
        ``notes``.

    Raises
    ------
    ConfigError
        As :func:`fit_vote`, or if the ensemble predicts labels other than 0 and 1.
    """
    fitted, notes = fit_vote(dataset.X[train], dataset.y[train], dataset.domain, ensemble, random_state=random_state)
    predicted = vote_labels(fitted, dataset.X[test], dataset.domain, check=True)
    members = [name for name, _ in getattr(fitted, "estimators", [])] or [type(fitted).__name__]
    return fitted, {"members": members, "test_accuracy": float(np.mean(predicted == dataset.y[test])),
                    "n_train": int(len(train)), "notes": notes}


def vote_labels(voter, X, domain: Domain, *, check: bool = False) -> np.ndarray:
    """Labels of the non-protected projections of ``X`` (n_samples, n_features): int64 in {0, 1}, (n_samples,).

    The projection is :meth:`Domain.projection <chiralfair.domain.Domain.projection>` (coupled columns read as
    roles), so an input and each of its counterparts get the same label by construction.

    Parameters
    ----------
    voter : fitted classifier
        Trained on the non-protected projections (:func:`fit_vote`).
    X : array-like of int, shape (n_samples, n_features)
        Codes.
    domain : Domain
    check : bool, default=False
        Refuse labels other than 0 and 1.

    Returns
    -------
    numpy.ndarray of int64, shape (n_samples,)

    Raises
    ------
    ConfigError
        With ``check=True``, if the voter predicts labels other than 0 and 1.
    """
    from ..models.threads import single_native_thread

    if len(X) == 0:
        return np.zeros(0, dtype=np.int64)
    with single_native_thread():
        labels = np.asarray(voter.predict(domain.projection(X)))
    if check and not np.isin(labels, (0, 1)).all():
        raise ConfigError("the ensemble must predict the labels 0 and 1 it was fitted on")
    return labels.astype(np.int64)
