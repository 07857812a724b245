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
        Unfitted; cloned and fitted on ``X[:, domain.non_protected]`` (``removal="drop"``) or on ``X`` with the
        protected columns held at one value (``removal="constant"``).
    domain : Domain
    removal : {"drop", "constant"}, default="drop"
        How the protected columns leave the input. ``"constant"`` serves an estimator that needs every column, such
        as a Pipeline fitted on the raw frame (its ColumnTransformer selects ``sex`` by name): the columns are set
        to the first combination of protected values (:attr:`Domain.combinations`) in fitting and predicting, so
        they carry no information and every counterpart gets the same label, as with ``"drop"``.

    Attributes
    ----------
    estimator_ : the fitted clone (it takes the input :meth:`_model_input` makes)
    info_ : dict
        ``n_columns_removed``, ``removal``.
    """

    def __init__(self, estimator=None, domain=None, removal="drop"):
        self.estimator = estimator
        self.domain = domain
        self.removal = removal

    def _fit(self, X, y, sample_weight=None) -> None:
        if self.estimator is None:
            raise ConfigError("Unawareness needs estimator=<an sklearn classifier>")
        if self.removal not in ("drop", "constant"):
            raise ConfigError(f"removal must be 'drop' or 'constant', got {self.removal!r}")
        inner = clone(self.estimator)
        if sample_weight is None:
            self.estimator_ = fit_plain(inner, self._model_input(X), y)
        else:
            from .base import fit_with_weights
            self.estimator_ = fit_with_weights(inner, self._model_input(X), y, np.asarray(sample_weight))
        self.info_ = {"n_columns_removed": int(len(self.domain.protected)), "removal": self.removal}

    def _model_input(self, X: np.ndarray) -> np.ndarray:
        if self.removal == "drop":
            return X[:, self.domain.non_protected]
        held = X.copy()
        held[:, list(self.domain.protected)] = self.domain.combinations[0]
        return held
