"""Queries spent by the AEQUITAS and KOSEI local walks: how many re-ask a known key, IDIs per 1,000 queries.

Run by hand:  python benchmarks/local_walk_queries.py --label before|after [--cases sex race] [--repeats 1]
              [--max-global 1000] [--max-local 200] [--budget-max-local 1000]
              [--max-queries 20000] [--name local_walk_queries]

Census, zoo HistGradientBoostingClassifier (model random state 0), cluster seeds (``--max-global`` of them,
selected once per random state and shared by both generators). Two runs per generator and case:

- ``unbudgeted``: ``max_local = --max-local``, no query budget. The walk is deterministic for its random state, so
  the IDIs found must be the same keys before and after a change that only saves queries (their keys' hash is
  recorded, with the queries spent);
- ``budget``: ``max_queries = --max-queries``, ``max_local = --budget-max-local`` (seeds included, as in
  ``benchmarks/blackbox.py``): the IDIs found within the budget.

Per run it counts the local candidates sent to the model and how many of them had a key this run had already
checked (wrapping :meth:`IDIRecorder.check` and :meth:`IDIRecorder.check_first` to look the keys up first: the
look-up costs no query). ``--label`` names the code measured (e.g. ``before`` on the parent commit, ``after``);
runs of another label already in the JSON are kept, so one file holds both.

Writes ``benchmarks/results/<name>.json`` and ``<name>.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
GENERATORS = ("aequitas", "kosei")


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


class _LocalCounter:
    """Counts the local rows a recorder sends, and those whose key it had checked before."""

    def __init__(self):
        from chiralfair.generators.recorder import IDIRecorder

        self.cls, self.sent, self.repeated, self.inside = IDIRecorder, 0, 0, False
        self.saved = {name: getattr(IDIRecorder, name) for name in ("check", "check_first")}

    def __enter__(self):
        counter = self

        def wrap(original):
            def counted(recorder, X, *args, **kwargs):
                phase = args[-1] if args else kwargs.get("phase")
                if phase != "local" or not len(X) or counter.inside:  # check_first may call check
                    return original(recorder, X, *args, **kwargs)
                X = np.asarray(X)
                known = recorder.is_tested(recorder.domain.repair(X))
                before = recorder.n_checked["local"]
                counter.inside = True
                try:
                    return original(recorder, X, *args, **kwargs)
                finally:  # the rows actually checked (a query budget may cut the last batch)
                    counter.inside = False
                    sent = recorder.n_checked["local"] - before
                    counter.sent += sent
                    counter.repeated += int(known[:sent].sum())
            return counted

        for name, original in self.saved.items():
            setattr(self.cls, name, wrap(original))
        return self

    def __exit__(self, *exc):
        for name, original in self.saved.items():
            setattr(self.cls, name, original)


def one_run(model, domain, seeds, generator: str, state: int, max_local: int, max_queries: int | None) -> dict:
    from chiralfair.generators import make_generator

    gen = make_generator(generator, max_global=len(seeds), max_local=max_local, max_queries=max_queries)
    model.reset_queries()
    with _LocalCounter() as counter:
        t = time.perf_counter()
        res = gen.run(model, domain, seeds, random_state=state)
        seconds = time.perf_counter() - t
    keys = np.sort(domain.keys(res.idis))
    return {"n_idis": res.n_idis, "n_global": res.n_global, "n_local": res.n_local, "n_queries": res.n_queries,
            "local_rows_sent": counter.sent, "local_rows_known_key": counter.repeated,
            "idis_per_1000_queries": round(1000 * res.n_idis / max(res.n_queries, 1), 1),
            "idi_keys_sha1": hashlib.sha1(keys.tobytes()).hexdigest()[:12], "seconds": round(seconds, 2)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--label", required=True)
    ap.add_argument("--cases", nargs="+", default=["sex", "race"])
    ap.add_argument("--generators", nargs="+", default=list(GENERATORS))
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--max-global", type=int, default=1000)
    ap.add_argument("--max-local", type=int, default=200)
    ap.add_argument("--budget-max-local", type=int, default=1000)
    ap.add_argument("--max-queries", type=int, default=20_000)
    ap.add_argument("--name", default="local_walk_queries")
    args = ap.parse_args(argv)

    import chiralfair
    from chiralfair.models.threads import single_native_thread
    from chiralfair.pipeline import RunConfig
    from chiralfair.pipeline.inputs import inputs_from_names
    from chiralfair.seeds import make_seed_strategy

    uptime_before, t0 = _uptime(), time.perf_counter()
    runs = []
    with single_native_thread():
        for pa in args.cases:
            config = RunConfig(dataset="census", protected=(pa,), model="hgb", model_random_state=0)
            inputs = inputs_from_names(config)
            for state in range(args.repeats):
                seeds = make_seed_strategy("cluster").select(inputs.model, inputs.dataset, args.max_global,
                                                            random_state=state).seeds
                for generator in args.generators:
                    for mode, budget, max_local in (("unbudgeted", None, args.max_local),
                                                    ("budget", args.max_queries, args.budget_max_local)):
                        run = one_run(inputs.model, inputs.domain, seeds, generator, state, max_local, budget)
                        runs.append({"label": args.label, "case": f"census {pa}", "generator": generator,
                                     "random_state": state, "mode": mode, **run})
                        print(runs[-1], flush=True)
    path = RESULTS / f"{args.name}.json"
    doc = json.loads(path.read_text()) if path.exists() else {"runs": [], "loads": {}}
    doc["runs"] = [r for r in doc["runs"] if r["label"] != args.label] + runs
    import sklearn

    doc["loads"][args.label] = {"uptime_before": uptime_before, "uptime_after": _uptime(),
                                "seconds": round(time.perf_counter() - t0, 1),
                                "date": datetime.now(UTC).isoformat(timespec="seconds"),
                                "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                                         text=True, cwd=Path(__file__).parent).stdout.strip(),
                                "versions": {"python": platform.python_version(), "numpy": np.__version__,
                                             "scikit-learn": sklearn.__version__,
                                             "chiralfair": chiralfair.__version__},
                                "cpu_count": os.cpu_count()}
    doc["parameters"] = {"model": "hgb (zoo, model random state 0)", "seeds": "cluster",
                         "max_global": args.max_global, "max_local_unbudgeted": args.max_local,
                         "max_queries": args.max_queries, "max_local_budget": args.budget_max_local}
    RESULTS.mkdir(exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n")
    write_markdown(doc, RESULTS / f"{args.name}.md")


def write_markdown(doc: dict, path: Path) -> None:
    p = doc["parameters"]
    lines = ["# Local-walk queries of AEQUITAS and KOSEI", "",
             f"Written by `benchmarks/local_walk_queries.py`. Census, zoo `hgb` (model random state 0), cluster seeds "
             f"({p['max_global']}). `unbudgeted`: max_local = {p['max_local_unbudgeted']}, no budget (the IDIs must "
             f"be the same keys across labels: `keys` is a hash of them); `budget`: max_queries = "
             f"{p['max_queries']:,}, seeds included, max_local = {p['max_local_budget']:,}. `known key`: local rows "
             "sent whose key the run had checked before.", ""]
    for label, load in doc["loads"].items():
        v = load["versions"]
        lines.append(f"- `{label}`: commit {load['commit']}, {load['date']}, {load['seconds']} s; python "
                     f"{v['python']}, numpy {v['numpy']}, scikit-learn {v['scikit-learn']}; {load['cpu_count']} "
                     f"CPUs; load before `{load['uptime_before']}`, after `{load['uptime_after']}`")
    lines += ["", "| case | generator | mode | label | IDIs | queries | IDIs / 1,000 q | local rows sent | "
              "known key | keys |", "|---|---|---|---|---:|---:|---:|---:|---:|---|"]
    order = {label: i for i, label in enumerate(doc["loads"])}
    for r in sorted(doc["runs"], key=lambda r: (r["case"], r["generator"], r["mode"], r["random_state"],
                                                 order[r["label"]])):
        lines.append(f"| {r['case']} | {r['generator']} | {r['mode']} | {r['label']} | {r['n_idis']:,} | "
                     f"{r['n_queries']:,} | {r['idis_per_1000_queries']} | {r['local_rows_sent']:,} | "
                     f"{r['local_rows_known_key']:,} | {r['idi_keys_sha1']} |")
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
