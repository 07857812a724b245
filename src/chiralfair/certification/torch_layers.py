"""Torch modules read as ReLU networks: the paper's DNN, a ``Sequential`` of Linear/ReLU, TorchScript files of one.

A module's ``forward`` is only known for these: :class:`~chiralfair.models.dnn.PaperDNN` (its fixed standardisation,
then its ``layers``, then a sigmoid), and ``torch.nn.Sequential`` (each layer in turn), in Python or as a TorchScript
module (read by each submodule's ``original_name``). Inside a ``Sequential``: ``Linear``, ``ReLU``, and the layers
that do nothing in evaluation mode (``Identity``, ``Dropout``, ``Flatten`` of rows); a ``Sigmoid`` or ``Softmax``
only at the end. Any other layer, or a module class with its own ``forward``, is refused with its name.
"""

from __future__ import annotations

import numpy as np

from ..exceptions import ModelCapabilityError
from .network import ReluNetwork, decision_layer

PASSIVE_LAYERS = ("Identity", "Dropout", "Flatten")
HEADS = {"Sigmoid": "sigmoid", "Softmax": "softmax"}


def is_torch_network(obj) -> bool:
    """Whether ``obj`` is a torch module (Python or TorchScript), without importing torch.

    Parameters
    ----------
    obj : object

    Returns
    -------
    bool
    """
    from ..models._torch import is_torch_module

    return is_torch_module(obj)


def torch_network(module, *, output: str, positive_index: int, name: str) -> ReluNetwork:
    """The :class:`~chiralfair.certification.network.ReluNetwork` of a torch module.

    Parameters
    ----------
    module : torch.nn.Module or torch.jit.ScriptModule
    output : {"probability", "logit"}
        What the model's adapter reads the module's output as.
    positive_index : int
        The output column of the positive class.
    name : str
        The model's name, for messages.

    Returns
    -------
    ReluNetwork

    Raises
    ------
    ModelCapabilityError
        Naming the model and the layer or module class that is not read.
    """
    kind = _kind(module)
    scale = shift = None
    if kind == "PaperDNN":
        std = _array(module.input_std)
        scale, shift = 1.0 / std, -_array(module.input_mean) / std
        layers = _flat_layers(module.layers, name)
        if not layers or _kind(layers[-1]) not in HEADS:
            layers = [*layers, "Sigmoid"]  # PaperDNN.forward is sigmoid(layers(standardised x))
    elif kind == "Sequential":
        layers = _flat_layers(module, name)
    else:
        raise ModelCapabilityError(
            f"model {name!r} is a {kind} with its own forward, which certification cannot read; wrap its layers in a "
            "torch.nn.Sequential of Linear and ReLU layers (optionally ending in Sigmoid or Softmax)")
    weights, biases, head = _affine_chain(layers, name)
    head = _combined_head(head, output, name)
    w, b, reading = decision_layer(weights[-1], biases[-1], head, positive_index, name=name)
    network = ReluNetwork((*weights[:-1], w), (*biases[:-1], b), name=name, reading=reading)
    return network if scale is None else network.with_input_affine(scale, shift)


def _kind(module) -> str:
    """The class name a module was written as (``original_name`` for a TorchScript module); a string as itself."""
    if isinstance(module, str):
        return module
    return str(getattr(module, "original_name", None) or type(module).__name__)


def _array(tensor) -> np.ndarray:
    return tensor.detach().cpu().double().numpy()


def _flat_layers(sequential, name: str) -> list:
    out = []
    for child in sequential.children():
        if _kind(child) == "Sequential":
            out.extend(_flat_layers(child, name))
        else:
            out.append(child)
    return out


def _affine_chain(layers: list, name: str) -> tuple[list[np.ndarray], list[np.ndarray], str | None]:
    """Weights and biases of the Linear layers, checking that each pair is separated by exactly one ReLU."""
    weights: list[np.ndarray] = []
    biases: list[np.ndarray] = []
    head = None
    pending_relu = False
    for position, layer in enumerate(layers):
        kind = _kind(layer)
        where = f"model {name!r}, layer {position} ({kind})"
        if head is not None:
            raise ModelCapabilityError(f"{where} follows the output's {head}; a Sigmoid or Softmax must come last")
        if kind == "Linear":
            if weights and not pending_relu:
                raise ModelCapabilityError(f"{where}: two Linear layers without a ReLU between them are not read; "
                                           "merge them into one")
            w = _array(layer.weight)
            bias = getattr(layer, "bias", None)
            weights.append(w)
            biases.append(np.zeros(w.shape[0]) if bias is None else _array(bias))
            pending_relu = False
        elif kind == "ReLU":
            if not weights or pending_relu:
                raise ModelCapabilityError(f"{where}: a ReLU must follow a Linear layer")
            pending_relu = True
        elif kind in HEADS:
            if pending_relu or not weights:
                raise ModelCapabilityError(f"{where}: the {kind} must follow the last Linear layer")
            if kind == "Softmax" and getattr(layer, "dim", -1) not in (-1, 1, None):
                raise ModelCapabilityError(f"{where}: a softmax over dim {layer.dim} is not over the classes")
            head = HEADS[kind]
        elif kind in PASSIVE_LAYERS:
            continue
        else:
            raise ModelCapabilityError(f"{where} is not read by certification (it reads Linear, ReLU, and a final "
                                       "Sigmoid or Softmax)")
    if not weights:
        raise ModelCapabilityError(f"model {name!r} has no Linear layer")
    if pending_relu:
        raise ModelCapabilityError(f"model {name!r} ends in a ReLU; its last layer must be Linear (then optionally "
                                   "Sigmoid or Softmax)")
    return weights, biases, head


def _combined_head(head: str | None, output: str, name: str) -> str:
    """What the model's P(positive) is, from the module's last activation and what its adapter reads it as."""
    if output == "logit":
        if head is not None:
            raise ModelCapabilityError(f"model {name!r} ends in a {head} but was wrapped with output='logit'; wrap it "
                                       "with output='probability'")
        return "logit"
    return head or "probability"
