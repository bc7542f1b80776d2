"""Solve options shared by every family, with the same names everywhere.

Unknown options are an error, never ignored: a solver declares its extra options (name ->
default) and :func:`parse_options` rejects anything else.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Mapping

from .errors import ModelError

DEVICES = ("auto", "cpu", "gpu")


@dataclass
class SolveOptions:
    time_limit: float | None = None      # seconds of wall time; None = no limit
    rel_gap: float = 1e-6                # stop when (incumbent - bound) / |incumbent| <= rel_gap
    abs_gap: float = 0.0                 # ... or when incumbent - bound <= abs_gap
    threads: int | None = None           # None = the backend's default
    seed: int = 0
    device: str = "auto"                 # auto | cpu | gpu
    progress: bool | None = None         # None = on when stderr is a terminal
    log: Callable[[str], None] | None = None
    node_limit: int | None = None
    iteration_limit: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # solver-specific, declared by the solver

    def __post_init__(self):
        if self.time_limit is not None:
            if not (isinstance(self.time_limit, (int, float)) and self.time_limit > 0 and not math.isnan(self.time_limit)):
                raise ModelError(f"time_limit must be a positive number of seconds, got {self.time_limit!r}")
        for name in ("rel_gap", "abs_gap"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and v >= 0 and math.isfinite(v)):
                raise ModelError(f"{name} must be a finite number >= 0, got {v!r}")
        if self.threads is not None and (not isinstance(self.threads, int) or self.threads < 1):
            raise ModelError(f"threads must be a positive integer, got {self.threads!r}")
        if self.device not in DEVICES:
            raise ModelError(f"device must be one of {', '.join(DEVICES)}, got {self.device!r}")
        for name in ("node_limit", "iteration_limit"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, int) or v < 0):
                raise ModelError(f"{name} must be an integer >= 0, got {v!r}")
        if not isinstance(self.seed, int):
            raise ModelError(f"seed must be an integer, got {self.seed!r}")

    def emit(self, line: str) -> None:
        """Send a log line to the user's ``log`` callable, if any."""
        if self.log is not None:
            self.log(line)


COMMON_OPTIONS = tuple(f.name for f in fields(SolveOptions) if f.name != "extra")


def parse_options(kwargs: Mapping[str, Any], extra_defaults: Mapping[str, Any] | None = None,
                  where: str = "solve") -> SolveOptions:
    """Split ``kwargs`` into the common options and the solver's declared extras.

    Raises ModelError naming the unknown option and listing the valid ones.
    """
    extra_defaults = dict(extra_defaults or {})
    common, extra = {}, dict(extra_defaults)
    for key, value in kwargs.items():
        if key in COMMON_OPTIONS:
            common[key] = value
        elif key in extra_defaults:
            extra[key] = value
        else:
            valid = sorted(set(COMMON_OPTIONS) | set(extra_defaults))
            raise ModelError(f"unknown option {key!r} for {where}; valid options: {', '.join(valid)}")
    return SolveOptions(**common, extra=extra)
