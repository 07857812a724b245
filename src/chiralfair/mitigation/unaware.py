"""Method ``unaware``: the protected attributes removed from the model's input.

The estimator is fitted on the non-protected columns only and predicts from them, so every counterpart of an
input gets its label: zero IDIs by construction (design §2's definition can see nothing else). That is why its
cost is the point: F1, accuracy and the group metrics beside the other methods, and the proxies it leaves in place
(a non-protected column correlated with the protected one still carries it into the decision).

References
----------
.. [1] Dwork, Hardt, Pitassi, Reingold, Zemel. "Fairness Through Awareness." ITCS 2012 (why unawareness is not
   enough).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import clone

from ..exceptions import ConfigError
from .base import MitigationMethod, fit_plain, register_method


@register_method("unaware")
class Unawareness(MitigationMethod):
    """The estimator fitted and applied without the protected columns.

    Parameters
    ----------
    estimator : sklearn classifier
        Unfitted; cloned and fitted on ``X[:, domain.non_protected]``.
    domain : Domain

    Attributes
    ----------
    estimator_ : the fitted clone (it takes the non-protected columns only)
    info_ : dict
        ``n_columns_removed``.
    """

    def __init__(self, estimator=None, domain=None):
        self.estimator = estimator
        self.domain = domain

    def _fit(self, X, y, sample_weight=None) -> None:
        if self.estimator is None:
            raise ConfigError("Unawareness needs estimator=<an sklearn classifier>")
        inner = clone(self.estimator)
        if sample_weight is None:
            self.estimator_ = fit_plain(inner, self._model_input(X), y)
        else:
            from .base import fit_with_weights
            self.estimator_ = fit_with_weights(inner, self._model_input(X), y, np.asarray(sample_weight))
        self.info_ = {"n_columns_removed": int(len(self.domain.protected))}

    def _model_input(self, X: np.ndarray) -> np.ndarray:
        return X[:, self.domain.non_protected]
