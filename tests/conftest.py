import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).parent))

# Property-based tests draw the same examples on every run (a CI failure is reproducible), without deadlines (the
# machine is shared) and without an example database (no .hypothesis/ folder; a failure prints its reproduce blob).
# HYPOTHESIS_PROFILE=explore draws new examples each run.
settings.register_profile("chiralfair", derandomize=True, database=None, deadline=None, print_blob=True)
settings.register_profile("explore", database=None, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "chiralfair"))

from toys import biased_module, fair_module, toy_dataset, toy_domain  # noqa: E402

from chiralfair.datasets import home  # noqa: E402
from chiralfair.models import as_model  # noqa: E402


@pytest.fixture
def one_blas_thread():
    """One BLAS/OpenMP thread inside the test (``pytestmark = pytest.mark.usefixtures("one_blas_thread")``).

    The test machine is shared: OpenMP/BLAS threads spinning on busy cores made one HGB fit 170x slower.
    """
    with threadpool_limits(1):
        yield


@pytest.fixture
def offline(monkeypatch, tmp_path_factory):
    """No download can happen: the user cache folder is a fresh empty one, and every download fails."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))

    def refuse(url, output_file, pooch):
        raise OSError(f"network disabled in tests (asked for {url})")

    monkeypatch.setattr(home, "downloader", lambda: refuse)


@pytest.fixture
def domain():
    return toy_domain()


@pytest.fixture
def fair_model():
    return as_model(fair_module(), name="fair-toy")


@pytest.fixture
def biased_model():
    return as_model(biased_module(), name="biased-toy")


@pytest.fixture
def dataset():
    return toy_dataset()
