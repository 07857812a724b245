"""Certify on a raw-frame tree pipeline without bins: a fresh user's case, before and after reading at thresholds.

Run by hand:  python benchmarks/certify_trees_nobins.py [--before-src DIR]

The README's own-data kind (raw Adult as it comes, ``ColumnTransformer`` of ``OneHotEncoder(handle_unknown="ignore",
sparse_output=False)`` on the text columns and ``StandardScaler`` on the rest, ``HistGradientBoostingClassifier
(random_state=0)`` fitted on ``adult.data``), sex coupled Husband <-> Wife, **no bins** (so ``fnlwgt`` keeps 1,472,421
codes, ``capital-gain`` 100,000), the first 2,000 rows of ``adult.test`` held out. Each case is
``chiralfair.certify(pipe, train, test=test, spec=spec, max_seconds=S)`` in a fresh process whose address space is
limited to 5 GiB (``ulimit -v``'s limit, ``resource.RLIMIT_AS``); ``--before-src`` runs it on another source tree
(the code before the fix, e.g. ``git archive 6cb0249 src | tar -x -C DIR``). Wall and CPU seconds of the call
(``resource.getrusage``, self and children), the process's peak RSS, the load around it, and what it answered or
raised. Writes ``benchmarks/results/certify_trees_nobins.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
SRC = Path(__file__).resolve().parent.parent / "src"
NAMES = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation", "relationship",
         "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country", "income"]
README_BINS = {"fnlwgt": 20, "capital-gain": 10, "capital-loss": 10, "hours-per-week": 10}
LIMIT = 5 << 30

CHILD = r'''
import json, os, pickle, resource, sys, time
import chiralfair
args = json.loads(sys.argv[1])
with open(args["pickle"], "rb") as fh:
    pipe, train, test = pickle.load(fh)
spec = chiralfair.DataSpec(label="income", positive_class=">50K", protected="sex",
                           couple={"sex": {"relationship": {"Husband": "Wife", "Wife": "Husband"}}},
                           bins=args["bins"])
def cpu():
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
wall, used = time.perf_counter(), cpu()
out = {}
try:
    result = chiralfair.certify(pipe, train, test=test, spec=spec, max_seconds=args["max_seconds"])
    out.update(outcome="answer", certified=result.certified_share, falsified=result.falsified_share,
               stopped=result.stopped, read=result.meta.get("read"),
               people_undecided=result.individuals.undecided_share,
               people_affected=result.individuals.affected_share)
except BaseException as err:  # the failure is the measurement
    out.update(outcome=type(err).__name__, message=str(err)[:600])
out.update(wall_seconds=time.perf_counter() - wall, cpu_seconds=cpu() - used,
           peak_rss_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
print("RESULT " + json.dumps(out))
'''


def load():
    return round(os.getloadavg()[0], 1)


def run_case(src: Path, pickle_path: str, bins, max_seconds) -> dict:
    def limit():
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))

    env = {**os.environ, "PYTHONPATH": str(src)}
    before = load()
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps({"pickle": pickle_path, "bins": bins,
                                                                     "max_seconds": max_seconds})],
                          capture_output=True, text=True, env=env, preexec_fn=limit, timeout=3600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    out = json.loads(lines[-1][7:]) if lines else {"outcome": f"exit {proc.returncode}",
                                                   "message": proc.stderr[-600:]}
    return {**out, "load": [before, load()], "src": str(src), "bins": bins, "max_seconds": max_seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before-src", type=Path, default=None)
    args = parser.parse_args()
    import pandas as pd
    from sklearn.compose import make_column_selector, make_column_transformer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from chiralfair.models.threads import single_native_thread

    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    raw = os.path.join(os.environ.get("CHIRALFAIR_DATA", "../shared/data"), "census", "raw")
    train = pd.read_csv(f"{raw}/adult.data", names=NAMES, skipinitialspace=True)
    test = pd.read_csv(f"{raw}/adult.test", names=NAMES, skipinitialspace=True, skiprows=1)
    test["income"] = test["income"].str.rstrip(".")
    test = test.iloc[:2000].reset_index(drop=True)
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(handle_unknown="ignore", sparse_output=False),
                                                  make_column_selector(dtype_exclude="number")),
                                                 remainder=StandardScaler()),
                         HistGradientBoostingClassifier(random_state=0))
    with single_native_thread():
        pipe.fit(train.drop(columns="income"), train["income"])
    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "case.pkl")
        with open(path, "wb") as fh:
            pickle.dump((pipe, train, test), fh)
        if args.before_src is not None:
            cases.append({"code": "before", **run_case(args.before_src, path, None, 1.0)})
        for bins, seconds in ((None, 1.0), (None, 60.0), (README_BINS, 60.0)):
            cases.append({"code": "after", **run_case(SRC, path, bins, seconds)})
    result = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "uptime_start": uptime,
              "uptime_end": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
              "limit_bytes": LIMIT, "n_test_rows": len(test), "cases": cases,
              "command": "python benchmarks/certify_trees_nobins.py"
                         + (f" --before-src {args.before_src}" if args.before_src else "")}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "certify_trees_nobins.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    lines = ["# A raw-frame tree pipeline without bins (`benchmarks/certify_trees_nobins.py`)", "",
             f"{result['date']}; `{result['command']}`; `uptime` at the start: {uptime}; at the end: "
             f"{result['uptime_end']}. The README's pipeline with `HistGradientBoostingClassifier`, raw Adult, sex "
             "coupled Husband <-> Wife, no bins (fnlwgt 1,472,421 codes), the first 2,000 rows of adult.test; each "
             "case in its own process limited to 5 GiB of address space. Wall and CPU seconds are of the "
             "`certify` call (CPU: `resource.getrusage`, self and children); peak RSS is the process's.", "",
             "| code | bins | max_seconds | outcome | wall s | CPU s | peak RSS MiB | load |",
             "|---|---|---|---|---|---|---|---|"]
    for c in cases:
        if c["outcome"] == "answer":
            what = (f"certified {c['certified']:.2%} of the domain, falsified {c['falsified']:.4%} ({c['stopped']}); "
                    f"people: {c['people_affected']:.2%} affected, {c['people_undecided']:.2%} undecided; "
                    f"{c['read']}")
        else:
            what = f"{c['outcome']}: {c.get('message', '')[:300]}"
        lines.append(f"| {c['code']} | {'README' if c['bins'] else 'none'} | {c['max_seconds']:g} | "
                     f"{what.replace('|', '/')} | {c.get('wall_seconds', float('nan')):.1f} | "
                     f"{c.get('cpu_seconds', float('nan')):.1f} | {c.get('peak_rss_mib', float('nan')):.0f} | "
                     f"{c['load'][0]}-{c['load'][1]} |")
    (RESULTS / "certify_trees_nobins.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
