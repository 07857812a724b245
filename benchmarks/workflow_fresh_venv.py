"""The team's workflow in a fresh venv with the documented extras: MLflow with no setup, a BOM, the gate.

Run by hand from the repository root (cyclonedx-python-lib, from the test extra, validates the BOM here):

    python benchmarks/workflow_fresh_venv.py [--venv /tmp/wfvenv] [--reuse]

1. ``python3 -m venv VENV``, ``VENV/bin/pip install torch==2.13.0``, ``VENV/bin/pip install -e ".[mlflow]"``
   (timed; ``--reuse`` keeps a venv that already has ``chiralfair``).
2. In an empty folder, with every ``MLFLOW_*`` variable removed from the environment: ``chiralfair run ...
   --mlflow`` of the venv, its exit code, and the run read back from the store MLflow chose by itself (the
   tracking URI, the metric keys per group, the artifacts).
3. ``chiralfair check ... --bom bom.json``, the BOM validated against the CycloneDX 1.6 JSON schema.
4. The gate on a 600-row hold-out near the threshold: ``chiralfair check`` at thresholds around the model's share,
   in both readings (``--reading superpopulation``, the default, and ``--reading rows``): exit codes and lines.
5. A tracking server that is down (``MLFLOW_TRACKING_URI=http://127.0.0.1:9``): the verdict is still printed, one
   error line follows, the run folder is kept.

Writes benchmarks/results/workflow_fresh_venv.json (figures, parameters, versions, CPU count, date, load) and .md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
N_TEST = 600


def sh(args, **kwargs) -> tuple[int, str, str, float]:
    t = time.perf_counter()
    res = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kwargs)
    return res.returncode, res.stdout, res.stderr, time.perf_counter() - t


def make_venv(venv: Path, reuse: bool) -> dict:
    if reuse and (venv / "bin" / "chiralfair").exists():
        earlier = RESULTS / "workflow_fresh_venv.json"
        made = json.loads(earlier.read_text())["install"] if earlier.is_file() else {}
        # the venv's install, as the run that made it measured it (an editable install: it runs this tree)
        return {"reused": True, "install_seconds": made.get("install_seconds"), "made": made.get("made")}
    steps = {}
    for name, args in (("venv", [sys.executable, "-m", "venv", "--clear", venv]),
                       ("torch", [venv / "bin" / "pip", "install", "-q", "torch==2.13.0"]),
                       ("chiralfair[mlflow]", [venv / "bin" / "pip", "install", "-q", "-e", f"{ROOT}[mlflow]"])):
        code, out, err, seconds = sh(args)
        if code != 0:
            raise SystemExit(f"{name} failed ({code}):\n{out[-2000:]}\n{err[-2000:]}")
        steps[name] = round(seconds, 1)
    return {"reused": False, "install_seconds": steps,
            "made": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}


def write_data(folder: Path) -> None:
    """Made-up data whose label leans on sex a little: a model that affects a few percent of the held-out rows."""
    import numpy as np
    import pandas as pd
    import skops.io as sio
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(0)
    n = 2000 + N_TEST
    df = pd.DataFrame({"sex": rng.choice(["f", "m"], n), "age": rng.choice(["<40", ">40"], n),
                       "hours": rng.integers(0, 1000, n)})
    df["y"] = np.where(df["hours"] + 40 * (df["sex"] == "m") + rng.normal(0, 60, n) > 550, "high", "low")
    train, test = df.iloc[:2000], df.iloc[2000:]
    train.to_csv(folder / "train.csv", index=False)
    test.to_csv(folder / "test.csv", index=False)
    pre = ColumnTransformer([("cat", OneHotEncoder(), ["sex", "age"]), ("num", StandardScaler(), ["hours"])])
    model = Pipeline([("pre", pre), ("lr", LogisticRegression(max_iter=500))])
    sio.dump(model.fit(train.drop(columns="y"), train["y"]), folder / "model.skops")


def own(folder: Path) -> list:
    return ["--data", folder / "train.csv", "--test", folder / "test.csv", "--model", folder / "model.skops",
            "--label", "y", "--positive-class", "high", "--protected", "sex,age", "--trust-model-file"]


def clean_env() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}


READ_BACK = """
import json, mlflow
from chiralfair.reporting.tracking import group_name
client = mlflow.tracking.MlflowClient()
(run,) = client.search_runs([e.experiment_id for e in client.search_experiments()])
m = run.data.metrics
print(json.dumps({"tracking_uri": mlflow.get_tracking_uri(), "status": run.info.status, "n_metrics": len(m),
                  "n_params": len(run.data.params), "share_affected": m.get("fair_share_affected"),
                  "groups": sorted(group_name(k.split("/")[1]) for k in m if k.endswith("/share_harmed")),
                  "artifacts": sorted(a.path for a in client.list_artifacts(run.info.run_id, "chiralfair"))}))
"""


def mlflow_without_setup(venv: Path, folder: Path) -> dict:
    work = folder / "mlflow"
    work.mkdir()
    env = clean_env()
    code, out, err, seconds = sh([venv / "bin" / "chiralfair", "run", *own(folder), "--seeds", "random",
                                  "--max-global", 50, "--max-local", 10, "--out", work / "run", "--mlflow"],
                                 cwd=work, env=env)
    record = {"exit_code": code, "seconds": round(seconds, 1), "first_line": out.splitlines()[0] if out else "",
              "mlflow_line": next((x for x in err.splitlines() if x.startswith("MLflow run:")), ""),
              "env_mlflow_variables": sorted(k for k in env if k.startswith("MLFLOW_"))}
    if code == 0:
        c2, out2, err2, _ = sh([venv / "bin" / "python", "-c", READ_BACK], cwd=work, env=env)
        record["read_back"] = json.loads(out2) if c2 == 0 else {"error": err2[-1000:]}
    else:
        record["stderr"] = err[-2000:]
    return record


def bom(venv: Path, folder: Path) -> dict:
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    code, out, err, seconds = sh([venv / "bin" / "chiralfair", "check", *own(folder), "--max-share", 0.5, "--bom",
                                  folder / "bom.json"], env=clean_env())
    text = (folder / "bom.json").read_text() if (folder / "bom.json").is_file() else "{}"
    errors = JsonStrictValidator(SchemaVersion.V1_6).validate_str(text, all_errors=True)
    doc = json.loads(text)
    return {"exit_code": code, "seconds": round(seconds, 1), "schema_errors": [str(e) for e in errors or []],
            "components": [(c["type"], c["name"]) for c in doc.get("components", [])],
            "validator": "cyclonedx-python-lib JsonStrictValidator(SchemaVersion.V1_6)"}


def gate(venv: Path, folder: Path) -> dict:
    code, out, err, _ = sh([venv / "bin" / "chiralfair", "check", *own(folder), "--max-share", 0.5, "--json"],
                           env=clean_env())
    decision = json.loads(out)
    share, upper = decision["share"], decision["upper"]
    thresholds = {"half the share": round(share / 2, 4), "the share": round(share, 4),
                  "between the share and the upper bound": round((share + upper) / 2, 4),
                  "just above the upper bound": round(upper + 0.002, 4)}
    runs = []
    for what, max_share in thresholds.items():
        for reading in ("superpopulation", "rows"):
            code, out, err, seconds = sh([venv / "bin" / "chiralfair", "check", *own(folder), "--max-share",
                                          max_share, "--reading", reading], env=clean_env())
            runs.append({"threshold": what, "max_share": max_share, "reading": reading, "exit_code": code,
                         "line": out.strip(), "seconds": round(seconds, 1)})
    return {"n_held_out": decision["n_individuals"], "n_affected": decision["n_affected"], "share": share,
            "superpopulation_interval": [decision["lower"], decision["upper"]], "runs": runs}


def tracking_server_down(venv: Path, folder: Path) -> dict:
    env = {**clean_env(), "MLFLOW_TRACKING_URI": "http://127.0.0.1:9", "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
           "MLFLOW_HTTP_REQUEST_TIMEOUT": "5"}
    out_folder = folder / "down"
    code, out, err, seconds = sh([venv / "bin" / "chiralfair", "estimate", *own(folder), "--mlflow"], env=env)
    code_run, out_run, err_run, _ = sh([venv / "bin" / "chiralfair", "run", *own(folder), "--seeds", "random",
                                        "--max-global", 10, "--max-local", 2, "--out", out_folder, "--mlflow"],
                                       env=env)
    return {"estimate_exit_code": code, "estimate_first_line": out.splitlines()[0] if out else "",
            "estimate_error": next((x for x in err.splitlines() if x.startswith("error:")), ""),
            "run_exit_code": code_run, "run_folder_kept": (out_folder / "result.json").is_file(),
            "run_error": next((x for x in err_run.splitlines() if x.startswith("error:")), ""),
            "seconds": round(seconds, 1)}


def versions(venv: Path) -> dict:
    code, out, _, _ = sh([venv / "bin" / "python", "-c", "import json; from importlib.metadata import version; "
                          "print(json.dumps({p: version(p) for p in ('chiralfair', 'mlflow-skinny', 'sqlalchemy', "
                          "'alembic', 'scikit-learn', 'torch', 'skops')}))"])
    return json.loads(out) if code == 0 else {}


def markdown(r: dict) -> str:
    m, b, g, d = r["mlflow"], r["bom"], r["gate"], r["server_down"]
    lines = ["# The team's workflow in a fresh venv", "",
             f"`python benchmarks/workflow_fresh_venv.py`, {r['date']}, {r['cpu_count']} CPUs, load "
             f"{r['load_before']} before / {r['load_after']} after. Venv: `{r['venv']}` ("
             + ("reused, an editable install of this tree; " if r["install"]["reused"] else "made now; ")
             + f"its install, in s: {json.dumps(r['install'].get('install_seconds'))}); "
             f"versions: {json.dumps(r['versions'])}.", "",
             "## `run --mlflow` with no MLFLOW_* variable set", "",
             f"- exit code {m['exit_code']} in {m['seconds']} s; MLFLOW_* variables in its environment: "
             f"{m['env_mlflow_variables'] or 'none'}", f"- `{m['first_line']}`; `{m['mlflow_line']}`"]
    rb = m.get("read_back", {})
    if "tracking_uri" in rb:
        lines += [f"- read back from `{rb['tracking_uri']}` (MLflow's own default): status {rb['status']}, "
                  f"{rb['n_params']} parameters, {rb['n_metrics']} metrics, fair_share_affected "
                  f"{rb['share_affected']:.4f}; groups with a share harmed: {'; '.join(rb['groups'])}",
                  f"- artifacts: {', '.join(rb['artifacts'])}"]
    else:
        lines.append(f"- read back failed: {rb or m.get('stderr')}")
    lines += ["", "## `check --bom bom.json`", "",
              f"- exit code {b['exit_code']}; {b['validator']}: {len(b['schema_errors'])} errors "
              f"{b['schema_errors'][:3] if b['schema_errors'] else ''}",
              f"- components: {', '.join(f'{t} {n}' for t, n in b['components'])}", "",
              f"## The gate on a {g['n_held_out']}-row hold-out near the threshold", "",
              f"{g['n_affected']} of {g['n_held_out']} held-out rows affected: {g['share']:.2%} exact for these rows, "
              f"[{g['superpopulation_interval'][0]:.2%}, {g['superpopulation_interval'][1]:.2%}] (95% "
              "Clopper-Pearson) for the people the model will meet.", "",
              "| threshold | max share | reading | exit | line |", "|---|---|---|---|---|"]
    lines += [f"| {x['threshold']} | {x['max_share']:.2%} | {x['reading']} | {x['exit_code']} | {x['line']} |"
              for x in g["runs"]]
    lines += ["", "## A tracking server that is down", "",
              f"- `estimate --mlflow`: exit {d['estimate_exit_code']}, first line `{d['estimate_first_line']}`, "
              f"then `{d['estimate_error']}`",
              f"- `run --out down --mlflow`: exit {d['run_exit_code']}, run folder kept: {d['run_folder_kept']}; "
              f"`{d['run_error']}`", ""]
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, default=Path("/tmp/wfvenv"))
    parser.add_argument("--reuse", action="store_true", help="keep a venv that already has chiralfair")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    install = make_venv(args.venv, args.reuse)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_data(folder)
        result = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "cpu_count": os.cpu_count(),
                  "platform": platform.platform(), "venv": str(args.venv), "install": install,
                  "versions": versions(args.venv), "load_before": round(load_before, 2),
                  "mlflow": mlflow_without_setup(args.venv, folder), "bom": bom(args.venv, folder),
                  "gate": gate(args.venv, folder), "server_down": tracking_server_down(args.venv, folder)}
    result["load_after"] = round(os.getloadavg()[0], 2)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "workflow_fresh_venv.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / "workflow_fresh_venv.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
