"""Where a benchmark finds the data when ``CHIRALFAIR_DATA`` is not set: ``shared/data`` beside the clone."""

from __future__ import annotations

import os
from pathlib import Path

BESIDE_THE_CLONE = Path(__file__).resolve().parents[2] / "shared" / "data"


def default_data_home() -> None:
    """Set ``CHIRALFAIR_DATA`` to ``<clone>/../shared/data`` when it is unset and that folder holds census.

    Set in the environment, so that the subprocesses a benchmark starts read the same data.
    """
    if not os.environ.get("CHIRALFAIR_DATA") and (BESIDE_THE_CLONE / "census" / "raw" / "adult.data").is_file():
        os.environ["CHIRALFAIR_DATA"] = str(BESIDE_THE_CLONE)
