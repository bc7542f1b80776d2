"""The lower bound on every profile's exploitability with endowment floors and caps
(solvopt.games.economy_clip_lower): each deviation of the argument evaluated under the true clipped
dynamics against the gain the argument claims, the period MIPs against the period's function evaluated
directly and on a grid, the whole bound against certified profiles of small economies, its scale law and
its refusals."""
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvopt.core.errors import ModelError
from solvopt.core.result import Termination
from solvopt.dsl import MarkovExchangeEconomy
from solvopt.games import economy_clip as cl
from solvopt.games import economy_clip_lower as lo
from solvopt.games.economy import bang_per_buck

REPO = Path(__file__).resolve().parents[1]


def _economy(seed, N=2, M=3, T=4, limit=10.0, price_sum=3.0, qmax=1.0, goods=1.0, kind="leontief", spread=3.0,
             holding=None):
    """N Leontief consumers, M goods, one bundle asset, T periods on a deterministic chain (the start, then
    world state 1 for ever), every endowment after the start at the floor, as in the paper's economies.
    ``goods`` scales every quantity of goods (endowments, floor, cap, bundles), ``price_sum`` and ``qmax``
    the money; ``spread`` the largest Leontief requirement (the least 1); ``holding`` the holding limit (else
    ``limit``, the short limit too)."""
    rng = np.random.default_rng(seed)
    floor, cap = 0.01, 0.1
    E = np.concatenate([rng.uniform(0.02, 0.1, (1, N, M)), np.full((1, N, M), floor)]) * goods
    bundles = rng.uniform(0.5, 1.1, (2, 1, M)) * goods
    utility = ("leontief", rng.uniform(1.0, spread, (N, M))) if kind == "leontief" else \
        ("cobb_douglas", rng.dirichlet(np.ones(M), N))
    return MarkovExchangeEconomy(utility, E, [[0.0, 1.0], [0.0, 1.0]], 0.9, initial=[1.0, 0.0],
                                 asset_returns=bundles, borrowing_limit=limit,
                                 holding_limit=limit if holding is None else holding,
                                 asset_price_max=qmax, price_sum=price_sum, endowment_floor=floor * goods,
                                 endowment_cap=cap * goods, horizon=T)


def _profile(econ, rng):
    """A random budget-feasible profile: prices on the simplex, asset prices in [0, q_max] (some at the
    cap), holdings drawn wide and then cut so that every wealth is >= 0, consumption a fraction of the
    Leontief demand."""
    T, N, M = econ.horizon, econ.n_consumers, econ.n_goods
    worlds = np.array([0] + [1] * (T - 1))
    prices = rng.dirichlet(np.full(M, 0.7), T) * econ.price_sum
    q = rng.choice([0.0, 0.003, 0.02, 0.3, 0.9, 1.0], T) * econ.asset_price_max
    q = np.where(rng.random(T) < 0.5, rng.uniform(0, econ.asset_price_max, T), q)
    lim = float(econ.holding_limit[0])
    y = rng.choice([-1.0, -0.3, 0.0, 0.01, 0.05, 0.5, 1.0], (T, N)) * lim * rng.uniform(0, 1, (T, N))
    E = econ.endowments[worlds].copy()
    b = econ.asset_bundles[worlds, 0]
    for t in range(T):
        if t:
            E[t] = cl.clipped(E[t], b[t], econ.endowment_floor, econ.endowment_cap, y[t - 1])
        cash = E[t] @ prices[t]
        if q[t] > 0:
            y[t] = np.minimum(y[t], cash / q[t])
    W = np.einsum("tnm,tm->tn", E, prices) - q[:, None] * y
    W = np.maximum(W, 0.0)
    demand = econ.utility.demand(prices[:, None, :], W * rng.uniform(0.5, 1.0, W.shape))
    return worlds, prices, q, demand, y


def _path(econ, worlds, prices, q, i):
    beta = bang_per_buck(econ, prices)[:, i]
    T = len(worlds)
    return cl.ClipPath(econ.discount ** np.arange(T) * beta, 1.0, float(prices[0] @ econ.endowments[worlds[0], i]),
                       prices, econ.endowments[worlds][:, i], econ.asset_bundles[worlds, 0], econ.endowment_floor,
                       econ.endowment_cap, q, -float(econ.borrowing_limit[0]), float(econ.holding_limit[0])), beta[0]


def _consumers(seed, N, T):
    """A random small economy and budget-feasible profile: for each consumer (constants, her index, her path
    against the profile's prices, period 0's bang per buck, her holdings, the asset prices, her own value,
    her bang per buck over the least she can have, per period)."""
    econ = _economy(seed % 1000, N=N, T=T)
    k = lo.constants(econ)
    worlds, prices, q, x, y = _profile(econ, np.random.default_rng(seed))
    c = econ.utility.weights
    for i in range(N):
        path, beta0 = _path(econ, worlds, prices, q, i)
        own = path.value(y[:, i])
        assert np.isfinite(own)
        yield k, i, path, beta0, y[:, i], q, own, econ.price_sum * c[i].max() / (prices @ c[i])


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 3), st.integers(3, 6))
def test_the_chain_deviation_is_feasible_and_gains_what_case_c_claims(seed, N, T):
    for k, i, path, beta0, y, q, own, _ in _consumers(seed, N, T):
        for a in range(1, T):
            if y[a] <= 0:
                continue
            theirs = path.value(lo.chain_holdings(k, y, q, a))
            assert np.isfinite(theirs), "the chain deviation must stay budget-feasible"
            gain = (theirs - own) / beta0
            # the claim holds where its bracket is positive (case C's hypothesis on theta = q_a)
            bracket = k.B * q[a] if a == T - 1 else k.B * q[a] - k.gamma * k.L / k.u[i]
            if bracket > 0 and k.B * k.phi / k.s > k.L:
                claim = k.gamma ** a * k.u[i] * bracket
                assert gain >= claim - 1e-9 * max(1.0, claim)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 3), st.integers(3, 6))
def test_the_local_deviation_is_feasible_and_gains_what_case_n_claims(seed, N, T):
    for k, i, path, beta0, y, q, own, x in _consumers(seed, N, T):
        assert np.all(x >= 1 - 1e-12) and np.all(x <= 1 / k.u[i] + 1e-12)
        moved = lo.local_holdings(k, i, y, q, x)
        assert np.all(moved >= -k.B) and np.all(moved <= k.H), "the local deviation must stay in the box"
        theirs = path.value(moved)
        assert np.isfinite(theirs), "the local deviation must stay budget-feasible"
        gain = (theirs - own) / beta0
        claim = sum(k.gamma ** t * lo.least_gains(k, q[t], np.full(len(k.u), y[t]))[i] for t in range(1, T - 1))
        assert gain >= claim - 1e-9 * max(1.0, claim)


def test_a_short_consumer_does_not_buy_past_her_holding_limit():
    # a holding limit below the saturating holding: buying up to saturation is not a move there
    econ = _economy(5, N=2, T=5, holding=0.05)
    k = lo.constants(econ)
    assert k.s > k.H and not lo.can_saturate(k, 0.0)
    q, y = np.full(5, 0.001), np.full(5, -k.B)
    assert np.all(lo.local_holdings(k, 0, y, q) <= k.H)
    assert lo.least_gains(k, 0.001, np.array([-k.B, 0.0]))[0] <= k.G[0] * k.d + 1e-15


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**6))
def test_the_period_mip_is_below_the_period_function_everywhere_in_its_interval(seed):
    rng = np.random.default_rng(seed)
    econ = _economy(seed % 1000, N=int(rng.integers(2, 4)))
    k = lo.constants(econ)
    q_lo = float(rng.choice([0.0, rng.uniform(0, 0.05), rng.uniform(0, 0.9)]))
    q_hi = q_lo + float(rng.choice([1e-3, 0.02, 0.1]))
    bound = lo.period_bound(k, q_lo, q_hi)
    assert bound >= 0
    N = len(k.u)
    pieces = [(-k.B, 0.0), (0.0, k.d), (k.d, k.s), (k.s, k.H)]
    for _ in range(400):
        q = rng.uniform(q_lo, q_hi)
        y = np.array([rng.uniform(*pieces[rng.integers(4)]) for _ in range(N)])
        assert lo.period_value(k, q, y) >= bound - 1e-12
    # the balanced structure (one consumer short, the others at the saturating holding) is in the box too
    y = np.full(N, k.s)
    y[0] = -k.s * (N - 1)
    assert lo.period_value(k, q_lo, y) >= bound - 1e-12


@pytest.mark.parametrize("q", [0.0, 0.004, 0.02, 0.04, 0.07, 0.12, 0.3, 0.95])
def test_the_period_mip_meets_a_grid_search_on_two_consumers(q):
    # with q fixed (a zero-width interval) the MIP is exact for its own relaxation of h_i, each consumer's
    # terms increasing in her price at u_i q and the decreasing ones at q: it meets that function's least
    # value over a fine grid, whose points include every breakpoint, within the grid's Lipschitz slack
    # small u and a holding limit below the short one: at some prices a short consumer's gain binds
    econ = _economy(7, N=2, M=10, price_sum=10.0, spread=5.0, holding=1.0)
    k = lo.constants(econ)
    bound = lo.period_bound(k, q, q)
    grid = np.unique(np.concatenate([np.linspace(-k.B, k.H, 4001), [0.0, k.d, k.s, -k.s, -2 * k.s]]))
    Y1, Y2 = np.meshgrid(grid, grid, indexing="ij")

    def relaxed(i, v):
        up = k.u[i] * q
        return max(0.0, up * (k.B + v) if v <= 0 else 0.0, up * (v - k.s) if v > k.s else 0.0,
                   k.G[i] * (k.d - max(v, 0.0)) - q * (k.d - v) if v < k.d else 0.0,
                   k.Gs[i] - q * (k.s - v) if v <= 0 and lo.can_saturate(k, q) else 0.0)
    g1 = np.array([relaxed(0, v) for v in grid])
    g2 = np.array([relaxed(1, v) for v in grid])
    # the relaxation lies below h_i, the least over the consumer's price range
    for v in grid[::97]:
        assert relaxed(0, v) <= lo.least_gains(k, q, np.array([v, 0.0]))[0] + 1e-12
        assert relaxed(1, v) <= lo.least_gains(k, q, np.array([0.0, v]))[1] + 1e-12
    Y = Y1 + Y2
    F = g1[:, None] + g2[None, :] + k.q_max * np.maximum(Y, 0.0) - q * Y
    step = np.max(np.diff(grid))
    slope = 2 * (k.q_max + np.max(k.G)) + 1.0
    assert F.min() >= bound - 1e-12
    assert bound >= F.min() - slope * step


def test_the_bound_is_below_every_certified_profile_of_small_economies():
    for seed in range(3):
        econ = _economy(seed, N=2, T=4)
        least = lo.least_exploitability(econ, intervals=16, refine=16)
        assert least.value > 0
        worlds = np.array([0, 1, 1, 1])
        r = econ.solve(method="markov-horizon", rounds=2)
        m = r.stats["metrics"]
        assert m["exploitability_lower"] >= least.value
        assert m["horizon_relative_exploitability"] >= least.relative
        # the method reports the proven floor as its bound where it ends above the tolerance
        assert r.termination != Termination.OPTIMAL
        assert r.bound == r.stats["least_exploitability"] and 0 < r.bound <= m["exploitability_lower"]
        rng = np.random.default_rng(seed)
        for _ in range(6):
            worlds, prices, q, x, y = _profile(econ, rng)
            met, _, _ = cl.clip_metrics(econ, worlds, prices, q, x, y)
            assert met["budget_violation"] <= 1e-9
            assert met["exploitability_lower"] >= least.value


def test_the_bound_is_in_the_data_units_own_frame():
    # goods counted in another unit (every quantity of goods times g, so money values and the asset's
    # price cap too) and money in another (prices times m): the same economy, the bound times g m
    base = lo.least_exploitability(_economy(3), intervals=12, refine=8)
    assert base.value > 0
    for goods, money in [(1e-12, 1.0), (1e12, 1.0), (1.0, 1e-12), (1.0, 1e12)]:
        econ = _economy(3, goods=goods, price_sum=3.0 * money, qmax=goods * money)
        scaled = lo.least_exploitability(econ, intervals=12, refine=8)
        assert scaled.relative == pytest.approx(base.relative, rel=1e-6)
        assert scaled.value == pytest.approx(base.value * goods * money, rel=1e-6)


def test_it_refuses_economies_outside_its_argument_in_one_line():
    with pytest.raises(ModelError, match="Leontief"):
        lo.constants(_economy(0, kind="cobb_douglas"))
    econ = _economy(0)
    econ.endowments = econ.endowments.copy()
    econ.endowments[1, 0, 0] += 0.02
    with pytest.raises(ModelError, match="floor"):
        lo.constants(econ)
    stochastic = MarkovExchangeEconomy.from_dict(
        json.load(open(REPO / "instances/games/markov_paper_leontief_stochastic.json")))
    with pytest.raises(ModelError, match="deterministic"):
        lo.constants(stochastic)


def test_the_paper_leontief_economy_cannot_reach_the_tolerance():
    path = REPO / "instances/games/markov_paper_leontief_deterministic.json"
    econ = MarkovExchangeEconomy.from_dict(json.load(open(path)))
    least = lo.least_exploitability(econ, intervals=16, refine=16)
    assert least.relative > 1e-4                          # no profile reaches the 1e-4 goal
    assert least.value <= 6.998                           # the best certified profile measured (benchmarks)


def test_the_floor_takes_a_share_of_a_time_limit_and_a_stopped_run_keeps_it(monkeypatch):
    import time

    from solvopt.games import markov_solvers
    econ = _economy(1, N=2, T=4)
    r = econ.solve(method="markov-horizon", time_limit=30)
    assert r.bound > 0 and r.bound == r.stats["least_exploitability"]
    # a floor that would fit in the time limit but not in its share of it is skipped (bound 0), and the
    # construction still runs
    real = lo.period_bound
    monkeypatch.setattr(lo, "period_bound", lambda *a: (time.sleep(0.01), real(*a))[1])
    began = time.perf_counter()
    r = econ.solve(method="markov-horizon", time_limit=4.0)
    assert time.perf_counter() - began < 4.0 + 5.0
    assert r.bound == 0.0 and "least_exploitability" not in r.stats
    assert 4.0 * markov_solvers.FLOOR_SHARE < 0.01 * (lo.INTERVALS + 2 * lo.REFINE) < 4.0
    assert r.solution["portfolio"] is not None


def test_a_passed_deadline_reaches_the_period_mip():
    # the MIPs run through the solve's HiGHS runner: a deadline (or Ctrl-C) stops HiGHS itself
    import time

    from solvopt.games.projection import Stopped, stopping_at
    k = lo.constants(_economy(2, N=150))                 # a MIP that takes HiGHS a fraction of a second
    assert lo.period_bound(k, 0.0, 0.05) >= 0
    with stopping_at(time.perf_counter() - 1.0), pytest.raises(Stopped):
        lo.period_bound(k, 0.0, 0.05)
