"""k-HC2 heuristic at scale: similarity equivariance, the subsampled path for large m, honest bounds.

References: the planted assignment's cost (an upper bound on the optimum), the cost recomputed
independently from the clusters' scatter eigenvalues.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from khc_planted import cost_of, planted

from solvopt.core.result import Termination
from solvopt.dsl import HyperplaneClustering
from solvopt.khc.heuristics import SUBSAMPLE_SIZE, kplane, local_search


@pytest.mark.parametrize("s", [2.0 ** 20, 2.0 ** -20])
def test_scaling_the_points_scales_the_cost_and_keeps_the_assignment(s):
    pts, _ = planted(300, 3, 3, 0.05, 1)
    base = HyperplaneClustering(pts, 3).solve("heuristic", restarts=3, seed=2)
    scaled = HyperplaneClustering(pts * s, 3).solve("heuristic", restarts=3, seed=2)
    assert np.array_equal(scaled.solution["assignment"], base.solution["assignment"])
    assert scaled.objective == pytest.approx(base.objective * s * s, rel=1e-12)
    assert scaled.bound == 0.0 and base.bound == 0.0


def test_translating_and_rotating_the_points_keeps_the_cost():
    pts, truth = planted(400, 3, 3, 0.02, 4)
    base = HyperplaneClustering(pts, 3).solve("heuristic", restarts=4, seed=0)
    q, _ = np.linalg.qr(np.random.default_rng(1).normal(size=(3, 3)))
    moved = HyperplaneClustering(pts @ q.T + np.array([1e3, -7.0, 30.0]), 3).solve("heuristic", restarts=4, seed=0)
    assert moved.objective == pytest.approx(base.objective, rel=1e-6)
    assert base.objective <= cost_of(pts, truth, 3) * (1 + 1e-9)


def test_large_m_runs_the_restarts_on_a_subsample_and_matches_the_planted_cost():
    m = 2 * SUBSAMPLE_SIZE + 500   # above the subsampling threshold
    pts, truth = planted(m, 3, 3, 0.01, 8)
    labels, cost = kplane(pts, 3, restarts=4, seed=3)
    assert labels.shape == (m,) and set(np.unique(labels)) == {0, 1, 2}
    assert cost == pytest.approx(cost_of(pts, labels, 3), rel=1e-9)
    assert cost <= 1.01 * cost_of(pts, truth, 3)


def test_the_heuristic_proves_nothing_on_a_positive_cost():
    pts, _ = planted(500, 2, 2, 0.05, 5)
    r = HyperplaneClustering(pts, 2).solve("heuristic", restarts=2)
    assert r.bound == 0.0 and r.objective > 0
    assert r.termination is Termination.ITERATION_LIMIT


def test_a_time_limited_heuristic_returns_a_valid_assignment():
    pts, _ = planted(3000, 4, 4, 0.05, 6)
    labels, cost = kplane(pts, 4, restarts=50, seed=0, time_limit=0.05)
    assert labels.shape == (3000,) and labels.min() >= 0 and labels.max() < 4
    assert cost == pytest.approx(cost_of(pts, labels, 4), rel=1e-9)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), m=st.integers(8, 40), n=st.integers(2, 4), k=st.integers(2, 4))
def test_local_search_never_raises_the_cost(seed, m, n, k):
    rng = np.random.default_rng(seed)
    pts = rng.normal(size=(m, n))
    start = rng.integers(0, k, size=m)
    improved = local_search(pts, start, k)
    assert cost_of(pts, improved, k) <= cost_of(pts, start, k) * (1 + 1e-9) + 1e-12
