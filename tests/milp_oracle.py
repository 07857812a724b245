"""An exact oracle for certification tests: does a box of keys hold an IDI? A mixed-integer program (HiGHS).

Two copies of the ReLU network share the key's non-protected codes (integer variables inside the box); each copy
reads them at one protected combination (coupled columns at that combination's code, as the key space builds
them). Each hidden neuron is encoded exactly with one binary (big-M from interval bounds over the box, which are
sound, so the encoding is exact on the box). The program asks for codes where copy ``a`` is positive and copy ``b``
is not, for every ordered pair of combinations that can exist in the box; a feasible one is an IDI.

Written independently of the bound propagation it checks: only ``KeySpace.input_boxes`` (the combinations' inputs)
and the domain's constraint objects are shared.
"""

from __future__ import annotations

import numpy as np
import scipy.optimize as so
import scipy.sparse as sp

from chiralfair.domain.constraints import AtLeast, Excludes

# The copies must clear these: a certified box (margin 1e-4) can hold no point with g_a >= EPS and g_b <= -EPS.
EPS = 1e-6


def _interval(weights, biases, lo, hi):
    """Interval bounds of every pre-activation (plain numpy; sound)."""
    out = []
    c, r = (lo + hi) / 2, (hi - lo) / 2
    for k, (w, b) in enumerate(zip(weights, biases, strict=True)):
        if k:
            low, up = np.maximum(out[-1][0], 0), np.maximum(out[-1][1], 0)
            c, r = (low + up) / 2, (up - low) / 2
        out.append((w @ c + b - np.abs(w) @ r, w @ c + b + np.abs(w) @ r))
    return out


class _Program:
    def __init__(self):
        self.rows, self.cols, self.vals, self.lo, self.hi = [], [], [], [], []
        self.lb, self.ub, self.integer = [], [], []

    def var(self, lb, ub, integer=False) -> int:
        self.lb.append(lb)
        self.ub.append(ub)
        self.integer.append(1 if integer else 0)
        return len(self.lb) - 1

    def add(self, coef: dict, lo, hi) -> None:
        r = len(self.lo)
        for c, v in coef.items():
            self.rows.append(r)
            self.cols.append(c)
            self.vals.append(v)
        self.lo.append(lo)
        self.hi.append(hi)

    def feasible(self) -> bool:
        n = len(self.lb)
        A = sp.csr_matrix((self.vals, (self.rows, self.cols)), shape=(len(self.lo), n))
        res = so.milp(np.zeros(n), constraints=so.LinearConstraint(A, self.lo, self.hi),
                      integrality=np.array(self.integer), bounds=so.Bounds(self.lb, self.ub))
        if res.status not in (0, 2):  # 0 optimal (feasible), 2 infeasible
            raise RuntimeError(f"MILP oracle did not finish: {res.message}")
        return res.status == 0


def _copy(program: _Program, weights, biases, inputs: list, lo, hi) -> int:
    """Encode one copy on ``inputs`` (variable index or constant per column); return the output's variable."""
    bounds = _interval(weights, biases, lo, hi)
    prev = inputs
    for k, (w, b) in enumerate(zip(weights, biases, strict=True)):
        low, up = bounds[k]
        out = []
        for i in range(w.shape[0]):
            z = program.var(low[i] - 1e-9, up[i] + 1e-9)
            coef, const = {z: 1.0}, b[i]
            for j, p in enumerate(prev):
                if isinstance(p, int | np.integer):
                    coef[int(p)] = coef.get(int(p), 0.0) - w[i, j]
                else:
                    const += w[i, j] * p
            program.add(coef, const, const)
            if k == len(weights) - 1:
                return z
            if low[i] >= 0:
                out.append(z)
            elif up[i] <= 0:
                out.append(0.0)
            else:
                a = program.var(0.0, up[i])
                d = program.var(0.0, 1.0, integer=True)
                program.add({a: 1.0, z: -1.0}, 0.0, np.inf)
                program.add({a: 1.0, z: -1.0, d: -low[i]}, -np.inf, -low[i])
                program.add({a: 1.0, d: -up[i]}, -np.inf, 0.0)
                out.append(a)
        prev = out
    raise AssertionError("unreachable")


def box_has_idi(network, space, lo, hi) -> bool:
    """Whether some key of the box ``[lo, hi]`` (key columns) is an IDI, exactly (up to :data:`EPS`).

    Parameters
    ----------
    network : ReluNetwork
    space : KeySpace
    lo, hi : numpy.ndarray of int, shape (n_columns,)

    Returns
    -------
    bool
    """
    domain = space.domain
    xlo, xhi = space.input_boxes(np.asarray(lo)[None], np.asarray(hi)[None])
    xlo, xhi = xlo[0].astype(float), xhi[0].astype(float)
    weights, biases = list(network.weights), list(network.biases)
    k = len(xlo)
    for a in range(k):
        for b in range(k):
            if a == b or not (_may_exist(domain, xlo[a], xhi[a]) and _may_exist(domain, xlo[b], xhi[b])):
                continue
            program = _Program()
            shared = {}
            inputs = {}
            for side in (a, b):
                row = []
                for j in range(domain.n_features):
                    if xlo[side, j] == xhi[side, j]:
                        row.append(float(xlo[side, j]))
                    else:
                        if j not in shared:
                            shared[j] = program.var(xlo[side, j], xhi[side, j], integer=True)
                        row.append(shared[j])
                inputs[side] = row
            for side in (a, b):
                _constraints(program, domain, inputs[side])
            ga = _copy(program, weights, biases, inputs[a], xlo[a], xhi[a])
            gb = _copy(program, weights, biases, inputs[b], xlo[b], xhi[b])
            program.add({ga: 1.0}, EPS, np.inf)
            program.add({gb: 1.0}, -np.inf, -EPS)
            if program.feasible():
                return True
    return False


def _may_exist(domain, lo, hi) -> bool:
    """False when a rule over columns that are single codes here is broken."""
    for rule in domain.constraints:
        cols = rule.columns
        if all(lo[c] == hi[c] for c in cols) and rule.violated(lo[None].astype(np.int64))[0]:
            return False
    return True


def _constraints(program: _Program, domain, row: list) -> None:
    """The ordering rules as linear constraints on the shared codes (exclusions over points are in _may_exist)."""
    for rule in domain.constraints:
        if isinstance(rule, AtLeast):  # x[left] - x[right] >= offset
            coef, const = {}, 0.0
            for col, sign in ((rule.left, 1.0), (rule.right, -1.0)):
                p = row[col]
                if isinstance(p, int | np.integer):
                    coef[int(p)] = coef.get(int(p), 0.0) + sign
                else:
                    const += sign * p
            if coef:
                program.add(coef, rule.offset - const, np.inf)
        elif not isinstance(rule, Excludes):
            raise TypeError(rule)
