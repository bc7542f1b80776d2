"""The warm-started max flow of the p = inf searches with real masses: feasibility of every prefix of
a length-sorted pair list against HiGHS (scipy linprog), the Hall violator of every infeasible
answer, warm starts in any order, and method ``bottleneck`` with general masses against the dense
search and under scaling."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog
from scipy.spatial.distance import cdist

from solvopt.core.result import Termination
from solvopt.dsl import Transport
from solvopt.transport.maxflow import MASS_TOLERANCE, WarmFlow, hall_deficit


def lp_feasible(r, c, a, b) -> bool:
    """Whether the pairs (r, c) carry a plan with marginals a, b (HiGHS through scipy)."""
    n, m, k = len(a), len(b), len(r)
    if k == 0:
        return False
    eq = np.zeros((n + m, k))
    eq[r, np.arange(k)] = 1
    eq[n + c, np.arange(k)] = 1
    res = linprog(np.zeros(k), A_eq=eq, b_eq=np.concatenate([a, b]), bounds=(0, None), method="highs")
    return res.status == 0


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 9), st.integers(1, 9), st.booleans(), st.booleans())
def test_every_prefix_against_the_lp(seed, n, m, units, shuffled):
    rng = np.random.default_rng(seed)
    a = rng.integers(1, 4, n).astype(float) if units else rng.random(n) + 0.05
    b = rng.random(m) + 0.05
    b *= a.sum() / b.sum()
    d = cdist(rng.random((n, 2)), rng.random((m, 2)))
    order = np.argsort(d.ravel(), kind="stable")
    r, c = np.divmod(order, m)
    flows = WarmFlow(r, c, a, b)
    sizes = list(range(n * m + 1))
    if shuffled:                    # tests in any order (a search only ever goes up from its base)
        rng.shuffle(sizes)
    for k in sizes:
        flow = flows.test(k)
        assert (flow is not None) == lp_feasible(r[:k], c[:k], a, b / b.sum() * a.sum()), k
        if flow is not None:
            assert np.all(flow[k:] == 0) and flow.min() >= 0
            plan = np.zeros((n, m))
            np.add.at(plan, (r, c), flow)
            tol = 10 * MASS_TOLERANCE
            np.testing.assert_allclose(plan.sum(axis=1), a / a.sum(), atol=tol)
            np.testing.assert_allclose(plan.sum(axis=0), b / b.sum(), atol=tol)


def test_the_hall_deficit_is_exactly_rounded():
    a = np.array([1.0, 1e-17, 1e-17])
    b = np.array([1.0])
    assert hall_deficit(a, b, np.ones(3, bool), np.ones(1, bool)) == 2e-17


@pytest.mark.parametrize("factor", [1e-12, 1.0, 1e12])
def test_general_masses_match_the_dense_search(factor):
    rng = np.random.default_rng(4)
    x, y = rng.random((150, 2)), rng.random((120, 2))
    a, b = rng.uniform(0.5, 1.5, 150), rng.uniform(0.5, 1.5, 120)
    b *= a.sum() / b.sum()
    tree = Transport(x * factor, y * factor, a=a, b=b, p="inf").solve("bottleneck")
    dense = Transport(distance=cdist(x, y) * factor, a=a, b=b, p="inf").solve("bottleneck", engine="highs")
    assert tree.stats["engine"] == "warm-started max flow (numba)"
    assert tree.termination is dense.termination is Termination.OPTIMAL
    assert math.isclose(tree.objective, dense.objective, rel_tol=1e-12)
    assert tree.bound == tree.objective


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_candidate_graph_path_matches_the_dense_search(seed, monkeypatch):
    """The k-nearest candidate graphs (the path of a zero floor), each warm from the last one's
    preflow, against the dense search."""
    from solvopt.transport import bottleneck
    monkeypatch.setattr(bottleneck, "RADIUS_FLOWS", False)
    rng = np.random.default_rng(seed)
    x, y = rng.random((400, 2)), rng.random((300, 2))
    a, b = rng.uniform(0.5, 1.5, 400), rng.uniform(0.5, 1.5, 300)
    b *= a.sum() / b.sum()
    tree = Transport(x, y, a=a, b=b, p="inf").solve("bottleneck")
    dense = Transport(distance=cdist(x, y), a=a, b=b, p="inf").solve("bottleneck", engine="highs")
    assert tree.stats["candidate_k"] >= 16 and tree.stats["radius_rounds"] == 0     # at least one carry
    assert tree.termination is dense.termination is Termination.OPTIMAL
    assert math.isclose(tree.objective, dense.objective, rel_tol=1e-12)
    assert tree.bound == tree.objective


def test_radius_rounds_with_general_masses_prove_each_round():
    rng = np.random.default_rng(8)
    x, y = rng.random((500, 2)), rng.random((500, 2))
    a, b = rng.uniform(0.5, 1.5, 500), rng.uniform(0.5, 1.5, 500)
    b *= a.sum() / b.sum()
    tree = Transport(x, y, a=a, b=b, p="inf").solve("bottleneck")
    dense = Transport(distance=cdist(x, y), a=a, b=b, p="inf").solve("bottleneck", engine="highs")
    assert tree.stats["radius_rounds"] >= 2
    assert tree.termination is Termination.OPTIMAL and tree.objective == dense.objective == tree.bound


def test_seed_refuses_a_preflow_on_missing_pairs():
    a, b = np.array([1.0, 1.0]), np.array([1.0, 1.0])
    small = WarmFlow(np.array([0, 1]), np.array([0, 0]), a, b)        # both rows to column 0: infeasible
    assert small.test(2) is None
    carried = small.carried()
    other = WarmFlow(np.array([0, 1]), np.array([1, 1]), a, b)        # neither pair of the first list
    assert not other.seed(carried, 0) and other.base[4] == 0
    both = WarmFlow(np.array([0, 1, 0, 1]), np.array([0, 0, 1, 1]), a, b)
    assert both.seed(carried, 2) and both.test(4) is not None


def test_dense_search_with_general_masses_runs_the_warm_flow():
    """A cost matrix with real masses: the dense search's tests by the warm-started max flow (the
    flow LP's tolerance left marginals off by 4e-5 at n = 1200), against the spatial-tree path."""
    rng = np.random.default_rng(11)
    x, y = rng.random((260, 2)), rng.random((240, 2))
    a, b = rng.uniform(0.5, 1.5, 260), rng.uniform(0.5, 1.5, 240)
    b *= a.sum() / b.sum()
    dense = Transport(distance=cdist(x, y), a=a, b=b, p="inf").solve("bottleneck")
    tree = Transport(x, y, a=a, b=b, p="inf").solve()
    assert tree.stats["auto_method"] == "bottleneck" and tree.stats["path"] == "spatial tree"
    assert dense.termination is tree.termination is Termination.OPTIMAL
    assert dense.objective == tree.objective and dense.stats["marginal_error"] <= 1e-12 * a.sum()
