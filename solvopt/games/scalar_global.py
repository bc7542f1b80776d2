"""Certified global maxima of a function of one variable on an interval (branch and bound).

A one-variable player whose utility is not concave in its own action may have a best response far
from any stationary point its first-order conditions single out; a GNE in the proper sense needs
the *global* best response. :func:`global_maximum` finds it and proves it: on a subinterval [l, r]
an enclosure [d_lo, d_hi] of f' gives f(x) <= min(f(l) + d_hi (x - l), f(r) - d_lo (r - x)), whose
maximum over [l, r] is an upper bound of f there (f(l) when d_hi <= 0, f(r) when d_lo >= 0, else
where the two lines meet). Intervals are split at their midpoint, best bound first; an interval
whose bound is below the best value found plus the tolerance is dropped. The tolerance is
absolute (``tol``), relative to the function's range (``rtol`` times the bound minus the least of
f at the ends and the candidates, so that it holds in any units of f), and never below rounding
(a few thousand ulps of the values). The answer is the best point evaluated and a certified upper
bound of the maximum; their difference is the gap.

The derivative enclosure comes from the caller: ``derivative_range(l, r)`` directly, or a bound M
on |f''| over the whole interval, with which f'([l, r]) lies within M (r - l) / 2 of the
endpoint derivatives' range (f'(x) <= f'(l) + M (x - l) and <= f'(r) + M (r - x)). The bounds are
exact arithmetic statements evaluated in floating point; a relative slack of a few ulps of the
values involved covers rounding.
"""
from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from solvopt.core.errors import ModelError

from .projection import check_stop

_ULP = 8 * np.finfo(float).eps


@dataclass
class GlobalMaximum:
    """The best point ``x`` found, its value ``value``, a certified ``upper`` bound of the maximum, and
    the number of intervals examined."""

    x: float
    value: float
    upper: float
    intervals: int

    @property
    def gap(self) -> float:
        return self.upper - self.value


def curvature_enclosure(df: Callable[[float], float], curvature: float) -> Callable[[float, float], tuple]:
    """``derivative_range`` from a bound M on |f''|: f'([l, r]) within M (r - l) / 2 of the endpoints' range."""
    if not np.isfinite(curvature) or curvature < 0:
        raise ModelError(f"a curvature bound must be finite and >= 0, got {curvature!r}")

    def enclose(lo: float, hi: float) -> tuple[float, float]:
        a, b = float(df(lo)), float(df(hi))
        pad = 0.5 * curvature * (hi - lo)
        return min(a, b) - pad, max(a, b) + pad
    return enclose


def interval_bound(fl: float, fr: float, d_lo: float, d_hi: float, width: float) -> float:
    """max over [l, r] of min(f(l) + d_hi (x - l), f(r) - d_lo (r - x)) (an upper bound of f there)."""
    if d_hi <= 0:
        bound = fl
    elif d_lo >= 0:
        bound = fr
    else:
        # the lines meet where fl + d_hi t = fr + (-d_lo)(width - t)
        t = (fr - fl - d_lo * width) / (d_hi - d_lo)
        t = min(max(t, 0.0), width)
        bound = max(fl + d_hi * t, min(fl, fr))
    slack = _ULP * (abs(fl) + abs(fr) + (abs(d_lo) + abs(d_hi)) * width)
    return max(bound, fl, fr) + slack


def global_maximum(f: Callable[[float], float], lo: float, hi: float, *,
                   derivative_range: Callable[[float, float], tuple] | None = None,
                   df: Callable[[float], float] | None = None, curvature: float | None = None,
                   tol: float = 1e-12, rtol: float = 0.0, max_intervals: int = 200_000,
                   candidates=()) -> GlobalMaximum:
    """A certified global maximum of f on [lo, hi] to tolerance ``tol`` + ``rtol`` x range (see the module doc).

    Give ``derivative_range(l, r)`` (an enclosure of f' on [l, r]) or ``df`` with ``curvature`` (a bound
    on |f''| over [lo, hi]). ``candidates`` are points worth evaluating first (e.g. the current action).
    """
    lo, hi = float(lo), float(hi)
    if not (np.isfinite(lo) and np.isfinite(hi)) or lo > hi:
        raise ModelError(f"a global maximum needs a finite interval lo <= hi, got [{lo}, {hi}]")
    if derivative_range is None:
        if df is None or curvature is None:
            raise ModelError("give derivative_range, or df with a curvature bound")
        derivative_range = curvature_enclosure(df, curvature)
    fl, fr = float(f(lo)), float(f(hi))
    best_x, best = (lo, fl) if fl >= fr else (hi, fr)
    low, size = min(fl, fr), max(abs(fl), abs(fr))
    for c in candidates:
        c = min(max(float(c), lo), hi)
        fc = float(f(c))
        low, size = min(low, fc), max(size, abs(fc))
        if fc > best:
            best_x, best = c, fc
    if not np.isfinite(best):
        raise ModelError(f"the function is not finite on [{lo}, {hi}]")
    if hi == lo:
        return GlobalMaximum(lo, fl, fl, 1)
    floor = max(float(tol), 512 * _ULP * size)

    def settled(bound_: float) -> bool:
        """Whether a bound is within the tolerance of the best value (nothing to gain below it)."""
        return bound_ <= best + max(floor, rtol * (bound_ - low))

    def bound(a, b, fa, fb):
        d_lo, d_hi = derivative_range(a, b)
        if not (np.isfinite(d_lo) and np.isfinite(d_hi)):
            raise ModelError(f"the derivative enclosure on [{a}, {b}] is not finite")
        return interval_bound(fa, fb, float(d_lo), float(d_hi), b - a)

    heap = [(-bound(lo, hi, fl, fr), lo, hi, fl, fr)]
    count, dropped = 1, -np.inf          # dropped: the largest bound of an interval let go
    while heap:
        neg, a, b, fa, fb = heap[0]
        if settled(-neg) or count >= max_intervals:
            break
        heapq.heappop(heap)
        if count % 64 == 1:
            check_stop()                 # a solve's deadline and Ctrl-C reach this loop
        mid = 0.5 * (a + b)
        if not a < mid < b:              # the interval cannot be split further: its bound stands
            heapq.heappush(heap, (neg, a, b, fa, fb))
            break
        fm = float(f(mid))
        if fm > best:
            best_x, best = mid, fm
        for u, v, fu, fv in ((a, mid, fa, fm), (mid, b, fm, fb)):
            ub = bound(u, v, fu, fv)
            count += 1
            if not settled(ub):
                heapq.heappush(heap, (-ub, u, v, fu, fv))
            else:
                dropped = max(dropped, ub)
    upper = max(best, dropped, -heap[0][0] if heap else -np.inf)
    return GlobalMaximum(best_x, best, upper, count)
