"""The stochastic split on the chunk protocol, its statuses and its options.

- a chunk is a pure function of (compiled model, seed, chunk index): merging the chunks one by
  one gives the run's statistics to the bit; per-scenario costs do not depend on the chunk size,
  the mean only to rounding; NumPy and Numba agree to the bit (cuda to rounding);
- the SAA estimate reports its interval and certifies nothing (bound None); a time limit or
  Ctrl-C returns what has merged and says how many scenarios were done;
- the typed options (``chunk`` a solve option, ``keep_costs``), ``honours`` and the CUDA method
  picked by ``device="auto"``.
"""
from __future__ import annotations

import numpy as np
import pytest

from solvopt.core.chunks import Z95, ChunkPlan
from solvopt.core.errors import ModelError
from solvopt.core.interrupt import request_stop
from solvopt.core.registry import Availability, get_solver
from solvopt.core.result import SolutionStatus, Termination
from solvopt.cvrp.family import FAMILY
from solvopt.cvrp.solvers import SplitCuda, SplitNumba, SplitNumpy, compile_split
from solvopt.cvrp.stochastic import chunk_stats, run_scenarios
from solvopt.dsl import Split, StochasticSplit


def model(seed=9, n_nodes=25, scenarios=3000, **kwargs):
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 100, (n_nodes, 2))
    dist = np.round(np.hypot(xy[:, None, 0] - xy[None, :, 0], xy[:, None, 1] - xy[None, :, 1]))
    demands = rng.integers(0, 7, n_nodes)
    demands[0] = 0
    return StochasticSplit(dist, demands, 15, rng.permutation(np.arange(1, n_nodes)), scenarios=scenarios, **kwargs)


# --- the chunk protocol ---------------------------------------------------------------------------------
def test_a_chunk_is_a_pure_function_of_model_seed_and_index(backend):
    compiled = compile_split(model(scenarios=1000))
    plan = ChunkPlan(1000, 96)
    run = run_scenarios(compiled, seed=4, backend=backend, chunk=96)
    merged = chunk_stats(compiled, 4, plan, 0, backend)
    for index in reversed(range(1, plan.count)):       # computed in any order, merged in index order
        part = chunk_stats(compiled, 4, plan, index, backend)
        assert part.scenarios == plan.bounds(index)[1] - plan.bounds(index)[0]
    for index in range(1, plan.count):
        merged.merge(chunk_stats(compiled, 4, plan, index, backend))
    assert run.chunks == plan.count == 11 and run.done == 1000 and run.stopped is None
    assert (merged.count, merged.mean, merged.m2) == (run.stats.count, run.stats.mean, run.stats.m2)


@pytest.mark.parametrize("matrix", [False, True])
def test_results_do_not_depend_on_the_chunk_size(backend, matrix):
    # 600 scenarios: one chunk by default; 257 and 599 leave a short last chunk (86, 1)
    m = model(scenarios=600)
    if matrix:
        m = model(scenarios=np.random.default_rng(1).integers(0, 9, (600, 24)))
    one = m.solve(f"split-{backend}" if backend != "numba" else "split", seed=5, keep_costs=True)
    assert one.stats["chunks"] == 1
    for chunk in (1, 257, 599):
        if chunk == 1 and backend != "numba":
            continue                                     # 600 one-scenario chunks: slow on the reference
        other = m.solve(f"split-{backend}" if backend != "numba" else "split", seed=5, keep_costs=True, chunk=chunk)
        np.testing.assert_array_equal(other.solution["scenario_costs"], one.solution["scenario_costs"])
        assert other.objective == pytest.approx(one.objective, rel=1e-13, abs=0)
        assert other.solution["std_error"] == pytest.approx(one.solution["std_error"], rel=1e-9)
        assert other.stats["chunks"] == -(-600 // chunk)


def test_numpy_and_numba_give_the_same_statistics_to_the_bit():
    m = model(scenarios=2000)
    for chunk in (300, 2000):
        ref = m.solve("split-numpy", seed=8, chunk=chunk)
        fast = m.solve("split", seed=8, chunk=chunk)
        assert ref.objective == fast.objective
        assert ref.solution["ci95"] == fast.solution["ci95"]
        assert ref.solution["quantiles"] == fast.solution["quantiles"]


@pytest.mark.gpu
def test_cuda_statistics_equal_the_cpu_ones_to_rounding():
    m = model(scenarios=20000)
    gpu, cpu = m.solve("split-cuda", seed=4, chunk=7000), m.solve("split", seed=4, chunk=7000)
    assert gpu.objective == pytest.approx(cpu.objective, rel=1e-12)
    assert gpu.solution["std_error"] == pytest.approx(cpu.solution["std_error"], rel=1e-9)
    assert gpu.solution["quantiles"] == cpu.solution["quantiles"]


# --- statuses --------------------------------------------------------------------------------------------
def test_the_estimate_reports_its_interval_and_certifies_nothing():
    r = model(scenarios=4000).solve(seed=2, keep_costs=True)
    assert r.termination is Termination.FEASIBLE_WITHIN_GAP and r.solution_status is SolutionStatus.FEASIBLE
    assert r.bound is None and r.gap is None and "not a proven value" in r.guarantee
    costs = r.solution["scenario_costs"]
    assert r.solution["infeasible_scenarios"] == np.isinf(costs).sum()
    costs = costs[np.isfinite(costs)]
    se = np.std(costs, ddof=1) / np.sqrt(costs.size)
    assert r.objective == pytest.approx(costs.mean()) and r.solution["std_error"] == pytest.approx(se)
    lo, hi = r.solution["ci95"]
    assert (lo, hi) == pytest.approx((costs.mean() - Z95 * se, costs.mean() + Z95 * se))
    assert r.solution["scenarios"] == 4000 and costs.size == r.solution["feasible_scenarios"]
    assert r.solution["quantiles"][0.5] == pytest.approx(np.median(costs))
    assert r.to_dict()["bound"] is None


def test_one_feasible_scenario_has_no_interval():
    m = model(scenarios=np.full((1, 24), 2))
    r = m.solve()
    assert r.ok and r.solution["ci95"] is None and r.solution["std_error"] is None and "no confidence" in r.message


def test_deterministic_split_is_optimal_with_its_bound():
    m = model()
    r = Split(m.distances, m.demands, m.capacity, m.tour).solve()
    assert r.termination is Termination.OPTIMAL and r.bound == r.objective and r.gap == 0.0


def test_ctrl_c_returns_the_chunks_merged_and_says_how_many():
    """A stop request (what Ctrl-C sets) is seen between chunks; here the first progress line asks for it."""
    r = model(scenarios=5000).solve(seed=1, chunk=500, progress=False, log=lambda line: request_stop())
    assert r.termination is Termination.INTERRUPTED and r.solution_status is SolutionStatus.FEASIBLE
    assert r.solution["scenarios"] == 500 and r.stats["chunks"] == 1 and r.bound is None
    assert "interrupted after 500 of 5,000 scenarios" in r.message
    again = model(scenarios=5000).solve(seed=1, chunk=500)     # the next solve starts without the request
    assert again.termination is Termination.FEASIBLE_WITHIN_GAP and again.solution["scenarios"] == 5000


# --- options ---------------------------------------------------------------------------------------------
def test_honoured_options_and_the_cuda_method_under_auto(monkeypatch):
    assert SplitNumba.honours == {"threads", "device"}
    assert SplitNumpy.honours == {"device"} and SplitCuda.honours == {"device"} and SplitCuda.uses_cuda
    assert FAMILY.param("chunk").target == "solver"
    with pytest.raises(ModelError, match="it applies to: split$"):
        model().solve("split-numpy", threads=2)                  # names the method that takes it
    with pytest.raises(ModelError, match="split-cuda"):
        model().solve("split", device="gpu")
    monkeypatch.setattr(SplitCuda, "available", classmethod(lambda cls: Availability.AVAILABLE))
    assert get_solver("cvrp", None, "auto") is SplitCuda and get_solver("cvrp", None, None) is SplitCuda
    assert get_solver("cvrp", None, "cpu") is SplitNumba


@pytest.mark.parametrize("options, match", [
    (dict(chunk=0), "chunk"), (dict(chunk="many"), "chunk"), (dict(chunk=2.5), "chunk"),
    (dict(keep_costs="yes"), "keep_costs"), (dict(stride=3), "unknown option"),
])
def test_bad_options_are_model_errors(options, match):
    with pytest.raises(ModelError, match=match):
        model(scenarios=100).solve(**options)


def test_stochastic_options_on_the_deterministic_split_are_refused():
    m = model()
    with pytest.raises(ModelError, match="stochastic split"):
        Split(m.distances, m.demands, m.capacity).solve(chunk=10)
