"""What a stopped transport run can always return: a quick feasible plan and a cheap certified bound.

Every method calls these when a time limit or Ctrl-C cuts it short before it holds a plan of
its own (or a bound better than these), so a stopped run still reports a feasible plan and a
lower bound on W_p, in O((n + m) log(n + m)) time for point inputs:

- :func:`quick_plan`: the north-west corner rule on the sources and the targets sorted along one
  direction (the points' principal axis; index order for a cost matrix). On the line this is the
  optimal plan for every p (the monotone coupling); in higher dimensions it is a feasible plan.
- :func:`quick_bound`: the largest of the exact W_p of one-dimensional projections of the two
  measures. Projecting onto a direction u is 1-Lipschitz for the metric (any unit vector for
  euclidean, a coordinate axis for cityblock and chebyshev), so moving the points by a plan
  costs at least as much as moving their projections: W_p >= W_p(projections), and the
  projected problem is solved exactly by the monotone coupling. For a cost matrix the bound is
  the row and column minima one: every unit of mass leaving source i travels at least
  min_j C_ij (W_p^p >= sum_i a_i min_j C_ij^p, likewise for the targets; p = inf: the largest
  such minimum).
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

# Axes (of largest extent) whose projections the bound tries, besides the special directions.
BOUND_AXES = 2
# Points drawn to estimate the principal direction.
DIRECTION_SAMPLE = 2048


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """The distinct values, sorted (a sort and a pass: NumPy's hashing unique is ~10x slower here)."""
    values = np.sort(values)
    if len(values) < 2:
        return values
    return values[np.concatenate(([True], values[1:] != values[:-1]))]


def north_west(srcs, supply, tgts, demand):
    """North-west corner pairing of two mass lists of (nearly) equal totals, in the given orders:
    (source indices, target indices, masses)."""
    cum_s, cum_t = np.cumsum(supply), np.cumsum(demand)
    total = min(cum_s[-1], cum_t[-1])
    cum_s[-1] = cum_t[-1] = total                      # float drift between the totals: the builder repairs it
    cuts = sorted_unique(np.concatenate([cum_s, cum_t]))
    cuts = cuts[cuts <= total]
    lows = np.concatenate(([0.0], cuts[:-1]))
    mass = cuts - lows
    keep = mass > 0
    mids = (lows + cuts)[keep] / 2
    i = np.minimum(np.searchsorted(cum_s, mids), len(srcs) - 1)
    j = np.minimum(np.searchsorted(cum_t, mids), len(tgts) - 1)
    return srcs[i], tgts[j], mass[keep]


def _directions(model) -> list[np.ndarray]:
    """Unit directions whose projections are 1-Lipschitz for the model's metric: the axes of
    largest extent and, for euclidean, the principal axis and the difference of the means."""
    dim = model.dimension
    xs, ys = model.x[model.a > 0], model.y[model.b > 0]
    extent = np.maximum(xs.max(axis=0), ys.max(axis=0)) - np.minimum(xs.min(axis=0), ys.min(axis=0))
    axes = np.argsort(-extent, kind="stable")[:BOUND_AXES]
    out = []
    if model.metric == "euclidean" and dim > 1:
        out.append(_principal(xs, ys))
        diff = (np.average(xs, axis=0, weights=model.a[model.a > 0])
                - np.average(ys, axis=0, weights=model.b[model.b > 0]))
        norm = float(np.sqrt(diff @ diff))
        if norm > 0 and math.isfinite(norm):
            out.append(diff / norm)
    for k in axes:
        unit = np.zeros(dim)
        unit[k] = 1.0
        out.append(unit)
    return out


def _principal(xs, ys) -> np.ndarray:
    """The principal axis of a sample of both point sets (a unit vector)."""
    rng = np.random.default_rng(0)
    both = np.concatenate([xs, ys])
    if len(both) > DIRECTION_SAMPLE:
        both = both[rng.choice(len(both), DIRECTION_SAMPLE, replace=False)]
    centred = both - both.mean(axis=0)
    top = float(np.abs(centred).max())
    if not top > 0:
        unit = np.zeros(both.shape[1])
        unit[0] = 1.0
        return unit
    vec = np.linalg.svd(centred / top, full_matrices=False)[2][0]
    return vec / np.sqrt(vec @ vec)


def _sorted_coupling(model, sx, sy):
    """The monotone coupling of the masses placed at the projections sx (n,) and sy (m,):
    (rows, cols, masses), over the points with mass."""
    rows, cols = np.flatnonzero(model.a > 0), np.flatnonzero(model.b > 0)
    rows = rows[np.argsort(sx[rows], kind="stable")]
    cols = cols[np.argsort(sy[cols], kind="stable")]
    return north_west(rows, model.a[rows], cols, model.b[cols])


def quick_plan(model):
    """A feasible plan (CSR, n x m, at most n + m - 1 entries): the north-west corner rule along
    the principal axis (points with a named or callable metric) or in index order (a cost matrix)."""
    if model.cost is not None:
        rows, cols = np.flatnonzero(model.a > 0), np.flatnonzero(model.b > 0)
        r, c, mass = north_west(rows, model.a[rows], cols, model.b[cols])
    else:
        u = _principal(model.x[model.a > 0], model.y[model.b > 0])
        r, c, mass = _sorted_coupling(model, model.x @ u, model.y @ u)
    return sp.csr_matrix((mass, (r, c)), shape=(model.n, model.m))


def _power_mean(values, weights, p) -> float:
    """(sum w v^p)^(1/p) (p = inf: the largest v with w > 0), with the largest v factored out."""
    keep = weights > 0
    values, weights = np.abs(values[keep]), weights[keep]
    top = float(values.max()) if values.size else 0.0
    if math.isinf(p) or top == 0.0:
        return top
    return top * float(np.dot(weights, (values / top) ** p)) ** (1.0 / p)


def quick_bound(model) -> float | None:
    """A certified lower bound on W_p (see the module docstring); None for a callable metric."""
    p = model.p
    if model.cost is not None:
        rows, cols = np.flatnonzero(model.a > 0), np.flatnonzero(model.b > 0)
        sub = model.cost if len(rows) == model.n and len(cols) == model.m else model.cost[np.ix_(rows, cols)]
        return max(_power_mean(sub.min(axis=1), model.a[rows], p), _power_mean(sub.min(axis=0), model.b[cols], p))
    if callable(model.metric):
        return None
    best = 0.0
    for u in _directions(model):
        sx, sy = model.x @ u, model.y @ u
        r, c, mass = _sorted_coupling(model, sx, sy)
        best = max(best, _power_mean(sx[r] - sy[c], mass, p))
    # the projections' float error (a few ulps of the coordinates) must not lift the bound above W_p
    return best * (1.0 - 1e-12)


def stopped_result(model, stopped, stats: dict, bound: float | None = None, plan=None):
    """The Result of a run stopped (``stopped``: TIME_LIMIT, INTERRUPTED, ...) before it held a plan
    of its own: ``plan`` when the method holds a feasible one, else :func:`quick_plan`, the lower
    of the two by W_p; and the better of ``bound`` (the method's own, if any) and :func:`quick_bound`."""
    from .result import plan_cost, transport_result
    quick = quick_plan(model)
    if plan is None or plan_cost(model, quick)[0] < plan_cost(model, plan)[0]:
        plan = quick
    bounds = [b for b in (bound, quick_bound(model)) if b is not None]
    stats = dict(stats, stopped_with="quick plan (north-west corner along the principal axis) and its bound")
    return transport_result(model, plan, guarantee=None, bound=max(bounds) if bounds else None, stopped=stopped,
                            stats=stats)
