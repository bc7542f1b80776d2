"""The NumPy reference of the min-plus forward recursion: the oracle the fast kernels are tested against.

Signature shared by the three kernels (NumPy here, Numba in ``kernels_numba``, CUDA in
``solvopt.gpu.dp``); tensors as documented in :mod:`solvopt.dp.compiled`:

    forward(initial, ptr, src, cost, choice, n_states, sentinel, out, slots) -> None

``choice`` is the (L, n) variant index of each scenario, or an empty (0, 0) array when the
last axis of ``src``/``cost`` is 1 (shared) or n (per scenario).

``out`` (Smax, n) receives V_L; ``slots`` (L, Smax, n) int16/int32 receives, for every layer,
target and scenario, the chosen slot *relative to ptr[l, t]* (-1 when unreachable) — or is an
empty array ``(0, 0, 0)`` when no back-tracking is wanted. Ties go to the lowest slot.
"""
from __future__ import annotations

import numpy as np


def forward(initial, ptr, src, cost, choice, n_states, sentinel, out, slots) -> None:
    """V_{l+1}[t, w] = min_{k in slots(t)} V_l[src[k, w], w] + cost[k, w], one target at a time."""
    n_layers = ptr.shape[0]
    n_max, n = initial.shape
    track = slots.shape[0] > 0
    half = sentinel / 2
    columns = np.arange(n)
    values = initial.copy()
    for layer in range(n_layers):
        nxt = np.full((n_max, n), sentinel, dtype=initial.dtype)
        for t in range(int(n_states[layer + 1])):
            lo, hi = int(ptr[layer, t]), int(ptr[layer, t + 1])
            if hi == lo:
                continue
            sources, costs = src[layer, lo:hi], cost[layer, lo:hi]
            if choice.size:                                     # variant tables: column choice[layer, w]
                sources, costs = sources[:, choice[layer]], costs[:, choice[layer]]
            previous = values[sources[:, 0]] if sources.shape[1] == 1 else values[sources, columns]
            candidates = previous + costs                       # (slots, n), cost broadcasts when shared
            best = candidates.argmin(axis=0)
            nxt[t] = candidates[best, columns]
            if track:
                slots[layer, t] = best
        unreachable = nxt >= half
        nxt[unreachable] = sentinel
        if track:
            slots[layer][unreachable] = -1
        values = nxt
    out[...] = values
