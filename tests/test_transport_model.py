"""The Transport model (validation, distances) and the one transport Result builder."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from solvopt.core.errors import ModelError, SolverError
from solvopt.core.result import SolutionStatus, Termination
from solvopt.dsl import Transport
from solvopt.transport.result import MARGINAL_TOL, plan_cost, transport_result

RNG = np.random.default_rng(7)
X, Y = RNG.random((5, 2)), RNG.random((4, 2))


# --- construction ------------------------------------------------------------------------------
def test_defaults_uniform_weights_and_attributes():
    t = Transport(X, Y)
    assert (t.n, t.m, t.dimension, t.p, t.metric, t.mass) == (5, 4, 2, 2.0, "euclidean", 1.0)
    np.testing.assert_array_equal(t.a, np.full(5, 0.2))
    np.testing.assert_array_equal(t.b, np.full(4, 0.25))
    assert t.cost is None and "p=2" in repr(t)


def test_one_sided_weights_carry_their_total_to_the_other_side():
    t = Transport(X, Y, a=np.arange(1.0, 6.0))
    assert t.mass == 15.0
    np.testing.assert_allclose(t.b, np.full(4, 15.0 / 4))
    t = Transport(X, Y, b=[1, 1, 1, 5])
    np.testing.assert_allclose(t.a, np.full(5, 8.0 / 5))


def test_masses_within_the_tolerance_are_balanced_exactly():
    b = np.full(4, 0.25) * (1 + 1e-12)
    t = Transport(X, Y, a=np.full(5, 0.2), b=b)
    assert t.b.sum() == pytest.approx(t.a.sum(), rel=1e-15)


@pytest.mark.parametrize("p, expected", [(1, 1.0), (1.5, 1.5), ("inf", math.inf), ("INF", math.inf),
                                         (float("inf"), math.inf), ("3", 3.0), (np.float32(2), 2.0)])
def test_p_values(p, expected):
    assert Transport(X, Y, p=p).p == expected


def test_line_points_and_cost_matrix_inputs():
    t = Transport([0.0, 1.0, 3.0], [2.0, 5.0])
    assert t.x.shape == (3, 1) and t.dimension == 1
    np.testing.assert_array_equal(t.distance_block(slice(None)), [[2, 5], [1, 4], [1, 2]])
    c = Transport(distance=[[0.0, 1.0], [2.0, 0.5], [1.0, 1.0]], p="inf")
    assert (c.n, c.m, c.x, c.metric, c.dimension) == (3, 2, None, None, None)
    np.testing.assert_array_equal(c.pair_distances([1, 2], [1, 0]), [0.5, 1.0])
    np.testing.assert_array_equal(c.distance_block([2, 0], [1]), [[1.0], [1.0]])


def _bad_metric_shape(xs, ys):
    return np.zeros((len(xs), len(ys) + 1))


def _negative_metric(xs, ys):
    return -np.ones((len(xs), len(ys)))


def _raising_metric(xs, ys):
    raise ValueError("boom")


@pytest.mark.parametrize("kwargs, words", [
    (dict(x=X, y=Y, a=[0.5, 0.5, -0.2, 0.1, 0.1]), "'a' has a negative weight at index 2"),
    (dict(x=X, y=Y, b=[0.5, np.nan, 0.25, 0.25]), "'b' has a non-finite entry at (1,)"),
    (dict(x=X, y=Y, a=np.zeros(5)), "'a' must have a positive total mass"),
    (dict(x=X, y=Y, a=np.ones(4)), "'a' has 4 entries but 'x' has 5 points"),
    (dict(x=X, y=Y, a=np.ones((5, 1))), "'a' must be 1-D"),
    (dict(x=X, y=Y, a=np.ones(5), b=np.ones(4)), "equal total mass"),
    (dict(x=np.zeros((0, 2)), y=Y), "'x' is empty"),
    (dict(x=X, y=np.zeros((0, 2))), "'y' is empty"),
    (dict(x=np.zeros((3, 0)), y=np.zeros((2, 0))), "dimension 0"),
    (dict(x=X, y=RNG.random((4, 3))), "same dimension, got 2 and 3"),
    (dict(x=np.zeros((2, 2, 2)), y=Y), "'x' must be 2-D"),
    (dict(x=[[0.0, np.inf]], y=Y), "'x' has a non-finite entry at (0, 1)"),
    (dict(x=X + 1j, y=Y), "'x' must be real numbers"),
    (dict(x=[["a", "b"]], y=Y), "'x' must be real numbers"),
    (dict(x=[[1.0], [1.0, 2.0]], y=Y), "'x' must be a numeric array"),
    (dict(x=X, y=None), "give the points x and y"),
    (dict(x=X, y=Y, distance=np.ones((5, 4))), "not both"),
    (dict(distance=np.ones((5, 4)), metric="cityblock"), "metric applies to point inputs"),
    (dict(distance=np.ones(4)), "'distance' must be a 2-D"),
    (dict(distance=np.ones((0, 3))), "'distance' is empty"),
    (dict(distance=[[1.0, -1.0]]), "'distance' has a negative distance at (0, 1)"),
    (dict(distance=np.ones((2, 3)), a=np.ones(3) / 3), "'a' has 3 entries but 'distance rows' has 2 points"),
    (dict(x=X, y=Y, p=0.5), "p must be in [1, inf]"),
    (dict(x=X, y=Y, p=float("nan")), "p must be in [1, inf]"),
    (dict(x=X, y=Y, p=True), "p must be a number"),
    (dict(x=X, y=Y, p="two"), "p must be a number"),
    (dict(x=X, y=Y, p=None), "p must be a number"),
    (dict(x=X, y=Y, metric="sqeuclidean"), "metric must be one of euclidean, cityblock, chebyshev"),
    (dict(x=X, y=Y, metric=3), "metric must be one of"),
    (dict(x=X, y=Y, metric=_bad_metric_shape), "must return a (1, 4) array"),
    (dict(x=X, y=Y, metric=_negative_metric), "negative or non-finite distance"),
    (dict(x=X, y=Y, metric=_raising_metric), "metric _raising_metric failed on a (1, 4) block: boom"),
])
def test_bad_models_are_one_line_model_errors(kwargs, words):
    with pytest.raises(ModelError) as info:
        Transport(**kwargs)
    assert words in str(info.value) and "\n" not in str(info.value)


# --- distances ---------------------------------------------------------------------------------
def _brute(x, y, metric):
    diff = np.abs(x[:, None, :] - y[None, :, :])
    return {"euclidean": np.sqrt((diff ** 2).sum(-1)), "cityblock": diff.sum(-1), "chebyshev": diff.max(-1)}[metric]


@pytest.mark.parametrize("metric", ["euclidean", "cityblock", "chebyshev", "Cityblock"])
def test_distance_block_and_pairs_match_the_definition(metric):
    x, y = RNG.normal(size=(7, 3)), RNG.normal(size=(6, 3))
    t = Transport(x, y, metric=metric)
    full = _brute(x, y, metric.lower())
    np.testing.assert_allclose(t.distance_block(slice(None)), full, rtol=1e-14)
    np.testing.assert_allclose(t.distance_block([4, 1], [5, 0, 2]), full[np.ix_([4, 1], [5, 0, 2])], rtol=1e-14)
    np.testing.assert_allclose(t.distance_block(slice(2, 4)), full[2:4], rtol=1e-14)
    i, j = RNG.integers(0, 7, 50), RNG.integers(0, 6, 50)
    np.testing.assert_allclose(t.pair_distances(i, j), full[i, j], rtol=1e-14)


def test_callable_metric_blocks_and_pairs():
    calls = []

    def l1(xs, ys):
        calls.append((len(xs), len(ys)))
        return np.abs(xs[:, None, :] - ys[None, :, :]).sum(-1)

    x, y = RNG.random((40, 2)), RNG.random((30, 2))
    t = Transport(x, y, metric=l1)
    i, j = RNG.integers(0, 40, 3000), RNG.integers(0, 30, 3000)
    np.testing.assert_allclose(t.pair_distances(i, j), _brute(x, y, "cityblock")[i, j], rtol=1e-14)
    assert max(r * c for r, c in calls) <= 40 * 30     # blocks of the rows and columns asked for
    with pytest.raises(ModelError, match="one shape"):
        t.pair_distances([0, 1], [0])


def test_duplicate_points_have_distance_exactly_zero():
    x = RNG.random((6, 3)) * 1e6
    t = Transport(x, x[::-1])
    assert np.all(np.diag(t.distance_block(slice(None))[:, ::-1]) == 0.0)


# --- the Result builder ------------------------------------------------------------------------
def _identity_model(p=2):
    return Transport(X[:4], Y, p=p)


def test_builder_objective_cost_bound_and_status():
    t = _identity_model(p=2)
    plan = sp.identity(4, format="csr") / 4
    d = t.pair_distances(np.arange(4), np.arange(4))
    r = transport_result(t, plan, guarantee=3.0)
    assert r.objective == pytest.approx(math.sqrt(np.mean(d ** 2)), rel=1e-14)
    assert r.stats["cost_p"] == pytest.approx(np.mean(d ** 2), rel=1e-14)
    assert r.bound == pytest.approx(r.objective / 3) and r.stats["factor"] == 3.0
    assert r.termination is Termination.FEASIBLE_WITHIN_GAP and r.solution_status is SolutionStatus.FEASIBLE
    assert "factor 3" in r.guarantee and r.stats["support"] == 4
    opt = transport_result(t, plan, guarantee=1.0, proven_optimal=True)
    assert opt.termination is Termination.OPTIMAL and opt.bound == opt.objective and "optimal" in opt.guarantee
    # a factor of 1 without a certificate is not stated as optimal
    loose = transport_result(t, plan, guarantee=1.0, bound=0.5 * r.objective)
    assert loose.termination is Termination.FEASIBLE_WITHIN_GAP and loose.guarantee is None
    assert loose.stats["factor"] is None


def test_builder_p_inf_is_the_largest_distance_carrying_mass():
    t = _identity_model(p="inf")
    plan = sp.csr_matrix(np.diag([0.25, 0.25, 0.25, 0.25]))
    d = t.pair_distances(np.arange(4), np.arange(4))
    r = transport_result(t, plan, guarantee=1.0, proven_optimal=True)
    assert r.objective == d.max() == r.stats["cost_p"]
    assert "W_inf" in r.guarantee


def test_builder_large_p_does_not_overflow():
    t = Transport(np.array([[0.0], [1e40]]), np.array([[2e40], [1e40 + 1e25]]), p=50)
    r = transport_result(t, sp.csr_matrix(np.eye(2) / 2), guarantee=3.0)
    expected = 2e40 * 0.5 ** (1 / 50)          # the second pair's (1e25 / 2e40)^50 vanishes
    assert r.objective == pytest.approx(expected, rel=1e-12) and math.isinf(r.stats["cost_p"])
    assert r.to_json()   # inf written as a string


def test_builder_repairs_float_drift_and_refuses_more():
    t = _identity_model()
    drift = sp.lil_matrix(np.eye(4) / 4)
    drift[0, 0] += 1e-13
    drift[1, 2] = -1e-18
    r = transport_result(t, drift.tocsr(), guarantee=3.0)
    plan = r.solution["plan"]
    assert r.stats["marginal_error"] <= 1e-15 and plan.nnz == 4 and plan.data.min() > 0
    np.testing.assert_allclose(np.asarray(plan.sum(axis=1)).ravel(), t.a, atol=1e-15)
    off = sp.csr_matrix(np.eye(4) / 4 * (1 + 10 * MARGINAL_TOL))
    with pytest.raises(SolverError, match="marginals are off"):
        transport_result(t, off, guarantee=3.0)
    with pytest.raises(SolverError, match="negative entry"):
        transport_result(t, sp.csr_matrix(np.eye(4) / 4 - 0.01 * (1 - np.eye(4))), guarantee=3.0)
    with pytest.raises(SolverError, match="shape"):
        transport_result(t, sp.csr_matrix(np.eye(3) / 3), guarantee=3.0)
    with pytest.raises(SolverError, match="exceeds"):
        transport_result(t, sp.csr_matrix(np.eye(4) / 4), guarantee=1.0, bound=1e3)


def test_builder_without_a_plan_and_when_stopped():
    t = _identity_model()
    none = transport_result(t, None, guarantee=None, stopped=Termination.INTERRUPTED)
    assert none.termination is Termination.INTERRUPTED and none.solution_status is SolutionStatus.NONE
    assert none.objective is None and "plan" not in none.solution
    stopped = transport_result(t, sp.csr_matrix(np.eye(4) / 4), guarantee=None, bound=0.1,
                               stopped=Termination.TIME_LIMIT)
    assert stopped.termination is Termination.TIME_LIMIT and stopped.solution_status is SolutionStatus.FEASIBLE
    assert stopped.guarantee is None and stopped.bound == 0.1


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.floats(1.0, 12.0), st.integers(0, 2**32 - 1))
def test_plan_cost_of_any_coupling_matches_its_definition(n, m, p, seed):
    rng = np.random.default_rng(seed)
    t = Transport(rng.random((n, 2)), rng.random((m, 2)), a=rng.random(n) + 0.01, p=p)
    plan = np.outer(t.a, t.b) / t.mass
    d = t.distance_block(slice(None))
    w, cost = plan_cost(t, sp.csr_matrix(plan))
    assert cost == pytest.approx(float((plan * d ** p).sum()), rel=1e-10, abs=1e-300)
    assert w == pytest.approx(float((plan * d ** p).sum()) ** (1 / p), rel=1e-10)
