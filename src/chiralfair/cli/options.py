"""The command line's flags, declared once and shared by the commands that take them.

Flags that travel together are option groups (frozen dataclasses of flags): :class:`Inputs` (the data and the model
under test), :class:`Search` (seeds, generator, budget) and :class:`Counterparts` (couplings, constraints,
plausibility). A command decorated with :func:`with_option_groups` names a group once in its signature and receives
it built; ``--help`` lists the group's flags where the group stands.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from ..exceptions import ConfigError
from ..pipeline.checks import builtin_names
from .console import only_with_data, parse_bins

GENERATORS, SEED_STRATEGIES = builtin_names()

DatasetOpt = Annotated[str, typer.Option(help="Benchmark dataset: census, compas, bank, german.")]
RunDatasetOpt = Annotated[str | None, typer.Option(
    help="Benchmark dataset: census, compas, bank, german (default census; not with --data).")]
ProtectedOpt = Annotated[str | None, typer.Option(
    help="Protected attribute(s), comma-separated, e.g. race,sex (default: the dataset's first); '+' joins the "
         "columns of one attribute over several one-hot columns: sex_Female+sex_Male,race.")]
ModelOpt = Annotated[str, typer.Option(help="Model under test: dnn, lr, svc, dtc, mlp, rf, hgb, lightgbm.")]
RunModelOpt = Annotated[str | None, typer.Option(
    help="Model under test: dnn, lr, svc, dtc, mlp, rf, hgb, lightgbm (default dnn); with --data, a model file: "
         ".skops, TorchScript (.pt, .pth, .ts), .onnx, or .joblib/.pkl with --trust-model-file.")]
SeedsOpt = Annotated[str, typer.Option(
    help=f"Seed strategy: {', '.join(SEED_STRATEGIES)}, or one an installed package adds (entry point "
         "chiralfair.seed_strategies).")]
GeneratorOpt = Annotated[str | None, typer.Option(
    help=f"Generator: {', '.join(GENERATORS)} (eidig = eidig-inf), auto (picked by what the model offers: eidig with "
         "a gradient, else the black-box generator that found the most IDIs at equal query budgets), or one an "
         "installed package adds (entry point chiralfair.generators). Default: auto with --data (your own model), "
         "aequitas on a benchmark (the I&D paper's).")]
MaxGlobalOpt = Annotated[int, typer.Option(help="Seeds used by the global phase (>= 1).")]
MaxLocalOpt = Annotated[int, typer.Option(help="Local iterations per global IDI (>= 0).")]
SearchQueriesOpt = Annotated[int | None, typer.Option(
    help="Query budget: the seeds and the search together send at most this many rows to the model (>= 1); the "
         "run stops at the first call that would pass it and says so. Default: none.")]
RandomOpt = Annotated[int, typer.Option("--random-state", help="Seed for split, training, seeds and search.")]
DataHomeOpt = Annotated[str | None, typer.Option(help="Folder with the raw data (default: $CHIRALFAIR_DATA).")]
CacheOpt = Annotated[str | None, typer.Option(help="Model cache folder (default: $CHIRALFAIR_CACHE).")]
ChecksumOpt = Annotated[bool, typer.Option("--allow-checksum-mismatch",
                                           help="Use raw files whose SHA-256 differs from the expected one.")]
TrainModelOpt = Annotated[bool, typer.Option(
    "--train-model", help="Train the zoo model (and its chiral model) on this machine even when a reference network "
                          "shipped with chiralfair matches the request (the DNN of a benchmark with default parameters "
                          "and random state 0); by default the reference network is used, so the figures are the same "
                          "on every machine. Python: reference=False.")]
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
ModelInputOpt = Annotated[str | None, typer.Option(
    help="What --model FILE was trained on: 'values' (the raw numbers of the data's feature columns, in their "
         "order), 'frame' (a DataFrame of the columns), 'codes' (chiralfair's integer codes) or 'auto' (the "
         "default: a frame for a model that records its column names; codes where the data's codes are its "
         "values; otherwise refused, asking for this flag).")]

# Counterparts that could exist (architecture: counterparts that could exist): run, estimate, retrain.
CoupleOpt = Annotated[str | None, typer.Option(
    help="Columns that change with a protected attribute: sex:relationship=Husband/Wife (';' between columns); "
         "'none' turns off the dataset's default (census couples relationship to sex).")]
ConstraintOpt = Annotated[list[str] | None, typer.Option(
    "--constraint", help="A rule every input satisfies, e.g. 'sex=Female excludes relationship=Husband' or "
                         "'age >= education + 1' (codes); repeatable.")]
PlausibleOpt = Annotated[bool, typer.Option(
    "--plausible-only", help="The verdict counts plausible counterparts only (their values occur in the data).")]

# The share of individuals affected (estimate, check).
PopulationOpt = Annotated[str, typer.Option(
    help="Individuals: test (the held-out rows), rows (every row of the data) or domain (uniform draws).")]
MaxQueriesOpt = Annotated[int | None, typer.Option(help="Query budget (default: none but the margin).")]
GammaOpt = Annotated[float | None, typer.Option(
    help="Count a pair only if its probability gap is at least this (KOSEI's gamma).")]
# --favourable of estimate and check, which also take it on a benchmark (run and retrain: FavourableOpt).
OutcomeOpt = Annotated[str | None, typer.Option(
    help="The favourable outcome: with --data a label value (default: the positive class); on a benchmark the "
         "label 0 or 1 (default: the dataset's; compas: 0).")]

# The team's tools (run, estimate, check, retrain).
ModelCardOpt = Annotated[Path | None, typer.Option(
    "--model-card", help="Write the verdict as a model card: FILE.json a CycloneDX 1.6 modelCard, FILE.md a skops "
                         "model card (an sklearn --model FILE), or only the section between <!-- chiralfair:begin --> "
                         "and <!-- chiralfair:end --> of an existing Markdown file; never another file.")]
BomOpt = Annotated[Path | None, typer.Option(
    "--bom", help="Write a complete CycloneDX 1.6 BOM (FILE.json): the model component, its hash and its modelCard, "
                  "and the data files; never over a file chiralfair did not write.")]
MlflowOpt = Annotated[bool, typer.Option(
    "--mlflow", help="Log parameters, figures (fair_*) and the run folder into the active MLflow run, or a new one "
                     "(the mlflow extra; with no tracking URI, MLflow's default sqlite:///mlflow.db here).")]


@dataclass(frozen=True)
class Inputs:
    """The data and the model under test: a benchmark with a zoo model, or your --data with your --model file."""

    dataset: RunDatasetOpt = None
    protected: ProtectedOpt = None
    model: RunModelOpt = None
    random_state: RandomOpt = 0
    data_home: DataHomeOpt = None
    cache_dir: CacheOpt = None
    allow_checksum_mismatch: ChecksumOpt = False
    train_model: TrainModelOpt = False
    data: DataOpt = None
    label: LabelOpt = None
    positive_class: PositiveOpt = None
    bins: BinsOpt = None
    schema: SchemaOpt = None
    test: TestOpt = None
    test_size: TestSizeOpt = None
    trust_model_file: TrustOpt = False
    model_output: ModelOutputOpt = None
    model_input: ModelInputOpt = None

    @property
    def model_file(self) -> str | None:
        """The --model FILE of your own data; None on a benchmark (the model is a zoo name)."""
        return self.model if self.data is not None else None

    def check(self, model_card: Path | None, *, card_of_retrained: bool = False, bom: Path | None = None,
              mlflow: bool = False) -> None:
        """The refusals that need no data: an empty --protected, a --model-card or --bom that cannot be written.

        Parameters
        ----------
        model_card : path or None
            The ``--model-card`` file.
        card_of_retrained : bool, default=False
            The card describes the retrained model (``chiralfair retrain``), not yet known, not --model FILE.
        bom : path or None
            The ``--bom`` file.
        mlflow : bool, default=False
            ``--mlflow``: refuse an MLflow store the installed MLflow cannot open.

        Raises
        ------
        ConfigError, MissingDependencyError
        """
        from ..pipeline.checks import check_protected_given
        from ..pipeline.exports import check_bom_path, check_model_card_path

        check_protected_given(self.protected, name="--protected")
        if self.train_model and self.data is not None:
            raise ConfigError("--train-model trains a zoo model on a benchmark (--dataset); with --data the model "
                              "under test is your --model FILE, which is never retrained: drop --train-model")
        check_model_card_path(model_card, model_file=True if card_of_retrained else self.model_file)
        check_bom_path(bom)
        if mlflow:
            from ..pipeline.exports import check_tracking

            check_tracking()

    def data_files(self) -> dict[str, typing.Any]:
        """The data files given (``--data``, ``--test``), by role, for a BOM; empty on a benchmark.

        Returns
        -------
        dict of str to path
        """
        return {"data": self.data, "test": self.test} if self.data is not None else {}

    def refuse_own_data_flags(self, favourable: str | None = None) -> None:
        """On a benchmark, refuse the flags that only your own data takes (they would be ignored).

        Parameters
        ----------
        favourable : str, optional
            ``--favourable``, where a command takes it of your own data only (run, retrain).

        Raises
        ------
        ConfigError
            Naming the flags given.
        """
        only_with_data(label=self.label, positive_class=self.positive_class, favourable=favourable, bins=self.bins,
                       schema=self.schema, test=self.test, model_output=self.model_output,
                       model_input=self.model_input, trust_model_file=self.trust_model_file)

    def refuse_both_forms(self, command: str) -> None:
        """Refuse --data beside --dataset: your data file with your model file, or a benchmark, not both.

        Parameters
        ----------
        command : str
            How the message names the command (``"the command"``, ``"retrain"``).

        Raises
        ------
        ConfigError
        """
        if self.data is not None and self.dataset is not None:
            raise ConfigError(f"--data and --dataset are two forms of {command}: your data file with your model file "
                              "(--data FILE --model FILE), or a benchmark with a zoo model, not both")

    def benchmark_config(self, **more):
        """The run configuration of a benchmark (census and the DNN unless --dataset and --model say otherwise).

        Parameters
        ----------
        **more
            Further fields of :class:`~chiralfair.pipeline.RunConfig` (search, couplings).

        Returns
        -------
        RunConfig
        """
        from ..pipeline import RunConfig, protected_list

        return RunConfig(dataset=self.dataset or "census", protected=protected_list(self.protected),
                         model=self.model or "dnn", random_state=self.random_state, data_home=self.data_home,
                         cache_dir=self.cache_dir, allow_checksum_mismatch=self.allow_checksum_mismatch,
                         reference=not self.train_model, **more)

    def own_data(self) -> dict[str, typing.Any]:
        """The keyword arguments your own data and model file give the pipeline's front doors (``audit`` & co.).

        Returns
        -------
        dict
            ``label``, ``positive_class``, ``protected``, ``bins`` (parsed), ``schema``, ``test``, ``test_size``,
            ``random_state``, ``trust_model_file``, ``model_output``, ``model_input``.

        Raises
        ------
        ConfigError
            For --bins text that does not parse.
        """
        return {"label": self.label, "positive_class": self.positive_class, "protected": self.protected,
                "bins": parse_bins(self.bins) if self.bins else None, "schema": self.schema, "test": self.test,
                "test_size": self.test_size, "random_state": self.random_state,
                "trust_model_file": self.trust_model_file, "model_output": self.model_output,
                "model_input": self.model_input or "auto"}


@dataclass(frozen=True)
class Search:
    """The search for IDIs: seed strategy, generator and budget (run, retrain)."""

    seeds: SeedsOpt = "iandd"
    generator: GeneratorOpt = None
    max_global: MaxGlobalOpt = 100
    max_local: MaxLocalOpt = 100

    def params(self, *, own_model: bool = False) -> dict[str, typing.Any]:
        """The search's keyword arguments, as :class:`~chiralfair.pipeline.RunConfig` and ``audit`` take them.

        Parameters
        ----------
        own_model : bool
            Whether the model is the user's own (``--data``): an unnamed generator is then ``auto``, on a benchmark
            ``aequitas`` (the I&D paper's).

        Returns
        -------
        dict
        """
        params = dataclasses.asdict(self)
        if params["generator"] is None:
            params["generator"] = "auto" if own_model else "aequitas"
        return params


@dataclass(frozen=True)
class Counterparts:
    """Counterparts that could exist: couplings, constraints, plausible only (run, estimate, check).

    See architecture: counterparts that could exist.
    """

    couple: CoupleOpt = None
    constraint: ConstraintOpt = None
    plausible_only: PlausibleOpt = False

    def options(self) -> dict[str, typing.Any]:
        """``couple=`` and ``constraints=`` of a run configuration, parsed (refused early when malformed).

        Returns
        -------
        dict
            As :func:`chiralfair.pipeline.checks.counterpart_options`.

        Raises
        ------
        ConfigError
            For --couple text that does not parse.
        """
        from ..pipeline.checks import counterpart_options

        return counterpart_options(self.couple, self.constraint)


def own_data_counterparts(options: dict[str, typing.Any]) -> dict[str, typing.Any]:
    """:meth:`Counterparts.options` as the front doors of your own data take them (no constraint: None).

    Parameters
    ----------
    options : dict
        :meth:`Counterparts.options`.

    Returns
    -------
    dict
        ``couple`` and ``constraints`` (a list, or None).
    """
    return {"couple": options["couple"], "constraints": list(options["constraints"]) or None}


@dataclass(frozen=True)
class Streaming:
    """Rows read in batches (estimate, check): a Parquet file or folder, local or an fsspec URL, with --data/--test."""

    batch_rows: Annotated[int | None, typer.Option(
        help="Stream --test (else --data) in batches of this many rows and check every row, in memory bounded by the "
             "batch (default 65536 for a Parquet folder or URL).")] = None
    domain_sample: Annotated[int | None, typer.Option(
        help="Rows of the stream the domain (categories, bins) is made from (default 100000), said in the output.")
    ] = None
    workers: Annotated[int | None, typer.Option(
        help="Score the stream's files on a local Dask cluster of this many worker processes.")] = None
    scheduler: Annotated[str | None, typer.Option(
        help="Score the stream's files on the Dask cluster at this scheduler address.")] = None

    def given(self) -> bool:
        """Whether any streaming flag was given.

        Returns
        -------
        bool
        """
        return any(v is not None for v in (self.batch_rows, self.domain_sample, self.workers, self.scheduler))

    def params(self) -> dict[str, typing.Any]:
        """The streaming keyword arguments of :func:`chiralfair.estimate` (a progress bar on standard error).

        Returns
        -------
        dict
        """
        return {"batch_rows": self.batch_rows, "domain_sample": self.domain_sample, "workers": self.workers,
                "scheduler": self.scheduler, "progress": True}


def stream_path(path):
    """A --data/--test value as given: a local path, or an fsspec URL that a Path would have folded (``s3:/b``).

    Parameters
    ----------
    path : pathlib.Path or None

    Returns
    -------
    pathlib.Path, str or None
        The URL as text (``s3://b/data``), anything else as it is.
    """
    import re

    if path is None:
        return None
    text = str(path)
    match = re.match(r"^([A-Za-z][A-Za-z0-9+.-]+):/+(.*)$", text)
    if match and not Path(text).exists():
        return f"{match.group(1)}://{match.group(2)}"
    return path


OPTION_GROUPS = (Inputs, Search, Counterparts, Streaming)


def with_option_groups(command):
    """Give ``command`` the flags of each option group it names, and call it with the groups built.

    A parameter of ``command`` annotated with a group of :data:`OPTION_GROUPS` stands for the group's flags, in the
    group's order; typer reads the signature shown (``__signature__``), so ``--help`` and parsing see the flags.

    Parameters
    ----------
    command : callable
        A command function whose parameters are keyword-only.

    Returns
    -------
    callable
        The command as typer registers it.

    Raises
    ------
    TypeError
        If a group's flag has the name of another parameter of the command.
    """
    hints = typing.get_type_hints(command, include_extras=True)
    shown, groups = [], {}
    for param in inspect.signature(command).parameters.values():
        group = hints.get(param.name)
        if group not in OPTION_GROUPS:
            shown.append(param.replace(annotation=hints.get(param.name, param.annotation)))
            continue
        flags = typing.get_type_hints(group, include_extras=True)
        groups[param.name] = group
        shown += [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=flags[f.name])
                  for f in dataclasses.fields(group)]
    names = [p.name for p in shown]
    if len(set(names)) != len(names):
        raise TypeError(f"{command.__name__}: a flag of an option group has the name of another parameter: {names}")

    @functools.wraps(command)
    def parsed(**flags):
        for name, group in groups.items():
            flags[name] = group(**{f.name: flags.pop(f.name) for f in dataclasses.fields(group)})
        return command(**flags)

    parsed.__signature__ = (  # type: ignore[attr-defined]  # reason: typeshed has no function __signature__
        inspect.Signature(shown, return_annotation=None))  # which inspect.signature, and so typer, reads
    parsed.__annotations__ = {p.name: p.annotation for p in shown}
    return parsed
