"""Fisher and Arrow-Debreu markets: closed forms, an independent Eisenberg-Gale solve (SCIP), statuses, bad inputs."""
from __future__ import annotations

import numpy as np
import pytest

from solvopt.core.errors import ModelError
from solvopt.core.result import Termination
from solvopt.dsl.games import ArrowDebreuMarket, FisherMarket
from solvopt.dsl.utilities import CES, CobbDouglas, Leontief, Linear
from solvopt.games.exploitability import market_exploitability


def scip_eisenberg_gale(utility, budgets, supplies):
    """The Eisenberg-Gale program max sum B_i log u_i solved by SCIP (independent): (utilities, primal, dual bound)."""
    scip = pytest.importorskip("pyscipopt")
    n, m = utility.shape
    w = utility.weights
    model = scip.Model()
    model.hideOutput()
    model.setParam("limits/gap", 1e-9)
    model.setParam("numerics/feastol", 1e-9)
    x = [[model.addVar(lb=0.0) for _ in range(m)] for _ in range(n)]
    u = [model.addVar(lb=1e-9) for _ in range(n)]
    t = [model.addVar(lb=-1e3, ub=1e3) for _ in range(n)]
    for i in range(n):
        if utility.kind == "linear":
            model.addCons(u[i] == scip.quicksum(w[i, j] * x[i][j] for j in range(m)))
        else:  # leontief
            for j in range(m):
                if w[i, j] > 0:
                    model.addCons(u[i] * w[i, j] <= x[i][j])
        model.addCons(t[i] <= scip.log(u[i]))
    for j in range(m):
        model.addCons(scip.quicksum(x[i][j] for i in range(n)) <= supplies[j])
    model.setObjective(scip.quicksum(budgets[i] * t[i] for i in range(n)), "maximize")
    model.optimize()
    return np.array([model.getVal(v) for v in u]), model.getPrimalbound(), model.getDualbound()


def random_market(kind, n, m, seed):
    rng = np.random.default_rng(seed)
    if kind == "linear":
        form = Linear(rng.uniform(0.1, 1.0, (n, m)))
    elif kind == "leontief":
        form = Leontief(rng.uniform(0.1, 1.0, (n, m)))
    elif kind == "cobb_douglas":
        form = CobbDouglas(rng.dirichlet(np.ones(m), n))
    else:
        form = CES(rng.uniform(0.1, 1.0, (n, m)), kind)
    return FisherMarket(form, rng.uniform(0.5, 2.0, n), rng.uniform(0.5, 2.0, m))


def test_linear_two_by_two_gives_identity_and_unit_prices():
    r = FisherMarket(Linear([[2, 1], [1, 2]]), [1, 1]).solve()
    assert r.method == "eisenberg-gale" and r.termination is Termination.OPTIMAL
    np.testing.assert_allclose(r.solution["allocation"], np.eye(2), atol=1e-12)
    np.testing.assert_allclose(r.solution["prices"], [1, 1], atol=1e-12)
    assert r.objective <= 1e-12


@pytest.mark.parametrize("method", ["eisenberg-gale", "proportional-response", "tatonnement"])
def test_cobb_douglas_closed_form(method):
    market = random_market("cobb_douglas", 6, 4, 3)
    a, B, s = market.utility.weights, market.budgets, market.supplies
    p = (B[:, None] * a).sum(axis=0) / s                    # p_j s_j = sum_i B_i a_ij
    x = B[:, None] * a / p
    r = market.solve(method=method, tolerance=1e-11)
    np.testing.assert_allclose(r.solution["prices"], p, rtol=1e-8)
    np.testing.assert_allclose(r.solution["allocation"], x, rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("kind", ["linear", "leontief"])
def test_random_markets_match_an_independent_eisenberg_gale_solve(kind, seed):
    market = random_market(kind, 5, 4, seed)
    ref, primal, dual = scip_eisenberg_gale(market.utility, market.budgets, market.supplies)
    r = market.solve(tolerance=1e-10)
    assert r.ok and r.stats["relative_exploitability"] <= 1e-10
    x = r.solution["allocation"]
    assert np.all(x.sum(axis=0) <= market.supplies * (1 + 1e-12))            # feasible for the EG program
    ours = market.utility.value(x)
    objective = float(market.budgets @ np.log(ours))
    # optimal for EG: at least SCIP's solution, at most SCIP's certified dual bound (up to its tolerances)
    assert primal - 1e-7 <= objective <= dual + 1e-6
    np.testing.assert_allclose(ours, ref, rtol=5e-3)       # SCIP's utilities are only as sharp as its log cuts


@pytest.mark.parametrize("method", ["eisenberg-gale", "proportional-response", "tatonnement"])
def test_ces_methods_agree(method):
    market = random_market(0.5, 6, 5, 7)
    ref = market.solve(method="eisenberg-gale", tolerance=1e-12).solution["prices"]
    r = market.solve(method=method, tolerance=1e-10)
    assert r.stats["relative_exploitability"] <= 1e-10
    np.testing.assert_allclose(r.solution["prices"], ref, rtol=1e-4)


def test_ces_complements_and_leontief_by_the_dual():
    for kind in (-1.5, "leontief"):
        r = random_market(kind, 6, 5, 11).solve(tolerance=1e-9)
        assert r.method == "eisenberg-gale" and r.stats["relative_exploitability"] <= 1e-9


def test_market_exploitability_is_zero_only_at_the_equilibrium():
    market = FisherMarket(Linear([[2, 1], [1, 2]]), [1, 1])
    u, B, s = market.utility, market.budgets, market.supplies
    assert market_exploitability(u, B, s, np.eye(2), np.ones(2)).value == 0.0
    p = np.array([1.2, 0.8])
    x = u.demand(p, B)                         # buyers best-respond, but the market does not clear
    e = market_exploitability(u, B, s, x, p)
    assert e.certified and e.value > 0.1
    over = market_exploitability(u, B, s, 2 * np.eye(2), np.ones(2))
    assert not over.certified                  # over budget: not a point of the pseudo-game


def test_arrow_debreu_cobb_douglas_prices_are_the_perron_vector():
    rng = np.random.default_rng(5)
    a = rng.dirichlet(np.ones(3), 4)
    e = rng.uniform(0.5, 1.5, (4, 3))
    r = ArrowDebreuMarket(CobbDouglas(a), e).solve(tolerance=1e-11)
    assert r.method == "tatonnement" and r.ok
    s = e.sum(axis=0)
    M = (a.T @ e) / s[:, None]                 # p_j s_j = sum_i a_ij p.e_i  <=>  p = M p
    vals, vecs = np.linalg.eig(M)
    ref = np.real(vecs[:, np.argmin(np.abs(vals - 1))])
    ref = ref / (ref @ s)
    np.testing.assert_allclose(r.solution["prices"], ref, rtol=1e-8)


def test_iteration_limit_keeps_the_best_certified_point():
    market = random_market("linear", 8, 6, 4)
    r = market.solve(method="proportional-response", iteration_limit=5, check_every=1)
    assert r.termination is Termination.ITERATION_LIMIT and r.ok
    assert r.objective == min(h[2] for h in r.stats["history"])


# --- bad inputs -------------------------------------------------------------------------------
def test_bad_market_data():
    with pytest.raises(ModelError, match="NaN"):
        FisherMarket(Linear([[1.0, 2.0]]), [float("nan")])
    with pytest.raises(ModelError, match="budgets"):
        FisherMarket(Linear([[1.0, 2.0]]), [-1.0])
    with pytest.raises(ModelError, match="shape"):
        FisherMarket(Linear([[1.0, 2.0]]), [1.0, 2.0])
    with pytest.raises(ModelError, match="NaN"):
        FisherMarket(Linear([[1.0, np.nan]]), [1.0])
    with pytest.raises(ModelError, match="non-concave"):
        FisherMarket(CobbDouglas([[0.9, 0.9]]), [1.0])


def test_methods_refuse_what_they_cannot_solve():
    linear = FisherMarket(Linear([[1.0, 2.0], [2.0, 1.0]]), [1.0, 1.0])
    with pytest.raises(ModelError, match="tatonnement"):
        linear.solve(method="tatonnement")
    with pytest.raises(ModelError, match="homogeneous"):
        FisherMarket(CobbDouglas([[0.3, 0.3]]), [1.0]).solve(method="eisenberg-gale")
    with pytest.raises(ModelError, match="pseudo-games"):
        linear.solve(method="extragradient")


def test_active_edge_phase_matches_scip(monkeypatch):
    import solvopt.games.markets as markets
    monkeypatch.setattr(markets, "WARM_UP", 0)                 # straight into the active-edge phase
    monkeypatch.setattr(markets, "polish_linear", lambda *a, **k: None)   # and no polish: PR alone must get there
    market = random_market("linear", 10, 8, 21)
    ref, primal, dual = scip_eisenberg_gale(market.utility, market.budgets, market.supplies)
    r = market.solve(tolerance=1e-7)
    assert r.termination is Termination.FEASIBLE_WITHIN_GAP and r.stats["relative_exploitability"] <= 1e-7
    objective = float(market.budgets @ np.log(market.utility.value(r.solution["allocation"])))
    assert primal - 1e-5 <= objective <= dual + 1e-6


# --- the exact polish of linear Fisher markets (solvopt.games.polish) --------------------------
def assert_fisher_equilibrium(v, B, s, x, p, tol=1e-10):
    """Every condition of a linear Fisher equilibrium, from scratch."""
    assert np.all(p > 0) and np.all(x >= -tol)
    np.testing.assert_allclose(x.sum(axis=0), s, rtol=0, atol=tol * max(1.0, s.max()))     # markets clear
    np.testing.assert_allclose(x @ p, B, rtol=0, atol=tol)                                   # budgets are spent
    bang = v / p
    below = bang < bang.max(axis=1, keepdims=True) * (1 - 1e-8)
    assert np.all((x * p)[below] <= tol)                                                     # only on MBB goods


@pytest.mark.parametrize("seed", range(6))
def test_polish_from_any_prices_is_the_equilibrium(seed):
    from solvopt.games.polish import fisher_equilibrium
    rng = np.random.default_rng(seed)
    n, m = rng.integers(1, 9, 2)
    v = rng.uniform(0.0, 1.0, (n, m)) * (rng.random((n, m)) < 0.6)
    v[np.arange(n), rng.integers(0, m, n)] += 0.5
    v[rng.integers(0, n, m), np.arange(m)] += 0.5                       # every good liked: positive prices
    B, s = rng.uniform(0.5, 2.0, n), rng.uniform(0.5, 2.0, m)
    x, p = fisher_equilibrium(v, s, B, rng.uniform(0.1, 10.0, m))    # from arbitrary prices
    assert_fisher_equilibrium(v, B, s, x, p)
    ref, primal, dual = scip_eisenberg_gale(Linear(v), B, s)           # equilibrium utilities are unique
    np.testing.assert_allclose((v * x).sum(axis=1), ref, rtol=5e-3)


def test_polish_gives_up_when_told_to_stop():
    from solvopt.games.polish import fisher_equilibrium
    market = random_market("linear", 40, 40, 1)
    args = (market.utility.weights, market.supplies, market.budgets, np.ones(40))
    assert fisher_equilibrium(*args, stop=lambda: True) is None
    assert fisher_equilibrium(*args) is not None


def test_linear_200_by_200_is_polished_exactly():
    # the polish before the active-set method never succeeded from 200 x 200 up (near-ties in the support)
    rng = np.random.default_rng(2026)
    market = FisherMarket(Linear(rng.uniform(0.0, 1.0, (200, 200))), rng.uniform(0.5, 1.5, 200))
    r = market.solve()
    assert r.termination is Termination.OPTIMAL and r.stats["relative_exploitability"] <= 1e-12
    assert_fisher_equilibrium(market.utility.weights, market.budgets, market.supplies,
                              r.solution["allocation"], r.solution["prices"])
