"""Models under test: the protocol, adapters, the paper's DNN and the sklearn zoo."""

from .adapters import as_model
from .protocol import CountingModel, Model
from .training import TrainedModel, resolve_cache_dir, train_model
from .zoo import ModelSpec, as_spec, model_names

__all__ = ["CountingModel", "Model", "ModelSpec", "TrainedModel", "as_model", "as_spec", "model_names",
           "resolve_cache_dir", "train_model"]
