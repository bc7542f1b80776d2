"""HiGHS' log lines sent to a Python callable: the log forwarding of the LP solver.

The other session utilities every HiGHS user shares (a quiet ``highspy.Highs``, its Ctrl-C watch)
live in :mod:`solvopt.dsl.highs_export`.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

__all__ = ["forward_log"]


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
