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

Writes ``benchmarks/results/certify.json`` and ``certify.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
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
    start = time.perf_counter()
    proc = subprocess.run([str(binary), str(path), str(index)], cwd=scratch, capture_output=True, text=True)
    wall = time.perf_counter() - start
    out = proc.stdout + proc.stderr
    found = re.search(r"([\d.]+) sec \| (\d+) solved subps \| (\d+) advs", out)
    rates = re.search(r"cer_rate: ([\d.]+)%, fal_rate: ([\d.]+)%, und_rate: ([\d.]+)%", out)
    row = {"dataset": data.name, "protected": protected, "values_compared": "minimum and maximum only",
           "export_max_abs_logit_difference": float(diff.max()),
           "export_max_relative_logit_difference": float((diff / np.maximum(1.0, np.abs(own))).max()),
           "export_max_probability_difference": float(p_diff.max()),
           "wall_seconds": wall, "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
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
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--fairquant", type=Path, default=None, help="FairQuant's built network_test")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    import torch

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
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "certify.json").write_text(json.dumps(results, indent=2, default=float))
    (args.out / "certify.md").write_text(markdown(results))
    print(markdown(results))


if __name__ == "__main__":
    main()
