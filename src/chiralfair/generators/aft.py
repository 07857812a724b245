"""Aft (Zhao, Toda, Kitamura, ASE 2024): a decision tree approximates the model and points at discriminatory regions.

A tree fitted to the model's labels splits the domain into boxes (its leaves). Two leaves that lie on either side
of a split on a protected attribute, overlap in every non-protected feature and carry different labels enclose,
if the tree is right, inputs whose counterparts get another label: the pair's region (the overlap of the
non-protected boxes) is where Aft samples. Inputs the tree got wrong go back into its training data, and the tree
is refitted, so the approximation improves where the search looks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_int
from ..domain import Domain
from .base import Generator, register_generator
from .gradient_steps import check_cost
from .recorder import IDIRecorder

# A tree round whose samples taught the tree nothing (no input it mislabelled) this many times in a row restarts
# the search from fresh training data (the reference code's constant).
ROUNDS_WITHOUT_TRAINING = 5


@dataclass(frozen=True)
class LeafBoxes:
    """The leaves of a fitted decision tree as boxes of integer codes.

    Attributes
    ----------
    lower, upper : numpy.ndarray of int64, shape (n_leaves, n_features)
        Inclusive bounds of each leaf, inside the domain's bounds (a split ``x <= t`` gives ``upper = floor(t)``
        on the left and ``lower = floor(t) + 1`` on the right).
    label : numpy.ndarray of int64, shape (n_leaves,)
        The tree's label in each leaf.
    combinations : numpy.ndarray of bool, shape (n_leaves, n_combinations)
        Which PA-value combinations (:attr:`Domain.combinations`) lie inside each leaf.
    pairs : numpy.ndarray of int64, shape (n_pairs, 2)
        Leaf pairs separated by a split on a protected column (left leaf, right leaf of that split).
    """

    lower: np.ndarray
    upper: np.ndarray
    label: np.ndarray
    combinations: np.ndarray
    pairs: np.ndarray


def leaf_boxes(tree, domain: Domain) -> LeafBoxes:
    """Read a fitted ``sklearn.tree.DecisionTreeClassifier`` over ``domain`` as :class:`LeafBoxes`.

    Parameters
    ----------
    tree : sklearn.tree.DecisionTreeClassifier
        Fitted on inputs of the domain (codes), with labels in {0, 1}.
    domain : Domain

    Returns
    -------
    LeafBoxes
    """
    t = tree.tree_
    n_nodes = t.node_count
    lower = np.empty((n_nodes, domain.n_features), dtype=np.int64)
    upper = np.empty((n_nodes, domain.n_features), dtype=np.int64)
    lower[0], upper[0] = domain.lower, domain.upper
    left, right, feature = t.children_left, t.children_right, t.feature
    cut = np.floor(t.threshold).astype(np.int64)
    # sklearn numbers a node after its parent, so one pass in node order sees every parent's box first.
    for node in range(n_nodes):
        if left[node] < 0:
            continue
        f = feature[node]
        for child in (left[node], right[node]):
            lower[child], upper[child] = lower[node], upper[node]
        upper[left[node], f] = min(upper[node, f], cut[node])
        lower[right[node], f] = max(lower[node, f], cut[node] + 1)
    leaves = np.flatnonzero(left < 0)
    position = np.full(n_nodes, -1, dtype=np.int64)
    position[leaves] = np.arange(len(leaves))
    label = tree.classes_[t.value[leaves, 0].argmax(axis=1)].astype(np.int64)
    pa = list(domain.protected)
    combos = domain.combinations
    inside = np.all((combos[None] >= lower[leaves][:, None, pa]) & (combos[None] <= upper[leaves][:, None, pa]), axis=2)
    return LeafBoxes(lower[leaves], upper[leaves], label, inside,
                     _protected_split_pairs(t, position, set(pa)))


def _protected_split_pairs(t, position: np.ndarray, protected: set[int]) -> np.ndarray:
    """(left leaf, right leaf) for every split on a protected column: its left subtree's leaves x its right's.

    A pair of leaves has one lowest common ancestor, so no pair is listed twice.
    """
    parts = []
    for node in np.flatnonzero(np.isin(t.feature, list(protected)) & (t.children_left >= 0)):
        a, b = _leaves_under(t, position, t.children_left[node]), _leaves_under(t, position, t.children_right[node])
        parts.append(np.stack(np.meshgrid(a, b, indexing="ij"), axis=-1).reshape(-1, 2))
    return np.concatenate(parts) if parts else np.zeros((0, 2), dtype=np.int64)


def _leaves_under(t, position: np.ndarray, node: int) -> np.ndarray:
    """Positions (in :class:`LeafBoxes`) of the leaves of the subtree rooted at ``node``."""
    stack, out = [int(node)], []
    while stack:
        n = stack.pop()
        if t.children_left[n] < 0:
            out.append(position[n])
        else:
            stack += [int(t.children_right[n]), int(t.children_left[n])]
    return np.array(out, dtype=np.int64)


@dataclass(frozen=True)
class PairedRegions:
    """The regions of the discriminatory leaf pairs of a tree, where Aft samples.

    Attributes
    ----------
    lower, upper : numpy.ndarray of int64, shape (n_regions, n_features)
        The overlap of the two leaves on the non-protected features (the protected columns are not used).
    combinations : numpy.ndarray of bool, shape (n_regions, n_combinations)
        The PA-value combinations of the first leaf: a sample takes one of them.
    """

    lower: np.ndarray
    upper: np.ndarray
    combinations: np.ndarray

    def __len__(self) -> int:
        return len(self.lower)

    def take(self, rows: np.ndarray) -> PairedRegions:
        """The regions ``rows`` (indices).

        Parameters
        ----------
        rows : numpy.ndarray of int64
            Indices of the regions to keep.

        Returns
        -------
        PairedRegions
        """
        return PairedRegions(self.lower[rows], self.upper[rows], self.combinations[rows])

    def sample(self, region: np.ndarray, domain: Domain, rng: np.random.Generator) -> np.ndarray:
        """One uniform input of each region ``region[i]``, shape (len(region), n_features).

        Non-protected features are uniform in the region's bounds; the protected attributes take a uniform
        combination among the first leaf's.

        Parameters
        ----------
        region : numpy.ndarray of int64, shape (n,)
            A region index per input to draw.
        domain : Domain
        rng : numpy.random.Generator

        Returns
        -------
        numpy.ndarray of int64, shape (n, n_features)
        """
        lo, hi = self.lower[region], self.upper[region]
        X = lo + np.floor(rng.random(lo.shape) * (hi - lo + 1)).astype(np.int64)
        weights = self.combinations[region].astype(float)
        cum = np.cumsum(weights, axis=1)
        u = rng.random(len(region)) * cum[:, -1]
        combo = np.minimum((cum <= u[:, None]).sum(axis=1), cum.shape[1] - 1)
        X[:, list(domain.protected)] = domain.combinations[combo]
        return X


def discriminatory_regions(boxes: LeafBoxes, domain: Domain) -> PairedRegions:
    """The leaf pairs that may hold IDIs: different labels, overlapping non-protected boxes, valid PA values.

    Parameters
    ----------
    boxes : LeafBoxes
    domain : Domain

    Returns
    -------
    PairedRegions
        One region per pair, in the order of :attr:`LeafBoxes.pairs`.
    """
    a, b = boxes.pairs[:, 0], boxes.pairs[:, 1]
    npa = domain.non_protected
    lo = np.maximum(boxes.lower[a], boxes.lower[b])
    hi = np.minimum(boxes.upper[a], boxes.upper[b])
    keep = ((boxes.label[a] != boxes.label[b]) & (lo[:, npa] <= hi[:, npa]).all(axis=1)
            & boxes.combinations[a].any(axis=1) & boxes.combinations[b].any(axis=1))
    pa = list(domain.protected)
    lo[:, pa], hi[:, pa] = domain.lower[pa], domain.upper[pa]  # the PA values come from the combinations
    return PairedRegions(lo[keep], hi[keep], boxes.combinations[a[keep]])


@register_generator("aft")
class Aft(Generator):
    """Aft: sample where a decision tree that approximates the model pairs leaves across a protected split.

    **Global phase.** The seeds (the first ``max_global``) are checked in one batch; the IDIs among them are the
    global IDIs. **Local phase.** A start draws ``n_train`` uniform inputs of the domain and labels them with
    the model (``predict``: one query each); with the seeds' checked rows (every counterpart, its label known
    from the global phase, at no cost) they train a ``DecisionTreeClassifier`` (entropy, ``max_leaf_nodes``).
    Each tree round then

    1. reads the tree's leaves as boxes and lists the pairs of leaves on either side of a split on a protected
       column whose labels differ, whose non-protected boxes overlap and that both hold valid PA values
       (:func:`discriminatory_regions`);
    2. takes up to ``max_pairs`` of them (uniformly, without replacement);
    3. samples their regions: each sampling step draws ``samples_per_step`` uniform inputs of every pair still
       open (non-protected features in the overlap, PA values among the first leaf's) and checks them all in
       one discrimination check. A pair closes after ``max_samples_per_pair`` inputs or
       ``max_failures_per_pair`` failures (inputs the tree mislabels, itself or a counterpart);
    4. adds every mislabelled row (an input or counterpart whose model label the tree got wrong) to the
       training data and refits the tree.

    The search restarts (fresh ``n_train`` inputs, training data reset to them and the seeds' rows) after a
    round that found no new IDI or no pair, or after ``ROUNDS_WITHOUT_TRAINING`` rounds that taught the tree
    nothing. It stops when the local budget is spent or after ``max_restarts`` restarts; its notes say which.

    Departures from the paper (Alg. 2-4) and its code (``toda-lab/AFT``: ``aft.py``, ``utils/PathSearcher.py``,
    ``exp.py`` for the settings), each deliberate:

    - **Budget in checked inputs, not wall time.** The local phase checks at most ``max_local * n_seeds``
      inputs, pooled (the code runs for a wall-clock ``runtime``, an hour in the paper). It is pooled over the
      seeds, not the global IDIs as for AEQUITAS or KOSEI, because Aft's local phase needs no global IDI to
      start. Restarts are capped (``max_restarts``), since a round on a fair model finds nothing forever.
    - **The discrimination check tries every combination at once**, batched over all samples of all pairs
      (the code checks each sample against the other leaf's PA value, then, for more than two values, the rest
      one by one in random order). A step draws ``samples_per_step`` samples of every open pair, and a pair's
      stopping rule is read after every step, not after every sample. One sample a step, as in the code, was
      measured against the default of ten on census sex, cluster seeds, the zoo's HGB, RF and tree, 3 random
      states each: at 200,000 queries without coupling it found 1.43x the IDIs (geometric mean; HGB's median
      13,323 -> 49,201), with census's coupling 0.94x (one HGB state fell from 41,661 to 19,050: Aft's large
      runs on HGB take off or not by random state), at 20,000 queries 0.93x and 0.99x; and RF's searches of
      200,000 queries took 24.6 and 28.3 s instead of 6.8 and 7.0 s (medians without and with coupling: a model
      call per sample step). So ten stays the
      default; one is worth passing for a large budget on a domain without couplings
      (``benchmarks/results/aft_samples_per_step.md``).
    - **An input whose key was already checked is not checked again** (its outcome is known; the draw still
      counts toward its pair's ``max_samples_per_pair``), and inputs count once by key
      (architecture: the counting rule), not as (x, x') pairs of full vectors.
    - **Pairs are drawn uniformly among all discriminatory pairs** (the code draws a random leaf, then takes
      all of its discriminatory partners, until ``MaxDiscPathPair`` pairs).
    - **The seeds' checks seed the training data**, and a mislabelled counterpart is learnt like a mislabelled
      input (the code trains on uniform inputs and on the sample and its one counterpart).
    - **Leaves are read as integer boxes** (``floor`` of the threshold, inside the domain's bounds) and a
      protected value is valid only if it is one of the attribute's values (a one-hot group's valid rows), so
      every sample lies in the domain; the code truncates thresholds with ``int()`` and samples any integer.
      Samples are repaired onto the domain's constraints (architecture: counterparts that could exist).
    - **Defaults scaled to the budgets here**: ``n_train`` 1000 (the code: 5000 per start, for an hour-long
      run); ``max_leaf_nodes`` 1000, ``max_pairs`` 100, ``max_samples_per_pair`` 100 and
      ``max_failures_per_pair`` 10 as the code.
    - Deterministic for a ``random_state`` (the code draws from Python's unseeded ``random`` and fits its trees
      with ``random_state=None``).

    Parameters
    ----------
    max_global : int
        Seeds checked by the global phase.
    max_local : int
        Local budget per seed, in checked inputs, pooled over the seeds.
    n_train : int
        Uniform inputs labelled (one query each) at every start to fit the first tree.
    max_leaf_nodes : int
        Leaves of the tree (at least 2).
    max_pairs : int
        Leaf pairs sampled per tree round.
    max_samples_per_pair : int
        Inputs drawn per pair and round.
    max_failures_per_pair : int
        Mislabelled inputs after which a pair closes.
    samples_per_step : int
        Inputs drawn per open pair per model batch (1: the stopping rule is read after every sample, as in the
        reference code; fewer model calls with more).
    max_restarts : int
        Restarts after the first start.

    References
    ----------
    .. [1] Zhao, Toda, Kitamura. "Approximation-guided fairness testing through discriminatory space analysis."
       ASE 2024, pp. 1007-1018. doi:10.1145/3691620.3695481. Code: ``toda-lab/AFT`` (MIT).
    """

    name = "aft"

    def __init__(self, *, max_global: int = 1000, max_local: int = 1000, max_queries: int | None = None,
                 n_train: int = 1000,
                 max_leaf_nodes: int = 1000, max_pairs: int = 100, max_samples_per_pair: int = 100,
                 max_failures_per_pair: int = 10, samples_per_step: int = 10, max_restarts: int = 5):
        self.n_train = check_int(n_train, "n_train", minimum=1)
        self.max_leaf_nodes = check_int(max_leaf_nodes, "max_leaf_nodes", minimum=2)
        self.max_pairs = check_int(max_pairs, "max_pairs", minimum=1)
        self.max_samples_per_pair = check_int(max_samples_per_pair, "max_samples_per_pair", minimum=1)
        self.max_failures_per_pair = check_int(max_failures_per_pair, "max_failures_per_pair", minimum=1)
        self.samples_per_step = check_int(samples_per_step, "samples_per_step", minimum=1)
        self.max_restarts = check_int(max_restarts, "max_restarts", minimum=0)
        super().__init__(max_global=max_global, max_local=max_local, max_queries=max_queries, n_train=self.n_train,
                         max_leaf_nodes=self.max_leaf_nodes, max_pairs=self.max_pairs,
                         max_samples_per_pair=self.max_samples_per_pair,
                         max_failures_per_pair=self.max_failures_per_pair, samples_per_step=self.samples_per_step,
                         max_restarts=self.max_restarts)

    def query_budget(self, n_seeds: int, n_combinations: int, n_features: int | None = None) -> int:
        """Upper bound on model queries for ``n_seeds`` seeds (``n_features`` unused).

        The seeds' checks, ``n_train`` labelled inputs per start (``1 + max_restarts`` starts at most) and
        ``max_local * n`` local checks, ``n = min(n_seeds, max_global)``.

        Parameters
        ----------
        n_seeds : int
            Seeds of the global phase.
        n_combinations : int
            Protected-value combinations the discrimination check tries per input.
        n_features : int, optional
            Features of the domain (unused here; MAFT's estimate needs it).

        Returns
        -------
        int
            Model queries.
        """
        n = min(int(n_seeds), self.max_global)
        per_check = check_cost(n_combinations)
        return n * per_check + (1 + self.max_restarts) * self.n_train + n * self.max_local * per_check

    def _search(self, recorder: IDIRecorder, seeds: np.ndarray, rng: np.random.Generator):
        res, _ = recorder.check(seeds, "global")
        recorder.n_seed_idis = int(res.is_idi.sum())
        budget = self.max_local * len(seeds)
        if budget == 0:
            return ()
        return _AftRun(self, recorder, res, budget, rng).run()


class _AftRun:
    """One local phase of :class:`Aft`: training data, tree rounds, restarts and the budget."""

    def __init__(self, gen: Aft, recorder: IDIRecorder, seed_check, budget: int, rng: np.random.Generator):
        self.gen, self.recorder, self.rng = gen, recorder, rng
        self.domain = recorder.domain
        self.budget = budget
        self.checked = 0
        # The seeds' counterparts and their labels, known from the global phase.
        self.seed_rows = self.domain.counterparts(seed_check.X).reshape(-1, self.domain.n_features)
        self.seed_labels = seed_check.counterpart_labels.reshape(-1)
        # the tree's training rows and labels, drawn by _start() when run() begins
        self.train_X: np.ndarray
        self.train_y: np.ndarray

    def run(self) -> tuple[str, ...]:
        restarts, quiet = 0, 0
        self._start()
        while self.checked < self.budget:
            tree = self._fit()
            found, learnt = self._round(tree)
            quiet = 0 if learnt else quiet + 1
            if found and quiet < ROUNDS_WITHOUT_TRAINING:
                continue
            if restarts == self.gen.max_restarts:
                return (f"stopped: {restarts} restarts after rounds that found no new IDI or taught the tree "
                        f"nothing, after {self.checked} of {self.budget} local checks",)
            restarts, quiet = restarts + 1, 0
            self._start()
        return (f"stopped: local budget of {self.budget} checks (max_local x {self.budget // self.gen.max_local} "
                "seeds) spent",)

    def _start(self) -> None:
        X = self.domain.sample(self.gen.n_train, self.rng)
        self.train_X = np.concatenate([self.seed_rows, X])
        self.train_y = np.concatenate([self.seed_labels, self.recorder.model.predict(X)])

    def _fit(self):
        from sklearn.tree import DecisionTreeClassifier

        tree = DecisionTreeClassifier(criterion="entropy", max_leaf_nodes=self.gen.max_leaf_nodes,
                                      random_state=int(self.rng.integers(0, 2**31 - 1)))
        return tree.fit(self.train_X, self.train_y)

    def _round(self, tree) -> tuple[bool, bool]:
        """Sample the regions of one tree; return (a new IDI was found, the tree mislabelled some input)."""
        gen, domain = self.gen, self.domain
        regions = discriminatory_regions(leaf_boxes(tree, domain), domain)
        if len(regions) == 0:
            return False, False
        regions = regions.take(self.rng.permutation(len(regions))[: gen.max_pairs])
        drawn = np.zeros(len(regions), dtype=np.int64)
        failures = np.zeros(len(regions), dtype=np.int64)
        found = learnt = False
        while self.checked < self.budget:
            open_ = np.flatnonzero((drawn < gen.max_samples_per_pair) & (failures < gen.max_failures_per_pair))
            if not len(open_):
                break
            per_pair = np.minimum(gen.samples_per_step, gen.max_samples_per_pair - drawn[open_])
            region = np.repeat(open_, per_pair)
            drawn[open_] += per_pair
            # onto the constraints (architecture: counterparts that could exist)
            X = domain.repair(regions.sample(region, domain, self.rng))
            ask = self._untested(X)[: self.budget - self.checked]
            if not len(ask):
                continue
            res, new = self.recorder.check(X[ask], "local")
            self.checked += len(ask)
            found |= bool(new.any())
            rows = domain.counterparts(res.X)
            wrong = tree.predict(rows.reshape(-1, domain.n_features)).reshape(rows.shape[:2]) != res.counterpart_labels
            np.add.at(failures, region[ask], wrong.any(axis=1))
            if wrong.any():
                learnt = True
                self.train_X = np.concatenate([self.train_X, rows[wrong]])
                self.train_y = np.concatenate([self.train_y, res.counterpart_labels[wrong]])
        return found, learnt

    def _untested(self, X: np.ndarray) -> np.ndarray:
        """Indices of the first occurrence of each key of ``X`` that was never checked, in draw order."""
        _, first = np.unique(self.domain.keys(X), return_index=True)
        first = np.sort(first)
        return first[~self.recorder.is_tested(X[first])]
