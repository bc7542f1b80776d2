"""Masses rounded down to integer multiples of one unit, and the leftovers sent back: how the
multiscale approximation (``approx``, ``graph="multiscale"``) solves masses that are not integer
multiples of one unit (drawn at random, say) by warm cost scaling, which needs such a unit.

1. :func:`rounded_masses`: a unit ``U`` with ``2^bits`` of it in all (a power of two, so that every
   level's supplies, the masses over their total, are exact binary fractions, which
   :func:`solvopt.transport.flow_types.dyadic_unit` recognises), ``alpha_i = floor(a_i / U)`` and
   ``beta_j = floor(b_j / U)``, then single units taken from the nodes of largest count until both
   sides hold exactly ``2^bits``: ``alpha U <= a`` and ``beta U <= b`` everywhere.
   :func:`total_bits` chooses ``bits`` as large as it can while every level solved by cost
   scaling keeps its supplies below 2^31 (the kernel's int32 capacities), at most
   :data:`MOST_BITS` (2^50 units in all on both sides: what the integer engines take).
2. The rounded problem is solved as any other (its plan ``P'`` in units, times ``U``).
3. :func:`leftover_plan`: the leftovers ``a - alpha U >= 0`` and ``b - beta U >= 0`` (equal totals,
   each below a few ``U``) sent by the north-west corner rule along a Z curve through both point
   sets (a one-dimensional transport along the curve; points near on the curve are near in space),
   added to ``P' U``: a plan with the true marginals.

The certificate is no business of this module: the caller evaluates the final potentials (made
dual feasible over all pairs by the c-transform) with the true masses.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from .multiscale import morton_codes

# Most units on one side, as a power of two: both sides together then hold at most 2^50 units,
# the most the integer engines take (flow_types._MAX_UNITS).
MOST_BITS = 49
# Fewest: below this the masses are left as they are (the network simplex takes real masses).
FEWEST_BITS = 20
# Largest supply the cost-scaling kernel holds in int32 (cost_scaling.narrow) ...
INT32 = 2**31 - 1
# ... with this margin for the coarse levels' cells: a cell holds about POINTS_PER_CELL^level
# points' mass on average, the fullest up to this many times that.
CROWDING = 4.0
# Points per cell of a coarser level (sparse_exact.POINTS_PER_CELL) and grid bits of the Z curve.
PER_CELL = 4
CURVE_BITS = 16


class Rounded(NamedTuple):
    """Masses in integer units: ``alpha`` and ``beta`` (float64 holding integers, each side summing
    to ``2^bits``) and the unit's mass ``unit``: ``alpha * unit <= a``, ``beta * unit <= b``."""
    alpha: np.ndarray
    beta: np.ndarray
    unit: float
    bits: int


def total_bits(a: np.ndarray, b: np.ndarray, scaled_levels: int = 0) -> int | None:
    """The exponent ``bits`` (total units 2^bits a side) for :func:`rounded_masses`: the largest,
    at most :data:`MOST_BITS`, that keeps every rounded supply of the points, and of the cells of
    the ``scaled_levels`` coarser levels solved by cost scaling, below :data:`INT32`; None when it
    would be below :data:`FEWEST_BITS` (a point holding nearly all the mass)."""
    total = max(float(a.sum()), float(b.sum()))
    if not (total > 0 and math.isfinite(total)):
        return None
    share = max(float(a.max()), float(b.max())) / total
    if scaled_levels > 0:
        points = max(1, min(int(np.count_nonzero(a)), int(np.count_nonzero(b))))
        share = max(share, CROWDING * PER_CELL ** scaled_levels / points)
    bits = int(math.floor(math.log2(INT32 / (share * (1.0 + 2.0**-20)))))
    bits = min(MOST_BITS, bits)
    return bits if bits >= FEWEST_BITS else None


def rounded_masses(a: np.ndarray, b: np.ndarray, bits: int) -> Rounded:
    """``a`` and ``b`` (nonnegative, equal totals) rounded down to integer multiples of one unit
    ``U``, exactly ``2^bits`` units a side (see the module docstring)."""
    target = 1 << bits
    total = max(float(a.sum()), float(b.sum()))
    # floor(a_i / U) loses less than one unit a point: 2^bits + (points + 2) units a side at least
    spare = max(int(np.count_nonzero(a)), int(np.count_nonzero(b))) + 2
    unit = total / (target + spare)
    while True:
        alpha, beta = _floors(a, unit), _floors(b, unit)
        if int(alpha.sum()) >= target and int(beta.sum()) >= target:
            break
        unit *= 1.0 - 2.0**-30          # (float sums: a few units short) a slightly smaller unit
    return Rounded(_trimmed(alpha, target).astype(np.float64), _trimmed(beta, target).astype(np.float64),
                   unit, bits)


def _floors(mass: np.ndarray, unit: float) -> np.ndarray:
    """floor(mass / unit) as int64, lowered where the float product count * unit exceeds mass."""
    count = np.floor(mass / unit).astype(np.int64)
    while True:
        over = count * unit > mass
        if not over.any():
            return count
        count[over] -= 1


def _trimmed(count: np.ndarray, target: int) -> np.ndarray:
    """``count`` less single units from its largest entries until it sums to ``target`` (<= its sum)."""
    count = count.copy()
    excess = int(count.sum()) - target
    while excess > 0:
        order = np.argsort(-count, kind="stable")[:excess]
        order = order[count[order] > 0]
        count[order] -= 1
        excess -= len(order)
    return count


def leftover_plan(x: np.ndarray, y: np.ndarray, left_a: np.ndarray, left_b: np.ndarray):
    """A plan (CSR, n x m) with marginals ``left_a`` and ``left_b`` (nonnegative, equal totals up to
    float rounding; the smaller total is sent): the north-west corner rule between the sources and
    the targets with a leftover, each taken in the order of a Z curve (Morton codes) through the
    bounding box of both, i.e. the monotone one-dimensional transport along the curve."""
    n, m = len(left_a), len(left_b)
    rows, cols = np.flatnonzero(left_a > 0), np.flatnonzero(left_b > 0)
    if not len(rows) or not len(cols):
        return sp.csr_matrix((n, m))
    px, py = x[rows], y[cols]
    low = np.minimum(px.min(axis=0), py.min(axis=0))
    high = np.maximum(px.max(axis=0), py.max(axis=0))
    bits = max(1, min(CURVE_BITS, 63 // max(1, x.shape[1])))
    span = np.where(high > low, high - low, 1.0)

    def along(pts):
        with np.errstate(invalid="ignore", over="ignore"):
            grid = np.clip((pts - low) / span * ((1 << bits) - 1), 0, (1 << bits) - 1).astype(np.int64)
        return np.argsort(morton_codes(grid, bits), kind="stable")
    rows, cols = rows[along(px)], cols[along(py)]
    return corner_plan(rows, cols, left_a[rows], left_b[cols], (n, m))


def corner_plan(rows: np.ndarray, cols: np.ndarray, mass_r: np.ndarray, mass_c: np.ndarray, shape):
    """The north-west corner plan between ``rows`` (masses ``mass_r``) and ``cols`` (``mass_c``) in
    the orders given (CSR of ``shape``): the piece of the line [0, total] that both cumulative
    sums put in row k and column l goes to (rows[k], cols[l]); total = the smaller sum."""
    ends_r, ends_c = np.cumsum(mass_r), np.cumsum(mass_c)
    total = min(float(ends_r[-1]), float(ends_c[-1]))
    cuts = np.unique(np.concatenate(([0.0], ends_r, ends_c)))
    cuts = np.append(cuts[cuts < total], total)
    piece = np.diff(cuts)
    middle = cuts[:-1] + 0.5 * piece
    keep = piece > 0
    k = np.minimum(np.searchsorted(ends_r, middle[keep], side="right"), len(rows) - 1)
    l_ = np.minimum(np.searchsorted(ends_c, middle[keep], side="right"), len(cols) - 1)
    plan = sp.csr_matrix((piece[keep], (rows[k], cols[l_])), shape=shape)
    plan.sum_duplicates()
    return plan


def restored_plan(model, rounded: Rounded, plan):
    """The rounded problem's plan (CSR in units) as a plan of ``model`` (true masses): times the
    unit, plus the leftovers' plan (:func:`leftover_plan`). Returns (plan, mass of the leftovers)."""
    plan = sp.csr_matrix(plan, dtype=np.float64, copy=True)
    plan.data *= rounded.unit
    left_a = np.maximum(model.a - rounded.alpha * rounded.unit, 0.0)
    left_b = np.maximum(model.b - rounded.beta * rounded.unit, 0.0)
    extra = leftover_plan(model.x, model.y, left_a, left_b)
    return (plan + extra).tocsr(), float(left_a.sum())


__all__ = ["Rounded", "corner_plan", "leftover_plan", "restored_plan", "rounded_masses", "total_bits"]
