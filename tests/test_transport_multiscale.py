"""The multiscale start (the coarse optimum's tree refined to the points) and ``approx`` with
``graph="multiscale"``: feasible plans, bounds below the exact optimum (method ``exact``, HiGHS),
honest statuses, stops and refusals."""
from unittest.mock import patch

import numpy as np
import pytest
from helpers import solve_stopped_at_the_fine_level, transport_lp
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist

import solvopt.transport.approx_multiscale as ams
import solvopt.transport.sparse_exact as se
from solvopt.core.errors import ModelError
from solvopt.core.result import Termination
from solvopt.dsl import Transport
from solvopt.transport.dual import sorted_keys
from solvopt.transport.flow_types import integer_costs, integer_data
from solvopt.transport.multiscale import refined_plan, refined_tree
from solvopt.transport.network_simplex import network_simplex_warm, remap_tree

METRIC = {"euclidean": "euclidean", "cityblock": "cityblock", "chebyshev": "chebyshev"}


def clouds(n, m, d, seed, masses=False):
    rng = np.random.default_rng(seed)
    x, y = rng.random((n, d)), rng.random((m, d))
    a = rng.integers(1, 5, n).astype(float) if masses else None
    b = rng.integers(1, 5, m).astype(float) if masses else None
    if masses:
        b *= a.sum() / b.sum()
    return x, y, a, b


def check_plan(model, r):
    plan = r["plan"] if isinstance(r, dict) else r.solution["plan"]
    assert plan.min() >= 0
    np.testing.assert_allclose(np.asarray(plan.sum(axis=1)).ravel(), model.a, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.asarray(plan.sum(axis=0)).ravel(), model.b, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("masses", [False, True])
@pytest.mark.parametrize("d,p", [(2, 2.0), (3, 1.0)])
def test_refined_tree_is_a_feasible_spanning_tree(d, p, masses):
    """The refined coarse optimum is a forest carrying the fine marginals: the simplex accepts it
    as its start (all the mass on real arcs before a single pivot) and ends at the cold optimum."""
    x, y, a, b = clouds(700, 650, d, 3, masses)
    model = Transport(x, y, a=a, b=b, p=p)
    begun = se.start_pairs(model, se.NEIGHBOURS)
    keys, tree = begun.keys, begun.tree
    assert tree is not None
    check_plan(model, {"plan": begun.plan})
    keys = sorted_keys(keys)
    assert np.all(np.isin(tree[0], keys))
    parent, pred, pred_dir = remap_tree(tree[1], tree[0], keys)
    r, c = np.divmod(keys, model.m)
    costs = (model.pair_distances(r, c) / se.fine_unit(model)) ** p
    supplies = np.concatenate([model.a, -model.b]) / model.mass
    unit, ints, _ = integer_data(supplies, None)
    int_costs, _ = integer_costs(costs, 2**40)
    flag = np.zeros(1, np.int8)
    args = (r, c + model.n, int_costs, ints.astype(np.float64), flag)
    flow, _, left, *_ = network_simplex_warm(*args, 1, parent, pred, pred_dir)       # the start itself
    assert left == -1.0
    np.testing.assert_allclose(np.bincount(r, weights=flow, minlength=model.n), ints[:model.n])
    warm, _, left_warm, *_ = network_simplex_warm(*args, 0, parent, pred, pred_dir)
    cold, _, left_cold, *_ = network_simplex_warm(*args, 0, np.full(len(ints), -1), np.zeros(len(ints), np.int64),
                                                  np.zeros(len(ints), np.int64))
    assert left_warm == 0 and left_cold == 0
    assert warm @ int_costs == cold @ int_costs


def test_refined_plan_and_tree_of_an_empty_plan_are_none():
    import scipy.sparse as sp
    model = Transport(np.zeros((2, 2)), np.ones((2, 2)))
    empty = sp.csr_matrix((1, 1))
    assert refined_plan(empty, np.zeros(2, np.int64), np.zeros(2, np.int64), np.arange(2), np.arange(2), model) is None
    assert refined_tree(None, model) is None and refined_tree(sp.csr_matrix((2, 2)), model) is None


def test_a_stop_in_the_first_fine_round_keeps_the_refined_coarse_plan():
    """A stop after the coarse levels returns the coarse optimum refined (far better than the
    north-west quick plan) and the coarse potentials' certified bound."""
    x, y, _, _ = clouds(2000, 2000, 2, 8)
    model = Transport(x, y, p=2)
    exact = model.solve("exact").objective
    r, fine = solve_stopped_at_the_fine_level(model)
    assert r.termination is Termination.TIME_LIMIT
    check_plan(model, r)
    assert r.objective < 1.5 * exact and r.bound <= exact * (1 + 1e-9)
    assert r.bound > 0.5 * exact


@pytest.mark.parametrize("engine", ["auto", "costscaling"])
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), d=st.sampled_from([2, 3]), p=st.sampled_from([1.0, 1.5, 2.0]),
       masses=st.booleans(), metric=st.sampled_from(sorted(METRIC)))
@example(seed=16224, d=2, p=1.5, masses=False, metric="chebyshev")    # the reference LP's old tolerance failed it
def test_multiscale_plan_is_feasible_and_its_bound_below_the_optimum(engine, seed, d, p, masses, metric):
    """Against HiGHS on the full LP: a feasible plan, W_p(plan) >= OPT >= bound, the reported
    gap the real one, OPTIMAL only when the bound meets the plan. ``costscaling``: every level's
    flows by warm cost scaling to a resolution (where the masses are multiples of one unit)."""
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(40, 120)), int(rng.integers(40, 120))
    x, y, a, b = clouds(n, m, d, seed, masses)
    model = Transport(x, y, a=a, b=b, p=p, metric=metric)
    with patch.object(se, "COARSEST", 40):         # coarse levels at this size too
        r = model.solve("approx", graph="multiscale", engine=engine)
    check_plan(model, r)
    opt = max(transport_lp(cdist(x, y, metric) ** p, model.a, model.b), 0.0) ** (1.0 / p)
    assert r.objective >= opt * (1 - 1e-9)
    assert r.bound <= opt * (1 + 1e-9)
    assert r.stats["levels"] and r.stats["graph"] == "multiscale"
    assert r.guarantee is None or "factor" not in str(r.guarantee)
    if r.termination is Termination.OPTIMAL:
        assert r.objective - r.bound <= 1e-6 * opt
    else:
        assert r.termination is Termination.FEASIBLE_WITHIN_GAP
        # the target, every round, or a round that added no pair (more rounds would not close the gap)
        assert (r.bound >= ams.TARGET * r.objective or r.stats["rounds"] == ams.ROUNDS
                or r.stats.get("no_new_pairs"))


def test_multiscale_at_one_round_states_the_measured_gap(monkeypatch):
    """Stopped after the first restricted optimum: never OPTIMAL unless proven, the gap reported
    matches the plan and the bound, and the bound stays below ``exact``'s optimum."""
    monkeypatch.setattr(ams, "ROUNDS", 1)
    x, y, _, _ = clouds(1500, 1500, 2, 11)
    model = Transport(x, y, p=2)
    r = model.solve("approx", graph="multiscale")
    check_plan(model, r)
    exact = model.solve("exact")
    assert exact.termination is Termination.OPTIMAL
    assert r.bound <= exact.objective * (1 + 1e-9) <= r.objective * (1 + 1e-9)
    assert r.stats["rounds"] == 1
    if r.termination is not Termination.OPTIMAL:
        assert r.gap == pytest.approx((r.objective - r.bound) / r.objective, rel=1e-6, abs=1e-12)


def test_sparse_exact_from_the_warm_tree_stays_exact():
    x, y, a, b = clouds(900, 800, 2, 5, masses=True)
    model = Transport(x, y, a=a, b=b, p=1)
    r = model.solve("sparse-exact")
    assert r.termination is Termination.OPTIMAL
    assert r.objective == pytest.approx(model.solve("exact").objective, rel=1e-7)


def test_multiscale_stops_with_a_feasible_plan():
    x, y, _, _ = clouds(3000, 3000, 2, 1)
    model = Transport(x, y, p=2)
    r = model.solve("approx", graph="multiscale", time_limit=1e-4)
    assert r.termination is Termination.TIME_LIMIT
    check_plan(model, r)
    assert r.bound is None or r.bound <= r.objective


def test_multiscale_refuses_what_it_cannot_certify():
    x, y, _, _ = clouds(10, 10, 2, 0)
    with pytest.raises(ModelError, match="multiscale"):
        Transport(x, y, p=float("inf")).solve("approx", graph="multiscale")
    with pytest.raises(ModelError, match="multiscale"):
        Transport(cost=cdist(x, y)).solve("approx", graph="multiscale")


def test_auto_graph_takes_multiscale_for_large_point_clouds():
    """graph="auto" runs the auction on the full matrix for assignment problems where it applies,
    then the multiscale pricing from MULTISCALE_FROM_PAIRS pairs on (points with a named metric,
    d <= 3, finite p), stating its certified factor, and the two-hop graph (with its factor 3)
    below it, for other engines, or where the multiscale plan is not proven within factor 3; p =
    inf takes the grid of cells from GRID_FROM_PAIRS pairs."""
    import solvopt.transport.approx as approx
    x, y, _, _ = clouds(300, 300, 2, 4)
    small = Transport(x, y, p=1).solve("approx")                 # n = m, uniform masses: the auction
    assert small.stats["graph"] == "dense" and 1.0 <= small.stats["factor"] <= 3.0
    unequal = Transport(x, y[:299], p=1)
    assert unequal.solve("approx").stats["graph"] == "two-hop"
    with patch.object(approx, "MULTISCALE_FROM_PAIRS", 300 * 299):
        big = unequal.solve("approx")
        assert big.stats["graph"] == "multiscale" and 1.0 <= big.stats["factor"] <= 1.05
        assert big.bound == pytest.approx(big.objective / big.stats["factor"], rel=1e-12)
        assert big.guarantee is not None and "proven" in big.guarantee
        assert unequal.solve("approx", engine="ortools").stats["graph"] == "two-hop"     # no potentials
        assert unequal.solve("approx", certificate="factor").stats["graph"] == "two-hop"  # the fastest bound
        with patch.object(approx, "MAX_FACTOR", 1.0):                # not proven within the factor
            fallback = unequal.solve("approx")
        assert fallback.stats["graph"] == "two-hop" and "multiscale_gave_up" in fallback.stats
        assert fallback.stats["factor"] == pytest.approx(3.0)
    with patch.object(approx, "GRID_FROM_PAIRS", 300 * 300):
        assert Transport(x, y, p=float("inf")).solve("approx").stats["graph"] == "grid"    # the grid of cells


@pytest.mark.parametrize("engine", ["costscaling", "highs"])
def test_multiscale_fine_rounds_on_other_engines(engine):
    """Any engine with potentials runs the fine rounds (the c-transform certifies whatever
    potentials it gives); one without is refused."""
    x, y, _, _ = clouds(700, 700, 2, 6)
    model = Transport(x, y, p=2)
    r = model.solve("approx", graph="multiscale", engine=engine)
    check_plan(model, r)
    assert r.stats["engine"] == engine
    assert (r.stats["resolution"] is not None) == (engine == "costscaling")
    assert r.bound <= model.solve("exact").objective * (1 + 1e-9) <= r.objective * (1 + 1e-9)
    with pytest.raises(ModelError, match="potentials"):
        model.solve("approx", graph="multiscale", engine="ortools")
