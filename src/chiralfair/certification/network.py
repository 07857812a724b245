"""A ReLU network as certification reads it: affine layers with ReLU between them, ending in the decision logit.

Every model certification accepts becomes a :class:`ReluNetwork` ``g(x) = W_L relu(... relu(W_1 x + b_1) ...) + b_L``
over the integer codes, whose sign is the label: 1 (the positive class) where ``g(x) > 0``. The model's own output
layer is folded into the last affine layer: a final sigmoid is monotone, so its logit decides (``sigmoid(g) > 0.5``
iff ``g > 0``); two softmax or probability columns decide by their difference; one probability column without a
sigmoid decides by ``p - 0.5``; a negative class declared positive flips the sign. Fixed input scalings (the paper's
DNN standardises ``(x - mean) / std``) are folded into the first layer.

:func:`~.reading.relu_network` reads the layers from the model under test (:mod:`.torch_layers` for torch modules and
TorchScript files, :mod:`.onnx_layers` for ONNX files) and checks that the network it built gives the model's own
labels and probabilities on domain points before anything is certified: an extraction that does not reproduce the
model is refused, never silently certified.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..exceptions import ModelCapabilityError


@dataclass(frozen=True, eq=False)
class ReluNetwork:
    """Affine layers with ReLU between them; the last layer's one output is the decision logit.

    Parameters
    ----------
    weights : sequence of numpy.ndarray of float64, shapes (n_out, n_in)
        One matrix per affine layer, input layer first; the last has one row.
    biases : sequence of numpy.ndarray of float64, shapes (n_out,)
    name : str
        The model's name, for messages.
    reading : {"sigmoid", "shifted", "halved"}
        How the model's P(positive) follows from ``g``: ``sigmoid(g)`` (a logit, a sigmoid or two-column softmax
        head), ``g + 0.5`` (one probability column), ``(g + 1) / 2`` (two probability columns).

    Raises
    ------
    ModelCapabilityError
        If the shapes do not chain, the last layer has more than one output, or a value is not finite.
    """

    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]
    name: str = "network"
    reading: str = "sigmoid"
    _tensors: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self):
        weights = tuple(np.asarray(w, dtype=np.float64) for w in self.weights)
        biases = tuple(np.asarray(b, dtype=np.float64).reshape(-1) for b in self.biases)
        if not weights or len(weights) != len(biases):
            raise ModelCapabilityError(f"model {self.name!r}: a network needs one bias per weight matrix and at least "
                                       f"one layer, got {len(weights)} weights and {len(biases)} biases")
        for i, (w, b) in enumerate(zip(weights, biases, strict=True)):
            if w.ndim != 2 or w.shape[0] != b.shape[0] or (i and w.shape[1] != weights[i - 1].shape[0]):
                raise ModelCapabilityError(f"model {self.name!r}: layer {i} has weights {w.shape} and bias {b.shape}, "
                                           "which do not chain with the layer before")
            if not (np.isfinite(w).all() and np.isfinite(b).all()):
                raise ModelCapabilityError(f"model {self.name!r}: layer {i} holds non-finite weights")
        if weights[-1].shape[0] != 1:
            raise ModelCapabilityError(f"model {self.name!r}: the last layer has {weights[-1].shape[0]} outputs; "
                                       "the decision logit is one")
        object.__setattr__(self, "weights", weights)
        object.__setattr__(self, "biases", biases)
        object.__setattr__(self, "_tensors", {})

    @property
    def n_inputs(self) -> int:
        """Width of the input (the domain's number of features)."""
        return int(self.weights[0].shape[1])

    @property
    def widths(self) -> tuple[int, ...]:
        """Input width, then each layer's width (the last is 1)."""
        return (self.n_inputs, *(int(w.shape[0]) for w in self.weights))

    def logit(self, X) -> np.ndarray:
        """The decision logit ``g(x)`` in float64, shape (n_samples,).

        Parameters
        ----------
        X : array-like, shape (n_samples, n_inputs)

        Returns
        -------
        numpy.ndarray of float64, shape (n_samples,)
        """
        h = np.asarray(X, dtype=np.float64)
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            h = h @ w.T + b
            if i < len(self.weights) - 1:
                h = np.maximum(h, 0.0)
        return h[:, 0]

    def probability(self, g: np.ndarray) -> np.ndarray:
        """The model's P(positive) for logits ``g`` (see ``reading``), shape as ``g``.

        Parameters
        ----------
        g : numpy.ndarray of float64

        Returns
        -------
        numpy.ndarray of float64
        """
        if self.reading == "shifted":
            return g + 0.5
        if self.reading == "halved":
            return (g + 1.0) / 2.0
        return 1.0 / (1.0 + np.exp(-g))

    def tensors(self, device="cpu") -> tuple[list, list]:
        """The weights and biases as float64 torch tensors on ``device`` (made once per device).

        Parameters
        ----------
        device : str or torch.device

        Returns
        -------
        weights, biases : list of torch.Tensor

        Raises
        ------
        MissingDependencyError
            Without torch (an ONNX network can be read without it, not bounded).
        """
        key = str(device)
        if key not in self._tensors:
            from ..models._torch import require_torch

            torch = require_torch("certification (the bounds are computed with torch)")

            self._tensors[key] = ([torch.as_tensor(w, device=device) for w in self.weights],
                                  [torch.as_tensor(b, device=device) for b in self.biases])
        return self._tensors[key]

    def with_input_affine(self, scale, shift) -> ReluNetwork:
        """The network of ``x -> g(scale * x + shift)``: a fixed per-feature input scaling folded into layer one.

        Parameters
        ----------
        scale, shift : array-like of float, shape (n_inputs,)

        Returns
        -------
        ReluNetwork
        """
        scale = np.asarray(scale, dtype=np.float64)
        shift = np.asarray(shift, dtype=np.float64)
        w0 = self.weights[0] * scale[None, :]
        b0 = self.biases[0] + self.weights[0] @ shift
        return ReluNetwork((w0, *self.weights[1:]), (b0, *self.biases[1:]), name=self.name, reading=self.reading)


def decision_layer(weight: np.ndarray, bias: np.ndarray, head: str, positive_index: int, *,
                   name: str) -> tuple[np.ndarray, np.ndarray, str]:
    """The last affine layer turned into the one-output decision logit.

    Parameters
    ----------
    weight : numpy.ndarray, shape (n_outputs, n_in)
        The model's last affine layer; 1 or 2 outputs.
    bias : numpy.ndarray, shape (n_outputs,)
    head : {"logit", "sigmoid", "softmax", "probability"}
        What follows the last affine layer: nothing, and its output is a logit; a sigmoid; a softmax; nothing, and
        its output is a probability.
    positive_index : int
        The output column of the positive class (0 or 1), as the model's language says.
    name : str
        The model's name, for messages.

    Returns
    -------
    weight : numpy.ndarray, shape (1, n_in)
    bias : numpy.ndarray, shape (1,)
        ``g = weight x + bias``, positive class where ``g > 0``.
    reading : str
        How P(positive) follows from ``g`` (:attr:`ReluNetwork.reading`).

    Raises
    ------
    ModelCapabilityError
        For more than two outputs, or a softmax over one.
    """
    n_out = weight.shape[0]
    if n_out not in (1, 2):
        raise ModelCapabilityError(f"model {name!r} has {n_out} outputs; certification reads binary classifiers "
                                   "with one or two output columns")
    reading = "sigmoid"
    if n_out == 2:  # logits, softmax or probabilities of two classes: class 1 wins where its column is larger
        w, b = weight[1:2] - weight[0:1], bias[1:2] - bias[0:1]
        reading = "halved" if head == "probability" else "sigmoid"
    elif head == "softmax":
        raise ModelCapabilityError(f"model {name!r} ends in a softmax over one column (always 1): not a classifier")
    elif head == "probability":
        w, b, reading = weight.copy(), bias - 0.5, "shifted"
    else:
        w, b = weight.copy(), bias.copy()
    if positive_index == 0:
        w, b = -w, -b
    return w, b, reading
