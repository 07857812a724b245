"""Experiment grid files: a TOML schema, its validation, and the expansion into cells (one run each).

A grid lists values for every axis of a run; its cells are the cartesian product, in a fixed order (rows,
models, seed strategies, generators, budgets, then random states), one :class:`~.cells.Cell` each::

    name = "table2"                 # free text
    task = "search"                 # "search" (default) | "seeds" (seed selection only) | "retrain"
    repeats = 10                    # random_state = 0 .. repeats-1   (or: random_states = [0, 5, 7])
    model_random_state = 0          # optional: one model (and chiral model) for every repeat
    time_limit = 600                # optional, seconds per cell
    save_pairs = false              # write each cell's IDI pairs to <cell>/idis.parquet    (task "search")
    verdict = false                 # estimate the test-split share affected in each cell  (task "search")
    diversity = false               # measure the diversity of each cell's seeds and IDIs  ("search", "seeds")
    couple = true                   # the datasets' default couplings (census: relationship with sex;
                                    # architecture: counterparts that could exist)

    [axes]
    rows = ["census:age", "compas:race,sex"]   # "dataset:protected[,protected2]"
    models = ["dnn"]
    seeds = ["random", "cluster", "iandd"]
    generators = ["aequitas", "adf"]           # absent for task = "seeds"
    budgets = [[100, 100]]                     # [max_global, max_local] pairs ("seeds": [n_seeds, 0]), or
                                               # [max_global, max_local, max_queries]: a query budget of the
                                               # seed selection and the search together ("search" grids)

    [model_params.dnn]              # optional zoo hyper-parameters per model (e.g. standardize = false)
    [datasets.loans]                # your own data: rows "loans:sex" (paths relative to the grid file)
    data = "loans.csv"              #   a .csv or .parquet file with the label column
    schema = "loans.schema.toml"    #   chiralfair schema infer: label, positive class, bins (the row: protected)
    test = "loans-test.csv"         #   optional: held-out rows the model never saw (or test_size = 0.4)
    [model_files.gbm]               # your own model file: a value of axes.models, run on its dataset's rows
    file = "gbm.skops"              #   .skops, TorchScript, .onnx (or .joblib/.pkl with trust_model_file)
    dataset = "loans"               #   optional when the grid has one own dataset
    trust_model_file = false        #   optional
    [generator_params.sg]           # optional extra parameters per generator
    [seed_params.iandd]             # optional extra parameters per seed strategy (e.g. explainer = "deep")
    [retrain]                       # task = "retrain": parameters of chiralfair.mitigation.retraining.retrain

A ``retrain`` cell runs the searches with every listed seed strategy, then retrains with each one's IDIs, so
its seed strategies are one cell, not an axis.

Rows of your own data name a ``[datasets.NAME]`` table, and the models that run on them ``[model_files.NAME]``
tables: a cell pairs a benchmark row with each zoo model and an own row with each model file of its dataset (the
product skips the pairs that cannot run). Each file's SHA-256 enters the cells' keys and the grid's identity (not
its path): a grid resumed with a changed file is refused, and a grid folder moved to another machine resumes
when its files are given there. The normalised ``grid.toml`` of the output folder keeps the absolute paths and
the digests; a cell whose file no longer has its digest fails, saying so. Retraining (``task = "retrain"``) runs
on benchmark rows only.

This module imports only name tables (no model, strategy or generator), so a bad grid file is refused at once;
the checks that need the implementations (generator parameters) run when the grid starts
(:func:`chiralfair.experiments.execution.run_grid`).
"""

from __future__ import annotations

import itertools
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..exceptions import ConfigError, GridError
from ..pipeline.checks import check_budget
from .cells import Cell

TASKS = ("search", "seeds", "retrain")
TOP_KEYS = ("name", "task", "repeats", "random_states", "model_random_state", "time_limit", "save_pairs", "verdict",
            "diversity", "axes", "model_params", "generator_params", "seed_params", "retrain", "couple", "datasets",
            "model_files")
# The keys of an own dataset's table and of a model file's table; a file key's digest is <key>_sha256.
DATASET_FILES, DATASET_KEYS = ("data", "schema", "test"), ("data", "schema", "test", "test_size")
MODEL_FILE_KEYS = ("file", "dataset", "trust_model_file")
AXES = ("rows", "models", "seeds", "generators", "budgets")
# Seed-strategy parameters a grid cell sets itself (chiralfair.seeds.names.chiral_params) or that TOML cannot hold.
GRID_SEED_PARAMS = ("chiral_model", "chiral_trainer", "chiral_random_state", "chiral_cache_dir")
# Flags a task's cells would ignore (see chiralfair.experiments.tasks).
IGNORED_FLAGS = {"seeds": ("verdict", "save_pairs"), "retrain": ("verdict", "save_pairs", "diversity")}
RETRAIN_KEYS = ("protocol", "share", "pairs", "mode", "search", "margin", "methods", "max_f1_loss", "method_params",
               "max_group_increase", "spread_seeds", "validation_size")
# The I&D paper's protocol as benchmarks/retrain.py runs it: both protocols' figures, no fresh search.
RETRAIN_DEFAULTS = {"protocol": "both", "search": False}


@dataclass(frozen=True)
class Grid:
    """A validated experiment grid (see the module docstring for the file format).

    Attributes
    ----------
    name, task : str
    rows : tuple of (str, tuple of str)
        ``(dataset, protected attributes)`` per row.
    models, seeds, generators : tuple of str
        ``generators`` is empty for ``task = "seeds"``.
    budgets : tuple of (int, int) or (int, int, int)
        ``(max_global, max_local)`` pairs, or ``(max_global, max_local, max_queries)``: the seed selection and the
        search together send at most ``max_queries`` queries to the model (``task = "search"``).
    random_states : tuple of int
    model_random_state : int or None
        None: each cell's model is trained with the cell's random state.
    time_limit : float or None
        Seconds per cell.
    save_pairs, verdict : bool
    generator_params, seed_params : dict of str to dict
        Extra parameters per generator / seed strategy name.
    retrain : dict
        Parameters of :func:`chiralfair.mitigation.retraining.retrain` (``task = "retrain"``).
    couple : bool
        The datasets' default couplings are on (architecture: counterparts that could exist; default True, as
        :func:`~chiralfair.datasets.load_dataset`). A cell is coupled only where a default coupling is active: its row
        protects the coupling's attribute (census:sex, not census:age), so the other cells keep their keys.
    """

    name: str
    task: str
    rows: tuple[tuple[str, tuple[str, ...]], ...]
    models: tuple[str, ...]
    seeds: tuple[str, ...]
    generators: tuple[str, ...]
    budgets: tuple[tuple[int, ...], ...]
    random_states: tuple[int, ...]
    model_random_state: int | None = None
    time_limit: float | None = None
    save_pairs: bool = False
    verdict: bool = False
    diversity: bool = False
    model_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    generator_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    seed_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    retrain: dict[str, Any] = field(default_factory=dict)
    couple: bool = True
    datasets: dict[str, dict[str, Any]] = field(default_factory=dict)
    model_files: dict[str, dict[str, Any]] = field(default_factory=dict)

    def runs_on(self, dataset: str, model: str) -> bool:
        """Whether ``model`` runs on the rows of ``dataset``: a zoo model on a benchmark, a model file on its own.

        Parameters
        ----------
        dataset, model : str

        Returns
        -------
        bool
        """
        if model in self.model_files:
            return self.model_files[model]["dataset"] == dataset
        return dataset not in self.datasets

    def _own(self, dataset: str, model: str) -> tuple[dict[str, Any], dict[str, str]]:
        """(identity, paths) of an own row's files: the digests and options that enter the key, and the paths."""
        if model not in self.model_files:
            return {}, {}
        table, model_table = self.datasets[dataset], self.model_files[model]
        identity = {f"{k}_sha256": table[f"{k}_sha256"] for k in DATASET_FILES if k in table}
        identity.update(model_sha256=model_table["file_sha256"], trust_model_file=model_table["trust_model_file"])
        if "test_size" in table:
            identity["test_size"] = table["test_size"]
        paths = {k: table[k] for k in DATASET_FILES if k in table}
        paths["model"] = model_table["file"]
        return identity, paths

    def cells(self) -> list[Cell]:
        """Every cell of the grid, in a deterministic order (rows, models, seeds, generators, budgets, states).

        Returns
        -------
        list of Cell
        """
        seed_groups = [self.seeds] if self.task == "retrain" else [(s,) for s in self.seeds]
        generators = self.generators or (None,)
        out = []
        for (dataset, protected), model, seeds, generator, budget, state in itertools.product(
                self.rows, self.models, seed_groups, generators, self.budgets, self.random_states):
            if not self.runs_on(dataset, model):
                continue
            max_global, max_local = budget[:2]
            own, paths = self._own(dataset, model)
            out.append(Cell(
                task=self.task, dataset=dataset, protected=protected, model=model, seeds=seeds, generator=generator,
                max_global=max_global, max_local=max_local, random_state=state,
                model_random_state=state if self.model_random_state is None else self.model_random_state,
                generator_params=dict(self.generator_params.get(generator, {})) if generator else {},
                seed_params={s: dict(self.seed_params[s]) for s in seeds if self.seed_params.get(s)},
                verdict=self.verdict, save_pairs=self.save_pairs, diversity=self.diversity,
                model_params=dict(self.model_params.get(model, {})),
                retrain=dict(self.retrain) if self.task == "retrain" else {},
                couple=self.couple and _coupled(dataset, protected), own=own, paths=paths,
                max_queries=budget[2] if len(budget) > 2 else None))
        return out

    def to_dict(self) -> dict[str, Any]:
        """The normalised grid as a TOML-ready mapping (what :func:`load_grid` reads back to an equal grid).

        Returns
        -------
        dict
        """
        d: dict[str, Any] = {"name": self.name, "task": self.task, "random_states": list(self.random_states),
                             "save_pairs": self.save_pairs, "verdict": self.verdict,
                             "diversity": self.diversity, "couple": self.couple}
        if self.model_random_state is not None:
            d["model_random_state"] = self.model_random_state
        if self.time_limit is not None:
            d["time_limit"] = self.time_limit
        d["axes"] = {"rows": [f"{ds}:{','.join(pa)}" for ds, pa in self.rows], "models": list(self.models),
                     "seeds": list(self.seeds)}
        if self.generators:
            d["axes"]["generators"] = list(self.generators)
        d["axes"]["budgets"] = [list(b) for b in self.budgets]
        for key in ("model_params", "generator_params", "seed_params"):
            if getattr(self, key):
                d[key] = {k: dict(v) for k, v in getattr(self, key).items()}
        if self.task == "retrain":
            d["retrain"] = dict(self.retrain)
        for key in ("datasets", "model_files"):
            if getattr(self, key):
                d[key] = {name: dict(table) for name, table in getattr(self, key).items()}
        return d

    def to_toml(self) -> str:
        """The normalised grid as TOML text.

        Returns
        -------
        str
        """
        import tomli_w

        return tomli_w.dumps(self.to_dict())

    def identity(self) -> dict[str, Any]:
        """What makes two grids the same for an output folder: everything but the time limit and the repeats.

        A grid may be resumed with another time limit (e.g. to retry the cells that ran out of time), or with
        more (or fewer) random states: a cell's key does not depend on the others, so going from 3 to 10 repeats
        runs only the 7 new random states, and the tables hold the grid's random states only. Your own files count
        by their SHA-256, not their paths.

        Returns
        -------
        dict
        """
        d = self.to_dict()
        d.pop("time_limit", None)
        d.pop("random_states", None)
        # Your files by their digests, not their paths: the same files elsewhere are the same grid.
        for key, paths in (("datasets", DATASET_FILES), ("model_files", ("file",))):
            for table in d.get(key, {}).values():
                for path_key in paths:
                    table.pop(path_key, None)
        return d


def load_grid(source: str | os.PathLike | Mapping[str, Any] | Grid) -> Grid:
    """Read and validate a grid from a TOML file or a mapping of the same structure.

    Parameters
    ----------
    source : str, path-like, mapping or Grid
        A path to a TOML file, or its content as a mapping (e.g. built in code); a Grid is returned as is. The
        paths of ``[datasets]`` and ``[model_files]`` are relative to the TOML file's folder (a mapping's: the
        working folder).

    Returns
    -------
    Grid

    Raises
    ------
    GridError
        For a missing or unreadable file, a TOML syntax error (with its line and column), or a value the schema
        refuses: the message names the key and the valid values.
    """
    if isinstance(source, Grid):
        return source
    if isinstance(source, Mapping):
        return _parse(source, Path.cwd())
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GridError(f"grid file {str(path)!r} does not exist") from None
    except (OSError, UnicodeDecodeError) as err:
        raise GridError(f"grid file {str(path)!r} cannot be read: {err}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise GridError(f"grid file {str(path)!r} is not valid TOML: {err}") from None
    try:
        return _parse(data, path.resolve().parent)
    except GridError as err:
        raise GridError(f"grid file {str(path)!r}: {err}") from None


def _parse(data: Mapping[str, Any], base: Path) -> Grid:
    _check_keys(data, TOP_KEYS, "top-level key")
    task = data.get("task", "search")
    if task not in TASKS:
        raise GridError(f"task = {task!r} is not a task; valid: {', '.join(TASKS)}")
    axes = data.get("axes")
    if not isinstance(axes, Mapping):
        raise GridError(f"[axes] is missing; it lists {', '.join(AXES)}")
    _check_keys(axes, AXES, "axis", "[axes]")
    if task == "seeds" and "generators" in axes:
        raise GridError("axes.generators must be absent for task = \"seeds\" (seed selection only, no search)")
    required = [a for a in AXES if a != "generators" or task != "seeds"]
    missing = [a for a in required if a not in axes]
    if missing:
        raise GridError(f"[axes] lacks {', '.join(missing)}; a {task!r} grid lists {', '.join(required)}")
    datasets = _own_datasets(data, base)
    model_files = _model_files(data, base, datasets)
    models = _names(axes, "models", (*_model_names(), *model_files))
    seeds = _names(axes, "seeds", _seed_names())
    generators = _names(axes, "generators", _generator_names()) if task != "seeds" else ()
    _check_gradients(tuple(m for m in models if m not in model_files), generators)
    rows = _rows(axes, datasets)
    _check_pairs(rows, models, datasets, model_files)
    if task == "retrain" and any(dataset in datasets for dataset, _ in rows):
        raise GridError("task = \"retrain\" runs on benchmark rows (it retrains zoo models); retrain your own model "
                        "with chiralfair retrain --data FILE --model FILE")
    grid = Grid(
        name=_text(data, "name", "grid"), task=task, rows=rows, models=models, seeds=seeds,
        generators=generators, budgets=_budgets(axes), random_states=_random_states(data),
        model_random_state=_optional_int(data, "model_random_state", minimum=0),
        time_limit=_time_limit(data), save_pairs=_flag(data, "save_pairs"), verdict=_flag(data, "verdict"),
        diversity=_flag(data, "diversity"),
        model_params=_params(data, "model_params", tuple(m for m in models if m not in model_files)),
        generator_params=_params(data, "generator_params", generators), seed_params=_params(data, "seed_params", seeds),
        retrain=_retrain(data, task), couple=_flag(data, "couple", default=True), datasets=datasets,
        model_files=model_files)
    _check_probabilities(grid)
    for key in IGNORED_FLAGS.get(task, ()):
        if grid_flag := getattr(grid, key):
            raise GridError(f"{key} = {str(grid_flag).lower()} does not apply to task = {task!r}: its cells do not "
                            f"measure it; leave it out")
    if task == "seeds" and any(budget[1] for budget in grid.budgets):
        raise GridError(f"axes.budgets {[list(b) for b in grid.budgets]!r}: a \"seeds\" grid selects max_global "
                        "seeds and runs no local phase; give max_local 0, e.g. [[1000, 0]]")
    if task != "search" and any(len(b) > 2 for b in grid.budgets):
        raise GridError(f"axes.budgets {[list(b) for b in grid.budgets]!r}: a query budget (the third number) "
                        f"applies to task = \"search\" only; a {task!r} grid takes [max_global, max_local] pairs")
    if task == "retrain" and len(seeds) < 2:
        raise GridError("axes.seeds of a retrain grid names the seed strategies compared (at least two, e.g. "
                        "[\"cluster\", \"iandd\"]); got " + repr(list(seeds)))
    return grid


def _check_keys(mapping: Mapping, valid, what: str, where: str | None = None) -> None:
    unknown = [k for k in mapping if k not in valid]
    if unknown:
        place = f" in {where}" if where else ""
        raise GridError(f"unknown {what} {unknown[0]!r}{place}; valid: {', '.join(valid)}")


def _model_names() -> tuple[str, ...]:
    from ..models.zoo import MODEL_NAMES

    return MODEL_NAMES


def _seed_names() -> tuple[str, ...]:
    """The built-in seed strategies, those installed packages add (entry points) and those registered in Python."""
    from ..pipeline.checks import _registry, installed_names
    from ..seeds.names import BUILTIN_SEED_STRATEGIES

    added = [*installed_names()[1], *_registry("seeds", "SEED_STRATEGIES")]
    return tuple(dict.fromkeys([*BUILTIN_SEED_STRATEGIES, *sorted(added)]))


def _generator_names() -> tuple[str, ...]:
    """``auto``, the built-in generators, those installed packages add (entry points) and those registered in Python.

    ``auto`` is picked per cell by what its model offers, as a run picks it (the cell's result says which).
    """
    from ..generators.names import AUTO, BUILTIN_GENERATORS
    from ..pipeline.checks import _registry, installed_names

    added = [*installed_names()[0], *_registry("generators", "GENERATORS")]
    return tuple(dict.fromkeys([AUTO, *BUILTIN_GENERATORS, *sorted(added)]))


def _list(axes: Mapping, key: str) -> list:
    values = axes[key]
    if not isinstance(values, list):
        raise GridError(f"axes.{key} must be a list, got {values!r}")
    if not values:
        raise GridError(f"axes.{key} is an empty list; give at least one value")
    if len({repr(v) for v in values}) < len(values):
        raise GridError(f"axes.{key} lists a value twice: {values!r}")
    return values


def _names(axes: Mapping, key: str, valid: tuple[str, ...]) -> tuple[str, ...]:
    values = _list(axes, key)
    for v in values:
        if v not in valid:
            raise GridError(f"unknown value {v!r} in axes.{key}; valid: {', '.join(valid)}")
    return tuple(values)


def _rows(axes: Mapping, datasets: Mapping[str, Any]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    from ..datasets.published import PUBLISHED

    rows = []
    for text in _list(axes, "rows"):
        dataset, sep, protected = text.partition(":") if isinstance(text, str) else ("", "", "")
        dataset = dataset.strip()
        names = tuple(p.strip() for p in protected.split(",") if p.strip())
        if not sep or not names:
            raise GridError(f"axes.rows item {text!r} is not \"dataset:protected\" (e.g. \"census:sex\" or "
                            "\"compas:race,sex\")")
        if dataset not in PUBLISHED and dataset not in datasets:
            raise GridError(f"unknown dataset {dataset!r} in axes.rows; valid: {', '.join([*PUBLISHED, *datasets])} "
                            f"(your own data: a [datasets.{dataset or 'NAME'}] table with data and schema files)")
        for name in names if dataset in PUBLISHED else ():
            if name not in PUBLISHED[dataset]["attributes"]:
                raise GridError(f"unknown protected attribute {name!r} for {dataset} in axes.rows; its protected "
                                f"attributes are {', '.join(PUBLISHED[dataset]['protected'])} (any of its features "
                                f"may be tested as one: {', '.join(PUBLISHED[dataset]['attributes'])})")
        if len(set(names)) < len(names):
            raise GridError(f"axes.rows item {text!r} lists a protected attribute twice")
        rows.append((dataset, names))
    # "compas:race,sex" and "compas:sex,race" test the same thing: one row, twice the cells.
    if len({(dataset, frozenset(names)) for dataset, names in rows}) < len(rows):
        raise GridError(f"axes.rows lists a row twice (protected attributes in any order): {_list(axes, 'rows')!r}")
    return tuple(rows)


def _own_datasets(data: Mapping, base: Path) -> dict[str, dict[str, Any]]:
    """The ``[datasets.NAME]`` tables: absolute paths and each file's SHA-256 (computed unless recorded)."""
    from ..datasets.published import PUBLISHED

    tables = _tables(data, "datasets")
    out = {}
    for name, table in tables.items():
        if name in PUBLISHED:
            raise GridError(f"[datasets.{name}]: {name!r} is a benchmark's name; give your data another name")
        _check_keys(table, (*DATASET_KEYS, *(f"{k}_sha256" for k in DATASET_FILES)), "key", f"[datasets.{name}]")
        for key in ("data", "schema"):
            if key not in table:
                raise GridError(f"[datasets.{name}] lacks {key} = \"FILE\" (data: a .csv or .parquet file with the "
                                "label column; schema: chiralfair schema infer's TOML, with the label and positive "
                                "class)")
        if "test" in table and "test_size" in table:
            raise GridError(f"[datasets.{name}]: give test (held-out rows) or test_size (a split of data), not both")
        own: dict[str, Any] = {}
        for key in DATASET_FILES:
            if key in table:
                own.update(_file(table, key, base, f"datasets.{name}"))
        if "test_size" in table:
            size = table["test_size"]
            if isinstance(size, bool) or not isinstance(size, int | float) or not 0 < size < 1:
                raise GridError(f"datasets.{name}.test_size = {size!r}: must be a share in (0, 1), e.g. 0.4")
            own["test_size"] = float(size)
        out[name] = own
    return out


def _model_files(data: Mapping, base: Path, datasets: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The ``[model_files.NAME]`` tables: the file (absolute, with its SHA-256), its dataset, whether to trust it."""
    tables = _tables(data, "model_files")
    out = {}
    for name, table in tables.items():
        if name in _model_names():
            raise GridError(f"[model_files.{name}]: {name!r} is a zoo model's name; give your model another name")
        _check_keys(table, (*MODEL_FILE_KEYS, "file_sha256"), "key", f"[model_files.{name}]")
        if "file" not in table:
            raise GridError(f"[model_files.{name}] lacks file = \"MODEL\" (a .skops, TorchScript or .onnx file)")
        dataset = table.get("dataset")
        if dataset is None:
            if len(datasets) != 1:
                raise GridError(f"[model_files.{name}] lacks dataset = \"NAME\": the [datasets] table its rows come "
                                f"from ({', '.join(datasets) or 'none is given'})")
            dataset = next(iter(datasets))
        if dataset not in datasets:
            raise GridError(f"model_files.{name}.dataset = {dataset!r} is not a [datasets] table; valid: "
                            f"{', '.join(datasets) or 'none'}")
        own = _file(table, "file", base, f"model_files.{name}")
        own.update(dataset=dataset, trust_model_file=_flag(table, "trust_model_file"))
        out[name] = own
    return out


def _tables(data: Mapping, key: str) -> dict[str, Mapping]:
    tables = data.get(key, {})
    if not isinstance(tables, Mapping) or not all(isinstance(t, Mapping) for t in tables.values()):
        raise GridError(f"[{key}] must be a table of tables, e.g. [{key}.NAME]")
    return dict(tables)


def _file(table: Mapping, key: str, base: Path, where: str) -> dict[str, Any]:
    """``{key: absolute path, key_sha256: digest}``: the digest recorded (a grid folder's grid.toml) or computed."""
    from ..results.provenance import file_sha256

    value = table[key]
    if not isinstance(value, str) or not value:
        raise GridError(f"{where}.{key} = {value!r}: must be a file path")
    path = Path(value).expanduser()
    path = path if path.is_absolute() else base / path
    digest = table.get(f"{key}_sha256")
    if digest is None:
        if not path.is_file():
            raise GridError(f"{where}.{key}: file {str(path)!r} does not exist")
        try:
            digest = file_sha256(path)
        except OSError as err:
            raise GridError(f"{where}.{key}: file {str(path)!r} cannot be read ({err.strerror or err})") from None
    elif not isinstance(digest, str) or len(digest) != 64:
        raise GridError(f"{where}.{key}_sha256 = {digest!r}: must be the file's SHA-256 (64 hex digits)")
    return {key: str(path), f"{key}_sha256": digest}


def _check_pairs(rows, models: tuple[str, ...], datasets: Mapping[str, Any], model_files: Mapping[str, Any]) -> None:
    """Every row has a model that runs on it, and every model a row: no axis value that makes no cell."""
    def runs_on(dataset: str, model: str) -> bool:
        return model_files[model]["dataset"] == dataset if model in model_files else dataset not in datasets

    for dataset, protected in rows:
        if not any(runs_on(dataset, m) for m in models):
            which = (f"a [model_files] table with dataset = \"{dataset}\"" if dataset in datasets else
                     "a zoo model (dnn, lr, ...)")
            raise GridError(f"axes.rows {dataset}:{','.join(protected)} has no model in axes.models to run on: add "
                            f"{which}")
    for model in models:
        if not any(runs_on(dataset, model) for dataset, _ in rows):
            where = (f"rows of dataset {model_files[model]['dataset']!r}" if model in model_files else
                     "benchmark rows")
            raise GridError(f"axes.models {model!r} runs on {where}, and axes.rows has none")


def _check_gradients(models: tuple[str, ...], generators: tuple[str, ...]) -> None:
    from ..models.zoo import ModelSpec
    from ..pipeline.checks import generator_needs_gradient

    gradient = [g for g in generators if generator_needs_gradient(g)]
    without = [m for m in models if not ModelSpec(m).has_input_gradient]
    if gradient and without:
        raise GridError(
            f"axes.generators {gradient[0]!r} needs the model's input gradient, which axes.models {without[0]!r} "
            "does not provide; gradient generators (adf, eidig) run on dnn, lr and mlp: put the other models in a "
            "grid of black-box generators (aequitas, sg, themis, expga, kosei)")


def _check_probabilities(grid: Grid) -> None:
    from ..exceptions import ChiralfairError
    from ..models.zoo import ModelSpec
    from ..pipeline.checks import generator_needs_proba

    needing = [g for g in grid.generators if generator_needs_proba(g)]
    for model in grid.models if needing else ():
        if model in grid.model_files:
            continue  # a model file's methods are known once it is loaded: its cells check them
        try:
            spec = ModelSpec(model, dict(grid.model_params.get(model, {})))
        except ChiralfairError:
            continue  # the parameter check names the bad parameter
        if not spec.has_predict_proba:
            raise GridError(f"axes.generators {needing[0]!r} needs the model's predict_proba, which axes.models "
                            f"{model!r} (with its model_params) does not provide: it answers labels only; put it in "
                            "a grid of labels-only generators (aequitas, aft, expga, kosei, sg, themis)")


def _budgets(axes: Mapping) -> tuple[tuple[int, ...], ...]:
    if isinstance(axes["budgets"], list):  # before the duplicate check: budgets = [100, 100] is one flat pair
        for item in axes["budgets"]:
            _check_pair(item)
    budgets = []
    for item in _list(axes, "budgets"):
        max_global, max_local = item[:2]
        if max_global < 1 or max_local < 0:
            raise GridError(f"axes.budgets item {item!r}: max_global must be >= 1 and max_local >= 0")
        if len(item) > 2 and item[2] < 1:
            raise GridError(f"axes.budgets item {item!r}: max_queries (the third number) must be >= 1 model query")
        try:
            check_budget(max_global, max_local)
        except ConfigError as err:
            raise GridError(f"axes.budgets item {item!r}: {err}") from None
        budgets.append(tuple(item))
    return tuple(budgets)


def _check_pair(item) -> None:
    if not (isinstance(item, list) and len(item) in (2, 3) and all(_is_int(v) for v in item)):
        hint = " (budgets is a list of pairs: [[100, 100]])" if _is_int(item) else ""
        raise GridError(f"axes.budgets item {item!r} is not a [max_global, max_local] pair of integers, "
                        f"e.g. [100, 100], nor a [max_global, max_local, max_queries] triple{hint}")


def _random_states(data: Mapping) -> tuple[int, ...]:
    if "repeats" in data and "random_states" in data:
        raise GridError("give repeats (random_state = 0 .. repeats-1) or random_states (a list), not both")
    if "random_states" in data:
        states = data["random_states"]
        if not isinstance(states, list) or not states:
            raise GridError(f"random_states must be a non-empty list of integers >= 0, got {states!r}")
        if not all(_is_int(s) and s >= 0 for s in states) or len(set(states)) < len(states):
            raise GridError(f"random_states must list distinct integers >= 0, got {states!r}")
        return tuple(states)
    repeats = data.get("repeats", 1)
    if not _is_int(repeats) or repeats < 1:
        raise GridError(f"repeats = {repeats!r}: must be an integer >= 1 (the random states 0 .. repeats-1)")
    return tuple(range(repeats))


def _optional_int(data: Mapping, key: str, *, minimum: int) -> int | None:
    value = data.get(key)
    if value is not None and (not _is_int(value) or value < minimum):
        raise GridError(f"{key} = {value!r}: must be an integer >= {minimum}")
    return value


def _time_limit(data: Mapping) -> float | None:
    value = data.get("time_limit")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise GridError(f"time_limit = {value!r}: must be a number of seconds > 0")
    return float(value)


def _coupled(dataset: str, protected: tuple[str, ...]) -> bool:
    """Whether a default coupling of ``dataset`` is active when ``protected`` are tested."""
    from ..datasets.published import PUBLISHED

    couple = PUBLISHED.get(dataset, {}).get("couple") or {}
    return any(attribute in protected and not set(columns) & set(protected) for attribute, columns in couple.items())


def _flag(data: Mapping, key: str, *, default: bool = False) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise GridError(f"{key} = {value!r}: must be true or false")
    return value


def _text(data: Mapping, key: str, default: str) -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        raise GridError(f"{key} = {value!r}: must be a string")
    return value


def _params(data: Mapping, key: str, names: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    tables = data.get(key, {})
    if not isinstance(tables, Mapping):
        raise GridError(f"[{key}] must be a table of tables, e.g. [{key}.{names[0] if names else 'name'}]")
    axis = {"model_params": "models", "generator_params": "generators"}.get(key, "seeds")
    for name, params in tables.items():
        if name not in names:
            raise GridError(f"[{key}.{name}]: {name!r} is not in axes.{axis}; valid: {', '.join(names) or 'none'}")
        if not isinstance(params, Mapping):
            raise GridError(f"[{key}.{name}] must be a table of parameters, got {params!r}")
    return {name: dict(params) for name, params in tables.items()}


def _retrain(data: Mapping, task: str) -> dict[str, Any]:
    if "retrain" in data and task != "retrain":
        raise GridError(f"[retrain] applies to task = \"retrain\" only; this grid's task is {task!r}")
    table = data.get("retrain", {})
    if not isinstance(table, Mapping):
        raise GridError(f"[retrain] must be a table of parameters ({', '.join(RETRAIN_KEYS)})")
    _check_keys(table, RETRAIN_KEYS, "key", "[retrain]")
    if isinstance(table.get("share"), list):
        raise GridError("retrain.share must be one number in (0, 1]: a grid cell retrains once per seed strategy")
    return {**RETRAIN_DEFAULTS, **table} if task == "retrain" else {}


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_implementations(grid: Grid) -> None:
    """Check what needs the implementations: generator and seed-strategy parameters, retrain parameters.

    Run once before a grid starts, so that a bad parameter fails at once instead of in every cell.

    Parameters
    ----------
    grid : Grid

    Raises
    ------
    GridError
        Naming the parameter table and the parameter at fault.
    """
    from ..exceptions import ChiralfairError
    from ..generators import make_generator
    from ..models.zoo import ModelSpec
    from ..seeds import make_seed_strategy

    for model, params in grid.model_params.items():
        try:
            ModelSpec(model, dict(params))
        except ChiralfairError as err:
            raise GridError(f"[model_params.{model}]: {err}") from None
    from ..generators import _load_all as _generators  # noqa: F401  (registers the built-in generators)
    from ..generators.base import GENERATORS
    from ..seeds import _load_all  # noqa: F401  (registers the built-in seed strategies)
    from ..seeds.base import SEED_STRATEGIES

    max_global, max_local = grid.budgets[0][:2]
    from ..generators.names import AUTO

    for generator in grid.generators:
        params = grid.generator_params.get(generator, {})
        if generator == AUTO:
            if params:  # which generator's parameters they are is known only once auto has picked
                raise GridError(f"[generator_params.auto]: {sorted(params)[0]!r}: auto picks the generator per "
                                "cell by what its model offers; name the generator in axes.generators to set its "
                                "parameters")
            continue
        valid = _keywords(GENERATORS[generator], skip=("max_global", "max_local", "max_queries"))
        unknown = [name for name in params if name not in valid.split(", ")]
        if unknown:  # the budget is a grid axis: named apart from the generator's own parameters
            raise GridError(f"[generator_params.{generator}]: unknown parameter {unknown[0]!r} of generator "
                            f"{generator!r}; valid: {valid} (the budget comes from axes.budgets)")
        try:
            make_generator(generator, max_global=max_global, max_local=max_local, **params)
        except ChiralfairError as err:
            raise GridError(f"[generator_params.{generator}]: {err}") from None
    for strategy in grid.seeds:
        params = grid.seed_params.get(strategy, {})
        set_by_grid = [name for name in params if name in GRID_SEED_PARAMS]
        if set_by_grid:
            raise GridError(f"[seed_params.{strategy}]: {set_by_grid[0]} is set by the grid, not by a seed "
                            "parameter: the chiral model follows the model under test (model_random_state, the "
                            "model cache); leave it out")
        # Not left to the constructor: random, rows and i take **params and would keep a typo silently.
        valid = _keywords(SEED_STRATEGIES[strategy], skip=GRID_SEED_PARAMS)
        unknown = [name for name in params if name not in valid.split(", ")]
        if unknown:
            raise GridError(f"[seed_params.{strategy}]: unknown parameter {unknown[0]!r} of seed strategy "
                            f"{strategy!r}; valid: {valid}")
        try:
            make_seed_strategy(strategy, **params)
        except ChiralfairError as err:
            raise GridError(f"[seed_params.{strategy}]: {err}") from None
    if grid.task == "retrain":
        _check_retrain(grid.retrain)


def _keywords(cls, skip: tuple[str, ...]) -> str:
    """The keyword parameters ``cls`` takes (:func:`~chiralfair._registry.accepted_parameters`), comma-separated.

    ``"none"`` when there is none.
    """
    from .._registry import accepted_parameters

    return ", ".join(p for p in accepted_parameters(cls) or () if p not in skip) or "none"


def _check_retrain(params: dict[str, Any]) -> None:
    from .._validation import check_choice, check_float, check_int
    from ..exceptions import ChiralfairError
    from ..mitigation.names import DEFAULT_METHOD
    from ..mitigation.retraining import MODES, PAIRS, PROTOCOLS, check_methods, check_shares

    try:
        check_choice(params["protocol"], "retrain.protocol", PROTOCOLS)
        check_choice(params.get("pairs", "both"), "retrain.pairs", PAIRS)
        check_choice(params.get("mode", "auto"), "retrain.mode", MODES)
        check_shares(params.get("share", 1.0))
        check_float(params.get("margin", 0.005), "retrain.margin", minimum=0.0, maximum=0.5, exclusive_minimum=True)
        check_float(params.get("max_f1_loss", 0.01), "retrain.max_f1_loss", minimum=0.0)
        check_float(params.get("max_group_increase", 0.02), "retrain.max_group_increase", minimum=0.0)
        check_float(params.get("validation_size", 0.2), "retrain.validation_size", minimum=0.0, maximum=0.5,
                    exclusive_minimum=True)
        check_int(params.get("spread_seeds", 3), "retrain.spread_seeds", minimum=0)
        methods = check_methods(params.get("methods", [DEFAULT_METHOD]))
    except ChiralfairError as err:
        raise GridError(f"[retrain]: {err}") from None
    method_params = params.get("method_params", {})
    if not isinstance(method_params, Mapping) or not all(isinstance(v, Mapping) for v in method_params.values()):
        raise GridError("[retrain.method_params] must hold one table of parameters per method")
    unknown = sorted(set(method_params) - set(methods))
    if unknown:
        raise GridError(f"[retrain.method_params] names {unknown}, which are not in retrain.methods {list(methods)}")
    if not isinstance(params.get("search", False), bool):
        raise GridError(f"retrain.search = {params['search']!r}: must be true or false")
