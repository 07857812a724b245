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

from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.base import clone

from ..exceptions import ConfigError, ModelCapabilityError
from .base import MitigationMethod, fit_plain, register_method

if TYPE_CHECKING:
    from ..models.protocol import CountingModel


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

    @classmethod
    def candidate_params(cls, run) -> list[dict]:
        """``auto``'s candidates: each reweighing strength (:mod:`.auto`).

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
    def cannot_run(cls, run, params) -> str | None:
        """As :meth:`MitigationMethod.cannot_run`; also a model fed the data's values, refitted in its own language.

        Parameters
        ----------
        run : MitigationRun
        params : dict

        Returns
        -------
        str or None
        """
        from .refit import refits_in_its_own_language

        if refits_in_its_own_language(run.model, params) and run.model.language.as_values:
            return (f"method 'unaware' cannot refit model {run.model.name!r}, which is fed the data's values "
                    "(model_input='values'): the blinding it saves with the model is kept by column name (a frame) "
                    "or by code, neither of which such a model takes; use method 'counterfactual' or 'paper'")
        return super().cannot_run(run, params)

    @classmethod
    def in_its_own_language(cls, run, params, added=None):
        """Your estimator, blind, in its own values and labels.

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
        return unaware_in_its_own_language(run.model, run.dataset, run.train, params, run.train_seed)

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


def unaware_in_its_own_language(model: CountingModel, dataset, train, params: dict, seed: int):
    """Unawareness in the user's language: a copy of the user's estimator fitted on the blinded training rows.

    As :class:`~chiralfair.mitigation.unaware.Unawareness`, with the blinding saved in the model's own raw values.

    Parameters
    ----------
    model : CountingModel
    dataset : Dataset
    train : numpy.ndarray of int64
    params : dict
        ``reweigh``.
    seed : int

    Returns
    -------
    retrained : CountingModel
        Its estimator is a scikit-learn Pipeline (:func:`~chiralfair.mitigation.blinding.blinded_pipeline`): a
        :class:`~chiralfair.mitigation.blinding.Blinder` that blinds the protected and coupled columns in the
        model's own input (your raw values), then your estimator refitted on blinded rows.
    info : dict

    Raises
    ------
    ConfigError
        For another parameter, or a coupling a raw frame cannot be blinded by (:func:`.blinding.frame_blinding`).
    """
    from .blinding import blind, blinded_pipeline, codes_blinding, frame_blinding
    from .fitting import fit_plain, fit_with_weights, unfitted_copy
    from .refit import like_the_model, training_input
    from .reweighing import reweighed

    unknown = set(params) - {"reweigh"}
    if unknown:
        raise ConfigError(f"unaware: unknown parameters {sorted(unknown)} for a model refitted in its own language "
                          "(reweigh)")
    domain, language = dataset.domain, model.language
    if language.as_values:
        raise ModelCapabilityError(
            f"method 'unaware' cannot refit model {model.name!r}, which is fed the data's values "
            "(model_input='values'): the blinding it saves with the model is kept by column name (a frame) or by "
            "code, neither of which such a model takes; use method 'counterfactual' or 'paper'")
    train = np.asarray(train, dtype=np.int64)
    X, y = dataset.X[train], dataset.y[train]
    codes = codes_blinding(domain)
    weight = reweighed(domain, X, y, params.get("reweigh", 0.0))
    inputs, labels = training_input(model, dataset, blind(X, codes), train), language.model_labels(y)
    copy = unfitted_copy(model.estimator, seed)
    fitted = fit_plain(copy, inputs, labels) if weight is None else fit_with_weights(copy, inputs, labels, weight)
    blinding: dict[str, Any] = (frame_blinding(domain, language.to_frame, language.feature_names)
                                if language.takes_frame else codes)
    info = {"n_columns_blinded": int(len(domain.protected) + len(domain.coupled_columns)), "how": "Unawareness",
            "reweigh": float(params.get("reweigh", 0.0)),
            "language": "refitted in the model's own input and labels, the blinding saved with it"}
    return like_the_model(blinded_pipeline(fitted, blinding), model, f"unaware-{model.name}"), info
