import json

import pytest

from chiralfair.exceptions import RunFolderError
from chiralfair.report import is_previous_run, prepare_run_folder, remove_empty_folders


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
