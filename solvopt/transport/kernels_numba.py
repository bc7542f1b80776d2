"""Numba twins of the transport distance kernels: one thread per row, no (n x m) temporary.

Signatures and the exact arithmetic are those of :mod:`solvopt.transport.kernels_numpy` (where
they are documented): per-axis terms accumulated in axis order, one sqrt for euclidean, so the
distances agree with the NumPy reference to the bit. Rows are spread over the threads with
``prange``; every row is independent, so results do not depend on the thread count.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, inline="always")
def _dist(x, i, y, j, metric):
    acc = 0.0
    for axis in range(x.shape[1]):
        diff = x[i, axis] - y[j, axis]
        if metric == 0:
            acc += diff * diff
        elif metric == 1:
            acc += abs(diff)
        else:
            acc = max(acc, abs(diff))
    return np.sqrt(acc) if metric == 0 else acc


@njit(cache=True, parallel=True)
def distances(x, y, metric, out):
    for i in prange(x.shape[0]):
        for j in range(y.shape[0]):
            out[i, j] = _dist(x, i, y, j, metric)


@njit(cache=True, parallel=True)
def pair_distances(x, y, i, j, metric, out):
    for k in prange(len(i)):
        out[k] = _dist(x, i[k], y, j[k], metric)


@njit(cache=True, parallel=True)
def nearest(x, c, metric, index, dist):
    for i in prange(x.shape[0]):
        best, arg = np.inf, 0
        for k in range(c.shape[0]):
            d = _dist(x, i, c, k, metric)
            if d < best:
                best, arg = d, k
        index[i] = arg
        dist[i] = best


@njit(cache=True, parallel=True)
def bunch_counts(x, y, radius, metric, counts):
    for i in prange(x.shape[0]):
        count = 0
        r = radius[i]
        for j in range(y.shape[0]):
            if _dist(x, i, y, j, metric) < r:
                count += 1
        counts[i] = count


@njit(cache=True, parallel=True)
def bunch_fill(x, y, radius, metric, indptr, cols, dist):
    for i in prange(x.shape[0]):
        at = indptr[i]
        r = radius[i]
        for j in range(y.shape[0]):
            d = _dist(x, i, y, j, metric)
            if d < r:
                cols[at] = j
                dist[at] = d
                at += 1
