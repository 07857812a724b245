import pickle

import numpy as np
import pytest

from chiralfair.exceptions import ChiralfairError, ModelFileError
from chiralfair.models import as_model
from chiralfair.models.files import OnnxClassifier, check_model_file, load_model_file


def data(n=200, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 5, size=(n, d)).astype(float)
    y = (X[:, 0] + X[:, 1] > 4).astype(int)
    return X, y


def test_skops_round_trip(tmp_path):
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression

    X, y = data()
    est = LogisticRegression().fit(X, y)
    path = tmp_path / "lr.skops"
    sio.dump(est, path)
    loaded = load_model_file(path)
    assert (loaded.predict(X) == est.predict(X)).all()
    assert (as_model(loaded).predict(X) == est.predict(X)).all()


def test_skops_untrusted_types_refused_then_trusted(tmp_path):
    import skops.io as sio
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer
    from sklearn.tree import DecisionTreeClassifier

    X, y = data()
    est = make_pipeline(FunctionTransformer(_shift), DecisionTreeClassifier(random_state=0)).fit(X, y)
    path = tmp_path / "pipe.skops"
    sio.dump(est, path)
    untrusted = sio.get_untrusted_types(file=path)
    assert any("_shift" in t for t in untrusted)
    with pytest.raises(ModelFileError, match="trusted set: .*_shift.*--trust-model-file"):
        load_model_file(path)
    loaded = load_model_file(path, trust=True)
    assert (loaded.predict(X) == est.predict(X)).all()


def _shift(X):
    return X + 1


def test_pickle_refused_unless_trusted(tmp_path):
    from sklearn.tree import DecisionTreeClassifier

    X, y = data()
    est = DecisionTreeClassifier(random_state=0).fit(X, y)
    path = tmp_path / "tree.pkl"
    path.write_bytes(pickle.dumps(est))
    with pytest.raises(ModelFileError, match="pickle: loading it runs whatever code"):
        check_model_file(path)
    assert (load_model_file(path, trust=True).predict(X) == est.predict(X)).all()


def test_missing_file_and_unknown_suffix(tmp_path):
    with pytest.raises(ModelFileError, match="does not exist"):
        load_model_file(tmp_path / "nope.skops")
    odd = tmp_path / "model.h5"
    odd.write_bytes(b"x")
    with pytest.raises(ModelFileError, match="unsupported suffix '.h5'; supported: .skops"):
        load_model_file(odd)
    assert issubclass(ModelFileError, ChiralfairError) and issubclass(ModelFileError, ValueError)


def test_torchscript_loads_and_has_gradient(tmp_path):
    import torch

    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(4, 1), torch.nn.Sigmoid())
    path = tmp_path / "net.pt"
    torch.jit.script(module).save(str(path))
    loaded = load_model_file(path)
    model = as_model(loaded)
    X, _ = data()
    with torch.no_grad():
        want = (module(torch.as_tensor(X, dtype=torch.float32))[:, 0] > 0.5).numpy().astype(int)
    assert (model.predict(X) == want).all()
    assert model.has_gradient and model.input_gradient(X[:3]).shape == (3, 4)


def test_torch_save_pickle_is_not_torchscript(tmp_path):
    import torch

    path = tmp_path / "weights.pt"
    torch.save(torch.nn.Linear(4, 1).state_dict(), path)
    with pytest.raises(ModelFileError, match="not a TorchScript module"):
        load_model_file(path)


def _onnx_logistic(path, w, b, *, outputs):
    from onnx import TensorProto, helper, numpy_helper

    d = len(w)
    nodes = [helper.make_node("MatMul", ["X", "W"], ["z0"]), helper.make_node("Add", ["z0", "B"], ["z"]),
             helper.make_node("Sigmoid", ["z"], ["p"])]
    if outputs == "one":
        outs = [helper.make_tensor_value_info("p", TensorProto.FLOAT, [None, 1])]
    else:
        nodes += [helper.make_node("Sub", ["one", "p"], ["q"]),
                  helper.make_node("Concat", ["q", "p"], ["probabilities"], axis=1),
                  helper.make_node("ArgMax", ["probabilities"], ["label"], axis=1, keepdims=0)]
        outs = [helper.make_tensor_value_info("label", TensorProto.INT64, [None]),
                helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, 2])]
    inits = [numpy_helper.from_array(np.asarray(w, dtype=np.float32).reshape(d, 1), "W"),
             numpy_helper.from_array(np.asarray([b], dtype=np.float32), "B"),
             numpy_helper.from_array(np.asarray([1.0], dtype=np.float32), "one")]
    graph = helper.make_graph(nodes, "lr", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, d])],
                              outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())
    return path


def test_onnx_one_column_needs_declared_output(tmp_path):
    w, b = [1.0, 1.0, 0.0, 0.0], -4.5
    path = _onnx_logistic(tmp_path / "lr.onnx", w, b, outputs="one")
    with pytest.raises(ModelFileError, match="output='probability' or output='logit'"):
        load_model_file(path)
    X, y = data()
    est = load_model_file(path, output="probability")
    model = as_model(est, batch_size=37)  # several onnxruntime calls
    assert (model.predict(X) == y).all()
    p = model.predict_proba(X)[:, 1]
    assert np.allclose(p, 1 / (1 + np.exp(-(X @ np.array(w) + b))), atol=1e-6)
    assert not model.has_gradient


def test_onnx_label_and_probabilities(tmp_path):
    path = _onnx_logistic(tmp_path / "lr2.onnx", [1.0, 1.0, 0.0, 0.0], -4.5, outputs="two")
    est = load_model_file(path)
    assert isinstance(est, OnnxClassifier) and hasattr(est, "predict_proba")
    X, y = data()
    assert (est.predict(X) == y).all() and est.predict_proba(X).shape == (len(X), 2)


def test_damaged_onnx_file(tmp_path):
    path = tmp_path / "bad.onnx"
    path.write_bytes(b"not onnx")
    with pytest.raises(ModelFileError, match="not a readable ONNX model"):
        load_model_file(path)


# ------------------------------------------------------- label conventions of every file kind
LABELS = {"strings": (">50K", "<=50K"), "one and two": (2, 1)}


def _frame_and_pipeline(labels):
    """A raw frame (string and numeric columns) and an sklearn pipeline fitted on it with the given labels."""
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame({"sex": rng.choice(["f", "m"], n), "race": rng.choice(["a", "b", "c"], n),
                       "age": rng.integers(18, 80, n).astype(np.float32),
                       "hours": rng.integers(20, 60, n).astype(np.float32)})
    positive = ((df["sex"] == "m") & (df["hours"] > 38)) | (df["hours"] > 50)
    df["y"] = np.where(positive, labels[0], labels[1])
    pre = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), ["sex", "race"]),
                             ("num", StandardScaler(), ["age", "hours"])])
    pipe = Pipeline([("pre", pre), ("lr", LogisticRegression())]).fit(df.drop(columns="y"), df["y"])
    return df, pipe


def _write(kind, pipe, frame, path):
    if kind == "onnx":
        from skl2onnx import to_onnx
        model = to_onnx(pipe, frame.drop(columns="y")[:1], target_opset={"": 17, "ai.onnx.ml": 3})
        path.write_bytes(model.SerializeToString())
    elif kind == "skops":
        import skops.io as sio
        sio.dump(pipe, path)
    else:
        import joblib
        joblib.dump(pipe, path)
    return path


@pytest.mark.parametrize("labels", list(LABELS))
@pytest.mark.parametrize("kind, suffix", [("onnx", ".onnx"), ("skops", ".skops"), ("joblib", ".joblib")])
def test_a_model_file_with_other_labels_takes_its_classes_from_the_file(tmp_path, kind, suffix, labels):
    # Fixed: an ONNX file converted by skl2onnx (string inputs, ZipMap probabilities) with labels
    # ">50K"/"<=50K" or {1, 2} was refused: "positive_class='>50K' is not one of the classes [0, 1]".
    import chiralfair

    positive, negative = LABELS[labels]
    frame, pipe = _frame_and_pipeline(LABELS[labels])
    path = _write(kind, pipe, frame, tmp_path / f"model{suffix}")
    loaded = load_model_file(path, trust=kind == "joblib")
    assert list(loaded.classes_) == list(pipe.classes_)  # read from the file, before any call
    result = chiralfair.audit(path, frame, label="y", positive_class=positive, protected=["sex"],
                              seeds="cluster", max_global=20, max_local=5, trust_model_file=kind == "joblib")
    assert result.n_idis > 0
    r, dataset = result.outcome.result, result.dataset
    own = pipe.predict(dataset.to_frame(r.idis)) == positive
    other = pipe.predict(dataset.to_frame(r.counterparts)) == positive
    assert (own != other).all() and (own.astype(int) == r.idi_labels).all()
    model = as_model(loaded, positive_class=positive, to_frame=dataset.to_frame)
    probability = pipe.predict_proba(dataset.to_frame(dataset.X))[:, list(pipe.classes_).index(positive)]
    np.testing.assert_allclose(model.predict_proba(dataset.X)[:, 1], probability, atol=1e-5)


def test_an_onnx_file_without_stored_labels_has_the_classes_of_a_torch_module(tmp_path):
    from chiralfair.models.files import stored_classes

    path = _onnx_logistic(tmp_path / "lr.onnx", [1.0, 1.0, 0.0, 0.0], -4.5, outputs="two")
    assert stored_classes(path) is None and list(load_model_file(path).classes_) == [0, 1]


@pytest.mark.parametrize("suffix", [".skops", ".joblib"])
def test_a_file_naming_a_function_that_cannot_be_imported_says_what_makes_it_load(tmp_path, monkeypatch, suffix):
    import sys

    import joblib
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    (tmp_path / "my_features.py").write_text("def double(X):\n    return X * 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import my_features

    X, y = np.arange(40).reshape(20, 2), np.array([0, 1] * 10)
    pipe = make_pipeline(FunctionTransformer(my_features.double), LogisticRegression()).fit(X, y)
    path = tmp_path / f"model{suffix}"
    (sio.dump if suffix == ".skops" else joblib.dump)(pipe, path)
    monkeypatch.delitem(sys.modules, "my_features")
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(tmp_path)])
    with pytest.raises(ModelFileError, match="must be importable where chiralfair runs") as caught:
        load_model_file(path, trust=True)
    assert "my_features" in str(caught.value)


def test_a_torchscript_failure_quotes_its_real_cause():
    import torch

    from chiralfair.exceptions import ModelInputError

    scripted = torch.jit.script(torch.nn.Sequential(torch.nn.Linear(5, 1), torch.nn.Sigmoid()))
    model = as_model(scripted)
    with pytest.raises(ModelInputError, match=r"mat1 and mat2 shapes cannot be multiplied"):
        model.predict(np.zeros((4, 3)))
