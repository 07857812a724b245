"""Certification of the paper's DNN: how much of each domain is proven fair, falsified, undecided, and how fast.

Run by hand:  python benchmarks/certify.py [--seconds 60] [--fairquant /tmp/fairquant/FairQuant/network_test]

For each case (census sex, race and age; compas race; bank age) the paper's DNN is trained or loaded from the cache
through ``chiralfair.models.training.train_model`` on the 60/40 split (random_state 0), as the pipeline does, and
certified with ``chiralfair.certification.certify_domain`` under a wall-second budget: every protected value compared
with every other, the dataset's couplings and constraints applied (census sex: relationship Husband <-> Wife). Census
sex is also certified without the coupling (the setting FairQuant and the I&D paper use). Recorded per case: the
shares of the domain (by volume, i.e. keys) certified fair, falsified and undecided, the concrete IDIs found, the
boxes bounded, wall and CPU seconds and the load average around the run; and the truth, estimated by the
discrimination check on 200,000 uniform domain points (share of IDIs with a 95% Wilson interval).

Per person: every held-out (test) individual of census sex certified with ``certify_individuals`` (their own row is
their box: exact), the share certified unaffected and the seconds.

FairQuant (Kim, Wang, Wang, ICSE 2025), when ``--fairquant`` names its built ``network_test``: the same DNN is
exported to its ``.nnet`` format with the input standardisation folded into the first layer (outputs checked against
the model's own logits on 1,000 domain points), and FairQuant is run on it for the same protected attribute. Build
it outside this repository from its public artifact (``briankim113/FairQuant-Artifact``, folder ``FairQuant``) with
``TIMEOUT`` in ``network_test.c`` set to the same budget, e.g.::

    sed -i 's/long int TIMEOUT = 1800;/long int TIMEOUT = 60;/' network_test.c
    make all CFLAGS="-O3 -I/usr/include/x86_64-linux-gnu" LDFLAGS="-O3 -lopenblas -lm"

FairQuant compares a protected attribute's two extreme values only (its minimum and maximum), splits to depth 20 at
most, counts falsified points rather than volume, and knows no couplings or constraints; its figures are its own.

Like for like (``--parts like``, with ``--fairquant``): census sex, compas race and bank age, uncoupled, the same
exported reference network. FairQuant runs first under its compiled wall budget; its CPU seconds (user + system of
its process, ``getrusage(RUSAGE_CHILDREN)``) become chiralfair's CPU budget (``time.process_time`` of this process,
checked after every batch of boxes), once on the protected attribute's extremes only (FairQuant's setting) and once
on every value. Both are counted two ways:

- integer points: the share of the grid's keys in certified boxes (FairQuant's ``cer_rate`` counts the same way:
  its sub-problem volume is the product of ``upper - lower + 1``);
- real-valued volume: chiralfair's certified boxes kept and measured as real boxes ``[lo, hi]`` (the product of
  ``hi - lo`` over the non-constant columns) against the real box of the domain. Sound: every box is certified by
  bounds computed over its real box (IBP and CROWN, claims re-bounded in float64), a carved slab by a linear bound
  valid over the real box checked at both integer ends of the slab (the line is monotone, so the whole real slab
  is above the margin); a box decided at a single key counts 0, and the real gaps between the integer halves
  ``[lo, mid]`` and ``[mid + 1, hi]`` are never counted: a lower bound of the real volume proven fair. FairQuant
  prints no regions (its only output is the two summary lines of ``network_test.c``, also written to ``res/``),
  so its real-valued volume cannot be read from it; the table says so.

Writes ``benchmarks/results/certify.json`` and ``certify.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from chiralfair import __version__
from chiralfair.certification import certify_domain, certify_individuals, relu_network
from chiralfair.datasets import load_dataset
from chiralfair.models.training import train_model
from chiralfair.oracle import DiscriminationCheck

RESULTS = Path(__file__).resolve().parent / "results"
CASES = [("census", "sex", None), ("census", "sex", False), ("census", "race", None), ("census", "age", None),
         ("compas", "race", None), ("bank", "age", None)]
TRUTH_POINTS = 200_000


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return float(centre - half), float(centre + half)


def truth(model, domain) -> dict:
    """Share of IDIs among uniform domain points (the discrimination check, couplings and constraints applied)."""
    X = domain.sample(TRUTH_POINTS, np.random.default_rng(0))
    n_idi = int(DiscriminationCheck(model, domain).check(X).is_idi.sum())
    return {"points": TRUTH_POINTS, "idi_share": n_idi / TRUTH_POINTS, "idi_share_95": wilson(n_idi, TRUTH_POINTS)}


def certify_case(name: str, protected: str, couple, seconds: float) -> tuple[dict, object, object]:
    data = load_dataset(name, protected=[protected], couple=couple)
    trained = train_model(data, "dnn", random_state=0)
    load_before = os.getloadavg()
    cpu = time.process_time()
    result = certify_domain(trained.model, data, rows=trained.test_index, rows_name="test split",
                            max_seconds=seconds, random_state=0)
    cpu = time.process_time() - cpu
    row = {"dataset": name, "protected": protected, "coupled": bool(data.domain.coupled_columns),
           "n_combinations": result.n_combinations, "domain_keys": result.domain_volume,
           "log2_domain_keys": float(np.log2(result.domain_volume)),
           "certified": result.certified_share, "falsified": result.falsified_share,
           "undecided": result.undecided_share, "n_idis": result.n_idis, "seconds": result.seconds,
           "cpu_seconds": cpu, "boxes": result.stats["n_boxes"], "max_depth": result.stats["max_depth"],
           "stopped": result.stopped, "test_rows": dict(result.row_counts),
           "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
           "truth": truth(trained.model, data.domain)}
    print(f"{name} {protected} coupled={row['coupled']}: certified {row['certified']:.2%}, falsified "
          f"{row['falsified']:.4%}, undecided {row['undecided']:.2%} in {row['seconds']:.1f} s ({row['boxes']:,} "
          f"boxes; truth: {1 - row['truth']['idi_share']:.2%} fair)", flush=True)
    return row, trained, data


def individuals(trained, data) -> dict:
    load_before = os.getloadavg()
    people = certify_individuals(trained.model, data, trained.test_index, rows_name="test split")
    return {"dataset": data.name, "protected": list(data.domain.protected_names), **people.summary(),
            "loadavg_before": load_before, "loadavg_after": os.getloadavg()}


# ------------------------------------------------------------------ FairQuant, on the same exported network
def write_nnet(network, domain, path: Path) -> None:
    """The network in the .nnet text format (ReluVal/FairQuant): sizes, input bounds, then weights and biases."""
    sizes = network.widths
    lines = [f"// {domain.names} (chiralfair export; standardisation folded into layer 1)",
             f"{len(network.weights)},{sizes[0]},{sizes[-1]},{max(sizes)},",
             ",".join(map(str, sizes)) + ",", "0,",
             ",".join(str(int(v)) for v in domain.lower) + ",", ",".join(str(int(v)) for v in domain.upper) + ",",
             ",".join(["0"] * (sizes[0] + 1)) + ",",
             ",".join([str(int(v)) for v in domain.upper - domain.lower] + ["1"]) + ","]
    for w, b in zip(network.weights, network.biases, strict=True):
        lines += [",".join(f"{x:.9g}" for x in row) + "," for row in w]
        lines += [f"{x:.9g}," for x in b]
    path.write_text("\n".join(lines) + "\n")


def read_nnet_logit(path: Path, X: np.ndarray) -> np.ndarray:
    """The logit of the .nnet file, read back and computed in float32 as FairQuant reads it (atof into float)."""
    rows = [line for line in path.read_text().splitlines() if not line.startswith("//")]
    n_layers = int(rows[0].split(",")[0])
    sizes = [int(v) for v in rows[1].strip(",").split(",")]
    values = rows[7:]
    h = X.astype(np.float32)
    at = 0
    for k in range(n_layers):
        w = np.array([[float(v) for v in values[at + i].strip(",").split(",")] for i in range(sizes[k + 1])],
                     dtype=np.float32)
        at += sizes[k + 1]
        b = np.array([float(values[at + i].strip(",")) for i in range(sizes[k + 1])], dtype=np.float32)
        at += sizes[k + 1]
        h = h @ w.T + b
        if k < n_layers - 1:
            h = np.maximum(h, 0)
    return h[:, 0].astype(np.float64)


def fairquant(binary: Path, trained, data, protected: str) -> dict:
    domain = data.domain
    network = relu_network(trained.model, domain)
    X = domain.sample(1000, np.random.default_rng(1))
    import torch

    with torch.inference_mode():
        module = trained.model.estimator
        own = module.logit(torch.as_tensor(X, dtype=torch.float32))[:, 0].double().numpy()
    scratch = Path(tempfile.mkdtemp(prefix="fairquant-"))
    (scratch / "res").mkdir()
    path = scratch / f"{data.name}-{protected}.nnet"
    write_nnet(network, domain, path)
    exported = read_nnet_logit(path, X)
    diff = np.abs(exported - own)
    p_diff = np.abs(1 / (1 + np.exp(-exported)) - 1 / (1 + np.exp(-own)))
    index = domain.index(protected)
    load_before = os.getloadavg()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([str(binary), str(path), str(index)], cwd=scratch, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - children.ru_utime) + (after.ru_stime - children.ru_stime)
    out = proc.stdout + proc.stderr
    found = re.search(r"([\d.]+) sec \| (\d+) solved subps \| (\d+) advs", out)
    rates = re.search(r"cer_rate: ([\d.]+)%, fal_rate: ([\d.]+)%, und_rate: ([\d.]+)%", out)
    row = {"dataset": data.name, "protected": protected, "values_compared": "minimum and maximum only",
           "export_max_abs_logit_difference": float(diff.max()),
           "export_max_relative_logit_difference": float((diff / np.maximum(1.0, np.abs(own))).max()),
           "export_max_probability_difference": float(p_diff.max()),
           "wall_seconds": wall, "cpu_seconds": cpu, "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
           "stopped_by": "timeout" if "timeout" in out else "depth 20 or complete"}
    if found and rates:
        row.update(seconds=float(found.group(1)), subproblems=int(found.group(2)), advs=int(found.group(3)),
                   certified=float(rates.group(1)) / 100, falsified=float(rates.group(2)) / 100,
                   undecided=float(rates.group(3)) / 100)
    else:
        row["output"] = out[-2000:]
    print(f"FairQuant {data.name} {protected}: {row.get('certified', float('nan')):.2%} certified in "
          f"{row.get('seconds', float('nan')):.1f} s", flush=True)
    return row


# ------------------------------------------------------------------ like for like, at equal CPU seconds
LIKE_CASES = [("census", "sex"), ("compas", "race"), ("bank", "age")]


class _CpuBudget:
    """``on_progress`` of the branch and bound: stops it (as an interrupt does, keeping what was proved) once this
    process has used ``seconds`` of CPU since it was made."""

    def __init__(self, seconds: float):
        self.seconds, self.start, self.hit = seconds, time.process_time(), False

    def __call__(self, progress: dict) -> None:
        if time.process_time() - self.start >= self.seconds:
            self.hit = True
            raise KeyboardInterrupt


def real_volume_share(boxes, lo0: np.ndarray, hi0: np.ndarray) -> float:
    """The certified boxes' real volume (boxes ``[lo, hi]`` as real boxes) over the real domain's, as a share."""
    varying = (hi0 > lo0).any(axis=0)
    domain = float(np.prod((hi0 - lo0)[:, varying].astype(np.float64), axis=1).sum())
    total = 0.0
    for b_lo, b_hi, verdict in boxes:
        keep = verdict == 1  # CERTIFIED
        if keep.any():
            widths = (b_hi[keep] - b_lo[keep])[:, varying].astype(np.float64)
            total += float(np.prod(widths, axis=1).sum())
    return total / domain


def ours_at_cpu(trained, data, cpu_seconds: float) -> dict:
    """chiralfair's branch and bound on ``data``'s domain for ``cpu_seconds`` of this process's CPU."""
    from chiralfair.certification.branch_and_bound import CERTIFIED, BranchAndBound
    from chiralfair.certification.key_space import KeySpace

    domain = data.domain
    read = relu_network(trained.model, domain, rng=np.random.default_rng(0))
    space = KeySpace(domain)
    lo, hi, outside = space.domain_boxes()
    check = DiscriminationCheck(trained.model, domain)
    engine = BranchAndBound(max_seconds=None)
    budget = _CpuBudget(cpu_seconds)
    load_before = os.getloadavg()
    wall, cpu = time.perf_counter(), time.process_time()
    tally = engine.run(read, space, check, lo, hi, on_progress=budget, keep_boxes=True)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    keys = float(space.volume(lo, hi).sum())
    return {"values": [int(v) for v in domain.protected_values[0]], "n_combinations": space.n_combinations,
            "log2_keys": float(np.log2(keys)), "certified_points": float(tally.certified.sum()) / keys,
            "falsified_points": float(tally.falsified.sum()) / keys,
            "certified_real_volume": real_volume_share(
                [(b_lo, b_hi, np.where(v == CERTIFIED, 1, 0)) for b_lo, b_hi, v in tally.boxes], lo, hi),
            "boxes": int(tally.stats["n_boxes"]), "n_idis": int(sum(len(a) for a in tally.idis)),
            "cpu_seconds": cpu, "wall_seconds": wall, "cpu_budget": cpu_seconds,
            "stopped": "CPU budget" if budget.hit else tally.stats["stopped"],
            "loadavg_before": load_before, "loadavg_after": os.getloadavg()}


def like_for_like(binary: Path) -> list[dict]:
    rows = []
    for name, protected in LIKE_CASES:
        data = load_dataset(name, protected=[protected], couple=False)
        trained = train_model(data, "dnn", random_state=0)
        fq = fairquant(binary, trained, data, protected)
        index = data.domain.index(protected)
        extremes = [int(data.domain.lower[index]), int(data.domain.upper[index])]
        budget = fq["cpu_seconds"]
        ext = ours_at_cpu(trained, data.with_protected([protected], values={protected: extremes}), budget)
        every = ours_at_cpu(trained, data, budget)
        row = {"dataset": name, "protected": protected, "network": getattr(trained, "network", None),
               "fairquant": fq, "ours_extremes": ext, "ours_every_value": every}
        print(f"{name} {protected}: FairQuant {fq.get('certified', float('nan')):.2%} in {budget:.1f} CPU s; ours "
              f"(extremes) {ext['certified_points']:.2%} points, {ext['certified_real_volume']:.2%} real volume; "
              f"ours (every value) {every['certified_points']:.2%}", flush=True)
        rows.append(row)
    return rows


def markdown(results: dict) -> str:
    lines = ["# Certification of the paper's DNN (`benchmarks/certify.py`)", "",
             f"{results['date']}, chiralfair {results['versions']['chiralfair']}, torch "
             f"{results['versions']['torch']}, {results['cpu_count']} CPUs shared with other jobs; budget "
             f"{results['seconds']:g} s per case. Shares of "
             "the domain by volume (keys); every protected value compared with every other; 'truth' is the share of "
             f"{TRUTH_POINTS:,} uniform domain points that the discrimination check finds fair.", "",
             "| case | coupled | combinations | log2 keys | certified | falsified | undecided | IDIs found | boxes | "
             "seconds | CPU s | truth: fair | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results["cases"]:
        fair = 1 - r["truth"]["idi_share"]
        lines.append(f"| {r['dataset']} {r['protected']} | {'yes' if r['coupled'] else 'no'} | "
                     f"{r['n_combinations']} | {r['log2_domain_keys']:.1f} | {r['certified']:.2%} | "
                     f"{r['falsified']:.4%} | {r['undecided']:.2%} | {r['n_idis']:,} | {r['boxes']:,} | "
                     f"{r['seconds']:.1f} | {r['cpu_seconds']:.1f} | {fair:.2%} | "
                     f"{r['loadavg_before'][0]:.1f}-{r['loadavg_after'][0]:.1f} |")
    p = results["individuals"]
    lines += ["", f"Per person ({p['dataset']} {', '.join(p['protected'])}, {p['n_individuals']:,} test individuals, "
              f"each their own box): {p['certified_unaffected']:.2%} certified unaffected, {p['affected']:.2%} "
              f"affected, {p['undecided']:.2%} undecided, in {p['seconds']:.2f} s (load "
              f"{p['loadavg_before'][0]:.1f}-{p['loadavg_after'][0]:.1f})."]
    if results.get("fairquant"):
        lines += ["", "FairQuant (its own artifact, built outside the repository, the same exported network, the same "
                  "budget; its figures, counted its way: extremes of the protected attribute only, falsified = "
                  "points):", "", "| case | certified | falsified | undecided | seconds | sub-problems | export max "
                  "logit / probability diff | load |", "|---|---|---|---|---|---|---|---|"]
        for r in results["fairquant"]:
            if "certified" not in r:
                lines.append(f"| {r['dataset']} {r['protected']} | did not report | | | | | | |")
                continue
            lines.append(f"| {r['dataset']} {r['protected']} | {r['certified']:.2%} | {r['falsified']:.2%} | "
                         f"{r['undecided']:.2%} | {r['seconds']:.1f} | {r['subproblems']:,} | "
                         f"{r['export_max_abs_logit_difference']:.1e} / {r['export_max_probability_difference']:.1e} | "
                         f"{r['loadavg_before'][0]:.1f}-"
                         f"{r['loadavg_after'][0]:.1f} |")
    if results.get("like_for_like"):
        lines += like_markdown(results["like_for_like"], results.get("like_for_like_date", ""),
                               results.get("fairquant_binary", "/tmp/fairquant/FairQuant/network_test"))
    return "\n".join(lines) + "\n"


def like_markdown(rows: list[dict], date: str, binary: str = "/tmp/fairquant/FairQuant/network_test") -> list[str]:
    lines = ["", "## Like for like: the same exported network, uncoupled, at equal CPU seconds", "",
             f"Measured by `python benchmarks/certify.py --fairquant {binary}` (FairQuant built by "
             f"`benchmarks/fairquant/build.sh`, its TIMEOUT 60 s) ({date}). "
             "FairQuant runs first under its compiled wall budget; the CPU seconds it got (its process, "
             "user + system, getrusage of the child) are chiralfair's CPU budget (this process's `time.process_time`, "
             "checked after every batch of boxes), on the attribute's extremes (FairQuant's setting) and on every "
             "value. Certified shares counted as integer points (keys; FairQuant's `cer_rate` counts the same way) "
             "and as real-valued volume (chiralfair: its certified boxes as real boxes `[lo, hi]`, single keys and "
             "the gaps between integer halves counted 0: a sound lower bound; FairQuant prints no regions, so its "
             "real volume cannot be read).", "",
             "| case | tool | values compared | CPU s | wall s | certified: integer points | certified: real volume "
             "| falsified (points) | stopped | load |", "|---|---|---|---:|---:|---:|---:|---:|---|---|"]
    verdicts = []
    for r in rows:
        fq, ext, every = r["fairquant"], r["ours_extremes"], r["ours_every_value"]
        case = f"{r['dataset']} {r['protected']}"
        fq_cert = fq.get("certified")
        lines.append(f"| {case} | FairQuant | extremes | {fq['cpu_seconds']:.1f} | {fq['wall_seconds']:.1f} | "
                     + (f"{fq_cert:.2%} | not printed | {fq['falsified']:.2%} (points)" if fq_cert is not None
                        else "did not report | | ") + f" | {fq['stopped_by']} | "
                     f"{fq['loadavg_before'][0]:.1f}-{fq['loadavg_after'][0]:.1f} |")
        for label, o in (("extremes", ext), ("every value", every)):
            lines.append(f"| {case} | chiralfair | {label} ({len(o['values'])} values) | {o['cpu_seconds']:.1f} | "
                         f"{o['wall_seconds']:.1f} | {o['certified_points']:.2%} | {o['certified_real_volume']:.2%} | "
                         f"{o['falsified_points']:.4%} | {o['stopped']} | "
                         f"{o['loadavg_before'][0]:.1f}-{o['loadavg_after'][0]:.1f} |")
        if fq_cert is None:
            verdicts.append(f"{case}: FairQuant reported nothing; no comparison.")
        else:
            ahead = ext["certified_points"] > fq_cert
            verdicts.append(f"{case}: at equal CPU seconds on FairQuant's setting, chiralfair "
                            f"{'is ahead' if ahead else 'is NOT ahead'} on integer points "
                            f"({ext['certified_points']:.2%} against {fq_cert:.2%}); real volume: chiralfair "
                            f"{ext['certified_real_volume']:.2%}, FairQuant not printed.")
    lines += ["", *[f"- {v}" for v in verdicts]]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--fairquant", type=Path, default=None, help="FairQuant's built network_test")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--parts", nargs="+", default=["domain", "like"], choices=["domain", "like"],
                        help="domain: the six cases, per person and FairQuant at the same wall budget; like: the "
                             "like-for-like comparison at equal CPU seconds (needs --fairquant). A part not run is "
                             "kept from the existing certify.json.")
    args = parser.parse_args()
    import torch

    if "domain" not in args.parts:
        results = json.loads((args.out / "certify.json").read_text())
        if "like" in args.parts and args.fairquant is not None:
            results["like_for_like"] = like_for_like(args.fairquant)
            results["like_for_like_date"] = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
            results["fairquant_binary"] = str(args.fairquant)
        (args.out / "certify.json").write_text(json.dumps(results, indent=2, default=float))
        (args.out / "certify.md").write_text(markdown(results))
        print(markdown(results))
        return

    results = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "seconds": args.seconds,
               "cpu_count": os.cpu_count(), "versions": {"chiralfair": __version__, "torch": torch.__version__,
                                                         "python": platform.python_version(),
                                                         "numpy": np.__version__},
               "cases": [], "fairquant": []}
    census_sex = None
    for name, protected, couple in CASES:
        row, trained, data = certify_case(name, protected, couple, args.seconds)
        results["cases"].append(row)
        if (name, protected, couple) == ("census", "sex", None):
            census_sex = (trained, data)
        if args.fairquant is not None and couple is None:
            results["fairquant"].append(fairquant(args.fairquant, trained, data, protected))
    results["individuals"] = individuals(*census_sex)
    if "like" in args.parts and args.fairquant is not None:
        results["like_for_like"] = like_for_like(args.fairquant)
        results["like_for_like_date"] = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        results["fairquant_binary"] = str(args.fairquant)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "certify.json").write_text(json.dumps(results, indent=2, default=float))
    (args.out / "certify.md").write_text(markdown(results))
    print(markdown(results))


if __name__ == "__main__":
    main()
