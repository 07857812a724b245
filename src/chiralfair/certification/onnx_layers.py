"""ONNX files read as ReLU networks, where the graph converts: a chain of affine nodes and ``Relu``.

The chain runs from the graph's one input to the probability (or logit) output the model's adapter reads
(:class:`~chiralfair.models.files.OnnxClassifier`). Affine nodes (``Gemm``, ``MatMul``, ``Add``, ``Sub``, ``Mul``,
``Div`` with a constant operand, as ``torch.onnx.export`` writes a standardisation and a dense layer) compose into
one affine layer between two ``Relu`` nodes; ``Identity``, ``Dropout``, ``Flatten`` and ``Cast`` pass the tensor on; a
``Sigmoid`` or ``Softmax`` may end the chain. Any other node on the chain is refused, naming its operator. Nodes off the
chain (a label output computed from the probabilities) are not read: the network is checked against the model's own
labels (:func:`~chiralfair.certification.reading.check_agreement`).
"""

from __future__ import annotations

import numpy as np

from ..exceptions import ModelCapabilityError
from .network import ReluNetwork, decision_layer

PASSING_OPS = ("Identity", "Dropout", "Flatten", "Cast")
AFFINE_OPS = ("Gemm", "MatMul", "Add", "Sub", "Mul", "Div")
HEAD_OPS = {"Sigmoid": "sigmoid", "Softmax": "softmax"}


def is_onnx_model(obj) -> bool:
    """Whether ``obj`` is an ONNX model under test (:class:`~chiralfair.models.files.OnnxClassifier`).

    Parameters
    ----------
    obj : object

    Returns
    -------
    bool
    """
    from ..models.files import OnnxClassifier

    return isinstance(obj, OnnxClassifier)


def onnx_network(classifier, *, positive_index: int, name: str) -> ReluNetwork:
    """The :class:`~chiralfair.certification.network.ReluNetwork` of an ONNX classifier's graph.

    Parameters
    ----------
    classifier : OnnxClassifier
        Its file is read with ``onnx``; its probability output names the end of the chain.
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
        When the graph has several inputs (a frame model), or a node on the chain is not one listed in the module
        docstring, or an affine node's other operand is not a constant.
    """
    import onnx
    from onnx import numpy_helper

    where = f"model {name!r} (ONNX)"
    graph = onnx.load(str(classifier.path)).graph
    constants = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant":
            constants[node.output[0]] = numpy_helper.to_array(node.attribute[0].t).astype(np.float64)
    inputs = [i.name for i in graph.input if i.name not in constants]
    if len(inputs) != 1:
        raise ModelCapabilityError(f"{where} has {len(inputs)} inputs {inputs}; certification reads a network over "
                                   "one input tensor of codes")
    end = classifier._proba
    if end is None or classifier._proba_kind == "zipmap":
        raise ModelCapabilityError(f"{where} has no probability or logit tensor output to bound")
    chain = _chain(graph, inputs[0], end, constants, where)
    width = _input_width(graph, inputs[0])
    weights, biases, head = _layers(chain, constants, width, where)
    kind = classifier._proba_kind
    if kind == "logit" and head is not None:
        raise ModelCapabilityError(f"{where} ends in a {head} but was loaded with output='logit'")
    head = head or ("logit" if kind == "logit" else "probability")
    w, b, reading = decision_layer(weights[-1], biases[-1], head, positive_index, name=name)
    return ReluNetwork((*weights[:-1], w), (*biases[:-1], b), name=name, reading=reading)


def _chain(graph, start: str, end: str, constants: dict, where: str) -> list:
    """The nodes from ``start`` to ``end``, in order, following each node's one non-constant input back."""
    producer = {out: node for node in graph.node for out in node.output}
    chain = []
    tensor = end
    while tensor != start:
        node = producer.get(tensor)
        if node is None:
            raise ModelCapabilityError(f"{where}: tensor {tensor!r} is neither the input nor computed by a node")
        variable = [i for i in node.input if i and i not in constants]
        if len(variable) != 1:
            raise ModelCapabilityError(f"{where}: node {node.name or node.op_type!r} ({node.op_type}) combines "
                                       f"{len(variable)} computed tensors; the chain must be one affine path")
        chain.append(node)
        tensor = variable[0]
    return chain[::-1]


def _input_width(graph, name: str) -> int | None:
    for i in graph.input:
        if i.name == name:
            dims = i.type.tensor_type.shape.dim
            return int(dims[-1].dim_value) if dims and dims[-1].dim_value else None
    return None


def _layers(chain: list, constants: dict, width: int | None, where: str):
    weights: list[np.ndarray] = []
    biases: list[np.ndarray] = []
    A: np.ndarray | None = None  # the tensor is A @ h + c, h the input of the current layer
    c: np.ndarray | None = None
    head = None
    for node in chain:
        op = node.op_type
        if head is not None:
            raise ModelCapabilityError(f"{where}: node {op} follows the output's {head}")
        if op in PASSING_OPS:
            continue
        if op in HEAD_OPS:
            head = HEAD_OPS[op]
            axis = _attribute(node, "axis", -1)
            if op == "Softmax" and axis not in (-1, 1):
                raise ModelCapabilityError(f"{where}: a softmax over axis {axis} is not over the classes")
            continue
        if op == "Relu":
            if A is None or c is None:
                raise ModelCapabilityError(f"{where}: a Relu must follow an affine node")
            weights.append(A)
            biases.append(c)
            A = c = None
            continue
        if op not in AFFINE_OPS:
            raise ModelCapabilityError(f"{where}: node {node.name or op!r} ({op}) is not read by certification (it "
                                       f"reads {', '.join(AFFINE_OPS)}, Relu, and a final Sigmoid or Softmax)")
        if A is None or c is None:
            n = weights[-1].shape[0] if weights else width
            if n is None:
                raise ModelCapabilityError(f"{where}: the input's width is not stored in the graph")
            A, c = np.eye(n), np.zeros(n)
        A, c = _affine(node, constants, A, c, where)
    if A is None or c is None:
        raise ModelCapabilityError(f"{where}: the chain must end in an affine layer (then optionally a Sigmoid or "
                                   "Softmax)")
    weights.append(A)
    biases.append(c)
    return weights, biases, head


def _attribute(node, name: str, default):
    from onnx import helper

    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _affine(node, constants: dict, A: np.ndarray, c: np.ndarray, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Compose one affine node onto ``t = A h + c``."""
    op = node.op_type
    const = [constants[i] for i in node.input if i in constants]
    first_is_variable = node.input[0] not in constants
    if op in ("Gemm", "MatMul"):
        if not first_is_variable or not const:
            raise ModelCapabilityError(f"{where}: {op} must multiply the computed tensor by a constant matrix")
        B = const[0]
        if op == "Gemm":
            if _attribute(node, "transA", 0):
                raise ModelCapabilityError(f"{where}: Gemm with transA=1 is not read")
            W = B if _attribute(node, "transB", 0) else B.T
            alpha, beta = float(_attribute(node, "alpha", 1.0)), float(_attribute(node, "beta", 1.0))
            bias = beta * np.broadcast_to(const[1], (W.shape[0],)) if len(const) > 1 else np.zeros(W.shape[0])
            return alpha * W @ A, alpha * W @ c + bias
        W = B.T
        return W @ A, W @ c
    if len(const) != 1:
        raise ModelCapabilityError(f"{where}: {op} must combine the computed tensor with one constant")
    k = np.broadcast_to(const[0].reshape(-1), c.shape) if const[0].size in (1, c.shape[0]) else None
    if k is None:
        raise ModelCapabilityError(f"{where}: {op}'s constant of shape {const[0].shape} is not per feature")
    if op == "Add":
        return A, c + k
    if op == "Sub":
        return (A, c - k) if first_is_variable else (-A, k - c)
    if op == "Mul":
        return k[:, None] * A, k * c
    if not first_is_variable:
        raise ModelCapabilityError(f"{where}: Div of a constant by the computed tensor is not affine")
    return A / k[:, None], c / k
