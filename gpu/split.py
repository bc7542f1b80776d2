"""CuPy launcher of ``split.cu``: the stochastic split on a GPU, one thread per scenario.

``split_costs(problem, demands=... | tables=..., seed, first, count)`` returns per-scenario
costs and infeasibility flags (for tests against the NumPy reference on the same demand
matrix); ``run_chunks`` is the production path: chunk after chunk, statistics reduced on the
device, only three numbers per chunk come back to the host.
"""
from __future__ import annotations

import numpy as np

from solvopt.dp.split_random import PoissonTables, philox_key
from solvopt.dp.split_stochastic import SAAEstimate, ScenarioSplit, chunk_finished

from .harness import load_module

BLOCK = 128                      # threads per block (SPLIT_BLOCK in split.cu)
SCRATCH_BYTES = 2 << 30          # per-thread value/prefix scratch across the grid stays under this
SHARED_LIMIT = 47 * 1024         # dynamic shared memory per block (48 KiB default, less the static reduction arrays)


class _DeviceProblem:
    """The problem's arrays on the device, the launch geometry and the scratch for one chunk size."""

    def __init__(self, problem: ScenarioSplit, chunk: int):
        import cupy as cp
        g = problem.geom
        self.problem = problem
        self.n = g.n
        self.tour0 = cp.asarray(problem.tour0.astype(np.int64))
        self.entry = cp.asarray(np.ascontiguousarray(g.entry, dtype=np.float64))
        self.exit = cp.asarray(np.ascontiguousarray(g.exit, dtype=np.float64))
        per_thread = (self.n + 1) * (8 + 4)
        max_threads = max(BLOCK, (SCRATCH_BYTES // per_thread) // BLOCK * BLOCK)
        self.blocks = int(max(1, min((chunk + BLOCK - 1) // BLOCK, max_threads // BLOCK)))
        threads = self.blocks * BLOCK
        self.value = cp.empty((self.n + 1) * threads, dtype=cp.float64)
        self.prefix = cp.empty((self.n + 1) * threads, dtype=cp.int32)
        self.block_sum = cp.empty(self.blocks, dtype=cp.float64)
        self.block_sumsq = cp.empty(self.blocks, dtype=cp.float64)
        self.block_feasible = cp.empty(self.blocks, dtype=cp.uint64)
        shared = (2 * self.n + 1) * 8 + self.n * 8
        self.use_shared = shared <= SHARED_LIMIT
        self.shared = shared if self.use_shared else 0
        self.module = load_module("split.cu")

    def tail_args(self, shift: float, keep: bool, out_cost, out_bad) -> tuple:
        p = self.problem
        return (self.tour0, np.int32(self.n), self.entry, self.exit, np.int32(p.capacity), np.float64(p.penalty),
                np.int32(p.penalise), self.value, self.prefix, np.float64(shift), np.int32(keep), out_cost, out_bad,
                self.block_sum, self.block_sumsq, self.block_feasible, np.int32(self.use_shared))

    def launch(self, name: str, head: tuple, shift: float, keep: bool, out_cost, out_bad) -> tuple[float, float, int]:
        """Run one chunk; return the device-reduced (sum, sum of squares, feasible count)."""
        kernel = self.module.get_function(name)
        kernel((self.blocks,), (BLOCK,), head + self.tail_args(shift, keep, out_cost, out_bad),
               shared_mem=self.shared)
        return (float(self.block_sum.sum()), float(self.block_sumsq.sum()), int(self.block_feasible.sum()))


def _tables_on_device(tables: PoissonTables):
    import cupy as cp
    return (cp.asarray(tables.cdf), cp.asarray(tables.cdf_start), cp.asarray(tables.guide.astype(np.int32)),
            cp.asarray(tables.guide_start))


def split_costs(problem: ScenarioSplit, *, demands: np.ndarray | None = None, tables: PoissonTables | None = None,
                seed: int = 0, first: int = 0, count: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per-scenario costs and infeasibility flags computed on the GPU (one launch)."""
    import cupy as cp
    count = int(demands.shape[0] if demands is not None else count)
    dev = _DeviceProblem(problem, count)
    out_cost = cp.empty(count, dtype=cp.float64)
    out_bad = cp.empty(count, dtype=cp.uint8)
    if demands is not None:
        head = (cp.asarray(np.ascontiguousarray(demands, dtype=np.int32)), np.int32(demands.shape[1]), np.int64(count))
        dev.launch("split_matrix", head, 0.0, True, out_cost, out_bad)
    else:
        k0, k1 = philox_key(seed)
        head = (np.int64(first), np.int64(count), np.uint32(k0), np.uint32(k1)) + _tables_on_device(tables)
        dev.launch("split_fused", head, 0.0, True, out_cost, out_bad)
    bad = cp.asnumpy(out_bad).astype(bool)
    cost = cp.asnumpy(out_cost)
    return np.where(bad, np.inf, cost), bad


def run_chunks(compiled, seed: int, progress=None, deadline: float | None = None,
               keep_costs: bool = False) -> tuple[SAAEstimate, bool, str]:
    """The chunked SAA run of a CompiledStochasticSplit on the GPU: (estimate, stopped early, device name)."""
    import cupy as cp
    scenarios, problem = compiled.scenarios, compiled.problem
    chunk = max(1, min(compiled.chunk, scenarios))
    dev = _DeviceProblem(problem, chunk)
    est = SAAEstimate(shift=compiled.reference)
    out_cost = cp.empty(chunk if keep_costs else 1, dtype=cp.float64)
    out_bad = cp.empty(chunk if keep_costs else 1, dtype=cp.uint8)
    if compiled.demands is None:
        k0, k1 = philox_key(seed)
        tables = _tables_on_device(compiled.tables)
    done, stopped = 0, False
    while done < scenarios:
        count = min(chunk, scenarios - done)
        if compiled.demands is not None:
            block = cp.asarray(compiled.demands[done:done + count])
            head = (block, np.int32(block.shape[1]), np.int64(count))
            s, s2, feasible = dev.launch("split_matrix", head, est.shift, keep_costs, out_cost, out_bad)
        else:
            head = (np.int64(done), np.int64(count), np.uint32(k0), np.uint32(k1)) + tables
            s, s2, feasible = dev.launch("split_fused", head, est.shift, keep_costs, out_cost, out_bad)
        part = SAAEstimate(shift=est.shift, scenarios=count, feasible=feasible, sum=s, sum_sq=s2, chunks=1)
        est.merge(part)
        if keep_costs:
            bad = cp.asnumpy(out_bad[:count]).astype(bool)
            est.costs.append(np.where(bad, np.inf, cp.asnumpy(out_cost[:count])))
        done += count
        if chunk_finished(est, done, scenarios, progress, deadline):
            stopped = True
            break
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return est, stopped, name
