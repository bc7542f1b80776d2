"""The compiled form of a ``LayeredDP``: padded tensors the three kernels read, built per chunk.

Layout (``Smax`` = most states in a layer, ``Kmax`` = most slots in a layer, ``n`` = scenarios
of the chunk; scenarios are the innermost, contiguous axis so that CPU loops vectorise over
them and GPU threads of a warp read consecutive addresses):

    ptr      (L, Smax+1) int32      slots of target t in layer l: ptr[l, t] .. ptr[l, t+1]-1
    src      (L, Kmax, X) int32     source state of each slot
    cost     (L, Kmax, X) float     cost of each slot
    choice   (L, n) int32 or (0, 0) which column of src/cost scenario w uses (variant mode)
    initial  (Smax, n) float        V_0
    n_states (L+1,) int32

The last axis X of src/cost is read in one of three modes: ``shared`` (X = 1, every scenario
reads column 0), ``scenario`` (X = n, scenario w reads column w; src may stay X = 1 when only
costs vary) or ``variant`` (X = D, scenario w reads column choice[l, w] -- small tables, no
per-scenario cost stream). A model whose layers mix per-scenario arrays and variants is
compiled in scenario mode (variant tables are expanded per chunk).

Masks are folded into the costs: forbidden slots (+inf costs, padding) hold the finite
``sentinel`` (1e300 in float64, 1e30 in float32), so no kernel ever computes inf - inf.
Values >= sentinel / 2 mean "unreachable"; kernels clamp them back to the sentinel after each
layer (so sums of sentinels never overflow) and results report them as +inf. A model whose
finite path sums could reach sentinel / 2 is refused (ModelError: at construction for given
costs, per chunk for sampled ones), never reported as unreachable.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solvopt.core.errors import ModelError
from solvopt.dsl.arrays import float_array
from solvopt.dsl.layered_dp import MAX_ABS_COST, SENTINEL, check_path_sums, finite_max, sums_can_reach_sentinel

NO_CHOICE = np.zeros((0, 0), np.int32)


@dataclass
class ChunkTensors:
    """Kernel inputs for scenarios ``start .. start+count-1``."""

    start: int
    count: int
    initial: np.ndarray
    src: np.ndarray
    cost: np.ndarray
    choice: np.ndarray = field(default_factory=lambda: NO_CHOICE)

    def columns(self, cols: np.ndarray) -> ChunkTensors:
        """The same chunk restricted to some scenarios (local column indices)."""
        def pick(a):
            return a if a.shape[-1] != self.count or self.count == 1 else np.ascontiguousarray(a[..., cols])
        choice = self.choice if self.choice.size == 0 else np.ascontiguousarray(self.choice[:, cols])
        src, cost = (self.src, self.cost) if choice.size else (pick(self.src), pick(self.cost))
        return ChunkTensors(self.start, len(cols), pick(self.initial), src, cost, choice)


class CompiledDP:
    """Structure of a ``LayeredDP`` padded for the kernels, and the per-chunk tensor builder."""

    build_time: float | None = None     # seconds to build the model and this form, set by the compile step

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
        layers = model.layers
        sampled = [self.sampler is not None and layer.costs is None for layer in layers]
        if any(layer.per_scenario or s for layer, s in zip(layers, sampled)):
            self.mode = "scenario"
        elif any(layer.n_variants is not None for layer in layers):
            self.mode = "variant"
        else:
            self.mode = "shared"
        self.per_scenario_cost = self.mode == "scenario"
        self.per_scenario_src = self.per_scenario_cost and any(
            (layer.per_scenario and layer.src.ndim == 2) or (s and layer.dense_index is None)
            or layer.n_variants is not None for layer, s in zip(layers, sampled))
        L, S, K = self.n_layers, self.max_states, self.max_slots
        self.ptr = np.empty((L, S + 1), np.int32)
        for l, layer in enumerate(layers):
            self.ptr[l, : layer.n_targets + 1] = layer.ptr
            self.ptr[l, layer.n_targets + 1:] = layer.n_slots
        # fixed parts, padded once: shared columns, or the variant tables
        width = max((layer.n_variants or 1) for layer in layers) if self.mode == "variant" else 1
        self._fixed_src = np.zeros((L, K, width), np.int32)
        self._fixed_cost = np.full((L, K, width), self.sentinel, self.dtype)
        for l, layer in enumerate(layers):
            if layer.n_variants is not None and self.mode == "variant":
                self._fixed_src[l, : layer.n_slots, : layer.n_variants] = layer.src.T
                self._fixed_cost[l, : layer.n_slots, : layer.n_variants] = self._fold(layer.costs.T)
            elif layer.n_variants is None:
                if layer.src.ndim == 1:
                    self._fixed_src[l, : layer.n_slots, 0] = layer.src
                if layer.costs is not None and layer.costs.ndim == 1:
                    self._fixed_cost[l, : layer.n_slots, 0] = self._fold(layer.costs)
        self.slot_index_dtype = np.int16 if self.max_in_degree < np.iinfo(np.int16).max else np.int32
        # sampled costs: check each chunk's path sums against the sentinel (when they could reach it)
        self._check_sampled_sums = self.sampler is not None and sums_can_reach_sentinel(self.n_layers, self.dtype)

    # -- sizes -----------------------------------------------------------------------------
    def bytes_per_scenario(self) -> int:
        """Memory one scenario of a chunk takes (per-scenario costs/sources, values)."""
        per = 2 * self.max_states * self.dtype.itemsize + self.max_states * 8 + 4 * self.n_layers
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
    def _fold(self, costs: np.ndarray, high: float | None = None) -> np.ndarray:
        """Costs with +inf replaced by the sentinel, in the kernel dtype (``high``: costs.max() if known)."""
        if np.isinf(costs.max(initial=0.0) if high is None else high):
            costs = np.where(np.isinf(costs), self.sentinel, costs)
        return costs.astype(self.dtype, copy=False)

    def _fold_sampled(self, costs: np.ndarray, layer: int) -> np.ndarray:
        """Check the magnitude of sampled costs (NaN and -inf were rejected already) and fold them."""
        limit = MAX_ABS_COST[self.dtype]
        low, high = costs.min(initial=0.0), costs.max(initial=0.0)
        if low < -limit or (high > limit and np.any(np.abs(costs[np.isfinite(costs)]) > limit)):
            raise ModelError(f"sampler layer {layer}: finite costs must have magnitude <= {limit:g} for {self.dtype}")
        return self._fold(costs, high)

    def chunk(self, start: int, count: int, seed: int = 0) -> ChunkTensors:
        """Kernel tensors for scenarios ``start .. start+count-1``."""
        L, S, K = self.n_layers, self.max_states, self.max_slots
        model = self.model
        src, cost, choice = self._fixed_src, self._fixed_cost, NO_CHOICE
        if self.mode == "variant":
            choice = np.zeros((L, count), np.int32)
        elif self.mode == "scenario":
            if self.per_scenario_src:
                src = np.zeros((L, K, count), np.int32)
            cost = np.full((L, K, count), self.sentinel, self.dtype)
        initial = np.full((S, count), self.sentinel, self.dtype)
        pieces = self._sample(start, count, seed) if self.sampler is not None else [(0, count, None, None)]
        highs = list(model.layer_highs) + [model.initial_high]   # largest finite cost per layer, initial
        for offset, n, drawn, drawn_initial in pieces:       # one piece per sampling block
            cols, first = slice(offset, offset + n), start + offset
            for l, layer in enumerate(model.layers):
                data: Any   # kind "scenario": (src, costs); "choice": the variants; "fixed": None
                kind, data = drawn[l] if drawn is not None else ("fixed", None)
                layer_choice = data if kind == "choice" else (
                    layer.choice[first:first + n] if layer.n_variants is not None else None)
                if self.mode == "variant":
                    if layer_choice is not None:
                        choice[l, cols] = layer_choice
                elif self.mode == "scenario":
                    layer_src, layer_cost = self._scenario_columns(layer, l, kind, data, layer_choice, first, n)
                    if kind == "scenario" and self._check_sampled_sums:
                        highs[l] = _max_or_none(highs[l], finite_max(data[1]))
                    if self.per_scenario_src:
                        src[l, : layer.n_slots, cols] = layer_src
                    cost[l, : layer.n_slots, cols] = layer_cost
            if drawn_initial is not None:                    # (n,) broadcasts over the start states
                init = drawn_initial.T if drawn_initial.ndim == 2 else drawn_initial[None, :]
                if self._check_sampled_sums:
                    highs[-1] = _max_or_none(highs[-1], finite_max(init))
            elif model.initial.ndim == 2:
                init = model.initial[first:first + n].T
            else:
                init = model.initial[:, None]
            initial[: self.n_states[0], cols] = self._fold(init)
        if self._check_sampled_sums:
            check_path_sums(highs[-1], highs[:-1], self.dtype, f"sampled scenarios {start}..{start + count - 1}: ")
        return ChunkTensors(start, count, initial, src, cost, choice)

    def _scenario_columns(self, layer, l, kind, data, choice, first, n):
        """(src (K, n or 1), cost (K, n or 1)) of one layer in scenario mode."""
        if choice is not None:                          # variant table expanded per scenario
            return layer.src[choice].T, self._fold(layer.costs[choice].T)
        if kind == "scenario":
            src, costs = data
            return (layer.src[:, None] if src is None else src.T), self._fold_sampled(costs.T, l)
        src = layer.src[first:first + n].T if layer.src.ndim == 2 else layer.src[:, None]
        costs = layer.costs[first:first + n].T if layer.costs.ndim == 2 else layer.costs[:, None]
        return src, self._fold(costs)

    def _sample(self, start: int, count: int, seed: int) -> list[tuple]:
        """(offset in the chunk, n, per-layer (kind, data), initial (n, S_0) or None) per sampling block.

        Block b is drawn with ``Generator(PCG64(SeedSequence(seed).spawn(n_blocks)[b]))``.
        """
        block = self.sample_block
        if start % block:
            raise ModelError(f"sampled chunks must start at a multiple of sample_block={block}")
        # block b's seed is SeedSequence(seed).spawn(n_blocks)[b], built alone: spawning every block's
        # seed took 12 s per chunk at 10^9 scenarios (a stop waited for it)
        root = np.random.SeedSequence(seed)
        pieces = []
        for b in range(start // block, -(-(start + count) // block)):
            n = min(block, self.scenarios - b * block, start + count - b * block)
            child = np.random.SeedSequence(root.entropy, spawn_key=root.spawn_key + (b,), pool_size=root.pool_size)
            out = self.sampler(np.random.Generator(np.random.PCG64(child)), min(block, self.scenarios - b * block))
            initial = None
            if isinstance(out, dict):
                initial, out = out.get("initial"), out.get("layers")
            if not isinstance(out, (list, tuple)) or len(out) != self.n_layers:
                raise ModelError(f"the sampler must return a list of {self.n_layers} per-layer entries")
            drawn_n = min(block, self.scenarios - b * block)
            parts = [layer.sampled(item, drawn_n, f"sampler layer {l}")
                     for l, (layer, item) in enumerate(zip(self.model.layers, out))]
            if initial is not None:
                initial = self._sampled_initial(initial, drawn_n)[:n]
            parts = [(kind, _head(data, n)) for kind, data in parts]
            pieces.append((b * block - start, n, parts, initial))
        if len({p[3] is None for p in pieces}) > 1:
            raise ModelError("the sampler must give initial values for every block or for none")
        return pieces

    def _sampled_initial(self, initial, n: int) -> np.ndarray:
        """The sampler's initial values, (n,) (one per scenario, every start state) or (n, S_0)."""
        initial = float_array(initial, "the sampler's initial values")
        low = initial.min(initial=0.0)                      # one pass: NaN propagates, -inf shows
        shape_ok = initial.shape == (n,) or initial.shape == (n, self.n_states[0])
        if not shape_ok or np.isnan(low) or np.isneginf(low):
            raise ModelError(f"the sampler's initial values must be ({n},) or ({n}, {self.n_states[0]}) "
                             "without NaN or -inf")
        return initial


def _max_or_none(a, b):
    return b if a is None else a if b is None else max(a, b)


def _head(data, n: int):
    """The first n scenarios of one layer's sampled data (a block may run past the chunk)."""
    if data is None:
        return None
    if isinstance(data, tuple):
        return tuple(None if a is None else a[:n] for a in data)
    return data[:n]
