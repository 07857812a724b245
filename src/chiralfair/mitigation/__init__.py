"""Mitigation (design §8): retraining a model with the IDIs found, and the methods beside it.

Names are imported on first use (PEP 562), so that importing the package stays light.
"""

from .._lazy import lazy_attributes

_MODULE_OF = {"RetrainResult": "retraining", "retrain": "retraining", "check_shares": "base",
              "METHODS": "base", "make_method": "base", "register_method": "base", "MitigationMethod": "base",
              "check_methods": "retraining",
              "default_ensemble": "labelling", "fit_ensemble": "labelling", "vote_labels": "labelling",
              "idis_from_frame": "retraining"}

__all__ = sorted(_MODULE_OF)


__getattr__, __dir__ = lazy_attributes(__name__, _MODULE_OF, globals())
