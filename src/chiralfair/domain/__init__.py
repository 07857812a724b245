"""The input domain and what lives in it: features, protected attributes, couplings, constraints, support.

:class:`Domain` (:mod:`.domain`) holds the features in order with their integer bounds and labels, and the
protected attributes (:class:`Feature`, :class:`ProtectedAttribute`: :mod:`.features`, declared by
:mod:`.declaration`); it builds every counterpart and every IDI key (architecture: the counting rule). Beside it: the
coupled attributes that change with a protected one (:mod:`.coupling`), the rules an input must satisfy to be a possible
person (:mod:`.constraints`), and the support of value pairs in the data that scores a counterpart's plausibility
(:mod:`.plausibility`).

Names are imported on first use (PEP 562), so that parsing a ``--couple`` flag does not load pandas.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

_MODULE_OF = {"Domain": "domain", **{name: "features" for name in
                                     ("MISSING_POLICIES", "Feature", "Kind", "ProtectedAttribute", "group_name")}}

__all__ = sorted(_MODULE_OF)

if TYPE_CHECKING:
    from .domain import Domain  # noqa: F401
    from .features import MISSING_POLICIES, Feature, Kind, ProtectedAttribute, group_name  # noqa: F401

if not TYPE_CHECKING:  # type checkers read the imports above, so a name not there is an error, not `object`
    __getattr__, __dir__ = lazy_attributes(__name__, _MODULE_OF, globals())
