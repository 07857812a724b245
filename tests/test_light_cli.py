"""Quick refusals: --help, --version, datasets and every refused flag import neither torch, shap, sklearn nor z3.

Checked through ``sys.modules`` of a fresh interpreter (a subprocess), not by timing: these imports cost
seconds, so a refusal that needs none of them answers at once.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from realdata import find_real_data_home

HEAVY = ("torch", "shap", "sklearn", "z3")
SRC = Path(__file__).resolve().parents[1] / "src"

# Run the command line in-process, then print which heavy modules were imported, whatever the exit code.
PROBE = """
import atexit, json, sys
atexit.register(lambda: print("HEAVY=" + json.dumps(sorted(m for m in {heavy!r} if m in sys.modules))))
from chiralfair.cli import app
app(sys.argv[1:])
"""


def run_cli(*args, data_home=None):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    if data_home is not None:
        env["CHIRALFAIR_DATA"] = str(data_home)
    proc = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY), *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=120)
    heavy = [line for line in proc.stdout.splitlines() if line.startswith("HEAVY=")]
    assert heavy, proc.stdout + proc.stderr
    return proc, heavy[-1].removeprefix("HEAVY=")


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["run", "--help"]])
def test_help_and_version_are_light(args):
    proc, heavy = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    assert heavy == "[]"


def test_datasets_is_light(tmp_path):
    data_home = find_real_data_home() or tmp_path  # an empty home lists every file as missing
    proc, heavy = run_cli("datasets", data_home=data_home)
    assert proc.returncode == 0, proc.stderr
    assert "census" in proc.stdout and "protected sex" in proc.stdout
    assert heavy == "[]"


REFUSALS = [
    (["run", "--max-global", "0"], "--max-global must be >= 1"),
    (["run", "--max-local", "-1"], "--max-local must be >= 0"),
    (["run", "--random-state", "-3"], "--random-state must be >= 0"),
    (["run", "--dataset", "adult"], "unknown dataset 'adult'"),
    (["run", "--model", "xgb"], "unknown model name 'xgb'"),
    (["run", "--generator", "fairx"], "unknown generator 'fairx'"),
    (["run", "--seeds", "best"], "unknown seed strategy 'best'"),
    (["run", "--dataset", "german", "--protected", "gender"], "unknown protected attribute 'gender' for german"),
    (["run", "--protected", " , "], "names no attribute"),
    (["run", "--generator", "eidig", "--model", "dtc"], "needs input_gradient()"),
    (["seeds", "--strategy", "best"], "unknown seed strategy 'best'"),
    (["seeds", "--model", "xgb"], "unknown model name 'xgb'"),
    (["seeds", "--n-seeds", "0"], "--n-seeds must be >= 1"),
    (["seeds", "--protected", "gender"], "unknown protected attribute 'gender' for census"),
]


@pytest.mark.parametrize(("args", "message"), REFUSALS, ids=[" ".join(a) for a, _ in REFUSALS])
def test_refusals_are_light(args, message, tmp_path):
    proc, heavy = run_cli(*args, "--cache-dir", tmp_path / "cache", data_home=tmp_path / "no-data")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert heavy == "[]"


def test_foreign_output_folder_is_refused_light_and_untouched(tmp_path):
    foreign = tmp_path / "photos"
    foreign.mkdir()
    (foreign / "cat.jpg").write_bytes(b"not a run")
    proc, heavy = run_cli("run", "--out", foreign, "--cache-dir", tmp_path / "cache", data_home=tmp_path)
    assert proc.returncode == 2 and "not a previous chiralfair run" in proc.stderr
    assert heavy == "[]"
    assert [p.name for p in foreign.iterdir()] == ["cat.jpg"]
