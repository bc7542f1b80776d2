"""Reference k-HC2 solver: enumerate every assignment up to relabelling of the clusters.

Assignments are enumerated as restricted growth strings (a_0 = 0, a_i <= 1 + max(a_0..a_{i-1}),
a_i < k): each partition of the points into at most k clusters appears exactly once. Each
assignment is costed from scratch (centred scatter per cluster, LAPACK's smallest eigenvalue),
deliberately sharing nothing with the branch-and-bound, so the two check each other.
"""
from __future__ import annotations

import math
import time

import numpy as np
from numba import njit

from ..core.errors import ModelError
from ..core.interrupt import stop_reason

MAX_ASSIGNMENTS = 1e7     # refuse when k^m / k! exceeds this
FIRST_BATCH = 1_000       # assignments in the first kernel call; the stop is checked between calls ...
BATCH_SECONDS = 0.1       # ... and the batch doubles while a call takes less than this


def assignment_count_estimate(m: int, k: int) -> float:
    """k^m / k!, the size estimate the method refuses above MAX_ASSIGNMENTS."""
    return math.exp(m * math.log(k) - math.lgamma(k + 1)) if k > 1 else 1.0


@njit(cache=True)
def _cost(X, labels, k):
    m, n = X.shape
    total = 0.0
    for j in range(k):
        count = 0
        mean = np.zeros(n)
        for i in range(m):
            if labels[i] == j:
                count += 1
                mean += X[i]
        if count <= 1:
            continue
        mean /= count
        S = np.zeros((n, n))
        for i in range(m):
            if labels[i] == j:
                d = X[i] - mean
                S += np.outer(d, d)
        total += max(0.0, np.linalg.eigvalsh(S)[0])
    return total


@njit(cache=True)
def _enumerate(X, k, labels, best, best_cost, budget):
    """Cost ``budget`` assignments from ``labels`` on; returns True when all were seen.

    ``labels`` is advanced in place to the next unseen assignment; ``best_cost`` is a 1-array.
    """
    m = X.shape[0]
    for _ in range(budget):
        c = _cost(X, labels, k)
        if c < best_cost[0]:
            best_cost[0] = c
            best[:] = labels
        # next restricted growth string: rightmost position that can still grow
        i = m - 1
        while i >= 1:
            prefix_max = 0
            for t in range(i):
                prefix_max = max(prefix_max, labels[t])
            if labels[i] < min(k - 1, prefix_max + 1):
                labels[i] += 1
                for t in range(i + 1, m):
                    labels[t] = 0
                break
            i -= 1
        if i < 1:
            return True
    return False


def solve_brute_force(points: np.ndarray, k: int, time_limit: float | None = None, progress=None):
    """``(assignment, cost, complete)``: the best assignment seen, and whether all were seen.

    The time limit and Ctrl-C are checked between kernel calls, whose batch grows from
    FIRST_BATCH assignments while a call takes under BATCH_SECONDS (a fixed 10^5 took seconds
    on 16 points in 3-D). ``progress``: a :class:`~solvopt.core.progress.Progress` for a line
    as the enumeration begins and then its count.
    """
    m = points.shape[0]
    estimate = assignment_count_estimate(m, k)
    if estimate > MAX_ASSIGNMENTS:
        raise ModelError(f"brute force refuses m={m}, k={k}: about k^m/k! = {estimate:.3g} assignments "
                         f"(limit {MAX_ASSIGNMENTS:.0e}); use method 'bnb'")
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    X = np.ascontiguousarray(points, dtype=np.float64)
    labels = np.zeros(m, dtype=np.int64)
    best = labels.copy()
    best_cost = np.array([np.inf])
    if progress is not None:
        progress(f"brute force: about {estimate:.3g} assignments")
    batch, seen = FIRST_BATCH, 0
    while True:
        began = time.perf_counter()
        if _enumerate(X, k, labels, best, best_cost, batch):
            return best, float(best_cost[0]), True
        seen += batch
        if time.perf_counter() - began < BATCH_SECONDS:
            batch *= 2
        if progress is not None:
            progress(f"brute force: {seen:,} assignments, best {best_cost[0]:.10g}")
        if stop_reason(deadline) is not None:
            return best, float(best_cost[0]), False
