"""Quick refusals: --help, --version, datasets and every refused flag import no torch, shap, sklearn, z3, scipy, pandas.

Checked through ``sys.modules`` of a fresh interpreter (a subprocess), not by timing: these imports cost
seconds, so a refusal that needs none of them answers at once. One interpreter runs every command in turn;
modules stay imported once loaded, so none of the commands imported them if none is loaded at the end.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

from realdata import find_real_data_home

HEAVY = ("torch", "shap", "sklearn", "z3", "scipy", "pandas")
SRC = Path(__file__).resolve().parents[1] / "src"

# Runs each command line of argv[1] (a JSON list) in-process; prints exit codes, standard error and the heavy
# modules loaded after each command.
PROBE = """
import contextlib, io, json, sys
from chiralfair.cli import app
out = []
for args in json.loads(sys.argv[1]):
    err, std = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(std):
        try:
            app(args)
            code = 0
        except SystemExit as exc:
            code = exc.code or 0
    out.append({"args": args, "code": code, "stderr": err.getvalue(), "stdout": std.getvalue(),
                "heavy": sorted(m for m in HEAVY_NAMES if m in sys.modules)})
print(json.dumps(out))
""".replace("HEAVY_NAMES", repr(HEAVY))

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
    (["estimate", "--dataset", "adult"], "unknown dataset 'adult'"),
    (["estimate", "--model", "xgb"], "unknown model name 'xgb'"),
    (["retrain", "--generator", "fairx"], "unknown generator 'fairx'"),
    (["retrain", "--max-global", "0"], "--max-global must be >= 1"),
    (["retrain", "--generator", "adf", "--model", "dtc"], "needs input_gradient()"),
    (["certify", "--model", "lr"], "is not a ReLU network"),
    (["certify", "--bound", "exact"], "--bound must be one of"),
]


def run_commands(commands, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
           "CHIRALFAIR_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(commands)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_help_version_datasets_and_refusals_import_no_heavy_module(tmp_path):
    foreign = tmp_path / "photos"
    foreign.mkdir()
    (foreign / "cat.jpg").write_bytes(b"not a run")
    data_home = find_real_data_home() or tmp_path  # an empty home lists every raw file as missing
    commands = [["--help"], ["--version"], ["run", "--help"], ["datasets", "--data-home", str(data_home)]]
    commands += [args + ["--data-home", str(tmp_path / "no-data")] for args, _ in REFUSALS]
    commands.append(["run", "--out", str(foreign), "--data-home", str(data_home)])
    results = run_commands(commands, tmp_path)

    for r in results[:4]:
        assert r["code"] == 0, r
    assert "census" in results[3]["stdout"] and "protected sex" in results[3]["stdout"]
    for r, (_, message) in zip(results[4:-1], REFUSALS, strict=True):
        assert r["code"] == 2 and message in r["stderr"] and "Traceback" not in r["stderr"], r
    assert results[-1]["code"] == 2 and "not a previous chiralfair run" in results[-1]["stderr"]
    assert [p.name for p in foreign.iterdir()] == ["cat.jpg"]
    assert results[-1]["heavy"] == [], [(r["args"], r["heavy"]) for r in results if r["heavy"]]
