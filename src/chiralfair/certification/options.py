"""The names and budgets certification takes, checked without importing torch, pandas or scipy.

The command line refuses a bad ``--bound``, ``--split`` or budget before it loads data or trains a model; the
branch and bound (:class:`~chiralfair.certification.branch_and_bound.BranchAndBound`) reads the same tables.
"""

from __future__ import annotations

from .._validation import check_float, check_int
from ..exceptions import ConfigError

# The bounds computed in turn for a batch of boxes, each for the boxes the one before left open.
STAGES = {"crown": ("ibp", "crown"), "symbolic": ("ibp", "symbolic"), "ibp": ("ibp",)}
BOUNDS = tuple(STAGES)
SPLITS = ("influence", "widest")
# Zoo models certification reads: the ReLU network and the tree ensembles (the others are neither).
CERTIFIABLE_ZOO_MODELS = ("dnn", "dtc", "rf", "hgb", "lightgbm")


def check_certify_options(*, bound: str = "crown", split: str = "influence", max_seconds=60.0, max_depth=None,
                          max_boxes=None, batch_size: int = 2048, focus: float = 2.0, n_jobs=None) -> dict:
    """Check certification's names and budgets; return them checked.

    Parameters
    ----------
    bound : {"crown", "symbolic", "ibp"}
    split : {"influence", "widest"}
    max_seconds : float or None
        >= 0.
    max_depth : int or None
        >= 0.
    max_boxes, batch_size : int or None
        >= 1.
    focus : float
        >= 0.
    n_jobs : int or None
        >= 1.

    Returns
    -------
    dict
        The values, as given (numbers checked).

    Raises
    ------
    ConfigError
        Naming the parameter and the accepted values.
    """
    if bound not in BOUNDS:
        raise ConfigError(f"bound must be one of {', '.join(BOUNDS)}, got {bound!r}")
    if split not in SPLITS:
        raise ConfigError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    return {"bound": bound, "split": split,
            "max_seconds": None if max_seconds is None else check_float(max_seconds, "max_seconds", minimum=0.0),
            "max_depth": None if max_depth is None else check_int(max_depth, "max_depth", minimum=0),
            "max_boxes": None if max_boxes is None else check_int(max_boxes, "max_boxes", minimum=1),
            "batch_size": check_int(batch_size, "batch_size", minimum=1),
            "focus": check_float(focus, "focus", minimum=0.0),
            "n_jobs": None if n_jobs is None else check_int(n_jobs, "n_jobs", minimum=1)}


def check_zoo_model(name: str) -> None:
    """Refuse a zoo model that is neither a ReLU network nor a tree ensemble, before it is trained.

    Parameters
    ----------
    name : str

    Raises
    ------
    ModelCapabilityError
        Naming the model and the ones certification reads.
    """
    from ..exceptions import ModelCapabilityError

    if name not in CERTIFIABLE_ZOO_MODELS:
        raise ModelCapabilityError(f"zoo model {name!r} is not a ReLU network or a tree ensemble: certification "
                                   f"reads {', '.join(CERTIFIABLE_ZOO_MODELS)} (or your own torch, TorchScript or "
                                   "ONNX network, or scikit-learn, LightGBM or XGBoost trees); test the others with "
                                   "chiralfair run / estimate")
