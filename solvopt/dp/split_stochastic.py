"""Stochastic split (CVRP-SD): the split of one giant tour under many demand scenarios.

For each scenario w the split recursion runs with that scenario's demands (scenario-wise
capacity masks); the sample-average (SAA) estimate is the mean of the optimal costs J^w(n),
with its standard error and 95% interval.

A customer whose scenario demand alone exceeds the capacity Q is handled by the policy:

- ``"infeasible"``: the scenario has no feasible split; it is counted, reported with its
  share, and left out of the mean (never dropped silently);
- ``"penalty"``: that customer is served by a route of its own that pays
  ``penalty * (q - Q)`` on top of its distance (every other route still respects Q).

Kernels (one signature, three implementations):

- :func:`split_costs_numpy`: the NumPy reference (the oracle), vectorised over scenarios;
- :func:`split_costs_matrix` (Numba): SIMD blocks of ``LANES`` scenarios in
  structure-of-arrays layout (``[tour position][lane]``), so the inner loop over
  predecessors works on LANES scenarios at once; the predecessor loop stops as soon as no
  lane's route fits (prefix loads decide it);
- :func:`split_costs_fused` (Numba): the same with the demands sampled inside the kernel
  by the counter-based Philox + Poisson-inversion sampler of :mod:`.split_random`;
- ``gpu/split.cu``: one CUDA thread per scenario, the same recursion and sampler.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numba
import numpy as np
from numba import njit, prange

from ..core.errors import ModelError
from .split import TourGeometry
from .split_random import PoissonTables, philox_key, sample_block

LANES = 32            # scenarios per SIMD block: 8 independent 256-bit min chains per predecessor step
BIG = 1e300           # masked transition (a large finite sentinel, never inf arithmetic)
POLICIES = ("infeasible", "penalty")
Z95 = 1.959963984540054
SLOTS_PER_THREAD = 8   # work slots per thread, handed out dynamically


@dataclass(frozen=True)
class ScenarioSplit:
    """Everything a stochastic-split kernel needs besides the demands.

    ``tour0``: tour as 0-based customer indices (node id - 1) into the demand columns;
    ``capacity``: integer Q (loads are integers); ``penalise``: the "penalty" policy;
    ``penalty``: lambda of that policy.
    """

    geom: TourGeometry
    capacity: int
    policy: str = "infeasible"
    penalty: float = 0.0

    @property
    def tour0(self) -> np.ndarray:
        return (self.geom.tour - 1).astype(np.int64)

    @property
    def penalise(self) -> bool:
        return self.policy == "penalty"


# --- NumPy reference -------------------------------------------------------------------------------
def split_costs_numpy(problem: ScenarioSplit, demands: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-scenario optimal split cost and infeasibility flag; ``demands`` is (S, n) customer order."""
    geom, cap = problem.geom, problem.capacity
    q = np.asarray(demands, dtype=np.int64)[:, problem.tour0]          # (S, n) in tour order
    S, n = q.shape
    prefix = np.zeros((S, n + 1), dtype=np.int64)
    prefix[:, 1:] = np.cumsum(q, axis=1)
    over = q > cap
    bad = np.zeros(S, dtype=bool) if problem.penalise else over.any(axis=1)
    value = np.empty((S, n + 1))                 # value[:, p] = J(p) + entry[p]
    value[:, 0] = geom.entry[0]
    last = np.zeros(S)
    for i in range(1, n + 1):
        qi = q[:, i - 1]
        if problem.penalise:
            best = value[:, i - 1] + problem.penalty * np.maximum(qi - cap, 0)
        else:
            best = np.where(over[:, i - 1], np.inf, value[:, i - 1])
        for p in range(i - 2, -1, -1):
            fits = prefix[:, i] - prefix[:, p] <= cap
            if not fits.any():
                break
            best = np.where(fits, np.minimum(best, value[:, p]), best)
        j = best + geom.exit[i]
        if i < n:
            value[:, i] = j + geom.entry[i]
        else:
            last = j
    last = np.where(bad, np.inf, last)
    return last, bad


# --- Numba kernels ---------------------------------------------------------------------------------
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


@njit(cache=True, parallel=True)
def split_costs_matrix(demands, tour0, entry, exit_, cap, lam, penalise, out_cost, out_bad, nthreads):
    """Numba kernel on a given (S, n) int32 demand matrix; writes out_cost[:S], out_bad[:S].

    Work is cut into ``SLOTS_PER_THREAD * nthreads`` slots (slot t takes blocks t, t + slots,
    ...; its scratch is allocated once); run under ``numba.parallel_chunksize(1)`` the slots are
    handed out dynamically, so a thread that the OS delays does not hold up the others. Each
    block is independent: the result does not depend on the thread count or the schedule.
    """
    S, ncust = demands.shape
    n = tour0.shape[0]
    nblocks = (S + LANES - 1) // LANES
    slots = min(SLOTS_PER_THREAD * nthreads, max(nblocks, 1))
    for t in prange(slots):
        dem = np.zeros((ncust, LANES), dtype=np.int32)
        value = np.empty((n + 1, LANES))
        prefix = np.empty((n + 1, LANES), dtype=np.int32)
        best = np.empty(LANES)
        thr = np.empty(LANES, dtype=np.int32)
        last = np.empty(LANES)
        bad = np.empty(LANES, dtype=np.bool_)
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
                out_cost[first + l] = last[l]
                out_bad[first + l] = bad[l]


@njit(cache=True, parallel=True)
def split_costs_fused(first_scenario, count, k0, k1, cdf, cdf_start, guide, guide_start,
                      tour0, entry, exit_, cap, lam, penalise, out_cost, out_bad, nthreads):
    """Numba kernel sampling scenarios first_scenario..+count inside (Philox + Poisson inversion).

    Scheduled like :func:`split_costs_matrix`.
    """
    ncust = cdf_start.shape[0] - 1
    n = tour0.shape[0]
    nblocks = (count + LANES - 1) // LANES
    slots = min(SLOTS_PER_THREAD * nthreads, max(nblocks, 1))
    for t in prange(slots):
        dem = np.zeros((ncust, LANES), dtype=np.int32)
        words = np.empty((2, LANES), dtype=np.uint64)
        value = np.empty((n + 1, LANES))
        prefix = np.empty((n + 1, LANES), dtype=np.int32)
        best = np.empty(LANES)
        thr = np.empty(LANES, dtype=np.int32)
        last = np.empty(LANES)
        bad = np.empty(LANES, dtype=np.bool_)
        for b in range(t, nblocks, slots):
            first = b * LANES
            sample_block(dem, words, first_scenario + first, LANES, k0, k1, cdf, cdf_start, guide, guide_start)
            _split_block(dem, tour0, entry, exit_, cap, lam, penalise, value, prefix, best, thr, last, bad)
            for l in range(min(LANES, count - first)):
                out_cost[first + l] = last[l]
                out_bad[first + l] = bad[l]


# --- SAA accumulation over chunks ---------------------------------------------------------------------
@dataclass
class SAAEstimate:
    """Running SAA statistics, accumulated chunk by chunk around a fixed ``shift``.

    Sums of (x - shift) and (x - shift)^2 keep the variance well conditioned for 10^8
    scenarios; the shift (the deterministic split at the mean demands) does not depend on
    chunking, so neither does the estimate (beyond float rounding of the chunk sums).
    """

    shift: float = 0.0
    scenarios: int = 0          # scenarios evaluated
    feasible: int = 0
    sum: float = 0.0
    sum_sq: float = 0.0
    chunks: int = 0
    costs: list = field(default_factory=list)     # per-scenario costs when kept (small runs)

    def add(self, cost: np.ndarray, bad: np.ndarray, keep: bool = False) -> None:
        ok = cost[~bad] - self.shift
        self.scenarios += cost.shape[0]
        self.feasible += ok.shape[0]
        self.sum += float(ok.sum())
        self.sum_sq += float(np.dot(ok, ok))
        self.chunks += 1
        if keep:
            self.costs.append(np.where(bad, np.inf, cost))

    def merge(self, other: "SAAEstimate") -> None:
        """Add another estimate's sums (same shift), e.g. the partial sums of a device."""
        assert other.shift == self.shift
        self.scenarios += other.scenarios
        self.feasible += other.feasible
        self.sum += other.sum
        self.sum_sq += other.sum_sq
        self.chunks += other.chunks

    @property
    def infeasible(self) -> int:
        return self.scenarios - self.feasible

    @property
    def mean(self) -> float:
        return self.shift + self.sum / self.feasible if self.feasible else math.inf

    @property
    def variance(self) -> float:
        if self.feasible < 2:
            return math.nan
        return max(0.0, (self.sum_sq - self.sum * self.sum / self.feasible) / (self.feasible - 1))

    @property
    def std_error(self) -> float:
        return math.sqrt(self.variance / self.feasible) if self.feasible >= 2 else math.nan

    def summary(self) -> dict:
        se = self.std_error
        out = {"mean": self.mean, "std_error": se, "std_dev": math.sqrt(self.variance) if self.feasible >= 2 else math.nan,
               "ci95": [self.mean - Z95 * se, self.mean + Z95 * se],
               "scenarios": self.scenarios, "feasible_scenarios": self.feasible,
               "infeasible_scenarios": self.infeasible,
               "infeasible_share": self.infeasible / self.scenarios if self.scenarios else 0.0}
        if self.costs:
            out["scenario_costs"] = np.concatenate(self.costs)
        return out


# --- chunked driver -----------------------------------------------------------------------------------
def validate_demand_matrix(demands, n_customers: int) -> np.ndarray:
    """A user-given (S, n) scenario matrix as int32; ModelError on shape, NaN, negatives, non-integers."""
    arr = np.asarray(demands)
    if arr.ndim != 2 or arr.shape[1] != n_customers or arr.shape[0] < 1:
        raise ModelError(f"demand scenarios must be an (S, {n_customers}) matrix (one column per customer, "
                         f"instance order), got shape {arr.shape}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise ModelError("demand scenarios contain NaN or inf")
        if not np.all(arr == np.round(arr)):
            raise ModelError("demand scenarios must be integers (the split kernels use integer loads)")
    elif arr.dtype.kind not in "iub":
        raise ModelError(f"demand scenarios must be numeric, got dtype {arr.dtype}")
    if np.any(arr < 0):
        raise ModelError("demand scenarios must be >= 0")
    if arr.size and float(arr.max()) * n_customers >= 2 ** 31:
        raise ModelError("demand scenarios too large for 32-bit route loads")
    return np.ascontiguousarray(arr, dtype=np.int32)


def chunk_finished(est: SAAEstimate, done: int, scenarios: int, progress, deadline: float | None) -> bool:
    """Report a finished chunk on the progress line; True when the time limit stops the run early."""
    if progress is not None:
        progress(f"scenarios {done}/{scenarios}  mean={est.mean:.6g}  se={est.std_error:.3g}  "
                 f"infeasible={est.infeasible}", force=done >= scenarios)
    return deadline is not None and time.perf_counter() > deadline and done < scenarios


def _kernel_args(problem: ScenarioSplit):
    g = problem.geom
    return (problem.tour0, np.ascontiguousarray(g.entry, dtype=np.float64),
            np.ascontiguousarray(g.exit, dtype=np.float64), np.int32(problem.capacity),
            np.float64(problem.penalty), bool(problem.penalise))


def run_chunks(problem: ScenarioSplit, *, scenarios: int, demands: np.ndarray | None = None,
               tables: PoissonTables | None = None, seed: int = 0, chunk: int = 1 << 20,
               backend: str = "numba", shift: float = 0.0, keep_costs: bool = False, progress=None,
               deadline: float | None = None) -> tuple[SAAEstimate, bool]:
    """Evaluate ``scenarios`` scenarios chunk by chunk (memory bounded by ``chunk``).

    Demands come from ``demands`` (an (S, n) matrix, S = scenarios) or are sampled from
    ``tables`` with ``seed`` (NumPy reference sampler for ``backend="numpy"``, fused in the
    kernel for ``"numba"``). Returns the estimate and whether it stopped early at ``deadline``
    (a ``time.perf_counter()`` value).
    """
    if backend not in ("numba", "numpy"):
        raise ModelError(f"unknown CPU backend {backend!r}")
    est = SAAEstimate(shift=shift)
    k0, k1 = philox_key(seed)
    args = _kernel_args(problem)
    nthreads = numba.get_num_threads()
    size = max(1, min(chunk, scenarios))
    out_cost = np.empty(size)
    out_bad = np.empty(size, dtype=np.bool_)
    done, stopped = 0, False
    while done < scenarios:
        count = min(size, scenarios - done)
        if backend == "numpy":
            from .split_random import sample_demands_numpy
            block = demands[done:done + count] if demands is not None else sample_demands_numpy(tables, seed, done, count)
            cost, bad = split_costs_numpy(problem, block)
        else:
            cost, bad = out_cost[:count], out_bad[:count]
            with numba.parallel_chunksize(1):
                if demands is not None:
                    split_costs_matrix(demands[done:done + count], *args, cost, bad, nthreads)
                else:
                    split_costs_fused(np.int64(done), np.int64(count), np.uint64(k0), np.uint64(k1), tables.cdf,
                                      tables.cdf_start, tables.guide, tables.guide_start, *args, cost, bad, nthreads)
        est.add(cost, bad, keep=keep_costs)
        done += count
        if chunk_finished(est, done, scenarios, progress, deadline):
            stopped = True
            break
    return est, stopped
