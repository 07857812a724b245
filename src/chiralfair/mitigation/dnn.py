"""The paper's DNN as a scikit-learn classifier, with sample weights, a logit-pairing penalty and fine-tuning.

:class:`PaperDNNClassifier` trains :class:`~chiralfair.models.dnn.PaperDNN` exactly as
:func:`~chiralfair.models.dnn.train_dnn` does (Glorot init from a torch generator, Nadam, per-epoch shuffles from a
numpy generator, one intra-op thread): with no weights and no penalty the weights are bit-identical to
``train_dnn``'s for the same ``random_state``. On top:

- ``sample_weight``: each epoch draws ``round(sum(w))`` rows without replacement with probabilities in proportion to
  ``w`` (exactly uniform for equal weights), so weights of ``1/k`` on ``k`` copies of each row keep the number of
  optimiser steps of the original data: the data's size does not change the fit (counterfactual augmentation).
- ``consistency`` (λ) with a ``domain``: the loss adds λ·mean|logit(x) − logit(x')| over each batch, where x' is x
  with its protected attributes set to another combination of their values, drawn afresh each epoch
  (counterfactual logit pairing, Garg et al. 2019, with the counterparts of the discrimination check).
- :meth:`fine_tune`: a copy trained further for some epochs from the fitted weights (the paper's retraining of
  the DNN, design §8).

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
from .._validation import check_float, check_int, check_training_data
from ..exceptions import ConfigError

logger = logging.getLogger(__name__)


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
    domain : Domain, optional
        Names the protected attributes whose values the penalty's counterparts take.
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
                 device: str = "cpu", consistency: float = 0.0, domain=None, random_state=None):
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.standardize = standardize
        self.device = device
        self.consistency = consistency
        self.domain = domain
        self.random_state = random_state

    @classmethod
    def from_module(cls, module, **params) -> PaperDNNClassifier:
        """A fitted classifier around a trained :class:`PaperDNN` (e.g. the zoo DNN under test), to fine-tune."""
        out = cls(**params)
        out.module_ = module
        out.classes_ = np.array([0, 1])
        out.n_features_in_ = int(module.n_features)
        return out

    def fit(self, X, y, sample_weight=None) -> PaperDNNClassifier:
        """Train a fresh network on int codes ``X`` (n_samples, n_features) and labels ``y`` in {0, 1}.

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
        """P(y = 0) and P(y = 1), shape (n_samples, 2)."""
        import torch

        from ..models.threads import single_intra_op_thread

        x = torch.as_tensor(np.asarray(X, dtype=np.float32), device=self.device)
        with torch.no_grad(), single_intra_op_thread():
            p = torch.sigmoid(self.module_.logit(x)).cpu().numpy()[:, 0].astype(np.float64)
        return np.column_stack([1.0 - p, p])

    def predict(self, X) -> np.ndarray:
        """Labels in {0, 1}, shape (n_samples,): P(y = 1) > 0.5."""
        return (self.predict_proba(X)[:, 1] > 0.5).astype(np.int64)

    # ------------------------------------------------------------------------------------------ training
    def _train(self, X, y, sample_weight, rng, epochs: int) -> None:
        import torch
        import torch.nn.functional as F  # noqa: N812 - the torch convention

        from ..models.threads import single_intra_op_thread

        batch_size = check_int(self.batch_size, "batch_size", minimum=1)
        lr = check_float(self.lr, "lr", minimum=0.0, exclusive_minimum=True)
        lam = check_float(self.consistency, "consistency", minimum=0.0)
        probabilities, epoch_rows = _epoch_draw(sample_weight, len(X))
        counterparts = _CounterpartDraw(self.domain, X) if lam > 0 else None
        module = self.module_.train()
        x_all = torch.as_tensor(X, dtype=torch.float32, device=self.device)
        y_all = torch.as_tensor(y, dtype=torch.float32, device=self.device)[:, None]
        optimizer = torch.optim.NAdam(module.parameters(), lr=lr)
        with single_intra_op_thread():
            for epoch in range(epochs):
                if probabilities is None:
                    order = rng.permutation(len(X))
                else:
                    order = rng.choice(len(X), size=epoch_rows, replace=False, p=probabilities)
                order_t = torch.as_tensor(order, device=self.device)
                x_epoch, y_epoch = x_all[order_t], y_all[order_t]
                x_cf = None if counterparts is None else torch.as_tensor(
                    counterparts.draw(order, rng), dtype=torch.float32, device=self.device)
                total = 0.0
                for start in range(0, len(order), batch_size):
                    xb, yb = x_epoch[start:start + batch_size], y_epoch[start:start + batch_size]
                    logit = module.logit(xb)
                    loss = F.binary_cross_entropy_with_logits(logit, yb)
                    if x_cf is not None:
                        loss = loss + lam * (logit - module.logit(x_cf[start:start + batch_size])).abs().mean()
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
                    total += float(loss.detach()) * len(xb)
                logger.debug("dnn epoch %d/%d: mean loss %.4f", epoch + 1, epochs, total / max(1, len(order)))
        module.eval()


def _epoch_draw(sample_weight, n: int):
    """Probabilities and rows per epoch for weighted epochs, or (None, n) for plain shuffles."""
    if sample_weight is None:
        return None, n
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise ConfigError(f"sample_weight must hold {n} finite weights >= 0 with a positive sum")
    rows = min(int(np.count_nonzero(w)), max(1, round(float(w.sum()))))
    return w / w.sum(), rows


class _CounterpartDraw:
    """Each row with its protected attributes set to another combination of their values, drawn uniformly."""

    def __init__(self, domain, X: np.ndarray):
        if domain is None or domain.n_features != X.shape[1] or not domain.protected:
            raise ConfigError("consistency > 0 needs domain=<the Domain of X> with its protected attributes set")
        self.X, self.columns = X, list(domain.protected)
        self.combinations = domain.combinations
        sizes = [a.size for a in domain.attributes]
        position = domain.protected_value_index(X)
        valid = (position >= 0).all(axis=1)
        own = np.full(len(X), -1, dtype=np.int64)
        if valid.any():
            own[valid] = np.ravel_multi_index(position[valid].T, sizes)
        self.own = own

    def draw(self, order: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        k = len(self.combinations)
        own = self.own[order]
        pick = np.where(own >= 0, (own + rng.integers(1, max(2, k), size=len(order))) % k,
                        rng.integers(0, k, size=len(order)))
        out = self.X[order].copy()
        out[:, self.columns] = self.combinations[pick]
        return out


def _safe_std(X: np.ndarray) -> np.ndarray:
    std = X.std(axis=0)
    return np.where(std > 0, std, 1.0)
