"""Repeated points merged (an exact reduction), and the pricing loop shared by approx and sparse-exact."""
import numpy as np
import ot
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist

from solvopt.dsl import Transport
from solvopt.transport import dual
from solvopt.transport.merge import expand_plan, merged
from solvopt.transport.quick import quick_plan
from solvopt.transport.sparse_exact import price


def _repeated(rng, n, d, levels):
    """n points in [0, 1]^d on a grid of ``levels`` values an axis: many repeats."""
    return rng.integers(0, levels, (n, d)) / max(levels - 1, 1)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 40), m=st.integers(1, 40), d=st.integers(1, 3), levels=st.integers(1, 4),
       p=st.sampled_from([1.0, 2.0, 3.0]), metric=st.sampled_from(["euclidean", "cityblock", "chebyshev"]),
       seed=st.integers(0, 10**6))
def test_merged_problem_has_the_same_optimum_and_its_plan_expands_exactly(n, m, d, levels, p, metric, seed):
    rng = np.random.default_rng(seed)
    x, y = _repeated(rng, n, d, levels), _repeated(rng, m, d, levels)
    a, b = rng.random(n) + 0.05, rng.random(m) + 0.05
    t = Transport(x, y, a=a, b=b * a.sum() / b.sum(), p=p, metric=metric)
    out = merged(t, min_share=0.0)
    assert out is not None
    small, gx, gy = out
    assert len(np.unique(small.x, axis=0)) == small.n and len(np.unique(small.y, axis=0)) == small.m
    np.testing.assert_allclose(small.x[gx], x) and np.testing.assert_allclose(small.y[gy], y)
    c_small, c_full = cdist(small.x, small.y, metric) ** p, cdist(x, y, metric) ** p
    plan = ot.emd(small.a, small.b, c_small)
    full = ot.emd2(t.a, t.b, c_full)
    assert (plan * c_small).sum() == pytest.approx(full, rel=1e-9, abs=1e-12)      # the same W_p
    big = expand_plan(sp.csr_matrix(plan), t, gx, gy)
    assert big.shape == (n, m) and big.min() >= 0
    assert big.nnz <= np.count_nonzero(plan) + n + m
    np.testing.assert_allclose(big.sum(axis=1).A1, t.a, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(big.sum(axis=0).A1, t.b, rtol=1e-12, atol=1e-15)
    assert (big.multiply(c_full)).sum() == pytest.approx((plan * c_small).sum(), rel=1e-12, abs=1e-15)


def test_merge_skips_clouds_without_repeats_and_cost_matrices():
    rng = np.random.default_rng(0)
    x, y = rng.random((50, 2)), rng.random((40, 2))
    assert merged(Transport(x, y, p=1)) is None
    assert merged(Transport(cost=cdist(x, y), p=1)) is None
    x[1:5] = x[0]                       # 4 of 90 points repeated: under the default share
    assert merged(Transport(x, y, p=1), min_share=0.05) is None
    assert merged(Transport(x, y, p=1), min_share=0.0)[0].n == 46


@pytest.mark.parametrize("p", [1.0, 2.0])
def test_approx_on_repeated_points_matches_the_unmerged_guarantees(p):
    """approx merges the repeats, answers on the original points, and its bound stays below the optimum."""
    rng = np.random.default_rng(3)
    x, y = _repeated(rng, 400, 3, 5), _repeated(rng, 300, 3, 5)
    t = Transport(x, y, p=p)
    r = t.solve(method="approx")
    assert r.stats["merged_points"][0] < 400 and r.solution["plan"].shape == (400, 300)
    exact = ot.emd2(t.a, t.b, cdist(x, y) ** p) ** (1 / p)
    assert r.bound <= exact * (1 + 1e-9) and exact <= r.objective * (1 + 1e-9)
    assert r.objective <= 3 * exact * (1 + 1e-9)
    plan = r.solution["plan"]
    np.testing.assert_allclose(plan.sum(axis=1).A1, t.a, rtol=1e-9)
    np.testing.assert_allclose(plan.sum(axis=0).A1, t.b, rtol=1e-9)


def test_approx_stopped_on_repeated_points_still_answers_on_the_original_points():
    from solvopt.core.result import Termination
    rng = np.random.default_rng(4)
    t = Transport(_repeated(rng, 300, 2, 6), _repeated(rng, 300, 2, 6), p=1)
    r = t.solve(method="approx", time_limit=1e-9)
    assert r.termination is Termination.TIME_LIMIT and r.solution["plan"].shape == (300, 300)


def test_sorted_keys_and_grown_keys_match_numpy():
    rng = np.random.default_rng(5)
    for _ in range(20):
        keys = dual.sorted_keys(rng.integers(0, 50, rng.integers(0, 30)))
        np.testing.assert_array_equal(keys, np.unique(keys))
        new = rng.integers(0, 60, rng.integers(0, 30))
        grown = dual.grown_keys(keys, new)
        np.testing.assert_array_equal(grown, np.union1d(keys, new))
        if np.isin(new, keys).all():
            assert grown is keys


@settings(max_examples=6, deadline=None)
@given(n=st.integers(2, 25), p=st.sampled_from([1.0, 2.0]), spread=st.sampled_from([0, 3]), seed=st.integers(0, 10**6))
def test_pricing_rounds_bounds_stay_below_the_optimum_and_reach_it(n, p, spread, seed):
    """Every round's bound is certified (<= the LP optimum) and, priced to the end, meets it."""
    rng = np.random.default_rng(seed)
    t = Transport(rng.random((n, 2)), rng.random((n + 2, 2)), p=p)
    opt = ot.emd2(t.a, t.b, cdist(t.x, t.y) ** p) ** (1 / p)
    coo = quick_plan(t).tocoo()                 # a feasible start: the north-west corner plan's support
    start = coo.row.astype(np.int64) * t.m + coo.col
    plan, bound, stats, stopped = price(t, start)
    assert not stopped and stats["rounds"] >= 1
    assert bound <= opt * (1 + 1e-9) and bound == pytest.approx(opt, rel=1e-6)
    rounds = list(dual.pricing_rounds(t, start, 1.0, spread=spread))
    assert all(step.bound <= opt * (1 + 1e-9) for step in rounds)
    assert rounds[-1].bound == pytest.approx(opt, rel=1e-6)


def test_refined_bound_stops_at_its_ratio_target():
    """ratio: the loop ends once the bound is within that share of its restricted optimum's W_p."""
    rng = np.random.default_rng(9)
    t = Transport(rng.random((200, 2)), rng.random((200, 2)), p=1)
    perm = rng.permutation(200)
    full, rounds_full = dual.refined_bound(t, np.arange(200), perm, 1.0)
    early, rounds_early = dual.refined_bound(t, np.arange(200), perm, 1.0, ratio=0.5)
    opt = ot.emd2(t.a, t.b, cdist(t.x, t.y))
    assert rounds_early < rounds_full and full <= opt * (1 + 1e-9)
    assert 0.5 * opt * (1 - 1e-9) <= early <= full * (1 + 1e-9)
