"""Certification: sound bounds, exact answers on small nets (enumeration and an exact MILP), and its front doors."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from milp_oracle import box_has_idi
from toys import coupled_toy_domain, toy_domain

import chiralfair
from chiralfair.certification import (
    BranchAndBound,
    CertifyResult,
    IndividualCertificates,
    KeySpace,
    certify_domain,
    certify_individuals,
    crown_bounds,
    interval_bounds,
    relu_network,
    symbolic_bounds,
)
from chiralfair.datasets.base import Dataset
from chiralfair.domain import Domain, Feature
from chiralfair.exceptions import ConfigError, ModelCapabilityError
from chiralfair.models import as_model
from chiralfair.oracle import DiscriminationCheck

DOMAINS = {"sex": lambda: toy_domain(), "sex+race": lambda: toy_domain(("sex", "race")),
           "coupled+constraints": coupled_toy_domain}


def relu_sequential(domain, seed=0, widths=(8, 6), head="sigmoid"):
    """A random Linear/ReLU net whose decision boundary crosses the domain (last bias: minus the median logit)."""
    g = torch.Generator().manual_seed(seed)
    layers, width = [], domain.n_features
    for w in widths:
        layer = torch.nn.Linear(width, w)
        torch.nn.init.normal_(layer.weight, std=1 / np.sqrt(width), generator=g)
        torch.nn.init.normal_(layer.bias, std=0.5, generator=g)
        layers += [layer, torch.nn.ReLU()]
        width = w
    out = torch.nn.Linear(width, 2 if head == "softmax" else 1)
    torch.nn.init.normal_(out.weight, std=1 / np.sqrt(width), generator=g)
    net = torch.nn.Sequential(*layers, out)
    X = torch.as_tensor(domain.sample(2000, np.random.default_rng(seed)), dtype=torch.float32)
    with torch.no_grad():
        logit = net(X)
        out.bias -= logit.median(dim=0).values
    if head == "sigmoid":
        net.append(torch.nn.Sigmoid())
    elif head == "softmax":
        net.append(torch.nn.Softmax(dim=1))
    return net.eval()


def all_keys(space):
    grids = [np.arange(space.lower[i], space.upper[i] + 1) for i in range(space.n_columns)]
    return np.stack(np.meshgrid(*grids, indexing="ij"), -1).reshape(-1, space.n_columns)


def truth(model, domain, space, keys):
    """Per key: in the domain (some input can exist), and an IDI (checked on one possible input)."""
    possibility = space.possibility(keys, keys)
    ok = np.ones((len(keys), space.n_combinations), bool) if possibility is None else possibility == 0
    inside = ok.any(axis=1)
    idi = np.zeros(len(keys), bool)
    X = space.points(keys[inside], ok[inside].argmax(axis=1))
    idi[inside] = DiscriminationCheck(model, domain).check(X).is_idi
    return inside, idi


def inside_box(keys, lo, hi):
    return ((keys >= lo) & (keys <= hi)).all(axis=1)


def ambiguous(network, space, keys):
    """Keys with a logit within the margin of 0 at some combination: the model's float32 label there can depend on
    the batch it is computed in (rows in other positions of a batch round differently), so two checks may differ."""
    from chiralfair.certification.decision import DECISION_MARGIN

    X, _ = space.input_boxes(keys, keys)
    return (np.abs(network.logit(X.reshape(-1, X.shape[-1]))) < DECISION_MARGIN).reshape(len(keys), -1).any(axis=1)


# ------------------------------------------------------------------ exactness and soundness
@pytest.mark.parametrize("kind, seed", [("sex+race", 0), ("coupled+constraints", 0),
                                        pytest.param("sex", 0, marks=pytest.mark.slow),
                                        pytest.param("sex", 1, marks=pytest.mark.slow),
                                        pytest.param("sex+race", 1, marks=pytest.mark.slow),
                                        pytest.param("coupled+constraints", 1, marks=pytest.mark.slow)])
def test_a_complete_run_is_exact_and_every_decided_box_is_true(kind, seed):
    domain = DOMAINS[kind]()
    model = as_model(relu_sequential(domain, seed))
    network, space = relu_network(model, domain), KeySpace(domain)
    lo, hi, outside = space.domain_boxes()
    tally = BranchAndBound(max_seconds=None).run(network, space, DiscriminationCheck(model, domain), lo, hi,
                                                 keep_boxes=True)
    keys = all_keys(space)
    inside, idi = truth(model, domain, space, keys)
    unsure = ambiguous(network, space, keys) & inside
    assert tally.stats["stopped"] == "complete"
    assert outside == (~inside).sum() and unsure.sum() <= 2
    assert abs(tally.certified.sum() - (inside & ~idi).sum()) <= unsure.sum()
    assert tally.certified.sum() + tally.falsified.sum() == inside.sum() and idi.sum() > 0
    for b_lo, b_hi, verdict in tally.boxes:
        for box_lo, box_hi, v in zip(b_lo, b_hi, verdict, strict=True):
            held = inside_box(keys, box_lo, box_hi) & inside & ~unsure
            assert (idi[held] == (v == 1)).all(), (box_lo, box_hi, v)
            point = (box_lo == box_hi).all()  # one key: the model's own check decided it
            assert v == 1 or point or not (inside_box(keys, box_lo, box_hi) & unsure).any()  # bounds keep the margin


def wide_domain(constraint=False):
    feats = (Feature("sex", 0, 1, "categorical", {0: "F", 1: "M"}), Feature("a", 0, 63), Feature("b", 0, 63),
             Feature("c", 0, 31))
    domain = Domain(feats).with_protected(["sex"])
    return domain.with_constraints("a >= c") if constraint else domain


@pytest.mark.parametrize("constraint", [True, pytest.param(False, marks=pytest.mark.slow)])
def test_certified_boxes_hold_no_idi_by_an_exact_milp(constraint):
    domain = wide_domain(constraint)
    model = as_model(relu_sequential(domain, seed=3, widths=(6, 5)))
    network, space = relu_network(model, domain), KeySpace(domain)
    lo, hi, _ = space.domain_boxes()
    tally = BranchAndBound(max_seconds=None, max_boxes=400).run(network, space, DiscriminationCheck(model, domain),
                                                                lo, hi, keep_boxes=True)
    certified = [(a, b) for b_lo, b_hi, v in tally.boxes for a, b, x in zip(b_lo, b_hi, v, strict=True) if x == 0]
    assert tally.certified.sum() > 0 and len(certified) >= 5
    largest = sorted(certified, key=lambda box: -space.volume(box[0][None], box[1][None])[0])[:6]
    assert not any(box_has_idi(network, space, a, b) for a, b in largest)
    # the oracle itself finds IDIs where they are: the first concrete IDI's own one-key box
    X = np.concatenate(tally.idis)
    key = space.keys_of(X[:1])[0]
    assert box_has_idi(network, space, key, key)


def test_every_reported_idi_is_one_and_falsified_boxes_hold_only_idis():
    domain = toy_domain(("sex", "race"))
    model = as_model(relu_sequential(domain, seed=1))
    result = certify_domain(model, Dataset("toy", domain.sample(50, np.random.default_rng(0)), np.zeros(50, int),
                                           domain), max_seconds=None)
    check = DiscriminationCheck(model, domain).check(result.idis)
    assert result.n_idis > 0 and check.is_idi.all()
    assert (model.predict(result.idis) == result.idi_labels).all()
    assert (model.predict(result.counterparts) == result.counterpart_labels).all()
    assert (result.idi_labels != result.counterpart_labels).all()
    assert len(np.unique(domain.keys(result.idis))) == result.n_idis  # one per key: the usual counting rule
    # complete: every IDI key is in the falsified volume (bounds prove boxes of them without meeting each one)
    assert result.stopped == "complete" and 0 < result.n_idis <= result.falsified_volume


# ------------------------------------------------------------------ properties of the bounds
@st.composite
def nets_and_boxes(draw):
    seed = draw(st.integers(0, 10_000))
    widths = draw(st.lists(st.integers(1, 7), min_size=1, max_size=3))
    rng = np.random.default_rng(seed)
    d = draw(st.integers(1, 4))
    sizes = (d, *widths, 1)
    weights = [torch.as_tensor(rng.normal(size=(b, a)) * draw(st.floats(0.1, 3.0))) for a, b in
               zip(sizes[:-1], sizes[1:], strict=True)]
    biases = [torch.as_tensor(rng.normal(size=b)) for b in sizes[1:]]
    lo = rng.normal(size=(3, d)) * 2
    hi = lo + rng.uniform(0, draw(st.floats(0.0, 4.0)), size=(3, d))
    return weights, biases, torch.as_tensor(lo), torch.as_tensor(hi), seed


def forward(weights, biases, x):
    for i, (w, b) in enumerate(zip(weights, biases, strict=True)):
        x = x @ w.T + b
        if i < len(weights) - 1:
            x = x.clamp(min=0)
    return x[..., 0]


@settings(max_examples=15)
@given(nets_and_boxes())
def test_the_bounds_contain_every_sampled_value(case):
    weights, biases, lo, hi, seed = case
    gen = torch.Generator().manual_seed(seed)
    x = lo[:, None, :] + torch.rand((lo.shape[0], 200, lo.shape[1]), generator=gen, dtype=torch.float64) * (
        hi - lo)[:, None, :]
    x = torch.cat([x, lo[:, None, :], hi[:, None, :]], dim=1)  # and the corners
    value = forward(weights, biases, x)
    tol = 1e-9
    ibp = interval_bounds(weights, biases, lo, hi)[-1]
    sym = symbolic_bounds(weights, biases, lo, hi)[-1]
    for lower, upper in (ibp, sym):
        assert (lower[:, 0, None] <= value + tol).all() and (value <= upper[:, 0, None] + tol).all()
    centre = (lo + hi) / 2
    for intermediate in ("crown", "symbolic", "ibp"):
        b = crown_bounds(weights, biases, lo, hi, intermediate=intermediate)
        assert (b.lower[:, None] <= value + tol).all() and (value <= b.upper[:, None] + tol).all()
        delta = x - centre[:, None, :]
        low_line = b.lower_const[:, None] + (delta * b.lower_coef[:, None, :]).sum(-1)
        up_line = b.upper_const[:, None] + (delta * b.upper_coef[:, None, :]).sum(-1)
        assert (low_line <= value + tol).all() and (value <= up_line + tol).all()
        assert (b.lower[:, None] <= low_line + tol).all() and (up_line <= b.upper[:, None] + tol).all()


@settings(max_examples=10)
@given(st.integers(0, 1000))
def test_a_point_box_is_bounded_exactly(seed):
    rng = np.random.default_rng(seed)
    weights = [torch.as_tensor(rng.normal(size=s)) for s in ((5, 3), (4, 5), (1, 4))]
    biases = [torch.as_tensor(rng.normal(size=s[0])) for s in ((5, 3), (4, 5), (1, 4))]
    x = torch.as_tensor(rng.integers(-3, 4, size=(4, 3)).astype(float))
    b = crown_bounds(weights, biases, x, x)
    assert torch.allclose(b.lower, forward(weights, biases, x)) and torch.allclose(b.upper, b.lower)


# ------------------------------------------------------------------ the key space
def test_key_space_volumes_follow_couplings_and_constraints():
    domain = coupled_toy_domain()
    space = KeySpace(domain)
    keys = all_keys(space)
    lo, hi, outside = space.domain_boxes()
    members = domain.counterparts(space.points(keys, np.zeros(len(keys), int)))
    inside_by_check = domain.satisfies(members.reshape(-1, domain.n_features)).reshape(len(keys), -1).any(axis=1)
    assert space.volume(lo, hi).sum() == inside_by_check.sum() and outside == (~inside_by_check).sum()
    X = space.points(keys, np.zeros(len(keys), int))
    assert (space.keys_of(X) == keys).all()
    assert (space.keys_of(domain.counterparts(X).reshape(-1, domain.n_features)) == np.repeat(keys, 2, 0)).all()


# ------------------------------------------------------------------ budgets, anytime, determinism
def toy_case(seed=0, kind="sex+race"):
    domain = DOMAINS[kind]()
    model = as_model(relu_sequential(domain, seed))
    data = Dataset("toy", domain.sample(300, np.random.default_rng(seed)), np.zeros(300, int), domain)
    return model, data


def test_an_interrupted_run_reports_what_it_proved():
    model, data = toy_case()
    calls = []

    def interrupt(progress):
        calls.append(progress)
        if len(calls) == 6:
            raise KeyboardInterrupt

    result = certify_domain(model, data, max_seconds=None, batch_size=60, on_progress=interrupt)
    assert result.stopped == "interrupted" and result.certified_volume == calls[-1]["certified"] > 0
    open_volume = result.stats["open_volume"]
    assert result.certified_volume + result.falsified_volume + open_volume == result.domain_volume
    assert result.undecided_volume == open_volume > 0


def test_budgets_stop_the_run_and_the_same_budget_gives_the_same_result():
    model, data = toy_case()
    nothing = certify_domain(model, data, max_seconds=0)
    assert nothing.stopped == "time" and nothing.certified_volume == 0 and nothing.undecided_share == 1
    a, b = (certify_domain(model, data, max_seconds=None, max_boxes=30) for _ in range(2))
    assert a.stopped == "boxes" and 0 < a.certified_share < 1
    strip = ("seconds",)
    assert {k: v for k, v in a.summary().items() if k not in (*strip, "stats")} == {
        k: v for k, v in b.summary().items() if k not in (*strip, "stats")}
    assert (a.idis == b.idis).all()
    deep = certify_domain(model, data, max_seconds=None, max_depth=2)
    assert deep.stopped == "complete" and deep.stats["n_depth_limited"] > 0 and deep.undecided_volume > 0


@pytest.fixture(scope="module")
def small_case():
    model, data = toy_case(kind="sex+race", seed=2)
    space = KeySpace(data.domain)
    keys = all_keys(space)
    _, idi = truth(model, data.domain, space, keys)
    unsure = ambiguous(relu_network(model, data.domain), space, keys)
    return model, data, idi, unsure


@pytest.mark.parametrize("bound", ["crown", "symbolic", "ibp"])
@pytest.mark.parametrize("split", ["influence", "widest"])
def test_every_bound_and_split_is_exact_when_complete(bound, split, small_case):
    model, data, idi, unsure = small_case
    result = certify_domain(model, data, max_seconds=None, bound=bound, split=split)
    assert result.stopped == "complete" and result.certified_volume + result.falsified_volume == len(idi)
    assert abs(result.falsified_volume - idi.sum()) <= unsure.sum() <= 2


def test_rows_are_counted_by_the_answer_their_key_lies_in():
    model, data = toy_case(kind="coupled+constraints")
    domain = data.domain
    result = certify_domain(model, data, rows=np.arange(200), rows_name="the first 200 rows", max_seconds=None)
    space = KeySpace(domain)
    inside, idi = truth(model, domain, space, space.keys_of(data.X[:200]))
    assert result.row_counts == {"certified": int((inside & ~idi).sum()), "falsified": int(idi.sum()),
                                 "undecided": 0, "outside": int((~inside).sum())}
    assert result.rows_name == "the first 200 rows" and result.n_rows == 200


# ------------------------------------------------------------------ per person
def test_individuals_are_certified_exactly_on_their_own_rows():
    model, data = toy_case(kind="coupled+constraints")
    rows = np.arange(0, 300, 3)
    people = certify_individuals(model, data, rows, rows_name="every third row")
    expected = DiscriminationCheck(model, data.domain).check(data.X[rows]).is_idi
    assert (people.status == np.where(expected, 1, 0)).all() and people.undecided_share == 0
    assert people.certified_share + people.affected_share == 1 and 0 < people.affected_share < 1
    assert (people.to_frame()["status"] == np.where(expected, "affected", "certified unaffected")).all()


def test_individuals_in_wider_boxes_match_an_enumeration():
    model, data = toy_case(kind="sex")
    domain = data.domain
    rows = np.arange(40)
    lo, hi = data.X[rows].copy(), data.X[rows].copy()
    a, b = domain.index("a"), domain.index("b")
    lo[:, [a, b]] = np.maximum(lo[:, [a, b]] - 1, 0)
    hi[:, [a, b]] = np.minimum(hi[:, [a, b]] + 1, 9)
    people = certify_individuals(model, data, rows, boxes=(lo, hi))
    space = KeySpace(domain)
    keys = all_keys(space)
    _, idi = truth(model, domain, space, keys)
    for i in range(len(rows)):
        held = inside_box(keys, space.keys_of(lo[i:i + 1])[0], space.keys_of(hi[i:i + 1])[0])
        assert people.status[i] == (1 if idi[held].any() else 0)


def test_bad_boxes_and_rows_are_refused():
    model, data = toy_case()
    with pytest.raises(ConfigError, match="shape"):
        certify_individuals(model, data, [0, 1], boxes=(data.X[:1], data.X[:1]))
    lo, hi = data.X[:1].copy(), data.X[:1].copy()
    lo[0, 2], hi[0, 2] = 5, 4
    with pytest.raises(ConfigError, match="above upper end"):
        certify_individuals(model, data, [0], boxes=(lo, hi))
    with pytest.raises(ConfigError, match="row numbers"):
        certify_domain(model, data, rows=[10_000])
    with pytest.raises(ConfigError, match="bound must be one of"):
        certify_domain(model, data, bound="exact")


# ------------------------------------------------------------------ the models certification reads
def check_network_matches(module, domain, **wrap):
    model = as_model(module, **wrap)
    network = relu_network(model, domain)
    X = domain.sample(300, np.random.default_rng(1))
    p = model.predict_proba(X)[:, 1]
    assert np.allclose(network.probability(network.logit(X)), p, atol=1e-5)
    assert ((network.logit(X) > 0) == model.predict(X)).all()
    return network


@pytest.mark.parametrize("head, wrap", [("sigmoid", {}), ("softmax", {}), ("logit", {"output": "logit"}),
                                        ("sigmoid", {"classes": ("no", "yes"), "positive_class": "no"})],
                         ids=["sigmoid", "softmax", "logit", "positive-class-0"])
def test_sequential_networks_are_read_with_their_heads(head, wrap):
    domain = toy_domain()
    check_network_matches(relu_sequential(domain, head="logit" if head == "logit" else head), domain, **wrap)


def test_the_papers_dnn_is_read_with_its_standardisation_folded_in():
    from chiralfair.models.dnn import PaperDNN

    domain = toy_domain()
    torch.manual_seed(0)
    net = PaperDNN(domain.n_features, mean=[0.5, 1, 4.5, 4.5, 2], std=[0.5, 0.8, 2.9, 2.9, 1.4])
    net.reset_parameters(torch.Generator().manual_seed(3))
    network = check_network_matches(net, domain)
    X = domain.sample(50, np.random.default_rng(2))
    with torch.no_grad():
        assert np.allclose(network.logit(X), net.logit(torch.as_tensor(X, dtype=torch.float32))[:, 0].numpy(),
                           atol=1e-5)


@pytest.mark.parametrize("how", ["script", pytest.param("trace", marks=pytest.mark.slow)])
def test_torchscript_files_of_a_sequential_and_of_the_dnn_are_read(tmp_path, how):
    from chiralfair.models.dnn import PaperDNN
    from chiralfair.models.files import load_model_file

    domain = toy_domain()
    for i, module in enumerate([relu_sequential(domain), PaperDNN(domain.n_features, mean=[1] * 5, std=[2] * 5)]):
        path = tmp_path / f"net{i}.pt"
        example = torch.zeros(1, domain.n_features)
        with warnings.catch_warnings():  # torch 2.13 deprecates tracing; files traced before still load
            warnings.simplefilter("ignore", DeprecationWarning)
            saved = torch.jit.script(module) if how == "script" else torch.jit.trace(module, example)
        saved.save(str(path))
        check_network_matches(load_model_file(path), domain)


def onnx_file(path, module, domain, *, extra_op=None):
    """The Sequential (Linear/ReLU/Sigmoid) as an ONNX graph written by hand, with a standardisation in front."""
    from onnx import TensorProto, helper, numpy_helper

    mean, std = np.full(domain.n_features, 2.0, np.float32), np.full(domain.n_features, 3.0, np.float32)
    nodes = [helper.make_node("Sub", ["X", "mean"], ["t0"]), helper.make_node("Div", ["t0", "std"], ["h0"])]
    inits = [numpy_helper.from_array(mean, "mean"), numpy_helper.from_array(std, "std")]
    linear = [m for m in module if isinstance(m, torch.nn.Linear)]
    for i, layer in enumerate(linear):
        inits += [numpy_helper.from_array(layer.weight.detach().numpy(), f"W{i}"),
                  numpy_helper.from_array(layer.bias.detach().numpy(), f"B{i}")]
        nodes.append(helper.make_node("Gemm", [f"h{i}", f"W{i}", f"B{i}"], [f"z{i}"], transB=1))
        act = extra_op if (extra_op and i == 0) else ("Relu" if i < len(linear) - 1 else "Sigmoid")
        nodes.append(helper.make_node(act, [f"z{i}"], [f"h{i + 1}" if i < len(linear) - 1 else "p"]))
    graph = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("X", TensorProto.FLOAT,
                                                                           [None, domain.n_features])],
                              [helper.make_tensor_value_info("p", TensorProto.FLOAT, [None, 1])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())
    return path


@pytest.mark.slow  # importing onnx takes seconds
def test_an_onnx_network_is_read_and_an_unknown_node_refused(tmp_path):
    from chiralfair.models.files import OnnxClassifier

    domain = toy_domain()
    module = relu_sequential(domain)
    onnx_model = OnnxClassifier(onnx_file(tmp_path / "net.onnx", module, domain), output="probability")
    check_network_matches(onnx_model, domain)
    tanh = OnnxClassifier(onnx_file(tmp_path / "tanh.onnx", module, domain, extra_op="Tanh"), output="probability")
    with pytest.raises(ModelCapabilityError, match=r"\(Tanh\) is not read"):
        relu_network(as_model(tanh), domain)


class OwnForward(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(5, 1)

    def forward(self, x):
        return torch.sigmoid(self.layer(x) * 2)


@pytest.mark.parametrize("make, message", [
    (lambda: __import__("sklearn.linear_model", fromlist=["x"]).LogisticRegression(), "is not a ReLU network"),
    (OwnForward, "with its own forward"),
    (lambda: torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1), torch.nn.Sigmoid()),
     r"layer 1 \(Tanh\) is not read"),
    (lambda: torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.Linear(3, 1), torch.nn.Sigmoid()),
     "without a ReLU between them"),
    (lambda: torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1), torch.nn.Sigmoid()),
     "takes 4 inputs"),
], ids=["sklearn", "own-forward", "tanh", "two-linear", "width"])
def test_other_models_are_refused_with_the_reason(make, message):
    domain = toy_domain()
    model = make()
    if hasattr(model, "fit"):
        X = domain.sample(100, np.random.default_rng(0))
        model.fit(X, X[:, 2] > 4)
    with pytest.raises(ModelCapabilityError, match=message):
        relu_network(as_model(model, name="mine"), domain)


def test_a_network_that_does_not_reproduce_its_model_is_refused():
    domain = toy_domain()
    module = relu_sequential(domain)
    model = as_model(module)
    model.estimator = relu_sequential(domain, seed=5)  # the layers read are not the model's
    with pytest.raises(ModelCapabilityError, match="does not reproduce the model"):
        relu_network(model, domain)


# ------------------------------------------------------------------ results and files
def test_the_result_round_trips_and_writes_a_run_folder(tmp_path):
    from chiralfair.results.run_folder import read_pairs

    model, data = toy_case(kind="coupled+constraints")
    result = certify_domain(model, data, max_seconds=None, max_boxes=40)
    people = certify_individuals(model, data, np.arange(30))
    result = chiralfair.certification.certificates.with_individuals(result, people)
    again = CertifyResult.from_json(result.to_json())
    assert again.summary() == result.summary() and (again.idis == result.idis).all()
    assert (again.individuals.status == people.status).all()
    assert IndividualCertificates.from_json(people.to_json()).summary() == people.summary()
    frame = result.to_frame()
    assert list(frame["answer"]) == ["certified fair", "falsified", "undecided"]
    assert frame["share"].sum() == pytest.approx(1.0) and frame["rows"].sum() + result.row_counts["outside"] == 300
    folder = result.write(tmp_path / "run", data.domain)
    record = json.loads((folder / "result.json").read_text())
    assert record["kind"] == "certify" and record["meta"]["chiralfair_version"] == chiralfair.__version__
    assert record["certified_share"] == result.certified_share and record["meta"]["random_state"] == 0
    pairs = read_pairs(folder / "idis.parquet")
    assert (pairs["idis"] == result.idis).all() and set(pairs["phase"]) <= {"leaf"}
    assert (pd.read_parquet(folder / "individuals.parquet")["status"] == people.to_frame()["status"]).all()
    assert "certified fair" in str(result) and "individuals" in str(result)


# ------------------------------------------------------------------ front doors
def own_data(tmp_path):
    """A frame of integer columns (their codes are their values), a net trained on them, saved as TorchScript."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"sex": rng.integers(0, 2, 400), "a": rng.integers(0, 10, 400),
                          "b": rng.integers(0, 10, 400)})
    frame["y"] = (frame["a"] + frame["b"] + 3 * frame["sex"] > 10).astype(int)
    domain = Domain((Feature("sex", 0, 1), Feature("a", 0, 9), Feature("b", 0, 9))).with_protected(["sex"])
    net = relu_sequential(domain, widths=(6,))
    path = tmp_path / "net.pt"
    torch.jit.script(net).save(str(path))
    return frame, net, path


def test_chiralfair_certify_takes_your_model_and_frame(tmp_path):
    frame, net, _ = own_data(tmp_path)
    result = chiralfair.certify(net, frame.iloc[:250], test=frame.iloc[250:], label="y", protected="sex",
                                max_seconds=None)
    assert result.stopped == "complete" and result.certified_share + result.falsified_share == pytest.approx(1.0)
    assert result.n_rows == 150 and "test" in result.rows_name
    assert result.individuals.n_individuals == 150
    assert result.meta["source"]["kind"] == "objects"


def test_the_certify_command_on_your_data_writes_the_run_folder(tmp_path):
    from typer.testing import CliRunner

    from chiralfair.cli import app

    frame, _, path = own_data(tmp_path)
    frame.to_csv(tmp_path / "data.csv", index=False)
    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["certify", "--data", str(tmp_path / "data.csv"), "--model", str(path),
                                   "--label", "y", "--protected", "sex", "--max-seconds", "0", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "certified fair" in res.output and "certified unaffected" in res.output
    assert json.loads((out / "result.json").read_text())["stopped"] == "complete"


@pytest.mark.slow
def test_the_certify_command_prints_json(tmp_path):
    from typer.testing import CliRunner

    from chiralfair.cli import app

    frame, _, path = own_data(tmp_path)
    frame.to_csv(tmp_path / "data.csv", index=False)
    res = CliRunner().invoke(app, ["certify", "--data", str(tmp_path / "data.csv"), "--model", str(path),
                                   "--label", "y", "--protected", "sex", "--max-boxes", "5", "--json",
                                   "--no-individuals"])
    assert res.exit_code == 0, res.output
    record = json.loads(res.output)
    assert record["stopped"] in ("boxes", "complete") and "individuals" not in record


@pytest.mark.parametrize("args, message", [
    (["--model", "lr"], "is not a ReLU network"), (["--bound", "exact"], "--bound must be one of"),
    (["--split", "random"], "--split must be one of"), (["--plausible-only"], "--plausible-only applies"),
    (["--max-depth", "-1"], "--max-depth must be >= 0")])
def test_the_certify_command_refuses_bad_flags_before_any_work(args, message):
    from typer.testing import CliRunner

    from chiralfair.cli import app

    res = CliRunner().invoke(app, ["certify", *args, "--data-home", "/nonexistent"])
    assert res.exit_code == 2 and message in res.output, res.output


@pytest.mark.slow
def test_the_certify_command_on_the_census_dnn(tmp_path):
    from typer.testing import CliRunner

    from chiralfair.cli import app

    res = CliRunner().invoke(app, ["certify", "--protected", "sex", "--max-seconds", "5", "--out",
                                   str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    record = json.loads((tmp_path / "run" / "result.json").read_text())
    assert record["protected"] == ["sex"] and record["n_combinations"] == 2 and record["certified_share"] > 0
    assert record["individuals"]["certified_unaffected"] + record["individuals"]["affected"] == pytest.approx(1.0)
