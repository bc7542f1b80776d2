"""Numba kernels of ``approx`` on the full cost matrix (:mod:`solvopt.transport.approx_dense`):
the matrix of costs (d / unit)^p, one phase of the auction algorithm, and the double
c-transform of its prices over every pair.

The matrix kernel exists twice, a parallel one (rows spread over the threads) and a serial twin
for small matrices: a parallel region costs a few milliseconds to start on a shared machine whose
other core is busy, more than the whole pass at n = 1000. The arithmetic is that of
:mod:`solvopt.transport.kernels_numba` (``_dist``, then the power), except for p = 2 euclidean,
(sum of squared differences) / unit^2: the same costs to a few units in the last place, which the
certificate's rounding margin covers.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .kernels_numba import _cost_p, _dist

# auction statuses
DONE, STOPPED, CAPPED = 0, 1, 2
# bids between two looks at the stop flag
STOP_CHECK = 4096


@njit(cache=True, inline="always")
def _cost_row(x, y, i, metric, unit, p, out, row_min, row_sum):
    low = np.inf
    total = 0.0
    squared = metric == 0 and p == 2.0          # (d / unit)^2 without the square root
    unit2 = unit * unit
    for j in range(y.shape[0]):
        if squared:
            acc = 0.0
            for axis in range(x.shape[1]):
                diff = x[i, axis] - y[j, axis]
                acc += diff * diff
            c = acc / unit2
        else:
            c = _cost_p(_dist(x, i, y, j, metric) / unit, p)
        out[i, j] = c
        total += c
        if c < low:
            low = c
    row_min[i] = low
    row_sum[i] = total


@njit(cache=True, parallel=True)
def dense_costs(x, y, metric, unit, p, out, row_min, row_sum):
    """out[i, j] = (d(x_i, y_j) / unit)^p, row_min[i] = min_j out[i, j] and row_sum[i] = sum_j
    out[i, j] (rows in parallel)."""
    for i in prange(x.shape[0]):
        _cost_row(x, y, i, metric, unit, p, out, row_min, row_sum)


@njit(cache=True)
def dense_costs_serial(x, y, metric, unit, p, out, row_min, row_sum):
    """:func:`dense_costs` in the calling thread (small matrices)."""
    for i in range(x.shape[0]):
        _cost_row(x, y, i, metric, unit, p, out, row_min, row_sum)


@njit(cache=True, nogil=True)
def auction_phase(C, price, eps, assign, owner, flag, max_bids):
    """One eps-phase of Bertsekas' forward auction (Gauss-Seidel, a FIFO queue of unassigned
    persons) for the assignment problem min sum_i C[i, assign[i]] (n x n, rows: persons, columns:
    objects), prices ``price`` (raised in place, kept from the phase before).

    Every person starts the phase unassigned. A person bids for its best object j (least
    C[i, j] + price[j]) and raises that price by (second best - best) + eps, taking it from its
    owner, who goes back in the queue. At the end every person holds one object and

        C[i, assign[i]] + price[assign[i]] <= min_j (C[i, j] + price[j]) + eps    (eps-CS),

    since a bid leaves the bidder's object at most eps above its second best and prices only rise.
    Returns (bids, status): DONE; STOPPED when ``flag[0]`` was set (assignment incomplete); CAPPED
    after ``max_bids`` bids (assignment incomplete)."""
    n = C.shape[0]
    m = C.shape[1]
    queue = np.empty(n, np.int64)
    for i in range(n):
        assign[i] = -1
        queue[i] = i
    for j in range(m):
        owner[j] = -1
    head = 0
    size = n
    bids = 0
    while size > 0:
        if bids % STOP_CHECK == 0 and flag[0] != 0:
            return bids, STOPPED
        if bids >= max_bids:
            return bids, CAPPED
        i = queue[head]
        head += 1
        if head == n:
            head = 0
        size -= 1
        best = np.inf
        second = np.inf
        bj = 0
        for j in range(m):
            v = C[i, j] + price[j]
            if v < second:
                if v < best:
                    second = best
                    best = v
                    bj = j
                else:
                    second = v
        if m == 1:
            second = best
        price[bj] += (second - best) + eps
        prev = owner[bj]
        owner[bj] = i
        assign[i] = bj
        bids += 1
        if prev >= 0:
            assign[prev] = -1
            tail = head + size
            if tail >= n:
                tail -= n
            queue[tail] = prev
            size += 1
    return bids, DONE


@njit(cache=True, nogil=True)
def assigned_cost(C, assign):
    """sum_i C[i, assign[i]]."""
    total = 0.0
    for i in range(C.shape[0]):
        total += C[i, assign[i]]
    return total


@njit(cache=True, nogil=True)
def double_c_transform(C, price, u, v):
    """The dual pair of the prices, made feasible for every pair: u_i = min_j (C[i, j] + price[j])
    (the c-transform of v = -price), shifted to centre its range, then v_j = min_i (C[i, j] - u_i)
    (the c-transform of u). u_i + v_j <= C[i, j] for every pair, up to float rounding."""
    n, m = C.shape
    for i in range(n):
        low = np.inf
        for j in range(m):
            val = C[i, j] + price[j]
            if val < low:
                low = val
        u[i] = low
    mid = 0.5 * (u.max() + u.min())
    for i in range(n):
        u[i] -= mid
    for j in range(m):
        v[j] = np.inf
    for i in range(n):
        ui = u[i]
        for j in range(m):
            val = C[i, j] - ui
            if val < v[j]:
                v[j] = val
