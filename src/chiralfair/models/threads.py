"""Running models, training, SHAP and clustering on one thread.

Layers of width <= 30 on batches of a few thousand rows or fewer are far too small for intra-op parallelism,
and sklearn's OpenMP/BLAS pools spin on busy cores. ``benchmarks/threads.py`` measures one thread against two
on each step of a run (census, median of 5, 2 CPUs at load average 7-9 from other jobs;
``benchmarks/results/threads.md``): DNN training 1.30 s vs 13.6 s (2 epochs), chiral training 0.97 vs 12.7 s,
SHAP expected gradients on 2,000 rows 0.21 vs 0.83 s, KMeans + silhouette on 2,000 SHAP rows 0.31 vs 2.6 s,
LR fit 0.12 vs 0.19 s, HGB fit 1.04 vs 21.8 s, HGB prediction of 13k rows 0.18 vs 2.3 s, DNN prediction of
1M rows 0.66 vs 5.6 s. Two threads were ahead only within the noise: DBSCAN 0.138 vs 0.157 s (the runs overlap,
0.10-0.19 s against 0.12-0.18 s), HDBSCAN a tie (0.134 s), the DNN's 13k-row prediction 0.010 vs 0.012 s
(one two-thread run took 0.20 s). So every step runs on one thread: :func:`single_intra_op_thread` for torch,
:func:`single_native_thread` for sklearn, numpy and scipy. One thread also makes float reductions, hence
weights and predictions, independent of the machine's core count.

torch is imported only when a torch block is entered (torch models have imported it already), so that the
package works without torch.
"""

from __future__ import annotations

import contextlib
import threading

_lock = threading.Lock()
_active = 0
_threads_before = 1
_limit = 1  # threads of the blocks below; only benchmarks/threads.py changes it, through thread_limit()


@contextlib.contextmanager
def thread_limit(n: int):
    """Run the blocks of :func:`single_intra_op_thread` and :func:`single_native_thread` with ``n`` threads.

    For measuring one thread against several (``benchmarks/threads.py``); not thread-safe, and the library never
    calls it. Blocks entered before this one keep their setting.

    Parameters
    ----------
    n : int
        Threads per block, >= 1.

    Yields
    ------
    None
        The block runs under the limit.
    """
    global _limit
    before, _limit = _limit, int(n)
    try:
        yield
    finally:
        _limit = before


@contextlib.contextmanager
def single_intra_op_thread():
    """Run the block with ``torch.set_num_threads(1)``, then restore torch's setting.

    Re-entrant and safe across Python threads: the setting is restored when the last active block ends.
    Switching costs well under a microsecond.

    Yields
    ------
    None
        The block runs under the limit.
    """
    global _active, _threads_before
    import torch  # lazily: torch is needed only by torch models, which have imported it already

    with _lock:
        if _active == 0:
            _threads_before = torch.get_num_threads()
            torch.set_num_threads(_limit)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                torch.set_num_threads(_threads_before)


_controller = None


def single_native_thread():
    """Context manager limiting the OpenMP and BLAS pools (sklearn, numpy, scipy) to one thread.

    Uses one ``threadpoolctl.ThreadpoolController`` for the process, so entering costs microseconds.

    Yields
    ------
    None
        The block runs under the limit.
    """
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController
        _controller = ThreadpoolController()
    return _controller.limit(limits=_limit)
