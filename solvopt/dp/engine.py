"""The min-plus engine's scenario chunks, and the solve that runs them through the core's chunk driver.

Scenarios are cut into chunks (option ``chunk``; :class:`solvopt.core.chunks.ChunkPlan`).
:func:`scenario_chunk` is the unit of work: a **pure function of (compiled model, seed, chunk
index)** -- it builds (or samples, block by block from the seed) the chunk's tensors, runs the
kernel over all layers, reduces the final values where the kernel ran (min over final states,
or per final state for ``final="shared"``) into a :class:`~solvopt.core.chunks.ScenarioStats`,
and keeps, when asked, the final values and the tensors of the scenarios to back-track. The
solve runs the chunks through :func:`solvopt.core.chunks.run_chunks` (deadline, Ctrl-C,
progress with rate and ETA), merging them in chunk order. Back-tracking then runs the kernel a
second time on just the requested scenarios with slot tracking on, so the argmin footprint is
L x Smax x (#paths).

Objective: ``final="per_scenario"`` -> value_w = min over final states of V_L[s, w],
objective = mean_w value_w. ``final="shared"`` -> the final state s* minimising mean_w V_L[s, w]
(a decision shared by every scenario), value_w = V_L[s*, w], objective = that mean.

What the termination means (see docs/dp.md): with the scenarios given in the model (no
sampler) the objective is computed exactly -- ``optimal``, bound = objective. With a sampler
the objective is a sample-average estimate of an expectation: each scenario is solved exactly,
but no bound is certified (bound None, termination ``feasible_within_gap`` by the one gap rule,
:func:`solvopt.core.status.settle`); ``solution["ci95"]`` is its 95% confidence interval. A
time limit or Ctrl-C returns what has merged (``time_limit`` / ``interrupted``, the message
and ``stats["scenarios"]`` say how many scenarios were done).
"""
from __future__ import annotations

import math
import numbers
import time
from dataclasses import dataclass, field

import numpy as np

from solvopt.core.chunks import ChunkPlan, ScenarioStats, run_chunks
from solvopt.core.errors import ModelError
from solvopt.core.interrupt import stop_reason
from solvopt.core.options import Option, SolveOptions, integer_at_least
from solvopt.core.progress import Progress
from solvopt.core.result import Result, Termination
from solvopt.core.status import settle
from solvopt.core.tasks import current_client
from solvopt.dsl.arrays import float_array

from .aggregate import chunk_stats
from .compiled import ChunkTensors, CompiledDP

DEFAULT_QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
QUANTILE_SAMPLE = 1_000_000      # most values kept on the host for quantiles (exact below that)


# --- the engine's typed options (every dp and irp method takes them) -----------------------------
positive_int = integer_at_least(1)
nonnegative_int = integer_at_least(0)


def path_request(value):
    """An int n (back-track the first n scenarios) or a sequence of scenario indices."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return nonnegative_int(value)
    try:
        idx = np.asarray(value)
    except Exception:
        idx = None
    if idx is None or idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
        raise ValueError(f"must be an integer >= 0 or a list of scenario indices, got {value!r}")
    return tuple(int(i) for i in idx)


def quantile_levels(value) -> tuple[float, ...]:
    try:
        levels = tuple(float(x) for x in np.atleast_1d(float_array(value, "quantile levels")))
    except ModelError as exc:
        raise ValueError(str(exc)) from None
    if not all(0 <= x <= 1 for x in levels):
        raise ValueError(f"must lie in [0, 1], got {value!r}")
    return levels


ENGINE_OPTIONS = (
    Option("chunk", positive_int, None, "scenarios per chunk (default: what fits in 256 MiB; "
           "rounded to whole sample blocks when sampling)"),
    Option("paths", path_request, 16, "back-track the first n scenarios (an int) or the listed scenario indices"),
    Option("quantiles", quantile_levels, DEFAULT_QUANTILES, "quantile levels of the scenario values"),
    Option("keep_values", nonnegative_int, 1_000_000,
           "return the final values V_L and the per-scenario values when they hold at most this many entries"),
)
_DEFAULTS = {o.name: o.default for o in ENGINE_OPTIONS}


def requested_paths(paths, scenarios: int) -> np.ndarray:
    """Scenario indices to back-track: an int n (the first n) or a list of indices."""
    if paths is None:
        return np.zeros(0, np.int64)
    if isinstance(paths, numbers.Integral) and not isinstance(paths, bool):
        return np.arange(min(nonnegative_int(paths), scenarios))
    idx = np.unique(np.asarray(path_request(paths), dtype=np.int64).ravel())
    if idx.size and (idx[0] < 0 or idx[-1] >= scenarios):
        raise ModelError(f"paths must be scenario indices in 0..{scenarios - 1}")
    return idx


# --- one kernel run, back-tracking ------------------------------------------------------------------
def run_kernel(compiled: CompiledDP, backend, tensors: ChunkTensors, track: bool):
    """Run the kernel on one chunk; returns (final values (S_L, n) on the device, slots on the host or None)."""
    to_dev = backend.to_device
    n = tensors.count
    out = backend.empty((compiled.max_states, n), dtype=compiled.dtype)
    shape = (compiled.n_layers, compiled.max_states, n) if track else (0, 0, 0)
    slots = backend.empty(shape, dtype=compiled.slot_index_dtype)
    backend.forward(to_dev(tensors.initial), to_dev(compiled.ptr), to_dev(tensors.src), to_dev(tensors.cost),
                    to_dev(tensors.choice), to_dev(compiled.n_states), compiled.sentinel, out, slots,
                    **backend.options)
    final = out[: compiled.n_states[-1]]
    return final, (backend.to_host(slots) if track else None)


def backtrack(compiled: CompiledDP, tensors: ChunkTensors, slots: np.ndarray, final_state: np.ndarray):
    """States (m, L+1) and global slot indices (m, L) of the optimal paths ending in ``final_state``."""
    L, m = compiled.n_layers, len(final_state)
    states = np.full((m, L + 1), -1, np.int64)
    chosen = np.full((m, L), -1, np.int64)
    states[:, L] = final_state
    cols = np.arange(m)
    for layer in range(L - 1, -1, -1):
        t = states[:, layer + 1]
        ok = t >= 0
        j = np.full(m, -1, np.int64)
        j[ok] = slots[layer, t[ok], cols[ok]]
        ok &= j >= 0
        k = compiled.ptr[layer, np.where(ok, t, 0)] + j
        src = tensors.src[layer]
        column = tensors.choice[layer] if tensors.choice.size else (cols if src.shape[1] > 1 else 0)
        s = src[np.where(ok, k, 0), column]
        states[:, layer] = np.where(ok, s, -1)
        chosen[:, layer] = np.where(ok, k, -1)
    return states, chosen


# --- the chunk ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ChunkSpec:
    """What every chunk of a solve returns besides its statistics (the same for all chunks)."""

    stride: int                         # quantile sample: scenarios whose index is a multiple of it
    keep_values: bool                   # return the final values V_L (S_L, n)
    paths: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))   # scenarios to back-track


@dataclass
class EngineChunk:
    """A chunk's (or a merged run's) output: statistics, kernel seconds, kept values, scenarios to back-track."""

    stats: ScenarioStats
    kernel_time: float = 0.0
    values: list = field(default_factory=list)          # [(start, (S_L, n) host array, +inf = unreachable)]
    paths: list = field(default_factory=list)           # [(start, ChunkTensors of those scenarios, local indices)]
    stopped: Termination | None = None                  # why the (last) chunk stopped before its end

    def merge(self, other: EngineChunk) -> EngineChunk:
        self.stats.merge(other.stats)
        self.kernel_time += other.kernel_time
        self.stopped = other.stopped
        self.values += other.values
        self.paths += other.paths
        return self


FIRST_PIECE = 1 << 10            # a CPU chunk runs in pieces from this many scenarios ...
PIECE_SECONDS = 0.1              # ... doubled while a piece takes less than this (a stop is seen between pieces)


def scenario_chunk(compiled: CompiledDP, backend, seed: int, plan: ChunkPlan, index: int,
                   spec: ChunkSpec, deadline: float | None = None) -> EngineChunk:
    """Chunk ``index`` of ``plan``: a pure function of (compiled model, seed, chunk index).

    Its scenarios are ``plan.bounds(index)``; sampled costs come from the seed's sampling blocks
    (whole blocks per chunk), so any process or device computing chunk ``index`` gets the same
    numbers. Returns its statistics (one row, or one per final state with ``final="shared"``).

    On the CPU a chunk (sized by memory, it can take many seconds) is built and run in growing
    pieces (from FIRST_PIECE scenarios, whole sampling blocks, doubled while a piece takes under
    PIECE_SECONDS), and ``deadline`` and Ctrl-C are checked between pieces. The final values
    are joined and reduced once, so a chunk run to its end gives the same bits as in one piece;
    a stop inside returns the statistics of its first scenarios (``EngineChunk.stopped``).
    """
    start, stop = plan.bounds(index)
    if backend.device != "cpu":
        pieces_of = stop - start
    else:
        block = compiled.sample_block if compiled.sampler is not None else 1
        pieces_of = max(block, -(-FIRST_PIECE // block) * block)
    finals, kernel_time, at, stopped, paths = [], 0.0, start, None, []
    while at < stop:
        n = min(pieces_of, stop - at)
        began = time.perf_counter()
        tensors = compiled.chunk(at, n, seed)
        t0 = time.perf_counter()
        final, _ = run_kernel(compiled, backend, tensors, track=False)
        backend.synchronize()
        kernel_time += time.perf_counter() - t0
        took = time.perf_counter() - began           # the piece's time: building (sampling) and the kernel
        finals.append(final)
        local = spec.paths[(spec.paths >= at) & (spec.paths < at + n)] - at
        if local.size:
            paths.append((at, tensors.columns(local), local))
        at += n
        if took < PIECE_SECONDS:
            pieces_of *= 2
        if at < stop:
            stopped = stop_reason(deadline)
            if stopped is not None:
                break
    final = finals[0] if len(finals) == 1 else np.concatenate(finals, axis=1)
    half = compiled.sentinel / 2
    rows = final if compiled.final == "shared" else final.min(axis=0)[None, :]
    out = EngineChunk(chunk_stats(rows, start, spec.stride, half, backend.to_host), kernel_time, stopped=stopped)
    if spec.keep_values:
        host = np.asarray(backend.to_host(final), dtype=np.float64)
        out.values.append((start, np.where(host >= half, np.inf, host)))
    out.paths += paths
    return out


# --- the solve ---------------------------------------------------------------------------------------------
def solve(compiled: CompiledDP, backend, options: SolveOptions) -> Result:
    """Run every chunk through the core's chunk driver and assemble the Result (see the module docstring)."""
    extra = {**_DEFAULTS, **options.extra}
    begin = time.perf_counter()
    W = compiled.scenarios
    plan = ChunkPlan(W, compiled.chunk_size(extra["chunk"]))
    levels = quantile_levels(extra["quantiles"])
    shared = compiled.final == "shared"
    n_final = int(compiled.n_states[-1])
    rows = n_final if shared else 1
    spec = ChunkSpec(stride=ScenarioStats.stride_for(W, max(1, QUANTILE_SAMPLE // rows)),
                     keep_values=n_final * W <= extra["keep_values"], paths=requested_paths(extra["paths"], W))
    if getattr(backend, "prepare", None) is not None:
        backend.prepare(plan.size, compiled)
    deadline = None if options.time_limit is None else begin + options.time_limit
    seed = options.seed  # the chunk captures the seed, not the options (whose log callable may not pickle)
    # the deadline reaches inside a chunk run here; a chunk on a dask worker is cancelled by the driver instead
    inner = deadline if current_client() is None else None
    progress = Progress(options.progress, log=options.log)
    progress(f"{W:,} scenarios in chunks of {plan.size:,} ({backend.name})")   # at once: the run has begun
    run = run_chunks(plan, lambda index, lo, hi: scenario_chunk(compiled, backend, seed, plan, index, spec, inner),
                     deadline=deadline, progress=progress, what="scenarios")
    acc: EngineChunk = run.stats
    stats, processed = acc.stats, run.done
    if acc.stopped is not None:         # the last chunk stopped inside: what it did is what counts
        run.stopped = run.stopped or acc.stopped
        processed = int(stats.count[0] + stats.infinite[0])
    solution: dict = {}
    row, final_state = 0, None
    if shared:
        state_means = stats.row_means()
        solution["state_means"] = state_means
        if np.isfinite(state_means).any():
            row = final_state = int(np.argmin(state_means))
            solution["final_state"] = final_state
        else:
            row = int(np.argmin(stats.infinite))
    if spec.keep_values:
        solution["values"] = np.concatenate([v for _, v in acc.values], axis=1)
    if spec.stride == 1 and W <= extra["keep_values"]:
        solution["scenario_values"] = stats.sample(row)
    solution.update(stats.summary(row, levels))
    if acc.paths:
        solution.update(_paths(compiled, backend, acc.paths, final_state))
    transitions = compiled.model.n_transitions * processed
    run_stats = {"backend": backend.name, "device": backend.device, "scenarios": processed, "scenarios_total": W,
                 "chunks": run.chunks, "chunk_size": plan.size, "layers": compiled.n_layers,
                 "transitions": transitions, "kernel_time": acc.kernel_time,
                 "transitions_per_second": transitions / acc.kernel_time if acc.kernel_time else None,
                 "ns_per_transition": 1e9 * acc.kernel_time / transitions if transitions else None,
                 "dtype": str(compiled.dtype), "sampled": compiled.sampler is not None}
    if compiled.build_time is not None:
        run_stats["build_time"] = compiled.build_time
    return _result(compiled, solution, int(stats.infinite[row]), processed, run.stopped, run_stats)


def _paths(compiled, backend, path_data, final_state) -> dict:
    """Re-run the kernel with slot tracking on the requested scenarios and back-track them."""
    scenarios, states, chosen = [], [], []
    for start, sub, local in path_data:
        final, slots = run_kernel(compiled, backend, sub, track=True)
        final = np.asarray(backend.to_host(final), dtype=float)
        end = final.argmin(axis=0) if final_state is None else np.full(len(local), final_state)
        end = np.where(final[end, np.arange(len(local))] >= compiled.sentinel / 2, -1, end)
        s, k = backtrack(compiled, sub, slots, end)
        scenarios.append(start + local)
        states.append(s)
        chosen.append(k)
    return {"path_scenarios": np.concatenate(scenarios), "paths": np.concatenate(states),
            "path_slots": np.concatenate(chosen)}


def _result(compiled: CompiledDP, solution: dict, unreachable: int, processed: int, stopped, stats: dict) -> Result:
    total = compiled.scenarios
    done = f"{processed:,} of {total:,} scenarios"
    if unreachable or "mean" not in solution:
        termination, status, _ = settle(None, None, has_solution=False, stopped=Termination.INFEASIBLE)
        return Result(termination, status, objective=math.inf, solution=solution, stats=stats,
                      message=f"{unreachable} of {processed} scenarios have no path to a final state")
    objective = float(solution["mean"])
    sampled = compiled.sampler is not None
    # exact over the given scenarios: the bound is the objective itself; a sample average certifies none
    bound = objective if not sampled and stopped is None else None
    termination, status, gap = settle(objective, bound, has_solution=True, stopped=stopped)
    lo, hi = solution.get("ci95", (objective, objective))
    if stopped is not None:
        message = f"{stopped.value.replace('_', ' ')}: mean over the first {done} (95% CI [{lo:.6g}, {hi:.6g}])"
        guarantee = None
    elif sampled:
        message = (f"sample-average estimate over {total:,} sampled scenarios, each solved exactly; "
                   f"95% CI of the expected cost [{lo:.6g}, {hi:.6g}]; no certified bound")
        guarantee = "none beyond the sample: the objective estimates an expectation (solution['ci95'])"
    else:
        message = ""
        guarantee = ("exact: the minimum over the DP's paths" if total == 1 else
                     "exact: the minimum of the sample-average objective over the given scenarios")
    return Result(termination, status, objective=objective, bound=bound, gap=gap, solution=solution, stats=stats,
                  message=message, guarantee=guarantee)
