"""Where the benchmark raw files are for tests (conftest's ``offline`` fixture keeps tests off the network)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from chiralfair.datasets import home

ROOT = Path(__file__).resolve().parents[1]
SKIP_REASON = ("benchmark data not found: set CHIRALFAIR_DATA to the folder holding census/raw/adult.data "
               "etc., or clone the repository beside shared/ (<root>/../shared/data)")


def find_real_data_home() -> Path | None:
    """``$CHIRALFAIR_DATA``, else ``<root>/../shared/data`` (also tried one level up, for git worktrees)."""
    candidates = [os.environ.get(home.ENV_VAR, ""), ROOT.parent / "shared" / "data",
                  ROOT.parent.parent / "shared" / "data"]
    for candidate in candidates:
        if candidate and (Path(candidate) / "census" / "raw" / "adult.data").is_file():
            # absolute: the docs' blocks run in a fresh folder, where the README's CHIRALFAIR_DATA=../shared/data
            # would name nothing (and the loader would try to download)
            return Path(candidate).resolve()
    return None


def real_data_home_or_skip() -> Path:
    """The real data home, or skip the test with a reason saying how to provide it."""
    path = find_real_data_home()
    if path is None:
        pytest.skip(SKIP_REASON)
    return path

