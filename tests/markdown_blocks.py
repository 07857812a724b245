"""The code blocks of a Markdown page, and a runner that runs them in order as a reader would.

A page's ```` ```python ```` blocks run in one namespace, top to bottom (a later block sees what an earlier one
defined), and its ```` ```bash ```` blocks in ``bash -euo pipefail``, in the same order and the same working
folder, so that a shell block can use the files a Python block wrote. Blocks of any other language (``text``,
``toml``, ``console``) are shown, not run. A page says how it is tested in an HTML comment (invisible on the
site): ``<!-- test: slow -->`` (trains models or takes more than a few seconds) and ``<!-- test: needs-data -->``
(reads the benchmark data: ``CHIRALFAIR_DATA``, as the tests find it).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt

RUN = ("python", "bash")


@dataclass(frozen=True)
class Block:
    lang: str
    source: str
    line: int  # 1-based line of the opening fence


def code_blocks(text: str) -> list[Block]:
    """Every fenced block of ``text``, in order (the fence's first word is its language)."""
    tokens = MarkdownIt("commonmark").parse(text)
    return [Block(t.info.split()[0] if t.info.strip() else "", t.content, t.map[0] + 1)
            for t in tokens if t.type == "fence"]


def page_tags(text: str) -> set[str]:
    """The words of the page's ``<!-- test: ... -->`` comments."""
    return {w for m in re.finditer(r"<!--\s*test:([^>]*)-->", text) for w in m.group(1).replace(",", " ").split()}


def section(text: str, heading: str) -> str:
    """The part of ``text`` under the ``## heading`` up to the next heading of level 1 or 2 (fences skipped)."""
    tokens = MarkdownIt("commonmark").parse(text)
    starts = [(t.map[0], tokens[i + 1].content) for i, t in enumerate(tokens)
              if t.type == "heading_open" and t.tag in ("h1", "h2")]
    lines = text.splitlines(keepends=True)
    for k, (line, title) in enumerate(starts):
        if title == heading:
            end = starts[k + 1][0] if k + 1 < len(starts) else len(lines)
            return "".join(lines[line + 1:end])
    raise LookupError(f"no section '## {heading}'")


def run_blocks(blocks: list[Block], cwd: Path, *, where: str, env: dict | None = None) -> str:
    """Run the Python and shell blocks in order in ``cwd``; return everything they printed.

    Raises
    ------
    AssertionError
        Naming the page and the line of the block that failed, with its output.
    """
    env = dict(os.environ if env is None else env)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # this venv's chiralfair
    namespace: dict = {"__name__": "__main__"}
    printed = io.StringIO()
    old = Path.cwd()
    os.chdir(cwd)
    try:
        for block in blocks:
            if block.lang == "python":
                out = io.StringIO()
                try:
                    with contextlib.redirect_stdout(out):
                        exec(compile(block.source, f"{where}:{block.line}", "exec"), namespace)
                except Exception as err:
                    raise AssertionError(f"{where}:{block.line}: the Python block failed: {err!r}\n"
                                         f"{out.getvalue()[-3000:]}") from err
                printed.write(out.getvalue())
            elif block.lang == "bash":
                proc = subprocess.run(["bash", "-euo", "pipefail", "-c", block.source], cwd=cwd, env=env,
                                      capture_output=True, text=True)
                if proc.returncode != 0:
                    raise AssertionError(f"{where}:{block.line}: the shell block exited {proc.returncode}:\n"
                                         f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
                printed.write(proc.stdout)
    finally:
        os.chdir(old)
    return printed.getvalue()
