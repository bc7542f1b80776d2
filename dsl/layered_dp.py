"""``LayeredDP``: a min-plus dynamic program over a layered DAG, batched over scenarios.

Layers 0..L, layer l has ``S_l`` states. Between layers l and l+1 some transitions
(s -> s') are allowed, each with a cost that may depend on the scenario w. The engine computes

    V_0[s, w]      = initial[s, w]                      (0 by default)
    V_{l+1}[s', w] = min over allowed (s, s') of  V_l[s, w] + C_l[s, s', w]

and reports per scenario the best final value (``final="per_scenario"``: min over final
states) or, when the final state is a decision shared by every scenario
(``final="shared"``), the final state with the lowest mean value over scenarios.

Every layer is normalised at construction into *slots grouped by target*: for target s' the
slots ``ptr[s'] .. ptr[s'+1]-1`` each name a source state ``src[k]`` and a cost ``cost[k]``.
Sources and costs may be shared by all scenarios (shape ``(K,)``) or given per scenario
(shape ``(W, K)``): per-scenario sources express transitions whose *target* depends on the
scenario (e.g. inventory I -> max(0, I - d_w)). ``+inf`` costs mean "not allowed".

Ways to give a layer (the ``transitions`` list holds one per layer):

* a cost array ``(S_l, S_{l+1})`` or ``(W, S_l, S_{l+1})``; ``+inf`` entries are forbidden;
* ``Transitions(costs, mask=...)`` with a boolean mask ``(S_l, S_{l+1})`` or a scipy sparse
  matrix of allowed pairs; costs then dense as above or one per allowed pair ``(nnz,)`` /
  ``(W, nnz)`` in row-major (source, target) order of the canonical CSR matrix;
* ``Transitions.slots(ptr, src, costs)``: the engine's own form described above;
* ``Transitions.variants(ptr, src, costs, choice)``: D alternative versions of a slot layer
  (``src``/``costs`` tables of shape (D, K)) and, per scenario, which one applies
  (``choice`` (W,) in 0..D-1). For scenario data with few distinct values (e.g. an integer
  demand) this replaces W x K per-scenario arrays by a small table and W integers.

Scenarios can also come from a ``sampler(rng, count)`` that draws ``count`` fresh scenarios
and returns a list with one entry per layer -- ``None`` for a layer with fixed costs (given
in ``transitions``), ``(count, S_l, S_{l+1})`` or ``(count, K_l)`` costs for a layer given
without costs, a pair ``(src, costs)`` of ``(count, K_l)`` arrays for a slot layer with
per-scenario sources, or the ``(count,)`` integer choices of a variant layer -- or a dict
``{"layers": that list, "initial": (count, S_0) values}``.
Sampling is reproducible: scenarios are drawn in blocks of ``sample_block``, block b with
``numpy.random.Generator(PCG64(SeedSequence(seed).spawn(...)[b]))``, so the result does not
depend on the chunk size.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from solvopt.core.errors import ModelError

from .arrays import FloatArray, float_array
from .family import FamilyModel

# The kernels' masking sentinel: forbidden slots hold it instead of +inf; values >= SENTINEL / 2
# mean "unreachable". Finite costs must stay far below it, and so must every path's partial sums
# (:func:`check_path_sums`): in float32 fifty layers of 1e28 already reach 5e29 = SENTINEL / 2.
SENTINEL = {np.dtype(np.float64): 1e300, np.dtype(np.float32): 1e30}
MAX_ABS_COST = {np.dtype(np.float64): 1e290, np.dtype(np.float32): 1e28}

IntArray: TypeAlias = npt.NDArray[np.integer[Any]]


def finite_max(a: npt.ArrayLike) -> float | None:
    """The largest finite entry of ``a`` (None when it has none)."""
    arr = np.asarray(a, dtype=float)
    high = arr.max(initial=-np.inf)
    if np.isfinite(high):
        return float(high)
    finite = arr[np.isfinite(arr)]
    return float(finite.max()) if finite.size else None


def path_sum_bound(initial_high: float | None, layer_highs: Iterable[float | None]) -> float:
    """An upper bound on every finite partial path sum V_l (l = 0..L): the largest finite initial
    value plus, layer by layer, the largest finite cost (prefix maxima, since costs may be negative)."""
    total = 0.0 if initial_high is None else initial_high
    bound = total
    for high in layer_highs:
        if high is not None:
            total += high
            bound = max(bound, total)
    return bound


def check_path_sums(initial_high: float | None, layer_highs: Iterable[float | None], dtype: npt.DTypeLike,
                    where: str = "") -> None:
    """ModelError when a finite path could reach the sentinel's half (it would read as unreachable).

    The answer would be representable in float64; float32 cannot tell it from a masked path, so
    the model is refused (not silently promoted): the message says to use dtype=float64.
    """
    kind = np.dtype(dtype)
    half = SENTINEL[kind] / 2
    bound = path_sum_bound(initial_high, layer_highs)
    if bound >= half:
        raise ModelError(f"{where}path sums can reach {bound:.3g}, at or above {half:.3g} where {kind} values "
                         f"count as unreachable (half the masking sentinel {SENTINEL[kind]:g}); "
                         + ("use dtype=float64" if kind == np.float32 else "scale the costs down"))


def sums_can_reach_sentinel(n_layers: int, dtype: npt.DTypeLike) -> bool:
    """Whether costs within MAX_ABS_COST over ``n_layers`` layers could reach the sentinel's half at all."""
    kind = np.dtype(dtype)
    return MAX_ABS_COST[kind] * (n_layers + 1) >= SENTINEL[kind] / 2


class Transitions:
    """One layer's allowed transitions (slots grouped by target) and their costs.

    Attributes after construction: ``n_sources``, ``n_targets``, ``ptr`` (n_targets+1,),
    ``src`` (K,) or (W, K) int32, ``costs`` (K,) or (W, K) float64 or None, and
    ``dense_index``: for dense/masked layers, the flat index ``s * n_targets + t`` of each
    slot, used to pick a sampler's dense cost arrays apart. Variant layers also have
    ``n_variants`` (D; None otherwise) with ``src``/``costs`` tables (D, K) and ``choice``
    (W,) or None (then drawn by the sampler).
    """

    n_variants: int | None = None
    choice: npt.NDArray[np.int32] | None = None
    n_sources: int
    n_targets: int
    ptr: npt.NDArray[np.int32]
    src: npt.NDArray[np.int32]
    costs: FloatArray | None
    dense_index: IntArray | None

    def __init__(self, costs: Any = None, mask: Any = None, shape: tuple[int, int] | None = None):
        self._from_pairs(costs, mask, shape)

    # -- constructors ----------------------------------------------------------------------
    @classmethod
    def slots(cls, ptr: Any, src: Any, costs: Any = None, n_sources: int | None = None) -> Transitions:
        """The engine's native form: for target t, slots ``ptr[t]..ptr[t+1]-1`` with ``src``/``costs``."""
        self = cls.__new__(cls)
        starts = _array(ptr, "slots: ptr")
        if starts.ndim != 1 or starts.size < 2 or starts.dtype.kind not in "iu":
            raise ModelError("slots: ptr must be a 1-D integer array of length n_targets + 1 >= 2")
        if starts[0] != 0 or np.any(np.diff(starts) < 0):
            raise ModelError("slots: ptr must start at 0 and be non-decreasing")
        n_slots = int(starts[-1])
        sources = _as_int_array(src, "slots: src")
        if sources.ndim not in (1, 2) or sources.shape[-1] != n_slots:
            raise ModelError(f"slots: src must have shape (K,) or (W, K) with K = ptr[-1] = {n_slots}, "
                             f"got {sources.shape}")
        if sources.size and sources.min() < 0:
            raise ModelError("slots: src has a negative state index")
        inferred = int(sources.max()) + 1 if sources.size else 1
        if n_sources is None:
            n_sources = inferred
        elif not _is_int(n_sources) or n_sources < 1:
            raise ModelError(f"slots: n_sources must be a positive integer, got {n_sources!r}")
        if n_sources < inferred:
            raise ModelError(f"slots: src refers to state {inferred - 1} but the layer has only {n_sources} sources")
        self.n_sources, self.n_targets = int(n_sources), int(starts.size - 1)
        self.ptr, self.src, self.dense_index = starts.astype(np.int32), sources.astype(np.int32), None
        self.costs = None if costs is None else _check_costs(costs, (n_slots,), "slots: costs")
        return self

    @classmethod
    def variants(cls, ptr: Any, src: Any, costs: Any, choice: Any = None, n_sources: int | None = None) -> Transitions:
        """D versions of a slot layer: ``src`` (K,) or (D, K), ``costs`` (D, K); scenario w uses
        version ``choice[w]`` (``choice`` may be left to the sampler)."""
        table = float_array(costs, "variants: costs")
        if table.ndim != 2:
            raise ModelError(f"variants: costs must be a (D, K) table, got shape {table.shape}")
        sources = _as_int_array(src, "variants: src")
        if sources.ndim == 1:
            sources = np.broadcast_to(sources, (table.shape[0], sources.size))
        self = cls.slots(ptr, sources, table, n_sources=n_sources)
        if self.src.shape != table.shape:       # self.costs has table's shape
            raise ModelError(f"variants: src {self.src.shape} and costs {table.shape} tables differ in shape")
        self.n_variants = int(table.shape[0])
        if choice is not None:
            self.choice = self.check_choice(choice, "variants: choice")
        return self

    def check_choice(self, choice: Any, what: str) -> npt.NDArray[np.int32]:
        picks = _as_int_array(choice, what)
        n = self.n_variants if self.n_variants is not None else 0
        if picks.ndim != 1 or (picks.size and (picks.min() < 0 or picks.max() >= n)):
            raise ModelError(f"{what} must be a 1-D array of variant indices in 0..{n - 1}")
        return picks.astype(np.int32)

    @property
    def per_scenario(self) -> bool:
        """Per-scenario sources or costs (not counting variant layers)."""
        return self.n_variants is None and (self.src.ndim == 2 or (self.costs is not None and self.costs.ndim == 2))

    def _from_pairs(self, costs: Any, mask: Any, shape: Any) -> None:
        if mask is None and costs is None:
            raise ModelError("Transitions needs costs, a mask, or both")
        dense_costs = None if costs is None else _check_finite_or_inf(float_array(costs, "costs"), "costs")
        if shape is not None and not (isinstance(shape, (tuple, list)) and len(shape) == 2
                                      and all(_is_int(x) for x in shape)):
            raise ModelError(f"shape must be a pair of integers (S_l, S_l+1), got {shape!r}")
        if mask is not None and sp.issparse(mask):
            allowed = sp.csr_matrix(mask, dtype=bool)
            allowed.sum_duplicates()
            allowed.sort_indices()
            allowed.eliminate_zeros()
            n_s, n_t = allowed.shape
            rows = np.repeat(np.arange(n_s), np.diff(allowed.indptr))
            pairs_rowmajor = rows * n_t + allowed.indices
        else:
            if mask is not None:
                mask = _array(mask, "mask")
                if mask.dtype != bool or mask.ndim != 2:
                    raise ModelError("mask must be a 2-D boolean array or a scipy sparse matrix, "
                                     f"got {mask.dtype} {mask.shape}")
                n_s, n_t = mask.shape
            elif dense_costs is not None and dense_costs.ndim in (2, 3):
                n_s, n_t = dense_costs.shape[-2:]
            else:
                raise ModelError(f"costs must have shape (S_l, S_l+1) or (W, S_l, S_l+1), got {np.shape(costs)}")
            allowed_dense = np.ones((n_s, n_t), bool) if mask is None else mask
            if dense_costs is not None and dense_costs.shape[-2:] == (n_s, n_t):
                # +inf entries (in every scenario) are not transitions at all
                finite = np.isfinite(dense_costs) if dense_costs.ndim == 2 else np.isfinite(dense_costs).any(axis=0)
                allowed_dense = allowed_dense & finite
            pairs_rowmajor = np.flatnonzero(allowed_dense)
        if n_s < 1 or n_t < 1:
            raise ModelError(f"a layer needs at least one source and one target state, got {n_s} x {n_t}")
        if shape is not None and (n_s, n_t) != tuple(shape):
            raise ModelError(f"transitions are {n_s} x {n_t} but the layers have {shape[0]} x {shape[1]} states")
        src_rm, tgt_rm = pairs_rowmajor // n_t, pairs_rowmajor % n_t
        order = np.lexsort((src_rm, tgt_rm))           # group by target, sources ascending
        self.n_sources, self.n_targets = int(n_s), int(n_t)
        self.ptr = np.zeros(n_t + 1, np.int32)
        np.cumsum(np.bincount(tgt_rm, minlength=n_t), out=self.ptr[1:])
        self.src = src_rm[order].astype(np.int32)
        self.dense_index = pairs_rowmajor[order]
        self.costs = None
        if dense_costs is None:
            return
        if dense_costs.ndim in (2, 3) and dense_costs.shape[-2:] == (n_s, n_t):
            flat = dense_costs.reshape(dense_costs.shape[:-2] + (n_s * n_t,))
            self.costs = _check_costs(flat[..., self.dense_index], (self.n_slots,), "costs")
        elif dense_costs.ndim in (1, 2) and dense_costs.shape[-1] == pairs_rowmajor.size and mask is not None:
            self.costs = _check_costs(dense_costs[..., order], (self.n_slots,), "costs")
        else:
            raise ModelError(f"costs of shape {dense_costs.shape} fit neither the dense layer {(n_s, n_t)} "
                             f"nor its {pairs_rowmajor.size} allowed pairs")

    # -- properties ---------------------------------------------------------------------------
    @property
    def n_slots(self) -> int:
        return int(self.ptr[-1])

    @property
    def in_degree(self) -> int:
        return int(np.diff(self.ptr).max()) if self.n_targets else 0

    def sampled(self, drawn: Any, count: int, where: str) -> tuple[str, Any]:
        """One layer of a sampler's output as ("fixed", None), ("choice", (count,) ints) or
        ("scenario", (src (count, K) or None, costs (count, K)))."""
        if drawn is None:
            if self.costs is None or self.per_scenario or (self.n_variants is not None and self.choice is None):
                raise ModelError(f"{where}: the sampler returned None for a layer without fixed data")
            return "fixed", None
        if self.n_variants is not None:
            return "choice", self.check_choice(drawn, f"{where} choice")
        if self.costs is not None:
            raise ModelError(f"{where}: the layer has fixed costs; the sampler must return None for it")
        return "scenario", self._sampled_arrays(drawn, count, where)

    def _sampled_arrays(self, drawn: Any, count: int, where: str) -> tuple[IntArray | None, FloatArray]:
        src: IntArray | None = None
        if isinstance(drawn, tuple):
            if self.dense_index is not None:
                raise ModelError(f"{where}: per-scenario sources need a slot layer (Transitions.slots)")
            given, drawn = drawn
            src = _as_int_array(given, f"{where} src")
            if src.shape != (count, self.n_slots):
                raise ModelError(f"{where}: sampled src must have shape {(count, self.n_slots)}, got {src.shape}")
            if src.size and (src.min() < 0 or src.max() >= self.n_sources):
                raise ModelError(f"{where}: sampled src outside 0..{self.n_sources - 1}")
        costs = float_array(drawn, f"{where} costs")
        if self.dense_index is not None and costs.shape == (count, self.n_sources, self.n_targets):
            costs = costs.reshape(count, -1)[:, self.dense_index]
        if costs.shape != (count, self.n_slots):
            raise ModelError(f"{where}: sampled costs must have shape {(count, self.n_slots)}"
                             + ("" if self.dense_index is None else f" or {(count, self.n_sources, self.n_targets)}")
                             + f", got {costs.shape}")
        low = costs.min(initial=0.0)                # one pass: NaN propagates, -inf shows
        if np.isnan(low) or np.isneginf(low):
            raise ModelError(f"{where}: sampled costs contain NaN or -inf")
        return src, costs


class LayeredDP(FamilyModel):
    """A batched min-plus DP over a layered DAG (family ``"dp"``); see the module docstring.

    ``states``: the number of states of each layer 0..L (L >= 1). ``transitions``: L layer
    specs. ``initial``: V_0 as a scalar, ``(S_0,)`` or ``(W, S_0)`` (+inf = not a start).
    ``scenarios``: W (inferred from per-scenario arrays when omitted). ``sampler``: draws
    scenario costs in blocks (then ``scenarios`` is required). ``final``: ``"per_scenario"``
    or ``"shared"``. ``dtype``: float64 (default) or float32 for the kernels.
    """

    family = "dp"

    def __init__(self, states: Sequence[int], transitions: Sequence[Any], initial: Any = 0.0,
                 scenarios: int | None = None, sampler: Callable[..., Any] | None = None,
                 final: str = "per_scenario", dtype: Any = np.float64, sample_block: int = 1024):
        sizes = _check_states(states)
        if isinstance(transitions, (str, bytes, Transitions)) or not hasattr(transitions, "__len__"):
            raise ModelError("transitions must be a list with one layer spec per layer, "
                             f"got {type(transitions).__name__}")
        if len(transitions) != len(sizes) - 1:
            raise ModelError(f"{len(sizes)} layers of states need {len(sizes) - 1} transition layers, "
                             f"got {len(transitions)}")
        self.states = sizes
        self.layers = [self._layer(i, t, sizes) for i, t in enumerate(transitions)]
        try:
            with warnings.catch_warnings():                  # e.g. NumPy's deprecated aliases: refused below
                warnings.simplefilter("ignore", DeprecationWarning)
                self.dtype = np.dtype(dtype)
        except TypeError:
            raise ModelError(f"dtype must be float64 or float32, got {dtype!r}") from None
        if self.dtype not in MAX_ABS_COST:
            raise ModelError(f"dtype must be float64 or float32, got {self.dtype}")
        if not isinstance(final, str) or final not in ("per_scenario", "shared"):
            raise ModelError(f"final must be 'per_scenario' or 'shared', got {final!r}")
        self.final = final
        if sampler is not None and not callable(sampler):
            raise ModelError("sampler must be a callable sampler(rng, count) -> list of per-layer costs")
        self.sampler = sampler
        if not (isinstance(sample_block, (int, np.integer)) and sample_block >= 1):
            raise ModelError(f"sample_block must be a positive integer, got {sample_block!r}")
        self.sample_block = int(sample_block)
        self.initial = _check_initial(initial, sizes[0])
        self.scenarios = self._scenario_count(scenarios)
        limit = MAX_ABS_COST[self.dtype]
        for i, layer in enumerate(self.layers):
            if sampler is None and (layer.costs is None or (layer.n_variants is not None and layer.choice is None)):
                raise ModelError(f"layer {i} has no costs (or no variant choice) and there is no sampler")
        # largest finite cost per layer (None: drawn by the sampler) and initial value: the engine
        # refuses a model whose path sums could reach the sentinel (checked again on sampled chunks)
        self.layer_highs = [None if layer.costs is None else finite_max(layer.costs) for layer in self.layers]
        for i, (layer, high) in enumerate(zip(self.layers, self.layer_highs)):
            # costs hold no NaN or -inf (checked), so their minimum is finite
            if layer.costs is not None and (layer.costs.min(initial=0.0) < -limit or (high or 0.0) > limit):
                raise ModelError(f"layer {i}: finite costs must have magnitude <= {limit:g} for {self.dtype}")
        self.initial_high = finite_max(distinct_entries(self.initial))
        check_path_sums(self.initial_high, self.layer_highs, self.dtype)

    @staticmethod
    def _layer(index: int, spec: Any, states: Sequence[int]) -> Transitions:
        n_sources, n_targets = states[index], states[index + 1]
        layer = spec if isinstance(spec, Transitions) else Transitions(spec, shape=(n_sources, n_targets))
        # slot layers only know the largest source they use; dense and masked layers know both sizes
        sources_ok = layer.n_sources <= n_sources if layer.dense_index is None else layer.n_sources == n_sources
        if not sources_ok or layer.n_targets != n_targets:
            raise ModelError(f"layer {index}: transitions are {layer.n_sources} x {layer.n_targets} "
                             f"but the layers have {n_sources} x {n_targets} states")
        layer.n_sources = n_sources
        return layer

    def _scenario_count(self, scenarios: Any) -> int:
        found = {a.shape[0] for layer in self.layers if layer.per_scenario
                 for a in (layer.src, layer.costs) if a is not None and a.ndim == 2}
        found |= {layer.choice.size for layer in self.layers if layer.choice is not None}
        if self.initial.ndim == 2:
            found.add(self.initial.shape[0])
        if len(found) > 1:
            raise ModelError(f"per-scenario arrays disagree on the number of scenarios: {sorted(found)}")
        if scenarios is None:
            if self.sampler is not None:
                raise ModelError("a sampler needs the number of scenarios (scenarios=W)")
            return found.pop() if found else 1
        if not (isinstance(scenarios, (int, np.integer)) and scenarios >= 1):
            raise ModelError(f"scenarios must be a positive integer, got {scenarios!r}")
        if found and found != {int(scenarios)}:
            raise ModelError(f"scenarios={scenarios} but per-scenario arrays have {found.pop()} scenarios")
        return int(scenarios)

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    @property
    def n_transitions(self) -> int:
        """Allowed (source, target) slots summed over layers (per scenario)."""
        return sum(layer.n_slots for layer in self.layers)


def _check_states(states: Any) -> list[int]:
    values: list[Any] | None
    try:
        values = list(states)
    except TypeError:
        values = None
    if values is None or not all(_is_int(s) or (isinstance(s, (float, np.floating)) and float(s).is_integer())
                                 for s in values):
        raise ModelError(f"states must be a sequence of integers (one per layer), got {states!r}")
    sizes = [int(s) for s in values]
    if len(sizes) < 2:
        raise ModelError("a layered DP needs at least two layers of states (states=[S_0, S_1, ...])")
    if min(sizes) < 1:
        raise ModelError(f"every layer needs at least one state, got {sizes}")
    return sizes


def _is_int(v: object) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _array(value: Any, what: str) -> npt.NDArray[Any]:
    """np.asarray, with ragged input a ModelError."""
    try:
        return np.asarray(value)
    except (TypeError, ValueError, OverflowError):
        raise ModelError(f"{what} must be a (rectangular) array, got {type(value).__name__}") from None


def _as_int_array(value: Any, what: str) -> IntArray:
    a = _array(value, what)
    if a.ndim == 0:
        raise ModelError(f"{what} must be an array of integer state indices, got the scalar {a.item()!r}")
    if a.dtype.kind not in "iuf":
        raise ModelError(f"{what} must hold integer state indices, got dtype {a.dtype}")
    if a.dtype.kind not in "iu":
        if a.dtype.kind == "f" and np.all(np.isfinite(a)) and np.all(a == np.round(a)):
            return a.astype(np.int64)
        raise ModelError(f"{what} must hold integer state indices, got dtype {a.dtype}")
    return a


def _check_finite_or_inf(costs: FloatArray, what: str) -> FloatArray:
    low = costs.min(initial=0.0)                            # one pass: NaN propagates, -inf shows
    if np.isnan(low):
        raise ModelError(f"{what} contain NaN")
    if np.isneginf(low):
        raise ModelError(f"{what} contain -inf (only +inf, meaning 'not allowed', is accepted)")
    return costs


def _check_costs(costs: Any, tail: tuple[int, ...], what: str) -> FloatArray:
    arr = float_array(costs, what)
    if arr.shape[-len(tail):] != tail or arr.ndim not in (len(tail), len(tail) + 1):
        raise ModelError(f"{what} must have shape {tail} or (W, {', '.join(map(str, tail))}), got {arr.shape}")
    return _check_finite_or_inf(arr, what)


def distinct_entries(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``a`` without the repeats of its broadcast axes (stride 0): the same checks and extremes,
    in the time of its own data (a (W, S) view of W numbers is checked in O(W), not O(W S))."""
    return a[tuple(0 if stride == 0 and n > 1 else slice(None) for stride, n in zip(a.strides, a.shape))]


def _check_initial(initial: Any, n0: int) -> FloatArray:
    v = float_array(initial, "initial values")
    if v.ndim == 0:
        v = np.full(n0, float(v))
    if v.shape[-1] != n0 or v.ndim > 2:
        raise ModelError(f"initial values must be a scalar, ({n0},) or (W, {n0}), got {v.shape}")
    u = distinct_entries(v)
    if np.isnan(u).any() or np.isneginf(u).any():
        raise ModelError("initial values contain NaN or -inf")
    return v
