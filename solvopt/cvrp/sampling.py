"""Counter-based demand sampling for the stochastic split: Philox4x32-10 and Poisson by inversion.

This module is the pure-NumPy half: the Poisson tables, the Philox key of a seed, and the
reference implementation of the stream (the oracle of the Numba sampler in
:mod:`solvopt.cvrp.kernels_numba` and of the CUDA sampler in ``gpu/cvrp.cu``). The kernels
receive the tables and the key as plain arrays and integers.

Every random demand is a pure function of (seed, scenario index w, customer): no generator
state is carried between scenarios, so any chunking, thread count or device (Numba or CUDA,
``gpu/cvrp.cu`` implements the same stream) gives the same demands.

The stream, exactly:

- Philox4x32 with 10 rounds (Salmon et al., SC'11, as in Random123), key
  ``(seed mod 2^32, (seed >> 32) mod 2^32)``, counter ``(w mod 2^32, w >> 32, j, 0)`` for the
  customer pair ``j``; the 128 output bits ``(o0, o1, o2, o3)`` give customer ``2j`` the
  64-bit word ``o0 << 32 | o1`` and customer ``2j + 1`` the word ``o2 << 32 | o3``
  (customers indexed 0..n-1 in instance order, i.e. node id - 1, independent of the tour:
  different tours see the same demands, common random numbers).
- A 64-bit word ``x`` becomes ``u = (x >> 11) * 2^-53`` in [0, 1).
- Poisson(mu) by inversion: ``X = min{k : F(k) > u}`` with ``F`` the Poisson CDF tabulated in
  float64 (scipy.special) up to the first k whose upper tail ``P(X > k) < 2^-64``; that last entry is
  set to 1 (the truncated tail mass is below 2^-64, beneath the 2^-53 resolution of ``u``).
  A guide table (Chen and Asau) with ``GUIDE_FACTOR`` cells per table entry points each ``u``
  at its answer or just before it, so the search costs O(1) expected comparisons.

The tables grow with the mean (about mu + 20 sqrt(mu) entries); means above
``MAX_POISSON_MEAN`` are refused (give a demand matrix instead).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import pdtr, pdtrc

from solvopt.core.errors import ModelError

MAX_POISSON_MEAN = 1e5
TAIL = 2.0 ** -64
GUIDE_FACTOR = 4      # guide cells per table entry: fewer search steps, fewer mispredicted branches

PHILOX_M0 = np.uint64(0xD2511F53)
PHILOX_M1 = np.uint64(0xCD9E8D57)
PHILOX_W0 = np.uint64(0x9E3779B9)
PHILOX_W1 = np.uint64(0xBB67AE85)
MASK32 = np.uint64(0xFFFFFFFF)
SHIFT32 = np.uint64(32)
SHIFT11 = np.uint64(11)
TWO_POW_M53 = 2.0 ** -53


@dataclass(frozen=True)
class PoissonTables:
    """Flat per-customer CDF and guide tables (customer c owns ``cdf[cdf_start[c]:cdf_start[c+1]]``)."""

    means: np.ndarray
    cdf: np.ndarray          # float64, F(k) for k = 0..K_c-1, last entry 1.0
    cdf_start: np.ndarray    # int64 (n+1,)
    guide: np.ndarray        # int32, guide[guide_start[c] + j] = min{k : F(k) > j / M_c}, M_c = 4 K_c
    guide_start: np.ndarray  # int64 (n+1,)

    @property
    def max_demand(self) -> int:
        return int(np.max(np.diff(self.cdf_start))) - 1

    @property
    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(cdf, cdf_start, guide, guide_start)``: the tables as the kernels take them."""
        return self.cdf, self.cdf_start, self.guide, self.guide_start


def poisson_tables(means) -> PoissonTables:
    """Inversion tables for Poisson demands with the given means (one per customer).

    The CDF and tail come from ``scipy.special.pdtr`` / ``pdtrc``, the functions
    ``scipy.stats.poisson.cdf`` / ``sf`` evaluate (without the second of importing scipy.stats).
    """

    means = np.asarray(means, dtype=float)
    if means.ndim != 1 or not np.all(np.isfinite(means)) or np.any(means < 0):
        raise ModelError("Poisson means must be a 1-D array of finite numbers >= 0")
    if np.any(means > MAX_POISSON_MEAN):
        raise ModelError(f"Poisson means above {MAX_POISSON_MEAN:g} are not supported by the inversion "
                         "sampler (tables grow with the mean); pass a demand matrix instead")
    cdfs, guides = [], []
    for mu in means:
        if mu == 0:
            cdf = np.ones(1)
        else:
            kmax = int(mu + 20 * np.sqrt(mu) + 60)
            ks = np.arange(kmax + 1)
            tail = pdtrc(ks, mu)
            length = int(np.argmax(tail < TAIL)) + 1       # first k with P(X > k) < 2^-64
            cdf = pdtr(ks[:length], mu)
            cdf = np.maximum.accumulate(cdf)
            cdf[-1] = 1.0
        m = GUIDE_FACTOR * cdf.shape[0]
        guide = np.searchsorted(cdf, np.arange(m) / m, side="right").astype(np.int32)
        cdfs.append(cdf)
        guides.append(guide)
    starts = np.zeros(len(means) + 1, dtype=np.int64)
    starts[1:] = np.cumsum([c.shape[0] for c in cdfs])
    return PoissonTables(means=means, cdf=np.concatenate(cdfs) if cdfs else np.ones(0),
                         cdf_start=starts, guide=np.concatenate(guides) if guides else np.zeros(0, np.int32),
                         guide_start=GUIDE_FACTOR * starts)


def philox_key(seed: int) -> tuple[int, int]:
    """The Philox key words for a seed (taken modulo 2^64, so negative seeds work too)."""
    s = int(seed) % (1 << 64)
    return s & 0xFFFFFFFF, s >> 32


# --- NumPy reference ---------------------------------------------------------------------------
def philox4x32_numpy(counter: np.ndarray, key: tuple[int, int], rounds: int = 10) -> np.ndarray:
    """Philox4x32-R on a (m, 4) array of 32-bit counters; the reference for the kernels."""
    c = [np.asarray(counter[:, i], dtype=np.uint64) & MASK32 for i in range(4)]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for _ in range(rounds):
        p0 = PHILOX_M0 * c[0]
        p1 = PHILOX_M1 * c[2]
        c = [(p1 >> SHIFT32) ^ c[1] ^ k0, p1 & MASK32, (p0 >> SHIFT32) ^ c[3] ^ k1, p0 & MASK32]
        k0 = (k0 + PHILOX_W0) & MASK32
        k1 = (k1 + PHILOX_W1) & MASK32
    return np.stack(c, axis=1).astype(np.uint32)


def _uniforms(key, first: int, count: int, n_customers: int) -> np.ndarray:
    pairs = (n_customers + 1) // 2
    w = np.repeat(np.arange(first, first + count, dtype=np.uint64), pairs)
    j = np.tile(np.arange(pairs, dtype=np.uint64), count)
    ctr = np.stack([w & MASK32, w >> SHIFT32, j, np.zeros_like(j)], axis=1)
    o = philox4x32_numpy(ctr, (int(key[0]), int(key[1]))).astype(np.uint64)
    words = np.empty((count * pairs, 2), dtype=np.uint64)
    words[:, 0] = (o[:, 0] << SHIFT32) | o[:, 1]
    words[:, 1] = (o[:, 2] << SHIFT32) | o[:, 3]
    words = words.reshape(count, 2 * pairs)[:, :n_customers]
    return (words >> SHIFT11).astype(np.float64) * TWO_POW_M53


def sample_demands_numpy(tables: PoissonTables, seed: int, first: int, count: int) -> np.ndarray:
    """(count, n) int32 Poisson demands of scenarios first..: inversion by binary search (reference)."""
    return sample_from_tables(first, count, philox_key(seed), tables.cdf, tables.cdf_start)


def sample_from_tables(first: int, count: int, key, cdf, cdf_start) -> np.ndarray:
    """The reference sampler on plain arrays: key ``(k0, k1)``, flat CDF tables (see :class:`PoissonTables`)."""
    n = cdf_start.shape[0] - 1
    u = _uniforms(key, first, count, n)
    out = np.empty((count, n), dtype=np.int32)
    for c in range(n):
        out[:, c] = np.searchsorted(cdf[cdf_start[c]:cdf_start[c + 1]], u[:, c], side="right")
    return out
