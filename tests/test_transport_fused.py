"""The fused small solve (``solvopt.transport.small``): what it answers is the full exact solve's
OPTIMAL answer (against the model's own solve and HiGHS), in any units; what is not plainly valid
it declines, and the public calls then give the model's errors."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from solvopt.core.errors import ModelError
from solvopt.core.result import Termination
from solvopt.dsl.transport import Transport
from solvopt.transport import api
from solvopt.transport.small import certified_matrix, certified_points, dense_plan


def _highs_optimum(a, b, M):
    """min <P, M> over plans with marginals a, b, by HiGHS (an independent reference)."""
    n, m = M.shape
    rows = np.kron(np.eye(n), np.ones(m))
    cols = np.kron(np.ones(n), np.eye(m))
    res = linprog(M.ravel(), A_eq=np.vstack([rows, cols]), b_eq=np.concatenate([a, b]), method="highs")
    assert res.status == 0
    return res.fun


def _check_plan(csr, a, b, n, m):
    plan = dense_plan(n, m, *csr)
    assert plan.min() >= 0
    np.testing.assert_allclose(plan.sum(1), a, rtol=1e-12, atol=1e-15 * a.sum())
    np.testing.assert_allclose(plan.sum(0), b, rtol=1e-9, atol=1e-15 * a.sum())
    return plan


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 25), m=st.integers(1, 25), d=st.integers(2, 3), p=st.sampled_from([1, 1.5, 2.0, 3.0]),
       metric=st.sampled_from(["euclidean", "cityblock", "chebyshev"]),
       masses=st.sampled_from(["none", "uniform", "random", "only_b"]), units=st.sampled_from([1e-12, 1.0, 1e12]),
       seed=st.integers(0, 2**32 - 1))
def test_points_match_the_full_exact_solve_in_any_units(n, m, d, p, metric, masses, units, seed):
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=(n, d)), rng.normal(size=(m, d))
    a = b = None
    if masses == "uniform":
        a, b = np.full(n, 3.0 / n), np.full(m, 3.0 / m)
    elif masses == "random":
        a, b = rng.uniform(0.1, 1, n), rng.uniform(0.1, 1, m)
        b *= a.sum() / b.sum()
    elif masses == "only_b":
        b = rng.uniform(0.1, 1, m)
    found = certified_points(x, y, a, b, p, metric)
    full = Transport(x, y, a=a, b=b, p=p, metric=metric).solve("exact")
    assert full.termination is Termination.OPTIMAL
    if found is None:
        return
    value, csr = found
    assert value == pytest.approx(full.objective, rel=1e-9)
    model = Transport(x, y, a=a, b=b, p=p, metric=metric)
    _check_plan(csr, model.a, model.b, n, m)
    # the same input in other units: the same decision, the value in those units
    scaled = certified_points(x * units, y * units, a, b, p, metric)
    assert scaled is not None
    assert scaled[0] == pytest.approx(value * units, rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 12), m=st.integers(1, 12), uniform=st.booleans(), units=st.sampled_from([1e-12, 1.0, 1e12]),
       seed=st.integers(0, 2**32 - 1))
def test_matrices_match_highs(n, m, uniform, units, seed):
    rng = np.random.default_rng(seed)
    M = rng.uniform(size=(n, m)) * rng.integers(1, 4, size=(n, m))        # ties and spread
    a, b = (np.full(n, 1 / n), np.full(m, 1 / m)) if uniform else (rng.uniform(0.1, 1, n), rng.uniform(0.1, 1, m))
    b = b * (a.sum() / b.sum())
    found = certified_matrix(a, b, M * units)
    assert found is not None
    value, csr = found
    assert value == pytest.approx(_highs_optimum(a, b, M) * units, rel=1e-8)
    plan = _check_plan(csr, a, b, n, m)
    assert float((plan * M * units).sum()) == pytest.approx(value, rel=1e-12)
    assert api.emd2(a, b, M) == pytest.approx(value / units, rel=1e-12)
    assert np.array_equal(api.emd(a, b, M * units), plan)


def test_plain_inputs_build_no_model(monkeypatch):
    rng = np.random.default_rng(3)
    x, y = rng.uniform(size=(30, 2)), rng.uniform(size=(25, 2))
    M = ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)
    expected = (Transport(x, y, p=2).solve("exact").objective, Transport(cost=M, p=1).solve("exact").objective)

    def refuse(*args, **kwargs):
        raise AssertionError("a model was built")
    monkeypatch.setattr(api, "Transport", refuse)
    assert api.wasserstein(x, y, 2) == pytest.approx(expected[0], rel=1e-12)
    assert api.emd2([], [], M) == pytest.approx(expected[1], rel=1e-12)
    assert api.emd(np.full(30, 1 / 30), np.full(25, 1 / 25), M).sum() == pytest.approx(1.0)


def test_declines_what_is_not_plainly_valid():
    rng = np.random.default_rng(4)
    x, y = rng.uniform(size=(6, 2)), rng.uniform(size=(5, 2))
    a, b = np.full(6, 1 / 6), np.full(5, 1 / 5)
    M = rng.uniform(size=(6, 5))
    assert certified_points(x, y, a, b, 2, "euclidean") is not None
    assert certified_matrix(a, b, M) is not None
    nan, neg, zero, off = M.copy(), M.copy(), a.copy(), a * (1 + 1e-6)
    nan[1, 2], neg[0, 0], zero[0] = np.nan, -0.1, 0.0
    for args in ((x.tolist(), y, a, b, 2, "euclidean"), (x.astype(np.float32), y, a, b, 2, "euclidean"),
                 (x[:, :1], y[:, :1], a, b, 2, "euclidean"),            # the line: auto's quantile formula
                 (x, y, a, b, np.inf, "euclidean"), (x, y, a, b, 9.0, "euclidean"), (x, y, a, b, 0.5, "euclidean"),
                 (x, y, a, b, True, "euclidean"), (x, y, a, b, 2, "minkowski"), (x, y, zero, b, 2, "euclidean"),
                 (x, y, off, b, 2, "euclidean"), (x, y, a[:5], b, 2, "euclidean"), (x * 1e200, y, a, b, 2, "euclidean"),
                 (np.where(x > 0.5, np.inf, x), y, a, b, 2, "euclidean"), (x, x, a, a, 2, "euclidean")):
        assert certified_points(*args) is None
    for args in ((a, b, nan), (a, b, neg), (a, b, M.tolist()), (zero, b, M), (off, b, M), (a, b, M * 0.0),
                 (a, b, M.ravel()), (a, b, np.full((6, 5), 2e300))):
        assert certified_matrix(*args) is None
    # the public calls then give the model's precise errors
    with pytest.raises(ModelError, match="non-finite"):
        api.emd2(a, b, nan)
    with pytest.raises(ModelError, match="equal total mass"):
        api.emd(off, b, M)
    with pytest.raises(ModelError, match="above"):
        api.emd2(a, b, np.full((6, 5), 2e300))
    with pytest.raises(ModelError, match="span"):
        api.wasserstein(x * 1e200, y, 2)
    # and negative costs, zero masses and lists still solve, through the model
    assert api.emd2(a, b, neg) == pytest.approx(_highs_optimum(a, b, neg), rel=1e-9, abs=1e-12)
    assert api.emd2(zero / zero.sum(), b, M) == pytest.approx(_highs_optimum(zero / zero.sum(), b, M), rel=1e-9)
    assert api.emd2(a.tolist(), b.tolist(), M.tolist()) == pytest.approx(_highs_optimum(a, b, M), rel=1e-9)
