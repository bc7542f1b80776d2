"""Method ``sparse-exact``: exact W_p by pricing on candidate pairs, checked against HiGHS (scipy linprog)
on the full LP and against method ``exact``; its certificate, stops and refusals."""
import math
from unittest.mock import patch

import numpy as np
import pytest
from helpers import transport_lp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist

import solvopt.transport.merge as merge
import solvopt.transport.sparse_exact as se
from solvopt.core.errors import ModelError
from solvopt.core.result import Termination
from solvopt.dsl import Transport
from solvopt.transport.sparse_exact import price


def lp_value(x, y, a, b, p, metric):
    """W_p by the full transport LP (HiGHS through scipy)."""
    return max(transport_lp(cdist(x, y, metric) ** p, a, b), 0.0) ** (1.0 / p)


def check_optimal(model, reference):
    r = model.solve(method="sparse-exact")
    assert r.termination is Termination.OPTIMAL
    scale = max(reference, 1e-12)
    assert r.objective == pytest.approx(reference, rel=1e-6, abs=1e-9 * scale + 1e-12)
    assert r.bound <= r.objective + 1e-12
    assert r.bound <= reference * (1 + 1e-7) + 1e-12
    return r


@st.composite
def instances(draw):
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    n, m = draw(st.integers(1, 9)), draw(st.integers(1, 9))
    dim = draw(st.integers(1, 3))
    kind = draw(st.sampled_from(["uniform", "grid", "duplicates"]))
    if kind == "uniform":
        x, y = rng.uniform(size=(n, dim)), rng.uniform(size=(m, dim))
    else:              # ties: integer grid points, or few distinct points repeated
        pool = rng.integers(0, 3, size=(4 if kind == "duplicates" else 30, dim)).astype(float)
        x, y = pool[rng.integers(0, len(pool), n)], pool[rng.integers(0, len(pool), m)]
    a, b = rng.uniform(0.1, 2.0, n), rng.uniform(0.1, 2.0, m)
    if draw(st.booleans()) and n > 1:                 # zero masses
        a[rng.integers(0, n)] = 0.0
    if draw(st.booleans()) and m > 1:
        b[rng.integers(0, m)] = 0.0
    b *= a.sum() / b.sum()
    p = draw(st.sampled_from([1.0, 1.5, 2.0, 3.0]))
    metric = draw(st.sampled_from(["euclidean", "cityblock", "chebyshev"]))
    return x, y, a, b, p, metric


@settings(max_examples=80, deadline=None)
@given(instances(), st.integers(1, 3), st.sampled_from([None, 4, 8]), st.sampled_from([64, 1]))
def test_equals_the_full_lp(case, k, coarsest, refined):
    """Also with the multiscale start on tiny inputs (coarsened from ``coarsest`` points on), and
    with its refined pairs refused (``refined`` per point: the north-west start instead)."""
    x, y, a, b, p, metric = case
    model = Transport(x, y, a=a, b=b, p=p, metric=metric)
    with patch.object(se, "COARSEST", coarsest or se.COARSEST), patch.object(se, "REFINED_PER_POINT", refined):
        r = model.solve(method="sparse-exact", neighbours=k)
    assert r.termination is Termination.OPTIMAL
    reference = lp_value(x, y, a, b, p, metric)
    assert r.objective == pytest.approx(reference, rel=1e-6, abs=1e-9)
    assert r.bound <= reference * (1 + 1e-7) + 1e-12


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("dim", [2, 3])
def test_equals_exact_on_uniform_points(p, dim):
    rng = np.random.default_rng(dim * 10 + p)
    x, y = rng.uniform(size=(300, dim)), rng.uniform(size=(250, dim))
    a = rng.uniform(0.5, 1.5, 300)
    model = Transport(x, y, a=a, p=p)
    exact = model.solve(method="exact")
    check_optimal(model, exact.objective)


@pytest.mark.parametrize("p", [1, 2])
def test_pixel_like_ties(p):
    """Colour cubes (many equal points and distances): merged into their distinct points; without
    the merge, the multiscale start's refined pairs are refused (crowded cells) at the limit of 64
    per point and taken at a looser one."""
    rng = np.random.default_rng(7)
    x = rng.integers(0, 6, size=(1500, 3)).astype(float)
    y = rng.integers(0, 6, size=(1500, 3)).astype(float)
    model = Transport(x, y, p=p)
    reference = model.solve(method="exact").objective
    r = check_optimal(model, reference)
    assert r.stats["merged_points"][0] <= 216 and r.solution["plan"].shape == (1500, 1500)
    with patch.object(merge, "merged", lambda model: None):
        check_optimal(model, reference)
        with patch.object(se, "REFINED_PER_POINT", 10**4):
            check_optimal(model, reference)


def test_never_optimal_with_a_negative_reduced_cost():
    """Candidates that hold a feasible but non-optimal plan and one round: a pair of negative
    reduced cost remains, and the status must not be OPTIMAL; the bound stays below the optimum."""
    # two sources and two targets on the line; the crossed pairing is feasible and twice too long
    x = np.array([[0.0], [1.0]])
    y = np.array([[0.1], [1.1]])
    model = Transport(x, y, p=2)
    crossed = np.array([0 * 2 + 1, 1 * 2 + 0])
    plan, bound, stats, stopped = price(model, crossed, max_rounds=1)
    assert stats["rounds"] == 1 and not stopped
    from solvopt.transport.result import transport_result
    r = transport_result(model, plan, guarantee=1.0, bound=bound)
    optimum = 0.1
    assert r.objective > 5 * optimum
    assert r.termination is not Termination.OPTIMAL
    assert bound <= optimum * (1 + 1e-9)
    # with more rounds the pricing adds the straight pairs and certifies
    plan, bound, _, _ = price(model, crossed)
    r = transport_result(model, plan, guarantee=1.0, bound=bound)
    assert r.termination is Termination.OPTIMAL and r.objective == pytest.approx(optimum)


def test_a_stop_returns_a_plan_and_a_valid_bound():
    rng = np.random.default_rng(3)
    x, y = rng.uniform(size=(400, 2)), rng.uniform(size=(400, 2))
    model = Transport(x, y, p=2)
    optimum = model.solve(method="exact").objective
    calls = []

    def stop():                      # true from the second look on: inside or right after the first round
        calls.append(1)
        return len(calls) > 1
    plan, bound, stats, stopped = price(model, np.arange(0, 400 * 400, 401), stop=stop)
    assert stopped
    if plan is not None:
        assert plan.sum() == pytest.approx(model.mass)
    assert bound is None or bound <= optimum * (1 + 1e-9)
    r = model.solve(method="sparse-exact", time_limit=1e-6)
    assert r.termination is Termination.TIME_LIMIT
    assert r.objective >= optimum * (1 - 1e-9)
    assert r.bound is None or r.bound <= optimum * (1 + 1e-9)


def test_refuses_what_it_cannot_certify():
    rng = np.random.default_rng(0)
    x, y = rng.uniform(size=(5, 2)), rng.uniform(size=(5, 2))
    with pytest.raises(ModelError, match="sparse-exact"):
        Transport(distance=cdist(x, y), p=2).solve(method="sparse-exact")
    with pytest.raises(ModelError, match="bottleneck"):
        Transport(x, y, p=math.inf).solve(method="sparse-exact")
    with pytest.raises(ModelError, match="neighbours"):
        Transport(x, y, p=2).solve(method="sparse-exact", neighbours=0)


@settings(max_examples=40, deadline=None)
@given(instances(), st.integers(0, 2**31 - 1), st.sampled_from([0.0, 1e-3, 1.0, 1e6]))
def test_the_certified_bound_never_exceeds_the_lp(case, seed, offset):
    """Any potentials (near-optimal from a restricted flow, noisy, with a large common offset)
    give a bound at most the full LP's optimum: the rounding margin covers the float error."""
    from solvopt.transport.dual import certified_bound
    x, y, a, b, p, metric = case
    model = Transport(x, y, a=a, b=b, p=p, metric=metric)
    reference = lp_value(x, y, a, b, p, metric)
    unit = model.distance_scale() or 1.0
    held: list = []
    price(model, np.arange(model.n * model.m), potentials=held)
    rng = np.random.default_rng(seed)
    for u in (held[0], held[0] + offset, held[0] * (1 + 1e-9 * rng.standard_normal(model.n)) + offset):
        bound = certified_bound(model, u, unit)
        assert bound is None or bound <= reference * (1 + 1e-12) + 1e-300
