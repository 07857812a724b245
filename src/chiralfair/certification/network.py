"""A ReLU network as certification reads it: affine layers with ReLU between them, ending in the decision logit.

Every model certification accepts becomes a :class:`ReluNetwork` ``g(x) = W_L relu(... relu(W_1 x + b_1) ...) + b_L``
over the integer codes, whose sign is the label: 1 (the positive class) where ``g(x) > 0``. The model's own output
layer is folded into the last affine layer: a final sigmoid is monotone, so its logit decides (``sigmoid(g) > 0.5``
iff ``g > 0``); two softmax or probability columns decide by their difference; one probability column without a
sigmoid decides by ``p - 0.5``; a negative class declared positive flips the sign. Fixed input scalings (the paper's
DNN standardises ``(x - mean) / std``) are folded into the first layer.

:func:`relu_network` reads the layers from the model under test (:mod:`.torch_layers` for torch modules and
TorchScript files, :mod:`.onnx_layers` for ONNX files) and checks that the network it built gives the model's own
labels and probabilities on domain points before anything is certified: an extraction that does not reproduce the
model is refused, never silently certified.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..exceptions import ModelCapabilityError

# Largest |sigmoid(g(x)) - P(positive)| accepted between the network read and the model, on the check points.
AGREEMENT_TOLERANCE = 1e-4
# Domain points the extraction is checked on.
N_CHECK_POINTS = 512


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


def relu_network(model, domain, *, rng: np.random.Generator | None = None) -> ReluNetwork:
    """Read the model under test as a :class:`ReluNetwork` over the domain's codes, checked against the model.

    Accepted: the paper's DNN (:class:`~chiralfair.models.dnn.PaperDNN`, its input standardisation folded in), a
    ``torch.nn.Sequential`` of ``Linear`` and ``ReLU`` layers (optionally ending in ``Sigmoid`` or ``Softmax``), a
    TorchScript file of one, and an ONNX file whose graph is a chain of ``Gemm``/``MatMul``/``Add``/``Sub``/
    ``Mul``/``Div`` and ``Relu`` nodes (optionally ending in ``Sigmoid`` or ``Softmax``).

    Parameters
    ----------
    model : CountingModel
        The wrapped model under test (:func:`~chiralfair.models.as_model`); its ``estimator`` is read.
    domain : Domain
        The input domain; the check points are drawn from it.
    rng : numpy.random.Generator, optional
        Draws the check points (default: seed 0).

    Returns
    -------
    ReluNetwork

    Raises
    ------
    ModelCapabilityError
        Naming the model and what is missing: a model that is not a network of these layers (an sklearn
        estimator, a callable, a module with its own ``forward``), a model fed a DataFrame rather than codes, a
        network whose input width is not the domain's, or one whose labels or probabilities on the check points
        differ from the model's own.
    """
    from ..models.protocol import CountingModel

    if not isinstance(model, CountingModel):
        raise ModelCapabilityError(f"certification needs a wrapped model under test (chiralfair.models.as_model), "
                                   f"got {type(model).__name__}")
    if model.takes_frame:
        raise ModelCapabilityError(f"model {model.name!r} is fed a DataFrame; certification reads networks over the "
                                   "integer codes (a torch module, TorchScript or ONNX network)")
    network = _read_layers(model)
    if network.n_inputs != domain.n_features:
        raise ModelCapabilityError(f"model {model.name!r} takes {network.n_inputs} inputs; the domain has "
                                   f"{domain.n_features} features ({', '.join(domain.names)})")
    check_agreement(network, model, domain, rng if rng is not None else np.random.default_rng(0))
    return network


def _read_layers(model) -> ReluNetwork:
    from .onnx_layers import is_onnx_model, onnx_network
    from .torch_layers import is_torch_network, torch_network

    estimator = model.estimator
    language = model.language
    if is_torch_network(estimator):
        return torch_network(estimator, output=language.output, positive_index=language.positive_index,
                             name=model.name)
    if is_onnx_model(estimator):
        return onnx_network(estimator, positive_index=language.positive_index, name=model.name)
    kind = type(estimator).__name__ if estimator is not None else "a callable"
    raise ModelCapabilityError(
        f"model {model.name!r} ({kind}) is not a ReLU network: certification bounds networks of Linear and ReLU "
        "layers (the paper's DNN, a torch.nn.Sequential, a TorchScript or ONNX file of one); other models are "
        "tested (chiralfair run / estimate), not certified")


def check_agreement(network: ReluNetwork, model, domain, rng: np.random.Generator) -> None:
    """Refuse a network whose labels or probabilities on domain points differ from the model's own.

    Points whose logit lies within the certification margin of 0 are not compared by label (float32 rounding
    may decide them either way; certification leaves them to the model's own check).

    Parameters
    ----------
    network : ReluNetwork
    model : CountingModel
        Queried on :data:`N_CHECK_POINTS` points plus the domain's first row (not counted as search queries:
        the counter is restored).
    domain : Domain
    rng : numpy.random.Generator

    Raises
    ------
    ModelCapabilityError
        Naming the model, the largest probability difference and a point where the labels differ.
    """
    from .decision import DECISION_MARGIN

    X = domain.sample(N_CHECK_POINTS, rng)
    before = model.n_queries
    try:
        labels, proba = (model.predict_with_proba(X) if model.has_proba else (model.predict(X), None))
    finally:
        model.n_queries = before
    g = network.logit(X)
    clear = np.abs(g) > DECISION_MARGIN
    differ = clear & ((g > 0).astype(np.int64) != labels)
    gap = 0.0 if proba is None else float(np.max(np.abs(network.probability(g) - proba)))
    if differ.any() or gap > AGREEMENT_TOLERANCE:
        where = (f"; labels differ at {dict(zip(domain.names, X[np.argmax(differ)].tolist(), strict=True))}"
                 if differ.any() else "")
        raise ModelCapabilityError(
            f"model {model.name!r}: the network read from its layers does not reproduce the model (largest "
            f"probability difference {gap:.2g} on {len(X)} domain points{where}); its forward must be exactly the "
            "chain of its layers")
