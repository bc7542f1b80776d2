"""Throttled progress lines on stderr for long runs (node counts, bounds, scenario batches)."""
from __future__ import annotations

import sys
import time


class Progress:
    """Prints at most one line every ``interval`` seconds, only when enabled.

    Enabled when ``enabled`` is True, or when it is None and stderr is a terminal.
    """

    def __init__(self, enabled: bool | None = None, interval: float = 1.0, stream=None, log=None):
        self.stream = stream or sys.stderr
        if enabled is None:
            enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = enabled
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
        if self.enabled:
            print(line, file=self.stream, flush=True)
