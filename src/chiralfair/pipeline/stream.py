"""The verdict over rows read in batches: ``estimate`` and ``check`` on a Parquet folder, a Dask or a polars frame.

On one process or on a Dask cluster (:mod:`chiralfair.verdict.streaming`).
The domain the search would use (categories, bins) is made once, before the rows are read, from the schema (the
schema file mechanism, ``schema=``) and from a stated sample: the first ``domain_sample`` rows of the stream (laid
beside ``data`` when the stream is the held-out rows, as the in-memory run encodes the data and its test rows
together). The model is wrapped and probed on those rows as on in-memory data. Then every row of the stream is
checked, batch by batch, and the verdict is decided once from the merged counts; the model's F1 and accuracy are
measured on every streamed row too (additive confusion counts), not on the sample. A value the sample never held
follows the stated rule for unseen values (:mod:`chiralfair.datasets.recode`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Iterator
from typing import Any

from ..datasets.recode import NAMED_VALUES
from ..datasets.stream import DEFAULT_BATCH_ROWS, is_stream, open_stream
from ..exceptions import ConfigError

# Rows of the stream the domain is made from when domain_sample is not given.
DEFAULT_DOMAIN_SAMPLE = 100_000

# Parameters of the in-memory estimate a streamed verdict has no use for: it checks every row (exact).
SAMPLING_ONLY = ("margin", "max_queries", "exact", "batch_size")


def wants_stream(data, test, batch_rows) -> bool:
    """Whether a door reads its rows as a stream: ``batch_rows`` given, or a source only a stream reads.

    Parameters
    ----------
    data, test : object
    batch_rows : int or None

    Returns
    -------
    bool
    """
    return batch_rows is not None or is_stream(data) or (test is not None and is_stream(test))


def stream_estimate(model, data, *, test=None, batch_rows: int | None = None, domain_sample: int | None = None,
                    workers: int | None = None, scheduler: str | None = None, progress: bool = False,
                    random_state: int = 0, population: str = "test", resolve: Any = None, **params):
    """The verdict over every row of a stream (``test`` when it is one, else ``data``).

    Parameters
    ----------
    model, data, test
        As :func:`chiralfair.estimate` takes them; the stream is ``test`` when given, else ``data``: a Parquet file
        or folder (local or an fsspec URL), a Dask DataFrame or a polars LazyFrame.
    batch_rows : int, optional
        Rows checked per batch (default 65,536).
    domain_sample : int, optional
        Rows of the stream the domain is made from (default 100,000; with a schema, its categories and bins come
        first). When ``data`` is a stream too (beside held-out rows ``test``), its first ``domain_sample`` rows
        are the data laid beside them.
    workers : int, optional
        Score the partitions on a local Dask cluster of this many worker processes.
    scheduler : str, optional
        Score them on the Dask cluster at this address.
    progress : bool
        A progress bar in rows per second.
    random_state : int
    population : str
        ``"test"`` (the default of :func:`chiralfair.estimate`) or ``"rows"``; ``"domain"`` is refused.
    resolve : callable
        :func:`~.front.resolve_inputs` with the door's keyword arguments bound (all but data and test).
    **params
        ``confidence``, ``method``, ``gamma``, ``favourable``, ``plausible_only`` (and ``threshold``, which an
        exact verdict does not need: the gate decides on it).

    Returns
    -------
    verdict : Verdict
    inputs : RunInputs
        The inputs made from the domain sample (the front door adds their notes and probes to the verdict).

    Raises
    ------
    ConfigError
        For a bad ``batch_rows``, ``domain_sample`` or ``workers``, both ``workers`` and ``scheduler``,
        ``population="domain"``, or a sampling parameter (``margin``, ``max_queries``, ``exact=False``).
    DatasetError, DomainError, ModelCallError
        As :func:`chiralfair.verdict.streaming.stream_verdict`.
    """
    if population == "domain":
        raise ConfigError("population='domain' draws from the domain, not from rows: it reads no stream; drop "
                          "batch_rows (or give data in memory)")
    held_out = test is not None
    stream, sample, settings = open_with_sample(test if held_out else data, batch_rows=batch_rows,
                                                domain_sample=domain_sample, workers=workers, scheduler=scheduler,
                                                params=params, role="test" if held_out else "data")
    if held_out and is_stream(data):  # a stream as the data, beside the held-out rows: its first rows only
        data = open_stream(data).head(settings["domain_sample"], named="data")
    inputs = resolve(data, sample) if held_out else resolve(sample, None)
    return verdict_over_stream(inputs, stream, sample, held_out=held_out, random_state=random_state,
                               progress=progress, **settings, **params)


def open_with_sample(source, *, batch_rows: int | None, domain_sample: int | None, workers: int | None,
                     scheduler: str | None, params: dict, role: str = "test"):
    """The stream of ``source`` checked, its domain sample read, and the settings checked (``params`` cleaned).

    Parameters
    ----------
    source : object
        A Parquet path or URL, a Dask DataFrame or a polars LazyFrame.
    batch_rows, domain_sample, workers, scheduler : optional
        As :func:`stream_estimate`.
    params : dict
        The verdict's keyword arguments: the sampling ones are refused when set, else removed (in place).
    role : {"test", "data"}, default="test"
        What the rows are, for naming a row of the sample in a refusal (its file and its row there:
        :meth:`~chiralfair.datasets.stream.RowStream.head`).

    Returns
    -------
    stream : RowStream
    sample : pandas.DataFrame
    settings : dict
        ``batch_rows``, ``domain_sample``, ``workers``, ``scheduler``, checked, with their defaults.

    Raises
    ------
    ConfigError
        As :func:`stream_estimate`.
    """
    from .._validation import check_int

    batch_rows = DEFAULT_BATCH_ROWS if batch_rows is None else check_int(batch_rows, "batch_rows", minimum=1)
    domain_sample = (DEFAULT_DOMAIN_SAMPLE if domain_sample is None
                     else check_int(domain_sample, "domain_sample", minimum=1))
    if workers is not None:
        workers = check_int(workers, "workers", minimum=1)
    if workers is not None and scheduler is not None:
        raise ConfigError("give workers (a local cluster) or scheduler (an address), not both")
    if params.get("exact") is False:
        raise ConfigError("a streamed verdict checks every row (exact): exact=False is refused; drop batch_rows to "
                          "sample rows in memory")
    given = [k for k in SAMPLING_ONLY if k in params and params[k] is not None and k != "exact"]
    if given:
        raise ConfigError(f"{', '.join(given)}: a streamed verdict checks every row, so it takes no "
                          f"{' or '.join(given)}; drop it, or drop batch_rows to sample rows in memory")
    for k in SAMPLING_ONLY:
        params.pop(k, None)
    stream = open_stream(source)
    sample = stream.head(domain_sample, named=role)
    return stream, sample, {"batch_rows": batch_rows, "domain_sample": domain_sample, "workers": workers,
                            "scheduler": scheduler}


def verdict_over_stream(inputs, stream, sample, *, held_out: bool, batch_rows: int, domain_sample: int,
                        workers: int | None, scheduler: str | None, progress: bool, random_state: int, **params):
    """The verdict over every row of ``stream``, in the domain of ``inputs`` (made with its sample ``sample``).

    Parameters
    ----------
    inputs : RunInputs
        Made from the sample (beside the data, for held-out rows).
    stream : RowStream
    sample : pandas.DataFrame
        The rows of the stream the domain was made from.
    held_out : bool
        Whether the stream is the held-out rows (else the data's rows).
    batch_rows, domain_sample, workers, scheduler, progress, random_state
        As :func:`stream_estimate`.
    **params
        ``confidence``, ``method``, ``gamma``, ``favourable``, ``plausible_only``, ``threshold``.

    Returns
    -------
    verdict : Verdict
    inputs : RunInputs
    """
    from ..verdict.streaming import partition_readers, stream_verdict
    from .steps import with_blind_spot

    threshold = params.pop("threshold", None)
    from ..verdict.estimation import resolve_favourable

    favourable = params.pop("favourable", None)
    note = None
    stated = favourable is not None
    if favourable is None:
        favourable, note = inputs.favourable, inputs.favourable_note
    if favourable is None:
        raise ConfigError(f"the favourable label of {inputs.dataset.name!r} is not known: pass favourable= (the label "
                          "0 or 1 that is the favourable outcome)")
    if note is None:  # as estimate() words it: a benchmark's own, or as given
        favourable, note = resolve_favourable(inputs.dataset, favourable if stated else None)
    where = ("the first " if len(sample) == domain_sample else "all ") + f"{len(sample):,} rows of the stream"
    domain_text = (f"the domain (categories, bins) was made from {where} (domain_sample={domain_sample:,})"
                   + (f" laid beside the data ({inputs.dataset.n_samples - len(sample):,} rows)" if held_out else "")
                   + ("" if inputs.spec is None or inputs.spec.schema is None else ", read through the schema"))
    stream_meta = {"source": stream.description, "batch_rows": batch_rows, "domain_sample": domain_sample,
                   "domain": domain_text, "workers": workers, "scheduler": scheduler}
    role = "test" if held_out else "data"  # an error names a row as "data row 13 of test file 'a.parquet'"
    inputs.model.reset_queries()
    with dask_client(workers, scheduler) as client:
        verdict = stream_verdict(
            inputs.model, inputs.dataset, None if client is not None else stream.batches(batch_rows, named=role),
            favourable=favourable, favourable_note=note, n_rows=stream.n_rows, progress=progress,
            random_state=random_state, client=client,
            partitions=partition_readers(stream, batch_rows, named=role) if client is not None else None,
            population="test" if held_out else "rows", meta={"stream": stream_meta},
            schema_types=None if inputs.spec is None else (dict(inputs.spec.types), dict(inputs.spec.categories)),
            **params)
    streamed_quality = verdict.meta["stream"].get("model_quality")
    if streamed_quality is not None:  # F1 over every streamed row, not the domain sample: every reader sees it
        unseen = verdict.meta["stream"]["rows_unseen_protected_value"]
        # the count once: a Parquet source's description already holds its rows
        n_test = streamed_quality["n_test"]
        said = ([] if n_test == stream.n_rows else [f"{n_test:,} rows"] if stream.n_rows is None
                else [f"{n_test:,} of them"])
        said += [f"the {unseen:,} holding a protected value the domain never saw were not sent to the model"] * bool(
            unseen)
        inputs.quality.update(streamed_quality, evaluated_on=f"every labelled row of {stream.description}"
                              + (f" ({'; '.join(said)})" if said else ""))
    rows_text = (f"every row of {stream.description}, read in batches of {batch_rows:,}"
                 + ("" if client is None else f" on {workers or scheduler} Dask worker(s)"
                    if workers else f" on the Dask cluster at {scheduler}"))
    counts = verdict.meta["stream"]
    notes = (f"streamed: {counts['rows_read']:,} rows read: {counts['rows_checked']:,} checked (the individuals of "
             f"the share), {counts['rows_left_out']:,} left out (no counterpart could exist), "
             f"{counts['rows_unplaced']:,} unplaced (a protected value missing or not among its values, "
             f"{counts['rows_unseen_protected_value']:,} of them never seen in the domain sample), 0 skipped; "
             f"{domain_text}; the model's F1 is measured on {inputs.quality['evaluated_on']}",
             *_scored_again_notes(counts.get("partitions_scored_again")),
             *_beyond_notes(counts.get("rows_beyond_domain")),
             *_new_category_notes(counts.get("rows_new_category")), *verdict.notes)
    verdict = dataclasses.replace(verdict, notes=notes, meta={
        **verdict.meta, "population_rows": rows_text, "model_f1": inputs.quality["f1"],
        "model_one_class": inputs.quality.get("one_class"), "model_accuracy": inputs.quality["accuracy"],
        "model_evaluated_on": inputs.quality["evaluated_on"], "left_out": list(getattr(inputs, "left_out", ())),
        **({"threshold_given": threshold} if threshold is not None else {})})
    if verdict.n_affected == 0:
        verdict = with_blind_spot(verdict, inputs, random_state)
    return verdict, inputs


def _scored_again_notes(again: list[str] | None) -> list[str]:
    """One note naming the partitions sent to a worker that died: the scheduler ran them again (counted once)."""
    if not again:
        return []
    return [f"scored again after the worker they were sent to died: {', '.join(again)} (their rows are counted once, "
            "from the run that finished; the verdict is over every row)"]


def _beyond_notes(beyond: dict | None) -> list[str]:
    """One note naming the columns whose numbers went beyond the domain sample's range, with their rows."""
    if not beyond:
        return []
    return ["numbers beyond the range of the domain sample, used as given by the model (the person is who they are) "
            "and read as the nearest outer bin or bound for the rules, the constraints and the plausibility: "
            + ", ".join(f"{column} ({n:,} rows)" for column, n in beyond.items())]


def _new_category_notes(new: dict | None) -> list[str]:
    """One note (and a DataWarning, as the in-memory door warns) naming the categories the domain never held."""
    if not new:
        return []
    import warnings

    from ..exceptions import DataWarning

    note = ("categories the domain never held (not in the data nor in the domain sample), used as given by the model "
            "(the person is who they are: checked, and counted in the share, the groups and the F1) and read by no "
            "rule (who is harmed, in rules, is fitted on the people the domain codes; their counterparts' "
            "plausibility reads their other columns): "
            + "; ".join(f"column {column!r} value(s) {', '.join(map(repr, v['values']))}"
                        + (", ..." if len(v["values"]) >= NAMED_VALUES else "") + f" ({v['rows']:,} rows)"
                        for column, v in new.items()))
    warnings.warn(note, DataWarning, stacklevel=4)
    return [note]


@contextlib.contextmanager
def dask_client(workers: int | None, scheduler: str | None) -> Iterator[Any]:
    """A Dask client for ``workers`` (a local cluster it starts and closes) or ``scheduler``; None for neither.

    While it runs, distributed's own log records below WARNING are not printed in this process (its scheduler's,
    nanny's and client's INFO lines, about 40 for a two-worker cluster, which buried the progress bar and the
    verdict); the workers' are silenced below CRITICAL by the cluster (:func:`local_cluster`). This process's
    warnings and errors from distributed, and ours, stay.

    Parameters
    ----------
    workers : int, optional
    scheduler : str, optional

    Yields
    ------
    distributed.Client or None
    """
    if workers is None and scheduler is None:
        yield None
        return
    from distributed import Client

    with quiet_distributed_logs():
        if scheduler is not None or workers is None:
            with Client(scheduler) as client:
                yield client
            return
        with local_cluster(workers) as cluster, Client(cluster) as client:
            yield client


@contextlib.contextmanager
def quiet_distributed_logs(level: int = logging.WARNING) -> Iterator[None]:
    """Raise the ``distributed`` logger to ``level`` for the block (when it is below), as it was after.

    distributed's ``silence_logs`` only lowers the handlers it installed on its own logger; when the root logger
    already had a handler at its import (the command line's, :func:`~chiralfair.cli.console.setup_logging`, or a
    user's ``logging.basicConfig``), distributed installs none and its INFO records reach the root's. The logger's
    own level stops them wherever they would go.

    Parameters
    ----------
    level : int, default logging.WARNING

    Yields
    ------
    None
    """
    logger = logging.getLogger("distributed")
    before = logger.level
    if logger.getEffectiveLevel() < level:
        logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(before)


def local_cluster(workers: int):
    """A local Dask cluster of ``workers`` single-threaded worker processes, with glibc's own memory settings.

    dask's nanny starts its workers with ``MALLOC_TRIM_THRESHOLD_=65536``; setting it also fixes glibc's mmap
    threshold at 128 KiB, so every array of a batch above that size is mapped and unmapped afresh. On 1 M streamed
    rows (LR, two workers) that was 4.6 times the page faults of a single process and 1.2-1.4 s of system CPU per
    worker, against 0.4-0.6 s without it, at the same peak memory (600-620 MiB a worker:
    ``benchmarks/results/scale.md``). A worker's memory is bounded by its partition here, so the setting is dropped
    (a variable set in this process's environment is still passed on). dask's other settings are kept: one
    OpenMP, OpenBLAS and MKL thread per worker, so that two workers on two cores do not fight over them.

    The worker processes print none of distributed's records below CRITICAL (``silence_logs``, which each worker
    applies to the handler distributed installs in its own process): a row the model fails on raised
    ``distributed.worker - ERROR - Compute Failed`` with a traceback in every worker that met it, before the
    error this process raises, which names the file and the row. Records of this process stay at WARNING.

    The workers' statistical profiler is off: it wakes each worker's event loop every 10 ms to take the GIL and
    walk the stacks of the thread scoring a partition, about 1 CPU s a worker per 2.5 M rows of the README's LR
    pipeline (19.0-19.6 CPU s a worker without it, 20.4-20.6 with it, on 5 M rows, one run each at load 4-6),
    for a profile nobody reads here (no dashboard is opened).

    Parameters
    ----------
    workers : int

    Returns
    -------
    distributed.LocalCluster
    """
    import dask
    from distributed import LocalCluster

    with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
                          "distributed.worker.profile.enabled": False}):
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                               silence_logs=logging.CRITICAL)
    # silence_logs also lowered this process's own distributed handlers (installed when the root had none) to
    # CRITICAL; its warnings stay here, as before. The cluster puts back the handlers' first levels when it closes.
    for handler in logging.getLogger("distributed").handlers:
        if isinstance(handler, logging.StreamHandler) and handler.level > logging.WARNING:
            handler.setLevel(logging.WARNING)
    return cluster
