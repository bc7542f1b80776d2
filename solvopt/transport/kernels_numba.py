"""Numba twins of the transport distance kernels: one thread per row, no (n x m) temporary.

Signatures and the exact arithmetic are those of :mod:`solvopt.transport.kernels_numpy` (where
they are documented): per-axis terms accumulated in axis order, one sqrt for euclidean, so the
distances agree with the NumPy reference to the bit. Rows are spread over the threads with
``prange``; every row is independent, so results do not depend on the thread count.

The distance kernels the graphs call (``distances``, ``pair_distances``, ``pair_costs``,
``nearest``, ``bunch_counts``, ``bunch_fill``) are each built twice, parallel and serial, and a
call of less than :data:`SERIAL_WORK` distances runs the serial build in the calling thread: a
parallel region costs milliseconds to start on a shared machine whose other core is busy (5000
pair distances: 1-7 ms with two threads, 0.02 ms in one, at load 1-2), more than such a call's work.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

# Distances per call below which the serial build runs (about a millisecond of work on one core).
SERIAL_WORK = 1 << 20


class Twin:
    """A kernel built twice, parallel and serial (the same body), called by its work: the serial
    build below :data:`SERIAL_WORK` distances. ``compile(signature)`` loads both (as a Numba
    dispatcher's does), so a warm-up covers either."""

    def __init__(self, parallel, serial, work):
        self.parallel, self.serial, self.work = parallel, serial, work
        self.__doc__ = parallel.__doc__
        self.__name__ = getattr(parallel, "__name__", "kernel")

    def __call__(self, *args):
        kernel = self.parallel if self.work(*args) >= SERIAL_WORK else self.serial
        return kernel(*args)

    def compile(self, signature) -> None:
        self.parallel.compile(signature)
        self.serial.compile(signature)


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
def _distances_parallel(x, y, metric, out):
    for i in prange(x.shape[0]):
        for j in range(y.shape[0]):
            out[i, j] = _dist(x, i, y, j, metric)


@njit(cache=True)
def _distances_serial(x, y, metric, out):
    for i in range(x.shape[0]):
        for j in range(y.shape[0]):
            out[i, j] = _dist(x, i, y, j, metric)


@njit(cache=True, parallel=True)
def _pair_distances_parallel(x, y, i, j, metric, out):
    for k in prange(len(i)):
        out[k] = _dist(x, i[k], y, j[k], metric)


@njit(cache=True)
def _pair_distances_serial(x, y, i, j, metric, out):
    for k in range(len(i)):
        out[k] = _dist(x, i[k], y, j[k], metric)


@njit(cache=True, parallel=True)
def _pair_costs_parallel(x, y, i, j, metric, unit, p, out):
    """out[k] = (d(x[i[k]], y[j[k]]) / unit)^p: the costs of a list of pairs, without temporaries."""
    for k in prange(len(i)):
        out[k] = (_dist(x, i[k], y, j[k], metric) / unit) ** p


@njit(cache=True)
def _pair_costs_serial(x, y, i, j, metric, unit, p, out):
    """out[k] = (d(x[i[k]], y[j[k]]) / unit)^p: the costs of a list of pairs, without temporaries."""
    for k in range(len(i)):
        out[k] = (_dist(x, i[k], y, j[k], metric) / unit) ** p


@njit(cache=True, inline="always")
def _nearest_row(x, c, metric, i, index, dist):
    """Row i of :func:`nearest`: the nearest centre of x[i] and its distance."""
    best, arg = np.inf, 0
    for k in range(c.shape[0]):
        d = _dist(x, i, c, k, metric)
        if d < best:
            best, arg = d, k
    index[i] = arg
    dist[i] = best


@njit(cache=True, parallel=True)
def _nearest_parallel(x, c, metric, index, dist):
    for i in prange(x.shape[0]):
        _nearest_row(x, c, metric, i, index, dist)


@njit(cache=True)
def _nearest_serial(x, c, metric, index, dist):
    for i in range(x.shape[0]):
        _nearest_row(x, c, metric, i, index, dist)


@njit(cache=True, inline="always")
def _bunch_count_row(x, y, radius, metric, i, counts):
    """Row i of :func:`bunch_counts`: the targets closer to x[i] than its radius."""
    count = 0
    r = radius[i]
    for j in range(y.shape[0]):
        if _dist(x, i, y, j, metric) < r:
            count += 1
    counts[i] = count


@njit(cache=True, parallel=True)
def _bunch_counts_parallel(x, y, radius, metric, counts):
    for i in prange(x.shape[0]):
        _bunch_count_row(x, y, radius, metric, i, counts)


@njit(cache=True)
def _bunch_counts_serial(x, y, radius, metric, counts):
    for i in range(x.shape[0]):
        _bunch_count_row(x, y, radius, metric, i, counts)


@njit(cache=True, inline="always")
def _bunch_fill_row(x, y, radius, metric, i, indptr, cols, dist):
    """Row i of :func:`bunch_fill`: those targets and their distances, from indptr[i] on."""
    at = indptr[i]
    r = radius[i]
    for j in range(y.shape[0]):
        d = _dist(x, i, y, j, metric)
        if d < r:
            cols[at] = j
            dist[at] = d
            at += 1


@njit(cache=True, parallel=True)
def _bunch_fill_parallel(x, y, radius, metric, indptr, cols, dist):
    for i in prange(x.shape[0]):
        _bunch_fill_row(x, y, radius, metric, i, indptr, cols, dist)


@njit(cache=True)
def _bunch_fill_serial(x, y, radius, metric, indptr, cols, dist):
    for i in range(x.shape[0]):
        _bunch_fill_row(x, y, radius, metric, i, indptr, cols, dist)


# the twins the graphs and the certificate call (see the module docstring), and their work


def _all_pairs(x, y, *rest) -> int:
    return x.shape[0] * y.shape[0]


def _listed_pairs(x, y, i, *rest) -> int:
    return len(i)


distances = Twin(_distances_parallel, _distances_serial, _all_pairs)
pair_distances = Twin(_pair_distances_parallel, _pair_distances_serial, _listed_pairs)
pair_costs = Twin(_pair_costs_parallel, _pair_costs_serial, _listed_pairs)
nearest = Twin(_nearest_parallel, _nearest_serial, _all_pairs)
bunch_counts = Twin(_bunch_counts_parallel, _bunch_counts_serial, _all_pairs)
bunch_fill = Twin(_bunch_fill_parallel, _bunch_fill_serial, _all_pairs)


# --- c-transforms of the dual certificate (solvopt.transport.dual) ----------------------------
@njit(cache=True, inline="always")
def _cost_p(d, p):
    if p == 1.0:
        return d
    if p == 2.0:
        return d * d
    return d ** p


@njit(cache=True, inline="always")
def _box_lower(lo, hi, top, node, dst, k, unit, p, metric):
    """A lower bound on c(x, dst[k]) - f(x) over the points x of box ``node`` (bounds lo, hi; f <= top)."""
    acc = 0.0
    for axis in range(dst.shape[1]):
        y = dst[k, axis]
        gap = max(lo[node, axis] - y, 0.0, y - hi[node, axis])
        if metric == 0:
            acc += gap * gap
        elif metric == 1:
            acc += gap
        else:
            acc = max(acc, gap)
    return _cost_p((np.sqrt(acc) if metric == 0 else acc) / unit, p) - top[node]


@njit(cache=True, inline="always")
def _best_source(src, pot, dst, k, unit, p, metric, first, last, best, at):
    """(min, argmin) of (d(src_i, dst_k) / unit)^p - pot_i over i in [first, last), from (best, at)."""
    for i in range(first, last):
        val = _cost_p(_dist(src, i, dst, k, metric) / unit, p) - pot[i]
        if val < best:
            best = val
            at = i
    return best, at


@njit(cache=True, parallel=True, nogil=True)
def c_transform_chunk(src, dst, pot, unit, p, metric, start, stop, out, arg):
    """out[k - start] = min_i ((d(src_i, dst_k) / unit)^p - pot_i) for k in [start, stop), arg the i."""
    for kk in prange(stop - start):
        out[kk], arg[kk] = _best_source(src, pot, dst, start + kk, unit, p, metric, 0, src.shape[0], np.inf, 0)


@njit(cache=True, parallel=True, nogil=True)
def c_transform_grid_chunk(src, pot, cell_start, lo, hi, top, dst, unit, p, metric, start, stop, out, arg):
    """:func:`c_transform_chunk` over a grid of source cells (sorted by cell): a cell is skipped
    when its lower bound (distance to its box)^p - (its largest potential) cannot beat the best."""
    n_cells = len(cell_start) - 1
    for kk in prange(stop - start):
        k = start + kk
        lower = np.empty(n_cells)
        first, first_lower = 0, np.inf
        for c in range(n_cells):
            lower[c] = _box_lower(lo, hi, top, c, dst, k, unit, p, metric)
            if lower[c] < first_lower:
                first, first_lower = c, lower[c]
        best = np.inf
        at = 0
        for step in range(n_cells + 1):
            c = first if step == 0 else step - 1
            if (step > 0 and c == first) or lower[c] >= best:
                continue
            best, at = _best_source(src, pot, dst, k, unit, p, metric, cell_start[c], cell_start[c + 1], best, at)
        out[kk] = best
        arg[kk] = at
