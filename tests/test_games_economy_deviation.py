"""The Markov exchange economy's certificate bounds every deviation the model allows.

The reference is a brute-force dynamic program written out here, independent of the code under
test: over (previous world state, world state, own previous holding on a grid), a consumer picks
its next holding on the grid, affordable (wealth >= 0), and earns beta W; value iteration gives
the best grid policy's value, which a deviation that conditions on the world-state history and on
its own holdings attains. No such value may exceed the certified bound.
"""
from __future__ import annotations

import itertools
import time
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvopt.core.errors import SolverError
from solvopt.core.result import Termination
from solvopt.dsl import MarkovExchangeEconomy
from solvopt.games import economy as ec
from solvopt.games import economy_deviation as dv


def brute_force_values(econ, prices, asset_prices, points=41, sweeps=400):
    """(N,) the best value from mu of a grid policy over (v, w, own holding): holdings on a grid of
    ``points`` per asset (0 and the limits included), by value iteration."""
    chain = ec.pair_chain(econ)
    index = {(int(v), int(w)): k for k, (v, w) in enumerate(zip(chain.prev, chain.world))}
    W, K, T, gamma = econ.n_world, econ.n_assets, econ.transitions, econ.discount
    axes = [np.union1d(np.linspace(-econ.borrowing_limit[k], econ.holding_limit[k], points), [0.0]) for k in range(K)]
    grid = np.array(list(itertools.product(*axes)))                          # (G, K)
    zero = int(np.flatnonzero(np.all(grid == 0, axis=1))[0])
    pay = grid @ econ.asset_returns.T                                          # (G, W): R(w) . x
    out = []
    for i in range(econ.n_consumers):
        V = {pair: np.zeros(len(grid)) for pair in index}                     # V[(v, w)][x]
        for _ in range(sweeps):
            new = {}
            for (v, w), s in index.items():
                p, q = prices[s], asset_prices[s]
                beta = float(econ.utility.indirect(p[None, None, :], 1.0)[0, i])
                c = float(p @ econ.endowments[w, i])
                carried = pay[:, w] if v >= 0 else np.zeros(len(grid))
                cont = sum(T[w, w2] * V[(w, w2)] for w2 in range(W) if T[w, w2] > 0)     # (G,) over y
                wealth = c + carried[:, None] - (grid @ q)[None, :]                     # (x, y)
                total = np.where(wealth >= 0, beta * wealth + gamma * cont[None, :], -np.inf)
                new[(v, w)] = total.max(axis=1)
            V = new
        out.append(sum(econ.initial[w] * V[(-1, w)][zero] for w in range(W)))
    return np.array(out)


def profile_at(econ, chain, prices, asset_prices, portfolio=None):
    y = np.zeros((econ.n_world, econ.n_consumers, econ.n_assets)) if portfolio is None else np.asarray(portfolio)
    return ec.Profile(prices, asset_prices, ec.demand(econ, chain, prices, asset_prices, y), y)


def values(econ, chain, prof):
    return chain.occupancy @ econ.utility.value(prof.consumption)


# --- the economy of the sample file, at the profile the stationary certificate called an equilibrium ---
SHIPPED_PRICES = [[0.9423596013304042, 2.4932807148810516, 6.5643596837885445],
                  [1.4561261435270523, 2.5832508059220722, 5.960623050550876],
                  [0.9237996150515183, 2.4410312244848376, 6.635169160463645],
                  [1.4428045610531175, 2.5595481465407213, 5.997647292406161],
                  [0.9739029367999444, 2.649987511472275, 6.376109551727781],
                  [1.4782778506263934, 2.6560235595873425, 5.865698589786264]]
SHIPPED_ASSET_PRICES = [[0.9895613071702121], [0.7638572702425191]] * 3
SHIPPED_PORTFOLIO = [[[-0.3631882783135246], [1.0], [-0.6368117216864755]], [[1.0], [-1.0], [0.0]]]


def shipped_economy():
    exponents = [[0.156, 0.3901, 0.4539], [0.1, 0.1769, 0.7231], [0.1203, 0.1654, 0.7143]]
    endowments = [[[0.7, 0.5, 0.61], [0.73, 0.42, 0.31], [0.83, 0.74, 0.61]],
                  [[0.85, 0.64, 0.98], [0.36, 0.64, 0.59], [0.48, 0.67, 0.39]]]
    return MarkovExchangeEconomy(("cobb_douglas", exponents), endowments, [[0.8, 0.2], [0.3, 0.7]], 0.9,
                                 initial=[0.5, 0.5], asset_returns=[[1.2], [0.7]])


def test_history_dependent_deviation_beats_the_old_optimal_profile():
    econ = shipped_economy()
    chain = ec.pair_chain(econ)
    p, q = np.array(SHIPPED_PRICES), np.array(SHIPPED_ASSET_PRICES)
    prof = profile_at(econ, chain, p, q, SHIPPED_PORTFOLIO)
    beta = ec.bang_per_buck(econ, p)
    v = values(econ, chain, prof)
    # the stationary class (holdings that depend on the current world state only) has no better response:
    # that certificate said exploitability ~1e-12, OPTIMAL
    stationary_upper, _, _ = ec.consumer_best_value(econ, chain, p, q, beta)
    assert np.all(stationary_upper - v <= 1e-9)
    brute = brute_force_values(econ, p, q, points=3)            # holdings -1, 0, 1: the optimum is bang-bang
    assert np.allclose(brute - v, [0.0043803, 0.0015145, 0.0025018], atol=1e-6)
    m, expl = ec.certificate(econ, chain, prof)
    money = (brute - v) / ec.money_rates(econ)                           # the certificate's regrets are in money
    assert np.allclose(money, [0.0403129, 0.0109155, 0.0184244], atol=1e-6)
    assert np.all(m["per_player"][:3] >= money - 1e-12)
    assert np.allclose(m["per_player"][:3], money, atol=1e-9)             # the bound is exact here
    assert expl.value > 1e-3 and expl.certified                           # a status of OPTIMAL is out of reach
    assert 0 <= m["exploitability_lower"] <= m["exploitability"]


def test_the_result_says_what_the_certificate_covers():
    result = shipped_economy().solve(method="markov-newton", tolerance=1e-12, iteration_limit=20)
    assert "every deviation" in result.guarantee and "own past holdings" in result.guarantee
    assert result.termination is not Termination.OPTIMAL and result.objective > 1e-3


def random_case(seed, limit, assets=1, world_states=2, consumers=2):
    rng = np.random.default_rng(seed)
    econ = ec.random_economy(consumers, 2, assets, world_states, "cobb_douglas", stochastic=True, seed=seed,
                             holding_limit=limit, borrowing_limit=limit)
    chain = ec.pair_chain(econ)
    S = len(chain.world)
    p = rng.uniform(0.2, 1.0, (S, 2))
    p *= econ.price_sum / p.sum(axis=1, keepdims=True)
    q = rng.uniform(0.3, 1.6, (S, assets))
    return econ, chain, p, q


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), limit=st.sampled_from([0.5, 2.0, 8.0]))
def test_no_grid_deviation_beats_the_certified_bound(seed, limit):
    econ, chain, p, q = random_case(seed, limit)
    prof = profile_at(econ, chain, p, q)
    beta = ec.bang_per_buck(econ, p)
    v = values(econ, chain, prof)
    bounds = dv.deviation_bounds(econ, chain, p, q, beta, v)
    brute = brute_force_values(econ, p, q, points=33, sweeps=250)
    scale = np.maximum(1.0, np.abs(brute))
    assert np.all(brute <= bounds.upper + 1e-9 * scale)
    assert np.all(bounds.lower <= bounds.upper + 1e-12 * scale) and np.all(bounds.lower >= v - 1e-12)
    m = ec.metrics(econ, chain, prof)
    assert np.all(m["per_player"][:-1] >= (brute - v - 1e-9 * scale) / ec.money_rates(econ))


@pytest.mark.parametrize("seed, limit", [(1, 10.0), (2, 30.0), (5, 10.0)])
def test_dynamic_program_where_the_wealth_constraint_binds(seed, limit):
    # large limits: buying or selling the limit overspends, the one-asset dynamic program sets the bound
    econ, chain, p, q = random_case(seed, limit, consumers=3)
    prof = profile_at(econ, chain, p, q)
    beta = ec.bang_per_buck(econ, p)
    v = values(econ, chain, prof)
    bounds = dv.deviation_bounds(econ, chain, p, q, beta, v)
    assert "dynamic program" in bounds.how
    brute = brute_force_values(econ, p, q, points=121, sweeps=250)
    assert np.all(brute <= bounds.upper + 1e-9)
    # the bound is close: what is left is the grid's own loss (holdings 0.17 apart at limit 10; at
    # limit 30 it shrinks with the grid: 0.11, 0.066, 0.027, 0.008 at 61, 121, 241, 481 points)
    assert np.all(bounds.upper - brute <= (0.01 if limit < 30 else 0.03) * np.abs(bounds.upper - v) + 1e-6)
    assert np.all(bounds.lower <= bounds.upper + 1e-12 * np.abs(bounds.upper))


def test_two_assets_lagrangian_bound_is_valid():
    for seed in range(3):
        econ, chain, p, q = random_case(seed, 3.0, assets=2)
        beta = ec.bang_per_buck(econ, p)
        bounds = dv.deviation_bounds(econ, chain, p, q, beta)
        brute = brute_force_values(econ, p, q, points=7, sweeps=250)
        assert np.all(brute <= bounds.upper + 1e-9)
        assert np.all(bounds.lower <= bounds.upper + 1e-12 * np.abs(bounds.upper))


def test_no_assets_is_the_closed_form():
    econ = ec.random_economy(3, 2, 0, 2, "leontief", seed=1)
    chain = ec.pair_chain(econ)
    prof = ec.initial_profile(econ, chain)
    m = ec.metrics(econ, chain, prof)
    assert m["deviation_bounds"] == ["closed form"] * 3 and m["consumer_regret"] <= 1e-12


def test_prices_off_the_simplex_are_flagged_not_hidden():
    econ = shipped_economy()
    chain = ec.pair_chain(econ)
    p, q = np.array(SHIPPED_PRICES), np.array(SHIPPED_ASSET_PRICES)
    prof = profile_at(econ, chain, p * 1.1, q)                         # sums 11 where they must sum 10
    m, expl = ec.certificate(econ, chain, prof)
    assert m["price_violation"] == pytest.approx(0.1) and not expl.certified
    # the auctioneer's per-state regret is reported signed as well (negative off the simplex)
    assert m["auctioneer_regret_signed"] <= m["auctioneer_regret"]
    prof = profile_at(econ, chain, p, q * 20)                          # above asset_price_max = 10
    assert ec.certificate(econ, chain, prof)[0]["price_violation"] > 0.9
    m, expl = ec.certificate(econ, chain, profile_at(econ, chain, p, q))
    assert m["price_violation"] <= 1e-15 and m["auctioneer_regret_signed"] >= -1e-12


def test_unsupported_model_options_are_refused():
    base = shipped_economy()
    for extra in ({"degree": 0.5}, {"endowment_floor": 0.1}, {"horizon": 20}):
        fake = SimpleNamespace(**{**vars(base), **extra})
        with pytest.raises(SolverError, match="certificate covers"):
            dv.check_supported(fake)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000))
def test_simplification_only_raises_the_function(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 60))
    xs = np.sort(rng.uniform(-3, 3, n))
    slopes = np.sort(rng.normal(0, 2, n - 1))[::-1]                   # decreasing: concave
    vs = np.concatenate([[0.0], np.cumsum(slopes * np.diff(xs))])
    vs = vs + rng.normal(0, 1e-13, n)                                    # rounding-level noise
    eps = float(10.0 ** rng.uniform(-12, -1))
    tx, tv = dv._tidy(xs, vs, eps)
    assert tx[0] == xs[0] and tx[-1] == xs[-1]
    sample = np.linspace(xs[0], xs[-1], 2001)
    assert np.all(np.interp(sample, tx, tv) >= np.interp(sample, xs, vs) - 1e-11)


@pytest.mark.parametrize("seed, limit", [(1, 10.0), (2, 30.0), (3, 1.0)])
def test_compiled_bellman_step_matches_the_numpy_reference(seed, limit):
    econ, chain, p, q = random_case(seed, limit, consumers=3)
    beta = ec.bang_per_buck(econ, p)
    c = np.einsum("sm,snm->sn", p, econ.endowments[chain.world])
    R = np.where(chain.prev[:, None] < 0, 0.0, econ.asset_returns[chain.world])
    lo, hi = -econ.borrowing_limit, econ.holding_limit
    for i in range(3):
        dp = dv.OneAssetDP(chain, econ.discount, beta[:, i], c[:, i], q[:, 0], R[:, 0], lo[0], hi[0])
        slope, psi = dv.lagrangian_function(chain, econ.discount, beta[:, i], c[:, i], q, R, lo, hi, np.zeros(len(c)))
        U = [(np.array([lo[0], hi[0]]), slope[s, 0] * np.array([lo[0], hi[0]]) + psi[s]) for s in range(len(c))]
        sample = np.linspace(lo[0], hi[0], 301)
        for _ in range(12):
            fast = [dp.bellman(U, s, 1e-12) for s in range(len(U))]
            ref = [dp.bellman_reference(U, s, 1e-12) for s in range(len(U))]
            for f, g in zip(fast, ref):
                assert (f is None) == (g is None)
                if f is not None:
                    assert f[0][0] == pytest.approx(g[0][0], abs=1e-12)
                    assert f[0][-1] == pytest.approx(g[0][-1], abs=1e-12)
                    inside = sample[(sample >= f[0][0]) & (sample <= f[0][-1])]
                    assert np.allclose(np.interp(inside, *f), np.interp(inside, *g), atol=1e-10, rtol=1e-12)
            U = fast


def test_a_stop_reaches_the_certificate_inner_calls(monkeypatch):
    # a passed deadline stops the Lagrangian LP and the dynamic program (not a silently looser bound)
    from solvopt.games.projection import Stopped, stopping_at
    econ, chain, p, q = random_case(1, 10.0, consumers=3)
    beta = ec.bang_per_buck(econ, p)
    with stopping_at(time.perf_counter() - 1.0), pytest.raises(Stopped):
        dv.deviation_bounds(econ, chain, p, q, beta)
    # inside HiGHS: the time left and the interrupt callback (the check before the run switched off)
    from scipy import sparse

    from solvopt.core.interrupt import clear_stop, request_stop
    monkeypatch.setattr(dv, "check_stop", lambda: None)
    n = 3000
    A = sparse.random(n, n, density=0.003, random_state=1, format="csc") + sparse.identity(n)
    cost = -np.random.default_rng(0).uniform(size=n)
    b, lb, ub = np.full(n, 1.5), np.zeros(n), np.full(n, 10.0)
    with stopping_at(time.perf_counter() + 1e-4), pytest.raises(Stopped) as stop:
        dv.highs_lp(cost, A, b, lb, ub)
    assert stop.value.reason is Termination.TIME_LIMIT
    request_stop()
    try:
        with pytest.raises(Stopped) as stop:
            dv.highs_lp(cost, A, b, lb, ub)
        assert stop.value.reason is Termination.INTERRUPTED
    finally:
        clear_stop()


def test_highs_lp_matches_linprog():
    from scipy.optimize import linprog
    rng = np.random.default_rng(3)
    A, b, c = rng.normal(size=(6, 8)), rng.uniform(1, 2, 6), rng.normal(size=8)
    ref = linprog(c, A_ub=A, b_ub=b, bounds=[(-1, 1)] * 8, method="highs")
    x, duals = dv.highs_lp(c, A, b, -np.ones(8), np.ones(8))
    assert np.allclose(x, ref.x, atol=1e-9) and np.allclose(duals, ref.ineqlin.marginals, atol=1e-9)
