"""An sklearn-only install: with ``import torch`` failing, sklearn models run through seeds and a search.

The interpreter is a subprocess whose meta-path finder refuses torch, as if it were not installed. The toy data
is built here (tests/toys.py imports torch).
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

SCRIPT = r'''
import importlib.abc, sys

class NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)")
        return None

sys.meta_path.insert(0, NoTorch())

import numpy as np

import chiralfair.generators
from chiralfair.datasets.base import Dataset
from chiralfair.domain import Domain, Feature
from chiralfair.exceptions import MissingDependencyError
from chiralfair.generators import make_generator
from chiralfair.models import ModelSpec, train_model
from chiralfair.seeds import make_seed_strategy

# Biased toy: y = 1 iff a + b + 3 sex > 10.5; an input is an IDI on sex iff 8 <= a + b <= 10.
domain = Domain((Feature("sex", 0, 1, "categorical"), Feature("a", 0, 9), Feature("b", 0, 9),
                 Feature("c", 0, 4))).with_protected(["sex"])
X = domain.sample(600, np.random.default_rng(0))
y = (X @ np.array([3, 1, 1, 0]) - 10.5 > 0).astype(np.int64)
data = Dataset("toy", X, y, domain, label="y", positive_class="1")

trained = train_model(data, "lr", random_state=0, cache_dir=sys.argv[1])
for strategy in sys.argv[2].split(","):
    report = make_seed_strategy(strategy).select(trained.model, data, 30, random_state=0)
    result = make_generator("aequitas", max_global=30, max_local=30).run(trained.model, domain, report,
                                                                         random_state=0)
    s = result.idis[:, 1] + result.idis[:, 2]
    assert result.n_idis > 0 and np.all((s >= 7) & (s <= 11)), (strategy, result.n_idis)
    print(strategy, report.initialization_rate, result.n_idis)

for call in (lambda: ModelSpec("dnn").fit(X, y), lambda: train_model(data, "dnn", cache_dir=sys.argv[1])):
    try:
        call()
    except MissingDependencyError as err:
        assert "pip install torch==2.13.0" in str(err) and "'dnn'" in str(err), err
    else:
        raise AssertionError("the DNN trained without torch")
import importlib

# Importing a torch-only module says how to install torch (a MissingDependencyError is an ImportError), naming it.
for name in ("chiralfair.models.dnn", "chiralfair.models.torch_adapter"):
    try:
        importlib.import_module(name)
    except MissingDependencyError as err:
        assert "pip install torch==2.13.0" in str(err) and name in str(err), err
    else:
        raise AssertionError(f"{name} imported without torch")
from chiralfair.models.files import load_model_file
open(sys.argv[1] + ".pt", "wb").close()
try:
    load_model_file(sys.argv[1] + ".pt")
except MissingDependencyError as err:
    assert "pip install torch==2.13.0" in str(err) and "TorchScript" in str(err), err
else:
    raise AssertionError("a TorchScript file loaded without torch")
assert "torch" not in sys.modules
print("OK")
'''


def run_without_torch(tmp_path, strategies: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "cache"), strategies], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith("OK")
    return proc.stdout


def test_sklearn_model_runs_seeds_and_search_without_torch(tmp_path):
    out = run_without_torch(tmp_path, "i,cluster")
    assert out.startswith("i ") and "\ncluster " in out


@pytest.mark.slow  # imports shap in a fresh interpreter: 5-10 s
def test_iandd_explains_an_sklearn_model_without_torch(tmp_path):
    assert run_without_torch(tmp_path, "iandd").startswith("iandd ")
