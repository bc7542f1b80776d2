"""CuPy launcher of ``cvrp.cu``: the stochastic split (family cvrp) on a GPU, one thread per scenario.

:func:`scenario_costs` has the signature of the CPU kernels (documented in
:mod:`solvopt.cvrp.kernels_numpy`): plain arrays and numbers in, per-scenario costs out. Its
arrays may be NumPy (copied to the device) or CuPy (used in place); with a CuPy ``out`` the
costs stay on the device, and :func:`chunk_stats` reduces them there into the chunk's
:class:`~solvopt.core.chunks.ScenarioStats` (a few numbers and the quantile sample come back).
This module knows nothing of the family that calls it: it imports only the core and the harness.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from solvopt.core.chunks import ScenarioStats

from .harness import load_module

BLOCK = 128                      # threads per block (SPLIT_BLOCK in cvrp.cu)
SCRATCH_BYTES = 2 << 30          # per-thread value/prefix scratch across the grid stays under this
SHARED_LIMIT = 48 * 1024         # dynamic shared memory per block (the default limit)


def _grid(n: int, count: int) -> int:
    """Blocks for ``count`` scenarios of a tour of n customers (scratch bounded by SCRATCH_BYTES)."""
    per_thread = (n + 1) * (8 + 4)
    max_threads = max(BLOCK, (SCRATCH_BYTES // per_thread) // BLOCK * BLOCK)
    return int(max(1, min((count + BLOCK - 1) // BLOCK, max_threads // BLOCK)))


def scenario_costs(first, demands, key, cdf, cdf_start, guide, guide_start, tour0, entry, exit_, capacity, penalty,
                   penalise, out) -> None:
    """CUDA twin of :func:`solvopt.cvrp.kernels_numpy.scenario_costs` (same signature and costs)."""
    import cupy as cp
    count = int(out.shape[0])
    on_device = isinstance(out, cp.ndarray)
    dev_out = out if on_device else cp.empty(count, dtype=cp.float64)
    tour0 = cp.asarray(tour0, dtype=cp.int64)
    entry = cp.asarray(entry, dtype=cp.float64)
    exit_ = cp.asarray(exit_, dtype=cp.float64)
    n = int(tour0.shape[0])
    blocks = _grid(n, count)
    threads = blocks * BLOCK
    value = cp.empty((n + 1) * threads, dtype=cp.float64)
    prefix = cp.empty((n + 1) * threads, dtype=cp.int32)
    shared = (2 * n + 1) * 8 + n * 8
    use_shared = shared <= SHARED_LIMIT
    module = load_module("cvrp.cu")
    tail = (tour0, np.int32(n), entry, exit_, np.int32(capacity), np.float64(penalty), np.int32(bool(penalise)),
            value, prefix, dev_out, np.int32(use_shared))
    head: tuple[Any, ...]   # the kernel's leading arguments: the demand matrix, or the sampler's tables
    if demands.size:
        demands = cp.asarray(demands, dtype=cp.int32)
        head = (cp.ascontiguousarray(demands), np.int32(demands.shape[1]), np.int64(count))
        name = "split_matrix"
    else:
        head = (np.int64(first), np.int64(count), np.uint32(key[0]), np.uint32(key[1]),
                cp.asarray(cdf, dtype=cp.float64), cp.asarray(cdf_start, dtype=cp.int64),
                cp.asarray(guide, dtype=cp.int32), cp.asarray(guide_start, dtype=cp.int64))
        name = "split_fused"
    module.get_function(name)((blocks,), (BLOCK,), head + tail, shared_mem=shared if use_shared else 0)
    if not on_device:
        out[...] = cp.asnumpy(dev_out)


def chunk_stats(out, start: int, stride: int) -> ScenarioStats:
    """The statistics of one chunk's costs held on the device (``+inf`` = infeasible scenario).

    Count, mean and the sum of squared deviations are reduced on the device (two passes, as
    :meth:`ScenarioStats.of` does on the host); the quantile sample (every ``stride``-th
    scenario by global index) is copied back.
    """
    import cupy as cp
    total = int(out.shape[0])
    finite = cp.isfinite(out)
    count = int(finite.sum())
    mean = float(cp.where(finite, out, 0.0).sum()) / max(count, 1)
    m2 = float((cp.where(finite, out - mean, 0.0) ** 2).sum())
    stats = ScenarioStats.from_moments(count, mean, m2, total - count, stride)
    first = (-start) % stats.stride
    if first < total:
        index = np.arange(start + first, start + total, stats.stride, dtype=np.int64)
        stats.add_sample(index, cp.asnumpy(out[first::stats.stride]))
    return stats


def device_name() -> str:
    """The name of the current CUDA device."""
    import cupy as cp
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    name = props["name"]
    return name.decode() if isinstance(name, bytes) else str(name)
