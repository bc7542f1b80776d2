"""The stochastic-split kernels: one test body per property, run on every backend (numpy, numba, cuda).

The three kernels share one signature (:mod:`solvopt.cvrp.kernels_numpy`); each property is
checked against an independent oracle (brute force over every set of cuts, the deterministic
split, the NumPy reference stream) or against the NumPy reference itself, bit for bit. The
backend fixture is tests/conftest.py's (the cuda case is skipped unless CuPy sees a device).
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvopt.cvrp.deterministic import bellman_split
from solvopt.cvrp.kernels_numba import LANES
from solvopt.cvrp.kernels_numpy import scenario_costs as numpy_costs
from solvopt.cvrp.sampling import philox_key, poisson_tables, sample_demands_numpy
from solvopt.cvrp.stochastic import KERNELS
from solvopt.dsl.split import tour_geometry

NO_TABLES = (np.zeros(0), np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(1, np.int64))
NO_MATRIX = np.zeros((0, 0), np.int32)
FIXTURE_OK = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture
def kernel(backend):
    """``scenario_costs`` of one backend (the CUDA launcher copies NumPy arrays to the device and back)."""
    return KERNELS.load(backend).scenario_costs


def costs(kernel, geom, capacity, *, demands=None, tables=None, seed=0, first=0, count=None, penalty=None):
    """Run one kernel: a demand matrix, or ``count`` sampled scenarios from ``first``; returns out."""
    count = demands.shape[0] if demands is not None else count
    out = np.full(count, np.nan)
    kernel(first, NO_MATRIX if demands is None else np.ascontiguousarray(demands, np.int32), philox_key(seed),
           *(NO_TABLES if tables is None else tables.arrays), geom.tour0, geom.entry, geom.exit, int(capacity),
           0.0 if penalty is None else float(penalty), penalty is not None, out)
    return out


def random_instance(seed: int, n_nodes: int, max_demand: int = 9, capacity: int = 12):
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 100, (n_nodes, 2))
    dist = np.round(np.hypot(xy[:, None, 0] - xy[None, :, 0], xy[:, None, 1] - xy[None, :, 1]))
    demands = rng.integers(0, max_demand + 1, n_nodes)
    demands[0] = 0
    return dist, demands, capacity, rng.permutation(np.arange(1, n_nodes))


def brute_force_scenario(dist, q, cap, tour, penalty=None):
    """Every set of cuts; an over-capacity customer alone pays the penalty (or makes the scenario infeasible)."""
    geom = tour_geometry(dist, tour)
    loads = q[tour - 1]
    n, best = len(tour), np.inf
    for r in range(n):
        for inner in itertools.combinations(range(1, n), r):
            cuts, total = [0, *inner, n], 0.0
            for p, i in zip(cuts[:-1], cuts[1:]):
                load = loads[p:i].sum()
                if load > cap and not (penalty is not None and i - p == 1):
                    total = np.inf
                    break
                total += geom.route_cost(p + 1, i) + (penalty * max(0, load - cap) if penalty is not None else 0.0)
            best = min(best, total)
    return best


@FIXTURE_OK
@given(seed=st.integers(0, 10**6), n_nodes=st.integers(2, 8), penalty=st.sampled_from([None, 3.0, 0.5]))
def test_costs_match_brute_force(kernel, seed, n_nodes, penalty):
    dist, _, cap, tour = random_instance(seed, n_nodes, capacity=10)
    matrix = np.random.default_rng(seed).integers(0, 12, (6, n_nodes - 1))     # some customers over Q = 10
    out = costs(kernel, tour_geometry(dist, tour), cap, demands=matrix, penalty=penalty)
    for w in range(matrix.shape[0]):
        oracle = brute_force_scenario(dist, matrix[w], cap, tour, penalty)
        assert out[w] == pytest.approx(oracle) if np.isfinite(oracle) else out[w] == np.inf


@FIXTURE_OK
@given(seed=st.integers(0, 10**6), n_nodes=st.integers(2, 40), penalty=st.sampled_from([None, 2.5]),
       scenarios=st.sampled_from([1, LANES - 1, LANES, LANES + 1, 70, 129]))
def test_costs_equal_the_numpy_reference_bit_for_bit(kernel, seed, n_nodes, penalty, scenarios):
    """Scenario counts around the SIMD block and the CUDA block; the arithmetic is the reference's."""
    dist, _, cap, tour = random_instance(seed, n_nodes, capacity=12)
    matrix = np.random.default_rng(seed + 1).integers(0, 14, (scenarios, n_nodes - 1))
    geom = tour_geometry(dist, tour)
    np.testing.assert_array_equal(costs(kernel, geom, cap, demands=matrix, penalty=penalty),
                                  costs(numpy_costs, geom, cap, demands=matrix, penalty=penalty))


@pytest.mark.parametrize("penalty", [None, 1.5])
def test_fused_sampling_sees_the_reference_stream(kernel, penalty):
    """Sampled in the kernel = the kernel on the NumPy reference sampler's matrix, from any first scenario."""
    dist, demands, cap, tour = random_instance(19, 60, max_demand=12, capacity=40)
    tables = poisson_tables(demands[1:])
    geom = tour_geometry(dist, tour)
    fused = costs(kernel, geom, cap, tables=tables, seed=11, first=1000, count=333, penalty=penalty)
    matrix = sample_demands_numpy(tables, 11, 1000, 333)
    np.testing.assert_array_equal(fused, costs(numpy_costs, geom, cap, demands=matrix, penalty=penalty))


def test_chunk_boundaries_do_not_change_a_scenario(kernel):
    """Scenarios first..first+count-1 of a long run, run alone, give the same costs (counter-based stream)."""
    dist, demands, cap, tour = random_instance(7, 30, max_demand=8, capacity=30)
    tables, geom = poisson_tables(demands[1:]), tour_geometry(dist, tour)
    whole = costs(kernel, geom, cap, tables=tables, seed=3, first=0, count=777)
    for first, count in ((0, 1), (5, 33), (100, 257), (776, 1)):
        part = costs(kernel, geom, cap, tables=tables, seed=3, first=first, count=count)
        np.testing.assert_array_equal(part, whole[first:first + count])


def test_infeasible_scenarios_are_inf_and_penalised_ones_finite(kernel):
    dist, demands, cap, tour = random_instance(2, 12, capacity=10)
    matrix = np.full((40, 11), 2)
    matrix[::3, 4] = 11                                            # every third scenario has a customer over Q
    geom = tour_geometry(dist, tour)
    hard = costs(kernel, geom, cap, demands=matrix)
    np.testing.assert_array_equal(np.isinf(hard), np.arange(40) % 3 == 0)
    soft = costs(kernel, geom, cap, demands=matrix, penalty=5.0)
    assert np.all(np.isfinite(soft)) and np.all(soft[1::3] == hard[1::3])
    assert np.all(soft[::3] > soft[1])                             # the penalised customer rides alone
    everything_over = costs(kernel, geom, cap, demands=np.full((5, 11), 11))
    assert np.all(everything_over == np.inf)


def test_constant_scenarios_equal_the_deterministic_split(kernel):
    dist, demands, cap, tour = random_instance(11, 120, capacity=25)
    geom = tour_geometry(dist, tour)
    out = costs(kernel, geom, cap, demands=np.tile(demands[1:], (LANES + 3, 1)))
    assert np.all(out == bellman_split(geom, demands[tour], cap).objective)
