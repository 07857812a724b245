"""A description of every benchmark dataset (``chiralfair datasets``), from the published facts where possible.

A raw file whose SHA-256 is the published one is described from :mod:`chiralfair.datasets.published` without
being parsed, and without importing the parsers (pandas); any other file is loaded with
:func:`~chiralfair.datasets.load_dataset`, so that its own rows, or its error, are reported.
"""

from __future__ import annotations

import os

from ..exceptions import ChecksumError, DataHomeError, DatasetError
from . import home
from .published import PUBLISHED


def describe_datasets(data_home: str | os.PathLike | None = None) -> list[dict]:
    """Describe every benchmark dataset; never downloads, and parses only raw files that are not the published.

    Parameters
    ----------
    data_home : str or path-like, optional
        See :func:`~chiralfair.datasets.load_dataset`.

    Returns
    -------
    list of dict
        One per dataset, with keys ``name``, ``description``, ``raw_file`` (relative path), ``url``, ``path``
        (where the raw file was found, or None), ``status`` ("found", "missing: …" or "error: …"), ``rows``,
        ``n_attributes``, ``attributes`` (names), ``label``, ``positive_class``, ``positive_rows``,
        ``protected`` (each protected attribute → {code: label} of its observed values, or None when the file
        is missing or unreadable), ``default_protected`` and ``couple`` (the dataset's default couplings,
        architecture: counterparts that could exist; ``{}`` for none).
    """
    return [_describe(name, facts, data_home) for name, facts in PUBLISHED.items()]


def _describe(name: str, facts: dict, data_home) -> dict:
    raw = home.raw_file(facts["raw"])
    path = home.find_raw(facts["raw"], data_home)
    protected = tuple(facts["protected"])
    entry = {
        "name": name, "description": facts["description"], "raw_file": facts["raw"], "url": raw.url,
        "path": str(path) if path is not None else None, "label": facts["label"],
        "positive_class": facts["positive_class"], "default_protected": protected[0],
        "rows": None, "n_attributes": None, "attributes": None, "positive_rows": None,
        "protected": dict.fromkeys(protected), "couple": dict(facts.get("couple") or {}),
    }
    if path is None:
        folders = ", ".join(str(f) for f in home.search_folders(data_home))
        entry["status"] = f"missing: not in {folders}; downloaded from {raw.url} on first use"
        return entry
    if home.checksum_mismatch(path, raw) is None:
        entry.update(status="found", rows=facts["rows"], n_attributes=len(facts["attributes"]),
                     attributes=list(facts["attributes"]), positive_rows=facts["positive_rows"],
                     protected={p: dict(codes) for p, codes in facts["protected"].items()})
        return entry
    from .catalog import load_dataset

    try:
        ds = load_dataset(name, protected=list(protected), data_home=data_home)
    except (ChecksumError, DatasetError, DataHomeError) as exc:
        entry["status"] = f"error: {exc}"
        return entry
    dom = ds.domain
    entry.update(
        status="found", rows=ds.n_samples, n_attributes=dom.n_features, attributes=dom.names,
        positive_rows=int(ds.y.sum()),
        protected={dom.features[i].name: {v: dom.features[i].label(v) for v in values}
                   for i, values in zip(dom.protected, dom.protected_values, strict=True)},
    )
    return entry
