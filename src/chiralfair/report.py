"""The run folder (design §7): ``result.json``, ``idis.parquet`` and ``report.md`` with a PNG plot.

Writes are atomic (temporary file + rename). A folder is accepted for output when it does not exist, is
empty, or holds a previous run (its ``result.json`` carries chiralfair metadata); anything else is refused so
that no user file is ever overwritten. ``idis.parquet`` is a folder of Parquet parts, usually streamed during
the search (:mod:`chiralfair.run_folder`). The report is computed from aggregates (IDI counts by protected
values, accumulated while searching), never row by row, so it takes the same time for ten IDIs or ten million.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from .run_folder import (
    PAIRS_NAME,
    PairSink,
    atomic_write_bytes,
    check_run_folder,
    is_previous_run,
    make_shareable,
    prepare_run_folder,
    remove_empty_folders,
)

__all__ = ["RUN_FILES", "atomic_write_bytes", "check_run_folder", "describe_clustering", "is_previous_run",
           "prepare_run_folder", "remove_empty_folders", "render_markdown", "summary_rows", "write_pairs", "write_run"]

PAPER_DEFAULTS = {"eps": 0.09, "min_samples": 10}
RUN_FILES = ("result.json", "idis.parquet", "report.md", "idis_by_protected_value.png")


def write_run(outcome, path: str | os.PathLike) -> Path:
    """Finish the run folder of a :class:`~chiralfair.experiments.RunOutcome`: pairs, plot, report, result.json.

    Pairs already streamed to this folder's ``idis.parquet`` (``run_experiment(..., out=path)``) are left as
    they are; pairs held in memory, or streamed elsewhere, are written here. ``result.json`` is written last,
    with ``"partial": false`` and the time of this step as ``seconds_by_step["write"]``.

    Parameters
    ----------
    outcome : RunOutcome
    path : str or path-like
        Checked with :func:`prepare_run_folder`.

    Returns
    -------
    pathlib.Path
        The folder.

    Raises
    ------
    RunFolderError
        See :func:`prepare_run_folder`.
    """
    t0 = time.perf_counter()
    prepare_run_folder(path)
    folder = Path(path)
    res = outcome.result
    pairs = folder / PAIRS_NAME
    if res.pairs_path is None or Path(res.pairs_path).resolve() != pairs.resolve():
        write_pairs(res, outcome.domain, pairs)
    plot = _plot_protected_values(outcome, folder)
    summary = outcome.summary()
    summary["partial"] = False
    atomic_write_bytes(folder / "report.md", render_markdown(summary, plot).encode())
    summary["seconds_by_step"]["write"] = time.perf_counter() - t0
    atomic_write_bytes(folder / "result.json", json.dumps(summary, indent=2, default=_plain).encode())
    return folder


def write_pairs(result, domain, path: Path) -> Path:
    """Write a result's pairs to an ``idis.parquet`` dataset folder (the format of :class:`PairSink`).

    Parameters
    ----------
    result : SearchResult
    domain : Domain
    path : pathlib.Path
        The dataset folder; a previous one there is replaced.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    sink = PairSink(path)
    sink.open(domain)
    sink.write(result.idis, result.counterparts, result.idi_labels, result.counterpart_labels, result.phase)
    return sink.close()


def summary_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The headline figures as (name, formatted value) rows, for the CLI table and report.md."""
    return [
        ("seeds that are IDIs", f"{summary['n_seed_idis']} / {summary['n_seeds']}"
                                f" ({summary['initialization_rate']:.1%})"),
        ("n_idis", f"{summary['n_idis']:,}"),
        ("n_global", f"{summary['n_global']:,}"),
        ("n_local", f"{summary['n_local']:,}"),
        ("n_tested", f"{summary['n_tested']:,}"),
        ("n_queries", f"{summary['n_queries']:,}"),
        ("success rate", f"{summary['success_rate']:.1%}"),
        ("seconds", f"{summary['seconds']:.3g} (search; whole run "
                    f"{summary.get('seconds_by_step', {}).get('total', summary['seconds']):.2f})"),
    ]


def render_markdown(summary: dict[str, Any], plot: str | None) -> str:
    """report.md text for a run summary."""
    cfg = summary["meta"]["config"]
    model = summary["model"]
    lines = [
        f"# chiralfair run: {cfg['dataset']} / {', '.join(summary['meta']['protected'])} / {cfg['model']}",
        "",
        f"Generator **{cfg['generator']}** with **{cfg['seeds']}** seeds, budget {cfg['max_global']} global /"
        f" {cfg['max_local']} local, random_state {cfg['random_state']}.",
        f"Model F1 {model['f1']:.3f} (accuracy {model['accuracy']:.3f}) on "
        f"{model.get('evaluated_on', 'the test split')}"
        + (" (may include the rows it was trained on; codes decoded to the frame it takes, binned columns to"
           " each bin's representative value)." if "evaluated_on" in model else "."),
        "",
        "| figure | value |",
        "|---|---|",
        *[f"| {k} | {v} |" for k, v in summary_rows(summary)],
        "",
        "IDIs are counted once per non-protected projection (an IDI and its counterpart count once);"
        " `n_global` and `n_local` are disjoint; `n_queries` counts every row sent to the model during the search.",
        "",
        f"The {summary['n_idis']:,} IDI pairs are in `{PAIRS_NAME}`, a folder of Parquet parts written during the"
        " search (`pandas.read_parquet` reads the folder as one table; labelled features are categorical columns).",
    ]
    seeds = summary["seeds"]
    if seeds.get("n_initial_idis") is not None:
        lines += ["", f"Seed selection found {seeds['n_initial_idis']} initial IDIs among"
                      f" {seeds['n_candidates']} rows where the chiral and the original model disagree."]
    if seeds.get("clustering"):
        lines += ["", "Seed clustering: " + describe_clustering(seeds["clustering"])]
    notes = list(summary.get("notes", [])) + list(seeds.get("notes", []))
    if notes:
        lines += ["", "## Notes", *[f"- {n}" for n in notes]]
    if plot:
        lines += ["", f"![IDIs by protected value]({plot})"]
    if summary["n_idis"] == 0:
        lines += ["", "No IDI was found within this budget. That is not proof of fairness: try a larger budget,"
                      " another generator or I&D seeds."]
    return "\n".join(lines) + "\n"


def describe_clustering(c: dict[str, Any]) -> str:
    """One sentence saying how the seeds were clustered (KMeans, or I&D's DBSCAN and its repair)."""
    method = c.get("method")
    if method == "kmeans":
        return f"KMeans with {c.get('n_clusters')} clusters, seeds taken round robin."
    parts = []
    if c.get("explainer"):
        parts.append(f"SHAP ({c['explainer']}) on {c.get('n_explained', '?')} initial IDIs")
    if c.get("degenerate"):
        parts.append(f"DBSCAN(eps={PAPER_DEFAULTS['eps']}, min_samples={c.get('min_samples')}) was degenerate"
                     f" ({c['degenerate']})")
        parts.append(f"repaired with {method}" if c.get("repaired") else f"kept {method}")
    else:
        parts.append(f"{method}" + (f"(eps={c['eps']:g}, min_samples={c.get('min_samples')})"
                                    if method == "dbscan" and c.get("eps") is not None else ""))
    noise = c.get("noise_share")
    parts.append(f"{c.get('n_clusters')} clusters" + (f", {noise:.0%} noise" if noise is not None else ""))
    if c.get("reason"):
        parts.append(str(c["reason"]))
    return "; ".join(parts) + "."


def _plot_protected_values(outcome, folder: Path) -> str | None:
    """Bar chart of IDIs by (own → counterpart) protected values; returns the file name or None."""
    res = outcome.result
    if res.n_idis == 0:
        (folder / "idis_by_protected_value.png").unlink(missing_ok=True)
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dom = outcome.domain
    counts = res.protected_value_counts(dom).head(20)
    own = counts[dom.protected_names].astype(str).to_numpy()
    cf = counts[[n + "_counterpart" for n in dom.protected_names]].astype(str).to_numpy()
    names = ["/".join(a) + " → " + "/".join(b) for a, b in zip(own, cf, strict=True)]
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(counts) + 1.2))
    ax.barh(names[::-1], counts["n_idis"].to_numpy()[::-1], color="#4477aa")
    ax.set_xlabel("IDIs")
    ax.set_title(f"IDIs by {' / '.join(dom.protected_names)}\n(own value → counterpart value)")
    fig.tight_layout()
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".png")
    os.close(fd)
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    make_shareable(tmp)
    os.replace(tmp, folder / "idis_by_protected_value.png")
    return "idis_by_protected_value.png"


def _plain(o):
    if isinstance(o, np.integer | np.bool_):
        return o.item()
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"cannot serialize {type(o).__name__}")
