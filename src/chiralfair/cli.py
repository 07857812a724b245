"""The ``chiralfair`` command line: ``run``, ``seeds`` and ``datasets``."""

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

from .exceptions import ChiralfairError

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Individual fairness testing of tabular classifiers: find IDIs with I&D seeds.")

DatasetOpt = Annotated[str, typer.Option(help="Benchmark dataset: census, compas, bank, german.")]
ProtectedOpt = Annotated[str | None, typer.Option(
    help="Protected attribute(s), comma-separated, e.g. race,sex (default: the dataset's first).")]
ModelOpt = Annotated[str, typer.Option(help="Model under test: dnn, lr, svc, dtc, mlp, rf, hgb.")]
RandomOpt = Annotated[int, typer.Option("--random-state", help="Seed for split, training, seeds and search.")]
DataHomeOpt = Annotated[str | None, typer.Option(help="Folder with the raw data (default: $CHIRALFAIR_DATA).")]
CacheOpt = Annotated[str | None, typer.Option(help="Model cache folder (default: $CHIRALFAIR_CACHE).")]
ChecksumOpt = Annotated[bool, typer.Option("--allow-checksum-mismatch",
                                           help="Use raw files whose SHA-256 differs from the expected one.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON to standard output instead of a table.")]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Log each step.")]


_FLAGS = ("max_global", "max_local", "random_state", "n_seeds", "repeats", "data_home", "cache_dir",
          "allow_checksum_mismatch")


def _fail(err: Exception) -> None:
    """Print a one-line error that names command-line flags (``--max-global``) rather than Python names."""
    text = str(err)
    for name in _FLAGS:
        text = re.sub(rf"\b{name}\b", "--" + name.replace("_", "-"), text)
    typer.secho(f"error: {text}", err=True, fg=typer.colors.RED)
    raise typer.Exit(code=2)


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)


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
              "seeds": "selecting seeds", "search": "searching for IDIs"}
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


def _check_protected_flag(protected: str | None) -> None:
    from .experiments import protected_list

    if protected is not None and not protected_list(protected):
        _fail(ValueError(f"--protected {protected!r} names no attribute; give one or several, e.g. --protected "
                         "race,sex, or leave it out for the dataset's first protected attribute"))


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
    dataset: DatasetOpt = "census",
    protected: ProtectedOpt = None,
    model: ModelOpt = "dnn",
    seeds: Annotated[str, typer.Option(help="Seed strategy: iandd, i, cluster, random, rows.")] = "iandd",
    generator: Annotated[str, typer.Option(
        help="Generator: aequitas (aequitas-random, aequitas-semi), sg, adf, eidig (= eidig-inf), eidig-5, "
             "themis.")] = "aequitas",
    max_global: Annotated[int, typer.Option(help="Seeds used by the global phase (>= 1).")] = 100,
    max_local: Annotated[int, typer.Option(help="Local iterations per global IDI (>= 0).")] = 100,
    random_state: RandomOpt = 0,
    out: Annotated[Path | None, typer.Option(help="Run folder for result.json, idis.parquet, report.md.")] = None,
    data_home: DataHomeOpt = None,
    cache_dir: CacheOpt = None,
    allow_checksum_mismatch: ChecksumOpt = False,
    json_out: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Find IDIs of a model on a benchmark dataset and write the run folder."""
    from .experiments import RunConfig, protected_list, run_experiment, validate_config
    from .report import describe_clustering, prepare_run_folder, remove_empty_folders, summary_rows, write_run

    _setup_logging(verbose)
    _check_protected_flag(protected)
    config = RunConfig(dataset=dataset, protected=protected_list(protected or ""), model=model, seeds=seeds,
                       generator=generator, max_global=max_global, max_local=max_local,
                       random_state=random_state, data_home=data_home, cache_dir=cache_dir,
                       allow_checksum_mismatch=allow_checksum_mismatch)
    created = []
    try:
        validate_config(config)
        if out is not None:
            created = prepare_run_folder(out)
        with _progress(["data", "model", "seeds", "search"], enabled=not json_out) as on_step:
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
    _print_table(summary_rows(summary), title)
    if summary["seeds"].get("clustering"):
        typer.echo(f"  seed clustering: {describe_clustering(summary['seeds']['clustering'])}")
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
    strategy: Annotated[str, typer.Option(help="Seed strategy: iandd, i, cluster, random, rows.")] = "iandd",
    n_seeds: Annotated[int, typer.Option(help="Seeds per repeat (>= 1).")] = 1000,
    repeats: Annotated[int, typer.Option(help="Selections with random_state, random_state+1, ...")] = 10,
    random_state: RandomOpt = 0,
    data_home: DataHomeOpt = None,
    cache_dir: CacheOpt = None,
    allow_checksum_mismatch: ChecksumOpt = False,
    json_out: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Select seeds repeatedly and report the initialization rate and the time split."""
    from tqdm import tqdm

    from ._validation import check_int
    from .datasets import load_dataset
    from .experiments import protected_list
    from .models.training import train_model
    from .models.zoo import as_spec
    from .seeds import make_seed_strategy

    _setup_logging(verbose)
    try:
        check_int(n_seeds, "n_seeds", minimum=1)
        check_int(repeats, "repeats", minimum=1)
        as_spec(model)
        chooser = make_seed_strategy(strategy)
        _check_protected_flag(protected)
        data = load_dataset(dataset, protected=list(protected_list(protected or "")) or None, data_home=data_home,
                            allow_checksum_mismatch=allow_checksum_mismatch)
        trained = train_model(data, model, random_state=random_state, cache_dir=cache_dir)
        reports = [chooser.select(trained.model, data, n_seeds, random_state=random_state + r)
                   for r in tqdm(range(repeats), desc=f"{strategy} seeds", disable=json_out, file=sys.stderr,
                                 leave=False)]
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
    rows += [(f"seconds: {k}", f"{v:.3f} (median)") for k, v in summary["seconds_median"].items()]
    _print_table(rows, f"{dataset} / {','.join(summary['protected'])} / {model} (test F1 {trained.f1:.3f}) —"
                       f" {strategy}, {n_seeds} seeds")
    for note in summary["notes"]:
        typer.echo(f"  note: {note}")


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


def main() -> None:  # pragma: no cover - console entry point
    """Console entry point."""
    app()
