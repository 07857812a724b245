"""What ``chiralfair certify`` prints when it refuses: flag names once, the comma form of --similar, and an error
line of its own after a progress bar (a fresh user's findings)."""

from __future__ import annotations

import io
import re
import sys

import pytest
import torch
import typer
from typer.testing import CliRunner

from chiralfair.cli import app
from chiralfair.cli.certify import CERTIFY_FLAGS, parse_similar
from chiralfair.cli.console import FLAGS, command_line_syntax, fail
from chiralfair.exceptions import ConfigError


@pytest.mark.parametrize("flag", ["age", "=2", "age="])
def test_a_malformed_similar_is_refused_with_the_flag_written_once(flag):
    res = CliRunner().invoke(app, ["certify", "--dataset", "census", "--protected", "sex", "--similar", flag])
    text = " ".join(res.output.split())
    assert res.exit_code == 2, res.output
    assert "error: --similar takes NAME=RADIUS" in text and "----similar" not in text, res.output
    assert "age=2,hours-per-week=4" in text, res.output  # the comma form is named as well


@pytest.mark.parametrize("text, expected", [
    ("--similar: 'age' is given twice", "--similar: 'age' is given twice"),
    ("similar: unknown feature 'bogus'", "--similar: unknown feature 'bogus'"),
    ("the lower-bound of a box, bound='crown'", "the lower-bound of a box, --bound='crown'"),
])
def test_a_flag_already_written_as_a_flag_keeps_one_prefix(text, expected):
    assert command_line_syntax(text, FLAGS + CERTIFY_FLAGS) == expected


@pytest.mark.parametrize("values, expected", [
    (["age=2,hours-per-week=4"], {"age": 2.0, "hours-per-week": 4.0}),
    (["age=2", "hours-per-week=4"], {"age": 2.0, "hours-per-week": 4.0}),
    (["age=2,workclass=Private|State-gov"], {"age": 2.0, "workclass": {"Private", "State-gov"}}),
    (["marital=Married, spouse|Divorced,age=1"], {"marital": {"Married, spouse", "Divorced"}, "age": 1.0}),
])
def test_similar_takes_several_features_in_one_flag_joined_by_commas(values, expected):
    assert parse_similar(values) == expected


def test_a_feature_twice_across_the_comma_form_is_refused_by_name():
    with pytest.raises(ConfigError, match="'age' is given twice"):
        parse_similar(["age=2,hours=1", "age=3"])


def test_the_comma_form_certifies_the_same_people_as_one_flag_per_feature(tmp_path):
    from test_certify_people import people_and_net

    frame, net = people_and_net()
    frame.to_csv(tmp_path / "people.csv", index=False)
    torch.jit.script(net).save(str(tmp_path / "net.pt"))
    common = ["certify", "--data", str(tmp_path / "people.csv"), "--model", str(tmp_path / "net.pt"), "--label", "y",
              "--protected", "sex", "--max-boxes", "50"]
    joined = CliRunner().invoke(app, [*common, "--similar", "hours=2,years=1"])
    apart = CliRunner().invoke(app, [*common, "--similar", "hours=2", "--similar", "years=1"])
    assert joined.exit_code == 0 and apart.exit_code == 0, joined.output + apart.output

    def people(output: str) -> str:  # the individuals line, its seconds left out
        line = next(line for line in output.splitlines() if line.startswith("individuals"))
        return re.sub(r"\(\d+\.\d+ s; ", "(", line)

    assert "similar: hours=2.0, years=1.0" in people(joined.stdout), joined.stdout
    assert people(joined.stdout) == people(apart.stdout)


@pytest.mark.parametrize("leave", [True, False])
def test_an_error_after_a_progress_bar_off_a_terminal_starts_its_own_line(monkeypatch, leave):
    from tqdm import tqdm

    stderr = io.StringIO()  # not a terminal: a pipe, a CI log
    monkeypatch.setattr(sys, "stderr", stderr)
    bar = tqdm(total=10, file=sys.stderr, leave=leave, mininterval=0, desc="verdict")
    bar.update(3)  # drawn, never closed: the error happens while it runs
    with pytest.raises(typer.Exit):
        fail(ConfigError("similar: unknown feature 'bogus'"), FLAGS + CERTIFY_FLAGS)
    lines = stderr.getvalue().split("\n")
    errors = [line for line in lines if "error:" in line]
    assert errors == ["error: --similar: unknown feature 'bogus'"], stderr.getvalue()
    assert "verdict" in stderr.getvalue()  # the bar was drawn and is kept on a line of its own


def test_a_neighbourhood_with_the_people_turned_off_is_refused_not_ignored():
    import pandas as pd

    import chiralfair
    from chiralfair.exceptions import ConfigError

    with pytest.raises(ConfigError, match="individuals=False"):
        chiralfair.certify(object(), pd.DataFrame({"age": [30]}), individuals=False, similar={"age": 2})
