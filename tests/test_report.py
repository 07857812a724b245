import json

import pytest

from chiralfair.exceptions import RunFolderError
from chiralfair.results.run_folder import is_previous_run, prepare_run_folder, remove_empty_folders
from chiralfair.verdict import Verdict


def test_new_and_empty_folders_are_accepted(tmp_path):
    created = prepare_run_folder(tmp_path / "new" / "run")
    assert (tmp_path / "new" / "run").is_dir()
    assert created == [tmp_path / "new" / "run", tmp_path / "new"]
    remove_empty_folders(created)
    assert not (tmp_path / "new").exists(), "a failed run leaves no empty folder behind"
    (tmp_path / "empty").mkdir()
    assert prepare_run_folder(tmp_path / "empty") == []


def test_foreign_folder_is_refused_and_left_untouched(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(RunFolderError, match="not a previous chiralfair run"):
        prepare_run_folder(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_previous_run_is_accepted(tmp_path):
    (tmp_path / "result.json").write_text(json.dumps({"meta": {"chiralfair_version": "0.1.0"}}))
    assert is_previous_run(tmp_path)
    assert prepare_run_folder(tmp_path) == []


def test_a_file_is_refused(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(RunFolderError, match="is a file"):
        prepare_run_folder(f)


def test_a_folder_that_cannot_be_created_is_a_clear_error(tmp_path):
    (tmp_path / "afile").write_text("x")
    with pytest.raises(RunFolderError, match="cannot create output folder"):
        prepare_run_folder(tmp_path / "afile" / "sub")


def test_parents_created_before_a_failure_are_removed(tmp_path):
    with pytest.raises(RunFolderError, match="cannot create output folder"):
        prepare_run_folder(tmp_path / "new" / ("z" * 300))  # "new" is created, then the name is too long
    assert not (tmp_path / "new").exists()


def toy_outcome(sink=None, *, with_verdict=False):
    import numpy as np
    from toys import biased_module, toy_domain

    import chiralfair.generators._load_all  # noqa: F401
    from chiralfair.generators import make_generator
    from chiralfair.models import as_model
    from chiralfair.pipeline import RunConfig, RunOutcome
    from chiralfair.results import SeedReport

    domain = toy_domain(("sex", "race"))
    seeds = domain.sample(30, np.random.default_rng(0))
    result = make_generator("aequitas", max_global=30, max_local=30).run(
        as_model(biased_module()), domain, seeds, random_state=0, sink=sink)
    config = RunConfig(dataset="toy", protected=("sex", "race"), model="toy", seeds="random", max_global=30,
                       max_local=30)
    verdict = None
    if with_verdict:
        from toys import toy_dataset

        from chiralfair.verdict import estimate
        verdict = estimate(as_model(biased_module()), toy_dataset(protected=("sex", "race")), population="rows",
                           favourable=1)
    return RunOutcome(config, result, SeedReport("random", seeds, np.zeros(30, dtype=bool)), domain,
                      {"name": "toy", "f1": 0.5, "accuracy": 0.5, "train_seconds": 0.0, "from_cache": True},
                      {"search": result.seconds, "total": result.seconds}, verdict=verdict,
                      favourable=1 if with_verdict else None)


def test_write_run_writes_in_memory_pairs_and_a_final_result_json(tmp_path):
    import numpy as np

    from chiralfair.reporting.report import write_run
    from chiralfair.results.run_folder import read_pairs

    outcome = toy_outcome()
    write_run(outcome, tmp_path)
    summary = json.loads((tmp_path / "result.json").read_text())
    assert summary["partial"] is False and summary["seconds_by_step"]["write"] > 0
    pairs = read_pairs(tmp_path / "idis.parquet")
    np.testing.assert_array_equal(pairs["idis"], outcome.result.idis)
    np.testing.assert_array_equal(pairs["phase"], outcome.result.phase)
    assert (tmp_path / "idis_by_protected_value.png").stat().st_size > 0
    assert "idis.parquet" in (tmp_path / "report.md").read_text()


def test_write_run_on_streamed_pairs_reads_none_of_them_back(tmp_path):
    from chiralfair.reporting.report import write_run
    from chiralfair.results.run_folder import PairSink, mark_partial, pair_parts

    mark_partial(tmp_path, {"chiralfair_version": "test"})
    outcome = toy_outcome(PairSink(tmp_path / "idis.parquet", rows_per_part=50))
    parts = {p: p.stat().st_mtime_ns for p in pair_parts(tmp_path / "idis.parquet")}
    assert len(parts) > 1
    write_run(outcome, tmp_path)
    assert {p: p.stat().st_mtime_ns for p in pair_parts(tmp_path / "idis.parquet")} == parts, "pairs left as they are"
    assert all(v is None for v in outcome.result.__dict__["_pairs"].values()), "the report used aggregates only"
    assert json.loads((tmp_path / "result.json").read_text())["n_idis"] == outcome.result.n_idis > 0


def test_report_says_on_which_rows_the_model_was_scored():
    from chiralfair.reporting.report import render_markdown

    base = {"meta": {"config": {"dataset": "d", "model": "m", "generator": "aequitas", "seeds": "cluster",
                                "max_global": 1, "max_local": 1, "random_state": 0}, "protected": ["sex"]},
            "n_seed_idis": 0, "n_seeds": 1, "initialization_rate": 0.0, "n_idis": 0, "n_global": 0, "n_local": 0,
            "n_tested": 1, "n_queries": 2, "success_rate": 0.0, "seconds": 0.1, "seeds": {}, "notes": []}
    zoo = render_markdown({**base, "model": {"f1": 0.5, "accuracy": 0.8}}, None)
    assert "on the test split." in zoo
    held_out = ("a held-out split of the given data (120 rows, 40%, stratified, random_state 0) that may include "
                "rows the model was fitted on")
    own = render_markdown({**base, "model": {"f1": 0.5, "accuracy": 0.8, "evaluated_on": held_out}}, None)
    assert f"on {held_out}." in own


def test_report_html_is_self_contained_and_the_verdict_comes_before_the_search(tmp_path):
    import re

    from chiralfair.reporting.report import write_run

    outcome = toy_outcome(with_verdict=True)
    write_run(outcome, tmp_path)
    md = (tmp_path / "report.md").read_text()
    assert md.index("## Verdict") < md.index("## Search") < md.index("idis_by_protected_value.png")
    assert "not who is most discriminated" in md
    page = (tmp_path / "report.html").read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page), "no external asset"
    images = re.findall(r'<img src="([^"]*)"', page)
    assert len(images) == 3, "share by group, probability gap, IDIs by protected value"
    assert all(src.startswith("data:image/png;base64,") for src in images)
    assert "<table>" in page and page.index("Verdict") < page.index("Search")
    for name in ("harm_by_group.png", "probability_gap.png"):
        assert (tmp_path / name).stat().st_size > 0
    summary = json.loads((tmp_path / "result.json").read_text())
    assert Verdict.from_json(json.dumps(summary["verdict"])) == outcome.verdict


def test_idi_directions_add_up_and_name_the_group_the_biased_toy_disfavours(tmp_path):
    from chiralfair.reporting.report import render_markdown, verdict_lines
    from chiralfair.results.run_folder import PairSink

    outcome = toy_outcome(with_verdict=True)  # pairs in memory: compare the aggregates with the pairs
    d = outcome.summary()["idi_directions"]
    res = outcome.result
    assert d["n_idi_favoured"] + d["n_counterpart_favoured"] == res.n_idis > 0
    assert d["n_idi_favoured"] == int((res.idi_labels == 1).sum())
    by_sex = {r["group"]: r for r in d["disfavoured"] if r["attribute"] == "sex"}
    # the biased toy adds 3 to the score of sex=1 (Male): wherever sex differs, Female gets the unfavourable label
    assert by_sex["sex=Female"]["n_disfavoured"] > 0 and by_sex["sex=Female"]["n_favoured"] == 0
    sex_differs = res.idis[:, 0] != res.counterparts[:, 0]
    assert by_sex["sex=Female"]["n_disfavoured"] == int(sex_differs.sum())
    streamed = toy_outcome(PairSink(tmp_path / "idis.parquet"), with_verdict=True)
    assert streamed.summary()["idi_directions"] == d, "aggregates from the search equal counts over the pairs"
    lines = verdict_lines(outcome.summary())
    assert lines[0].startswith("share of the dataset's individuals affected: ")
    assert lines[1].startswith("  for the people the model will meet (these ")  # the rows as a sample of them
    assert lines[2].startswith("  certified unaffected: ")  # exact: each of them had every counterpart checked
    assert lines[3].startswith("most harmed group: sex=Female") and "for the people of that group" in lines[3]
    assert "| sex=Female |" in render_markdown(outcome.summary(), None)


def test_a_run_without_verdict_says_so_and_still_writes_the_html(tmp_path):
    from chiralfair.reporting.report import write_run

    write_run(toy_outcome(), tmp_path)
    assert "No verdict in this run" in (tmp_path / "report.md").read_text()
    assert (tmp_path / "report.html").exists() and not (tmp_path / "harm_by_group.png").exists()
    assert json.loads((tmp_path / "result.json").read_text())["verdict"] is None


def test_a_run_without_idis_says_it_is_no_proof_of_fairness_wherever_it_is_shown(tmp_path):
    # One text (reporting.report.NO_IDI_TEXT) for the printed summary, report.md and the notebook view.
    from toys import biased_module, fair_module, toy_dataset

    import chiralfair
    from chiralfair.reporting.report import NO_IDI_TEXT

    assert NO_IDI_TEXT == "no IDI found within this budget — not a proof of fairness."
    kw = dict(favourable=1, seeds="random", max_global=10, max_local=5)
    fair = chiralfair.audit(fair_module(), toy_dataset(400), **kw, out=tmp_path / "fair")
    assert fair.n_idis == 0
    assert NO_IDI_TEXT in fair.summary() and NO_IDI_TEXT in fair._repr_html_()
    assert "No IDI found within this budget — not a proof of fairness." in (tmp_path / "fair" / "report.md").read_text()
    biased = chiralfair.audit(biased_module(), toy_dataset(400), **kw, out=tmp_path / "biased")
    assert biased.n_idis > 0
    shown = biased.summary() + biased._repr_html_() + (tmp_path / "biased" / "report.md").read_text()
    assert "not a proof" not in shown


def test_a_group_too_small_to_tell_is_never_the_headline_and_is_named():
    from chiralfair.reporting.report import most_harmed_group, verdict_lines

    def group(name, n, n_harmed):
        return {"attribute": "race", "group": name, "n": n, "n_affected": n_harmed, "share_affected": n_harmed / n,
                "lower": n_harmed / n, "upper": n_harmed / n, "n_harmed": n_harmed, "share_harmed": n_harmed / n}

    made = Verdict(population="test", population_size=2012, protected=("race",), favourable=1, n_individuals=2012,
                   n_affected=104, n_harmed=104, share=104 / 2012, lower=104 / 2012, upper=104 / 2012,
                   confidence=0.95, method="wilson", margin=0.005, exact=True, stopped_by="exact", gamma=None,
                   groups=(group("race=a", 1000, 80), group("race=b", 1000, 20), group("race=c", 12, 4)),
                   group_confidence=1 - 0.05 / 9, gap=None, rules=(), n_queries=0, seconds=0.0)
    verdict = json.loads(made.to_json())
    assert made.worst_group == "race=a" and made.too_small == ("race=c",)
    assert most_harmed_group(verdict)["group"] == "race=a"  # race=c's 33% on 12 people says little
    lines = verdict_lines({"verdict": verdict})
    assert any(line.startswith("most harmed group: race=a") for line in lines)
    (small,) = [line for line in lines if "too small to tell" in line]
    assert "race=c (12 individuals, 33.33% harmed, [9.92%, 65.11%])" in small


def test_the_left_out_line_counts_one_individual_in_the_singular():
    from chiralfair.reporting.report import left_out_line

    assert left_out_line({"n_left_out": 1, "constraints": ["x=1 excludes y=2"]}).startswith(
        "1 individual, none of whose counterparts could exist (each breaks: x=1 excludes y=2)")
    assert left_out_line({"n_left_out": 1200}).startswith("1,200 individuals, none")


def test_the_reports_plots_need_no_mathtext(tmp_path, monkeypatch):
    # a symlog axis labels its ticks as powers of ten in mathtext, whose first parse in a process (building its
    # grammar) took about as long as drawing the three plots of the quick start: the counts are written as numbers
    from matplotlib.mathtext import MathTextParser

    from chiralfair.reporting.report import write_run

    monkeypatch.setattr(MathTextParser, "_parser", None)
    MathTextParser._parse_cached.cache_clear()  # an earlier test's parse would otherwise be reused without a parser
    write_run(toy_outcome(with_verdict=True), tmp_path)
    assert (tmp_path / "probability_gap.png").stat().st_size > 0
    assert MathTextParser._parser is None, "some label of the report's plots was parsed as mathtext"
