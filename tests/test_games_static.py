"""Static pseudo-games: utilities, projections, certified exploitability, extragradient / nested.

References: Harker's game (VE (5, 9), GNE segment {(t, 15 - t) : 9 <= t <= 10}), the river-basin
game (VE about (21.1448, 16.0279, 2.7260), Krawczyk-Uryasev), closed forms, brute-force grids,
finite differences (oracle only), scipy's SLSQP as an independent projection.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from solvopt.core.errors import ModelError
from solvopt.core.result import Termination
from solvopt.dsl.games import PseudoGame
from solvopt.dsl.utilities import CES, CobbDouglas, Leontief, Linear, Logarithmic
from solvopt.games.exploitability import joint_polyhedron, static_exploitability, ve_gap
from solvopt.games.projection import Polyhedron, project_budget, project_simplex

RIVER_VE = np.array([21.1448, 16.0279, 2.7260])


def harker(callables: bool = False) -> PseudoGame:
    g = PseudoGame("harker")
    x1 = g.player("x1", lb=0, ub=10)
    x2 = g.player("x2", lb=0, ub=10)
    if callables:  # the same utilities as user callables with exact gradients (projected-ascent path)
        g.utility(x1, lambda a: -(a[0] ** 2 + 8 / 3 * a[0] * a[1] - 34 * a[0]),
                  lambda a: -np.array([2 * a[0] + 8 / 3 * a[1] - 34, 8 / 3 * a[0]]))
        g.utility(x2, lambda a: -(a[1] ** 2 + 5 / 4 * a[0] * a[1] - 24.25 * a[1]),
                  lambda a: -np.array([5 / 4 * a[1], 2 * a[1] + 5 / 4 * a[0] - 24.25]))
    else:
        g.minimize(x1, x1 * x1 + (8 / 3) * x1 * x2 - 34 * x1)
        g.minimize(x2, x2 * x2 + (5 / 4) * x1 * x2 - 24.25 * x2)
    g.share(x1 + x2 <= 15)
    return g


def river_basin() -> PseudoGame:
    g = PseudoGame("river")
    d1, d2 = 3.0, 0.01
    c1, c2, e = [0.1, 0.12, 0.15], [0.01, 0.05, 0.01], [0.5, 0.25, 0.75]
    u = np.array([[6.5, 4.583], [5, 6.25], [5.5, 3.75]])
    xs = [g.player(f"x{j + 1}", lb=0) for j in range(3)]
    total = xs[0] + xs[1] + xs[2]
    for j, x in enumerate(xs):
        g.minimize(x, (c1[j] + c2[j] * x) * x - (d1 - d2 * total) * x)
    for m in range(2):
        g.share(sum(u[j, m] * e[j] * xs[j] for j in range(3)) <= 100)
    return g


def harker_costs(a):
    x1, x2 = a
    return np.array([x1 * x1 + 8 / 3 * x1 * x2 - 34 * x1, x2 * x2 + 5 / 4 * x1 * x2 - 24.25 * x2])


def brute_harker_exploitability(a, grid=200001):
    """max over a fine grid of each player's feasible interval (independent of every solver)."""
    x1, x2 = a
    total = 0.0
    b1 = np.linspace(0, min(10, 15 - x2), grid)
    total += np.max(-(b1 * b1 + 8 / 3 * b1 * x2 - 34 * b1)) + harker_costs(a)[0]
    b2 = np.linspace(0, min(10, 15 - x1), grid)
    total += np.max(-(b2 * b2 + 5 / 4 * x1 * b2 - 24.25 * b2)) + harker_costs(a)[1]
    return total


# --- utilities ----------------------------------------------------------------------------
FORMS = [Linear([1.0, 2.0, 0.5]), CobbDouglas([0.2, 0.5, 0.3]), CES([1.0, 2.0, 0.5], 0.5), CES([1.0, 2.0, 0.5], -2.0),
         Logarithmic([1.0, 2.0, 0.5])]


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f"{f.kind}{getattr(f, 'rho', '')}")
def test_utility_gradients_match_finite_differences(form):
    rng = np.random.default_rng(1)
    for _ in range(5):
        x = rng.uniform(0.5, 3.0, 3)
        fd = np.array([(form.value(x + h) - form.value(x - h)) / 2e-6 for h in np.eye(3) * 1e-6])
        np.testing.assert_allclose(form.gradient(x), fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("form", FORMS + [Leontief([1.0, 2.0, 0.5])], ids=lambda f: f"{f.kind}{getattr(f, 'rho', '')}")
def test_demand_is_affordable_and_beats_random_affordable_bundles(form):
    rng = np.random.default_rng(2)
    p, budget = np.array([1.0, 3.0, 0.7]), 2.5
    x = form.demand(p, budget)
    assert np.all(x >= 0) and p @ x == pytest.approx(budget, rel=1e-12)
    best = form.indirect(p, budget)
    assert best == pytest.approx(form.value(x), rel=1e-12)
    shares = rng.dirichlet(np.ones(3), 2000) * budget / p          # random bundles on the budget line
    assert np.max(form.value(shares)) <= best * (1 + 1e-12)
    # and the demand satisfies the KKT conditions (gradient proportional to prices where x > 0)
    if form.kind in ("cobb_douglas", "ces", "log"):
        g = form.gradient(x)
        ratio = g / p
        active = x > 1e-12
        assert np.ptp(ratio[active]) <= 1e-9 * np.max(ratio)
        assert np.all(ratio[~active] <= np.max(ratio[active]) * (1 + 1e-9))


def test_leontief_supergradient_and_batched_rows():
    u = Leontief([[1.0, 2.0], [2.0, 1.0]])
    x = np.array([[2.0, 2.0], [2.0, 2.0]])
    np.testing.assert_allclose(u.value(x), [1.0, 1.0])
    g = u.gradient(x)
    for i in range(2):  # supergradient inequality u(y) <= u(x) + g.(y - x) on random y
        y = np.random.default_rng(i).uniform(0, 4, (100, 2))
        assert np.all(Leontief(u.weights[i]).value(y) <= u.value(x)[i] + (y - x[i]) @ g[i] + 1e-12)


def test_non_concave_forms_are_refused():
    with pytest.raises(ModelError, match="non-concave"):
        CobbDouglas([0.7, 0.6])
    with pytest.raises(ModelError, match="rho"):
        CES([1.0, 1.0], 1.5)
    with pytest.raises(ModelError, match="NaN"):
        Linear([1.0, np.nan])


# --- projections --------------------------------------------------------------------------
def _slsqp_projection(z, cons, bounds):
    res = minimize(lambda x: 0.5 * np.sum((x - z) ** 2), np.clip(z, 0, None), jac=lambda x: x - z,
                   constraints=cons, bounds=bounds, method="SLSQP", options={"ftol": 1e-14, "maxiter": 500})
    return res.x


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-5, 5), min_size=2, max_size=6), st.floats(0.1, 4))
def test_simplex_projection_is_the_nearest_point(z, total):
    z = np.asarray(z)
    x = project_simplex(z, total)
    assert np.all(x >= 0) and x.sum() == pytest.approx(total)
    # optimality: z - x = theta on the support, <= theta off it
    theta = (z - x)[x > 0]
    assert np.ptp(theta) <= 1e-9 and np.all((z - x)[x == 0] <= theta.max() + 1e-9)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-3, 5), min_size=2, max_size=5), st.floats(0.1, 3), st.integers(0, 10 ** 6))
def test_budget_projection_matches_the_polyhedron_qp(z, budget, seed):
    z = np.asarray(z)
    p = np.random.default_rng(seed).uniform(0.2, 2.0, z.size)
    x = project_budget(z, p, budget)
    ref = Polyhedron(np.zeros(z.size), np.full(z.size, np.inf), p[None, :], [-np.inf], [budget]).project(z)
    # the reference is HiGHS's QP, accurate to its ~1e-6 tolerances: hypothesis found z = (1e-6, -1),
    # budget 1, where the closed form's (1e-6, 0) is the projection and HiGHS returned (0, 0)
    np.testing.assert_allclose(x, ref, atol=2e-6)
    assert p @ x <= budget + 1e-12


def test_polyhedron_projection_is_exact_and_matches_slsqp():
    P = joint_polyhedron(river_basin().data())
    z = np.array([40.0, 30.0, 10.0])
    x = P.project(z)
    cons = [{"type": "ineq", "fun": lambda y, r=r: P.hi[r] - P.A[r].toarray().ravel() @ y} for r in range(2)]
    ref = _slsqp_projection(z, cons, [(0, None)] * 3)
    np.testing.assert_allclose(x, ref, atol=1e-6)
    assert P.violation(x) <= 1e-12          # the KKT polish lands on the face exactly


# --- exploitability -------------------------------------------------------------------------
@pytest.mark.parametrize("t", [9.0, 9.25, 9.5, 10.0])
def test_harker_exploitability_vanishes_on_the_gne_segment(t):
    e = static_exploitability(harker().data(), np.array([t, 15 - t]))
    assert e.certified and e.value <= 1e-9


@pytest.mark.parametrize("a", [(5.0, 9.0), (4.0, 9.0), (8.0, 7.0), (0.0, 0.0), (2.0, 3.5)])
def test_harker_exploitability_matches_a_brute_force_grid(a):
    a = np.asarray(a)
    e = static_exploitability(harker().data(), a)
    ref = brute_harker_exploitability(a)
    assert e.lower <= e.value + 1e-12
    assert e.value == pytest.approx(ref, abs=1e-6)
    assert e.value >= ref - 1e-12            # an upper bound, never below the truth


def test_callable_utilities_give_the_same_certified_exploitability():
    for a in ([4.0, 9.0], [8.0, 7.0], [5.0, 9.0]):
        quad = static_exploitability(harker().data(), np.array(a))
        call = static_exploitability(harker(callables=True).data(), np.array(a))
        assert call.value == pytest.approx(quad.value, abs=1e-7)
        assert call.value >= quad.lower - 1e-9


def test_ve_gap_separates_the_ve_from_other_gnes():
    d = harker().data()
    assert ve_gap(d, np.array([5.0, 9.0])).value <= 1e-9
    assert ve_gap(d, np.array([9.5, 5.5])).value > 1e-2   # a GNE, not the VE


# --- solvers --------------------------------------------------------------------------------
def test_extragradient_returns_harkers_ve():
    r = harker().solve(tolerance=1e-14)  # relative to the payoff scale (340: 34 along the actions' range of 10)
    assert r.method == "extragradient" and r.termination is Termination.OPTIMAL and r.stats["payoff_scale"] == 340.0
    np.testing.assert_allclose(r.solution["actions"], [5.0, 9.0], atol=1e-5)
    assert r.objective <= 34e-14 and r.stats["ve_gap"] <= 34e-14
    assert r.objective == pytest.approx(static_exploitability(harker().data(), r.solution["actions"]).value)


@pytest.mark.parametrize("method", ["extragradient", "nested"])
def test_river_basin_ve(method):
    r = river_basin().solve(method=method, tolerance=1e-10)
    assert r.termination is Termination.OPTIMAL
    np.testing.assert_allclose(r.solution["actions"], RIVER_VE, atol=2e-4)
    np.testing.assert_allclose(r.solution["players"]["x1"], RIVER_VE[0], atol=2e-4)


def test_nested_reaches_harkers_ve():
    r = harker().solve(method="nested", tolerance=1e-13)     # relative to the payoff scale 340
    assert r.method == "nested" and r.termination is Termination.OPTIMAL
    np.testing.assert_allclose(r.solution["actions"], [5.0, 9.0], atol=1e-5)


def test_loose_tolerance_is_feasible_within_gap_not_optimal():
    r = harker().solve(tolerance=1e-3, check_every=5, polish=False)    # the polish would land on the VE exactly
    assert r.termination is Termination.FEASIBLE_WITHIN_GAP       # reached the user's tolerance, not 1e-9
    assert 340e-9 < r.objective <= 340e-3 and r.bound == 0.0      # both relative to the payoff scale 340


def test_iteration_limit_returns_the_best_certified_iterate():
    r = harker().solve(iteration_limit=3, check_every=1, polish=False)    # the polish would finish at once
    assert r.termination is Termination.ITERATION_LIMIT and r.ok
    assert r.objective == min(h[2] for h in r.stats["history"])
    assert r.objective == pytest.approx(static_exploitability(harker().data(), r.solution["actions"]).value)


def test_callable_game_solves_with_extragradient():
    r = harker(callables=True).solve(tolerance=1e-8)
    np.testing.assert_allclose(r.solution["actions"], [5.0, 9.0], atol=1e-3)


# --- bad inputs -------------------------------------------------------------------------------
def test_infeasible_shared_constraints():
    g = harker()
    x1, x2 = g.model.vars
    g.share(x1 + x2 >= 25)
    with pytest.raises(ModelError, match="empty"):
        g.solve()


def test_non_concave_utility_is_refused():
    g = PseudoGame()
    x = g.player("x", lb=0, ub=1)
    y = g.player("y", lb=0, ub=1)
    g.maximize(x, x * x + x * y)
    g.maximize(y, -y * y)
    with pytest.raises(ModelError, match="not concave"):
        g.solve()


def test_nan_data_is_refused():
    g = PseudoGame()
    x = g.player("x", lb=0, ub=1)
    with pytest.raises(ModelError):
        g.maximize(x, float("nan") * x)
        g.solve()


def test_a_players_coupled_row_makes_a_generalized_nash_problem():
    g = harker()
    x1, x2 = g.model.vars
    g.constrain(x1, x1 + x2 <= 12)          # binds x1 only: a GNEP proper, solved by gnep-kkt
    assert g.data().concept == "GNE" and g.default_method == "gnep-kkt"
    with pytest.raises(ModelError, match="gnep-kkt"):
        g.solve(method="extragradient")


def test_player_without_utility():
    g = PseudoGame()
    g.player("x", lb=0, ub=1)
    with pytest.raises(ModelError, match="no utility"):
        g.solve()


def test_stop_request_and_time_limit_return_the_best_certified_point():
    from solvopt.core.interrupt import request_stop
    lines = []

    def log(line):          # called at each certification: ask to stop at the third, as Ctrl-C would
        lines.append(line)
        if len(lines) == 3:
            request_stop()

    r = harker().solve(log=log, check_every=1, tolerance=1e-14, polish=False)
    assert r.termination is Termination.INTERRUPTED and r.ok
    assert r.objective == pytest.approx(static_exploitability(harker().data(), r.solution["actions"]).value)
    r = harker().solve(time_limit=1e-3, tolerance=1e-14)
    assert r.termination is Termination.TIME_LIMIT and r.ok and r.objective > 0
