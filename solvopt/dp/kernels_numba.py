"""Numba CPU kernels of the min-plus forward recursion (same signature as ``kernels_numpy.forward``).

Two parallel schedules, identical results (ties to the lowest slot, strict ``<``):

* ``forward_blocks``: ``prange`` over blocks of scenarios; each block runs *all* layers with
  its values (2 x Smax x block) kept in cache. Best when there are many scenarios.
* ``forward_targets``: layers in sequence, ``prange`` over the target states of a layer, all
  scenarios at once. Best for one or a few scenarios and many states (e.g. a CVRP split).

The innermost loop always runs over contiguous scenarios, so it vectorises (min / select).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from solvopt.core.errors import ModelError


@njit(cache=True)
def _relax_target(values, nxt, arg, ptr, src, cost, choice, layer, t, w0, m, sentinel, track):
    """nxt[t, i] = min_k values[src_k, i] + cost_k for scenarios w0+i (i < m); arg[i] = k - ptr[t].

    Plain 2-D indexing and select-style updates, so that LLVM vectorises the scenario loops.
    """
    lo = ptr[layer, t]
    hi = ptr[layer, t + 1]
    shared_src = src.shape[2] == 1
    shared_cost = cost.shape[2] == 1
    for i in range(m):
        nxt[t, i] = sentinel
        arg[i] = -1
    has_choice = choice.shape[0] > 0
    for k in range(lo, hi):
        j = k - lo
        if has_choice:                          # variant tables: a gather from a small, cached table
            for i in range(m):
                v = choice[layer, w0 + i]
                x = values[src[layer, k, v], i] + cost[layer, k, v]
                better = x < nxt[t, i]
                nxt[t, i] = x if better else nxt[t, i]
                arg[i] = j if better else arg[i]
        elif shared_src and shared_cost:
            s = src[layer, k, 0]
            c = cost[layer, k, 0]
            if track:
                for i in range(m):
                    x = values[s, i] + c
                    better = x < nxt[t, i]
                    nxt[t, i] = x if better else nxt[t, i]
                    arg[i] = j if better else arg[i]
            else:
                for i in range(m):
                    x = values[s, i] + c
                    nxt[t, i] = x if x < nxt[t, i] else nxt[t, i]
        elif shared_src:
            s = src[layer, k, 0]
            if track:
                for i in range(m):
                    x = values[s, i] + cost[layer, k, w0 + i]
                    better = x < nxt[t, i]
                    nxt[t, i] = x if better else nxt[t, i]
                    arg[i] = j if better else arg[i]
            else:
                for i in range(m):
                    x = values[s, i] + cost[layer, k, w0 + i]
                    nxt[t, i] = x if x < nxt[t, i] else nxt[t, i]
        else:                                   # per-scenario sources: a gather per scenario
            cost_step = 0 if shared_cost else 1
            for i in range(m):
                x = values[src[layer, k, w0 + i], i] + cost[layer, k, (w0 + i) * cost_step]
                better = x < nxt[t, i]
                nxt[t, i] = x if better else nxt[t, i]
                arg[i] = j if better else arg[i]
    half = sentinel / 2
    for i in range(m):
        if nxt[t, i] >= half:
            nxt[t, i] = sentinel
            arg[i] = -1


@njit(parallel=True, cache=True)
def forward_blocks(initial, ptr, src, cost, choice, n_states, sentinel, out, slots, block):
    """Scenario-block schedule: prange over blocks of ``block`` scenarios, all layers per block."""
    n_max, n = initial.shape
    n_layers = ptr.shape[0]
    track = slots.shape[0] > 0
    n_blocks = (n + block - 1) // block
    for b in prange(n_blocks):
        w0 = b * block
        m = min(n, w0 + block) - w0
        cur = np.empty((n_max, m), initial.dtype)
        nxt = np.empty((n_max, m), initial.dtype)
        arg = np.empty(m, np.int32)
        for s in range(n_max):
            for i in range(m):
                cur[s, i] = initial[s, w0 + i]
        for layer in range(n_layers):
            for t in range(n_max):
                if t < n_states[layer + 1]:
                    _relax_target(cur, nxt, arg, ptr, src, cost, choice, layer, t, w0, m, sentinel, track)
                else:
                    for i in range(m):
                        nxt[t, i] = sentinel
                        arg[i] = -1
                if track:
                    for i in range(m):
                        slots[layer, t, w0 + i] = arg[i]
            cur, nxt = nxt, cur
        for s in range(n_max):
            for i in range(m):
                out[s, w0 + i] = cur[s, i]


@njit(parallel=True, cache=True)
def _layer_targets(values, nxt, ptr, src, cost, choice, n_states, sentinel, slots, layer):
    n_max, n = values.shape
    track = slots.shape[0] > 0
    for t in prange(n_max):
        arg = np.empty(n, np.int32)
        if t < n_states[layer + 1]:
            _relax_target(values, nxt, arg, ptr, src, cost, choice, layer, t, 0, n, sentinel, track)
        else:
            for i in range(n):
                nxt[t, i] = sentinel
                arg[i] = -1
        if track:
            for i in range(n):
                slots[layer, t, i] = arg[i]


def forward_targets(initial, ptr, src, cost, choice, n_states, sentinel, out, slots) -> None:
    """Target-state schedule: layers in sequence, prange over the targets of each layer."""
    cur = np.array(initial, copy=True)
    nxt = np.empty_like(cur)
    for layer in range(ptr.shape[0]):
        _layer_targets(cur, nxt, ptr, src, cost, choice, n_states, sentinel, slots, layer)
        cur, nxt = nxt, cur
    out[...] = cur


def block_size(n_states_max: int, itemsize: int) -> int:
    """Scenarios per block so that two value buffers fit in ~256 KiB (between 16 and 1024)."""
    size = (256 << 10) // max(1, 2 * n_states_max * itemsize)
    return int(max(16, min(1024, size // 16 * 16 or 16)))


SERIAL_BELOW = 1 << 18      # transitions x scenarios under which one thread beats waking the others
SCHEDULES = ("auto", "blocks", "targets")


def effective_threads(threads: int | None, transitions: int, n_scenarios: int) -> int:
    """Threads a call uses: the requested (or Numba's current) count, 1 for small problems."""
    import numba
    most = numba.config.NUMBA_NUM_THREADS  # type: ignore[attr-defined]  # set at import from the environment: not in the stubs
    threads = min(threads or numba.get_num_threads(), most)
    return 1 if transitions * n_scenarios < SERIAL_BELOW else threads


def choose_schedule(n_scenarios: int, n_max: int, itemsize: int, threads: int) -> str:
    """``blocks`` when there are at least 2 x threads x min(block, 64) scenarios, else ``targets``.

    The engine picks the schedule once per solve from its chunk size, so that the back-tracking
    re-run on a few scenarios uses the kernel already compiled for the main pass (each
    schedule is a separate parallel function: compiling both would double the first run's JIT time).
    """
    return "blocks" if n_scenarios >= 2 * threads * min(block_size(n_max, itemsize), 64) else "targets"


def forward(initial, ptr, src, cost, choice, n_states, sentinel, out, slots, schedule: str = "auto",
            threads: int | None = None) -> None:
    """The Numba kernel with the shared signature; ``schedule`` = auto | blocks | targets;
    ``threads``: Numba threads for this call (default: Numba's current setting).

    Small problems (e.g. the back-tracking re-run on a few scenarios) run on one thread: a
    parallel region costs more to start than they take, much more on a busy machine.
    """
    import numba
    n_max, n = initial.shape
    block = block_size(n_max, initial.dtype.itemsize)
    before = numba.get_num_threads()
    threads = effective_threads(threads, int(ptr[:, -1].sum()), n)
    if schedule == "auto":
        schedule = choose_schedule(n, n_max, initial.dtype.itemsize, threads)
    if schedule not in ("blocks", "targets"):
        raise ModelError(f"unknown schedule {schedule!r} (auto | blocks | targets)")
    # never more threads than parallel work items (an idle thread still costs a wake-up)
    threads = max(1, min(threads, -(-n // block) if schedule == "blocks" else n_max))
    numba.set_num_threads(threads)
    try:
        if schedule == "blocks":
            forward_blocks(initial, ptr, src, cost, choice, n_states, sentinel, out, slots, block)
        else:
            forward_targets(initial, ptr, src, cost, choice, n_states, sentinel, out, slots)
    finally:
        numba.set_num_threads(before)
