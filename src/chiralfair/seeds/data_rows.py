"""Seed strategy ``data_rows``: initial IDIs found by checking data rows directly, under a query budget.

The baseline of the chiral model: what the queries that I spends on its chiral model and
its screening would find if they went straight into the discrimination check of data rows.
"""

from __future__ import annotations

import time

import numpy as np

from .._validation import check_int
from ..oracle import DiscriminationCheck
from .base import SeedStrategy, register_seed_strategy


@register_seed_strategy("data_rows")
class DataRowSeeds(SeedStrategy):
    """Initial IDIs from data rows checked in random order until a query budget is spent, no chiral model.

    Steps:

    1. shuffle the data rows with ``random_state``;
    2. run the discrimination check, in one batch, on the first ``max_queries // n_combinations`` of them
       (each checked row costs ``n_combinations`` queries, one per protected-value combination), so at most
       ``max_queries`` queries are spent;
    3. the IDIs among them, one per IDI key, in that random order, are the initial IDIs (``n_initial_idis``);
       the seeds are the first ``n_seeds`` of them;
    4. a shortfall is filled with the checked rows that are not IDIs (their status is known, so no query), then
       with unchecked rows, which are checked (beyond the budget; said in ``notes``).

    ``n_candidates`` is the number of rows checked, ``n_candidate_idis`` the IDIs among them and
    ``n_initial_queries`` the queries spent, so :attr:`~chiralfair.results.SeedReport.candidate_idi_share` and
    :attr:`~chiralfair.results.SeedReport.initial_idis_per_1000_queries` compare with those of ``i``.

    Parameters
    ----------
    max_queries : int, optional
        Query budget for finding the initial IDIs. By default the budget of ``i`` before its candidate check:
        one query per data row (``i`` predicts every row to find where the chiral model disagrees) plus one per
        row of the 60% training split (the rows its chiral model is trained on, counted as queries as in
        :attr:`~chiralfair.results.SeedReport.initial_idis_per_1000_queries`). ``i`` also checks its candidates
        (``n_candidates x n_combinations`` queries, about 6,300 on census sex), which this default leaves out
        because only the chiral model knows them: pass ``max_queries`` = ``i``'s ``n_initial_queries +
        chiral_training_rows`` for an equal budget.

    References
    ----------
    .. [1] Ma et al. "Enhanced Fairness Testing via Generating Effective Initial Individual Discriminatory
       Instances." arXiv:2209.08321, §3.1 (the chiral model's candidates, which this replaces).
    """

    name = "data_rows"

    def __init__(self, *, max_queries: int | None = None):
        if max_queries is not None:
            max_queries = check_int(max_queries, "max_queries", minimum=1)
        super().__init__(max_queries=max_queries)
        self.max_queries = max_queries

    def budget(self, dataset) -> int:
        """The query budget for ``dataset``: ``max_queries``, or the default described in the class docstring.

        Parameters
        ----------
        dataset : Dataset
            The pool of data rows.

        Returns
        -------
        int
            Model queries.
        """
        if self.max_queries is not None:
            return self.max_queries
        return dataset.n_samples + len(dataset.split(0)[0])

    def _choose(self, model, dataset, n_seeds, rng):
        t0, q0 = time.perf_counter(), model.n_queries
        check = DiscriminationCheck(model, dataset.domain)
        budget = self.budget(dataset)
        order = rng.permutation(dataset.n_samples)
        n_checked = min(dataset.n_samples, budget // check.n_combinations)
        checked = dataset.X[order[:n_checked]]
        is_idi = check.check(checked).is_idi
        n_initial_queries = model.n_queries - q0
        hits = checked[is_idi]
        _, first = np.unique(dataset.domain.keys(hits), return_index=True)
        initial = hits[np.sort(first)]  # first occurrence in the random order
        seeds, seed_idi = initial[:n_seeds], np.ones(min(n_seeds, len(initial)), dtype=bool)
        notes = []
        if n_checked == 0:
            notes.append(f"max_queries={budget} is below the {check.n_combinations} queries of one check: "
                         "no data row was checked")
        n_fill = n_seeds - len(seeds)
        if n_fill > 0:
            seeds, seed_idi = self._fill(check, dataset, order, checked[~is_idi], seeds, seed_idi, n_checked,
                                         n_fill, notes)
        info = {"is_idi": seed_idi, "seconds": {"prediction_and_check": time.perf_counter() - t0},
                "n_candidates": int(n_checked), "n_candidate_idis": int(is_idi.sum()),
                "n_initial_idis": int(len(initial)), "n_initial_queries": int(n_initial_queries),
                "notes": tuple(notes), "meta": {"max_queries": int(budget)}}
        return seeds, info

    @staticmethod
    def _fill(check, dataset, order, known_fair, seeds, seed_idi, n_checked, n_fill, notes):
        """Top up with checked non-IDI rows, then unchecked rows (checked now), repeating rows if need be."""
        fill = known_fair[:n_fill]
        fill_idi = np.zeros(len(fill), dtype=bool)
        rest = n_fill - len(fill)
        if rest > 0:
            unchecked = dataset.X[order[n_checked:]]
            extra = unchecked[:rest] if len(unchecked) else unchecked
            if len(extra):
                fill = np.concatenate([fill, extra])
                fill_idi = np.concatenate([fill_idi, check.check(extra).is_idi])
                notes.append(f"{len(extra)} unchecked data rows fill the seeds; their check is beyond the budget")
        pool, pool_idi = np.concatenate([seeds, fill]), np.concatenate([seed_idi, fill_idi])
        notes.insert(0, f"{len(seeds)} initial IDIs for {len(seeds) + n_fill} seeds: filled with {len(fill)} data "
                        f"rows, {int(fill_idi.sum())} of which are IDIs")
        if len(pool) < len(seeds) + n_fill:
            idx = np.resize(np.arange(len(pool)), len(seeds) + n_fill)
            notes.append(f"n_seeds={len(seeds) + n_fill} exceeds the {dataset.n_samples} data rows: rows repeat")
            return pool[idx], pool_idi[idx]
        return pool, pool_idi
