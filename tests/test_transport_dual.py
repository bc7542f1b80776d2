"""The certified dual bound of the approximation: c-transforms without the n x m matrix."""
import numpy as np
import pytest
from helpers import transport_lp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist

from solvopt.dsl import Transport
from solvopt.transport import dual
from solvopt.transport.stopping import Stopped


def _dense_transform(x, y, pot, unit, p, metric):
    c = (cdist(y, x, metric) / unit) ** p          # rows: dst, cols: src
    return (c - pot[None, :]).min(axis=1)


@pytest.mark.parametrize("metric,p", [("euclidean", 1.0), ("euclidean", 2.0), ("cityblock", 1.5), ("chebyshev", 3.0)])
def test_c_transform_matches_dense_reference(metric, p):
    rng = np.random.default_rng(1)
    x, y = rng.random((37, 3)), rng.random((23, 3))
    pot = rng.normal(size=37)
    ref = _dense_transform(x, y, pot, 0.7, p, metric)
    out, arg = dual.c_transform(x, y, pot, 0.7, p, metric, method="brute")
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose((cdist(y, x, metric)[np.arange(23), arg] / 0.7) ** p - pot[arg], ref, atol=1e-12)
    for method in ("grid", "kdtree"):
        pruned, arg = dual.c_transform(x, y, pot, 0.7, p, metric, method=method)
        np.testing.assert_allclose(pruned, ref, rtol=0, atol=1e-12)
        np.testing.assert_allclose((cdist(y, x, metric)[np.arange(23), arg] / 0.7) ** p - pot[arg], ref, atol=1e-12)
    if metric == "euclidean" and p == 2.0:
        tree, _ = dual.c_transform(x, y, pot, 0.7, p, metric, method="tree")
        np.testing.assert_allclose(tree, ref, rtol=0, atol=1e-12)


def test_c_transform_sees_a_stop_between_chunks(monkeypatch):
    monkeypatch.setattr(dual, "CHUNK_ENTRIES", 10)
    rng = np.random.default_rng(2)
    x, y = rng.random((20, 2)), rng.random((20, 2))
    calls = []

    def stop():
        calls.append(1)
        return len(calls) > 3
    with pytest.raises(Stopped):
        dual.c_transform(x, y, np.zeros(20), 1.0, 2.0, "euclidean", method="brute", stop=stop)


def _lp_optimum(t):
    """The transport LP's optimum (its dual's, equal by strong duality) by HiGHS through linprog."""
    return transport_lp(t.distance_block() ** t.p, t.a, t.b)


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 7), m=st.integers(1, 7), p=st.sampled_from([1.0, 2.0, 3.0]),
       seed=st.integers(0, 10**6), tree=st.booleans())  # tree: a pruned search
def test_any_potentials_certify_no_more_than_the_lp_optimum(n, m, p, seed, tree):
    rng = np.random.default_rng(seed)
    a, b = rng.random(n) + 0.1, rng.random(m) + 0.1
    t = Transport(rng.random((n, 2)), rng.random((m, 2)), a=a, b=b * a.sum() / b.sum(), p=p)
    opt = _lp_optimum(t)                           # sum pi d^p
    method = ("tree" if p == 2.0 else "kdtree" if seed % 2 else "grid") if tree else "brute"
    for u in (rng.normal(size=n), np.zeros(n), 5 * rng.random(n)):
        bound = dual.certified_bound(t, u, 1.0, method=method)
        assert bound is not None and bound ** p <= opt * (1 + 1e-12) + 1e-15


@settings(max_examples=10, deadline=None)
@given(n=st.integers(2, 25), p=st.sampled_from([1.0, 2.0]), d=st.sampled_from([1, 2, 3]), seed=st.integers(0, 10**6))
def test_refined_bound_lies_between_nothing_and_the_exact_optimum(n, p, d, seed):
    rng = np.random.default_rng(seed)
    t = Transport(rng.random((n, d)), rng.random((n, d)), p=p)
    exact = t.solve(method="exact").objective
    bound, rounds = dual.refined_bound(t, np.arange(n), np.arange(n), 1.0)   # from the identity plan
    assert rounds >= 1
    assert 0 <= bound <= exact * (1 + 1e-9)
    # priced to the end (no pair left outside), the bound is the optimum
    assert bound == pytest.approx(exact, rel=1e-6)


@settings(max_examples=8, deadline=None)
@given(n=st.integers(3, 30), p=st.sampled_from([1.0, 2.0]), seed=st.integers(0, 10**6))
def test_approx_reports_bound_below_exact_and_objective(n, p, seed):
    rng = np.random.default_rng(seed)
    t = Transport(rng.random((n, 2)), rng.random((n + 3, 2)), p=p)
    r = t.solve(method="approx")
    exact = t.solve(method="exact").objective
    assert r.bound <= exact * (1 + 1e-9) <= r.objective * (1 + 2e-9)
    assert r.bound >= r.objective / 3 * (1 - 1e-9)           # the factor bound stays the floor


def test_approx_certificate_is_tight_on_uniform_points():
    rng = np.random.default_rng(5)
    t = Transport(rng.random((300, 2)), rng.random((300, 2)), p=2)
    r = t.solve(method="approx")
    assert r.stats["dual_bound"] is not None
    assert r.bound >= 0.95 * r.objective


def test_p_inf_and_cost_matrix():
    rng = np.random.default_rng(3)
    x, y = rng.random((6, 2)), rng.random((5, 2))
    assert dual.certified_bound(Transport(x, y, p="inf"), np.zeros(6), 1.0) is None
    t = Transport(cost=cdist(x, y), p=1)
    bound, _ = dual.refined_bound(t, *np.nonzero(np.ones((6, 5))), 1.0)
    assert bound == pytest.approx(_lp_optimum(t), rel=1e-7)


def test_approx_stopped_during_the_certificate_keeps_the_factor_bound(monkeypatch):
    from solvopt.transport import approx
    rng = np.random.default_rng(4)
    t = Transport(rng.random((60, 2)), rng.random((60, 2)), p=1)

    def stopped(*args, **kwargs):
        raise Stopped
    monkeypatch.setattr(dual, "refined_bound", stopped)
    r = t.solve(method="approx", graph="two-hop")
    assert "dual_bound" not in r.stats
    assert r.objective / 3 * (1 - 1e-9) <= r.bound <= t.solve(method="exact").objective * (1 + 1e-9)
    assert approx.DUAL_TARGET < 1


@pytest.mark.parametrize("metric,p,d", [("euclidean", 1.0, 2), ("euclidean", 2.0, 3), ("cityblock", 1.0, 3)])
def test_pruned_searches_match_the_dense_reference_on_many_cells(metric, p, d):
    rng = np.random.default_rng(6)
    x, y = rng.random((1500, d)), rng.random((400, d))
    pot = 0.3 * x[:, 0] + 0.05 * rng.random(1500)         # potentials with structure, as a flow's are
    ref = _dense_transform(x, y, pot, 1.3, p, metric)
    for method in ("grid", "kdtree", "tree") if p == 2.0 else ("grid", "kdtree"):
        out, _ = dual.c_transform(x, y, pot, 1.3, p, metric, method=method)
        np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 300), m=st.integers(1, 40), d=st.integers(1, 3), repeats=st.booleans(),
       metric=st.sampled_from(["euclidean", "cityblock", "chebyshev"]), p=st.sampled_from([1.0, 2.0, 3.5]),
       spread=st.sampled_from([0.0, 0.1, 10.0]), seed=st.integers(0, 10**6))
def test_kdtree_c_transform_is_the_dense_minimum(n, m, d, repeats, metric, p, spread, seed):
    """The k-d tree's branch and bound prunes exactly: the dense minimum, repeated points and flat
    or wild potentials included (a wide potential range is where pruning is weakest)."""
    rng = np.random.default_rng(seed)
    x = rng.random((n, d))
    if repeats:
        x = np.round(x * 3) / 3
    y = rng.random((m, d))
    pot = spread * rng.normal(size=n)
    out, arg = dual.c_transform(x, y, pot, 0.4, p, metric, method="kdtree")
    ref = _dense_transform(x, y, pot, 0.4, p, metric)
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12 * (1 + np.abs(ref).max()))
    np.testing.assert_allclose((cdist(y, x, metric)[np.arange(m), arg] / 0.4) ** p - pot[arg], out, rtol=0,
                               atol=1e-12 * (1 + np.abs(ref).max()))


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 2000), d=st.integers(1, 3), depth=st.integers(0, 8), levels=st.sampled_from([0, 2, 5]),
       seed=st.integers(0, 10**6))
def test_kdtree_split_halves_each_node_along_its_widest_axis(n, d, depth, levels, seed):
    """Every node's range splits at its middle, and along the node's widest axis no source of the
    lower half lies above one of the upper half (ties and repeated points included)."""
    from solvopt.transport.kernels_kdtree import split_order
    rng = np.random.default_rng(seed)
    x = rng.random((n, d))
    if levels:
        x = np.round(x * levels) / levels
    order, begin, end = split_order(x, depth)
    assert np.array_equal(np.sort(order), np.arange(n))
    assert len(begin) == 2 ** depth and begin[0] == 0 and end[-1] == n
    assert np.array_equal(begin[1:], end[:-1])
    for level in range(depth):
        width = 2 ** (depth - level)             # leaves under one node of this level
        for k in range(2 ** level):
            lo, hi = begin[k * width], end[(k + 1) * width - 1]
            mid = end[k * width + width // 2 - 1]
            assert mid == (lo + hi) // 2
            if hi - lo < 2:
                continue
            pts = x[order[lo:hi]]
            axis = int(np.argmax(pts.max(axis=0) - pts.min(axis=0)))
            assert x[order[lo:mid], axis].max(initial=-np.inf) <= x[order[mid:hi], axis].min(initial=np.inf)


@pytest.mark.parametrize("engine", ["simplex", "highs"])
def test_refined_bound_from_a_disconnected_plan_reaches_the_optimum(engine):
    """From the support of one plan (many components, as the approximation hands over) the
    neighbour pairs join the components; warm-started or not, pricing ends at the optimum."""
    rng = np.random.default_rng(8)
    t = Transport(rng.random((150, 2)), rng.random((150, 2)), p=1)
    exact = t.solve(method="exact").objective
    bound, rounds = dual.refined_bound(t, np.arange(150), rng.permutation(150), 1.0, engine=engine)
    assert bound == pytest.approx(exact, rel=1e-7) and bound <= exact * (1 + 1e-9)
    budget, _ = dual.refined_bound(t, np.arange(150), np.arange(150), 1.0, engine=engine, budget=0.0)
    assert _ == 1 and budget <= exact * (1 + 1e-9)          # a spent budget: one round, still a bound


def test_a_time_limit_reaches_the_certificate():
    import time

    from solvopt.core.result import Termination
    from solvopt.transport import approx
    rng = np.random.default_rng(7)
    t = Transport(rng.random((40, 2)), rng.random((40, 2)), p=2)
    pairs = (np.arange(40), np.arange(40), 1.0)
    stats = {}
    bound, stopped = approx._with_dual_bound(t, pairs, 0.123, time.perf_counter() - 1.0, lambda *a, **k: None,
                                             stats, "auto", np.inf)
    assert bound == 0.123 and stopped is Termination.TIME_LIMIT and "dual_bound" not in stats
    bound, stopped = approx._with_dual_bound(t, pairs, 0.0, None, lambda *a, **k: None, stats, "auto", np.inf)
    assert stopped is None and bound == stats["dual_bound"] > 0


def test_certificate_factor_skips_the_dual_bound():
    """certificate="factor" reports the factor bound only; the default dual bound is at least it."""
    from solvopt.dsl import Transport
    rng = np.random.default_rng(7)
    x, y = rng.random((120, 2)), rng.random((120, 2))
    fast = Transport(x, y, p=2).solve("approx", certificate="factor", graph="two-hop")
    full = Transport(x, y, p=2).solve("approx", graph="two-hop")
    assert "dual_bound" not in fast.stats and "dual_bound" in full.stats
    assert full.bound >= fast.bound * (1 - 1e-12) and full.objective <= fast.objective * (1 + 1e-12)
    assert fast.bound <= full.objective * (1 + 1e-12)
