"""Stops inside the transport methods: the exception a stopped pass raises, and a way to run a
third-party call that cannot be interrupted so that a time limit or Ctrl-C still ends the wait.

:func:`run_abandonable` runs the call in a daemon thread and polls ``stop`` every 50 ms from the
calling thread; when ``stop`` turns true it raises :class:`Stopped` at once and *abandons* the
call: the thread runs on to its end in the background (it holds no lock the caller needs and its
result is dropped), using one core until then; a process that exits (the command line) ends it.
This needs a call that releases the GIL while it works, as SciPy's ``linear_sum_assignment`` and
POT's ``ot.emd`` do (measured: the calling thread kept running every 30 ms during both).
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from solvopt.core.interrupt import ABANDONED_THREAD_NAME

POLL_SECONDS = 0.05
T = TypeVar("T")


class Stopped(Exception):
    """A pass or a call was stopped by its ``stop`` callable (time limit, Ctrl-C)."""


def poll(stop) -> None:
    """Raise :class:`Stopped` when ``stop`` (a callable or None) says so."""
    if stop is not None and stop():
        raise Stopped


def run_abandonable(fn: Callable[[], T], stop: Callable[[], bool] | None) -> T:
    """``fn()``, or :class:`Stopped` as soon as ``stop()`` turns true (the call is then abandoned).

    Exceptions of ``fn`` are raised in the caller. Without ``stop``, ``fn()`` runs in place."""
    if stop is None:
        return fn()
    poll(stop)
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:          # handed to the caller
            box["error"] = exc

    worker = threading.Thread(target=work, name=ABANDONED_THREAD_NAME, daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(POLL_SECONDS)
        if worker.is_alive() and stop():
            raise Stopped
    if "error" in box:
        raise box["error"]
    return box["value"]
