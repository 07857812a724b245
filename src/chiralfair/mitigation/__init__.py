"""Mitigation (architecture: mitigation): retraining a model with the IDIs found, and the methods beside it.

Names are imported on first use (PEP 562), so that importing the package stays light.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

_MODULE_OF = {"RetrainResult": "retraining", "retrain": "retraining", "check_shares": "base",
              "METHODS": "base", "make_method": "base", "register_method": "base", "MitigationMethod": "base",
              "check_methods": "retraining",
              "default_ensemble": "labelling", "fit_ensemble": "labelling", "vote_labels": "labelling",
              "idis_from_frame": "retraining"}

__all__ = sorted(_MODULE_OF)

if TYPE_CHECKING:  # the real names, for type checkers and the API reference (griffe)
    from .base import METHODS, MitigationMethod, check_shares, make_method, register_method  # noqa: F401
    from .labelling import default_ensemble, fit_ensemble, vote_labels  # noqa: F401
    from .retraining import RetrainResult, check_methods, idis_from_frame, retrain  # noqa: F401

if not TYPE_CHECKING:  # type checkers read the imports above, so a name not there is an error, not `object`
    __getattr__, __dir__ = lazy_attributes(__name__, _MODULE_OF, globals())
