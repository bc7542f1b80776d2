"""The chunked driver of the min-plus engine: kernels over scenario chunks -> aggregates, paths, Result.

Scenarios are processed in chunks of bounded size (option ``chunk``): each chunk's tensors
are built (or sampled), the chosen kernel runs all layers, and the chunk's final values are
reduced where the kernel ran (min over final states, sums for mean and variance); only those
sums, a bounded quantile sample (:mod:`solvopt.dp.aggregate`) and -- when small enough
(``keep_values``) -- the final values come back to the host. Back-tracking runs the kernel a
second time on just the requested scenarios with slot tracking on, so the argmin footprint is
L x Smax x (#paths).

Objective: ``final="per_scenario"`` -> value_w = min over final states of V_L[s, w],
objective = mean_w value_w. ``final="shared"`` -> the final state s* minimising mean_w V_L[s, w]
(a decision shared by every scenario), value_w = V_L[s*, w], objective = that mean.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from solvopt.core.errors import ModelError
from solvopt.core.options import SolveOptions
from solvopt.core.progress import Progress
from solvopt.core.result import Result, SolutionStatus, Termination

from .aggregate import StreamingStats
from .compiled import ChunkTensors, CompiledDP

DEFAULT_QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
QUANTILE_SAMPLE = 1_000_000      # most values kept on the host for quantiles (exact below that)

# options every DP solver accepts besides the common ones
DP_OPTIONS = {"chunk": None, "paths": 16, "quantiles": DEFAULT_QUANTILES, "keep_values": 1_000_000}


@dataclass
class Backend:
    """A kernel with the shared signature plus how to move arrays to and from its device."""

    name: str
    device: str
    forward: Callable
    to_device: Callable = np.asarray
    to_host: Callable = np.asarray
    empty: Callable = np.empty
    synchronize: Callable = lambda: None
    options: dict = field(default_factory=dict)


def requested_paths(paths, scenarios: int) -> np.ndarray:
    """Scenario indices to back-track: an int n (the first n) or a list of indices."""
    if paths is None:
        return np.zeros(0, np.int64)
    if isinstance(paths, (int, np.integer)) and not isinstance(paths, bool):
        if paths < 0:
            raise ModelError(f"paths must be >= 0 or a list of scenario indices, got {paths}")
        return np.arange(min(int(paths), scenarios))
    idx = np.unique(np.asarray(paths, dtype=np.int64).ravel())
    if idx.size and (idx[0] < 0 or idx[-1] >= scenarios):
        raise ModelError(f"paths must be scenario indices in 0..{scenarios - 1}")
    return idx


def _check_quantiles(q) -> tuple[float, ...]:
    q = tuple(float(x) for x in np.atleast_1d(q))
    if any(not 0 <= x <= 1 for x in q):
        raise ModelError(f"quantiles must lie in [0, 1], got {q}")
    return q


def run_chunk(compiled: CompiledDP, backend: Backend, tensors: ChunkTensors, track: bool):
    """Run the kernel on one chunk; returns (final values (S_L, n) on the host, slots or None)."""
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


def solve(compiled: CompiledDP, backend: Backend, options: SolveOptions) -> Result:
    """Run the engine over all scenario chunks and assemble the Result (see the module docstring)."""
    extra = options.extra
    W = compiled.scenarios
    chunk = compiled.chunk_size(extra.get("chunk"))
    quantile_levels = _check_quantiles(extra.get("quantiles", DEFAULT_QUANTILES))
    want_paths = requested_paths(extra.get("paths", 16), W)
    keep_values = int(extra.get("keep_values", DP_OPTIONS["keep_values"]))
    shared = compiled.final == "shared"
    n_final = int(compiled.n_states[-1])
    half = compiled.sentinel / 2
    finals = np.empty((n_final, W)) if n_final * W <= keep_values else None
    # shared: statistics of every final state (the decision is taken at the end); else of the best one
    stats = StreamingStats(n_final if shared else 1, W, max(1, QUANTILE_SAMPLE // (n_final if shared else 1)))
    path_data: dict[int, tuple] = {}
    progress = Progress(options.progress, log=options.log)
    start_time = time.perf_counter()
    kernel_time, processed, n_chunks = 0.0, 0, 0
    termination = Termination.OPTIMAL
    for start in range(0, W, chunk):
        if options.time_limit is not None and time.perf_counter() - start_time > options.time_limit and processed:
            termination = Termination.TIME_LIMIT
            break
        count = min(chunk, W - start)
        tensors = compiled.chunk(start, count, options.seed)
        t0 = time.perf_counter()
        final, _ = run_chunk(compiled, backend, tensors, track=False)
        backend.synchronize()
        kernel_time += time.perf_counter() - t0
        # reduced where the kernel ran; only per-row sums and the quantile sample come back
        stats.add(final if shared else final.min(axis=0)[None, :], start, half, backend.to_host)
        if finals is not None:
            host = np.asarray(backend.to_host(final), dtype=float)
            finals[:, start:start + count] = np.where(host >= half, np.inf, host)
        local = want_paths[(want_paths >= start) & (want_paths < start + count)] - start
        if local.size:
            path_data[start] = (tensors.columns(local), local)
        processed += count
        n_chunks += 1
        progress(f"dp: {processed}/{W} scenarios ({n_chunks} chunks)")
    solution: dict = {}
    row, final_state = 0, None
    if shared:
        state_means = stats.row_means()
        solution["state_means"] = state_means
        if np.isfinite(state_means).any():
            row = final_state = int(np.argmin(state_means))
            solution["final_state"] = final_state
        else:
            row = int(np.argmin(stats.unreachable))
    if finals is not None:
        solution["values"] = finals[:, :processed]
    if stats.stride == 1 and W <= keep_values:
        solution["scenario_values"] = stats.samples(row)
    solution.update(stats.summary(row, quantile_levels))
    if path_data:
        solution.update(_paths(compiled, backend, path_data, final_state))
    wall = time.perf_counter() - start_time
    transitions = compiled.model.n_transitions * processed
    run_stats = {"backend": backend.name, "device": backend.device, "scenarios": processed, "chunks": n_chunks,
                 "chunk_size": chunk, "layers": compiled.n_layers, "transitions": transitions,
                 "kernel_time": kernel_time,
                 "transitions_per_second": transitions / kernel_time if kernel_time else None,
                 "ns_per_transition": 1e9 * kernel_time / transitions if transitions else None,
                 "dtype": str(compiled.dtype), "wall_time": wall}
    unreachable = int(stats.unreachable[row])
    return _result(solution, unreachable, processed, termination, run_stats, W)


def _paths(compiled, backend, path_data, final_state) -> dict:
    """Re-run the kernel with slot tracking on the requested scenarios and back-track them."""
    scenarios, states, chosen = [], [], []
    for start, (sub, local) in sorted(path_data.items()):
        final, slots = run_chunk(compiled, backend, sub, track=True)
        final = np.asarray(backend.to_host(final), dtype=float)
        end = final.argmin(axis=0) if final_state is None else np.full(len(local), final_state)
        end = np.where(final[end, np.arange(len(local))] >= compiled.sentinel / 2, -1, end)
        s, k = backtrack(compiled, sub, slots, end)
        scenarios.append(start + local)
        states.append(s)
        chosen.append(k)
    return {"path_scenarios": np.concatenate(scenarios), "paths": np.concatenate(states),
            "path_slots": np.concatenate(chosen)}


def _result(solution, unreachable, processed, termination, stats, total) -> Result:
    if unreachable or "mean" not in solution:
        return Result(Termination.INFEASIBLE, SolutionStatus.NONE, objective=float("inf"), solution=solution,
                      stats=stats, message=f"{unreachable} of {processed} scenarios have no path to a final state")
    objective = float(solution["mean"])
    if termination is Termination.TIME_LIMIT:
        return Result(termination, SolutionStatus.FEASIBLE, objective=objective, solution=solution, stats=stats,
                      message=f"time limit: mean over the first {processed} of {total} scenarios")
    return Result(Termination.OPTIMAL, SolutionStatus.OPTIMAL, objective=objective, bound=objective, gap=0.0,
                  solution=solution, stats=stats,
                  guarantee="exact: the minimum of the sample-average objective over the given scenarios")
