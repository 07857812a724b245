"""``chiralfair datasets`` (the benchmarks and their raw files) and ``chiralfair schema infer`` (your data's schema)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from .console import parse_bins, refusals
from .options import BinsOpt, DataHomeOpt, JsonOpt, PositiveOpt


def datasets(
    data_home: DataHomeOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """List the benchmark datasets: rows, attributes, label, protected attributes and raw files."""
    from ..datasets import describe_datasets

    with refusals():
        info = describe_datasets(data_home=data_home)
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
    for attribute, columns in (d.get("couple") or {}).items():
        for column, swaps in columns.items():
            pairs = sorted({" <-> ".join(sorted((a, b))) for a, b in swaps.items()})
            lines.append(f"  coupled by default: {column} changes with {attribute} ({', '.join(pairs)}); "
                         "--couple none turns it off")
    lines.append(f"  raw file: {d.get('path') or d.get('raw_file')} [{d.get('status')}]")
    return "\n".join(lines)


schema_app = typer.Typer(no_args_is_help=True, help="Schema files: types, categories, bins, label, protected.")


@schema_app.command("infer")
def schema_infer(
    data: Annotated[Path, typer.Argument(help="A .csv or .parquet file.")],
    label: Annotated[str, typer.Option(help="Label column.")],
    protected: Annotated[str, typer.Option(help="Protected attribute(s), comma-separated; '+' joins the columns of one "
                                                "attribute over several one-hot columns: sex_Female+sex_Male.")],
    positive_class: PositiveOpt = None,
    bins: BinsOpt = None,
    n_bins: Annotated[int, typer.Option(help="Quantile bins proposed for non-integer numeric columns.")] = 10,
) -> None:
    """Print a TOML schema of a data file (redirect it to schema.toml, edit it, pass it to run --schema)."""
    from ..pipeline.checks import check_protected_given, protected_list

    with refusals():
        check_protected_given(protected, name="--protected")
        from ..datasets.schema import infer_schema_file

        text = infer_schema_file(data, label=label, protected=list(protected_list(protected)),
                                 positive_class=positive_class, bins=parse_bins(bins), n_bins=n_bins)
    typer.echo(text, nl=False)
