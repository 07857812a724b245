"""Streaming IDI pairs to Parquet, vectorised decoding and report counts."""

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from toys import biased_module, toy_domain

import chiralfair.generators._load_all  # noqa: F401  (fills the registry)
from chiralfair.domain import Domain, Feature
from chiralfair.exceptions import RunFolderError
from chiralfair.generators import GENERATORS, make_generator
from chiralfair.models import as_model
from chiralfair.results import SearchResult
from chiralfair.results.run_folder import PairSink, is_previous_run, mark_partial, pair_parts, read_pairs

SRC = Path(__file__).resolve().parents[1] / "src"
BUDGET = {"max_global": 25, "max_local": 25}


def figures(result) -> dict:
    """The summary without its wall time, which differs between any two runs."""
    return {k: v for k, v in result.summary().items() if k != "seconds"}


def toy_run(name, protected=("sex",), sink=None):
    domain = toy_domain(protected)
    seeds = domain.sample(30, np.random.default_rng(0))
    gen = make_generator(name, **BUDGET)
    return domain, gen.run(as_model(biased_module()), domain, seeds, random_state=0, sink=sink)


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_streamed_run_equals_in_memory_run(name, tmp_path):
    domain, memory = toy_run(name, ("sex", "race"))
    # a tiny part size, so the pairs span many part files
    _, streamed = toy_run(name, ("sex", "race"), sink=PairSink(tmp_path / "idis.parquet", rows_per_part=7))
    assert figures(streamed) == figures(memory)
    assert streamed.pairs_path == str(tmp_path / "idis.parquet")
    assert len(pair_parts(streamed.pairs_path)) == max(1, -(-memory.n_idis // 7))
    for k in ("idis", "counterparts", "idi_labels", "counterpart_labels", "phase"):
        np.testing.assert_array_equal(getattr(streamed, k), getattr(memory, k), err_msg=k)
    np.testing.assert_array_equal(streamed.pa_pair_counts, memory.pa_pair_counts)
    pd.testing.assert_frame_equal(streamed.to_frame(domain), memory.to_frame(domain))
    on_disk = pd.read_parquet(tmp_path / "idis.parquet")
    assert list(on_disk.columns) == list(memory.to_frame(domain).columns)
    assert len(on_disk) == memory.n_idis
    assert (on_disk["sex"].astype(str).to_numpy() == memory.to_frame(domain)["sex"].to_numpy()).all()
    back = SearchResult.from_json(streamed.to_json())
    assert figures(back) == figures(memory)
    np.testing.assert_array_equal(back.idis, memory.idis)


def test_a_streamed_result_reads_its_pairs_only_when_asked(tmp_path):
    _, streamed = toy_run("aequitas", sink=PairSink(tmp_path / "idis.parquet"))
    assert streamed.n_idis > 0
    assert "_pairs" in streamed.__dict__ and all(v is None for v in streamed.__dict__["_pairs"].values())
    assert streamed.idis.shape == (streamed.n_idis, 5)
    assert "pairs in" in repr(streamed)


def test_an_empty_streamed_result_keeps_its_columns(tmp_path):
    domain = toy_domain()
    seeds = domain.sample(10, np.random.default_rng(0))
    from toys import fair_module

    res = make_generator("aequitas", **BUDGET).run(as_model(fair_module()), domain, seeds, random_state=0,
                                                    sink=PairSink(tmp_path / "idis.parquet"))
    assert res.n_idis == 0
    assert res.idis.shape == (0, 5) and res.phase.shape == (0,)
    assert pd.read_parquet(tmp_path / "idis.parquet").shape == (0, 2 * 5 + 3)


def test_a_previous_runs_pairs_are_replaced_and_foreign_files_refused(tmp_path):
    path = tmp_path / "idis.parquet"
    path.write_bytes(b"old single-file pairs")
    _, res = toy_run("aequitas", sink=PairSink(path))
    assert path.is_dir() and res.n_idis == len(pd.read_parquet(path))
    (path / "mine.txt").write_text("keep")
    from chiralfair.exceptions import RunFolderError

    with pytest.raises(RunFolderError, match="did not write"):
        toy_run("aequitas", sink=PairSink(path))
    assert (path / "mine.txt").read_text() == "keep"


def old_decode(domain, X, suffix=""):
    """Domain.decode as it was before vectorising: a list comprehension per labelled column."""
    X = np.asarray(X, dtype=np.int64)
    cols = {}
    for j, f in enumerate(domain.features):
        if f.labels:
            cols[f.name + suffix] = pd.Series([f.label(v) for v in X[:, j]], dtype="string")
        else:
            cols[f.name + suffix] = X[:, j]
    return pd.DataFrame(cols)


def test_vectorised_decode_equals_the_old_decode():
    feats = (Feature("g", 1, 4, "categorical", {1: "x", 2: "y", 4: "w"}),  # code 3 has no label
             Feature("n", -2, 5), Feature("sex", 0, 1, "categorical", {0: "F", 1: "M"}))
    domain = Domain(feats).with_protected(["sex"])
    X = np.array([[1, 1, 1], [3, -2, 0], [4, 5, 1], [7, 0, 0], [-1, 3, 1], [2, 2, 0]])  # 7, -1 out of bounds
    for rows in (X, X[:0], np.repeat(X, 50, axis=0)):
        for suffix in ("", "_counterpart"):
            pd.testing.assert_frame_equal(domain.decode(rows, suffix=suffix), old_decode(domain, rows, suffix))


def naive_counts(result, domain) -> dict:
    """The report's former count: join decoded protected values row by row, then value_counts."""
    names = domain.protected_names
    own = domain.decode(result.idis)[names].astype(str).agg("/".join, axis=1)
    cf = domain.decode(result.counterparts)[names].astype(str).agg("/".join, axis=1)
    return (own + " → " + cf).value_counts().to_dict()


@pytest.mark.parametrize("protected", [("sex",), ("sex", "race")])
def test_report_counts_equal_a_naive_count(protected):
    domain, res = toy_run("aequitas", protected)
    assert res.n_idis > 0
    names = domain.protected_names
    for source in (res, dataclasses.replace(res, pa_pair_counts=None)):
        counts = source.protected_value_counts(domain)
        joined = (counts[names].astype(str).agg("/".join, axis=1) + " → "
                  + counts[[n + "_counterpart" for n in names]].astype(str).agg("/".join, axis=1))
        assert dict(zip(joined, counts["n_idis"], strict=True)) == naive_counts(res, domain)
        assert counts["n_idis"].is_monotonic_decreasing
    assert source.pa_pair_counts is None, "the second source counts from the pairs"


KILLED_WRITER = textwrap.dedent("""
    import sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    from toys import toy_domain
    from chiralfair.results.run_folder import PairSink, mark_partial

    folder = {folder!r}
    mark_partial(folder, {{"chiralfair_version": "test"}})
    sink = PairSink(folder + "/idis.parquet", rows_per_part=40)
    sink.open(toy_domain(["sex"]))
    start = 0
    while True:  # batches of 13 pairs, row i made from i, until the test kills this process
        X = {pairs}(start, 13)
        C = X.copy()
        C[:, 0] = 1 - C[:, 0]
        sink.write(X, C, X[:, 0], C[:, 0], "global" if start < 100 else "local")
        start += 13
""")


def toy_pairs(start, n):
    """Row i of a deterministic stream of toy inputs (sex, race, a, b, c)."""
    i = np.arange(start, start + n)
    return np.column_stack([i % 2, i % 3, i % 10, (i // 10) % 10, i % 5]).astype(np.int64)


def run_until_parts(script: str, parts_folder: Path, n_parts: int) -> subprocess.Popen:
    """Start ``script`` in a Python subprocess and SIGKILL it once ``n_parts`` parts are on disk."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    # leaving the with block closes the pipes (left open, they warn when collected) and waits for the process
    with subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE) as proc:
        try:
            deadline = time.monotonic() + 300
            while len(pair_parts(parts_folder)) < n_parts:
                assert proc.poll() is None, proc.stderr.read().decode()
                assert time.monotonic() < deadline, f"fewer than {n_parts} parts written in 300 s"
                time.sleep(0.02)
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
    return proc


def test_a_killed_writer_leaves_readable_pairs_and_a_partial_result_json(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    source = textwrap.dedent(__import__("inspect").getsource(toy_pairs))
    script = source + KILLED_WRITER.format(tests=str(Path(__file__).parent), folder=str(folder), pairs="toy_pairs")
    proc = run_until_parts(script, folder / "idis.parquet", 3)
    assert proc.returncode == -signal.SIGKILL
    summary = json.loads((folder / "result.json").read_text())
    assert summary["partial"] is True and is_previous_run(folder)
    frame = pd.read_parquet(folder / "idis.parquet")
    pairs = read_pairs(folder / "idis.parquet")
    n = len(frame)
    assert n == len(pairs["idis"]) and n >= 120 and n % 40 == 0, "whole parts only"
    np.testing.assert_array_equal(pairs["idis"], toy_pairs(0, n))
    np.testing.assert_array_equal(pairs["counterpart_labels"], 1 - toy_pairs(0, n)[:, 0])
    assert list(pairs["phase"][:100]) == ["global"] * 100 and set(pairs["phase"][104:]) == {"local"}
    assert set(frame["sex"].astype(str)) == {"Female", "Male"}


@pytest.mark.slow
def test_a_killed_cli_run_leaves_readable_pairs_and_a_partial_result_json(tmp_path):
    from realdata import real_data_home_or_skip

    data_home = real_data_home_or_skip()
    out = tmp_path / "run"
    script = textwrap.dedent(f"""
        import sys
        from chiralfair.cli import app
        sys.argv = ["chiralfair", "run", "--dataset", "census", "--protected", "sex", "--generator", "eidig-inf",
                    "--max-global", "1000", "--max-local", "20000", "--data-home", {str(data_home)!r},
                    "--cache-dir", {str(tmp_path / "cache")!r}, "--out", {str(out)!r}]
        app()
    """)
    proc = run_until_parts(script, out / "idis.parquet", 2)
    assert proc.returncode == -signal.SIGKILL
    summary = json.loads((out / "result.json").read_text())
    assert summary["partial"] is True and summary["meta"]["config"]["max_local"] == 20000
    assert not (out / "report.md").exists()
    frame = pd.read_parquet(out / "idis.parquet")
    assert len(frame) >= 2 * (1 << 17) and (frame["sex"] != frame["sex_counterpart"]).all()
    assert (frame["prediction"] != frame["prediction_counterpart"]).all()


def test_mark_partial_removes_a_previous_runs_outputs(tmp_path):
    for name in ("report.md", "idis_by_protected_value.png"):
        (tmp_path / name).write_text("old")
    (tmp_path / "idis.parquet").write_text("old")
    mark_partial(tmp_path, {"chiralfair_version": "x"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]
    assert json.loads((tmp_path / "result.json").read_text())["partial"] is True


def test_a_result_without_pairs_or_their_path_is_refused():
    from chiralfair.exceptions import ConfigError

    _, res = toy_run("aequitas")
    with pytest.raises(ConfigError, match="idis"):
        dataclasses.replace(res, idis=None)


def test_protected_pair_counts_equal_a_row_count_for_wide_and_narrow_codes():
    from collections import Counter

    from chiralfair.results import protected_pair_counts

    rng = np.random.default_rng(3)
    # 3: few codes, a bincount; 1000: too many codes for one, a unique of the codes; 2**40: the combined code would
    # overflow int64, so rows are compared directly
    for high in (3, 1000, 2**40):
        own = rng.integers(0, 3, size=(500, 2)) * (high // 3 + 1)
        cf = rng.integers(0, 3, size=(500, 2))
        naive = Counter(tuple(r) for r in np.hstack([own, cf]).tolist())
        assert dict(protected_pair_counts(own, cf)) == naive


def test_a_part_size_below_one_is_refused(tmp_path):
    from chiralfair.exceptions import ConfigError

    with pytest.raises(ConfigError, match="rows_per_part"):
        PairSink(tmp_path / "idis.parquet", rows_per_part=0)


class _InterruptAfter:
    """The biased toy, interrupted (as by Ctrl-C) on its ``n``-th call."""

    def __init__(self, n):
        self.model, self.calls, self.n = as_model(biased_module()), 0, n

    def __call__(self, X):
        self.calls += 1
        if self.calls == self.n:
            raise KeyboardInterrupt
        return self.model.predict(X)


def test_an_interrupted_search_keeps_the_pairs_found_so_far(tmp_path):
    from chiralfair.results.run_folder import mark_interrupted

    domain = toy_domain()
    mark_partial(tmp_path, {"chiralfair_version": "test"})
    sink = PairSink(tmp_path / "idis.parquet")  # a part holds 131,072 pairs: these stay in its buffer
    with pytest.raises(KeyboardInterrupt):
        make_generator("aequitas", **BUDGET).run(as_model(_InterruptAfter(15)), domain,
                                                 domain.sample(30, np.random.default_rng(0)), sink=sink)
    assert sink.n_rows == 0
    kept = mark_interrupted(tmp_path, sink)
    record = json.loads((tmp_path / "result.json").read_text())
    assert record["partial"] and record["interrupted"] and record["n_pairs_written"] == kept > 0
    pairs = pd.read_parquet(tmp_path / "idis.parquet")
    assert len(pairs) == kept and (pairs["prediction"] != pairs["prediction_counterpart"]).all()
    assert is_previous_run(tmp_path)


def test_a_damaged_pair_part_is_refused_naming_the_part(tmp_path):
    # Fixed, as for a damaged result.json (every file a run writes): a part cut short gave pyarrow's raw ArrowInvalid.
    _, streamed = toy_run("aequitas", sink=PairSink(tmp_path / "idis.parquet", rows_per_part=7))
    parts = pair_parts(streamed.pairs_path)
    assert len(parts) > 1
    parts[1].write_bytes(parts[1].read_bytes()[:50])
    with pytest.raises(RunFolderError, match=f"part '{re.escape(str(parts[1]))}' is damaged"):
        read_pairs(streamed.pairs_path)


@pytest.mark.parametrize("streamed", [False, True], ids=["in memory", "streamed"])
def test_pairs_completed_in_batches_equal_pairs_completed_at_every_check(streamed, tmp_path, monkeypatch):
    import chiralfair.generators.recorder as recorder

    runs = {}
    for pending in (1, 1 << 30):  # every check's new IDIs completed at once; all of them only at the end
        monkeypatch.setattr(recorder, "PENDING_PAIRS", pending)
        sink = PairSink(tmp_path / f"{pending}" / "idis.parquet", rows_per_part=7) if streamed else None
        domain, runs[pending] = toy_run("eidig", ("sex", "race"), sink=sink)
    each, end = runs[1], runs[1 << 30]
    assert each.n_idis > 50 and figures(each) == figures(end)
    for k in ("idis", "counterparts", "idi_labels", "counterpart_labels", "phase", "plausible"):
        np.testing.assert_array_equal(getattr(each, k), getattr(end, k), err_msg=k)
    np.testing.assert_array_equal(each.pa_label_counts, end.pa_label_counts)
    assert set(each.phase) == {"global", "local"}


def test_a_due_sink_gets_the_waiting_pairs_at_the_next_check(tmp_path):
    # flush_seconds=0: every check's new pairs reach the disk at once, though PENDING_PAIRS have not been found
    sink = PairSink(tmp_path / "idis.parquet", flush_seconds=0)
    _, res = toy_run("aequitas", sink=sink)
    assert 0 < res.n_idis < 1 << 14 and sink.n_parts > 1


def test_an_interrupt_while_the_waiting_pairs_are_completed_loses_none_of_them(tmp_path, monkeypatch):
    import chiralfair.generators.recorder as recorder

    real, calls = recorder.protected_pair_counts, {"n": 0}

    def interrupted_once(*args):  # Ctrl-C lands while the first waiting pairs are completed
        calls["n"] += 1
        if calls["n"] == 1:
            raise KeyboardInterrupt
        return real(*args)

    domain, memory = toy_run("aequitas")
    monkeypatch.setattr(recorder, "protected_pair_counts", interrupted_once)
    sink = PairSink(tmp_path / "idis.parquet", flush_seconds=0)
    with pytest.raises(KeyboardInterrupt):
        toy_run("aequitas", sink=sink)
    sink.close()
    # the handler's completion wrote what was waiting: the pairs of the interrupted check, none twice
    pairs = read_pairs(tmp_path / "idis.parquet")
    assert 0 < sink.n_rows == len(pairs["idis"]) == len(np.unique(domain.keys(pairs["idis"])))
    np.testing.assert_array_equal(pairs["idis"], memory.idis[:sink.n_rows])
