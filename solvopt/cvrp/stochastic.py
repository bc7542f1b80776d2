"""The stochastic split (CVRP-SD) as chunked scenario work: the compiled problem, the chunk, the run.

For each scenario w the split recursion runs with that scenario's demands (scenario-wise
capacity masks); the sample-average (SAA) estimate is the mean of the optimal costs J^w(n) over
the feasible scenarios, with its standard error and 95% interval
(:class:`~solvopt.core.chunks.ScenarioStats`, one row).

A customer whose scenario demand alone exceeds the capacity Q is handled by the policy:

- ``"infeasible"``: the scenario has no feasible split (cost +inf); it is counted, reported with
  its share, and left out of the mean (never dropped silently);
- ``"penalty"``: that customer is served by a route of its own that pays ``penalty * (q - Q)``
  on top of its distance (every other route still respects Q).

**The chunk** (the unit a distributed run fans out): scenarios ``0..S-1`` are cut by a
:class:`~solvopt.core.chunks.ChunkPlan`; chunk ``index`` evaluates scenarios
``plan.bounds(index)`` with one of the three kernels of the shared signature and returns their
:class:`ScenarioStats`. It is a pure function of (compiled model, seed, plan, index):
:func:`chunk_stats`. Sampled demands are counter-based (scenario w's demands depend on
(seed, w, customer) only), a demand matrix is sliced by the same bounds.

What is reproducible, exactly:

- every scenario's cost is bit-identical whatever the chunk size, the thread count, or the
  backend (NumPy, Numba; CUDA too, whose kernel avoids fused multiply-adds);
- for one chunk size, the statistics of the NumPy and Numba backends are bit-identical (same
  costs, same host reduction); CUDA reduces on the device, equal to rounding;
- across chunk sizes the mean, variance and interval agree to rounding (about 1e-15 relative),
  not to the bit: each chunk's moments are rounded before the exact-in-arithmetic merge.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from solvopt.core.backend import Kernels
from solvopt.core.chunks import ChunkPlan, ChunkRun, ScenarioStats, run_chunks
from solvopt.core.interrupt import stop_reason
from solvopt.dsl.split import TourGeometry

from .sampling import PoissonTables, philox_key

DEFAULT_CHUNK = 1 << 20          # scenarios per chunk when the solve option ``chunk`` is not given
FIRST_PIECE = 1 << 10            # a CPU chunk runs its kernel in pieces from this size ...
PIECE_SECONDS = 0.1              # ... doubled while a piece takes less than this, so a stop is seen between pieces
NO_MATRIX = np.zeros((0, 0), dtype=np.int32)
# the scenario kernel scenario_costs, three times with one signature (see solvopt.cvrp.kernels_numpy)
KERNELS = Kernels(numpy="solvopt.cvrp.kernels_numpy", numba="solvopt.cvrp.kernels_numba", cuda="solvopt.gpu.cvrp")


@dataclass(frozen=True)
class CompiledStochasticSplit:
    """What the scenario kernels need: the tour geometry, the policy, and the demand source.

    ``tables`` (Poisson sampling) or ``demands`` (an (S, n) int32 matrix) is set, not both;
    ``reference`` is the deterministic split at the mean demands (reported beside the estimate).
    """

    geom: TourGeometry
    capacity: int
    policy: str
    penalty: float
    scenarios: int
    tables: PoissonTables | None
    demands: np.ndarray | None
    reference: float

    @property
    def penalise(self) -> bool:
        return self.policy == "penalty"

    @property
    def problem_arrays(self) -> tuple:
        """``(tour0, entry, exit_, capacity, penalty, penalise)`` in the kernels' argument order."""
        g = self.geom
        return (np.ascontiguousarray(g.tour0, dtype=np.int64), np.ascontiguousarray(g.entry, dtype=np.float64),
                np.ascontiguousarray(g.exit, dtype=np.float64), int(self.capacity), float(self.penalty),
                self.penalise)

    @property
    def table_arrays(self) -> tuple:
        """``(cdf, cdf_start, guide, guide_start)``, empty arrays with a demand matrix."""
        if self.tables is None:
            return (np.zeros(0), np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(1, np.int64))
        return self.tables.arrays


@dataclass(frozen=True)
class KernelBackend:
    """A scenario kernel of the shared signature and how to hold its arrays and reduce its output."""

    name: str
    device: str
    kernel: Callable                                   # scenario_costs(first, demands, key, ..., out)
    to_device: Callable = np.asarray
    empty: Callable = np.empty                         # empty(count) -> the out array
    stats: Callable = ScenarioStats.of                 # stats(out, start, stride) -> ScenarioStats


def kernel_backend(name: str) -> KernelBackend:
    """The backend called ``name``: "numpy" (the reference), "numba", "cuda", or "auto" (CUDA when
    CuPy sees a device here, else Numba: :func:`solvopt.core.backend.select_kernels`)."""
    name = KERNELS.select(name)
    module = KERNELS.load(name)
    if name != "cuda":
        return KernelBackend(name, "cpu", module.scenario_costs)
    import cupy as cp  # optional: only the cuda backend needs it
    return KernelBackend("cuda", "gpu", module.scenario_costs, to_device=cp.asarray,
                         empty=lambda count: cp.empty(count, dtype=cp.float64), stats=module.chunk_stats)


class ScenarioChunks:
    """``chunk(index, start, stop) -> ScenarioStats`` of one compiled model, seed and backend.

    Holds the problem arrays on the backend's device and one output buffer of the plan's chunk
    size per thread, so a run allocates nothing per chunk; each call is still a pure function of
    its scenario range. It pickles as (compiled model, seed, backend name, size, stride), so a
    distributed run sends it once per worker and the worker rebuilds its device arrays.
    ``backend="auto"``: the worker that builds it picks CUDA when CuPy sees a device there, else
    Numba (how a cluster mixing GPU and CPU workers runs the fast kernels).
    """

    def __init__(self, compiled: CompiledStochasticSplit, seed: int, backend: str, size: int, stride: int):
        self._args = (compiled, seed, backend, size, stride)
        self.compiled, self.backend, self.stride, self.size = compiled, kernel_backend(backend), stride, size
        dev = self.backend.to_device
        tour0, entry, exit_, cap, lam, penalise = compiled.problem_arrays
        self.problem = (dev(tour0), dev(entry), dev(exit_), cap, lam, penalise)
        self.tables = tuple(dev(a) for a in compiled.table_arrays)
        self.key = philox_key(seed)
        self.no_matrix = dev(NO_MATRIX)
        self._buffers = threading.local()

    # In one process, the run's deadline and Ctrl-C reach inside a chunk (see :meth:`__call__`); not pickled:
    # a worker's clock is not this one's, and a task on a worker is cancelled by the driver instead.
    deadline: float | None = None
    stopped = None                      # why the last chunk stopped before its end (None: it ran to its end)

    def __reduce__(self):
        return (ScenarioChunks, self._args)

    def __call__(self, index: int, start: int, stop: int) -> ScenarioStats:
        """The statistics of scenarios ``start .. stop-1``; on the CPU the kernel runs in pieces.

        A chunk of 2^20 scenarios takes seconds on the CPU (minutes with the NumPy reference), so
        the kernel runs on growing pieces of it (from FIRST_PIECE scenarios, doubled while a piece
        takes under PIECE_SECONDS) and the deadline and Ctrl-C are checked between pieces. Every
        scenario's cost is the same whatever the piece (counter-based demands), and the
        statistics are taken once over the chunk, so a chunk run to its end gives the same bits.
        A stop inside a chunk returns the statistics of its first scenarios (``stopped`` says why).
        """
        out = getattr(self._buffers, "out", None)
        if out is None:
            out = self._buffers.out = self.backend.empty(self.size)
        out = out[:stop - start]
        self.stopped = None
        if self.backend.device != "cpu":
            self._kernel(start, 0, stop - start, out)
            return self.backend.stats(out, start, self.stride)
        done, piece = 0, FIRST_PIECE
        while done < stop - start:
            n = min(piece, stop - start - done)
            began = time.perf_counter()
            self._kernel(start, done, done + n, out)
            done += n
            if time.perf_counter() - began < PIECE_SECONDS:
                piece *= 2
            if done < stop - start:
                self.stopped = stop_reason(self.deadline)
                if self.stopped is not None:
                    break
        return self.backend.stats(out[:done], start, self.stride)

    def _kernel(self, start: int, lo: int, hi: int, out) -> None:
        """The kernel on scenarios ``start+lo .. start+hi-1``, into ``out[lo:hi]``."""
        demands = self.no_matrix
        if self.compiled.demands is not None:
            demands = self.backend.to_device(self.compiled.demands[start + lo:start + hi])
        self.backend.kernel(start + lo, demands, self.key, *self.tables, *self.problem, out[lo:hi])


def sample_stride(compiled: CompiledStochasticSplit, keep_costs: bool) -> int:
    """Every stride-th scenario's cost is kept for quantiles (every one with ``keep_costs``)."""
    return 1 if keep_costs else ScenarioStats.stride_for(compiled.scenarios)


def chunk_stats(compiled: CompiledStochasticSplit, seed: int, plan: ChunkPlan, index: int,
                backend: str = "numba", keep_costs: bool = False) -> ScenarioStats:
    """One chunk, as a pure function: the statistics of scenarios ``plan.bounds(index)``."""
    start, stop = plan.bounds(index)
    chunks = ScenarioChunks(compiled, seed, backend, stop - start, sample_stride(compiled, keep_costs))
    return chunks(index, start, stop)


def run_scenarios(compiled: CompiledStochasticSplit, *, seed: int, backend: str = "numba",
                  chunk: int | None = None, keep_costs: bool = False, deadline: float | None = None,
                  progress=None, client=None) -> ChunkRun:
    """Every chunk through :func:`solvopt.core.chunks.run_chunks` (deadline, Ctrl-C, rate and ETA).

    ``client`` (default: the one set by :func:`solvopt.core.tasks.use_client`): chunks as tasks on
    its workers, merged in index order (the same statistics, to the bit, as in one process).
    """
    size = DEFAULT_CHUNK if chunk is None else chunk
    plan = ChunkPlan(compiled.scenarios, min(size, compiled.scenarios))   # ModelError when size < 1
    chunks = ScenarioChunks(compiled, seed, backend, plan.size, sample_stride(compiled, keep_costs))
    chunks.deadline = deadline
    if progress is not None:            # at once: the run has begun
        progress(f"{compiled.scenarios:,} scenarios in chunks of {plan.size:,} ({backend})")
    run = run_chunks(plan, chunks, deadline=deadline, progress=progress, what="scenarios", client=client)
    if chunks.stopped is not None:      # the last chunk run here stopped inside: count what it did
        run.stopped = run.stopped or chunks.stopped
        run.done = int(run.stats.count[0] + run.stats.infinite[0])
    return run
