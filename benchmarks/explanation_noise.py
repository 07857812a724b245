"""Explanation noise of the I&D explainers against DBSCAN's eps, and the clusters DBSCAN finds.

Run by hand:  python benchmarks/explanation_noise.py --phase before|after [--targets ...] [--quick]

For every target (``dataset:protected_attribute model``) the zoo model is trained once (``random_state=0``,
cached by ``train_model``) and the chiral model once (``chiral_random_state`` 0, cached); the initial IDIs that
I&D explains (up to ``max_explained`` = 2,000, the first of the list shuffled with random state 0) are fixed.
Every explainer configuration then explains those rows twice, with random states 0 and 1; the background is
built as the configuration says (``random``: ``background_size`` data rows drawn with the random state, as I&D
did before this change, so a deterministic explainer is still random between random states). Reported:

- ``noise``: median over rows of the L2 distance between the same row's explanations under the two states;
- ``between``: median L2 distance between two different rows' explanations (20,000 random pairs, state 0);
- ``k_distance``: median distance to the 10th nearest neighbour (DBSCAN's own scale, min_samples=10);
- ``norm``: median L2 norm of an explanation;
- ``clusters``: clusters (and noise share) DBSCAN finds with the paper's ``eps=0.09, min_samples=10``, before
  any repair, under both states, and the adjusted Rand index between the two labelings;
- ``seconds_per_1000``: time to explain 1,000 rows (state 0, background construction included).

Then I&D itself (the library's default explainer) on the DNN targets: clusters DBSCAN finds with the paper's
setting (``repair=False``) over random states 0..2, and the seed-selection time for 1,000 seeds with a given
chiral model (median of ``--timing-repeats``).

Writes ``benchmarks/results/explanation_noise.json`` (one section per phase, kept across runs) and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from chiralfair import __version__
from chiralfair.datasets import load_dataset
from chiralfair.models.training import train_model
from chiralfair.oracle import DiscriminationCheck
from chiralfair.seeds import explainers as ex
from chiralfair.seeds import make_seed_strategy
from chiralfair.seeds.chiral import train_chiral_model
from chiralfair.seeds.diversity import PAPER_EPS, PAPER_MIN_SAMPLES, cluster_explanations
from chiralfair.seeds.initial import initial_idis

RESULTS = Path(__file__).parent / "results"
MODEL_RANDOM_STATE = 0
MAX_EXPLAINED = 2000
PERMUTATION_ROWS = 250  # I&D's max_explained_black_box
# Before the change shap.DeepExplainer looped over rows in Python (5-11 ms per row here): 500 rows then.
DEEP_ROWS = 500 if not hasattr(ex, "explanation_background") else MAX_EXPLAINED
TARGETS = ("census:sex dnn", "census:race dnn", "census:age dnn", "compas:race dnn", "bank:age dnn",
           "census:sex lr", "census:sex dtc", "census:sex mlp", "census:sex svc")
PAIRS = 20_000

# (label, explainer, keyword arguments of explain, background) ; background: "random" (background_size rows drawn
# with the random state, the pre-change behaviour) or any choice of explainers.explanation_background.
GRADIENT_CONFIGS = (
    ("expected_gradients 50", "expected_gradients", {"n_samples": 50}, "random"),
    ("expected_gradients 200", "expected_gradients", {"n_samples": 200}, "random"),
    ("expected_gradients 1000", "expected_gradients", {"n_samples": 1000}, "random"),
    ("expected_gradients 200, kmeans background", "expected_gradients", {"n_samples": 200}, "kmeans"),
    ("integrated_gradients 16 steps, random 10 rows", "integrated_gradients", {"n_steps": 16}, "random10"),
    ("integrated_gradients 16 steps, data mean", "integrated_gradients", {"n_steps": 16}, "mean"),
    ("integrated_gradients 8 steps, kmeans 10", "integrated_gradients", {"n_steps": 8}, "kmeans"),
    ("integrated_gradients 16 steps, kmeans 10", "integrated_gradients", {"n_steps": 16}, "kmeans"),
    ("integrated_gradients 32 steps, kmeans 10", "integrated_gradients", {"n_steps": 32}, "kmeans"),
    ("integrated_gradients 8 steps, fixed 10 rows", "integrated_gradients", {"n_steps": 8}, "fixed10"),
    ("integrated_gradients 16 steps, fixed 10 rows", "integrated_gradients", {"n_steps": 16}, "fixed10"),
    ("integrated_gradients 8 steps, fixed 20 rows", "integrated_gradients", {"n_steps": 8}, "fixed20"),
)
TORCH_CONFIGS = (
    ("deep, random background", "deep", {}, "random"),
    ("deep, random 50 rows", "deep", {}, "random50"),
    ("deep, fixed 20 rows", "deep", {}, "fixed20"),
    ("deep, fixed 50 rows", "deep", {}, "fixed50"),
    ("deep, random 20 rows", "deep", {}, "random20"),
    ("deep, random 10 rows", "deep", {}, "random10"),
    ("deep, data mean", "deep", {}, "mean"),
    ("deep, kmeans 10", "deep", {}, "kmeans"),
    ("deep, kmeans 20", "deep", {}, "kmeans20"),
    ("deep, fixed 100 rows", "deep", {}, "fixed100"),
)
MODEL_CONFIGS = {
    "lr": (("linear, random background", "linear", {}, "random"), ("linear, kmeans 10", "linear", {}, "kmeans")),
    "dtc": (("tree", "tree", {}, "random"),),
    "svc": (("permutation, random background", "permutation", {}, "random"),
            ("permutation, kmeans 25", "permutation", {}, "kmeans25")),
}


def _initial_idis(model, dataset) -> np.ndarray:
    chiral, _ = train_chiral_model(model, dataset, np.random.default_rng(MODEL_RANDOM_STATE),
                                   split_random_state=MODEL_RANDOM_STATE)
    check = DiscriminationCheck(model, dataset.domain)
    initial, _ = initial_idis(model, chiral, check, dataset.X, np.random.default_rng(0))
    return initial[:MAX_EXPLAINED], chiral


def _background(dataset, how: str, rng):
    if how == "random":
        return dataset.X[rng.choice(dataset.n_samples, size=100, replace=False)], None
    if how.startswith("random"):
        return dataset.X[rng.choice(dataset.n_samples, size=int(how[len("random"):]), replace=False)], None
    for kind in ("kmeans", "fixed", "mean"):
        if how.startswith(kind):
            return ex.explanation_background(dataset.X, kind, int(how[len(kind):] or 10))
    raise ValueError(how)


def _target(model, dataset, X, model_name) -> np.ndarray | None:
    """The quantity the sampled explainers estimate, nearly exactly: E over data rows b of the attribution of x.

    DNN: DeepLIFT (shap.DeepExplainer) averaged over 500 data rows (fixed seed 12345); MLP: integrated
    gradients with 32 steps over 100 such rows. None for the other models.
    """
    if not hasattr(ex, "explanation_background") or model_name not in ("dnn", "mlp"):
        return None
    rows = dataset.X[np.random.default_rng(12345).choice(dataset.n_samples, 500 if model_name == "dnn" else 100,
                                                          replace=False)]
    if model_name == "dnn":
        return ex.explain(model, X, rows, None, explainer="deep")[0]
    return ex.explain(model, X, rows, None, explainer="integrated_gradients", n_steps=32)[0]


def _explain(model, dataset, X, explainer, kwargs, how, random_state):
    rng = np.random.default_rng(random_state)
    t = time.perf_counter()
    background, weights = _background(dataset, how, rng)
    extra = {} if weights is None else {"background_weights": weights}
    values, _ = ex.explain(model, X, background, rng, explainer=explainer, **kwargs, **extra)
    return values, time.perf_counter() - t


def _applies(explainer: str) -> bool:
    return explainer in ex.EXPLAINERS


def noise_figures(model, dataset, X, config, target) -> dict:
    label, explainer, kwargs, how = config
    if explainer == "permutation":
        X = X[:PERMUTATION_ROWS]
    if explainer == "deep":
        X = X[:DEEP_ROWS]
    if target is not None:
        target = target[:len(X)]
    v0, seconds = _explain(model, dataset, X, explainer, kwargs, how, 0)
    v1, _ = _explain(model, dataset, X, explainer, kwargs, how, 1)
    rng = np.random.default_rng(0)
    i, j = rng.integers(0, len(X), size=(2, PAIRS))
    keep = i != j
    from sklearn.metrics import adjusted_rand_score
    from sklearn.neighbors import NearestNeighbors
    kdist = NearestNeighbors(n_neighbors=PAPER_MIN_SAMPLES).fit(v0).kneighbors(v0)[0][:, -1]
    l0, c0 = cluster_explanations(v0, repair=False)
    l1, c1 = cluster_explanations(v1, repair=False)
    return {"label": label, "explainer": explainer, "params": kwargs, "background": how, "n_rows": len(X),
            "noise": float(np.median(np.linalg.norm(v0 - v1, axis=1))),
            "noise_p90": float(np.quantile(np.linalg.norm(v0 - v1, axis=1), 0.9)),
            "between": float(np.median(np.linalg.norm(v0[i[keep]] - v0[j[keep]], axis=1))),
            "k_distance": float(np.median(kdist)),
            "norm": float(np.median(np.linalg.norm(v0, axis=1))),
            "identical_bits": bool(np.array_equal(v0, v1)),
            "target_error": None if target is None else float(np.median(np.linalg.norm(v0 - target, axis=1))),
            "clusters": [c0["n_clusters"], c1["n_clusters"]],
            "noise_share": [c0["noise_share"], c1["noise_share"]],
            "ari": float(adjusted_rand_score(l0, l1)),
            "seconds_per_1000": 1000 * seconds / len(X)}


def iandd_figures(model, dataset, chiral, repeats: int, timing_repeats: int) -> dict:
    clusters = []
    for r in range(repeats):
        report = make_seed_strategy("iandd", chiral_model=chiral, repair=False).select(
            model, dataset, 1000, random_state=r)
        clusters.append({k: report.clustering.get(k) for k in ("n_clusters", "noise_share", "explainer",
                                                               "explainer_params", "n_explained")})
    totals, shap_s = [], []
    for r in range(timing_repeats):
        t = time.perf_counter()
        report = make_seed_strategy("iandd", chiral_model=chiral).select(model, dataset, 1000, random_state=r)
        totals.append(time.perf_counter() - t)
        shap_s.append(report.seconds.get("shap", 0.0))
    return {"paper_setting_clusters": clusters, "selection_seconds_1000_seeds_median": statistics.median(totals),
            "selection_seconds": totals, "shap_seconds_median": statistics.median(shap_s),
            "loadavg_at_timing": list(os.getloadavg())}


def run_target(target: str, args) -> dict:
    data_pa, model_name = target.split(" ")
    name, _, pa = data_pa.partition(":")
    dataset = load_dataset(name, protected=[pa])
    model = train_model(dataset, model_name, random_state=MODEL_RANDOM_STATE).model
    X, chiral = _initial_idis(model, dataset)
    print(f"{target}: {len(X)} initial IDIs explained; auto explainer {ex.choose_explainer(model)}", flush=True)
    configs = list(MODEL_CONFIGS.get(model_name, ()))
    if model.has_gradient and model_name != "lr":
        configs += list(GRADIENT_CONFIGS)
    if model_name == "dnn":
        configs += list(TORCH_CONFIGS)
    if args.quick:
        configs = configs[:2]
    rows = []
    target = _target(model, dataset, X, model_name)
    for config in configs:
        if not _applies(config[1]) or (config[3] not in ("random",) and not hasattr(ex, "explanation_background")):
            continue
        figures = noise_figures(model, dataset, X, config, target)
        print(f"  {figures['label']:48s} noise {figures['noise']:.4f} between {figures['between']:.4f} "
              f"kdist {figures['k_distance']:.4f} norm {figures['norm']:.4f} clusters {figures['clusters']} "
              f"ARI {figures['ari']:.2f} {figures['seconds_per_1000']:.3f} s/1000 "
              f"target error {figures['target_error']}", flush=True)
        rows.append(figures)
    out = {"n_initial_idis_explained": int(len(X)), "auto_explainer": ex.choose_explainer(model), "configs": rows}
    if model_name == "dnn" and not args.quick:
        out["iandd"] = iandd_figures(model, dataset, chiral, args.repeats, args.timing_repeats)
        print(f"  iandd default: {out['iandd']}", flush=True)
    return out


READING = """## Reading (the choice made for I&D's defaults)

- Expected gradients' noise is sampling noise: 0.20 / 0.11 / 0.07 (median L2) at 50 / 200 / 1,000 samples on every
  DNN row, against eps = 0.09 and a 10th-neighbour distance of 0.09-0.25; DBSCAN then finds 0-5 clusters that
  change with the random state (ARI 0.2-0.8 where it finds any).
- Before the change "deep" (shap.DeepExplainer) was wrong on the paper's DNN: its output sigmoid is
  ``torch.sigmoid``, which DeepExplainer does not hook, so the attributions summed to a fraction of
  f(x) - E f(b) (norm 0.07 instead of 0.22). After: the sigmoid is hooked, and the rows are batched.
- Deterministic explainers on a background that does not move with the random state have zero run-to-run
  noise and identical clusters (ARI 1). What is left is how far the fixed background is from the expectation
  over data rows ("error to target"): k-means centres and the data mean are 0.1-0.6 away (norms up to 3 times
  larger), DeepLIFT on 50 fixed data rows 0.04-0.07, on 100 rows 0.03-0.07 at twice the cost.
- Default chosen: DeepLIFT (``deep``) on 50 fixed data rows for torch modules; integrated gradients, 8 steps on
  20 fixed rows, for other models with a gradient (sklearn MLP). On the DNN, integrated gradients (8 steps, 20
  fixed rows, about the cost of DeepLIFT on 50) is 0.11-0.26 from the DeepLIFT target, 1.6-4.5 times farther
  than DeepLIFT on 50 rows: partly because they are different attributions (DeepExplainer is the paper's).
"""


def markdown(results: dict) -> str:
    lines = ["# Explanation noise vs DBSCAN eps", "",
             f"eps = {PAPER_EPS}, min_samples = {PAPER_MIN_SAMPLES}. noise: median L2 distance between the same "
             "row's explanations under random states 0 and 1; between: median L2 distance between two rows' "
             "explanations; k-dist: median distance to the 10th neighbour; clusters: DBSCAN with the paper's "
             "setting, no repair, under states 0 / 1; ARI: adjusted Rand index of those two labelings; error to "
             "target (after only): median L2 distance (state 0) to the expectation over data rows that the "
             "sampled explainers estimate (DNN: DeepLIFT over 500 fixed data rows; MLP: integrated gradients, 32 "
             "steps, over 100). Timings are on 2 cores shared with other jobs: compare within a phase.", ""]
    for phase in ("before", "after"):
        if phase not in results["phases"]:
            continue
        p = results["phases"][phase]
        lines += [f"## {phase} the change ({p['date']}, load average {p['loadavg_start'][0]:.2f} at start, "
                  f"{p['loadavg_end'][0]:.2f} at end; chiralfair {p['versions']['chiralfair']}, shap "
                  f"{p['versions']['shap']}, torch {p['versions']['torch']}, sklearn {p['versions']['sklearn']})",
                  "", "| target | explainer | rows | noise | between | k-dist | norm | noise / eps | clusters | "
                  "noise share | ARI | s / 1000 rows | error to target |", "|---" * 13 + "|"]
        for target, t in p["targets"].items():
            for c in t["configs"]:
                lines.append(f"| {target} | {c['label']} | {c['n_rows']} | {c['noise']:.4f} | {c['between']:.4f} | "
                             f"{c['k_distance']:.4f} | {c['norm']:.4f} | {c['noise'] / PAPER_EPS:.2f} | "
                             f"{c['clusters'][0]} / {c['clusters'][1]} | "
                             f"{c['noise_share'][0]:.0%} / {c['noise_share'][1]:.0%} | {c['ari']:.2f} | "
                             f"{c['seconds_per_1000']:.3f} | "
                             f"{'' if c.get('target_error') is None else format(c['target_error'], '.4f')} |")
        lines += ["", f"I&D with the library default explainer ({phase}), DBSCAN with the paper's setting, no repair, "
                  "random states 0..; selection of 1,000 seeds with a given chiral model (median):", "",
                  "| target | explainer | clusters per state | noise share per state | selection s | SHAP s |",
                  "|---|---|---|---|---|---|"]
        for target, t in p["targets"].items():
            if "iandd" not in t:
                continue
            i = t["iandd"]
            cl = i["paper_setting_clusters"]
            params = cl[0].get("explainer_params") or {}
            described = ", ".join(f"{k} {v}" for k, v in params.items())
            explainer = f"{cl[0]['explainer']} ({described})" if described else cl[0]["explainer"]
            lines.append(f"| {target} | {explainer} | {', '.join(str(c['n_clusters']) for c in cl)} | "
                         f"{', '.join(format(c['noise_share'], '.0%') for c in cl)} | "
                         f"{i['selection_seconds_1000_seeds_median']:.3f} | {i['shap_seconds_median']:.3f} |")
        lines.append("")
    if "after" in results["phases"]:
        lines.append(READING)
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phase", choices=("before", "after"), required=True)
    parser.add_argument("--targets", nargs="*", default=list(TARGETS),
                        help="'dataset:protected_attribute model', e.g. 'census:sex dnn'")
    parser.add_argument("--repeats", type=int, default=3, help="I&D random states for the cluster counts")
    parser.add_argument("--timing-repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="two configurations per target, no I&D runs")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    import shap
    import sklearn
    import torch
    phase = {"versions": {"chiralfair": __version__, "numpy": np.__version__, "torch": torch.__version__,
                          "sklearn": sklearn.__version__, "shap": shap.__version__,
                          "python": platform.python_version()},
             "cpu_count": os.cpu_count(), "date": datetime.now(UTC).isoformat(timespec="seconds"),
             "loadavg_start": list(os.getloadavg()), "targets": {}}
    for target in args.targets:
        phase["targets"][target] = run_target(target, args)
    phase["loadavg_end"] = list(os.getloadavg())
    path = args.out / "explanation_noise.json"
    results = json.loads(path.read_text()) if path.exists() else {"phases": {}}
    results["phases"][args.phase] = phase
    args.out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2, default=str))
    (args.out / "explanation_noise.md").write_text(markdown(results))
    print(markdown(results))
    return results


if __name__ == "__main__":
    main()
