"""A verdict beyond one machine's memory: rows per second, peak memory and the model's own limit, at 1 M to 50 M rows.

Run by hand from the repository root (raw Adult from $CHIRALFAIR_DATA, else ../shared/data):

    python benchmarks/scale.py                      # 1 M and 5 M rows, LR and HGB, one process and 2 workers
    python benchmarks/scale.py --rows 1000000 5000000 50000000 --models lr

The rows: the raw Adult files (train and test, 48,842 rows) resampled with replacement, each numeric column
jittered (normal noise of 5% of its standard deviation, so the values are new), written as Parquet files of 1 M
rows to a temporary folder (removed at the end, never committed). The models: the README's LR pipeline (one-hot
and scaling, LogisticRegression) and an HGB pipeline (ordinal codes, HistGradientBoostingClassifier), fitted on
adult.data. Protected attribute: sex, coupled to relationship (Husband <-> Wife) as the README's spec.

Each measurement runs in a fresh subprocess (``--one``) so that its peak resident memory is its own:
``chiralfair.estimate(model, folder, batch_rows=...)`` on one process, or with ``scheduler=`` a local
dask.distributed cluster of 2 worker processes the subprocess starts (the peak RSS of each worker read on the
worker, ``resource.getrusage``). Beside it, in the same subprocess and on the first file's rows: the model's own
rate, rows per second of one ``predict`` and one ``predict_proba`` call (the two calls the wrapper makes per row
of a model with probabilities: architecture, the model under test). **The limit** is that rate divided by the
number of protected combinations (each person is scored at each combination): the verdict cannot go faster than
the model; *share of limit* is the streamed rate over it (for the cluster, over twice it: two workers).

The first size is also checked in memory (``chiralfair.estimate(model, frame, population="rows", exact=True)``
on the same rows, with ``domain_sample`` = every row so that the domain is the same) and every count, interval
and group figure compared, when it holds at most ``--compare-rows`` rows (default 5 M): the in-memory verdict
holds every row as a frame, which at 50 M rows of Adult is more than this machine's memory (the 15 GiB that
stopped the first 50 M run after its stream was this comparison, not the streamed verdict).

Writes benchmarks/results/scale.json and scale.md: wall and CPU seconds (CPU: this subprocess, plus each worker's
``time.process_time``), load average before and after each measurement (``os.getloadavg``), versions, CPU count,
the commit measured and the nice value.

Where a process's wall time goes: beside its CPU seconds, the seconds its threads were ready to run but waited for
a core (the second field of Linux's ``/proc/<pid>/task/<tid>/schedstat``, summed over the threads, before and after
the verdict; the subprocess's own, and each worker's read on the worker). Summed over threads, it can pass the
wall time when several threads of a process wait at once (a worker's scoring thread, pyarrow's reading threads,
its event loop). On a machine shared with other work, two workers that need both cores wait for them where one
process needs one: this column says how much.
*Cores used* is the run's CPU seconds (the subprocess and its workers) over its wall seconds. Where Linux shares
the cores between sessions first (``/proc/sys/kernel/sched_autogroup_enabled`` = 1, recorded), a session's
processes together get about 2/G of 2 cores while G sessions are busy, however many processes it runs: two
workers then share what one process would get.

**The limit** for a run on workers is the model's rate measured as each worker runs it, with one thread for
OpenMP and BLAS (dask's setting for its workers, ``threadpoolctl.threadpool_limits(1)`` here), times the
workers; for one process, as this process runs it (its default threads). The JSON keeps both rates.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from provenance import commit

RESULTS = Path(__file__).parent / "results"
NAMES = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
         "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country", "income"]
NUMERIC = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
FILE_ROWS = 1_000_000
SPEC = {"label": "income", "positive_class": ">50K", "protected": "sex",
        "couple": {"sex": {"relationship": {"Husband": "Wife", "Wife": "Husband"}}}}


def raw_adult():
    import pandas as pd

    raw = Path(os.environ.get("CHIRALFAIR_DATA", "../shared/data")) / "census" / "raw"
    train = pd.read_csv(raw / "adult.data", names=NAMES, skipinitialspace=True)
    test = pd.read_csv(raw / "adult.test", names=NAMES, skipinitialspace=True, skiprows=1)
    test["income"] = test["income"].str.rstrip(".")
    return train, test


def model(kind: str):
    from sklearn.compose import make_column_selector, make_column_transformer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler

    train, _ = raw_adult()
    if kind == "lr":
        pipe = make_pipeline(make_column_transformer((OneHotEncoder(handle_unknown="ignore"),
                                                      make_column_selector(dtype_exclude="number")),
                                                     remainder=StandardScaler()),
                             LogisticRegression(max_iter=1000))
    else:
        pipe = make_pipeline(make_column_transformer((OrdinalEncoder(handle_unknown="use_encoded_value",
                                                                     unknown_value=-1),
                                                      make_column_selector(dtype_exclude="number")),
                                                     remainder="passthrough"),
                             HistGradientBoostingClassifier(random_state=0))
    return pipe.fit(train.drop(columns="income"), train["income"])


def write_rows(folder: Path, n: int, seed: int = 0) -> None:
    """``n`` rows of raw Adult resampled with jitter, as Parquet files of at most FILE_ROWS rows."""
    import numpy as np
    import pandas as pd

    train, test = raw_adult()
    both = pd.concat([train, test], ignore_index=True)
    scale = {c: 0.05 * float(both[c].std()) for c in NUMERIC}
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for i, start in enumerate(range(0, n, FILE_ROWS)):
        m = min(FILE_ROWS, n - start)
        part = both.iloc[rng.integers(0, len(both), m)].reset_index(drop=True)
        for c in NUMERIC:
            part[c] = part[c].astype("float64") + rng.normal(0.0, scale[c], m)
        part.to_parquet(folder / f"part-{i:04d}.parquet", index=False)


def model_rate(pipe, folder: Path, k: int, threads: int | None = None) -> dict:
    """Rows per second of one predict and one predict_proba on the first file's rows (fastest of 2).

    ``threads``: OpenMP and BLAS threads while measuring (None: this process's default).
    """
    import contextlib

    import pandas as pd
    from threadpoolctl import threadpool_limits

    frame = pd.read_parquet(sorted(folder.glob("*.parquet"))[0]).drop(columns="income")
    best = best_cpu = float("inf")
    with threadpool_limits(threads) if threads is not None else contextlib.nullcontext():
        for _ in range(2):
            t, c = time.perf_counter(), time.process_time()
            pipe.predict(frame)
            pipe.predict_proba(frame)
            best = min(best, time.perf_counter() - t)
            best_cpu = min(best_cpu, time.process_time() - c)
    rate = len(frame) / best
    return {"rows": len(frame), "threads": threads, "seconds_predict_and_proba": best,
            "cpu_seconds_predict_and_proba": best_cpu, "model_rows_per_second": rate, "n_combinations": k,
            "limit_people_per_second": rate / k}


def scheduled() -> tuple[float, float]:
    """This process's CPU seconds and seconds waiting for a core, summed over its threads (Linux schedstat).

    Threads that ended before the call are not counted; (nan, nan) where /proc has no schedstat.
    """
    cpu = wait = 0.0
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return float("nan"), float("nan")
    for tid in tasks:
        try:
            fields = Path(f"/proc/self/task/{tid}/schedstat").read_text().split()
        except OSError:  # the thread ended meanwhile, or no schedstat
            continue
        cpu += int(fields[0]) / 1e9
        wait += int(fields[1]) / 1e9
    return cpu, wait


def watch(max_rss_mib: float, log: str | None, every: float = 30.0) -> None:
    """A daemon thread: every second this process's resident memory; past ``max_rss_mib`` the stacks and exit 75.

    Every ``every`` seconds (and once when 1.5 GiB, the goal, is first passed, with the stacks) a line goes to
    ``log`` (or stderr): UTC, CPU seconds of this process and its children, VmRSS and VmHWM in MiB.
    """
    import faulthandler
    import threading

    def status() -> tuple[float, float]:
        fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
        return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024

    def run() -> None:
        out = open(log, "a", buffering=1) if log else sys.stderr  # noqa: SIM115 (open for the thread's life)
        last, warned = 0.0, False
        while True:
            rss, hwm = status()
            now = time.monotonic()
            if now - last >= every or rss > max_rss_mib or (rss > 1536 and not warned):
                usage = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
                cpu = sum(u.ru_utime + u.ru_stime for u in usage)
                print(f"{datetime.now(UTC).isoformat(timespec='seconds')} cpu_s={cpu:.1f} rss_mib={rss:.0f} "
                      f"hwm_mib={hwm:.0f} load={os.getloadavg()[0]:.2f}", file=out)
                last = now
                if rss > 1536 and not warned:
                    warned = True
                    faulthandler.dump_traceback(file=out, all_threads=True)
                if rss > max_rss_mib:
                    print(f"resident memory {rss:.0f} MiB passed the cap of {max_rss_mib:.0f} MiB: stopped", file=out)
                    faulthandler.dump_traceback(file=out, all_threads=True)
                    os._exit(75)
            time.sleep(1.0)

    threading.Thread(target=run, daemon=True, name="rss-watch").start()


def one(kind: str, folder: Path, workers: int, batch_rows: int, compare: bool) -> dict:
    """One measurement, in this (fresh) process."""
    import chiralfair

    pipe = model(kind)
    load_before = os.getloadavg()
    cpu0 = time.process_time()
    main0 = scheduled()
    client = cluster = None
    extra = {}
    if workers:
        from distributed import Client

        from chiralfair.pipeline.stream import local_cluster

        cluster = local_cluster(workers)  # the cluster estimate(workers=...) starts
        client = Client(cluster)
        extra = {"scheduler": cluster.scheduler_address}
        worker_cpu0 = client.run(time.process_time)
        worker_sched0 = client.run(scheduled)
    t = time.perf_counter()
    verdict = chiralfair.estimate(pipe, str(folder), batch_rows=batch_rows, **SPEC, **extra)
    wall = time.perf_counter() - t
    cpu = time.process_time() - cpu0
    main1 = scheduled()
    out = {"model": kind, "workers": workers, "batch_rows": batch_rows, "rows": verdict.meta["stream"]["rows_read"],
           "wall_seconds": wall, "cpu_seconds_main": cpu, "rows_per_second": verdict.meta["stream"]["rows_read"] / wall,
           "peak_rss_mib_main": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           "n_queries": verdict.n_queries, "n_affected": verdict.n_affected, "n_individuals": verdict.n_individuals,
           "share": verdict.share, "worst_group": verdict.worst_group, "load_before": load_before,
           "nice": os.nice(0), "core_wait_seconds_main": main1[1] - main0[1]}
    if client is not None:
        sched = client.run(scheduled)
        rss = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        worker_cpu = client.run(time.process_time)
        order = sorted(worker_cpu, key=lambda w: worker_cpu[w] - worker_cpu0.get(w, 0.0))  # one order for all
        out["peak_rss_mib_workers"] = [rss[w] for w in order]
        out["cpu_seconds_workers"] = [worker_cpu[w] - worker_cpu0.get(w, 0.0) for w in order]
        out["core_wait_seconds_workers"] = [sched[w][1] - worker_sched0[w][1] for w in order]
        client.close()
        cluster.close()
    out["load_after"] = os.getloadavg()
    k = verdict.meta["n_combinations"]
    out["limit_default_threads"] = model_rate(pipe, folder, k)
    out["limit_one_thread"] = model_rate(pipe, folder, k, threads=1)
    out["limit"] = out["limit_one_thread"] if workers else out["limit_default_threads"]
    out["share_of_limit"] = out["rows_per_second"] / (out["limit"]["limit_people_per_second"] * max(1, workers))
    if compare:
        import pandas as pd

        frame = pd.concat([pd.read_parquet(p) for p in sorted(folder.glob("*.parquet"))], ignore_index=True)
        streamed = chiralfair.estimate(pipe, str(folder), batch_rows=batch_rows, domain_sample=len(frame), **SPEC)
        memory = chiralfair.estimate(pipe, frame, population="rows", exact=True, **SPEC)
        fields = ("n_individuals", "n_affected", "n_harmed", "share", "lower", "upper", "people_lower",
                  "people_upper", "worst_group", "too_small", "gap", "rules", "n_left_out", "n_unplaced",
                  "plausibility", "groups")
        out["in_memory_equal"] = {f: getattr(memory, f) == getattr(streamed, f) for f in fields}
        out["in_memory_n_affected"] = memory.n_affected
    return out


def autogroup() -> str:
    """Whether Linux shares the cores between sessions first (autogroup), and this process's group; ``?`` if unknown."""
    try:
        enabled = Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip()
        group = Path("/proc/self/autogroup").read_text().strip()
    except OSError:
        return "?"
    return f"sched_autogroup_enabled={enabled} ({group})"


def compares(n: int, first: int, workers: int, compare_rows: int) -> bool:
    """Whether the measurement of ``n`` rows is also checked in memory: the first size, one process, and at most
    ``compare_rows`` rows (the in-memory verdict holds every row: 50 M rows of Adult do not fit in this machine)."""
    return n == first and workers == 0 and n <= compare_rows


def markdown(record: dict) -> str:
    lines = ["# A streamed verdict at scale", "",
             f"{record['date']}, {record['cpu_count']} CPUs, {record['python']}, chiralfair "
             f"{record['chiralfair_version']}; command `{record['command']}`; load average before the first "
             f"measurement {record['load_start'][0]:.2f}, after the last {record['load_end'][0]:.2f}. Each row: one "
             "fresh subprocess streaming the Parquet folder through `chiralfair.estimate(model, folder, "
             f"batch_rows={record['batch_rows']:,})` (protected sex, coupled to relationship). Peak RSS: "
             "`ru_maxrss` of the subprocess and of each Dask worker. CPU: process time of the subprocess and of each "
             "worker. Waiting for a core: seconds the process's threads were ready but not running (Linux "
             "schedstat, summed over its threads), beside its CPU seconds. Limit: the model's own rate (one "
             "predict + one predict_proba per row, on the first file's 1 M rows) over the protected "
             "combinations, times the workers; measured as each process runs it (a worker: one OpenMP and BLAS "
             "thread; one process: its default threads). "
             "Cores used: the run's CPU seconds over its wall seconds. "
             f"Commit {record.get('commit', '?')}, nice {record.get('nice', '?')}, "
             f"{record.get('autogroup', 'autogroup not recorded')}.", "",
             "| model | rows | workers | wall s | CPU s (main; workers) | waiting for a core s (main; workers) | "
             "cores used | rows/s | limit rows/s | share of limit (wall) | share of limit (CPU) | "
             "peak RSS MiB (main; workers) | load before/after |",
             "|---|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---|---|"]
    for r in record["runs"]:
        limit = r["limit"]["limit_people_per_second"] * max(1, r["workers"])
        workers_cpu = "; " + ", ".join(f"{c:.1f}" for c in r.get("cpu_seconds_workers", [])) if r["workers"] else ""
        workers_rss = "; " + ", ".join(f"{m:.0f}" for m in r.get("peak_rss_mib_workers", [])) if r["workers"] else ""
        waits = r.get("core_wait_seconds_workers", [])
        wait = "-" if "core_wait_seconds_main" not in r else (
            f"{r['core_wait_seconds_main']:.1f}" + ("; " + ", ".join(f"{w:.1f}" for w in waits) if waits else ""))
        model_cpu = r["limit"].get("cpu_seconds_predict_and_proba")
        cpu_share = "-"
        spent = r["cpu_seconds_main"] + sum(r.get("cpu_seconds_workers", []))
        if model_cpu is not None:  # the model's CPU for these rows at every combination, over the run's CPU
            cpu_share = f"{model_cpu / r['limit']['rows'] * r['rows'] * r['limit']['n_combinations'] / spent:.0%}"
        lines.append(f"| {r['model']} | {r['rows']:,} | {r['workers']} | {r['wall_seconds']:.1f} | "
                     f"{r['cpu_seconds_main']:.1f}{workers_cpu} | {wait} | {spent / r['wall_seconds']:.2f} | "
                     f"{r['rows_per_second']:,.0f} | "
                     f"{limit:,.0f} | "
                     f"{r['share_of_limit']:.0%} | {cpu_share} | {r['peak_rss_mib_main']:.0f}{workers_rss} | "
                     f"{r['load_before'][0]:.1f} / {r['load_after'][0]:.1f} |")
    lines.append("")
    for r in record["runs"]:
        if "in_memory_equal" in r:
            unequal = [k for k, v in r["in_memory_equal"].items() if not v]
            lines.append(f"In memory, {r['model']} on the {r['rows']:,}-row table: "
                         + ("every compared field equal to the streamed verdict (" + ", ".join(r["in_memory_equal"])
                            + f"); {r['in_memory_n_affected']:,} affected." if not unequal else
                            "UNEQUAL: " + ", ".join(unequal)))
    if record.get("not_run"):
        lines += ["", record["not_run"]]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", nargs="+", type=int, default=[1_000_000, 5_000_000])
    p.add_argument("--models", nargs="+", default=["lr", "hgb"])
    p.add_argument("--workers", nargs="+", type=int, default=[0, 2], help="0: one process")
    p.add_argument("--batch-rows", type=int, default=65_536)
    p.add_argument("--name", default="scale")
    p.add_argument("--one", nargs=4, metavar=("MODEL", "FOLDER", "WORKERS", "COMPARE"), help=argparse.SUPPRESS)
    p.add_argument("--compare-rows", type=int, default=5_000_000,
                   help="compare the first size with the in-memory verdict only up to this many rows")
    p.add_argument("--max-rss-mib", type=float, default=6144.0,
                   help="stop a measurement whose process passes this resident memory (its stacks printed)")
    p.add_argument("--watch-log", help="append the measurement's memory and CPU, every 30 s, to this file")
    p.add_argument("--folder", help="write the rows here (or reuse them if there) and keep them")
    p.add_argument("--markdown-only", action="store_true", help="rewrite NAME.md from NAME.json")
    args = p.parse_args(argv)
    if args.markdown_only:
        record = json.loads((RESULTS / f"{args.name}.json").read_text())
        (RESULTS / f"{args.name}.md").write_text(markdown(record))
        return 0
    if args.one:
        kind, folder, workers, compare = args.one
        watch(args.max_rss_mib, args.watch_log)
        print(json.dumps(one(kind, Path(folder), int(workers), args.batch_rows, compare == "1")))
        return 0
    import chiralfair

    record = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "cpu_count": os.cpu_count(),
              "python": platform.python_version(), "chiralfair_version": chiralfair.__version__,
              "command": "python benchmarks/scale.py " + " ".join(argv if argv is not None else sys.argv[1:]),
              "batch_rows": args.batch_rows, "load_start": os.getloadavg(),
              "commit": commit("benchmarks/scale.py"), "nice": os.nice(0),
              "autogroup": autogroup(),
              "runs": []}
    root = Path(args.folder) if args.folder else Path(tempfile.mkdtemp(prefix="chiralfair-scale-"))
    try:
        for n in args.rows:
            folder = root / f"rows-{n}"
            if not (args.folder and folder.is_dir()):
                t = time.perf_counter()
                write_rows(folder, n)
                print(f"wrote {n:,} rows in {time.perf_counter() - t:.0f} s", file=sys.stderr)
            for kind in args.models:
                for workers in args.workers:
                    compare = compares(n, args.rows[0], workers, args.compare_rows)
                    watch_args = ["--max-rss-mib", str(args.max_rss_mib)] + (
                        ["--watch-log", args.watch_log] if args.watch_log else [])
                    res = subprocess.run([sys.executable, __file__, "--batch-rows", str(args.batch_rows), *watch_args,
                                          "--one", kind, str(folder), str(workers), "1" if compare else "0"],
                                         capture_output=True, text=True, check=False)
                    if res.returncode:
                        print(res.stderr[-3000:], file=sys.stderr)
                        raise SystemExit(f"measurement {kind} {n} {workers} failed")
                    run = json.loads(res.stdout.strip().splitlines()[-1])
                    record["runs"].append(run)
                    print(json.dumps({k: run[k] for k in ("model", "rows", "workers", "wall_seconds",
                                                          "rows_per_second", "share_of_limit", "peak_rss_mib_main")}),
                          file=sys.stderr)
                    record["load_end"] = os.getloadavg()
                    RESULTS.mkdir(exist_ok=True)
                    (RESULTS / f"{args.name}.json").write_text(json.dumps(record, indent=2, default=str))
                    (RESULTS / f"{args.name}.md").write_text(markdown(record))
            if not args.folder:
                shutil.rmtree(folder)
    finally:
        if not args.folder:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
