"""What CountingModel adds to a model call: the batched hot path, measured against the wrapped function itself.

Run by hand:  python benchmarks/model_call_overhead.py [--repeats 7] [--compare-with /path/to/other/src]

Every model call of every algorithm passes ``CountingModel._chunked`` (which also translates a model's own error
into a ``ModelInputError``: a ``try`` around the call, and a bisection only after a failure). This
times, for three models, ``CountingModel.predict`` on one batch against calling the adapter's wrapped function
(``model._predict``) on the same batch, median of ``--repeats`` runs of ``--calls`` calls each:

- ``numpy``: a callable ``X -> (X[:, 0] > 4)`` on 65,536 rows (the cheapest model: the overhead shows most);
- ``lr``: scikit-learn's LogisticRegression on 65,536 rows of the toy domain;
- ``torch``: the toy torch module (tests/toys.py's biased LinearToy) on 65,536 rows.

With ``--compare-with SRC`` the same measurement also runs in a subprocess on the chiralfair found in ``SRC`` (e.g.
the main checkout's ``src``), alternating the two code bases repeat by repeat so that a change of load hits both.
Writes ``benchmarks/results/model_call_overhead.json`` and ``.md`` with the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
ROWS = 65_536


def measure(calls: int) -> dict[str, dict[str, float]]:
    """Seconds per call, wrapped and raw, for each model (one repeat), in this interpreter's chiralfair."""
    import numpy as np
    import torch
    from sklearn.linear_model import LogisticRegression

    import chiralfair
    from chiralfair.models import as_model

    class LinearToy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("w", torch.tensor([3.0, 0, 1, 1, 0]))

        def forward(self, x):
            return torch.sigmoid(2.0 * (x @ self.w - 10.5))[:, None]

    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, 2, ROWS), rng.integers(0, 3, ROWS), rng.integers(0, 10, ROWS),
                         rng.integers(0, 10, ROWS), rng.integers(0, 5, ROWS)]).astype(np.float64)
    y = (X @ np.array([3, 0, 1, 1, 0]) > 10.5).astype(int)
    models = {"numpy": as_model(lambda Z: (Z[:, 0] > 4).astype(int)),
              "lr": as_model(LogisticRegression(max_iter=500).fit(X[:2000], y[:2000])),
              "torch": as_model(LinearToy())}
    out = {"source": str(Path(chiralfair.__file__).parent)}
    for name, model in models.items():
        model.predict(X)  # warm up
        t = time.perf_counter()
        for _ in range(calls):
            model.predict(X)
        wrapped = (time.perf_counter() - t) / calls
        t = time.perf_counter()
        for _ in range(calls):
            np.asarray(model._predict(X)).astype(np.int64)
        raw = (time.perf_counter() - t) / calls
        out[name] = {"wrapped": wrapped, "raw": raw}
    return out


def run_in(src: str | None, calls: int) -> dict:
    """One repeat of :func:`measure`, in a subprocess whose chiralfair is found in ``src`` (None: this one's)."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")])
    code = (f"import json, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
            f"from model_call_overhead import measure; print(json.dumps(measure({calls})))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--compare-with", default=None, help="src folder of another chiralfair (e.g. main's)")
    args = parser.parse_args()
    load_before = os.getloadavg()
    sources = {"this": None, **({"other": args.compare_with} if args.compare_with else {})}
    runs: dict[str, list[dict]] = {k: [] for k in sources}
    for _ in range(args.repeats):
        for label, src in sources.items():
            runs[label].append(run_in(src, args.calls))
    figures = {}
    for label, repeats in runs.items():
        figures[label] = {"source": repeats[0]["source"]}
        for name in ("numpy", "lr", "torch"):
            wrapped = statistics.median(r[name]["wrapped"] for r in repeats)
            raw = statistics.median(r[name]["raw"] for r in repeats)
            figures[label][name] = {"wrapped_ms": wrapped * 1e3, "raw_ms": raw * 1e3,
                                    "overhead_ratio": statistics.median(r[name]["wrapped"] / r[name]["raw"]
                                                                        for r in repeats)}
    import chiralfair
    result = {"benchmark": "model_call_overhead", "rows": ROWS, "repeats": args.repeats, "calls": args.calls,
              "figures": figures, "chiralfair": chiralfair.__version__, "python": platform.python_version(),
              "cpu_count": os.cpu_count(), "load_before": load_before, "load_after": os.getloadavg(),
              "date": datetime.now(UTC).isoformat(timespec="seconds")}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "model_call_overhead.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = ["# CountingModel.predict against the wrapped function, one batch of 65,536 rows", "",
             f"Median of {args.repeats} repeats x {args.calls} calls; load average {load_before[0]:.1f} before, "
             f"{result['load_after'][0]:.1f} after; {os.cpu_count()} CPUs.", "",
             "| code | model | wrapped ms | raw ms | wrapped / raw |", "|---|---|---|---|---|"]
    for label, fig in figures.items():
        for name in ("numpy", "lr", "torch"):
            f = fig[name]
            lines.append(f"| {label} ({fig['source']}) | {name} | {f['wrapped_ms']:.3f} | {f['raw_ms']:.3f} | "
                         f"{f['overhead_ratio']:.3f} |")
    (RESULTS / "model_call_overhead.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
