"""Linear Arrow-Debreu (exchange) markets: hand-computed equilibria, every equilibrium condition checked from
scratch, brute force over spending supports (one LP each, scipy's HiGHS) as an independent reference, non-existence."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvopt.core.errors import ModelError
from solvopt.core.result import Termination
from solvopt.dsl.games import ArrowDebreuMarket, FisherMarket
from solvopt.dsl.utilities import CES, CobbDouglas, Linear
from solvopt.games.exchange import no_equilibrium_reason, strongly_connected


def assert_equilibrium(v, e, x, p, tol=1e-9):
    """Every condition of a linear exchange equilibrium, from scratch (prices normalised to p . s = 1)."""
    s = e.sum(axis=0)
    assert np.all(p > 0) and abs(p @ s - 1) <= tol
    assert np.all(x >= -tol)
    np.testing.assert_allclose(x.sum(axis=0), s, rtol=0, atol=tol * max(1.0, s.max()))     # markets clear
    np.testing.assert_allclose(x @ p, e @ p, rtol=0, atol=tol)                               # incomes are spent
    bang = v / p
    below = bang < bang.max(axis=1, keepdims=True) * (1 - 1e-8)
    assert np.all((x * p)[below] <= tol)                                                     # only on MBB goods


def brute_force(v, e):
    """Equilibrium price ranges over all spending supports (one LP per support): (lo, hi) per good, or None.

    For each set S of liked agent-good edges (every agent at least one): prices p >= t, p . s = 1,
    spending f >= 0 on S with each agent spending its income and each good earning p_j s_j, and
    v_ik p_j <= v_ij p_k for (i, j) in S (j is a best bang per buck). Feasible with t > 0: an
    equilibrium; then the least and largest p_j over that polytope.
    """
    from scipy.optimize import linprog
    n, m = v.shape
    s = e.sum(axis=0)
    edges = [(i, j) for i in range(n) for j in range(m) if v[i, j] > 0]
    lo, hi = np.full(m, np.inf), np.full(m, -np.inf)
    for mask in itertools.product((False, True), repeat=len(edges)):
        S = [ed for ed, on in zip(edges, mask) if on]
        if {i for i, _ in S} != set(range(n)):
            continue
        k = len(S)
        nv = m + k + 1                                  # p, f, t
        A_eq, b_eq = [], []
        for i in range(n):
            row = np.zeros(nv)
            row[:m] = -e[i]
            row[[m + a for a, (ii, _) in enumerate(S) if ii == i]] = 1
            A_eq.append(row), b_eq.append(0.0)
        for j in range(m):
            row = np.zeros(nv)
            row[j] = -s[j]
            row[[m + a for a, (_, jj) in enumerate(S) if jj == j]] = 1
            A_eq.append(row), b_eq.append(0.0)
        row = np.zeros(nv)
        row[:m] = s
        A_eq.append(row), b_eq.append(1.0)
        A_ub, b_ub = [], []
        for i, j in S:
            for kk in range(m):
                row = np.zeros(nv)
                row[j] += v[i, kk]
                row[kk] -= v[i, j]
                A_ub.append(row), b_ub.append(0.0)
        for j in range(m):
            row = np.zeros(nv)
            row[-1], row[j] = 1.0, -1.0
            A_ub.append(row), b_ub.append(0.0)
        bounds = [(0, None)] * (m + k) + [(None, 1)]
        c = np.zeros(nv)
        c[-1] = -1
        res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds, method="highs")
        if res.status != 0 or -res.fun <= 1e-9:
            continue
        bounds[-1] = (1e-9, 1)
        for j in range(m):
            c = np.zeros(nv)
            for sign in (1, -1):
                c[j] = sign
                r = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds, method="highs")
                if r.status == 0:
                    lo[j], hi[j] = min(lo[j], r.x[j]), max(hi[j], r.x[j])
    return None if np.isinf(lo).any() else (lo, hi)


def solve(v, e, **kwargs):
    r = ArrowDebreuMarket(Linear(v), e).solve(**kwargs)
    return r, r.solution.get("allocation"), r.solution.get("prices")


# --- hand-computed equilibria -------------------------------------------------------------------
def test_two_by_two_with_a_split_budget():
    # agent 2 likes only good 1 and spends its income p2 there; agent 1 must buy all of good 2 and
    # the rest of good 1, so both are best for it: 2 / p1 = 1 / p2; with p1 + p2 = 1: p = (2/3, 1/3)
    r, x, p = solve([[2, 1], [1, 0]], np.eye(2))
    assert r.method == "linear-exchange" and r.termination is Termination.OPTIMAL
    np.testing.assert_allclose(p, [2 / 3, 1 / 3], atol=1e-12)
    np.testing.assert_allclose(x, [[0.5, 1.0], [0.5, 0.0]], atol=1e-12)
    assert r.objective <= 1e-12 and r.stats["relative_exploitability"] == r.objective
    assert r.stats["equilibrium_exists"].startswith("guaranteed")


def test_swap_with_unequal_endowments():
    # agent 1 (two units of good 1) buys only good 2, agent 2 only good 1: 2 p1 = p2, 2 p1 + p2 = 1
    r, x, p = solve([[1, 3], [1, 1]], [[2, 0], [0, 1]])
    np.testing.assert_allclose(p, [0.25, 0.5], atol=1e-12)
    np.testing.assert_allclose(x, [[0, 1], [2, 0]], atol=1e-12)


# --- random markets against the brute force over supports ----------------------------------------
@pytest.mark.parametrize("seed", range(4))
def test_random_markets_match_the_brute_force(seed):
    rng = np.random.default_rng(seed)
    n, m = (2, 3) if seed % 2 else (3, 2)
    v = rng.uniform(0.1, 1.0, (n, m))
    e = rng.uniform(0.1, 1.0, (n, m))
    r, x, p = solve(v, e, tolerance=1e-11)
    assert r.termination is Termination.OPTIMAL
    assert_equilibrium(v, e, x, p)
    lo, hi = brute_force(v, e)
    assert np.all(lo - 1e-7 <= p) and np.all(p <= hi + 1e-7)      # among the brute force's equilibria
    if np.all(hi - lo <= 1e-9):                                   # unique: the same prices
        np.testing.assert_allclose(p, lo, atol=1e-7)


def test_larger_random_markets_satisfy_every_condition():
    for n, m, seed in ((30, 20, 1), (25, 40, 2)):
        rng = np.random.default_rng(seed)
        v = rng.uniform(0.0, 1.0, (n, m)) * (rng.random((n, m)) < 0.5) + 1e-3
        e = rng.uniform(0.0, 1.0, (n, m)) * (rng.random((n, m)) < 0.3)
        e[np.arange(n), rng.integers(0, m, n)] += 0.5
        e[rng.integers(0, n, m), np.arange(m)] += 0.5
        r, x, p = solve(v, e)
        assert r.termination is Termination.OPTIMAL, r.stats["history"][-3:]
        assert_equilibrium(v, e, x, p)


def _matrix(n, m, low):
    return st.lists(st.lists(st.sampled_from([0.0, low, 0.5, 1.0, 2.0]), min_size=m, max_size=m),
                    min_size=n, max_size=n)


@st.composite
def small_markets(draw):
    n, m = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    v = np.asarray(draw(_matrix(n, m, 0.25)))
    e = np.asarray(draw(_matrix(n, m, 0.125)))
    return v, e


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_markets())
def test_small_markets_agree_with_the_brute_force_on_existence(market):
    v, e = market
    try:
        model = ArrowDebreuMarket(Linear(v), e)
    except ModelError:
        return                                                    # a good or consumer without endowment, no liked good
    if no_equilibrium_reason(v, e) is not None:
        if np.any(v > 0, axis=0).all():
            assert brute_force(v, e) is None                      # the obstruction is a proof: nothing is feasible
        with pytest.raises(ModelError):
            model.solve(iteration_limit=300)
        return
    r = model.solve(iteration_limit=3000)
    reference = brute_force(v, e)
    if reference is None:
        assert r.termination is not Termination.OPTIMAL and not strongly_connected(v, e)
    else:
        assert r.termination is Termination.OPTIMAL
        assert_equilibrium(v, e, r.solution["allocation"], r.solution["prices"])
        lo, hi = reference
        assert np.all(lo - 1e-7 <= r.solution["prices"]) and np.all(r.solution["prices"] <= hi + 1e-7)


def test_cobb_douglas_exchange_still_matches_the_eigenvector():
    rng = np.random.default_rng(8)
    a = rng.dirichlet(np.ones(3), 4)
    e = rng.uniform(0.5, 1.5, (4, 3))
    market = ArrowDebreuMarket(CobbDouglas(a), e)
    assert market.default_method == "tatonnement"
    r = market.solve(tolerance=1e-11)
    s = e.sum(axis=0)
    vals, vecs = np.linalg.eig((a.T @ e) / s[:, None])          # p_j s_j = sum_i a_ij p . e_i
    ref = np.real(vecs[:, np.argmin(np.abs(vals - 1))])
    np.testing.assert_allclose(r.solution["prices"], ref / (ref @ s), rtol=1e-8)


def test_iteration_limit_returns_the_best_certified_point(monkeypatch):
    import solvopt.games.polish as polish
    monkeypatch.setattr(polish, "exchange_equilibrium", lambda *a, **k: None)   # proportional response alone
    rng = np.random.default_rng(3)
    v, e = rng.uniform(0.1, 1, (6, 5)), rng.uniform(0.1, 1, (6, 5))
    r = ArrowDebreuMarket(Linear(v), e).solve(iteration_limit=40, check_every=5)
    assert r.termination is Termination.ITERATION_LIMIT and r.ok
    assert r.objective == min(h[2] for h in r.stats["history"]) and r.objective > 1e-9


# --- no equilibrium, bad inputs ------------------------------------------------------------------
def test_no_equilibrium_is_one_clear_error():
    # consumer 0 likes only good 0, which only it owns, yet it also owns good 1: its income p0 + p1
    # cannot be spent on good 0 (worth p0) unless p1 = 0, and consumer 1 wants good 1
    v, e = [[1, 0], [1, 1]], [[1, 1], [0, 1]]
    assert brute_force(np.asarray(v, float), np.asarray(e, float)) is None
    with pytest.raises(ModelError, match="no equilibrium: consumers {0}.*owns good 1"):
        ArrowDebreuMarket(Linear(v), e).solve()
    with pytest.raises(ModelError, match="good 1 is liked by no consumer"):
        ArrowDebreuMarket(Linear([[1, 0], [1, 0]]), np.eye(2)).solve()


def test_not_strongly_connected_but_an_equilibrium_exists():
    # consumer 1 keeps its good 1; consumer 0 trades nothing: an equilibrium (p1 >= p0), not guaranteed a priori
    v, e = np.array([[1.0, 1.0], [0.0, 1.0]]), np.eye(2)
    assert not strongly_connected(v, e) and no_equilibrium_reason(v, e) is None
    r, x, p = solve(v, e)
    assert r.termination is Termination.OPTIMAL and r.stats["equilibrium_exists"].startswith("not guaranteed")
    assert_equilibrium(v, e, x, p)


def test_bad_inputs():
    with pytest.raises(ModelError, match="finite"):
        ArrowDebreuMarket(Linear(np.ones((2, 2))), [[1, np.nan], [0, 1]])
    with pytest.raises(ModelError, match=">= 0"):
        ArrowDebreuMarket(Linear(np.ones((2, 2))), [[1, -1], [0, 1]])
    with pytest.raises(ModelError, match="NaN"):
        ArrowDebreuMarket(Linear([[1, np.nan], [1, 1]]), np.eye(2))
    with pytest.raises(ModelError, match="Arrow-Debreu"):
        FisherMarket(Linear(np.ones((2, 2))), [1, 1]).solve(method="linear-exchange")
    with pytest.raises(ModelError, match="linear"):
        ArrowDebreuMarket(CES(np.ones((2, 2)), 0.5), np.eye(2)).solve(method="linear-exchange")


def test_group_max_matches_a_direct_reduction():
    from solvopt.games.polish import _group_max
    rng = np.random.default_rng(0)
    for _ in range(10):
        n, m, k = rng.integers(1, 9, 3)
        M, rows, cols = rng.random((n, m)), rng.integers(0, k, n), rng.integers(0, k, m)
        ref = np.zeros((k, k))
        np.maximum.at(ref, (rows[:, None], cols[None, :]), M)
        np.testing.assert_array_equal(_group_max(M, rows, cols, k), ref)


def test_forest_flows_kernel_matches_the_sparse_solve():
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components, minimum_spanning_tree

    from solvopt.games.polish import forest_flows, forest_flows_reference
    rng = np.random.default_rng(1)
    for _ in range(20):
        n, m = rng.integers(1, 30, 2)
        w = sp.coo_matrix(rng.random((n, m)) * (rng.random((n, m)) < 0.3))
        tree = minimum_spanning_tree(sp.coo_matrix((w.data, (w.row, n + w.col)), shape=(n + m, n + m)).tocsr()).tocoo()
        buyer, good = np.minimum(tree.row, tree.col), np.maximum(tree.row, tree.col) - n
        label = connected_components(tree, directed=False)[1]
        demand = rng.random(n + m)
        for c in np.unique(label):                      # balance every component with buyers and goods
            b, g = label[:n] == c, label[n:] == c
            if b.any() and g.any():
                demand[n:][g] *= demand[:n][b].sum() / demand[n:][g].sum()
        np.testing.assert_allclose(forest_flows(buyer, good, n, demand, label),
                                   forest_flows_reference(buyer, good, n, demand, label), atol=1e-12)


def test_proportional_response_edge_list_matches_dense_arrays(monkeypatch):
    """The edge-list rounds of a sparse market equal the dense-array rounds (same algorithm, two layouts),
    and every yielded allocation spends exactly the incomes at its prices."""
    import solvopt.games.exchange as exchange
    rng = np.random.default_rng(7)
    n, m = 30, 8
    v = rng.uniform(0.1, 1.0, (n, m)) * (rng.random((n, m)) < 0.3)
    v[np.arange(n), rng.integers(0, m, n)] += 0.5
    e = rng.uniform(0.0, 1.0, (n, m)) * (rng.random((n, m)) < 0.4)
    e[np.arange(n), rng.integers(0, m, n)] += 0.5
    s = e.sum(axis=0)

    def rounds(dense_from):
        monkeypatch.setattr(exchange, "DENSE_FROM", dense_from)
        out = []
        for it, x, p in exchange.exchange_proportional_response(v, e, s):
            out.append((x(), p))
            if it == 25:
                return out

    for (xf, pf), (xd, pd) in zip(rounds(2.0), rounds(0.0)):
        np.testing.assert_allclose(pf, pd, rtol=1e-12)
        np.testing.assert_allclose(xf, xd, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(xf @ pf, e @ pf, rtol=1e-12)
        assert np.all(xf[v == 0] == 0)
