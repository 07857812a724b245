"""What the installed package carries beside its modules."""

import tomllib
from pathlib import Path

import chiralfair

ROOT = Path(__file__).resolve().parents[1]


def test_the_package_says_it_is_typed_and_ships_the_marker():
    # PEP 561: without py.typed in the wheel, users' type checkers ignore chiralfair's annotations (mypy runs clean
    # on them in .ci/run).
    assert (Path(chiralfair.__file__).parent / "py.typed").is_file()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["chiralfair"]
    assert "py.typed" in data
