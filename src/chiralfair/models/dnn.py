"""The paper's DNN in torch: dense 30-20-15-10-5-1, ReLU, sigmoid output, trained with Nadam.

Ma et al. (I&D, §4.2) and ADF train this network with Keras: binary cross-entropy, Nadam with learning rate
0.01, batch 128, 30 epochs, on the 60% training split. This module rebuilds it in torch with Keras's default
initialisation (Glorot-uniform weights, zero biases) and makes training reproducible bit for bit from a
``random_state``: one ``torch.Generator`` draws the initial weights and one numpy generator draws each epoch's
shuffle, so no global random state is read or written.

Input standardisation (``standardize=True``, the default) is a fixed affine layer, ``(x - mean) / std`` with
the training data's moments, stored as buffers inside the module. The model under test therefore still takes
the raw integer codes, and ``input_gradient`` is the gradient with respect to those codes. The paper feeds the
raw codes to the first dense layer (``standardize=False`` reproduces that). Measured on the 60/40 splits of
the ADF-encoded data (median test F1 of class 1): census 0.610 standardised vs 0.606 raw over six splits (no
difference); bank 0.567 vs 0.491 over three splits (raw codes such as ``balance`` in [-20, 179] hurt). So
standardising is our default.

Other departures from the Keras original, both numerical: the loss is computed from the logit
(``binary_cross_entropy_with_logits``) instead of from a probability clipped to [1e-7, 1 - 1e-7], and Nadam's
epsilon is torch's 1e-8 instead of Keras's 1e-7. torch's ``NAdam`` uses Keras's momentum schedule
(``momentum_decay=0.004``). Training runs on one intra-op thread
(see :func:`~chiralfair.models.threads.single_intra_op_thread`).

References
----------
Ma, M. et al. "Enhanced Fairness Testing via Generating Effective Initial Individual Discriminatory
Instances", arXiv:2209.08321, §4.2.
Zhang, P. et al. "White-box Fairness Testing through Adversarial Sampling", ICSE 2020 (ADF), §4.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, cast

import numpy as np

from .._random import RandomState, as_generator, derive_seed
from .._validation import check_float, check_int, check_training_data
from ..exceptions import ConfigError
from ._torch import require_torch
from .threads import single_intra_op_thread

# Without torch, importing this module raises MissingDependencyError (an ImportError) saying how to install it.
if TYPE_CHECKING:  # the real module, so that type checkers see torch's types
    import torch
else:
    torch = require_torch("chiralfair.models.dnn (the paper's DNN)")
F = torch.nn.functional  # noqa: N816 - the torch convention

logger = logging.getLogger(__name__)

HIDDEN_LAYERS: tuple[int, ...] = (30, 20, 15, 10, 5)


class PaperDNN(torch.nn.Module):
    """Dense network ``d → 30 → 20 → 15 → 10 → 5 → 1`` with ReLU and a sigmoid output.

    Parameters
    ----------
    n_features : int
        Width ``d`` of the encoded input.
    mean, std : array-like of shape (n_features,), optional
        Moments of the training data used by the fixed input standardisation ``(x - mean) / std``. Omitted:
        the identity (the paper's raw-code input).

    Notes
    -----
    ``forward`` returns P(y = 1), shape (n_samples, 1); :meth:`logit` returns the pre-sigmoid output that
    training uses (``binary_cross_entropy_with_logits`` is the numerically stable form of the same loss).
    """

    if TYPE_CHECKING:  # the buffers, as tensors; not at run time, where TorchScript cannot read the string annotations
        input_mean: torch.Tensor
        input_std: torch.Tensor

    def __init__(self, n_features: int, *, mean=None, std=None):
        super().__init__()
        self.n_features = check_int(n_features, "n_features", minimum=1)
        mean = np.zeros(n_features) if mean is None else np.asarray(mean, dtype=np.float64)
        std = np.ones(n_features) if std is None else np.asarray(std, dtype=np.float64)
        if mean.shape != (n_features,) or std.shape != (n_features,):
            raise ConfigError(f"mean and std must have shape ({n_features},), "
                              f"got {mean.shape} and {std.shape}")
        if not (np.all(np.isfinite(std)) and np.all(std > 0)):
            raise ConfigError("std must be finite and > 0 for every feature")
        self.register_buffer("input_mean", torch.as_tensor(mean, dtype=torch.float32))
        self.register_buffer("input_std", torch.as_tensor(std, dtype=torch.float32))
        widths = (n_features, *HIDDEN_LAYERS, 1)
        layers: list[torch.nn.Module] = []
        for i, (a, b) in enumerate(zip(widths[:-1], widths[1:], strict=True)):
            # no draw from torch's global generator (its state is restored); reset_parameters draws the weights.
            # Not skip_init: its meta-device path imports torch.fx's symbolic shapes and sympy (1.5 s of a
            # command that otherwise never needs them).
            with torch.random.fork_rng(devices=[]):
                layers.append(torch.nn.Linear(a, b))
            if i < len(widths) - 2:
                layers.append(torch.nn.ReLU())
        self.layers = torch.nn.Sequential(*layers)
        self.reset_parameters(torch.Generator().manual_seed(0))

    def logit(self, x: torch.Tensor) -> torch.Tensor:
        """Pre-sigmoid output, shape (n_samples, 1), for float32 inputs of shape (n_samples, n_features).

        Parameters
        ----------
        x : torch.Tensor of float32, shape (n_samples, n_features)

        Returns
        -------
        torch.Tensor, shape (n_samples, 1)
        """
        return self.layers((x - self.input_mean) / self.input_std)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """P(y = 1), shape (n_samples, 1).

        Parameters
        ----------
        x : torch.Tensor of float32, shape (n_samples, n_features)

        Returns
        -------
        torch.Tensor, shape (n_samples, 1)
        """
        return torch.sigmoid(self.logit(x))

    def forward_unhooked(self, x: torch.Tensor) -> torch.Tensor | None:
        """:meth:`forward` by the same torch operations, without calling each layer as a module; None if it cannot.

        Calling the network's twelve modules one by one (``nn.Module.__call__`` and its hook dispatch) took 211-252
        microseconds for a search's batch of 700 rows against 168-174 for the same operations called directly, and
        the census EIDIG-INF search 0.853 CPU seconds against 0.839 (2026-12-06, load about 7): the model wrapper's
        inference path (:mod:`chiralfair.models.torch_adapter`) calls this instead. The operations are
        those of ``forward`` (``F.linear`` as ``nn.Linear``'s, ``torch.relu`` as ``nn.ReLU``'s, the sigmoid), so the
        output is the same, bit for bit. None, and the caller calls the module, when a hook is set on the network,
        its layers or every module (shap's DeepExplainer hooks a copy's layers) or the layers are not the ones this
        class builds.

        Parameters
        ----------
        x : torch.Tensor, shape (n_samples, n_features)

        Returns
        -------
        torch.Tensor of shape (n_samples, 1), or None
        """
        # The modules' own dicts, not their attributes: ``nn.Module.__getattr__`` (Python) would run for each of the
        # fifteen tensors and modules read here, at every model call of a search.
        layers = self._modules["layers"]
        if type(layers) is not torch.nn.Sequential or _hooked(self) or _hooked(layers) or _global_hooks():
            return None
        buffers = cast("dict[str, torch.Tensor]", self._buffers)
        z = (x - buffers["input_mean"]) / buffers["input_std"]
        for layer in layers._modules.values():
            if _hooked(layer):
                return None
            kind = type(layer)
            if kind is torch.nn.Linear:
                parameters = cast("dict[str, torch.Tensor]", layer._parameters)
                z = F.linear(z, parameters["weight"], parameters["bias"])
            elif kind is torch.nn.ReLU and not layer.inplace:
                z = torch.relu(z)
            else:
                return None
        return torch.sigmoid(z)

    def reset_parameters(self, generator: torch.Generator) -> None:
        """Keras's default initialisation: Glorot-uniform weights, zero biases; draws from ``generator``.

        Parameters
        ----------
        generator : torch.Generator
            The only source of randomness (reproducible initialisation).
        """
        with torch.no_grad():
            for layer in self.layers:
                if isinstance(layer, torch.nn.Linear):
                    torch.nn.init.xavier_uniform_(layer.weight, generator=generator)
                    torch.nn.init.zeros_(layer.bias)


def _hooked(module: torch.nn.Module) -> bool:
    """Whether a forward or backward hook is set on ``module`` itself."""
    return bool(module._forward_hooks or module._forward_pre_hooks or module._backward_hooks
                or module._backward_pre_hooks)


def _global_hooks() -> bool:
    """Whether a hook is set for every module (``torch.nn.modules.module.register_module_forward_hook`` and kin)."""
    every = torch.nn.modules.module
    return bool(every._global_forward_hooks or every._global_forward_pre_hooks or every._global_backward_hooks
                or every._global_backward_pre_hooks)


def train_dnn(X, y, *, random_state: RandomState = 0, standardize: bool = True, epochs: int = 30,
              batch_size: int = 128, lr: float = 0.01, device: str | torch.device = "cpu") -> PaperDNN:
    """Train the paper's DNN with binary cross-entropy and Nadam.

    Parameters
    ----------
    X : array-like of int, shape (n_samples, n_features)
        Encoded training inputs.
    y : array-like of {0, 1}, shape (n_samples,)
        Training labels.
    random_state : int, numpy.random.Generator or None
        Seeds the weight initialisation and the per-epoch shuffles; the same int gives bit-identical
        weights on the same device and library versions.
    standardize : bool
        Put a fixed ``(x - mean) / std`` layer with the training moments in front of the network (our
        default). ``False`` feeds the raw codes, as the paper does.
    epochs : int
        Passes over the training data (paper: 30).
    batch_size : int
        Rows per optimiser step (paper: 128); the last batch of an epoch may be smaller.
    lr : float
        Nadam learning rate (paper: 0.01).
    device : str or torch.device
        Where to train; CPU is the default and the tested path.

    Returns
    -------
    PaperDNN
        In evaluation mode, on ``device``.

    Raises
    ------
    ConfigError
        If ``X`` and ``y`` disagree in length, ``y`` is not binary with both classes present, or a
        hyper-parameter is out of range.

    References
    ----------
    Ma et al., arXiv:2209.08321, §4.2 (architecture and training set-up).
    """
    X, y = check_training_data(X, y)
    y = y.astype(np.float64)
    epochs = check_int(epochs, "epochs", minimum=1)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    lr = check_float(lr, "lr", minimum=0.0, exclusive_minimum=True)
    rng = as_generator(random_state)
    init_generator = torch.Generator().manual_seed(derive_seed(rng))

    mean, std = (X.mean(axis=0), _safe_std(X)) if standardize else (None, None)
    module = PaperDNN(X.shape[1], mean=mean, std=std)
    module.reset_parameters(init_generator)
    module = module.to(device).train()

    x_all = torch.as_tensor(X, dtype=torch.float32, device=device)
    y_all = torch.as_tensor(y, dtype=torch.float32, device=device)[:, None]
    optimizer = torch.optim.NAdam(module.parameters(), lr=lr)
    with single_intra_op_thread():
        _run_epochs(module, optimizer, x_all, y_all, rng, epochs=epochs, batch_size=batch_size)
    return module.eval()


def fine_tune_dnn(module: PaperDNN, X, y, *, epochs: int = 10, batch_size: int = 128, lr: float = 0.01,
                  random_state: RandomState = 0) -> PaperDNN:
    """Train a copy of a trained DNN further on ``(X, y)`` (architecture: mitigation: fine-tuning for 10 epochs).

    The copy keeps the weights and the input standardisation of ``module``; a fresh Nadam optimiser runs
    ``epochs`` passes with per-epoch shuffles drawn from ``random_state``. ``module`` itself is not changed.

    Parameters
    ----------
    module : PaperDNN
        A trained network.
    X : array-like of int, shape (n_samples, n_features)
    y : array-like of {0, 1}, shape (n_samples,)
    epochs, batch_size : int
    lr : float
        Nadam learning rate.
    random_state : int, numpy.random.Generator or None

    Returns
    -------
    PaperDNN
        In evaluation mode, on the device of ``module``.

    Raises
    ------
    ConfigError
        If ``X`` and ``y`` disagree in length, ``y`` is not binary with both classes, ``X`` has another width
        than the network, or a hyper-parameter is out of range.
    """
    import copy

    X, y = check_training_data(X, y)
    if X.shape[1] != module.n_features:
        raise ConfigError(f"X has {X.shape[1]} columns; the network takes {module.n_features}")
    epochs = check_int(epochs, "epochs", minimum=1)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    lr = check_float(lr, "lr", minimum=0.0, exclusive_minimum=True)
    rng = as_generator(random_state)
    tuned = copy.deepcopy(module).train()
    device = next(tuned.parameters()).device
    x_all = torch.as_tensor(X, dtype=torch.float32, device=device)
    y_all = torch.as_tensor(y.astype(np.float64), dtype=torch.float32, device=device)[:, None]
    optimizer = torch.optim.NAdam(tuned.parameters(), lr=lr)
    with single_intra_op_thread():
        _run_epochs(tuned, optimizer, x_all, y_all, rng, epochs=epochs, batch_size=batch_size)
    return tuned.eval()


def _run_epochs(module, optimizer, x_all, y_all, rng, *, epochs: int, batch_size: int) -> None:
    n = len(x_all)
    for epoch in range(epochs):
        order = torch.as_tensor(rng.permutation(n), device=x_all.device)
        x_epoch, y_epoch = x_all[order], y_all[order]
        total = torch.zeros((), device=x_all.device)
        for start in range(0, n, batch_size):
            xb, yb = x_epoch[start:start + batch_size], y_epoch[start:start + batch_size]
            loss = F.binary_cross_entropy_with_logits(module.logit(xb), yb)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += loss.detach() * len(xb)
        logger.debug("dnn epoch %d/%d: mean training loss %.4f", epoch + 1, epochs, float(total) / n)


def _safe_std(X: np.ndarray) -> np.ndarray:
    """Column standard deviations, with 1 for constant columns (they then only shift)."""
    std = X.std(axis=0)
    return np.where(std > 0, std, 1.0)
