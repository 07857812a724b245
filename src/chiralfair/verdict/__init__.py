"""The verdict: the share of a population whose decision changes with its protected attributes, and who is harmed.

:func:`estimate` checks individuals of a population (the test split, the dataset's rows, or uniform draws from
the domain) in batches until the interval of the share is narrow enough; :class:`Verdict` holds what it found.

Names are imported on first use (PEP 562), so that the command line can refuse a bad flag without pandas.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

_MODULE_OF = {"estimate": "estimation", "resolve_favourable": "estimation", "FAVOURABLE": "estimation",
              "POPULATIONS": "params", "METHODS": "params", "Verdict": "result",
              "GROUP_COLUMNS": "result", "plausibility_line": "result", "look_confidence": "result",
              "GateDecision": "gate", "decide": "gate", "worst_group": "gate", "EXIT_CODES": "gate",
              "READINGS": "gate", "superpopulation_interval": "gate", "untested_groups": "gate"}

__all__ = sorted(_MODULE_OF)

if TYPE_CHECKING:  # the real names, for type checkers and the API reference (griffe)
    from .estimation import FAVOURABLE, estimate, resolve_favourable  # noqa: F401
    from .gate import (  # noqa: F401
        EXIT_CODES,
        READINGS,
        GateDecision,
        decide,
        superpopulation_interval,
        untested_groups,
        worst_group,
    )
    from .params import METHODS, POPULATIONS  # noqa: F401
    from .result import GROUP_COLUMNS, Verdict, look_confidence, plausibility_line  # noqa: F401

if not TYPE_CHECKING:  # type checkers read the imports above, so a name not there is an error, not `object`
    __getattr__, __dir__ = lazy_attributes(__name__, _MODULE_OF, globals())
