"""Checks to run inside your own test suite, as scikit-learn's ``estimator_checks`` are.

:func:`assert_individually_fair` fails a test when the share of individuals your model discriminates is not
shown to be at most a threshold (the fairness gate of ``chiralfair check``, with the verdict's numbers and its
worst group in the failure message). :func:`check_generator` and :func:`check_seed_strategy` run the contract every
generator and seed strategy keeps (:mod:`.contract`) on yours, :func:`check_mitigation_method` the one every
mitigation method keeps (:mod:`.mitigation_contract`); :func:`parametrize_with_checks` makes one pytest test
per check.

Names are imported on first use (PEP 562), so that importing the package stays light.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

_MODULE_OF = {"assert_individually_fair": "fairness", "check_generator": "contract", "check_seed_strategy": "contract",
              "generator_checks": "contract", "seed_strategy_checks": "contract",
              "parametrize_with_checks": "contract", "check_mitigation_method": "mitigation_contract",
              "mitigation_method_checks": "mitigation_contract"}

__all__ = sorted(_MODULE_OF)

if TYPE_CHECKING:
    from .contract import (  # noqa: F401
        check_generator,
        check_seed_strategy,
        generator_checks,
        parametrize_with_checks,
        seed_strategy_checks,
    )
    from .fairness import assert_individually_fair  # noqa: F401
    from .mitigation_contract import check_mitigation_method, mitigation_method_checks  # noqa: F401

if not TYPE_CHECKING:  # type checkers read the imports above, so a name not there is an error, not `object`
    __getattr__, __dir__ = lazy_attributes(__name__, _MODULE_OF, globals())
