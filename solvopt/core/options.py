"""Solve options: the common ones (same name and meaning in every family) and each solver's typed extras.

Unknown options are an error, never ignored. A solver declares its extra options as a tuple of
:class:`Option` (name, type, default, help) and which common options beyond the universal
ones it honours (``Solver.honours``); passing an option a method does not honour is an error
naming the methods that do (see :func:`solvopt.core.registry.Solver.run`).

Tolerances: a solve is reported OPTIMAL only when its proven gap is within
:data:`DEFAULT_REL_GAP` (relative) or :data:`DEFAULT_ABS_GAP` (absolute), whatever ``rel_gap``
the user asked to stop at (see :func:`solvopt.core.status.settle`).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from .errors import ModelError
from .interrupt import stop_requested

DEVICES = ("auto", "cpu", "gpu")
DEFAULT_REL_GAP = 1e-6    # proven (incumbent - bound) / max(|incumbent|, 1e-10) for OPTIMAL
DEFAULT_ABS_GAP = 1e-9    # ... or proven incumbent - bound


@dataclass
class SolveOptions:
    time_limit: float | None = None      # seconds of wall time; None = no limit
    rel_gap: float = DEFAULT_REL_GAP     # stop when (incumbent - bound) / |incumbent| <= rel_gap
    abs_gap: float = DEFAULT_ABS_GAP     # ... or when incumbent - bound <= abs_gap
    threads: int | None = None           # None = the backend's default
    seed: int = 0
    device: str = "auto"                 # auto | cpu | gpu
    progress: bool | None = None         # None = on when stderr is a terminal
    log: Callable[[str], None] | None = None
    node_limit: int | None = None
    iteration_limit: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # solver-specific, declared by the solver

    def __post_init__(self) -> None:
        if self.time_limit is not None:
            if not (_is_real(self.time_limit) and self.time_limit > 0 and not math.isnan(self.time_limit)):
                raise ModelError(f"time_limit must be a positive number of seconds, got {self.time_limit!r}")
        for name in ("rel_gap", "abs_gap"):
            v = getattr(self, name)
            if not (_is_real(v) and v >= 0 and math.isfinite(v)):
                raise ModelError(f"{name} must be a finite number >= 0, got {v!r}")
        if self.threads is not None and (not _is_int(self.threads) or self.threads < 1):
            raise ModelError(f"threads must be a positive integer, got {self.threads!r}")
        if not isinstance(self.device, str) or self.device not in DEVICES:
            raise ModelError(f"device must be one of {', '.join(DEVICES)}, got {self.device!r}")
        for name in ("node_limit", "iteration_limit"):
            v = getattr(self, name)
            if v is not None and (not _is_int(v) or v < 0):
                raise ModelError(f"{name} must be an integer >= 0, got {v!r}")
        if not _is_int(self.seed) or not 0 <= self.seed < 2 ** 64:
            raise ModelError(f"seed must be an integer in [0, 2**64), got {self.seed!r}")
        if self.log is not None and not callable(self.log):
            raise ModelError(f"log must be a callable taking one line of text, got {self.log!r}")
        if self.progress is not None and not isinstance(self.progress, bool):
            raise ModelError(f"progress must be True, False or None, got {self.progress!r}")

    def emit(self, line: str) -> None:
        """Send a log line to the user's ``log`` callable, if any."""
        if self.log is not None:
            self.log(line)

    def interrupted(self) -> bool:
        """True once the user pressed Ctrl-C (or called :func:`solvopt.core.interrupt.request_stop`)."""
        return stop_requested()

    def record(self) -> dict[str, Any]:
        """The options as plain values, for ``Result.options`` (the log callable by name only)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("extra", "log")}
        if self.log is not None:
            out["log"] = getattr(self.log, "__name__", type(self.log).__name__)
        out.update(self.extra)
        return out


COMMON_OPTIONS = tuple(f.name for f in fields(SolveOptions) if f.name != "extra")
# Common options every method takes (they cost nothing to honour); the others must be declared
# in ``Solver.honours`` by the methods that act on them.
UNIVERSAL_OPTIONS = ("time_limit", "seed", "progress", "log")


def _is_int(v: object) -> bool:
    import numbers
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_real(v: object) -> bool:
    import numbers
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _finite_number(value: Any, accept: Callable[[float], bool], wording: str) -> float:
    if isinstance(value, bool):
        raise ValueError(f"must be {wording}, got {value!r}")
    number = float(value)
    if not (math.isfinite(number) and accept(number)):
        raise ValueError(f"must be {wording}, got {number}")
    return number


def positive_number(value: Any) -> float:
    """Option type of tolerances, steps and seconds: a finite number > 0 (one rule for every method)."""
    return _finite_number(value, lambda v: v > 0, "a positive number")


def non_negative_number(value: Any) -> float:
    """Option type of weights that may be 0 (e.g. a step decay): a finite number >= 0."""
    return _finite_number(value, lambda v: v >= 0, "a finite number >= 0")


positive_number.__name__ = "float>0"
non_negative_number.__name__ = "float>=0"


def integer_at_least(minimum: int) -> Callable[[Any], int]:
    """Option type of counts: an integer >= ``minimum`` (not a bool, not a float)."""
    def convert(value: Any) -> int:
        if not _is_int(value) or value < minimum:
            raise ValueError(f"expected an integer >= {minimum}, got {value!r}")
        return int(value)
    convert.__name__ = f"int>={minimum}"
    return convert


@dataclass(frozen=True)
class Option:
    """A solver's extra option: name, type, default and help; ``choices`` restricts its values.

    ``type`` is a Python type (int, float, bool, str) or a callable that converts and validates
    a value (raising ValueError / TypeError with a message); None accepts any value.
    """

    name: str
    type: Any = None
    default: Any = None
    help: str = ""
    choices: tuple[Any, ...] | None = None

    def convert(self, value: Any, where: str) -> Any:
        if value is None and self.default is None:
            return None
        if self.choices is not None and (not isinstance(value, Hashable) or value not in self.choices):
            raise ModelError(f"option {self.name!r} of {where} must be one of "
                             f"{', '.join(map(repr, self.choices))}, got {value!r}")
        if self.type is None:
            return value
        if self.type is bool:
            if isinstance(value, bool) or (_is_int(value) and value in (0, 1)):
                return bool(value)
            raise ModelError(f"option {self.name!r} of {where} must be True or False, got {value!r}")
        if self.type is int:
            if _is_int(value):
                return int(value)
            raise ModelError(f"option {self.name!r} of {where} must be an integer, got {value!r}")
        if self.type is float:
            if _is_real(value) and not isinstance(value, complex):
                return float(value)
            raise ModelError(f"option {self.name!r} of {where} must be a number, got {value!r}")
        if self.type is str:
            if isinstance(value, str):
                return value
            raise ModelError(f"option {self.name!r} of {where} must be a string, got {value!r}")
        try:
            return self.type(value)
        except (TypeError, ValueError) as exc:
            raise ModelError(f"option {self.name!r} of {where}: {exc}") from None

    @property
    def type_name(self) -> str:
        if self.choices is not None:
            return "|".join(map(str, self.choices))
        return getattr(self.type, "__name__", "any") if self.type is not None else "any"


def parse_options(kwargs: Mapping[str, Any], schema: tuple[Option, ...] = (), where: str = "solve") -> SolveOptions:
    """Split ``kwargs`` into the common options and the solver's declared extras (typed).

    Raises ModelError naming the unknown option and listing the valid ones.
    """
    by_name = {o.name: o for o in schema}
    common, extra = {}, {o.name: o.default for o in schema}
    for key, value in kwargs.items():
        if key in COMMON_OPTIONS:
            if value is not None:  # None is every common option's "not set": its default
                common[key] = value
        elif key in by_name:
            extra[key] = by_name[key].convert(value, where)
        else:
            valid = sorted(set(COMMON_OPTIONS) | set(by_name))
            raise ModelError(f"unknown option {key!r} for {where}; valid options: {', '.join(valid)}")
    return SolveOptions(**common, extra=extra)
