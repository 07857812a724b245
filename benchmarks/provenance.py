"""Which code a benchmark measured: the commit, marked when the working copy's code differs from it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def commit(*paths: str) -> str:
    """The commit the code ran on (short hash), with ``+dirty`` when ``src/`` or ``paths`` had changes.

    ``CHIRALFAIR_BENCH_COMMIT`` names it when the code runs from an exported copy of a commit (no git there), so
    that commits made in the working copy while a long run goes on are not taken for the run's.

    Parameters
    ----------
    *paths : str
        Further paths, relative to the repository, whose changes mark the run (the benchmark's own script).

    Returns
    -------
    str
        ``"unknown"`` outside git.
    """
    if os.environ.get("CHIRALFAIR_BENCH_COMMIT"):
        return os.environ["CHIRALFAIR_BENCH_COMMIT"]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "src", *paths], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")
