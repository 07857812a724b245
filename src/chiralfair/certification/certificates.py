"""The front doors of certification: :func:`certify_domain` (how much of the domain) and :func:`certify_individuals`.

Both read the model under test as a tree ensemble (:func:`~.tree_reading.read_tree_ensemble`) or a ReLU network
(:func:`~.reading.relu_network`), refused with the reason for any other model, build the key space of the dataset's
domain (:mod:`.key_space`: couplings applied, constraints read) and run the branch and bound for its kind
(:class:`~.tree_search.TreeBranchAndBound`, :class:`~.branch_and_bound.BranchAndBound`), whose leaves are checked on
the model with the discrimination check (:class:`~chiralfair.oracle.DiscriminationCheck`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from .. import __version__
from .._random import RandomState, resolve_random_state
from ..datasets.population import population_of
from ..exceptions import ConfigError, DomainError, TimeLimitError
from ..oracle import DiscriminationCheck
from ..verdict.result import left_out_mask, unplaced_by_attribute
from .branch_and_bound import CERTIFIED, FALSIFIED, UNDECIDED, BranchAndBound, Tally
from .key_space import INSIDE, OUTSIDE, POSSIBLE, KeySpace
from .options import check_certify_options
from .reading import relu_network
from .result import CONFIDENCE, LEFT_OUT, CertifyResult, IndividualCertificates
from .tree_ensemble import TreeEnsemble
from .tree_search import TreeBranchAndBound

# A network's per-person box of at most this many keys is decided by checking every key on the model (exact, and
# cheaper than bounding it: census within age +-2, hours +-4 is 45 keys a person); larger boxes are bounded.
ENUMERATE_KEYS = 4096
# Model rows (keys times protected combinations) checked in one batch of that enumeration.
ENUMERATE_ROWS = 1 << 18


def certify_domain(model, dataset, *, rows=None, rows_name: str | None = None, max_seconds: float | None = 60.0,
                   max_depth: int | None = None, max_boxes: int | None = None, bound: str = "crown",
                   split: str = "influence", batch_size: int = 2048, random_state: RandomState = 0,
                   device: str = "cpu", on_progress: Callable[[dict], None] | None = None,
                   n_jobs: int | None = None) -> CertifyResult:
    """Prove how much of the input domain is fair: no counterpart of any input there gets another label.

    Every combination of the protected attributes' values is compared with every other (not only the extremes),
    coupled columns change with their attribute and inputs that break a constraint are left out, as in the
    discrimination check. Anytime: at the time or box budget, or on ``KeyboardInterrupt``, it reports what it
    proved so far.

    Parameters
    ----------
    model : CountingModel, torch.nn.Module or OnnxClassifier
        The model under test: the paper's DNN, a ``torch.nn.Sequential`` of Linear/ReLU layers, a TorchScript or
        ONNX file of one (loaded: :func:`~chiralfair.models.files.load_model_file`), wrapped or not.
    dataset : Dataset
        With its protected attributes set (its domain's couplings and constraints apply).
    rows : array-like of int, optional
        Dataset rows whose keys are located in the answers (``row_counts``); default every row.
    rows_name : str, optional
        What ``rows`` are, in words (default: "all N rows of <dataset>" or "N given rows").
    max_seconds : float or None, default=60.0
        Wall-second budget of the branch and bound (None: none).
    max_depth, max_boxes, bound, split, batch_size, device
        Of :class:`~chiralfair.certification.branch_and_bound.BranchAndBound`.
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator, default=0
        Draws the points the network read from the model is checked on; recorded in ``meta``.
    on_progress : callable, optional
        Called after each batch of boxes (see :meth:`BranchAndBound.run
        <chiralfair.certification.branch_and_bound.BranchAndBound.run>`).
    n_jobs : int or None, default=None
        Processes a tree ensemble's search shares its boxes among (None: the CPUs this process may run on; 1: this
        process alone; :class:`~chiralfair.certification.tree_search.TreeBranchAndBound`); a complete run's shares
        are the same for every ``n_jobs``. A network's search runs in this process.

    Returns
    -------
    CertifyResult

    Raises
    ------
    ModelCapabilityError
        If the model is not a ReLU network certification reads (the message names the model and what is missing).
    DomainError
        If the dataset's domain has no protected attribute.
    ConfigError
        For a bad budget, name or row number.

    References
    ----------
    .. [1] Zhang et al. "Efficient neural network robustness certification with general activation functions."
       NeurIPS 2018 (CROWN).
    .. [2] Biswas, Rajan. "Fairify: fairness verification of neural networks." ICSE 2023.
    .. [3] Kim, Wang, Wang. "FairQuant: certifying and quantifying fairness of deep neural networks." ICSE 2025.
    """
    started = time.perf_counter()
    rng, described = resolve_random_state(random_state)
    model, domain = _model_and_domain(model, dataset)
    engine, read = _engine(model, domain, rng, max_seconds=max_seconds, max_depth=max_depth, max_boxes=max_boxes,
                           batch_size=batch_size, bound=bound, split=split, device=device,
                           deadline=None if max_seconds is None else started + max_seconds, n_jobs=n_jobs)
    if max_seconds is not None:  # the budget covers the reading too
        engine.max_seconds = max(0.0, max_seconds - (time.perf_counter() - started))
    rows, rows_name = _rows(dataset, rows, rows_name)
    space = KeySpace(domain)
    lo, hi, outside = space.domain_boxes()
    keys = space.keys_of(dataset.X[rows])
    owner = _owner(keys, lo, hi)
    check = DiscriminationCheck(model, domain)
    queries = model.n_queries
    tally = engine.run(read, space, check, lo, hi, row_keys=keys, row_owner=owner, on_progress=on_progress)
    status = np.where(owner < 0, 3, tally.row_status)
    row_counts = {name: int((status == code).sum()) for name, code in
                  (("certified", CERTIFIED), ("falsified", FALSIFIED), ("undecided", UNDECIDED), ("outside", 3))}
    pairs = _unique_pairs(tally, domain)
    stats = {**tally.stats, "n_queries": int(model.n_queries - queries), "n_initial_boxes": int(len(lo))}
    notes = []
    if domain.constraints:
        notes.append(f"{outside / space.total_volume():.2%} of the grid's keys lie outside the domain (every input "
                     f"of theirs breaks a constraint: {'; '.join(domain.describe_constraints())})")
    if domain.coupled_columns:
        notes.append("coupled columns change with their protected attribute: " + "; ".join(domain.describe_couplings()))
    meta = _meta(engine.params(), described, dataset, model, rows_name=rows_name, read=_described(read))
    return CertifyResult(protected=tuple(domain.protected_names), n_combinations=space.n_combinations,
                         domain_volume=float(space.volume(lo, hi).sum()), outside_volume=float(outside),
                         certified_volume=float(tally.certified.sum()), falsified_volume=float(tally.falsified.sum()),
                         n_idis=int(len(pairs[0])), idis=pairs[0], counterparts=pairs[1], idi_labels=pairs[2],
                         counterpart_labels=pairs[3], rows_name=rows_name, row_counts=row_counts,
                         seconds=float(tally.stats["seconds"]), stopped=tally.stats["stopped"], stats=stats,
                         notes=tuple(notes), meta=meta)


def certify_individuals(model, dataset, rows=None, *, boxes=None, similar=None, rows_name: str | None = None,
                        max_seconds: float | None = None, bound: str = "crown", batch_size: int = 2048,
                        random_state: RandomState = 0, device: str = "cpu",
                        n_jobs: int | None = None) -> IndividualCertificates:
    """For each individual, whether they are certified unaffected: no counterpart of theirs gets another label.

    A person's box holds every value of their binned columns' bins. A model certification reads takes the integer
    codes, in which a bin is one code, so by default the box is the person's own row and the answer is exact:
    their discrimination check (every protected combination, couplings and constraints as everywhere) either
    finds a counterpart with another label (affected) or proves there is none (certified unaffected). Wider
    boxes (``boxes``, or each person's neighbourhood ``similar``) are decided for a network by checking every key
    on the model when the box holds at most :data:`ENUMERATE_KEYS` keys (exact), and by the branch and bound
    otherwise: a person is certified unaffected when every key of their box is, affected when one is proven an IDI,
    undecided otherwise. For a tree ensemble the branch and bound decides every box exactly given the time
    (:mod:`.tree_search`). A person none of whose counterparts could exist (each breaks a constraint; census: a man
    recorded as a wife), or no input of whose box could exist, is left out, as the verdict leaves them out
    (:func:`chiralfair.verdict.result.left_out_mask`): status ``"left out"``, counted and named, in no share.

    A model fed your rows (a raw-frame pipeline) is certified on them, not on their bins (architecture: the
    population and the domain): on their own row, each person as given with every counterpart checked; with
    ``similar``, over a grid whose codes are your values, radii in your units on any column of whole numbers, binned
    or not (:mod:`.people_grid`).

    Parameters
    ----------
    model : CountingModel, torch.nn.Module, OnnxClassifier or tree ensemble
        As :func:`certify_domain`.
    dataset : Dataset
        With its protected attributes set.
    rows : array-like of int, optional
        The individuals (dataset rows); default every row.
    boxes : (array-like, array-like), optional
        ``(lo, hi)`` of shape (n_individuals, n_features): each person's box of codes (protected columns are
        ignored: every combination is compared); default their own row. Coupled columns must be single codes.
    similar : mapping, optional
        Each person's neighbourhood, with radii in the data's units (``{"age": 2, "hours_per_week": 4}``; see
        :mod:`.neighbourhood`); not with ``boxes``.
    rows_name : str, optional
        What ``rows`` are, in words.
    max_seconds : float or None, default=None
        Wall-second budget for wider boxes, the checks of small boxes and the branch and bound together (None:
        until every person is decided).
    bound, batch_size, device
        Of :class:`~chiralfair.certification.branch_and_bound.BranchAndBound` (networks only).
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator, default=0
        Draws the points the network or trees read from the model are checked on.
    n_jobs : int or None, default=None
        As in :func:`certify_domain` (the tree search of wider boxes).

    Returns
    -------
    IndividualCertificates

    Raises
    ------
    ModelCapabilityError
        If the model is not a ReLU network or tree ensemble certification reads.
    ConfigError, DomainError
        For a bad row number, both ``boxes`` and ``similar``, a bad ``similar`` (naming the feature), boxes of
        the wrong shape, outside the domain's bounds, or wider than one code on a coupled column, or ``boxes`` for a
        model fed your rows.

    Examples
    --------
    >>> certificates = certify_individuals(model, dataset, test_rows)              # doctest: +SKIP
    >>> f"{certificates.certified_share:.1%} of test individuals certified unaffected"  # doctest: +SKIP
    """
    started = time.perf_counter()
    if boxes is not None and similar is not None:
        raise ConfigError("give boxes or similar, not both")
    rng, described = resolve_random_state(random_state)
    model, domain = _model_and_domain(model, dataset)
    people = population_of(dataset) if model.reads_people else None
    if people is not None and boxes is not None:
        raise ConfigError(f"model {model.name!r} is fed your rows, so its certificates are read on them: give each "
                          "person's neighbourhood as similar= (radii in your units), not boxes= of codes")
    grid = None
    if people is not None and similar is not None:
        from .people_grid import people_grid

        rows, rows_name = _rows(dataset, rows, rows_name)
        grid = people_grid(dataset, rows, similar)
        searched, space_domain = grid.model(model), grid.domain
    else:
        searched, space_domain = model, domain
    # each person's own row is checked on the model: the model is read only to search wider boxes
    options: dict[str, Any] = {"max_seconds": max_seconds, "max_depth": None, "max_boxes": None,
                               "batch_size": batch_size, "bound": bound, "split": "influence", "device": device,
                               "n_jobs": n_jobs}
    unread = None  # why the trees were not read within the budget (their boxes are then not searched)
    try:
        engine, read = _engine(searched, space_domain, rng, **options,
                               deadline=None if max_seconds is None else started + max_seconds,
                               read=boxes is not None or similar is not None, always_stop=True)
    except TimeLimitError as err:  # the budget is the people's whole: their own rows are still checked
        engine, read = _engine(searched, space_domain, rng, **options, read=False)
        unread = str(err)
    params = engine.params()
    rows, rows_name = _rows(dataset, rows, rows_name)
    check = DiscriminationCheck(model, domain)
    status = np.full(len(rows), UNDECIDED, dtype=np.int8)
    person = np.arange(len(rows), dtype=np.int64)
    queries = model.n_queries
    if grid is not None:
        boxes, person = (grid.lo, grid.hi), grid.person
    elif similar is not None:
        from .neighbourhood import similar_boxes

        box_lo, box_hi, person = similar_boxes(dataset, rows, similar)
        boxes = (box_lo, box_hi)
    stats: dict = {}
    X = np.asarray(dataset.X[rows], dtype=np.int64)
    found = np.zeros((0, domain.n_features), dtype=np.int64)  # concrete IDIs met, and the box of each person
    found_person = np.zeros(0, dtype=np.int64)
    if boxes is None:
        # a model fed your rows is asked about each person as given (every other value exact), not their bins
        result = check.check(X, population=None if people is None else people.take(rows))
        status[:] = np.where(result.is_idi, 1, 0)
        found, found_person = X[status == 1], np.flatnonzero(status == 1)
    else:
        space = KeySpace(space_domain)
        lo, hi = _person_boxes(boxes, len(person), space_domain, space)
        box_check = check if grid is None else DiscriminationCheck(searched, space_domain)
        member = space.membership(lo, hi)
        tree = isinstance(engine, TreeBranchAndBound)
        box_status = np.zeros(len(person), dtype=np.int8)  # a box no input of which can exist: nothing to discriminate
        # each person's own row first, where one of their boxes holds it: an IDI there is their witness, whatever the
        # budget leaves of the search (and their boxes are not searched)
        own_codes = X if grid is None else grid.X
        own = box_check.check(own_codes)
        own_key = space.keys_of(own_codes)
        holds = np.all((own_key[person] >= lo) & (own_key[person] <= hi), axis=1)
        own_idi = own.is_idi & (np.bincount(person[holds], minlength=len(rows)) > 0)
        skip = own_idi[person]
        # a network's small boxes: every key checked on the model, exactly (cheaper than bounding them)
        small = np.zeros(len(person), dtype=bool) if tree else (
            (member != OUTSIDE) & (space.volume(lo, hi) <= ENUMERATE_KEYS) & ~skip)
        deadline = None if max_seconds is None else started + max_seconds
        small_status, small_input, met, met_box = _enumerate_boxes(space, box_check, lo[small], hi[small], deadline)
        box_status[small] = small_status
        # the tree search splits a box partly inside the domain itself (a key outside it is certified: no input)
        inside = ((member != OUTSIDE) if tree else (member == INSIDE) & ~small) & ~skip
        engine.max_seconds = None if max_seconds is None else max(0.0, max_seconds - (time.perf_counter() - started))
        if tree and unread is not None:  # no time left to search: every box searched stays undecided
            n_inside = int(inside.sum())
            tally = Tally(certified=np.zeros(n_inside), falsified=np.zeros(n_inside),
                          row_status=np.zeros(0, np.int8), stats={"stopped": "time", "n_boxes": 0, "unread": unread})
        elif tree:
            tally = engine.run(read, space, box_check, lo[inside], hi[inside], stop_on_idi=True)
        else:
            tally = engine.run(read, space, box_check, lo[inside], hi[inside])
        stats = {**tally.stats, "n_enumerated_boxes": int(small.sum()),
                 "n_enumerated_keys": float(space.volume(lo[small], hi[small]).sum())}
        volume = space.volume(lo[inside], hi[inside])
        box = np.flatnonzero(inside)
        box_status[box] = UNDECIDED
        box_status[box[(tally.falsified == 0) & (tally.certified >= volume)]] = 0
        box_status[box[tally.falsified > 0]] = 1
        found_parts, found_box = [own_codes[own_idi], met], [np.flatnonzero(skip & holds)[
            np.unique(person[skip & holds], return_index=True)[1]], np.flatnonzero(small)[met_box]]
        if tally.idis:  # every concrete IDI met falsifies every box holding it (boxes of people overlap)
            found_idis = np.concatenate(tally.idis)
            holder, held = _holders(space.keys_of(found_idis), lo[inside], hi[inside], found_idis)
            found_parts.append(held)
            found_box.append(box[holder])
        # a network's large box partly inside the domain is not bounded (the bounds assume every key can exist):
        # some of its inputs exist, so it is undecided, never certified nor left out
        partly = np.zeros(len(person), dtype=bool) if tree else (
            (member != INSIDE) & (member != OUTSIDE) & ~small & ~skip)
        box_status[partly] = UNDECIDED
        stats["n_partly_inside_undecided"] = int(partly.sum())
        found_at = np.concatenate(found_box)
        box_status[found_at] = 1
        found, found_person = np.concatenate(found_parts), person[found_at]
        # a person is affected if one of their boxes is, certified if all are, undecided otherwise
        affected = np.zeros(len(rows), dtype=bool)
        affected[person[box_status == 1]] = True
        open_ = np.zeros(len(rows), dtype=bool)
        open_[person[box_status == UNDECIDED]] = True
        status[:] = np.where(affected, 1, np.where(open_, UNDECIDED, 0))
        # no input of any of their boxes could exist, so no counterpart either: left out, as by the verdict
        some_input = np.zeros(len(rows), dtype=bool)
        some_input[person[inside]] = True
        some_input[person[np.flatnonzero(small)[small_input]]] = True
        some_input[person[partly]] = True
        some_input[own_idi] = True  # their own row and a counterpart of it exist
        stats["n_own_row_idis"] = int(own_idi.sum())
        status[~some_input] = LEFT_OUT
    if grid is not None:
        stats["grid"] = {"values": {name: int(domain_feature.size) for name, domain_feature in
                                    zip(grid.names, grid.domain.features, strict=True)}}
    status[_without_counterpart(check, X)] = LEFT_OUT
    witness: np.ndarray | None
    witness_cf: np.ndarray | None
    witness_labels: np.ndarray | None
    witness_rows = None
    if people is None:
        witness, witness_cf, witness_labels, refuted = _witnesses(model, check, X, status, found, found_person)
    elif grid is not None:  # met on the grid of your values: decoded to your rows, re-queried through your model
        grid_check = DiscriminationCheck(searched, grid.domain)
        codes, codes_cf, witness_labels, refuted = _witnesses(searched, grid_check, grid.X, status, found,
                                                              found_person)
        has = witness_labels[:, 0] >= 0
        witness = witness_cf = None
        witness_rows = _paired(grid.frame(codes[has]), grid.frame(codes_cf[has]))
    else:  # each person's own row: the row as given and its counterpart, re-queried through your model
        witness = witness_cf = None
        witness_labels, witness_rows, refuted = _own_row_witnesses(model, check, X, people.take(rows), status)
    status[refuted] = UNDECIDED  # an IDI the model does not confirm proves nothing
    meta = _meta(params, described, dataset, model, rows_name=rows_name,
                 unplaced=unplaced_by_attribute(domain, X),
                 boxes=("similar: " + ", ".join(f"{k}={v}" for k, v in similar.items()) if similar is not None
                        else "given" if boxes is not None else "each row itself"),
                 read=_described(read, engine), n_queries=int(model.n_queries - queries), stats=stats,
                 constraints=list(domain.describe_constraints()), n_witnesses_refuted=int(refuted.sum()))
    return IndividualCertificates(rows=rows, status=status, seconds=time.perf_counter() - started,
                                  rows_name=rows_name, meta=meta, witness=witness, witness_counterpart=witness_cf,
                                  witness_labels=witness_labels, witness_rows=witness_rows)


def _paired(x: pd.DataFrame, x_cf: pd.DataFrame) -> pd.DataFrame:
    """Witnesses ``x`` and their counterparts ``x'`` side by side (``x'`` under the names with ``_counterpart``)."""
    other = x_cf.reset_index(drop=True)
    other.columns = [f"{c}_counterpart" for c in other.columns]
    return pd.concat([x.reset_index(drop=True), other], axis=1)


def _own_row_witnesses(model, check: DiscriminationCheck, X: np.ndarray, people, status: np.ndarray
                       ) -> tuple[np.ndarray, pd.DataFrame, np.ndarray]:
    """Each affected person's witness on their own row as given, for a model fed your rows.

    ``x`` is the person's row, ``x'`` that row with the protected (and coupled) columns of a counterpart with another
    label; both are sent to the model once more, in one batch; a pair whose labels do not differ there is refuted.

    Returns
    -------
    labels : numpy.ndarray of int64, shape (n, 2)
        ``f(x)``, ``f(x')`` as re-queried; -1 for the others.
    rows : pandas.DataFrame, shape (n_witnesses, 2 * n_features)
        The confirmed pairs in your values, in the order of the people.
    refuted : numpy.ndarray of bool, shape (n,)
        Affected people whose witness the model does not confirm.
    """
    n = len(X)
    labels = np.full((n, 2), -1, dtype=np.int64)
    who = np.flatnonzero(status == 1)
    mine = people.take(who)
    if not len(who):
        return labels, _paired(mine.frame, mine.frame), np.zeros(n, dtype=bool)
    result = check.check(X[who], population=mine)
    x = mine.frame
    x_cf = mine.counterparts(result.counterparts(check.domain))
    answer = np.asarray(model.predict(pd.concat([x, x_cf], ignore_index=True)))
    fx, fcf = answer[:len(who)], answer[len(who):]
    ok = result.is_idi & (fx != fcf)
    labels[who[ok], 0], labels[who[ok], 1] = fx[ok], fcf[ok]
    refuted = (status == 1) & (labels[:, 0] < 0)
    return labels, _paired(x[ok], x_cf[ok]), refuted


def _enumerate_boxes(space: KeySpace, check: DiscriminationCheck, lo: np.ndarray, hi: np.ndarray,
                     deadline: float | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Decide small boxes of keys exactly: every key checked on the model at one input that can exist.

    Batches of at most :data:`ENUMERATE_ROWS` model rows; at the deadline the boxes not reached stay undecided.

    Returns
    -------
    status : numpy.ndarray of int8, shape (n_boxes,)
        ``CERTIFIED`` (no key an IDI), ``FALSIFIED`` or ``UNDECIDED`` (not reached).
    has_input : numpy.ndarray of bool, shape (n_boxes,)
        Whether some key of the box has an input that can exist (reached boxes only).
    idis : numpy.ndarray of int64, shape (n_falsified, n_features)
        For each falsified box, its first IDI.
    idi_box : numpy.ndarray of int64, shape (n_falsified,)
        Its box.
    """
    n, k = len(lo), space.n_combinations
    status = np.full(n, UNDECIDED, dtype=np.int8)
    has_input = np.zeros(n, dtype=bool)
    idis, idi_box = [np.zeros((0, space.domain.n_features), np.int64)], [np.zeros(0, np.int64)]
    width = (hi - lo + 1).astype(np.int64)
    volume = np.prod(width, axis=1)
    ends = np.cumsum(volume)
    at = 0
    while at < n:
        if deadline is not None and time.perf_counter() > deadline:
            break
        stop = min(n, max(at + 1, int(np.searchsorted(ends, (ends[at - 1] if at else 0) + ENUMERATE_ROWS // k,
                                                      side="right"))))
        part = volume[at:stop]
        owner = np.repeat(np.arange(at, stop), part)
        local = np.arange(int(part.sum())) - np.repeat(np.cumsum(part) - part, part)
        keys = lo[owner].copy()
        for c in range(lo.shape[1]):  # mixed radix over the box's columns
            keys[:, c] += local % width[owner, c]
            local //= width[owner, c]
        possibility = space.possibility(keys, keys)
        if possibility is None:
            real, combination = np.ones(len(keys), dtype=bool), np.zeros(len(keys), dtype=np.int64)
        else:
            ok = possibility == POSSIBLE
            real, combination = ok.any(axis=1), ok.argmax(axis=1)
        is_idi = np.zeros(len(keys), dtype=bool)
        X = space.points(keys[real], combination[real])
        if len(X):
            is_idi[real] = check.check(X).is_idi
        has_input[at:stop] = np.bincount(owner - at, weights=real, minlength=stop - at) > 0
        hit = np.bincount(owner - at, weights=is_idi, minlength=stop - at) > 0
        status[at:stop] = np.where(hit, FALSIFIED, CERTIFIED)
        if hit.any():
            points = np.full(len(keys), -1, dtype=np.int64)
            points[real] = np.arange(len(X))
            where = np.flatnonzero(is_idi)
            boxes, first = np.unique(owner[where], return_index=True)
            idis.append(X[points[where[first]]])
            idi_box.append(boxes)
        at = stop
    return status, has_input, np.concatenate(idis), np.concatenate(idi_box)


def _holders(keys: np.ndarray, lo: np.ndarray, hi: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which boxes hold some key, and for each such box the first input (in the order given) whose key it holds.

    Boxes of people are their own codes widened on a few columns, so a key can only lie in a box whose one-code
    columns (those one code wide in every box) it matches: keys and boxes are grouped by those columns first, and
    only the pairs of a group are compared (linear in the keys and boxes when the people differ there).

    Returns
    -------
    box : numpy.ndarray of int64, shape (n_held,)
        Sorted positions of the boxes holding a key.
    first : numpy.ndarray of int64, shape (n_held, n_features)
        The first input of ``X`` whose key each of them holds.
    """
    _, first = np.unique(keys, axis=0, return_index=True)  # one input per key, in the order given
    first = np.sort(first)
    keys, X = keys[first], X[first]
    fixed = np.all(lo == hi, axis=0)
    _, group = np.unique(np.concatenate([lo[:, fixed], keys[:, fixed]]), axis=0, return_inverse=True)
    group = np.asarray(group).reshape(-1)
    box_group, key_group = group[:len(lo)], group[len(lo):]
    order = np.argsort(box_group, kind="stable")
    start = np.searchsorted(box_group[order], key_group, side="left")
    count = np.searchsorted(box_group[order], key_group, side="right") - start
    found = np.full(len(lo), len(keys), dtype=np.int64)  # the first key index held, len(keys): none
    free = ~fixed
    ends = np.cumsum(count)
    at = 0
    while at < len(keys):  # chunks of at most ~4M (key, box) pairs
        stop = max(at + 1, int(np.searchsorted(ends, (ends[at - 1] if at else 0) + (1 << 22), side="right")))
        stop = min(stop, len(keys))
        n = count[at:stop]
        key = np.repeat(np.arange(at, stop), n)
        offset = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
        box = order[np.repeat(start[at:stop], n) + offset]
        held = np.all((keys[key][:, free] >= lo[box][:, free]) & (keys[key][:, free] <= hi[box][:, free]), axis=1)
        np.minimum.at(found, box[held], key[held])
        at = stop
    box = np.flatnonzero(found < len(keys))
    return box, X[found[box]]


def _witnesses(model, check: DiscriminationCheck, X: np.ndarray, status: np.ndarray, found: np.ndarray,
               found_person: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each affected person's witness pair, re-queried on the model; and who the model did not confirm.

    A person's witness ``x`` is, where it is an IDI, the IDI met in their box with the person's own protected (and
    coupled) values: their own row when the box is that row, a neighbour that differs from them only where the box
    lets it. Otherwise (their own combination there breaks a constraint) it is the IDI met as it was. ``x'`` is a
    counterpart of ``x`` with another label. Both are sent to the model once more, in one batch; a pair whose labels
    do not differ there is refuted.

    Returns
    -------
    witness, witness_counterpart : numpy.ndarray of int64, shape (n, n_features)
        -1 in the rows of people who are not affected.
    labels : numpy.ndarray of int64, shape (n, 2)
        ``f(x)``, ``f(x')`` as re-queried; -1 for the others.
    refuted : numpy.ndarray of bool, shape (n,)
        Affected people whose witness the model does not confirm (or who have none).
    """
    domain = check.domain
    n, d = X.shape
    witness = np.full((n, d), -1, dtype=np.int64)
    witness_cf = np.full((n, d), -1, dtype=np.int64)
    labels = np.full((n, 2), -1, dtype=np.int64)
    affected = status == 1
    first = np.full(n, -1, dtype=np.int64)  # the first IDI met in each person's boxes
    keep = affected[found_person]
    people, at = np.unique(found_person[keep], return_index=True)
    first[people] = np.flatnonzero(keep)[at]
    who = np.flatnonzero(first >= 0)
    if len(who):
        met = found[first[who]]
        fixed = np.zeros(d, dtype=bool)
        fixed[list(domain.protected) + list(domain.coupled_columns)] = True
        own = np.where(fixed[None], X[who], met)  # the neighbour with the person's own protected values
        result = check.check(own)
        usable = result.is_idi.copy()
        if result.possible is not None:  # the neighbour itself must be able to exist
            combination = check.own_combination(own)
            usable &= (combination >= 0) & result.possible[np.arange(len(own)), np.maximum(combination, 0)]
        x = np.where(usable[:, None], own, met)
        x_cf = result.counterparts(domain)
        if (~usable).any():
            x_cf[~usable] = check.check(x[~usable]).counterparts(domain)
        answer = model.predict(np.concatenate([x, x_cf]))  # the pair itself, once more, on the model
        fx, fcf = answer[:len(who)], answer[len(who):]
        ok = fx != fcf
        witness[who[ok]], witness_cf[who[ok]] = x[ok], x_cf[ok]
        labels[who[ok], 0], labels[who[ok], 1] = fx[ok], fcf[ok]
    refuted = affected & (labels[:, 0] < 0)
    return witness, witness_cf, labels, refuted


def people_verdict(people: IndividualCertificates, model, dataset, favourable: int, *, population: str = "test"):
    """The per-person certificates as a :class:`~chiralfair.verdict.Verdict`, which every door reads.

    Every counted person decided, the share affected is exact for these rows, and the verdict decides the rest once,
    as for every other door (:mod:`chiralfair.verdict.result`): the interval for the people the model will meet
    (Clopper-Pearson of the count), the groups by the person's own protected value, the groups too small to tell
    and the most harmed group. A person is **harmed** when their witness (:class:`IndividualCertificates`) gets
    the unfavourable label while its counterpart gets the favourable one: on their own row, the person themself;
    within ``similar=``, the neighbour found, with their own protected values.

    Parameters
    ----------
    people : IndividualCertificates
    model : CountingModel
        The model certified (its protected combinations are read; it is not queried).
    dataset : Dataset
        The dataset certified (``people.rows`` are its rows).
    favourable : {0, 1}
        The favourable label.
    population : {"test", "rows"}, default="test"
        Which rows the people are (:attr:`Verdict.population`).

    Returns
    -------
    Verdict

    Raises
    ------
    ConfigError
        With undecided people (the share affected is not known: :meth:`IndividualCertificates.affected_bounds`
        gives its range), no witnesses, or a favourable label other than 0 or 1.
    """
    from ..verdict.counts import VerdictCounts
    from ..verdict.estimation import _group_masks, _group_table
    from ..verdict.result import Verdict

    if favourable not in (0, 1):
        raise ConfigError(f"favourable must be the label 0 or 1, got {favourable!r}")
    if people.count("undecided"):
        raise ConfigError(f"{people.count('undecided'):,} people are undecided, so the share affected is not known "
                          "(affected_bounds() gives its range): no verdict; certify with more time")
    if people.witness_labels is None:
        raise ConfigError("these certificates hold no witnesses (written by an earlier version): no verdict")
    domain = dataset.domain
    X = np.asarray(dataset.X[people.rows], dtype=np.int64)
    counted = people.status != LEFT_OUT
    affected = people.status[counted] == 1
    harmed = affected & (people.witness_labels[counted, 0] != favourable)
    unplaced_rows = (domain.protected_value_index(X) < 0).any(axis=1)
    model, _ = _model_and_domain(model, dataset)
    combination = DiscriminationCheck(model, domain).own_combination(X[counted])
    masks = [mask for _, _, mask in _group_masks(domain, X[counted], combination)]
    counts = VerdictCounts(group_n=np.array([mask.sum() for mask in masks], dtype=np.int64),
                           group_affected=np.array([affected[mask].sum() for mask in masks], dtype=np.int64),
                           group_harmed=np.array([harmed[mask].sum() for mask in masks], dtype=np.int64))
    groups, group_confidence = _group_table(domain, counts, CONFIDENCE, "clopper-pearson", True)
    n = int(counted.sum())
    share = float(affected.sum() / n) if n else 0.0
    return Verdict(population=population, population_size=int(len(people.rows)),
                   protected=tuple(domain.protected_names), favourable=int(favourable), n_individuals=n,
                   n_affected=int(affected.sum()), n_harmed=int(harmed.sum()), share=share, lower=share, upper=share,
                   confidence=CONFIDENCE, method="clopper-pearson", margin=0.0, exact=True,
                   stopped_by="exact", gamma=None, groups=groups, group_confidence=group_confidence, gap=None,
                   rules=(), n_queries=int(people.meta.get("n_queries", 0)), seconds=float(people.seconds),
                   notes=(f"certified per person ({people.meta.get('boxes', 'each row itself')}): affected = proven "
                          "by a witness re-queried on the model, the others proven unaffected",),
                   meta={"population_rows": people.rows_name, "certificates": True},
                   couplings=tuple(domain.describe_couplings()), constraints=tuple(domain.describe_constraints()),
                   n_left_out=int((~counted).sum() - unplaced_rows.sum()),
                   unplaced=dict(people.meta.get("unplaced") or {}), n_unplaced=int(unplaced_rows.sum()))


# ---------------------------------------------------------------------------------------------- helpers
def _engine(model, domain, rng, *, max_seconds, max_depth, max_boxes, batch_size, bound, split, device,
            deadline: float | None = None, read: bool = True, n_jobs: int | None = None, always_stop: bool = False):
    """The branch and bound for the model's kind, and the model read (a TreeEnsemble or a ReluNetwork).

    A tree ensemble's reading stops at ``deadline`` (whatever its size with ``always_stop``); with ``read=False`` it
    is not read (None), the engine is still chosen by the model's kind. ``n_jobs`` is checked for every kind and read
    by the tree search alone.
    """
    from .tree_reading import is_tree_ensemble, read_tree_ensemble

    check_certify_options(n_jobs=n_jobs)
    if is_tree_ensemble(model):
        check_certify_options(bound=bound, split=split)
        engine: BranchAndBound | TreeBranchAndBound = TreeBranchAndBound(
            max_seconds=max_seconds, max_depth=max_depth, max_boxes=max_boxes, n_jobs=n_jobs)
        return engine, (read_tree_ensemble(model, domain, rng=rng, deadline=deadline, always_stop=always_stop)
                        if read else None)
    engine = BranchAndBound(max_seconds=max_seconds, max_depth=max_depth, max_boxes=max_boxes, batch_size=batch_size,
                            bound=bound, split=split, device=device)
    return engine, relu_network(model, domain, rng=rng)


def _described(read, engine=None) -> str:
    if isinstance(read, TreeEnsemble):
        return f"tree ensemble: {read.kind}"
    if read is None and isinstance(engine, TreeBranchAndBound):
        return "tree ensemble (not read: each person's own row is checked on the model)"
    return "ReLU network"


def _without_counterpart(check: DiscriminationCheck, X: np.ndarray) -> np.ndarray:
    """Whether each row has no counterpart that could exist: the verdict's left-out rule, shape (n,)."""
    domain = check.domain
    possible = domain.possible_counterparts(X) if domain.constraints else None
    return left_out_mask(check.own_combination(X), possible, check.n_combinations)


def _model_and_domain(model, dataset):
    from ..models.protocol import CountingModel

    if not isinstance(model, CountingModel):
        from ..models import as_model

        model = as_model(model)
    domain = dataset.domain
    if not domain.protected:
        raise DomainError("certification compares protected combinations: set the protected attributes first "
                          "(dataset.with_protected([...]))")
    return model, domain


def _rows(dataset, rows, rows_name: str | None) -> tuple[np.ndarray, str]:
    n = dataset.n_samples
    if rows is None:
        return np.arange(n, dtype=np.int64), rows_name or f"all {n:,} rows of {dataset.name}"
    given = np.asarray(rows)
    if given.dtype == bool:
        raise ConfigError("rows must be row numbers, not a boolean mask")
    if given.size and (not np.issubdtype(given.dtype, np.integer) or given.min() < 0 or given.max() >= n):
        raise ConfigError(f"rows must be row numbers in 0..{n - 1} of {dataset.name}")
    return given.astype(np.int64).reshape(-1), rows_name or f"{given.size:,} given rows of {dataset.name}"


def _owner(keys: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The initial box holding each key (-1: none, the key is outside the domain)."""
    owner = np.full(len(keys), -1, dtype=np.int64)
    step = max(1, (1 << 22) // max(1, len(lo) * keys.shape[1]))
    for start in range(0, len(keys), step):
        part = keys[start:start + step, None, :]
        inside = np.all((part >= lo[None]) & (part <= hi[None]), axis=2)
        found = inside.any(axis=1)
        owner[start:start + step] = np.where(found, inside.argmax(axis=1), -1)
    return owner


def _person_boxes(boxes, n: int, domain, space: KeySpace) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = (np.asarray(b) for b in boxes)
    if lo.shape != (n, domain.n_features) or hi.shape != lo.shape:
        raise ConfigError(f"boxes must be two arrays of shape ({n}, {domain.n_features}), got {lo.shape} and "
                          f"{hi.shape}")
    lo = domain.validate(lo, what="boxes' lower ends")
    hi = domain.validate(hi, what="boxes' upper ends")
    if (lo > hi).any():
        r, c = np.argwhere(lo > hi)[0]
        raise ConfigError(f"box {r}: column {domain.names[c]!r} has lower end {lo[r, c]} above upper end {hi[r, c]}")
    key_lo, key_hi = space.keys_of(lo), space.keys_of(hi)
    for i in space.coupled:
        wide = key_lo[:, i] != key_hi[:, i]
        if wide.any():
            raise ConfigError(f"box {int(np.argmax(wide))}: coupled column {domain.names[space.columns[i]]!r} must be "
                              "one code (it changes with its protected attribute)")
    return np.minimum(key_lo, key_hi), np.maximum(key_lo, key_hi)


def _unique_pairs(tally, domain) -> tuple[np.ndarray, ...]:
    """The concrete IDIs found, one per key (the first met)."""
    d = domain.n_features
    if not tally.idis:
        return (np.zeros((0, d), np.int64), np.zeros((0, d), np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))
    X = np.concatenate(tally.idis)
    _, first = np.unique(domain.keys(X), return_index=True)
    first = np.sort(first)
    return (X[first], np.concatenate(tally.counterparts)[first], np.concatenate(tally.labels)[first],
            np.concatenate(tally.counterpart_labels)[first])


def _meta(params: dict, random_state, dataset, model, **extra) -> dict:
    from ..results.provenance import library_versions

    return {"chiralfair_version": __version__, "versions": library_versions(), "params": params,
            "random_state": random_state, "dataset": dataset.name, "model": model.name,
            "cpu_count": os.cpu_count(), **extra}


def with_individuals(result: CertifyResult, individuals: IndividualCertificates | None) -> CertifyResult:
    """The domain's result carrying per-person certificates.

    Parameters
    ----------
    result : CertifyResult
    individuals : IndividualCertificates or None

    Returns
    -------
    CertifyResult
    """
    return replace(result, individuals=individuals)
