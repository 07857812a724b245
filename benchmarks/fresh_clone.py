"""The README's quick start as a new user meets it: a fresh clone, a fresh venv, an empty model cache.

Run by hand from the repository root, with the benchmark data home set:

    CHIRALFAIR_DATA=../shared/data python benchmarks/fresh_clone.py

Clones the checked-out commit into a temporary folder beside a ``shared/data`` link to the data home (the layout
the README assumes), then runs the README's first quick-start command in two timed parts: the install
(``python3 -m venv .venv && .venv/bin/pip install torch==2.13.0 && .venv/bin/pip install -e .``, read from the
README) and the ``chiralfair run ...`` that follows it, with a new, empty ``CHIRALFAIR_CACHE``. Measures the
install's wall time and the venv's size (``du -sh .venv``), the run's wall time, and keeps what the run printed.
The install time depends on where pip finds the packages (a local mirror here; over a network, add the download
of the wheels).

Writes benchmarks/results/fresh_clone.json (figures, the printed output, commit, versions, CPU count, date, load)
and fresh_clone.md.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def quick_start_command() -> str:
    """The README's first quick-start command (the line after the '# 1.' comment)."""
    lines = (ROOT / "README.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("# 1."))
    return lines[start + 1].strip()


def split_command(command: str) -> tuple[str, str]:
    """The install part (venv and pip) and the run part (from ``CHIRALFAIR_DATA=...`` on)."""
    install, run = command.split(" && CHIRALFAIR_DATA=", 1)
    return install, "CHIRALFAIR_DATA=" + run


def timed(command: str, cwd: Path, env: dict) -> tuple[float, subprocess.CompletedProcess]:
    t = time.perf_counter()
    proc = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"{command!r} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return seconds, proc


def main() -> None:
    data_home = Path(os.environ.get("CHIRALFAIR_DATA", ROOT.parent / "shared" / "data")).resolve()
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.strip()
    install, run = split_command(quick_start_command())
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "shared").mkdir()
        (tmp / "shared" / "data").symlink_to(data_home)
        subprocess.run(["git", "clone", "-q", str(ROOT), str(tmp / "clone")], check=True)
        subprocess.run(["git", "checkout", "-q", commit], cwd=tmp / "clone", check=True)
        env = {k: v for k, v in os.environ.items() if k not in ("CHIRALFAIR_DATA", "VIRTUAL_ENV")}
        env["CHIRALFAIR_CACHE"] = str(tmp / "cache")
        install_s, _ = timed(install, tmp / "clone", env)
        size = subprocess.run(["du", "-sh", ".venv"], cwd=tmp / "clone", capture_output=True, text=True,
                              check=True).stdout.split()[0]
        size_bytes = int(subprocess.run(["du", "-sb", ".venv"], cwd=tmp / "clone", capture_output=True, text=True,
                                        check=True).stdout.split()[0])
        load_mid = os.getloadavg()
        run_s, proc = timed(run, tmp / "clone", env)
        result = json.loads((tmp / "clone" / "runs" / "census-sex" / "result.json").read_text())
    load_end = os.getloadavg()
    out = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "commit": commit,
        "python": platform.python_version(), "cpus": os.cpu_count(), "machine": platform.machine(),
        "load_average": {"start": load_start, "after_install": load_mid, "end": load_end},
        "install_command": install, "run_command": run,
        "install_seconds": install_s, "venv_size": size, "venv_bytes": size_bytes,
        "run_seconds": run_s, "stdout": proc.stdout,
        "figures": {"share": result["verdict"]["share"], "f1": result["model"]["f1"], "n_idis": result["n_idis"],
                    "n_plausible_idis": result["n_plausible_idis"], "seconds_by_step": result["seconds_by_step"]},
        "versions": result["meta"].get("versions", {}),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "fresh_clone.json").write_text(json.dumps(out, indent=2) + "\n")
    load = ", ".join(f"{x:.2f}" for x in load_start) + " → " + ", ".join(f"{x:.2f}" for x in load_end)
    md = ["# The quick start in a fresh clone (`python benchmarks/fresh_clone.py`)", "",
          f"{out['date']}, commit {commit[:7]}, Python {out['python']}, {out['cpus']} CPUs, load average {load} "
          "(shared machine); packages from a local mirror (over a network, add the wheels' download).", "",
          "| step | wall seconds | |", "|---|---|---|",
          f"| install (`{install}`) | {install_s:.1f} | venv {size} ({size_bytes / 2**30:.2f} GiB) |",
          f"| run, empty model cache (`{run}`) | {run_s:.1f} | share affected {result['verdict']['share']:.2%}, "
          f"test F1 {result['model']['f1']:.3f}, {result['n_idis']:,} IDIs |", "",
          "What the run printed:", "", "```text", proc.stdout.rstrip(), "```", ""]
    (RESULTS / "fresh_clone.md").write_text("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
