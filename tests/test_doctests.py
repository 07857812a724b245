"""The Examples sections of the entry points users call first run as doctests.

The fast ones (a few hundred rows made in the example) run in the default suite; those that read the benchmark
data and train zoo models run under the ``slow`` mark (and skip without the data). Each runs in a fresh folder,
since some write a run or grid folder.
"""

from __future__ import annotations

import doctest
import importlib

import pytest
from realdata import real_data_home_or_skip

FAST = ["chiralfair.pipeline.front.audit", "chiralfair.pipeline.front.estimate", "chiralfair.pipeline.front.retrain",
        "chiralfair.datasets.frame.from_frame", "chiralfair.models.adapters.as_model",
        "chiralfair.seeds.base.make_seed_strategy", "chiralfair.generators.base.make_generator",
        "chiralfair.verdict.estimation.estimate", "chiralfair.mitigation.base.make_method",
        "chiralfair.mitigation.retraining.retrain"]
WITH_DATA = ["chiralfair.datasets.catalog.load_dataset", "chiralfair.pipeline.run.run_experiment",
             "chiralfair.experiments.execution.run_grid", "chiralfair.experiments.presets.reproduce"]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def resolve(path: str):
    module, name = path.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


def run_examples(path: str) -> doctest.TestResults:
    obj = resolve(path)
    tests = doctest.DocTestFinder(recurse=False).find(obj, path, globs={})
    assert tests and tests[0].examples, f"{path} has no Examples section"
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for test in tests:
        runner.run(test)
    return runner.summarize(verbose=False)


@pytest.mark.parametrize("path", FAST)
def test_the_examples_run(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run_examples(path)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {path} failed (see the output)"


@pytest.mark.slow
@pytest.mark.parametrize("path", WITH_DATA)
def test_the_examples_with_benchmark_data_run(path, tmp_path, monkeypatch):
    monkeypatch.setenv("CHIRALFAIR_DATA", str(real_data_home_or_skip()))
    monkeypatch.chdir(tmp_path)
    result = run_examples(path)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {path} failed (see the output)"


def test_a_wrong_example_fails(monkeypatch):
    def shown():
        """Say one.

        Examples
        --------
        >>> 1 + 1
        3
        """

    monkeypatch.setattr("chiralfair.models.adapters.as_model", shown)
    assert run_examples("chiralfair.models.adapters.as_model").failed == 1
