"""Throughput of the black-box generators (AEQUITAS variants, THEMIS) at max_global = max_local = 1000.

Run by hand: ``python benchmarks/black_box_generators.py [--repeats N] [--threads T]``. Writes
``benchmarks/results/black_box_generators.json`` and ``.md``.

Two models, both torch modules with known structure (no data needed):

- ``toy``: the biased toy of ``tests/toys.py`` (IDI iff 8 <= a + b <= 10), on sex and on sex + race. Its
  domain has only 1,500 (500) non-protected keys, so 1000 x 1000 saturates it: the figures measure overhead,
  not search power.
- ``census-shaped``: a fixed random MLP 13-30-20-15-10-5-1 over the 13 census bounds of ADF's config, with a
  sex term; large enough that no generator saturates it.

For each model and generator: median over repeats of seconds, IDIs/s, IDIs per 1,000 queries, queries.
Seeds are 1000 uniform draws from the domain (the ``random`` strategy), the same for every generator.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
from pathlib import Path

import numpy as np
import torch

import chiralfair
from chiralfair.domain import Domain, Feature
from chiralfair.generators import make_generator
from chiralfair.models import as_model

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE.parent / "tests"))
from toys import biased_module, toy_domain  # noqa: E402

GENERATORS = ("aequitas", "aequitas-semi", "aequitas-random", "themis")
CENSUS_BOUNDS = {"age": (1, 9), "workclass": (0, 7), "fnlwgt": (0, 39), "education": (0, 15),
                 "marital": (0, 6), "occupation": (0, 13), "relationship": (0, 5), "race": (0, 4),
                 "sex": (0, 1), "capital_gain": (0, 99), "capital_loss": (0, 39), "hours": (0, 99),
                 "native_country": (0, 39)}


class CensusShaped(torch.nn.Module):
    """sigmoid(3 * standardised MLP(x / hi) + 0.4 * sex - 0.2), standardised once on 20,000 domain draws."""

    def __init__(self, domain: Domain, seed: int = 0):
        super().__init__()
        torch.manual_seed(seed)
        widths = [13, 30, 20, 15, 10, 5, 1]
        layers = []
        for a, b in zip(widths[:-1], widths[1:], strict=True):
            layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
        self.mlp = torch.nn.Sequential(*layers[:-1])
        self.register_buffer("scale", torch.tensor(domain.upper, dtype=torch.float32))
        self.sex = domain.index("sex")
        with torch.no_grad():
            z = self.mlp(torch.tensor(domain.sample(20_000, np.random.default_rng(seed)), dtype=torch.float32)
                         / self.scale)
        self.offset, self.spread = float(z.median()), float(z.std())

    def forward(self, x):
        z = (self.mlp(x / self.scale) - self.offset) / self.spread
        return torch.sigmoid(3 * z + 0.4 * x[:, self.sex:self.sex + 1] - 0.2)


def cases():
    """(label, domain, module) of every benchmarked model."""
    census = Domain(tuple(Feature(n, lo, hi) for n, (lo, hi) in CENSUS_BOUNDS.items()))
    census = census.with_protected(["sex"])
    return [("toy sex", toy_domain(("sex",)), biased_module()),
            ("toy sex+race", toy_domain(("sex", "race")), biased_module()),
            ("census-shaped sex", census, CensusShaped(census))]


def measure(name, domain, module, seeds, repeats):
    runs = [make_generator(name, max_global=1000, max_local=1000).run(as_model(module), domain, seeds,
                                                                      random_state=r) for r in range(repeats)]
    r = runs[0]
    return {"generator": name, "n_idis": r.n_idis, "n_global": r.n_global, "n_local": r.n_local,
            "n_tested": r.n_tested, "n_queries": r.n_queries,
            "query_budget": make_generator(name, max_global=1000, max_local=1000).query_budget(
                len(seeds), len(domain.combinations)),
            "seconds": statistics.median(x.seconds for x in runs),
            "idis_per_second": statistics.median(x.n_idis / x.seconds for x in runs),
            "idis_per_1000_queries": 1000 * r.n_idis / r.n_queries, "success_rate": r.success_rate}


def write_markdown(doc, path):
    lines = ["# Black-box generators (AEQUITAS, THEMIS), 1000 seeds x 1000 local", "",
             f"{doc['date']}, {doc['cpu_count']} CPUs, torch threads {doc['torch_threads']}. "
             f"Median of {doc['repeats']} runs. Seeds: 1000 uniform draws from the domain.", "",
             "| model | generator | IDIs | global | local | tested | queries | budget | s | IDIs/s "
             "| IDIs/1000 q |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in doc["rows"]:
        lines.append(f"| {row['model']} | {row['generator']} | {row['n_idis']:,} | {row['n_global']:,} | "
                     f"{row['n_local']:,} | {row['n_tested']:,} | {row['n_queries']:,} | "
                     f"{row['query_budget']:,} | {row['seconds']:.2f} | {row['idis_per_second']:,.0f} | "
                     f"{row['idis_per_1000_queries']:.1f} |")
    path.write_text("\n".join(lines) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (1 is fastest for small "
                    "batches on a shared machine)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    rows = []
    for label, domain, module in cases():
        seeds = domain.sample(1000, np.random.default_rng(0))
        for name in GENERATORS:
            row = {"model": label, **measure(name, domain, module, seeds, args.repeats)}
            print(row)
            rows.append(row)
    doc = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "repeats": args.repeats,
           "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
           "loadavg_at_end": list(os.getloadavg()),
           "machine": platform.machine(),
           "versions": {"python": platform.python_version(), "numpy": np.__version__,
                        "torch": torch.__version__, "chiralfair": chiralfair.__version__},
           "parameters": {"max_global": 1000, "max_local": 1000, "n_seeds": 1000, "seed_rng": 0},
           "rows": rows}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "black_box_generators.json").write_text(json.dumps(doc, indent=2))
    write_markdown(doc, RESULTS / "black_box_generators.md")
    print(f"wrote {RESULTS / 'black_box_generators.json'} and .md")


if __name__ == "__main__":
    main()
