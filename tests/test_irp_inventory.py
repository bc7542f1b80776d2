"""Inventory reinsertion DP: engine result vs exhaustive enumeration of decision sequences, plans,
sampling, route options from an IRP instance, CLI, memory estimate, bad input."""
from __future__ import annotations

import itertools
import json
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvopt.cli import main
from solvopt.core.errors import ModelError
from solvopt.core.registry import get_solver
from solvopt.core.result import Termination
from solvopt.dsl.inventory import DEFAULT_SCENARIOS, InventoryReinsertion
from solvopt.io import read_instance
from solvopt.irp.instance import model_from_instance, nearest_neighbour_tour, order_up_to_routes, route_options
from solvopt.irp.reinsertion import compile_bytes, compile_inventory


def random_reinsertion(seed: int, max_t=4, max_u=6, max_w=4) -> InventoryReinsertion:
    rng = np.random.default_rng(seed)
    T, U, W = int(rng.integers(1, max_t + 1)), int(rng.integers(1, max_u + 1)), int(rng.integers(1, max_w + 1))
    costs = [rng.integers(0, 20, rng.integers(1, 4)).astype(float) for _ in range(T)]
    slack = [np.where(rng.random(c.size) < 0.2, np.inf, rng.integers(-3, U + 1, c.size)) for c in costs]
    return InventoryReinsertion(
        horizon=T, max_level=U, start_level=int(rng.integers(0, U + 1)), holding_cost=float(rng.integers(0, 4)),
        insertion_costs=costs, route_slack=slack, supplier_holding_cost=float(rng.random()),
        stockout_penalty=float(rng.integers(0, 30)), capacity_penalty=float(rng.integers(0, 10)),
        demand=rng.integers(0, U + 3, (W, T)))


def step(model: InventoryReinsertion, t: int, level: int, option: int, d: int) -> tuple[int, float]:
    """One day written out from the problem statement: option -1 = no delivery, r = route option r."""
    h, p = model.holding_cost, model.stockout_penalty
    if option < 0:
        return max(0, level - d), h * max(0, level - d) + p * max(0, d - level)
    U, q, s = model.max_level, model.max_level - level, model.route_slack[t][option]
    overload = max(0.0, q - s) - max(0.0, -s)
    cost = (model.insertion_costs[t][option] + model.capacity_penalty * overload + h * max(0, U - d)
            + p * max(0, d - U) - model.supplier_holding_cost * (model.horizon - t) * q)
    return max(0, U - d), cost


def plan_cost(model, demand_row, options) -> float:
    level, total = model.start_level, 0.0
    for t, option in enumerate(options):
        level, cost = step(model, t, level, option, int(demand_row[t]))
        total += cost
    return total


def enumerate_best(model: InventoryReinsertion) -> tuple[float, np.ndarray]:
    """min over day-0 options of the mean over scenarios of the best completion; per-option means."""
    T = model.horizon
    choices = [range(-1, c.size) for c in model.insertion_costs]
    best = {}  # day-0 option -> (W,) best completion per scenario
    for seq in itertools.product(*choices):
        costs = np.array([plan_cost(model, row, seq) for row in model.demand])
        best[seq[0]] = np.minimum(best.get(seq[0], np.inf), costs)
    means = {o: v.mean() for o, v in best.items()}
    deliver = min(means[o] for o in range(model.insertion_costs[0].size))
    return min(means.values()), np.array([means[-1], deliver]), T


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_engine_equals_exhaustive_enumeration(backend, seed):
    model = random_reinsertion(seed)
    expected, option_means, _ = enumerate_best(model)
    result = model.solve(backend, paths=list(range(model.scenarios)))
    assert result.termination is Termination.OPTIMAL and result.bound == result.objective   # given scenarios: exact
    assert result.objective == pytest.approx(expected, abs=1e-9)
    np.testing.assert_allclose(result.solution["option_means"], option_means, atol=1e-9)
    # every returned plan is feasible and costs what the engine says
    values = result.solution["scenario_values"]
    for w, deliveries, routes, inventory in zip(result.solution["plan_scenarios"], result.solution["deliveries"],
                                                result.solution["route_options"], result.solution["inventory"]):
        options = np.where(deliveries, routes, -1)
        assert deliveries[0] == result.solution["decision"]["deliver"]
        assert plan_cost(model, model.demand[w], options) == pytest.approx(values[w], abs=1e-9)
        level = model.start_level
        for t, o in enumerate(options):
            assert inventory[t] == level
            level, _ = step(model, t, level, o, int(model.demand[w, t]))
        assert inventory[-1] == level


def test_backends_agree_on_poisson_scenarios_chunked_and_seeded(backend):
    model = InventoryReinsertion(horizon=5, max_level=30, start_level=12, holding_cost=0.3,
                                 insertion_costs=[[40.0, 15.0]] * 5, route_slack=[[100.0, 5.0]] * 5,
                                 supplier_holding_cost=0.1, mean_demand=9.0, scenarios=3000)
    ref = model.solve("numpy", seed=7, paths=4)
    whole = model.solve(backend, seed=7, paths=4)
    chunked = model.solve(backend, seed=7, chunk=1024, paths=4)
    for r in (whole, chunked):
        np.testing.assert_array_equal(r.solution["scenario_values"], ref.solution["scenario_values"])
        np.testing.assert_array_equal(r.solution["inventory"], ref.solution["inventory"])
        np.testing.assert_array_equal(r.solution["deliveries"], ref.solution["deliveries"])
        assert r.solution["decision"] == ref.solution["decision"]
        assert r.objective == pytest.approx(ref.objective, rel=1e-12)
    assert chunked.stats["chunks"] == 3
    other = model.solve(backend, seed=8)
    assert other.objective != whole.objective
    assert ref.solution["feasible_scenarios"] == 3000
    # sampled (Poisson) scenarios: an estimate with its interval, no bound
    assert ref.termination is Termination.FEASIBLE_WITHIN_GAP and ref.bound is None
    assert ref.solution["ci95"][0] < ref.objective < ref.solution["ci95"][1]


def test_default_penalties_are_documented_values():
    model = InventoryReinsertion(horizon=2, max_level=10, start_level=3, holding_cost=0.5,
                                 insertion_costs=[[8.0, 20.0], [4.0]], mean_demand=[2.0, 3.0], scenarios=10)
    assert model.stockout_penalty == pytest.approx(max(10 * 0.5, 2 * 20.0 / 2.5))
    assert model.capacity_penalty == model.stockout_penalty


# --- route options from an Archetti instance -------------------------------------------------------------
def test_nearest_neighbour_tour():
    pts = np.array([[0, 0], [5, 0], [1, 0], [3, 0]], float)
    dist = np.abs(pts[:, None, 0] - pts[None, :, 0])
    assert nearest_neighbour_tour(dist, [1, 2, 3]) == [0, 2, 3, 1, 0]
    assert nearest_neighbour_tour(dist, []) == [0, 0]


def test_route_options_from_instance(shared_instances):
    inst = read_instance(shared_instances / "irp" / "abs1n5_1.dat")
    data = inst.data
    for customer in range(5):
        costs, slack = route_options(data, customer)
        routes = order_up_to_routes(data, customer)
        node = customer + 1
        for (tour, load), c, s in zip(routes, costs, slack):
            assert node not in tour and tour[0] == tour[-1] == 0
            assert c[0] == 2 * data["distances"][0, node] and s[0] == data["vehicle_capacity"]
            assert len(c) == (1 if len(tour) == 2 else len(tour))     # own route + one per edge
            assert np.all(c >= 0) and np.all(s[1:] == data["vehicle_capacity"] - load)
    # a delivery by the customer's own route every day of a 1-scenario, zero-demand instance never pays
    model = model_from_instance(inst, 1, demand=np.zeros((1, data["horizon"]), int))
    r = model.solve("numba")
    assert r.solution["decision"]["deliver"] is False and not r.solution["deliveries"].any()


def test_sample_instances_solve(samples):
    inst = read_instance(samples / "irp" / "abs1n10_1.dat")
    model = model_from_instance(inst, 4, scenarios=500)
    assert model.horizon == inst.data["horizon"] and model.max_level == int(inst.data["max_inventory"][3])
    r = model.solve("numba", seed=1)
    assert r.ok and r.family == "irp" and np.isfinite(r.objective)
    assert r.solution["option_means"].shape == (2,)
    # the result names the customer (1-based, as given) and the penalties, from the model itself
    assert r.solution["customer"] == 4 and model.customer == 4
    assert r.solution["stockout_penalty"] == model.stockout_penalty
    assert r.solution["capacity_penalty"] == model.capacity_penalty
    assert model_from_instance(inst, 4).scenarios == DEFAULT_SCENARIOS


def test_cli_json_matches_the_api(samples, capsys):
    path = str(samples / "irp" / "abs1n10_1.dat")
    assert main(["solve", path, "--customer", "2", "--scenarios", "300", "--seed", "4", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    model = model_from_instance(read_instance(path), 2, scenarios=300)
    direct = model.solve(seed=4)
    assert record["family"] == "irp" and record["objective"] == pytest.approx(direct.objective)
    assert record["solution"]["decision"] == direct.solution["decision"]
    assert record["solution"]["customer"] == 2 and record["solution"]["stockout_penalty"] == model.stockout_penalty
    # the declared CLI defaults: 5 plans, no per-scenario values; the model's 1000 scenarios
    plans = record["solution"]["plan_scenarios"]
    assert len(plans) == 5 and "scenario_values" not in record["solution"]
    assert record["options"]["paths"] == 5 and record["options"]["keep_values"] == 0
    assert main(["solve", path, "--seed", "4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["stats"]["scenarios"] == DEFAULT_SCENARIOS
    assert main(["solve", path, "--fleet", "2"]) == 1
    assert "--fleet does not apply" in capsys.readouterr().err
    assert main(["solve", path, "--customer", "0"]) == 1


@pytest.mark.parametrize("kwargs, match", [
    (dict(start_level=11), "start_level"),
    (dict(holding_cost=-1), "holding_cost"),
    (dict(insertion_costs=[[1.0]]), "one array per day"),
    (dict(insertion_costs=[[1.0], []]), "at least one route option"),
    (dict(insertion_costs=[[1.0], [np.nan]]), "insertion_costs"),
    (dict(route_slack=[[1.0], [1.0, 2.0]]), "route_slack has 2"),
    (dict(demand=[[1, 2.5]]), "non-negative integers"),
    (dict(demand=[[1, -2]]), "non-negative integers"),
    (dict(demand=[[1, 2, 3]]), "shape"),
    (dict(demand=None), "either a demand matrix"),
    (dict(demand=None, mean_demand=2.0, scenarios=0), "scenarios"),
    (dict(demand=None, mean_demand=-2.0, scenarios=5), "mean_demand"),
    (dict(stockout_penalty=float("nan")), "stockout_penalty"),
    (dict(horizon=0, insertion_costs=[]), "horizon"),
    (dict(max_level="x"), "max_level"),
])
def test_bad_inventory_models_raise_model_error(kwargs, match):
    base = dict(horizon=2, max_level=10, start_level=3, holding_cost=0.5, insertion_costs=[[1.0], [2.0]],
                demand=[[1, 2]])
    base.update(kwargs)
    with pytest.raises(ModelError, match=match):
        InventoryReinsertion(**base)


def test_compile_rejects_other_models():
    with pytest.raises(ModelError, match="InventoryReinsertion"):
        compile_inventory(object())


def test_solvers_declare_options_and_device_choice():
    from solvopt.core.backend import gpu_available
    from solvopt.irp.solvers import InventoryCuda, InventoryNumba, InventoryNumpy
    assert get_solver("irp").name == ("cuda" if gpu_available() else "numba")
    assert InventoryCuda.uses_cuda and InventoryNumba.default
    assert InventoryNumba.honours == {"device", "threads"} and InventoryNumpy.honours == {"device"}
    assert {o.name for o in InventoryNumpy.options} == {"chunk", "paths", "quantiles", "keep_values"}


# --- issue 9: extreme inputs ------------------------------------------------------------------------------
IRP_HUGE = """3 3 100
0 0 0 10 5 0.3
1 3 4 5 1000000000 0 2 0.2
2 6 8 5 20 0 3 0.1
"""


def test_huge_maximum_inventory_is_refused_with_the_estimate_before_allocating(tmp_path, capsys):
    path = tmp_path / "huge.dat"
    path.write_text(IRP_HUGE)
    model = model_from_instance(read_instance(str(path)), 1, scenarios=10)
    assert compile_bytes(model) > 1e20                       # ~2.4e20 bytes: never allocated
    with pytest.raises(ModelError, match=r"huge:customer1: the reinsertion DP over levels 0..1000000000 needs about "
                                         r"[\d.]+ EiB .* more than the"):
        model.solve("numba")
    assert main(["solve", str(path), "--scenarios", "10"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(path) in err and "EiB" in err and "Traceback" not in err
    assert main(["solve", str(path), "--customer", "2", "--scenarios", "10", "--json"]) == 0   # a small one solves
    assert json.loads(capsys.readouterr().out)["solution"]["customer"] == 2


def test_memory_budget_is_checked_against_the_estimate():
    model = InventoryReinsertion(horizon=3, max_level=100, start_level=0, holding_cost=1.0,
                                 insertion_costs=[[5.0]] * 3, mean_demand=10.0, scenarios=5)
    need = compile_bytes(model)
    assert need == 40 * 3 * 101 * 202
    compile_inventory(model, budget=need)
    with pytest.raises(ModelError, match="MiB|KiB"):
        compile_inventory(model, budget=need - 1)


IRP_BAD_VALUES = [5.0, 5.5, "a", None, [1j], 1j, np.array([object()]), [[1.0], [2.0, [3]]], -1, 1e20, float("nan"),
                  float("inf"), True, [], {}, object(), 10**30, [[1.0], [2.0], [3.0]], [["a"], ["b"]], [[1j], [2]],
                  np.array([[1, 2]], dtype=object)]


@pytest.mark.parametrize("key", ["horizon", "max_level", "start_level", "holding_cost", "insertion_costs", "demand",
                                 "route_slack", "supplier_holding_cost", "stockout_penalty", "capacity_penalty",
                                 "mean_demand", "scenarios", "customer"])
def test_bad_values_raise_model_error_only(key):
    base = dict(horizon=2, max_level=10, start_level=3, holding_cost=0.5, insertion_costs=[[1.0], [2.0]],
                demand=[[1, 2]])
    if key in ("mean_demand", "scenarios"):
        base.update(demand=None, mean_demand=2.0, scenarios=5)
    for value in IRP_BAD_VALUES:
        with warnings.catch_warnings():
            warnings.simplefilter("error", np.exceptions.ComplexWarning)
            try:
                InventoryReinsertion(**{**base, key: value})
            except ModelError:
                pass
    with pytest.raises(ModelError, match="insertion_costs needs one array per day"):
        InventoryReinsertion(2, 10, 3, 0.5, 5.0, demand=[[1, 2]])          # a float where arrays are required
    with pytest.raises(ModelError, match="max_level must be an integer"):
        InventoryReinsertion(2, 10.5, 3, 0.5, [[1.0], [2.0]], demand=[[1, 2]])


def test_bad_instance_parameters_name_the_instance(samples, capsys):
    path = str(samples / "irp" / "abs1n10_1.dat")
    for flags, words in ((["--customer", "99"], "customer must be in 1..10"),
                         (["--scenarios", "0"], "scenarios"),
                         (["--demand", "nope.txt"], "--demand must be"),
                         (["--demand", "poisson", "--chunk", "0"], "chunk")):
        assert main(["solve", path, *flags]) == 1
        err = capsys.readouterr().err
        assert path in err and words in err and err.count("\n") == 1


def test_huge_irp_demands_are_model_errors():
    kw = dict(horizon=3, max_level=5, start_level=2, holding_cost=1.0, insertion_costs=[[1.0], [1.0], [1.0]])
    for extra in (dict(mean_demand=1e300, scenarios=10), dict(demand=np.full((2, 3), 1e30))):
        try:
            model = InventoryReinsertion(**kw, **extra)
        except ModelError as exc:
            assert "2**53" in str(exc)
            continue
        with pytest.raises(ModelError):
            model.solve()
