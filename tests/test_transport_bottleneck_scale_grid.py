"""W_inf at scale: the exact ``bottleneck`` method and the grid approximation
(:func:`solvopt.transport.bottleneck_grid.grid_bottleneck`) against an independent brute force
(every distinct distance tested by SciPy's integer max flow) on small clouds."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from helpers import PROMPT
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import maximum_flow
from scipy.spatial.distance import cdist

from solvopt.core.errors import ModelError
from solvopt.core.options import SolveOptions
from solvopt.dsl.transport import Transport
from solvopt.transport.bottleneck_grid import grid_bottleneck

METRICS = ("euclidean", "cityblock", "chebyshev")


def brute_force(x, y, a, b, metric):
    """W_inf for integer masses: the smallest distance t whose pairs d <= t carry every unit
    (a max flow source -> i -> j -> sink per distinct distance, smallest first)."""
    d = cdist(x, y, metric)
    n, m = d.shape
    total = int(sum(a))
    for t in np.unique(d):
        i, j = np.nonzero(d <= t)
        rows = np.concatenate([np.zeros(n, int), 1 + i, 1 + n + np.arange(m)])
        cols = np.concatenate([1 + np.arange(n), 1 + n + j, np.full(m, n + m + 1)])
        caps = np.concatenate([a, np.full(len(i), total), b]).astype(np.int32)
        graph = sp.csr_matrix((caps, (rows, cols)), shape=(n + m + 2, n + m + 2))
        if maximum_flow(graph, 0, n + m + 1).flow_value == total:
            return float(t)
    raise AssertionError("the complete graph carries every unit")


def cloud(seed, n, m, dim, ties, uniform):
    """Points (integer coordinates when ``ties``: many equal distances) and integer masses of equal totals."""
    rng = np.random.default_rng(seed)
    if ties:
        x, y = rng.integers(0, 4, (n, dim)).astype(float), rng.integers(0, 4, (m, dim)).astype(float)
    else:
        x, y = rng.random((n, dim)), rng.random((m, dim))
    if uniform and n == m:
        return x, y, np.ones(n, int), np.ones(m, int)
    a = rng.integers(1, 5, n)
    b = np.ones(m, int)
    for _ in range(int(a.sum()) - m):          # the targets' units spread at random: equal totals
        b[rng.integers(m)] += 1
    if b.sum() > a.sum():                      # more targets than source units: pad the sources
        a[0] += int(b.sum() - a.sum())
    return x, y, a, b


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 9), m=st.integers(1, 9), dim=st.integers(1, 3),
       metric=st.sampled_from(METRICS), ties=st.booleans(), uniform=st.booleans())
def test_exact_bottleneck_matches_brute_force(seed, n, m, dim, metric, ties, uniform):
    x, y, a, b = cloud(seed, n, m if not uniform else n, dim, ties, uniform)
    result = Transport(x, y, a=a.astype(float), b=b.astype(float), p="inf", metric=metric).solve("bottleneck")
    assert result.termination.name == "OPTIMAL"
    assert math.isclose(result.objective, brute_force(x, y, a, b, metric), rel_tol=1e-12, abs_tol=1e-15)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 12), m=st.integers(1, 12), dim=st.integers(1, 3),
       metric=st.sampled_from(METRICS), ties=st.booleans(), uniform=st.booleans(),
       cells=st.sampled_from([None, 0.05, 0.3, 1.0, 3.0]))
def test_grid_bounds_bracket_the_optimum(seed, n, m, dim, metric, ties, uniform, cells):
    """bound <= W_inf <= objective <= bound + 2h (h the cell diameter), for any cell side."""
    x, y, a, b = cloud(seed, n, m if not uniform else n, dim, ties, uniform)
    model = Transport(x, y, a=a.astype(float), b=b.astype(float), p="inf", metric=metric)
    delta = None if cells is None else cells * (4.0 if ties else 1.0)
    result = grid_bottleneck(model, delta=delta)
    exact = brute_force(x, y, a, b, metric)
    slack = 1e-9 * max(1.0, exact)
    assert result.bound <= exact + slack
    assert result.objective >= exact - slack
    assert result.objective <= result.bound + result.stats["additive_error"] + slack
    assert result.objective <= exact + result.stats["additive_error"] + slack
    if result.bound > 0:
        assert math.isclose(result.stats["factor"], max(1.0, result.objective / result.bound), rel_tol=1e-12)


def test_grid_on_larger_clouds_against_the_exact_method():
    rng = np.random.default_rng(4)
    for dim, per_cell in ((2, 1.0), (3, 4.0)):
        x, y = rng.random((3000, dim)), rng.random((3000, dim))
        a = rng.uniform(0.5, 1.5, 3000)
        b = rng.uniform(0.5, 1.5, 3000)
        b *= a.sum() / b.sum()
        for masses in ((None, None), (a, b)):
            model = Transport(x, y, a=masses[0], b=masses[1], p="inf")
            exact = model.solve("bottleneck").objective
            result = grid_bottleneck(model, per_cell=per_cell)
            assert result.bound <= exact * (1 + 1e-12)
            assert exact <= result.objective <= exact + result.stats["additive_error"] * (1 + 1e-12)
            assert result.termination.name in ("FEASIBLE_WITHIN_GAP", "OPTIMAL")


def test_fine_cells_reach_the_optimum():
    """Cells far below the point spacing: the additive error vanishes against W_inf."""
    rng = np.random.default_rng(2)
    x, y = rng.random((200, 2)), rng.random((200, 2))
    model = Transport(x, y, p="inf")
    exact = model.solve("bottleneck").objective
    result = grid_bottleneck(model, delta=1e-4)
    assert result.bound <= exact * (1 + 1e-12) <= result.objective * (1 + 2e-12)
    assert result.objective - result.bound <= result.stats["additive_error"] * (1 + 1e-9) < 0.01 * exact


def test_grid_stops_at_the_time_limit_with_a_valid_bound():
    rng = np.random.default_rng(5)
    x, y = rng.random((20000, 2)), rng.random((20000, 2))
    model = Transport(x, y, p="inf")
    stopped = grid_bottleneck(model, SolveOptions(time_limit=1e-3), per_cell=1.0)
    assert stopped.termination.name == "TIME_LIMIT"
    reference = grid_bottleneck(model, per_cell=1.0)
    assert stopped.objective >= reference.bound * (1 - 1e-12)
    if stopped.bound is not None:
        assert stopped.bound <= reference.objective * (1 + 1e-12)


@pytest.mark.parametrize("slow", ["default_delta", "_slack", "_Cells"])
def test_a_stop_reaches_the_grid_set_up(slow, monkeypatch):
    """The cell side, the slack and the binning run watched: a time limit inside any of them ends
    the solve on time (TIME_LIMIT, a feasible plan), where it was seen only after them before."""
    import time

    import solvopt.transport.bottleneck_grid as bg
    real = getattr(bg, slow)

    def slowed(*args, **kwargs):
        time.sleep(PROMPT + 5)          # far longer than the promptness bound: a stop not seen fails clearly
        return real(*args, **kwargs)
    monkeypatch.setattr(bg, slow, slowed)
    rng = np.random.default_rng(6)
    model = Transport(rng.random((300, 2)), rng.random((300, 2)), p="inf")
    began = time.perf_counter()
    stopped = grid_bottleneck(model, SolveOptions(time_limit=0.2))
    assert time.perf_counter() - began < PROMPT
    assert stopped.termination.name == "TIME_LIMIT"
    plan = stopped.solution["plan"]
    np.testing.assert_allclose(np.asarray(plan.sum(axis=1)).ravel(), model.a, atol=1e-12)


def test_grid_refuses_bad_input():
    rng = np.random.default_rng(0)
    x, y = rng.random((5, 2)), rng.random((5, 2))
    with pytest.raises(ModelError, match="delta"):
        grid_bottleneck(Transport(x, y, p="inf"), delta=0.0)
    with pytest.raises(ModelError, match="per_cell"):
        grid_bottleneck(Transport(x, y, p="inf"), per_cell=-1)
    with pytest.raises(ModelError, match="W_inf"):
        grid_bottleneck(Transport(x, y, p=2))
    with pytest.raises(ModelError, match="point inputs"):
        grid_bottleneck(Transport(distance=cdist(x, y), p="inf"))


def test_grid_with_coincident_points():
    x = np.zeros((6, 2))
    result = grid_bottleneck(Transport(x, x.copy(), p="inf"))
    assert result.objective == 0.0 and result.termination.name == "OPTIMAL"


def test_default_cells_follow_clustered_clouds():
    """Two far-apart blobs: the default cell side shrinks to the blobs' scale (about per_cell
    sources per occupied cell), not the bounding box's."""
    rng = np.random.default_rng(0)
    centres = np.repeat([[0.0, 0.0], [100.0, 100.0]], 500, axis=0)
    x, y = centres + rng.normal(0, 0.01, (1000, 2)), centres + rng.normal(0, 0.01, (1000, 2)) + 0.003
    model = Transport(x, y, p="inf")
    result = grid_bottleneck(model, per_cell=4)
    assert result.stats["source_cells"] >= 1000 / 4 / 2
    exact = model.solve("bottleneck").objective
    assert result.bound <= exact * (1 + 1e-12) <= result.objective * (1 + 1e-12)
    assert result.objective <= result.bound + result.stats["additive_error"] * (1 + 1e-9)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(2, 120), metric=st.sampled_from(METRICS), ties=st.booleans())
def test_matching_rounds_handed_to_the_max_flow(seed, n, metric, ties):
    """n = m equal masses: a radius round leaving sources unmatched hands the rounds to the max
    flow, the matching its first preflow (here at any count): the same W_inf as the dense search."""
    import solvopt.transport.bottleneck as bottleneck
    rng = np.random.default_rng(seed)
    if ties:
        x, y = rng.integers(0, 6, (n, 2)).astype(float), rng.integers(0, 6, (n, 2)).astype(float)
    else:
        x, y = rng.random((n, 2)), rng.random((n, 2))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bottleneck, "SWITCH_UNMATCHED", 0)
        result = Transport(x, y, p="inf", metric=metric).solve("bottleneck")
    assert result.termination.name == "OPTIMAL"
    dense = Transport(distance=cdist(x, y, metric), p="inf").solve("bottleneck").objective
    assert math.isclose(result.objective, dense, rel_tol=1e-12, abs_tol=1e-15)


def test_many_unmatched_sources_switch_to_the_max_flow():
    rng = np.random.default_rng(1)
    x, y = rng.random((3000, 2)), rng.random((3000, 2))
    import solvopt.transport.bottleneck as bottleneck
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bottleneck, "SWITCH_UNMATCHED", 5)
        switched = Transport(x, y, p="inf").solve("bottleneck")
    kept = Transport(x, y, p="inf").solve("bottleneck")
    assert switched.stats["switched_to_flow"] and not kept.stats["switched_to_flow"]
    assert switched.objective == kept.objective and switched.termination.name == "OPTIMAL"
