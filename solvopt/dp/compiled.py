"""The compiled form of a ``LayeredDP``: padded tensors the three kernels read, built per chunk.

Layout (``Smax`` = most states in a layer, ``Kmax`` = most slots in a layer, ``n`` = scenarios
of the chunk; scenarios are the innermost, contiguous axis so that CPU loops vectorise over
them and GPU threads of a warp read consecutive addresses):

    ptr      (L, Smax+1) int32   slots of target t in layer l: ptr[l, t] .. ptr[l, t+1]-1
    src      (L, Kmax, 1 or n) int32   source state of each slot (shared or per scenario)
    cost     (L, Kmax, 1 or n) float   cost of each slot (shared or per scenario)
    initial  (Smax, n) float           V_0
    n_states (L+1,) int32

Masks are folded into the costs: forbidden slots (+inf costs, padding) hold the finite
``sentinel`` (1e300 in float64, 1e30 in float32), so no kernel ever computes inf - inf.
Values >= sentinel / 2 mean "unreachable"; kernels clamp them back to the sentinel after each
layer (so sums of sentinels never overflow) and results report them as +inf.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvopt.core.errors import ModelError
from solvopt.dsl.layered_dp import MAX_ABS_COST

SENTINEL = {np.dtype(np.float64): 1e300, np.dtype(np.float32): 1e30}


@dataclass
class ChunkTensors:
    """Kernel inputs for scenarios ``start .. start+count-1``."""

    start: int
    count: int
    initial: np.ndarray
    src: np.ndarray
    cost: np.ndarray

    def columns(self, cols: np.ndarray) -> "ChunkTensors":
        """The same chunk restricted to some scenarios (local column indices)."""
        pick = lambda a: a if a.shape[-1] == 1 else np.ascontiguousarray(a[..., cols])  # noqa: E731
        return ChunkTensors(self.start, len(cols), pick(self.initial), pick(self.src), pick(self.cost))


class CompiledDP:
    """Structure of a ``LayeredDP`` padded for the kernels, and the per-chunk tensor builder."""

    def __init__(self, model):
        self.model = model
        self.dtype = model.dtype
        self.sentinel = SENTINEL[self.dtype]
        self.n_layers = model.n_layers
        self.n_states = np.asarray(model.states, dtype=np.int32)
        self.max_states = int(self.n_states.max())
        self.max_slots = max(1, max(layer.n_slots for layer in model.layers))
        self.max_in_degree = max(layer.in_degree for layer in model.layers)
        self.scenarios = model.scenarios
        self.final = model.final
        self.sampler = model.sampler
        self.sample_block = model.sample_block
        L, S, K = self.n_layers, self.max_states, self.max_slots
        self.ptr = np.empty((L, S + 1), np.int32)
        for l, layer in enumerate(model.layers):
            self.ptr[l, : layer.n_targets + 1] = layer.ptr
            self.ptr[l, layer.n_targets + 1:] = layer.n_slots
        self.per_scenario_src = any(layer.src.ndim == 2 for layer in model.layers) or (
            self.sampler is not None and any(layer.dense_index is None for layer in model.layers))
        self.per_scenario_cost = (self.sampler is not None
                                  or any(layer.costs is not None and layer.costs.ndim == 2 for layer in model.layers))
        # shared parts, padded once
        self._shared_src = np.zeros((L, K, 1), np.int32)
        self._shared_cost = np.full((L, K, 1), self.sentinel, self.dtype)
        for l, layer in enumerate(model.layers):
            if layer.src.ndim == 1:
                self._shared_src[l, : layer.n_slots, 0] = layer.src
            if layer.costs is not None and layer.costs.ndim == 1:
                self._shared_cost[l, : layer.n_slots, 0] = self._fold(layer.costs)
        self.slot_index_dtype = np.int16 if self.max_in_degree < np.iinfo(np.int16).max else np.int32

    # -- sizes -----------------------------------------------------------------------------
    def bytes_per_scenario(self) -> int:
        """Memory one scenario of a chunk takes (per-scenario costs/sources, values)."""
        per = 2 * self.max_states * self.dtype.itemsize + self.max_states * 8
        if self.per_scenario_cost:
            per += self.n_layers * self.max_slots * self.dtype.itemsize
        if self.per_scenario_src:
            per += self.n_layers * self.max_slots * 4
        return per

    def chunk_size(self, requested: int | None, budget_bytes: int = 256 << 20) -> int:
        """Scenarios per chunk: the user's ``chunk`` or what fits the memory budget.

        With a sampler, chunks are whole multiples of ``sample_block`` (reproducibility).
        """
        if requested is not None:
            if not (isinstance(requested, (int, np.integer)) and requested >= 1):
                raise ModelError(f"chunk must be a positive integer, got {requested!r}")
            size = int(requested)
        else:
            size = max(1, budget_bytes // self.bytes_per_scenario())
        if self.sampler is not None:
            size = max(self.sample_block, size // self.sample_block * self.sample_block)
        return min(size, self.scenarios)

    # -- building chunks ---------------------------------------------------------------------
    def _fold(self, costs: np.ndarray) -> np.ndarray:
        """Costs with +inf replaced by the sentinel, in the kernel dtype."""
        return np.where(np.isinf(costs), self.sentinel, costs).astype(self.dtype, copy=False)

    def _check_magnitude(self, costs: np.ndarray, layer: int) -> None:
        limit = MAX_ABS_COST[self.dtype]
        if np.any(np.abs(costs[np.isfinite(costs)]) > limit):
            raise ModelError(f"sampler layer {layer}: finite costs must have magnitude <= {limit:g} for {self.dtype}")

    def chunk(self, start: int, count: int, seed: int = 0) -> ChunkTensors:
        """Kernel tensors for scenarios ``start .. start+count-1``."""
        L, S, K = self.n_layers, self.max_states, self.max_slots
        layers = self.model.layers
        drawn = self._sample(start, count, seed) if self.sampler is not None else None
        src = self._shared_src
        if self.per_scenario_src:
            src = np.zeros((L, K, count), np.int32)
            for l, layer in enumerate(layers):
                if drawn is not None and drawn[l][0] is not None:
                    layer_src = drawn[l][0].T
                elif layer.src.ndim == 2:
                    layer_src = layer.src[start:start + count].T
                else:
                    layer_src = layer.src[:, None]
                src[l, : layer.n_slots] = layer_src
        cost = self._shared_cost
        if self.per_scenario_cost:
            cost = np.full((L, K, count), self.sentinel, self.dtype)
            for l, layer in enumerate(layers):
                if drawn is not None:
                    layer_cost = drawn[l][1].T
                    self._check_magnitude(layer_cost, l)
                elif layer.costs.ndim == 2:
                    layer_cost = layer.costs[start:start + count].T
                else:
                    layer_cost = layer.costs[:, None]
                cost[l, : layer.n_slots] = self._fold(layer_cost)
        init = self.model.initial
        init = init[start:start + count].T if init.ndim == 2 else np.repeat(init[:, None], count, axis=1)
        initial = np.full((S, count), self.sentinel, self.dtype)
        initial[: self.n_states[0]] = self._fold(init)
        return ChunkTensors(start, count, initial, src, cost)

    def _sample(self, start: int, count: int, seed: int) -> list[tuple[np.ndarray | None, np.ndarray]]:
        """Per-layer (src or None, costs (count, K)) drawn block by block with per-block seeds."""
        block = self.sample_block
        if start % block:
            raise ModelError(f"sampled chunks must start at a multiple of sample_block={block}")
        n_blocks = -(-self.scenarios // block)
        seeds = np.random.SeedSequence(seed).spawn(n_blocks)
        parts = []
        for b in range(start // block, -(-(start + count) // block)):
            n = min(block, self.scenarios - b * block)
            out = self.sampler(np.random.Generator(np.random.PCG64(seeds[b])), n)
            if not isinstance(out, (list, tuple)) or len(out) != self.n_layers:
                raise ModelError(f"the sampler must return a list of {self.n_layers} per-layer cost arrays")
            parts.append([layer.sampled(item, n, f"sampler layer {l}") for l, (layer, item)
                          in enumerate(zip(self.model.layers, out))])
        merged = []
        for l in range(self.n_layers):
            srcs = [p[l][0] for p in parts]
            src = None if srcs[0] is None else np.concatenate(srcs)[:count]
            merged.append((src, np.concatenate([p[l][1] for p in parts])[:count]))
        return merged
