"""The README holds on the reader's machine: its quick start prints what it shows (every line but the timings: the
DNN and its chiral model are shipped reference networks), its own-data example runs and prints the figures it
quotes, and CI runs its test command."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from markdown_blocks import code_blocks, run_blocks, section
from realdata import real_data_home_or_skip

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
# Lines whose every figure comes from the data and the configuration, not from the trained DNN's weights.
STABLE = ("  coupled:", "  constraint:", "  note:", "run folder:")


def quick_start(n: int) -> str:
    """The README's quick-start command number ``n`` (the line after its ``# n.`` comment)."""
    lines = README.splitlines()
    return lines[next(i for i, line in enumerate(lines) if line.startswith(f"# {n}.")) + 1].strip()


def installs(line: str) -> set[str]:
    """What a ``pip install`` line installs: its requirement (``torch==2.13.0``) or the project and its extras."""
    target = line.split("install", 1)[1].replace("-q", "").strip()
    match = re.fullmatch(r'-e "?\.(?:\[([\w,]+)\])?"?', target)
    return {"project", *match.group(1).split(",")} if match and match.group(1) else (
        {"project"} if match else {target})


def printed_block() -> list[str]:
    """The ``text`` block that shows what the first command prints."""
    quick = section(README, "Quick start")
    return next(b for b in code_blocks(quick) if b.lang == "text").source.rstrip("\n").splitlines()


def label(line: str) -> str:
    """What a line says before its first figure (or its first colon)."""
    return re.split(r"[\d:]", line, maxsplit=1)[0]


def machine_free(line: str) -> str:
    """The line with the figures that depend on the trained model masked (the configuration line's F1)."""
    return re.sub(r"test F1 [\d.]+", "test F1 #", line)


def test_the_readme_is_short_and_ci_runs_its_test_command():
    assert len(README.splitlines()) <= 150
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    install, tests = quick_start(2).split(" && CHIRALFAIR_DATA=../shared/data ")
    assert tests in ci, f"'.ci/run' does not run the README's test command {tests!r}"
    for step in install.split(" && ")[1:]:
        package = step.split("install ", 1)[1]
        assert any("pip install" in line and installs(line) >= installs(step) for line in ci), \
            f".ci/run does not install {package}"
    assert quick_start(1).split(" && ")[:2] == quick_start(2).split(" && ")[:2]  # the same venv and torch


def test_the_comparison_tells_stable_lines_from_machine_dependent_ones():
    shown = printed_block()
    assert shown[0].startswith("share of test individuals affected:") and shown[-1] == "run folder: runs/census-sex"
    here, there = "census / sex / dnn (test F1 0.658) — x", "census / sex / dnn (test F1 0.653) — x"
    assert machine_free(here) == machine_free(there) != machine_free(here.replace("dnn", "lr"))
    assert label("  n_idis               5,704") == label("  n_idis               5,776")
    assert label("  n_idis  5,704") != label("  n_local  5,704")
    assert sum(line.startswith(STABLE) for line in shown) >= 4


@pytest.mark.slow
def test_the_quick_start_prints_what_the_readme_shows_on_the_lines_that_do_not_vary(tmp_path):
    data = real_data_home_or_skip()
    command = quick_start(1).split(" && ")[-1]
    assert command.startswith("CHIRALFAIR_DATA=../shared/data .venv/bin/chiralfair run ")
    args = command.split(" .venv/bin/chiralfair ", 1)[1].split()
    env = {**os.environ, "CHIRALFAIR_DATA": str(data)}
    proc = subprocess.run([str(Path(sys.executable).parent / "chiralfair"), *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    fresh, shown = proc.stdout.rstrip("\n").splitlines(), printed_block()
    assert [label(line) for line in fresh] == [label(line) for line in shown]
    for got, want in zip(fresh, shown, strict=True):
        if want.startswith(STABLE) or want.startswith("census / sex / dnn"):
            assert machine_free(got) == machine_free(want)
        if not want.startswith("  seconds"):  # the reference networks: the same figures on every machine
            assert got == want
    assert (tmp_path / "runs" / "census-sex" / "report.html").is_file()


@pytest.mark.slow
def test_the_own_data_example_runs_and_prints_the_figures_the_readme_quotes(tmp_path, monkeypatch):
    monkeypatch.setenv("CHIRALFAIR_DATA", str(real_data_home_or_skip()))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    part = section(README, "Your own data and model")
    printed = run_blocks(code_blocks(part), tmp_path, where="README.md")
    quoted = re.search(r"print\(result\.summary\(\)\)\s+# (.*?) \.\.\.", part).group(1)
    assert quoted in printed  # "share of test individuals affected: 6.29% (exact)"
    assert "6.29% of the 16,281 test individuals" in part and "test F1 0.658" in printed
    assert "most harmed group: sex=Male (7.34% of its 10,860" in printed
    # no IDI left, but the equalized-odds difference nearly doubles: the guardrail says it is not an improvement
    assert re.search(r"after\s+counterfactual\s+0\.655\d*\s+0\.0+\s+False", printed), printed
    assert "| 0.0864 [" in printed and "| 0.1574 [" in printed  # the equalized-odds difference, before and after
    assert "0.086 →\n0.157" in part and "F1 0.655" in part and "men more often harmed: 7.34%" in part
    assert (tmp_path / "runs" / "cli-fairer" / "model-counterfactual.skops").is_file()
