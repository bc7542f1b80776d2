"""The HiGHS session of the LP solver: a ``highspy.Highs`` that stays silent on stdout, stops on
Ctrl-C and logs to the user's callable.

The session utilities every HiGHS user shares (the LP solver :mod:`solvopt.lp.highs`, the
MPS/LP reader :mod:`solvopt.lp.reader`, the k-HC node LPs :mod:`solvopt.khc.node_lp`) live in
:mod:`solvopt.dsl.highs_export` and are re-exported here: :func:`highspy_module` (import
highspy or raise BackendUnavailable), :func:`new_highs` (no banner or log on stdout: the CLI
prints JSON there), :func:`watch_interrupt` / :func:`was_interrupted` (a stop request ends a
run with model status ``kInterrupt``, incumbent and bound kept).

Defined here: :func:`forward_log`, which sends HiGHS' log lines to a Python callable (highspy's
``kCallbackLogging``) instead of the console.
"""
from __future__ import annotations

import contextlib
from typing import Callable, Iterator

from solvopt.dsl.highs_export import highspy_module, new_highs, was_interrupted, watch_interrupt

__all__ = ["forward_log", "highspy_module", "new_highs", "was_interrupted", "watch_interrupt"]


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
