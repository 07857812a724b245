"""One JSON encoder, canonical JSON for keys, and atomic writes with one file mode: the umask's, as open() gives."""

import ast
import json
import os
from pathlib import Path, PurePosixPath

import numpy as np
import pandas as pd
import pytest
from toys import biased_module, toy_dataset

import chiralfair
from chiralfair.storage import atomic_path, atomic_write_bytes, atomic_write_text, canonical_json, json_default

ROOT = Path(chiralfair.__file__).parent


@pytest.mark.parametrize("value, plain", [
    (np.bool_(True), True), (np.int64(3), 3), (np.uint8(200), 200), (np.float32(0.5), 0.5),
    (np.arange(3), [0, 1, 2]), (np.array([[True], [False]]), [[True], [False]]),
    (PurePosixPath("runs/a"), "runs/a"), (Path("b.json"), "b.json"),
    (pd.NA, None), (pd.NaT, None), (pd.Timestamp("2024-05-01T12:30"), "2024-05-01T12:30:00"),
    (pd.Series([1, 2], dtype="int64"), [1, 2]), (pd.Index(["x", "y"]), ["x", "y"]),
])
def test_json_default_writes_numpy_pandas_and_paths_as_the_values_they_hold(value, plain):
    text = json.dumps({"v": value}, default=json_default)
    assert json.loads(text) == {"v": plain} and text == json.dumps({"v": plain})


def test_json_default_refuses_what_it_does_not_know_naming_the_type():
    with pytest.raises(TypeError, match="cannot write complex to JSON"):
        json.dumps({"v": 1j}, default=json_default)
    with pytest.raises(TypeError, match="cannot write set to JSON"):
        json.dumps({"v": {1, 2}}, default=json_default)


def test_canonical_json_is_the_same_text_for_equal_values_and_refuses_what_json_cannot_hold_exactly():
    a = canonical_json({"b": [1, (2, 3)], "a": {"y": None, "x": "é"}})
    assert a == canonical_json({"a": {"x": "é", "y": None}, "b": [1, [2, 3]]})
    assert a == '{"a":{"x":"\\u00e9","y":null},"b":[1,[2,3]]}'
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})
    with pytest.raises(TypeError):
        canonical_json({"x": np.int64(1)})  # no encoder: a key reads back as the value it was made of


def test_atomic_writes_replace_the_file_and_leave_nothing_hidden(tmp_path):
    path = tmp_path / "out.json"
    atomic_write_text(path, "première\n")
    assert path.read_bytes() == "première\n".encode()
    atomic_write_bytes(path, b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "result.json"
    path.write_text("old")
    with pytest.raises(RuntimeError, match="half-way"), atomic_path(path) as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(".result.json.") and tmp.name.endswith(".tmp")
        tmp.write_text("new, cut short")
        raise RuntimeError("half-way")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]


def test_a_missing_folder_is_an_os_error_before_any_write(tmp_path):
    with pytest.raises(FileNotFoundError):
        atomic_write_text(tmp_path / "missing" / "x.txt", "x")


@pytest.fixture(params=[0o027, 0o002], ids=["umask027", "umask002"])
def umask(request):
    old = os.umask(request.param)
    yield request.param
    os.umask(old)


def modes(folder: Path) -> dict[str, int]:
    """Mode of every file below ``folder`` (lock files of filelock left out: not ours)."""
    return {str(p.relative_to(folder)): p.stat().st_mode & 0o777 for p in folder.rglob("*")
            if p.is_file() and not p.name.endswith(".lock")}


def test_the_file_mode_follows_the_umask_as_open_gives(tmp_path, umask):
    atomic_write_text(tmp_path / "a.txt", "x")
    with atomic_path(tmp_path / "b.parquet") as tmp:
        pd.DataFrame({"x": [1]}).to_parquet(tmp)
    with open(tmp_path / "c.txt", "w") as fh:
        fh.write("x")
    assert modes(tmp_path) == dict.fromkeys(["a.txt", "b.parquet", "c.txt"], 0o666 & ~umask)


def test_a_run_folder_gets_the_one_file_mode(tmp_path, umask):
    # result.json, report.md/html, the PNG plots and the Parquet parts: mkstemp's 0600 was widened by hand before
    chiralfair.audit(biased_module(), toy_dataset(400, protected=("sex", "race")), favourable=1, seeds="random",
                     max_global=10, max_local=5, out=tmp_path / "run")
    found = modes(tmp_path / "run")
    assert {"result.json", "report.md", "report.html", "idis.parquet/part-000000.parquet"} <= set(found)
    assert any(name.endswith(".png") for name in found)
    assert found == dict.fromkeys(found, 0o666 & ~umask)


@pytest.mark.parametrize("like", ["lr.skops", "lr.joblib"])
def test_saved_model_files_and_the_model_cache_get_the_one_file_mode(tmp_path, umask, like):
    # Both were 0600 (NamedTemporaryFile, mkstemp): a retrain folder's model was unreadable to the folder's group.
    from sklearn.linear_model import LogisticRegression

    from chiralfair.models import as_model, train_model
    from chiralfair.models.files import save_model_file

    data = toy_dataset(200)
    model = as_model(LogisticRegression().fit(data.X, data.y))
    (tmp_path / "out").mkdir()
    save_model_file(model, tmp_path / "out", like=like, stem="model")
    train_model(data, "lr", cache_dir=tmp_path / "cache")
    found = modes(tmp_path)
    assert len(found) == 2 and found == dict.fromkeys(found, 0o666 & ~umask)


def test_grid_cell_files_get_the_one_file_mode(tmp_path, umask):
    # experiments/cells.py set 0o644 whatever the umask: an audit kept private with umask 077 was world-readable.
    from chiralfair.experiments.cells import fail_cell, finish_cell, start_cell
    from chiralfair.experiments.grid import load_grid

    axes = {"rows": ["german:sex"], "models": ["lr"], "seeds": ["random"], "generators": ["aequitas"],
            "budgets": [[10, 10]]}
    cell = load_grid({"name": "modes", "repeats": 1, "axes": axes}).cells()[0]
    start_cell(tmp_path, cell)
    fail_cell(tmp_path, RuntimeError("first attempt"), 0.1)
    assert (tmp_path / "error.json").is_file()
    finish_cell(tmp_path, {"figures": {"n_idis": np.int64(3)}})
    assert json.loads((tmp_path / "result.json").read_text())["figures"] == {"n_idis": 3}
    found = modes(tmp_path)
    assert set(found) == {"cell.json", "result.json"} and found == dict.fromkeys(found, 0o666 & ~umask)


@pytest.mark.usefixtures("offline")
def test_a_downloaded_raw_file_gets_the_one_file_mode(tmp_path, monkeypatch, umask):
    # pooch's own temporary file is 0600; the bytes are copied into a file with the package's mode.
    import hashlib

    from chiralfair.datasets import home

    payload = b"raw rows\n"
    raw = home.RawFile("toy/raw/toy.data", "https://example.org/toy.data", hashlib.sha256(payload).hexdigest())
    monkeypatch.setitem(home.RAW_FILES, raw.relpath, raw)
    monkeypatch.setattr(home, "downloader", lambda: lambda url, output, pooch: Path(output).write_bytes(payload))
    path = home.fetch_raw(raw.relpath, data_home=tmp_path / "empty-home")
    assert path.read_bytes() == payload
    assert [p.name for p in path.parent.iterdir()] == ["toy.data"]
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def _writes_files_itself(tree: ast.AST) -> list[str]:
    """Calls that make or rename files behind storage's back: os.replace/rename/chmod, tempfile's files."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if (node.value.id, node.attr) in {("os", "replace"), ("os", "rename"), ("os", "chmod"),
                                              ("tempfile", "mkstemp"), ("tempfile", "NamedTemporaryFile")}:
                found.append(f"{node.value.id}.{node.attr} (line {node.lineno})")
    return found


def test_every_writer_goes_through_storage():
    # The one file mode holds only if no module makes its own temporary file and renames it.
    offenders = {}
    for path in sorted(ROOT.rglob("*.py")):
        if path.name != "storage.py":
            found = _writes_files_itself(ast.parse(path.read_text()))
            if found:
                offenders[str(path.relative_to(ROOT))] = found
    assert offenders == {}
