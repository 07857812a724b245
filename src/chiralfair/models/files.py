"""Models under test read from files: skops, TorchScript, ONNX, and (only when trusted) joblib/pickle.

==========================  ==================================================================================
suffix                      loaded with
==========================  ==================================================================================
``.skops``                  ``skops.io.load`` after ``skops.io.get_untrusted_types``: a file holding types
                            outside skops' trusted set (and chiralfair's own, :data:`CHIRALFAIR_TRUSTED_TYPES`)
                            is refused (listing them) unless ``trust=True``
``.pt``, ``.pth``, ``.ts``  ``torch.jit.load`` (TorchScript; loading runs no Python code from the file)
``.onnx``                   ``onnxruntime.InferenceSession`` (CPU), batched; a black box (no input gradient)
``.joblib``, ``.pkl``,      ``joblib.load`` only with ``trust=True``: unpickling runs code stored in the file
``.pickle``
==========================  ==================================================================================

The objects returned are what :func:`~chiralfair.models.as_model` accepts: an sklearn estimator or pipeline, a
torch module, or an :class:`OnnxClassifier` (which has ``predict`` / ``predict_proba`` like an estimator).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..exceptions import ModelFileError
from ..storage import atomic_path, json_default

SKOPS_SUFFIXES = (".skops",)
TORCHSCRIPT_SUFFIXES = (".pt", ".pth", ".ts")
ONNX_SUFFIXES = (".onnx",)
PICKLE_SUFFIXES = (".joblib", ".pkl", ".pickle")
MODEL_SUFFIXES = SKOPS_SUFFIXES + TORCHSCRIPT_SUFFIXES + ONNX_SUFFIXES + PICKLE_SUFFIXES
# chiralfair's own types that a saved model holds (the unaware model's blinding step, lists of values; and the
# wrapper earlier versions saved, a fitted estimator and its blinding). Loading them runs chiralfair's code only,
# never code from the file, so they need no --trust-model-file; the types inside them are checked as any others.
CHIRALFAIR_TRUSTED_TYPES = ("chiralfair.mitigation.blinding.Blinder",
                            "chiralfair.mitigation.blinding.BlindedClassifier",
                            "chiralfair.mitigation.reductions.ExpectedPositive")


def check_model_file(path: str | os.PathLike, *, trust: bool = False) -> Path:
    """Refuse a model file that cannot be loaded, before anything expensive runs.

    Checks that the file exists, that its suffix is a supported format, and that a pickle is trusted.

    Parameters
    ----------
    path : str or path-like
    trust : bool
        Whether the caller trusts the file enough to unpickle it.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ModelFileError
        Naming the file and what is wrong.
    """
    path = Path(path)
    if not path.is_file():
        raise ModelFileError(f"model file {str(path)!r} does not exist" if not path.exists()
                             else f"model file {str(path)!r} is not a file")
    suffix = path.suffix.lower()
    if suffix not in MODEL_SUFFIXES:
        raise ModelFileError(f"model file {str(path)!r}: unsupported suffix {suffix or '(none)'!r}; supported: "
                             f"{', '.join(MODEL_SUFFIXES)}")
    if suffix in PICKLE_SUFFIXES and not trust:
        raise ModelFileError(
            f"model file {str(path)!r} is a pickle: loading it runs whatever code the file holds. Save the model "
            "with skops (skops.io.dump) or export it to ONNX, or, if you made the file yourself or trust its source, "
            "pass --trust-model-file (in Python: trust_model_file=True)")
    if suffix in SKOPS_SUFFIXES and not trust:
        _untrusted_skops_types(path, trust)
    return path


def load_model_file(path: str | os.PathLike, *, trust: bool = False, output: str | None = None):
    """Load a model under test from a file (formats in the module docstring).

    Parameters
    ----------
    path : str or path-like
    trust : bool
        Load skops files with untrusted types, and joblib/pickle files (both can run code from the file).
    output : {"probability", "logit"}, optional
        For an ONNX model whose only float output has one column: whether it is P(y=1) or a logit
        (it cannot be told from the file). Ignored otherwise.

    Returns
    -------
    object
        An sklearn estimator, a torch module (TorchScript) or an :class:`OnnxClassifier`.

    Raises
    ------
    ModelFileError
        If the file is missing, of an unsupported kind, an untrusted pickle, holds untrusted skops types (listed),
        is not TorchScript, or is an ONNX model whose inputs or outputs cannot be interpreted.
    """
    path = check_model_file(path, trust=trust)
    suffix = path.suffix.lower()
    if suffix in SKOPS_SUFFIXES:
        return _load_skops(path, trust)
    if suffix in TORCHSCRIPT_SUFFIXES:
        return _load_torchscript(path)
    if suffix in ONNX_SUFFIXES:
        return OnnxClassifier(path, output=output)
    return _load_pickle(path)


def save_model_file(model, folder: str | os.PathLike, *, like: str | os.PathLike | None = None,
                    meta: dict | None = None, stem: str = "model") -> Path:
    """Save a (retrained) model under test in ``folder``, in the format it came in, so ``--model FILE`` loads it.

    ==============================  ==============================================================================
    model                           file
    ==============================  ==============================================================================
    a torch module (the zoo DNN, a  ``<stem>.pt``, TorchScript (``torch.jit.script``, else ``torch.jit.trace`` on
    trained torch model)            one input row of zeros); loads back with ``--model FILE``
    an sklearn estimator/pipeline   ``<stem>.skops`` (``skops.io.dump``), or ``<stem>.joblib`` when ``like`` is a
                                    joblib/pickle file
    a mitigation method             what its ``deployable_model()`` returns, saved as above: the network or the
                                    estimator it fitted (with the blinding of ``unaware``)
    ==============================  ==============================================================================

    The file is written under a temporary name and renamed when whole.

    Parameters
    ----------
    model : CountingModel, or the model object itself
        A CountingModel's ``estimator`` is saved; anything else is saved as it is.
    folder : str or path-like
    like : str or path-like, optional
        The file the original model came from; its kind decides the format.
    meta : dict, optional
        Stored beside a TorchScript module (``extra_files["meta.json"]``).
    stem : str
        The file's name without its suffix.

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    ModelFileError
        For a model that came from an ONNX file (an exported graph cannot be retrained and exported back here:
        retrain the source model and export it again), a mitigation method fitted on the codes of a model that
        speaks another language (``in_model_language_`` False: a raw-frame Pipeline, string labels), or an
        estimator of no known kind.
    """
    import json

    folder = Path(folder)
    suffix = Path(like).suffix.lower() if like is not None else None
    if suffix in ONNX_SUFFIXES:
        raise ModelFileError(f"model file {str(like)!r} is an ONNX graph: chiralfair cannot save a retrained model "
                             "back to ONNX; retrain the model it was exported from and export it again")
    from .protocol import CountingModel

    # a CountingModel's wrapped object; never the `estimator` parameter of a meta-estimator (its unfitted template)
    est = model.estimator if isinstance(model, CountingModel) else model
    if getattr(est, "in_model_language_", True) is False:  # a mitigation method fitted on codes and labels {0, 1}
        raise ModelFileError(
            f"the {getattr(est, 'name', type(est).__name__)} model takes chiralfair's integer codes and labels 0/1, "
            "not your model's input and labels, so a saved file would not load back with --model; its figures are "
            "in the report")
    deployable = getattr(est, "deployable_model", None)
    if callable(deployable):  # a fitted mitigation method: the model it fitted, predicting on its own
        est = deployable()
    if _is_torch_module(est):
        import torch

        path = folder / f"{stem}.pt"
        try:
            scripted = torch.jit.script(est)
        except Exception:  # modules with Python-only control flow: trace them on one row
            n_features = getattr(est, "n_features", None)
            if n_features is None:
                raise ModelFileError(f"cannot save torch module {type(est).__name__} as TorchScript: "
                                     "torch.jit.script failed and its input width is unknown") from None
            scripted = torch.jit.trace(est, torch.zeros(1, int(n_features)))
        with atomic_path(path) as tmp:
            scripted.save(str(tmp), _extra_files={"meta.json": json.dumps(meta or {}, default=json_default)})
        return path
    from sklearn.base import BaseEstimator

    if not isinstance(est, BaseEstimator):
        raise ModelFileError(f"cannot save model {getattr(model, 'name', type(est).__name__)!r}: it is neither an "
                             f"sklearn estimator nor a torch module ({type(est).__name__})")
    if suffix in PICKLE_SUFFIXES:
        import joblib

        path = folder / f"{stem}.joblib"
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            joblib.dump(est, fh)
    else:
        import skops.io as sio

        path = folder / f"{stem}.skops"
        with atomic_path(path) as tmp:
            sio.dump(est, tmp)
    return path


def _is_torch_module(obj) -> bool:
    import sys

    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.nn.Module)


def _load_pickle(path: Path):
    import joblib

    try:
        return joblib.load(path)
    except Exception as err:  # unpickling raises anything the file's code raises
        raise ModelFileError(f"model file {str(path)!r} cannot be unpickled: {type(err).__name__}: {err}"
                             + _importable_advice(err)) from err


def _importable_advice(err: Exception) -> str:
    """What makes a file load that refers to a function or class this process cannot import, or ``""``."""
    text = str(err)
    if not isinstance(err, AttributeError | ImportError) or ("module" not in text and "attribute" not in text):
        return ""
    where = "the script that saved it (__main__)" if "__main__" in text else "a module this process cannot import"
    return (f". The file refers to a function or class defined in {where}: a model file holds only its name, so "
            "it must be importable where chiralfair runs. Move it into a module of its own (e.g. features.py), "
            "import it from there when fitting, save the model again, and run chiralfair with that module on "
            "PYTHONPATH")


def _untrusted_skops_types(path: Path, trust: bool) -> list[str]:
    """The types of a skops file outside skops' trusted set; refused unless ``trust`` (reads the file's schema)."""
    import skops.io as sio

    try:
        untrusted = sio.get_untrusted_types(file=path)
    except Exception as err:  # skops raises zipfile/json/key errors for a damaged file
        raise ModelFileError(f"model file {str(path)!r} is not a readable skops file: {err}") from err
    unknown = [t for t in untrusted if t not in CHIRALFAIR_TRUSTED_TYPES]
    if unknown and not trust:
        raise ModelFileError(
            f"model file {str(path)!r} holds types outside skops' trusted set: {', '.join(unknown)}. Loading "
            "them may run their code; check that you expect them, then pass --trust-model-file (in Python: "
            "trust_model_file=True)")
    return untrusted


def _load_skops(path: Path, trust: bool):
    import skops.io as sio

    untrusted = _untrusted_skops_types(path, trust)
    try:
        return sio.load(path, trusted=untrusted or None)
    except (AttributeError, ImportError) as err:  # a function the file names is not importable here
        raise ModelFileError(f"model file {str(path)!r} cannot be loaded: {type(err).__name__}: {err}"
                             + _importable_advice(err)) from err


def _load_torchscript(path: Path):
    from ._torch import require_torch

    torch = require_torch(f"model file {str(path)!r} (TorchScript)")

    try:
        return torch.jit.load(str(path), map_location="cpu")
    except RuntimeError as err:
        raise ModelFileError(
            f"model file {str(path)!r} is not a TorchScript module ({str(err).splitlines()[0]}). Save the model "
            "with torch.jit.script(module).save(path) or torch.jit.trace; a module saved with torch.save is a "
            "pickle and is not loaded") from err


class OnnxClassifier:
    """A binary classifier in an ONNX file, run with onnxruntime on the CPU, called like an sklearn estimator.

    Inputs: either one float tensor of shape (n, n_features) (fed the encoded inputs, as float32), or one
    tensor per column (shape (n, 1), as written by skl2onnx for a pipeline over a DataFrame): then
    ``feature_names_in_`` holds the input names and :meth:`predict` takes a DataFrame with those columns.

    Outputs, read by type: an integer or string tensor of shape (n,) is the predicted label; a float tensor of
    shape (n, 2) (or skl2onnx's ZipMap, a sequence of maps) holds the class probabilities; a float tensor of
    shape (n,) or (n, 1) is P(y=1) or a logit, as ``output`` declares.

    Parameters
    ----------
    path : path-like
    output : {"probability", "logit"}, optional
        Needed only when the model's probabilities come as one float column.

    Attributes
    ----------
    classes_ : numpy.ndarray, shape (n_classes,)
        Class labels in the order of the probability columns, as the file stores them (:func:`stored_classes`:
        the ZipMap keys, or a classifier node's ``classlabels_*``, e.g. ``["<=50K", ">50K"]`` or ``[1, 2]`` for
        a file converted by skl2onnx); ``[0, 1]`` for a file that stores none (a network exported from torch, whose
        columns are classes 0 and 1 as for a torch module).
    feature_names_in_ : numpy.ndarray of str
        Only for models with one input per column.

    Raises
    ------
    ModelFileError
        If the file cannot be read or its inputs/outputs do not fit the above.
    """

    def __init__(self, path, *, output: str | None = None):
        import onnxruntime as ort

        self.path = Path(path)
        try:
            self._session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        except Exception as err:  # onnxruntime raises its own Fail/InvalidGraph classes
            raise ModelFileError(f"model file {str(path)!r} is not a readable ONNX model: {err}") from err
        self._inputs = self._session.get_inputs()
        self._label, self._proba, self._proba_kind = self._read_outputs(output)
        stored = stored_classes(self.path)
        self.classes_ = np.array([0, 1]) if stored is None else stored
        self._classes_stored = stored is not None
        if len(self._inputs) > 1:
            self.feature_names_in_ = np.array([i.name for i in self._inputs], dtype=object)

    def _read_outputs(self, output):
        label = proba = kind = None
        for out in self._session.get_outputs():
            if out.type.startswith("seq(map"):
                proba, kind = out.name, "zipmap"
            elif out.type in ("tensor(int64)", "tensor(int32)", "tensor(string)", "tensor(bool)"):
                label = label or out.name
            elif out.type in ("tensor(float)", "tensor(double)") and proba is None:
                width = out.shape[-1] if len(out.shape) > 1 else 1
                proba, kind = out.name, ("two" if width == 2 else "one")
        where = f"ONNX model {str(self.path)!r}"
        if kind == "one" and output not in ("probability", "logit"):
            raise ModelFileError(
                f"{where} gives one float column ({proba!r}): declare whether it is a probability or a logit "
                "with output='probability' or output='logit' (CLI: --model-output)")
        if label is None and proba is None:
            outs = ", ".join(f"{o.name}: {o.type}" for o in self._session.get_outputs())
            raise ModelFileError(f"{where} has no label or probability output (outputs: {outs})")
        return label, proba, (output if kind == "one" else kind)

    def _feed(self, X) -> dict:
        if len(self._inputs) == 1:
            return {self._inputs[0].name: np.asarray(X, dtype=np.float32)}
        feed = {}
        for inp in self._inputs:
            col = X[inp.name].to_numpy()
            dtype = object if inp.type == "tensor(string)" else _NUMPY.get(inp.type, np.float32)
            feed[inp.name] = col.astype(str if dtype is object else dtype).astype(dtype).reshape(-1, 1)
        return feed

    def _run(self, X, names):
        return self._session.run(names, self._feed(X))

    @property
    def predict_proba(self):
        """Class probabilities ``predict_proba(X) -> (n_samples, 2)``, columns in the order of ``classes_``.

        Absent (``hasattr`` is False) when the model has no probability output.
        """
        if self._proba is None:
            raise AttributeError(f"ONNX model {str(self.path)!r} has no probability output")
        return self._predict_proba

    def _predict_proba(self, X) -> np.ndarray:
        (out,) = self._run(X, [self._proba])
        return self._to_two_columns(out)

    def _to_two_columns(self, out) -> np.ndarray:
        if self._proba_kind == "zipmap":
            import pandas as pd
            frame = pd.DataFrame(out)
            if self._classes_stored:  # the stored order, whatever order the maps list their keys in
                return frame[list(self.classes_)].to_numpy(dtype=np.float64)
            self.classes_ = np.array(list(frame.columns))
            return frame.to_numpy(dtype=np.float64)
        out = np.asarray(out, dtype=np.float64)
        if self._proba_kind == "two":
            return out.reshape(len(out), 2)
        p = out.reshape(-1)
        if self._proba_kind == "logit":
            p = 1.0 / (1.0 + np.exp(-p))
        return np.column_stack([1 - p, p])

    def predict(self, X) -> np.ndarray:
        """Predicted labels, shape (n_samples,): the label output, else the likelier class of ``classes_``.

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Codes.

        Returns
        -------
        numpy.ndarray, shape (n_samples,)
        """
        if self._label is not None:
            (out,) = self._run(X, [self._label])
            return np.asarray(out).reshape(-1)
        return self.classes_[(self._predict_proba(X)[:, 1] > 0.5).astype(np.int64)]

    def __repr__(self) -> str:
        return f"OnnxClassifier({str(self.path)!r})"


# Attributes of ai.onnx.ml nodes that list the class labels (ZipMap first: it orders the probability output).
_CLASS_LABEL_ATTRIBUTES = ("classlabels_strings", "classlabels_int64s", "classlabels_ints")


def stored_classes(path) -> np.ndarray | None:
    """The class labels an ONNX classifier file stores, in the order of its probability columns, or None.

    Read from the graph (onnxruntime does not expose node attributes): the keys of a ``ZipMap`` node (skl2onnx
    writes one for every classifier), else the ``classlabels_*`` of a classifier node (``LinearClassifier``,
    ``TreeEnsembleClassifier``, ``SVMClassifier``, ...). String labels are returned as ``str``, integer
    labels as ``int64``.

    Parameters
    ----------
    path : path-like

    Returns
    -------
    numpy.ndarray, shape (n_classes,), or None
        None when no node lists class labels (e.g. a network exported from torch).
    """
    import onnx

    try:
        graph = onnx.load(str(path), load_external_data=False).graph
    except Exception:  # onnxruntime read it; an exotic file onnx cannot parse simply stores no labels we can see
        return None
    nodes = sorted(graph.node, key=lambda n: n.op_type != "ZipMap")
    for node in nodes:
        for attribute in node.attribute:
            if attribute.name in _CLASS_LABEL_ATTRIBUTES:
                values = onnx.helper.get_attribute_value(attribute)
                if attribute.name == "classlabels_strings":
                    return np.array([v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in values],
                                    dtype=object)
                return np.array(list(values), dtype=np.int64)
    return None


_NUMPY = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(int64)": np.int64,
          "tensor(int32)": np.int32, "tensor(bool)": np.bool_}
