"""Throttled progress lines on stderr for long runs (node counts, bounds, scenario batches).

Progress never goes to stdout (stdout carries results: tables, ``--json`` lines). The default
(``enabled=None``, the ``progress`` option left unset) is on when stderr is a terminal. Backends'
own logs are forwarded here (``progress(line, force=True)``) rather than printed. Long runs over
a known amount of work use :meth:`Progress.rate`, whose one format (:func:`format_rate`) gives
the count done, the rate and the ETA.

Every line (progress and forwarded backend logs, printed or not) also goes to the standard
``logging`` logger ``solvopt.progress`` (a child of ``solvopt``) at level INFO, whether or not
the line is printed. ``solvopt`` attaches only a ``NullHandler``, so nothing changes on stderr
unless the application configures logging, e.g.::

    import logging
    logging.basicConfig(level=logging.INFO)       # every solver's progress lines, through logging
    logging.getLogger("solvopt").setLevel(logging.WARNING)  # or silence them again

A line printed on stderr (``progress=True``) and logged to a handler that also writes to stderr
shows twice; keep ``progress`` off when logging carries the lines.
"""
from __future__ import annotations

import logging
import math
import sys
import time
from collections.abc import Callable
from typing import TextIO

LOGGER = logging.getLogger("solvopt.progress")


class Progress:
    """Prints at most one line every ``interval`` seconds, only when enabled.

    Enabled when ``enabled`` is True, or when it is None and stderr is a terminal.
    """

    def __init__(self, enabled: bool | None = None, interval: float = 1.0, stream: TextIO | None = None,
                 log: Callable[[str], None] | None = None):
        self.stream = stream or sys.stderr
        if enabled is None:
            enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = bool(enabled)
        self.interval = interval
        self.log = log
        self._last = -float("inf")
        self.start = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def __call__(self, message: str, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self._last < self.interval:
            return
        self._last = now
        line = f"[{now - self.start:8.2f}s] {message}"
        if self.log is not None:
            self.log(line)
        if LOGGER.isEnabledFor(logging.INFO):
            LOGGER.info(line)
        if self.enabled:
            print(line, file=self.stream, flush=True)

    def rate(self, done: int, total: int, what: str = "scenarios", elapsed: float | None = None,
             force: bool = False) -> None:
        """A line ``done/total what, rate/s, ETA`` (``elapsed``: seconds the ``done`` items took,
        default since this object was made); throttled like any line unless ``force``."""
        self(format_rate(done, total, self.elapsed() if elapsed is None else elapsed, what), force=force)


def format_rate(done: int, total: int, elapsed: float, what: str = "scenarios") -> str:
    """``"250,000/1,000,000 scenarios, 1.2e+06/s, ETA 0.6s"``: the one format of rate lines."""
    speed = done / elapsed if elapsed > 0 else math.inf
    left = max(total - done, 0)
    eta = 0.0 if left == 0 else (left / speed if 0 < speed < math.inf else math.inf)
    return f"{done:,}/{total:,} {what}, {_speed(speed)}/s, ETA {format_duration(eta)}"


def _speed(x: float) -> str:
    if not math.isfinite(x):
        return "-"
    if x >= 1e6:
        return f"{x:.3g}"
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def format_duration(seconds: float) -> str:
    """``0.4s``, ``12.3s``, ``4m05s``, ``2h03m``; ``?`` when unknown."""
    if not math.isfinite(seconds) or seconds < 0:
        return "?"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
