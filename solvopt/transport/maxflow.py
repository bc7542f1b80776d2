"""Feasibility of a transport on a bipartite arc set with real masses: a warm-started max flow in Numba.

The p = inf threshold searches ask, threshold after threshold, whether the pairs with d <= t carry
a plan (a max flow from the sources, capacity a_i, through uncapacitated pairs, to the targets,
capacity b_j, equal to the total mass). :func:`push_relabel` (FIFO push-relabel with global
relabelling; Dinic's blocking flows were 3-20x slower on the same tests) runs on real-valued
masses over a row-sorted arc list of which each row keeps a prefix (the pairs below the threshold,
arcs sorted by length within their row), from a given preflow: a preflow for a smaller threshold
is valid for every larger one, so a search carries the preflow of the largest threshold proven
infeasible and each test only moves what it lacks (as the matching search of
:mod:`solvopt.transport.bottleneck` does for uniform masses).

Answers are proven, not rounded: a test is feasible when the flow meets every demand to
:data:`MASS_TOLERANCE` of the total (the plan's marginals are then within that), infeasible only
with a Hall violator, the sources S that cannot reach the sink in the final residual graph and
their targets N(S) (all of which cannot either, the pairs being uncapacitated), which hold less
mass than S: a(S) > b(N(S)) (the difference is the mass stuck in S and N(S)), checked by an
exactly rounded sum of the model's own masses (:func:`hall_deficit`).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

# Unmet demand, as a fraction of the total mass, up to which a flow counts as a plan.
MASS_TOLERANCE = 1e-12


@njit(cache=True, nogil=True)
def _global_labels(indptr, indices, limit, colptr, col_arc, arc_row, flow, sink_res, tol, d_r, d_c, queue, inf):
    """Exact distances to the sink in the residual graph (breadth-first from the sink): a column
    with room to the sink is at 1; a row is one above a column it has an arc to; a column is one
    above a row whose arc to it carries flow. Unreached: ``inf``."""
    nr = d_r.shape[0]
    nc = d_c.shape[0]
    for i in range(nr):
        d_r[i] = inf
    head = tail = 0
    for j in range(nc):
        if sink_res[j] > tol:
            d_c[j] = 1
            queue[tail] = j              # columns as j, rows as nc + i
            tail += 1
        else:
            d_c[j] = inf
    while head < tail:
        v = queue[head]
        head += 1
        if v < nc:
            j = v
            for t in range(colptr[j], colptr[j + 1]):
                e = col_arc[t]
                i = arc_row[e]
                if e < limit[i] and d_r[i] == inf:
                    d_r[i] = d_c[j] + 1
                    queue[tail] = nc + i
                    tail += 1
        else:
            i = v - nc
            for e in range(indptr[i], limit[i]):
                j = indices[e]
                if flow[e] > tol and d_c[j] == inf:
                    d_c[j] = d_r[i] + 1
                    queue[tail] = j
                    tail += 1


@njit(cache=True, nogil=True)
def push_relabel(indptr, indices, limit, colptr, col_arc, arc_row, flow, excess_r, excess_c, sink_res, tol):
    """A maximum preflow by FIFO push-relabel with global relabelling, from the preflow given
    (flow per arc, excess per row and column, room left to the sink per column; updated in
    place). Rows push along their arcs (uncapacitated), columns to the sink and back along arcs
    with flow. Returns (unmet demand, rows that cannot reach the sink)."""
    nr = indptr.shape[0] - 1
    nc = colptr.shape[0] - 1
    inf = 2 * (nr + nc) + 2
    d_r = np.empty(nr, np.int64)
    d_c = np.empty(nc, np.int64)
    queue = np.empty(nr + nc, np.int64)
    active = np.empty(nr + nc + 1, np.int64)
    in_queue = np.zeros(nr + nc, np.bool_)
    ptr_r = indptr[:-1].copy()
    ptr_c = colptr[:-1].copy()
    _global_labels(indptr, indices, limit, colptr, col_arc, arc_row, flow, sink_res, tol, d_r, d_c, queue, inf)
    size = nr + nc + 1
    head = tail = 0
    for i in range(nr):
        if excess_r[i] > tol and d_r[i] < inf:
            active[tail] = nc + i
            tail += 1
            in_queue[nc + i] = True
    for j in range(nc):
        if excess_c[j] > tol and d_c[j] < inf:
            active[tail] = j
            tail += 1
            in_queue[j] = True
    work = 0
    every = 6 * (nr + nc) + (limit - indptr[:-1]).sum() // 2
    while head != tail:
        v = active[head]
        head += 1
        if head == size:
            head = 0
        in_queue[v] = False
        if work > every:               # global relabelling, then the queue is rebuilt
            work = 0
            _global_labels(indptr, indices, limit, colptr, col_arc, arc_row, flow, sink_res, tol, d_r, d_c,
                           queue, inf)
            for i in range(nr):
                ptr_r[i] = indptr[i]
            for j in range(nc):
                ptr_c[j] = colptr[j]
        if v >= nc:                    # --- discharge row i
            i = v - nc
            while excess_r[i] > tol and d_r[i] < inf:
                e = ptr_r[i]
                if e >= limit[i]:     # relabel
                    low = inf
                    for f in range(indptr[i], limit[i]):
                        if d_c[indices[f]] + 1 < low:
                            low = d_c[indices[f]] + 1
                    work += limit[i] - indptr[i] + 12
                    d_r[i] = min(low, inf)
                    ptr_r[i] = indptr[i]
                    continue
                j = indices[e]
                if d_c[j] == d_r[i] - 1:
                    amount = excess_r[i]
                    flow[e] += amount
                    excess_r[i] = 0.0
                    excess_c[j] += amount
                    if not in_queue[j]:
                        in_queue[j] = True
                        active[tail] = j
                        tail += 1
                        if tail == size:
                            tail = 0
                else:
                    ptr_r[i] += 1
        else:                          # --- discharge column j
            j = v
            while excess_c[j] > tol and d_c[j] < inf:
                if d_c[j] == 1 and sink_res[j] > tol:
                    amount = min(excess_c[j], sink_res[j])
                    sink_res[j] -= amount
                    excess_c[j] -= amount
                    continue
                t = ptr_c[j]
                if t >= colptr[j + 1]:  # relabel
                    low = 1 if sink_res[j] > tol else inf
                    for s in range(colptr[j], colptr[j + 1]):
                        f = col_arc[s]
                        i = arc_row[f]
                        if flow[f] > tol and f < limit[i] and d_r[i] + 1 < low:
                            low = d_r[i] + 1
                    work += colptr[j + 1] - colptr[j] + 12
                    d_c[j] = min(low, inf)
                    ptr_c[j] = colptr[j]
                    continue
                e = col_arc[t]
                i = arc_row[e]
                if flow[e] > tol and e < limit[i] and d_r[i] == d_c[j] - 1:
                    amount = min(excess_c[j], flow[e])
                    flow[e] -= amount
                    excess_c[j] -= amount
                    excess_r[i] += amount
                    if not in_queue[nc + i]:
                        in_queue[nc + i] = True
                        active[tail] = nc + i
                        tail += 1
                        if tail == size:
                            tail = 0
                else:
                    ptr_c[j] += 1
    _global_labels(indptr, indices, limit, colptr, col_arc, arc_row, flow, sink_res, tol, d_r, d_c, queue, inf)
    unmet = 0.0
    for j in range(nc):
        if sink_res[j] > 0:
            unmet += sink_res[j]
    return unmet, d_r >= inf


class WarmFlow:
    """Feasibility tests on the prefixes of a pair list sorted by length (local indices r, c into
    the sources and targets with mass ``a``, ``b``), each warm from the preflow of the largest
    prefix proven infeasible. ``test(k)``: the flow on the first k pairs (per pair, in the given
    order) when they carry a plan, else None (proven by a Hall violator whose deficit exceeds
    ``margin``: the rounding error the caller's masses may hold, e.g. sums of many masses)."""

    def __init__(self, r, c, a, b, margin: float = 0.0):
        nr, nc = len(a), len(b)
        total = math.fsum(a)
        self.a, self.b = a, b
        self.supply, self.demand = a / total, b / total
        self.by_row = np.argsort(r, kind="stable")              # rows grouped, each by increasing length
        self.rows_sorted = r[self.by_row].astype(np.int64)
        self.indices = c[self.by_row].astype(np.int64)
        self.indptr = np.zeros(nr + 1, np.int64)
        np.cumsum(np.bincount(r, minlength=nr), out=self.indptr[1:])
        self.col_arc = np.argsort(self.indices, kind="stable").astype(np.int64)
        self.colptr = np.zeros(nc + 1, np.int64)
        np.cumsum(np.bincount(self.indices, minlength=nc), out=self.colptr[1:])
        self.r = np.asarray(r)
        self.margin = margin
        self.tol = MASS_TOLERANCE / max(len(r), 1)
        self.base = (*self._empty(), 0)              # flow, row excess, column excess, room to the sink, prefix

    def carried(self):
        """The base preflow as (pair keys r * len(b) + c, their flows, row excess, column excess,
        room to the sink), for :meth:`seed` on another pair list holding those pairs."""
        flow = self.base[0]
        used = np.flatnonzero(flow > 0)
        keys = self.rows_sorted[used] * len(self.b) + self.indices[used]
        return keys, flow[used], *(x.copy() for x in self.base[1:4])

    def seed(self, carried, prefix: int) -> bool:
        """Start from a preflow of :meth:`carried` (another pair list's), valid on every prefix of at
        least ``prefix`` pairs here (those holding all of its pairs). False, and no change, when a
        pair carrying flow there is missing here (e.g. a tie broken otherwise by a neighbour query)."""
        keys, flows, ex_r, ex_c, room = carried
        mine = self.rows_sorted * len(self.b) + self.indices
        if len(keys) and not len(mine):
            return False
        order = np.argsort(mine, kind="stable")
        where = order[np.minimum(np.searchsorted(mine, keys, sorter=order), max(len(mine) - 1, 0))]
        if np.any(mine[where] != keys):
            return False
        flow = np.zeros(len(mine))
        flow[where] = flows
        self.base = (flow, ex_r, ex_c, room, prefix)
        return True

    def _empty(self):
        return np.zeros(len(self.r)), self.supply.copy(), np.zeros(len(self.b)), self.demand.copy()

    def test(self, k: int):
        # the base's preflow runs on its prefix: valid on every longer one
        flow, ex_r, ex_c, room = (x.copy() for x in self.base[:4]) if k >= self.base[4] else self._empty()
        limit = self.indptr[:-1] + np.bincount(self.r[:k], minlength=len(self.a))
        unmet, stuck = push_relabel(self.indptr, self.indices, limit, self.colptr, self.col_arc, self.rows_sorted,
                                    flow, ex_r, ex_c, room, self.tol)
        if unmet <= MASS_TOLERANCE:
            out = np.empty(len(flow))
            out[self.by_row] = flow
            return out
        # the Hall violator: the rows that cannot reach the sink, and every target of their pairs
        arcs = np.flatnonzero(np.repeat(stuck, np.diff(self.indptr)))
        arcs = arcs[arcs < limit[self.rows_sorted[arcs]]]
        neighbours = np.zeros(len(self.b), bool)
        neighbours[self.indices[arcs]] = True
        if hall_deficit(self.a, self.b, stuck, neighbours) <= self.margin:
            raise ArithmeticError("max flow: unmet demand without a Hall violator (rounding)")
        self.base = (flow, ex_r, ex_c, room, k)     # a search tests only longer prefixes after this one
        return None


def hall_deficit(a, b, rows, cols) -> float:
    """a(rows) - b(cols), exactly rounded (positive: ``rows`` need more than ``cols`` can take)."""
    return math.fsum(np.concatenate([a[rows], -b[cols]]))




__all__ = ["MASS_TOLERANCE", "WarmFlow", "hall_deficit", "push_relabel"]
