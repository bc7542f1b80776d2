"""Ctrl-C returns the best: a process-wide stop request that solvers poll.

While a solve runs (:func:`catching_sigint`, entered by ``Solver.run``), the first SIGINT does
not raise: it sets the stop request, and each solver loop, chunk driver and backend callback
(HiGHS, SCIP) checks :func:`stop_requested` and returns its incumbent and bound with
termination INTERRUPTED. A second Ctrl-C raises KeyboardInterrupt for code that does not poll;
``Solver.run`` turns that into an INTERRUPTED result too, so no KeyboardInterrupt escapes
``solve()``. Outside the main thread signals cannot be caught; there :func:`request_stop` is
the way to stop a run (e.g. from a GUI or a dask worker).
"""
from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from types import FrameType

from .result import Termination

# The name of a thread that runs a third-party call a stop may abandon (it cannot be
# interrupted); the command line ends the process at once while one still runs.
ABANDONED_THREAD_NAME = "solvopt-abandonable"

_stop = threading.Event()
_depth = 0
_lock = threading.Lock()


def stop_requested() -> bool:
    """True once a stop was requested (Ctrl-C or :func:`request_stop`) during the current solve."""
    return _stop.is_set()


def stop_reason(deadline: float | None = None) -> Termination | None:
    """Why a search loop should stop now: INTERRUPTED (a stop request), TIME_LIMIT (``deadline``,
    a ``time.perf_counter()`` value, has passed) or None."""
    if _stop.is_set():
        return Termination.INTERRUPTED
    if deadline is not None and time.perf_counter() >= deadline:
        return Termination.TIME_LIMIT
    return None


def request_stop() -> None:
    """Ask the running solve(s) to stop and return their best so far."""
    _stop.set()


def clear_stop() -> None:
    _stop.clear()


def _handler(signum: int, frame: FrameType | None) -> None:
    if _stop.is_set():  # second Ctrl-C: stop hard
        raise KeyboardInterrupt
    _stop.set()


@contextlib.contextmanager
def catching_sigint() -> Iterator[None]:
    """Install the stop-request handler for SIGINT for the outermost solve (or CLI batch); nests.

    Only the main thread can install signal handlers; the outermost entry that installed the
    handler restores the previous one (the default handler when the previous was set from C).
    """
    global _depth
    with _lock:
        outer = _depth == 0
        _depth += 1
    installed, previous = False, None
    if outer:
        # a fresh outermost solve (or CLI batch) starts with no stop request; the CLI wraps its
        # whole batch, so a Ctrl-C during one instance is still seen when it decides on the next
        _stop.clear()
        if threading.current_thread() is threading.main_thread():
            try:
                previous = signal.signal(signal.SIGINT, _handler)
                installed = True
            except ValueError:  # not the main interpreter
                installed = False
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            last = _depth == 0
        if last:
            _stop.clear()  # the request belonged to this solve (or CLI batch); it has been answered
        if installed:
            signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)
