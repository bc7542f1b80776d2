"""Min-cost flow engines (solvopt.transport.flow) against independent references:
scipy's linear_sum_assignment on assignment problems, networkx on small random graphs, and the
LP duality certificate of the HiGHS potentials."""
import importlib.util

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from solvopt.core.errors import ModelError
from solvopt.transport.flow import integer_units, min_cost_flow

HAVE_ORTOOLS = importlib.util.find_spec("ortools") is not None
HAVE_NX = importlib.util.find_spec("networkx") is not None
ENGINES = ["simplex", "highs"] + (["ortools"] if HAVE_ORTOOLS else []) + (["networkx"] if HAVE_NX else [])


def assignment_graph(cost):
    n, m = cost.shape
    tails = np.repeat(np.arange(n), m)
    heads = np.tile(np.arange(m), n) + n
    supplies = np.concatenate([np.full(n, 1.0 / n), np.full(m, -1.0 / m)])
    return tails, heads, cost.ravel(), supplies


@pytest.mark.parametrize("engine", ENGINES)
def test_assignment_matches_linear_sum_assignment(engine):
    rng = np.random.default_rng(1)
    cost = rng.random((25, 25))
    rows, cols = linear_sum_assignment(cost)
    optimum = cost[rows, cols].sum() / 25
    sol = min_cost_flow(*assignment_graph(cost), engine=engine)
    assert sol.engine == engine
    assert sol.cost == pytest.approx(optimum, abs=1e-9 + sol.abs_error)
    assert sol.cost >= optimum - 1e-12


def test_highs_potentials_certify_the_cost():
    rng = np.random.default_rng(2)
    cost = rng.random((12, 17))
    tails, heads, costs, supplies = assignment_graph(cost)
    sol = min_cost_flow(tails, heads, costs, supplies, engine="highs")
    reduced = costs - (sol.potentials[tails] - sol.potentials[heads])
    assert reduced.min() > -1e-9                        # dual feasible
    assert supplies @ sol.potentials == pytest.approx(sol.cost, abs=1e-9)   # strong duality
    # marginals
    out = np.bincount(tails, sol.flow, minlength=len(supplies)) - np.bincount(heads, sol.flow, minlength=len(supplies))
    np.testing.assert_allclose(out, supplies, atol=1e-9)


def random_graph(seed, n_nodes, n_arcs):
    rng = np.random.default_rng(seed)
    tails = rng.integers(0, n_nodes, n_arcs)
    heads = rng.integers(0, n_nodes, n_arcs)
    # a ring makes every supply pattern feasible
    ring = np.arange(n_nodes)
    tails = np.concatenate([tails, ring, (ring + 1) % n_nodes])
    heads = np.concatenate([heads, (ring + 1) % n_nodes, ring])
    costs = rng.integers(0, 20, len(tails)).astype(float)
    supplies = rng.integers(-3, 4, n_nodes).astype(float)
    supplies[-1] -= supplies.sum()
    return tails, heads, costs, supplies


@pytest.mark.skipif(not HAVE_NX, reason="networkx not installed")
@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 12), st.integers(0, 40))
def test_engines_agree_with_networkx_on_random_graphs(seed, n_nodes, n_arcs):
    graph = random_graph(seed, n_nodes, n_arcs)
    reference = min_cost_flow(*graph, engine="networkx").cost
    for engine in ENGINES:
        sol = min_cost_flow(*graph, engine=engine)
        assert sol.cost == pytest.approx(reference, abs=1e-6)


@pytest.mark.parametrize("engine", [e for e in ENGINES if e != "simplex"])
def test_capacities_are_respected(engine):
    # two parallel routes 0 -> 1: the cheap one carries at most 1 of the 3 units
    tails, heads = np.array([0, 0]), np.array([1, 1])
    sol = min_cost_flow(tails, heads, [1.0, 5.0], [3.0, -3.0], capacities=[1.0, 10.0], engine=engine)
    np.testing.assert_allclose(sol.flow, [1.0, 2.0])
    assert sol.cost == pytest.approx(11.0)


@pytest.mark.parametrize("engine", ENGINES)
def test_infeasible_flow_is_a_model_error(engine):
    with pytest.raises(ModelError, match="no feasible flow"):
        min_cost_flow([0], [1], [1.0], [1.0, 0.0, -1.0], engine=engine)


def test_bad_inputs():
    with pytest.raises(ModelError, match="sum to"):
        min_cost_flow([0], [1], [1.0], [1.0, -0.5])
    with pytest.raises(ModelError, match="outside"):
        min_cost_flow([0], [2], [1.0], [1.0, -1.0])
    with pytest.raises(ModelError, match="unknown min-cost-flow engine"):
        min_cost_flow([0], [1], [1.0], [1.0, -1.0], engine="magic")
    with pytest.raises(ModelError, match="finite"):
        min_cost_flow([0], [1], [np.nan], [1.0, -1.0])


def test_integer_units():
    unit = integer_units(np.concatenate([np.full(6, 1 / 6), np.full(4, -1 / 4)]))
    assert unit == pytest.approx(1 / 12)
    rng = np.random.default_rng(0)
    weights = rng.random(1000)
    assert integer_units(np.concatenate([weights, -weights])) is None          # too many distinct values


@pytest.mark.skipif(not HAVE_ORTOOLS, reason="OR-Tools not installed")
def test_ortools_refuses_real_supplies_and_auto_falls_back():
    rng = np.random.default_rng(3)
    weights = rng.random(400)
    supplies = np.concatenate([weights, -weights])
    tails, heads = np.arange(400), np.arange(400) + 400
    with pytest.raises(ModelError, match="integer multiples"):
        min_cost_flow(tails, heads, np.ones(400), supplies, engine="ortools")
    assert min_cost_flow(tails, heads, np.ones(400), supplies).engine == "simplex"
    capacities = np.full(400, 2.0)
    assert min_cost_flow(tails, heads, np.ones(400), supplies, capacities=capacities).engine == "highs"
    uniform = np.concatenate([np.full(400, 0.25), np.full(400, -0.25)])
    assert min_cost_flow(tails, heads, np.ones(400), uniform, capacities=capacities).engine == "ortools"


def test_simplex_refuses_capacities_and_negative_costs():
    with pytest.raises(ModelError, match="uncapacitated"):
        min_cost_flow([0], [1], [1.0], [1.0, -1.0], capacities=[2.0], engine="simplex")
    with pytest.raises(ModelError, match="costs >= 0"):
        min_cost_flow([0], [1], [-1.0], [1.0, -1.0], engine="simplex")


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 9), st.integers(1, 9))
def test_simplex_on_real_weights_matches_highs(seed, n, m):
    """Real (non-unit) supplies on a random bipartite graph with a hub: the float path of the simplex."""
    rng = np.random.default_rng(seed)
    a, b = rng.random(n) + 0.01, rng.random(m) + 0.01
    b *= a.sum() / b.sum()
    keep = rng.random(n * m) < 0.5
    tails = np.concatenate([np.repeat(np.arange(n), m)[keep], np.arange(n), np.full(m, n + m)])
    heads = np.concatenate([np.tile(np.arange(m), n)[keep] + n, np.full(n, n + m), np.arange(m) + n])
    costs = rng.random(len(tails)) * 10
    supplies = np.concatenate([a, -b, [0.0]])
    reference = min_cost_flow(tails, heads, costs, supplies, engine="highs")
    sol = min_cost_flow(tails, heads, costs, supplies, engine="simplex", path_arcs=2)
    assert sol.cost == pytest.approx(reference.cost, abs=1e-9 + sol.abs_error)
    out = np.bincount(tails, sol.flow, minlength=n + m + 1) - np.bincount(heads, sol.flow, minlength=n + m + 1)
    np.testing.assert_allclose(out, supplies, atol=1e-9)
    reduced = costs - (sol.potentials[tails] - sol.potentials[heads])
    assert reduced.min() > -1e-6                                 # duals of the rounded costs


def test_simplex_stops_when_asked():
    from solvopt.transport.flow import FlowStopped
    cost = np.random.default_rng(4).random((150, 150))
    with pytest.raises(FlowStopped):
        min_cost_flow(*assignment_graph(cost), engine="simplex", stop=lambda: True)
    sol = min_cost_flow(*assignment_graph(cost), engine="simplex", stop=lambda: False)
    rows, cols = linear_sum_assignment(cost)
    assert sol.cost == pytest.approx(cost[rows, cols].sum() / 150, abs=1e-9 + sol.abs_error)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 8), st.integers(1, 8), st.floats(0.1, 0.9))
def test_feasible_flow_engines_agree(seed, n, m, density):
    """Every feasibility engine finds a flow exactly when one exists, and the flow meets the supplies."""
    from solvopt.transport.flow import feasible_flow
    rng = np.random.default_rng(seed)
    keep = rng.random(n * m) < density
    tails, heads = np.repeat(np.arange(n), m)[keep], np.tile(np.arange(m), n)[keep] + n
    supplies = np.concatenate([np.full(n, 1.0 / n), np.full(m, -1.0 / m)])
    engines = ["scipy", "highs"] + (["ortools"] if HAVE_ORTOOLS else [])
    answers = {e: feasible_flow(tails, heads, supplies, n_nodes=n + m, engine=e) for e in engines}
    assert len({flow is None for flow in answers.values()}) == 1
    for flow in answers.values():
        if flow is not None:
            out = np.bincount(tails, flow, minlength=n + m) - np.bincount(heads, flow, minlength=n + m)
            np.testing.assert_allclose(out, supplies, atol=1e-9)
            assert flow.min() >= -1e-12


def test_auto_hands_a_stalled_simplex_to_cost_scaling(monkeypatch):
    from solvopt.transport import flow as flow_module
    cost = np.random.default_rng(6).random((30, 30))
    rows, cols = linear_sum_assignment(cost)
    assert min_cost_flow(*assignment_graph(cost)).engine == "simplex"
    monkeypatch.setattr(flow_module, "SIMPLEX_PIVOTS_PER_NODE", 1e-6)       # a budget of one pivot
    sol = min_cost_flow(*assignment_graph(cost))
    assert sol.engine == "costscaling"
    assert sol.cost == pytest.approx(cost[rows, cols].sum() / 30, abs=1e-9 + sol.abs_error)
