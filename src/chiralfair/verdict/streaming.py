"""A verdict over rows that do not fit in memory: streamed in batches, on one process or on a Dask cluster, exact.

Every row of the source is checked (each person against every counterpart that could exist, as
:func:`~chiralfair.verdict.estimate` checks an enumerated population). An error about a row (a missing label, a value
the domain cannot code, the model's) names its file or partition and its row there, whatever the batch
(:class:`~chiralfair.datasets.stream.Batch`), and no verdict is given. Each batch is coded in the domain's codes
(:func:`~chiralfair.datasets.recode.recode`), checked, and reduced to its additive counts
(:class:`~chiralfair.verdict.counts.VerdictCounts`); the counts of every batch are merged and the verdict is decided
once from them by the code :func:`~chiralfair.verdict.estimate` uses
(:func:`~chiralfair.verdict.estimation.verdict_from_counts`), so the verdict over a stream equals the in-memory
verdict over the same rows and domain, count for count. Memory is bounded by a batch (and the model), not by the
rows: the gap values kept for the exact quantiles go to a temporary file.

On a Dask cluster (``client=``), each partition (a Parquet file, a partition of a Dask DataFrame) is read and scored
on a worker; the model and the domain are sent once per worker, as one object (scattered): the wrapped model
holds the domain and its sample too, so two objects would send and unpickle them twice. Each worker returns its
partition's counts. A partition whose worker dies is retried by the scheduler (``retries``); one that fails for
good is named in the error, and no verdict is returned, never a partial one as whole. A partition scored again
because the worker it was sent to died is named in ``meta["stream"]["partitions_scored_again"]`` (its counts are the
retry's, once).
"""

from __future__ import annotations

import copy
import time
import uuid
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from .._random import as_generator, derive_seed
from ..datasets.base import Dataset
from ..datasets.frame import first_failing_row
from ..datasets.population import Population
from ..datasets.recode import recode
from ..datasets.stream import Batch
from ..exceptions import DatasetError, DomainError, ModelCallError, ModelCapabilityError, ModelInputError
from .counts import GapValues, VerdictCounts, confusion_counts, quality_of
from .rule_tree import RuleRows, rule_shape

# Times the scheduler runs a partition again after its worker died or it failed, before the run is refused.
RETRIES = 2


def batch_counts(judge, dataset: Dataset, batch: Batch, gaps: GapValues | None = None,
                 schema_types: tuple[dict, dict] | None = None,
                 rules: RuleRows | None = None) -> tuple[VerdictCounts, int]:
    """The counts of one batch: coded in the dataset's domain, every person checked, left-out ones counted.

    Parameters
    ----------
    judge : chiralfair.verdict.estimation._Judge
    dataset : Dataset
        Built from a frame: its codec codes the batch.
    batch : Batch
    gaps : GapValues, optional
        Where the gap values go (default: in memory, with the counts).
    schema_types : (dict, dict), optional
        A schema's column types and categories, applied to the batch as to in-memory rows
        (:func:`~chiralfair.datasets.schema.typed_frames`).
    rules : RuleRows, optional
        Where the rule tree's rows go (default: in memory, with the counts).

    Returns
    -------
    counts : VerdictCounts
    n_unseen : int
        Rows holding a protected value the domain never saw (left out, counted in ``counts.unplaced``).
    """
    from .estimation import _group_masks, _plausibility_totals, _Tally
    from .result import unplaced_by_attribute

    domain = dataset.domain
    _refuse_missing_labels(dataset, batch)
    if schema_types is not None and schema_types[0]:
        from ..datasets.schema import typed_frames

        named = isinstance(batch.frame.index, pd.MultiIndex)  # its index names each row's file (Batch)
        batch = Batch(typed_frames([batch.frame], schema_types[0], schema_types[1],
                                   sources=None if named else [batch.where])[0], batch.where, batch.start)
    X, unseen, beyond, new, new_values = recode(dataset, batch.frame, where=batch.where, first_row=batch.start,
                                                as_given=judge.check.model.reads_people)
    outside = domain.protected_value_index(X) < 0
    for j, attribute in enumerate(domain.attributes):
        outside[:, j] |= unseen[:, list(attribute.columns)].any(axis=1)
    unseen_rows = unseen.any(axis=1)
    unplaced = {a.name: int(outside[unseen_rows, j].sum()) for j, a in enumerate(domain.attributes)
                if outside[unseen_rows, j].any()}
    n_unseen = int(unseen_rows.sum())
    keep = np.flatnonzero(~unseen_rows)
    tally = _Tally.empty()
    in_rules = None
    if len(keep):
        # the people the domain codes whole first, then those holding a category it never held, one check per set
        # of such columns (their plausibility reads the other columns: module recode)
        order, coded = [], []
        if new[keep].any():
            kinds, which = np.unique(new[keep], axis=0, return_inverse=True)
        else:
            kinds, which = np.zeros((1, new.shape[1]), dtype=bool), np.zeros(len(keep), dtype=np.int64)
        labels = []
        for i, columns in enumerate(kinds):
            rows = keep[which.reshape(-1) == i]
            people = None
            if judge.check.model.reads_people:
                frame = batch.frame.iloc[rows].reset_index(drop=True)[dataset.codec.names]  # type: ignore[union-attr]
                people = Population(frame, X[rows], dataset.codec)  # type: ignore[arg-type]
            own_labels, outcome = _checked(_judging(judge, np.flatnonzero(columns)), batch, X, rows, people)
            tally.add(X[rows], *outcome)
            order.append(rows)
            labels.append(np.asarray(own_labels))
            coded.append(np.full(len(rows), not columns.any()))
        keep = np.concatenate(order)
        counted = np.concatenate(tally.n_counterparts) > 0
        in_rules = None if all(c.all() for c in coded) else np.concatenate(coded)[counted]
        tally, n_left_out, unplaced_X = tally.countable()
        confusion = _confusion(dataset, batch.frame, keep, np.concatenate(labels))
    else:
        n_left_out, unplaced_X, confusion = 0, None, None
    if unplaced_X is not None:
        for k, v in unplaced_by_attribute(domain, unplaced_X).items():
            unplaced[k] = unplaced.get(k, 0) + v
    n_unplaced = n_unseen + (0 if unplaced_X is None else len(unplaced_X))
    if tally.X:
        X, combination, affected, harmed, gap = tally.arrays()
    else:
        X = np.zeros((0, domain.n_features), dtype=np.int64)
        combination = np.zeros(0, dtype=np.int64)
        affected = harmed = np.zeros(0, dtype=bool)
        gap = None if not judge.with_proba else np.zeros(0)
    counts = VerdictCounts.of_batch([m for _, _, m in _group_masks(domain, X, combination)], affected, harmed, gap,
                                    X[:, domain.non_protected],
                                    plausibility=_plausibility_totals(tally) if tally.X else None,
                                    n_left_out=n_left_out, n_unplaced=n_unplaced, unplaced=unplaced, gaps=gaps,
                                    rule_shape=rule_shape(domain), rules=rules, in_rules=in_rules)
    counts.new_values = new_values
    counts.confusion, counts.beyond = confusion, beyond
    return counts, n_unseen


def _refuse_missing_labels(dataset: Dataset, batch: Batch) -> None:
    """Refuse a batch holding a row whose label is missing, naming the label column and the row.

    As the in-memory door refuses one (:func:`~chiralfair.datasets.from_frame`): a streamed F1 without that row would
    read as whole.
    """
    if dataset.label not in batch.frame.columns:
        return
    missing = batch.frame[dataset.label].isna().to_numpy()
    if missing.any():
        raise DatasetError(f"label column {dataset.label!r} has a missing value at "
                           f"{batch.row_text(int(np.argmax(missing)))}; no verdict is reported (one without that "
                           "row would read as the verdict over every row); fill the label or drop the row")


def _checked(judge, batch: Batch, X: np.ndarray, rows: np.ndarray, people):
    """``judge.check_rows`` on the batch's ``rows``, a model's error naming the row of the file or partition.

    The row is the first person whose check fails alone (found by halving the rows, a few calls, only once the model
    has failed); an error no row explains (a lost connection, a timeout) names the rows that were being checked.
    """
    try:
        return judge.check_rows(X[rows], people, with_labels=True)
    except ModelCapabilityError as err:
        failed = err
    if isinstance(failed, ModelInputError):
        def fails(a: int, b: int) -> bool:
            part = None if people is None else people.take(np.arange(a, b))
            try:
                judge.check_rows(X[rows[a:b]], part, with_labels=True)
            except ModelCapabilityError:
                return True
            return False

        lo = first_failing_row(len(rows), fails)
        if lo is not None:
            where = f"{batch.row_text(int(rows[lo]))} (the person or one of their counterparts)"
            raise _with_text(failed, where) from failed
    where = f"checking the rows from {batch.row_text(int(rows[0]))} to {batch.row_text(int(rows[-1]))}"
    raise _with_text(failed, where) from failed


def _with_text(err: Exception, where: str) -> Exception:
    """A copy of ``err`` (its type and attributes) whose message starts by saying ``where``."""
    out = copy.copy(err)
    out.args = (f"{where}: {err}", *err.args[1:])
    return out


def _judging(judge, columns: np.ndarray):
    """``judge``, or one whose plausibility reads none of ``columns`` (people holding a category never held there).

    The same model, domain and counts otherwise.
    """
    if not len(columns) or not judge.with_plausibility:
        return judge
    from ..oracle import DiscriminationCheck

    other = copy.copy(judge)
    other.check = DiscriminationCheck(judge.check.model, judge.check.domain.without_plausibility_of(columns))
    return other


def _confusion(dataset: Dataset, frame, keep: np.ndarray, own_labels: np.ndarray) -> np.ndarray | None:
    """The model's confusion counts over the rows ``keep`` of ``frame`` (None without the label column).

    The label is read as the dataset's was: the positive class is 1 (a missing label was refused before:
    :func:`_refuse_missing_labels`).
    """
    if dataset.label not in frame.columns:
        return None
    y = frame[dataset.label].iloc[keep]
    truth = (y.astype(str) == str(dataset.positive_class)).to_numpy()
    return confusion_counts(truth, np.asarray(own_labels))


def stream_verdict(model, dataset: Dataset, batches: Iterable[Batch] | None, *, favourable: int,
                   favourable_note: str, n_rows: int | None = None, gamma: float | None = None,
                   plausible_only: bool = False, confidence: float = 0.95, method: str = "clopper-pearson",
                   random_state=0, progress: bool = False, client=None, partitions=None,
                   meta: dict | None = None, population: str = "rows", schema_types: tuple[dict, dict] | None = None):
    """The verdict over every row of ``batches`` (or of ``partitions`` on a Dask cluster), from merged counts.

    Parameters
    ----------
    model : CountingModel
        The model under test, wrapped in the dataset's language.
    dataset : Dataset
        The domain (made from the schema or a stated sample) and the codec that codes the rows.
    batches : iterable of Batch, or None
        The rows, read in batches on this process (None with ``client``).
    favourable : {0, 1}
    favourable_note : str
    n_rows : int, optional
        Rows of the source when known (for the progress bar).
    gamma, plausible_only, confidence, method, random_state
        As in :func:`~chiralfair.verdict.estimate`.
    progress : bool
        Show a progress bar in rows per second (tqdm, on stderr).
    client : distributed.Client, optional
        Score the partitions on its workers.
    partitions : list of callables, optional
        With ``client``: one function per partition, returning its frame (:func:`partition_readers`), each with a
        ``where`` attribute naming it.
    meta : dict, optional
        Merged into the verdict's ``meta``.
    population : {"rows", "test"}, default="rows"
        What the rows are: the data's rows, or held-out rows.
    schema_types : (dict, dict), optional
        A schema's column types and categories, applied to every batch as to the domain's rows.

    Returns
    -------
    Verdict
        ``meta["stream"]`` says the rows read, the batches or partitions, the rows left out and why, and the
        model's F1 and accuracy over every row read which was sent to the model (``model_quality``,
        :func:`~chiralfair.verdict.counts.quality_of`; None without the label column), and
        the rows holding a number beyond a column's range, used as given, by column (``rows_beyond_domain``), and
        those holding a category the domain never held, used as given, by column with the first few values
        (``rows_new_category``), and on a cluster the partitions scored again because the worker they were sent
        to died (``partitions_scored_again``; counted once, from the retry).

    Raises
    ------
    DatasetError
        A batch or partition that cannot be read (naming it); a value the domain cannot code, or a missing label
        (refused as the in-memory door refuses it, never skipped from the F1), naming the file or partition and the
        row within it.
    ModelInputError
        The model refusing a row, naming the file or partition and the row within it.
    ModelCallError
        The model failing on rows alike (naming the rows it was checking), or a partition whose scoring failed for
        good on the cluster (naming it, after the retries).
    DomainError
        When no individual read has a counterpart that could exist.
    """
    from .. import __version__
    from ..oracle import DiscriminationCheck
    from .estimation import _Judge, _statsmodels_version, verdict_from_counts

    if gamma is not None:
        model.require("predict_proba", by="estimate(gamma=...)")
    if plausible_only and dataset.domain.support is None:
        from ..exceptions import ConfigError

        raise ConfigError("plausible_only=True needs the data's support (a domain built from data)")
    domain = dataset.domain
    check = DiscriminationCheck(model, domain)
    judge = _Judge(check, favourable, gamma, model.has_proba, plausible_only)
    rng = as_generator(random_state)
    start_queries, started = model.n_queries, time.perf_counter()
    gaps = GapValues(spill=True) if judge.with_proba else None
    rules = RuleRows(rule_shape(domain)[1], spill=True)
    total = VerdictCounts()
    total.gaps, total.rules = gaps, rules
    read = n_batches = n_unseen = 0
    extra_queries = 0
    scored_again: list[str] = []
    cpu = time.process_time()
    try:
        if client is None:
            bar = _bar(progress, n_rows)
            for batch in batches or ():
                counts, unseen = batch_counts(judge, dataset, batch, gaps, schema_types, rules)
                total.merge(counts)
                read += len(batch.frame)
                n_batches += 1
                n_unseen += unseen
                bar.update(len(batch.frame))
            bar.close()
        else:
            read, n_batches, n_unseen, extra_queries, scored_again = _on_cluster(
                client, judge, dataset, partitions or [], total, progress, n_rows, schema_types)
    except BaseException:
        if gaps is not None:
            gaps.close()
        rules.close()
        raise
    if total.n == 0:
        if gaps is not None:
            gaps.close()
        rules.close()
        raise DomainError(f"none of the {read:,} individuals read has a counterpart that could exist "
                          f"({total.n_left_out:,} break a constraint with each counterpart, {total.n_unplaced:,} hold "
                          "a protected value that is missing or not among its values), so the question cannot be "
                          "asked of anyone")
    n_queries = model.n_queries - start_queries + extra_queries
    stream = {"rows_read": read, "batches" if client is None else "partitions": n_batches,
              "rows_checked": total.n, "rows_left_out": total.n_left_out, "rows_unplaced": total.n_unplaced,
              "rows_unseen_protected_value": n_unseen, "rows_skipped": 0,
              "seconds": time.perf_counter() - started, "cpu_seconds_this_process": time.process_time() - cpu,
              "model_quality": None if total.confusion is None else quality_of(total.confusion),
              "rows_beyond_domain": dict(total.beyond), "rows_new_category": dict(total.new_values),
              **({} if client is None else {"partitions_scored_again": scored_again})}
    base_meta = {"chiralfair_version": __version__, "statsmodels_version": _statsmodels_version(),
                 "dataset": dataset.name, "model": model.name,
                 "random_state": random_state if isinstance(random_state, int) else None,
                 "params": {"population": population, "confidence": confidence, "margin": 0.0, "max_queries": None,
                            "method": method, "gamma": gamma, "favourable": favourable, "exact": True,
                            "plausible_only": plausible_only},
                 "n_combinations": check.n_combinations, "positive_class": dataset.positive_class,
                 "negative_class": dataset.negative_class, "label_column": getattr(dataset, "label", None),
                 "individuals_as": "rows as given" if model.reads_people else "codes", "stream": stream,
                 **(meta or {})}
    base_meta["stream"] = {**stream, **(meta or {}).get("stream", {})}
    verdict = verdict_from_counts(
        total, domain=domain, population=population, population_size=read, favourable=favourable,
        favourable_note=favourable_note, confidence=confidence, level=confidence, method=method, margin=0.0,
        stopped_by="exact", looks=0, threshold=None, gamma=gamma, has_proba=model.has_proba,
        plausible_only=plausible_only, seed=derive_seed(rng), n_queries=n_queries, started=started, rows_text=read,
        binned=dataset.codec.binned if model.reads_people and dataset.codec is not None else None, meta=base_meta)
    return verdict


def _bar(progress: bool, n_rows: int | None):
    from tqdm.auto import tqdm

    return tqdm(total=n_rows, unit="rows", unit_scale=True, disable=not progress, desc="verdict", smoothing=0.1)


class _Shipment:
    """The judge and the dataset, sent to every worker as one pickle.

    The wrapped model holds the domain and the sample it was made from; one pickle unpickles them once per worker
    (dask sends a tuple's items apart, so a tuple would not do).
    """

    def __init__(self, judge, dataset: Dataset):
        self.judge = judge
        self.dataset = dataset


def _score_partition(read, shipped: _Shipment, batch_rows: int,
                     schema_types=None) -> tuple[VerdictCounts, int, int, int]:
    """On a worker: read one partition, check it in batches, return its counts, rows, unseen rows and queries."""
    from ..datasets.stream import Batch

    judge, dataset = shipped.judge, shipped.dataset
    model = judge.check.model
    before = model.n_queries
    total = VerdictCounts()
    rules = RuleRows(rule_shape(dataset.domain)[1])  # one table for the partition, sent back with its counts
    rows = unseen = 0
    for frame in read(batch_rows):  # its index names each row of the partition (PartitionReader)
        counts, n_unseen = batch_counts(judge, dataset, Batch(frame, read.where, rows), None, schema_types, rules)
        if total.gaps is not None and counts.gaps is not None:
            total.gaps.extend(counts.gaps)
            counts.gaps = total.gaps
        total.merge(counts)
        rows += len(frame)
        unseen += n_unseen
    return total, rows, unseen, model.n_queries - before


def _lost_workers_query():
    """A function run on the scheduler: how many workers died holding task ``key`` (it was sent again after each).

    Made here so that it is pickled by value: a scheduler of the user's cluster need not have chiralfair installed.
    """
    def workers_lost_holding(key: str, dask_scheduler=None) -> int:
        task = dask_scheduler.tasks.get(key) if dask_scheduler is not None else None
        return 0 if task is None else int(getattr(task, "suspicious", 0))
    return workers_lost_holding


def _on_cluster(client, judge, dataset: Dataset, partitions, total: VerdictCounts, progress: bool,
                n_rows: int | None, schema_types=None) -> tuple[int, int, int, int, list[str]]:
    """Score every partition on the cluster's workers (model and domain scattered once), merge their counts.

    Returns the rows read, the partitions, the rows holding an unseen protected value, the model queries, and the
    partitions sent to a worker that died (scored again by the scheduler), in the order they finished.
    """
    from distributed import as_completed

    # one object: the judge's wrapped model holds the dataset's domain and sample (30 of the 31 MB pickled for the
    # README's pipeline), so scattering the two apart sent and unpickled them twice on every worker; a random key,
    # not a hash of the 31 MB
    [shipped] = client.scatter([_Shipment(judge, dataset)], broadcast=True, hash=False)
    batch_rows = getattr(partitions[0], "batch_rows", 65_536) if partitions else 65_536
    run = uuid.uuid4().hex
    futures = {client.submit(_score_partition, read, shipped, batch_rows, schema_types,
                             retries=RETRIES,
                             key=f"chiralfair-verdict-{run}-{i}", pure=False): read
               for i, read in enumerate(partitions)}
    bar = _bar(progress, n_rows)
    read_rows = unseen = queries = 0
    scored_again = []
    _workers_lost_holding = _lost_workers_query()
    try:
        for future in as_completed(futures):
            where = futures[future].where
            try:
                counts, rows, n_unseen, n_queries = future.result()
            except (DatasetError, ModelInputError):  # a value of a row, named with its row: no retry explains it
                raise
            except Exception as err:
                where, failure = _first_failure(futures, where, err)
                if isinstance(failure, DatasetError):
                    raise failure from None
                raise ModelCallError(f"scoring {where} failed on the cluster after {RETRIES} retries: "
                                     f"{type(failure).__name__}: {failure}; no verdict is reported (a verdict "
                                     "without this partition would not be the verdict over the rows)") from failure
            if total.gaps is not None and counts.gaps is not None:
                total.gaps.extend(counts.gaps)
                counts.gaps = total.gaps
            total.merge(counts)
            read_rows += rows
            unseen += n_unseen
            queries += n_queries
            if client.run_on_scheduler(_workers_lost_holding, key=future.key):  # asked while the task is held
                scored_again.append(where)
            bar.update(rows)
            # merged: drop the last reference, so the worker frees the partition's result (its rule table and
            # gaps); held to the end, every result stayed in the workers' memory, which grew with the rows
            del futures[future]
    finally:
        bar.close()
        for future in futures:
            future.cancel()
    return read_rows, len(partitions), unseen, queries, scored_again


def _first_failure(futures: dict, where: str, err: BaseException) -> tuple[str, BaseException]:
    """The partition that failed, not one cancelled because of it: the first future in error, else every cancelled one.

    A worker that dies takes the scattered model with it, and the scheduler may cancel other partitions' tasks
    before it reports the one that killed it; the error names the partition whose own task failed. When the model
    was lost with the only worker holding it (one that joined after the scatter had none), every partition under
    way is cancelled alike and none is in error: all of them are named, in order, not the one the scheduler happened
    to report first.
    """
    from distributed import wait

    try:
        wait(list(futures), timeout=30)
    except Exception:  # a timeout, or the cluster gone: name what is known
        pass
    for future, read in futures.items():
        if future.status == "error":
            return read.where, future.exception()
    cancelled = [read.where for future, read in futures.items() if future.status == "cancelled"]
    if len(cancelled) > 1:
        return ", ".join(cancelled) + " (cancelled together: the model sent to the workers was lost with a worker " \
            "that died)", err
    return where, err


class PartitionReader:
    """A picklable reader of one partition, run on a worker: ``reader(batch_rows)`` yields its frames.

    Each frame's index names its rows by ``row_source`` and their row there (a file's rows numbered from 0 as read,
    a frame's or a Dask partition's own index labels), as :meth:`~chiralfair.datasets.stream.RowStream.batches`
    names them on one process, so that an error about a row names it alike on a worker.

    Attributes
    ----------
    where : str
        The partition in words (a file, a partition of a Dask DataFrame).
    row_source : str or None
        Its rows' source in the words :func:`~chiralfair.datasets.frame.row_text` reads (``test file 'a.parquet'``);
        None: frames indexed from 0.
    """

    def __init__(self, kind: str, where: str, source: Any, batch_rows: int, storage_options: dict | None = None,
                 rows: tuple[int, int] | None = None, row_source: str | None = None):
        self.kind = kind
        self.where = where
        self.source = source
        self.batch_rows = batch_rows
        self.storage_options = storage_options
        self.rows = rows
        self.row_source = row_source

    def __call__(self, batch_rows: int):
        """Yield the partition's rows, at most ``batch_rows`` at a time (pandas frames)."""
        if self.kind == "parquet":
            import pyarrow.parquet as pq

            try:
                if "://" in self.source:
                    import fsspec

                    handle: Any = fsspec.open(self.source, "rb", **(self.storage_options or {})).open()
                else:
                    handle = self.source
                reader = pq.ParquetFile(handle)
                at = 0 if self.rows is None else self.rows[0]
                frames = (record.to_pandas() for record in reader.iter_batches(batch_size=batch_rows)) \
                    if self.rows is None else _row_range(reader, *self.rows, batch_rows)
                for frame in frames:
                    yield self._named(frame, pd.RangeIndex(at, at + len(frame)))
                    at += len(frame)
            except (OSError, ValueError) as err:
                raise DatasetError(f"cannot read Parquet file {self.source}: {err}") from err
        elif self.kind == "frame":  # rows read in memory on this process, sent with the task
            for s in range(0, len(self.source), batch_rows):
                part = self.source.iloc[s:s + batch_rows]
                yield self._named(part.reset_index(drop=True), part.index)
        else:  # a Dask partition, as a delayed object computed on the worker
            try:
                frame = self.source.compute(scheduler="sync")
            except Exception as err:  # a file behind the partition unreadable: named, as on one process
                raise DatasetError(f"cannot read {self.where}: {type(err).__name__}: {err}") from err
            for s in range(0, len(frame), batch_rows):
                part = frame.iloc[s:s + batch_rows]
                yield self._named(part.reset_index(drop=True), part.index)

    def _named(self, frame, labels):
        if self.row_source is None:
            return frame
        from ..datasets.stream import named_rows

        return named_rows(frame, [(self.row_source, labels)])


def _row_range(reader, start: int, stop: int, batch_rows: int):
    """Rows [start, stop) of a Parquet file, reading only the row groups they lie in, as frames."""
    offset = 0
    for group in range(reader.num_row_groups):
        size = reader.metadata.row_group(group).num_rows
        if offset < stop and offset + size > start:
            at = offset
            for record in reader.iter_batches(batch_size=batch_rows, row_groups=[group]):
                a, b = max(start, at), min(stop, at + record.num_rows)
                if a < b:
                    yield record.slice(a - at, b - a).to_pandas()
                at += record.num_rows
                if at >= stop:
                    break
        offset += size


# Most rows of one partition sent to a Dask worker: a file of 1 M rows makes 4 partitions, so that the workers
# share it (a partition's counts, and its rule-tree rows, 14 bytes a person on Adult, come back whole).
PARTITION_ROWS = 1 << 18


def partition_readers(stream, batch_rows: int, *, named: str = "data") -> list[PartitionReader]:
    """The partitions of ``stream`` (a :class:`~chiralfair.datasets.stream.RowStream`), one reader each.

    Parameters
    ----------
    stream : RowStream
        Parquet (each file cut into ranges of at most :data:`PARTITION_ROWS` rows, or ``batch_rows`` if more),
        held-out rows read in memory (the same ranges), or a Dask DataFrame (its partitions).
    batch_rows : int
    named : {"data", "test"}, default="data"
        What the rows are, for naming a row in an error (:class:`PartitionReader`).

    Returns
    -------
    list of PartitionReader

    Raises
    ------
    DatasetError
        For a polars LazyFrame, which has no partitions to send.
    """
    if stream.kind == "parquet":
        prefix = ""
        text = str(stream.source)
        if "://" in text:
            prefix = text.split("://", 1)[0] + "://"
        import pyarrow.parquet as pq

        size = max(PARTITION_ROWS, batch_rows)
        readers = []
        for path in stream.files:
            source = prefix + path if prefix and "://" not in path else path
            handle = stream._filesystem.open(path, "rb") if stream._filesystem is not None else path
            n = pq.ParquetFile(handle).metadata.num_rows
            named_as = stream._row_source(f"file {path}", named)
            if n <= size:
                readers.append(PartitionReader("parquet", f"file {path}", source, batch_rows, row_source=named_as))
                continue
            readers += [PartitionReader("parquet", f"rows {s:,} to {min(n, s + size) - 1:,} of file {path}", source,
                                        batch_rows, rows=(s, min(n, s + size)), row_source=named_as)
                        for s in range(0, n, size)]
        return readers
    if stream.kind == "frame":
        size = max(PARTITION_ROWS, batch_rows)
        frame = stream.source if not stream.files else stream.source.set_axis(pd.RangeIndex(len(stream.source)))
        return [PartitionReader("frame", f"rows {s:,} to {min(len(stream.source), s + size) - 1:,} of "
                                f"{stream.description}", frame.iloc[s:s + size], batch_rows,
                                row_source=stream._row_source("", named))
                for s in range(0, len(stream.source), size)]
    if stream.kind == "dask":
        return [PartitionReader("dask", f"partition {i} of the Dask DataFrame", part, batch_rows,
                                row_source=stream._row_source(f"partition {i} of the Dask DataFrame", named))
                for i, part in enumerate(stream.source.to_delayed())]
    raise DatasetError("a polars LazyFrame is read on this process only: drop --workers/--scheduler, or write it to "
                       "Parquet (lazy.sink_parquet) and give the folder")

