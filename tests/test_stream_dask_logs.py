"""A local Dask cluster that a streamed verdict starts prints none of distributed's own records below WARNING.

The command line's handler is on the root logger before distributed is imported, so distributed installs no handler of
its own and its INFO records (about 40 for two workers: the scheduler's, the nannies', the comms') went up to the
root's, around the progress bar. A module of its own: a cluster another test keeps in this process logs too.
"""

import logging
import os
import subprocess
import sys

import pytest
from test_stream_seams import KW, SAMPLE, fitted, people_frame, written

import chiralfair


@pytest.fixture(scope="module")
def pipe():
    return fitted()


def test_a_local_cluster_sends_none_of_distributeds_info_records_to_the_roots_handlers(pipe, tmp_path, caplog,
                                                                                        monkeypatch):
    pytest.importorskip("distributed")
    # the command line's situation, made explicit: distributed's records go up to the root's handlers
    monkeypatch.setattr(logging.getLogger("distributed"), "propagate", True)
    caplog.set_level(logging.INFO)
    before = logging.getLogger("distributed").level
    assert logging.getLogger("distributed").getEffectiveLevel() <= logging.INFO  # its INFO would show
    data, _ = written(people_frame(), tmp_path, "folder")
    verdict = chiralfair.estimate(pipe, data, batch_rows=64, domain_sample=SAMPLE, workers=1, **KW)
    assert verdict.meta["stream"]["partitions"] == 3
    theirs = [r for r in caplog.records if r.name.startswith("distributed") and r.levelno < logging.WARNING]
    assert theirs == []
    assert logging.getLogger("distributed").level == before  # as it was before the run


@pytest.mark.slow
def test_the_command_with_two_workers_prints_no_distributed_info_line(pipe, tmp_path):
    pytest.importorskip("distributed")
    import skops.io as sio

    sio.dump(pipe, tmp_path / "model.skops")
    data, _ = written(people_frame(), tmp_path, "folder")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    res = subprocess.run([sys.executable, "-m", "chiralfair", "estimate", "--model", str(tmp_path / "model.skops"),
                          "--data", data, "--label", "y", "--positive-class", "yes", "--protected", "sex,race",
                          "--batch-rows", "64", "--domain-sample", str(SAMPLE), "--workers", "2"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    assert [line for line in res.stderr.splitlines() if "distributed." in line] == []
    assert "Share of individuals affected" in res.stdout  # ours stay
    assert "verdict:" in res.stderr and "300/300" in res.stderr  # the progress bar too


@pytest.mark.slow
def test_the_command_with_two_workers_prints_our_error_and_no_worker_traceback_when_a_later_file_fails(pipe, tmp_path):
    """A job the model's encoder never saw, in the second file: each worker that met it logged ``distributed.worker -
    ERROR - Compute Failed`` with a traceback before our error; only ours is printed."""
    pytest.importorskip("distributed")
    import skops.io as sio

    sio.dump(pipe, tmp_path / "model.skops")
    people = people_frame()
    people["job"] = people["job"].astype(object)
    people.loc[150, "job"] = "pilot"
    data, _ = written(people, tmp_path, "folder")
    with pytest.raises(ValueError, match="pilot"):  # the model itself refuses the row: the fault is real
        pipe.predict(people.drop(columns="y").iloc[[150]])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    res = subprocess.run([sys.executable, "-m", "chiralfair", "estimate", "--model", str(tmp_path / "model.skops"),
                          "--data", data, "--label", "y", "--positive-class", "yes", "--protected", "sex,race",
                          "--batch-rows", "64", "--domain-sample", str(SAMPLE), "--workers", "2"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode != 0
    second = tmp_path / "folder" / "part1.parquet"
    assert f"error: data row 51 of data file '{second}'" in res.stderr  # row 150 is the 51st of the second file
    assert [line for line in res.stderr.splitlines() if "distributed." in line or "Traceback" in line] == []
