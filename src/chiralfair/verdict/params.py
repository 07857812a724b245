"""The verdict's parameters and their checks, apart from the estimation so they can be checked before any work.

Importing this module imports nothing heavy: the pipeline checks a command's ``--confidence`` or ``--method``
before it loads the data or trains a model.
"""

from __future__ import annotations

from .._validation import check_choice, check_float, check_int
from ..exceptions import ConfigError

POPULATIONS = ("rows", "test", "domain")
METHODS = {"wilson": "wilson", "clopper-pearson": "beta"}


def check_estimate_params(*, population: str = "test", confidence: float = 0.95, margin: float = 0.005,
                          method: str = "clopper-pearson", max_queries=None, gamma=None, threshold=None, exact=None,
                          batch_size: int = 8192, plausible_only: bool = False) -> dict:
    """Check the parameters of :func:`chiralfair.verdict.estimate` (every bound, in one place).

    Parameters
    ----------
    population : {"test", "rows", "domain"}, default="test"
    confidence : float, default=0.95
        In (0, 1).
    margin : float, default=0.005
        In (0, 0.5].
    method : {"wilson", "clopper-pearson"}, default="clopper-pearson"
    max_queries : int, optional
        >= 1.
    gamma : float, optional
        In [0, 1].
    threshold : float, optional
        The gate's ``max_share``, in [0, 1]: sampling stops once the interval lies on one side of it.
    exact : bool, optional
    batch_size : int, default=8192
        >= 1.
    plausible_only : bool, default=False

    Returns
    -------
    dict
        The parameters, as numbers of the right type.

    Raises
    ------
    ConfigError
        Naming the parameter and its bound or valid values.
    """
    population = check_choice(population, "population", POPULATIONS)
    confidence = check_float(confidence, "confidence", minimum=0.0, maximum=1.0, exclusive_minimum=True)
    if confidence >= 1.0:
        raise ConfigError(f"confidence must be < 1, got {confidence}")
    margin = check_float(margin, "margin", minimum=0.0, maximum=0.5, exclusive_minimum=True)
    method = check_choice(method, "method", METHODS)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    if max_queries is not None:
        max_queries = check_int(max_queries, "max_queries", minimum=1)
    if gamma is not None:
        gamma = check_float(gamma, "gamma", minimum=0.0, maximum=1.0)
    if threshold is not None:
        threshold = check_float(threshold, "threshold", minimum=0.0, maximum=1.0)
    if exact not in (None, True, False):
        raise ConfigError(f"exact must be True, False or None, got {exact!r}")
    if not isinstance(plausible_only, bool):
        raise ConfigError(f"plausible_only must be True or False, got {plausible_only!r}")
    return {"population": population, "confidence": confidence, "margin": margin, "method": method,
            "max_queries": max_queries, "gamma": gamma, "threshold": threshold, "exact": exact,
            "batch_size": batch_size, "plausible_only": plausible_only}
