"""Running models on one thread for the small batches of training and of the generators' steps.

Layers of width <= 30 on batches of a few thousand rows or fewer are far too small for intra-op parallelism.
Measured on this project's 2-core machine under load: one DNN training step 260 ms with two threads against
7.5 ms with one; EIDIG-INF at 1000 seeds x 300 local 4.8 s against 0.58 s; even one batch of 1M rows predicted
in 1.55 s against 0.52 s. One thread also makes float reductions, hence weights and predictions, independent
of the machine's core count. sklearn's OpenMP and BLAS pools behave the same way: a HistGradientBoosting model
predicted 200 rows in 84 ms with its default threads against 2.0 ms with one.
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
    """
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController
        _controller = ThreadpoolController()
    return _controller.limit(limits=_limit)
