"""Counterparts that could exist: IDIs, plausible IDIs and the share affected, coupled and uncoupled.

Run by hand from the repository root (data and model cache from CHIRALFAIR_DATA / CHIRALFAIR_CACHE):

    python benchmarks/counterparts.py                   # census sex and the raw Adult CSV, dnn and lr, both configs
    python benchmarks/counterparts.py --configs quick --models lr

Targets, each with protected attribute ``sex``, in three settings: ``uncoupled`` (the naive flip, the I&D paper's),
``coupled`` (relationship Husband <-> Wife changes with sex, census's default) and ``coupled+rules`` (the coupling
plus the two rules the data suggests, ``sex=Female excludes relationship=Husband`` and ``sex=Male excludes
relationship=Wife``, so that the search proposes no impossible person either):

- ``census``: the benchmark (``load_dataset("census", couple=None / False)``);
- ``adult-raw``: the user's path, the raw ``adult.data`` read with pandas and encoded by ``from_frame`` (raw
  labels, our own bins for the numeric columns, ``education-num`` kept), the coupling declared with
  ``couple={"sex": {"relationship": {"Husband": "Wife", "Wife": "Husband"}}}``.

Models: the zoo's ``dnn`` (the paper's) and ``lr``, trained once on the 60% split (``random_state=0``, cached).
Configs: ``quick`` = the README's quick start (I&D seeds, AEQUITAS, 100 / 100) and ``eidig`` = I&D seeds,
EIDIG-INF, 1000 / 1000. For each run: ``n_idis``, ``n_plausible_idis``, the share of pairs with a side that cannot
exist (a female husband or a male wife on the IDI's or the counterpart's side: counted directly from the pairs,
independently of the plausibility rule), the share on the counterpart's side, and the verdict over the model's test
split (exact): share affected through any counterpart and through plausible ones, and the share affected among
husbands and wives and among everyone else (a direct forward pass over the coupled or uncoupled counterparts).
Seconds are wall seconds on a shared machine.

Overhead: the discrimination check plus the keys of 20,000 census rows (a batch of 40,000 model rows) with the
LR model, coupled against uncoupled, and with the two rules (their repair and the possible-counterpart mask),
median of ``--repeats`` in one run, as a ratio.

Writes ``benchmarks/results/counterparts.json`` (figures, parameters, versions, CPU count, date, load average) and
``counterparts.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from chiralfair import __version__
from chiralfair.datasets import from_frame, load_dataset
from chiralfair.generators import make_generator
from chiralfair.models.training import library_versions, train_model
from chiralfair.seeds import make_seed_strategy
from chiralfair.seeds.names import chiral_params
from chiralfair.verdict import estimate

RESULTS = Path(__file__).parent / "results"
MODEL_RANDOM_STATE = 0
COUPLE = {"sex": {"relationship": {"Husband": "Wife", "Wife": "Husband"}}}
RULES = ["sex=Female excludes relationship=Husband", "sex=Male excludes relationship=Wife"]
SETTINGS = ("coupled", "coupled+rules", "uncoupled")
CONFIGS = {"quick": ("iandd", "aequitas", 100, 100), "eidig": ("iandd", "eidig-inf", 1000, 1000)}
ADULT_COLUMNS = ("age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
                 "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
                 "income")
ADULT_BINS = {"age": [16, 25, 35, 45, 55, 65, 91], "fnlwgt": 10, "capital-gain": [0, 1, 5000, 10000, 100000],
              "capital-loss": [0, 1, 1000, 2000, 5000], "hours-per-week": [0, 20, 35, 40, 45, 60, 100]}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--targets", nargs="+", default=["census", "adult-raw"])
    p.add_argument("--models", nargs="+", default=["dnn", "lr"])
    p.add_argument("--configs", nargs="+", default=list(CONFIGS))
    p.add_argument("--name", default="counterparts")
    p.add_argument("--repeats", type=int, default=40, help="repeats of the overhead measurement")
    return p.parse_args(argv)


def dataset_for(target: str, setting: str):
    coupled = setting != "uncoupled"
    rules = RULES if setting == "coupled+rules" else None
    if target == "census":
        # constraints=[]: the coupling alone (census's default brings the two rules with it)
        return load_dataset("census", protected="sex", couple=None if coupled else False,
                            constraints=rules if rules else [])
    import pandas as pd

    from chiralfair.datasets.home import resolve_data_home

    frame = pd.read_csv(resolve_data_home() / "census" / "raw" / "adult.data", header=None, names=ADULT_COLUMNS,
                        skipinitialspace=True)
    return from_frame(frame, label="income", positive_class=">50K", protected=["sex"], name="adult-raw",
                      bins=ADULT_BINS, couple=COUPLE if coupled else None, constraints=rules)


def codes(domain):
    """Codes of Husband, Wife, Female, Male and the columns relationship and sex."""
    rel, sex = (domain.index(name) for name in ("relationship", "sex"))
    rel_code, sex_code = ({v: k for k, v in domain.features[c].labels.items()} for c in (rel, sex))
    return rel, sex, rel_code["Husband"], rel_code["Wife"], sex_code["Female"], sex_code["Male"]


def impossible(domain, X) -> np.ndarray:
    """A female husband or a male wife, shape (n,)."""
    rel, sex, husband, wife, female, male = codes(domain)
    X = np.asarray(X)
    return ((X[:, sex] == female) & (X[:, rel] == husband)) | ((X[:, sex] == male) & (X[:, rel] == wife))


def married_split(model, dataset, test_index) -> dict:
    """Share of test individuals affected among husbands and wives and among everyone else (direct forward pass)."""
    rel, _, husband, wife, _, _ = codes(dataset.domain)
    X = dataset.X[test_index]
    C = dataset.domain.counterparts(X)
    labels = model.predict(C.reshape(-1, X.shape[1])).reshape(len(X), -1)
    affected = (labels != labels[:, :1]).any(axis=1)
    married = np.isin(X[:, rel], (husband, wife))
    return {"share_married": float(married.mean()), "affected_married": float(affected[married].mean()),
            "affected_others": float(affected[~married].mean()), "affected_direct": float(affected.mean())}


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and its children."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def chiral_network(meta):
    """Which network the seed strategy's chiral model was (the shipped reference network or trained here)."""
    if isinstance(meta, dict):
        if isinstance(meta.get("network"), str):
            return meta["network"]
        for value in meta.values():
            if (found := chiral_network(value)) is not None:
                return found
    return None


def run_case(target, model_name, setting, config, cache_dir) -> dict:
    seeds_name, gen_name, max_global, max_local = CONFIGS[config]
    t0 = time.perf_counter()
    dataset = dataset_for(target, setting)
    trained = train_model(dataset, model_name, random_state=MODEL_RANDOM_STATE, cache_dir=cache_dir)
    model = trained.model
    t_data = time.perf_counter() - t0
    strategy = make_seed_strategy(seeds_name, **chiral_params(seeds_name, MODEL_RANDOM_STATE, cache_dir))
    t1 = time.perf_counter()
    seeds = strategy.select(model, dataset, max_global, random_state=0)
    t_seeds = time.perf_counter() - t1
    res = make_generator(gen_name, max_global=max_global, max_local=max_local).run(model, dataset.domain, seeds,
                                                                                   random_state=0)
    bad_idi, bad_cf = impossible(dataset.domain, res.idis), impossible(dataset.domain, res.counterparts)
    t2 = time.perf_counter()
    verdict = estimate(trained, dataset, population="test", random_state=0,
                       favourable=1 if target != "census" else None)
    t_verdict = time.perf_counter() - t2
    p = verdict.plausibility or {}
    n = max(res.n_idis, 1)
    return {
        "target": target, "model": model_name, "setting": setting, "config": config, "seeds": seeds_name,
        "generator": gen_name, "max_global": max_global, "max_local": max_local, "model_f1": trained.f1,
        "network": trained.network, "chiral_network": chiral_network(seeds.meta),
        "couplings": dataset.domain.describe_couplings(), "constraints": dataset.domain.describe_constraints(),
        "initialization_rate": seeds.initialization_rate,
        "n_idis": res.n_idis, "n_plausible_idis": res.n_plausible_idis,
        "plausible_share": res.n_plausible_idis / n, "n_impossible_side": int((bad_idi | bad_cf).sum()),
        "impossible_side_share": float((bad_idi | bad_cf).sum() / n),
        "impossible_counterpart_share": float(bad_cf.sum() / n), "n_queries": res.n_queries,
        "seconds_search": res.seconds, "seconds_seeds": t_seeds, "seconds_data_and_model": t_data,
        "verdict": {"share": verdict.share, "n_individuals": verdict.n_individuals, "n_affected": verdict.n_affected,
                    "exact": verdict.exact, "share_plausible": p.get("share_plausible"),
                    "n_affected_plausible": p.get("n_affected_plausible"),
                    "n_implausible_counterparts": p.get("n_implausible_counterparts"),
                    "n_counterparts": p.get("n_counterparts"), "seconds": t_verdict,
                    **married_split(model, dataset, trained.test_index)},
        "rare_pairs": [r["constraint"] for r in dataset.domain.rare_pairs()[:5]],
    }


def overhead(cache_dir, repeats: int) -> dict:
    """Median seconds of check + repair + keys of 20,000 census rows, per setting, and the ratios to uncoupled.

    The settings alternate within each repeat, so that a change of the machine's load hits them alike.
    """
    from chiralfair.oracle import DiscriminationCheck

    cases = {}
    for setting in ("uncoupled", "coupled", "coupled+rules"):
        dataset = dataset_for("census", setting)
        model = train_model(dataset, "lr", random_state=MODEL_RANDOM_STATE, cache_dir=cache_dir).model
        cases[setting] = (dataset.domain, DiscriminationCheck(model, dataset.domain), dataset.X[:20000])
    runs: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(repeats):
        for setting, (domain, check, X) in cases.items():
            t = time.perf_counter()
            rows = domain.repair(X)
            check.check(rows)
            domain.keys(rows)
            runs[setting].append(time.perf_counter() - t)
    seconds = {k: float(np.median(v)) for k, v in runs.items()}
    return {"rows": 20000, "repeats": repeats, "median_seconds": seconds,
            "ratio_to_uncoupled": {k: v / seconds["uncoupled"] for k, v in seconds.items()}}


def markdown(results: dict) -> str:
    lines = [
        "# Counterparts that could exist", "",
        f"{results['date']}, {results['cpu_count']} CPUs, chiralfair {results['chiralfair_version']}, torch "
        f"{results['versions'].get('torch')}; load average at start {results['loadavg_start'][0]:.2f}, at end "
        f"{results['loadavg_end'][0]:.2f}. Protected attribute sex; models trained with random_state "
        f"{MODEL_RANDOM_STATE} (60/40 split); seeds and search random_state 0. *coupled*: relationship Husband <-> "
        "Wife changes with sex; *+rules*: and the constraints sex=Female excludes relationship=Husband, sex=Male "
        "excludes relationship=Wife. *plausible*: n_plausible_idis / n_idis (both sides of the pair plausible). "
        "*impossible side*: pairs with a female husband or a male wife on either side (counterpart side in "
        "brackets), counted from the pairs. Verdict: the model's test split, exact; *plausible* the share affected "
        "through plausible counterparts; *married / others* the share affected among husbands and wives and among "
        "everyone else (direct forward pass). Search seconds: wall clock, shared machine.", "",
        "| target | model | config | setting | n_idis | plausible | impossible side | verdict | plausible | "
        "married / others | search s |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---|---:|"]
    for r in results["runs"]:
        v = r["verdict"]
        plausible = "-" if v["share_plausible"] is None else f"{v['share_plausible']:.2%}"
        lines.append(
            f"| {r['target']} | {r['model']} | {r['config']} ({r['generator']} {r['max_global']}/{r['max_local']}) | "
            f"{r['setting']} | {r['n_idis']:,} | {r['n_plausible_idis']:,} "
            f"({r['plausible_share']:.1%}) | {r['impossible_side_share']:.1%} "
            f"({r['impossible_counterpart_share']:.1%}) "
            f"| {v['share']:.2%} | {plausible} | {v['affected_married']:.1%} / {v['affected_others']:.1%} "
            f"| {r['seconds_search']:.1f} |")
    lines += ["", "Rules the data suggests (census): " + "; ".join(results["runs"][0]["rare_pairs"]) + "."]
    networks: dict[tuple, dict[str, list]] = {}
    for r in results["runs"]:
        if r.get("network") is None:
            continue
        seen = networks.setdefault((r["target"], r["model"]), {"model": [], "chiral": []})
        for kind, name in (("model", r["network"]), ("chiral", f"{r['setting']}: {r.get('chiral_network')}")):
            if name not in seen[kind]:
                seen[kind].append(name)
    if networks:
        lines += ["", "Networks (the model under test; the I&D seeds' chiral model per setting):", ""]
        lines += [f"- {target} {model}: {'; '.join(seen['model'])}; chiral: {'; '.join(seen['chiral'])}"
                  for (target, model), seen in networks.items()]
    if results.get("cpu_seconds") is not None:
        lines += ["", f"Whole run: {results['wall_seconds']:.0f} wall s, {results['cpu_seconds']:.0f} CPU s "
                  "(user + system of the process and its children, getrusage)."]
    o = results.get("overhead")
    if o:
        lines += ["", f"Overhead (check + repair + keys of {o['rows']:,} census rows, LR, median of {o['repeats']}): "
                  + ", ".join(f"{k} {v * 1000:.1f} ms ({o['ratio_to_uncoupled'][k]:.2f}x)"
                              for k, v in o["median_seconds"].items()) + "."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    args = parse_args(argv)
    cache_dir = os.environ.get("CHIRALFAIR_CACHE")
    started = os.getloadavg()
    wall0, cpu0 = time.perf_counter(), cpu_seconds()
    runs = []
    for target in args.targets:
        for model in args.models:
            for config in args.configs:
                for setting in SETTINGS:
                    runs.append(run_case(target, model, setting, config, cache_dir))
                    r = runs[-1]
                    print(f"{target} {model} {config} {setting}: n_idis {r['n_idis']:,}, plausible "
                          f"{r['plausible_share']:.1%}, impossible side {r['impossible_side_share']:.1%}, verdict "
                          f"{r['verdict']['share']:.2%} (plausible {r['verdict']['share_plausible']:.2%}), search "
                          f"{r['seconds_search']:.1f} s", flush=True)
    results = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "chiralfair_version": __version__,
               "cpu_count": os.cpu_count(), "platform": platform.platform(), "versions": library_versions(),
               "loadavg_start": started, "loadavg_end": os.getloadavg(),
               "parameters": {"targets": args.targets, "models": args.models, "configs": args.configs},
               "runs": runs, "overhead": overhead(cache_dir, args.repeats)}
    results.update(wall_seconds=time.perf_counter() - wall0, cpu_seconds=cpu_seconds() - cpu0)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(results, indent=2, default=str))
    (RESULTS / f"{args.name}.md").write_text(markdown(results))
    print(markdown(results))


if __name__ == "__main__":
    main()
