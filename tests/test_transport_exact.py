"""The exact transport references (exact, bottleneck, pot) against independent references:
brute force over permutations, the closed forms on the line, scipy's HiGHS LP, POT."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog
from scipy.stats import wasserstein_distance

from solvopt.core.errors import ModelError
from solvopt.core.interrupt import request_stop
from solvopt.core.result import SolutionStatus, Termination
from solvopt.dsl import Transport
from solvopt.transport.exact import northwest_corner
from solvopt.transport.result import dual_bound

P_FINITE = (1, 1.5, 2, 3, 10)


def _marginals_ok(model, result):
    plan = result.solution["plan"]
    assert plan.shape == (model.n, model.m) and (plan.nnz == 0 or plan.data.min() >= 0)
    np.testing.assert_allclose(np.asarray(plan.sum(axis=1)).ravel(), model.a, rtol=0, atol=1e-9 * model.mass)
    np.testing.assert_allclose(np.asarray(plan.sum(axis=0)).ravel(), model.b, rtol=0, atol=1e-9 * model.mass)


def _optimal(model, result):
    assert result.termination is Termination.OPTIMAL and result.solution_status is SolutionStatus.OPTIMAL
    assert result.bound <= result.objective * (1 + 1e-12) + 1e-300
    _marginals_ok(model, result)


def _weights(rng, n, m, floor=0.0):
    """Random masses a (n,), b (m,) with equal totals."""
    a, b = rng.random(n) + floor, rng.random(m) + floor
    return a, b * (a.sum() / b.sum())


def _brute_force(d, p):
    """min over permutations of (mean d^p)^(1/p) (p = inf: of the largest d), n <= 7."""
    n = d.shape[0]
    rows = np.arange(n)
    best = math.inf
    for perm in itertools.permutations(range(n)):
        used = d[rows, perm]
        best = min(best, used.max() if math.isinf(p) else float(np.mean(used ** p)) ** (1 / p))
    return best


def _lp_cost(d, a, b, p):
    """sum pi d^p at the optimum of the transport LP (scipy's HiGHS, an independent formulation)."""
    n, m = d.shape
    rows = np.kron(np.eye(n), np.ones(m))
    cols = np.kron(np.ones(n), np.eye(m))
    scale = d.max() if d.max() > 0 else 1.0
    res = linprog(((d / scale) ** p).ravel(), A_eq=np.vstack([rows, cols]), b_eq=np.concatenate([a, b]),
                  bounds=(0, None), method="highs")
    assert res.status == 0
    return res.fun * scale ** p


def _lp_bottleneck(d, a, b):
    """W_inf: the smallest distance t for which the LP restricted to d <= t is feasible."""
    n, m = d.shape
    for t in np.unique(d):
        allowed = (d <= t).ravel()
        rows = np.kron(np.eye(n), np.ones(m))[:, allowed]
        cols = np.kron(np.ones(n), np.eye(m))[:, allowed]
        res = linprog(np.zeros(allowed.sum()), A_eq=np.vstack([rows, cols]), b_eq=np.concatenate([a, b]),
                      bounds=(0, None), method="highs")
        if res.status == 0:
            return t
    raise AssertionError("the full graph is always feasible")


@pytest.mark.parametrize("n", [1, 4, 7])
@pytest.mark.parametrize("p", P_FINITE + (math.inf,))
def test_uniform_square_against_permutations(n, p):
    rng = np.random.default_rng(100 * n + int(min(p, 99)))
    t = Transport(rng.normal(size=(n, 2)), rng.normal(size=(n, 2)), p=p)
    expected = _brute_force(t.distance_block(slice(None)), p)
    for method, opts in [("exact", {}), ("exact", {"assignment": False})] + \
            ([("bottleneck", {}), ("bottleneck", {"engine": "hopcroft-karp"}), ("bottleneck", {"engine": "scipy"}),
              ("bottleneck", {"engine": "highs"})] if math.isinf(p) else []):
        r = t.solve(method, **opts)
        assert r.objective == pytest.approx(expected, rel=1e-9), (method, opts)
        _optimal(t, r)


@pytest.mark.parametrize("p", [1, 2, 3])
def test_line_closed_forms(p):
    """On the line W_p^p = int_0^1 |F^-1(s) - G^-1(s)|^p ds (quantile coupling); for p = 1 also the
    CDF formula int |F - G| (scipy.stats.wasserstein_distance)."""
    rng = np.random.default_rng(p)
    x, y = rng.normal(size=13), rng.normal(1.0, 2.0, size=9)
    a, b = _weights(rng, 13, 9, 0.1)
    t = Transport(x, y, a, b, p=p)
    r = t.solve("exact")
    _optimal(t, r)
    # quantile coupling: breakpoints of both CDFs, each interval maps to one (x, y) pair
    xs, ys = np.argsort(x), np.argsort(y)
    fa, fb = np.cumsum(a[xs]) / t.mass, np.cumsum(b[ys]) / t.mass
    cuts = np.unique(np.concatenate([[0.0], fa, fb]))
    cuts = cuts[cuts <= 1.0]
    mids = (cuts[:-1] + cuts[1:]) / 2
    qx = x[xs][np.minimum(np.searchsorted(fa, mids), len(x) - 1)]
    qy = y[ys][np.minimum(np.searchsorted(fb, mids), len(y) - 1)]
    expected = (t.mass * np.sum(np.diff(cuts) * np.abs(qx - qy) ** p)) ** (1 / p)
    assert r.objective == pytest.approx(expected, rel=1e-9)
    if p == 1:
        assert r.objective == pytest.approx(t.mass * wasserstein_distance(x, y, a, b), rel=1e-9)


@pytest.mark.parametrize("metric", ["euclidean", "cityblock"])
@pytest.mark.parametrize("p", P_FINITE)
def test_weighted_unequal_sizes_against_the_lp(metric, p):
    rng = np.random.default_rng(int(10 * p))
    t = Transport(rng.random((9, 2)), rng.random((6, 2)), *_weights(rng, 9, 6), p=p, metric=metric)
    d = t.distance_block(slice(None))
    r = t.solve("exact")
    _optimal(t, r)
    assert r.stats["cost_p"] == pytest.approx(_lp_cost(d, t.a, t.b, p), rel=1e-7)


def test_bottleneck_weighted_against_thresholded_lps():
    rng = np.random.default_rng(3)
    for n, m in [(6, 4), (5, 5), (3, 7)]:
        t = Transport(rng.random((n, 2)), rng.random((m, 2)), *_weights(rng, n, m, 0.05), p="inf")
        expected = _lp_bottleneck(t.distance_block(slice(None)), t.a, t.b)
        for method in ("bottleneck", "exact"):
            r = t.solve(method)
            _optimal(t, r)
            assert r.objective == expected and "max flow" in r.stats["engine"].replace("-", " ")
    # uniform n != m: integer units, exact max flow
    t = Transport(rng.random((4, 2)), rng.random((6, 2)), p="inf")
    assert t.solve("bottleneck").objective == _lp_bottleneck(t.distance_block(slice(None)), t.a, t.b)


@pytest.mark.parametrize("engine", ["auto", "simplex", "highs", "ortools", "networkx"])
def test_flow_engines_agree_on_uniform_inputs(engine):
    """Every engine finds the optimum; HiGHS' duals certify it. The engines on integer-rounded costs
    (simplex, OR-Tools, networkx) give duals of the rounded costs or none: their certificate can
    fall short on a wide cost range (p = 10), and the status then says so."""
    pytest.importorskip({"ortools": "ortools", "networkx": "networkx"}.get(engine, "numpy"))
    rng = np.random.default_rng(5)
    for p in (1, 2, 10):
        t = Transport(rng.random((12, 2)), rng.random((8, 2)), p=p)
        r = t.solve("exact", engine=engine)
        best = _lp_cost(t.distance_block(slice(None)), t.a, t.b, p)
        assert r.stats["cost_p"] == pytest.approx(best, rel=1e-7)
        if engine in ("auto", "highs") or p < 10:
            _optimal(t, r)
        else:
            _marginals_ok(t, r)
            assert r.bound <= best ** (1 / p) * (1 + 1e-9) and r.termination in (Termination.OPTIMAL,
                                                                                Termination.FEASIBLE_WITHIN_GAP)


def test_cost_matrix_and_callable_metric_inputs():
    rng = np.random.default_rng(11)
    x, y = rng.random((7, 3)), rng.random((5, 3))
    pts = Transport(x, y, p=2, metric="chebyshev")
    cost = Transport(distance=pts.distance_block(slice(None)), p=2)
    call = Transport(x, y, p=2, metric=lambda xs, ys: np.abs(xs[:, None] - ys[None]).max(-1))
    values = [m.solve("exact").objective for m in (pts, cost, call)]
    assert values == pytest.approx([values[0]] * 3, rel=1e-12)


def test_duplicate_points_zero_weights_and_single_points():
    rng = np.random.default_rng(2)
    x = rng.random((6, 2))
    for p in (1, 2, math.inf):
        r = Transport(x, x[::-1], p=p).solve("exact")
        assert r.objective == 0.0 and r.termination is Termination.OPTIMAL
    a = np.array([0.0, 1.0, 0.0, 2.0])
    t = Transport(rng.random((4, 2)), rng.random((3, 2)), a=a, b=[0.0, 1.5, 1.5], p=2)
    r = t.solve("exact")
    _optimal(t, r)
    assert r.stats["cost_p"] == pytest.approx(_lp_cost(t.distance_block(slice(None)), t.a, t.b, 2), rel=1e-7)
    one = Transport([[0.0, 0.0]], [[3.0, 4.0]], p=3)
    assert one.solve("exact").objective == pytest.approx(5.0)


def test_dual_bound_is_valid_for_any_potentials_and_tight_for_optimal_ones():
    ot = pytest.importorskip("ot")
    rng = np.random.default_rng(4)
    t = Transport(rng.random((15, 2)), rng.random((11, 2)), *_weights(rng, 15, 11), p=2)
    d = t.distance_block(slice(None))
    opt = math.sqrt(_lp_cost(d, t.a, t.b, 2))
    for _ in range(20):
        assert dual_bound(t, rng.normal(size=15), scale=d.max()) <= opt * (1 + 1e-12)
    _, log = ot.emd(t.a, t.b, (d / d.max()) ** 2, log=True)
    assert dual_bound(t, log["u"], scale=d.max()) == pytest.approx(opt, rel=1e-9)
    assert dual_bound(Transport(t.x, t.y, p="inf"), np.zeros(15), 1.0) is None


@pytest.mark.parametrize("passes", [1, 2])
def test_dual_bound_on_a_held_matrix_equals_the_recomputed_one(passes, monkeypatch):
    from solvopt.transport import result
    monkeypatch.setattr(result, "HELD_BLOCK_ENTRIES", 7)         # several row blocks
    rng = np.random.default_rng(9)
    a, b = _weights(rng, 23, 17)
    a[[3, 8]] = 0.0
    b[[0]] = 0.0
    a, b = a / a.sum(), b / b.sum()
    t = Transport(rng.random((23, 3)), rng.random((17, 3)), a, b, p=1.5)
    d = t.distance_block(slice(None))
    held = ((d / d.max()) ** 1.5)[np.ix_(t.a > 0, t.b > 0)]
    u = rng.normal(size=23)
    assert dual_bound(t, u, d.max(), passes=passes, costs=held) == pytest.approx(
        dual_bound(t, u, d.max(), passes=passes), rel=1e-13)


def test_pair_plan_matches_the_coo_conversion():
    import scipy.sparse as sp

    from solvopt.transport.result import pair_plan
    rng = np.random.default_rng(2)
    flat = rng.choice(30 * 20, 90, replace=False)
    rows, cols = np.divmod(flat, 20)
    mass = rng.random(90)
    plan = pair_plan((30, 20), rows, cols, mass)
    assert plan.format == "csr" and plan.has_sorted_indices
    np.testing.assert_array_equal(plan.toarray(), sp.coo_matrix((mass, (rows, cols)), shape=(30, 20)).toarray())


@pytest.mark.parametrize("p", [1, 2, 3])
def test_pot_method_equals_exact(p):
    pytest.importorskip("ot")
    rng = np.random.default_rng(20 + p)
    t = Transport(rng.random((25, 2)), rng.random((18, 2)), *_weights(rng, 25, 18), p=p)
    r, ref = t.solve("pot"), t.solve("exact")
    _optimal(t, r)
    assert r.objective == pytest.approx(ref.objective, rel=1e-9)
    assert r.versions.get("pot")


def test_pot_iteration_limit_is_reported_honestly():
    pytest.importorskip("ot")
    rng = np.random.default_rng(8)
    t = Transport(rng.random((40, 2)), rng.random((40, 2)), p=2)
    r = t.solve("pot", iteration_limit=3)
    assert r.termination is Termination.ITERATION_LIMIT and r.guarantee is None
    assert r.stats["result_code"] != 1


def test_methods_refuse_the_wrong_p():
    t = Transport(X2 := np.eye(2), X2, p=2)
    with pytest.raises(ModelError, match="bottleneck.*p = inf"):
        t.solve("bottleneck")
    if __import__("importlib").util.find_spec("ot"):
        with pytest.raises(ModelError, match="use method 'bottleneck'"):
            Transport(X2, X2, p="inf").solve("pot")
    with pytest.raises(ModelError, match="engine"):
        t.solve("exact", engine="no-such-engine")
    with pytest.raises(ModelError, match="hopcroft-karp.*n = m and uniform"):
        Transport(X2, X2[:1], p="inf").solve("bottleneck", engine="hopcroft-karp")


def test_interrupted_bottleneck_returns_its_plan_and_a_certified_bound():
    rng = np.random.default_rng(9)
    t = Transport(rng.random((60, 2)), rng.random((45, 2)), p="inf")
    full = t.solve("bottleneck")
    r = t.solve("bottleneck", log=lambda line: "tests" in line and request_stop())   # after the first test
    assert r.termination is Termination.INTERRUPTED and r.solution_status is SolutionStatus.FEASIBLE
    assert r.bound <= full.objective <= r.objective and r.stats["iterations"] == 1
    _marginals_ok(t, r)


def test_northwest_corner_is_a_feasible_plan():
    rng = np.random.default_rng(1)
    t = Transport(rng.random((7, 2)), rng.random((4, 2)), *_weights(rng, 7, 4))
    plan = northwest_corner(t)
    assert plan.nnz <= t.n + t.m - 1
    np.testing.assert_allclose(np.asarray(plan.sum(axis=1)).ravel(), t.a, atol=1e-12)
    np.testing.assert_allclose(np.asarray(plan.sum(axis=0)).ravel(), t.b, atol=1e-12)


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 7), st.integers(1, 7), st.sampled_from([1.0, 1.5, 2.0, 4.0, math.inf]), st.booleans(),
       st.integers(0, 2**32 - 1))
def test_random_small_cases_against_the_lp(n, m, p, weighted, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, size=(n, 2)).astype(float)      # a coarse grid: ties and duplicate points
    y = rng.integers(0, 4, size=(m, 2)).astype(float)
    a, b = _weights(rng, n, m, 0.01) if weighted else (None, None)
    t = Transport(x, y, a, b, p=p)
    r = t.solve("exact")
    _optimal(t, r)
    d = t.distance_block(slice(None))
    if math.isinf(p):
        assert r.objective == _lp_bottleneck(d, t.a, t.b)
    else:
        assert r.stats["cost_p"] == pytest.approx(_lp_cost(d, t.a, t.b, p), rel=1e-7, abs=1e-12)


@pytest.mark.parametrize("method, p", [("exact", 2), ("exact", math.inf), ("bottleneck", math.inf), ("pot", 2)])
def test_full_matrix_methods_refuse_what_cannot_fit(monkeypatch, method, p):
    if method == "pot":
        pytest.importorskip("ot")
    import solvopt.transport.exact as exact
    monkeypatch.setattr(exact, "memory_budget", lambda fraction=0.5: 1000)
    monkeypatch.setattr(exact, "SMALL_BYTES", 0)          # small matrices skip the check
    # the bottleneck method works from a spatial tree on points with a named metric; a callable
    # metric still needs the full matrix
    metric = (lambda X, Y: np.sqrt(((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1))) if method == "bottleneck" \
        else "euclidean"
    t = Transport(np.zeros((10, 2)), np.ones((12, 2)), p=p, metric=metric)
    with pytest.raises(ModelError, match=f"method '{'bottleneck' if math.isinf(p) else method}' holds the full "
                                         r"10 x 12 distance matrix.*use method 'approx'"):
        t.solve(method)


def test_bottleneck_on_points_needs_no_full_matrix(monkeypatch):
    """Point clouds with a named metric go through the spatial tree: a budget far below the full
    matrix still solves them exactly."""
    import solvopt.transport.exact as exact
    rng = np.random.default_rng(4)
    x, y = rng.random((10, 2)), rng.random((10, 2))
    dense = Transport(distance=np.sqrt(((x[:, None] - y[None]) ** 2).sum(-1)), p=math.inf).solve("bottleneck")
    monkeypatch.setattr(exact, "memory_budget", lambda fraction=0.5: 1000)
    monkeypatch.setattr(exact, "SMALL_BYTES", 0)          # small matrices skip the check
    r = Transport(x, y, p=math.inf).solve("bottleneck")
    assert r.termination.value == "optimal"
    assert r.objective == pytest.approx(dense.objective, rel=1e-12)
