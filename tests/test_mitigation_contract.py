"""The mitigation contract (chiralfair.testing) over every built-in method."""


from chiralfair.mitigation.names import BUILTIN_METHODS
from chiralfair.testing import parametrize_with_checks


@parametrize_with_checks(mitigation_methods=BUILTIN_METHODS)
def test_every_builtin_method_keeps_the_contract(name, check):
    check()
