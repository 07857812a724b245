"""The search's speed and the budget cap's memory, guarded: one line, exit 1 when a figure is past its bound.

Run before every submission that touches ``generators/``, ``oracle.py``, ``domain/`` or ``models/``
(docs/development.md), from the repository root, the census DNN in the model cache:

    python benchmarks/perf_guard.py        # data: $CHIRALFAIR_DATA, else ../shared/data beside the clone

The run guarded is ``chiralfair run --dataset census --protected sex --model dnn --seeds cluster --generator
eidig-inf --max-global 1000 --max-local 1000`` (model random state 0, random_state 0). Three figures, ratios and a
size measured in one process. The first travels between machines less than hoped: the forward pass is one big
matrix product, the search a thousand small steps of numpy calls, and machines differ more in the first. The search
of 24a94ca read 2.52x on a VM where the forward pass of its 858,272 queries took 1.12 s, and 6.26x on another where
762,496 took 0.16 s (each VM trained its own DNN, hence the other queries; benchmarks/results/perf_guard.md says
which machine a figure comes from):

- **search / forward**: the search's seconds with ``--couple none`` over the seconds of pushing as many rows as it
  queried through the same model wrapper (one ``predict_with_proba`` call on the data's rows, which the wrapper
  batches; the fastest of three such passes, :func:`forward_seconds`), measured in the same process, alternately.
  At most 8.0: the search is no slower than 8x the forward pass. The CPU seconds of both (this process's,
  ``time.process_time``) and their ratio are in the result file beside, to judge a round taken under load.
- **coupled / uncoupled, per query**: the same search with census's default coupling (sex -> relationship Husband
  <-> Wife, and the constraints that come with it) over the uncoupled one, per model query. At most 1.05. The
  coupled search is not the same work: it sends more queries and finds more IDIs (5.5% more queries with one
  trained DNN, 15.7% with another), so the bound is on the cost of a query, the coupling's own; the ratio of the
  whole searches is given beside it, not bounded.
- **cap peak**: the peak resident memory of the budget cap ``--max-global 99999 --max-local 999`` (coupled, pairs
  streamed to Parquet), predicted from a smaller cap run in a subprocess: the same 99,999 seeds (so the same
  global phase, chains, check batches and Parquet buffers) with ``--max-local 30``. What grows with ``max_local``
  is the key table: the prediction adds, to the smaller cap's peak, the memory the local walk held per key it
  added (tracemalloc at the walk's start and end, less the pairs waiting for the next Parquet part) times the keys
  the full cap would add at the smaller cap's rate per local iteration (the rate falls as walks revisit keys, so
  this overestimates), plus one merge of the largest run (key_table.MAX_RUN_KEYS keys), plus the key table's hash
  level at its fullest. The full cap's keys go through that hash level a million at a time (key_table.RECENT_MAX_KEYS)
  into sorted runs; the smaller cap's 650,000 would all stay in it, at about 45 bytes a key against a run's 10, so
  the smaller cap runs with a hash level of SMALL_CAP_RECENT_KEYS keys, its keys reach the runs as the full cap's
  do, and the hash level's own peak (tracemalloc, filled to RECENT_MAX_KEYS keys and emptied into a run,
  :func:`recent_level_peak`) is added once. Below 1 GiB (1024 MiB).
  ``benchmarks/speed_regained.py`` measures the full cap beside its prediction.
- **cached quick start / imports** (with ``--quick-start`` only, so the guard itself answers within a minute): the
  README's first command (``chiralfair run --dataset census --protected sex
  --model dnn --seeds iandd --generator aequitas``) with the model cache warm, over ``python -c "import torch,
  sklearn, shap"`` (the imports it cannot do without), each in a fresh process of the same interpreter, alternated
  (:func:`quick_start`). At most 1.3 (wall; the CPU seconds are given beside, to judge a figure taken under load).

One more uncoupled search, not timed for the ratios, is split by timers into the model's calls, the key table and
the rest (:func:`breakdown`, in the result file).

Each timed search runs ``--repeats`` times (default 4) per configuration, the coupled search first in every other
round; a process's ratios are medians of its rounds' ratios, and every round must find the same IDIs. Why four: on a
2-core VM one round's coupled/uncoupled ratio moves by +-15% on the same code (0.95-1.29 in one run of 12 rounds), so
a bound 15% from 1 needs the median of several alternated rounds to say anything. The rounds run in ``--processes``
processes (default 5: this one, then fresh ones), and the guarded figures are the medians of the processes' figures:
the rounds of one process move together (one process read every round 1.06-1.14 per query, the next 0.95-0.99, the
same code at load 0.2-1.2; five fresh processes of the same code read 0.96-1.03), so a fresh process is a fresh
sample and a round is not. Writes benchmarks/results/perf_guard.json and .md. Takes about 75 s on 2 quiet cores (the
smaller cap's subprocess 20 s, each further process about 10 s); ``--quick-start`` adds about 15 s a round.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from data_home import default_data_home

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
MAX_SEARCH_OVER_FORWARD = 8.0
MAX_COUPLED_OVER_UNCOUPLED_PER_QUERY = 1.05
MAX_CAP_PEAK_MIB = 1024  # strictly below: the cap must stay under 1 GiB
MAX_QUICK_START_OVER_IMPORTS = 1.3
QUICK_START = ("run", "--dataset", "census", "--protected", "sex", "--model", "dnn", "--seeds", "iandd",
               "--generator", "aequitas")
IMPORT_FLOOR = "import torch, sklearn, shap"
BUDGET = (1000, 1000)
CAP = (99999, 999)
SMALL_CAP_LOCAL = 30
SMALL_CAP_RECENT_KEYS = 1 << 15
FORWARD_PASSES = 3
RANDOM_STATE = 0


def load(couple: bool):
    """(dataset, zoo DNN, cluster seeds) as ``chiralfair run`` makes them, with or without census's coupling."""
    from chiralfair.datasets import load_dataset
    from chiralfair.models.training import train_model

    dataset = load_dataset("census", protected="sex", **({} if couple else {"couple": False}))
    model = train_model(dataset, "dnn", random_state=0).model
    return dataset, model


def seeds_for(model, dataset, n: int):
    from chiralfair.seeds import make_seed_strategy

    return make_seed_strategy("cluster").select(model, dataset, n, random_state=RANDOM_STATE)


def search(model, dataset, seeds, *, max_global: int, max_local: int, sink=None):
    from chiralfair.generators import make_generator

    model.reset_queries()
    return make_generator("eidig-inf", max_global=max_global, max_local=max_local).run(
        model, dataset.domain, seeds, random_state=RANDOM_STATE, sink=sink)


def forward_seconds(model, dataset, n_rows: int, passes: int = FORWARD_PASSES, cpu: list | None = None) -> float:
    """Seconds to push ``n_rows`` of the data's rows through the model wrapper, in one call it batches itself.

    The fastest of ``passes`` passes: the limit the search is held against. One pass right after a search is slower
    and moves a lot (0.12-0.28 s for the same 704,098 rows in four rounds on 2026-12-02's machine), which moved the
    search/forward ratio between 3.9x and 7.9x on the same search code.
    """
    rows = np.resize(dataset.X, (n_rows, dataset.X.shape[1]))
    times, cpus = [], []
    for _ in range(passes):
        t, c = time.perf_counter(), time.process_time()
        model.predict_with_proba(rows)
        times.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    model.reset_queries()
    if cpu is not None:  # the CPU seconds of the fastest pass (this process's, every thread)
        cpu.append(cpus[int(np.argmin(times))])
    return min(times)


def fingerprint(result) -> tuple:
    return (result.n_idis, result.n_global, result.n_tested, result.n_queries,
            hash(np.ascontiguousarray(result.idis).tobytes()))


def timed_rounds(repeats: int, with_breakdown: bool = True) -> dict:
    """Uncoupled search, forward pass and coupled search, ``repeats`` rounds in this process, in alternating order."""
    plain, model = load(couple=False)
    coupled, _ = load(couple=True)
    seeds = {"uncoupled": seeds_for(model, plain, BUDGET[0]), "coupled": seeds_for(model, coupled, BUDGET[0])}
    data = {"uncoupled": plain, "coupled": coupled}
    for name in data:  # warm up (first model calls, first imports of the search's modules), untimed
        search(model, data[name], seeds[name], max_global=100, max_local=100)
    rounds, prints = [], {}
    for i in range(repeats):
        row = {}
        # the order alternates, so that a machine slowing down (or speeding up) over the run favours neither side
        for name in ("uncoupled", "coupled") if i % 2 == 0 else ("coupled", "uncoupled"):
            cpu = time.process_time()
            res = search(model, data[name], seeds[name], max_global=BUDGET[0], max_local=BUDGET[1])
            cpu = time.process_time() - cpu
            if prints.setdefault(name, fingerprint(res)) != fingerprint(res):
                raise RuntimeError(f"the {name} search found other IDIs in a repeated run with one random_state")
            row[name] = {"seconds": res.seconds, "cpu_seconds": cpu, "n_idis": res.n_idis,
                         "n_queries": res.n_queries, "n_tested": res.n_tested}
            if name == "uncoupled":
                forward_cpu: list[float] = []
                row["forward_seconds"] = forward_seconds(model, plain, res.n_queries, cpu=forward_cpu)
                row["forward_cpu_seconds"] = forward_cpu[0]
        row["search_over_forward"] = row["uncoupled"]["seconds"] / row["forward_seconds"]
        row["search_over_forward_cpu"] = row["uncoupled"]["cpu_seconds"] / row["forward_cpu_seconds"]
        row["coupled_over_uncoupled"] = row["coupled"]["seconds"] / row["uncoupled"]["seconds"]
        rounds.append(row)
    return {"rounds": rounds, "breakdown": breakdown(model, plain, seeds["uncoupled"]) if with_breakdown else None,
            "search_over_forward": statistics.median(r["search_over_forward"] for r in rounds),
            "search_over_forward_cpu": statistics.median(r["search_over_forward_cpu"] for r in rounds),
            "coupled_over_uncoupled": statistics.median(r["coupled_over_uncoupled"] for r in rounds),
            "search_seconds": statistics.median(r["uncoupled"]["seconds"] for r in rounds),
            "coupled_seconds": statistics.median(r["coupled"]["seconds"] for r in rounds),
            "forward_seconds": statistics.median(r["forward_seconds"] for r in rounds)}


def breakdown(model, dataset, seeds) -> dict:
    """Where one more uncoupled search spends its time: the model's calls, the key table, the rest (seconds).

    A separate round, not one of the timed ones: a timer around every model call and every key table locate adds
    its own overhead. It says how far the search can get from the forward pass at all: the model's calls alone, at
    the walk's batch sizes, take longer than one forward pass of the same rows.
    """
    from chiralfair.generators.key_table import IntKeyTable

    spent = {"model": 0.0, "key_table": 0.0}
    calls = {"model": 0}

    def timed(obj, name: str, part: str):
        original = getattr(obj, name)

        def wrapper(*args, **kwargs):
            t = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent[part] += time.perf_counter() - t
                if part == "model":
                    calls["model"] += 1
        return original, wrapper

    patches = [(model, name, "model") for name in ("predict", "predict_with_proba", "input_gradient")]
    patches.append((IntKeyTable, "locate", "key_table"))
    saved = [(obj, name, obj.__dict__.get(name)) for obj, name, _ in patches]  # None: not the object's own
    try:
        for obj, name, part in patches:
            setattr(obj, name, timed(obj, name, part)[1])
        res = search(model, dataset, seeds, max_global=BUDGET[0], max_local=BUDGET[1])
    finally:
        for obj, name, own in saved:
            if own is None:
                if name in vars(obj):
                    delattr(obj, name)  # the instance's wrapper goes; the class's method shows again
            else:
                setattr(obj, name, own)
    return {"search_seconds": res.seconds, "model_seconds": spent["model"], "model_calls": calls["model"],
            "key_table_seconds": spent["key_table"],
            "rest_seconds": res.seconds - spent["model"] - spent["key_table"], "n_queries": res.n_queries}


def cap_run(max_local: int) -> dict:
    """The budget cap with ``max_local`` (coupled, pairs streamed to Parquet): peak RSS, keys and the walk's growth.

    Meant for a fresh process (its peak RSS is the process's). The local walk is wrapped to read the keys tested
    and the memory tracemalloc sees at its start and end.
    """
    default_data_home()
    import chiralfair.generators.eidig as eidig
    from chiralfair.generators import key_table
    from chiralfair.results.run_folder import PairSink

    dataset, model = load(couple=True)
    seeds = seeds_for(model, dataset, CAP[0])
    full_recent = key_table.RECENT_MAX_KEYS
    key_table.RECENT_MAX_KEYS = SMALL_CAP_RECENT_KEYS  # its keys go into runs, as the full cap's (module docstring)
    walk = {}
    original = eidig.local_walk

    def held(recorder) -> dict:
        # what the search holds, less the pairs waiting for the next Parquet part (bounded, not per key)
        return {"keys": recorder.n_tested, "table_bytes": recorder.key_table.nbytes,
                "traced_bytes": tracemalloc.get_traced_memory()[0] - recorder.buffered_nbytes}

    def measured_walk(recorder, *args, **kwargs):
        walk["before"] = held(recorder)
        original(recorder, *args, **kwargs)
        walk["after"] = held(recorder)

    eidig.local_walk = measured_walk
    peak = {"rss": 0}
    done = threading.Event()

    def sample():
        import psutil

        process = psutil.Process()
        while not done.wait(0.02):
            peak["rss"] = max(peak["rss"], process.memory_info().rss)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    tracemalloc.start()
    with tempfile.TemporaryDirectory() as folder:
        t = time.perf_counter()
        res = search(model, dataset, seeds, max_global=CAP[0], max_local=max_local,
                     sink=PairSink(Path(folder) / "idis.parquet"))
        seconds = time.perf_counter() - t
    tracemalloc.stop()
    done.set()
    sampler.join()
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux
    key_table.RECENT_MAX_KEYS = full_recent
    return {"max_local": max_local, "n_idis": res.n_idis, "n_global": res.n_global, "n_tested": res.n_tested,
            "seconds": seconds, "peak_rss_bytes": max(maxrss, peak["rss"]), "walk": walk,
            "max_run_keys": key_table.MAX_RUN_KEYS, "recent_keys": SMALL_CAP_RECENT_KEYS,
            "recent_level_peak_bytes": recent_level_peak(full_recent)}


def recent_level_peak(n: int) -> int:
    """Bytes (tracemalloc's peak) of a key table's hash level filled to ``n`` keys, then emptied into a run.

    The keys come in batches of 60,000, as a check of the budget cap's global phase sends them.
    """
    from chiralfair.generators import key_table

    keys = np.random.default_rng(0).integers(0, 1 << 62, size=n + 1)
    tracemalloc.start()
    table = key_table.IntKeyTable()
    for start in range(0, n, 60_000):
        table.locate(keys[start:min(start + 60_000, n)])
    table.locate(keys[n:])  # the next batch would overfill it: its keys go into a run
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def rounds_in_subprocess(repeats: int) -> dict:
    """:func:`timed_rounds` in a fresh process (no breakdown): one more sample of the process's own speed."""
    code = (f"import json, sys; sys.path.insert(0, {str(HERE)!r}); from perf_guard import timed_rounds; "
            f"print(json.dumps(timed_rounds({repeats}, with_breakdown=False)))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if proc.returncode:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"perf_guard: the timed rounds in a subprocess failed: {last}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def across_processes(timed: list[dict]) -> dict:
    """The guarded figures: each process's medians, then their median over the processes.

    The rounds of one process are not independent samples: one process reads every round's coupled/uncoupled ratio
    high or low together (by 5-10%, the same code, at any load), so only fresh processes give fresh samples.
    """
    return {"search_over_forward": statistics.median(t["search_over_forward"] for t in timed),
            "per_query": statistics.median(per_query(t) for t in timed),
            "coupled_over_uncoupled": statistics.median(t["coupled_over_uncoupled"] for t in timed),
            "search_seconds": statistics.median(t["search_seconds"] for t in timed),
            "forward_seconds": statistics.median(t["forward_seconds"] for t in timed),
            "by_process": [{"search_over_forward": t["search_over_forward"], "per_query": per_query(t),
                            "coupled_over_uncoupled": t["coupled_over_uncoupled"],
                            "search_seconds": t["search_seconds"], "forward_seconds": t["forward_seconds"]}
                           for t in timed]}


def cap_in_subprocess(max_local: int) -> dict:
    code = (f"import json, sys; sys.path.insert(0, {str(HERE)!r}); from perf_guard import cap_run; "
            f"print(json.dumps(cap_run({max_local})))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if proc.returncode:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"perf_guard: the cap run (max_local {max_local}) failed: {last}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def predicted_cap_peak(small: dict, full_local: int = CAP[1]) -> dict:
    """The full cap's peak predicted from a smaller cap's run (:func:`cap_run`); see the module docstring."""
    before, after = small["walk"]["before"], small["walk"]["after"]
    added = max(after["keys"] - before["keys"], 1)
    bytes_per_key = max(after["traced_bytes"] - before["traced_bytes"], 0) / added
    more_keys = added * (full_local - small["max_local"]) / small["max_local"]
    merge = 9 * small["max_run_keys"]
    recent = small["recent_level_peak_bytes"]
    predicted = small["peak_rss_bytes"] + bytes_per_key * more_keys + merge + recent
    return {"predicted_bytes": predicted, "bytes_per_key": bytes_per_key,
            "table_bytes_per_key": (after["table_bytes"] - before["table_bytes"]) / added, "more_keys": more_keys,
            "merge_allowance_bytes": merge, "recent_allowance_bytes": recent,
            "keys_full_estimate": after["keys"] + more_keys}


def _child(args: list[str], env: dict) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, the child's own) of one subprocess run to completion."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"perf_guard: {' '.join(args[1:4])} ... failed: {last}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def quick_start(repeats: int, src: Path | None = None) -> dict:
    """The README's first command with a warm model cache, against the import floor of the same interpreter.

    Each round runs ``chiralfair run`` (the README's first command, a fresh ``--out`` folder) and ``python -c
    "import torch, sklearn, shap"`` in fresh processes, the order alternating from round to round; one untimed run
    first warms the model cache, the explanation cache (the DNN's DeepLIFT values of the seeds), the file cache and
    chiralfair's bytecode cache (``PYTHONDONTWRITEBYTECODE`` is unset for the children). ``src``: the chiralfair
    source to time (default: the one this script imports). Medians of the rounds' wall and CPU seconds, and their
    ratios.
    """
    import chiralfair

    env = dict(os.environ, PYTHONPATH=str(src or Path(chiralfair.__file__).parent.parent))
    # Bytecode cached, as after any install (pip compiles it) or first run: with PYTHONDONTWRITEBYTECODE set (some
    # shells and CI images set it), every round would compile chiralfair's ~90 modules from source (about 0.3 s of
    # CPU on 2026-12-06's machine) while the floor's libraries read their installed .pyc files. The warm run below
    # writes chiralfair's __pycache__ (ignored by git).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory() as folder:
        def command(i: int) -> list[str]:
            return [sys.executable, "-m", "chiralfair", *QUICK_START, "--out", str(Path(folder) / f"run{i}")]

        _child(command(-1), env)  # warm: trains nothing when the cache holds the models, reads the files once,
        # writes the bytecode and the seeds' explanations
        rounds = []
        for i in range(repeats):
            row = {}
            for name in ("quick_start", "imports") if i % 2 == 0 else ("imports", "quick_start"):
                args = command(i) if name == "quick_start" else [sys.executable, "-c", IMPORT_FLOOR]
                wall, cpu = _child(args, env)
                row[name] = {"wall_seconds": wall, "cpu_seconds": cpu}
            rounds.append(row)
    med = {f"{name}_{kind}": statistics.median(r[name][f"{kind}_seconds"] for r in rounds)
           for name in ("quick_start", "imports") for kind in ("wall", "cpu")}
    return {"rounds": rounds, **med, "over_imports_wall": med["quick_start_wall"] / med["imports_wall"],
            "over_imports_cpu": med["quick_start_cpu"] / med["imports_cpu"],
            "command": "chiralfair " + " ".join(QUICK_START), "floor": IMPORT_FLOOR,
            "source": env["PYTHONPATH"]}


def versions() -> dict:
    from importlib.metadata import version

    import chiralfair

    out = {"python": platform.python_version(), "chiralfair": chiralfair.__version__,
           "chiralfair_source": str(Path(chiralfair.__file__).parent)}
    for pkg in ("numpy", "torch", "pyarrow", "scikit-learn"):
        out[pkg] = version(pkg)
    return out


def per_query(timed: dict) -> float:
    """The coupled/uncoupled ratio per model query: the coupling's own cost, without the work it adds."""
    r = timed["rounds"][0]
    return timed["coupled_over_uncoupled"] * r["uncoupled"]["n_queries"] / r["coupled"]["n_queries"]


def line(guarded: dict, cap: dict, quick: dict | None, failures: list[str]) -> str:
    mib = cap["predicted_bytes"] / 2**20
    each = ", ".join(f"{p['per_query']:.2f}" for p in guarded["by_process"])
    text = (f"perf_guard: search {guarded['search_seconds']:.2f} s = {guarded['search_over_forward']:.2f}x forward "
            f"{guarded['forward_seconds']:.2f} s (<= {MAX_SEARCH_OVER_FORWARD:.2f}), coupled/uncoupled per query "
            f"{guarded['per_query']:.2f} (<= {MAX_COUPLED_OVER_UNCOUPLED_PER_QUERY:.2f}; processes {each}; whole "
            f"searches {guarded['coupled_over_uncoupled']:.2f}), cap peak {mib:.0f} "
            f"MiB predicted from max_local {SMALL_CAP_LOCAL} (< {MAX_CAP_PEAK_MIB})")
    if quick is not None:
        text += (f", cached quick start {quick['quick_start_wall']:.2f} s = {quick['over_imports_wall']:.2f}x the "
                 f"imports {quick['imports_wall']:.2f} s (<= {MAX_QUICK_START_OVER_IMPORTS:.2f}; CPU "
                 f"{quick['quick_start_cpu']:.2f} s = {quick['over_imports_cpu']:.2f}x {quick['imports_cpu']:.2f} s)")
    return text + (": FAIL " + "; ".join(failures) if failures else ": ok")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=4,
                        help="timed rounds (each: uncoupled and forward, coupled; in alternating order)")
    parser.add_argument("--processes", type=int, default=5,
                        help="processes the timed rounds run in (this one, then fresh ones); medians over them")
    parser.add_argument("--quick-start", action="store_true",
                        help="also time the cached quick start against its imports (about 60 s more)")
    args = parser.parse_args(argv)
    default_data_home()
    t0, load_before = time.perf_counter(), os.getloadavg()
    small = cap_in_subprocess(SMALL_CAP_LOCAL)
    cap = predicted_cap_peak(small)
    timed = timed_rounds(args.repeats)
    guarded = across_processes([timed] + [rounds_in_subprocess(args.repeats) for _ in range(args.processes - 1)])
    quick = quick_start(args.repeats) if args.quick_start else None
    failures = []
    if guarded["search_over_forward"] > MAX_SEARCH_OVER_FORWARD:
        failures.append(f"the search takes {guarded['search_over_forward']:.2f}x the forward pass")
    if guarded["per_query"] > MAX_COUPLED_OVER_UNCOUPLED_PER_QUERY:
        failures.append(f"per query, the coupled search takes {guarded['per_query']:.2f}x the uncoupled one")
    if cap["predicted_bytes"] / 2**20 >= MAX_CAP_PEAK_MIB:
        failures.append(f"the cap would peak at {cap['predicted_bytes'] / 2**20:.0f} MiB")
    if quick is not None and quick["over_imports_wall"] > MAX_QUICK_START_OVER_IMPORTS:
        failures.append(f"the cached quick start takes {quick['over_imports_wall']:.2f}x its imports")
    text = line(guarded, cap, quick, failures)
    report = {"benchmark": "perf_guard", "line": text, "ok": not failures, "timed": timed, "guarded": guarded,
              "small_cap": small,
              "cap_prediction": cap, "quick_start": quick,
              "bounds": {"search_over_forward": MAX_SEARCH_OVER_FORWARD,
                         "coupled_over_uncoupled_per_query": MAX_COUPLED_OVER_UNCOUPLED_PER_QUERY,
                         "cap_peak_mib_below": MAX_CAP_PEAK_MIB,
                         "quick_start_over_imports": MAX_QUICK_START_OVER_IMPORTS},
              "parameters": {"budget": BUDGET, "cap": CAP, "small_cap_max_local": SMALL_CAP_LOCAL,
                             "repeats": args.repeats, "processes": args.processes, "random_state": RANDOM_STATE},
              "wall_seconds": time.perf_counter() - t0, "versions": versions(), "cpu_count": os.cpu_count(),
              "load_before": load_before, "load_after": os.getloadavg(),
              "date": datetime.now(UTC).isoformat(timespec="seconds")}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "perf_guard.json").write_text(json.dumps(report, indent=2) + "\n")
    (RESULTS / "perf_guard.md").write_text(markdown(report))
    print(text)
    return 1 if failures else 0


def markdown(report: dict) -> str:
    t, s, c = report["timed"], report["small_cap"], report["cap_prediction"]
    lines = ["# perf_guard: the search's speed and the budget cap's memory", "",
             f"{report['date']}, {report['cpu_count']} CPUs, load average {report['load_before'][0]:.2f} before, "
             f"{report['load_after'][0]:.2f} after; {report['wall_seconds']:.0f} s wall.", "", f"`{report['line']}`",
             "", "Each process's medians (the first is this one, whose rounds follow):", "",
             "| process | search s | forward s | search / forward | coupled / uncoupled | per query |",
             "|---|---|---|---|---|---|",
             *(f"| {i + 1} | {p['search_seconds']:.2f} | {p['forward_seconds']:.2f} | {p['search_over_forward']:.2f} "
               f"| {p['coupled_over_uncoupled']:.2f} | {p['per_query']:.2f} |"
               for i, p in enumerate(report["guarded"]["by_process"])),
             "", "| round | uncoupled s | forward s | search / forward | CPU: search s / forward s (ratio) "
                 "| coupled s | coupled / uncoupled |",
             "|---|---|---|---|---|---|---|"]
    for i, r in enumerate(t["rounds"]):
        cpu = (f"{r['uncoupled']['cpu_seconds']:.2f} / {r['forward_cpu_seconds']:.2f} "
               f"({r['search_over_forward_cpu']:.2f})" if "forward_cpu_seconds" in r else "")
        lines.append(f"| {i + 1} | {r['uncoupled']['seconds']:.2f} | {r['forward_seconds']:.2f} | "
                     f"{r['search_over_forward']:.2f} | {cpu} | {r['coupled']['seconds']:.2f} | "
                     f"{r['coupled_over_uncoupled']:.2f} |")
    r = t["rounds"][0]
    b = t["breakdown"]
    lines += ["", f"Where one more uncoupled search went (timers around every model call and key-table locate, so "
                  f"slower than the timed rounds): {b['search_seconds']:.2f} s, of which the model's "
                  f"{b['model_calls']:,} calls {b['model_seconds']:.2f} s "
                  f"({b['model_seconds'] / t['forward_seconds']:.2f}x the forward pass of as many rows), the key table "
                  f"{b['key_table_seconds']:.2f} s and the rest (the walk's, the check's and the recorder's numpy "
                  f"calls) {b['rest_seconds']:.2f} s."]
    lines += ["", f"Uncoupled: {r['uncoupled']['n_idis']:,} IDIs, {r['uncoupled']['n_queries']:,} queries; coupled: "
                  f"{r['coupled']['n_idis']:,} IDIs, {r['coupled']['n_queries']:,} queries (per query, the coupled "
                  f"search takes {per_query(t):.2f}x the uncoupled one in this process, "
                  f"{report['guarded']['per_query']:.2f}x over the processes).", "",
              f"Smaller cap (max_global {CAP[0]}, max_local {s['max_local']}, coupled, streamed): "
              f"{s['n_idis']:,} IDIs, {s['n_tested']:,} keys, {s['seconds']:.1f} s, peak RSS "
              f"{s['peak_rss_bytes'] / 2**20:.0f} MiB; the walk held {c['bytes_per_key']:.1f} bytes per key it added "
              f"(the key table {c['table_bytes_per_key']:.1f}); "
              f"the full cap would add {c['more_keys']:,.0f} keys more: predicted peak "
              f"{c['predicted_bytes'] / 2**20:.0f} MiB (with {c['merge_allowance_bytes'] / 2**20:.0f} MiB for one "
              f"merge of the largest run and {c.get('recent_allowance_bytes', 0) / 2**20:.0f} MiB for the key "
              f"table's hash level at its fullest; the smaller cap ran with a hash level of "
              f"{s.get('recent_keys', 0):,} keys).", ""]
    q = report["quick_start"]
    if q is not None:
        lines += [f"Cached quick start (`{q['command']}`, model cache warm) against the import floor `{q['floor']}`, "
              f"fresh processes, alternated, medians of {len(q['rounds'])} rounds: {q['quick_start_wall']:.2f} s "
              f"against {q['imports_wall']:.2f} s wall ({q['over_imports_wall']:.2f}x), {q['quick_start_cpu']:.2f} "
              f"s against {q['imports_cpu']:.2f} s CPU ({q['over_imports_cpu']:.2f}x).", ""]
    versions = ", ".join(f"{k} {v}" for k, v in report["versions"].items())
    return "\n".join(lines + [f"Versions: {versions}.", ""])


if __name__ == "__main__":
    sys.exit(main())
