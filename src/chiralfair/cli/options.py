"""The command line's flags, declared once and shared by the commands that take them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..pipeline.checks import builtin_names

GENERATORS, SEED_STRATEGIES = builtin_names()

DatasetOpt = Annotated[str, typer.Option(help="Benchmark dataset: census, compas, bank, german.")]
RunDatasetOpt = Annotated[str | None, typer.Option(
    help="Benchmark dataset: census, compas, bank, german (default census; not with --data).")]
ProtectedOpt = Annotated[str | None, typer.Option(
    help="Protected attribute(s), comma-separated, e.g. race,sex (default: the dataset's first).")]
ModelOpt = Annotated[str, typer.Option(help="Model under test: dnn, lr, svc, dtc, mlp, rf, hgb.")]
RunModelOpt = Annotated[str | None, typer.Option(
    help="Model under test: dnn, lr, svc, dtc, mlp, rf, hgb (default dnn); with --data, a model file: .skops, "
         "TorchScript (.pt, .pth, .ts), .onnx, or .joblib/.pkl with --trust-model-file.")]
SeedsOpt = Annotated[str, typer.Option(help=f"Seed strategy: {', '.join(SEED_STRATEGIES)}.")]
GeneratorOpt = Annotated[str, typer.Option(
    help=f"Generator: {', '.join(GENERATORS)} (eidig = eidig-inf).")]
MaxGlobalOpt = Annotated[int, typer.Option(help="Seeds used by the global phase (>= 1).")]
MaxLocalOpt = Annotated[int, typer.Option(help="Local iterations per global IDI (>= 0).")]
RandomOpt = Annotated[int, typer.Option("--random-state", help="Seed for split, training, seeds and search.")]
DataHomeOpt = Annotated[str | None, typer.Option(help="Folder with the raw data (default: $CHIRALFAIR_DATA).")]
CacheOpt = Annotated[str | None, typer.Option(help="Model cache folder (default: $CHIRALFAIR_CACHE).")]
ChecksumOpt = Annotated[bool, typer.Option("--allow-checksum-mismatch",
                                           help="Use raw files whose SHA-256 differs from the expected one.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON to standard output instead of a table.")]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Log each step.")]

# Your own data and model (run, estimate, retrain).
DataOpt = Annotated[Path | None, typer.Option(
    "--data", help="Your own data: a .csv or .parquet file with the label column (instead of --dataset).")]
LabelOpt = Annotated[str | None, typer.Option(help="Label column of --data.")]
PositiveOpt = Annotated[str | None, typer.Option(
    help="Label value of the model's positive class (needed unless the label holds only 0/1).")]
FavourableOpt = Annotated[str | None, typer.Option(
    help="Label value of the favourable outcome (default: the positive class).")]
BinsOpt = Annotated[str | None, typer.Option(
    help="Bins of numeric columns of --data: age=0:25:45:65:120 (edges) or hours=10 (equal-width bins), "
         "comma-separated.")]
SchemaOpt = Annotated[Path | None, typer.Option(
    help="Schema TOML from 'chiralfair schema infer' (label, positive class, protected, bins); flags override it.")]
TestOpt = Annotated[Path | None, typer.Option(
    "--test", help="Held-out rows of --data the model never saw (.csv/.parquet, same columns): F1 and the verdict "
                   "are measured on them (default: a --test-size split of --data, which may include training rows).")]
TestSizeOpt = Annotated[float | None, typer.Option(
    help="Share of --data held out when --test is not given (default 0.4; not with --test).")]
TrustOpt = Annotated[bool, typer.Option(
    "--trust-model-file", help="Load joblib/pickle files and skops files with untrusted types (runs their code).")]
ModelOutputOpt = Annotated[str | None, typer.Option(
    help="For torch and one-column ONNX models: whether the output is a 'probability' or a 'logit'.")]

# Counterparts that could exist (design §12): run, estimate, retrain.
CoupleOpt = Annotated[str | None, typer.Option(
    help="Columns that change with a protected attribute: sex:relationship=Husband/Wife (';' between columns); "
         "'none' turns off the dataset's default (census couples relationship to sex).")]
ConstraintOpt = Annotated[list[str] | None, typer.Option(
    "--constraint", help="A rule every input satisfies, e.g. 'sex=Female excludes relationship=Husband' or "
                         "'age >= education + 1' (codes); repeatable.")]
PlausibleOpt = Annotated[bool, typer.Option(
    "--plausible-only", help="The verdict counts plausible counterparts only (their values occur in the data).")]

# The team's tools (run, estimate, check, retrain).
ModelCardOpt = Annotated[Path | None, typer.Option(
    "--model-card", help="Write the verdict as a model card: FILE.json a CycloneDX 1.6 modelCard, FILE.md a skops "
                         "model card (an sklearn --model FILE).")]
MlflowOpt = Annotated[bool, typer.Option(
    "--mlflow", help="Log parameters, figures (fair_*) and the run folder into the active MLflow run, or a new one "
                     "(needs the mlflow extra).")]
