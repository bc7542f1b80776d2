"""Certified global best responses of one-variable players (branch and bound) and problem A.2.

References: dense grids polished by a local method (scipy), and the closed-form equilibria of A.2.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from solvopt.core.errors import ModelError
from solvopt.dsl import ScalarGame
from solvopt.games.gnep_library_extra import PUBLISHED, PUBLISHED_SECOND, a2, a2_game, switching_derivative_range
from solvopt.games.scalar_equilibrium import best_response, scalar_exploitability
from solvopt.games.scalar_global import global_maximum, interval_bound


def grid_maximum(f, lo, hi, points=20001, f_grid=None):
    """The best of a dense grid, each of the five best grid points polished by scipy's bounded Brent.

    ``f_grid``, if given, is f evaluated on the whole grid at once (same values, one NumPy call)."""
    t = np.linspace(lo, hi, points)
    v = np.array([f(s) for s in t]) if f_grid is None else np.asarray(f_grid(t), dtype=float)
    best = v.max()
    step = (hi - lo) / (points - 1)
    for k in np.argsort(-v)[:5]:
        a, b = max(lo, t[k] - step), min(hi, t[k] + step)
        if b > a:
            res = minimize_scalar(lambda s: -f(s), bounds=(a, b), method="bounded", options={"xatol": 1e-13})
            best = max(best, -res.fun)
    return best


def trig(coef):
    """f(x) = sum_k a_k sin(w_k x + c_k) + q x^2 with f', the curvature bound sum a_k w_k^2 + 2|q| and f on a grid."""
    a, w, c, q = coef

    def f(x):
        return float(np.sum(a * np.sin(w * x + c)) + q * x * x)

    def df(x):
        return float(np.sum(a * w * np.cos(w * x + c)) + 2 * q * x)

    def f_grid(t):
        return np.sin(t[:, None] * w + c) @ a + q * t * t
    return f, df, float(np.sum(np.abs(a) * w * w) + 2 * abs(q)), f_grid


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(0, 10 ** 6))
def test_global_maximum_of_random_nonconcave_functions(terms, seed):
    rng = np.random.default_rng(seed)
    coef = (rng.normal(size=terms), rng.uniform(0.5, 12, terms), rng.uniform(0, 6, terms), rng.normal() * 0.5)
    f, df, M, f_grid = trig(coef)
    lo = float(rng.uniform(-3, 0))
    hi = lo + float(rng.uniform(0.1, 4))
    r = global_maximum(f, lo, hi, df=df, curvature=M, tol=1e-10)
    ref = grid_maximum(f, lo, hi, f_grid=f_grid)
    assert lo <= r.x <= hi and r.value == pytest.approx(f(r.x))
    assert r.upper >= ref - 1e-12                 # the bound is a bound
    assert r.value >= ref - 2e-10                 # and the point is globally optimal to the tolerance
    assert r.gap <= 1e-10 + 1e-12


def test_interval_bound_cases():
    assert interval_bound(1.0, 0.0, -2.0, -1.0, 1.0) == pytest.approx(1.0)     # decreasing: the left end
    assert interval_bound(0.0, 1.0, 1.0, 2.0, 1.0) == pytest.approx(1.0)       # increasing: the right end
    # a tent of slopes +1 and -1 from two zero ends of an interval of width 2 peaks at 1
    assert interval_bound(0.0, 0.0, -1.0, 1.0, 2.0) == pytest.approx(1.0)


def test_global_maximum_refuses_bad_input():
    f = lambda x: -x * x                          # noqa: E731
    with pytest.raises(ModelError, match="derivative_range"):
        global_maximum(f, 0.0, 1.0)
    with pytest.raises(ModelError, match="interval"):
        global_maximum(f, 1.0, 0.0, df=lambda x: -2 * x, curvature=2.0)
    with pytest.raises(ModelError, match="curvature"):
        global_maximum(f, 0.0, 1.0, df=lambda x: -2 * x, curvature=-1.0)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 9), st.integers(0, 10 ** 6))
def test_switching_derivative_enclosure_holds(i, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.01, 0.2, 10)
    lo = float(rng.uniform(0.01, 0.3))
    hi = lo + float(rng.uniform(0, 0.3))
    d_lo, d_hi = switching_derivative_range(x, i, lo, hi, 2 if 1 <= i <= 4 else 1)
    game = a2_game()
    for t in np.linspace(lo, hi, 50):
        z = x.copy()
        z[i] = t
        d = game.players[i].derivative(z)
        assert d_lo - 1e-12 <= d <= d_hi + 1e-12


def test_a2_utilities_are_not_concave_in_the_own_action():
    """Player 2's utility at the equilibrium has positive curvature on part of its interval."""
    game = a2_game()
    x = np.array([0.3, 0.01, 0.01, 0.01, 0.61, 0.01, 0.01, 0.01, 0.01, 0.01])
    lo, hi = game.interval(1, x)
    t = np.linspace(lo, hi, 201)
    u = np.array([game.players[1].utility(np.r_[x[:1], s, x[2:]]) for s in t])
    assert np.max(np.diff(u, 2)) > 0


def grid_regret(game, x, i):
    """Player i's best utility on a dense grid of its interval (polished) minus its own."""
    lo, hi = game.interval(i, x)

    def f(s):
        z = x.copy()
        z[i] = s
        return game.players[i].utility(z)
    return grid_maximum(f, lo, hi) - f(x[i])


@pytest.mark.parametrize("start", ["default", "published", "second"])
def test_a2_gne_certified_and_checked_on_grids(start):
    game = a2_game()
    options = {} if start == "default" else {"start": PUBLISHED if start == "published" else PUBLISHED_SECOND}
    result = game.solve(**options)
    assert result.termination.value == "optimal" and result.objective <= 1e-9
    x = result.solution["actions"]
    # the closed-form equilibria: x1 = 0.3, the players at 0.01, x5 + x6 = 0.62
    expected = np.full(10, 0.01)
    expected[0] = 0.3
    mask = np.ones(10, bool)
    mask[[4, 5]] = False
    assert np.allclose(x[mask], expected[mask], atol=1e-12)
    assert x[4] + x[5] == pytest.approx(0.62, abs=1e-12) and min(x[4], x[5]) >= 0.01 - 1e-12
    for i in range(10):
        lo, hi = game.interval(i, x)
        assert lo - 1e-12 <= x[i] <= hi + 1e-12
        assert grid_regret(game, x, i) <= 1e-12
    if start == "published":        # from the published point: its split of x5 + x6 is kept
        assert x[5] == pytest.approx(PUBLISHED[5], abs=1e-12)


def test_a2_published_points_are_outside_the_bounds():
    game = a2_game()
    for point in (PUBLISHED, PUBLISHED_SECOND):
        e = scalar_exploitability(game, point)
        assert not e.certified                    # x1 < 0.3 and players below 0.01
        assert point[0] < 0.3 and point[1:].min() < 0.01


def test_a2_library_layout_matches_the_game():
    problem, game = a2(), a2_game()
    x = np.array([0.3, 0.01, 0.01, 0.01, 0.6, 0.02, 0.01, 0.01, 0.01, 0.01])
    for i in range(10):
        assert -problem.cost(i, x) == pytest.approx(game.players[i].utility(x))
        h = 1e-7
        fd = (problem.cost(i, x + h * np.eye(10)[i]) - problem.cost(i, x - h * np.eye(10)[i])) / (2 * h)
        assert problem.cost_gradient(i, x)[i] == pytest.approx(fd, rel=1e-6)
    assert problem.concept == "GNE" and not problem.unique and problem.coupled


def test_best_response_can_be_far_from_the_local_one():
    """A two-player game whose best response is the far end of the interval, past a local maximum."""
    game = ScalarGame("two")
    # u_0(x) = -(x0 - 0.2)^2 (x0 - 0.9)^2 + 0.1 x0 x1: local maxima near both ends, the right one higher
    game.player("a", 0.0, 1.0, lambda x: -(x[0] - 0.2) ** 2 * (x[0] - 0.9) ** 2 + 0.1 * x[0] * x[1],
                lambda x: -2 * (x[0] - 0.2) * (x[0] - 0.9) * (2 * x[0] - 1.1) + 0.1 * x[1],
                curvature=lambda x, lo, hi: 12 * 1.0 + 2 * 1.1 * 3 + 2 * 0.18 + 1.0)
    game.player("b", 0.0, 1.0, lambda x: -(x[1] - 0.5) ** 2, lambda x: -2 * (x[1] - 0.5),
                derivative_range=lambda x, lo, hi: (-2 * (hi - 0.5), -2 * (lo - 0.5)))
    result = game.solve(start=[0.1, 0.5])
    x = result.solution["actions"]
    assert result.termination.value == "optimal"
    assert x[0] > 0.8 and x[1] == pytest.approx(0.5)
    gm, _ = best_response(game, 0, np.array([0.2, 0.5]), 1e-12)
    assert gm.x > 0.8


def test_scalar_game_refuses_bad_input():
    game = ScalarGame()
    u, du = (lambda x: -x[0] ** 2), (lambda x: -2 * x[0])
    with pytest.raises(ModelError, match="exactly one"):
        game.player("a", 0, 1, u, du)
    with pytest.raises(ModelError, match="finite"):
        game.player("a", 0, np.inf, u, du, curvature=lambda x, lo, hi: 2.0)
    game.player("a", 0, 1, u, du, curvature=lambda x, lo, hi: 2.0)
    with pytest.raises(ModelError, match="already"):
        game.player("a", 0, 1, u, du, curvature=lambda x, lo, hi: 2.0)
    with pytest.raises(ModelError, match="coefficient 0"):
        game.constrain(0, [0.0], 0, 1)
    with pytest.raises(ModelError, match="coefficients"):
        game.constrain(0, [1.0, 2.0], 0, 1)
    with pytest.raises(ModelError, match="start"):
        game.solve(start=[1.0, 2.0])


def test_scalar_status_does_not_depend_on_a_players_utility_units():
    """Player 5's utility times 1e6 (its derivative enclosure too): the same point, status and measure."""
    base = a2_game()
    scaled = a2_game()
    p = scaled.players[4]
    u, du, rng_ = p.utility, p.derivative, p.derivative_range
    p.utility = lambda x: 1e6 * u(x)
    p.derivative = lambda x: 1e6 * du(x)
    p.derivative_range = lambda x, lo, hi: tuple(1e6 * v for v in rng_(x, lo, hi))
    r0, r1 = base.solve(start=PUBLISHED), scaled.solve(start=PUBLISHED)
    assert r0.termination == r1.termination
    assert np.allclose(r0.solution["actions"], r1.solution["actions"], atol=1e-12)
    assert r1.objective == pytest.approx(r0.objective, abs=1e-12)


@pytest.mark.parametrize("factor", [1e-12, 1e12])
def test_scalar_status_does_not_depend_on_every_utility_units(factor):
    """Every cost times 1e-12 or 1e12 (the A.2 file's trees): optimal on the same segment, the same
    measure. Before, 1e-12 stopped at once (the gains fell under an absolute floor) and 1e12 spent
    its branch and bound on rounding."""
    from solvopt.games.scaling import scalar_a2
    r0, r1 = scalar_a2(1.0).solve(), scalar_a2(factor).solve()
    assert r0.termination.value == r1.termination.value == "optimal"
    assert np.allclose(r0.solution["actions"], r1.solution["actions"], atol=1e-12)
    assert r1.objective <= 1e-9 and r1.stats["iterations"] == r0.stats["iterations"]


def test_scalar_game_of_a_library_problem_with_concave_players_matches_its_equilibrium():
    """A.14 (concave switching utilities, equilibrium x_i = 0.09) through the same converter: scalar-global
    finds the library's closed-form equilibrium; a problem with vector players is refused."""
    from solvopt.games.gnep_library import problem
    from solvopt.games.gnep_library_extra import scalar_game
    game = scalar_game(problem("A.14"), lambda x, i, lo, hi: switching_derivative_range(x, i, lo, hi, 1))
    result = game.solve(start=np.full(10, 0.05), tolerance=1e-10)
    assert result.termination.value == "optimal"
    assert np.allclose(result.solution["actions"], 0.09, atol=1e-6)
    with pytest.raises(ModelError, match="one-variable"):
        scalar_game(problem("A.7"), lambda x, i, lo, hi: (0.0, 0.0))


def test_a_stopped_run_still_names_its_equilibrium():
    """With a point or without one (a deadline before the first certificate), the result says GNE."""
    for limit in (1e-9, 60.0):
        r = a2_game().solve(time_limit=limit)
        assert r.stats["equilibrium"] == "GNE"
        assert r.termination.value in ("time_limit", "optimal")
