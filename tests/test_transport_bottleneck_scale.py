"""The spatial-tree path of method ``bottleneck`` (point inputs, named metrics) against the dense
bottleneck search on the same distances given as a matrix, and against brute force."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist

from solvopt.dsl.transport import Transport

METRICS = ("euclidean", "cityblock", "chebyshev")


def dense_reference(x, y, a, b, metric):
    """W_inf by the dense search on the full matrix (the matrix input keeps the dense path)."""
    return Transport(distance=cdist(x, y, metric), a=a, b=b, p="inf").solve("bottleneck").objective


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 14), m=st.integers(1, 14),
       metric=st.sampled_from(METRICS), grid=st.booleans(), uniform=st.booleans())
def test_tree_path_matches_dense(seed, n, m, metric, grid, uniform):
    rng = np.random.default_rng(seed)
    if grid:      # integer points: many tied distances
        x, y = rng.integers(0, 4, (n, 2)).astype(float), rng.integers(0, 4, (m, 2)).astype(float)
    else:
        x, y = rng.random((n, 3)), rng.random((m, 3))
    if uniform:
        a = b = None
    else:
        a = rng.integers(0, 4, n).astype(float)
        a[0] += 1
        b = rng.random(m)
        b *= a.sum() / b.sum()
    result = Transport(x, y, a=a, b=b, p="inf", metric=metric).solve("bottleneck")
    assert result.stats["path"] == "spatial tree"
    assert result.termination.name == "OPTIMAL"
    assert math.isclose(result.bound, result.objective)
    assert math.isclose(result.objective, dense_reference(x, y, a, b, metric), rel_tol=1e-12, abs_tol=1e-15)


def brute_force(x, y, metric):
    d = cdist(x, y, metric)
    return min(d[np.arange(len(x)), list(perm)].max() for perm in itertools.permutations(range(len(y))))


@pytest.mark.parametrize("metric", METRICS)
def test_tree_path_against_permutations(metric):
    rng = np.random.default_rng(7)
    for n in range(1, 7):
        for _ in range(4):
            x, y = rng.random((n, 2)), rng.random((n, 2))
            result = Transport(x, y, p="inf", metric=metric).solve("bottleneck")
            assert math.isclose(result.objective, brute_force(x, y, metric), rel_tol=1e-12)
            assert result.termination.name == "OPTIMAL"


def test_hopcroft_karp_engine_on_the_tree_path():
    rng = np.random.default_rng(3)
    x, y = rng.random((300, 2)), rng.random((300, 2))
    matched = Transport(x, y, p="inf").solve("bottleneck", engine="hopcroft-karp")
    flowed = Transport(x, y, p="inf").solve("bottleneck")
    assert matched.objective == flowed.objective
    assert matched.termination.name == "OPTIMAL"


def test_stopped_search_keeps_a_plan_and_a_valid_bound():
    rng = np.random.default_rng(5)
    x, y = rng.random((3000, 2)), rng.random((3000, 2))
    exact = Transport(x, y, p="inf").solve("bottleneck").objective
    stopped = Transport(x, y, p="inf").solve("bottleneck", time_limit=0.05)
    assert stopped.objective >= exact * (1 - 1e-12)
    if stopped.bound is not None:
        assert stopped.bound <= exact * (1 + 1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 40), metric=st.sampled_from(METRICS), grid=st.booleans())
def test_warm_started_matching_matches_dense(seed, n, metric, grid):
    """n = m uniform masses: the warm-started Hopcroft-Karp tests (ties from integer points)."""
    rng = np.random.default_rng(seed)
    if grid:
        x, y = rng.integers(0, 5, (n, 2)).astype(float), rng.integers(0, 5, (n, 2)).astype(float)
    else:
        x, y = rng.random((n, 2)), rng.random((n, 2))
    result = Transport(x, y, p="inf", metric=metric).solve("bottleneck")
    assert result.stats["engine"].startswith("warm-started")
    assert result.termination.name == "OPTIMAL"
    assert math.isclose(result.objective, dense_reference(x, y, None, None, metric), rel_tol=1e-12, abs_tol=1e-15)
