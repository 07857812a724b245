"""A cooperative time limit: long loops call :func:`check_deadline`, which raises once the limit has passed.

Used by experiment grids for their per-cell time limit. A thread or a Dask task cannot be stopped from outside
without killing its process (and the worker's other state with it), so the work itself checks the clock at
safe points: between the steps of a run and at every batch the generators send to the model (the IDI
recorder). A step that does not check (training a model, selecting seeds) finishes first, so a cell can
overrun its limit by the length of one such step. The limit lives in a context variable, so concurrent
threads each have their own.
"""

from __future__ import annotations

import contextlib
import time
from contextvars import ContextVar

from .exceptions import TimeLimitError

_deadline: ContextVar[tuple[float, float] | None] = ContextVar("chiralfair_deadline", default=None)


@contextlib.contextmanager
def time_limit(seconds: float | None):
    """Run the block with a time limit of ``seconds`` (None: no limit), checked by :func:`check_deadline`.

    Parameters
    ----------
    seconds : float or None
        Wall seconds from entering the block.
    """
    if seconds is None:
        yield
        return
    token = _deadline.set((time.monotonic() + float(seconds), float(seconds)))
    try:
        yield
    finally:
        _deadline.reset(token)


def check_deadline(where: str) -> None:
    """Raise if the current time limit has passed.

    Parameters
    ----------
    where : str
        The step being run, for the message (e.g. ``"the search"``).

    Raises
    ------
    TimeLimitError
        When called inside :func:`time_limit` after its limit.
    """
    limit = _deadline.get()
    if limit is not None and time.monotonic() > limit[0]:
        raise TimeLimitError(f"time limit of {limit[1]:g} s passed during {where}")
