"""Progress where there is no terminal (a CI log, a pipe): a line per step with its time, a heartbeat on long steps."""

import logging
import time

from chiralfair.cli import console
from chiralfair.experiments import execution


def test_each_step_is_one_line_with_its_time_and_a_long_step_says_it_still_runs(capsys, monkeypatch):
    monkeypatch.setattr(console, "HEARTBEAT_SECONDS", 0.05)
    with console.progress(["data", "search"], enabled=True) as on_step:
        on_step("data")
        on_step("search")
        time.sleep(0.3)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("chiralfair: loading data (step 1 of 2) done in ")
    beats = [line for line in lines if "still running" in line]
    assert beats and all(b.startswith("chiralfair: searching for IDIs (step 2 of 2): still running, ") for b in beats)
    assert len(beats) <= 0.3 / 0.05 + 1  # at most one per interval
    assert lines[-2].startswith("chiralfair: searching for IDIs (step 2 of 2) done in ")
    assert lines[-1].startswith("chiralfair: done in ")


def test_without_a_long_step_there_is_no_heartbeat_and_verbosity_does_not_hide_the_lines(capsys):
    logging.getLogger("chiralfair").setLevel(logging.ERROR)  # as a grid without --verbose sets it
    try:
        with console.progress(["data"], enabled=False) as on_step:  # --json: no bar, the lines still on stderr
            on_step("data")
    finally:
        logging.getLogger("chiralfair").setLevel(logging.NOTSET)
    err = capsys.readouterr().err
    assert "loading data (step 1 of 1) done in" in err and "still running" not in err


def test_a_grid_without_a_terminal_logs_its_cells_at_most_every_few_seconds(capsys, monkeypatch):
    console.progress_logger()
    monkeypatch.setattr(execution, "PROGRESS_SECONDS", 3600.0)
    with execution._progress_bar(4, "tiny", True) as bar:
        for _ in range(4):
            bar.update(1)
        bar.set_postfix_str("1 failed")
    lines = capsys.readouterr().err.splitlines()
    assert lines == [lines[-1]] and lines[-1].startswith("chiralfair: grid 'tiny': 4 of 4 cells run")  # the last only
