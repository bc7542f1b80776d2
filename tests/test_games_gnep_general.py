"""Generalized Nash problems proper: player-specific coupled rows, the gnep-kkt method, its certificates.

Every equilibrium is checked from outside solvopt: scipy's SLSQP best response of each player
over its true feasible set (its bounds and rows with the others' actions fixed), through
:meth:`solvopt.games.gnep_library.GNEP.scipy_regrets`.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from solvopt.core.errors import ModelError
from solvopt.dsl import PseudoGame
from solvopt.games.exploitability import static_exploitability
from solvopt.games.gnep_library import GENERAL, GNEP, Rows, _quadratic, problem


def harker_gne() -> PseudoGame:
    """Harker's game with its coupling row binding player 1 only."""
    g = PseudoGame("harker_gne")
    x1 = g.player("x1", lb=0, ub=10)
    x2 = g.player("x2", lb=0, ub=10)
    g.minimize(x1, x1 * x1 + (8 / 3) * x1 * x2 - 34 * x1)
    g.minimize(x2, x2 * x2 + (5 / 4) * x1 * x2 - 24.25 * x2)
    g.constrain(x1, x1 + x2 <= 12)
    return g


def test_harker_with_a_player_specific_row():
    g = harker_gne()
    assert g.data().concept == "GNE" and g.default_method == "gnep-kkt"
    r = g.solve()
    assert r.method == "gnep-kkt" and r.termination == "optimal"
    assert r.stats["equilibrium"] == "GNE" and "generalized Nash" in r.guarantee
    # player 2 has only its bounds [0, 10]; player 1 is capped at 12 - x2 as well
    x1, x2 = r.solution["actions"]
    assert x2 == pytest.approx(np.clip((24.25 - 1.25 * x1) / 2, 0, 10), abs=1e-6)
    assert x1 == pytest.approx(np.clip(17 - 4 / 3 * x2, 0, 12 - x2), abs=1e-6)


@pytest.mark.parametrize("name", sorted(GENERAL))
def test_library_gnep_solved_and_checked_by_scipy(name):
    p = problem(name)
    r = p.model().solve(time_limit=30)
    assert r.termination == "optimal", (name, r.termination, r.objective)
    x = r.solution["actions"]
    regrets = p.scipy_regrets(x)
    assert regrets.max() <= 1e-6, (name, regrets)
    # the certificate bounds the true regret (SLSQP's accuracy aside)
    assert r.objective >= regrets.sum() - 1e-7
    assert p.concept == "GNE" and p.coupled


def test_library_published_points_are_near_equilibria():
    for name in GENERAL:
        p = problem(name)
        assert p.scipy_regrets(np.clip(p.published, p.lb, p.ub)).max() <= 1e-5, name


def test_a8_lands_on_the_segment_of_equilibria():
    x = problem("A.8").model().solve().solution["actions"]
    t = x[0]
    assert 0.5 - 1e-9 <= t <= 2 / 3 + 1e-9
    assert x[1] == pytest.approx(1 - t, abs=1e-8) and x[2] == pytest.approx(1.5 * t, abs=1e-8)


def test_ve_model_keeps_its_method_and_gnep_kkt_finds_a_gne_there():
    from tests.test_games_static import harker
    g = harker()
    assert g.data().concept == "VE" and g.default_method == "extragradient"
    ve = g.solve()
    assert ve.method == "extragradient" and ve.stats["equilibrium"] == "VE" and "ve_gap" in ve.stats
    assert np.allclose(ve.solution["actions"], [5, 9], atol=1e-4)
    gne = g.solve(method="gnep-kkt")
    assert gne.termination == "optimal" and gne.stats["equilibrium"] == "GNE"
    x1, x2 = gne.solution["actions"]
    # a GNE of the shared row x1 + x2 <= 15: each player's best response given the other
    assert x1 == pytest.approx(min(17 - 4 / 3 * x2, 15 - x2), abs=1e-6)
    assert x2 == pytest.approx(min((24.25 - 1.25 * x1) / 2, 15 - x1), abs=1e-6)


def test_a_row_without_its_players_variable_is_refused():
    g = harker_gne()
    x1, x2 = g.model.vars
    g.constrain(x1, x2 <= 3)
    with pytest.raises(ModelError, match="does not involve any of its own variables"):
        g.data()


def test_variational_methods_refuse_player_specific_rows():
    for method in ("extragradient", "nested"):
        with pytest.raises(ModelError, match="gnep-kkt"):
            harker_gne().solve(method=method)


def test_iteration_limit_returns_a_certified_point_with_an_honest_status():
    r = problem("A.7").model().solve(iteration_limit=1, start=np.full(20, 3.0))
    assert r.solution["actions"] is not None
    assert r.termination in ("optimal", "iteration_limit")
    if r.termination != "optimal":
        assert r.solution_status != "optimal"


# --- random small GNEPs with player-specific rows ------------------------------------------------
def random_gnep(seed: int, sizes, shared: bool = False, own: float | None = None, cross: float = 1.0) -> GNEP:
    """Strongly monotone quadratic costs, box [-3, 3], one player-specific coupled row per player that
    every action of the others leaves feasible (so each feasible set is never empty); ``shared`` adds
    a shared row sum(x) <= r that the origin satisfies. ``own`` (default 2n) and ``cross`` set the
    own curvature and the coupling: small ``own`` and large ``cross`` make games that are not monotone."""
    rng = np.random.default_rng(seed)
    n = sum(sizes)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    blocks = [np.arange(offsets[i], offsets[i + 1]) for i in range(len(sizes))]
    Qs, cs, rows = [], [], []
    for i, cols in enumerate(blocks):
        Q = np.zeros((n, n))
        R = rng.normal(size=(len(cols), len(cols)))
        Q[np.ix_(cols, cols)] = R @ R.T + (2.0 * n if own is None else own) * np.eye(len(cols))
        others = np.setdiff1d(np.arange(n), cols)
        C = rng.uniform(-cross, cross, size=(len(cols), len(others)))
        Q[np.ix_(cols, others)] = C
        Q[np.ix_(others, cols)] = C.T
        Qs.append(Q)
        cs.append(np.where(np.isin(np.arange(n), cols), rng.uniform(-20, 20, n), 0.0))
        a = rng.uniform(-2, 2, n)
        a[cols] = np.where(np.abs(a[cols]) < 0.2, 1.0, a[cols])
        rhs = -3 * np.abs(a[cols]).sum() + 3 * np.abs(a[others]).sum() + rng.uniform(0.5, 4)
        rows.append(Rows(a[None, :], np.array([-np.inf]), np.array([rhs]), owner=i))
    if shared:          # loose enough that every player can still move: its own row stays feasible
        rows.append(Rows(np.ones((1, n)), np.array([-np.inf]), np.array([rng.uniform(1, 2) * n])))
    costs, grads, quad = _quadratic(Qs, cs)
    return GNEP("random", "random", list(sizes), np.full(n, -3.0), np.full(n, 3.0), rows, costs, grads,
                None, quadratic=quad, concept="GNE", unique=False)


def feasible(p: GNEP) -> bool:
    """Some joint action satisfies every row (scipy's LP, independent of solvopt)."""
    from scipy.optimize import linprog
    A = np.vstack([r.A for r in p.rows])
    hi = np.concatenate([r.hi for r in p.rows])
    return linprog(np.zeros(p.n), A_ub=A, b_ub=hi, bounds=list(zip(p.lb, p.ub))).status == 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10 ** 6), st.lists(st.integers(1, 2), min_size=2, max_size=3), st.booleans())
def test_random_gneps_are_solved_and_checked_by_scipy(seed, sizes, shared):
    p = random_gnep(seed, sizes, shared)
    assume(feasible(p))
    r = p.model().solve(time_limit=30)
    assert r.termination == "optimal", (seed, sizes, r.termination, r.objective)
    x = r.solution["actions"]
    regrets = p.scipy_regrets(x)
    assert regrets.max() <= 1e-6
    assert r.objective >= regrets.sum() - 1e-7


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10 ** 6), st.lists(st.integers(1, 2), min_size=2, max_size=3), st.integers(0, 10 ** 6),
       st.booleans())
def test_certificate_bounds_the_true_regret_anywhere(seed, sizes, point_seed, shared):
    p = random_gnep(seed, sizes, shared)
    assume(feasible(p))
    game = p.model()
    data = game.data()
    from solvopt.games.exploitability import joint_polyhedron
    x = joint_polyhedron(data).project(np.random.default_rng(point_seed).uniform(-3, 3, p.n))
    cert = static_exploitability(data, x)
    regrets = p.scipy_regrets(x)              # in cost units; utilities are -cost
    assert cert.value >= regrets.sum() - 1e-6 * (1 + abs(regrets.sum()))
    assert cert.lower <= regrets.sum() + 1e-6 * (1 + abs(regrets.sum()))


def test_a_stalled_newton_run_says_so(monkeypatch):
    import solvopt.games.gnep_kkt as kkt

    def stalls(system, x0, iterations=500):
        yield 1, np.asarray(x0, float) + 0.5, 1.0          # one step, then the line search fails
    monkeypatch.setattr(kkt, "solve_kkt", stalls)
    r = harker_gne().solve(start=[0.0, 0.0])
    assert r.termination == "numerical_error" and r.solution_status == "feasible"
    assert "stalled" in r.message and r.objective > 1.0


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10 ** 6), st.lists(st.integers(1, 3), min_size=2, max_size=3))
def test_games_that_are_not_monotone_get_honest_statuses(seed, sizes):
    p = random_gnep(seed, sizes, own=0.3, cross=3.0)
    assume(feasible(p))
    r = p.model().solve(time_limit=30)
    regrets = p.scipy_regrets(r.solution["actions"])
    assert r.objective >= regrets.sum() - 1e-7
    if r.termination == "optimal":
        assert regrets.max() <= 1e-6
    else:
        assert r.solution_status != "optimal" and r.termination in ("numerical_error", "time_limit")


@pytest.mark.parametrize("factor", [1e-6, 1.0, 1e6])
def test_payoff_units_change_neither_point_nor_status(factor):
    g = PseudoGame("scaled")
    x1 = g.player("x1", lb=0, ub=10)
    x2 = g.player("x2", lb=0, ub=10)
    g.minimize(x1, factor * (x1 * x1 + (8 / 3) * x1 * x2 - 34 * x1))
    g.minimize(x2, factor * (x2 * x2 + (5 / 4) * x1 * x2 - 24.25 * x2))
    g.constrain(x1, x1 + x2 <= 12)
    r = g.solve()
    assert r.termination == "optimal" and r.objective <= 1e-9 * 34 * factor
    assert np.allclose(r.solution["actions"], [2.0, 10.0], atol=1e-7)


def test_a_tiny_time_limit_returns_the_start_certified():
    r = problem("A.7").model().solve(start=np.full(20, 3.0), time_limit=1e-6)
    assert r.solution["actions"] is not None and r.objective is not None
    assert r.termination in ("time_limit", "optimal")
    if r.termination == "time_limit":
        assert r.solution_status == "feasible"


def test_equality_rows_and_shared_rows_mixed_with_player_specific_ones():
    g = PseudoGame("mixed")
    x = g.player("x", 2, lb=-5, ub=5)
    y = g.player("y", lb=-5, ub=5)
    g.minimize(x, (x * x).sum() + x[0] * y - 3 * x[1])
    g.minimize(y, y * y + 0.5 * x[0] * y - x[1] * y)
    g.constrain(x, x[0] + x[1] + y == 2)          # player x's equality, moved by y
    g.constrain(y, y - x[0] >= -1)                # player y's row, moved by x
    g.share(x[0] + y <= 3)
    r = g.solve()
    assert r.method == "gnep-kkt" and r.termination == "optimal"
    p = GNEP("mixed", "mixed", [2, 1], np.full(3, -5.0), np.full(3, 5.0),
             [Rows(np.array([[1.0, 1.0, 1.0]]), np.array([2.0]), np.array([2.0]), owner=0),
              Rows(np.array([[-1.0, 0.0, 1.0]]), np.array([-1.0]), np.array([np.inf]), owner=1),
              Rows(np.array([[1.0, 0.0, 1.0]]), np.array([-np.inf]), np.array([3.0]))],
             [lambda v: v[0] ** 2 + v[1] ** 2 + v[0] * v[2] - 3 * v[1],
              lambda v: v[2] ** 2 + 0.5 * v[0] * v[2] - v[1] * v[2]],
             [lambda v: np.array([2 * v[0] + v[2], 2 * v[1] - 3, v[0]]),
              lambda v: np.array([0.5 * v[2], -v[2], 2 * v[2] + 0.5 * v[0] - v[1]])], None)
    assert p.scipy_regrets(r.solution["actions"]).max() <= 1e-8
