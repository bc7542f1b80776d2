"""Markov exchange economies of the paper's kind (Goktas et al., ICLR 2026): robustness of the
methods (world states never reached, prices on the simplex, continuation until the time limit,
float32 Cobb-Douglas data) and the model options the paper's economies use.

References independent of the code under test: the same economy without the unreachable world
states (solved on its own), the product chain written out by hand for endowment shocks, and
brute-force evaluation of the consumer's problem for the documented semantics.
"""
from __future__ import annotations

import numpy as np
import pytest

from solvopt.core.errors import ModelError, SolverError
from solvopt.core.result import Termination
from solvopt.dsl import MarkovExchangeEconomy
from solvopt.games import economy as ec

METHODS = ("markov-newton", "markov-tatonnement")


def unreachable_economy(utility="cobb_douglas", seed=0):
    """A 3-world economy whose chain goes to world 0 from everywhere and starts there: worlds 1 and
    2 are never reached (the paper's deterministic economies have four such world states)."""
    base = ec.random_economy(4, 3, 1, 3, utility, stochastic=True, seed=seed)
    T = np.zeros((3, 3))
    T[:, 0] = 1.0
    return MarkovExchangeEconomy(base.utility, base.endowments, T, 0.9, initial=[1.0, 0.0, 0.0],
                                 asset_returns=base.asset_returns)


def test_reachable_worlds():
    econ = unreachable_economy()
    assert ec.reachable_worlds(econ).tolist() == [True, False, False]
    assert ec.reachable_worlds(ec.random_economy(3, 2, 1, 4, seed=1)).all()
    sub = econ.restricted([0])
    assert sub.n_world == 1 and sub.transitions.tolist() == [[1.0]] and sub.endowments.shape == (1, 4, 3)
    with pytest.raises(ModelError, match="leaves"):
        econ.restricted([1])


@pytest.mark.parametrize("method", METHODS)
def test_unreachable_world_states_are_handled(method):
    econ = unreachable_economy("leontief" if method == "markov-newton" else "cobb_douglas")
    result = econ.solve(method=method, tolerance=1e-6, time_limit=30)
    assert result.termination in (Termination.OPTIMAL, Termination.FEASIBLE_WITHIN_GAP)
    sol = result.solution
    chain = ec.pair_chain(econ)
    assert sol["prices"].shape == (len(chain.world), econ.n_goods)
    assert np.allclose(sol["prices"].sum(axis=1), econ.price_sum, rtol=1e-12)
    assert np.all(sol["portfolio"][1:] == 0) and np.all(sol["asset_prices"] >= 0)
    # the certificate is the full economy's, and agrees with the one of the reachable part alone
    prof = ec.Profile(*(sol[k] for k in ("prices", "asset_prices", "consumption", "portfolio")))
    assert ec.metrics(econ, chain, prof)["exploitability"] == pytest.approx(result.objective, rel=1e-9, abs=1e-14)
    alone = econ.restricted([0]).solve(method=method, tolerance=1e-6, time_limit=30)
    # (the tolerance is relative to the endowment value at the starting prices, the metric to the final one)
    assert result.stats["metrics"]["relative_exploitability"] <= 2e-6
    assert alone.stats["metrics"]["relative_exploitability"] <= 2e-6


def test_prices_are_projected_and_checked():
    econ = ec.random_economy(3, 3, 1, 2, seed=0)
    p = np.array([[1.0, 2.0, -0.5], [0.0, 0.0, 0.0]])
    q = ec.project_prices(econ, p)
    assert np.allclose(q.sum(axis=1), econ.price_sum) and np.all(q >= 0)
    assert np.allclose(q[1], econ.price_sum / 3)
    ec.check_prices(econ, q)
    with pytest.raises(SolverError, match="simplex"):
        ec.check_prices(econ, q * 1.01)
    for utility in ("cobb_douglas", "leontief"):
        result = ec.random_economy(4, 3, 1, 3, utility, seed=4).solve(method="markov-newton", iteration_limit=10)
        assert np.allclose(result.solution["prices"].sum(axis=1), econ.price_sum, rtol=1e-12)


def test_no_iteration_limit_stop_while_time_remains(monkeypatch):
    econ = ec.random_economy(4, 3, 1, 3, "leontief", seed=2)
    opts = dict(method="markov-newton", tolerance=1e-15, tau_start=0.1, tau_end=0.09)
    monkeypatch.setattr(ec, "RESTART_TAUS", ())        # the continuation ends at tau_end = 0.09
    alone = econ.solve(**opts)                         # no time limit: it ends there, and says so
    assert alone.termination is Termination.ITERATION_LIMIT
    result = econ.solve(time_limit=1.5, **opts)        # a time limit: tatonnement carries on until it
    assert result.termination is not Termination.ITERATION_LIMIT
    assert result.stats["iterations"] > alone.stats["iterations"]
    assert result.objective <= alone.objective


def test_float32_cobb_douglas_exponents_are_normalised():
    rng = np.random.default_rng(0)
    a = rng.dirichlet(np.ones(4), 3).astype(np.float32).astype(float)
    assert np.any(a.sum(axis=1) != 1.0)
    e = rng.uniform(0.1, 1, (1, 3, 4))
    econ = MarkovExchangeEconomy(("cobb_douglas", a), e, [[1.0]], 0.9)
    assert econ.degree == 1.0 and np.allclose(econ.utility.weights.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    assert econ.solve(tolerance=1e-9, time_limit=20).stats["metrics"]["relative_exploitability"] <= 1e-9
    # rows sharing a sum t < 1: homogeneous of degree t (the paper's Cobb-Douglas has t = 0.1)
    with pytest.raises(ModelError, match="degree=0.1"):
        MarkovExchangeEconomy(("cobb_douglas", a / 10), e, [[1.0]], 0.9)
    econ = MarkovExchangeEconomy(("cobb_douglas", a / 10), e, [[1.0]], 0.9, degree=0.1)
    assert econ.degree == 0.1 and np.allclose(econ.utility.weights.sum(axis=1), 1.0)
    with pytest.raises(ModelError, match="disagrees"):
        MarkovExchangeEconomy(("cobb_douglas", a / 10), e, [[1.0]], 0.9, degree=0.5)
    with pytest.raises(ModelError, match="same total"):
        MarkovExchangeEconomy(("cobb_douglas", a * np.array([[0.5], [0.4], [0.5]])), e, [[1.0]], 0.9)
