"""Numba kernels of the stochastic split: SIMD blocks of scenarios, sampling fused into the DP.

:func:`scenario_costs` has the signature shared with the NumPy reference
(:func:`solvopt.cvrp.kernels_numpy.scenario_costs`, where it is documented) and the CUDA
launcher (``solvopt.gpu.cvrp.scenario_costs``). Inside:

- scenarios run in blocks of ``LANES`` in structure-of-arrays layout (``[tour position][lane]``),
  so the inner loop over predecessors works on LANES scenarios at once; the predecessor loop
  stops as soon as no lane's route fits (prefix loads decide it);
- with an empty demand matrix the demands are sampled inside the kernel by the counter-based
  Philox + Poisson-inversion stream of :mod:`solvopt.cvrp.sampling` (same numbers as its
  NumPy reference, whatever the block, the thread or the chunk);
- blocks are handed out dynamically over ``SLOTS_PER_THREAD`` work slots per thread; every block
  is independent, so the costs do not depend on the thread count or the schedule.

The arithmetic is the reference's, operation for operation (``value[i] = best + (entry[i] +
exit[i])``, ``J(n) = best + exit[n]``, penalty ``lam * (q - Q)`` added to the one-customer
route): the costs are bit-identical to the NumPy reference's.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from .sampling import MASK32, PHILOX_M0, PHILOX_M1, PHILOX_W0, PHILOX_W1, SHIFT11, SHIFT32, TWO_POW_M53, philox_key

LANES = 32            # scenarios per SIMD block: 8 independent 256-bit min chains per predecessor step
BIG = 1e300           # masked transition (a large finite sentinel, never inf arithmetic)
SLOTS_PER_THREAD = 8  # work slots per thread, handed out dynamically


# --- the sampler (inlined into the split kernels) -------------------------------------------------
@njit(cache=True, inline="always")
def philox4x32(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 on uint64 words holding 32-bit values; returns the four output words."""
    for _ in range(10):
        p0 = PHILOX_M0 * c0
        p1 = PHILOX_M1 * c2
        n0 = (p1 >> SHIFT32) ^ c1 ^ k0
        n2 = (p0 >> SHIFT32) ^ c3 ^ k1
        c0 = n0
        c1 = p1 & MASK32
        c2 = n2
        c3 = p0 & MASK32
        k0 = (k0 + PHILOX_W0) & MASK32
        k1 = (k1 + PHILOX_W1) & MASK32
    return c0, c1, c2, c3


@njit(cache=True, inline="always")
def poisson_inverse(u, c, cdf, cdf_start, guide, guide_start):
    """min{k : F_c(k) > u}, started from the guide table entry of u."""
    base = cdf_start[c]
    g = guide_start[c]
    k = np.int64(guide[g + np.int64(u * (guide_start[c + 1] - g))])
    k += cdf[base + k] <= u          # one branch-free step covers most draws ...
    while cdf[base + k] <= u:        # ... the loop the rare rest
        k += 1
    return k


@njit(cache=True)
def sample_block(dem, words, first, lanes, k0, k1, cdf, cdf_start, guide, guide_start):
    """Fill ``dem[c, l]`` (customer-major, lanes contiguous) with the demands of scenario first+l.

    The Philox loop over lanes has no branches, so it vectorises; ``words`` is (2, lanes) uint64
    scratch between the generator and the (scalar) inversion.
    """
    n = dem.shape[0]
    zero = np.uint64(0)
    for j in range((n + 1) // 2):
        jj = np.uint64(j)
        for l in range(lanes):
            w = np.uint64(first + l)
            o0, o1, o2, o3 = philox4x32(w & MASK32, w >> SHIFT32, jj, zero, k0, k1)
            words[0, l] = (o0 << SHIFT32) | o1
            words[1, l] = (o2 << SHIFT32) | o3
        for h in range(2):
            c = 2 * j + h
            if c < n:
                for l in range(lanes):
                    u = np.float64(words[h, l] >> SHIFT11) * TWO_POW_M53
                    dem[c, l] = poisson_inverse(u, c, cdf, cdf_start, guide, guide_start)


@njit(cache=True)
def sample_matrix(tables_cdf, cdf_start, guide, guide_start, k0, k1, first, count):
    """(count, n) int32 demands from the Numba sampler (for checks against the NumPy reference)."""
    n = cdf_start.shape[0] - 1
    lanes = 16
    out = np.empty((count, n), dtype=np.int32)
    dem = np.empty((n, lanes), dtype=np.int32)
    words = np.empty((2, lanes), dtype=np.uint64)
    for b in range(0, count, lanes):
        sample_block(dem, words, first + b, lanes, k0, k1, tables_cdf, cdf_start, guide, guide_start)
        for l in range(min(lanes, count - b)):
            for c in range(n):
                out[b + l, c] = dem[c, l]
    return out


def sample_demands_numba(tables, seed: int, first: int, count: int) -> np.ndarray:
    """The Numba sampler's demands for scenarios first..first+count-1 (same stream as the reference)."""
    k0, k1 = philox_key(seed)
    return sample_matrix(tables.cdf, tables.cdf_start, tables.guide, tables.guide_start,
                         np.uint64(k0), np.uint64(k1), np.int64(first), np.int64(count))


# --- the split of LANES scenarios -------------------------------------------------------------------
@njit(cache=True)
def _split_block(dem, tour0, entry, exit_, cap, lam, penalise, value, prefix, best, thr, last, bad):
    """Split LANES scenarios at once; ``dem[c, l]`` is customer c's demand in lane l.

    Leaves each lane's J(n) in ``last`` and whether a customer exceeded Q (under the
    "infeasible" policy) in ``bad``.
    """
    n = tour0.shape[0]
    lanes = best.shape[0]
    e0 = entry[0]
    for l in range(lanes):
        prefix[0, l] = 0
        value[0, l] = e0
        bad[l] = False
    for i in range(1, n + 1):
        row = tour0[i - 1]
        for l in range(lanes):             # the one-customer route p = i-1 (always tried)
            q = dem[row, l]
            load = prefix[i - 1, l] + q
            prefix[i, l] = load
            thr[l] = load - cap                # route p+1..i fits iff prefix[p] >= thr
            if penalise:
                best[l] = value[i - 1, l] + lam * max(q - cap, 0)
            else:
                over = q > cap
                bad[l] = bad[l] or over
                best[l] = BIG if over else value[i - 1, l]
        p = i - 2
        while p >= 0:                          # longer routes, while any lane's route still fits
            fits_any = False
            for l in range(lanes):
                fits = prefix[p, l] >= thr[l]
                best[l] = min(best[l], value[p, l] if fits else BIG)
                fits_any = fits_any or fits
            if not fits_any:
                break
            p -= 1
        ex = exit_[i]
        if i < n:
            en = entry[i] + ex
            for l in range(lanes):
                value[i, l] = best[l] + en
        else:
            for l in range(lanes):
                last[l] = best[l] + ex


@njit(cache=True, inline="always")
def _block_scratch(ncust, n):
    """A thread's work arrays for :func:`_split_block` (tours of n positions, ncust customers):
    (demands, value, prefix, best, thr, last, bad)."""
    return (np.zeros((ncust, LANES), dtype=np.int32), np.empty((n + 1, LANES)),
            np.empty((n + 1, LANES), dtype=np.int32), np.empty(LANES), np.empty(LANES, dtype=np.int32),
            np.empty(LANES), np.empty(LANES, dtype=np.bool_))


@njit(cache=True, parallel=True)
def _costs_matrix(demands, tour0, entry, exit_, cap, lam, penalise, out, nthreads):
    """The kernel on a given (S, n) int32 demand matrix; writes out[:S] (+inf = infeasible)."""
    S, ncust = demands.shape
    n = tour0.shape[0]
    nblocks = (S + LANES - 1) // LANES
    slots = min(SLOTS_PER_THREAD * nthreads, max(nblocks, 1))
    for t in prange(slots):
        dem, value, prefix, best, thr, last, bad = _block_scratch(ncust, n)
        for b in range(t, nblocks, slots):
            first = b * LANES
            count = min(LANES, S - first)
            for c in range(ncust):
                for l in range(count):
                    dem[c, l] = demands[first + l, c]
                for l in range(count, LANES):
                    dem[c, l] = 0
            _split_block(dem, tour0, entry, exit_, cap, lam, penalise, value, prefix, best, thr, last, bad)
            for l in range(count):
                out[first + l] = np.inf if bad[l] else last[l]


@njit(cache=True, parallel=True)
def _costs_fused(first_scenario, k0, k1, cdf, cdf_start, guide, guide_start, tour0, entry, exit_, cap, lam,
                 penalise, out, nthreads):
    """The kernel sampling scenarios first_scenario..+len(out) inside (Philox + Poisson inversion)."""
    count = out.shape[0]
    ncust = cdf_start.shape[0] - 1
    n = tour0.shape[0]
    nblocks = (count + LANES - 1) // LANES
    slots = min(SLOTS_PER_THREAD * nthreads, max(nblocks, 1))
    for t in prange(slots):
        dem, value, prefix, best, thr, last, bad = _block_scratch(ncust, n)
        words = np.empty((2, LANES), dtype=np.uint64)
        for b in range(t, nblocks, slots):
            first = b * LANES
            sample_block(dem, words, first_scenario + first, LANES, k0, k1, cdf, cdf_start, guide, guide_start)
            _split_block(dem, tour0, entry, exit_, cap, lam, penalise, value, prefix, best, thr, last, bad)
            for l in range(min(LANES, count - first)):
                out[first + l] = np.inf if bad[l] else last[l]


def scenario_costs(first, demands, key, cdf, cdf_start, guide, guide_start, tour0, entry, exit_, capacity, penalty,
                   penalise, out) -> None:
    """Numba twin of :func:`solvopt.cvrp.kernels_numpy.scenario_costs` (same signature and result).

    Runs on ``numba.get_num_threads()`` threads.
    """
    problem = (np.ascontiguousarray(tour0, dtype=np.int64), np.ascontiguousarray(entry, dtype=np.float64),
               np.ascontiguousarray(exit_, dtype=np.float64), np.int32(capacity), np.float64(penalty),
               bool(penalise))
    nthreads = numba.get_num_threads()
    with numba.parallel_chunksize(1):
        if demands.size:
            _costs_matrix(np.ascontiguousarray(demands, dtype=np.int32), *problem, out, nthreads)
        else:
            _costs_fused(np.int64(first), np.uint64(key[0]), np.uint64(key[1]), cdf, cdf_start, guide, guide_start,
                         *problem, out, nthreads)
