"""``chiralfair seeds``: select seeds repeatedly; print the initialization rate, the time split and the diversity."""

from __future__ import annotations

import json
import statistics
import sys
from typing import Annotated

import typer

from .console import print_table, refusals, setup_logging
from .options import (
    CacheOpt,
    ChecksumOpt,
    DataHomeOpt,
    DatasetOpt,
    JsonOpt,
    ModelOpt,
    ProtectedOpt,
    RandomOpt,
    SeedsOpt,
    TrainModelOpt,
    VerboseOpt,
)


def seeds(
    dataset: DatasetOpt = "census",
    protected: ProtectedOpt = None,
    model: ModelOpt = "dnn",
    strategy: SeedsOpt = "iandd",
    n_seeds: Annotated[int, typer.Option(help="Seeds per repeat (>= 1).")] = 1000,
    repeats: Annotated[int, typer.Option(
        help="Selections with random_state, random_state+1, ...; they share one chiral model, trained with the "
             "model's random_state.")] = 10,
    random_state: RandomOpt = 0,
    data_home: DataHomeOpt = None,
    cache_dir: CacheOpt = None,
    allow_checksum_mismatch: ChecksumOpt = False,
    train_model: TrainModelOpt = False,
    json_out: JsonOpt = False,
    verbose: VerboseOpt = False,
    diversity: Annotated[bool, typer.Option(
        help="Measure the diversity of the seeds (SHAP clusters, pairwise distance, decision paths) against one "
             "reference per model, seeded by --random-state.")] = True,
) -> None:
    """Select seeds repeatedly and report the initialization rate, the time split and the seeds' diversity."""
    from ..pipeline.checks import check_protected_given

    with refusals():
        check_protected_given(protected, name="--protected")
        from ..pipeline import RunConfig, protected_list
        from ..pipeline.selections import select_repeatedly

        config = RunConfig(dataset=dataset, protected=protected_list(protected), model=model, seeds=strategy,
                           random_state=random_state, data_home=data_home, cache_dir=cache_dir,
                           allow_checksum_mismatch=allow_checksum_mismatch, reference=not train_model)
        setup_logging(verbose)

        def bar(repeat_range):
            from tqdm import tqdm

            return tqdm(repeat_range, desc=f"{strategy} seeds", disable=json_out, file=sys.stderr, leave=False)

        done = select_repeatedly(config, n_seeds=n_seeds, repeats=repeats, diversity=diversity, progress=bar)
    summary = done["summary"]
    if json_out:
        typer.echo(json.dumps(summary, indent=2, default=str))
        return
    ir = summary["initialization_rate"]
    rows = [("initialization rate", f"{ir['mean']:.1%} ± {ir['std']:.1%} (min {ir['min']:.1%},"
                                    f" max {ir['max']:.1%}, {repeats} repeats)")]
    if summary["n_initial_idis"][0] is not None:
        rows.append(("initial IDIs", ", ".join(str(n) for n in summary["n_initial_idis"][:10])))
    for key, label, form in (("initial_idis_per_1000_queries", "initial IDIs per 1,000 queries", "{:.1f}"),
                             ("candidate_idi_share", "IDI share of the candidates", "{:.1%}")):
        if summary[key][0] is not None:
            rows.append((label, form.format(statistics.median(summary[key])) + " (median)"))
    rows += _diversity_rows(done["diversities"])
    rows += [(f"seconds: {k}", f"{v:.3f} (median)") for k, v in summary["seconds_median"].items()]
    print_table(rows, f"{dataset} / {','.join(summary['protected'])} / {model} (test F1 {done['model_f1']:.3f}) —"
                      f" {strategy}, {n_seeds} seeds")
    for note in summary["notes"]:
        typer.echo(f"  note: {note}")


def _diversity_rows(diversities: list) -> list[tuple[str, str]]:
    """Table rows with the median diversity measures over the repeats (none without reports)."""
    if not diversities:
        return []
    first = diversities[0]

    def median(name):
        values = [getattr(d, name) for d in diversities]
        return statistics.median(values) if None not in values else None

    distance = median("mean_pairwise_distance")
    return [
        ("diversity: SHAP clusters covered",
         f"{median('clusters_covered'):g} of {first.n_reference_clusters}, entropy "
         f"{median('cluster_entropy'):.2f} nats (median; {first.n_explained} seeds explained by {first.explainer})"),
        ("diversity: pairwise distance", "-" if distance is None else
         f"{distance:.3f} (median of the mean Gower distance, non-protected attributes)"),
        ("diversity: decision paths", f"{median('leaves_covered'):g} of {first.n_leaves} surrogate-tree leaves "
                                      f"(median)"),
    ]
