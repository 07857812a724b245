"""The run folder: ``result.json``, ``idis.parquet``, ``report.md`` with PNG plots, ``report.html``.

The report shows the verdict first (share of the test split affected, per group, with intervals; the
probability gap), then the search. ``report.html`` is the same report as one self-contained page (plots embedded
as base64 PNG data URIs, no external assets). See architecture: results and files.

Writes are atomic (temporary file + rename). A folder is accepted for output when it does not exist, is
empty, or holds a previous run (its ``result.json`` carries chiralfair metadata); anything else is refused so
that no user file is ever overwritten. ``idis.parquet`` is a folder of Parquet parts, usually streamed during
the search (:mod:`chiralfair.results.run_folder`). The report is computed from aggregates (IDI counts by protected
values, accumulated while searching), never row by row, so it takes the same time for ten IDIs or ten million.
"""

from __future__ import annotations

import base64
import html
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..results.run_folder import PAIRS_NAME, PairSink, prepare_run_folder
from ..storage import atomic_path, atomic_write_bytes, json_default

__all__ = ["RUN_FILES", "as_verdict", "counterpart_lines", "describe_clustering", "render_html", "render_markdown",
           "summary_rows", "verdict_lines", "write_pairs", "write_run"]

PAPER_DEFAULTS = {"eps": 0.09, "min_samples": 10}
NO_IDI_TEXT = "no IDI found within this budget — not a proof of fairness."
SHARE_PLOT = "harm_by_group.png"
GAP_PLOT = "probability_gap.png"
SEARCH_PLOT = "idis_by_protected_value.png"
RUN_FILES = ("result.json", "idis.parquet", "report.md", "report.html", SEARCH_PLOT, SHARE_PLOT, GAP_PLOT)
HTML_STYLE = ("body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;"
              "line-height:1.45;color:#222}table{border-collapse:collapse;margin:1rem 0}"
              "th,td{border:1px solid #ccc;padding:.25rem .6rem;text-align:left}th{background:#f2f2f2}"
              "img{max-width:100%;height:auto}code{background:#f5f5f5;padding:0 .2rem}h2{margin-top:2rem}")


def write_run(outcome, path: str | os.PathLike) -> Path:
    """Finish the run folder of a :class:`~chiralfair.experiments.RunOutcome`: pairs, plots, reports, result.json.

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
        write_pairs(res, outcome.domain, pairs, codec=outcome.codec)
    plot = _plot_protected_values(outcome, folder)
    summary = outcome.summary()
    summary["partial"] = False
    verdict = summary.get("verdict")
    verdict_plots = [p for p in (_plot_share_by_group(verdict, folder), _plot_gap_histogram(verdict, folder)) if p]
    text = render_markdown(summary, plot, verdict_plots=verdict_plots)
    atomic_write_bytes(folder / "report.md", text.encode())
    atomic_write_bytes(folder / "report.html", render_html(text, folder, summary_title(summary)).encode())
    summary["seconds_by_step"]["write"] = time.perf_counter() - t0
    atomic_write_bytes(folder / "result.json", json.dumps(summary, indent=2, default=json_default).encode())
    return folder


def write_pairs(result, domain, path: Path, *, codec=None) -> Path:
    """Write a result's pairs to an ``idis.parquet`` dataset folder (the format of :class:`PairSink`).

    Parameters
    ----------
    result : SearchResult
    domain : Domain
    path : pathlib.Path
        The dataset folder; a previous one there is replaced.
    codec : FrameCodec, optional
        For a model fed the data's own rows: binned columns as the value it was fed (:class:`PairSink`).

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    sink = PairSink(path, codec=codec)
    sink.open(domain)
    sink.write(result.idis, result.counterparts, result.idi_labels, result.counterpart_labels, result.phase,
               plausible=result.plausible)
    return sink.close()


def summary_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The headline figures as (name, formatted value) rows, for the CLI table and report.md.

    Parameters
    ----------
    summary : dict
        :meth:`RunOutcome.summary <chiralfair.pipeline.RunOutcome.summary>` (``result.json``).

    Returns
    -------
    list of (str, str)
    """
    plausible = summary.get("n_plausible_idis")
    if (summary.get("query_budget") or {}).get("stopped_in") == "seeds":
        seeds = ("seeds", "none selected: the query budget ended during the seed selection, and no search ran")
    else:
        seeds = ("seeds that are IDIs", f"{summary['n_seed_idis']} / {summary['n_seeds']}"
                                        f" ({summary['initialization_rate']:.1%})")
    return [
        seeds,
        ("n_idis", f"{summary['n_idis']:,}"),
        *([("n_plausible_idis", f"{plausible:,}" + (f" ({plausible / summary['n_idis']:.1%})"
                                                    if summary["n_idis"] else ""))] if plausible is not None else []),
        ("n_global", f"{summary['n_global']:,}"),
        ("n_local", f"{summary['n_local']:,}"),
        ("n_tested", f"{summary['n_tested']:,}"),
        ("n_queries", queries_text(summary)),
        ("success rate", f"{summary['success_rate']:.1%}"),
        ("seconds", f"{summary['seconds']:.3g} (search; whole run "
                    f"{summary.get('seconds_by_step', {}).get('total', summary['seconds']):.2f})"),
    ]


def queries_text(summary: dict[str, Any]) -> str:
    """The search's queries, the budget they belong to, and what the run sent the model outside it.

    ``"320 (search) + 180 (seeds) = 500 of the budget 500; outside it: 5 probe rows, 26,048 held-out verdict
    rows"``; without a budget, what the run sent besides the search. The rows outside it are counted as the model
    received them (``result.json``'s ``queries``).

    Parameters
    ----------
    summary : dict
        :meth:`RunOutcome.summary <chiralfair.pipeline.RunOutcome.summary>`.

    Returns
    -------
    str
    """
    from ..verdict.result import outside_budget_text

    search = int(summary["n_queries"])
    record = summary.get("queries")
    if not record:
        return f"{search:,}"
    seeds = int(summary.get("seeds", {}).get("n_queries", 0))
    outside = outside_budget_text(record.get("outside_budget"))
    parts = [outside] if outside else []
    if record.get("max_queries") is None:
        also = [f"{seeds:,} by the seeds"] if seeds else []
        return f"{search:,} (search)" + ("; also sent: " + ", ".join(also + parts) if also + parts else "")
    text = f"{search:,} (search) + {seeds:,} (seeds) = {search + seeds:,} of the budget {record['max_queries']:,}"
    return text + ("; outside it: " + ", ".join(parts) if parts else "")


def no_idi_text(summary: dict[str, Any]) -> str:
    """What a search without IDIs means: :data:`NO_IDI_TEXT`, or, when the verdict finds people affected, why not.

    Parameters
    ----------
    summary : dict
        :meth:`RunOutcome.summary <chiralfair.pipeline.RunOutcome.summary>`.

    Returns
    -------
    str
    """
    v = summary.get("verdict")
    if not v or not v.get("n_affected"):
        return NO_IDI_TEXT
    budget = summary.get("query_budget") or {}
    if budget.get("stopped_in") == "seeds" or (budget.get("hit") and not summary.get("n_seeds")):
        why = (f"no search ran, as the seed strategy's next call would have passed the query budget of "
               f"{budget['max_queries']:,} ({budget['n_seed_queries']:,} used by the seeds before it)")
    elif budget.get("hit"):
        why = f"it ran out of its query budget ({budget['n_queries']:,} of {budget['max_queries']:,} queries spent)"
    else:
        why = "within max_global and max_local"
    return (f"the search found no IDI: {why}. The verdict over the held-out rows is a check of its own and finds "
            f"{v['share']:.2%} of them affected: the search's 0 is where its budget ended, not a sign of fairness.")


def generator_text(summary: dict) -> str:
    """The generator that ran, and ``(picked by auto)`` when ``auto`` chose it.

    Parameters
    ----------
    summary : dict
        :meth:`RunOutcome.summary <chiralfair.pipeline.RunOutcome.summary>`.

    Returns
    -------
    str
    """
    asked = summary["meta"]["config"]["generator"]
    ran = summary.get("generator") or asked
    return ran if ran == asked else f"{ran} (picked by {asked})"


def outcome_lines(summary: dict[str, Any]) -> list[str]:
    """What ``chiralfair run`` prints (and ``AuditResult.summary()`` returns): the verdict, then the search.

    Parameters
    ----------
    summary : dict
        :meth:`RunOutcome.summary <chiralfair.pipeline.RunOutcome.summary>`.

    Returns
    -------
    list of str
    """
    cfg = summary["meta"]["config"]
    m = summary["model"]
    generator = generator_text(summary)
    title = (f"{cfg['dataset']} / {','.join(map(str, summary['meta']['protected']))} / {cfg['model']} (test F1 "
             f"{_f1_text(m)}) — {generator} with {cfg['seeds']} seeds, max_global {cfg['max_global']}, "
             f"max_local {cfg['max_local']}")
    lines = [*verdict_lines(summary), title]
    rows = summary_rows(summary)
    width = max(len(k) for k, _ in rows)
    lines += [f"  {k:<{width}}  {v}" for k, v in rows]
    lines += [f"  {line}" for line in network_lines(summary)]
    direction = direction_line(summary)
    if direction:
        lines.append(f"  {direction}")
    if summary["seeds"].get("clustering"):
        lines.append(f"  seed clustering: {describe_clustering(summary['seeds']['clustering'])}")
    lines += [f"  {line}" for line in counterpart_lines(summary)]
    if summary.get("diversity") is not None:
        from ..seeds.diversity_report import DiversityReport

        lines += [f"  IDI diversity: {line}" for line in DiversityReport.from_dict(summary["diversity"]).describe()]
    lines += [f"  note: {note}" for note in run_notes(summary)]
    if summary["n_idis"] == 0:
        lines.append(f"  {no_idi_text(summary)}")
    return lines


def network_lines(summary: dict[str, Any]) -> list[str]:
    """Which network the model under test and its chiral model are: shipped with the package or trained here.

    ``model: reference network census-dnn v1, sha256 ...`` (:mod:`chiralfair.models.reference`) or ``model: trained
    on this machine``, and the chiral model's the same way; nothing for a model that was given (not a zoo model).

    Parameters
    ----------
    summary : dict
        :meth:`RunOutcome.summary <chiralfair.pipeline.RunOutcome.summary>` (``result.json``).

    Returns
    -------
    list of str
    """
    lines = []
    network = summary.get("model", {}).get("network")
    if network:
        lines.append(f"model: {network}")
    chiral = summary.get("seeds", {}).get("chiral_network")
    if chiral:
        lines.append(f"chiral model: {chiral}")
    return lines


def run_notes(summary: dict[str, Any]) -> list[str]:
    """The run's notes, then the seeds', each once (a search stopped before it began repeats the seeds' note).

    Parameters
    ----------
    summary : dict
        :meth:`RunOutcome.summary <chiralfair.pipeline.RunOutcome.summary>`.

    Returns
    -------
    list of str
    """
    return list(dict.fromkeys([*summary.get("notes", []), *summary.get("seeds", {}).get("notes", [])]))


def _f1_text(model: dict[str, Any]) -> str:
    """The model's held-out F1, or why it is undefined (the held-out labels hold one class)."""
    if model.get("one_class") is not None:
        return f"undefined: the held-out rows hold one class, label {model['one_class']}"
    return f"{model['f1']:.3f}"


def summary_title(summary: dict[str, Any]) -> str:
    """The report's title: dataset / protected attributes / model.

    Parameters
    ----------
    summary : dict
        :meth:`RunOutcome.summary <chiralfair.pipeline.RunOutcome.summary>` (``result.json``).

    Returns
    -------
    str
    """
    cfg = summary["meta"]["config"]
    return f"chiralfair run: {cfg['dataset']} / {', '.join(summary['meta']['protected'])} / {cfg['model']}"


def verdict_lines(summary: dict[str, Any]) -> list[str]:
    """The verdict in two lines for the CLI: the share of test individuals affected, and the most harmed group.

    Parameters
    ----------
    summary : dict
        :meth:`RunOutcome.summary <chiralfair.pipeline.RunOutcome.summary>` (``result.json``).

    Returns
    -------
    list of str
        Empty when the run has no verdict.
    """
    from ..verdict.result import interval_name

    v = summary.get("verdict")
    if not v:
        return []
    lines = [f"share of {_population_noun(v)} affected: {_share(v['share'], v['lower'], v['upper'], v['exact'])}"
             + ("" if v["exact"] else f" ({interval_name(as_verdict(v))})")]
    from ..verdict.result import people_line, plausibility_line

    verdict = as_verdict(v)
    if people := people_line(verdict):
        lines.append(f"  {people}")
    other = plausibility_line(v.get("plausibility"), v.get("counterparts", "possible"), v["exact"])
    if other:
        lines[0] += " (plausible counterparts only)" if v.get("counterparts") == "plausible" else ""
        lines.append(f"  {other}")
    from ..verdict.result import one_label_line

    if one_label := one_label_line(v.get("meta") or {}):
        lines.append(f"  {one_label}")
    if left_out := left_out_line(v):
        lines.append(f"  left out: {left_out}")
    if v["exact"] and v["population"] != "domain" and v["n_individuals"]:
        lines.append(f"  certified unaffected: {1 - v['share']:.2%} ({v['n_individuals'] - v['n_affected']:,} "
                     "individuals: every counterpart of theirs was checked and keeps their label)")
    from ..verdict.result import most_harmed_line, too_small_text

    if worst := most_harmed_line(verdict):
        lines.append(worst)
    if small := too_small_text(verdict):
        lines.append(f"  too small to tell, not ranked: {small}")
    if v["n_affected"] == 0 and (proxies := (v.get("meta") or {}).get("proxies")):
        from ..verdict.proxies import blind_spot_line

        lines.append(f"  {blind_spot_line(proxies)}")
    return lines


def left_out_line(verdict: dict[str, Any]) -> str | None:
    """Who is not in the share and why (:func:`chiralfair.verdict.result.left_out_line`), for the first screen.

    Parameters
    ----------
    verdict : dict
        ``result.json["verdict"]``.

    Returns
    -------
    str or None
        None when no one is left out.
    """
    from ..verdict.result import left_out_line as line

    return line(int(verdict.get("n_left_out") or 0), verdict.get("constraints"),
                (verdict.get("meta") or {}).get("left_out"), verdict.get("population", "test"),
                unplaced=verdict.get("unplaced"))


def as_verdict(verdict: dict[str, Any]):
    """``result.json["verdict"]`` as the :class:`~chiralfair.verdict.Verdict` it was written from.

    The verdict decides its figures (the people's interval, the worst group, the groups too small to tell) from its
    counts when it is read back, so a ``result.json`` of any version gives the same figures as the verdict did.

    Parameters
    ----------
    verdict : dict
        :meth:`Verdict.to_json <chiralfair.verdict.Verdict.to_json>` as an object.

    Returns
    -------
    Verdict
    """
    from ..verdict import Verdict

    return Verdict.from_json(json.dumps(verdict, default=json_default))


def counterpart_lines(summary: dict[str, Any]) -> list[str]:
    """What the counterparts were, for the CLI: couplings, constraints, rules the data suggests.

    See architecture: counterparts that could exist.

    Parameters
    ----------
    summary : dict
        :meth:`RunOutcome.summary <chiralfair.pipeline.RunOutcome.summary>` (``result.json``).

    Returns
    -------
    list of str
        Empty for a summary without the ``counterparts`` section.
    """
    c = summary.get("counterparts")
    if not c:
        return []
    lines = [f"coupled: {text}" for text in c["couplings"]]
    lines += [f"constraint: {text}" for text in c["constraints"]]
    declared = set(c["constraints"])
    rules = [r for r in c["rare_pairs"] if r["constraint"] not in declared]
    if rules:
        shown = "; ".join(f"{r['constraint']} ({r['count']:,} {'row' if r['count'] == 1 else 'rows'}, "
                          f"{r['expected']:,.0f} expected)" for r in rules[:3])
        more = c["n_rare_pairs"] - min(3, len(rules))
        lines.append(f"the data suggests: {shown}" + (f"; {more} more in result.json" if more > 0 else "")
                     + " (--constraint)")
    for text in c["suggested_couplings"]:
        lines.append(f"the data suggests a coupling: --couple {text}")
    return lines


def most_harmed_group(verdict: dict[str, Any]) -> dict[str, Any] | None:
    """The verdict's worst group (:attr:`Verdict.worst_group <chiralfair.verdict.Verdict>`), or None.

    A harmed individual gets the unfavourable label while a counterpart gets the favourable one. The verdict
    decided which group is the worst and which are too small to tell
    (:func:`~chiralfair.verdict.result.decide_groups`); a group too small to tell is never the worst.

    Parameters
    ----------
    verdict : dict
        ``result.json["verdict"]`` (:meth:`Verdict.to_json <chiralfair.verdict.Verdict.to_json>` as an object).

    Returns
    -------
    dict or None
        The group's record (keys of :data:`~chiralfair.verdict.GROUP_COLUMNS`, with its ``people_harmed_lower``,
        ``people_harmed_upper`` and ``too_small``).
    """
    return as_verdict(verdict).worst()


def render_markdown(summary: dict[str, Any], plot: str | None, *, verdict_plots=()) -> str:
    """report.md text for a run summary: the verdict first (when the summary has one), then the search.

    Parameters
    ----------
    summary : dict
        :meth:`RunOutcome.summary`.
    plot : str or None
        File name of the plot of IDIs by protected value.
    verdict_plots : sequence of str
        File names of the verdict's plots (share affected by group, probability gap).

    Returns
    -------
    str
    """
    cfg = summary["meta"]["config"]
    model = summary["model"]
    lines = [
        f"# {summary_title(summary)}",
        "",
        f"Model F1 {model['f1']:.3f} (accuracy {model['accuracy']:.3f}) on "
        f"{model.get('evaluated_on', 'the test split')}.",
    ]
    networks = network_lines(summary)
    if networks:
        lines += ["", *[f"- {line}" for line in networks]]
    if "verdict" in summary:
        lines += ["", "## Verdict", "", *_verdict_markdown(summary.get("verdict"), verdict_plots)]
    if summary.get("group_metrics"):
        lines += ["", "## Group metrics", "", *group_metrics_markdown(summary["group_metrics"])]
    lines += _counterparts_markdown(summary.get("counterparts"), summary["n_idis"])
    lines += [
        "",
        "## Search",
        "",
        f"Generator **{generator_text(summary)}** with **{cfg['seeds']}** seeds, budget {cfg['max_global']} global /"
        f" {cfg['max_local']} local, random_state {cfg['random_state']}.",
        "",
        "| figure | value |",
        "|---|---|",
        *[f"| {k} | {v} |" for k, v in summary_rows(summary)],
        "",
        "IDIs are counted once per non-protected projection (an IDI and its counterpart count once);"
        " `n_global` and `n_local` are disjoint; `n_queries` counts every row passed to a method of the model during"
        " the search (labels and probabilities of the same rows twice, unless one call returns both).",
        "",
        f"The {summary['n_idis']:,} IDI pairs are in `{PAIRS_NAME}`, a folder of Parquet parts written during the"
        " search (`pandas.read_parquet` reads the folder as one table; labelled features are categorical columns).",
    ]
    verdict_meta = (summary.get("verdict") or {}).get("meta") or {}
    lines += _directions_markdown(summary.get("idi_directions"), summary["n_idis"],
                                  verdict_meta.get("positive_class"), verdict_meta.get("negative_class"))
    seeds = summary["seeds"]
    if seeds.get("n_initial_idis") is not None:
        where = ("data rows checked" if seeds.get("strategy") == "data_rows"
                 else "rows where the chiral and the original model disagree")
        lines += ["", f"Seed selection found {seeds['n_initial_idis']} initial IDIs among"
                      f" {seeds['n_candidates']} {where}."]
    if seeds.get("clustering"):
        lines += ["", "Seed clustering: " + describe_clustering(seeds["clustering"])]
    notes = run_notes(summary)
    if notes:
        lines += ["", "## Notes", *[f"- {n}" for n in notes]]
    if plot:
        who = ("the verdict above says who is harmed" if summary.get("verdict")
               else "`chiralfair estimate` says who is harmed")
        lines += ["", f"![IDIs found by the search, by protected value]({plot})", "",
                  "*IDIs found by the search, by protected value: this counts where the search went (its seeds and"
                  f" budget), not who is most discriminated; {who}.*"]
    if summary["n_idis"] == 0:
        text = no_idi_text(summary)
        lines += ["", text[0].upper() + text[1:] + " Try a larger budget, another generator or I&D seeds."]
    return "\n".join(lines) + "\n"


def _verdict_markdown(v: dict[str, Any] | None, plots) -> list[str]:
    if not v:
        return ["No verdict in this run (it was not asked for, or the favourable label of this data is not"
                " known): `chiralfair estimate` or `chiralfair.estimate(..., favourable=...)` computes it."]
    how = ("every individual checked" if v["exact"] else
           f"{v['confidence']:.0%} {v['method']} interval, {v['n_individuals']:,} individuals checked")
    which = "a plausible counterpart" if v.get("counterparts") == "plausible" else "a counterpart"
    out = [f"**Share of {_population_noun(v)} affected: {_share(v['share'], v['lower'], v['upper'], v['exact'])}**"
           f" ({how}). An individual is affected when {which} differing only in"
           f" {', '.join(v['protected'])} gets another label"
           + (f" with a probability gap >= {v['gamma']:g}" if v.get("gamma") is not None else "") + "."]
    from ..verdict.result import people_line, plausibility_line, too_small_text

    verdict = as_verdict(v)
    if people := people_line(verdict):
        out += ["", people[0].upper() + people[1:] + "."]
    other = plausibility_line(v.get("plausibility"), v.get("counterparts", "possible"), v["exact"])
    if other:
        out += ["", other[0].upper() + other[1:] + "."]
    group = verdict.worst()
    if group is not None:
        interval = "" if group["people_harmed_lower"] is None else (
            f" ([{group['people_harmed_lower']:.2%}, {group['people_harmed_upper']:.2%}] for the people of that group,"
            f" {verdict.people_confidence:.0%} Clopper-Pearson)")
        out += ["", f"Most harmed group: **{group['group']}**: {group['n_harmed'] / group['n']:.2%} of its"
                    f" {group['n']:,} individuals get the unfavourable label while a counterpart gets the favourable"
                    f" one{interval} (favourable {verdict.label_text(v['favourable'])})."]
    if small := too_small_text(verdict):
        out += ["", f"Too small to tell, not ranked: {small}."]
    level = "exact" if v["exact"] else f"{v['group_confidence']:.2%} intervals (Bonferroni over all groups)"
    out += ["", f"Per group ({level}); *harmed* = gets the unfavourable label while a counterpart gets the favourable"
                " one; *affected* = either side of such a pair:", "",
            "| group | n | harmed | affected | harmed among affected |", "|---|---|---|---|---|"]
    for g in v["groups"]:
        harmed = (_share(g.get("share_harmed"), g.get("share_harmed_lower"), g.get("share_harmed_upper"), v["exact"],
                         say_exact=False) + f" ({g['n_harmed']:,})")
        among = ("-" if g["harmed_share"] is None else
                 _share(g["harmed_share"], g["harmed_lower"], g["harmed_upper"], v["exact"], say_exact=False))
        affected = _share(g["share_affected"], g["lower"], g["upper"], v["exact"], say_exact=False)
        out.append(f"| {g['group']} | {g['n']:,} | {harmed} | {affected} | {among} |")
    if v.get("gap"):
        q = v["gap"]["quantiles"]
        out += ["", "How badly: the gap max |P(x) - P(x')| in positive-class probability between an individual and"
                    " its counterparts: " + ", ".join(f"{_quantile_name(k)} {x:.3f}" for k, x in q.items()) + "."]
    if v.get("rules"):
        out += ["", "What the affected have in common (depth-3 tree on the non-protected features):"]
        out += [f"- {r['rule']}: {r['affected_share']:.1%} affected ({r['n_affected']:,} of {r['n']:,}),"
                f" {r['coverage']:.1%} of all affected" for r in v["rules"]]
    for name in plots:
        out += ["", f"![{name.removesuffix('.png').replace('_', ' ')}]({name})"]
    if v.get("notes"):
        out += ["", *[f"- {n}" for n in v["notes"]]]
    return out


def group_metrics_markdown(g: dict[str, Any]) -> list[str]:
    """The group metrics fairlearn users read (selection rate, TPR, FPR per group) as a Markdown table.

    Parameters
    ----------
    g : dict
        :meth:`GroupMetrics.to_dict <chiralfair.verdict.group_metrics.GroupMetrics.to_dict>`.

    Returns
    -------
    list of str
        Markdown lines.
    """
    how = (f"{g['confidence']:.0%} bootstrap intervals, {g['n_boot']} resamples" if g["n_boot"] else
           f"{g['confidence']:.0%} Wilson intervals")
    from ..verdict.group_metrics import idi_text

    out = [f"On {g['rows'] or 'the held-out rows'}, with fairlearn's `MetricFrame` ({how}): selection rate, TPR and "
           "FPR over every row of the group; *IDIs* is the share of the group's people the verdict counts that are "
           "IDIs (the people it leaves out, a missing protected value or no counterpart that could exist, are "
           "left out here too). Each row's `is_idi` and `left_out` are in `AuditResult.held_out_rows()`.", "",
           "| group | n | selection rate | TPR | FPR | IDIs |", "|---|---|---|---|---|---|"]
    for r in [g["overall"], *g["groups"]]:
        cells = [_rate(r, m) for m in ("selection_rate", "tpr", "fpr")]
        out.append(f"| {r['group']} | {r['n']:,} | {' | '.join(cells)} | {idi_text(r)} |")
    return out + ["", *[f"- {n}" for n in g.get("notes", [])]]


def _rate(record: dict[str, Any], metric: str) -> str:
    value = record.get(metric)
    if value is None:
        return "undefined"
    lo, hi = record.get(f"{metric}_lower"), record.get(f"{metric}_upper")
    return f"{value:.2%}" if lo is None else f"{value:.2%} [{lo:.2%}, {hi:.2%}]"


def _counterparts_markdown(c: dict[str, Any] | None, n_idis: int) -> list[str]:
    """The counterparts section: couplings, constraints, plausible IDIs, rules the data suggests.

    See architecture: counterparts that could exist.
    """
    if not c:
        return []
    out = ["", "## Counterparts", ""]
    out += ([f"- coupled: {t}" for t in c["couplings"]] or ["- no coupled column: counterparts change the protected "
                                                             "attributes only"])
    out += [f"- constraint: {t}" for t in c["constraints"]]
    if c.get("n_plausible_idis") is not None:
        share = f" ({c['plausible_share']:.1%})" if n_idis else ""
        out += ["", f"{c['n_plausible_idis']:,} of the {n_idis:,} IDI pairs are plausible{share}: the IDI and its"
                    " counterpart hold only (protected value, categorical value) pairs the data shows (column"
                    " `plausible` of the pairs)."]
    if c.get("rare_pairs"):
        out += ["", "Rules the data suggests (a protected value hardly ever seen with a category; declare them with"
                    " `constraints=` / `--constraint`, or as a coupling):", "",
                "| rule | rows | expected under independence |", "|---|---|---|",
                *[f"| `{r['constraint']}` | {r['count']:,} | {r['expected']:,.1f} |" for r in c["rare_pairs"]]]
    for text in c.get("suggested_couplings", ()):
        out += ["", f"Suggested coupling: `--couple {text}`."]
    return out


def _directions_markdown(d: dict[str, Any] | None, n_idis: int, positive_class: Any = None,
                         negative_class: Any = None) -> list[str]:
    if not d or not n_idis:
        return []
    from ..verdict.result import label_text

    rows = [r for r in d["disfavoured"] if r["n_disfavoured"] or r["n_favoured"]]
    if not rows:
        return []
    return ["", f"Who gets the unfavourable side of the {n_idis:,} IDI pairs (favourable "
                f"{label_text(d['favourable'], positive_class, negative_class)}), "
                "per protected value:", "",
            "| protected value | pairs where it gets the unfavourable label | pairs where it gets the favourable one |",
            "|---|---|---|", *[f"| {r['group']} | {r['n_disfavoured']:,} | {r['n_favoured']:,} |" for r in rows]]


def direction_line(summary: dict[str, Any]) -> str | None:
    """One line: per protected value, in how many IDI pairs it gets the unfavourable label (None without it).

    Parameters
    ----------
    summary : dict
        :meth:`RunOutcome.summary <chiralfair.pipeline.RunOutcome.summary>` (``result.json``).

    Returns
    -------
    str or None
    """
    d = summary.get("idi_directions")
    rows = [r for r in (d or {}).get("disfavoured", ()) if r["n_disfavoured"]]
    if not rows or not summary["n_idis"]:
        return None
    parts = ", ".join(f"{r['group']} {r['n_disfavoured']:,}" for r in rows)
    return f"IDI pairs whose unfavourable side is: {parts} (of {summary['n_idis']:,} pairs)"


def _population_noun(v: dict[str, Any]) -> str:
    return {"test": "test individuals", "rows": "the dataset's individuals",
            "domain": "the input domain"}.get(v["population"], v["population"])


def _share(share, lower, upper, exact: bool, *, say_exact: bool = True) -> str:
    if share is None:
        return "-"
    if exact:
        return f"{share:.2%}" + (" (exact)" if say_exact else "")
    return f"{share:.2%} [{lower:.2%}, {upper:.2%}]"


def _quantile_name(level: str) -> str:
    value = float(level)
    return "max" if value == 1.0 else ("median" if value == 0.5 else f"p{value * 100:g}")


def render_html(markdown_text: str, folder: Path, title: str, plots=(SEARCH_PLOT, SHARE_PLOT, GAP_PLOT)) -> str:
    """The report as one self-contained HTML page: the folder's PNG plots embedded as base64 data URIs.

    Parameters
    ----------
    markdown_text : str
        :func:`render_markdown`'s text.
    folder : pathlib.Path
        Holds the PNG files the text refers to.
    title : str
    plots : sequence of str, optional
        File names of the PNG plots to embed (default: a run folder's).

    Returns
    -------
    str
        The page; it loads nothing from elsewhere.
    """
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(markdown_text)
    for name in plots:
        png = folder / name
        if f'src="{name}"' in body and png.exists():
            data = base64.b64encode(png.read_bytes()).decode("ascii")
            body = body.replace(f'src="{name}"', f'src="data:image/png;base64,{data}"')
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{HTML_STYLE}</style></head><body>\n{body}</body></html>\n")


def describe_clustering(c: dict[str, Any]) -> str:
    """One sentence saying how the seeds were clustered (KMeans, or I&D's DBSCAN and its repair).

    Parameters
    ----------
    c : dict
        ``result.json["seeds"]["clustering"]``.

    Returns
    -------
    str
    """
    method = c.get("method")
    if method == "kmeans":
        return f"KMeans with {c.get('n_clusters')} clusters, seeds taken round robin."
    parts = []
    if c.get("explainer"):
        budget = ", ".join(f"{k} {v}" for k, v in (c.get("explainer_params") or {}).items())
        parts.append(f"SHAP ({c['explainer']}{', ' + budget if budget else ''}) on {c.get('n_explained', '?')} "
                     "initial IDIs")
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


def _plot_share_by_group(verdict: dict[str, Any] | None, folder: Path) -> str | None:
    """Who is harmed: per group, the share getting the unfavourable label while a counterpart gets the favourable.

    With its interval, beside the share affected (either side of a pair). Returns the file name or None.
    """
    groups = [g for g in (verdict or {}).get("groups", ()) if g["n"] and g.get("share_harmed") is not None]
    if verdict is None or not groups:
        (folder / SHARE_PLOT).unlink(missing_ok=True)
        return None
    plt = _pyplot()
    harmed = np.array([g["share_harmed"] for g in groups])
    affected = np.array([g["share_affected"] for g in groups])
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(groups) + 2.2))
    y = np.arange(len(groups))[::-1]
    ax.barh(y, affected * 100, color="#dddddd", label="affected (either side of a pair)")
    ax.barh(y, harmed * 100, height=0.5, color="#cc6677", label="harmed (gets the unfavourable label)")
    if not verdict["exact"]:
        lower = np.array([g["share_harmed_lower"] for g in groups])
        upper = np.array([g["share_harmed_upper"] for g in groups])
        ax.errorbar(harmed * 100, y, xerr=np.vstack([harmed - lower, upper - harmed]) * 100, fmt="none",
                    ecolor="black", capsize=3)
    ax.set_yticks(y, [g["group"] for g in groups])
    ax.set_xlabel(f"% of the group's {_population_noun(verdict)}")
    level = "exact" if verdict["exact"] else f"{verdict['group_confidence']:.1%} intervals"
    ax.set_title(f"Who is harmed: share of each group that gets the unfavourable label\nwhile a counterpart gets the "
                 f"favourable one ({level})", fontsize=10)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=2, fontsize=8, frameon=False)
    return _save(fig, folder, SHARE_PLOT)


def _plot_gap_histogram(verdict: dict[str, Any] | None, folder: Path) -> str | None:
    """Histogram of the probability gap, all individuals and affected ones; returns the file name or None."""
    if not verdict or not verdict.get("gap"):
        (folder / GAP_PLOT).unlink(missing_ok=True)
        return None
    plt = _pyplot()
    hist = verdict["gap"]["histogram"]
    edges = np.asarray(hist["edges"])
    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.stairs(hist["counts"], edges, fill=True, color="#bbbbbb", label="all checked")
    ax.stairs(hist["counts_affected"], edges, fill=True, color="#cc6677", alpha=0.8, label="affected")
    ax.set_yscale("symlog", linthresh=1)
    # counts written as numbers (1,000), not as powers of ten: those are mathtext, whose first parse in a process
    # (building its grammar) took about as long as drawing the three plots of a run
    ax.yaxis.set_major_formatter(_pyplot().FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_xlabel("probability gap max |P(x) - P(x')| over counterparts")
    ax.set_ylabel("individuals")
    ax.set_title("How far counterparts' probabilities are apart")
    ax.legend()
    return _save(fig, folder, GAP_PLOT)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, folder: Path, name: str) -> str:
    """Save a figure atomically (temporary file + rename) and close it."""
    fig.tight_layout()
    with atomic_path(folder / name) as tmp:
        fig.savefig(tmp, format="png", dpi=100)
    fig.clf()
    _pyplot().close(fig)
    return name


def _plot_protected_values(outcome, folder: Path) -> str | None:
    """Bar chart of IDIs by (own → counterpart) protected values; returns the file name or None."""
    res = outcome.result
    if res.n_idis == 0:
        (folder / SEARCH_PLOT).unlink(missing_ok=True)
        return None
    plt = _pyplot()
    dom = outcome.domain
    counts = res.protected_value_counts(dom).head(20)
    own = counts[dom.protected_names].astype(str).to_numpy()
    cf = counts[[n + "_counterpart" for n in dom.protected_names]].astype(str).to_numpy()
    names = ["/".join(a) + " → " + "/".join(b) for a, b in zip(own, cf, strict=True)]
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(counts) + 1.2))
    ax.barh(names[::-1], counts["n_idis"].to_numpy()[::-1], color="#4477aa")
    ax.set_xlabel("IDIs found by the search")
    ax.set_title(f"Where the search went: IDIs by {' / '.join(dom.protected_names)}\n(own value → counterpart value;"
                 " not who is most discriminated)", fontsize=10)
    return _save(fig, folder, SEARCH_PLOT)


# ------------------------------------------------------------------------------------------ the retrain folder
RETRAIN_FILES = ("retrain.json", "report.md", "report.html", "tradeoff.png")


def check_retrain_folder(out: str | os.PathLike) -> bool:
    """Whether ``out`` can receive a retrain folder: missing, empty, or an earlier retrain's; creates nothing.

    Parameters
    ----------
    out : str or path-like

    Returns
    -------
    bool
        True when it holds an earlier retrain (its files are replaced).

    Raises
    ------
    RunFolderError
        For a folder that holds something else, so nothing there is overwritten.
    """
    from ..exceptions import RunFolderError

    out = Path(out)
    if out.exists() and not out.is_dir():
        raise RunFolderError(f"output {str(out)!r} is a file, not a folder; choose another --out")
    if not (out.is_dir() and any(out.iterdir())):
        return False
    try:
        previous = json.loads((out / "retrain.json").read_text())
        ok = "chiralfair_version" in previous.get("meta", {})
    except (OSError, ValueError, AttributeError):
        ok = False
    if not ok:
        raise RunFolderError(f"output folder {str(out)!r} exists, is not empty and is not an earlier chiralfair "
                             "retrain (no retrain.json); choose another --out so nothing there is overwritten")
    return True


def prepare_retrain_folder(out: str | os.PathLike) -> list[Path]:
    """Check ``out`` (:func:`check_retrain_folder`) and create it.

    Parameters
    ----------
    out : str or path-like

    Returns
    -------
    list of pathlib.Path
        The folders created (removed again if the retraining fails).

    Raises
    ------
    RunFolderError
    """
    if check_retrain_folder(out):
        return []
    return prepare_run_folder(out)


def write_retrain_folder(result, out: str | os.PathLike, *, like: str | None = None) -> list[Path]:
    """Write ``retrain.json``, ``report.md`` and ``report.html`` with the trade-off plot, and each method's model.

    Each method's model (its largest share) is saved in the format the model came in as ``model-<method>.<ext>``
    (:func:`chiralfair.models.files.save_model_file`); a model that cannot be saved (an ONNX graph) is said in
    the report. Every file is written atomically; model files of an earlier retrain in the folder are replaced.

    Parameters
    ----------
    result : RetrainResult
    out : str or path-like
        Prepared with :func:`prepare_retrain_folder`.
    like : str, optional
        The model file the model came from.

    Returns
    -------
    list of pathlib.Path
        The model files written.
    """
    from ..exceptions import ModelFileError

    out = Path(out)
    with atomic_path(out / "tradeoff.png") as png:
        result.plot(png)
    for stale in out.glob("model*.*"):
        stale.unlink()
    saved, lines = [], []
    for method in result.methods:
        try:
            path = result.save(method, out, like=like)
            saved.append(path)
            lines.append(f"- {method}: `{path.name}` (loads back with `--model {path.name}`)")
        except ModelFileError as err:
            lines.append(f"- {method}: not saved: {err}")
    plots = ["tradeoff.png"]
    if result.meta.get("auto_candidates"):  # auto's candidates, their trade-off beside the table
        with atomic_path(out / "auto_candidates.png") as png:
            result.plot_candidates(png)
        plots.append("auto_candidates.png")
    text = (result.to_markdown("tradeoff.png", candidates_plot=plots[1] if len(plots) > 1 else None)
            + "\nThe models (largest share):\n\n" + "\n".join(lines) + "\n")
    atomic_write_bytes(out / "report.md", text.encode())
    atomic_write_bytes(out / "report.html", render_html(text, out, f"chiralfair retrain {out.name}",
                                                          plots=tuple(plots)).encode())
    atomic_write_bytes(out / "retrain.json", result.to_json().encode())
    return saved
