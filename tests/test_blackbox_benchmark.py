"""benchmarks/blackbox.py's own options: --param refuses what would fail inside a job, --ceiling counts right."""

import argparse
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import blackbox  # noqa: E402


class RaisingParser(argparse.ArgumentParser):
    """The benchmark's parser, with its error raised instead of printed and exited on."""

    def error(self, message):
        raise ValueError(message)


def parser():
    return RaisingParser()


def test_a_param_reaches_its_generator_as_json():
    params = blackbox.parse_params(parser(), ["aft:samples_per_step=1", "aft:max_restarts=3"], ["aft", "aequitas"])
    assert params == {"aft": {"samples_per_step": 1, "max_restarts": 3}}


@pytest.mark.parametrize(("item", "message"), [
    ("bad", "GENERATOR:NAME=VALUE"),
    ("aft:samples_per_step=one", "must be JSON"),
    ("kosei:max_global=5", "not among --generators"),
    ("aft:no_such_parameter=1", "no parameter 'no_such_parameter'"),
    ("aft:samples_per_step=0", "samples_per_step"),
])
def test_a_param_that_would_fail_inside_a_job_is_refused_before_any(item, message):
    with pytest.raises(ValueError, match=message):
        blackbox.parse_params(parser(), [item], ["aft"])


def test_a_param_given_twice_is_refused():
    with pytest.raises(ValueError, match="given twice"):
        blackbox.parse_params(parser(), ["aft:n_train=5", "aft:n_train=6"], ["aft"])


def test_the_ceiling_rules_out_1_5x_only_above_a_third_of_an_idi_per_query(tmp_path, monkeypatch):
    def run(seeds, state, n_idis, generator="aequitas"):
        return {"model": "m", "case": "census:sex", "seeds": seeds, "max_queries": 1000, "random_state": state,
                "generator": generator, "n_idis": n_idis}
    runs = [run("cluster", 0, 300), run("cluster", 1, 340), run("cluster", 2, 360),  # median 0.34: ruled out
            run("random", 0, 333), run("random", 1, 100),  # median 0.2165, shown 0.217: not ruled out
            run("random", 2, 900, "maft")]  # not AEQUITAS: not counted
    (tmp_path / "grid.json").write_text(json.dumps({"runs": runs}))
    monkeypatch.setattr(blackbox, "RESULTS", tmp_path)
    blackbox.write_ceiling(["grid"], tmp_path / "ceiling.md")
    text = (tmp_path / "ceiling.md").read_text()
    assert "| grid | m | census:sex | cluster | 1,000 | 3 | 0.340 | 0.510 | **yes** |" in text
    assert "| grid | m | census:sex | random | 1,000 | 2 | 0.217 | 0.325 | no |" in text
    assert "1 of 2 cells" in text
