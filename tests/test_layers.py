"""Imports only go downward through the layers of architecture: layers and habits."""

import ast
from pathlib import Path

import chiralfair

LAYERS = [
    {"chiralfair", "exceptions", "_validation", "_random", "_lazy", "_deadline", "_registry", "storage"},
    {"domain"},
    {"datasets"},
    {"models"},
    {"oracle", "results", "verdict", "certification"},
    {"seeds"},
    {"generators"},
    {"mitigation"},
    {"reporting"},
    {"pipeline"},
    {"testing"},
    {"experiments"},
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


def _type_checking_only(tree) -> set[int]:
    """Ids of the import nodes under ``if TYPE_CHECKING:`` (for readers and type checkers; never run)."""
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            ids |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return ids


def imported_tops(path: Path):
    tree = ast.parse(path.read_text())
    pkg = path.relative_to(ROOT).parent.parts
    skip = _type_checking_only(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
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


# What the command line may import: the pipeline (every command that runs something), the results and the report
# (printing them), the grid front (experiment, reproduce), the data catalogue (``datasets``, ``schema infer``),
# and the errors and checks of flags.
CLI_MAY_IMPORT = {"cli", "chiralfair", "exceptions", "_validation", "pipeline", "results", "reporting",
                  "experiments", "datasets"}


def test_the_cli_imports_only_the_pipeline_and_the_result_and_report_modules():
    bad = []
    for path in sorted((ROOT / "cli").rglob("*.py")):
        for top, line in imported_tops(path):
            if top not in CLI_MAY_IMPORT and top != "__version__":
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {top}")
    assert not bad, "\n".join(bad)


def test_no_other_module_wires_the_steps_of_a_run():
    # Selecting seeds and running a generator happen in the pipeline's steps only (architecture: layers and habits: one
    # pipeline); the retraining's holdout protocol searches the model before and after inside its own evaluation.
    wiring = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in ("pipeline", "seeds", "generators", "mitigation"):
            continue  # the pipeline itself; the families (their own code and docstrings)
        if rel.as_posix() == "testing/contract.py":
            continue  # the contract checks call one generator or strategy at a time on toys, not a run
        text = path.read_text()
        for needle in (".select(", "generator.run(", "search.run("):
            if needle in text:
                wiring.append(f"{rel}: {needle}")
    assert not wiring, "\n".join(wiring)


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _module_imports(path: Path) -> set[str]:
    """The chiralfair modules (not package faces) that ``path`` imports at run time, function-local ones included."""
    tree = ast.parse(path.read_text())
    skip = _type_checking_only(tree)
    pkg = path.relative_to(ROOT).parent.parts
    out = set()
    for node in ast.walk(tree):
        if id(node) in skip or not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = list(pkg[: len(pkg) - (node.level - 1)])
        elif node.module and node.module.startswith("chiralfair."):
            base = []
        else:
            continue
        parts = base + (node.module.split(".") if node.module and node.level else
                        node.module.split(".")[1:] if node.module else [])
        for alias in node.names:  # "from .x import y": y may be a module of package x
            for candidate in (parts + [alias.name], parts):
                target = ROOT.joinpath(*candidate).with_suffix(".py") if candidate else None
                if target is not None and target.is_file():
                    out.add(".".join(candidate))
                    break
    return out


def test_no_runtime_import_cycle_between_modules():
    graph = {_module_name(p): _module_imports(p) for p in ROOT.rglob("*.py") if p.name != "__init__.py"}
    cycles = []
    for a, targets in graph.items():
        for b in targets:
            if a in graph.get(b, ()) and a < b:
                cycles.append(f"{a} <-> {b}")
    assert not cycles, "\n".join(cycles)
