"""A chunk's final values, reduced where the kernel ran, into the core's mergeable statistics.

The kernel leaves a chunk's final values (rows x n scenarios; a row is a final state, or the
per-scenario best) on its device, masked with the sentinel. :func:`chunk_stats` computes per
row the count of reachable values, their mean and sum of squared deviations with the
kernel's array module (NumPy or CuPy, i.e. on the device), and brings back only those and
the quantile sample (the scenarios whose global index is a multiple of ``stride``), as a
:class:`solvopt.core.chunks.ScenarioStats`. Merging, intervals (the core's ``Z95``) and
quantiles are the core's.
"""
from __future__ import annotations

import numpy as np

from solvopt.core.chunks import ScenarioStats


def chunk_stats(values, start: int, stride: int, half_sentinel: float, to_host=np.asarray) -> ScenarioStats:
    """Statistics of ``values`` (rows, n) on the kernel's device for scenarios start..start+n-1.

    Values >= ``half_sentinel`` are unreachable (they count as infinite, and are +inf in the sample).
    """
    n = values.shape[1]
    finite = values < half_sentinel
    n_finite = finite.sum(axis=1)
    safe = values.astype(np.float64) * finite          # unreachable entries count as 0 in the sums
    mean = safe.sum(axis=1) / (n_finite + (n_finite == 0))
    m2 = (((safe - mean[:, None]) * finite) ** 2).sum(axis=1)
    count = np.asarray(to_host(n_finite), dtype=np.int64)
    out = ScenarioStats.from_moments(count, to_host(mean), to_host(m2), n - count, stride)
    first = (-start) % out.stride                      # first local index on the sample grid
    if first < n:
        picked = np.asarray(to_host(values[:, first::out.stride]), dtype=np.float64)
        out.add_sample(np.arange(start + first, start + n, out.stride, dtype=np.int64),
                       np.where(picked >= half_sentinel, np.inf, picked))
    return out
