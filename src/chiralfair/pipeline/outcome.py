"""What one run produced (:class:`RunOutcome`), and its figures as ``result.json`` holds them (:meth:`summary`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .. import __version__
from .config import RunConfig


@dataclass(frozen=True)
class RunOutcome:
    """What one run produced: the verdict, the search result, the seed report, the model's quality, the timings.

    Attributes
    ----------
    config : RunConfig
        The run's parameters (for your own data: ``dataset`` is the data's name, ``model`` the model's).
    result : SearchResult
    seed_report : SeedReport
    domain : Domain
    model_info : dict
        ``name``, ``f1``, ``accuracy``, ``evaluated_on`` (the held-out rows, in words), ``n_test``,
        ``train_seconds``, ``from_cache``.
    seconds : dict of str to float
        Wall seconds per step: ``data``, ``model``, ``seeds``, ``search`` (streaming the pairs included),
        ``verdict`` (when estimated), ``total``; the run folder's ``result.json`` adds ``write``.
    notes : tuple of str
        About the data and the model: a raw file that is not the published one, refused protected values, held-out
        rows that may include training rows.
    verdict : Verdict or None
        Share of the held-out rows affected, with the harm table (None when not asked for or the favourable
        label is unknown).
    favourable : int or None
        The favourable label (0 or 1), when known: the IDI pairs are then counted by the side it goes to.
    seed_diversity : dict or None
        :meth:`DiversityReport.to_dict <chiralfair.seeds.diversity_report.DiversityReport.to_dict>` of the seeds;
        None unless asked for.
    source : dict
        Where the data and the model came from (:attr:`RunInputs.source <chiralfair.pipeline.RunInputs.source>`).
    random_state : dict
        ``random_state`` as given (readable) and ``resolved_random_state`` (the int every step used).
    group_metrics : GroupMetrics or None
        Selection rate, TPR, FPR and IDI rate per protected group on the held-out rows (fairlearn ``MetricFrame``;
        :mod:`chiralfair.verdict.group_metrics`), measured with the verdict.
    queries : dict or None
        The queries of the budget and the rows sent outside it (:func:`~chiralfair.pipeline.run.query_record`).
    codec : FrameCodec or None
        How the codes searched decode into the rows the model is fed, for a model fed the data's own rows
        (:func:`~chiralfair.results.run_folder.fed_codec`): the pairs then show each binned column as the value the
        model was fed, its bin beside it; None for a model fed codes.
    """

    config: RunConfig
    result: Any
    seed_report: Any
    domain: Any
    model_info: dict[str, Any]
    seconds: dict[str, float]
    notes: tuple[str, ...] = ()
    verdict: Any = None
    favourable: int | None = None
    seed_diversity: dict[str, Any] | None = None
    source: dict[str, Any] | None = None
    random_state: dict[str, Any] | None = None
    group_metrics: Any = None
    queries: dict[str, Any] | None = None
    codec: Any = None

    def summary(self) -> dict[str, Any]:
        """The figures of result.json: verdict, search summary, direction of the IDI pairs, seeds, model, timings.

        ``verdict`` is :meth:`Verdict.to_json` as an object (or None). ``idi_directions`` (when the favourable
        label is known) holds ``favourable``, ``n_idi_favoured`` and ``n_counterpart_favoured`` (they add up to
        ``n_idis``), ``by_protected_value`` (:meth:`SearchResult.idi_directions` records) and ``disfavoured``
        (:func:`~chiralfair.results.disfavoured_groups` records). ``meta`` holds the version of chiralfair and of
        the libraries, the run's parameters, where the data and model came from, and the domain.

        Returns
        -------
        dict
        """
        from ..results.provenance import library_versions

        out = {"verdict": None if self.verdict is None else json.loads(self.verdict.to_json())}
        out["group_metrics"] = None if self.group_metrics is None else self.group_metrics.to_dict()
        out.update(self.result.summary())
        out["idi_directions"] = self.idi_directions()
        out["initialization_rate"] = self.seed_report.initialization_rate
        out["seeds"] = {
            "strategy": self.seed_report.strategy, "n_seeds": self.seed_report.n_seeds,
            "initialization_rate": self.seed_report.initialization_rate,
            "n_initial_idis": self.seed_report.n_initial_idis, "n_candidates": self.seed_report.n_candidates,
            "clustering": self.seed_report.clustering, "seconds": self.seed_report.seconds,
            "n_queries": self.seed_report.n_queries, "notes": list(self.seed_report.notes),
            "diversity": self.seed_diversity,
            "chiral_network": (self.seed_report.meta.get("chiral_model") or {}).get("network")}
        out["query_budget"] = self.result.meta.get("query_budget")
        out["queries"] = self.queries
        out["generator_choice"] = self.result.meta.get("generator_choice")
        out["counterparts"] = counterpart_summary(self.domain, self.result)
        out["model"] = dict(self.model_info)
        out["seconds_by_step"] = dict(self.seconds)
        out["notes"] = list(self.notes) + list(self.result.notes)
        out["meta"] = {"chiralfair_version": __version__, "versions": library_versions(),
                       "config": self.config.to_dict(), "source": self.source,
                       "random_state": self.random_state, "protected": self.domain.protected_names,
                       "generator_params": self.result.meta.get("params"), "domain": self.domain.to_dict()}
        return out

    def idi_directions(self) -> dict[str, Any] | None:
        """Which side of each IDI pair gets the favourable label, counted from the search's aggregates.

        Returns
        -------
        dict or None
            See :meth:`summary`; None when the favourable label is not known.
        """
        from ..results import disfavoured_groups

        if self.favourable is None:
            return None
        table = self.result.idi_directions(self.domain, self.favourable)
        return {"favourable": self.favourable, "n_idi_favoured": int(table["n_idi_favoured"].sum()),
                "n_counterpart_favoured": int(table["n_counterpart_favoured"].sum()),
                "by_protected_value": table.to_dict(orient="records"),
                "disfavoured": disfavoured_groups(table, self.domain.protected_names).to_dict(orient="records")}


# Rare (protected value, categorical value) pairs listed in result.json and the report.
MAX_RULES_LISTED = 10


def counterpart_summary(domain, result) -> dict[str, Any]:
    """What the counterparts of a run were: couplings, constraints, plausibility, suggested rules.

    See architecture: counterparts that could exist.

    Parameters
    ----------
    domain : Domain
        The domain the search ran on.
    result : SearchResult

    Returns
    -------
    dict
        ``couplings`` and ``constraints`` (text), ``n_plausible_idis`` and ``plausible_share`` (of ``n_idis``;
        None when the domain has no support), ``rare_pairs`` (up to :data:`MAX_RULES_LISTED` rules the data
        suggests, :meth:`Domain.rare_pairs <chiralfair.domain.Domain.rare_pairs>`), ``n_rare_pairs`` and
        ``suggested_couplings`` (``--couple`` text not declared yet).
    """
    from ..domain.plausibility import suggested_couplings

    rare = domain.rare_pairs()
    declared = {(c.attribute, c.column) for c in domain.couplings}
    suggested = [s for s in suggested_couplings(rare, domain)
                 if tuple(s.split("=", 1)[0].split(":", 1)) not in declared]
    n = result.n_plausible_idis
    return {"couplings": domain.describe_couplings(), "constraints": domain.describe_constraints(),
            "n_plausible_idis": n, "plausible_share": None if n is None or not result.n_idis else n / result.n_idis,
            "rare_pairs": rare[:MAX_RULES_LISTED], "n_rare_pairs": len(rare), "suggested_couplings": suggested}
