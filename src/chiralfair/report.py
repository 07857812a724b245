"""The run folder (design §7): ``result.json``, ``idis.parquet`` and ``report.md`` with a PNG plot.

Writes are atomic (temporary file + rename). A folder is accepted for output when it does not exist, is
empty, or holds a previous run (its ``result.json`` carries chiralfair metadata); anything else is refused so
that no user file is ever overwritten.
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from .exceptions import RunFolderError

PAPER_DEFAULTS = {"eps": 0.09, "min_samples": 10}
RUN_FILES = ("result.json", "idis.parquet", "report.md", "idis_by_protected_value.png")


def check_run_folder(path: str | os.PathLike) -> None:
    """Refuse a ``path`` that cannot receive a run, without creating anything.

    Raises
    ------
    RunFolderError
        If ``path`` is a file, or an existing non-empty folder that does not hold a previous run.
    """
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise RunFolderError(f"output path {str(path)!r} exists and is a file, not a run folder")
    if path.is_dir() and any(path.iterdir()) and not is_previous_run(path):
        raise RunFolderError(
            f"output folder {str(path)!r} exists, is not empty and is not a previous chiralfair run "
            "(no result.json with chiralfair metadata); choose another --out so nothing there is overwritten")


def prepare_run_folder(path: str | os.PathLike) -> list[Path]:
    """Check that ``path`` can receive a run, and create it (with any missing parents).

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    list of pathlib.Path
        The folders this call created, deepest first (empty if ``path`` existed); a caller whose run fails
        removes them with :func:`remove_empty_folders`, so a failed run leaves nothing behind.

    Raises
    ------
    RunFolderError
        If ``path`` is a file, an existing non-empty folder that does not hold a previous run, or cannot be
        created (the message gives the operating system's reason).
    """
    path = Path(path)
    check_run_folder(path)
    missing = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        remove_empty_folders(missing)
        raise RunFolderError(f"cannot create output folder {str(path)!r}: {err.strerror or err}") from err
    return missing


def remove_empty_folders(folders: list[Path]) -> None:
    """Remove each folder of ``folders`` (deepest first) that is empty; leave the others."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError as err:
            if err.errno in (errno.ENOTEMPTY, errno.EEXIST):  # holds files: it and its parents stay
                return
            # else it was never created (the failed part of the path): go on with its parents


def is_previous_run(path: Path) -> bool:
    """Whether ``path`` holds a chiralfair run (a ``result.json`` with chiralfair metadata)."""
    try:
        data = json.loads((path / "result.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "chiralfair_version" in data.get("meta", {})


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a run folder is meant to be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_run(outcome, path: str | os.PathLike) -> Path:
    """Write the run folder of a :class:`~chiralfair.experiments.RunOutcome`.

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
    import pyarrow as pa
    import pyarrow.parquet as pq

    prepare_run_folder(path)
    folder = Path(path)
    summary = outcome.summary()
    frame = outcome.result.to_frame(outcome.domain)
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), sink)
    atomic_write_bytes(folder / "idis.parquet", sink.getvalue().to_pybytes())
    plot = _plot_protected_values(outcome, folder)
    atomic_write_bytes(folder / "report.md", render_markdown(summary, plot).encode())
    atomic_write_bytes(folder / "result.json", json.dumps(summary, indent=2, default=_plain).encode())
    return folder


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
        f"Model test F1 {model['f1']:.3f} (accuracy {model['accuracy']:.3f}).",
        "",
        "| figure | value |",
        "|---|---|",
        *[f"| {k} | {v} |" for k, v in summary_rows(summary)],
        "",
        "IDIs are counted once per non-protected projection (an IDI and its counterpart count once);"
        " `n_global` and `n_local` are disjoint; `n_queries` counts every row sent to the model during the search.",
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
    own = dom.describe_protected(res.idis).astype(str).agg("/".join, axis=1)
    cf = dom.describe_protected(res.counterparts).astype(str).agg("/".join, axis=1)
    counts = (own + " → " + cf).value_counts().head(20)
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(counts) + 1.2))
    ax.barh(counts.index[::-1], counts.to_numpy()[::-1], color="#4477aa")
    ax.set_xlabel("IDIs")
    ax.set_title(f"IDIs by {' / '.join(dom.protected_names)}\n(own value → counterpart value)")
    fig.tight_layout()
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".png")
    os.close(fd)
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    os.chmod(tmp, 0o666 & ~_umask())
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
