"""The verdict in a model card: a CycloneDX ``modelCard`` fragment, and a section of a skops model card.

Both carry the same figures. :func:`cyclonedx_model_card` writes the CycloneDX 1.6 ``modelCard`` object (what a
``machine-learning-model`` component holds): ``quantitativeAnalysis.performanceMetrics`` gives the share of
individuals affected (with its confidence interval), the share harmed and affected in each protected group, the
model's F1 and accuracy on the held-out rows, and, when measured, each group's selection rate, TPR and FPR;
``considerations.fairnessAssessments`` names every group at risk with the harm (the share of it that gets the
unfavourable label while a counterpart differing only in the protected attributes gets the favourable one);
``considerations.technicalLimitations`` holds the verdict's notes. Every figure names its slice (the rows or
group it was measured on). :func:`add_to_skops_card` adds the same figures to a :class:`skops.card.Card` (a
section with the tables, between the lines ``<!-- chiralfair:begin -->`` and ``<!-- chiralfair:end -->``, and the
headline figures in its metrics table). :func:`cyclonedx_bom` wraps the card in a complete CycloneDX 1.6 BOM (the
model component with its hash, the data files as ``data`` components), as ``--bom FILE`` writes it.

A card is never written over a file chiralfair did not write (:func:`check_card_file`): a JSON card or BOM
replaces only a card or BOM chiralfair wrote, and an existing Markdown file (a README) has only the text between
its two marker lines replaced; any other existing file is refused, as ``--out`` refuses a folder holding other
files.

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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import __version__
from ..exceptions import ConfigError
from ..storage import atomic_path, atomic_write_text

SPEC_VERSION = "1.6"
CARD_SUFFIXES = (".json", ".md")
CARD_REF_PREFIX = "chiralfair-model-card-"
# The lines around the figures chiralfair writes into a Markdown file; it never touches the text outside them.
MARK_BEGIN, MARK_END = "<!-- chiralfair:begin -->", "<!-- chiralfair:end -->"
DATA_ROLES = {"data": "the data given (--data)", "test": "the held-out rows given (--test)"}
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
    return {"bom-ref": f"{CARD_REF_PREFIX}{_content_id(card)}", **card}


def cyclonedx_bom(card: dict[str, Any], *, name: str = "model", version: str | None = None,
                  model_file: str | os.PathLike | None = None,
                  data_files: Mapping[str, str | os.PathLike] | None = None) -> dict[str, Any]:
    """A complete CycloneDX 1.6 BOM: the model as a ``machine-learning-model`` component holding ``card``.

    The model is the BOM's subject (``metadata.component``) and its one component; chiralfair is the tool that
    wrote it. Each data file given is a ``data`` component (with its SHA-256), referenced from the card's
    ``modelParameters.datasets``; the model file's SHA-256 is the model component's hash. Named by its content
    (``serialNumber``), without a timestamp, so that the same figures and files give the same BOM byte for byte.

    Parameters
    ----------
    card : dict
        :func:`cyclonedx_model_card`.
    name : str
        The component's name (the model's: its file name, or a zoo model's name).
    version : str, optional
        The component's version.
    model_file : path, optional
        The model file, hashed (SHA-256).
    data_files : mapping of str to path, optional
        Role (``"data"``, ``"test"``) -> data file, each hashed (SHA-256).

    Returns
    -------
    dict
        Valid against the CycloneDX 1.6 JSON schema (``tests/test_model_card.py`` checks it with
        cyclonedx-python-lib's validator).

    Raises
    ------
    ConfigError
        For a model or data file that cannot be read.
    """
    card = dict(card)
    datasets = []
    data_components = []
    for role, path in (data_files or {}).items():
        ref = f"data-{role}-{Path(path).name}"
        data_components.append({"type": "data", "bom-ref": ref, "name": Path(path).name,
                                "description": DATA_ROLES.get(role, role), "hashes": [_sha256(path)],
                                "data": [{"type": "dataset", "name": Path(path).name}]})
        datasets.append({"ref": ref})
    if datasets:
        card["modelParameters"] = {**card.get("modelParameters", {}), "task": "binary classification",
                                   "datasets": datasets}
    model: dict[str, Any] = {"type": "machine-learning-model", "bom-ref": f"model-{name}", "name": name}
    if version is not None:
        model["version"] = version
    if model_file is not None:
        model["hashes"] = [_sha256(model_file)]
    model["modelCard"] = card
    # The subject repeats the component without its card; a bom-ref is unique within a BOM, so it has none.
    subject_component = {k: v for k, v in model.items() if k not in ("modelCard", "bom-ref")}
    bom = {"bomFormat": "CycloneDX", "specVersion": SPEC_VERSION, "version": 1,
           "metadata": {"tools": {"components": [{"type": "application", "name": "chiralfair",
                                                  "version": __version__}]},
                        "component": subject_component},
           "components": [model, *data_components]}
    return {"bomFormat": "CycloneDX", "specVersion": SPEC_VERSION, "serialNumber": f"urn:uuid:{_content_id(bom)}",
            **{k: v for k, v in bom.items() if k not in ("bomFormat", "specVersion")}}


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
    card.add(**{section: f"{MARK_BEGIN}\n{fairness_markdown(subject)}\n{MARK_END}"})
    headline = {}
    shares = [m for m in metrics if m["type"].startswith("share affected (")][:2]  # exact share, people's interval
    for m in (shares or metrics[:1]) + [m for m in metrics if m["type"].startswith("F1")][:1]:
        ci = m.get("confidenceInterval")
        headline[f"{m['type']} ({m['slice']})"] = (_show(m["value"]) if not ci else
                                                   f"{_show(m['value'])} [{_show(ci['lowerBound'])}, "
                                                   f"{_show(ci['upperBound'])}]")
    card.add_metrics(**headline)
    return card


def write_model_card(subject, path: str | os.PathLike, *, model=None) -> Path:
    """Write the model card of ``subject``: CycloneDX JSON (``.json``) or a skops model card (``.md``).

    Never overwrites a file chiralfair did not write (:func:`check_card_file`): a ``.json`` file is replaced only
    when it holds a card chiralfair wrote; an existing ``.md`` file only has the text between its
    ``<!-- chiralfair:begin -->`` and ``<!-- chiralfair:end -->`` lines replaced by the fairness figures (a new
    ``.md`` card holds those lines around its fairness section, and a hand-written README can take them where the
    figures go); any other existing file is refused.

    Parameters
    ----------
    subject : Verdict, AuditResult, RunOutcome, GateDecision or RetrainResult
    path : path
        ``*.json``: the CycloneDX ``modelCard`` fragment (:func:`cyclonedx_model_card`); ``*.md``: a skops model
        card of ``model`` with the fairness section (:func:`add_to_skops_card`), or the marked section of an
        existing Markdown file.
    model : sklearn estimator, optional
        Needed for a new ``.md`` card: the model the skops card describes.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ConfigError
        For another suffix, a file chiralfair did not write, or a new ``.md`` card without an sklearn model.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in CARD_SUFFIXES:
        raise ConfigError(f"model card {str(path)!r}: use a .json file (a CycloneDX modelCard) or a .md file (a skops "
                          f"model card of an sklearn model), not {path.suffix or 'no suffix'!r}")
    check_card_file(path)
    if suffix == ".md" and path.exists():
        atomic_write_text(path, _with_section(path.read_text(encoding="utf-8"), subject))
        return path
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


def write_bom(subject, path: str | os.PathLike, *, name: str = "model", model_file=None,
              data_files: Mapping[str, str | os.PathLike] | None = None) -> Path:
    """Write a complete CycloneDX 1.6 BOM (JSON) of the model with the model card of ``subject``.

    Parameters
    ----------
    subject : Verdict, AuditResult, RunOutcome, GateDecision or RetrainResult
    path : path
        A ``.json`` file; an existing one is replaced only when chiralfair wrote it (:func:`check_card_file`).
    name, model_file, data_files
        As :func:`cyclonedx_bom`.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ConfigError
        For another suffix than ``.json``, a file chiralfair did not write, or a file that cannot be read.
    """
    path = Path(path)
    if path.suffix.lower() != ".json":
        raise ConfigError(f"BOM {str(path)!r}: a CycloneDX BOM is a .json file, not {path.suffix or 'no suffix'!r}")
    check_card_file(path)
    bom = cyclonedx_bom(cyclonedx_model_card(subject), name=name, model_file=model_file, data_files=data_files)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(bom, indent=2) + "\n")
    return path


def check_card_file(path: str | os.PathLike) -> None:
    """Refuse a model card or BOM file that would overwrite a file chiralfair did not write (light: no import).

    An absent file is fine. An existing ``.json`` file must hold a card (``bom-ref`` ``chiralfair-model-card-...``)
    or a BOM (its ``metadata.tools`` naming chiralfair) that chiralfair wrote; an existing ``.md`` file must hold
    the two lines ``<!-- chiralfair:begin -->`` and ``<!-- chiralfair:end -->``, in that order, once: only the text
    between them is replaced.

    Parameters
    ----------
    path : path

    Raises
    ------
    ConfigError
        Naming the file, why it is not chiralfair's, and what to do.
    """
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return
    if not path.is_file():
        raise ConfigError(f"model card {str(path)!r} is a folder, not a file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"model card {str(path)!r} exists and cannot be read ({err}); chiralfair overwrites only "
                          "the files it wrote: give a new file") from None
    if path.suffix.lower() == ".md":
        if _section_span(text) is None:
            raise ConfigError(f"{str(path)!r} exists and has no chiralfair section: chiralfair never overwrites a file "
                              f"it did not write, and updates an existing Markdown file only between a line "
                              f"{MARK_BEGIN} and a line {MARK_END}; add those two lines where the fairness figures "
                              "go, or give a new file")
        return
    if not _written_by_chiralfair(text):
        raise ConfigError(f"{str(path)!r} exists and is not a model card or BOM chiralfair wrote: chiralfair never "
                          "overwrites a file it did not write; give a new file, or remove this one")


def _written_by_chiralfair(text: str) -> bool:
    try:
        document = json.loads(text)
    except ValueError:
        return False
    if not isinstance(document, dict):
        return False
    if str(document.get("bom-ref", "")).startswith(CARD_REF_PREFIX):
        return True
    tools = ((document.get("metadata") or {}).get("tools") or {})
    components = tools.get("components", []) if isinstance(tools, dict) else []
    return document.get("bomFormat") == "CycloneDX" and any(
        isinstance(c, dict) and c.get("name") == "chiralfair" for c in components)


def _section_span(text: str) -> tuple[int, int] | None:
    """Where the marked section's content lies in ``text`` (after the begin line, before the end line), or None."""
    lines = text.splitlines(keepends=True)
    begins = [i for i, line in enumerate(lines) if line.strip() == MARK_BEGIN]
    ends = [i for i, line in enumerate(lines) if line.strip() == MARK_END]
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        return None
    start = sum(len(line) for line in lines[:begins[0] + 1])
    return start, sum(len(line) for line in lines[:ends[0]])


def _with_section(text: str, subject) -> str:
    span = _section_span(text)
    assert span is not None  # check_card_file refused the file otherwise
    return text[:span[0]] + ("" if text[:span[0]].endswith("\n") else "\n") + fairness_markdown(subject) + "\n" \
        + text[span[1]:]


def _sha256(path: str | os.PathLike) -> dict[str, str]:
    from ..results.provenance import file_sha256

    try:
        return {"alg": "SHA-256", "content": file_sha256(path)}
    except OSError as err:
        raise ConfigError(f"cannot read {str(path)!r} to hash it for the BOM: {err.strerror or err}") from None


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
    """Share affected overall, share harmed and affected per group, each interval named for what it speaks about.

    The verdict decided the intervals (:class:`~chiralfair.verdict.Verdict`: ``people_lower``, ``people_upper``,
    each group's ``people_harmed_lower``, ``people_harmed_upper``); the card only reads them. An exact share of the
    rows is given as a value without an interval (its interval would have width 0 and read as the people's).
    """
    population = v.population_text
    pa = ", ".join(v.protected)
    kind = f"share affected (a counterpart differing only in {pa} gets another label)"
    people = v.people_lower is not None
    level = "" if not people else f"{v.people_confidence:.0%} {_method(v.people_method)}"
    if v.exact:
        out = [_metric(kind, v.share, f"exact share of these {v.n_individuals:,} individuals of {population} (every "
                                      "individual checked)", None)]
        if people:
            out.append(_metric(f"{kind}, for the people the model will meet", v.share,
                               f"the people the model will meet: the {v.n_individuals:,} individuals of {population} "
                               f"read as a sample of them ({level} interval)", (v.people_lower, v.people_upper)))
    else:
        whom = f"and for the people the model will meet ({level} interval)" if people else (
            f"({v.confidence:.0%} {_method(v.method)} interval)")
        out = [_metric(kind, v.share, f"{v.n_individuals:,} individuals sampled from {population}, {whom}",
                       (v.lower, v.upper))]
    for g in v.groups:
        if not g["n"]:
            continue
        small = "; too small to tell" if g["too_small"] else ""
        worst = "; the worst group" if g["group"] == v.worst_group else ""
        group = f"group {g['group']}: {g['n']:,} individuals of {population}"
        if g.get("share_harmed") is not None:
            bounds: tuple[Any, Any] | None
            if people:
                where = (f"{group}; interval for the people of that group the model will meet "
                         f"({v.people_confidence:.0%} Clopper-Pearson){worst}{small}")
                bounds = (g["people_harmed_lower"], g["people_harmed_upper"])
            else:
                where = f"{group} ({'exact' if v.exact else _group_level(v)}){worst}{small}"
                bounds = None if v.exact else (g.get("share_harmed_lower"), g.get("share_harmed_upper"))
            out.append(_metric("share harmed (unfavourable label while a counterpart gets the favourable one)",
                               g["share_harmed"], where, bounds))
        if g.get("share_affected") is not None:
            out.append(_metric("share affected in the group", g["share_affected"],
                               f"{group} ({'exact for these rows' if v.exact else _group_level(v)})",
                               None if v.exact else (g.get("lower"), g.get("upper"))))
    return out


def _group_level(v) -> str:
    return f"{v.group_confidence:.4%} {_method(v.method)} interval, Bonferroni over the groups"


def _method(method: str | None) -> str:
    return {"wilson": "Wilson", "clopper-pearson": "Clopper-Pearson"}.get(method or "", method or "")


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
    """Every harmed group, the worst group first, its interval the one the verdict decided; too small ones named."""
    pa = ", ".join(v.protected)
    harmed = sorted((g for g in v.groups if g.get("n_harmed")),
                    key=lambda g: (g["group"] != v.worst_group, g["too_small"], -g["share_harmed"]))
    out = []
    for g in harmed:
        if g.get("people_harmed_lower") is not None:
            interval = (f" [{g['people_harmed_lower']:.2%}, {g['people_harmed_upper']:.2%}] for the people of that "
                        f"group the model will meet ({v.people_confidence:.0%} Clopper-Pearson)")
        else:
            interval = "" if v.exact else f" [{g['share_harmed_lower']:.2%}, {g['share_harmed_upper']:.2%}]"
        verdict = ("the worst group: " if g["group"] == v.worst_group else
                   "too small to tell: " if g["too_small"] else "")
        favoured = g["n_affected"] - g["n_harmed"]
        out.append({"groupAtRisk": g["group"],
                    "harms": f"{verdict}{g['share_harmed']:.2%} of the group ({g['n_harmed']:,} of {g['n']:,}; "
                             f"{interval.strip() or 'exact for these rows'}) get the unfavourable outcome "
                             f"({v.label_text(1 - v.favourable)}) while a counterpart differing only in {pa} gets the "
                             f"favourable one ({v.label_text(v.favourable)})",
                    "benefits": f"{favoured:,} of the group get the favourable outcome where such a counterpart "
                                "would not",
                    "mitigationStrategy": "retrain with the IDIs found (chiralfair retrain) and measure again on the "
                                          "held-out rows"})
    return out


def _retrain_parts(r) -> tuple[list[dict], list[dict], list[str]]:
    from ..mitigation.names import DEFAULT_METHOD

    rows_text = (r.meta or {}).get("test_rows") or "the held-out rows"
    metrics = []
    for row in r.rows:
        stage = "before retraining" if row["stage"] == "before" else (
            f"after retraining ({row.get('method') or DEFAULT_METHOD}"
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


__all__ = ["add_to_skops_card", "check_card_file", "cyclonedx_bom", "cyclonedx_model_card", "fairness_markdown",
           "write_bom", "write_model_card"]
