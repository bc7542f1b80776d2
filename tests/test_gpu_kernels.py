"""Edge cases of every CUDA kernel, on the backend fixture of tests/conftest.py (numpy / numba / cuda;
the cuda case is skipped unless CuPy sees a device), each against the NumPy reference on the same
inputs (bit for bit where the arithmetic is the same, which it is for every kernel here):

- min-plus engine: a fully masked layer, unreachable states, the sentinel over 400 layers, in
  float32 and float64; the four kernel entries (float32/64 x int16/int32 slots, int32 from an
  in-degree of 40000); scenario counts around the warp and the 256-thread block; a layer wider
  than a grid's y dimension (the warp schedule);
- stochastic split: sampled scenario counts around the 128-thread block from first scenarios that
  cross the counter's 32-bit word; a tour too long for shared memory with more scenarios than
  threads (grid-stride, tables in global memory); a run where every scenario is infeasible;
- transport kernels: rows that are not a multiple of the block, empty bunches, a distance matrix
  larger than the grid (grid-stride);
- a Dask run whose worker picks the CUDA kernel (device="auto").
"""
from __future__ import annotations

import numpy as np
import pytest
from helpers import DP_SCHEDULES, dp_forward

from solvopt.core.result import Termination
from solvopt.cvrp.kernels_numpy import scenario_costs as numpy_costs
from solvopt.cvrp.sampling import philox_key, poisson_tables, sample_demands_numpy
from solvopt.cvrp.stochastic import KERNELS as CVRP_KERNELS
from solvopt.dp.backends import KERNELS as DP_KERNELS
from solvopt.dp.compiled import CompiledDP
from solvopt.dsl import LayeredDP, StochasticSplit, Transitions
from solvopt.dsl.split import tour_geometry
from solvopt.transport import kernels_numpy as transport_numpy
from solvopt.transport.graph import KERNELS as TRANSPORT_KERNELS

DTYPES = [np.float64, np.float32]
NO_MATRIX = np.zeros((0, 0), np.int32)


# --- min-plus engine ------------------------------------------------------------------------------------
def forward(backend: str, compiled: CompiledDP, schedule=None):
    """(values (Smax, W), slots) of one chunk holding every scenario, on the host."""
    return dp_forward(backend, compiled, schedule=schedule)


SCHEDULES = DP_SCHEDULES


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_fully_masked_layer_makes_every_scenario_infeasible(backend, dtype):
    model = LayeredDP([2, 3, 2], [np.ones((2, 3)), Transitions(np.ones((3, 2)), mask=np.zeros((3, 2), bool))],
                      dtype=dtype)
    r = model.solve(backend)
    assert r.termination is Termination.INFEASIBLE and not r.ok
    assert np.all(np.isinf(r.solution["values"]))
    out, slots = forward(backend, CompiledDP(model))
    assert np.all(out == CompiledDP(model).sentinel) and np.all(slots[-1] == -1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_unreachable_states_are_inf_and_the_others_solve(backend, dtype):
    costs = np.array([[1.0, np.inf, 4.0], [2.0, np.inf, np.inf]])
    r = LayeredDP([2, 3], [costs], initial=[0.0, -1.5], dtype=dtype).solve(backend)
    assert r.solution["values"][:, 0].tolist() == [0.5, np.inf, 4.0]
    assert r.objective == 0.5 and r.solution["paths"].tolist() == [[1, 0]]


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_sentinel_never_overflows_over_many_layers(backend, dtype):
    L = 400                                        # 400 x the sentinel overflows both dtypes
    layer = np.array([[1.0, np.inf], [np.inf, np.inf]])
    model = LayeredDP([2] * (L + 1), [layer] * L, dtype=dtype)
    r = model.solve(backend)
    assert r.objective == L and np.isinf(r.solution["values"][1, 0])
    out, _ = forward(backend, CompiledDP(model))
    assert out[1, 0] == CompiledDP(model).sentinel and np.all(np.isfinite(out))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sources", [50, 40_000])
def test_each_real_and_slot_type_equals_the_reference(backend, dtype, sources):
    """float32/float64 x int16/int32 slots (an in-degree of 40000 needs int32): the four kernel entries."""
    rng = np.random.default_rng(sources)
    W = 3
    costs = rng.normal(size=(W, sources, 4))
    costs[:, ::7, 1] = np.inf
    compiled = CompiledDP(LayeredDP([sources, 4, 2], [costs, rng.normal(size=(4, 2))], dtype=dtype))
    assert compiled.slot_index_dtype == (np.int32 if sources > 32767 else np.int16)
    ref_out, ref_slots = forward("numpy", compiled)
    for schedule in SCHEDULES[backend]:
        out, slots = forward(backend, compiled, schedule)
        np.testing.assert_array_equal(out, ref_out)
        np.testing.assert_array_equal(slots, ref_slots)


@pytest.mark.parametrize("W", [1, 31, 33, 127, 129, 255, 257, 1000])
def test_scenario_counts_around_the_warp_and_the_block(backend, W):
    rng = np.random.default_rng(W)
    states = [3, 5, 4]
    layers = [rng.integers(-3, 6, (W, 3, 5)).astype(float), rng.normal(size=(5, 4))]   # ties in the first
    layers[0][:, 1, :] = np.inf
    compiled = CompiledDP(LayeredDP(states, layers))
    ref_out, ref_slots = forward("numpy", compiled)
    for schedule in SCHEDULES[backend]:
        out, slots = forward(backend, compiled, schedule)
        np.testing.assert_array_equal(out, ref_out)
        np.testing.assert_array_equal(slots, ref_slots)


@pytest.mark.gpu
def test_a_layer_wider_than_the_grid_runs_on_the_warp_schedule():
    from solvopt.core.errors import ModelError
    gpu_dp = DP_KERNELS.load("cuda")
    rng = np.random.default_rng(5)
    wide = gpu_dp.MAX_GRID_Y + 10
    compiled = CompiledDP(LayeredDP([2, wide, 1], [rng.normal(size=(2, wide)), rng.normal(size=(wide, 1))],
                                    initial=rng.normal(size=(2, 2)), scenarios=2))
    ref_out, ref_slots = forward("numpy", compiled)
    out, slots = forward("cuda", compiled)                     # auto: the warp schedule
    np.testing.assert_array_equal(out, ref_out)
    np.testing.assert_array_equal(slots, ref_slots)
    with pytest.raises(ModelError, match="at most"):
        forward("cuda", compiled, "scenarios")


# --- stochastic split -------------------------------------------------------------------------------------------
def split_kernel(backend):
    return CVRP_KERNELS.load(backend).scenario_costs


def random_tour(seed: int, n_nodes: int, capacity: int, mean_demand: float):
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 100, (n_nodes, 2))
    dist = np.round(np.hypot(xy[:, None, 0] - xy[None, :, 0], xy[:, None, 1] - xy[None, :, 1]))
    means = rng.uniform(0.5 * mean_demand, 1.5 * mean_demand, n_nodes - 1)
    return tour_geometry(dist, rng.permutation(np.arange(1, n_nodes))), poisson_tables(means), capacity


def sampled_costs(kernel, geom, tables, capacity, seed, first, count, penalty=None):
    out = np.full(count, np.nan)
    kernel(first, NO_MATRIX, philox_key(seed), *tables.arrays, geom.tour0, geom.entry, geom.exit, int(capacity),
           0.0 if penalty is None else float(penalty), penalty is not None, out)
    return out


def matrix_costs(geom, matrix, capacity, penalty=None):
    out = np.full(matrix.shape[0], np.nan)
    numpy_costs(0, np.ascontiguousarray(matrix, np.int32), philox_key(0), np.zeros(0), np.zeros(1, np.int64),
                np.zeros(0, np.int32), np.zeros(1, np.int64), geom.tour0, geom.entry, geom.exit, int(capacity),
                0.0 if penalty is None else float(penalty), penalty is not None, out)
    return out


@pytest.mark.parametrize("count", [1, 127, 129, 1001])
@pytest.mark.parametrize("first", [0, 12_345, 2**32 - 77])
def test_sampled_counts_around_the_block_and_the_counter_word(backend, count, first):
    """Sampled in the kernel = the reference kernel on the reference sampler's demands, from a first
    scenario whose range crosses the 32-bit low word of the Philox counter."""
    geom, tables, cap = random_tour(count, 40, capacity=25, mean_demand=4.0)
    got = sampled_costs(split_kernel(backend), geom, tables, cap, 9, first, count, penalty=1.5 if count % 2 else None)
    matrix = sample_demands_numpy(tables, 9, first, count)
    np.testing.assert_array_equal(got, matrix_costs(geom, matrix, cap, penalty=1.5 if count % 2 else None))


@pytest.mark.gpu
def test_a_long_tour_with_more_scenarios_than_threads_equals_the_cpu_kernel():
    """2100 customers: entry/exit/tour no longer fit the 48 KiB of shared memory, and 100003 scenarios
    exceed the threads the scratch bound allows, so every thread loops (grid-stride)."""
    numba_costs = CVRP_KERNELS.load("numba").scenario_costs
    gpu_cvrp = CVRP_KERNELS.load("cuda")
    n, count = 2100, 100_003
    geom, tables, cap = random_tour(3, n + 1, capacity=20, mean_demand=4.0)
    assert (2 * n + 1) * 8 + n * 8 > gpu_cvrp.SHARED_LIMIT
    assert gpu_cvrp._grid(n, count) * gpu_cvrp.BLOCK < count
    got = sampled_costs(gpu_cvrp.scenario_costs, geom, tables, cap, 4, 10**6, count)
    np.testing.assert_array_equal(got, sampled_costs(numba_costs, geom, tables, cap, 4, 10**6, count))


def test_a_run_where_every_scenario_is_infeasible(backend):
    method = {"numpy": "split-numpy", "numba": "split", "cuda": "split-cuda"}[backend]
    rng = np.random.default_rng(2)
    xy = rng.uniform(0, 100, (12, 2))
    dist = np.round(np.hypot(xy[:, None, 0] - xy[None, :, 0], xy[:, None, 1] - xy[None, :, 1]))
    demands = np.full((300, 11), 3)
    demands[:, 4] = 40                                          # over Q = 30 in every scenario
    model = StochasticSplit(dist, np.r_[0, np.full(11, 3)], 30, np.arange(1, 12), scenarios=demands)
    r = model.solve(method, chunk=128)
    assert r.termination is Termination.INFEASIBLE and r.solution["feasible_scenarios"] == 0
    assert r.solution["infeasible_scenarios"] == 300


# --- transport kernels -----------------------------------------------------------------------------------------------
def run_transport(name, x, y, radius, metric):
    k = TRANSPORT_KERNELS.load(name)
    n, m = len(x), len(y)
    index, dist, counts = np.empty(n, np.int64), np.empty(n), np.empty(n, np.int64)
    k.nearest(x, y[: max(1, m // 3)], metric, index, dist)
    k.bunch_counts(x, y, radius, metric, counts)
    indptr = np.concatenate(([0], np.cumsum(counts)))
    cols, bdist = np.empty(indptr[-1], np.int64), np.empty(indptr[-1])
    k.bunch_fill(x, y, radius, metric, indptr, cols, bdist)
    pairs = np.empty(2 * n)
    k.pair_distances(x, y, np.arange(2 * n) % n, (np.arange(2 * n) * 5) % m, metric, pairs)
    return {"index": index, "dist": dist, "counts": counts, "cols": cols, "bdist": bdist, "pairs": pairs}


@pytest.mark.parametrize("n, m, d, radius", [(257, 3, 1, "nearest"), (513, 700, 3, "nearest"), (300, 40, 2, "zero")])
@pytest.mark.parametrize("metric", [0, 1, 2])
def test_transport_rows_off_the_block_and_empty_bunches(twin, n, m, d, radius, metric):
    rng = np.random.default_rng(n + m + d)
    x, y = rng.normal(size=(n, d)), rng.normal(size=(m, d))
    r = np.zeros(n) if radius == "zero" else run_transport("numpy", x, y, np.zeros(n), metric)["dist"] * 1.5
    ref, got = run_transport("numpy", x, y, r, metric), run_transport(twin, x, y, r, metric)
    for key in ref:
        np.testing.assert_array_equal(got[key], ref[key], err_msg=key)
    if radius == "zero":
        assert got["counts"].sum() == 0 and got["cols"].size == 0


@pytest.mark.gpu
def test_a_distance_matrix_larger_than_the_grid():
    """4100 x 4100 = 16.81M entries > 65535 blocks x 256 threads: the grid-stride loop covers the rest."""
    gpu_transport = TRANSPORT_KERNELS.load("cuda")
    assert 4100 * 4100 > gpu_transport.MAX_BLOCKS * gpu_transport.BLOCK
    rng = np.random.default_rng(1)
    x, y = rng.random((4100, 2)), rng.random((4100, 2))
    ref, got = np.empty((4100, 4100)), np.empty((4100, 4100))
    transport_numpy.distances(x, y, 0, ref)
    gpu_transport.distances(x, y, 0, got)
    np.testing.assert_array_equal(got, ref)


# --- a Dask run with a CUDA worker ------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_a_dask_worker_that_sees_the_device_runs_the_cuda_kernel():
    pytest.importorskip("distributed")
    from solvopt.core.backend import gpu_available
    from solvopt.core.tasks import use_client
    from solvopt.cvrp.solvers import compile_split
    from solvopt.cvrp.stochastic import ScenarioChunks
    from solvopt.dist import local_client
    rng = np.random.default_rng(9)
    xy = rng.uniform(0, 100, (25, 2))
    dist = np.round(np.hypot(xy[:, None, 0] - xy[None, :, 0], xy[:, None, 1] - xy[None, :, 1]))
    demands = rng.integers(0, 7, 25)
    demands[0] = 0
    model = StochasticSplit(dist, demands, 15, rng.permutation(np.arange(1, 25)), scenarios=20_000)
    compiled = compile_split(model)
    alone = model.solve("split", seed=5, chunk=3000, device="cpu")
    with local_client(1) as client:
        assert all(client.run(gpu_available).values())
        picked = client.submit(lambda c: ScenarioChunks(c, 5, "auto", 100, 1).backend.name, compiled).result()
        assert picked == "cuda"
        with use_client(client):
            on_worker = model.solve("split", seed=5, chunk=3000)
    assert on_worker.stats["device"] == "per worker" and on_worker.stats["chunks"] == 7
    assert on_worker.objective == pytest.approx(alone.objective, rel=1e-12)     # device reduction: to rounding
    assert on_worker.solution["quantiles"] == alone.solution["quantiles"]
    assert on_worker.solution["feasible_scenarios"] == alone.solution["feasible_scenarios"]
