"""Endowment floors and caps on a stochastic chain: the dynamic program over the history lattice
(solvopt.games.economy_clip_tree; exact at degree 1, a grid bound below) against brute force over
holdings per history node under the true clipped dynamics, its deviation against its bound, and its
agreement with the deterministic path certificate (solvopt.games.economy_clip) on a deterministic chain."""
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvopt.dsl import MarkovExchangeEconomy
from solvopt.games import economy as ec
from solvopt.games import economy_clip as cl
from solvopt.games import economy_clip_tree as ct
from solvopt.games.economy_lattice import Lattice, grow


def _economy(seed, worlds=2, goods=3, T=3, floor=0.01, cap=0.1, borrowing=1.0, degree=None, stochastic=True):
    """2 consumers, a bundle asset, endowments after the start near the floor (short sales are cheap)."""
    rng = np.random.default_rng(seed)
    W = worlds + 1                                       # world state 0: the start, never re-entered
    E = np.concatenate([rng.uniform(0.02, 0.1, (1, 2, goods)), rng.uniform(0.0, 0.05, (worlds, 2, goods)) + floor])
    P = np.zeros((W, W))
    if stochastic:
        P[:, 1:] = rng.dirichlet(np.ones(worlds), W)
    else:
        P[:, 1] = 1.0
    exps = rng.dirichlet(np.ones(goods), 2)
    return MarkovExchangeEconomy(("cobb_douglas", exps), E, P, 0.9, initial=np.eye(W)[0],
                                 asset_returns=rng.uniform(0.3, 1.1, (W, 1, goods)), borrowing_limit=borrowing,
                                 holding_limit=1.0, asset_price_max=1.0, price_sum=float(goods), degree=degree,
                                 endowment_floor=floor, endowment_cap=cap, horizon=T)


def _random_profile(econ, seed, q_top=0.5):
    """A lattice and a random profile on it: holdings per (period, world state), so a class is (period,
    world state, the parent's world state); prices, asset prices and consumption random per class."""
    rng = np.random.default_rng(seed)
    T, N, M = econ.horizon, econ.n_consumers, econ.n_goods
    Y = rng.uniform(-0.4, 0.4, (T, econ.n_world, N))
    Y[T - 1] = 0.0
    cache: dict = {}

    def solve_class(t, w, carried):
        key = (t, w, carried.tobytes())
        if key not in cache:
            cache[key] = (rng.dirichlet(np.ones(M)) * econ.price_sum, rng.uniform(0, q_top) if rng.random() > 0.2
                          else 0.0, Y[t, w], rng.uniform(0, 0.02, (N, M)))
        return cache[key]
    return grow(econ, solve_class)


def _tree_brute(econ, lat, prof, i, n=201, grid=None):
    """Consumer i's best value over every history-dependent policy whose holdings lie on an n-point grid
    of the box (or on ``grid``), by enumeration over the history tree (the lattice unfolded): at each
    history node, for each grid holding carried in, the best grid holding bought (wealth >= 0)."""
    lo, hi = -float(econ.borrowing_limit[0]), float(econ.holding_limit[0])
    grid = np.linspace(lo, hi, n) if grid is None else grid
    n, h = len(grid), econ.degree
    beta = ec.bang_per_buck(econ, prof.prices)[:, i]
    kids: dict = {}
    for a, b, w in zip(lat.parent, lat.child, lat.weight):
        kids.setdefault(int(a), []).append((int(b), float(w)))
    bund = econ.asset_bundles[lat.world, 0]

    def node(k):                                         # (n,) value from class k for each carried holding
        t, e = lat.period[k], econ.endowments[lat.world[k], i]
        p, q = prof.prices[k], float(prof.asset_prices[k, 0])
        cash = (np.full(n, p @ e) if t == 0
                else cl.clipped(e, bund[k], econ.endowment_floor, econ.endowment_cap, grid) @ p)
        cont = sum(w * node(j) for j, w in kids.get(k, [])) if k in kids else np.zeros(n)
        W = cash[:, None] - q * grid[None, :]            # carried x bought
        total = np.where(W >= -1e-15, econ.discount ** t * beta[k] ** h * np.maximum(W, 0) ** h + cont[None, :],
                         -np.inf)
        return total.max(axis=1)
    starts = np.flatnonzero(lat.period == 0)
    return float(sum(lat.prob[k] * node(k)[np.argmin(np.abs(grid))] for k in starts))


@pytest.mark.parametrize("seed, worlds, goods", list(itertools.product(range(4), (2, 3), (2, 3))))
def test_the_dynamic_program_is_above_every_grid_policy_and_its_policy_attains_it(seed, worlds, goods):
    econ = _economy(seed, worlds, goods)
    lat, prof = _random_profile(econ, 50 + seed)
    b = ct.tree_bounds(econ, lat, prof)
    for i in range(2):
        brute = _tree_brute(econ, lat, prof, i)
        assert b.upper[i] >= brute - 1e-12 * max(1.0, brute)
        # a fine grid gets close: the value is Lipschitz in the holdings
        assert b.upper[i] - brute <= 2e-2 * b.upper[i]
        # the greedy deviation, evaluated forward under the true clipped dynamics, attains the bound
        assert b.lower[i] == pytest.approx(b.upper[i], rel=1e-11)
        assert b.slack[i] <= 1e-12 * b.upper[i]
    assert not b.rounded


def test_a_literal_enumeration_of_holdings_per_history_node():
    """2 worlds, 3 periods: 7 history nodes; every combination of 7 grid holdings is tried."""
    econ = _economy(3, 2, 2)
    lat, prof = _random_profile(econ, 9)
    assert len(lat.period) == 7                          # here the lattice is the tree of histories
    n = 7
    lo, hi = -1.0, 1.0
    grid = np.linspace(lo, hi, n)
    beta = ec.bang_per_buck(econ, prof.prices)
    bund = econ.asset_bundles[lat.world, 0]
    parent = np.full(7, -1)
    parent[lat.child] = lat.parent
    weight = np.ones(7)
    weight[lat.child] = lat.weight
    reach = np.ones(7)
    for k in np.argsort(lat.period):
        if parent[k] >= 0:
            reach[k] = reach[parent[k]] * weight[k]
    b = ct.tree_bounds(econ, lat, prof)
    for i in range(2):
        Y = np.array(list(itertools.product(grid, repeat=7)))            # (n^7, nodes)
        val = np.zeros(len(Y))
        ok = np.ones(len(Y), bool)
        for k in range(7):
            e, p, q = econ.endowments[lat.world[k], i], prof.prices[k], float(prof.asset_prices[k, 0])
            cash = (np.full(len(Y), p @ e) if lat.period[k] == 0 else
                    cl.clipped(e, bund[k], econ.endowment_floor, econ.endowment_cap, Y[:, parent[k]]) @ p)
            W = cash - q * Y[:, k]
            ok &= W >= -1e-15
            val += reach[k] * 0.9 ** lat.period[k] * beta[k, i] * np.maximum(W, 0)
        brute = val[ok].max()
        assert b.upper[i] >= brute - 1e-12
        assert brute == pytest.approx(_tree_brute(econ, lat, prof, i, n), rel=1e-12)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10 ** 6), st.sampled_from([2, 3]), st.floats(0.0, 0.05), st.floats(0.06, 0.3),
       st.sampled_from([0.0, 0.5, 1.0]), st.sampled_from([1.0, 0.5, 0.1]))
def test_property_bound_above_grid_policies_and_attained(seed, worlds, floor, cap, borrowing, degree):
    econ = _economy(seed, worlds, 3, floor=floor, cap=cap, borrowing=borrowing,
                    degree=None if degree == 1 else degree)
    lat, prof = _random_profile(econ, seed + 1, q_top=1.0)
    b = ct.tree_bounds(econ, lat, prof)
    for i in range(2):
        brute = _tree_brute(econ, lat, prof, i, n=101)
        assert b.upper[i] >= brute - 1e-12 * max(1.0, brute)
        if degree == 1:
            assert b.lower[i] == pytest.approx(b.upper[i], rel=1e-10)
        else:
            assert b.lower[i] == pytest.approx(
                max(_tree_brute(econ, lat, prof, i, grid=ct.holding_grid(econ, lat)), b.value[i]), rel=1e-12)


@pytest.mark.parametrize("seed, degree", list(itertools.product(range(4), (None, 0.5))))
def test_on_a_deterministic_chain_it_agrees_with_the_path_certificate(seed, degree):
    econ = _economy(seed, 1, 3, T=4, stochastic=False, degree=degree)
    rng = np.random.default_rng(100 + seed)
    T, N, M = 4, 2, 3
    worlds = np.array([0, 1, 1, 1])
    prices = rng.dirichlet(np.ones(M), T) * 3
    q = rng.uniform(0, 0.5, T)
    Y = rng.uniform(-0.3, 0.3, (T, N))
    cons = rng.uniform(0, 0.02, (T, N, M))
    path = cl.clip_bounds(econ, worlds, prices, q, cons, Y)
    lat = Lattice(np.arange(T), worlds, np.ones(T), np.vstack([np.zeros(N), Y[:-1]]), np.arange(T - 1),
                  np.arange(1, T), np.ones(T - 1))
    tree = ct.tree_bounds(econ, lat, ec.Profile(prices, q[:, None], cons, Y[:, :, None]))
    if degree is not None:          # the grid bound brackets the path's branch-and-bound optimum
        assert np.all(tree.upper >= path.lower * (1 - 1e-12)) and np.all(tree.lower <= path.upper * (1 + 1e-12))
        assert np.all(tree.upper - tree.lower <= 1e-3 * tree.upper)
        return
    np.testing.assert_allclose(tree.upper, path.upper, rtol=1e-9)
    np.testing.assert_allclose(tree.lower, path.lower, rtol=1e-9)
    np.testing.assert_allclose(tree.regret, path.regret, rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize("seed, degree", list(itertools.product(range(4), (0.5, 0.1))))
def test_at_degree_below_one_the_grid_bound_is_above_brute_force_and_its_policy_attains_its_value(seed, degree):
    econ = _economy(seed, 2 + seed % 2, 3, degree=degree)
    lat, prof = _random_profile(econ, 50 + seed)
    b = ct.tree_bounds(econ, lat, prof)
    grid = ct.holding_grid(econ, lat)
    for i in range(2):
        fine = _tree_brute(econ, lat, prof, i, n=1001)
        assert b.upper[i] >= fine - 1e-12 * fine
        # the lower bound is the best policy with holdings on the bound's own grid, exactly
        assert b.lower[i] == pytest.approx(max(_tree_brute(econ, lat, prof, i, grid=grid), b.value[i]), rel=1e-12)
        assert b.upper[i] - b.lower[i] <= 1e-3 * b.upper[i]


def _lattice_of(result):
    s = result.solution
    edges = np.array(s["edges"], dtype=int).reshape(-1, 2)
    period, world = np.array(s["periods"]), np.array(s["worlds"])
    carried = np.zeros((len(period), 2))
    carried[edges[:, 1]] = s["portfolio"][edges[:, 0], :, 0]
    return Lattice(period, world, np.array(s["probabilities"]), carried, edges[:, 0], edges[:, 1],
                   np.ones(len(edges)))


@pytest.mark.parametrize("degree", [None, 0.5])
def test_markov_horizon_takes_floors_on_a_stochastic_chain_and_certifies_what_it_returns(degree):
    econ = _economy(1, 2, 3, degree=degree)
    r = econ.solve(method="markov-horizon", rounds=2)
    m = r.stats["metrics"]
    assert r.guarantee == ct.TREE_GUARANTEE
    assert 0 <= m["exploitability_lower"] <= m["exploitability"] + 1e-12
    assert m["exploitability"] - m["exploitability_lower"] <= (1e-9 if degree is None else 1e-2) * max(
        1.0, m["exploitability"])
    assert r.objective == pytest.approx(m["exploitability"])
    assert m["budget_violation"] <= 1e-9
    # the certificate recomputed on the returned profile says the same
    lat = _lattice_of(r)
    P = econ.transitions
    lat.weight = P[lat.world[lat.parent], lat.world[lat.child]]
    s = r.solution
    prof = ec.Profile(s["prices"], s["asset_prices"], s["consumption"], s["portfolio"])
    again, _, _ = ct.tree_certificate(econ, lat, prof)
    assert again["exploitability"] == pytest.approx(m["exploitability"], rel=1e-9)


def test_a_stop_returns_the_best_certified_profile_so_far():
    from solvopt.core.result import Termination
    econ = _economy(2, 3, 3, T=4)
    r = econ.solve(method="markov-horizon", time_limit=0.01)
    assert r.termination in (Termination.TIME_LIMIT, Termination.FEASIBLE_WITHIN_GAP, Termination.OPTIMAL)
    if r.solution:
        assert r.objective >= 0 and r.guarantee == ct.TREE_GUARANTEE


@pytest.mark.parametrize("seed", range(3))
def test_a_rounded_greedy_deviation_is_feasible_and_below_the_bound(seed, monkeypatch):
    """Rounding the greedy deviation's purchases down to a grid of 9 holdings keeps it feasible: its
    value is then at most the best policy on that grid (brute force) and at most the bound."""
    monkeypatch.setattr(ct, "MAX_HELD", 0)
    monkeypatch.setattr(ct, "HELD_GRID", 8)
    econ = _economy(seed, 3, 3)
    lat, prof = _random_profile(econ, 70 + seed)
    b = ct.tree_bounds(econ, lat, prof)
    assert b.rounded
    for i in range(2):
        assert b.value[i] <= b.lower[i] <= b.upper[i]
        assert b.lower[i] <= _tree_brute(econ, lat, prof, i, n=9) * (1 + 1e-12)


@pytest.mark.parametrize("degree", [None, 0.5])
def test_scaling_utilities_changes_nothing_and_the_money_unit_scales_the_objective(degree):
    def economy(values=1.0, money=1.0):
        rng = np.random.default_rng(4)
        E = np.concatenate([rng.uniform(0.02, 0.1, (1, 2, 3)), np.full((2, 2, 3), 0.01)])
        if degree is None:          # Leontief requirements over ``values``: utilities times it
            kind = ("leontief", rng.uniform(0.5, 1.5, (2, 3)) / values)
        else:                       # Cobb-Douglas of degree h (no utility factor to set: money only)
            kind = ("cobb_douglas", rng.dirichlet(np.ones(3), 2) * degree)
        return MarkovExchangeEconomy(kind, E, [[0, 0.5, 0.5], [0, 0.7, 0.3], [0, 0.4, 0.6]], 0.9,
                                     initial=[1, 0, 0], asset_returns=rng.uniform(0.5, 1.1, (3, 1, 3)),
                                     holding_limit=1.0, borrowing_limit=1.0, asset_price_max=money,
                                     price_sum=3.0 * money, degree=degree, endowment_floor=0.01, endowment_cap=0.1,
                                     horizon=3)
    base = economy().solve(rounds=1)
    for values, money in ((1e6, 1.0), (1.0, 1e-6), (1.0, 1e6))[0 if degree is None else 1:]:
        r = economy(values, money).solve(rounds=1)
        assert r.termination == base.termination
        assert r.objective == pytest.approx(base.objective * money, rel=1e-6)


def test_long_values_use_each_consumers_own_endowment():
    """What a long position pays each consumer, over classes: her own clipped endowment with and without
    the payout, at the class's prices, discounted and in money at period 0's bang per buck."""
    econ = _economy(5, 2, 3)
    lat, prof = _random_profile(econ, 11)
    Y = np.array([[0.3, 0.05], [0.2, 0.4], [0.0, 0.0]])
    got = cl.class_long_values(econ, lat.period, lat.world, lat.prob, prof.prices, Y)
    beta = ec.bang_per_buck(econ, prof.prices)
    want = np.zeros(2)
    for k in np.flatnonzero(lat.period >= 1):
        for i in range(2):
            e, b = econ.endowments[lat.world[k], i], econ.asset_bundles[lat.world[k], 0]
            gain = (np.clip(e + Y[lat.period[k] - 1, i] * b, 0.01, 0.1) - np.clip(e, 0.01, 0.1)) @ prof.prices[k]
            want[i] += lat.prob[k] * 0.9 ** lat.period[k] * beta[k, i] / beta[0, i] * gain
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert np.all(ct.saturation(econ)[:-1] <= 1.0) and ct.saturation(econ)[-1] == 1.0
