"""chiralfair: individual fairness testing of tabular classifiers.

Finds individual discriminatory instances (IDIs) with I&D seed selection and the generators AEQUITAS, SG,
ADF and EIDIG.
"""

from ._lazy import lazy_attributes

__version__ = "0.1.0"

__all__ = ["AuditResult", "__version__", "audit"]


# Lazy, so that ``import chiralfair`` stays light (audit pulls in sklearn, pandas and torch).
__getattr__, __dir__ = lazy_attributes(__name__, {"audit": "auditing", "AuditResult": "auditing"}, globals())
