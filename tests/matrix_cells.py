"""The cells of the differential test matrix: one question asked at every door, of every model kind, on every data kind.

The question: what share of these held-out people would get another label if only their protected attributes
changed, and who is harmed? Each cell (model kind × data kind × door) runs one door of chiralfair and recounts
every figure that door gives **independently**, with plain numpy/pandas through the user's own model object:
every protected value of every held-out row is flipped (every combination, no couplings), the labels counted;
F1 with sklearn's ``f1_score`` and the user's positive class; harmed = gets the unfavourable label while a
counterpart gets the favourable one; intervals Clopper-Pearson from ``scipy.stats.beta``. No chiralfair helper
is used for a recount. ``tests/test_matrix.py`` asserts each figure equal; ``benchmarks/matrix.py`` writes them.

A counting wrapper around the user's model records the rows it received, to set against the budget
(``max_queries``) and the queries the output states.
"""

from __future__ import annotations

import json
import math
import re
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

LABEL, POS, NEG = "income", "yes", "no"
SEXES = ("female", "male")
N_TRAIN, N_TEST = 500, 300
MAX_SHARE = 0.05          # the gate's threshold (every model here is unfair beyond it)
BUDGET = 60               # max_queries of the search (audit) and of the verdict (estimate, check)
CONFIDENCE = 0.95

MODELS = ("pipeline", "hgb", "lightgbm", "torch_values", "torch_codes", "torchscript", "onnx", "callable")
DATA = ("codes", "pandas", "polars", "csv", "csv_inside", "numeric")
DOORS = ("audit", "estimate", "check", "certify", "retrain", "card", "report", "cli")
MODEL_TEXT = {"pipeline": "sklearn Pipeline (OneHotEncoder + StandardScaler + LogisticRegression) on the raw frame",
              "hgb": "HistGradientBoosting, native categoricals (categorical_features='from_dtype')",
              "lightgbm": "LGBMClassifier on pandas categoricals",
              "torch_values": "torch module on the raw floats (model_input='values')",
              "torch_codes": "torch ReLU net on the codes", "torchscript": "TorchScript file of the ReLU net",
              "onnx": "ONNX file (skl2onnx of a pipeline)", "callable": "a bare predict callable"}
DATA_TEXT = {"codes": "a hand-made coded Dataset (sex x race protected, 6 combinations)",
             "pandas": "raw pandas frame: floats, strings, missing values",
             "polars": "the same rows as a polars frame",
             "csv": "CSV files + `chiralfair schema infer` schema; held-out ages beyond the training range",
             "csv_inside": "the same CSV files, the held-out values clipped to the training range",
             "numeric": "raw pandas frame of floats with missing values (sex as 0/1)"}
FILE_DATA = ("csv", "csv_inside")


# --------------------------------------------------------------------------------------------- known defects
# A cell that fails on one of these is marked xfail(strict=True) in tests/test_matrix.py, and named so in
# benchmarks/results/matrix.md; "finding:" marks a defect no other branch is fixing. None is known at present.

# Doors that train again or run every CLI command: out of the default run; so is writing the report (its plots take
# ~2 s a run) but for one frame model and one coded model.
SLOW_DOORS = ("retrain", "cli")
REPORT_FAST = ("pipeline", "torch_codes")


def slow(model: str, door: str) -> bool:
    """Whether a cell is left to ``-m slow``."""
    return door in SLOW_DOORS or (door == "report" and model not in REPORT_FAST)


def known(test: str, model: str, data: str, door: str) -> str | None:
    """The known defect a cell of ``test`` ("figures", "worst" or "budget") fails on, or None."""
    return None


# --------------------------------------------------------------------------------------------- the data kinds
def people(n: int, seed: int, *, beyond: bool = False) -> pd.DataFrame:
    """Raw people: strings (sex, port) and floats (age, fare) with missing values; label income yes/no (biased)."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"sex": rng.choice(SEXES, n), "port": rng.choice(["C", "Q", "S"], n).astype(object),
                       "age": rng.uniform(18, 95 if beyond else 80, n).round(1),
                       "fare": rng.lognormal(3, 1, n).round(2)})
    df.loc[rng.random(n) < 0.1, "port"] = np.nan
    df.loc[rng.random(n) < 0.1, "fare"] = np.nan
    score = (0.05 * (df["age"] - 45) + 0.6 * (np.log(df["fare"].fillna(20)) - 3) + 1.2 * (df["sex"] == "male")
             + 0.5 * (df["port"] == "C") + rng.normal(0, 0.7, n))
    df[LABEL] = np.where(score > 0.6, POS, NEG)
    return df


def numeric_people(n: int, seed: int) -> pd.DataFrame:
    """Floats only (sex 0/1, age, fare with missing values, hours); label income yes/no."""
    df = people(n, seed).drop(columns="port")
    df["sex"] = (df["sex"] == "male").astype(np.float64)
    df.insert(3, "hours", np.random.default_rng(seed + 7).integers(20, 60, n).astype(np.float64))
    return df


CODE_LABELS = {"sex": {0: "Female", 1: "Male"}, "race": {0: "A", 1: "B", 2: "C"}}


def codes_rule(X: np.ndarray) -> np.ndarray:
    """The score the coded data's labels come from (sex and race both matter)."""
    X = np.asarray(X, dtype=np.float64)
    return X[:, 2] + X[:, 3] + 0.5 * X[:, 4] + 2.5 * X[:, 0] - 1.5 * (X[:, 1] == 2) - 10.5


@cache
def coded_dataset():
    """A hand-made coded Dataset: codes are the values (like a benchmark); rows N_TRAIN.. are held out."""
    from chiralfair.datasets.base import Dataset
    from chiralfair.domain import Domain, Feature

    feats = (Feature("sex", 0, 1, "categorical", CODE_LABELS["sex"]),
             Feature("race", 0, 2, "categorical", CODE_LABELS["race"]),
             Feature("a", 0, 9), Feature("b", 0, 9), Feature("c", 0, 4))
    dom = Domain(feats).with_protected(["sex", "race"])
    rng = np.random.default_rng(3)
    X = dom.sample(N_TRAIN + N_TEST, rng)
    y = (codes_rule(X) + rng.normal(0, 1.0, len(X)) > 0).astype(np.int64)
    return Dataset("codes", X, y, dom, label="y", positive_class="1")


TEST_ROWS = np.arange(N_TRAIN, N_TRAIN + N_TEST)


@cache
def frames(data: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train and held-out frames (pandas) of a frame data kind."""
    if data == "numeric":
        return numeric_people(N_TRAIN, 0), numeric_people(N_TEST, 1)
    train, test = people(N_TRAIN, 0), people(N_TEST, 1, beyond=data == "csv")
    if data == "csv_inside":
        for col in ("age", "fare"):
            test[col] = test[col].clip(train[col].min(), train[col].max())
    return train, test


@cache
def folder() -> Path:
    return Path(tempfile.mkdtemp(prefix="chiralfair-matrix-"))


@cache
def csv_files(data: str = "csv") -> dict[str, Path]:
    """train.csv, test.csv and schema.toml written by ``chiralfair schema infer``."""
    from typer.testing import CliRunner

    from chiralfair.cli import app

    train, test = frames(data)
    out = folder() / data
    out.mkdir(exist_ok=True)
    train.to_csv(out / "train.csv", index=False)
    test.to_csv(out / "test.csv", index=False)
    res = CliRunner().invoke(app, ["schema", "infer", str(out / "train.csv"), "--label", LABEL, "--positive-class",
                                   POS, "--protected", "sex"])
    if res.exit_code != 0:
        raise RuntimeError(f"schema infer failed: {res.output}")
    (out / "schema.toml").write_text(res.stdout)
    return {"train": out / "train.csv", "test": out / "test.csv", "schema": out / "schema.toml"}


def user_data(data: str) -> dict[str, Any]:
    """What the user passes: ``data``, ``test`` and the keywords, in the data kind's own form."""
    if data == "codes":
        return {"data": coded_dataset(), "test": TEST_ROWS, "kw": {"protected": ["sex", "race"]}}
    train, test = frames(data)
    kw = {"label": LABEL, "positive_class": POS, "protected": "sex"}
    if data == "polars":
        import polars as pl

        return {"data": pl.from_pandas(train), "test": pl.from_pandas(test), "kw": kw}
    if data in FILE_DATA:
        f = csv_files(data)
        return {"data": str(f["train"]), "test": str(f["test"]), "kw": {"schema": str(f["schema"])}}
    return {"data": train, "test": test, "kw": kw}


# --------------------------------------------------------------------------------------------- the model kinds
CATEGORICAL = {"sex": pd.CategoricalDtype(list(SEXES)), "port": pd.CategoricalDtype(["C", "Q", "S"])}


def as_categoricals(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame as the native-categorical models were fitted on it (sex and port as pandas categoricals)."""
    return frame.astype({c: t for c, t in CATEGORICAL.items() if c in frame})


def features(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=LABEL)


@cache
def raw_pipeline():
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline, make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    train, _ = frames("pandas")
    pre = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), ["sex", "port"]),
                             ("num", make_pipeline(SimpleImputer(), StandardScaler()), ["age", "fare"])])
    return Pipeline([("pre", pre), ("lr", LogisticRegression())]).fit(features(train), train[LABEL])


def _torch():
    import torch

    return torch


@cache
def values_net():
    import torch

    train, _ = frames("numeric")
    X = features(train).to_numpy(np.float64)
    mean, std = np.nanmean(X, axis=0), np.nanstd(X, axis=0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32))
            self.register_buffer("std", torch.tensor(std, dtype=torch.float32))
            self.body = torch.nn.Sequential(torch.nn.Linear(X.shape[1], 12), torch.nn.ReLU(),
                                            torch.nn.Linear(12, 1), torch.nn.Sigmoid())

        def forward(self, x):
            return self.body(torch.nan_to_num((x.float() - self.mean) / self.std))

    torch.manual_seed(0)
    net = Net()
    _fit(net, torch.tensor(X), (train[LABEL] == POS).to_numpy(), logits=False)
    return net


@cache
def codes_net():
    torch = _torch()
    ds = coded_dataset()
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(5, 12), torch.nn.ReLU(), torch.nn.Linear(12, 1))
    _fit(net, torch.tensor(ds.X[:N_TRAIN], dtype=torch.float32), ds.y[:N_TRAIN] == 1, logits=True)
    return net


def _fit(net, X, y, *, logits: bool) -> None:
    torch = _torch()
    target = torch.tensor(np.asarray(y, dtype=np.float32))[:, None]
    loss = torch.nn.BCEWithLogitsLoss() if logits else torch.nn.BCELoss()
    opt = torch.optim.Adam(net.parameters(), lr=0.03)
    for _ in range(150):
        opt.zero_grad()
        loss(net(X), target).backward()
        opt.step()
    net.eval()


@cache
def torchscript_file() -> Path:
    path = folder() / "net.pt"
    _torch().jit.script(codes_net()).save(str(path))
    return path


@cache
def codes_pipeline():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    ds = coded_dataset()
    return make_pipeline(StandardScaler(), LogisticRegression()).fit(ds.X[:N_TRAIN].astype(np.float32),
                                                                      ds.y[:N_TRAIN])


@cache
def onnx_file(data: str) -> Path:
    """skl2onnx of a pipeline: on the codes (float inputs), or the raw-frame pipeline (string and float inputs)."""
    from skl2onnx import to_onnx  # type: ignore[import-untyped]

    if data == "codes":
        onx = to_onnx(codes_pipeline(), coded_dataset().X[:1].astype(np.float32),
                      target_opset={"": 17, "ai.onnx.ml": 3})
    else:
        train, _ = frames("pandas")
        sample = features(train)[:1].astype({"age": np.float32, "fare": np.float32})
        onx = to_onnx(raw_pipeline(), sample, target_opset={"": 17, "ai.onnx.ml": 3},
                      options={id(raw_pipeline().steps[-1][1]): {"zipmap": False}})
    path = folder() / f"model-{data}.onnx"
    path.write_bytes(onx.SerializeToString())
    return path


@cache
def native(kind: str):
    train, _ = frames("pandas")
    X = as_categoricals(features(train))
    if kind == "hgb":
        from sklearn.ensemble import HistGradientBoostingClassifier

        return HistGradientBoostingClassifier(categorical_features="from_dtype", max_iter=30,
                                              random_state=0).fit(X, train[LABEL])
    import lightgbm

    return lightgbm.LGBMClassifier(n_estimators=30, verbose=-1, random_state=0, n_jobs=1).fit(X, train[LABEL])


def codes_callable(X):
    """The user's own rule on the codes, labels 0/1."""
    return (codes_rule(X) > 0).astype(np.int64)


def frame_callable(frame):
    """The user's own function of a frame: the raw pipeline's decision as 0/1."""
    return (raw_pipeline().predict(frame[["sex", "port", "age", "fare"]]) == POS).astype(np.int64)


@cache
def model_file(model: str) -> Path:
    """The model as a file, for the CSV data kind (skops, joblib, ONNX)."""
    import joblib
    import skops.io as sio

    if model == "onnx":
        return onnx_file("csv")
    path = folder() / f"{model}.{'joblib' if model == 'lightgbm' else 'skops'}"
    obj = raw_pipeline() if model == "pipeline" else native(model)
    if model == "lightgbm":
        joblib.dump(obj, path)
    else:
        sio.dump(obj, path)
    return path


def cannot_be_typed(model: str, data: str, door: str) -> str | None:
    """Why a combination cannot be written at all (``pytest.skip``), or None."""
    if door == "cli" and data not in FILE_DATA:
        return "the CLI reads data files: only the CSV data kind reaches it"
    if door == "cli" and model in ("callable", "torch_codes", "torch_values"):
        return "a Python object (callable, torch module) cannot be given to the CLI"
    if model in ("torch_codes", "torchscript") and data != "codes":
        return "a net over the coded data's five integer columns cannot be fed another data kind's columns"
    if model == "torch_values" and data != "numeric" and data != "pandas":
        return "the raw-float net is fitted on the numeric frame's columns; its refusal of strings is the pandas cell"
    if data == "codes" and model in ("pipeline", "hgb", "lightgbm"):
        return "a model fitted on the raw frame's columns cannot be given the coded data's columns"
    if data == "numeric" and model != "torch_values":
        return "the numeric frame lacks the port column (and the text) the frame models were fitted on"
    if data == "codes" and model == "torch_values":
        return "a coded Dataset holds codes, not the raw floats this net was fitted on"
    return None


def user_model(model: str, data: str):
    """What the user passes as ``model``, and the extra keywords it needs."""
    if model == "pipeline":
        return (model_file("pipeline") if data in FILE_DATA else raw_pipeline()), {}
    if model in ("hgb", "lightgbm"):
        return (model_file(model) if data in FILE_DATA else native(model)), {}
    if model == "torch_values":
        return values_net(), {"model_input": "values", "model_output": "probability"}
    if model == "torch_codes":
        return codes_net(), {"model_output": "logit"}
    if model == "torchscript":
        return str(torchscript_file()), {"model_output": "logit"}
    if model == "onnx":
        return str(onnx_file("codes" if data == "codes" else "csv")), {}
    if data == "codes":
        return codes_callable, {}
    return frame_callable, {"model_input": "frame"}


# --------------------------------------------------------------------------------------------- the recount
def positive(model: str, data: str, X) -> np.ndarray:
    """The user's model's decision, True = positive class, on codes (coded data) or a pandas frame of features."""
    if data == "codes":
        X = np.asarray(X)
        if model in ("torch_codes", "torchscript"):
            torch = _torch()
            net = codes_net() if model == "torch_codes" else torch.jit.load(str(torchscript_file()))
            with torch.no_grad():
                return net(torch.tensor(X, dtype=torch.float32))[:, 0].numpy() > 0
        if model == "onnx":
            import onnxruntime

            sess = onnxruntime.InferenceSession(str(onnx_file("codes")), providers=["CPUExecutionProvider"])
            return sess.run(None, {sess.get_inputs()[0].name: X.astype(np.float32)})[0] == 1
        return codes_callable(X) == 1
    X = X.reset_index(drop=True)
    if model == "pipeline":
        return raw_pipeline().predict(X) == POS
    if model in ("hgb", "lightgbm"):
        return native(model).predict(as_categoricals(X)) == POS
    if model == "torch_values":
        torch = _torch()
        with torch.no_grad():
            return values_net()(torch.tensor(X.to_numpy(np.float64)))[:, 0].numpy() > 0.5
    if model == "onnx":
        import onnxruntime

        sess = onnxruntime.InferenceSession(str(onnx_file("csv")), providers=["CPUExecutionProvider"])
        feeds = {}
        for inp in sess.get_inputs():
            col = X[inp.name]
            feeds[inp.name] = (col.astype(object).where(col.notna(), "nan").astype(str).to_numpy()[:, None]
                               if inp.type == "tensor(string)" else col.to_numpy(np.float32)[:, None])
        return np.asarray(sess.run(None, feeds)[0]) == POS
    return frame_callable(X) == 1


def held_out(data: str) -> tuple[Any, np.ndarray]:
    """The held-out people as the recount reads them (codes, or a pandas frame of features) and their labels."""
    if data == "codes":
        ds = coded_dataset()
        return ds.X[TEST_ROWS], ds.y[TEST_ROWS] == 1
    _, test = frames(data)
    if data in FILE_DATA:  # as the user reads the file back
        test = pd.read_csv(csv_files(data)["test"])
    return features(test), (test[LABEL] == POS).to_numpy()


def counterparts(data: str, X):
    """Every counterpart of every held-out person: (each person's group under each grouping, [counterpart inputs]).

    The groupings are those a verdict reports: each protected attribute's values and, with two protected attributes
    (the coded data: sex and race), their combinations, named ``"sex=Female, race=A"``; in the order of the
    attributes' values (sex first, then race, then the combinations, sex major).
    """
    if data == "codes":
        out = []
        for s in (0, 1):
            for r in (0, 1, 2):
                C = X.copy()
                C[:, 0], C[:, 1] = s, r
                out.append(C)
        sex = [f"sex={CODE_LABELS['sex'][int(v)]}" for v in X[:, 0]]
        race = [f"race={CODE_LABELS['race'][int(v)]}" for v in X[:, 1]]
        order = ([f"sex={v}" for v in CODE_LABELS["sex"].values()] + [f"race={v}" for v in CODE_LABELS["race"].values()]
                 + [f"sex={a}, race={b}" for a in CODE_LABELS["sex"].values() for b in CODE_LABELS["race"].values()])
        return {"sex": sex, "race": race, "sex,race": [f"{a}, {b}" for a, b in zip(sex, race, strict=True)]}, out, order
    values = (0.0, 1.0) if data == "numeric" else SEXES
    names: dict[Any, str] = {0.0: "0", 1.0: "1"} if data == "numeric" else {s: s for s in SEXES}  # 0.0 reads "0"
    out = [X.assign(sex=pd.Series(v, index=X.index, dtype=X["sex"].dtype)) for v in values]
    return {"sex": [f"sex={names[v]}" for v in X["sex"]]}, out, [f"sex={names[v]}" for v in values]


def cp(k: int, n: int, confidence: float) -> tuple[float, float]:
    """Clopper-Pearson interval of k of n, from scipy.stats.beta."""
    from scipy.stats import beta

    a = 1 - confidence
    lower = 0.0 if k == 0 else float(beta.ppf(a / 2, k, n - k + 1))
    upper = 1.0 if k == n else float(beta.ppf(1 - a / 2, k + 1, n - k))
    return lower, upper


# The worst-group rule, written here from its words (docs/architecture.md): a group is too small to tell with fewer
# than 30 people or a 95% Clopper-Pearson interval of its share harmed wider than +-10 points; the worst group is,
# of the others, the largest share harmed (ties: the larger group, then the first), None when none is harmed.
MIN_GROUP = 30
MAX_HALF_WIDTH = 0.10


@dataclass
class Recount:
    """The answer, counted by hand through the user's model."""

    n: int
    n_affected: int
    n_harmed: int
    affected: np.ndarray
    groups: dict[str, tuple[int, int, int]]   # group -> (n, n_affected, n_harmed), in the verdict's order
    intervals: dict[str, tuple[float, float]]  # group -> 95% Clopper-Pearson of n_harmed of n
    too_small: list[str]
    f1: float
    worst: str | None
    worst_interval: tuple[float | None, float | None]
    share_interval: tuple[float, float]


def recount(model: str, data: str, predict=None) -> Recount:
    """Flip every protected value of every held-out person, through the user's model (or ``predict``); count."""
    return _recount(model, data, predict) if predict is not None else _own_recount(model, data)


@cache
def _own_recount(model: str, data: str) -> Recount:
    return _recount(model, data, lambda X: positive(model, data, X))


def _recount(model: str, data: str, predict) -> Recount:
    from sklearn.metrics import f1_score

    X, y = held_out(data)
    own = predict(X)
    membership, others, order = counterparts(data, X)
    labels = np.column_stack([predict(C) for C in others])
    affected = (labels != own[:, None]).any(axis=1)
    harmed = ~own & labels.any(axis=1)           # favourable = the positive class
    groups = {}
    for g in order:
        m = np.zeros(len(own), dtype=bool)
        for names in membership.values():
            m |= np.asarray(names) == g
        groups[g] = (int(m.sum()), int(affected[m].sum()), int(harmed[m].sum()))
    intervals = {g: cp(h, n, CONFIDENCE) for g, (n, _, h) in groups.items() if n}
    too_small = [g for g, (n, _, _) in groups.items()
                 if n and (n < MIN_GROUP or (intervals[g][1] - intervals[g][0]) / 2 > MAX_HALF_WIDTH)]
    candidates = [g for g, (n, _, h) in groups.items() if n and h and g not in too_small]
    worst = max(candidates, key=lambda g: (groups[g][2] / groups[g][0], groups[g][0]), default=None)  # ties: first
    f1 = float(f1_score(np.where(y, POS, NEG), np.where(own, POS, NEG), pos_label=POS))
    return Recount(n=len(own), n_affected=int(affected.sum()), n_harmed=int(harmed.sum()), affected=affected,
                   groups=groups, intervals=intervals, too_small=too_small, f1=f1, worst=worst,
                   worst_interval=intervals[worst] if worst else (None, None),
                   share_interval=cp(int(affected.sum()), len(own), CONFIDENCE))


# --------------------------------------------------------------------------------------------- counting wrappers
class CountingEstimator:
    """The user's estimator, counting the rows each call receives (it passes as the estimator it wraps).

    Every method that reads rows (predict, predict_proba, predict_log_proba, decision_function) counts them, once
    per call: the same rows sent to predict and to predict_proba count twice.
    """

    READS_ROWS = ("predict", "predict_proba", "predict_log_proba", "decision_function")

    def __init__(self, est):
        self._est = est
        self.rows = 0

    def __getattr__(self, name):
        method = getattr(self._est, name)
        if name not in self.READS_ROWS:
            return method

        def counted(X, *args, **kwargs):
            self.rows += len(X)
            return method(X, *args, **kwargs)

        return counted


class CountingCallable:
    def __init__(self, fn):
        self._fn = fn
        self.rows = 0

    def __call__(self, X):
        self.rows += len(X)
        return self._fn(X)


def counting(obj):
    """A counting wrapper around the user's model object (estimator, callable, torch module); None for a file."""
    if hasattr(obj, "parameters"):
        import torch

        class CountingNet(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner
                self.rows = 0

            def forward(self, x):
                self.rows += len(x)
                return self.inner(x)

        return CountingNet(obj)
    if callable(obj) and not hasattr(obj, "predict") and not hasattr(obj, "parameters"):
        return CountingCallable(obj)
    if hasattr(obj, "predict"):
        return CountingEstimator(obj)
    return None


# --------------------------------------------------------------------------------------------- the doors
@dataclass
class Cell:
    """One door's figures beside the recount's."""

    model: str
    data: str
    door: str
    figures: list[tuple[str, Any, Any]] = field(default_factory=list)   # (figure, tool, recount)
    rows: tuple[int, int] | None = None                                  # (received, budget + stated outside)
    refusal: str | None = None                                           # the words of a refusal by design
    detail: dict[str, Any] = field(default_factory=dict)                 # what the output states (budget cells)
    seconds: float = 0.0

    def add(self, name: str, tool, expected) -> None:
        self.figures.append((name, _plain(tool), _plain(expected)))

    def unequal(self, prefix: str = "") -> list[tuple[str, Any, Any]]:
        return [(n, t, r) for n, t, r in self.figures if n.startswith(prefix) and not same(t, r)]


def _plain(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    return v


def same(a, b) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def _verdict_figures(cell: Cell, v, rc: Recount, where: str) -> None:
    cell.add(f"{where} n individuals", v.n_individuals, rc.n)
    cell.add(f"{where} n affected", v.n_affected, rc.n_affected)
    cell.add(f"{where} share affected", v.share, rc.n_affected / rc.n)
    cell.add(f"{where} n harmed", v.n_harmed, rc.n_harmed)
    tool = [(g["group"], (g["n"], g["n_affected"], g["n_harmed"])) for g in v.groups]
    cell.add(f"{where} groups (n, affected, harmed), in order", tool, list(rc.groups.items()))
    cell.add(f"{where} groups too small to tell", list(v.too_small), rc.too_small)
    cell.add(f"worst group ({where})", v.worst_group, rc.worst)
    cell.add(f"worst group interval ({where} groups)", [v.group(rc.worst)["people_harmed_lower"],
                                                        v.group(rc.worst)["people_harmed_upper"]]
             if rc.worst else None, list(rc.worst_interval) if rc.worst else None)


def _pct(interval) -> list[str | None]:
    """An interval as percentages to 2 places, as the doors print it (None where there is none)."""
    return [None if x is None else f"{100 * x:.2f}" for x in interval]


def _summary_worst(cell: Cell, text: str, rc: Recount, where: str) -> None:
    """The most harmed group and its interval as a door's text gives them."""
    m = re.search(r"most harmed group: (\S+) \(([\d.]+)% .*?\[([\d.]+)%, ([\d.]+)%\]", text)
    md = re.search(r"Most harmed group: \*\*(\S+)\*\*: ([^\n]*)", text)
    if md is not None:  # report.md
        interval = re.search(r"\[([\d.]+)%, ([\d.]+)%\]", md.group(2))
        found = (md.group(1), *(interval.groups() if interval else (None, None)))
    elif m is None:  # the table of estimate's summary: the group with the largest share harmed
        rows = re.findall(r"^\s+(\S+=\S+)\s+\d+\s+([\d.]+)% \(\d+\).*\[([\d.]+)%, ([\d.]+)%\]\s*$", text, re.M)
        best = max(rows, key=lambda r: float(r[1]), default=None)
        found = (best[0], best[2], best[3]) if best else (None, None, None)
    else:
        found = (m.group(1), m.group(3), m.group(4))
    cell.add(f"worst group ({where})", found[0], rc.worst)
    cell.add(f"worst group interval ({where}, % to 2 places)", [found[1], found[2]], _pct(rc.worst_interval))


def _kwargs(model: str, data: str) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    obj, mkw = user_model(model, data)
    d = user_data(data)
    kw = {**d["kw"], **mkw, "test": d["test"]}
    if data in FILE_DATA:
        kw["trust_model_file"] = True
    return obj, d, kw


def run_cell(model: str, data: str, door: str) -> Cell:
    """Run one door on one model kind and data kind, and recount its figures."""
    import time

    t0 = time.perf_counter()
    from threadpoolctl import threadpool_limits

    cell = Cell(model, data, door)
    refused = expected_refusal(model, data, door)
    try:
        with threadpool_limits(1):  # a shared machine: OpenMP threads spinning on busy cores are slow
            _run(cell, model, data, door)
    except Exception as err:  # a refusal by design is a figure too: its words
        if refused is None:
            raise
        cell.refusal = f"{type(err).__name__}: {err}"
        cell.add("refusal names the fix", bool(re.search(refused, str(err))), True)
    cell.seconds = time.perf_counter() - t0
    return cell


def expected_refusal(model: str, data: str, door: str) -> str | None:
    """The words a refusal by design must hold (a regular expression), or None where the door must answer."""
    if model == "torch_values" and data == "pandas":  # the input is refused first, at every door
        return r"model_input='values'.*\['sex', 'port'\] are not"
    if door == "certify" and model == "torch_values":  # a net on the values, whose bins are not its inputs
        return r"fed the data's values \(model_input='values'\).*network trained on the codes \(model_input='codes'\)"
    if door == "certify" and model in ("hgb", "lightgbm"):  # tree ensembles fed your rows are certified on them
        return None
    if door == "certify" and model not in ("torch_codes", "torchscript"):
        return (r"certification reads networks over the integer codes|is not a ReLU network|"
                r"no probability or logit tensor output to bound")
    if door == "retrain" and model in ("onnx", "callable"):
        return r"cannot train model .* again: it is (an ONNX graph|neither a zoo model nor an sklearn estimator)"
    if door == "retrain" and model in ("torch_codes", "torchscript", "torch_values"):
        return r"cannot train model .* again: .*trainer="
    return None


def _run(cell: Cell, model: str, data: str, door: str) -> None:
    import chiralfair

    obj, d, kw = _kwargs(model, data)
    if expected_refusal(model, data, door) is not None:  # the door must refuse before any figure
        _refused_door(model, data, door, obj, d, kw)
        raise AssertionError(f"{door} answered where it must refuse")
    rc = recount(model, data)
    if door == "estimate":
        v = chiralfair.estimate(obj, d["data"], **kw)
        _verdict_figures(cell, v, rc, "verdict")
        cell.add("F1", v.meta.get("model_f1"), rc.f1)
        _summary_worst(cell, v.summary(), rc, "estimate summary")
    elif door == "audit":
        r, _ = audited(model, data)
        _verdict_figures(cell, r.verdict, rc, "verdict")
        cell.add("F1", r.to_dict()["model"]["f1"], rc.f1)
        rows = r.held_out_rows()
        cell.add("per person: is_idi of each held-out row", rows["is_idi"].to_numpy(bool).tolist(),
                 rc.affected.tolist())
        _summary_worst(cell, r.summary(), rc, "audit summary")
        pairs = r.result
        if pairs.n_idis:
            dec = r.dataset.to_frame(pairs.idis) if data != "codes" else pairs.idis
            dec_c = r.dataset.to_frame(pairs.counterparts) if data != "codes" else pairs.counterparts
            if data != "codes":
                dec, dec_c = _as_user_frame(dec), _as_user_frame(dec_c)
            cell.add("every IDI pair re-checked through the user's model",
                     bool((positive(model, data, dec) != positive(model, data, dec_c)).all()), True)
    elif door == "check":
        from chiralfair.pipeline.gate import check_fairness

        dec = check_fairness(obj, d["data"], max_share=MAX_SHARE, **kw)
        cell.add("n individuals", dec.n_individuals, rc.n)
        cell.add("n affected", dec.n_affected, rc.n_affected)
        cell.add("share affected", dec.share, rc.n_affected / rc.n)
        cell.add("F1", dec.verdict.meta.get("model_f1"), rc.f1)
        cell.add("interval (superpopulation, Clopper-Pearson)", [dec.lower, dec.upper], list(rc.share_interval))
        outcome = "fail" if rc.share_interval[0] > MAX_SHARE else ("pass" if rc.share_interval[1] <= MAX_SHARE
                                                                  else "undecided")
        cell.add("outcome", dec.outcome, outcome)
        g = dec.worst_group or {}
        cell.add("worst group (gate)", g.get("group"), rc.worst)
        cell.add("worst group n harmed of n (gate)", [g.get("n_harmed"), g.get("n")],
                 [rc.groups[rc.worst][2], rc.groups[rc.worst][0]] if rc.worst else [None, None])
        cell.add("worst group interval (gate)", [g.get("share_harmed_lower"), g.get("share_harmed_upper")],
                 list(rc.worst_interval))
    elif door == "certify":
        res = chiralfair.certify(obj, d["data"], max_seconds=20, **kw)
        ind = res.individuals
        order = np.argsort(ind.rows)
        cell.add("per person: certified status (0 unaffected, 1 affected)", ind.status[order].astype(int).tolist(),
                 rc.affected.astype(int).tolist())
    elif door in ("card", "report"):
        r, out = audited(model, data)
        if door == "report":
            r.write(out)
        if door == "report":
            saved = json.loads((out / "result.json").read_text())["verdict"]
            cell.add("result.json n affected", saved["n_affected"], rc.n_affected)
            cell.add("result.json n individuals", saved["n_individuals"], rc.n)
            cell.add("result.json F1", json.loads((out / "result.json").read_text())["model"]["f1"], rc.f1)
            md = (out / "report.md").read_text()
            share = re.search(r"affected: ([\d.]+)%", md)
            cell.add("report.md share affected", share.group(1) if share else None, f"{100 * rc.n_affected / rc.n:.2f}")
            _summary_worst(cell, md, rc, "report.md")
        else:
            from chiralfair.reporting.model_card import cyclonedx_model_card

            card = cyclonedx_model_card(r)
            metrics = {m["type"]: m for m in card["quantitativeAnalysis"]["performanceMetrics"]}
            share = next(m for k, m in metrics.items() if k.startswith("share affected ("))
            cell.add("card share affected", share["value"], f"{rc.n_affected / rc.n:.6g}")
            cell.add("card F1", metrics["F1"]["value"], f"{rc.f1:.6g}")
            assessments = card.get("considerations", {}).get("fairnessAssessments")
            first = (assessments or [{"groupAtRisk": None, "harms": ""}])[0]
            n, _, harmed = rc.groups[rc.worst] if rc.worst else (0, 0, 0)
            cell.add("worst group (card)", first["groupAtRisk"], rc.worst)
            counts = re.search(r"\(([\d,]+) of ([\d,]+)[;)]", first["harms"])
            cell.add("worst group n harmed of n (card)", counts.groups() if counts else None, [f"{harmed:,}", f"{n:,}"])
            got = re.search(r"\[([\d.]+)%, ([\d.]+)%\]", first["harms"])
            cell.add("worst group interval (card, % to 2 places)", list(got.groups()) if got else None,
                     _pct(rc.worst_interval))
    elif door == "retrain":
        out = folder() / f"retrain-{model}-{data}"
        res = chiralfair.retrain(obj, d["data"], seeds="random", max_global=10, max_local=5,
                                 method="counterfactual", out=out, **kw)
        before, after = res.rows[0], res.rows[1]
        cell.add("before: F1", before["f1"], rc.f1)
        cell.add("before: held-out IDI rate", before["test_idi_rate"], rc.n_affected / rc.n)
        saved = sorted(out.glob("model-counterfactual.*"))
        cell.add("saved model file", [p.suffix for p in saved][:1], [_suffix(model, data)])
        reloaded = _reload(saved[0], model)
        rc2 = recount(model, data, predict=lambda X: _reloaded_positive(reloaded, model, data, X))
        cell.add("after: F1 (the saved model, reloaded)", after["f1"], rc2.f1)
        cell.add("after: held-out IDI rate (the saved model, reloaded)", after["test_idi_rate"],
                 rc2.n_affected / rc2.n)
    elif door == "cli":
        _cli(cell, model, data, rc)


@cache
def audited(model: str, data: str):
    """One audit per model kind and data kind: the audit, card and report doors read it (the report writes ``out``)."""
    import chiralfair

    obj, d, kw = _kwargs(model, data)
    out = folder() / f"run-{model}-{data}"
    return chiralfair.audit(obj, d["data"], seeds="random", max_global=10, max_local=5, **kw), out


def run_budget(model: str, data: str, door: str) -> Cell:
    """The door run on the user's model inside a counting wrapper, with a budget: rows received against it."""
    import time

    from threadpoolctl import threadpool_limits

    import chiralfair

    t0 = time.perf_counter()
    cell = Cell(model, data, door)
    obj, d, kw = _kwargs(model, data)
    wrapped = counting(obj)
    if wrapped is None:
        return cell
    with threadpool_limits(1):
        if door == "estimate":
            v = chiralfair.estimate(wrapped, d["data"], max_queries=BUDGET, **kw)
            _verdict_rows(cell, v, wrapped.rows)
        elif door == "audit":
            r = chiralfair.audit(wrapped, d["data"], seeds="random", max_global=20, max_local=20,
                                 max_queries=BUDGET, verdict_params={"max_queries": BUDGET}, **kw).to_dict()
            q = r["queries"]
            cell.add("result.json queries: max_queries", q["max_queries"], BUDGET)
            cell.add("the search's queries within max_queries", q["n_queries"] <= BUDGET, True)
            cell.add("the verdict's queries within its max_queries", r["verdict"]["n_queries"] <= BUDGET, True)
            cell.add("the verdict's rows outside the search's budget = its own query count",
                     q["outside_budget"].get("verdict"), r["verdict"]["n_queries"])
            cell.rows = (wrapped.rows, q["n_queries"] + sum(q["outside_budget"].values()))
            cell.detail = {"queries": q, "query_budget": r["query_budget"], "generator": r.get("generator")}
        else:
            from chiralfair.pipeline.gate import check_fairness

            dec = check_fairness(wrapped, d["data"], max_share=MAX_SHARE, max_queries=BUDGET, **kw)
            cell.add("the gate's queries = its verdict's", dec.n_queries, dec.verdict.n_queries)
            _verdict_rows(cell, dec.verdict, wrapped.rows)
    cell.seconds = time.perf_counter() - t0
    return cell


def _verdict_rows(cell: Cell, v, received: int) -> None:
    """A verdict's queries within max_queries, and the rows the model received against those it states."""
    q = v.meta.get("queries") or {}
    cell.add("the verdict's queries within max_queries", v.n_queries <= BUDGET, True)
    cell.add("meta queries: n_queries, max_queries", [q.get("n_queries"), q.get("max_queries")],
             [v.n_queries, BUDGET])
    cell.rows = (received, v.n_queries + sum((q.get("outside_budget") or {}).values()))
    cell.detail = {"queries": q}


def _refused_door(model: str, data: str, door: str, obj, d, kw) -> None:
    import chiralfair

    if door == "certify":
        chiralfair.certify(obj, d["data"], max_seconds=5, **kw)
    elif door == "retrain":
        chiralfair.retrain(obj, d["data"], seeds="random", max_global=10, max_local=5, method="counterfactual",
                           out=folder() / f"retrain-{model}-{data}", **kw)
    elif door == "check":
        from chiralfair.pipeline.gate import check_fairness

        check_fairness(obj, d["data"], max_share=MAX_SHARE, **kw)
    elif door == "estimate":
        chiralfair.estimate(obj, d["data"], **kw)
    else:
        chiralfair.audit(obj, d["data"], seeds="random", max_global=10, max_local=5, **kw)


def _as_user_frame(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.to_pandas() if hasattr(frame, "to_pandas") else frame
    return frame[[c for c in frame.columns if c != LABEL]]


def _suffix(model: str, data: str) -> str:
    return {"torch_codes": ".pt", "torch_values": ".pt", "lightgbm": ".joblib" if data in FILE_DATA else ".skops"}.get(
        model, ".skops")


def _reload(path: Path, model: str):
    if path.suffix == ".pt":
        return _torch().jit.load(str(path))
    if path.suffix == ".skops":
        import skops.io as sio

        return sio.load(path, trusted=sio.get_untrusted_types(file=path))
    import joblib

    return joblib.load(path)


def _reloaded_positive(obj, model: str, data: str, X) -> np.ndarray:
    if hasattr(obj, "predict"):
        if data == "codes":
            return np.asarray(obj.predict(np.asarray(X))) == 1
        got = obj.predict(as_categoricals(X) if model in ("hgb", "lightgbm") else X)
        return np.asarray(got) == POS
    torch = _torch()
    with torch.no_grad():
        t = torch.tensor(np.asarray(X, dtype=np.float64) if data != "codes" else np.asarray(X, dtype=np.float32))
        out = obj(t)[:, 0].numpy()
    return out > (0 if model == "torch_codes" else 0.5)


def _cli(cell: Cell, model: str, data: str, rc: Recount) -> None:
    from typer.testing import CliRunner

    from chiralfair.cli import app

    f = csv_files(data)
    common = ["--data", str(f["train"]), "--test", str(f["test"]), "--schema", str(f["schema"]), "--model",
              str(model_file(model)), "--trust-model-file"]
    runner = CliRunner()
    est = runner.invoke(app, ["estimate", *common, "--json"])
    if est.exit_code != 0:
        raise RuntimeError(f"chiralfair estimate exited {est.exit_code}: {est.output[-2000:]}")
    v = json.loads(est.stdout)
    v = v.get("verdict", v)
    cell.add("estimate --json n affected", v["n_affected"], rc.n_affected)
    cell.add("estimate --json n individuals", v["n_individuals"], rc.n)
    gate = runner.invoke(app, ["check", *common, "--max-share", str(MAX_SHARE), "--json"])
    outcome = "fail" if rc.share_interval[0] > MAX_SHARE else ("pass" if rc.share_interval[1] <= MAX_SHARE
                                                               else "undecided")
    cell.add("check exit code", gate.exit_code, {"pass": 0, "fail": 1, "undecided": 2}[outcome])
    try:
        worst = json.loads(gate.stdout).get("worst_group") or {}
    except json.JSONDecodeError:
        worst = {}
    cell.add("worst group (check --json)", worst.get("group"), rc.worst)
    cell.add("worst group interval (check --json)", [worst.get("share_harmed_lower"),
                                                     worst.get("share_harmed_upper")], list(rc.worst_interval))
    out = folder() / f"cli-run-{model}-{data}"
    run = runner.invoke(app, ["run", *common, "--seeds", "random", "--max-global", "10", "--max-local", "5",
                              "--out", str(out), "--json"])
    if run.exit_code != 0:
        raise RuntimeError(f"chiralfair run exited {run.exit_code}: {run.output[-2000:]}")
    s = json.loads(run.stdout)
    cell.add("run --json n affected", s["verdict"]["n_affected"], rc.n_affected)
    cell.add("run --json F1", s["model"]["f1"], rc.f1)
    fairer = folder() / f"cli-retrain-{model}-{data}"
    rt = runner.invoke(app, ["retrain", "--from-run", str(out), "--method", "counterfactual", "--trust-model-file",
                             "--out", str(fairer), "--json"])
    if model == "onnx":  # refused by design: an ONNX graph holds no training recipe
        cell.add("retrain --from-run refuses, naming why", (rt.exit_code != 0, bool(re.search(
            r"cannot train model .* again: it is an ONNX graph", " ".join(rt.output.split())))), (True, True))
        return
    cell.add("retrain --from-run exit code", rt.exit_code, 0)
    if rt.exit_code != 0:
        return
    after = json.loads((fairer / "retrain.json").read_text())["rows"][1]
    reloaded = _reload(sorted(fairer.glob("model-counterfactual.*"))[0], model)
    rc2 = recount(model, data, predict=lambda X: _reloaded_positive(reloaded, model, data, X))
    cell.add("retrain --from-run after: F1 (the saved model, reloaded)", after["f1"], rc2.f1)
    cell.add("retrain --from-run after: held-out IDI rate (the saved model, reloaded)", after["test_idi_rate"],
             rc2.n_affected / rc2.n)
