"""The reference networks shipped with the package: checksums, loading by recipe, the flag, refusals, the output."""

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from realdata import real_data_home_or_skip
from typer.testing import CliRunner

from chiralfair.cli import app
from chiralfair.datasets import load_dataset
from chiralfair.exceptions import ChecksumError, ConfigError
from chiralfair.models import reference as ref
from chiralfair.models import train_model
from chiralfair.models.zoo import ModelSpec
from chiralfair.pipeline import RunConfig
from chiralfair.pipeline.run import run_experiment
from chiralfair.reporting.report import outcome_lines
from chiralfair.seeds import make_seed_strategy

pytest.importorskip("torch")

EXPECTED = {"census-dnn", "census-chiral-age-dnn", "census-chiral-race-dnn", "census-chiral-sex-dnn",
            "census-chiral-sex-uncoupled-dnn",
            "compas-dnn", "compas-chiral-age-dnn", "compas-chiral-race-dnn", "compas-chiral-sex-dnn",
            "bank-dnn", "bank-chiral-age-dnn", "german-dnn", "german-chiral-age-dnn", "german-chiral-sex-dnn"}


@pytest.fixture(scope="module")
def home():
    return str(real_data_home_or_skip())


def manifest():
    return json.loads((ref.FOLDER / ref.MANIFEST).read_text())


def entry(name):
    return next(e for e in manifest()["networks"] if e["name"] == name)


def numpy_labels(file, X):
    """P(y = 1) >= 0.5 recounted with numpy from the file's arrays (standardise, then the ReLU layers)."""
    with np.load(file, allow_pickle=False) as a:
        arrays = {k: a[k] for k in a.files}
    h = (np.asarray(X, dtype=np.float32) - arrays["input_mean"]) / arrays["input_std"]
    layers = sorted({int(k.split(".")[1]) for k in arrays if k.startswith("layers.")})
    for i, j in enumerate(layers):
        h = h @ arrays[f"layers.{j}.weight"].T + arrays[f"layers.{j}.bias"]
        if i < len(layers) - 1:
            h = np.maximum(h, 0)
    return (h[:, 0] >= 0).astype(np.int64)  # sigmoid(z) >= 0.5 <=> z >= 0


def f1(y, p):
    tp = int(np.sum((y == 1) & (p == 1)))
    return 2 * tp / (int(np.sum(y == 1)) + int(np.sum(p == 1)))


def test_the_manifest_lists_every_benchmark_network_with_its_files_sha256():
    networks = manifest()["networks"]
    assert {e["name"] for e in networks} == EXPECTED
    for e in networks:
        data = (ref.FOLDER / e["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == e["sha256"], e["name"]
        assert len(data) < 20_000 and data[:2] == b"PK"  # a small zip of .npy arrays, never a pickle
        assert e["trained_with"]["torch"] and e["recipe"]["spec"]["name"] == "dnn"
        assert 0 < e["f1"] <= 1


@pytest.mark.parametrize("name", ["census", "german"])
def test_the_default_dnn_is_the_shipped_network_and_predicts_as_its_file(home, tmp_path, name):
    data = load_dataset(name, data_home=home)
    trained = train_model(data, "dnn", random_state=0, cache_dir=tmp_path)
    e = entry(f"{name}-dnn")
    assert trained.reference is not None and trained.network == f"reference network {name}-dnn v1, sha256 " \
                                                                 f"{e['sha256'][:12]}"
    assert list(tmp_path.iterdir()) == []  # nothing trained, nothing cached
    X_test, y_test = data.X[trained.test_index], data.y[trained.test_index]
    expected = numpy_labels(ref.FOLDER / e["file"], X_test)
    np.testing.assert_array_equal(trained.model.predict(X_test), expected)
    assert f1(y_test, expected) == pytest.approx(e["f1"], abs=1e-12) == pytest.approx(trained.f1, abs=1e-12)


def test_reference_false_and_other_recipes_train_on_this_machine(home, tmp_path):
    data = load_dataset("german", data_home=home)
    for kwargs in ({"reference": False}, {"random_state": 1}, {"model": ModelSpec("dnn", {"epochs": 3})}):
        trained = train_model(data, **{"model": "dnn", "random_state": 0, "cache_dir": tmp_path, **kwargs})
        assert trained.reference is None and trained.network == "trained on this machine", kwargs
        assert trained.cache_path.parent == tmp_path and trained.cache_path.is_file(), kwargs
    # the recipe of the first is the shipped one's: only the flag made it train
    assert train_model(data, "dnn", random_state=0, cache_dir=tmp_path).reference is not None


def test_a_damaged_file_is_refused_naming_it_never_retrained(home, tmp_path, monkeypatch):
    folder = tmp_path / "reference"
    shutil.copytree(ref.FOLDER, folder, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    file = folder / entry("german-dnn")["file"]
    data = bytearray(file.read_bytes())
    data[-40] ^= 0xFF
    file.write_bytes(bytes(data))
    monkeypatch.setattr(ref, "FOLDER", folder)
    cache = tmp_path / "cache"
    with pytest.raises(ChecksumError, match=f"{file}.*SHA-256"):
        train_model(load_dataset("german", data_home=home), "dnn", random_state=0, cache_dir=cache)
    assert not cache.exists() or list(cache.iterdir()) == []
    file.unlink()
    with pytest.raises(ChecksumError, match=str(file)):
        train_model(load_dataset("german", data_home=home), "dnn", random_state=0, cache_dir=cache)


def test_a_loaded_network_saved_again_gives_the_shipped_bytes(tmp_path):
    for network in ref.reference_networks():
        module = ref.load_reference(network)
        assert ref.save_network(module, tmp_path / "again.npz") == network.sha256, network.name
        assert (tmp_path / "again.npz").read_bytes() == network.file.read_bytes()


def test_the_presets_uncoupled_census_sex_gets_its_own_shipped_chiral_model(home, tmp_path):
    data = load_dataset("census", protected="sex", couple=False, data_home=home)
    model = train_model(data, "dnn", random_state=0, cache_dir=tmp_path).model
    report = make_seed_strategy("i", chiral_random_state=0, chiral_cache_dir=tmp_path).select(model, data, 5,
                                                                                              random_state=0)
    e = entry("census-chiral-sex-uncoupled-dnn")
    assert report.meta["chiral_model"]["network"] == f"reference network {e['name']} v1, sha256 {e['sha256'][:12]}"
    assert list(tmp_path.iterdir()) == []


def test_a_manifest_that_cannot_be_read_is_refused_naming_it(tmp_path):
    (tmp_path / ref.MANIFEST).write_text("{not json")
    with pytest.raises(ConfigError, match=str(tmp_path / ref.MANIFEST)):
        ref.reference_networks(tmp_path)


@pytest.mark.parametrize("reference", [True, False])
def test_iandd_uses_the_shipped_chiral_model_unless_told_to_train(home, tmp_path, reference):
    data = load_dataset("german", protected="sex", data_home=home)
    model = train_model(data, "dnn", random_state=0, cache_dir=tmp_path, reference=reference).model
    strategy = make_seed_strategy("i", chiral_random_state=0, chiral_cache_dir=tmp_path, chiral_reference=reference)
    report = strategy.select(model, data, 20, random_state=0)
    meta = report.meta["chiral_model"]
    cached = sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".pt")
    if reference:
        e = entry("german-chiral-sex-dnn")
        assert meta["network"] == f"reference network german-chiral-sex-dnn v1, sha256 {e['sha256'][:12]}"
        assert cached == []  # neither the model nor its chiral model was trained
        assert meta["recipe_digest"] == e["recipe_digest"]
    else:
        assert meta["network"] == "trained on this machine"
        assert len(cached) == 2 and any("chiral" in name for name in cached)


def test_the_run_says_which_networks_it_used(home, tmp_path):
    config = RunConfig(dataset="german", protected=("sex",), model="dnn", seeds="i", max_global=10, max_local=5,
                       data_home=home, cache_dir=str(tmp_path))
    lines = outcome_lines(run_experiment(config).summary())
    sha = {n: hashlib.sha256((ref.FOLDER / f"{n}.npz").read_bytes()).hexdigest()[:12]
           for n in ("german-dnn", "german-chiral-sex-dnn")}
    assert f"  model: reference network german-dnn v1, sha256 {sha['german-dnn']}" in lines
    assert f"  chiral model: reference network german-chiral-sex-dnn v1, sha256 {sha['german-chiral-sex-dnn']}" \
        in lines
    from dataclasses import replace

    lines = outcome_lines(run_experiment(replace(config, reference=False)).summary())
    assert "  model: trained on this machine" in lines and "  chiral model: trained on this machine" in lines


def test_the_cli_flag_trains_and_is_recorded_and_refused_with_own_data(home, tmp_path):
    runner = CliRunner()
    out = tmp_path / "run"
    res = runner.invoke(app, ["run", "--data-home", home, "--cache-dir", str(tmp_path / "cache"), "--dataset",
                              "german", "--protected", "sex", "--seeds", "random", "--max-global", "5",
                              "--max-local", "2", "--train-model", "--out", str(out)])
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "result.json").read_text())
    assert summary["model"]["network"] == "trained on this machine" and summary["model"]["reference"] is None
    assert summary["meta"]["config"]["reference"] is False and "model: trained on this machine" in res.output
    res = runner.invoke(app, ["run", "--data", str(tmp_path / "x.csv"), "--model", str(tmp_path / "m.skops"),
                              "--train-model"])
    assert res.exit_code != 0 and "--train-model" in res.output


def test_the_docs_quote_the_shipped_census_networks():
    text = (Path(__file__).parents[1] / "docs" / "explanations" / "reproducibility.md").read_text()
    for name in ("census-dnn", "census-chiral-sex-dnn"):
        assert f"reference network {name} v1, sha256 {entry(name)['sha256'][:12]}" in text, name
