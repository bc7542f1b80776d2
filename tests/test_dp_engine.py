"""The min-plus DP engine: NumPy reference vs brute force; every kernel (one backend fixture over
numpy / numba / cuda) vs the reference; back-tracked paths, chunking, seeding, shared final
decisions, statuses, stops, the sentinel and bad input."""
from __future__ import annotations

import itertools
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import scipy.sparse as sp
from helpers import DP_SCHEDULES, dp_forward
from hypothesis import given, settings
from hypothesis import strategies as st

from solvopt.core.chunks import Z95, ScenarioStats
from solvopt.core.errors import ModelError
from solvopt.core.interrupt import request_stop
from solvopt.core.registry import Availability, get_solver
from solvopt.core.result import Result, SolutionStatus, Termination
from solvopt.dp.aggregate import chunk_stats
from solvopt.dp.compiled import CompiledDP
from solvopt.dsl import LayeredDP, Transitions

SETTINGS = settings(max_examples=40, deadline=None)


# --- one backend fixture: the same test body on numpy, numba and cuda (cuda only with a device) -----
class KernelBackend:
    """A kernel backend as the tests use it: its solver method, schedules and a host-array kernel call."""

    def __init__(self, name: str):
        self.name = self.method = name
        self.schedules = DP_SCHEDULES[name]

    def run(self, compiled: CompiledDP, track: bool = True, schedule=None, tensors=None):
        """(out (Smax, n), slots) on the host for one chunk (default: all scenarios)."""
        return dp_forward(self.name, compiled, track=track, schedule=schedule, tensors=tensors)


@pytest.fixture(scope="module")
def kernels(backend) -> KernelBackend:
    """The backend fixture of tests/conftest.py as this file's tests use it."""
    return KernelBackend(backend)


# --- random layered DAGs -----------------------------------------------------------------------
def random_model(seed: int, max_layers=4, max_states=5, max_w=6, dtype=np.float64, final="per_scenario"):
    """A random LayeredDP mixing dense, masked, sparse and slot layers, shared and per-scenario."""
    rng = np.random.default_rng(seed)
    n_layers = int(rng.integers(1, max_layers + 1))
    states = [int(x) for x in rng.integers(1, max_states + 1, n_layers + 1)]
    W = int(rng.integers(1, max_w + 1))
    integer_costs = rng.random() < 0.5            # ties on purpose
    draw = (lambda *shape: rng.integers(-3, 6, shape).astype(float)) if integer_costs else \
        (lambda *shape: rng.normal(size=shape))
    layers = []
    for l in range(n_layers):
        S, T = states[l], states[l + 1]
        kind = rng.choice(["dense", "mask", "sparse", "slots", "slots_scenario_src", "variants", "empty"],
                          p=[0.15, 0.15, 0.15, 0.15, 0.15, 0.15, 0.1])
        per_scenario = rng.random() < 0.5
        shape = (W, S, T) if per_scenario else (S, T)
        if kind == "dense":
            c = draw(*shape)
            c[rng.random(shape) < 0.3] = np.inf
            layers.append(c)
        elif kind in ("mask", "empty"):
            mask = rng.random((S, T)) < (0.6 if kind == "mask" else 0.0)
            layers.append(Transitions(draw(*shape), mask=mask) if mask.any() or kind == "mask"
                          else Transitions(np.full((S, T), np.inf)))
        elif kind == "sparse":
            mask = sp.random(S, T, density=0.5, random_state=int(rng.integers(1 << 30)), format="csr")
            nnz = mask.nnz
            layers.append(Transitions(draw(*((W, nnz) if per_scenario else (nnz,))), mask=mask))
        elif kind == "variants":
            degree = rng.integers(0, 4, T)
            ptr = np.concatenate([[0], np.cumsum(degree)])
            D, K = int(rng.integers(1, 4)), int(ptr[-1])
            table_src = rng.integers(0, S, (D, K))
            table_cost = draw(D, K)
            table_cost[rng.random((D, K)) < 0.2] = np.inf
            layers.append(Transitions.variants(ptr, table_src, table_cost, rng.integers(0, D, W), n_sources=S))
        else:
            degree = rng.integers(0, 4, T)
            ptr = np.concatenate([[0], np.cumsum(degree)])
            K = int(ptr[-1])
            src_shape = (W, K) if kind == "slots_scenario_src" else (K,)
            src = rng.integers(0, S, src_shape)
            cost = draw(*((W, K) if per_scenario else (K,)))
            layers.append(Transitions.slots(ptr, src, cost, n_sources=S))
    initial = draw(W, states[0]) if rng.random() < 0.3 else 0.0
    if np.ndim(initial) and rng.random() < 0.5:
        initial[:, 0] = np.inf
    return LayeredDP(states, layers, initial=initial, scenarios=W, dtype=dtype, final=final)


def brute_force(model: LayeredDP) -> np.ndarray:
    """Final values V_L (S_L, W) by enumerating every state sequence (multi-edges: cheapest slot)."""
    W = model.scenarios
    init = np.broadcast_to(model.initial, (W, model.states[0])) if model.initial.ndim == 1 else model.initial
    edge = []  # per layer: (W, S_l, S_l+1) cheapest slot cost, inf if none
    for layer, S, T in zip(model.layers, model.states, model.states[1:]):
        best = np.full((W, S, T), np.inf)
        if layer.n_variants is not None:
            src, cost = layer.src[layer.choice], layer.costs[layer.choice]
        else:
            src = np.broadcast_to(layer.src, (W, layer.n_slots))
            cost = np.broadcast_to(layer.costs, (W, layer.n_slots))
        for t in range(T):
            for k in range(layer.ptr[t], layer.ptr[t + 1]):
                for w in range(W):
                    best[w, src[w, k], t] = min(best[w, src[w, k], t], cost[w, k])
        edge.append(best)
    final = np.full((model.states[-1], W), np.inf)
    for path in itertools.product(*[range(s) for s in model.states]):
        total = init[:, path[0]].copy()
        for l, e in enumerate(edge):
            total = total + e[:, path[l], path[l + 1]]
        final[path[-1]] = np.minimum(final[path[-1]], total)
    return final


def as_inf(values, compiled):
    v = np.asarray(values, dtype=float)
    return np.where(v >= compiled.sentinel / 2, np.inf, v)


# --- the reference against brute force ------------------------------------------------------------
@SETTINGS
@given(st.integers(0, 2**31 - 1))
def test_numpy_reference_matches_brute_force(seed):
    model = random_model(seed)
    compiled = CompiledDP(model)
    out, _ = KernelBackend("numpy").run(compiled)
    got = as_inf(out[: model.states[-1]], compiled)
    np.testing.assert_allclose(got, brute_force(model), rtol=1e-12, atol=1e-12)


# --- every kernel against the reference (one backend fixture) --------------------------------------------
@SETTINGS
@given(st.integers(0, 2**31 - 1), st.sampled_from([np.float64, np.float32]))
def test_kernel_equals_numpy_reference(kernels, seed, dtype):
    compiled = CompiledDP(random_model(seed, max_w=300 if kernels.name == "cuda" else 6, dtype=dtype))
    ref_out, ref_slots = KernelBackend("numpy").run(compiled)
    for schedule in kernels.schedules:
        out, slots = kernels.run(compiled, schedule=schedule)
        np.testing.assert_array_equal(out, ref_out)            # same additions, same min: bit-identical
        np.testing.assert_array_equal(slots, ref_slots)        # ties go to the lowest slot everywhere
        out, _ = kernels.run(compiled, track=False, schedule=schedule)
        np.testing.assert_array_equal(out, ref_out)            # tracking does not change the values


def test_many_scenarios_several_blocks_and_unreached_targets(kernels):
    rng = np.random.default_rng(3)
    W, states = 700, [4, 6, 5, 3]                           # 700: not a multiple of any block size
    layers = [rng.normal(size=(W, a, b)) for a, b in zip(states, states[1:])]
    layers[1][:, :, 2] = np.inf                             # a target nobody reaches
    compiled = CompiledDP(LayeredDP(states, layers))
    ref_out, ref_slots = KernelBackend("numpy").run(compiled)
    assert np.all(ref_out[:3] < compiled.sentinel)          # every final state reachable around it
    for schedule in kernels.schedules:
        out, slots = kernels.run(compiled, schedule=schedule)
        np.testing.assert_array_equal(out, ref_out)
        np.testing.assert_array_equal(slots, ref_slots)


def test_float32_solves_agree_with_float64(kernels):
    m64 = random_model(11, max_w=40)
    m32 = LayeredDP(m64.states, m64.layers, initial=m64.initial, scenarios=m64.scenarios, dtype=np.float32)
    c32 = CompiledDP(m32)
    assert c32.sentinel == 1e30 and c32.dtype == np.float32
    r64, r32 = m64.solve("numpy"), m32.solve(kernels.method)
    np.testing.assert_allclose(r32.solution["scenario_values"], r64.solution["scenario_values"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("sampled", [False, True])
def test_results_independent_of_chunk_size_and_equal_across_backends(kernels, sampled):
    """Scenario values, paths and decisions are bit-identical for every chunk size and backend;
    merged means agree to rounding (the merge order of floating sums changes with the chunking)."""
    model = _sampled_model(W=300, block=16) if sampled else random_model(21, max_w=30)
    reference = model.solve("numpy", seed=3, paths=7)
    sizes = (16, 48, 112) if sampled else (1, 4, 7)
    for chunk in sizes + (None,):
        r = model.solve(kernels.method, seed=3, chunk=chunk, paths=7)
        np.testing.assert_array_equal(r.solution["scenario_values"], reference.solution["scenario_values"])
        np.testing.assert_array_equal(r.solution["paths"], reference.solution["paths"])
        np.testing.assert_array_equal(r.solution["path_slots"], reference.solution["path_slots"])
        assert r.termination == reference.termination and r.message == reference.message
        assert r.solution["feasible_scenarios"] == reference.solution["feasible_scenarios"]
        if "mean" in reference.solution:
            assert r.solution["mean"] == pytest.approx(reference.solution["mean"], rel=1e-12)
            assert r.solution["variance"] == pytest.approx(reference.solution["variance"], rel=1e-9)
        if chunk is not None:
            assert r.stats["chunks"] == -(-model.scenarios // chunk)


# --- results, paths, edge cases ---------------------------------------------------------------------
def path_cost(model: LayeredDP, compiled: CompiledDP, scenario: int, states, slots) -> float:
    t = compiled.chunk(0, model.scenarios)
    init = t.initial[:, scenario] if t.initial.shape[1] > 1 else t.initial[:, 0]
    total = float(init[states[0]])
    def column(a, l):
        if t.choice.size:
            return t.choice[l, scenario]
        return scenario if a.shape[-1] > 1 else 0
    for l, k in enumerate(slots):
        assert t.src[l, k, column(t.src, l)] == states[l]   # the slot leaves from the previous state
        assert compiled.ptr[l, states[l + 1]] <= k < compiled.ptr[l, states[l + 1] + 1]  # ... into the next
        total += float(t.cost[l, k, column(t.cost, l)])
    return total


@SETTINGS
@given(st.integers(0, 2**31 - 1))
def test_backtracked_paths_have_the_reported_cost(kernels, seed):
    model = random_model(seed)
    result = model.solve(kernels.method, paths=list(range(model.scenarios)))
    compiled = CompiledDP(model)
    values = result.solution["scenario_values"]
    np.testing.assert_allclose(values, brute_force(model).min(axis=0), rtol=1e-12, atol=1e-12)
    for w, states, slots in zip(result.solution["path_scenarios"], result.solution["paths"],
                                result.solution["path_slots"]):
        if np.isfinite(values[w]):
            assert np.all(states >= 0)
            assert path_cost(model, compiled, w, states, slots) == pytest.approx(values[w], abs=1e-9)
        else:
            assert np.all(states == -1)
    if np.isfinite(values).all():           # scenarios given in the model: exact, bound = objective
        assert result.termination is Termination.OPTIMAL and result.objective == pytest.approx(values.mean())
        assert result.bound == result.objective and result.gap == 0.0
    else:
        assert result.termination is Termination.INFEASIBLE and result.objective == np.inf


def test_one_state_one_layer():
    r = LayeredDP([1, 1], [np.array([[2.5]])], initial=1.0).solve("numba")
    assert r.objective == 3.5 and r.solution["paths"].tolist() == [[0, 0]]
    assert r.solution["values"].shape == (1, 1)


def test_fully_masked_layer_is_infeasible():
    model = LayeredDP([2, 3, 2], [np.ones((2, 3)), Transitions(np.ones((3, 2)), mask=np.zeros((3, 2), bool))])
    for method in ("numpy", "numba"):
        r = model.solve(method)
        assert r.termination is Termination.INFEASIBLE and not r.ok
        assert np.all(np.isinf(r.solution["values"]))
        assert "1 of 1 scenarios" in r.message
        Result.from_json(r.to_json())                       # infinities survive JSON


def test_unreachable_states_report_inf_but_others_solve():
    costs = np.array([[1.0, np.inf, 4.0], [2.0, np.inf, np.inf]])
    r = LayeredDP([2, 3], [costs], initial=[0.0, -1.5]).solve("numba")
    assert r.solution["values"][:, 0].tolist() == [0.5, np.inf, 4.0]
    assert r.objective == 0.5 and r.solution["paths"].tolist() == [[1, 0]]


def test_sentinel_sums_never_overflow_over_many_layers():
    # 400 layers whose only transition out of state 1 is forbidden: 400 x 1e300 would overflow
    L = 400
    layer = np.array([[1.0, np.inf], [np.inf, np.inf]])
    r = LayeredDP([2] * (L + 1), [layer] * L).solve("numba")
    assert r.objective == L and np.isinf(r.solution["values"][1, 0])


def test_shared_final_decision_picks_lowest_mean():
    rng = np.random.default_rng(5)
    model = random_model(7, max_w=6)
    W = 6
    costs = rng.normal(size=(W, 3, 4))
    model = LayeredDP([3, 4], [costs], final="shared")
    r = model.solve("numba")
    means = costs.min(axis=1).mean(axis=0)                  # per final state, mean over scenarios
    assert r.solution["final_state"] == int(np.argmin(means))
    assert r.objective == pytest.approx(means.min())
    assert np.all(r.solution["paths"][:, -1] == r.solution["final_state"])


def test_aggregates():
    values = np.arange(1.0, 11.0)
    r = LayeredDP([1, 1], [values.reshape(10, 1, 1)]).solve("numpy", quantiles=[0.5])
    s = r.solution
    assert s["mean"] == 5.5 and s["variance"] == pytest.approx(np.var(values, ddof=1))
    assert s["std_error"] == pytest.approx(np.std(values, ddof=1) / np.sqrt(10))
    assert s["ci95"][0] < 5.5 < s["ci95"][1] and s["quantiles"] == {0.5: 5.5}


def test_chunk_stats_merge_to_the_core_statistics_of_one_pass():
    """The engine's device reduction gives the core's ScenarioStats: merged over chunks it equals
    ScenarioStats.of on all values (sentinel = infinite), with the same stride sample."""
    rng = np.random.default_rng(12)
    values = rng.normal(5.0, 2.0, size=(3, 1000))
    values[1, ::97] = 1e300                                 # unreachable entries of row 1 (sentinel)
    stride = ScenarioStats.stride_for(1000, 100)
    merged = None
    for start in range(0, 1000, 64):
        part = chunk_stats(values[:, start:start + 64], start, stride, 0.5e300)
        merged = part if merged is None else merged.merge(part)
    whole = ScenarioStats.of(np.where(values >= 0.5e300, np.inf, values), 0, stride)
    for row in (0, 1, 2):
        a, b = merged.summary(row, [0.5]), whole.summary(row, [0.5])
        assert a["feasible_scenarios"] == b["feasible_scenarios"] and a["quantiles"] == b["quantiles"]
        assert a["mean"] == pytest.approx(b["mean"], rel=1e-12)
        assert a["variance"] == pytest.approx(b["variance"], rel=1e-10)
        assert a["ci95"][1] - a["mean"] == pytest.approx(Z95 * a["std_error"])
    assert merged.infinite.tolist() == [0, 11, 0] and stride == 10
    np.testing.assert_array_equal(merged.sample(0), values[0, ::10])
    assert np.isinf(merged.row_means()[1]) and merged.summary(0, [0.5])["quantile_sample"] == 100


def test_large_batches_return_aggregates_only():
    for seed in (31, 34):                                   # infeasible, feasible
        model = random_model(seed, max_w=40)
        full = model.solve("numpy")
        small = model.solve("numba", keep_values=0, chunk=3)
        assert "values" not in small.solution and "scenario_values" not in small.solution
        assert small.termination == full.termination and small.message == full.message
        for key in ("mean", "variance", "feasible_scenarios", "quantiles"):
            assert (key in small.solution) == (key in full.solution)
            if key in full.solution and key != "quantiles":
                assert small.solution[key] == pytest.approx(full.solution[key], rel=1e-12)
        assert ("mean" in full.solution) == (seed == 34)


# --- chunking and seeding ----------------------------------------------------------------------------
def _sampled_model(W=40, block=8):
    structure = [Transitions(mask=np.ones((3, 4), bool)), Transitions.slots([0, 2, 3], [0, 3, 1], n_sources=4)]

    def sampler(rng, count):
        d = rng.poisson(2.0, count)
        src = np.stack([np.minimum(3, d), np.zeros(count, int), np.ones(count, int)], axis=1)
        return [rng.normal(size=(count, 3, 4)), (src, rng.exponential(size=(count, 3)))]
    return LayeredDP([3, 4, 2], structure, scenarios=W, sampler=sampler, sample_block=block)


def test_same_seed_same_result_other_seed_other_sample():
    model = _sampled_model()
    a, b, c = (model.solve("numba", seed=s) for s in (1, 1, 2))
    np.testing.assert_array_equal(a.solution["scenario_values"], b.solution["scenario_values"])
    assert a.objective == b.objective and a.objective != c.objective


def test_time_limit_returns_the_scenarios_done():
    structure = [Transitions(mask=np.ones((2, 2), bool))]

    def slow_sampler(rng, count):
        time.sleep(0.05)
        return [rng.random((count, 2, 2))]
    model = LayeredDP([2, 2], structure, scenarios=64, sampler=slow_sampler, sample_block=8)
    r = model.solve("numpy", chunk=8, time_limit=0.01)
    assert r.termination is Termination.TIME_LIMIT and r.ok
    assert 8 <= r.stats["scenarios"] < 64 and r.stats["scenarios_total"] == 64 and r.bound is None
    assert f"first {r.stats['scenarios']} of 64 scenarios" in r.message
    assert r.solution["feasible_scenarios"] == r.stats["scenarios"] and "ci95" in r.solution


def test_ctrl_c_returns_what_has_merged():
    structure = [Transitions(mask=np.ones((2, 2), bool))]

    def slow_sampler(rng, count):
        time.sleep(0.05)
        return [rng.random((count, 2, 2))]
    model = LayeredDP([2, 2], structure, scenarios=800, sampler=slow_sampler, sample_block=8)
    timer = threading.Timer(0.3, request_stop)
    timer.start()
    try:
        r = model.solve("numba", chunk=8)
    finally:
        timer.cancel()
    assert r.termination is Termination.INTERRUPTED and r.solution_status is SolutionStatus.FEASIBLE
    done = r.stats["scenarios"]
    assert 8 <= done < 800 and done % 8 == 0 and r.bound is None
    assert r.message.startswith(f"interrupted: mean over the first {done} of 800 scenarios")
    # what merged is exactly a run over those scenarios alone (sampling blocks depend on their index only)
    alone = LayeredDP([2, 2], structure, scenarios=done, sampler=slow_sampler, sample_block=8).solve("numba", chunk=8)
    assert alone.termination is Termination.FEASIBLE_WITHIN_GAP
    assert r.objective == pytest.approx(alone.objective, rel=1e-12)
    np.testing.assert_array_equal(r.solution["scenario_values"], alone.solution["scenario_values"])


def test_sampled_result_is_an_estimate_with_its_interval_not_a_bound():
    model = _sampled_model(W=200, block=8)
    r = model.solve("numba", seed=5)
    assert r.termination is Termination.FEASIBLE_WITHIN_GAP and r.solution_status is SolutionStatus.FEASIBLE
    assert r.bound is None and r.gap is None and r.stats["sampled"]
    lo, hi = r.solution["ci95"]
    assert lo < r.objective < hi and hi - r.objective == pytest.approx(Z95 * r.solution["std_error"])
    assert "95% CI" in r.message and "no certified bound" in r.message
    given = LayeredDP([2, 2], [np.random.default_rng(1).normal(size=(50, 2, 2))])
    exact = given.solve("numba")
    assert exact.termination is Termination.OPTIMAL and exact.bound == exact.objective and "ci95" in exact.solution


# --- variant layers -------------------------------------------------------------------------------------
def _variant_layers(rng, W):
    ptr = np.arange(0, 9, 2)                                # 4 targets, 2 slots each
    tables = [(rng.integers(0, 4, (D, 8)), rng.normal(size=(D, 8))) for D in (5, 3)]
    tables[0][1][0, :3] = np.inf
    return ptr, tables


def test_variant_mode_equals_the_expanded_per_scenario_model():
    rng = np.random.default_rng(8)
    W = 300
    ptr, tables = _variant_layers(rng, W)
    choices = [rng.integers(0, t[0].shape[0], W) for t in tables]
    first = rng.normal(size=(3, 4))
    variant = LayeredDP([3, 4, 4, 4], [first] + [Transitions.variants(ptr, s, c, ch, n_sources=4)
                                                 for (s, c), ch in zip(tables, choices)])
    expanded = LayeredDP([3, 4, 4, 4], [first] + [Transitions.slots(ptr, s[ch], c[ch], n_sources=4)
                                                  for (s, c), ch in zip(tables, choices)])
    assert CompiledDP(variant).mode == "variant" and CompiledDP(expanded).mode == "scenario"
    ref = expanded.solve("numpy", paths=20)
    for method, extra in (("numpy", {}), ("numba", {"schedule": "blocks"}), ("numba", {"schedule": "targets"})):
        r = variant.solve(method, paths=20, **extra)
        np.testing.assert_array_equal(r.solution["scenario_values"], ref.solution["scenario_values"])
        np.testing.assert_array_equal(r.solution["paths"], ref.solution["paths"])
        np.testing.assert_array_equal(r.solution["path_slots"], ref.solution["path_slots"])
    mixed = LayeredDP([3, 4, 4, 4], [rng.normal(size=(W, 3, 4))] + variant.layers[1:])
    assert CompiledDP(mixed).mode == "scenario"            # variants expanded next to per-scenario costs
    np.testing.assert_allclose(mixed.solve("numba").solution["scenario_values"],
                               brute_force(mixed).min(axis=0), atol=1e-12)


def test_sampler_with_variant_choices_and_initial_values():
    rng = np.random.default_rng(9)
    ptr, tables = _variant_layers(rng, 0)
    drawn = []

    def sampler(rng, count):
        choices = [rng.integers(0, t[0].shape[0], count) for t in tables]
        offset = rng.exponential(size=count)
        drawn.append((choices, offset))
        return {"layers": [None] + choices, "initial": offset}
    first = rng.normal(size=(3, 4))
    structure = [first] + [Transitions.variants(ptr, s, c, n_sources=4) for s, c in tables]
    model = LayeredDP([3, 4, 4, 4], structure, scenarios=40, sampler=sampler, sample_block=16)
    r = model.solve("numba", seed=2, chunk=16)
    choices = [np.concatenate([d[0][i] for d in drawn]) for i in range(2)]
    offset = np.concatenate([d[1] for d in drawn])
    explicit = LayeredDP([3, 4, 4, 4], [first] + [Transitions.variants(ptr, s, c, ch, n_sources=4)
                                                  for (s, c), ch in zip(tables, choices)],
                         initial=np.repeat(offset[:, None], 3, axis=1))
    np.testing.assert_array_equal(r.solution["scenario_values"], explicit.solve("numpy").solution["scenario_values"])
    fixed_but_sampled = LayeredDP([3, 4], [first], scenarios=4, sample_block=4,
                                  sampler=lambda rng, n: [rng.normal(size=(n, 3, 4))])
    with pytest.raises(ModelError, match="fixed costs"):
        fixed_but_sampled.solve("numba")
    with pytest.raises(ModelError, match="variant indices"):
        Transitions.variants(ptr, *tables[0], choice=[0, 5])


# --- registry, options, bad input ----------------------------------------------------------------------
def test_threads_option_applies_to_the_call_only():
    import numba
    before = numba.get_num_threads()
    model = random_model(4, max_w=6)
    reference = model.solve("numpy")
    r = model.solve("numba", threads=1)
    np.testing.assert_array_equal(r.solution["scenario_values"], reference.solution["scenario_values"])
    assert numba.get_num_threads() == before


def test_registry_and_cuda_availability():
    from solvopt.core.backend import gpu_available
    assert get_solver("dp").name == ("cuda" if gpu_available() else "numba")   # device="auto": the registry's pick
    assert get_solver("dp", None, "cpu").name == "numba"
    cuda = get_solver("dp", "cuda")
    assert cuda.uses_cuda and not get_solver("dp", "numba").uses_cuda
    expected = Availability.AVAILABLE if gpu_available() else (Availability.NO_DEVICE, Availability.NOT_INSTALLED)
    assert cuda.available() in (expected if isinstance(expected, tuple) else (expected,))
    r = LayeredDP([1, 1], [np.ones((1, 1))]).solve(device="cpu")
    assert r.stats["backend"] == "numba"


@pytest.mark.parametrize("build, match", [
    (lambda: LayeredDP([2, 2], [np.array([[1.0, np.nan], [0, 0]])]), "NaN"),
    (lambda: LayeredDP([2, 2], [np.array([[1.0, -np.inf], [0, 0]])]), "-inf"),
    (lambda: LayeredDP([2, 2], [np.ones((2, 2), bool)]), "costs must be real numbers, got booleans"),
    (lambda: LayeredDP([2, 2], [np.ones((2, 2))], initial=[True, False]), "initial values must be real numbers"),
    (lambda: LayeredDP([2, -1], [np.ones((2, 1))]), "at least one state"),
    (lambda: LayeredDP([2], []), "at least two layers"),
    (lambda: LayeredDP([2, 3], [np.ones((2, 2))]), "layers have 2 x 3"),
    (lambda: LayeredDP([2, 3, 1], [np.ones((2, 3))]), "need 2 transition layers"),
    (lambda: LayeredDP([2, 2], [Transitions(np.ones((2, 2)), mask=np.ones((3, 2), bool))]), "fit neither"),
    (lambda: LayeredDP([2, 2], [Transitions(np.ones((2, 2)), mask=np.ones((2, 2)))]), "boolean"),
    (lambda: LayeredDP([2, 2], [np.ones((3, 2, 2)), np.ones((4, 2, 2))], scenarios=None), "need 1 transition"),
    (lambda: LayeredDP([2, 2, 2], [np.ones((3, 2, 2)), np.ones((4, 2, 2))]), "disagree"),
    (lambda: LayeredDP([2, 2], [np.ones((3, 2, 2))], scenarios=5), "scenarios=5"),
    (lambda: LayeredDP([2, 2], [Transitions.slots([0, 1, 2], [0, 2])]), "transitions are 3 x 2"),
    (lambda: LayeredDP([2, 2], [Transitions.slots([0, 1, 2], [0, -1])]), "negative"),
    (lambda: LayeredDP([2, 2], [Transitions.slots([0, 2, 1], [0, 1])]), "non-decreasing"),
    (lambda: LayeredDP([2, 2], [np.ones((2, 2))], initial=[0.0]), "initial"),
    (lambda: LayeredDP([2, 2], [np.ones((2, 2))], final="best"), "final"),
    (lambda: LayeredDP([2, 2], [np.full((2, 2), 1e31)], dtype=np.float32), "magnitude"),
    (lambda: LayeredDP([2, 2], [Transitions(mask=np.ones((2, 2), bool))]), "no costs"),
    (lambda: LayeredDP([2, 2], [Transitions(mask=np.ones((2, 2), bool))], sampler=lambda r, n: []), "scenarios"),
])
def test_bad_models_raise_model_error(build, match):
    with pytest.raises(ModelError, match=match):
        build()


def test_bad_options_and_bad_sampler_output():
    model = LayeredDP([2, 2], [np.ones((2, 2))])
    with pytest.raises(ModelError, match="unknown option"):
        model.solve("numpy", schedule="blocks")
    with pytest.raises(ModelError, match="chunk"):
        model.solve("numba", chunk=0)
    with pytest.raises(ModelError, match="paths"):
        model.solve("numba", paths=[5])
    with pytest.raises(ModelError, match="runs on the CPU"):
        model.solve("numba", device="gpu")
    with pytest.raises(ModelError, match="schedule"):
        model.solve("numba", schedule="fast")
    bad = LayeredDP([2, 2], [Transitions(mask=np.ones((2, 2), bool))], scenarios=4,
                    sampler=lambda rng, n: [np.ones((n, 3, 3))], sample_block=4)
    with pytest.raises(ModelError, match="sampled costs must have shape"):
        bad.solve("numba")
    nan = LayeredDP([2, 2], [Transitions(mask=np.ones((2, 2), bool))], scenarios=4,
                    sampler=lambda rng, n: [np.full((n, 2, 2), np.nan)], sample_block=4)
    with pytest.raises(ModelError, match="NaN"):
        nan.solve("numba")


def test_options_are_typed_and_honoured_options_declared():
    from solvopt.dp.solvers import DPCuda, DPNumba, DPNumpy
    assert DPNumpy.honours == {"device"} and DPNumba.honours == {"device", "threads"} and DPCuda.honours == {"device"}
    assert {o.name for o in DPNumba.options} == {"chunk", "paths", "quantiles", "keep_values", "schedule"}
    assert not hasattr(DPNumba, "extra_options")
    model = LayeredDP([2, 2], [np.ones((2, 2))])
    with pytest.raises(ModelError, match="'threads' does not apply to method dp/numpy; it applies to: numba"):
        model.solve("numpy", threads=1)
    for bad in (dict(chunk=2.5), dict(chunk=True), dict(paths=-1), dict(paths="x"), dict(quantiles=[1.5]),
                dict(quantiles=[0.5j]), dict(keep_values=-1)):
        with pytest.raises(ModelError, match=next(iter(bad))):
            model.solve("numba", **bad)
    r = model.solve("numba", paths=(0,), quantiles=0.5, chunk=1)
    assert r.options["paths"] == (0,) and r.options["quantiles"] == (0.5,) and r.options["schedule"] == "auto"


# --- the sentinel: float32 path sums must not be mistaken for masked paths ----------------------------------
def test_float32_path_sums_reaching_the_sentinel_are_refused():
    L = 60                                                   # 60 x 1e28 = 6e29 >= 5e29 = float32 sentinel / 2
    layers = [np.full((1, 1), 1e28)] * L
    with pytest.raises(ModelError, match=r"path sums can reach 6e\+29.*use dtype=float64"):
        LayeredDP([1] * (L + 1), layers, dtype=np.float32)
    r = LayeredDP([1] * (L + 1), layers).solve("numba")      # float64 holds the answer
    assert r.termination is Termination.OPTIMAL and r.objective == pytest.approx(6e29)
    # negative costs later do not hide a partial sum that already reached the threshold
    with pytest.raises(ModelError, match="path sums"):
        LayeredDP([1] * 62, layers + [np.full((1, 1), -1e28)], dtype=np.float32)
    ok = LayeredDP([1] * 41, [np.full((1, 1), 1e28)] * 40, dtype=np.float32).solve("numba")
    assert ok.objective == pytest.approx(4e29, rel=1e-6)
    # sampled costs: checked per chunk, when drawn
    sampled = LayeredDP([1] * (L + 1), [Transitions(mask=np.ones((1, 1), bool))] * L, scenarios=4, sample_block=4,
                        dtype=np.float32, sampler=lambda rng, n: [np.full((n, 1, 1), 1e28)] * L)
    with pytest.raises(ModelError, match="sampled scenarios 0..3: path sums"):
        sampled.solve("numba")


# --- bad input of every kind: a ModelError, never a raw ValueError / TypeError ----------------------------
BAD_VALUES = [5.0, 2.5, "a", None, [1j], 1j, np.array([object()]), [[1.0], [2.0, [3]]], -1, 1e20, float("nan"), True,
              [], {}, object(), np.full((2, 2), "a"), np.ones((2, 2)) * (1 + 1j),
              np.array([[1, 2], [3, 4]], dtype=object), 10**30, [2, 2.5]]
BUILDERS = {
    "states": lambda b: LayeredDP(b, [np.ones((2, 2))]),
    "transitions": lambda b: LayeredDP([2, 2], b),
    "layer": lambda b: LayeredDP([2, 2], [b]),
    "initial": lambda b: LayeredDP([2, 2], [np.ones((2, 2))], initial=b),
    "scenarios": lambda b: LayeredDP([2, 2], [np.ones((2, 2))], scenarios=b),
    "dtype": lambda b: LayeredDP([2, 2], [np.ones((2, 2))], dtype=b),
    "final": lambda b: LayeredDP([2, 2], [np.ones((2, 2))], final=b),
    "sample_block": lambda b: LayeredDP([2, 2], [np.ones((2, 2))], sample_block=b),
    "sampler": lambda b: LayeredDP([2, 2], [np.ones((2, 2))], sampler=b, scenarios=3),
    "mask": lambda b: Transitions(np.ones((2, 2)), mask=b),
    "costs": lambda b: Transitions(b, mask=np.ones((2, 2), bool)),
    "shape": lambda b: Transitions(np.ones((2, 2)), shape=b),
    "slots ptr": lambda b: Transitions.slots(b, [0, 1], [1.0, 2.0]),
    "slots src": lambda b: Transitions.slots([0, 1, 2], b, [1.0, 2.0]),
    "slots costs": lambda b: Transitions.slots([0, 1, 2], [0, 1], b),
    "slots n_sources": lambda b: Transitions.slots([0, 1, 2], [0, 1], [1.0, 2.0], n_sources=b),
    "variants src": lambda b: Transitions.variants([0, 1, 2], b, np.ones((2, 2))),
    "variants costs": lambda b: Transitions.variants([0, 1, 2], [0, 1], b),
    "variants choice": lambda b: Transitions.variants([0, 1, 2], [0, 1], np.ones((2, 2)), b),
    "sampler output": lambda b: LayeredDP([2, 2], [Transitions(mask=np.ones((2, 2), bool))], scenarios=2,
                                          sampler=lambda rng, n: b, sample_block=2).solve("numpy"),
    "sampled layer": lambda b: LayeredDP([2, 2], [Transitions(mask=np.ones((2, 2), bool))], scenarios=2,
                                         sampler=lambda rng, n: [b], sample_block=2).solve("numpy"),
    "sampled initial": lambda b: LayeredDP([2, 2], [np.ones((2, 2))], scenarios=2, sample_block=2,
                                           sampler=lambda rng, n: {"layers": [None], "initial": b}).solve("numpy"),
}


@pytest.mark.parametrize("where", sorted(BUILDERS))
def test_bad_values_anywhere_raise_model_error_only(where):
    import warnings
    for value in BAD_VALUES:
        with warnings.catch_warnings():
            warnings.simplefilter("error", np.exceptions.ComplexWarning)   # complex is refused, never cut
            try:
                BUILDERS[where](value)
            except ModelError:
                pass


# --- JIT: one kernel per run -------------------------------------------------------------------------------
def test_a_run_with_paths_compiles_one_numba_kernel_only():
    """The back-tracking re-run uses the schedule of the main pass, so the first run of a process
    compiles (or loads) one parallel kernel, not two."""
    code = ("import numpy as np\n"
            "from solvopt.dsl import LayeredDP\n"
            "from solvopt.dp import kernels_numba as k\n"
            "rng = np.random.default_rng(0)\n"
            "m = LayeredDP([8] * 4, [rng.normal(size=(8, 8))] * 3, initial=rng.normal(size=(5000, 8)))\n"
            "r = m.solve('numba', paths=3, threads=1)\n"
            "assert r.solution['paths'].shape == (3, 4)\n"
            "print(len(k.forward_blocks.signatures), len(k._layer_targets.signatures))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "0"]
