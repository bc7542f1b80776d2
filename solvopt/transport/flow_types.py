"""The min-cost flow's result types and integer scaling, shared by :mod:`solvopt.transport.flow`
and the Numba engines it dispatches to (:mod:`solvopt.transport.network_simplex`), which import
neither each other nor anything above them through this module."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .stopping import Stopped

ORTOOLS_COST_RANGE = 10**9        # largest integer arc cost handed to OR-Tools (overflow headroom)
_MAX_UNITS = 2**50                # largest integer total supply handed to an integer engine


class FlowStopped(Stopped):
    """A min-cost flow run stopped by its ``stop`` callable before it finished (no flow to report)."""


@dataclass
class FlowSolution:
    """An optimal (see ``abs_error``) flow: ``flow`` per arc, its ``cost`` = sum flow * cost,
    ``potentials`` per node (LP duals; None when the engine gives none), the ``engine`` used and
    ``abs_error``, an upper bound on ``cost`` minus the optimal cost (0 for exact engines), and
    ``rounds``, the pricing rounds of an engine that prices (None for the others),
    ``matrix_search``, whether the dense simplex finished by block search over the whole matrix, and
    ``partners``, the targets' best partners v_j = min_i (c_ij - potentials_i) when the engine made
    them (the dense simplex: the dual bound's pass, done in its kernel; None for the others)."""

    flow: np.ndarray
    cost: float
    potentials: np.ndarray | None
    engine: str
    abs_error: float = 0.0
    rounds: int | None = None
    matrix_search: bool | None = None    # the dense simplex went on by block search over the whole matrix
    partners: np.ndarray | None = None   # the dense simplex's best partners of its potentials


def limited_denominator(x: float, max_denominator: int) -> int:
    """``Fraction(x).limit_denominator(max_denominator).denominator`` for a float x >= 0: the
    denominator of the closest fraction to x with denominator at most ``max_denominator`` (ties to
    the last convergent, as the standard library), by the same continued fraction in plain integer
    arithmetic (about 5x faster: drawn masses call it for every distinct value)."""
    num, den = x.as_integer_ratio()
    if den <= max_denominator:
        return den
    n, d = num, den
    p0, q0, p1, q1 = 0, 1, 1, 0
    while True:
        a = n // d
        q2 = q0 + a * q1
        if q2 > max_denominator:
            break
        p0, q0, p1, q1 = p1, q1, p0 + a * p1, q2
        n, d = d, n - a * d
    k = (max_denominator - q0) // q1
    p_far, q_far = p0 + k * p1, q0 + k * q1
    # |p1 / q1 - x| <= |p_far / q_far - x|, both sides times den q1 q_far
    if abs(p1 * den - num * q1) * q_far <= abs(p_far * den - num * q_far) * q1:
        return q1 // math.gcd(p1, q1)
    return q_far // math.gcd(p_far, q_far)


def integer_units(values, max_denominator: int = 10**7, max_distinct: int = 256):
    """The unit ``u`` with every value an integer multiple of ``u`` (to 1e-12 relative), or None.

    ``u`` is the largest magnitude over the lcm of the denominators of the distinct values as
    fractions of it: uniform weights 1/n, 1/m give unit 1 / lcm(n, m) times the mass. Where that
    search fails (more than ``max_distinct`` values, say) or finds a unit only close to exact, a
    power of two of which every value is an exact multiple (:func:`dyadic_unit`) is taken.
    """
    values = np.asarray(values, dtype=np.float64)
    values = np.abs(values[np.isfinite(values) & (values != 0)])
    if len(values) == 0:
        return 1.0
    top = float(values.max())
    distinct = np.unique(values)
    if len(distinct) > max_distinct:
        return dyadic_unit(distinct)
    denominator = 1
    for value in distinct:
        den = limited_denominator(float(value / top), max_denominator)
        denominator = denominator * den // math.gcd(denominator, den)
        if denominator > _MAX_UNITS:
            return dyadic_unit(distinct)
    unit = top / denominator
    off = np.abs(np.rint(distinct / unit) * unit - distinct)
    if np.any(off > 1e-12 * top):
        return dyadic_unit(distinct)
    if np.any(off > 0):            # close, not exact: an exact power of two where there is one
        exact = dyadic_unit(distinct)
        return unit if exact is None else exact
    return unit


def dyadic_unit(values) -> float | None:
    """The largest power of two 2^e of which every value (positive, finite) is an exact integer
    multiple, when they hold at most ``_MAX_UNITS`` of it in all; else None. Masses rounded to
    multiples of 2^-k of their total (the multiscale approximation with real masses,
    :mod:`solvopt.transport.mass_units`) are found here; masses drawn at random hold about
    2^52 units each and are not."""
    values = np.asarray(values, dtype=np.float64)
    mantissa, exponent = np.frexp(values)               # values = mantissa 2^exponent, mantissa in [0.5, 1)
    whole = (mantissa * 2.0**53).astype(np.int64)       # exact: 53-bit integers
    lowest = whole & -whole                             # the lowest set bit of each
    _, bit = np.frexp(lowest.astype(np.float64))        # lowest = 2^(bit - 1)
    power = int((exponent - 53 + bit - 1).min())
    if power < -1074:
        return None
    unit = math.ldexp(1.0, power)
    if float(np.sum(values / unit)) > _MAX_UNITS:
        return None
    return unit


def integer_data(supplies, capacities):
    """``(unit, integer supplies, integer capacities or None)`` for the integer engines, or None."""
    unit = integer_units(supplies if capacities is None else np.concatenate([supplies, capacities]))
    if unit is None:
        return None
    ints = np.rint(supplies / unit).astype(np.int64)
    if ints.sum() != 0 or np.abs(ints).sum() > _MAX_UNITS:
        return None
    total = int(ints[ints > 0].sum())
    caps = None if capacities is None else np.rint(np.minimum(capacities / unit, total)).astype(np.int64)
    return unit, ints, caps


def integer_costs(costs, cost_range=ORTOOLS_COST_RANGE):
    """Costs scaled to integers in [-cost_range, cost_range], and the scale."""
    top = float(np.abs(costs).max()) if len(costs) else 0.0
    if not top > 0:
        return np.rint(costs).astype(np.int64), 1.0
    scale = cost_range / top
    if math.isfinite(scale):
        work = np.multiply(costs, scale)
    else:                     # a tiny (subnormal) top: divide first
        work = np.divide(costs, top)
        work *= cost_range
        scale = np.finfo(np.float64).max
    np.rint(work, out=work)
    return work.astype(np.int64), scale


def rounding_error(flow, supplies, scale, n_nodes, path_arcs) -> float:
    """Cost error of a flow optimal for costs rounded to multiples of 1/scale (error <= 0.5/scale
    per unit of flow on an arc): c(f) - c(f*) <= (|f| + |f*|) / (2 scale), where an optimal f*
    can be taken cycle-free (costs >= 0), so |f*| <= path_arcs * total supply."""
    path_arcs = n_nodes - 1 if path_arcs is None else path_arcs
    return rounding_bound(float(flow.sum()), float(supplies[supplies > 0].sum()), scale, path_arcs)


def rounding_bound(flow_total: float, supply_total: float, scale, path_arcs: int) -> float:
    """:func:`rounding_error` from the totals: |f| = ``flow_total``, total supply ``supply_total``."""
    return (flow_total + path_arcs * supply_total) / (2.0 * scale)


def run_stoppable(kernel, args, tail, stop):
    """``kernel(*args, flag, *tail)`` in a worker thread (it releases the GIL), setting the flag
    when ``stop()`` turns true; the main thread keeps running Python, so Ctrl-C is seen at once."""
    import threading
    flag = np.zeros(1, dtype=np.int8)
    if stop is None:
        return kernel(*args, flag, *tail)
    if stop():
        raise FlowStopped
    out: list = []
    failed: list = []

    def work():
        try:
            out.append(kernel(*args, flag, *tail))
        except BaseException as error:      # re-raised below: a failure is never read as a stop
            failed.append(error)
    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(0.05)
        if flag[0] == 0 and stop():
            flag[0] = 1
    if failed:
        raise failed[0]
    if flag[0] or not out:
        raise FlowStopped
    return out[0]


__all__ = ["FlowSolution", "FlowStopped", "dyadic_unit", "integer_costs", "integer_data", "integer_units",
           "rounding_error", "run_stoppable"]
