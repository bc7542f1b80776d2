"""The Numba passes of the exact method's small-solve path against NumPy and SciPy references,
and the checks of clean_plan that they now carry (negative, non-finite, off marginals, noise)."""
import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from solvopt.core.errors import SolverError
from solvopt.dsl.transport import Transport
from solvopt.transport.exact import uniform_units
from solvopt.transport.flow import integer_data
from solvopt.transport.plan_kernels import (
    best_partners,
    check_entries,
    csr_from_pairs,
    marginal_error,
    power_sum,
    rescale,
    tree_plan,
)
from solvopt.transport.result import clean_plan, plan_cost


def _pairs(seed, n, m, k):
    rng = np.random.default_rng(seed)
    flat = rng.choice(n * m, min(k, n * m), replace=False)
    rows, cols = np.divmod(flat, m)
    return rng, rows, cols


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 12), st.integers(1, 12), st.integers(0, 60))
def test_csr_from_pairs_matches_scipy_coo(seed, n, m, k):
    rng, rows, cols = _pairs(seed, n, m, k)
    mass = rng.random(len(rows))
    mass[rng.random(len(rows)) < 0.2] = 0.0                 # zero entries are left out
    indptr, indices, data = csr_from_pairs(n, m, rows, cols, mass)
    plan = sp.csr_matrix((data, indices, indptr), shape=(n, m))
    assert plan.nnz == np.count_nonzero(mass)
    assert plan.has_sorted_indices
    np.testing.assert_array_equal(plan.toarray(), sp.coo_matrix((mass, (rows, cols)), shape=(n, m)).toarray())


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 10), st.integers(1, 10))
def test_marginal_error_and_rescale_match_numpy(seed, n, m):
    rng, rows, cols = _pairs(seed, n, m, 3 * (n + m))
    plan = sp.coo_matrix((rng.random(len(rows)), (rows, cols)), shape=(n, m)).tocsr()
    a, b = rng.random(n), rng.random(m)
    dense = plan.toarray()
    want = max(np.abs(dense.sum(axis=1) - a).max(), np.abs(dense.sum(axis=0) - b).max())
    assert marginal_error(plan.indptr, plan.indices, plan.data, a, b) == pytest.approx(want, rel=1e-12, abs=1e-15)
    rescale(plan.indptr, plan.indices, plan.data, a, b)
    rs = dense.sum(axis=1, keepdims=True)
    dense = dense * np.divide(a[:, None], rs, out=np.ones_like(rs), where=rs > 0)
    cs = dense.sum(axis=0, keepdims=True)
    dense = dense * np.divide(b[None, :], cs, out=np.ones_like(cs), where=cs > 0)
    np.testing.assert_allclose(plan.toarray(), dense, rtol=1e-12, atol=1e-15)


def test_check_entries_flags_and_zeroes():
    data = np.array([0.5, 1e-17, 0.25])
    assert check_entries(data, 1e-15) == (0, 1e-17, 1)
    assert data[1] == 0.0
    assert check_entries(np.array([0.5, np.nan]), 1e-15)[0] == 1
    assert check_entries(np.array([0.5, np.inf]), 1e-15)[0] == 1
    code, low, _ = check_entries(np.array([0.5, -1e-3]), 1e-15)
    assert code == 2 and low == -1e-3
    assert check_entries(np.empty(0), 1e-15)[0] == 0


def test_clean_plan_still_refuses_bad_plans_and_repairs_drift():
    t = Transport(np.arange(3.0)[:, None] * [1, 0], np.arange(3.0)[:, None] * [0, 1])
    good = np.eye(3) / 3
    for bad, what in ((good * np.array([[1.0], [1.0], [-1.0]]), "negative"),
                      (np.where(np.eye(3) > 0, np.nan, 0.0), "non-finite"),
                      (good * 1.01, "marginals")):
        with pytest.raises(SolverError, match=what):
            clean_plan(t, sp.csr_matrix(bad))
    drift = good * (1 + 1e-12)
    drift[0, 1] = 1e-18                                      # noise: dropped
    plan, error = clean_plan(t, sp.csr_matrix(drift))
    assert plan.nnz == 3 and error < 1e-15
    np.testing.assert_allclose(plan.toarray(), good, rtol=1e-15)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from([1.0, 1.5, 2.0, 3.0, math.inf]))
def test_plan_cost_matches_the_formula(seed, p):
    rng = np.random.default_rng(seed)
    t = Transport(rng.random((7, 2)), rng.random((5, 2)), p=p)
    _, rows, cols = _pairs(seed, 7, 5, 12)
    mass = rng.random(len(rows))
    plan = sp.coo_matrix((mass, (rows, cols)), shape=(7, 5)).tocsr()
    d = np.linalg.norm(t.x[rows] - t.y[cols], axis=1)
    w, cost_p = plan_cost(t, plan)
    if math.isinf(p):
        assert w == cost_p == pytest.approx(d.max(), rel=1e-13)
    else:
        assert cost_p == pytest.approx(float(mass @ d ** p), rel=1e-12)
        assert w == pytest.approx(float(mass @ d ** p) ** (1 / p), rel=1e-12)
    top, total = power_sum(mass, d, 2.0)
    assert top == d.max() and total == pytest.approx(float(mass @ (d / top) ** 2), rel=1e-13)


def test_best_partners_match_numpy():
    rng = np.random.default_rng(4)
    c, u, v = rng.random((9, 6)), rng.normal(size=9), rng.normal(size=6)
    np.testing.assert_array_equal(best_partners(c, u, 0), (c - u[:, None]).min(axis=0))
    np.testing.assert_array_equal(best_partners(c, v, 1), (c - v[None, :]).min(axis=1))


def test_tree_plan_matches_pair_arithmetic():
    rng = np.random.default_rng(5)
    rows, cols = np.array([0, 2, 3]), np.array([1, 4])
    r, c = np.array([0, 1, 2, 2]), np.array([1, 0, 0, 1])
    flow = np.array([3.0, 0.0, 2.0, 1.0])
    costs = rng.random((3, 2))
    indptr, indices, data, cost, total = tree_plan(5, 6, rows, cols, r, c, flow.copy(), 0.5, 2.0, costs)
    plan = sp.csr_matrix((data, indices, indptr), shape=(5, 6))
    want = sp.coo_matrix((flow * 0.5 * 2.0, (rows[r], cols[c])), shape=(5, 6)).toarray()
    np.testing.assert_array_equal(plan.toarray(), want)
    assert plan.nnz == 3
    assert cost == pytest.approx(float((flow * 0.5) @ costs[r, c]), rel=1e-15)
    assert total == pytest.approx(3.0)


@pytest.mark.parametrize("k, l", [(1, 1), (5, 5), (50, 30), (7, 13), (200, 199)])
def test_uniform_units_agree_with_the_general_search(k, l):
    supplies = np.concatenate([np.full(k, 1.0 / k), np.full(l, -1.0 / l)])
    fast, general = uniform_units(supplies, k), integer_data(supplies, None)
    assert fast is not None and general is not None
    assert fast[0] == pytest.approx(general[0], rel=1e-12)
    np.testing.assert_array_equal(fast[1], general[1])


def test_uniform_units_leave_other_masses_to_the_general_search():
    assert uniform_units(np.array([0.5, 0.25, 0.25, -1.0]), 3) is None
    assert uniform_units(np.array([1.0, -0.5, -0.5]), 0) is None
