"""Method ``unaware``: the protected attributes (and the columns coupled to them) blinded in the model's input.

Every input reaches the estimator as one representative of its counterparts: the protected attributes at their
first combination of values, and each coupled column moved with them (:meth:`Domain.counterpart_rows
<chiralfair.domain.Domain.counterpart_rows>` at combination 0; census's relationship Husband <-> Wife then reads as
the role it plays, architecture: counterparts that could exist). An input and each of its counterparts are one input to
the estimator, so they get one label: zero IDIs by construction, with or without couplings. Blinding rather than
dropping the columns keeps the input's width, so a raw-frame pipeline or the DNN is refit in its own language; a
constant column tells it nothing.

That is why its cost is the point: F1, accuracy and the group metrics beside the other methods, and the proxies it
leaves in place (a non-protected column correlated with the protected one still carries it into the decision).

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
    """The estimator fitted and applied on inputs whose protected side is blinded (see the module docstring).

    Parameters
    ----------
    estimator : sklearn classifier
        Unfitted; cloned and fitted on the blinded codes, shape (n_samples, n_features).
    domain : Domain
    reweigh : float, default=0.0
        Strength of the reweighing of the training rows by group and label (:mod:`.reweighing`; 0: none).

    Attributes
    ----------
    estimator_ : the fitted clone (it takes blinded codes)
    info_ : dict
        ``n_columns_blinded``: the protected columns and the coupled ones.
    """

    def __init__(self, estimator=None, domain=None, *, reweigh: float = 0.0):
        self.estimator = estimator
        self.domain = domain
        self.reweigh = reweigh

    def _fit(self, X, y, sample_weight=None) -> None:
        from .reweighing import reweighed

        if self.estimator is None:
            raise ConfigError("Unawareness needs estimator=<an sklearn classifier>")
        sample_weight = reweighed(self.domain, X, y, self.reweigh, sample_weight)
        inner = clone(self.estimator)
        if sample_weight is None:
            self.estimator_ = fit_plain(inner, self._model_input(X), y)
        else:
            from .base import fit_with_weights
            self.estimator_ = fit_with_weights(inner, self._model_input(X), y, np.asarray(sample_weight))
        self.info_ = {"n_columns_blinded": int(len(self.domain.protected) + len(self.domain.coupled_columns)),
                      "reweigh": float(self.reweigh)}

    def _model_input(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.int64)
        return self.domain.counterpart_rows(X, np.zeros(len(X), dtype=np.int64))

    def deployable_model(self):
        """The fitted model as it is kept and saved: the estimator behind its blinding, predicting on codes.

        Returns
        -------
        sklearn.pipeline.Pipeline or BlindedNetwork
            A Pipeline of a :class:`~chiralfair.mitigation.blinding.Blinder` and the fitted estimator
            (:func:`~chiralfair.mitigation.blinding.blinded_pipeline`, skops), or for the paper's DNN a
            :class:`~chiralfair.mitigation.blinded_network.BlindedNetwork` (TorchScript); ``self`` when the labels
            are not {0, 1} (the saved model would not speak them).
        """
        from .blinding import blinded_pipeline, codes_blinding
        from .dnn import PaperDNNClassifier

        if [str(c) for c in self.classes_] != ["0", "1"]:
            return self
        blinding = codes_blinding(self.domain)
        if isinstance(self.estimator_, PaperDNNClassifier):
            from .blinded_network import BlindedNetwork
            return BlindedNetwork(self.estimator_.module_, blinding)
        return blinded_pipeline(self.estimator_, blinding)
