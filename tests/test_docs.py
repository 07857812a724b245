"""The documentation runs: every Python and shell block of every page of ``docs/``, in order, in a fresh folder.

A page tagged ``<!-- test: slow -->`` runs under the ``slow`` mark, one tagged ``<!-- test: needs-data -->`` is
skipped (with the reason) when the benchmark data cannot be found (see :mod:`markdown_blocks`). The API
reference lists every public name of its package, so a name added to a package's ``__all__`` cannot be left out.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import re
from pathlib import Path

import pytest
from markdown_blocks import RUN, code_blocks, page_tags, run_blocks
from realdata import real_data_home_or_skip

from chiralfair.exceptions import DataWarning

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if any(b.lang in RUN for b in code_blocks(p.read_text())))
# Figures the explanation pages quote from a tutorial's run: if a run prints other figures, those pages are stale.
QUOTED = {
    "tutorials/own-data.md": [
        "share of test individuals affected: 9.08% (exact)",                 # the naive flip
        "share of test individuals affected: 6.29% (exact)",                 # coupled
        "sex=Male      10,860  7.34% (797)", "sex=Female     5,421  0.90% (49)",
        "sex=Female 3,469, sex=Male 1,170 (of 4,639 pairs)",
        "it costs 0.023 F1 on the test rows (0.658 -> 0.635)",
        "| 0.0864 [", "| 0.1574 [", "0.183845",                              # equalized-odds differences
    ],
    "tutorials/fairer-model.md": [
        "| after | unaware | – | 0 | 0.4946 | 0.8081 | 0.0000 [0.0000, 0.0003] |",
        "| after | counterfactual | – | 0 | 0.4870 | 0.8094 | 0.0126 [0.0108, 0.0147] |",
        "it costs 0.064 F1 on the test rows (0.495 -> 0.431)",
    ],
}
# Warnings a reader of the page sees when running it (each must be raised; any other warning fails the page).
WARNS = {
    # the page passes census's own two rules as constraints=, which are checked against the data it loads
    "how-to/couplings-and-constraints.md": [
        "constraint 'sex=Female excludes relationship=Husband' is broken by 1 of the 32,561 data rows",
        "constraint 'sex=Male excludes relationship=Wife' is broken by 2 of the 32,561 data rows",
    ],
}
REFERENCE = ["pipeline", "datasets", "models", "seeds", "generators", "verdict", "mitigation", "experiments",
             "certification"]


def page_param(path: Path):
    tags = page_tags(path.read_text())
    marks = [pytest.mark.slow] if "slow" in tags else []
    return pytest.param(path, marks=marks, id=str(path.relative_to(DOCS)))


@pytest.mark.parametrize("page", [page_param(p) for p in PAGES])
def test_every_block_of_the_page_runs(page, tmp_path, monkeypatch):
    text = page.read_text()
    if "needs-data" in page_tags(text):
        monkeypatch.setenv("CHIRALFAIR_DATA", str(real_data_home_or_skip()))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    expected = WARNS.get(str(page.relative_to(DOCS)), [])
    with pytest.warns(DataWarning) if expected else contextlib.nullcontext() as caught:
        printed = run_blocks(code_blocks(text), tmp_path, where=str(page.relative_to(ROOT)))
    for message in expected:
        assert any(message in str(w.message) for w in caught), f"{page.name} no longer warns {message!r}"
    for figure in QUOTED.get(str(page.relative_to(DOCS)), []):
        assert figure in printed, f"{page.name} no longer prints {figure!r}, which the docs quote"


def test_the_pages_have_blocks_to_run_and_every_page_is_in_the_site():
    tutorials = [p for p in PAGES if p.parent.name == "tutorials"]
    assert len(tutorials) == 5, [p.name for p in tutorials]
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in DOCS.rglob("*.md"):
        assert str(page.relative_to(DOCS)) in nav, f"{page} is not in mkdocs.yml's nav"


def test_the_block_runner_fails_on_a_failing_block_and_keeps_the_order(tmp_path):
    blocks = code_blocks("```python\nfrom pathlib import Path\nPath('a.txt').write_text('x')\n```\n\n"
                         "```bash\ntest -f a.txt && echo found\n```\n"
                         "\n```text\nnot run\n```\n")
    assert [b.lang for b in blocks] == ["python", "bash", "text"]
    assert run_blocks(blocks, tmp_path, where="toy").strip() == "found"
    with pytest.raises(AssertionError, match="toy:1"):
        run_blocks(code_blocks("```python\nraise ValueError('no')\n```\n"), tmp_path, where="toy")
    with pytest.raises(AssertionError, match="exited 3"):
        run_blocks(code_blocks("```bash\nexit 3\n```\n"), tmp_path, where="toy")


@pytest.mark.parametrize("package", REFERENCE)
def test_the_api_reference_lists_every_public_name_of_its_package(package):
    page = (DOCS / "reference" / f"{package}.md").read_text()
    listed = set(re.findall(rf"^::: chiralfair\.{package}\.(\w+)$", page, re.M))
    public = set(importlib.import_module(f"chiralfair.{package}").__all__)
    assert public <= listed, f"docs/reference/{package}.md lacks {sorted(public - listed)}"


@pytest.mark.parametrize("package", REFERENCE + ["testing"])
def test_every_lazy_name_of_a_package_face_is_imported_for_type_checkers(package):
    # The API reference (griffe) and type checkers see a lazy name (PEP 562) only through the TYPE_CHECKING imports.
    init = Path(importlib.import_module(f"chiralfair.{package}").__file__)
    tree = ast.parse(init.read_text())
    lazy = next((ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                 and getattr(n.targets[0], "id", "") == "_MODULE_OF"), None)
    if lazy is None:
        pytest.skip(f"chiralfair.{package} imports its names eagerly")
    guarded = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    imported = {(node.module, alias.name) for node in ast.walk(guarded) if isinstance(node, ast.ImportFrom)
                for alias in node.names}
    assert {(module, name) for name, module in lazy.items()} <= imported


@pytest.mark.parametrize("package", REFERENCE + ["testing"])
def test_every_public_name_of_a_package_resolves(package):
    module = importlib.import_module(f"chiralfair.{package}")
    broken = []
    for name in module.__all__:
        try:
            getattr(module, name)
        except AttributeError as err:
            broken.append(f"{name}: {err}")
    assert not broken, broken
