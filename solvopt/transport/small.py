"""Small dense transport solves in one kernel call: POT's call-for-call speed, the model's guarantees.

:func:`solvopt.transport.api.emd`, :func:`~solvopt.transport.api.emd2` and
:func:`~solvopt.transport.api.wasserstein` first try :func:`certified_points` or
:func:`certified_matrix` on small inputs (at most :data:`solvopt.transport.exact.INLINE_PAIRS`
pairs). One Numba call checks the input, solves it by the dense network simplex (the kernel of
method ``exact``), and computes the simplex's certified dual bound and the plan's cost; the value
(and plan) is returned only when that bound proves it optimal within the default tolerance, in the
status frame of :func:`solvopt.transport.result.status_scale`: what ``exact`` would return with status
OPTIMAL. Building the model, its copies and checks in NumPy, the registry and the Result cost 5-10
times the solve itself at n = 20 (about 0.08 ms against 0.02 ms).

The check **accepts only plainly valid input**: float64 arrays of the right shapes, every entry
finite, every mass positive, totals within :data:`dsl.transport.MASS_RTOL`, costs in [0,
:data:`dsl.transport.MAX_DISTANCE`], points spanning float64's safe range. Anything else (a list of
ints, a zero mass, a negative cost, a NaN, a span that would overflow) returns None, and the caller
builds the model, whose checks accept or say precisely what is wrong: fast accept, full reject.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from solvopt.dsl.transport import EUCLIDEAN_SPAN, MASS_RTOL, MAX_DISTANCE

from .exact import DENSE_TUNING, INLINE_PAIRS
from .flow_types import _MAX_UNITS
from .network_simplex import dense_transport
from .plan_kernels import mass_supplies, plan_power_sum, point_costs
from .result import LARGE_P, METRIC_CODES, certified_optimum, cost_of, dual_scale, frame_of


@njit(cache=True, nogil=True)
def _declined():
    """A kernel's answer when it declines the input (the caller then builds the model)."""
    none_i = np.empty(0, np.int32)
    return False, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, none_i, none_i, np.empty(0)


@njit(cache=True, nogil=True)
def _balanced(a, b, mass_rtol):
    """(a's total, b rescaled onto it), or (0, b) when a mass is not positive and finite, a total is
    subnormal, or the totals differ by more than ``mass_rtol`` (relative): the rules of
    ``balanced_weights``."""
    ta = 0.0
    for w in a:
        if not (0.0 < w < np.inf):
            return 0.0, b
        ta += w
    tb = 0.0
    for w in b:
        if not (0.0 < w < np.inf):
            return 0.0, b
        tb += w
    if not (ta < np.inf and tb < np.inf) or abs(ta - tb) > mass_rtol * max(ta, tb):
        return 0.0, b
    if min(ta, tb) < np.finfo(np.float64).tiny:          # a subnormal total: the model refuses it
        return 0.0, b
    return ta, (b if ta == tb else b * (ta / tb))


@njit(cache=True, nogil=True)
def _solve(costs, scale, a, b, mass, x, y, code, p, max_units, tuning):
    """The dense simplex on ``costs`` ((d / scale)^p, masses a and b with total ``mass``), its dual
    value per unit of mass (sum a u + sum b v over the mass, v the best partners of u) and the
    plan's :func:`plan_power_sum` on the true distances (read from x, y by ``code``).

    Returns (ok, dual value, plan's (top, scaled sum), indptr, indices, data); ok False when flow
    is left on an artificial arc (the caller then solves in full)."""
    n, m = costs.shape
    rows, cols = np.arange(n), np.arange(m)
    supplies, unit, ints, found = mass_supplies(a, b, rows, cols, mass, max_units)
    scaled = ints.astype(np.float64) if found else supplies
    if not found:
        unit = 1.0
    limit = float(min(2**53, 2**62 // (4 * (n + m + 2))))
    flag = np.zeros(1, np.int8)
    indptr, indices, data, flow, cost, total, potentials, partners, left, rounds, matrix, cost_scale = (
        dense_transport(costs, scaled, limit, rows, cols, n, m, unit, mass, flag, 0, tuning[0], tuning[1],
                        tuning[2], tuning[3], tuning[4], tuning[5]))
    biggest = 1.0
    for s in scaled:
        biggest = max(biggest, abs(s))
    if left > 1e-9 * biggest or len(data) == 0:
        return False, 0.0, 0.0, 0.0, indptr, indices, data
    dual = 0.0
    for i in range(n):
        dual += a[i] / mass * potentials[i]
    for j in range(m):
        dual += b[j] / mass * partners[j]
    top, summed = plan_power_sum(indptr, indices, data, x, y, code, p)
    return True, dual, top, summed, indptr, indices, data


@njit(cache=True, nogil=True)
def _points_kernel(x, y, a, b, code, p, span_low, span_high, max_distance, mass_rtol, max_units, tuning):
    """:func:`certified_points`' checks and solve: (ok, distance scale, mass, cost scale, dual value,
    plan's top, plan's scaled sum, indptr, indices, data)."""
    mass, b = _balanced(a, b, mass_rtol)
    if mass == 0.0:
        return _declined()
    d = x.shape[1]
    extent = np.empty(d)
    for k in range(d):
        low, high = np.inf, -np.inf
        for pts in (x, y):
            for i in range(pts.shape[0]):
                v = pts[i, k]
                if not (-np.inf < v < np.inf):
                    return _declined()
                low, high = min(low, v), max(high, v)
        extent[k] = high - low
    top = extent.max()
    if code == 0:       # euclidean: squared differences neither overflow nor underflow; the diagonal
        if not (span_low <= top <= span_high):
            return _declined()
        distance = np.sqrt(np.sum(extent * extent))
    else:
        total = np.sum(extent)
        if not (0.0 < total <= max_distance):
            return _declined()
        distance = total if code == 1 else top
    costs, scale = point_costs(x, y, code, p)
    ok, dual, plan_top, summed, indptr, indices, data = _solve(costs, scale, a, b, mass, x, y, code, p, max_units,
                                                                tuning)
    return ok, distance, mass, scale, dual, plan_top, summed, indptr, indices, data


@njit(cache=True, nogil=True)
def _matrix_kernel(cost, a, b, max_distance, mass_rtol, max_units, tuning):
    """:func:`certified_matrix`'s checks and solve, as :func:`_points_kernel` (p = 1)."""
    mass, b = _balanced(a, b, mass_rtol)
    if mass == 0.0:
        return _declined()
    top = 0.0
    for i in range(cost.shape[0]):
        for j in range(cost.shape[1]):
            c = cost[i, j]
            if not (0.0 <= c <= max_distance):          # (NaN fails too)
                return _declined()
            top = max(top, c)
    if top == 0.0:
        return _declined()
    ok, dual, plan_top, summed, indptr, indices, data = _solve(cost / top, top, a, b, mass, cost, cost, -1, 1.0,
                                                                max_units, tuning)
    return ok, top, mass, top, dual, plan_top, summed, indptr, indices, data


def _float_array(value, ndim: int, count: int | None = None) -> np.ndarray | None:
    """``value`` itself when it is a float64 ndarray of ``ndim`` dimensions (and ``count`` rows), else None."""
    if type(value) is not np.ndarray or value.dtype != np.float64 or value.ndim != ndim:
        return None
    return value if count is None or value.shape[0] == count else None


def _missing(w) -> bool:
    """No masses given: None or an empty array (POT's ``[]``)."""
    return w is None or (type(w) is np.ndarray and w.size == 0) or (type(w) is list and not w)


def _masses(a, b, n: int, m: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(a, b) as float64 arrays of n and m entries, a missing side uniform with the other's total (1
    when both are missing), as the model fills them; None where a given side is not a float64 array
    of the right length."""
    if not _missing(a):
        a = _float_array(a, 1, n)
        if a is None:
            return None
    if not _missing(b):
        b = _float_array(b, 1, m)
        if b is None:
            return None
    if _missing(a):
        a = np.full(n, (1.0 if _missing(b) else float(b.sum())) / n)
    if _missing(b):
        b = np.full(m, float(a.sum()) / m)
    return a, b


def _settled(found, p: float) -> tuple[float, tuple] | None:
    """(W_p, (indptr, indices, data)) from a kernel's output when its bound proves it optimal."""
    ok, distance, mass, scale, dual, top, summed, indptr, indices, data = found
    if not ok or not math.isfinite(distance * mass ** (1.0 / p)):     # (the model refuses the latter)
        return None
    value, cost_p = cost_of(p, top, summed)
    if value == 0.0 or math.isinf(cost_p):
        return None
    bound = dual_scale(scale, mass, p, dual)
    if bound is None or not certified_optimum(value, bound, frame_of(distance, mass, p)):
        return None
    return value, (indptr, indices, data)


def certified_points(x, y, a, b, p, metric) -> tuple[float, tuple] | None:
    """(W_p, the plan's CSR arrays) between the points x (n, d) and y (m, d), d >= 2, with masses a, b
    (None: uniform), when the input is plainly valid and small and the dense simplex's bound proves the
    plan optimal (what ``auto`` and ``exact`` return with status OPTIMAL); None otherwise."""
    x, y = _float_array(x, 2), _float_array(y, 2)
    code = METRIC_CODES.get(metric) if type(metric) is str else None
    if x is None or y is None or code is None or not isinstance(p, (int, float)) or isinstance(p, bool):
        return None
    if not 1 <= p <= LARGE_P:
        return None
    n, m = x.shape[0], y.shape[0]
    masses = _masses(a, b, n, m)
    if masses is None or not (n and m and 1 < x.shape[1] == y.shape[1]) or n * m > INLINE_PAIRS:
        return None
    low, high = EUCLIDEAN_SPAN
    return _settled(_points_kernel(np.ascontiguousarray(x), np.ascontiguousarray(y), *masses, code, float(p), low,
                                   high, MAX_DISTANCE, MASS_RTOL, _MAX_UNITS, DENSE_TUNING), float(p))


def certified_matrix(a, b, cost) -> tuple[float, tuple] | None:
    """(min <P, cost>, the plan's CSR arrays) for a ready cost matrix (POT's ``M``, entries >= 0) with
    masses a, b (None or empty: uniform), under the same conditions as :func:`certified_points`."""
    cost = _float_array(cost, 2)
    if cost is None or not cost.size or cost.size > INLINE_PAIRS:
        return None
    masses = _masses(a, b, *cost.shape)
    if masses is None:
        return None
    return _settled(_matrix_kernel(np.ascontiguousarray(cost), *masses, MAX_DISTANCE, MASS_RTOL, _MAX_UNITS,
                                   DENSE_TUNING), 1.0)


@njit(cache=True, nogil=True)
def dense_plan(n, m, indptr, indices, data):
    """The (n, m) dense array of a CSR plan (POT's ``ot.emd`` returns its plan dense)."""
    out = np.zeros((n, m))
    for i in range(n):
        for t in range(indptr[i], indptr[i + 1]):
            out[i, indices[t]] = data[t]
    return out
