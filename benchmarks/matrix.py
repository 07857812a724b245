"""The differential test matrix, run by hand: every cell's figures beside the independent recount.

Run from the repository root:

    python benchmarks/matrix.py [--fast]

Runs every cell of ``tests/test_matrix.py`` (model kind x data kind x door, defined once in
``tests/matrix_cells.py``, slow cells included unless ``--fast``): for each, the figures the door gives and the
recount written in the test (plain numpy/pandas/scipy through the user's own model object), whether they are
equal, a refusal's words, and the rows a counting wrapper around the user's model received against the queries the
output states (``max_queries`` set). Cells marked as known defects say which.

Writes benchmarks/results/matrix.json (every figure, versions, CPU count, date, load) and matrix.md (one line per
cell).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from blackbox import RESULTS, _uptime, run_record  # noqa: E402
from matrix_cells import (  # noqa: E402
    DATA,
    DATA_TEXT,
    DOORS,
    FILE_DATA,
    MODEL_TEXT,
    MODELS,
    cannot_be_typed,
    expected_refusal,
    known,
    run_budget,
    run_cell,
    same,
    slow,
)

BUDGET_DOORS = ("estimate", "audit", "check")


def one_cell(model: str, data: str, door: str) -> dict:
    """The cell's figures, refusal, rows and status."""
    tests = ("figures", "worst", "budget") if door in BUDGET_DOORS else ("figures", "worst")
    record: dict = {"model": model, "data": data, "door": door, "slow": slow(model, door),
                    "known": {t: known(t, model, data, door) for t in tests}}
    try:
        c = run_cell(model, data, door)
    except Exception as err:  # the cell's failure is its figure
        record.update(status="error", error=f"{type(err).__name__}: {err}"[:600], figures=[])
        return record
    record.update(seconds=round(c.seconds, 3), refusal=c.refusal,
                  figures=[_figure(n, t, r) for n, t, r in c.figures])
    if expected_refusal(model, data, door):
        ok = c.refusal is not None and all(f["equal"] for f in record["figures"])
        record["status"] = "refused as designed" if ok else "refusal without the expected words"
    else:
        unequal = [f["figure"] for f in record["figures"] if not f["equal"]]
        record["status"] = ("equal" if not unequal else "unequal: the worst group only"
                            if all(n.startswith("worst group") for n in unequal) else "unequal")
    if door in BUDGET_DOORS and not expected_refusal(model, data, door):
        try:
            b = run_budget(model, data, door)
            if b.rows is not None:
                record["rows_received"], record["queries_stated"] = b.rows
                record["queries"] = b.detail.get("queries")
                record["budget_figures"] = [{"figure": n, "tool": t, "recount": r, "equal": same(t, r)}
                                            for n, t, r in b.figures]
        except Exception as err:
            record["budget_error"] = f"{type(err).__name__}: {err}"[:300]
    return record


def _figure(name: str, tool, recount) -> dict:
    """One figure; a per-person list is kept as its length and the positions that differ."""
    out = {"figure": name, "tool": tool, "recount": recount, "equal": same(tool, recount)}
    if isinstance(tool, list) and isinstance(recount, list) and len(recount) > 20:
        differ = [i for i, (a, b) in enumerate(zip(tool, recount, strict=False)) if a != b]
        out.update(tool=f"{len(tool)} values", recount=f"{len(recount)} values", positions_unequal=differ)
    return out


def cells(fast: bool) -> list[tuple[str, str, str]]:
    out = []
    for model in MODELS:
        for data in DATA:
            for door in DOORS:
                if (door == "cli" and data not in FILE_DATA) or cannot_be_typed(model, data, door):
                    continue
                if fast and slow(model, door):
                    continue
                out.append((model, data, door))
    return out


def versions() -> dict[str, str]:
    import numpy
    import onnxruntime
    import pandas
    import polars
    import scipy
    import skl2onnx  # type: ignore[import-untyped]
    import sklearn
    import torch
    from blackbox import versions as common

    return {**common(), "numpy": numpy.__version__, "pandas": pandas.__version__, "polars": polars.__version__,
            "scipy": scipy.__version__, "scikit-learn": sklearn.__version__, "torch": torch.__version__,
            "onnxruntime": onnxruntime.__version__, "skl2onnx": skl2onnx.__version__}


def _short(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, list) and len(v) > 4:
        return f"[{len(v)} values]"
    text = json.dumps(v) if not isinstance(v, str) else v
    return text if len(text) <= 60 else text[:57] + "..."


BEFORE = {"audit": "29", "estimate": "19", "retrain": "25", "certify": "24",
          "check_fairness": "**kwargs of estimate"}   # the parameter counts before this round (at 0f7b00a)


def signatures() -> dict[str, dict]:
    """Each door's Python signature: its parameter count (inspect.signature) and how many are ``**`` catch-alls."""
    import inspect

    import chiralfair
    from chiralfair.pipeline import check_fairness

    doors: dict[str, Any] = {"audit": chiralfair.audit, "estimate": chiralfair.estimate, "retrain": chiralfair.retrain,
             "certify": chiralfair.certify, "check_fairness": check_fairness}
    out = {}
    for name, fn in doors.items():
        params = inspect.signature(fn).parameters.values()
        out[name] = {"n_parameters": len(params),
                     "var_keyword": [p.name for p in params if p.kind is inspect.Parameter.VAR_KEYWORD],
                     "before": BEFORE[name]}
    return out


def markdown(report: dict) -> str:
    runs = report["cells"]
    n = {s: sum(r["status"] == s for r in runs) for s in sorted({r["status"] for r in runs})}
    lines = ["# The differential test matrix", "",
             f"`python benchmarks/matrix.py{' --fast' if report['parameters']['fast'] else ''}`, "
             f"{report['date']}, {report['cpu_count']} CPUs, {report['seconds']:.0f} s; load before: "
             f"`{report['uptime_before']}`; after: `{report['uptime_after']}`.", "",
             "One question at every door: the share of held-out people whose label changes when only their "
             "protected attributes change, and who is harmed. Each figure of a door beside the recount written in "
             "`tests/matrix_cells.py` (every protected value of every held-out row flipped through the user's own "
             "model; F1 with sklearn; Clopper-Pearson intervals from scipy). The worst group recounted by the rule "
             "in its words: each group's 95% Clopper-Pearson interval of n harmed of n; too small to tell under 30 "
             "people or wider than +-10 points; worst = the largest share harmed of the others (ties: the larger "
             "group, then the first). Rows received = the queries stated within max_queries + every row stated "
             "outside the budget.", "",
             "Cells: " + ", ".join(f"{k} {v}" for k, v in n.items()) + ".", "",
             "Models: " + "; ".join(f"`{k}` {v}" for k, v in MODEL_TEXT.items()) + ".", "",
             "Data: " + "; ".join(f"`{k}` {v}" for k, v in DATA_TEXT.items()) + ".", "",
             "| cell | status | figures unequal (tool vs recount) | rows received / queries stated | known defect |",
             "|---|---|---|---|---|"]
    for r in runs:
        bad = "; ".join(f"{f['figure']}: {_short(f['tool'])} vs {_short(f['recount'])}"
                        for f in r["figures"] if not f["equal"]) or ("" if r["status"] != "error" else r["error"])
        rows = (f"{r['rows_received']:,} / {r['queries_stated']:,}" if "rows_received" in r else "")
        reasons = sorted({name for v in r["known"].values() if v
                          for name in re.findall(r"fix/\w+", v) + (["finding"] if "finding" in v else [])})
        lines.append(f"| {r['model']}-{r['data']}-{r['door']} | {r['status']} | {bad.replace('|', '/')} | {rows} "
                     f"| {', '.join(reasons)} |")
    lines += ["", "Parameters of each door's Python signature (`inspect.signature`), now and before this round:", ""]
    for name, sig in report.get("signatures", {}).items():
        extra = f" (with **{', **'.join(sig['var_keyword'])})" if sig["var_keyword"] else ""
        lines.append(f"- `{name}`: {sig['n_parameters']}{extra}; before: {sig['before']}")
    lines += ["", "Known defects (each an xfail(strict=True) reason in tests/test_matrix.py):", ""]
    known_texts = sorted({v for r in runs for v in r["known"].values() if v})
    lines += [f"- {text}" for text in known_texts] or ["- none"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="leave out the slow cells (retrain, CLI, most reports)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    uptime_before, t0 = _uptime(), time.perf_counter()
    runs = []
    for model, data, door in cells(args.fast):
        runs.append(one_cell(model, data, door))
        print(f"{time.perf_counter() - t0:6.0f} s {model}-{data}-{door}: {runs[-1]['status']}", file=sys.stderr,
              flush=True)
    report = {**run_record(uptime_before, t0), "parameters": {"fast": args.fast}, "cells": runs}
    report["versions"] = versions()
    report["signatures"] = signatures()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "matrix.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    (RESULTS / "matrix.md").write_text(markdown(report))
    print(f"wrote {RESULTS / 'matrix.json'} and matrix.md ({len(runs)} cells)", file=sys.stderr)


if __name__ == "__main__":
    main()
