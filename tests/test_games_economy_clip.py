"""Endowment floors and caps in finite-horizon economies: the concave-envelope certificate
(solvopt.games.economy_clip) against brute force over holdings paths under the true clipped dynamics,
its exactness where the clip does not bind, and markov-horizon on economies with floors and caps."""
import itertools

import numpy as np
import pytest

from solvopt.core.result import Termination
from solvopt.dsl import MarkovExchangeEconomy
from solvopt.games import economy_clip as cl
from solvopt.games.economy import bang_per_buck
from solvopt.games.economy_path import path_bounds


def _envelope_data(rng, M=4):
    return (rng.uniform(0.5, 2, M), rng.uniform(0, 0.3, M), rng.uniform(0, 1.2, M) * (rng.random(M) > 0.2),
            np.full(M, 0.05), np.full(M, 0.2))


@pytest.mark.parametrize("seed", range(5))
def test_the_envelope_is_the_least_concave_majorant_of_the_clipped_cash(seed):
    rng = np.random.default_rng(seed)
    p, e, b, floor, cap = _envelope_data(rng)
    lo, hi = -1.0, 1.5
    alpha, gamma = cl.envelope(p, e, b, floor, cap, lo, hi)
    ys = np.linspace(lo, hi, 2001)
    f = cl.clipped(e, b, floor, cap, ys) @ p
    g = np.min(alpha[:, None] + gamma[:, None] * ys, axis=0)
    assert np.all(g >= f - 1e-12)
    assert np.all(np.diff(gamma) < 1e-12)                   # concave: slopes fall
    # it touches f at every vertex of the hull (so nothing smaller and concave lies above f)
    ks = cl.breakpoints(e, b, floor, cap, lo, hi)
    fk = cl.clipped(e, b, floor, cap, ks) @ p
    gk = np.min(alpha[:, None] + gamma[:, None] * ks, axis=0)
    assert np.isclose(gk[0], fk[0]) and np.isclose(gk[-1], fk[-1])
    # on an interval with no convex kink the envelope is f itself
    kinks = cl.convex_kinks(p, e, b, floor, cap, lo, hi)
    cuts = np.concatenate([[lo], kinks, [hi]])
    for a, c in zip(cuts[:-1], cuts[1:]):
        al, ga = cl.envelope(p, e, b, floor, cap, a, c)
        inside = np.linspace(a, c, 101)
        np.testing.assert_allclose(np.min(al[:, None] + ga[:, None] * inside, axis=0),
                                   cl.clipped(e, b, floor, cap, inside) @ p, atol=1e-12)


def _tiny_economy(degree, seed, floor=0.01, cap=0.1, borrowing=1.0):
    """2 consumers, 3 goods, one bundle asset, 3 periods on a deterministic chain; the later endowments
    sit at the floor (short sales cost nothing there, as in the paper's economies) or above it."""
    rng = np.random.default_rng(seed)
    E = np.concatenate([rng.uniform(0.02, 0.1, (1, 2, 3)), rng.uniform(0.0, 0.05, (1, 2, 3)) + floor])
    bundles = rng.uniform(0.3, 1.1, (2, 1, 3))
    return MarkovExchangeEconomy(("cobb_douglas", rng.dirichlet(np.ones(3), 2)), E, [[0.0, 1.0], [0.0, 1.0]], 0.9,
                                 initial=[1.0, 0.0], asset_returns=bundles, borrowing_limit=borrowing,
                                 holding_limit=1.0, asset_price_max=1.0, price_sum=3.0,
                                 degree=None if degree == 1 else degree,
                                 endowment_floor=floor, endowment_cap=cap, horizon=3)


def _brute(econ, worlds, prices, q, i, n=61):
    """The best value of consumer i over a grid of holdings paths, under the true clipped dynamics."""
    T, h = len(worlds), econ.degree
    beta = bang_per_buck(econ, prices)[:, i]
    E, b = econ.endowments[worlds][:, i], econ.asset_bundles[worlds, 0]
    grid = np.linspace(-econ.borrowing_limit[0], econ.holding_limit[0], n)
    Y = np.array(np.meshgrid(*[grid] * T, indexing="ij")).reshape(T, -1)
    W = np.empty_like(Y)
    W[0] = prices[0] @ E[0] - q[0] * Y[0]
    for t in range(1, T):
        W[t] = cl.clipped(E[t], b[t], econ.endowment_floor, econ.endowment_cap, Y[t - 1]) @ prices[t] - q[t] * Y[t]
    ok = np.all(W >= 0, axis=0)
    value = ((econ.discount ** np.arange(T) * beta ** h)[:, None] * np.maximum(W, 0.0) ** h).sum(axis=0)
    return value[ok].max()


@pytest.mark.parametrize("degree, seed", itertools.product([1, 0.5, 0.1], range(3)))
def test_the_bound_is_above_brute_force_and_closes_on_a_feasible_path(degree, seed):
    econ = _tiny_economy(degree, seed)
    rng = np.random.default_rng(100 + seed)
    worlds = np.array([0, 1, 1])
    for q in ([0.0, 0.0, 0.0], [0.05, 0.2, 0.0], [0.5, 0.02, 0.3]):
        prices = rng.dirichlet(np.ones(3), 3) * 3
        x = np.zeros((3, 2, 3)) + 0.01
        bnd = cl.clip_bounds(econ, worlds, prices, np.array(q), x, np.zeros((3, 2)))
        for i in range(2):
            brute = _brute(econ, worlds, prices, q, i)
            assert bnd.upper[i] >= brute - 1e-12 * max(1.0, brute)
            assert bnd.lower[i] <= bnd.upper[i]
            assert bnd.upper[i] - bnd.lower[i] <= 1e-6 * bnd.upper[i]
        # the deviation path is feasible under the true dynamics and worth what it says
        for i in range(2):
            path = cl.ClipPath(econ.discount ** np.arange(3) * bang_per_buck(econ, prices)[:, i] ** econ.degree,
                               econ.degree, float(prices[0] @ econ.endowments[0, i]), prices,
                               econ.endowments[worlds][:, i], econ.asset_bundles[worlds, 0], econ.endowment_floor,
                               econ.endowment_cap, np.array(q), -1.0, 1.0)
            assert path.value(bnd.holdings[i, :, 0]) == pytest.approx(bnd.lower[i], rel=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_where_the_clip_does_not_bind_the_bound_is_the_path_certificates(seed):
    # floor 0 and no short sales: e + b y >= 0 never reaches the floor; a cap far above every endowment
    econ = _tiny_economy(0.5, seed, floor=0.0, cap=1e6, borrowing=0.0)
    rng = np.random.default_rng(200 + seed)
    worlds = np.array([0, 1, 1])
    prices = rng.dirichlet(np.ones(3), 3) * 3
    q = np.array([0.3, 0.2, 0.0])
    x = np.zeros((3, 2, 3)) + 0.01
    ours = cl.clip_bounds(econ, worlds, prices, q, x, np.zeros((3, 2)))
    plain = MarkovExchangeEconomy(econ.utility, econ.endowments, econ.transitions, 0.9, initial=econ.initial,
                                  asset_returns=econ.asset_bundles, borrowing_limit=0.0, holding_limit=1.0,
                                  asset_price_max=1.0, price_sum=3.0, degree=0.5, horizon=3)
    theirs = path_bounds(plain, worlds, prices, q[:, None], x)
    np.testing.assert_allclose(ours.upper, theirs.upper, rtol=1e-7)
    np.testing.assert_allclose(ours.lower, theirs.lower, rtol=1e-7)


@pytest.mark.parametrize("degree", [1, 0.5])
def test_markov_horizon_takes_floors_and_caps_and_certifies_what_it_returns(degree):
    econ = _tiny_economy(degree, 0)
    r = econ.solve(method="markov-horizon", rounds=2)
    m = r.stats["metrics"]
    assert r.guarantee == cl.CLIP_GUARANTEE
    assert 0 <= m["exploitability_lower"] <= m["exploitability"] + 1e-12
    assert r.objective == pytest.approx(m["exploitability"])
    assert r.solution["portfolio"].shape == (3, 2, 1)
    # the status follows the certified value in the money frame
    assert (r.termination == Termination.OPTIMAL) == (m["horizon_relative_exploitability"] <= 1e-9)
    # the certificate recomputed on the returned profile says the same
    again, _, _ = cl.clip_metrics(econ, np.array([0, 1, 1]), r.solution["prices"], r.solution["asset_prices"][:, 0],
                                  r.solution["consumption"], r.solution["portfolio"][:, :, 0])
    assert again["exploitability"] == pytest.approx(m["exploitability"], rel=1e-9)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_branch_and_bound_splits_where_the_envelope_is_loose_and_stays_above_brute_force(seed):
    # endowments at the floor: short sales are free, the cash is flat then rising then flat
    rng = np.random.default_rng(seed)
    T, M = 3, 3
    p = rng.uniform(0.5, 2, (T, M))
    p = 3 * p / p.sum(axis=1, keepdims=True)
    path = cl.ClipPath(0.9 ** np.arange(T) * rng.uniform(0.5, 1.5, T), 0.1, 1.0, p, np.full((T, M), 0.01),
                       rng.uniform(0.5, 1.1, (T, M)), np.full(M, 0.01), np.full(M, 0.1), np.full(T, 0.2), -1.0, 1.0)
    y, lower, upper, nodes = cl.best_clipped_path(path)
    grid = np.linspace(-1, 1, 121)
    Y = np.array(np.meshgrid(grid, grid, grid, indexing="ij")).reshape(3, -1)
    W = np.stack([path.c0 - path.q[0] * Y[0]] + [path.cash(t, Y[t - 1]) - path.q[t] * Y[t] for t in (1, 2)])
    brute = ((path.a[:, None] * np.maximum(W, 0.0) ** path.h).sum(axis=0)[np.all(W >= 0, axis=0)]).max()
    assert nodes > 1
    assert upper >= brute and path.value(y) == pytest.approx(lower, rel=1e-12)
    assert upper - lower <= 1e-7 * upper
    # the root relaxation alone is looser than the branch and bound's bound
    root = cl.relax(path, np.full(T, -1.0), np.full(T, 1.0))
    assert root[3] >= upper - 1e-12


@pytest.mark.parametrize("degree", [1, 0.5])
def test_a_failed_interior_lp_keeps_the_node_and_the_bound_stays_above_brute_force(degree, monkeypatch):
    """HiGHS failing on a node's interior LP (always feasible) proves nothing: the node is kept with
    plain multipliers, so the bound still covers every path (it was dropped as infeasible before)."""
    import solvopt.games.economy_deviation as dev
    econ = _tiny_economy(degree, 1)
    worlds = np.array([0, 1, 1])
    prices = np.random.default_rng(7).dirichlet(np.ones(3), 3) * 3
    q = np.array([0.05, 0.2, 0.0])
    real = dev.highs_lp
    monkeypatch.setattr(dev, "highs_lp", lambda cost, A, b, lb, ub: None if ub[-1] == 1.0 else real(cost, A, b, lb, ub))
    bnd = cl.clip_bounds(econ, worlds, prices, q, np.zeros((3, 2, 3)) + 0.01, np.zeros((3, 2)))
    for i in range(2):
        brute = _brute(econ, worlds, prices, q, i)
        assert bnd.upper[i] >= brute - 1e-12 * max(1.0, brute)
        assert bnd.lower[i] <= bnd.upper[i]


def test_the_candidate_schedule_adapts_to_the_leader_and_ends():
    # driven by a made-up exploitability that is least at level 0.071 with consumer 3 short: the grid first
    # (plain and balanced at each level), then passes that find the consumer and the level, and an end
    def exploitability(level, short):
        return (level - 0.071) ** 2 + (0.0 if short == 3 else 1e-3 if short is not None else 2e-3)

    leader = [None, np.inf]
    tried = []
    for level, rule in cl.candidate_schedule(5, lambda: leader[0]):
        short = 0 if rule == cl.AUTO else rule          # the balanced variant's own choice: consumer 0
        tried.append((level, short))
        value = exploitability(level, short)
        if value < leader[1]:
            leader[:] = [(level, short), value]
    grid = [(lv, s) for lv in cl.ASSET_PRICE_LEVELS for s in (None, 0)]
    assert tried[:len(grid)] == grid
    assert tried[len(grid):len(grid) + 4] == [(0.06, 1), (0.06, 2), (0.06, 3), (0.06, 4)]
    (level, short), _ = leader
    assert short == 3 and abs(level - 0.071) <= cl.LEVEL_RESOLUTION
    assert len(tried) < len(grid) + cl.SEARCH_PASSES * 40
    # with nothing certified there is nothing to adapt to
    assert len(list(cl.candidate_schedule(3, lambda: None))) == 2 * len(cl.ASSET_PRICE_LEVELS)


@pytest.mark.parametrize("seed", range(4))
def test_the_dual_bounds_gradient_is_its_derivative_where_it_is_smooth(seed):
    # degree h < 1: L-BFGS lowers L with this gradient; central differences agree away from the box kinks
    econ = _tiny_economy(0.5, seed)
    rng = np.random.default_rng(300 + seed)
    worlds = np.array([0, 1, 1])
    prices = rng.dirichlet(np.ones(3), 3) * 3
    q = np.array([0.05, 0.2, 0.0])
    path = cl.ClipPath(econ.discount ** np.arange(3) * bang_per_buck(econ, prices)[:, 0] ** econ.degree,
                       econ.degree, float(prices[0] @ econ.endowments[0, 0]), prices, econ.endowments[worlds][:, 0],
                       econ.asset_bundles[worlds, 0], econ.endowment_floor, econ.endowment_cap, q, -1.0, 1.0)
    l, u = np.full(3, -1.0), np.full(3, 1.0)
    rows = path.rows(l, u)
    for _ in range(5):
        lam = rng.uniform(0.1, 2.0, len(rows[1]))
        value, g = cl.dual_bound(path, rows, l, u, lam, gradient=True)
        assert value == cl.dual_bound(path, rows, l, u, lam)
        step = 1e-7 * np.eye(len(lam))
        fd = np.array([(cl.dual_bound(path, rows, l, u, lam + e) - cl.dual_bound(path, rows, l, u, lam - e)) / 2e-7
                       for e in step])
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6 * max(1.0, np.abs(g).max()))
