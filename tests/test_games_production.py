"""Economies with production: shifted-log demand, firm supply, equilibria checked by scipy best responses."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq, linprog, minimize

from solvopt.core.errors import ModelError
from solvopt.dsl import ProductionEconomy
from solvopt.dsl.utilities import Logarithmic, utility_from_params
from solvopt.games.production import money_per_utility, production_exploitability
from solvopt.games.production_library import a10e


def scipy_demand(v, c, p, b):
    """max sum v log(c + x) over {x >= 0, p.x <= b} by SLSQP from several starts (the best kept)."""
    m = len(v)
    best = None
    for x0 in (np.full(m, b / p.sum()), b / p / m, np.zeros(m)):
        res = minimize(lambda x: -np.sum(v * np.log(c + x)), x0, jac=lambda x: -v / (c + x), method="SLSQP",
                       bounds=[(0, None)] * m,
                       constraints=[{"type": "ineq", "fun": lambda x: b - p @ x, "jac": lambda x: -p}],
                       options={"ftol": 1e-14, "maxiter": 500})
        if best is None or res.fun < best.fun:
            best = res
    return best.x


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(0, 10 ** 6))
def test_shifted_log_demand_matches_scipy(m, seed):
    rng = np.random.default_rng(seed)
    v = rng.uniform(0.1, 5, m) * (rng.random(m) < 0.9)
    v[0] = max(v[0], 0.5)
    c = rng.uniform(0.05, 20, m)
    p = rng.uniform(0.1, 3, m)
    b = float(rng.uniform(0.01, 30))
    u = Logarithmic(v, c)
    x = u.demand(p, b)
    assert np.all(x >= 0) and p @ x <= b * (1 + 1e-12)
    ref = scipy_demand(v, c, p, b)
    assert u.value(x) >= u.value(ref) - 1e-7
    assert np.allclose(x, ref, atol=1e-4 * (1 + b))


def test_shifted_log_broadcasts_and_defaults():
    v = np.array([[1.0, 2.0], [3.0, 1.0]])
    p, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    assert np.allclose(Logarithmic(v).demand(p, b), Logarithmic(v, 1.0).demand(p, b))
    u = Logarithmic(v, np.array([2.0, 5.0]))
    assert u.shift.shape == (2, 2)
    assert np.allclose(u.value(np.zeros(2)), v @ np.log([2.0, 5.0]))
    again = utility_from_params("log", u.params())
    assert np.allclose(again.shift, u.shift) and np.allclose(again.weights, v)
    with pytest.raises(ModelError, match="> 0"):
        Logarithmic(v, 0.0)
    with pytest.raises(ModelError, match="do not fit"):
        Logarithmic(v, np.ones(3))


@pytest.mark.parametrize("seed", range(5))
def test_firm_supply_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    m = 4
    p = rng.dirichlet(np.ones(m))
    r = float(rng.uniform(0.5, 4))
    econ = ProductionEconomy(Logarithmic(np.ones((1, m))), np.ones((1, m)), [r])
    y = econ.supply(p)[0]
    res = minimize(lambda y: -p @ y, np.zeros(m), jac=lambda y: -p, method="SLSQP", bounds=[(0, None)] * m,
                   constraints=[{"type": "ineq", "fun": lambda y: r * r - y @ y, "jac": lambda y: -2 * y}],
                   options={"ftol": 1e-14})
    assert p @ y == pytest.approx(-res.fun, rel=1e-7)
    assert np.linalg.norm(y) == pytest.approx(r) and np.all(y >= 0)


def check_by_scipy(econ, x, y, p, tol):
    """Every player's best response computed by scipy gains at most ``tol`` over its own payoff."""
    budgets = econ.budgets(p, y)
    u = econ.utility
    for k in range(econ.shape[0]):
        assert p @ x[k] <= budgets[k] * (1 + 1e-12)
        ref = scipy_demand(u.weights[k], u.shift[k], p, budgets[k])
        assert u.value(ref[None])[0] <= u.value(x[k][None])[0] + tol
    for f, r in enumerate(econ.radii):
        res = minimize(lambda v: -p @ v, np.full(len(p), 0.1), jac=lambda v: -p, method="SLSQP",
                       bounds=[(0, None)] * len(p),
                       constraints=[{"type": "ineq", "fun": lambda v, r=r: r * r - v @ v, "jac": lambda v: -2 * v}],
                       options={"ftol": 1e-14})
        assert -res.fun <= p @ y[f] + tol
    z = x.sum(0) - y.sum(0) - econ.endowments.sum(0)
    lp = linprog(-z, A_eq=np.ones((1, len(p))), b_eq=[1.0], bounds=[(0, None)] * len(p), method="highs")
    assert -lp.fun <= p @ z + tol


def test_small_economy_with_shares_clears_and_is_an_equilibrium():
    rng = np.random.default_rng(3)
    n, F, m = 5, 2, 3
    u = Logarithmic(rng.uniform(0.5, 3, (n, m)), rng.uniform(0.5, 5, (n, m)))
    theta = rng.dirichlet(np.ones(n), size=F).T          # every firm's profit fully paid out
    econ = ProductionEconomy(u, rng.uniform(0, 4, (n, m)), [1.0, 2.5], profit_shares=theta)
    result = econ.solve(tolerance=1e-12)
    assert result.termination.value == "optimal"
    x, y, p = (result.solution[k] for k in ("allocation", "production", "prices"))
    assert np.allclose(x.sum(0), y.sum(0) + econ.endowments.sum(0), atol=1e-8)   # profits paid: markets clear
    check_by_scipy(econ, x, y, p, 1e-6)
    e = production_exploitability(econ, x, y, p)
    assert e.certified and e.value <= 1e-8


def test_unpaid_profit_is_the_common_excess_supply():
    econ = ProductionEconomy(Logarithmic([[1.0, 2.0], [2.0, 1.0]], [[1.0, 3.0], [2.0, 1.0]]), np.eye(2), [1.5])
    result = econ.solve()
    x, y, p = (result.solution[k] for k in ("allocation", "production", "prices"))
    z = x.sum(0) - y.sum(0) - econ.endowments.sum(0)
    assert np.allclose(z, -float(y[0] @ p), atol=1e-9)


@pytest.mark.parametrize("seed", [30, 273, 5, 6])
def test_single_consumer_prices_are_its_marginal_utilities(seed):
    """Alone and without firms a consumer keeps its endowment: p is proportional to grad u(e) (closed
    form), even where goods it owns none of make the Jacobian singular."""
    rng = np.random.default_rng(seed)
    m = 4 + seed % 7
    v = rng.uniform(0, 5, m) * (rng.random(m) < 0.8) + 1e-3
    c = rng.uniform(0.01, 50, m)
    e = rng.uniform(0, 5, m) * (rng.random(m) < 0.6)
    e[0] += 0.1
    result = ProductionEconomy(Logarithmic(v[None], c[None]), e[None], np.zeros(0)).solve()
    assert result.termination.value == "optimal"
    x, p = result.solution["allocation"][0], result.solution["prices"]
    assert np.allclose(x, e, atol=1e-6 * (1 + e.max()))
    owned = e > 0
    expected = v / (c + e)
    assert np.allclose(p[owned] / p[owned].sum(), expected[owned] / expected[owned].sum(), rtol=1e-6)


@pytest.mark.parametrize("seed", range(6))
def test_random_economies_certified_and_checked_by_scipy(seed):
    rng = np.random.default_rng(100 + seed)
    n, F, m = 2 + seed % 4, 1 + seed % 3, 3 + seed % 5
    u = Logarithmic(rng.uniform(0.2, 5, (n, m)), rng.uniform(0.05, 20, (n, m)))
    e = rng.uniform(0, 5, (n, m)) * (rng.random((n, m)) < 0.6)
    e[:, 0] += 0.1
    shares = None if seed % 2 else rng.dirichlet(np.ones(n), size=F).T * 0.7
    econ = ProductionEconomy(u, e, rng.uniform(0.1, 8, F), shares)
    result = econ.solve()
    assert result.termination.value == "optimal" and result.objective <= 1e-6
    x, y, p = (result.solution[k] for k in ("allocation", "production", "prices"))
    check_by_scipy(econ, x, y, p, 1e-6)


def test_a10e_certified_and_checked_by_scipy():
    econ = a10e()
    assert econ.shape == (40, 7, 12)
    result = econ.solve()
    assert result.termination.value == "optimal" and result.objective <= 1e-6
    x, y, p = (result.solution[k] for k in ("allocation", "production", "prices"))
    e = production_exploitability(econ, x, y, p)
    assert e.certified and e.value == pytest.approx(result.objective)
    check_by_scipy(econ, x, y, p, 1e-6)


def test_exploitability_sees_deviations():
    econ = a10e()
    x, y, p = (econ.solve().solution[k] for k in ("allocation", "production", "prices"))
    assert production_exploitability(econ, x, 0.5 * y, p).per_player[40:47].min() > 0
    q = p.copy()
    q[0] += 0.01
    q /= q.sum()
    assert production_exploitability(econ, x, y, q).per_player[-1] > 0
    assert production_exploitability(econ, x * 1.01, y, p).violation > 0


def test_bad_input_refused():
    u = Logarithmic(np.ones((2, 2)))
    with pytest.raises(ModelError, match="shape"):
        ProductionEconomy(u, np.ones((3, 2)), [1.0])
    with pytest.raises(ModelError, match="at most 1"):
        ProductionEconomy(u, np.ones((2, 2)), [1.0], profit_shares=[[0.7], [0.7]])
    with pytest.raises(ModelError, match="radii"):
        ProductionEconomy(u, np.ones((2, 2)), [-1.0])
    with pytest.raises(ModelError, match="ProductionEconomy"):
        ProductionEconomy(u, np.ones((2, 2)), [1.0]).solve(method="tatonnement")
    from solvopt.dsl.utilities import CES
    with pytest.raises(ModelError, match="unbounded"):
        ProductionEconomy(CES(np.ones((2, 2)), -1.0), np.ones((2, 2)), [1.0]).solve()
    with pytest.raises(ModelError, match="no consumer values good 1"):
        ProductionEconomy(Logarithmic([[1.0, 0.0]]), [[1.0, 1.0]], [1.0]).solve()
    from solvopt.dsl import ArrowDebreuMarket
    with pytest.raises(ModelError, match="economies with production"):
        ArrowDebreuMarket(u, np.ones((2, 2))).solve(method="production-root")


def _utility(kind, rng, m):
    from solvopt.dsl.utilities import CES, CobbDouglas
    if kind == "log":
        return Logarithmic(rng.uniform(0.1, 5, (1, m)), rng.uniform(0.05, 20, (1, m)))
    if kind == "cobb_douglas":
        return CobbDouglas(rng.dirichlet(np.ones(m))[None] * rng.uniform(0.3, 1.0))
    return CES(rng.uniform(0.1, 5, (1, m)), float(rng.uniform(0.1, 0.9)))


@pytest.mark.parametrize("kind", ["log", "cobb_douglas", "ces"])
@settings(max_examples=30, deadline=None)
@given(m=st.integers(1, 5), seed=st.integers(0, 10 ** 6))
def test_consumer_gain_in_money_bounds_the_compensating_variation(kind, m, seed):
    """A consumer's gain is (V(B) - u(x)) / lambda with lambda = V'(B) (checked by central differences);
    it is at least the money it would pay to reach its best response: B - B' with V(B') = u(x),
    found by bisection on the budget."""
    rng = np.random.default_rng(seed)
    u = _utility(kind, rng, m)
    p = rng.dirichlet(np.ones(m)) + 1e-3
    p /= p.sum()
    e = rng.uniform(0.1, 5, (1, m))
    B = float(e[0] @ p)
    econ = ProductionEconomy(u, e, np.zeros(0))
    x = rng.dirichlet(np.ones(m)) * rng.uniform(0, 1) * B / p      # p.x <= B

    def V(b):
        return float(u.value(u.demand(p, np.array([b])))[0])

    lam = float(money_per_utility(u, p, u.demand(p, np.array([B])))[0])
    h = 1e-5 * B
    assert lam == pytest.approx((V(B + h) - V(B - h)) / (2 * h), rel=1e-4)
    target = float(u.value(x[None])[0])
    B_equiv = brentq(lambda b: V(b) - target, 0.0, B, xtol=1e-14 * B, rtol=1e-14) if V(0.0) < target else 0.0
    gain = production_exploitability(econ, x[None], np.zeros((0, m)), p).per_player[0]
    assert gain >= (B - B_equiv) * (1 - 1e-9) - 1e-12 * B


@pytest.mark.parametrize("factor", [1e-12, 1e-3, 1e3, 1e12])
@pytest.mark.parametrize("which", ["values", "goods"])
def test_status_and_point_do_not_depend_on_units(which, factor):
    """Utilities' values times ``factor`` (nothing moves) or the goods' units (quantities times
    ``factor``, prices unchanged): the first certificate's exploitability is invariant / linear, and the
    converged run is optimal at the same prices (before gains were in money, a utility scale of 1e12
    made the first, far-from-equilibrium point look optimal)."""
    from solvopt.games.scaling import production_goods, production_values
    build = production_values if which == "values" else production_goods
    law = 1.0 if which == "values" else factor
    start, scaled_start = (build(f).solve(iteration_limit=0) for f in (1.0, factor))
    assert scaled_start.termination == start.termination and start.termination.value == "iteration_limit"
    assert scaled_start.objective == pytest.approx(start.objective * law, rel=1e-9)
    base, scaled = (build(f).solve() for f in (1.0, factor))
    assert base.termination.value == scaled.termination.value == "optimal"
    assert np.allclose(scaled.solution["prices"], base.solution["prices"], atol=1e-9)
    assert np.allclose(scaled.solution["allocation"], base.solution["allocation"] * law, rtol=1e-7,
                       atol=1e-9 * law)
    assert scaled.objective <= 1e-9 * law
