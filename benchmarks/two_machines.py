"""The README's quick start under other CPU kernels and thread counts: the closest evidence one machine gives for
"identical on two machines".

Run by hand from the repository root, with the benchmark data home set:

    CHIRALFAIR_DATA=../shared/data python benchmarks/two_machines.py

One machine cannot be two, but two machines differ in a few known ways that reach a network's outputs: the CPU
kernels torch dispatches to (``ATEN_CPU_CAPABILITY``: ``default`` (no vector units), ``avx2``, or the machine's
best, unset) and the number of threads of torch's and the BLAS libraries' pools (``OMP_NUM_THREADS``,
``MKL_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``). Every combination of those (3 kernels x 1 or 2 threads) runs the
README's first command's job (``chiralfair run ...`` as the README writes it, read from it) twice, each in a new
process with a new, empty model cache:

- **printed**: the command itself (``python -m chiralfair run ...``). Every printed line but the timings (the
  ``seconds`` line) is compared with the first setting's, and with the output the README quotes.
- **outputs**: the same command run in-process by the command-line app with torch's module hooks recording every
  row each network was given and the network's output for it; here the model calls' own one-thread pin
  (:func:`chiralfair.models.threads.single_intra_op_thread`) is raised to the setting's thread count
  (:func:`~chiralfair.models.threads.thread_limit`), so that 2 really means two intra-op threads. Its printed lines
  are compared as well.

The margin: over the rows the quick start queries (each network's distinct input rows), the largest
``|P(setting) - P(first setting)|`` of the network's output, against the smallest distance of any queried output
from the decision threshold (0.5): a label can change on another CPU only where the first exceeds the second.

What this does not cover: another CPU model (other instruction timings do not change results, other kernels do,
and those are what ``ATEN_CPU_CAPABILITY`` selects), another operating system, libm or torch build (the README pins
torch 2.13.0, CPU build). Writes ``benchmarks/results/two_machines.json`` (every setting's printed lines, its
kernel and threads as the process reported them, the margins, wall and CPU seconds, load) and ``two_machines.md``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fresh_clone import quick_start_command, split_command  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
KERNELS = ("best", "avx2", "default")  # best: ATEN_CPU_CAPABILITY unset, torch picks the machine's best
THREADS = (1, 2)
TIMING = re.compile(r"^\s*seconds\s")

# Runs the command-line app in this process with hooks on every torch module's forward: each root call's input
# rows and output are kept per network, and written to an .npz named by the network's reference name.
HOOKED = r"""
import sys, json
import numpy as np
import torch
from chiralfair.models.threads import thread_limit
from chiralfair.models.reference import load_reference, reference_networks

out_path, threads, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
depth, calls = [0], {}

def pre(module, args):
    depth[0] += 1

def post(module, args, output):
    depth[0] -= 1
    if depth[0] == 0 and isinstance(args[0], torch.Tensor):
        calls.setdefault(id(module), (module, [], []))
        calls[id(module)][1].append(args[0].detach().double().cpu().numpy())
        calls[id(module)][2].append(output.detach().double().cpu().numpy().reshape(len(args[0]), -1))

torch.nn.modules.module.register_module_forward_pre_hook(pre)
torch.nn.modules.module.register_module_forward_hook(post)
from chiralfair.cli import app
with thread_limit(threads):
    try:
        app(argv, prog_name="chiralfair")
    except SystemExit as stop:
        if stop.code not in (0, None):
            raise
names = {}
for ref in reference_networks():
    state = {k: v.detach() for k, v in load_reference(ref).state_dict().items()}
    for key, (module, _, _) in calls.items():
        mine = module.state_dict()
        if mine.keys() == state.keys() and all(torch.equal(mine[k].cpu(), state[k]) for k in state):
            names[key] = ref.name
arrays, meta = {}, {"capability": torch.backends.cpu.get_cpu_capability(), "torch_threads": threads}
for key, (module, xs, ps) in calls.items():
    name = names.get(key, f"other {type(module).__name__} #{len(arrays) // 2}")
    out = np.concatenate(ps)
    arrays[name + "/x"] = np.concatenate(xs)
    arrays[name + "/p"] = out[:, 1] if out.shape[1] == 2 else out[:, 0]
np.savez(out_path, **arrays)
print("HOOKED " + json.dumps(meta), file=sys.stderr)
"""


def run_arguments() -> list[str]:
    """The arguments of the README's first command after ``chiralfair``."""
    _, run = split_command(quick_start_command())
    words = shlex.split(run)
    return words[next(i for i, w in enumerate(words) if w.endswith("chiralfair")) + 1:]


def readme_output() -> list[str]:
    """The lines the README says the first command prints (its first ``text`` block)."""
    text = (ROOT / "README.md").read_text()
    block = text.split("```text\n", 1)[1].split("```", 1)[0]
    return block.rstrip("\n").splitlines()


def compared(lines: list[str]) -> list[str]:
    return [line for line in lines if not TIMING.match(line)]


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def setting_env(kernel: str, threads: int, cache: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY",)}
    if kernel != "best":
        env["ATEN_CPU_CAPABILITY"] = kernel
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[name] = str(threads)
    env["CHIRALFAIR_CACHE"] = str(cache)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    return env


def capability(env: dict) -> dict:
    code = ("import json, torch; print(json.dumps({'capability': torch.backends.cpu.get_cpu_capability(), "
            "'torch_threads': torch.get_num_threads()}))")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def one_run(command: list[str], cwd: Path, env: dict) -> dict:
    cpu, t = cpu_of_children(), time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t, cpu_of_children() - cpu
    if proc.returncode != 0:
        raise RuntimeError(f"{command[:3]} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return {"lines": proc.stdout.rstrip("\n").splitlines(), "wall_seconds": wall, "cpu_seconds": cpu,
            "stderr_tail": proc.stderr[-500:]}


def distinct(x: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Each distinct row once (sorted) with its output, and the largest output spread over a row's repeats."""
    rows, first, inverse = np.unique(x, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    spread = np.zeros(len(rows))
    np.maximum.at(spread, inverse, np.abs(p - p[first][inverse]))
    return rows, p[first], float(spread.max(initial=0.0))


def main() -> None:
    data_home = Path(os.environ.get("CHIRALFAIR_DATA", ROOT.parent / "shared" / "data")).resolve()
    args = run_arguments()
    load_before = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    t_all, cpu_all = time.perf_counter(), cpu_of_children()
    settings = []
    with tempfile.TemporaryDirectory(prefix="two-machines-") as tmp:
        base = Path(tmp)
        for kernel in KERNELS:
            for threads in THREADS:
                tag = f"{kernel}-{threads}"
                (base / tag).mkdir()
                env = setting_env(kernel, threads, base / tag / "cache-printed")
                env["CHIRALFAIR_DATA"] = str(data_home)
                reported = capability(env)
                printed = one_run([sys.executable, "-m", "chiralfair", *args], base / tag, env)
                hooked_env = {**env, "CHIRALFAIR_CACHE": str(base / tag / "cache-hooked")}
                hooked_args = [a if a != "runs/census-sex" else "runs/hooked" for a in args]
                hooked = one_run([sys.executable, "-c", HOOKED, str(base / tag / "outputs.npz"), str(threads),
                                  *hooked_args], base / tag, hooked_env)
                hooked["lines"] = [line.replace("runs/hooked", "runs/census-sex") for line in hooked["lines"]]
                with np.load(base / tag / "outputs.npz") as npz:
                    outputs = {k: npz[k] for k in npz.files}
                settings.append({"kernel": kernel, "threads": threads, "reported": reported,
                                 "printed": printed, "hooked": hooked, "outputs": outputs})
                print(f"{tag}: {reported}, printed {printed['wall_seconds']:.1f} s, hooked "
                      f"{hooked['wall_seconds']:.1f} s", flush=True)
    wall, cpu = time.perf_counter() - t_all, cpu_of_children() - cpu_all
    load_after = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()

    first = settings[0]
    reference_lines = compared(first["printed"]["lines"])
    readme = compared(readme_output())
    for s in settings:
        for part in ("printed", "hooked"):
            lines = compared(s[part]["lines"])
            s[part]["same_as_first"] = lines == reference_lines
            s[part]["differing_lines"] = [[a, b] for a, b in zip(reference_lines, lines, strict=False) if a != b]
            s[part]["n_lines"] = len(lines)
    readme_diff = [[a, b] for a, b in zip(readme, reference_lines, strict=False) if a != b]

    networks = sorted({k.split("/")[0] for k in first["outputs"]})
    margins = {}
    for name in networks:
        rows0, p0, spread0 = distinct(first["outputs"][name + "/x"], first["outputs"][name + "/p"])
        distance = np.abs(p0 - 0.5)
        worst, flips, spread, missing = 0.0, 0, spread0, 0
        for s in settings[1:]:
            rows, p, own_spread = distinct(s["outputs"][name + "/x"], s["outputs"][name + "/p"])
            spread = max(spread, own_spread)
            if rows.shape != rows0.shape or not np.array_equal(rows, rows0):
                missing += 1  # the settings queried other rows: compare on the rows both queried
                both, i0, i1 = _common(rows0, rows)
                d = np.abs(p[i1] - p0[i0])
                flips += int(((p[i1] > 0.5) != (p0[i0] > 0.5)).sum())
            else:
                d = np.abs(p - p0)
                flips += int(((p > 0.5) != (p0 > 0.5)).sum())
            worst = max(worst, float(d.max(initial=0.0)))
        margins[name] = {"rows_queried": int(len(first["outputs"][name + "/x"])), "distinct_rows": int(len(rows0)),
                         "max_abs_delta_p": worst, "min_distance_to_threshold": float(distance.min()),
                         "rows_within_1e-6_of_threshold": int((distance < 1e-6).sum()),
                         "label_changes": flips, "settings_with_other_rows": missing,
                         "max_spread_same_row_same_setting": spread}
    for s in settings:
        del s["outputs"]
    record = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "command": ["chiralfair", *args],
              "settings": settings, "readme_differing_lines": readme_diff, "margins": margins,
              "wall_seconds": wall, "cpu_seconds_children": cpu, "uptime_before": load_before,
              "uptime_after": load_after, "cpu_count": os.cpu_count(), "cpu_model": _cpu_model(),
              "versions": {"python": platform.python_version(), "torch": _torch_version(), "numpy": np.__version__}}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "two_machines.json").write_text(json.dumps(record, indent=1, default=str))
    (RESULTS / "two_machines.md").write_text(markdown(record))
    print(markdown(record))


def _common(a: np.ndarray, b: np.ndarray):
    """Rows in both sorted row sets, and their indices in each."""
    keys_a = {r.tobytes(): i for i, r in enumerate(a)}
    pairs = [(keys_a[r.tobytes()], j) for j, r in enumerate(b) if r.tobytes() in keys_a]
    i0 = np.array([p[0] for p in pairs], dtype=np.int64)
    i1 = np.array([p[1] for p in pairs], dtype=np.int64)
    return len(pairs), i0, i1


def _cpu_model() -> str:
    try:
        return next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor()


def _torch_version() -> str:
    import torch

    return torch.__version__


def markdown(record: dict) -> str:
    lines = ["# The quick start under other CPU kernels and thread counts (one machine)", "",
             f"Written by `CHIRALFAIR_DATA=../shared/data python benchmarks/two_machines.py` on {record['date']}: "
             f"`{' '.join(record['command'])}`, each setting in new processes with a new, empty model cache. "
             f"{record['cpu_count']} CPUs ({record['cpu_model']}); torch {record['versions']['torch']}, python "
             f"{record['versions']['python']}. Load: before `{record['uptime_before']}`; after "
             f"`{record['uptime_after']}`. All runs {record['wall_seconds']:.0f} s wall, "
             f"{record['cpu_seconds_children']:.0f} CPU s (the child processes, user + system, getrusage).", "",
             "What it is: the closest evidence one machine gives. Two machines differ in the CPU kernels torch "
             "dispatches to and in thread counts; both are varied here. Not covered: another operating system, "
             "libm or torch build.", "",
             "## Printed lines (all but the `seconds` line)", "",
             "| kernel asked | kernel torch reported | threads (env; hooked: model calls too) | printed: same as first "
             "| hooked: same as first | lines compared | wall s (printed / hooked) | CPU s (printed / hooked) |",
             "|---|---|---:|---|---|---:|---|---|"]
    for s in record["settings"]:
        p, h = s["printed"], s["hooked"]
        lines.append(f"| {s['kernel']} | {s['reported']['capability']} | {s['threads']} | "
                     f"{'yes' if p['same_as_first'] else 'NO'} | {'yes' if h['same_as_first'] else 'NO'} | "
                     f"{p['n_lines']} | {p['wall_seconds']:.1f} / {h['wall_seconds']:.1f} | "
                     f"{p['cpu_seconds']:.1f} / {h['cpu_seconds']:.1f} |")
    differing = [(s["kernel"], s["threads"], part, d) for s in record["settings"] for part in ("printed", "hooked")
                 for d in s[part]["differing_lines"]]
    lines += [""]
    if differing:
        lines += ["Lines that differ from the first setting's:", ""]
        lines += [f"- {k}/{t} {part}: `{a}` vs `{b}`" for k, t, part, (a, b) in differing]
    else:
        lines.append("Every compared line is the same in every setting.")
    lines += ["", "Against the output the README quotes (its `text` block, timings aside): "
              + ("the same." if not record["readme_differing_lines"] else
                 f"{len(record['readme_differing_lines'])} lines differ:"), ""]
    lines += [f"- README `{a}` vs here `{b}`" for a, b in record["readme_differing_lines"]]
    lines += ["", "## The margin: can a label flip on another CPU?", "",
              "Over every row the quick start sent to each network (its distinct rows), the largest change of the "
              "network's output P between any setting and the first, against the smallest distance of any of "
              "those outputs from the threshold 0.5. A label can change only where the first is at least the "
              "second.", "",
              "| network | rows sent | distinct rows | largest abs ΔP across settings | smallest abs(P - 0.5) | "
              "label changes | largest ΔP of one row sent twice in one setting |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for name, m in record["margins"].items():
        lines.append(f"| {name} | {m['rows_queried']:,} | {m['distinct_rows']:,} | {m['max_abs_delta_p']:.3g} | "
                     f"{m['min_distance_to_threshold']:.3g} | {m['label_changes']} | "
                     f"{m['max_spread_same_row_same_setting']:.3g} |")
    lines += ["", "`other ...` rows: modules whose weights are not a reference network's as loaded (the seed "
              "clustering's SHAP explainer probes a copy of the chiral model with one row and runs a view of it over "
              "its background rows); their outputs feed attributions, not labels.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
