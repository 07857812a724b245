"""The one registry the three families share: a name registered twice or never is refused in the family's words."""

import pytest

from chiralfair._registry import Registry
from chiralfair.exceptions import ConfigError
from chiralfair.generators import GENERATORS, make_generator, register_generator
from chiralfair.mitigation import METHODS, make_method, register_method
from chiralfair.seeds import SEED_STRATEGIES, make_seed_strategy, register_seed_strategy


class Made:
    def __init__(self, *, size: int = 1):
        self.params = {"size": size}


class Preset(Made):
    def __init__(self, **params):  # passes its parameters on: it takes its base's
        super().__init__(**params)


def test_a_registry_reads_like_a_dict_and_builds_by_name():
    reg = Registry("widget")
    assert reg.add("b", Made) is Made and reg.add("a", dict) is dict
    assert "b" in reg and reg["b"] is Made and sorted(reg) == ["a", "b"] and len(reg) == 2
    assert dict(reg) == {"b": Made, "a": dict} and reg.get("c") is None
    assert reg.make("b", size=3).params == {"size": 3}
    with pytest.raises(ConfigError, match=r"^widget 'b' takes no parameter 'sise'; its parameters: size$"):
        reg.make("b", sise=3)
    reg.add("p", Preset)
    assert reg.make("p", size=2).params == {"size": 2}
    with pytest.raises(ConfigError, match=r"^widget 'p' takes no parameter 'sise'"):
        reg.make("p", sise=3)
    with pytest.raises(ConfigError, match=r"^widget 'a' is already registered$"):
        reg.add("a", Made)
    assert reg["a"] is dict  # the first registration stands
    with pytest.raises(ConfigError, match=r"^unknown widget 'c'; valid: a, b, p$"):
        reg.make("c")
    with pytest.raises(ConfigError, match=r"^unknown widget 'c'; valid: a, b, p$"):
        reg.check("c")
    with pytest.raises(TypeError):
        reg["c"] = Made  # written only through add


@pytest.mark.parametrize(("register", "make", "registry", "name", "kind"), [
    (register_generator, make_generator, GENERATORS, "aequitas", "generator"),
    (register_seed_strategy, make_seed_strategy, SEED_STRATEGIES, "iandd", "seed strategy"),
    (register_method, make_method, METHODS, "paper", "mitigation method"),
])
def test_each_family_refuses_a_name_twice_and_a_misspelt_one_in_its_own_words(register, make, registry, name, kind):
    with pytest.raises(ConfigError, match=f"^unknown {kind} 'no-such'; valid: "):
        make("no-such")  # also loads the built-in names
    before = registry[name]
    with pytest.raises(ConfigError, match=f"^{kind} '{name}' is already registered$"):
        register(name)(Made)
    assert registry[name] is before and not hasattr(Made, "name")
