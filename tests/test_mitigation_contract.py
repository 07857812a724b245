"""The mitigation contract (chiralfair.testing) over every built-in method."""

import pytest

from chiralfair.mitigation.names import BUILTIN_METHODS
from chiralfair.testing import parametrize_with_checks

# auto trains every candidate on three validation splits (about 20 s on 2 cores): slow, but still checked
QUICK = [name for name in BUILTIN_METHODS if name != "auto"]


@parametrize_with_checks(mitigation_methods=QUICK)
def test_every_builtin_method_keeps_the_contract(name, check):
    check()


@pytest.mark.slow
@parametrize_with_checks(mitigation_methods=["auto"])
def test_auto_keeps_the_contract(name, check):
    check()
