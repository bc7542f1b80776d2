"""The cost-scaling min-cost flow engine (solvopt.transport.cost_scaling) against independent
references: networkx and HiGHS on random graphs, linear_sum_assignment on assignments; its
capacity bounds, infeasible and degenerate inputs, stops, warm starts and the approximation."""
import importlib.util

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from solvopt.core.errors import ModelError
from solvopt.transport import cost_scaling as cs
from solvopt.transport.flow import FlowStopped, min_cost_flow

HAVE_NX = importlib.util.find_spec("networkx") is not None


def random_graph(seed, n_nodes, n_arcs, acyclic=False):
    """Random arcs with integer costs and supplies; a ring (or, acyclic, a path) keeps them feasible."""
    rng = np.random.default_rng(seed)
    tails = rng.integers(0, n_nodes, n_arcs)
    heads = rng.integers(0, n_nodes, n_arcs)
    if acyclic:
        tails, heads = np.minimum(tails, heads), np.maximum(tails, heads)
        keep = tails < heads
        tails, heads = tails[keep], heads[keep]
        path = np.arange(n_nodes - 1)
        tails, heads = np.concatenate([tails, path]), np.concatenate([heads, path + 1])
        supplies = np.zeros(n_nodes)
        half = max(1, n_nodes // 2)
        supplies[:half] = rng.integers(0, 4, half)
        supplies[-1] -= supplies.sum()
    else:
        ring = np.arange(n_nodes)
        tails = np.concatenate([tails, ring, (ring + 1) % n_nodes])
        heads = np.concatenate([heads, (ring + 1) % n_nodes, ring])
        supplies = rng.integers(-3, 4, n_nodes).astype(float)
        supplies[-1] -= supplies.sum()
    costs = rng.integers(0, 20, len(tails)).astype(float)
    return tails, heads, costs, supplies


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 14), st.integers(0, 50), st.booleans())
def test_costscaling_matches_highs_and_networkx(seed, n_nodes, n_arcs, acyclic):
    graph = random_graph(seed, n_nodes, n_arcs, acyclic)
    reference = min_cost_flow(*graph, engine="highs").cost
    if HAVE_NX:
        assert min_cost_flow(*graph, engine="networkx").cost == pytest.approx(reference, abs=1e-6)
    sol = min_cost_flow(*graph, engine="costscaling")
    assert sol.engine == "costscaling"
    assert reference - 1e-9 <= sol.cost <= reference + sol.abs_error + 1e-9
    tails, heads, _, supplies = graph
    out = np.bincount(tails, sol.flow, minlength=n_nodes) - np.bincount(heads, sol.flow, minlength=n_nodes)
    np.testing.assert_allclose(out, supplies, atol=1e-9)
    assert sol.flow.min() >= 0


def test_transit_caps_bound_every_cycle_free_flow():
    # a DAG: source 0 (2 units) and 1 (3 units) -> hub 2 -> sinks 3 (-4), 4 (-1); a cycle 5 <-> 6 off to the side
    tails = np.array([0, 1, 2, 2, 0, 5, 6])
    heads = np.array([2, 2, 3, 4, 3, 6, 5])
    supplies = np.array([2, 3, 0, -4, -1, 0, 0])
    caps = cs.transit_caps(tails, heads, supplies)
    np.testing.assert_array_equal(caps, [2, 3, 4, 1, 2, 5, 5])          # on the cycle: the total supply


def test_assignment_matches_linear_sum_assignment():
    rng = np.random.default_rng(1)
    cost = rng.random((30, 30))
    rows, cols = linear_sum_assignment(cost)
    optimum = cost[rows, cols].sum() / 30
    tails, heads = np.repeat(np.arange(30), 30), np.tile(np.arange(30), 30) + 30
    supplies = np.concatenate([np.full(30, 1 / 30), np.full(30, -1 / 30)])
    sol = min_cost_flow(tails, heads, cost.ravel(), supplies, engine="costscaling", path_arcs=1)
    assert optimum - 1e-12 <= sol.cost <= optimum + sol.abs_error + 1e-12
    assert sol.abs_error < 1e-9


def test_potentials_are_duals_within_the_stated_error():
    # on a ring every node lies on a cycle: no arc is bounded below the total supply, and the
    # prices are returned; they are feasible to eps and close the duality gap to the stated error
    tails, heads, costs, supplies = random_graph(7, 30, 120)
    sol = min_cost_flow(tails, heads, costs, supplies, engine="costscaling")
    assert sol.potentials is not None
    reduced = costs - (sol.potentials[tails] - sol.potentials[heads])
    assert reduced.min() > -1e-9
    assert sol.cost - sol.abs_error - 1e-9 <= supplies @ sol.potentials <= sol.cost + 1e-9


def test_infeasible_and_degenerate_inputs():
    with pytest.raises(ModelError, match="no feasible flow"):
        min_cost_flow([0], [1], [1.0], [1.0, 0.0, -1.0], engine="costscaling")
    with pytest.raises(ModelError, match="no feasible flow"):          # the arcs point the wrong way
        min_cost_flow([1, 2, 2], [0, 0, 1], [1.0, 1.0, 2.0], [2.0, -2.0, 0.0], engine="costscaling")
    with pytest.raises(ModelError, match="no feasible flow"):          # a cycle that cannot reach the sink
        min_cost_flow([0, 1, 2], [1, 0, 3], [1.0, 1.0, 1.0], [2.0, 0.0, 0.0, -2.0], engine="costscaling")
    # all costs zero, many ties: any feasible flow is optimal
    tails, heads = np.repeat(np.arange(5), 5), np.tile(np.arange(5), 5) + 5
    sol = min_cost_flow(tails, heads, np.zeros(25), np.r_[np.ones(5), -np.ones(5)], engine="costscaling")
    assert sol.cost == 0.0 and sol.flow.sum() == pytest.approx(5.0)
    # nothing to send
    sol = min_cost_flow([0], [1], [3.0], [0.0, 0.0], engine="costscaling")
    assert sol.cost == 0.0 and sol.flow.tolist() == [0.0]
    # a self-loop and a parallel arc
    sol = min_cost_flow([0, 0, 0], [0, 1, 1], [1.0, 2.0, 1.0], [2.0, -2.0], engine="costscaling")
    assert sol.cost == pytest.approx(2.0) and sol.flow.tolist() == [0.0, 0.0, 2.0]


def test_refusals():
    with pytest.raises(ModelError, match="integer multiples"):
        weights = np.random.default_rng(3).random(400)            # too many distinct values for one unit
        min_cost_flow(np.arange(400), np.arange(400) + 400, np.ones(400), np.r_[weights, -weights],
                      engine="costscaling")
    with pytest.raises(ModelError, match="uncapacitated"):
        min_cost_flow([0], [1], [1.0], [1.0, -1.0], capacities=[2.0], engine="costscaling")
    with pytest.raises(ModelError, match="costs >= 0"):
        min_cost_flow([0], [1], [-1.0], [1.0, -1.0], engine="costscaling")


def _grid_flow(n, seed=0):
    from solvopt.dsl import Transport
    from solvopt.transport.hierarchy import build_grid
    rng = np.random.default_rng(seed)
    model = Transport(rng.uniform(size=(n, 2)), rng.uniform(size=(n, 2)), p=2)
    graph = build_grid(model, np.random.default_rng(0))
    tails, heads = graph.arc_ends()
    top = max(float(x.max()) for x in graph.effective_lengths(2.0) if x.size)
    return tails, heads, graph.arc_costs(2.0, top), graph.supplies(model.a, model.b), graph.n_nodes


def test_stops_when_asked():
    tails, heads, costs, supplies, n_nodes = _grid_flow(2000)
    with pytest.raises(FlowStopped):
        min_cost_flow(tails, heads, costs, supplies, n_nodes=n_nodes, engine="costscaling", stop=lambda: True)
    polls = []

    def stop():                 # true from the third poll on: the kernel runs in a worker thread
        polls.append(1)
        return len(polls) > 2
    try:
        min_cost_flow(tails, heads, costs, supplies, n_nodes=n_nodes, engine="costscaling", stop=stop)
    except FlowStopped:
        pass                    # stopped mid-run; a fast machine may also finish before the third poll
    assert len(polls) >= 1
    sol = min_cost_flow(tails, heads, costs, supplies, n_nodes=n_nodes, engine="costscaling", path_arcs=3,
                        stop=lambda: False)
    ref = min_cost_flow(tails, heads, costs, supplies, n_nodes=n_nodes, engine="simplex", path_arcs=3)
    assert abs(sol.cost - ref.cost) <= sol.abs_error + ref.abs_error


def test_warm_start_from_optimal_prices_is_optimal():
    from solvopt.transport.flow_types import integer_costs, integer_data
    tails, heads, costs, supplies, n_nodes = _grid_flow(500, seed=3)
    _, ints, _ = integer_data(supplies, None)
    int_costs, _ = integer_costs(costs, 2**40)
    caps = cs.transit_caps(tails, heads, ints)
    stop = np.zeros(1, np.int8)
    cold, prices, status = cs.cost_scaling(tails, heads, int_costs, caps, ints, stop, np.zeros(n_nodes, np.int64),
                                           int(int_costs.max()), cs.ALPHA)
    assert status == cs.DONE
    # from the final prices the zero flow is at most (largest |reduced cost|)-optimal: start there
    reduced = int_costs + prices[tails] - prices[heads]
    warm, _, status = cs.cost_scaling(tails, heads, int_costs, caps, ints, stop, prices,
                                      int(max(-reduced.min(), 1)) * cs.ALPHA, cs.ALPHA)
    assert status == cs.DONE
    total = cold.sum() + warm.sum()
    assert abs(float(cold @ int_costs) - float(warm @ int_costs)) <= total


def test_approx_on_the_grid_with_costscaling():
    from solvopt.dsl import Transport
    rng = np.random.default_rng(5)
    model = Transport(rng.uniform(size=(400, 2)), rng.uniform(size=(400, 2)), p=2)
    ours = model.solve("approx", graph="grid", engine="costscaling", certificate="factor")
    ref = model.solve("approx", graph="grid", engine="highs", certificate="factor")
    assert ours.stats["engine"] == "costscaling"
    assert ours.stats["flow_cost_p"] == pytest.approx(ref.stats["flow_cost_p"], rel=1e-7)
    assert ours.guarantee == ref.guarantee            # the same proven factor, stated alike
    assert ours.bound <= ref.objective * (1 + 1e-9)
