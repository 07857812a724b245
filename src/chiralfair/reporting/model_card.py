"""The verdict in a model card: a CycloneDX ``modelCard`` fragment, and a section of a skops model card.

Both carry the same figures. :func:`cyclonedx_model_card` writes the CycloneDX 1.6 ``modelCard`` object (what a
``machine-learning-model`` component holds): ``quantitativeAnalysis.performanceMetrics`` gives the share of
individuals affected (with its confidence interval), the share harmed and affected in each protected group, the
model's F1 and accuracy on the held-out rows, and, when measured, each group's selection rate, TPR and FPR;
``considerations.fairnessAssessments`` names every group at risk with the harm (the share of it that gets the
unfavourable label while a counterpart differing only in the protected attributes gets the favourable one);
``considerations.technicalLimitations`` holds the verdict's notes. Every figure names its slice (the rows or
group it was measured on). :func:`add_to_skops_card` adds the same figures to a :class:`skops.card.Card` (a
section with the tables, and the headline figures in its metrics table).

What a card is made from (``subject``): a :class:`~chiralfair.verdict.Verdict`, anything with a ``verdict``
attribute (an :class:`~chiralfair.AuditResult`, a :class:`~chiralfair.pipeline.RunOutcome`, a gate's
:class:`~chiralfair.verdict.GateDecision`, whose threshold is then stated), or a
:class:`~chiralfair.retraining.RetrainResult` (IDI rates and F1 before and after, on the held-out rows).

References
----------
.. [1] CycloneDX 1.6 specification, "modelCard" (ECMA-424). https://cyclonedx.org/docs/1.6/json/
.. [2] Mitchell et al. "Model Cards for Model Reporting." FAT* 2019.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

from .. import __version__
from ..exceptions import ConfigError
from ..storage import atomic_path, atomic_write_text

SPEC_VERSION = "1.6"
CARD_SUFFIXES = (".json", ".md")
SKOPS_SECTION = "Individual fairness (chiralfair)"
METRIC_NAMES = {"selection_rate": "selection rate", "tpr": "true positive rate", "fpr": "false positive rate"}


def cyclonedx_model_card(subject) -> dict[str, Any]:
    """The CycloneDX 1.6 ``modelCard`` object of a verdict, an audit, a gate decision or a retraining.

    Parameters
    ----------
    subject : Verdict, AuditResult, RunOutcome, GateDecision or RetrainResult
        See the module docstring.

    Returns
    -------
    dict
        JSON-ready; every ``value`` and bound is a string, as the schema requires (shares in [0, 1]).

    Raises
    ------
    ConfigError
        For a subject that holds no verdict (an audit run without one) and is not a retraining.
    """
    metrics, assessments, limitations = _card_parts(subject)
    card: dict[str, Any] = {"quantitativeAnalysis": {"performanceMetrics": metrics}}
    considerations: dict[str, Any] = {}
    if assessments:
        considerations["fairnessAssessments"] = assessments
    if limitations:
        considerations["technicalLimitations"] = limitations
    if considerations:
        card["considerations"] = considerations
    # Named by its content, so that the same verdict gives the same card byte for byte.
    return {"bom-ref": f"chiralfair-model-card-{_content_id(card)}", **card}


def cyclonedx_bom(card: dict[str, Any], *, name: str = "model", version: str | None = None) -> dict[str, Any]:
    """A minimal CycloneDX BOM holding ``card`` in one ``machine-learning-model`` component (to validate or ship).

    Parameters
    ----------
    card : dict
        :func:`cyclonedx_model_card`.
    name : str
        The component's name (the model's).
    version : str, optional
        The component's version.

    Returns
    -------
    dict
    """
    component: dict[str, Any] = {"type": "machine-learning-model", "name": name, "bom-ref": f"model-{name}",
                                 "modelCard": card}
    if version is not None:
        component["version"] = version
    return {"bomFormat": "CycloneDX", "specVersion": SPEC_VERSION,
            "serialNumber": f"urn:uuid:{_content_id(component)}",
            "version": 1, "metadata": {"tools": {"components": [
                {"type": "application", "name": "chiralfair", "version": __version__}]}},
            "components": [component]}


def fairness_markdown(subject) -> str:
    """The same figures as :func:`cyclonedx_model_card`, as Markdown (the skops section's text).

    Parameters
    ----------
    subject : AuditResult, RunOutcome, Verdict, GateDecision or RetrainResult
        What a command computed.

    Returns
    -------
    str
    """
    metrics, assessments, limitations = _card_parts(subject)
    lines = ["Individual fairness measured by chiralfair: an individual is *affected* when a counterpart differing "
             "only in the protected attributes gets another label; *harmed* when it gets the unfavourable label "
             "while such a counterpart gets the favourable one.", "",
             "| figure | slice | value | interval |", "|---|---|---|---|"]
    for m in metrics:
        ci = m.get("confidenceInterval")
        lines.append(f"| {m['type']} | {m['slice']} | {_show(m['value'])} | "
                     + (f"[{_show(ci['lowerBound'])}, {_show(ci['upperBound'])}]" if ci else "-") + " |")
    if assessments:
        lines += ["", "Groups at risk:", ""]
        lines += [f"- **{a['groupAtRisk']}**: {a['harms']}" for a in assessments]
    if limitations:
        lines += ["", "How to read the figures:", "", *[f"- {n}" for n in limitations]]
    return "\n".join(lines)


def add_to_skops_card(card, subject, *, section: str = SKOPS_SECTION):
    """Add the fairness figures of ``subject`` to a skops model card: a section, and the headline metrics.

    Parameters
    ----------
    card : skops.card.Card
        Your model's card (``skops.card.Card(model)``).
    subject : Verdict, AuditResult, RunOutcome, GateDecision or RetrainResult
    section : str, default="Individual fairness (chiralfair)"
        Title of the section added.

    Returns
    -------
    skops.card.Card
        ``card``, changed in place.
    """
    metrics, _, _ = _card_parts(subject)
    card.add(**{section: fairness_markdown(subject)})
    headline = {}
    for m in metrics[:1] + [m for m in metrics if m["type"].startswith("F1")][:1]:
        ci = m.get("confidenceInterval")
        headline[f"{m['type']} ({m['slice']})"] = (_show(m["value"]) if not ci else
                                                   f"{_show(m['value'])} [{_show(ci['lowerBound'])}, "
                                                   f"{_show(ci['upperBound'])}]")
    card.add_metrics(**headline)
    return card


def write_model_card(subject, path: str | os.PathLike, *, model=None) -> Path:
    """Write the model card of ``subject``: CycloneDX JSON (``.json``) or a skops model card (``.md``).

    Parameters
    ----------
    subject : Verdict, AuditResult, RunOutcome, GateDecision or RetrainResult
    path : path
        ``*.json``: the CycloneDX ``modelCard`` fragment (:func:`cyclonedx_model_card`); ``*.md``: a skops model
        card of ``model`` with the fairness section (:func:`add_to_skops_card`).
    model : sklearn estimator, optional
        Needed for ``.md``: the model the skops card describes.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ConfigError
        For another suffix, or ``.md`` without an sklearn model.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in CARD_SUFFIXES:
        raise ConfigError(f"model card {str(path)!r}: use a .json file (a CycloneDX modelCard) or a .md file (a skops "
                          f"model card of an sklearn model), not {path.suffix or 'no suffix'!r}")
    if suffix == ".md":
        from sklearn.base import BaseEstimator

        if not isinstance(model, BaseEstimator):
            raise ConfigError(f"a skops model card ({path.name}) describes an sklearn model, and "
                              f"{'no model' if model is None else type(model).__name__} was given; write the CycloneDX "
                              "card instead (a .json file), or give your sklearn model (command line: --data with "
                              "--model FILE.skops)")
        import skops.card

        card = add_to_skops_card(skops.card.Card(model), subject)
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            card.save(tmp)
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(cyclonedx_model_card(subject), indent=2) + "\n")
    return path


# ------------------------------------------------------------------------------------------------ the figures
def _card_parts(subject) -> tuple[list[dict], list[dict], list[str]]:
    """(performanceMetrics, fairnessAssessments, technicalLimitations) of ``subject``."""
    if hasattr(subject, "rows") and hasattr(subject, "protocol"):
        return _retrain_parts(subject)
    verdict = subject if hasattr(subject, "groups") and hasattr(subject, "share") else getattr(subject, "verdict",
                                                                                               None)
    if verdict is None:
        raise ConfigError(f"{type(subject).__name__} holds no verdict to put in a model card (was the verdict "
                          "computed? it needs the favourable label)")
    group_metrics = getattr(subject, "group_metrics", None)
    if isinstance(group_metrics, dict):
        from ..verdict.group_metrics import GroupMetrics

        group_metrics = GroupMetrics.from_dict(group_metrics)
    metrics = _verdict_metrics(verdict)
    metrics += _model_metrics(verdict.meta)
    if group_metrics is not None:
        metrics += _group_metric_records(group_metrics)
    limitations = list(verdict.notes)
    max_share = getattr(subject, "max_share", None)
    if max_share is not None:
        limitations.insert(0, f"fairness gate: {subject.outcome} against a largest share affected of {max_share:g} "
                              f"({subject.line()})")
    return metrics, _assessments(verdict), limitations


def _verdict_metrics(v) -> list[dict]:
    """Share affected overall and share harmed / affected per group; an exact verdict's interval has width 0."""
    population = v.population_text
    pa = ", ".join(v.protected)
    exact = "exact: every individual checked" if v.exact else f"{v.confidence:.0%} {v.method} interval"
    out = [_metric(f"share affected (a counterpart differing only in {pa} gets another label)", v.share,
                   f"{v.n_individuals:,} individuals of {population} ({exact})", _bounds(v, v.share, v.lower, v.upper))]
    level = "exact" if v.exact else f"{v.group_confidence:.4%} {v.method} intervals, Bonferroni over the groups"
    for g in v.groups:
        where = f"group {g['group']}: {g['n']:,} individuals of {population} ({level})"
        if g.get("share_harmed") is not None:
            out.append(_metric("share harmed (unfavourable label while a counterpart gets the favourable one)",
                               g["share_harmed"], where,
                               _bounds(v, g["share_harmed"], g.get("share_harmed_lower"), g.get("share_harmed_upper"))))
        if g.get("share_affected") is not None:
            out.append(_metric("share affected in the group", g["share_affected"], where,
                               _bounds(v, g["share_affected"], g.get("lower"), g.get("upper"))))
    return out


def _bounds(v, share, lower, upper):
    return (share, share) if v.exact else (lower, upper)


def _model_metrics(meta: dict) -> list[dict]:
    rows = meta.get("model_evaluated_on")
    out = []
    for key, name in (("model_f1", "F1"), ("model_accuracy", "accuracy")):
        if meta.get(key) is not None:
            out.append(_metric(name, meta[key], rows or "the held-out rows", None))
    return out


def _group_metric_records(gm) -> list[dict]:
    out = []
    for r in [gm.overall, *gm.groups]:
        for m, name in METRIC_NAMES.items():
            value = r.get(m)
            bounds = None if value is None or r.get(f"{m}_lower") is None else (r[f"{m}_lower"], r[f"{m}_upper"])
            where = "all held-out rows" if r["group"] == "all" else f"group {r['group']}"
            out.append(_metric(name, value, f"{where}: {r['n']:,} rows of {gm.rows or 'the held-out rows'}", bounds))
    return out


def _assessments(v) -> list[dict]:
    pa = ", ".join(v.protected)
    harmed = sorted((g for g in v.groups if g.get("n_harmed")), key=lambda g: -g["share_harmed"])
    out = []
    for g in harmed:
        interval = "" if v.exact else f" [{g['share_harmed_lower']:.2%}, {g['share_harmed_upper']:.2%}]"
        favoured = g["n_affected"] - g["n_harmed"]
        out.append({"groupAtRisk": g["group"],
                    "harms": f"{g['share_harmed']:.2%}{interval} of the group ({g['n_harmed']:,} of {g['n']:,}) get "
                             f"the unfavourable outcome (label {1 - v.favourable}) while a counterpart differing only "
                             f"in {pa} gets the favourable one (label {v.favourable})",
                    "benefits": f"{favoured:,} of the group get the favourable outcome where such a counterpart "
                                "would not",
                    "mitigationStrategy": "retrain with the IDIs found (chiralfair retrain) and measure again on the "
                                          "held-out rows"})
    return out


def _retrain_parts(r) -> tuple[list[dict], list[dict], list[str]]:
    rows_text = (r.meta or {}).get("test_rows") or "the held-out rows"
    metrics = []
    for row in r.rows:
        stage = "before retraining" if row["stage"] == "before" else (
            f"after retraining ({row.get('method') or 'paper'}"
            + ("" if row["share"] is None else f", share {row['share']:g}") + ")")
        if row.get("test_idi_rate") is not None:
            metrics.append(_metric("share of held-out rows that are IDIs", row["test_idi_rate"],
                                   f"{rows_text}, {stage}",
                                   (row["test_idi_lower"], row["test_idi_upper"])
                                   if row.get("test_idi_lower") is not None else None))
        if row.get("domain_idi_rate") is not None:
            metrics.append(_metric("share of domain draws that are IDIs", row["domain_idi_rate"],
                                   f"uniform draws from the input domain, {stage}",
                                   (row["domain_idi_lower"], row["domain_idi_upper"])
                                   if row.get("domain_idi_lower") is not None else None))
        for key, name in (("f1", "F1"), ("accuracy", "accuracy"),
                          ("demographic_parity_difference", "demographic parity difference")):
            if row.get(key) is not None:
                metrics.append(_metric(name, row[key], f"{rows_text}, {stage}", None))
    return metrics, [], list(r.notes)


def _metric(kind: str, value, slice_text: str, bounds) -> dict[str, Any]:
    out: dict[str, Any] = {"type": kind, "value": "undefined" if value is None else _number(value), "slice": slice_text}
    if bounds is not None and bounds[0] is not None:
        out["confidenceInterval"] = {"lowerBound": _number(bounds[0]), "upperBound": _number(bounds[1])}
    return out


def _content_id(obj) -> uuid.UUID:
    # Not storage.canonical_json: its compact separators would give every card already written a new UUID.
    return uuid.uuid5(uuid.NAMESPACE_URL, "chiralfair:" + json.dumps(obj, sort_keys=True))


def _number(value) -> str:
    return f"{float(value):.6g}"


def _show(text: str) -> str:
    try:
        return f"{float(text):.2%}" if 0 <= float(text) <= 1 else text
    except ValueError:
        return text


__all__ = ["add_to_skops_card", "cyclonedx_bom", "cyclonedx_model_card", "fairness_markdown", "write_model_card"]
