"""The ``chiralfair`` command line: ``run``, ``seeds``, ``datasets`` and ``schema infer``."""

from __future__ import annotations

import contextlib
import json
import logging
import re
import statistics
import sys
from pathlib import Path
from typing import Annotated

import typer

from .exceptions import ChiralfairError, ConfigError

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Individual fairness testing of tabular classifiers: find IDIs with I&D seeds.")

DatasetOpt = Annotated[str, typer.Option(help="Benchmark dataset: census, compas, bank, german.")]
RunDatasetOpt = Annotated[str | None, typer.Option(
    help="Benchmark dataset: census, compas, bank, german (default census; not with --data).")]
DataOpt = Annotated[Path | None, typer.Option(
    "--data", help="Your own data: a .csv or .parquet file with the label column (instead of --dataset).")]
LabelOpt = Annotated[str | None, typer.Option(help="Label column of --data.")]
PositiveOpt = Annotated[str | None, typer.Option(
    help="Label value of the favourable outcome (needed unless the label holds only 0/1).")]
BinsOpt = Annotated[str | None, typer.Option(
    help="Bins of numeric columns of --data: age=0:25:45:65:120 (edges) or hours=10 (equal-width bins), "
         "comma-separated.")]
SchemaOpt = Annotated[Path | None, typer.Option(
    help="Schema TOML from 'chiralfair schema infer' (label, positive class, protected, bins); flags override it.")]
TrustOpt = Annotated[bool, typer.Option(
    "--trust-model-file", help="Load joblib/pickle files and skops files with untrusted types (runs their code).")]
ModelOutputOpt = Annotated[str | None, typer.Option(
    help="For torch and one-column ONNX models: whether the output is a 'probability' or a 'logit'.")]
ProtectedOpt = Annotated[str | None, typer.Option(
    help="Protected attribute(s), comma-separated, e.g. race,sex (default: the dataset's first).")]
ModelOpt = Annotated[str, typer.Option(help="Model under test: dnn, lr, svc, dtc, mlp, rf, hgb.")]
RunModelOpt = Annotated[str | None, typer.Option(
    help="Model under test: dnn, lr, svc, dtc, mlp, rf, hgb (default dnn); with --data, a model file: .skops, "
         "TorchScript (.pt, .pth, .ts), .onnx, or .joblib/.pkl with --trust-model-file.")]
RandomOpt = Annotated[int, typer.Option("--random-state", help="Seed for split, training, seeds and search.")]
DataHomeOpt = Annotated[str | None, typer.Option(help="Folder with the raw data (default: $CHIRALFAIR_DATA).")]
CacheOpt = Annotated[str | None, typer.Option(help="Model cache folder (default: $CHIRALFAIR_CACHE).")]
ChecksumOpt = Annotated[bool, typer.Option("--allow-checksum-mismatch",
                                           help="Use raw files whose SHA-256 differs from the expected one.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON to standard output instead of a table.")]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Log each step.")]


_FLAGS = ("max_global", "max_local", "random_state", "n_seeds", "repeats", "data_home", "cache_dir",
          "allow_checksum_mismatch", "workers")


def _fail(err: Exception, flags: tuple[str, ...] = _FLAGS) -> None:
    """Print a one-line error that names command-line flags (``--max-global``) rather than Python names.

    ``flags=()`` keeps the message as it is: the errors of a grid file name its keys (``repeats``,
    ``[max_global, max_local]``), which are not flags.
    """
    text = str(err)
    for name in flags:
        text = re.sub(rf"\b{name}\b", "--" + name.replace("_", "-"), text)
    typer.secho(f"error: {text}", err=True, fg=typer.colors.RED)
    raise typer.Exit(code=2)


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)


@contextlib.contextmanager
def _grid_logging(verbose: bool):
    """Logging for a grid run; yields the level of the ``chiralfair`` logger inside the cells.

    Without ``--verbose`` the cells' own warnings (one per cell, in every worker process) would bury the progress
    bar: the cells log errors only (failures are listed at the end anyway). The local cluster keeps Dask's own
    logs at errors (:mod:`chiralfair.experiments.execution`).
    """
    _setup_logging(verbose)
    if verbose:
        yield None
        return
    library = logging.getLogger("chiralfair")
    level = library.level
    library.setLevel(logging.ERROR)
    try:
        yield logging.ERROR
    finally:
        library.setLevel(level)


@contextlib.contextmanager
def _progress(steps: list[str], enabled: bool):
    """Yield an ``on_step(name)`` callback driving a tqdm bar over the steps of a run, on standard error.

    The bar is shown only on a terminal; log records are routed through tqdm so they do not break its line.
    """
    from tqdm import tqdm
    from tqdm.contrib.logging import logging_redirect_tqdm

    bar = tqdm(total=len(steps), disable=not (enabled and sys.stderr.isatty()), file=sys.stderr, leave=False,
               bar_format="{desc:<32} {bar:20} {n_fmt}/{total_fmt} [{elapsed}]")
    labels = {"data": "loading data", "model": "training or loading the model",
              "seeds": "selecting seeds", "search": "searching for IDIs",
              "verdict": "estimating the share affected"}
    seen: list[str] = []

    def on_step(name: str) -> None:
        if seen:
            bar.update(1)
        seen.append(name)
        bar.set_description_str(labels.get(name, name))

    try:
        with logging_redirect_tqdm():
            yield on_step
        bar.update(bar.total - bar.n)
    finally:
        bar.close()


def _protected_names(protected: str | None) -> tuple[str, ...]:
    """``"race,sex"`` as a tuple of names (``experiments.protected_list``, without importing experiments)."""
    return tuple(p.strip() for p in (protected or "").split(",") if p.strip())


def _check_protected_flag(protected: str | None) -> None:
    if protected is not None and not _protected_names(protected):
        _fail(ValueError(f"--protected {protected!r} names no attribute; give one or several, e.g. --protected "
                         "race,sex, or leave it out for the dataset's first protected attribute"))


def _refuse_early(*, dataset: str, protected: str | None, model: str, seeds: str | None = None,
                  generator: str | None = None, out: Path | None = None,
                  minimums: dict[str, tuple[int, int]] | None = None) -> None:
    """Refuse bad numbers, names, protected attributes and run folders before the implementations are imported.

    ``minimums`` maps a parameter name to its value and smallest valid value.

    torch, sklearn, shap and z3 take seconds to import; a refused flag should answer at once. The names come
    from tables that import nothing heavy (``datasets.published``, ``generators.names``, ``seeds.names``,
    ``models.zoo``), which tests check against the registries. The full checks (``validate_config``,
    ``load_dataset``) still run afterwards.
    """
    from ._validation import check_int
    from .datasets.published import PUBLISHED, unknown_protected_error
    from .exceptions import ConfigError, DatasetError, ModelCapabilityError
    from .generators.names import BUILTIN_GENERATORS, NEEDS_PROBABILITIES
    from .models.zoo import as_spec
    from .run_folder import check_run_folder
    from .seeds.names import BUILTIN_SEED_STRATEGIES

    _check_protected_flag(protected)
    try:
        for name, (value, minimum) in (minimums or {}).items():
            check_int(value, name, minimum=minimum)
        if dataset not in PUBLISHED:
            raise DatasetError(f"unknown dataset {dataset!r}; valid: {', '.join(PUBLISHED)}")
        for name in _protected_names(protected):
            if name not in PUBLISHED[dataset]["attributes"]:
                raise unknown_protected_error(dataset, name)
        spec = as_spec(model)
        if seeds is not None and seeds not in BUILTIN_SEED_STRATEGIES:
            raise ConfigError(f"unknown seed strategy {seeds!r}; valid: {', '.join(BUILTIN_SEED_STRATEGIES)}")
        if generator is not None and generator not in BUILTIN_GENERATORS:
            raise ConfigError(f"unknown generator {generator!r}; valid: {', '.join(BUILTIN_GENERATORS)}")
        if generator is not None and BUILTIN_GENERATORS[generator] and not spec.has_input_gradient:
            raise ModelCapabilityError(
                f"generator {generator!r} needs input_gradient() but model {model!r} does not provide it; "
                "gradient generators run on dnn, lr and mlp, black-box generators (aequitas, sg, themis) on any "
                "model")
        if generator in NEEDS_PROBABILITIES and not spec.has_predict_proba:
            raise ModelCapabilityError(f"generator {generator!r} needs predict_proba() but model {model!r} answers "
                                       "labels only; use a labels-only generator (aequitas, aft, expga, kosei, sg)")
        if out is not None:
            check_run_folder(out)
    except ChiralfairError as err:
        _fail(err)


def _print_table(rows: list[tuple[str, str]], title: str) -> None:
    width = max(len(k) for k, _ in rows)
    typer.echo(title)
    for k, v in rows:
        typer.echo(f"  {k:<{width}}  {v}")


def _version(value: bool) -> None:
    if value:
        from . import __version__
        typer.echo(f"chiralfair {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print the version and exit.")] = False) -> None:
    """Individual fairness testing of tabular classifiers: find IDIs with I&D seeds."""


@app.command()
def run(
    dataset: RunDatasetOpt = None,
    protected: ProtectedOpt = None,
    model: RunModelOpt = None,
    seeds: Annotated[str, typer.Option(
        help="Seed strategy: iandd, i, data_rows, cluster, random, rows, expga.")] = "iandd",
    generator: Annotated[str, typer.Option(
        help="Generator: aequitas (aequitas-random, aequitas-semi), sg, adf, eidig (= eidig-inf), eidig-5, expga, "
             "kosei, themis.")] = "aequitas",
    max_global: Annotated[int, typer.Option(help="Seeds used by the global phase (>= 1).")] = 100,
    max_local: Annotated[int, typer.Option(help="Local iterations per global IDI (>= 0).")] = 100,
    random_state: RandomOpt = 0,
    out: Annotated[Path | None, typer.Option(help="Run folder for result.json, idis.parquet, report.md.")] = None,
    data_home: DataHomeOpt = None,
    cache_dir: CacheOpt = None,
    allow_checksum_mismatch: ChecksumOpt = False,
    json_out: JsonOpt = False,
    verbose: VerboseOpt = False,
    data: DataOpt = None,
    label: LabelOpt = None,
    positive_class: PositiveOpt = None,
    bins: BinsOpt = None,
    schema: SchemaOpt = None,
    trust_model_file: TrustOpt = False,
    model_output: ModelOutputOpt = None,
    diversity: Annotated[bool, typer.Option(
        help="Also measure the diversity of the IDIs found: SHAP clusters, pairwise distance, decision paths "
             "(benchmark datasets).")] = False,
) -> None:
    """Find IDIs of a model on a benchmark dataset (or on your --data with your --model file); write the run folder."""
    if data is not None:
        if dataset is not None:
            _fail(ValueError("--data and --dataset are two forms of run: give your own data file with a model file "
                             "(--data FILE --model FILE), or a benchmark with a zoo model (--dataset NAME --model "
                             "NAME), not both"))
        if diversity:
            _fail(ValueError("--diversity measures runs on a benchmark dataset (--dataset NAME); it does not apply "
                             "to --data yet"))
        return _run_data(data=data, model=model, label=label, positive_class=positive_class, protected=protected,
                         bins=bins, schema=schema, trust=trust_model_file, model_output=model_output, seeds=seeds,
                         generator=generator, max_global=max_global, max_local=max_local,
                         random_state=random_state, out=out, json_out=json_out, verbose=verbose)
    only_with_data = [flag for flag, v in (("--label", label), ("--positive-class", positive_class),
                                           ("--bins", bins), ("--schema", schema), ("--model-output", model_output),
                                           ("--trust-model-file", trust_model_file or None)) if v is not None]
    if only_with_data:
        _fail(ValueError(f"{', '.join(only_with_data)} apply to your own data: use them with --data FILE"))
    dataset, model = dataset or "census", model or "dnn"
    _refuse_early(dataset=dataset, protected=protected, model=model, seeds=seeds, generator=generator, out=out,
                  minimums={"max_global": (max_global, 1), "max_local": (max_local, 0),
                            "random_state": (random_state, 0)})

    from .experiments import RunConfig, protected_list, run_experiment, validate_config
    from .report import (
        describe_clustering,
        prepare_run_folder,
        remove_empty_folders,
        summary_rows,
        verdict_lines,
        write_run,
    )

    _setup_logging(verbose)
    config = RunConfig(dataset=dataset, protected=protected_list(protected or ""), model=model, seeds=seeds,
                       generator=generator, max_global=max_global, max_local=max_local,
                       random_state=random_state, data_home=data_home, cache_dir=cache_dir,
                       allow_checksum_mismatch=allow_checksum_mismatch, diversity=diversity)
    created = []
    try:
        validate_config(config)
        if out is not None:
            created = prepare_run_folder(out)
        with _progress(["data", "model", "seeds", "search", "verdict"], enabled=not json_out) as on_step:
            outcome = run_experiment(config, on_step=on_step, out=out)
        summary = outcome.summary()
        if out is not None:
            write_run(outcome, out)
    except ChiralfairError as err:
        remove_empty_folders(created)
        _fail(err)
    except BaseException:
        remove_empty_folders(created)
        raise
    if json_out:
        typer.echo(json.dumps(summary, indent=2, default=str))
        return
    m = summary["model"]
    title = (f"{config.dataset} / {','.join(summary['meta']['protected'])} / {model} (test F1 {m['f1']:.3f}) — "
             f"{generator} with {seeds} seeds, max_global {max_global}, max_local {max_local}")
    for line in verdict_lines(summary):
        typer.echo(line)
    _print_table(summary_rows(summary), title)
    if summary["seeds"].get("clustering"):
        typer.echo(f"  seed clustering: {describe_clustering(summary['seeds']['clustering'])}")
    if summary.get("diversity") is not None:
        from .seeds.diversity_report import DiversityReport
        for line in DiversityReport.from_dict(summary["diversity"]).describe():
            typer.echo(f"  IDI diversity: {line}")
    for note in summary["notes"] + summary["seeds"]["notes"]:
        typer.echo(f"  note: {note}")
    if summary["n_idis"] == 0:
        typer.echo("  no IDI found within this budget — not a proof of fairness.")
    if out is not None:
        typer.echo(f"run folder: {out}")


@app.command("seeds")
def seeds_cmd(
    dataset: DatasetOpt = "census",
    protected: ProtectedOpt = None,
    model: ModelOpt = "dnn",
    strategy: Annotated[str, typer.Option(
        help="Seed strategy: iandd, i, data_rows, cluster, random, rows, expga.")] = "iandd",
    n_seeds: Annotated[int, typer.Option(help="Seeds per repeat (>= 1).")] = 1000,
    repeats: Annotated[int, typer.Option(
        help="Selections with random_state, random_state+1, ...; they share one chiral model, trained with the "
             "model's random_state.")] = 10,
    random_state: RandomOpt = 0,
    data_home: DataHomeOpt = None,
    cache_dir: CacheOpt = None,
    allow_checksum_mismatch: ChecksumOpt = False,
    json_out: JsonOpt = False,
    verbose: VerboseOpt = False,
    diversity: Annotated[bool, typer.Option(
        help="Measure the diversity of the seeds (SHAP clusters, pairwise distance, decision paths) against one "
             "reference per model, seeded by --random-state.")] = True,
) -> None:
    """Select seeds repeatedly and report the initialization rate, the time split and the seeds' diversity."""
    _refuse_early(dataset=dataset, protected=protected, model=model, seeds=strategy,
                  minimums={"n_seeds": (n_seeds, 1), "repeats": (repeats, 1), "random_state": (random_state, 0)})

    from tqdm import tqdm

    from .datasets import load_dataset
    from .experiments import protected_list
    from .models.training import train_model
    from .seeds import make_seed_strategy
    from .seeds.names import chiral_params

    _setup_logging(verbose)
    try:
        chooser = make_seed_strategy(strategy, **chiral_params(strategy, random_state, cache_dir))
        data = load_dataset(dataset, protected=list(protected_list(protected or "")) or None, data_home=data_home,
                            allow_checksum_mismatch=allow_checksum_mismatch)
        trained = train_model(data, model, random_state=random_state, cache_dir=cache_dir)
        reports = [chooser.select(trained.model, data, n_seeds, random_state=random_state + r)
                   for r in tqdm(range(repeats), desc=f"{strategy} seeds", disable=json_out, file=sys.stderr,
                                 leave=False)]
        diversities = _seed_diversities(trained.model, data, reports, random_state) if diversity else []
    except ChiralfairError as err:
        _fail(err)
    rates = [r.initialization_rate for r in reports]
    phases = sorted({k for r in reports for k in r.seconds})
    summary = {
        "dataset": dataset, "protected": data.domain.protected_names, "model": model, "strategy": strategy,
        "n_seeds": n_seeds, "repeats": repeats, "random_state": random_state, "model_f1": trained.f1,
        "initialization_rate": {"mean": statistics.fmean(rates),
                                "std": statistics.stdev(rates) if len(rates) > 1 else 0.0,
                                "min": min(rates), "max": max(rates), "values": rates},
        "n_initial_idis": [r.n_initial_idis for r in reports],
        "seconds_median": {k: statistics.median(r.seconds.get(k, 0.0) for r in reports) for k in phases},
        "clustering": [r.clustering for r in reports],
        "chiral_model_from_cache": [r.meta.get("chiral_model", {}).get("from_cache") for r in reports],
        "initial_idis_per_1000_queries": [r.initial_idis_per_1000_queries for r in reports],
        "candidate_idi_share": [r.candidate_idi_share for r in reports],
        "diversity": [d.to_dict() for d in diversities],
        "notes": sorted({n for r in reports for n in r.notes}),
    }
    if json_out:
        typer.echo(json.dumps(summary, indent=2, default=str))
        return
    ir = summary["initialization_rate"]
    rows = [("initialization rate", f"{ir['mean']:.1%} ± {ir['std']:.1%} (min {ir['min']:.1%},"
                                    f" max {ir['max']:.1%}, {repeats} repeats)")]
    if reports[0].n_initial_idis is not None:
        rows.append(("initial IDIs", ", ".join(str(n) for n in summary["n_initial_idis"][:10])))
    for key, label, form in (("initial_idis_per_1000_queries", "initial IDIs per 1,000 queries", "{:.1f}"),
                             ("candidate_idi_share", "IDI share of the candidates", "{:.1%}")):
        if summary[key][0] is not None:
            rows.append((label, form.format(statistics.median(summary[key])) + " (median)"))
    rows += _diversity_rows(diversities)
    rows += [(f"seconds: {k}", f"{v:.3f} (median)") for k, v in summary["seconds_median"].items()]
    _print_table(rows, f"{dataset} / {','.join(summary['protected'])} / {model} (test F1 {trained.f1:.3f}) —"
                       f" {strategy}, {n_seeds} seeds")
    for note in summary["notes"]:
        typer.echo(f"  note: {note}")


def _seed_diversities(model, data, reports, random_state: int) -> list:
    """Diversity of each repeat's seeds, against one reference seeded by the model's ``random_state``."""
    from .seeds.diversity_report import diversity_reference, seed_diversity

    reference = diversity_reference(model, data, random_state=random_state)
    return [seed_diversity(r.seeds, reference, random_state=random_state + i) for i, r in enumerate(reports)]


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


@app.command()
def datasets(
    data_home: DataHomeOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """List the benchmark datasets: rows, attributes, label, protected attributes and raw files."""
    from .datasets import describe_datasets

    try:
        info = describe_datasets(data_home=data_home)
    except ChiralfairError as err:
        _fail(err)
    if json_out:
        typer.echo(json.dumps(info, indent=2, default=str))
        return
    for d in info:
        typer.echo(_dataset_text(d))


def _dataset_text(d: dict) -> str:
    lines = [f"{d['name']}: {d.get('description', '')}"]
    if d.get("rows") is not None:
        lines.append(f"  {d['rows']:,} rows x {d['n_attributes']} attributes; label {d['label']!r},"
                     f" positive class {d['positive_class']!r} ({d.get('positive_rows', 0):,} rows)")
    for name, codes in (d.get("protected") or {}).items():
        values = ", ".join(f"{k}={v}" for k, v in codes.items()) if codes else "(domain unknown: raw file missing)"
        lines.append(f"  protected {name}: {values}")
    lines.append(f"  raw file: {d.get('path') or d.get('raw_file')} [{d.get('status')}]")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------- your own data
DATA_SUFFIXES = (".csv", ".parquet")


def _run_data(*, data: Path, model: str | None, label, positive_class, protected, bins, schema, trust, model_output,
              seeds, generator, max_global, max_local, random_state, out, json_out, verbose) -> None:
    """``chiralfair run --data FILE --model FILE``: cheap refusals first, then :func:`chiralfair.audit`."""
    from .exceptions import ConfigError

    _setup_logging(verbose)
    try:
        settings = _data_settings(data, label, positive_class, protected, bins, schema)
        if model is None:
            raise ConfigError("--data needs --model FILE: the fitted model to test (.skops, TorchScript, .onnx, or "
                             ".joblib/.pkl with --trust-model-file)")
        from .models.files import check_model_file
        check_model_file(model, trust=trust)
        frame = _read_frame(data)
        settings = _resolve_against_frame(frame, settings, data)
        from .auditing import audit

        with _progress(["data", "model", "seeds", "search"], enabled=not json_out) as on_step:
            result = audit(model, frame, label=settings["label"], positive_class=settings["positive_class"],
                           protected=settings["protected"], bins=settings["bins"], generator=generator, seeds=seeds,
                           max_global=max_global, max_local=max_local, random_state=random_state, out=out,
                           trust_model_file=trust, model_output=model_output, name=data.stem, on_step=on_step)
    except ChiralfairError as err:  # audit leaves no folder behind on failure
        _fail(err)
    if json_out:
        typer.echo(json.dumps(result.to_dict(), indent=2, default=str))
        return
    typer.echo(result.summary())
    if out is not None:
        typer.echo(f"run folder: {out}")


def parse_bins(text: str | None) -> dict[str, int | list[float]]:
    """Parse ``"age=0:25:45:65:120,hours=10"`` into ``{"age": [0, 25, 45, 65, 120], "hours": 10}``.

    Raises
    ------
    ConfigError
        Naming the item that is not ``column=N`` or ``column=e0:e1:...``.
    """
    from .exceptions import ConfigError

    out: dict[str, int | list[float]] = {}
    for item in filter(None, (t.strip() for t in (text or "").split(","))):
        column, sep, spec = item.partition("=")
        try:
            if not sep or not column.strip():
                raise ValueError
            parts = spec.split(":")
            out[column.strip()] = int(parts[0]) if len(parts) == 1 else [float(p) for p in parts]
        except ValueError:
            raise ConfigError(f"--bins item {item!r} is not column=N (N equal-width bins) or column=e0:e1:... "
                              "(edges), e.g. --bins age=0:25:45:65:120,hours=10") from None
    return out


def _data_settings(data: Path, label, positive_class, protected, bins, schema) -> dict:
    """Label, positive class, protected attributes and bins from the flags over the schema; checked cheaply."""
    from .exceptions import ConfigError, DatasetError

    if data.suffix.lower() not in DATA_SUFFIXES:
        raise DatasetError(f"--data {str(data)!r}: unsupported suffix {data.suffix or '(none)'!r}; use a .csv or "
                           ".parquet file")
    if not data.is_file():
        raise DatasetError(f"--data file {str(data)!r} does not exist")
    settings = {"label": None, "positive_class": None, "protected": [], "bins": {}, "categories": {}}
    if schema is not None:
        from .datasets.schema import read_schema
        settings.update(read_schema(schema))
    if label is not None:
        settings["label"] = label
    if positive_class is not None:
        settings["positive_class"] = positive_class
    if protected is not None:
        from .experiments import protected_list
        settings["protected"] = list(protected_list(protected))
    if bins is not None:
        settings["bins"] = {**settings["bins"], **parse_bins(bins)}
    if settings["label"] is None:
        raise ConfigError("--data needs --label COLUMN (or a --schema that names the label)")
    if not settings["protected"]:
        raise ConfigError("--data needs --protected A[,B] (or a --schema that names them)")
    return settings


def _read_frame(path: Path):
    import pandas as pd

    from .exceptions import DatasetError

    try:
        return pd.read_parquet(path) if path.suffix.lower() == ".parquet" else pd.read_csv(path)
    except (OSError, ValueError) as err:
        raise DatasetError(f"cannot read --data {str(path)!r}: {err}") from err


def _resolve_against_frame(frame, settings: dict, path: Path) -> dict:
    """Match the label and the positive class (given as text) against the frame's own values."""
    from .exceptions import DatasetError

    label = settings["label"]
    if label not in frame.columns:
        raise DatasetError(f"--label {label!r} is not a column of {str(path)!r}; columns: "
                           f"{', '.join(map(str, frame.columns))}")
    positive = settings["positive_class"]
    if positive is not None:
        values = frame[label].dropna().unique().tolist()
        matches = [v for v in values if str(v) == str(positive)]
        if not matches:
            shown = ", ".join(map(repr, sorted(map(str, values))[:10]))
            raise DatasetError(f"--positive-class {positive!r} does not occur in label column {label!r}; its values "
                               f"include {shown}")
        settings = {**settings, "positive_class": matches[0]}
    for column, categories in settings.get("categories", {}).items():
        if column in frame.columns:
            unknown = sorted(set(map(str, frame[column].dropna().unique())) - set(map(str, categories)))
            if unknown:
                raise DatasetError(f"column {column!r} of {str(path)!r} holds values the schema does not list: "
                                   f"{unknown[:10]}; re-run 'chiralfair schema infer' or edit the schema")
    return settings


schema_app = typer.Typer(no_args_is_help=True, help="Schema files: types, categories, bins, label, protected.")
app.add_typer(schema_app, name="schema")


@schema_app.command("infer")
def schema_infer(
    data: Annotated[Path, typer.Argument(help="A .csv or .parquet file.")],
    label: Annotated[str, typer.Option(help="Label column.")],
    protected: Annotated[str, typer.Option(help="Protected attribute(s), comma-separated.")],
    positive_class: PositiveOpt = None,
    bins: BinsOpt = None,
    n_bins: Annotated[int, typer.Option(help="Equal-width bins proposed for non-integer numeric columns.")] = 10,
) -> None:
    """Print a TOML schema of a data file (redirect it to schema.toml, edit it, pass it to run --schema)."""
    try:
        settings = _data_settings(data, label, positive_class, protected, bins, None)
        frame = _read_frame(data)
        settings = _resolve_against_frame(frame, settings, data)
        from .datasets.schema import infer_schema
        typer.echo(infer_schema(frame, label=settings["label"], positive_class=settings["positive_class"],
                                protected=settings["protected"], bins=settings["bins"], n_bins=n_bins), nl=False)
    except ChiralfairError as err:
        _fail(err)


def main() -> None:  # pragma: no cover - console entry point
    """Console entry point."""
    app()


# ------------------------------------------------------------------------------------- reproduce (issue 13)
@app.command("reproduce")
def reproduce_cmd(
    name: Annotated[str, typer.Argument(help="Preset: table2, table3, table4, fig6, fig7 or ablation.")],
    repeats: Annotated[int | None, typer.Option(
        help="Random states 0..N-1 of the seed selection and search (default 10; --quick: 3).")] = None,
    quick: Annotated[bool, typer.Option(
        "--quick", help="Smoke test: 3 repeats and budgets divided by 10 (not a reproduction).")] = False,
    out: Annotated[Path | None, typer.Option(
        help="Grid folder for the cells, the table and the plots (default reproduce/NAME[-quick]); a second "
             "run into it runs only the missing cells.")] = None,
    scheduler: Annotated[str, typer.Option(
        help="local (Dask LocalCluster), sync (this process) or a Dask scheduler address tcp://host:port.")] = "local",
    workers: Annotated[int | None, typer.Option(help="Worker processes of the local cluster.")] = None,
    verbose: VerboseOpt = False,
) -> None:
    """Run a shipped grid of the I&D paper and write its table beside the paper's numbers, and its plots."""
    from ._validation import check_int
    from .reproduce import check_preset_name

    try:
        check_preset_name(name)
        if quick and repeats is not None:
            raise ConfigError("--quick and repeats cannot be combined: --quick runs 3 random states with budgets "
                              "divided by 10")
        repeats = 10 if repeats is None else check_int(repeats, "repeats", minimum=1)
        if workers is not None:
            check_int(workers, "workers", minimum=1)
    except ChiralfairError as err:
        _fail(err)
    from .reproduce import reproduce

    folder = out if out is not None else Path("reproduce") / (f"{name}-quick" if quick else name)
    try:
        with _grid_logging(verbose) as cell_level:
            done = reproduce(name, folder, repeats=repeats, quick=quick, scheduler=scheduler, workers=workers,
                             progress=sys.stderr.isatty(), log_level=cell_level)
    except ChiralfairError as err:
        _fail(err)
    typer.echo((folder / f"{name}.md").read_text())
    typer.echo("\n".join(["wrote:", *(f"  {path}" for path in done.files)]))
    if done.n_failed:
        typer.secho(f"{done.n_failed} cell(s) failed: chiralfair experiment status {folder}", err=True,
                    fg=typer.colors.YELLOW)


_ESTIMATE_FLAGS = ("max_queries", "random_state", "data_home", "cache_dir", "batch_size")


@app.command("estimate")
def estimate_cmd(
    dataset: DatasetOpt = "census",
    protected: ProtectedOpt = None,
    model: ModelOpt = "dnn",
    population: Annotated[str, typer.Option(
        help="Individuals: rows (the dataset's), test (its test split) or domain (uniform draws).")] = "test",
    confidence: Annotated[float, typer.Option(help="Confidence level of the interval.")] = 0.95,
    margin: Annotated[float, typer.Option(help="Stop when the interval lies within this of the estimate.")] = 0.005,
    max_queries: Annotated[int | None, typer.Option(help="Query budget (default: none but the margin).")] = None,
    method: Annotated[str, typer.Option(help="Interval: wilson or clopper-pearson.")] = "wilson",
    gamma: Annotated[float | None, typer.Option(
        help="Count a pair only if its probability gap is at least this (KOSEI's gamma).")] = None,
    favourable: Annotated[int | None, typer.Option(
        help="Favourable label, 0 or 1 (default: the dataset's; compas: 0).")] = None,
    random_state: RandomOpt = 0,
    data_home: DataHomeOpt = None,
    cache_dir: CacheOpt = None,
    allow_checksum_mismatch: ChecksumOpt = False,
    json_out: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Estimate the share of individuals a model discriminates, whom it harms and how badly."""
    _refuse_early(dataset=dataset, protected=protected, model=model, minimums={"random_state": (random_state, 0)})
    from dataclasses import replace

    from .datasets import load_dataset
    from .estimate import estimate
    from .experiments import protected_list
    from .models.training import train_model
    from .models.zoo import as_spec

    _setup_logging(verbose)
    _check_protected_flag(protected)
    try:
        as_spec(model)
        data = load_dataset(dataset, protected=list(protected_list(protected or "")) or None, data_home=data_home,
                            allow_checksum_mismatch=allow_checksum_mismatch)
        trained = train_model(data, model, random_state=random_state, cache_dir=cache_dir)
        verdict = estimate(trained, data, population=population, confidence=confidence, margin=margin,
                           max_queries=max_queries, method=method, gamma=gamma, favourable=favourable,
                           random_state=random_state)
    except ChiralfairError as err:
        text = str(err)
        for name in _ESTIMATE_FLAGS + ("population", "confidence", "margin", "method", "gamma", "favourable"):
            text = re.sub(rf"\b{name}\b(?=[ =])", "--" + name.replace("_", "-"), text)
        _fail(type(err)(text))
    verdict = replace(verdict, meta={**verdict.meta, "model_f1": trained.f1, "model_accuracy": trained.accuracy,
                                     "model_from_cache": trained.from_cache})
    if json_out:
        typer.echo(verdict.to_json())
        return
    typer.echo(verdict.summary())
    typer.echo(f"model: {dataset} / {model} (test F1 {trained.f1:.3f}, accuracy {trained.accuracy:.3f}), "
               f"random_state {random_state}")


# ------------------------------------------------------------------------------------- retrain (issue 12)
RETRAIN_FILES = ("retrain.json", "report.md", "tradeoff.png", "model.pt", "model.joblib")


@app.command("retrain")
def retrain_cmd(
    dataset: DatasetOpt = "census",
    protected: ProtectedOpt = None,
    model: ModelOpt = "dnn",
    seeds: Annotated[str, typer.Option(help="Seed strategy of the search: iandd, i, cluster, random, rows.")] = "iandd",
    generator: Annotated[str, typer.Option(help="Generator of the search: aequitas, sg, adf, eidig, ...")] = "aequitas",
    max_global: Annotated[int, typer.Option(help="Seeds used by the global phase (>= 1).")] = 100,
    max_local: Annotated[int, typer.Option(help="Local iterations per global IDI (>= 0).")] = 100,
    out: Annotated[Path, typer.Option(help="Folder for retrain.json, report.md, the plot and the model.")] = Path(
        "retrain"),
    share: Annotated[str, typer.Option(
        help="Share(s) of the IDI pairs added, in (0, 1], comma-separated for a sweep, e.g. 1.0,0.5,0.05.")] = "1.0",
    protocol: Annotated[str, typer.Option(
        help="holdout (fresh search, IDI rates with 95% intervals), paper (remaining IDIs; leaks) or both.")
    ] = "holdout",
    pairs: Annotated[str, typer.Option(help="Add both rows of each IDI pair, or the IDI only: both, idi.")] = "both",
    mode: Annotated[str, typer.Option(help="DNN: retrain (from scratch, the paper) or fine-tune (10 epochs).")
    ] = "retrain",
    from_run: Annotated[Path | None, typer.Option(
        help="Reuse the IDIs of an earlier 'chiralfair run --out' folder instead of searching.")] = None,
    random_state: RandomOpt = 0,
    data_home: DataHomeOpt = None,
    cache_dir: CacheOpt = None,
    allow_checksum_mismatch: ChecksumOpt = False,
    json_out: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Retrain a model with the IDIs of a search (labelled by a vote that ignores the protected attributes)."""
    _refuse_early(dataset=dataset, protected=protected, model=model, seeds=seeds, generator=generator,
                  minimums={"max_global": (max_global, 1), "max_local": (max_local, 0),
                            "random_state": (random_state, 0)})
    from .exceptions import ConfigError, RunFolderError

    _setup_logging(verbose)
    _check_protected_flag(protected)
    created: list[Path] = []
    try:
        from .retraining import MODES, PAIRS, PROTOCOLS, check_shares

        shares = check_shares(_parse_shares(share))
        for name, value, valid in (("--protocol", protocol, PROTOCOLS), ("--pairs", pairs, PAIRS),
                                   ("--mode", mode, MODES)):
            if value not in valid:
                raise ConfigError(f"{name} must be one of {', '.join(valid)}, got {value!r}")
        if mode == "fine-tune" and model != "dnn":
            raise ConfigError(f"--mode fine-tune continues training the zoo DNN; model {model!r} is retrained "
                              "from scratch (use --mode retrain)")
        run_info = _read_run_folder(from_run) if from_run is not None else None
        if run_info is not None and run_info["config"].get("dataset") != dataset:
            raise ConfigError(f"--from-run {str(from_run)!r} searched dataset {run_info['config'].get('dataset')!r}, "
                              f"not --dataset {dataset!r}")
        created = _prepare_retrain_folder(out)
        result, run_summary = _retrain_job(
            dataset=dataset, protected=protected, model=model, seeds=seeds, generator=generator,
            max_global=max_global, max_local=max_local, shares=shares, protocol=protocol, pairs=pairs, mode=mode,
            run_info=run_info, random_state=random_state, data_home=data_home, cache_dir=cache_dir,
            allow_checksum_mismatch=allow_checksum_mismatch, out=out)
        _write_retrain_folder(result, out)
    except (ChiralfairError, RunFolderError) as err:
        from .report import remove_empty_folders
        remove_empty_folders(created)
        _fail(err)
    except BaseException:
        from .report import remove_empty_folders
        remove_empty_folders(created)
        raise
    if json_out:
        typer.echo(result.to_json())
        return
    typer.echo(result.to_markdown().split("\n\nRates are")[0])
    for note in result.notes:
        typer.echo(f"  note: {note}")
    typer.echo(f"retrain folder: {out}")


def _parse_shares(text: str) -> list[float]:
    from .exceptions import ConfigError

    try:
        return [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise ConfigError(f"--share {text!r} is not a comma-separated list of numbers in (0, 1], e.g. 1.0,0.5,0.05"
                          ) from None


def _read_run_folder(folder: Path) -> dict:
    """result.json's meta and the IDI pairs (codes) of a ``chiralfair run`` folder."""
    import pandas as pd

    from .domain import Domain
    from .exceptions import ConfigError
    from .retraining import idis_from_frame

    try:
        summary = json.loads((folder / "result.json").read_text())
        meta = summary["meta"]
        domain = Domain.from_dict(meta["domain"])
        config = meta["config"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ConfigError(f"--from-run {str(folder)!r} is not a chiralfair run folder (cannot read result.json's "
                          f"meta.config and meta.domain: {err})") from None
    if summary.get("n_idis", 0) == 0:
        raise ConfigError(f"--from-run {str(folder)!r}: that run found no IDIs, so there is nothing to retrain with")
    try:
        frame = pd.read_parquet(folder / "idis.parquet")  # a file or a folder of parts
    except (OSError, ValueError) as err:
        raise ConfigError(f"--from-run {str(folder)!r}: cannot read idis.parquet: {err}") from None
    idis, counterparts = idis_from_frame(frame, domain)
    return {"config": config, "domain": domain, "idis": idis, "counterparts": counterparts,
            "generator_params": meta.get("generator_params") or {}, "folder": str(folder)}


def _check_run_matches(run_info: dict, dataset: str, protected_names: list[str], model: str) -> None:
    from .exceptions import ConfigError

    config = run_info["config"]
    where = f"--from-run {run_info['folder']!r}"
    if config.get("dataset") != dataset:
        raise ConfigError(f"{where} searched dataset {config.get('dataset')!r}, not --dataset {dataset!r}")
    if list(run_info["domain"].protected_names) != list(protected_names):
        raise ConfigError(f"{where} tested protected attribute(s) {','.join(run_info['domain'].protected_names)}, "
                          f"not {','.join(protected_names)}; pass --protected "
                          f"{','.join(run_info['domain'].protected_names)}")
    if config.get("model") != model:
        raise ConfigError(f"{where} searched model {config.get('model')!r}, not --model {model!r}: its IDIs are "
                          "another model's")


def _prepare_retrain_folder(out: Path) -> list[Path]:
    """Accept a missing or empty folder, or one of an earlier retrain; refuse anything else."""
    from .report import prepare_run_folder

    if out.is_dir() and any(out.iterdir()):
        try:
            previous = json.loads((out / "retrain.json").read_text())
            ok = "chiralfair_version" in previous.get("meta", {})
        except (OSError, ValueError, AttributeError):
            ok = False
        if not ok:
            from .exceptions import RunFolderError
            raise RunFolderError(f"output folder {str(out)!r} exists, is not empty and is not an earlier chiralfair "
                                 "retrain (no retrain.json); choose another --out so nothing there is overwritten")
        return []
    return prepare_run_folder(out)


def _retrain_job(*, dataset, protected, model, seeds, generator, max_global, max_local, shares, protocol, pairs,
                 mode, run_info, random_state, data_home, cache_dir, allow_checksum_mismatch, out):
    """Search (or read the run's IDIs), retrain and evaluate."""
    from .datasets import load_dataset
    from .experiments import RunConfig, protected_list, run_experiment, validate_config
    from .models.training import train_model
    from .retraining import retrain

    names = list(protected_list(protected or ""))
    if run_info is not None:
        config = run_info["config"]
        data = load_dataset(dataset, protected=names or None, data_home=data_home,
                            allow_checksum_mismatch=allow_checksum_mismatch)
        _check_run_matches(run_info, dataset, data.domain.protected_names, model)
        trained = train_model(data, model, random_state=int(config.get("random_state", random_state)),
                              cache_dir=cache_dir)
        searched_with = {"generator": config["generator"], "seed_strategy": config["seeds"],
                         "params": run_info["generator_params"] or {"max_global": config["max_global"],
                                                                    "max_local": config["max_local"]},
                         "random_state": config.get("random_state")}
        idis = (run_info["idis"], run_info["counterparts"])
        summary = None
    else:
        config = RunConfig(dataset=dataset, protected=tuple(names), model=model, seeds=seeds, generator=generator,
                           max_global=max_global, max_local=max_local, random_state=random_state,
                           data_home=data_home, cache_dir=cache_dir, allow_checksum_mismatch=allow_checksum_mismatch)
        validate_config(config)
        outcome = run_experiment(config)
        summary = outcome.summary()
        data = load_dataset(dataset, protected=names or None, data_home=data_home,
                            allow_checksum_mismatch=allow_checksum_mismatch)
        trained = train_model(data, model, random_state=random_state, cache_dir=cache_dir)
        idis, searched_with = outcome.result, None
        from .report import write_run
        write_run(outcome, out / "search")
    result = retrain(trained, data, idis, protocol=protocol, share=list(shares), pairs=pairs, mode=mode,
                     searched_with=searched_with, cache_dir=cache_dir, random_state=random_state)
    return result, summary


def _write_retrain_folder(result, out: Path) -> None:
    """retrain.json, report.md with the trade-off plot, and the retrained model, each written atomically."""
    import io
    import tempfile

    from .report import atomic_write_bytes

    with tempfile.TemporaryDirectory(dir=out) as tmp:
        png = Path(tmp) / "tradeoff.png"
        result.plot(png)
        atomic_write_bytes(out / "tradeoff.png", png.read_bytes())
    retrained = result.model
    buffer = io.BytesIO()
    spec = getattr(retrained, "spec", None)
    if spec is not None and spec.is_torch:
        import torch
        state = {k: v.detach().cpu() for k, v in retrained.estimator.state_dict().items()}
        torch.save({"meta": {"spec": json.loads(spec.key()), "retrain": result.meta},
                    "n_features": retrained.estimator.n_features, "state_dict": state}, buffer)
        name = "model.pt"
    else:
        import joblib
        joblib.dump({"meta": {"retrain": result.meta}, "estimator": retrained.estimator}, buffer)
        name = "model.joblib"
    atomic_write_bytes(out / name, buffer.getvalue())
    atomic_write_bytes(out / "report.md", (result.to_markdown("tradeoff.png") +
                                           f"\nThe retrained model (largest share) is in `{name}`.\n").encode())
    atomic_write_bytes(out / "retrain.json", result.to_json().encode())


experiment_app = typer.Typer(no_args_is_help=True,
                             help="Experiment grids: run the missing cells (on Dask), show their status, make tables.")
app.add_typer(experiment_app, name="experiment")


@experiment_app.command("run")
def experiment_run(
    grid: Annotated[Path, typer.Argument(help="Grid file (TOML): axes, repeats, budgets, time limit.")],
    out: Annotated[Path, typer.Option(help="Output folder; running again into it resumes the grid.")],
    scheduler: Annotated[str, typer.Option(
        help="local (a Dask LocalCluster of processes), sync (this process, for debugging) or a Dask scheduler "
             "address (tcp://host:8786).")] = "local",
    workers: Annotated[int | None, typer.Option(help="Worker processes of --scheduler local (default: CPUs).")] = None,
    retry_failed: Annotated[bool, typer.Option("--retry-failed", help="Run the failed cells again too.")] = False,
    data_home: DataHomeOpt = None,
    cache_dir: CacheOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Run the cells of a grid that have no result yet; a failing cell is recorded and the grid goes on."""
    from .experiments.execution import SCHEDULERS, check_grid_folder
    from .experiments.grid import load_grid

    try:
        loaded = load_grid(grid)
        if workers is not None and workers < 1:
            raise ValueError(f"--workers must be >= 1, got {workers}")
        if scheduler not in SCHEDULERS and "://" not in scheduler:
            raise ValueError(f"unknown --scheduler {scheduler!r}; valid: local, sync, or a Dask scheduler address "
                             "such as tcp://host:8786")
        check_grid_folder(loaded, out)
    except (ChiralfairError, ValueError) as err:
        _fail(err, flags=())

    from tqdm.contrib.logging import logging_redirect_tqdm

    from .experiments.execution import run_grid

    try:
        with _grid_logging(verbose) as cell_level, logging_redirect_tqdm():
            result = run_grid(loaded, out, scheduler=scheduler, workers=workers, progress=True,
                              retry_failed=retry_failed, data_home=data_home, cache_dir=cache_dir,
                              log_level=cell_level)
    except ChiralfairError as err:
        _fail(err, flags=())
    except KeyboardInterrupt:
        typer.secho(f"interrupted: finished cells are kept in {out}; run the same command again to resume",
                    err=True, fg=typer.colors.YELLOW)
        raise typer.Exit(code=130) from None
    _print_status(result.status)
    typer.echo(f"ran {len(result.ran)} cells in {result.seconds:.1f} s")
    kept = [key for key in result.status.failed if key not in result.ran]
    if kept:  # failed in an earlier run: not run again unless asked
        typer.secho(f"{len(kept)} cell(s) had failed before and were not run again; add --retry-failed to retry them",
                    err=True, fg=typer.colors.YELLOW)
    if result.status.failed:
        raise typer.Exit(code=1)


@experiment_app.command("status")
def experiment_status(
    out: Annotated[Path, typer.Argument(help="Output folder of 'chiralfair experiment run'.")],
    json_out: JsonOpt = False,
) -> None:
    """Count the done, failed and missing cells of a grid folder; list the failed ones with their error."""
    from .experiments.execution import grid_status

    try:
        status = grid_status(out)
    except ChiralfairError as err:
        _fail(err, flags=())
    if json_out:
        typer.echo(json.dumps({"grid": status.grid.name, "n_cells": status.n_cells, "done": list(status.done),
                               "failed": list(status.failed), "missing": list(status.missing),
                               "errors": status.errors}, indent=2))
        return
    _print_status(status)


def _print_status(status) -> None:
    from .experiments.tasks import describe

    typer.echo(f"grid {status.grid.name!r} in {status.out}: {status.n_cells} cells, {len(status.done)} done, "
               f"{len(status.failed)} failed, {len(status.missing)} missing")
    for key in status.failed:
        typer.echo(f"  failed {key} ({describe(status.cells[key])}): {status.errors[key]}")


@experiment_app.command("table")
def experiment_table(
    out: Annotated[Path, typer.Argument(help="Output folder of 'chiralfair experiment run'.")],
) -> None:
    """Write the grid's tables (Parquet and Markdown) into OUT/tables and print the medians and the ratios."""
    from .experiments.execution import grid_status

    try:
        grid_status(out)
    except ChiralfairError as err:
        _fail(err, flags=())
    from .experiments.tables import write_tables

    try:
        paths = write_tables(out)
    except ChiralfairError as err:
        _fail(err, flags=())
    for path in paths:
        if path.name in ("medians.md", "ratios.md"):
            typer.echo(path.read_text(encoding="utf-8"))
    typer.echo("written: " + ", ".join(str(p) for p in paths))
