"""An SVC with Platt-scaled probabilities, the zoo's ``svc`` (sklearn 1.9 deprecates ``SVC(probability=True)``).

In a module of its own so that importing the zoo does not import sklearn.
"""

from __future__ import annotations

from sklearn.base import BaseEstimator, ClassifierMixin


class PlattSVC(ClassifierMixin, BaseEstimator):
    """An SVC whose labels are its own and whose probabilities come from Platt scaling.

    This is what ``SVC(probability=True)`` was before sklearn 1.9 deprecated the parameter, built from
    sklearn's recommended replacement ``CalibratedClassifierCV(SVC(...), ensemble=False)``: Platt's sigmoid is
    fitted on 5-fold cross-validated decision values, and the SVC itself on all rows. Labels are
    ``SVC.predict`` (the sign of the decision function), as with libsvm's probabilities. They are *not* the
    calibrated argmax: on bank (12% positives) no calibrated probability reaches 0.5, so the argmax would
    predict class 0 everywhere (test F1 0) where the SVC's own labels score F1 0.43. As with libsvm, a label
    and its probability may therefore disagree near the decision boundary.

    Parameters
    ----------
    svc : sklearn.svm.SVC
        Unfitted; cloned by :meth:`fit`.

    Attributes
    ----------
    calibrated_ : sklearn.calibration.CalibratedClassifierCV
    svc_ : sklearn.svm.SVC
        The SVC fitted on all training rows.
    classes_ : numpy.ndarray
    """

    def __init__(self, svc):
        self.svc = svc

    def fit(self, X, y):
        """Fit the SVC and its Platt sigmoid on ``X`` (n_samples, n_features), ``y`` (n_samples,).

        Parameters
        ----------
        X : array-like, shape (n_samples, n_features)
        y : array-like, shape (n_samples,)

        Returns
        -------
        PlattSVC
            ``self``, fitted.
        """
        from sklearn.base import clone
        from sklearn.calibration import CalibratedClassifierCV

        self.calibrated_ = CalibratedClassifierCV(clone(self.svc), method="sigmoid", ensemble=False).fit(X, y)
        self.svc_ = self.calibrated_.calibrated_classifiers_[0].estimator
        self.classes_ = self.calibrated_.classes_
        return self

    def predict(self, X):
        """SVC labels, shape (n_samples,).

        Parameters
        ----------
        X : array-like, shape (n_samples, n_features)

        Returns
        -------
        numpy.ndarray, shape (n_samples,)
        """
        return self.svc_.predict(X)

    def decision_function(self, X):
        """SVC decision values, shape (n_samples,).

        Parameters
        ----------
        X : array-like, shape (n_samples, n_features)

        Returns
        -------
        numpy.ndarray of float64, shape (n_samples,)
        """
        return self.svc_.decision_function(X)

    def predict_proba(self, X):
        """Platt-scaled class probabilities, shape (n_samples, n_classes).

        Parameters
        ----------
        X : array-like, shape (n_samples, n_features)

        Returns
        -------
        numpy.ndarray of float64, shape (n_samples, n_classes)
        """
        return self.calibrated_.predict_proba(X)
