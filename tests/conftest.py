import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

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
