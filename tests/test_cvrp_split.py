"""CVRP split and stochastic split: against brute force, Vidal's split, the NumPy oracle, scipy's Poisson."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvopt.cli import main as cli_main
from solvopt.core.errors import ModelError
from solvopt.core.result import Termination
from solvopt.cvrp.deterministic import bellman_split, brute_force_split, vidal_split
from solvopt.cvrp.kernels_numba import sample_demands_numba
from solvopt.cvrp.saa import evaluate_tours
from solvopt.cvrp.sampling import philox4x32_numpy, poisson_tables, sample_demands_numpy
from solvopt.dsl import Split, StochasticSplit
from solvopt.dsl.split import tour_geometry


def random_instance(seed: int, n_nodes: int, max_demand: int = 9, capacity: int | None = None):
    """Rounded-Euclidean distances (CVRPLIB convention), integer demands, depot first."""
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 100, (n_nodes, 2))
    dist = np.round(np.hypot(xy[:, None, 0] - xy[None, :, 0], xy[:, None, 1] - xy[None, :, 1]))
    demands = rng.integers(0, max_demand + 1, n_nodes)
    demands[0] = 0
    cap = int(capacity if capacity is not None else rng.integers(max_demand, 3 * max_demand + 1))
    tour = rng.permutation(np.arange(1, n_nodes))
    return dist, demands, cap, tour


# --- deterministic split -------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), n_nodes=st.integers(2, 10), fleet=st.one_of(st.none(), st.integers(1, 9)),
       penalty=st.one_of(st.none(), st.floats(0, 20)))
def test_split_matches_brute_force(seed, n_nodes, fleet, penalty):
    dist, demands, cap, tour = random_instance(seed, n_nodes)
    oracle = brute_force_split(tour_geometry(dist, tour), demands[tour], cap, fleet, penalty)
    for method in ("split", "split-numpy"):
        result = Split(dist, demands, cap, tour, fleet=fleet, penalty=penalty).solve(method)
        if not oracle.feasible:
            assert result.termination is Termination.INFEASIBLE and result.message
            continue
        assert result.termination is Termination.OPTIMAL
        assert result.objective == pytest.approx(oracle.objective, abs=1e-9)
        routes = result.solution["routes"]
        assert sorted(c for r in routes for c in r) == sorted(tour.tolist())
        assert [c for r in routes for c in r] == tour.tolist()          # routes follow the tour
        if fleet is not None:
            assert len(routes) <= fleet
        if penalty is None:
            assert max(result.solution["loads"]) <= cap
        total = sum(result.solution["costs"]) + sum(result.solution.get("penalties", [0.0]))
        assert total == pytest.approx(result.objective)


def test_limited_fleet_forces_fewer_longer_routes():
    dist, demands, cap, tour = random_instance(3, 10, capacity=12)
    free = Split(dist, demands, cap, tour).solve()
    k = free.solution["num_routes"] - 1
    oracle = brute_force_split(tour_geometry(dist, tour), demands[tour], cap, fleet=k)
    limited = Split(dist, demands, cap, tour, fleet=k).solve()
    if oracle.feasible:
        assert limited.objective == pytest.approx(oracle.objective)
        assert limited.solution["num_routes"] <= k and limited.objective >= free.objective
    else:
        assert limited.termination is Termination.INFEASIBLE


def test_limited_fleet_matches_the_layered_dp_engine():
    """Second algorithm: the general min-plus engine (layer = route count, state = tour position)."""
    from solvopt.dsl import LayeredDP
    for seed in (5, 6):
        dist, demands, cap, tour = random_instance(seed, 31, capacity=25)
        geom, n = tour_geometry(dist, tour), 30
        prefix = np.concatenate([[0], np.cumsum(demands[tour])])
        cost = np.full((n + 1, n + 1), np.inf)
        for p in range(n):
            for i in range(p + 1, n + 1):
                if prefix[i] - prefix[p] <= cap:
                    cost[p, i] = geom.entry[p] + geom.exit[i]
        cost[0, 0] = cost[n, n] = 0.0          # unused vehicles: "at most k routes"
        to_end = np.full((n + 1, 1), np.inf)
        to_end[n, 0] = 0.0
        start = np.full(n + 1, np.inf)
        start[0] = 0.0
        free = Split(dist, demands, cap, tour).solve().solution["num_routes"]
        for k in range(max(1, free - 3), free + 2):
            engine = LayeredDP([n + 1] * (k + 1) + [1], [cost] * k + [to_end], initial=start).solve("numpy")
            ours = Split(dist, demands, cap, tour, fleet=k).solve()
            assert (engine.termination is Termination.INFEASIBLE) == (ours.termination is Termination.INFEASIBLE)
            if ours.ok:
                assert ours.objective == pytest.approx(engine.objective)


def test_infeasible_cases_say_why():
    dist, demands, cap, tour = random_instance(5, 6, capacity=10)
    demands[3] = 11
    r = Split(dist, demands, cap, tour).solve()
    assert r.termination is Termination.INFEASIBLE and "customer 3" in r.message
    demands[3] = 1
    r = Split(dist, demands, 10, tour, fleet=1).solve()
    if demands.sum() > 10:
        assert r.termination is Termination.INFEASIBLE and "fleet" in r.message


def test_bellman_equals_vidal_on_x_instances(shared_instances):
    from solvopt.io import read_instance
    rng = np.random.default_rng(0)
    for name in ("X-n101-k25", "X-n120-k6", "X-n153-k22", "X-n303-k21", "X-n1001-k43"):
        path = shared_instances / "cvrp" / f"{name}.vrp"
        if not path.exists():
            continue
        data = read_instance(path).data
        n = data["demands"].shape[0] - 1
        for tour in (np.arange(1, n + 1), rng.permutation(np.arange(1, n + 1))):
            geom = tour_geometry(data["distances"], tour)
            b = bellman_split(geom, data["demands"][tour], data["capacity"])
            v = vidal_split(geom, data["demands"][tour], data["capacity"])
            assert b.objective == pytest.approx(v.objective, abs=1e-6)
            assert max(v.loads) <= data["capacity"]


# --- stochastic split ----------------------------------------------------------------------------------
def test_constant_scenarios_equal_the_deterministic_split():
    dist, demands, cap, tour = random_instance(11, 40, capacity=25)
    det = Split(dist, demands, cap, tour).solve()
    matrix = np.tile(demands[1:], (37, 1))
    for method in ("split", "split-numpy"):
        r = StochasticSplit(dist, demands, cap, tour, scenarios=matrix).solve(method)
        assert r.objective == pytest.approx(det.objective)
        assert r.solution["std_error"] == pytest.approx(0.0, abs=1e-9)
        assert r.solution["feasible_scenarios"] == 37


def test_infeasible_scenarios_are_counted_not_dropped():
    dist, demands, cap, tour = random_instance(2, 12, capacity=10)
    matrix = np.full((10, 11), 2)
    matrix[[1, 4, 7], 3] = 11                                  # three scenarios with a customer over Q
    r = StochasticSplit(dist, demands, cap, tour, scenarios=matrix).solve(keep_costs=True)
    assert r.solution["infeasible_scenarios"] == 3 and r.solution["infeasible_share"] == pytest.approx(0.3)
    assert "3 of 10 scenarios" in r.message
    costs = r.solution["scenario_costs"]
    assert r.objective == pytest.approx(costs[np.isfinite(costs)].mean())
    assert r.solution["std_error"] == pytest.approx(np.std(costs[np.isfinite(costs)], ddof=1) / np.sqrt(7))
    pen = StochasticSplit(dist, demands, cap, tour, scenarios=matrix, policy="penalty", penalty=5.0).solve()
    assert pen.solution["infeasible_scenarios"] == 0
    only_bad = StochasticSplit(dist, demands, cap, tour, scenarios=matrix[[1, 4]]).solve()
    assert only_bad.termination is Termination.INFEASIBLE


def test_time_limit_returns_the_estimate_so_far():
    dist, demands, cap, tour = random_instance(4, 30, capacity=30)
    r = StochasticSplit(dist, demands, cap, tour, scenarios=5000).solve(time_limit=1e-6, seed=2, chunk=100)
    assert r.termination is Termination.TIME_LIMIT and r.ok and r.bound is None
    assert r.solution["scenarios"] == 100 and r.objective == pytest.approx(r.solution["mean"])
    assert "after 100 of 5,000 scenarios" in r.message


# --- sampler ---------------------------------------------------------------------------------------------
def test_philox_known_answers():
    """Philox4x32-10 known-answer vectors of Random123."""
    kat = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
           ((0xFFFFFFFF,) * 4, (0xFFFFFFFF, 0xFFFFFFFF), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
           ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
            (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]
    for ctr, key, expected in kat:
        assert tuple(int(x) for x in philox4x32_numpy(np.array([ctr], dtype=np.uint64), key)[0]) == expected


def test_numba_sampler_equals_numpy_reference():
    tables = poisson_tables(np.array([0.0, 0.3, 4.0, 37.0, 250.0, 2000.0, 9.0]))
    a = sample_demands_numpy(tables, seed=12345, first=1000, count=333)
    b = sample_demands_numba(tables, seed=12345, first=1000, count=333)
    np.testing.assert_array_equal(a, b)
    assert np.all(a[:, 0] == 0)
    c = sample_demands_numba(tables, seed=12346, first=1000, count=333)
    assert not np.array_equal(b, c)


@pytest.mark.parametrize("mean", [0.4, 6.5, 60.0, 700.0])
def test_poisson_sampler_distribution(mean):
    from scipy import stats
    tables = poisson_tables(np.array([mean]))
    x = sample_demands_numba(tables, seed=7, first=0, count=200_000)[:, 0]
    lo, hi = stats.poisson.ppf([1e-4, 1 - 1e-4], mean)
    edges = np.unique(np.linspace(lo, hi + 1, 30).astype(int))
    observed = np.histogram(x, bins=np.concatenate([[-1], edges[1:-1], [10 ** 9]]))[0]
    cdf = stats.poisson.cdf(np.concatenate([[-1], edges[1:-1] - 1, [10 ** 9]]), mean)
    expected = np.diff(cdf) * x.shape[0]
    keep = expected > 5
    chi2, p = stats.chisquare(observed[keep], expected[keep] * observed[keep].sum() / expected[keep].sum())
    assert p > 1e-4, (chi2, p)
    assert abs(x.mean() - mean) < 5 * np.sqrt(mean / x.shape[0]) + 1e-9


def test_fused_sampling_reproducible_and_independent_of_chunks_and_threads():
    dist, demands, cap, tour = random_instance(9, 25, max_demand=6, capacity=15)
    model = StochasticSplit(dist, demands, cap, tour, scenarios=3000)
    base = model.solve(seed=5, keep_costs=True)
    again = model.solve(seed=5, keep_costs=True, threads=1)
    np.testing.assert_array_equal(base.solution["scenario_costs"], again.solution["scenario_costs"])
    assert base.objective == again.objective
    chunked = StochasticSplit(dist, demands, cap, tour, scenarios=3000).solve(seed=5, keep_costs=True, chunk=257)
    np.testing.assert_array_equal(base.solution["scenario_costs"], chunked.solution["scenario_costs"])
    assert chunked.objective == pytest.approx(base.objective, rel=1e-13)
    assert chunked.solution["std_error"] == pytest.approx(base.solution["std_error"], rel=1e-9)
    other = model.solve(seed=6)
    assert other.objective != base.objective
    # the fused kernel sees exactly the demands of the reference sampler
    matrix = sample_demands_numpy(poisson_tables(demands[1:]), 5, 0, 3000)
    reference = StochasticSplit(dist, demands, cap, tour, scenarios=matrix).solve("split-numpy", keep_costs=True)
    np.testing.assert_array_equal(base.solution["scenario_costs"], reference.solution["scenario_costs"])
    numpy_method = StochasticSplit(dist, demands, cap, tour, scenarios=500).solve("split-numpy", seed=5)
    numba_method = StochasticSplit(dist, demands, cap, tour, scenarios=500).solve("split", seed=5)
    assert numpy_method.objective == pytest.approx(numba_method.objective, rel=1e-12)


def test_evaluate_tours_uses_common_scenarios():
    dist, demands, cap, tour = random_instance(21, 30, capacity=20)
    order = np.argsort(np.arctan2(*np.random.default_rng(0).normal(size=(2, 29))))
    tours = [tour, tour, np.arange(1, 30), order + 1]
    ev = evaluate_tours({"distances": dist, "demands": demands, "capacity": cap}, tours, scenarios=800, seed=3)
    assert ev.means[0] == ev.means[1]                       # same tour, same scenarios, same estimate
    assert ev.best_index == int(np.argmin(ev.means))
    np.testing.assert_array_equal(ev.best_tour, tours[ev.best_index])


# --- bad input ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("change, match", [
    (lambda d: d.update(tour=[1, 2, 2, 4, 5]), "permutation"),
    (lambda d: d.update(tour=[1, 2, 3, 4]), "permutation"),
    (lambda d: d.update(tour=[0, 1, 2, 3, 4]), "permutation"),
    (lambda d: d.update(tour=[1.5, 2, 3, 4, 5]), "integer"),
    (lambda d: d["demands"].__setitem__(2, -1), ">= 0"),
    (lambda d: d["demands"].__setitem__(2, np.nan), "NaN"),
    (lambda d: d["distances"].__setitem__((1, 2), np.nan), "NaN"),
    (lambda d: d["distances"].__setitem__((1, 2), -3), ">= 0"),
    (lambda d: d.update(capacity=0), "capacity"),
    (lambda d: d.update(capacity=-5), "capacity"),
    (lambda d: d.update(capacity=float("nan")), "capacity"),
    (lambda d: d.update(distances=np.zeros((6, 5))), "square"),
])
def test_bad_input_raises_model_error(change, match):
    dist, demands, cap, tour = random_instance(1, 6)
    data = {"distances": dist.copy(), "demands": demands.astype(float), "capacity": cap, "tour": tour}
    change(data)
    with pytest.raises(ModelError, match=match):
        Split(**data)
    with pytest.raises(ModelError, match=match):
        StochasticSplit(**data, scenarios=10)


@pytest.mark.parametrize("kwargs, match", [
    (dict(scenarios=np.full((4, 3), 1)), "matrix"),
    (dict(scenarios=np.full((4, 5), -1)), ">= 0"),
    (dict(scenarios=np.full((4, 5), np.nan)), "NaN"),
    (dict(scenarios=np.full((4, 5), 1.5)), "integers"),
    (dict(policy="penalty"), "penalty"),
    (dict(policy="drop"), "policy"),
    (dict(fleet=3), "fleet"),
    (dict(scenarios=0), "scenarios"),
    (dict(demand="normal"), "poisson"),
])
def test_bad_stochastic_input_raises_model_error(kwargs, match):
    dist, demands, cap, tour = random_instance(1, 6)
    with pytest.raises(ModelError, match=match):
        StochasticSplit(dist, demands, cap, tour, **kwargs)


# --- CLI ---------------------------------------------------------------------------------------------------
def write_vrp(path, seed=8, n_nodes=9, capacity=15):
    rng = np.random.default_rng(seed)
    xy = rng.integers(0, 100, (n_nodes, 2))
    q = rng.integers(1, 8, n_nodes)
    q[0] = 0
    lines = [f"NAME : {path.stem}", "TYPE : CVRP", f"DIMENSION : {n_nodes}", "EDGE_WEIGHT_TYPE : EUC_2D",
             f"CAPACITY : {capacity}", "NODE_COORD_SECTION"]
    lines += [f"{i + 1} {x} {y}" for i, (x, y) in enumerate(xy)]
    lines += ["DEMAND_SECTION"] + [f"{i + 1} {d}" for i, d in enumerate(q)] + ["DEPOT_SECTION", "1", "-1", "EOF"]
    path.write_text("\n".join(lines) + "\n")
    dist = np.round(np.hypot(*(xy[:, None, :] - xy[None, :, :]).transpose(2, 0, 1)))
    return dist, q, capacity


def test_cli_end_to_end(tmp_path, capsys):
    path = tmp_path / "tiny.vrp"
    dist, q, cap = write_vrp(path)
    tour_file = tmp_path / "tour.txt"
    tour = np.random.default_rng(0).permutation(np.arange(1, 9))
    tour_file.write_text(" ".join(map(str, tour[:4])) + "\n" + " ".join(map(str, tour[4:])) + "\n")
    assert cli_main(["solve", str(path), "--tour", str(tour_file), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    oracle = brute_force_split(tour_geometry(dist, tour), q[tour], cap)
    assert record["family"] == "cvrp" and record["method"] == "split"
    assert record["objective"] == pytest.approx(oracle.objective)
    assert [c for r in record["solution"]["routes"] for c in r] == tour.tolist()

    assert cli_main(["solve", str(path), "--scenarios", "2000", "--seed", "1", "--policy", "penalty",
                     "--penalty", "4", "--chunk", "300", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["solution"]["scenarios"] == 2000 and record["stats"]["chunks"] == 7
    model = StochasticSplit(dist, q, cap, scenarios=2000, policy="penalty", penalty=4.0)
    assert record["objective"] == pytest.approx(model.solve(seed=1).objective, rel=1e-12)

    matrix_file = tmp_path / "demands.npy"
    np.save(matrix_file, np.tile(q[1:], (5, 1)))
    assert cli_main(["solve", str(path), "--demand", str(matrix_file), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["objective"] == pytest.approx(Split(dist, q, cap).solve().objective)

    assert cli_main(["solve", str(path), "--stockout", "3"]) == 1
    assert "--stockout" in capsys.readouterr().err
    assert cli_main(["solve", str(path), "--policy", "penalty"]) == 1
    bad_tour = tmp_path / "bad.txt"
    bad_tour.write_text("1 2\n3 x\n")
    assert cli_main(["solve", str(path), "--tour", str(bad_tour)]) == 1
    assert "bad.txt:2" in capsys.readouterr().err
