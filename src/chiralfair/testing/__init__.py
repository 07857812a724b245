"""Checks to run inside your own test suite, as scikit-learn's ``estimator_checks`` are.

:func:`assert_individually_fair` fails a test when the share of individuals your model discriminates is not
shown to be at most a threshold (the fairness gate of ``chiralfair check``, with the verdict's numbers and its
worst group in the failure message).

Names are imported on first use (PEP 562), so that importing the package stays light.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

_MODULE_OF = {"assert_individually_fair": "fairness"}

__all__ = sorted(_MODULE_OF)

if TYPE_CHECKING:
    from .fairness import assert_individually_fair  # noqa: F401

__getattr__, __dir__ = lazy_attributes(__name__, _MODULE_OF, globals())
