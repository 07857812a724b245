"""``chiralfair retrain --method auto`` against the audit (``chiralfair run``) on the README's own-data example.

Run by hand from the repository root (data from CHIRALFAIR_DATA):

    python benchmarks/retrain_auto_time.py

In a temporary folder it writes the files the README's Python block writes (census's raw ``adult.data`` /
``adult.test`` as ``train.csv`` / ``test.csv``, the LogisticRegression pipeline as ``model.skops``), infers the
schema as the README does, then runs the README's ``chiralfair run`` and ``chiralfair retrain --from-run ... --method
auto``, each as a child process: wall seconds, CPU seconds of the child (``resource.getrusage(RUSAGE_CHILDREN)``,
user + system) and the load average before and after. The goal: the retrain at most 3x the audit's time.

Writes ``benchmarks/results/retrain_auto_time.json`` (both commands, their figures, what auto printed, the commit)
and ``retrain_auto_time.md``.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from provenance import commit

RESULTS = Path(__file__).parent / "results"
GOAL = 3.0
RUN = ("run --data train.csv --test test.csv --schema schema.toml --model model.skops --trust-model-file "
       "--couple sex:relationship=Husband/Wife --bins fnlwgt=20,capital-gain=10,capital-loss=10,hours-per-week=10 "
       "--out runs/cli")
RETRAIN = "retrain --from-run runs/cli --method auto --trust-model-file --out runs/cli-auto"


def write_files(folder: Path) -> None:
    """The README's Python block's files: train.csv, test.csv, model.skops (its pipeline, fitted)."""
    import pandas as pd
    import skops.io as sio
    from sklearn.compose import make_column_selector, make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    raw = os.path.join(os.environ.get("CHIRALFAIR_DATA", "../shared/data"), "census", "raw")
    names = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
             "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
             "income"]
    train = pd.read_csv(f"{raw}/adult.data", names=names, skipinitialspace=True)
    test = pd.read_csv(f"{raw}/adult.test", names=names, skipinitialspace=True, skiprows=1)
    test["income"] = test["income"].str.rstrip(".")
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(handle_unknown="ignore"),
                                                  make_column_selector(dtype_exclude="number")),
                                                 remainder=StandardScaler()),
                         LogisticRegression(max_iter=1000))
    pipe.fit(train.drop(columns="income"), train["income"])
    train.to_csv(folder / "train.csv", index=False)
    test.to_csv(folder / "test.csv", index=False)
    sio.dump(pipe, folder / "model.skops")


def timed(args: str, folder: Path, cli: list[str]) -> dict:
    """One CLI command in ``folder``: its wall and CPU seconds (the child's), exit code, output and load."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    done = subprocess.run([*cli, *args.split()], cwd=folder, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"cmd": "chiralfair " + args, "code": done.returncode, "wall_seconds": wall, "cpu_seconds": cpu,
            "load_before": list(load0), "load_after": list(os.getloadavg()), "stdout": done.stdout,
            "stderr": done.stderr[-2000:]}


def main() -> dict:
    # the console script's entry point (chiralfair.cli has no __main__), in this interpreter
    cli = [sys.executable, "-c", "import sys; from chiralfair.cli import app; sys.argv[0] = 'chiralfair'; app()"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_files(folder)
        schema = subprocess.run([*cli, "schema", "infer", "train.csv", "--label", "income", "--positive-class",
                                 ">50K", "--protected", "sex"], cwd=folder, capture_output=True, text=True,
                                check=True)
        (folder / "schema.toml").write_text(schema.stdout)
        audit = timed(RUN, folder, cli)
        auto = timed(RETRAIN, folder, cli)
        retrain_json = folder / "runs" / "cli-auto" / "retrain.json"
        picked = json.loads(retrain_json.read_text()).get("meta", {}).get("auto_candidates") if (
            retrain_json.exists()) else None
    record = {"what": "chiralfair retrain --method auto on the README's own-data example against the audit "
                      "(chiralfair run) on the same files",
              "date": datetime.now(UTC).isoformat(timespec="seconds"), "commit": commit(),
              "cpu_count": os.cpu_count(), "audit": audit, "retrain_auto": auto,
              "ratio_wall": auto["wall_seconds"] / audit["wall_seconds"],
              "ratio_cpu": auto["cpu_seconds"] / audit["cpu_seconds"],
              "auto_tried": None if picked is None else [t["label"] for t in picked["tried"]]}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "retrain_auto_time.json").write_text(json.dumps(record, indent=1))
    (RESULTS / "retrain_auto_time.md").write_text(markdown(record))
    return record


def markdown(r: dict) -> str:
    a, b = r["audit"], r["retrain_auto"]
    met = {k: r[f"ratio_{k}"] <= GOAL for k in ("cpu", "wall")}
    tried = r["auto_tried"] or []
    return "\n".join([
        "# `chiralfair retrain --method auto` against the audit, on the README's own-data example", "",
        f"{r['date']}, commit {r['commit']}, {r['cpu_count']} cores shared with other engineers' jobs (load average "
        "before and after each command below, `os.getloadavg()`). `python benchmarks/retrain_auto_time.py`: the "
        "README's Python block's files in a temporary folder, the schema inferred as the README does, then:", "",
        "```text", f"chiralfair {RUN}", f"chiralfair {RETRAIN}", "```", "",
        "| command | wall s | CPU s (child, user+sys) | load (1 min) before → after | exit |", "|---|---|---|---|---|",
        f"| audit (`run`) | {a['wall_seconds']:.1f} | {a['cpu_seconds']:.1f} | {a['load_before'][0]:.1f} → "
        f"{a['load_after'][0]:.1f} | {a['code']} |",
        f"| `retrain --method auto` | {b['wall_seconds']:.1f} | {b['cpu_seconds']:.1f} | {b['load_before'][0]:.1f} → "
        f"{b['load_after'][0]:.1f} | {b['code']} |",
        f"| ratio | {r['ratio_wall']:.2f}x | {r['ratio_cpu']:.2f}x | | |", "",
        f"Goal: at most {GOAL:g}x the audit's time: {'met' if met['cpu'] else 'not met'} on CPU seconds "
        f"({r['ratio_cpu']:.2f}x), {'met' if met['wall'] else 'not met'} on wall seconds ({r['ratio_wall']:.2f}x); "
        "one run each.", "",
        f"`auto` tried {len(tried)} candidates: {'; '.join(tried)}.", "", "What `retrain` printed:", "",
        "```text", b["stdout"].rstrip(), "```", "", "Raw record: `benchmarks/results/retrain_auto_time.json`.", ""])


if __name__ == "__main__":
    main()
