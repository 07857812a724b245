"""A verdict streamed in batches (Parquet file or folder, Dask, polars; one process or a Dask cluster) equals the
in-memory exact verdict over the same rows, and bad input is refused naming the file, never reported as whole."""

import itertools
import logging
import os
import sys

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

import chiralfair
from chiralfair.datasets.stream import open_stream
from chiralfair.exceptions import ConfigError, DatasetError, ModelCallError
from chiralfair.verdict.counts import exact_quantiles

KW = {"label": "y", "positive_class": "yes", "protected": "sex,race"}
SEX, RACE = ["f", "m"], ["a", "b", "c"]


def people_frame(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    people = pd.DataFrame({"sex": rng.choice(SEX, n), "race": rng.choice(RACE, n), "hours": rng.normal(40, 10, n)})
    people["y"] = np.where(people["hours"] + 10 * (people["sex"] == "m") + rng.normal(0, 5, n) > 45, "yes", "no")
    return people


def written(people, pipe, root, part):
    """The rows as one Parquet file and as a folder of files of ``part`` rows (the last in a sub-folder)."""
    people.to_parquet(root / "one.parquet")
    (root / "folder" / "deeper").mkdir(parents=True)
    starts = range(0, len(people), part)
    for i, s in enumerate(starts):
        where = root / "folder" / ("deeper" if i == len(starts) - 1 else "") / f"part{i}.parquet"
        people.iloc[s:s + part].to_parquet(where)
    memory = chiralfair.estimate(pipe, people, population="rows", exact=True, **KW)
    return people, pipe, root, memory


@pytest.fixture(scope="module")
def pipe():
    people = people_frame(601)
    return make_pipeline(make_column_transformer((OneHotEncoder(), ["sex", "race"]), remainder="passthrough"),
                         LogisticRegression()).fit(people[["sex", "race", "hours"]], people["y"])


@pytest.fixture(scope="module")
def case(tmp_path_factory, pipe):
    return written(people_frame(601), pipe, tmp_path_factory.mktemp("stream"), 250)  # files of 250, 250, 101 rows


@pytest.fixture(scope="module")
def small_case(tmp_path_factory, pipe):
    return written(people_frame(83, seed=1), pipe, tmp_path_factory.mktemp("small"), 40)  # a model call a row


def recount(pipe, people):
    """Affected and harmed per person, through the user's pipeline: every (sex, race) combination, plain pandas."""
    X = people[["sex", "race", "hours"]]
    own = pipe.predict(X)
    affected = np.zeros(len(X), dtype=bool)
    for sex, race in itertools.product(SEX, RACE):
        other = X.assign(sex=sex, race=race)
        affected |= pipe.predict(other) != own
    return affected, affected & (own != "yes")


def same_verdict(a, b):
    for name in ("n_individuals", "n_affected", "n_harmed", "share", "lower", "upper", "people_lower",
                 "people_upper", "people_method", "worst_group", "too_small", "gap", "rules", "n_left_out",
                 "n_unplaced", "unplaced", "plausibility", "group_confidence", "exact", "population_size"):
        assert getattr(a, name) == getattr(b, name), name
    assert a.groups == b.groups
    assert [a.label_text(label) for label in (0, 1)] == [b.label_text(label) for label in (0, 1)]  # named alike


def source_of(kind, people, root):
    if kind == "file":
        return str(root / "one.parquet")
    if kind == "folder":
        return str(root / "folder")
    if kind == "dask":
        import dask.dataframe as dd

        return dd.from_pandas(people, npartitions=3)
    import polars as pl

    return pl.from_pandas(people).lazy()


@pytest.mark.parametrize("kind", ["file", "folder", "dask", "polars"])
@pytest.mark.parametrize("batch_rows", [1, 97, 10_000])
def test_streamed_verdict_equals_the_in_memory_one_and_the_recount(case, small_case, kind, batch_rows):
    people, pipe, root, memory = small_case if batch_rows == 1 else case
    streamed = chiralfair.estimate(pipe, source_of(kind, people, root), batch_rows=batch_rows,
                                   domain_sample=len(people), **KW)
    same_verdict(memory, streamed)
    affected, harmed = recount(pipe, people)
    assert streamed.n_affected == affected.sum() > 0 and streamed.n_harmed == harmed.sum() > 0
    for sex in SEX:
        group = streamed.group(f"sex={sex}")
        mask = (people["sex"] == sex).to_numpy()
        assert (group["n"], group["n_affected"], group["n_harmed"]) == (mask.sum(), affected[mask].sum(),
                                                                       harmed[mask].sum())
    stream = streamed.meta["stream"]
    assert (stream["rows_read"], stream["rows_checked"], stream["rows_skipped"]) == (len(people), len(people), 0)
    assert stream["batches"] == -(-len(people) // batch_rows)
    assert any(n.startswith(f"streamed: {len(people):,} rows read") for n in streamed.notes)


def test_the_held_out_rows_streamed_equal_the_held_out_rows_in_memory(case):
    people, pipe, root, _ = case
    train, test = people.iloc[:300], people.iloc[300:]
    test.to_parquet(root / "test.parquet")
    memory = chiralfair.estimate(pipe, train, test=test, exact=True, **KW)
    streamed = chiralfair.estimate(pipe, train, test=str(root / "test.parquet"), batch_rows=64,
                                   domain_sample=len(test), **KW)
    same_verdict(memory, streamed)
    assert streamed.population == "test" and streamed.n_individuals == len(test)


def test_a_protected_value_the_sample_never_saw_is_left_out_and_counted(case, tmp_path):
    people, pipe, _, _ = case
    odd = people.copy()
    odd.loc[odd.index[-5:], "race"] = "z"  # never in the first 500 rows, the domain's sample
    odd.to_parquet(tmp_path / "odd.parquet")
    streamed = chiralfair.estimate(pipe, str(tmp_path / "odd.parquet"), batch_rows=100, domain_sample=500, **KW)
    assert streamed.unplaced == {"race": 5} and streamed.n_unplaced == 5
    assert streamed.meta["stream"]["rows_unseen_protected_value"] == 5
    assert streamed.n_individuals == len(people) - 5
    affected, _ = recount(pipe, people.iloc[:-5])
    assert streamed.n_affected == affected.sum()


def test_the_streamed_notes_say_each_count_once_with_what_it_counts(case, tmp_path):
    people, pipe, _, _ = case
    odd = people.copy()
    odd.loc[odd.index[-5:], "race"] = "z"  # never in the first 500 rows: read, not checked, not sent to the model
    odd.to_parquet(tmp_path / "odd.parquet")
    people.to_parquet(tmp_path / "plain.parquet")
    unseen = int((odd["race"] == "z").sum())
    read, checked = len(odd), len(odd) - unseen
    streamed = chiralfair.estimate(pipe, str(tmp_path / "odd.parquet"), batch_rows=100, domain_sample=500, **KW)
    source = f"Parquet file {tmp_path / 'odd.parquet'} (1 file, {read:,} rows)"
    note = next(n for n in streamed.notes if n.startswith("streamed: "))
    assert note.startswith(f"streamed: {read:,} rows read: {checked:,} checked (the individuals of the "
                                        f"share), 0 left out (no counterpart could exist), {unseen} unplaced")
    assert note.endswith(
        f"the model's F1 is measured on every labelled row of {source} ({checked:,} of them; the {unseen} holding a "
        "protected value the domain never saw were not sent to the model)")
    plain = chiralfair.estimate(pipe, str(tmp_path / "plain.parquet"), batch_rows=100, domain_sample=500, **KW)
    whole = f"every labelled row of Parquet file {tmp_path / 'plain.parquet'} (1 file, {len(people):,} rows)"
    note = next(n for n in plain.notes if n.startswith("streamed: "))
    assert note.endswith(f"the model's F1 is measured on {whole}")  # the count once, not twice
    assert plain.meta["model_evaluated_on"] == whole


def jobs_case(tmp_path):
    """Training rows without a 'pilot', held-out rows whose last 10 are pilots (past a domain sample of 100 rows)."""
    people = people_frame(600)
    people["job"] = np.where(np.arange(600) % 7 == 0, "nurse", "clerk")
    people.loc[people.index[-10:], "job"] = "pilot"
    train, test = people.iloc[:300], people.iloc[300:].reset_index(drop=True)
    features = ["sex", "race", "hours", "job"]
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["sex", "race", "job"]),
                                                 remainder="passthrough"),
                         LogisticRegression()).fit(train[features], train["y"])
    test.to_parquet(tmp_path / "test.parquet")
    return train, test, pipe, str(tmp_path / "test.parquet")


def test_a_category_the_domain_never_held_is_used_as_given_as_the_in_memory_door_uses_it(tmp_path):
    train, test, pipe, path = jobs_case(tmp_path)
    with pytest.warns(chiralfair.exceptions.DataWarning, match="'job' value.*'pilot'"):
        memory = chiralfair.estimate(pipe, train, test=test, exact=True, **KW)
    with pytest.warns(chiralfair.exceptions.DataWarning, match=r"column 'job' value\(s\) 'pilot' \(10 rows\)"):
        streamed = chiralfair.estimate(pipe, train, test=path, batch_rows=64, domain_sample=100, **KW)
    for name in ("n_individuals", "n_affected", "n_harmed", "share", "lower", "upper", "people_lower",
                 "people_upper", "worst_group", "too_small", "gap", "n_left_out", "n_unplaced", "population_size"):
        assert getattr(streamed, name) == getattr(memory, name), name
    assert streamed.groups == memory.groups
    assert streamed.meta["model_f1"] == memory.meta["model_f1"]
    X = test[["sex", "race", "hours", "job"]]  # the recount: every (sex, race) combination, the job as given
    own = pipe.predict(X)
    affected = np.zeros(len(X), dtype=bool)
    for sex, race in itertools.product(SEX, RACE):
        affected |= pipe.predict(X.assign(sex=sex, race=race)) != own
    assert streamed.n_individuals == len(test) and streamed.n_affected == affected.sum()
    assert affected[-10:].any()  # the pilots count: some of them are affected
    assert streamed.meta["stream"]["rows_new_category"] == {"job": {"rows": 10, "values": ["pilot"]}}
    assert any("'pilot' (10 rows)" in n for n in streamed.notes)


def test_a_category_the_domain_never_held_in_a_coupled_column_is_refused_naming_a_real_flag(tmp_path):
    from chiralfair.cli.console import ESTIMATE_FLAGS, command_line_syntax

    train, _, pipe, path = jobs_case(tmp_path)
    couple = {"sex": {"job": {"clerk": "nurse", "nurse": "clerk"}}}
    with pytest.raises(DatasetError, match=r"column 'job' holds the value 'pilot' \(data row 291 of test file "
                                           r"'.*test\.parquet'\).*coupling.*a domain_sample that reaches "
                                           r"this row") as err:
        chiralfair.estimate(pipe, train, test=path, batch_rows=64, domain_sample=100, couple=couple, **KW)
    text = command_line_syntax(str(err.value), ESTIMATE_FLAGS)
    assert "a --domain-sample that reaches this row" in text
    assert "domain_sample" not in text and "--domain-sample=" not in text and "--domain-sample," not in text


def test_plausibility_without_a_column_reads_none_of_its_pairs():
    from chiralfair.domain import Domain

    # sex (protected) and job: no woman is a pilot among 400 rows where 100 are women and 200 pilots (rare)
    sex = np.repeat([0, 1], [100, 300])
    job = np.r_[np.zeros(100, int), np.ones(200, int), np.zeros(100, int)]
    domain = Domain.from_data(np.c_[sex, job], ["sex", "job"], kinds=["categorical", "categorical"],
                              protected=["sex"])
    woman_pilot = np.array([[0, 1]])
    assert not domain.plausible(woman_pilot)[0]
    assert domain.without_plausibility_of([1]).plausible(woman_pilot)[0]
    assert not domain.without_plausibility_of([]).plausible(woman_pilot)[0]


def test_a_folder_with_a_column_missing_in_one_file_is_refused_naming_the_file(case, tmp_path):
    people, pipe, _, _ = case
    people.iloc[:300].to_parquet(tmp_path / "a.parquet")
    people.iloc[300:].drop(columns="hours").to_parquet(tmp_path / "b.parquet")
    with pytest.raises(DatasetError, match=r"b\.parquet lacks the column\(s\) hours"):
        chiralfair.estimate(pipe, str(tmp_path), batch_rows=100, **KW)


def test_a_folder_whose_files_differ_in_type_is_refused_naming_both(case, tmp_path):
    people, pipe, _, _ = case
    people.iloc[:300].to_parquet(tmp_path / "a.parquet")
    people.iloc[300:].assign(hours=lambda d: d["hours"].round().astype("int64")).to_parquet(tmp_path / "b.parquet")
    with pytest.raises(DatasetError, match=r"column 'hours' is int64 in Parquet file .*b\.parquet but double in "
                                           r".*a\.parquet"):
        chiralfair.estimate(pipe, str(tmp_path), batch_rows=100, **KW)


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_corrupt_file_is_refused_naming_it_and_no_verdict_is_given(case, tmp_path, damage):
    people, pipe, _, _ = case
    people.iloc[:300].to_parquet(tmp_path / "a.parquet")
    people.iloc[300:].to_parquet(tmp_path / "b.parquet")
    data = (tmp_path / "b.parquet").read_bytes()
    (tmp_path / "b.parquet").write_bytes(b"not parquet at all" if damage == "garbage" else data[:len(data) // 2])
    with pytest.raises(DatasetError, match=r"cannot read Parquet file .*b\.parquet"):
        chiralfair.estimate(pipe, str(tmp_path), batch_rows=100, **KW)


@pytest.mark.parametrize("damage", ["missing column", "other type"])
def test_a_polars_lazyframe_that_cannot_be_read_is_refused_naming_it_and_no_verdict_is_given(case, tmp_path, damage):
    import polars as pl

    people, pipe, _, _ = case
    people.iloc[:300].to_parquet(tmp_path / "a.parquet")
    rest = people.iloc[300:]
    rest = rest.drop(columns="hours") if damage == "missing column" else rest.assign(hours=rest["hours"].astype(str))
    rest.to_parquet(tmp_path / "b.parquet")
    with pytest.raises(DatasetError, match=r"cannot read the polars LazyFrame after its first [\d,]+ rows: "
                                           r"(ColumnNotFoundError|SchemaError): .*hours"):
        chiralfair.estimate(pipe, pl.scan_parquet(tmp_path / "*.parquet"), batch_rows=100, domain_sample=100, **KW)


@pytest.mark.parametrize("others", [["README.txt"], ["notes.csv", "part-9"]])
def test_files_of_a_folder_that_are_not_read_are_named_in_the_verdict(case, tmp_path, others):
    people, pipe, _, memory = case
    people.iloc[:300].to_parquet(tmp_path / "a.parquet")
    people.iloc[300:].to_parquet(tmp_path / "b.parquet")
    for name in [*others, "_SUCCESS", ".a.parquet.crc"]:  # what writers leave beside their files: never named
        (tmp_path / name).write_text("x")
    streamed = chiralfair.estimate(pipe, str(tmp_path), batch_rows=100, domain_sample=len(people), **KW)
    same_verdict(memory, streamed)  # the Parquet files' rows, all of them
    assert streamed.meta["stream"]["rows_read"] == len(people)
    named = f"{len(others)} other file{'s' if len(others) > 1 else ''} not read (no .parquet suffix): "
    assert named + ", ".join(sorted(others)) in streamed.meta["population_rows"]
    assert "_SUCCESS" not in streamed.meta["population_rows"] and ".crc" not in streamed.meta["population_rows"]


def test_a_path_that_does_not_exist_is_named_as_missing_not_as_a_bad_suffix(case, tmp_path):
    people, pipe, _, _ = case
    gone = str(tmp_path / "held-out")  # a folder's name, misspelt or not yet written
    for extra in ({}, {"workers": 2}, {"domain_sample": 10}):
        with pytest.raises(DatasetError, match=r"test file '.*held-out' does not exist"):
            chiralfair.estimate(pipe, people, test=gone, **extra, **KW)
    with pytest.raises(DatasetError, match=r"data file '.*held-out' does not exist"):
        chiralfair.estimate(pipe, gone, **KW)


def test_a_file_unreadable_past_its_footer_is_named_mid_stream(case, tmp_path, monkeypatch):
    people, pipe, _, _ = case
    people.iloc[:300].to_parquet(tmp_path / "a.parquet")
    people.iloc[300:].to_parquet(tmp_path / "b.parquet")
    stream = open_stream(str(tmp_path))
    import pyarrow.parquet as pq

    real = pq.ParquetFile.iter_batches

    def failing(self, *args, **kwargs):  # the footer read, the pages not: a disk error mid-file
        if "b.parquet" in str(getattr(self, "_source_path", "")) or self.metadata.num_rows == len(people) - 300:
            raise OSError("Unexpected end of stream: page was smaller than expected")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", failing)
    read = []
    with pytest.raises(DatasetError, match=r"cannot read Parquet file .*b\.parquet: Unexpected end"):
        for batch in stream.batches(100):
            read.append(len(batch.frame))
    assert sum(read) == 300  # a.parquet was read; the error came before any verdict could be made of a part


def test_streaming_parameters_are_checked(case):
    people, pipe, root, _ = case
    with pytest.raises(ConfigError, match="margin"):
        chiralfair.estimate(pipe, str(root / "folder"), margin=0.01, **KW)
    with pytest.raises(ConfigError, match="batch_rows"):
        chiralfair.estimate(pipe, str(root / "folder"), batch_rows=0, **KW)
    with pytest.raises(ConfigError, match="workers"):
        chiralfair.estimate(pipe, people, domain_sample=10, workers=2, **KW)


@pytest.mark.parametrize("n", [1, 2, 5, 1000, 4099])
def test_exact_quantiles_read_in_chunks_equal_numpy(n):
    rng = np.random.default_rng(n)
    for values in (rng.random(n), rng.integers(0, 4, n) / 3.0, np.zeros(n)):
        levels = [0.0, 0.5, 0.9, 0.99, 1.0]
        got = exact_quantiles(lambda v=values: (v[s:s + 333] for s in range(0, n, 333)), n, levels)
        assert got == np.quantile(values, levels).tolist()


# ------------------------------------------------------------------ on a local dask.distributed cluster
class DiesOnce:
    """The user's pipeline, whose worker process dies the first time it scores a row with hours above 65."""

    def __init__(self, pipe, marker):
        self.pipe, self.marker, self.classes_ = pipe, str(marker), pipe.classes_
        self.feature_names_in_ = pipe.feature_names_in_

    def predict(self, X):
        self._maybe_die(X)
        return self.pipe.predict(X)

    def predict_proba(self, X):
        self._maybe_die(X)
        return self.pipe.predict_proba(X)

    def _maybe_die(self, X):
        if (X["hours"] > 65).any() and _on_worker() and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            os._exit(1)


class AlwaysDies(DiesOnce):
    """Its worker dies every time it scores a row with hours above 65."""

    def _maybe_die(self, X):
        if (X["hours"] > 65).any() and _on_worker():
            os._exit(1)


def _on_worker() -> bool:
    try:
        from distributed import get_worker

        get_worker()
        return True
    except ValueError:
        return False


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                         silence_logs=logging.ERROR)
    yield cluster
    cluster.close()


def test_on_a_cluster_the_verdict_equals_the_in_memory_one(case, cluster):
    people, pipe, root, memory = case
    streamed = chiralfair.estimate(pipe, str(root / "folder"), batch_rows=97, domain_sample=len(people),
                                   scheduler=cluster.scheduler_address, **KW)
    same_verdict(memory, streamed)
    assert streamed.meta["stream"]["partitions"] == 3
    assert streamed.meta["stream"]["partitions_scored_again"] == []  # no worker died
    assert not any(note.startswith("scored again") for note in streamed.notes)


def test_on_a_cluster_a_category_the_domain_never_held_is_counted_as_on_one_process(cluster, tmp_path):
    train, test, pipe, path = jobs_case(tmp_path)
    with pytest.warns(chiralfair.exceptions.DataWarning):
        one = chiralfair.estimate(pipe, train, test=path, batch_rows=64, domain_sample=100, **KW)
    with pytest.warns(chiralfair.exceptions.DataWarning, match=r"'pilot' \(10 rows\)"):
        spread = chiralfair.estimate(pipe, train, test=path, batch_rows=64, domain_sample=100,
                                     scheduler=cluster.scheduler_address, **KW)
    same_verdict(one, spread)
    assert spread.meta["stream"]["rows_new_category"] == {"job": {"rows": 10, "values": ["pilot"]}}


def test_the_local_cluster_keeps_glibcs_memory_settings_in_its_workers(monkeypatch):
    # dask's MALLOC_TRIM_THRESHOLD_=65536 maps every array above 128 KiB afresh: 4.6 times a process's page faults
    pytest.importorskip("distributed")
    from chiralfair.pipeline.stream import dask_client

    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    with dask_client(1, None) as client:
        assert list(client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_")).values()) == [None]
        assert list(client.run(lambda: os.environ.get("OMP_NUM_THREADS")).values()) == ["1"]  # dask's others kept


def test_the_local_clusters_workers_take_one_thread_per_pool_and_run_no_profiler():
    # two workers on two cores: a second BLAS/OpenMP thread each, or the profiler taking the GIL every 10 ms from
    # the thread that scores, is time the other worker's scoring waits for a core
    pytest.importorskip("distributed")
    from chiralfair.pipeline.stream import dask_client

    def pools(dask_worker):
        from threadpoolctl import threadpool_info

        return [p["num_threads"] for p in threadpool_info()], "profile" in dask_worker.periodic_callbacks

    with dask_client(2, None) as client:
        seen = list(client.run(pools).values())
    assert len(seen) == 2
    for threads, profiling in seen:
        assert threads and set(threads) == {1}
        assert not profiling


def _holding(people, log):
    """A partition that, read on a worker, writes what the worker holds: the judges and datasets scattered to it,
    and whether the judge's model checks people in the very domain the rows are coded in (one copy, not two)."""
    from distributed import get_worker

    from chiralfair.datasets.base import Dataset

    if not _on_worker():  # the domain sample, read on this process
        return people
    held = [o for v in get_worker().data.values() for o in (v, *getattr(v, "__dict__", {}).values())]
    judges = [o for o in held if hasattr(o, "check") and hasattr(o, "with_proba")]
    datasets = [o for o in held if isinstance(o, Dataset)]
    shared = len(judges) == len(datasets) == 1 and judges[0].check.domain is datasets[0].domain
    with open(log, "a") as out:
        out.write(f"{len(judges)} {len(datasets)} {shared}\n")
    return people


def test_on_a_cluster_each_worker_holds_one_copy_of_the_model_and_domain(case, cluster, tmp_path):
    # the wrapped model holds the domain and its sample (30 of 31 MB for the README's pipeline): sent apart from
    # the dataset, each worker unpickled and kept them twice
    import dask
    import dask.dataframe as dd

    people, pipe, _, memory = case
    log = tmp_path / "held.txt"
    parts = [dask.delayed(_holding)(people.iloc[s:s + 200].reset_index(drop=True), log)
             for s in range(0, len(people), 200)]
    frame = dd.from_delayed(parts, meta=people.iloc[:0])
    streamed = chiralfair.estimate(pipe, frame, batch_rows=97, domain_sample=len(people),
                                   scheduler=cluster.scheduler_address, **KW)
    same_verdict(memory, streamed)
    assert log.read_text().splitlines() == ["1 1 True"] * 4


def _part(people, i):
    if i == 1:
        raise OSError("Input/output error: the disk under partition 1")
    return people


@pytest.mark.parametrize("where", ["local", "cluster"])
def test_a_dask_partition_that_cannot_be_read_is_named_and_no_verdict_is_given(case, cluster, where):
    import dask
    import dask.dataframe as dd

    people, pipe, _, _ = case
    parts = [dask.delayed(_part)(people.iloc[s:s + 200].reset_index(drop=True), i)
             for i, s in enumerate(range(0, len(people), 200))]
    frame = dd.from_delayed(parts, meta=people.iloc[:0])
    on = {"scheduler": cluster.scheduler_address} if where == "cluster" else {}
    with pytest.raises(DatasetError, match=r"cannot read partition 1 of the Dask DataFrame: OSError: Input/output"):
        chiralfair.estimate(pipe, frame, batch_rows=97, domain_sample=150, **on, **KW)


# Slow: a worker killed mid-run makes dask.distributed's timing part of the test (1 of 5 runs of the pair failed
# on a loaded 2-core machine); ``pytest -m slow`` runs them.
@pytest.mark.slow
def test_a_worker_that_dies_mid_run_is_retried_and_the_verdict_is_whole(case, cluster, tmp_path):
    people, pipe, root, memory = case
    assert (people["hours"] > 65).any()
    model = DiesOnce(pipe, tmp_path / "died")
    streamed = chiralfair.estimate(model, str(root / "folder"), batch_rows=97, domain_sample=len(people),
                                   scheduler=cluster.scheduler_address, **KW)
    assert (tmp_path / "died").exists()  # a worker did die
    same_verdict(memory, streamed)
    # the partitions sent to the worker that died are named, the one it died on (a row of more than 65 hours) among them
    again = streamed.meta["stream"]["partitions_scored_again"]
    files = [where.removeprefix("file ") for where in again]
    assert any((pd.read_parquet(f)["hours"] > 65).any() for f in files)
    assert set(files) <= {str(p) for p in (root / "folder").rglob("*.parquet")}
    assert f"scored again after the worker they were sent to died: {', '.join(again)} " in " ".join(streamed.notes)


@pytest.mark.slow
def test_a_partition_that_kills_every_worker_is_named_and_no_verdict_is_given(case, cluster):
    people, pipe, root, _ = case
    hot = people.assign(hours=np.where(np.arange(len(people)) == 400, 90.0, people["hours"].clip(upper=64)))
    folder = root / "hot"
    folder.mkdir(exist_ok=True)
    for i, s in enumerate(range(0, len(hot), 250)):
        hot.iloc[s:s + 250].to_parquet(folder / f"part{i}.parquet")
    # the partition is named; when the model was lost with the only worker holding it, every partition under way is
    # (part 2 with it, in order)
    with pytest.raises(ModelCallError, match=r"scoring file \S*part1\.parquet(, file \S*part2\.parquet \(cancelled "
                                             r"together[^)]*\))? failed on the cluster"):
        chiralfair.estimate(AlwaysDies(pipe, "unused"), str(folder), batch_rows=97, domain_sample=len(hot),
                            scheduler=cluster.scheduler_address, **KW)



# ------------------------------------------------------------------ the command line
def test_the_cli_estimate_and_check_read_a_parquet_folder_as_the_python_door_does(case, tmp_path):
    import json

    import skops.io as sio
    from typer.testing import CliRunner

    from chiralfair.cli import app

    people, pipe, root, memory = case
    sio.dump(pipe, tmp_path / "model.skops")
    args = ["--model", tmp_path / "model.skops", "--data", root / "folder", "--label", "y", "--positive-class", "yes",
            "--protected", "sex,race", "--batch-rows", 97, "--domain-sample", len(people)]
    res = CliRunner().invoke(app, ["estimate", *map(str, args), "--json"])
    assert res.exit_code == 0, res.output
    printed = json.loads(res.stdout[res.stdout.index("{"):])
    assert (printed["n_individuals"], printed["n_affected"], printed["n_harmed"], printed["worst_group"]) == (
        memory.n_individuals, memory.n_affected, memory.n_harmed, memory.worst_group)
    assert printed["groups"] == json.loads(memory.to_json())["groups"]
    share = memory.n_affected / memory.n_individuals
    for max_share, code in ((share / 2, 1), (min(1.0, share + 0.3), 0)):
        res = CliRunner().invoke(app, ["check", *map(str, args), "--max-share", str(max_share)])
        assert res.exit_code == code, res.output
        assert f"exact for these {len(people)} rows: {share:.2%}" in res.stdout
    res = CliRunner().invoke(app, ["estimate", *map(str, args), "--margin", "0.01"])
    assert res.exit_code != 0 and "margin" in res.output


def test_audit_streams_its_held_out_rows_and_gives_the_in_memory_verdict(case):
    people, pipe, root, _ = case
    train, test = people.iloc[:300], people.iloc[300:]
    (root / "held_out").mkdir(exist_ok=True)
    test.iloc[:150].to_parquet(root / "held_out" / "a.parquet")
    test.iloc[150:].to_parquet(root / "held_out" / "b.parquet")
    memory = chiralfair.audit(pipe, train, test=test, max_global=10, max_local=5, **KW)
    streamed = chiralfair.audit(pipe, train, test=str(root / "held_out"), batch_rows=64, domain_sample=len(test),
                                max_global=10, max_local=5, **KW)
    assert memory.verdict.exact
    same_verdict(memory.verdict, streamed.verdict)
    assert streamed.n_idis == memory.n_idis
    assert streamed.verdict.meta["stream"]["rows_read"] == len(test)
    with pytest.raises(ConfigError, match="held-out rows only"):
        chiralfair.audit(pipe, str(root / "held_out"), batch_rows=64, max_global=10, max_local=5, **KW)


def test_a_schemas_types_apply_to_every_batch_and_its_unheld_categories_are_used_as_given(tmp_path):
    from chiralfair.datasets.schema import infer_schema

    people = people_frame(300)
    people["job"] = np.where(np.arange(300) < 290, "clerk", "pilot")
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["sex", "race", "job"]),
                                                 remainder="passthrough"),
                         LogisticRegression()).fit(people[["sex", "race", "hours", "job"]], people["y"])
    people.to_parquet(tmp_path / "p.parquet")
    text = infer_schema(people, label="y", positive_class="yes", protected=["sex", "race"])
    job = '[columns."job"]\ntype = '
    (tmp_path / "s.toml").write_text(text.replace(job + '"str"', job + '"category"'))
    kw = {"schema": str(tmp_path / "s.toml"), "protected": "sex,race"}
    memory = chiralfair.estimate(pipe, people, population="rows", exact=True, **kw)
    streamed = chiralfair.estimate(pipe, str(tmp_path / "p.parquet"), batch_rows=70, domain_sample=300, **kw)
    same_verdict(memory, streamed)
    # the first 100 rows hold no pilot: the domain has no code for it, whatever the schema lists; the pilots are
    # used as given (checked and counted), as in memory
    with pytest.warns(chiralfair.exceptions.DataWarning, match=r"column 'job' value\(s\) 'pilot' \(10 rows\)"):
        short = chiralfair.estimate(pipe, str(tmp_path / "p.parquet"), batch_rows=70, domain_sample=100, **kw)
    for name in ("n_individuals", "n_affected", "n_harmed", "share", "lower", "upper", "worst_group", "n_unplaced"):
        assert getattr(short, name) == getattr(memory, name), name
    assert short.groups == memory.groups
