"""Where the benchmark raw files are for tests, and a guard that keeps dataset tests off the network."""

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
            return Path(candidate)
    return None


def real_data_home_or_skip() -> Path:
    """The real data home, or skip the test with a reason saying how to provide it."""
    path = find_real_data_home()
    if path is None:
        pytest.skip(SKIP_REASON)
    return path


def go_offline(monkeypatch, cache_dir: Path) -> None:
    """Send the user cache folder to ``cache_dir`` and make every download fail."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_dir))

    def refuse(url, output_file, pooch):
        raise OSError(f"network disabled in tests (asked for {url})")

    monkeypatch.setattr(home, "downloader", lambda: refuse)
