"""The NumPy reference of the transport distance kernels: the oracle the Numba and CUDA twins are
tested against.

Signatures shared by the three kernel sets (NumPy here, Numba in
:mod:`solvopt.transport.kernels_numba`, CUDA in ``solvopt.gpu.transport``); every array is
float64 points (rows) or preallocated outputs, ``metric`` an int code from :data:`METRICS`::

    distances(x, y, metric, out)                       out[i, j] = d(x[i], y[j])
    pair_distances(x, y, i, j, metric, out)            out[k] = d(x[i[k]], y[j[k]])
    nearest(x, c, metric, index, dist)                 index[i] = argmin_k d(x[i], c[k]) (first on ties),
                                                       dist[i] = that distance
    bunch_counts(x, y, radius, metric, counts)         counts[i] = #{j : d(x[i], y[j]) < radius[i]}
    bunch_fill(x, y, radius, metric, indptr, cols, dist)
                                                       row i of the CSR "bunch": the j with
                                                       d(x[i], y[j]) < radius[i] in increasing j, at
                                                       cols[indptr[i]:indptr[i+1]], with their distances

Every kernel computes a distance the same way, operation for operation: the per-axis terms
(|diff|, diff*diff) accumulated over the axes in order (sum, or max for chebyshev), then one
sqrt for euclidean. So the three twins agree to the bit on the CPU and a comparison
``d < radius`` never disagrees between a radius and a bunch computed by different kernels.
"""
from __future__ import annotations

import numpy as np

METRICS = {"euclidean": 0, "cityblock": 1, "chebyshev": 2}
BLOCK_ENTRIES = 1 << 22          # distance entries held at once by the blockwise reference


def metric_code(metric) -> int:
    """The kernel code of a metric name (callables have none: they run through the model)."""
    try:
        return METRICS[metric]
    except (KeyError, TypeError):
        raise ValueError(f"no distance kernel for metric {metric!r}; kernels know {', '.join(METRICS)}") from None


def _accumulated(diffs, shape, metric):
    """The distances from per-axis differences (an iterable of arrays of ``shape``), axis by axis."""
    acc = np.zeros(shape)
    for diff in diffs:
        if metric == 0:
            acc += diff * diff
        elif metric == 1:
            acc += np.abs(diff)
        else:
            np.maximum(acc, np.abs(diff), out=acc)
    return np.sqrt(acc, out=acc) if metric == 0 else acc


def _block_distances(x, y, metric):
    """d(x[i], y[j]) for a block of rows: (len(x), len(y)), one axis at a time (no (., ., d) temporary)."""
    return _accumulated((x[:, None, axis] - y[None, :, axis] for axis in range(x.shape[1])),
                        (x.shape[0], y.shape[0]), metric)


def row_blocks(n_rows, n_cols):
    """Slices of rows holding about BLOCK_ENTRIES distances each."""
    step = max(1, BLOCK_ENTRIES // max(n_cols, 1))
    for start in range(0, n_rows, step):
        yield slice(start, min(start + step, n_rows))


def distances(x, y, metric, out) -> None:
    for rows in row_blocks(x.shape[0], y.shape[0]):
        out[rows] = _block_distances(x[rows], y, metric)


def pair_distances(x, y, i, j, metric, out) -> None:
    out[:] = _accumulated((x[i, axis] - y[j, axis] for axis in range(x.shape[1])), (len(i),), metric)


def nearest(x, c, metric, index, dist) -> None:
    for rows in row_blocks(x.shape[0], c.shape[0]):
        block = _block_distances(x[rows], c, metric)
        index[rows] = np.argmin(block, axis=1)
        dist[rows] = block[np.arange(block.shape[0]), index[rows]]


def bunch_counts(x, y, radius, metric, counts) -> None:
    for rows in row_blocks(x.shape[0], y.shape[0]):
        counts[rows] = np.count_nonzero(_block_distances(x[rows], y, metric) < radius[rows, None], axis=1)


def bunch_fill(x, y, radius, metric, indptr, cols, dist) -> None:
    for rows in row_blocks(x.shape[0], y.shape[0]):
        block = _block_distances(x[rows], y, metric)
        inside = block < radius[rows, None]
        _, j = np.nonzero(inside)                       # row-major: increasing j within a row
        lo, hi = indptr[rows.start], indptr[rows.stop]
        cols[lo:hi] = j
        dist[lo:hi] = block[inside]
