"""Method ``consistency``: counterfactual logit pairing for torch models, λ chosen on a validation split.

The paper's DNN is trained from scratch with its own recipe plus the penalty λ·mean|logit(x) − logit(x')|, x' being
a counterpart of x exactly as the discrimination check builds it (:meth:`Domain.counterparts
<chiralfair.domain.Domain.counterparts>`: another combination of the protected values, coupled columns moved with
it, a counterpart that breaks a constraint never used), drawn afresh each epoch, or every counterpart at once
(``pairing="all"``, GRFT's repair) (:class:`~chiralfair.mitigation.dnn.PaperDNNClassifier`). The protected
attributes stay an input: the penalty teaches the network not to use them. ``reweigh`` adds the reweighing of the
training rows by group and label (:mod:`.reweighing`), the knob that holds the group metrics.

λ: with ``lam="auto"`` a validation split is carved from the training rows
(:func:`~chiralfair.mitigation.validation.validation_split`); a reference network (λ = 0) and one per candidate
in ``lams`` are trained on the other rows; the chosen λ has the lowest IDI rate over the validation rows among
the candidates whose validation F1 is at most ``max_f1_loss`` below the reference's (ties: the smaller λ); if
none is, the candidate with the highest validation F1. The final network is trained on all training rows with it.
Cost: ``len(lams) + 2`` trainings (one with ``lam`` given). With ``fine_tune_epochs`` the network starts from the
fitted weights of the model under test (its decision boundary, and so its F1, is kept) and the candidates from a
network fitted on the fitting rows only.

Why not inFairness's SenSeI: it installs (0.2.3) but penalises an adversarial perturbation inside a learned fair
metric's ball rather than the exact counterparts that define an IDI, and needs its own auditor and metric fitted
per dataset; the penalty here is the few lines of torch the definition asks for.

References
----------
.. [1] Garg, Perot, Limtiaco, Taly, Chi, Beutel. "Counterfactual Fairness in Text Classification through
   Robustness." AIES 2019.
.. [2] Yurochkin, Sun. "SenSeI: Sensitive Set Invariance for Enforcing Individual Fairness." ICLR 2021.
"""

from __future__ import annotations

import copy

from sklearn.base import clone

from .._random import as_generator, derive_seed
from .._validation import check_float
from ..exceptions import ConfigError, ModelCapabilityError
from .base import MitigationMethod, register_method
from .dnn import PaperDNNClassifier
from .validation import validation_split

DEFAULT_LAMS: tuple[float, ...] = (0.3, 1.0, 3.0, 10.0)


@register_method("consistency")
class CounterfactualLogitPairing(MitigationMethod):
    """The paper's DNN trained with a counterfactual logit-pairing penalty.

    Parameters
    ----------
    estimator : PaperDNNClassifier, optional
        The architecture and training recipe (default ``PaperDNNClassifier()``: the paper's); cloned. Its
        ``random_state``, when None, is drawn from this method's.
    domain : Domain
    lam : float or "auto", default="auto"
        λ >= 0, or chosen on a validation split from ``lams``.
    lams : sequence of float, default=(0.3, 1.0, 3.0, 10.0)
    validation_size : float, default=0.2
        Share of the training rows held out to choose λ.
    max_f1_loss : float, default=0.01
        F1 a candidate may lose on the validation rows against λ = 0.
    fine_tune_epochs : int, optional
        Train this many epochs with the penalty from the estimator's fitted weights (from a fit on the same rows
        if it is not fitted) instead of from scratch. λ candidates then fine-tune a network fitted on the
        fitting rows only, so the validation rows stay unseen.
    pairing : {"draw", "all"}, default="draw"
        One counterpart per row and epoch, or every counterpart (GRFT's repair).
    reweigh : float, default=0.0
        Strength of the reweighing of the training rows by group and label (0: none).
    group : float, default=0.0
        Weight of the group term of the network's loss (:class:`~chiralfair.mitigation.dnn.PaperDNNClassifier`
        ``group``: the equalized-odds gap of its mean P(positive) over the protected groups in each batch).
    random_state : int, numpy.random.Generator or None, default=None
        Of the validation split (and of the network, see ``estimator``).

    Attributes
    ----------
    estimator_ : PaperDNNClassifier
        Trained on all rows with ``lam_``.
    lam_ : float
    info_ : dict
        ``lam``, ``how`` (``"given"`` or ``"validation"``) and, when chosen, ``candidates``: one dict per λ
        (0 first) with ``validation_f1`` and ``validation_idi_rate``, and ``n_validation``.

    Raises
    ------
    ModelCapabilityError
        In :meth:`fit`, if ``estimator`` is not a :class:`PaperDNNClassifier`.

    References
    ----------
    .. [1] Garg et al., AIES 2019.
    """

    zoo_models = ("dnn",)

    @classmethod
    def cannot_run(cls, run, params) -> str | None:
        """Why not: the model is not the zoo DNN (the penalty is on a torch network's logits).

        Parameters
        ----------
        run : MitigationRun
        params : dict

        Returns
        -------
        str or None
        """
        from .kinds import is_zoo_dnn

        if run.trainer is not None or is_zoo_dnn(run.model):
            return super().cannot_run(run, params)
        return (f"method 'consistency' trains a torch network with a logit penalty; model {run.model.name!r} is "
                    "not the zoo DNN. Use counterfactual or unaware for it")

    @classmethod
    def candidate_params(cls, run) -> list[dict]:
        """``auto``'s candidates on the zoo DNN (:mod:`.auto`): fine-tuned at λ × reweighing, and from scratch.

        Parameters
        ----------
        run : MitigationRun

        Returns
        -------
        list of dict
        """
        from .auto import FINE_TUNE_EPOCHS, GROUP_WEIGHTS, REWEIGH_STRENGTHS, SCRATCH_LAM, TORCH_LAMS

        tuned = [{"lam": lam, "reweigh": r, "fine_tune_epochs": FINE_TUNE_EPOCHS}
                 for lam in TORCH_LAMS for r in REWEIGH_STRENGTHS]
        grouped = [{"lam": SCRATCH_LAM, "group": g, "fine_tune_epochs": FINE_TUNE_EPOCHS} for g in GROUP_WEIGHTS]
        return tuned + grouped + [{"lam": SCRATCH_LAM, "reweigh": 0.5}]

    def choice_text(self) -> str | None:
        """The λ and how it was chosen (the candidates on the validation rows), and where training started.

        Returns
        -------
        str
        """
        info = self.info_
        return (f"λ = {self.lam_:g}" + (f" ({info['why']}; candidates " + ", ".join(
            f"λ={c['lam']:g}: F1 {c['validation_f1']:.3f}, IDI rate {c['validation_idi_rate']:.2%}"
            for c in info["candidates"]) + f" on {info['n_validation']} validation rows)"
            if info.get("how") == "validation" else " (given)")) + f"; {info['start']}"

    def __init__(self, estimator=None, domain=None, *, lam="auto", lams=DEFAULT_LAMS, validation_size: float = 0.2,
                 max_f1_loss: float = 0.01, fine_tune_epochs: int | None = None, pairing: str = "draw",
                 reweigh: float = 0.0, group: float = 0.0, random_state=None):
        self.estimator = estimator
        self.domain = domain
        self.lam = lam
        self.lams = lams
        self.validation_size = validation_size
        self.max_f1_loss = max_f1_loss
        self.fine_tune_epochs = fine_tune_epochs
        self.pairing = pairing
        self.reweigh = reweigh
        self.group = group
        self.random_state = random_state

    def _fit(self, X, y, sample_weight=None) -> None:
        from .reweighing import reweighed

        weight = reweighed(self.domain, X, y, self.reweigh, sample_weight)
        template = PaperDNNClassifier() if self.estimator is None else self.estimator
        if not isinstance(template, PaperDNNClassifier):
            raise ModelCapabilityError(
                f"consistency trains a torch network with a penalty on its logits; {type(template).__name__} is not "
                "a PaperDNNClassifier (the zoo DNN). Use counterfactual or unaware for other models")
        rng = as_generator(self.random_state)
        start = None
        if self.fine_tune_epochs is not None:
            from .counterfactual import fitted_start
            start = fitted_start(template, X, y)
        template = clone(template).set_params(domain=self.domain, pairing=self.pairing, group=self.group)
        if template.random_state is None:
            template.set_params(random_state=derive_seed(rng))
        if self.lam == "auto":
            lam, info = self._choose(template, X, y, weight, derive_seed(rng))
        else:
            lam, info = check_float(self.lam, "lam", minimum=0.0), {"how": "given"}
        self.lam_ = float(lam)
        if start is None:
            self.estimator_ = template.set_params(consistency=self.lam_).fit(X, y, sample_weight=weight)
        else:
            self.estimator_ = self._tuned(start, self.lam_, X, y, weight)
        self.info_ = {"lam": self.lam_, **info, "pairing": self.pairing, "reweigh": float(self.reweigh),
                      "start": "scratch" if start is None else
                      f"fine-tuned {self.fine_tune_epochs} epochs from the model's weights"}

    def deployable_model(self):
        """The fitted network as it is saved (TorchScript): it takes the codes as they are.

        Returns
        -------
        torch.nn.Module
        """
        from .counterfactual import deployable_estimator
        return deployable_estimator(self)

    def _tuned(self, start: PaperDNNClassifier, lam: float, X, y, weight) -> PaperDNNClassifier:
        epochs = self.fine_tune_epochs
        if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
            raise ConfigError(f"fine_tune_epochs must be an int >= 1, got {epochs!r}")
        base = copy.deepcopy(start).set_params(consistency=lam, domain=self.domain, pairing=self.pairing,
                                                 group=self.group)
        return base.fine_tune(X, y, epochs=epochs, sample_weight=weight, random_state=start.random_state)

    def _choose(self, template: PaperDNNClassifier, X, y, weight, seed: int):
        from sklearn.metrics import f1_score

        from ..models.adapters import as_model
        from ..oracle import DiscriminationCheck

        lams = [check_float(v, "lams", minimum=0.0, exclusive_minimum=True) for v in self.lams]
        if not lams:
            raise ConfigError("lams must hold at least one λ > 0 to choose from")
        max_loss = check_float(self.max_f1_loss, "max_f1_loss", minimum=0.0)
        fit_rows, val_rows = validation_split(y, self.validation_size, random_state=seed)
        candidates = []
        w = None if weight is None else weight[fit_rows]
        base = None if self.fine_tune_epochs is None else clone(template).fit(X[fit_rows], y[fit_rows])
        for lam in [0.0, *lams]:
            if base is None:
                fitted = clone(template).set_params(consistency=lam).fit(X[fit_rows], y[fit_rows], sample_weight=w)
            else:
                fitted = self._tuned(base, lam, X[fit_rows], y[fit_rows], w)
            predicted = fitted.predict(X[val_rows])
            rate = float(DiscriminationCheck(as_model(fitted, name="candidate"), self.domain)
                         .is_idi(X[val_rows]).mean())
            candidates.append({"lam": lam, "validation_f1": float(f1_score(y[val_rows], predicted, zero_division=0)),
                               "validation_idi_rate": rate})
        reference = candidates[0]["validation_f1"]
        admissible = [c for c in candidates[1:] if reference - c["validation_f1"] <= max_loss]
        if admissible:
            chosen = min(admissible, key=lambda c: (c["validation_idi_rate"], c["lam"]))
            why = f"lowest validation IDI rate within {max_loss:g} F1 of λ=0"
        else:
            chosen = max(candidates[1:], key=lambda c: (c["validation_f1"], -c["lam"]))
            why = f"no λ kept validation F1 within {max_loss:g} of λ=0: the one with the highest validation F1"
        return chosen["lam"], {"how": "validation", "why": why, "candidates": candidates,
                               "n_validation": int(len(val_rows))}
