import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

sys.path.insert(0, str(Path(__file__).parent))

# Property-based tests draw the same examples on every run (a CI failure is reproducible), without deadlines (the
# machine is shared). HYPOTHESIS_PROFILE=explore draws new examples each run.
settings.register_profile("chiralfair", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("explore", deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "chiralfair"))

from toys import biased_module, fair_module, toy_dataset, toy_domain  # noqa: E402

from chiralfair.models import as_model  # noqa: E402


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
