"""Every public function and method documents its parameters and its result in numpydoc sections.

Public: a function or method whose name and module path have no leading underscore, in a class that has none
either (properties are documented as attributes). A function that takes parameters has a ``Parameters`` section;
one that returns a value has ``Returns`` (or ``Yields`` for a generator). The command functions of the CLI are
left out: their parameters are typer options, documented by their ``help=`` texts (``chiralfair CMD --help``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import chiralfair
from chiralfair.cli import app

ROOT = Path(chiralfair.__file__).parent
SECTION = re.compile(r"^\s*(Parameters|Returns|Yields)\s*\n\s*-{3,}\s*$", re.M)
NEXT_SECTION = (r"^\s*(?:Returns|Yields|Raises|Warns|Warnings|See Also|Notes|References|Examples|Attributes)"
                r"\s*\n\s*-{3,}")
SKIP_DECORATORS = {"property", "cached_property", "functools.cached_property", "overload", "typing.overload"}


def cli_commands(typer_app=app) -> set[str]:
    """``module:qualname`` of every command callback registered on the app and its groups."""
    found = {f"{c.callback.__module__}:{c.callback.__qualname__}" for c in typer_app.registered_commands}
    for group in typer_app.registered_groups:
        found |= cli_commands(group.typer_instance)
    return found


def returns_value(node: ast.FunctionDef) -> str | None:
    """``"Yields"`` for a generator, ``"Returns"`` when the body returns a value (nested functions not read)."""
    def walk(n):
        for child in ast.iter_child_nodes(n):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            yield child
            yield from walk(child)
    kinds = set()
    for n in walk(node):
        if isinstance(n, (ast.Yield, ast.YieldFrom)):
            kinds.add("Yields")
        elif isinstance(n, ast.Return) and n.value is not None and not (
                isinstance(n.value, ast.Constant) and n.value.value is None):
            kinds.add("Returns")
    return "Yields" if "Yields" in kinds else ("Returns" if kinds else None)


def public_functions():
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if any(part.startswith("_") and part != "__init__.py" for part in rel.parts):
            continue
        module = "chiralfair." + ".".join(rel.with_suffix("").parts).removesuffix(".__init__")

        def visit(body, prefix="", module=module):
            for node in body:
                if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                    yield from visit(node.body, f"{prefix}{node.name}.")
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
                    if not {ast.unparse(d) for d in node.decorator_list} & SKIP_DECORATORS \
                            and not any(ast.unparse(d).endswith(".setter") for d in node.decorator_list):
                        yield f"{module}:{prefix}{node.name}", node, bool(prefix)

        yield from visit(ast.parse(path.read_text()).body)


def parameter_names(doc: str) -> set[str]:
    """The names a Parameters section documents (``a, b : int`` documents both; ``**params`` as ``params``)."""
    match = re.search(rf"^\s*Parameters\s*\n\s*-{{3,}}\s*\n(.*?)(?={NEXT_SECTION}|\Z)", doc, re.S | re.M)
    if match is None:
        return set()
    lines = [line for line in match.group(1).split("\n") if line.strip()]
    indent = min((len(line) - len(line.lstrip()) for line in lines), default=0)
    heads = [line.strip().split(" : ")[0] for line in lines if len(line) - len(line.lstrip()) == indent]
    return {name.strip().lstrip("*") for head in heads for name in head.split(",")}


def parameters_of(node: ast.FunctionDef, is_method: bool) -> list[str]:
    args = node.args
    params = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    if is_method and params and params[0] in ("self", "cls"):
        params = params[1:]
    return params + [a.arg for a in (args.vararg, args.kwarg) if a is not None]


def missing_sections() -> tuple[list[str], list[str], int, int]:
    commands = cli_commands()
    no_parameters, no_returns, n_with_parameters, n_returning = [], [], 0, 0
    for name, node, is_method in public_functions():
        if name in commands:
            continue
        params = parameters_of(node, is_method)
        sections = set(SECTION.findall(ast.get_docstring(node) or ""))
        if params:
            n_with_parameters += 1
            if "Parameters" not in sections:
                no_parameters.append(name)
        kind = returns_value(node)
        if kind:
            n_returning += 1
            if not sections & {"Returns", "Yields"}:
                no_returns.append(name)
    return no_parameters, no_returns, n_with_parameters, n_returning


def test_every_public_function_with_parameters_has_a_parameters_section():
    no_parameters, _, n, _ = missing_sections()
    assert n > 300  # the scan found the code base
    assert not no_parameters, f"{len(no_parameters)} of {n} lack a Parameters section: {no_parameters}"


def test_every_parameter_is_named_in_its_parameters_section():
    commands = cli_commands()
    undocumented = {}
    for name, node, is_method in public_functions():
        doc = ast.get_docstring(node) or ""
        if name in commands or not SECTION.search(doc):
            continue
        lacking = [p for p in parameters_of(node, is_method) if p not in parameter_names(doc)]
        if lacking:
            undocumented[name] = lacking
    assert not undocumented, f"parameters missing from their Parameters section: {undocumented}"
    assert parameter_names("Say.\n\nParameters\n----------\na, b : int\n    Two.\n**params\n\nReturns\n-------\n"
                           "c : int\n") == {"a", "b", "params"}


def test_every_public_function_that_returns_a_value_has_a_returns_section():
    _, no_returns, _, n = missing_sections()
    assert n > 300
    assert not no_returns, f"{len(no_returns)} of {n} lack a Returns (or Yields) section: {no_returns}"


def test_the_scan_sees_what_a_docstring_lacks(tmp_path, monkeypatch):
    (tmp_path / "toy.py").write_text('def f(a):\n    """Say a."""\n    return a\n\n\ndef _g(b):\n    return b\n\n\n'
                                     'def h(c):\n    """Say c.\n\n    Parameters\n    ----------\n'
                                     '    c : int\n    """\n')
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    commands = cli_commands(app)
    monkeypatch.setattr(f"{__name__}.cli_commands", lambda: set())
    no_parameters, no_returns, n_with_parameters, n_returning = missing_sections()
    assert no_parameters == ["chiralfair.toy:f"] and no_returns == ["chiralfair.toy:f"]
    assert (n_with_parameters, n_returning) == (2, 1)
    assert len(commands) >= 10  # run, estimate, retrain, seeds, datasets, schema infer, experiment run ...
