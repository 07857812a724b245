"""The paper's DNN as a scikit-learn classifier, with sample weights, a logit-pairing penalty and fine-tuning.

:class:`PaperDNNClassifier` trains :class:`~chiralfair.models.dnn.PaperDNN` exactly as
:func:`~chiralfair.models.dnn.train_dnn` does (Glorot init from a torch generator, Nadam, per-epoch shuffles from a
numpy generator, one intra-op thread): with no weights and no penalty the weights are bit-identical to
``train_dnn``'s for the same ``random_state``. On top:

- ``sample_weight``: when the weights sum to fewer rows than they weigh, each epoch draws ``round(sum(w))`` rows
  without replacement with probabilities in proportion to ``w``, so weights of ``1/k`` on ``k`` copies of each row
  keep the number of optimiser steps of the original data: the data's size does not change the fit
  (counterfactual augmentation). Weights of about one per row (reweighing) weight each row's loss instead.
- ``consistency`` (λ) with a ``domain``: the loss adds λ·mean|logit(x) − logit(x')| over each batch, where x' is a
  counterpart of x built by the domain as the discrimination check builds it (couplings applied; one that breaks a
  constraint is never used), drawn afresh each epoch, or every counterpart at once (``pairing="all"``)
  (counterfactual logit pairing, Garg et al. 2019; GRFT's repair).
- :meth:`fine_tune`: a copy trained further for some epochs from the fitted weights (the paper's retraining of
  the DNN, architecture: mitigation).

References
----------
.. [1] Garg, Perot, Limtiaco, Taly, Chi, Beutel. "Counterfactual Fairness in Text Classification through
   Robustness." AIES 2019 (counterfactual logit pairing).
.. [2] Ma et al. arXiv:2209.08321, §4.2 (architecture and training set-up), §4.4 (fine-tuning).
"""

from __future__ import annotations

import copy
import logging

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from .._random import as_generator, derive_seed
from .._validation import check_choice, check_float, check_int, check_training_data
from ..exceptions import ConfigError

logger = logging.getLogger(__name__)

PAIRINGS = ("draw", "all")


class PaperDNNClassifier(ClassifierMixin, BaseEstimator):
    """The paper's DNN (dense 30-20-15-10-5-1) as an sklearn classifier on int codes, labels {0, 1}.

    Parameters
    ----------
    epochs : int, default=30
        Passes over the training data (paper: 30).
    batch_size : int, default=128
    lr : float, default=0.01
        Nadam learning rate.
    standardize : bool, default=True
        A fixed ``(x - mean) / std`` input layer with the training moments (see :mod:`chiralfair.models.dnn`).
    device : str, default="cpu"
    consistency : float, default=0.0
        λ of the counterfactual logit-pairing penalty (0: none); needs ``domain``.
    group : float, default=0.0
        Weight of a group term (0: none); needs ``domain``: the loss adds, over each batch, for each label, the
        largest minus the smallest mean P(positive) of the protected groups present (a smooth equalized-odds gap,
        which holds the group metrics while the penalty above removes the use of the protected attributes).
    pairing : {"draw", "all"}, default="draw"
        Which counterparts the penalty pairs each row with: one possible counterpart drawn afresh each epoch, or
        every possible one (GRFT's repair, the counterfactual loss over all protected values; ``k - 1`` more
        forward passes per row for ``k`` combinations).
    domain : Domain, optional
        Builds the penalty's counterparts as the discrimination check does (couplings applied, counterparts that
        break a constraint left out).
    random_state : int, numpy.random.Generator or None, default=None
        Seeds the initial weights, the shuffles and the counterparts; None draws fresh entropy.

    Attributes
    ----------
    module_ : PaperDNN
        The fitted network (evaluation mode).
    classes_ : numpy.ndarray, ``[0, 1]``
    n_features_in_ : int

    References
    ----------
    .. [1] Garg et al., AIES 2019.
    """

    def __init__(self, *, epochs: int = 30, batch_size: int = 128, lr: float = 0.01, standardize: bool = True,
                 device: str = "cpu", consistency: float = 0.0, pairing: str = "draw", domain=None,
                 random_state=None, group: float = 0.0):
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.standardize = standardize
        self.device = device
        self.consistency = consistency
        self.group = group
        self.pairing = pairing
        self.domain = domain
        self.random_state = random_state

    @classmethod
    def from_module(cls, module, **params) -> PaperDNNClassifier:
        """A fitted classifier around a trained :class:`PaperDNN` (e.g. the zoo DNN under test), to fine-tune.

        Parameters
        ----------
        module : PaperDNN
            A trained network.
        **params
            Hyper-parameters of the classifier (as its constructor).

        Returns
        -------
        PaperDNNClassifier
            Fitted: ``module_`` is ``module``.
        """
        out = cls(**params)
        out.module_ = module
        out.classes_ = np.array([0, 1])
        out.n_features_in_ = int(module.n_features)
        return out

    def fit(self, X, y, sample_weight=None) -> PaperDNNClassifier:
        """Train a fresh network on int codes ``X`` (n_samples, n_features) and labels ``y`` in {0, 1}.

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
        y : array-like of int, shape (n_samples,)
            Labels in {0, 1}.
        sample_weight : array-like of float, shape (n_samples,), optional
            Non-negative weights of the rows in the loss.

        Returns
        -------
        PaperDNNClassifier
            ``self``, fitted.

        Raises
        ------
        ConfigError
            For labels other than {0, 1}, a bad hyper-parameter, a weight that is negative or not finite, or
            ``consistency > 0`` without a ``domain`` that fits ``X``.
        """
        from ..models.dnn import PaperDNN

        X, y = check_training_data(X, y)
        rng = as_generator(self.random_state)
        import torch
        init = torch.Generator().manual_seed(derive_seed(rng))
        mean, std = (X.mean(axis=0), _safe_std(X)) if self.standardize else (None, None)
        module = PaperDNN(X.shape[1], mean=mean, std=std)
        module.reset_parameters(init)
        self.module_ = module.to(self.device)
        self.classes_ = np.array([0, 1])
        self.n_features_in_ = int(X.shape[1])
        self._train(X, y, sample_weight, rng, check_int(self.epochs, "epochs", minimum=1))
        return self

    def fine_tune(self, X, y, *, epochs: int = 10, sample_weight=None, random_state=None) -> PaperDNNClassifier:
        """A copy trained ``epochs`` more passes on ``(X, y)`` from the fitted weights (a fresh Nadam).

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
        y : array-like of int, shape (n_samples,)
            Labels in {0, 1}.
        epochs : int, default=10
        sample_weight : array-like of float, shape (n_samples,), optional
        random_state : None, int or numpy.random.Generator, optional
            Drives the batches; default: the classifier's ``random_state``.

        Returns
        -------
        PaperDNNClassifier
            A fitted copy; ``self`` is unchanged.

        Raises
        ------
        ConfigError
            If the classifier is not fitted, or as :meth:`fit`.
        """
        if not hasattr(self, "module_"):
            raise ConfigError("fine_tune needs a fitted PaperDNNClassifier (call fit, or build it with from_module)")
        X, y = check_training_data(X, y)
        if X.shape[1] != self.n_features_in_:
            raise ConfigError(f"X has {X.shape[1]} columns; the network takes {self.n_features_in_}")
        tuned = copy.deepcopy(self)
        tuned._train(X, y, sample_weight, as_generator(random_state), check_int(epochs, "epochs", minimum=1))
        return tuned

    def predict_proba(self, X) -> np.ndarray:
        """P(y = 0) and P(y = 1), shape (n_samples, 2).

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Codes.

        Returns
        -------
        numpy.ndarray of float64, shape (n_samples, 2)
        """
        import torch

        from ..models.threads import single_intra_op_thread

        x = torch.as_tensor(np.asarray(X, dtype=np.float32), device=self.device)
        with torch.no_grad(), single_intra_op_thread():
            p = torch.sigmoid(self.module_.logit(x)).cpu().numpy()[:, 0].astype(np.float64)
        return np.column_stack([1.0 - p, p])

    def predict(self, X) -> np.ndarray:
        """Labels in {0, 1}, shape (n_samples,): P(y = 1) > 0.5.

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Codes.

        Returns
        -------
        numpy.ndarray of int64, shape (n_samples,)
        """
        return (self.predict_proba(X)[:, 1] > 0.5).astype(np.int64)

    # ------------------------------------------------------------------------------------------ training
    def _train(self, X, y, sample_weight, rng, epochs: int) -> None:
        import torch
        import torch.nn.functional as F  # noqa: N812 - the torch convention

        from ..models.threads import single_intra_op_thread

        batch_size = check_int(self.batch_size, "batch_size", minimum=1)
        lr = check_float(self.lr, "lr", minimum=0.0, exclusive_minimum=True)
        lam = check_float(self.consistency, "consistency", minimum=0.0)
        pairing = check_choice(self.pairing, "pairing", PAIRINGS)
        probabilities, epoch_rows, loss_weight = _epoch_draw(sample_weight, len(X))
        counterparts = _Counterparts(self.domain, X) if lam > 0 else None
        mu = check_float(self.group, "group", minimum=0.0)
        g_all = None
        if mu > 0:
            if self.domain is None or not getattr(self.domain, "protected", None):
                raise ConfigError("group > 0 needs domain=<the Domain of X> with its protected attributes set")
            from .reweighing import protected_groups
            g_all = torch.as_tensor(protected_groups(self.domain, X), device=self.device)
        module = self.module_.train()
        x_all = torch.as_tensor(X, dtype=torch.float32, device=self.device)
        y_all = torch.as_tensor(y, dtype=torch.float32, device=self.device)[:, None]
        w_all = None if loss_weight is None else torch.as_tensor(loss_weight, dtype=torch.float32,
                                                                 device=self.device)[:, None]
        optimizer = torch.optim.NAdam(module.parameters(), lr=lr)
        with single_intra_op_thread():
            for epoch in range(epochs):
                if probabilities is None:
                    order = rng.permutation(len(X))
                else:
                    order = rng.choice(len(X), size=epoch_rows, replace=False, p=probabilities)
                order_t = torch.as_tensor(order, device=self.device)
                x_epoch, y_epoch = x_all[order_t], y_all[order_t]
                g_epoch = None if g_all is None else g_all[order_t]
                w_epoch = None if w_all is None else w_all[order_t]
                x_cf = mask = None
                if counterparts is not None and pairing == "draw":
                    x_cf = torch.as_tensor(counterparts.draw(order, rng), dtype=torch.float32, device=self.device)
                elif counterparts is not None:
                    every, possible = counterparts.all(order)
                    x_cf = torch.as_tensor(every, dtype=torch.float32, device=self.device)
                    mask = torch.as_tensor(possible, dtype=torch.float32, device=self.device)
                total = 0.0
                for start in range(0, len(order), batch_size):
                    end = start + batch_size
                    xb, yb = x_epoch[start:end], y_epoch[start:end]
                    logit = module.logit(xb)
                    weight = None if w_epoch is None else w_epoch[start:end]
                    loss = F.binary_cross_entropy_with_logits(logit, yb, weight=weight)
                    if x_cf is not None and mask is None:
                        loss = loss + lam * (logit - module.logit(x_cf[start:end])).abs().mean()
                    elif x_cf is not None and mask is not None:
                        loss = loss + lam * _all_pairs_penalty(module, logit, x_cf[start:end], mask[start:end])
                    if g_epoch is not None:
                        loss = loss + mu * _group_gap(torch.sigmoid(logit[:, 0]), yb[:, 0], g_epoch[start:end])
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
                    total += float(loss.detach()) * len(xb)
                logger.debug("dnn epoch %d/%d: mean loss %.4f", epoch + 1, epochs, total / max(1, len(order)))
        module.eval()


def _group_gap(p, y, groups):
    """Per label, the largest minus the smallest mean ``p`` over the groups present in the batch, summed."""
    import torch

    one_hot = torch.nn.functional.one_hot(groups, int(groups.max()) + 1).to(p.dtype)  # (b, G)
    total = p.new_zeros(())
    for label in (0.0, 1.0):
        rows = (y == label).to(p.dtype)[:, None] * one_hot
        counts = rows.sum(0)
        present = counts > 0
        if int(present.sum()) < 2:
            continue
        means = (rows * p[:, None]).sum(0)[present] / counts[present]
        total = total + means.max() - means.min()
    return total


def _all_pairs_penalty(module, logit, every, possible):
    """Mean over the possible (row, counterpart) pairs of |logit(x) - logit(x')| (GRFT's repair: every value)."""
    b, k, d = every.shape
    gap = (logit - module.logit(every.reshape(b * k, d)).reshape(b, k)).abs() * possible
    return gap.sum() / possible.sum().clamp(min=1.0)


def _epoch_draw(sample_weight, n: int):
    """How weights act on an epoch: ``(probabilities, rows, None)`` or ``(None, n, loss weights)``.

    When the weights sum to fewer rows than they weigh (counterfactual augmentation's ``k`` copies at ``1/k``),
    each epoch draws that many rows without replacement in proportion to the weights, keeping the number of
    optimiser steps of the original data. Otherwise (weights of about 1 per row, such as reweighing's) every row
    is visited once per epoch and its loss weighted by ``w / mean(w)``. No weights: ``(None, n, None)``.
    """
    if sample_weight is None:
        return None, n, None
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise ConfigError(f"sample_weight must hold {n} finite weights >= 0 with a positive sum")
    rows = max(1, round(float(w.sum())))
    if rows < int(np.count_nonzero(w)):
        return w / w.sum(), rows, None
    return None, n, w / w.mean()


class _Counterparts:
    """Each row's counterparts as the discrimination check builds them: through the domain, couplings applied.

    :meth:`Domain.counterparts <chiralfair.domain.Domain.counterparts>` gives every combination of the protected
    values applied to the row (coupled columns changed with it, census's Husband <-> Wife). A counterpart equal to
    the row, or one that breaks a constraint of the domain (which cannot exist, so the check never queries it), is
    never paired. A row with no possible counterpart is paired with itself: its penalty is 0.
    """

    def __init__(self, domain, X: np.ndarray):
        if domain is None or domain.n_features != X.shape[1] or not domain.protected:
            raise ConfigError("consistency > 0 needs domain=<the Domain of X> with its protected attributes set")
        n, d = X.shape
        every = domain.counterparts(X)  # (n, k, d)
        possible = (every != X[:, None, :]).any(axis=2)
        if domain.constraints:
            possible &= domain.satisfies(every.reshape(-1, d)).reshape(possible.shape)
        self.X, self.every, self.possible = X, every, possible

    def draw(self, order: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One possible counterpart per row of ``order``, drawn uniformly, shape (len(order), n_features)."""
        possible = self.possible[order]
        pick = np.where(possible, rng.random(possible.shape), -1.0).argmax(axis=1)
        return np.where(possible.any(axis=1)[:, None], self.every[order, pick], self.X[order])

    def all(self, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every counterpart of each row of ``order`` (n, k, n_features) and which are possible (n, k)."""
        return self.every[order], self.possible[order]


def _safe_std(X: np.ndarray) -> np.ndarray:
    std = X.std(axis=0)
    return np.where(std > 0, std, 1.0)
