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
from helpers import check_smoothed_jacobian

from solvopt.core.errors import ModelError, SolverError
from solvopt.core.result import Termination
from solvopt.dsl import MarkovExchangeEconomy
from solvopt.games import economy as ec
from solvopt.games import economy_methods
from solvopt.games import economy_newton as en

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
    monkeypatch.setattr(economy_methods, "RESTART_TAUS", ())        # the continuation ends at tau_end = 0.09
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


# --- model options ---------------------------------------------------------------------------------
@pytest.mark.parametrize("utility", ["cobb_douglas", "leontief"])
def test_bundle_jacobian_matches_finite_differences(utility):
    rng = np.random.default_rng(1)
    econ = ec.random_economy(3, 3, 2, 3, utility, seed=1, bundles=True)
    eq = en.SmoothedEquations(econ, ec.pair_chain(econ))
    S, M, W, K, N = eq.shape
    eq.risk = rng.random((S, N)) < 0.4
    eq.anchor = rng.integers(0, M, S)
    check_smoothed_jacobian(eq, rng)


def bundle_value_by_hand(econ, chain, prof):
    """Each consumer's wealth and the goods' excess demand written out from the documented
    semantics: at s = (v, w) consumer i holds e_i(w) + sum_k y_ik(v) b_k(w) (nothing carried into a
    start state), worth p(s) . that, and pays q(s) . y_i(w)."""
    S = len(chain.world)
    wealth, z = np.zeros((S, econ.n_consumers)), np.zeros((S, econ.n_goods))
    for s in range(S):
        v, w = chain.prev[s], chain.world[s]
        goods = econ.endowments[w].copy()
        if v >= 0:
            goods += prof.portfolio[v] @ econ.asset_bundles[w]
        wealth[s] = goods @ prof.prices[s] - prof.portfolio[w] @ prof.asset_prices[s]
        z[s] = prof.consumption[s].sum(axis=0) - goods.sum(axis=0)
    return wealth, z


@pytest.mark.parametrize("method", METHODS)
def test_assets_paying_bundles(method):
    econ = ec.random_economy(4, 3, 1, 3, "cobb_douglas", seed=3, bundles=True)
    with pytest.raises(ModelError, match="bundles"):
        _ = econ.asset_returns
    result = econ.solve(method=method, iteration_limit=40 if method == "markov-newton" else 400)
    # (over every deviation the stationary profiles of these methods keep consumer regrets of about
    # 1e-4 of the endowment value: tests/test_games_economy.py)
    assert result.stats["metrics"]["relative_exploitability"] <= 2e-3
    chain = ec.pair_chain(econ)
    prof = ec.Profile(*(result.solution[k] for k in ("prices", "asset_prices", "consumption", "portfolio")))
    wealth, z = bundle_value_by_hand(econ, chain, prof)
    assert np.allclose(wealth, ec.wealth(econ, chain, prof.prices, prof.asset_prices, prof.portfolio))
    assert np.allclose(z, ec.excess_demand(econ, chain, prof)[0])
    # the same economy with money returns fixed at the equilibrium's values is in equilibrium there
    # too when the returns do not depend on the previous world state's prices (one price per state)
    R = econ.returns_at(chain.world, prof.prices)
    assert R.shape == (len(chain.world), 1) and np.all(R > 0)


def test_endowment_shocks_are_the_product_chain():
    base = ec.random_economy(3, 2, 1, 2, seed=5)
    shocks = np.random.default_rng(0).uniform(0, 0.3, (3, 3, 2))
    P = np.array([0.2, 0.3, 0.5])
    econ = MarkovExchangeEconomy(base.utility, base.endowments, base.transitions, 0.9,
                                 asset_returns=base.asset_returns, endowment_shocks=shocks, shock_probabilities=P)
    assert econ.n_world == 6 and econ.n_shocks == 3
    # written out by hand: world state (w, z) = w * 3 + z
    W, Z = 2, 3
    T = np.zeros((6, 6))
    e = np.zeros((6, 3, 2))
    for w in range(W):
        for z in range(Z):
            e[w * Z + z] = base.endowments[w] + shocks[z]
            for w2 in range(W):
                for z2 in range(Z):
                    T[w * Z + z, w2 * Z + z2] = base.transitions[w, w2] * P[z2]
    assert np.allclose(econ.transitions, T) and np.allclose(econ.endowments, e)
    assert np.allclose(econ.initial, np.repeat(base.initial, Z) * np.tile(P, W))
    assert np.allclose(econ.asset_returns, np.repeat(base.asset_returns, Z, axis=0))
    assert econ.base_world.tolist() == [0, 0, 0, 1, 1, 1] and econ.shock.tolist() == [0, 1, 2, 0, 1, 2]
    explicit = MarkovExchangeEconomy(base.utility, e, T, 0.9, initial=econ.initial,
                                     asset_returns=econ.asset_returns)
    a = econ.solve(iteration_limit=15)
    prof = ec.Profile(*(a.solution[k] for k in ("prices", "asset_prices", "consumption", "portfolio")))
    assert ec.metrics(explicit, ec.pair_chain(explicit), prof)["exploitability"] == pytest.approx(a.objective,
                                                                                                  rel=1e-9)
    with pytest.raises(ModelError, match="endowment"):
        MarkovExchangeEconomy(base.utility, base.endowments, base.transitions, endowment_shocks=-shocks - 1)


def paper_like(**options):
    return ec.random_economy(3, 2, 1, 2, "leontief", seed=6, bundles=True, **options)


@pytest.mark.parametrize("options, message", [
    ({"endowment_floor": 0.01, "endowment_cap": 0.1}, "floors"),
    ({"horizon": 30}, "horizon"),
    ({"degree": 0.5}, "degree 0.5"),
])
def test_unsupported_options_are_refused_by_the_methods(options, message):
    econ = paper_like(**options)
    for method in METHODS:
        with pytest.raises(ModelError, match=message):
            econ.solve(method=method, iteration_limit=1)


def test_option_inputs_are_checked():
    with pytest.raises(ModelError, match="bundles of goods"):
        ec.random_economy(3, 2, 1, 2, endowment_floor=0.1)
    with pytest.raises(ModelError, match="floor"):
        paper_like(endowment_floor=0.2, endowment_cap=0.1)
    with pytest.raises(ModelError, match="horizon"):
        paper_like(horizon=0)
    with pytest.raises(ModelError, match=r"degree must be a number in \(0, 1\]"):
        paper_like(degree=1.5)
    with pytest.raises(ModelError, match="asset_returns"):
        MarkovExchangeEconomy(("linear", np.ones((3, 2))), np.ones((2, 3, 2)), np.eye(2),
                              asset_returns=np.ones((2, 1, 5)))
    econ = paper_like(endowment_floor=0.01, endowment_cap=0.1, horizon=30)
    assert econ.endowment_floor.tolist() == [0.01, 0.01] and econ.horizon == 30



@pytest.mark.parametrize("utility", ["cobb_douglas", "leontief", "linear"])
@pytest.mark.parametrize("bundles", [False, True])
def test_level_jacobian_matches_finite_differences(utility, bundles):
    """The equations with a level t(s) of the largest excess demand per state (the auctioneer's
    best response when the asset price cap binds and Walras' law no longer makes it 0)."""
    rng = np.random.default_rng(2)
    econ = ec.random_economy(3, 3, 2, 3, utility, seed=2, bundles=bundles, asset_price_max=1.5)
    eq = en.SmoothedEquations(econ, ec.pair_chain(econ))
    eq.level = True
    S, M, W, K, N = eq.shape
    eq.risk = rng.random((S, N)) < 0.4
    check_smoothed_jacobian(eq, rng, level=True)


@pytest.mark.parametrize("utility", ["cobb_douglas", "leontief"])
@pytest.mark.parametrize("bundles", [False, True])
def test_binding_asset_price_cap(utility, bundles):
    """Assets worth more than asset_price_max: the auctioneer's best response is the cap with excess
    demand for the asset, and Walras' law no longer makes the goods' largest excess demand 0 (money
    returns add money, bundle assets bought at the cap leave some unspent). markov-newton's level
    formulation solves these (it stalled near 1e-2 with the goods' excess demand pinned at 0)."""
    econ = ec.random_economy(4, 3, 1, 3, utility, seed=3, asset_price_max=0.3, bundles=bundles)
    result = econ.solve(method="markov-newton", tolerance=1e-8, iteration_limit=60)
    m = result.stats["metrics"]
    assert m["relative_exploitability"] <= 1e-8
    sol = result.solution
    assert np.allclose(sol["asset_prices"], econ.asset_price_max)
    assert np.allclose(sol["portfolio"].sum(axis=1), econ.n_consumers * econ.holding_limit)   # everyone at the limit
    assert np.allclose(sol["prices"].sum(axis=1), econ.price_sum)


# --- the paper's four economies ---------------------------------------------------------------------
PAPER_FILES = ("cd_deterministic", "cd_stochastic", "leontief_deterministic", "leontief_stochastic")


@pytest.mark.parametrize("which", PAPER_FILES)
def test_paper_economies_load_and_are_refused_as_stated(which):
    import json
    from pathlib import Path
    path = Path(__file__).resolve().parent.parent / "instances" / "games" / f"markov_paper_{which}.json"
    data = json.loads(path.read_text())
    assert data["source"]["repository"] == "Sadie-Zhao/Generalized-Markov-Games" and data["source"]["cells"]
    econ = MarkovExchangeEconomy.from_dict(data)
    assert (econ.n_consumers, econ.n_goods, econ.n_assets) == (10, 10, 1)
    assert econ.asset_bundles.shape[1:] == (1, 10) and econ.asset_price_max == 1.0 and econ.price_sum == 10.0
    assert econ.borrowing_limit[0] == econ.holding_limit[0] == 10.0 and econ.discount == 0.9
    assert econ.horizon == 30 and econ.endowment_floor[0] == pytest.approx(0.01)
    assert econ.degree == (pytest.approx(0.1) if which.startswith("cd") else 1.0)
    reached = ec.reachable_worlds(econ)
    assert reached.sum() == (2 if which.endswith("deterministic") else econ.n_world)
    for method in METHODS:
        with pytest.raises(ModelError, match="does not support"):
            econ.solve(method=method, iteration_limit=1)
    relaxed = MarkovExchangeEconomy.from_dict(data, drop=("degree", "endowment_floor", "endowment_cap", "horizon")) \
        if which.startswith("leontief") else None
    if relaxed is not None:
        assert relaxed.method_support() == [("assets paying bundles of goods", True)]


@pytest.mark.parametrize("which", ["cd_deterministic", "leontief_deterministic"])
def test_capped_deterministic_economies_cannot_put_every_consumer_at_the_limit(which):
    # docs/markov_games.md, "The paper's economies": after the start the chain stays in world state 1,
    # where the asset pays at least gamma * price_sum * min_j B_j >= 6 times its highest price every
    # period, whatever the goods prices, so every consumer with wealth there gains by holding more,
    # up to the holding limit. But the limit for every consumer cannot be paid for: with N x limit
    # held at the price cap, the auctioneer's zero regret needs every good's excess demand at
    # (0, 1) to be -cap x N x limit / price_sum, i.e. a supply of at least that much of every good,
    # and the supply at (0, 1) is the endowment plus what the start's holdings deliver (the start's
    # holdings are paid for with the start's endowment value, at most price_sum x max_j E_j(0) at
    # the cap). These are the data facts the argument rests on.
    import json
    from pathlib import Path
    path = Path(__file__).resolve().parent.parent / "instances" / "games" / f"markov_paper_{which}.json"
    data = json.loads(path.read_text())
    if data["utility"]["kind"] == "cobb_douglas":                # degree 1: exponents scaled to sum to 1
        a = np.asarray(data["utility"]["exponents"])
        data["utility"] = {"kind": "cobb_douglas", "exponents": (a / a.sum(axis=1, keepdims=True)).tolist()}
    econ = MarkovExchangeEconomy.from_dict(data, drop=("degree", "endowment_floor", "endowment_cap", "horizon"))
    chain = ec.pair_chain(econ)
    assert [(int(v), int(w)) for v, w in zip(chain.prev, chain.world)] == [(-1, 0), (0, 1), (1, 1)]
    B = econ.asset_bundles[1, 0]                                   # (M,) the bundle one unit pays in world 1
    cap, total = econ.asset_price_max, econ.price_sum
    assert econ.discount * total * B.min() > 6 * cap               # buying at (1, 1) always pays
    start_holdings = total * econ.endowments[0].sum(axis=0).max() / cap
    supply = econ.endowments[1].sum(axis=0) + B * start_holdings     # the most of each good at (0, 1)
    needed = cap * econ.n_consumers * econ.holding_limit[0] / total
    assert supply.min() < 0.7 * needed
    # and the methods' best profile indeed leaves consumers below the limit, with deviations (the
    # certificate's lower bound: concrete ones) that grow their holdings worth far above the goal
    result = econ.solve(method="markov-newton", iteration_limit=20)
    held = result.solution["portfolio"][1, :, 0]
    assert held.max() < econ.holding_limit[0]
    assert result.stats["metrics"]["exploitability_lower"] > 1e-2 * result.stats["metrics"]["endowment_value"]
