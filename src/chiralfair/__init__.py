"""chiralfair: individual fairness testing of tabular classifiers.

Finds individual discriminatory instances (IDIs) with I&D seed selection and the generators AEQUITAS, SG,
ADF and EIDIG.
"""

__version__ = "0.1.0"

__all__ = ["AuditResult", "__version__", "audit"]


def __getattr__(name: str):
    # Lazy, so that ``import chiralfair`` stays light (audit pulls in sklearn, pandas and torch).
    if name in ("audit", "AuditResult"):
        import importlib
        return getattr(importlib.import_module("chiralfair.auditing"), name)
    raise AttributeError(f"module 'chiralfair' has no attribute {name!r}")
