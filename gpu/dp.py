"""CuPy launcher of ``dp.cu``: the DP engine's min-plus kernel (families dp and irp) on a GPU.

Same signature as the CPU kernels (:mod:`solvopt.dp.kernels_numpy`).

This module knows only CuPy and the kernel source; the engine (``solvopt.dp``) builds its
backend from :func:`forward` (dependencies point dp -> gpu -> core).

``forward(initial, ptr, src, cost, choice, n_states, sentinel, out, slots)`` launches one kernel per
layer, ping-ponging two value buffers on the device. Schedule ``auto`` uses one thread per
(target, scenario) when there are at least 128 scenarios in the chunk, else one warp per
(target, scenario) with a shuffle min-reduction over the predecessors.
"""
from __future__ import annotations

import numpy as np

from solvopt.core.backend import to_numpy
from solvopt.core.errors import ModelError

from .harness import load_module

THREADS = 256
WARP_BELOW = 128          # scenarios per chunk under which the warp-per-target schedule is used
MAX_GRID_Y = 65535
SCHEDULES = ("auto", "scenarios", "warp")


def _suffix(real_dtype, index_dtype) -> str:
    real = {np.dtype(np.float64): "f64", np.dtype(np.float32): "f32"}[np.dtype(real_dtype)]
    index = {np.dtype(np.int16): "i16", np.dtype(np.int32): "i32"}[np.dtype(index_dtype)]
    return f"{real}_{index}"


def forward(initial, ptr, src, cost, choice, n_states, sentinel, out, slots, schedule: str = "auto") -> None:
    """Run every layer on the device; arrays may be NumPy (copied over) or CuPy."""
    import cupy as cp
    n_max, n = initial.shape
    real = initial.dtype.type
    initial, ptr, src, cost, choice = (cp.asarray(a) for a in (initial, ptr, src, cost, choice))
    has_choice = choice.size > 0
    n_states = to_numpy(n_states)
    track = slots.shape[0] > 0
    module = load_module("dp.cu")
    suffix = _suffix(initial.dtype, slots.dtype)
    if schedule == "auto":
        schedule = "warp" if n < WARP_BELOW or n_max > MAX_GRID_Y else "scenarios"
    if schedule == "scenarios" and n_max > MAX_GRID_Y:
        raise ModelError(f"the scenario schedule handles at most {MAX_GRID_Y} states per layer")
    if schedule not in ("scenarios", "warp"):
        raise ModelError(f"unknown CUDA schedule {schedule!r} (auto | scenarios | warp)")
    kernel = module.get_function(f"minplus_{schedule}_{suffix}")
    cur = initial.copy()
    nxt = cp.empty_like(cur)
    no_slots = cp.empty(1, dtype=slots.dtype)
    no_choice = cp.zeros(1, dtype=cp.int32)
    i32 = np.int32
    for layer in range(ptr.shape[0]):
        layer_slots = slots[layer] if track else no_slots
        layer_choice = choice[layer] if has_choice else no_choice
        common = (cur, nxt, layer_slots, ptr[layer], src[layer], cost[layer], layer_choice, i32(has_choice))
        widths = (i32(src.shape[2]), i32(cost.shape[2]), real(sentinel), i32(track))
        grid: tuple[int, ...]
        if schedule == "scenarios":
            grid = ((n + THREADS - 1) // THREADS, n_max)
            kernel(grid, (THREADS,), common + (i32(n), i32(n_states[layer + 1])) + widths)
        else:
            warps = n_max * n
            grid = ((warps * 32 + THREADS - 1) // THREADS,)
            kernel(grid, (THREADS,), common + (i32(n), i32(n_max), i32(n_states[layer + 1])) + widths)
        cur, nxt = nxt, cur
    out[...] = cur

