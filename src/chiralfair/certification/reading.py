"""Reading the model under test as a :class:`~.network.ReluNetwork`, checked against the model before certifying.

The layers come from :mod:`.torch_layers` (torch modules, TorchScript files) or :mod:`.onnx_layers` (ONNX files);
the network built must give the model's own labels and probabilities on domain points, or it is refused.
"""

from __future__ import annotations

import numpy as np

from ..exceptions import ModelCapabilityError
from .network import ReluNetwork
from .onnx_layers import is_onnx_model, onnx_network
from .torch_layers import is_torch_network, torch_network

# Largest |sigmoid(g(x)) - P(positive)| accepted between the network read and the model, on the check points.
AGREEMENT_TOLERANCE = 1e-4
# Domain points the extraction is checked on.
N_CHECK_POINTS = 512


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
        estimator, a callable, a module with its own ``forward``), a model fed a DataFrame or the data's values
        (``model_input="values"`` where codes differ from values) rather than codes, a
        network whose input width is not the domain's, or one whose labels or probabilities on the check points
        differ from the model's own.
    """
    from ..models.protocol import CountingModel

    if not isinstance(model, CountingModel):
        raise ModelCapabilityError(f"certification needs a wrapped model under test (chiralfair.models.as_model), "
                                   f"got {type(model).__name__}")
    if model.language.as_values:
        raise ModelCapabilityError(
            f"model {model.name!r} is fed the data's values (model_input='values'), and some columns' codes are not "
            "their values (a bin stands for an interval of values): certification bounds a network over boxes of "
            "codes, and does not yet map a box of codes to the box of values it stands for, so it cannot certify "
            "this model. Test it instead (chiralfair.estimate / audit with model_input='values'), or certify a "
            "network trained on the codes (model_input='codes')")
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
    estimator = model.estimator
    language = model.language
    if is_torch_network(estimator):
        return torch_network(estimator, output=language.output, positive_index=language.positive_index,
                             name=model.name)
    if is_onnx_model(estimator):
        return onnx_network(estimator, positive_index=language.positive_index, name=model.name)
    kind = type(estimator).__name__ if estimator is not None else "a callable"
    raise ModelCapabilityError(
        f"model {model.name!r} ({kind}) is not a ReLU network or a tree ensemble: certification reads networks of "
        "Linear and ReLU layers (the paper's DNN, a torch.nn.Sequential, a TorchScript or ONNX file of one) and binary "
        "tree ensembles over the integer codes (scikit-learn trees, forests and gradient boosting, LightGBM, "
        "XGBoost, alone or at the end of a Pipeline); other models are tested (chiralfair run / estimate), not "
        "certified")


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
