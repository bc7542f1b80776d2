"""The fused kernels of the small exact solve against independent references: the cost matrix
(SciPy's cdist), the plan's cost (the model's pair distances), the plan checks (the separate
passes), the dense kernel's plan, duals and best partners (SciPy's HiGHS LP and a brute-force
minimum), and whole solves (POT's ot.emd2 where installed, else HiGHS) with their statuses."""
import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog
from scipy.spatial.distance import cdist

from solvopt.core.result import Termination
from solvopt.dsl.transport import Transport
from solvopt.transport.api import wasserstein
from solvopt.transport.exact import scaled_costs
from solvopt.transport.network_simplex import (
    BLOCK_FACTOR,
    DENSE_BLOCK_FACTOR,
    DIRECT_PAIRS,
    SWITCH_FLOOR,
    SWITCH_SHRINK,
    dense_transport,
)
from solvopt.transport.plan_kernels import (
    check_entries,
    checked_error,
    marginal_error,
    plan_power_sum,
    point_costs,
    power_sum,
)
from solvopt.transport.result import METRIC_CODES, plan_cost

METRICS = sorted(METRIC_CODES)


def _lp_value(a, b, costs):
    """min <P, costs> over plans with marginals a, b, by HiGHS (the reference)."""
    n, m = costs.shape
    rows = sp.kron(sp.eye(n), np.ones((1, m)))
    cols = sp.kron(np.ones((1, n)), sp.eye(m))
    res = linprog(costs.ravel(), A_eq=sp.vstack([rows, cols]), b_eq=np.concatenate([a, b]), method="highs")
    assert res.status == 0
    return res.fun


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 9), st.integers(1, 9), st.integers(1, 4),
       st.sampled_from(METRICS), st.sampled_from([1.0, 2.0, 1.5, 3.0]))
def test_point_costs_match_cdist(seed, n, m, dim, metric, p):
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=(n, dim)) * 10, rng.normal(size=(m, dim))
    costs, scale = point_costs(x, y, METRIC_CODES[metric], p)
    want, want_scale = scaled_costs(cdist(x, y, metric), p)
    assert scale == want_scale
    if p in (1.0, 2.0):                              # the same operations: bit for bit
        np.testing.assert_array_equal(costs, want)
    else:                                            # NumPy's power may differ in the last bit
        np.testing.assert_allclose(costs, want, rtol=1e-15, atol=1e-300)


def test_point_costs_of_coincident_points_use_scale_one():
    costs, scale = point_costs(np.zeros((3, 2)), np.zeros((2, 2)), 0, 2.0)
    assert scale == 1.0 and not costs.any()


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 8), st.integers(1, 8), st.sampled_from(METRICS + ["matrix"]),
       st.sampled_from([1.0, 2.0, 2.5, math.inf]))
def test_plan_cost_in_one_pass_matches_the_pair_distances(seed, n, m, metric, p):
    rng = np.random.default_rng(seed)
    if metric == "matrix":
        model = Transport(distance=rng.random((n, m)) * 5, p=p)
    else:
        model = Transport(rng.random((n, 3)), rng.random((m, 3)), p=p, metric=metric)
    dense = rng.random((n, m)) * (rng.random((n, m)) < 0.5)
    plan = sp.csr_matrix(dense)
    coo = plan.tocoo()
    top, scaled = power_sum(coo.data, model.pair_distances(coo.row, coo.col), 1.0 if math.isinf(p) else p)
    code = -1 if metric == "matrix" else METRIC_CODES[metric]
    held = model.cost if code < 0 else model.x
    got = plan_power_sum(plan.indptr, plan.indices, plan.data, held, held if code < 0 else model.y, code,
                         1.0 if math.isinf(p) else p)
    assert got == pytest.approx((top, scaled), rel=1e-13, abs=0)
    # and plan_cost takes that pass for CSR and the pair distances for other formats, alike
    assert plan_cost(model, plan) == pytest.approx(plan_cost(model, plan.tocoo()), rel=1e-13, abs=0)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 7), st.integers(1, 7), st.sampled_from(["ok", "nan", "negative"]))
def test_checked_error_is_both_passes(seed, n, m, kind):
    rng = np.random.default_rng(seed)
    plan = sp.csr_matrix(rng.random((n, m)) * (rng.random((n, m)) < 0.6) + 1e-17 * (rng.random((n, m)) < 0.2))
    if plan.nnz and kind != "ok":
        plan.data[rng.integers(plan.nnz)] = np.nan if kind == "nan" else -0.5
    a, b = rng.random(n), rng.random(m)
    one, two = plan.data.copy(), plan.data.copy()
    code, low, zeroed, error = checked_error(plan.indptr, plan.indices, one, a, b, 1e-15)
    want = check_entries(two, 1e-15)
    assert (code, zeroed) == (want[0], want[2]) and (low == want[1] or (np.isnan(low) and np.isnan(want[1])))
    np.testing.assert_array_equal(one, two)
    if code == 0:
        assert error == marginal_error(plan.indptr, plan.indices, two, a, b)
    else:
        assert error == math.inf


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("uniform", [True, False])
def test_dense_kernel_plan_duals_and_partners(seed, uniform):
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(2, 12)), int(rng.integers(2, 12))
    costs = rng.random((n, m))
    costs[rng.random((n, m)) < 0.2] = 0.25                    # ties
    a = np.full(n, 1.0 / n) if uniform else rng.random(n) + 0.05
    b = np.full(m, 1.0 / m) if uniform else rng.random(m) + 0.05
    a, b = a / a.sum(), b / b.sum()
    supplies = np.concatenate([a, -b])
    rows, cols = np.arange(n), np.arange(m)
    flag = np.zeros(1, np.int8)
    indptr, indices, data, flow, cost, total, potentials, partners, left, rounds, matrix, cost_scale = \
        dense_transport(costs, supplies, float(2**50), rows, cols, n, m, 1.0, 1.0, flag, 0, 16, BLOCK_FACTOR,
                        SWITCH_SHRINK, SWITCH_FLOOR, DENSE_BLOCK_FACTOR, DIRECT_PAIRS)
    assert left <= 1e-12
    plan = sp.csr_matrix((data, indices, indptr), shape=(n, m)).toarray()
    np.testing.assert_allclose(plan.sum(1), a, atol=1e-12)
    np.testing.assert_allclose(plan.sum(0), b, atol=1e-12)
    optimum = _lp_value(a, b, costs)
    assert (plan * costs).sum() == pytest.approx(optimum, rel=1e-9, abs=1e-12)
    assert cost == pytest.approx(optimum, rel=1e-9, abs=1e-12)
    u = potentials[:n]
    np.testing.assert_array_equal(partners, (costs - u[:, None]).min(axis=0))      # brute force
    assert a @ u + b @ partners == pytest.approx(optimum, rel=1e-9, abs=1e-12)    # a tight dual


def _reference(x, y, a, b, p, metric="euclidean"):
    costs = cdist(x, y, metric) ** p
    try:
        import ot
        return float(ot.emd2(a, b, costs, numItermax=10**7)) ** (1 / p)
    except ImportError:
        return _lp_value(a, b, costs) ** (1 / p)


@pytest.mark.parametrize("n", [3, 20, 50])
@pytest.mark.parametrize("masses", ["uniform", "random", "zeros"])
@pytest.mark.parametrize("p", [1, 2, 3.5])
def test_small_exact_solves_are_optimal_against_a_reference(n, masses, p):
    rng = np.random.default_rng(n * 7 + int(p * 2))
    x, y = rng.random((n, 2)), rng.random((n + 1, 2))
    a, b = np.full(n, 1.0 / n), np.full(n + 1, 1.0 / (n + 1))
    if masses != "uniform":
        a, b = rng.random(n) + 0.1, rng.random(n + 1) + 0.1
        if masses == "zeros":                       # points without mass: the solve works on a sub-matrix
            a[0], b[:2] = 0.0, 0.0
        a, b = a / a.sum(), b / b.sum()
    value, result = wasserstein(x, y, p, a, b, method="exact", return_result=True)
    assert result.termination is Termination.OPTIMAL and result.guarantee is not None
    assert value == pytest.approx(_reference(x, y, a, b, p), rel=1e-9)
    assert result.bound <= value and value - result.bound <= 1e-6 * value
    plan = result.solution["plan"]
    np.testing.assert_allclose(np.asarray(plan.sum(1)).ravel(), a, atol=1e-12)
    np.testing.assert_allclose(np.asarray(plan.sum(0)).ravel(), b, atol=1e-12)


@pytest.mark.parametrize("metric", METRICS)
def test_small_exact_solves_for_every_named_metric(metric):
    rng = np.random.default_rng(3)
    x, y = rng.random((15, 3)), rng.random((12, 3))
    a, b = np.full(15, 1 / 15), np.full(12, 1 / 12)
    value, result = wasserstein(x, y, 1, method="exact", metric=metric, return_result=True)
    assert result.termination is Termination.OPTIMAL
    assert value == pytest.approx(_reference(x, y, a, b, 1, metric), rel=1e-9)


def test_the_distance_scale_comes_from_the_span_check():
    rng = np.random.default_rng(0)
    x, y = rng.random((6, 2)) * 3, rng.random((5, 2)) - 1
    model = Transport(x, y, a=np.r_[0.0, np.ones(5)], p=2)
    xs = x[1:]                                       # the bounding box of the points with mass
    extent = np.maximum(xs.max(0), y.max(0)) - np.minimum(xs.min(0), y.min(0))
    assert model.distance_scale() == float(np.sqrt(extent @ extent))
