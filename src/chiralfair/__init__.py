"""chiralfair: individual fairness testing of tabular classifiers.

Finds individual discriminatory instances (IDIs) with I&D seed selection and the generators AEQUITAS, SG,
ADF and EIDIG; says how many people a model affects and whom it harms (:func:`estimate`); and makes it fairer
(:func:`retrain`). :func:`audit` does the search and the verdict in one call; :func:`certify` proves, for a ReLU
network, how much of the domain is fair and which held-out people are unaffected.
"""

from typing import TYPE_CHECKING

from ._lazy import lazy_attributes

__version__ = "0.1.0"

__all__ = ["AuditResult", "DataSpec", "__version__", "audit", "certify", "estimate", "retrain"]

if TYPE_CHECKING:
    from .pipeline.certification import certify
    from .pipeline.front import AuditResult, audit, estimate, retrain
    from .pipeline.spec import DataSpec

# Lazy, so that ``import chiralfair`` stays light (audit pulls in sklearn, pandas and torch).
if not TYPE_CHECKING:  # type checkers read the imports above, so a name not there is an error, not `object`
    __getattr__, __dir__ = lazy_attributes(__name__, {"audit": "pipeline.front", "AuditResult": "pipeline.front",
                                                      "estimate": "pipeline.front", "retrain": "pipeline.front",
                                                      "certify": "pipeline.certification",
                                                      "DataSpec": "pipeline.spec"},
                                           globals())
