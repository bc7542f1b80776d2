"""Feasibility of a transport on a bipartite arc set with real masses: a warm-started max flow in Numba.

The p = inf threshold searches ask, threshold after threshold, whether the pairs with d <= t carry
a plan (a max flow from the sources, capacity a_i, through uncapacitated pairs, to the targets,
capacity b_j, equal to the total mass). :func:`augment` runs Dinic's blocking flows on real-valued
masses over a row-sorted arc list of which each row keeps a prefix (the pairs below the threshold,
arcs sorted by length within their row), from a given flow: a flow for a smaller threshold is
valid for every larger one, so a search carries the flow of the largest threshold proven
infeasible and each test only adds the augmenting paths it lacks (as the matching search of
:mod:`solvopt.transport.bottleneck` does for uniform masses).

Answers are proven, not rounded: a test is feasible when the flow meets every demand to
:data:`MASS_TOLERANCE` of the total (the plan's marginals are then within that), infeasible only
with a Hall violator, the sources S reached from an unsaturated source in the residual graph,
whose targets N(S) (every neighbour of S is reached, the pairs being uncapacitated) hold less mass
than S: a(S) > b(N(S)), checked by an exactly rounded sum of the model's own masses
(:func:`hall_deficit`).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

# Unmet demand, as a fraction of the total mass, up to which a flow counts as a plan.
MASS_TOLERANCE = 1e-12


@njit(cache=True, nogil=True)
def augment(indptr, indices, limit, colptr, col_arc, arc_row, supply, demand, flow, out_row, in_col, tol):
    """Dinic's algorithm from the flow given (updated in place) on the arcs of row i at positions
    indptr[i]:limit[i] (arc e to column indices[e]); colptr / col_arc list the arcs of every column
    (positions into the rows' order), arc_row[e] the row of arc e. out_row / in_col: the flow
    leaving each row and entering each column. Residual amounts below ``tol`` count as none.

    Returns (unmet demand, reached rows, reached columns) where the two masks are the residual
    graph's reach from the rows with supply left (the Hall violator when demand is unmet)."""
    nr = indptr.shape[0] - 1
    nc = colptr.shape[0] - 1
    big = 1 << 60
    level_r = np.empty(nr, np.int64)
    level_c = np.empty(nc, np.int64)
    queue = np.empty(nr, np.int64)
    ptr_r = np.empty(nr, np.int64)
    ptr_c = np.empty(nc, np.int64)
    path_r = np.empty(nr + 1, np.int64)
    path_c = np.empty(nr + 1, np.int64)
    fwd = np.empty(nr + 1, np.int64)
    back = np.empty(nr + 1, np.int64)
    while True:
        # --- levels: rows with supply left at 0, alternating forward arcs and arcs with flow back
        head = tail = 0
        for i in range(nr):
            if supply[i] - out_row[i] > tol:
                level_r[i] = 0
                queue[tail] = i
                tail += 1
            else:
                level_r[i] = -1
        for j in range(nc):
            level_c[j] = -1
        found = big
        while head < tail:
            i = queue[head]
            head += 1
            if level_r[i] + 1 > found:
                continue
            for e in range(indptr[i], limit[i]):
                j = indices[e]
                if level_c[j] >= 0:
                    continue
                level_c[j] = level_r[i] + 1
                if demand[j] - in_col[j] > tol:
                    if level_c[j] < found:
                        found = level_c[j]
                    continue
                for t in range(colptr[j], colptr[j + 1]):
                    e2 = col_arc[t]
                    i2 = arc_row[e2]
                    if level_r[i2] < 0 and flow[e2] > tol and e2 < limit[i2]:
                        level_r[i2] = level_c[j] + 1
                        queue[tail] = i2
                        tail += 1
        if found == big:
            break
        # --- blocking flow along shortest paths (current-arc pointers)
        for i in range(nr):
            ptr_r[i] = indptr[i]
        for j in range(nc):
            ptr_c[j] = colptr[j]
        for s in range(nr):
            if level_r[s] != 0:
                continue
            while supply[s] - out_row[s] > tol:
                depth = 0
                path_r[0] = s
                complete = False
                while True:
                    i = path_r[depth]
                    moved = False
                    while ptr_r[i] < limit[i] and not moved and not complete:
                        e = ptr_r[i]
                        j = indices[e]
                        if level_c[j] == level_r[i] + 1:
                            if level_c[j] == found:
                                if demand[j] - in_col[j] > tol:
                                    path_c[depth] = j
                                    fwd[depth] = e
                                    complete = True
                                    break
                            else:
                                while ptr_c[j] < colptr[j + 1]:
                                    e2 = col_arc[ptr_c[j]]
                                    i2 = arc_row[e2]
                                    if level_r[i2] == level_c[j] + 1 and flow[e2] > tol and e2 < limit[i2]:
                                        path_c[depth] = j
                                        fwd[depth] = e
                                        back[depth] = e2
                                        depth += 1
                                        path_r[depth] = i2
                                        moved = True
                                        break
                                    ptr_c[j] += 1
                                if moved:
                                    break
                        ptr_r[i] += 1
                    if complete:
                        break
                    if not moved:                       # a dead end: retreat
                        level_r[i] = -1
                        if depth == 0:
                            break
                        depth -= 1
                        ptr_c[path_c[depth]] += 1
                if not complete:
                    break
                amount = min(supply[s] - out_row[s], demand[path_c[depth]] - in_col[path_c[depth]])
                for d in range(depth):
                    if flow[back[d]] < amount:
                        amount = flow[back[d]]
                for d in range(depth + 1):
                    flow[fwd[d]] += amount
                for d in range(depth):
                    flow[back[d]] -= amount
                out_row[s] += amount
                in_col[path_c[depth]] += amount
    unmet = 0.0
    for j in range(nc):
        if demand[j] - in_col[j] > 0:
            unmet += demand[j] - in_col[j]
    return unmet, level_r >= 0, level_c >= 0


class WarmFlow:
    """Feasibility tests on the prefixes of a pair list sorted by length (local indices r, c into
    the sources and targets with mass ``a``, ``b``), each warm from the flow of the largest prefix
    proven infeasible. ``test(k)``: the flow on the first k pairs (per pair, in the given order)
    when they carry a plan, else None (proven by a Hall violator)."""

    def __init__(self, r, c, a, b):
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
        self.base = (np.zeros(len(r)), np.zeros(nr), np.zeros(nc), 0)     # flow, out, in, prefix
        self.tol = MASS_TOLERANCE / max(len(r), 1)

    def test(self, k: int):
        if k >= self.base[3]:          # the base's flow runs on its prefix: valid on every longer one
            flow, out_row, in_col = (x.copy() for x in self.base[:3])
        else:
            flow, out_row, in_col = np.zeros(len(self.r)), np.zeros(len(self.a)), np.zeros(len(self.b))
        limit = self.indptr[:-1] + np.bincount(self.r[:k], minlength=len(self.a))
        unmet, reach_r, reach_c = augment(self.indptr, self.indices, limit, self.colptr, self.col_arc,
                                          self.rows_sorted, self.supply, self.demand, flow, out_row, in_col,
                                          self.tol)
        if unmet <= MASS_TOLERANCE:
            out = np.empty(len(flow))
            out[self.by_row] = flow
            return out
        if hall_deficit(self.a, self.b, reach_r, reach_c) <= 0:
            raise ArithmeticError("max flow: unmet demand without a Hall violator (rounding)")
        if k >= self.base[3]:
            self.base = (flow, out_row, in_col, k)
        return None


def hall_deficit(a, b, rows, cols) -> float:
    """a(rows) - b(cols), exactly rounded (positive: ``rows`` need more than ``cols`` can take)."""
    return math.fsum(np.concatenate([a[rows], -b[cols]]))


__all__ = ["MASS_TOLERANCE", "WarmFlow", "augment", "hall_deficit"]
