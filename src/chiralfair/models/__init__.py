"""Models under test: the protocol, adapters, the paper's DNN and the sklearn zoo."""

from .adapters import as_model
from .protocol import CountingModel, Model

__all__ = ["CountingModel", "Model", "as_model"]
