"""Imports only go downward through the layers of design §10."""

import ast
from pathlib import Path

import chiralfair

LAYERS = [
    {"chiralfair", "exceptions", "_validation", "_random", "_lazy", "_deadline"},
    {"coupling", "constraints", "plausibility"},
    {"domain", "datasets"},
    {"models"},
    {"oracle", "results", "run_folder", "verdict", "estimate"},
    {"seeds"},
    {"generators"},
    {"retraining"},
    {"experiments"},
    {"report", "auditing", "reproduce", "reproduce_tables"},
    {"cli", "__main__"},
]
ROOT = Path(chiralfair.__file__).parent


def layer_of(top: str) -> int:
    for i, names in enumerate(LAYERS):
        if top in names:
            return i
    raise AssertionError(f"module {top!r} is not placed in a layer; add it to LAYERS in this test")


def top_level(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    return "chiralfair" if rel.parts == ("__init__",) else rel.parts[0]


def imported_tops(path: Path):
    tree = ast.parse(path.read_text())
    pkg = path.relative_to(ROOT).parent.parts
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(pkg[: len(pkg) - (node.level - 1)])
                parts = base + (node.module.split(".") if node.module else [])
                if parts:
                    yield parts[0], node.lineno
                else:
                    for alias in node.names:
                        yield alias.name, node.lineno
            elif node.module and node.module.startswith("chiralfair"):
                parts = node.module.split(".")
                yield (parts[1] if len(parts) > 1 else "chiralfair"), node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("chiralfair."):
                    yield alias.name.split(".")[1], node.lineno


def test_imports_only_go_downward():
    bad = []
    for path in sorted(ROOT.rglob("*.py")):
        here = layer_of(top_level(path))
        for top, line in imported_tops(path):
            if top == "__version__":
                continue
            if layer_of(top) > here:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {top} (layer {layer_of(top)} > {here})")
    assert not bad, "\n".join(bad)
