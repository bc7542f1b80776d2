"""The dense network simplex of method ``exact`` and the warm-started simplex of ``sparse-exact``,
checked against HiGHS (scipy linprog on the full transport LP) and POT's ``ot.emd``: optimal values,
dual feasibility of the potentials, warm starts from a smaller arc set, and statuses under scaling."""
import numpy as np
import pytest
from helpers import transport_lp
from hypothesis import given, settings
from hypothesis import strategies as st

from solvopt.core.result import Termination
from solvopt.dsl import Transport
from solvopt.transport.network_simplex import dense_simplex, remap_tree, warm_flow
from solvopt.transport.quick import north_west


@st.composite
def matrices(draw):
    """(integer costs (n, m) with many ties or not, supplies a (n,), demands b (m,) as units or reals)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    n, m = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    top = draw(st.sampled_from([1, 3, 1000, 10**9]))
    cost = rng.integers(0, top + 1, size=(n, m)).astype(np.int64)
    if draw(st.booleans()):               # integer units: the degenerate case of uniform masses
        a = rng.integers(1, 4, n).astype(float)
        b = rng.integers(1, 4, m).astype(float)
        while a.sum() != b.sum():
            (a if a.sum() < b.sum() else b)[rng.integers(len(a) if a.sum() < b.sum() else len(b))] += 1
    else:
        a, b = rng.random(n) + 0.01, rng.random(m) + 0.01
        b *= a.sum() / b.sum()
        b[-1] = a.sum() - b[:-1].sum()
    return cost, a, b, draw(st.integers(1, 8))


@settings(max_examples=150, deadline=None)
@given(matrices(), st.sampled_from([(0.0, 0.0), (0.7, 0.05), (10.0, 1.0)]), st.sampled_from([0.01, 1.0]),
       st.booleans())
def test_dense_simplex_equals_the_lp(case, switch, block, direct):
    """Block search over the matrix from the start (direct), or column generation to the end
    (floor 1), switched to the matrix at the second pricing pass (shrink 0, floor 0) or as by
    default; small and LEMON-sized blocks."""
    cost, a, b, k = case
    n, m = cost.shape
    rows, cols, flows, pi, left, rounds, matrix = dense_simplex(cost, np.concatenate([a, -b]), np.zeros(1, np.int8),
                                                                0, k, 0.1, *switch, block, n * m if direct else 0)
    assert left <= 1e-9 * max(a.max(), b.max()) and (rounds == 0) == direct and (matrix or not direct)
    assert not (matrix and switch[1] == 1.0 and not direct)
    plan = np.zeros((n, m))
    np.add.at(plan, (rows, cols), flows)
    np.testing.assert_allclose(plan.sum(axis=1), a, atol=1e-9 * a.sum())
    np.testing.assert_allclose(plan.sum(axis=0), b, atol=1e-9 * a.sum())
    value = float((plan * cost).sum())
    assert value == pytest.approx(transport_lp(cost.astype(float), a, b), rel=1e-9, abs=1e-9)
    reduced = cost + pi[:n, None] - pi[None, n:]
    assert reduced.min() >= 0                                   # dual feasible on every pair, exactly
    assert np.all(reduced[plan > 1e-12 * a.sum()] == 0)         # complementary slackness


def _bipartite(rng, a, b, density):
    """A random bipartite arc set (flat keys) that carries a feasible flow: the north-west corner
    plan's support in a random order is always in."""
    n, m = len(a), len(b)
    keep = rng.random((n, m)) < density
    order_a, order_b = rng.permutation(n), rng.permutation(m)
    i, j = north_west(order_a, a[order_a], order_b, b[order_b])[:2]
    keep[i, j] = True
    return np.flatnonzero(keep.ravel()).astype(np.int64)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 15), st.integers(1, 15), st.booleans())
def test_warm_start_after_arcs_join(seed, n, m, units):
    """Cold on a sub-graph, then warm from its optimal tree on a larger graph: the LP optimum of the
    larger graph (arcs off the graph priced out by a prohibitive cost in the LP)."""
    rng = np.random.default_rng(seed)
    cost = rng.random((n, m))
    a = rng.integers(1, 4, n).astype(float) if units else rng.random(n) + 0.1
    b = np.full(m, a.sum() / m)
    supplies = np.concatenate([a, -b]) / a.sum()
    small = _bipartite(rng, supplies[:n], -supplies[n:], 0.2)
    large = np.union1d(small, _bipartite(rng, supplies[:n], -supplies[n:], 0.6))
    r, c = np.divmod(small, m)
    _, tree = warm_flow(r, c + n, cost[r, c], supplies, path_arcs=1)
    r, c = np.divmod(large, m)
    warm, _ = warm_flow(r, c + n, cost[r, c], supplies, remap_tree(tree, small, large), path_arcs=1)
    cold, _ = warm_flow(r, c + n, cost[r, c], supplies, path_arcs=1)
    masked = np.full((n, m), 1e3)
    masked.ravel()[large] = cost.ravel()[large]
    reference = transport_lp(masked, supplies[:n], -supplies[n:])
    assert warm.cost == pytest.approx(reference, rel=1e-7, abs=1e-9)
    assert cold.cost == pytest.approx(reference, rel=1e-7, abs=1e-9)
    assert warm.cost - warm.abs_error <= reference + 1e-12


def test_a_start_that_is_no_tree_falls_back():
    rng = np.random.default_rng(3)
    n = m = 6
    cost = rng.random((n, m))
    keys = np.arange(n * m, dtype=np.int64)
    r, c = np.divmod(keys, m)
    supplies = np.concatenate([np.ones(n), -np.ones(m)])
    bogus = (np.zeros(n + m, np.int64), np.zeros(n + m, np.int64), np.ones(n + m, np.int64))   # a cycle
    sol, _ = warm_flow(r, c + n, cost[r, c], supplies, bogus, path_arcs=1)
    assert sol.cost == pytest.approx(transport_lp(cost, np.ones(n), np.ones(m)), rel=1e-9)


@pytest.mark.parametrize("kind", ["uniform", "random", "pixels"])
@pytest.mark.parametrize("p", [1, 2])
def test_exact_against_pot(kind, p):
    ot = pytest.importorskip("ot")
    rng = np.random.default_rng(7 + p)
    n, m = 120, 120 if kind != "random" else 90
    if kind == "pixels":                  # many equal distances
        x, y = rng.integers(0, 4, (n, 3)).astype(float), rng.integers(0, 4, (m, 3)).astype(float)
    else:
        x, y = rng.random((n, 2)), rng.random((m, 2))
    a, b = np.full(n, 1 / n), np.full(m, 1 / m)
    if kind == "random":
        a, b = rng.random(n) + 0.1, rng.random(m) + 0.1
        a, b = a / a.sum(), b / b.sum()
    cost = ot.dist(x, y, metric="euclidean") ** p
    reference = float((ot.emd(a, b, cost, numItermax=10**9) * cost).sum()) ** (1 / p)
    for method in ("exact", "sparse-exact"):
        r = Transport(x, y, a=a, b=b, p=p).solve(method)
        assert r.termination is Termination.OPTIMAL, method
        assert r.objective == pytest.approx(reference, rel=1e-7), method
        assert r.bound <= reference * (1 + 1e-9)
    assert Transport(x, y, a=a, b=b, p=p).solve("exact").stats["engine"] == "dense network simplex"


@pytest.mark.parametrize("factor", [1e-12, 1.0, 1e12])
@pytest.mark.parametrize("method", ["exact", "sparse-exact"])
def test_statuses_do_not_change_under_scaling(factor, method):
    rng = np.random.default_rng(11)
    x, y = rng.random((80, 2)), rng.random((70, 2))
    a, b = rng.random(80) + 0.1, rng.random(70) + 0.1
    b *= a.sum() / b.sum()
    base = Transport(x, y, a=a, b=b, p=2).solve(method)
    r = Transport(x * factor, y * factor, a=a, b=b, p=2).solve(method)
    assert base.termination is r.termination is Termination.OPTIMAL
    assert r.objective == pytest.approx(base.objective * factor, rel=1e-7)
    assert r.bound <= r.objective * (1 + 1e-12)


@st.composite
def tied_clouds(draw):
    """Two clouds on a small integer lattice (repeated points, many equal distances), of different
    shapes (the second shifted and stretched), with unit or real masses."""
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    n, m = draw(st.integers(2, 40)), draw(st.integers(2, 40))
    side = draw(st.sampled_from([2, 3, 5]))
    x = rng.integers(0, side, (n, 3)).astype(float)
    y = rng.integers(0, side, (m, 3)).astype(float) * draw(st.sampled_from([1.0, 2.0])) + draw(st.integers(0, 3))
    if draw(st.booleans()):
        a, b = np.full(n, 1.0 / n), np.full(m, 1.0 / m)
    else:
        a, b = rng.random(n) + 0.05, rng.random(m) + 0.05
        a, b = a / a.sum(), b / b.sum()
    return x, y, a, b, draw(st.sampled_from([1.0, 2.0]))


@settings(max_examples=60, deadline=None)
@given(tied_clouds())
def test_exact_on_tied_clouds_equals_the_lp(case):
    """Method exact on tie-heavy clouds (both the rounds and the block search over the matrix run)
    against HiGHS on the full LP."""
    from scipy.spatial.distance import cdist
    x, y, a, b, p = case
    r = Transport(x, y, a=a, b=b, p=p).solve("exact")
    assert r.termination is Termination.OPTIMAL
    reference = transport_lp(cdist(x, y) ** p, a, b) ** (1 / p)
    assert r.objective == pytest.approx(reference, rel=1e-7, abs=1e-12)
    assert r.bound <= reference * (1 + 1e-9) + 1e-12


def test_clouds_of_different_shapes_switch_to_the_matrix():
    """Far apart candidates (a lattice against a shifted, stretched one): the first pricing pass finds
    negative pairs at most nodes and the simplex goes on over the whole matrix; the optimum is ot.emd's."""
    ot = pytest.importorskip("ot")
    rng = np.random.default_rng(5)
    n, m = 520, 490                       # beyond DIRECT_PAIRS: the rounds run first
    x = rng.integers(0, 6, (n, 3)).astype(float)
    y = rng.integers(0, 6, (m, 3)).astype(float) * np.array([2.0, 1.0, 0.5]) + np.array([3.0, 0.0, 1.0])
    r = Transport(x, y, p=1).solve("exact")
    assert r.stats["matrix_search"] is True and r.stats["pricing_rounds"] >= 2
    assert r.termination is Termination.OPTIMAL
    cost = ot.dist(x, y, metric="euclidean")
    reference = float((ot.emd(np.full(n, 1 / n), np.full(m, 1 / m), cost, numItermax=10**9) * cost).sum())
    assert r.objective == pytest.approx(reference, rel=1e-9)


def test_matrix_search_honours_its_stop_flag_and_pivot_limit():
    from solvopt.transport.network_simplex import _artificial_tree, _matrix_loop, _tree_arrays
    rng = np.random.default_rng(2)
    n = 300                            # (more than STOP_CHECK pivots)
    cost = rng.integers(0, 10**6, (n, n)).astype(np.int64)
    supplies = np.concatenate([np.ones(n), -np.ones(n)])
    for stop, limit, why in ((1, 0, 1), (0, 7, 2), (0, 0, 0)):
        tree = _tree_arrays(2 * n)
        _artificial_tree(supplies, (cost.max() + 1) * (2 * n + 1), 1 << 60, *tree[:9])
        flag = np.full(1, stop, np.int8)
        assert _matrix_loop(cost, flag, limit, *tree, 1.0) == why
