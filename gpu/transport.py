"""CuPy launchers of ``transport.cu``: the transport distance kernels on a GPU, one thread per row.

Each function has the signature of its NumPy reference in :mod:`solvopt.transport.kernels_numpy`
(where the kernels are documented). Inputs may be NumPy (copied to the device) or CuPy (used in
place); outputs that are NumPy arrays are filled from the device, CuPy outputs are written in
place. This module knows nothing of the family that calls it: it imports only the harness.
"""
from __future__ import annotations

import numpy as np

from .harness import load_module

BLOCK = 256           # threads per block
MAX_BLOCKS = 65535    # grid-stride loops cover the rest


def _grid(count: int) -> int:
    return int(max(1, min((count + BLOCK - 1) // BLOCK, MAX_BLOCKS)))


def _points(a):
    import cupy as cp
    return cp.ascontiguousarray(cp.asarray(a, dtype=cp.float64))


def _launch(name: str, count: int, args) -> None:
    load_module("transport.cu").get_function(name)((_grid(count),), (BLOCK,), args)


def _device_out(out, dtype):
    import cupy as cp
    return out if isinstance(out, cp.ndarray) else cp.empty(out.shape, dtype=dtype)


def _give_back(out, dev) -> None:
    import cupy as cp
    if not isinstance(out, cp.ndarray):
        out[...] = cp.asnumpy(dev)


def distances(x, y, metric, out) -> None:
    x, y = _points(x), _points(y)
    dev = _device_out(out, np.float64)
    _launch("tr_distances", x.shape[0] * y.shape[0],
            (x, np.int64(x.shape[0]), y, np.int64(y.shape[0]), np.int32(x.shape[1]), np.int32(metric), dev))
    _give_back(out, dev)


def pair_distances(x, y, i, j, metric, out) -> None:
    import cupy as cp
    x, y = _points(x), _points(y)
    i, j = cp.asarray(i, dtype=cp.int64), cp.asarray(j, dtype=cp.int64)
    dev = _device_out(out, np.float64)
    _launch("tr_pair_distances", len(i), (x, y, i, j, np.int64(len(i)), np.int32(x.shape[1]), np.int32(metric), dev))
    _give_back(out, dev)


def nearest(x, c, metric, index, dist) -> None:
    x, c = _points(x), _points(c)
    dev_index, dev_dist = _device_out(index, np.int64), _device_out(dist, np.float64)
    _launch("tr_nearest", x.shape[0], (x, np.int64(x.shape[0]), c, np.int64(c.shape[0]), np.int32(x.shape[1]),
                                       np.int32(metric), dev_index, dev_dist))
    _give_back(index, dev_index)
    _give_back(dist, dev_dist)


def bunch_counts(x, y, radius, metric, counts) -> None:
    x, y, radius = _points(x), _points(y), _points(radius)
    dev = _device_out(counts, np.int64)
    _launch("tr_bunch_counts", x.shape[0], (x, np.int64(x.shape[0]), y, np.int64(y.shape[0]), np.int32(x.shape[1]),
                                            np.int32(metric), radius, dev))
    _give_back(counts, dev)


def bunch_fill(x, y, radius, metric, indptr, cols, dist) -> None:
    import cupy as cp
    x, y, radius = _points(x), _points(y), _points(radius)
    indptr = cp.asarray(indptr, dtype=cp.int64)
    dev_cols, dev_dist = _device_out(cols, np.int64), _device_out(dist, np.float64)
    _launch("tr_bunch_fill", x.shape[0], (x, np.int64(x.shape[0]), y, np.int64(y.shape[0]), np.int32(x.shape[1]),
                                          np.int32(metric), radius, indptr, dev_cols, dev_dist))
    _give_back(cols, dev_cols)
    _give_back(dist, dev_dist)
