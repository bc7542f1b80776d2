"""A ``highspy.Highs`` that behaves inside solvopt: silent on stdout, stopped by Ctrl-C, logging to progress.

Used by the HiGHS solver (:mod:`solvopt.lp.highs`), the MPS/LP reader and the k-HC node LPs:

- :func:`new_highs` (from :mod:`solvopt.dsl.highs_export`): a Highs whose banner and log never reach
  stdout (the CLI prints JSON there);
- :func:`watch_interrupt`: while inside, a HiGHS run on ``h`` stops at its next interrupt check
  (every simplex/IPM/QP iteration, every few MIP nodes) once a stop is requested (Ctrl-C or
  :func:`solvopt.core.interrupt.request_stop`); the run ends with model status ``kInterrupt``
  and keeps its incumbent and bound;
- :func:`forward_log`: while inside, HiGHS' log lines go to a Python callable instead of the console.

Both use highspy's callbacks (``kCallback*Interrupt`` with ``user_interrupt = True``,
``kCallbackLogging``). highspy's own ``cancelSolve()`` is the same mechanism (a flag read by
those callbacks when ``HandleUserInterrupt`` is on), so no watcher thread is needed: the
interrupt callbacks run Python on the solving thread, which is also where CPython runs the
SIGINT handler that sets the stop request.
"""
from __future__ import annotations

import contextlib
from typing import Callable, Iterator

from solvopt.core.errors import BackendUnavailable
from solvopt.core.interrupt import stop_requested
from solvopt.dsl.highs_export import new_highs

__all__ = ["forward_log", "new_highs", "was_interrupted", "watch_interrupt"]


def highspy_module():
    try:
        import highspy
    except ImportError:
        raise BackendUnavailable("highspy is not installed: pip install highspy") from None
    return highspy


def _interrupt_callbacks(h):
    from highspy import cb
    kinds = [cb.HighsCallbackType.kCallbackSimplexInterrupt, cb.HighsCallbackType.kCallbackIpmInterrupt,
             cb.HighsCallbackType.kCallbackMipInterrupt]
    qp = getattr(cb.HighsCallbackType, "kHighsCallbackQpInterrupt", None)
    if qp is not None and int(qp) < len(h.callbacks):
        kinds.append(qp)
    return [h.callbacks[int(k)] for k in kinds]


def _stop_check(event) -> None:
    # set both ways: HiGHS keeps the flag from an earlier interrupted run of the same Highs
    event.interrupt(stop_requested())


@contextlib.contextmanager
def watch_interrupt(h) -> Iterator[None]:
    """While inside, runs of ``h`` stop (model status ``kInterrupt``) once a stop is requested.

    Wrap a whole sequence of runs (e.g. every node LP of a branch-and-bound) in one ``with``;
    after a run, :func:`was_interrupted` tells whether it was cut short this way.
    """
    events = _interrupt_callbacks(h)
    for event in events:
        event.subscribe(_stop_check)
    try:
        yield
    finally:
        for event in events:
            event.unsubscribe(_stop_check)


def was_interrupted(h) -> bool:
    """True when the last run of ``h`` stopped because of a user interrupt."""
    import highspy
    return h.getModelStatus() in (highspy.HighsModelStatus.kInterrupt, highspy.HighsModelStatus.kHighsInterrupt)


@contextlib.contextmanager
def forward_log(h, sink: Callable[[str], None] | None) -> Iterator[None]:
    """While inside, HiGHS' log lines on ``h`` go to ``sink`` (one call per line), never to stdout.

    ``sink=None`` leaves HiGHS silent.
    """
    if sink is None:
        yield
        return

    def on_log(event) -> None:
        for line in str(event.message).splitlines():
            sink(line)

    h.setOptionValue("log_to_console", False)  # with output on, only the callback sees the lines
    h.setOptionValue("output_flag", True)
    h.cbLogging.subscribe(on_log)
    try:
        yield
    finally:
        h.cbLogging.unsubscribe(on_log)
        h.setOptionValue("output_flag", False)
