"""The search's speed regained: this tree against earlier commits, side by side in one run.

Run by hand from the repository root, earlier commits checked out beside it (the census DNN in the model cache):

    git worktree add --detach ../base 45f70f3 && git worktree add --detach ../prev 4fe35a5
    CHIRALFAIR_DATA=/path/to/data python benchmarks/speed_regained.py --tree 45f70f3=../base/src \\
        --tree 4fe35a5=../prev/src

The run is ``chiralfair run --dataset census --protected sex --model dnn --seeds cluster --generator eidig-inf
--max-global 1000 --max-local 1000`` with ``--couple none`` on the trees that couple sex to relationship (so every
tree does the same work). All trees run in this interpreter's environment, each with its own ``src`` first on
``PYTHONPATH``, alternated round by round, so a change of load hits all of them:

- **search**: per round and tree a fresh process loads the data, the cached model and the seeds, runs one small
  search untimed, then the search (its ``seconds``: the recorder's clock, the search alone), the forward pass of as
  many rows as it queried through the same model wrapper (one ``predict_with_proba`` call, which the wrapper
  batches), and, where the tree has couplings, the same search with census's default coupling. Medians over
  ``--repeats`` rounds. The IDIs (and their counterparts, in order) must be the same in every tree and round, and
  the coupled ones the same in every tree that couples: the script stops otherwise.
- **whole command**: the command above as a whole process per tree, alternated, ``--repeats`` times after one
  warm-up each (wall clock and peak RSS of the child from ``os.wait4``).
- **budget cap**: ``--max-global 99999 --max-local 999`` (census's default coupling, pairs streamed to
  ``--out``) once per ``--cap-tree``: wall, search seconds and peak RSS, beside ``perf_guard.py``'s prediction
  from its smaller cap.

Writes ``benchmarks/results/speed_regained.json`` (every run, versions, CPU count, date, load) and ``.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from data_home import default_data_home

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
THIS = "this"
COMMAND = ["--dataset", "census", "--protected", "sex", "--model", "dnn", "--seeds", "cluster",
           "--generator", "eidig-inf"]
BUDGET = (1000, 1000)
CAP = (99999, 999)


def worker() -> dict:
    """One round in this process's chiralfair: the uncoupled search, the forward pass, the coupled search."""
    import inspect

    import numpy as np

    import chiralfair
    from chiralfair.datasets import load_dataset
    from chiralfair.generators import make_generator
    from chiralfair.models.training import train_model
    from chiralfair.seeds import make_seed_strategy

    couples = "couple" in inspect.signature(load_dataset).parameters
    out: dict = {"source": str(Path(chiralfair.__file__).parent), "couples": couples}
    for name in ("uncoupled", "coupled") if couples else ("uncoupled",):
        dataset = load_dataset("census", protected="sex", **({"couple": False} if name == "uncoupled" and couples
                                                             else {}))
        model = train_model(dataset, "dnn", random_state=0).model
        seeds = make_seed_strategy("cluster").select(model, dataset, BUDGET[0], random_state=0)
        make_generator("eidig-inf", max_global=100, max_local=100).run(model, dataset.domain, seeds, random_state=0)
        model.reset_queries()
        cpu = time.process_time()
        res = make_generator("eidig-inf", max_global=BUDGET[0], max_local=BUDGET[1]).run(
            model, dataset.domain, seeds, random_state=0)
        cpu = time.process_time() - cpu
        digest = hashlib.sha256(np.ascontiguousarray(res.idis).tobytes()
                                + np.ascontiguousarray(res.counterparts).tobytes()).hexdigest()
        out[name] = {"seconds": res.seconds, "cpu_seconds": cpu, "n_idis": res.n_idis, "n_global": res.n_global,
                     "n_tested": res.n_tested, "n_queries": res.n_queries, "pairs_sha256": digest}
        if name == "uncoupled":
            rows = np.resize(dataset.X, (res.n_queries, dataset.X.shape[1]))
            t = time.perf_counter()
            model.predict_with_proba(rows)
            out["forward_seconds"] = time.perf_counter() - t
    return out


def env_for(src: str | None) -> dict:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(Path(src).resolve()), env.get("PYTHONPATH", "")])
    return env


def run_worker(src: str | None) -> dict:
    code = f"import json, sys; sys.path.insert(0, {str(HERE)!r}); from speed_regained import worker; " \
           "print(json.dumps(worker()))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env_for(src),
                          check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def whole_command(src: str | None, couples: bool, extra: list[str], out: str | None = None) -> dict:
    """Wall seconds and peak RSS of one ``chiralfair run`` process in ``src``'s chiralfair."""
    args = [sys.executable, "-c", "from chiralfair.cli import app; app()", "run", *COMMAND, *extra]
    if couples and "--couple" not in extra:
        args += ["--couple", "none"]
    if out is not None:
        args += ["--out", out]
    t = time.perf_counter()
    proc = subprocess.Popen(args, env=env_for(src), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise RuntimeError(f"chiralfair run in {src or 'this tree'} exited with {proc.returncode}")
    return {"wall_seconds": wall, "peak_rss_bytes": usage.ru_maxrss * 1024}


def budget(max_global: int, max_local: int) -> list[str]:
    return ["--max-global", str(max_global), "--max-local", str(max_local)]


def check_same(rounds: dict) -> None:
    """Every tree and round found the same uncoupled pairs, and every coupling tree the same coupled ones."""
    for name in ("uncoupled", "coupled"):
        digests = {r[name]["pairs_sha256"] for runs in rounds.values() for r in runs if name in r}
        if len(digests) > 1:
            raise RuntimeError(f"the {name} searches found different IDIs in different trees or rounds: {digests}")


def median(values) -> float:
    return statistics.median(list(values))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=SRC",
                        help="an earlier commit's src folder (repeatable)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cap-tree", action="append", default=None, metavar="NAME",
                        help=f"trees whose budget cap runs (default: {THIS!r} and the last --tree)")
    parser.add_argument("--no-cap", action="store_true")
    args = parser.parse_args(argv)
    default_data_home()
    trees: dict[str, str | None] = {THIS: None}
    for item in args.tree:
        name, _, src = item.partition("=")
        trees[name] = src
    load = {"before": os.getloadavg()}
    rounds: dict[str, list[dict]] = {name: [] for name in trees}
    for _ in range(args.repeats):
        for name, src in trees.items():
            rounds[name].append(run_worker(src))
    check_same(rounds)
    load["after_search"] = os.getloadavg()
    couples = {name: runs[0]["couples"] for name, runs in rounds.items()}
    commands: dict[str, list[dict]] = {name: [] for name in trees}
    for name, src in trees.items():  # warm-up (and the model cache of each tree's library versions)
        whole_command(src, couples[name], budget(*BUDGET))
    for _ in range(args.repeats):
        for name, src in trees.items():
            commands[name].append(whole_command(src, couples[name], budget(*BUDGET)))
    load["after_command"] = os.getloadavg()
    caps = {}
    if not args.no_cap:
        sys.path.insert(0, str(HERE))
        from perf_guard import SMALL_CAP_LOCAL, cap_in_subprocess, predicted_cap_peak

        small = cap_in_subprocess(SMALL_CAP_LOCAL)
        caps["prediction"] = {"small_cap": small, **predicted_cap_peak(small)}
        for name in args.cap_tree or [THIS, list(trees)[-1]]:
            with tempfile.TemporaryDirectory() as folder:
                run = whole_command(trees[name], False, budget(*CAP), out=str(Path(folder) / "run"))
                record = json.loads((Path(folder) / "run" / "result.json").read_text())
            run.update(n_idis=record["n_idis"], search_seconds=record["seconds"])
            caps[name] = run
        load["after_cap"] = os.getloadavg()
    report = {"benchmark": "speed_regained", "trees": {k: v or "this tree" for k, v in trees.items()},
              "rounds": rounds, "commands": commands, "caps": caps, "summary": summarise(rounds, commands),
              "parameters": {"budget": BUDGET, "cap": CAP, "repeats": args.repeats, "random_state": 0},
              "load": load, "cpu_count": os.cpu_count(), "python": platform.python_version(),
              "versions": versions(), "date": datetime.now(UTC).isoformat(timespec="seconds")}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "speed_regained.json").write_text(json.dumps(report, indent=2) + "\n")
    text = markdown(report)
    (RESULTS / "speed_regained.md").write_text(text)
    print(text)
    return 0


def summarise(rounds: dict, commands: dict) -> dict:
    out = {}
    for name, runs in rounds.items():
        row = {"search_seconds": median(r["uncoupled"]["seconds"] for r in runs),
               "search_cpu_seconds": median(r["uncoupled"]["cpu_seconds"] for r in runs),
               "forward_seconds": median(r["forward_seconds"] for r in runs),
               "forward_share": median(r["forward_seconds"] / r["uncoupled"]["seconds"] for r in runs),
               "command_wall_seconds": median(c["wall_seconds"] for c in commands[name]),
               "command_peak_rss_bytes": median(c["peak_rss_bytes"] for c in commands[name]),
               "n_idis": runs[0]["uncoupled"]["n_idis"], "n_queries": runs[0]["uncoupled"]["n_queries"]}
        if "coupled" in runs[0]:
            row.update(coupled_seconds=median(r["coupled"]["seconds"] for r in runs),
                       coupled_over_uncoupled=median(r["coupled"]["seconds"] / r["uncoupled"]["seconds"]
                                                     for r in runs),
                       coupled_n_idis=runs[0]["coupled"]["n_idis"])
        out[name] = row
    first = rounds[THIS]
    for name, runs in rounds.items():  # this tree over each other, round by round (same load)
        out[name]["this_over_it"] = median(a["uncoupled"]["seconds"] / b["uncoupled"]["seconds"]
                                           for a, b in zip(first, runs, strict=True))
        out[name]["this_over_it_command"] = median(a["wall_seconds"] / b["wall_seconds"]
                                                   for a, b in zip(commands[THIS], commands[name], strict=True))
    return out


def versions() -> dict:
    from importlib.metadata import version

    return {pkg: version(pkg) for pkg in ("numpy", "torch", "pyarrow", "scikit-learn", "pandas")}


def markdown(report: dict) -> str:
    s, p, load = report["summary"], report["parameters"], report["load"]
    lines = ["# Speed regained: the EIDIG-INF search side by side with earlier commits", "",
             f"{report['date']}, {report['cpu_count']} CPUs; load average (1 min) {load['before'][0]:.2f} before, "
             + ", ".join(f"{v[0]:.2f} {k.replace('_', ' ')}" for k, v in load.items() if k != "before") + ". "
             f"`chiralfair run {' '.join(COMMAND)} --max-global {p['budget'][0]} --max-local {p['budget'][1]}` "
             "(`--couple none` where the tree couples), model random state 0, random_state 0; medians of "
             f"{p['repeats']} rounds, trees alternated round by round. Same IDIs (and counterparts, in order) in "
             "every tree and round: checked.", "",
             "| tree | IDIs | queries | search s (median) | search CPU s | this / tree (search) | forward s | "
             "forward share | whole command s | this / tree (command) | command peak MiB | coupled s | "
             "coupled / uncoupled |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, row in s.items():
        coupled = (f"{row['coupled_seconds']:.2f} | {row['coupled_over_uncoupled']:.2f}" if "coupled_seconds" in row
                   else "- | -")
        lines.append(f"| {name} ({report['trees'][name]}) | {row['n_idis']:,} | {row['n_queries']:,} | "
                     f"{row['search_seconds']:.2f} | {row['search_cpu_seconds']:.2f} | {row['this_over_it']:.2f} | "
                     f"{row['forward_seconds']:.2f} | {row['forward_share']:.0%} | {row['command_wall_seconds']:.2f} "
                     f"| {row['this_over_it_command']:.2f} | {row['command_peak_rss_bytes'] / 2**20:.0f} | {coupled} |")
    lines += ["", "forward share = seconds of one batched forward pass of as many rows as the search queried, through "
                  "the same model wrapper in the same process, over the search's seconds (the search runs at that "
                  "share of the forward-pass limit).", ""]
    caps = report["caps"]
    if caps:
        lines += [f"Budget cap (`--max-global {p['cap'][0]} --max-local {p['cap'][1]}`, census's default coupling, "
                  "pairs streamed to `--out`), one run per tree:", "",
                  "| tree | IDIs | search s | whole command s | peak RSS MiB |", "|---|---|---|---|---|"]
        for name, run in caps.items():
            if name != "prediction":
                lines.append(f"| {name} | {run['n_idis']:,} | {run['search_seconds']:.1f} | "
                             f"{run['wall_seconds']:.1f} | {run['peak_rss_bytes'] / 2**20:.0f} |")
        pred = caps["prediction"]
        lines += ["", f"perf_guard.py's prediction from its smaller cap (max_local {pred['small_cap']['max_local']}, "
                      f"peak {pred['small_cap']['peak_rss_bytes'] / 2**20:.0f} MiB, {pred['bytes_per_key']:.1f} bytes "
                      f"per key added): {pred['predicted_bytes'] / 2**20:.0f} MiB.", ""]
    versions = ", ".join(f"{k} {v}" for k, v in report["versions"].items())
    return "\n".join(lines + [f"Python {report['python']}; {versions}.", ""])


if __name__ == "__main__":
    sys.exit(main())
