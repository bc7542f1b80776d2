"""Projection-pursuit peeling (solvopt.khc.pursuit) and the kplane start it gives.

References: the planted planes and the planted assignment's cost (an upper bound on the optimum,
computed from the clusters' scatter eigenvalues independently of geometry.py), and kplane without
the pursuit start (same seed: the same restarts, so the start can only lower the cost).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from khc_planted import cost_of, planted

from solvopt.core.errors import ModelError
from solvopt.dsl import HyperplaneClustering
from solvopt.khc import pursuit
from solvopt.khc.heuristics import kplane, use_pursuit
from solvopt.khc.pursuit import pursuit_assignment, pursuit_planes


def planted_normals(points: np.ndarray, truth: np.ndarray, k: int) -> np.ndarray:
    normals = []
    for j in range(k):
        members = points[truth == j]
        centred = members - members.mean(axis=0)
        normals.append(np.linalg.eigh(centred.T @ centred)[1][:, 0])
    return np.array(normals)


def test_the_planes_found_are_the_planted_ones():
    pts, truth = planted(4000, 12, 4, 0.01, 11)
    normals, offsets, widths = pursuit_planes(pts, 4, np.random.default_rng(0))
    assert len(normals) == 4 and np.all(widths > 0)
    cosines = np.abs(normals @ planted_normals(pts, truth, 4).T)
    assert sorted(cosines.argmax(axis=1).tolist()) == [0, 1, 2, 3]      # each planted plane once
    assert cosines.max(axis=1).min() > 1 - 1e-4
    labels, found = pursuit_assignment(pts, 4, np.random.default_rng(0))
    assert found == 4 and cost_of(pts, labels, 4) <= 1.01 * cost_of(pts, truth, 4)


def test_k_plane_with_the_pursuit_start_reaches_the_planted_cost_where_restarts_alone_do_not():
    # n = 20, k = 6: seeded restarts stay in a local optimum hundreds of times the planted cost
    pts, truth = planted(4000, 20, 6, 0.01, 1)
    planted_cost = cost_of(pts, truth, 6)
    labels, cost = kplane(pts, 6, restarts=1, seed=0, pursuit=True)
    _, cost_without = kplane(pts, 6, restarts=1, seed=0, pursuit=False)
    assert cost == pytest.approx(cost_of(pts, labels, 6), rel=1e-9)
    assert cost <= 1.01 * planted_cost
    assert cost_without > 2 * planted_cost          # what the start is for


def test_the_tilt_search_is_what_finds_the_planes_near_the_bulk(monkeypatch):
    pts, truth = planted(4000, 20, 6, 0.01, 1)
    normals, _, _ = pursuit_planes(pts, 6, np.random.default_rng(0))
    cosines = np.abs(normals @ planted_normals(pts, truth, 6).T)
    assert len(normals) == 6 and cosines.max(axis=1).min() > 1 - 1e-4
    # without it a window keeps the direction pursuit gave (10-25 degrees off): the points of the
    # other planes inside the window hold the reweighted fit there
    monkeypatch.setattr(pursuit, "tilt_search", lambda points, normal, offset, h: (normal, offset))
    assert len(pursuit_planes(pts, 6, np.random.default_rng(0))[0]) < 6


def test_points_without_planes_give_no_plane():
    pts = np.random.default_rng(2).normal(size=(3000, 8))
    normals, _, _ = pursuit_planes(pts, 3, np.random.default_rng(0))
    assert len(normals) == 0
    labels, cost = kplane(pts, 3, restarts=2, seed=0, pursuit=True)   # the restarts still answer
    assert cost == pytest.approx(cost_of(pts, labels, 3), rel=1e-9)


def test_similarity_moves_scale_the_cost_and_keep_the_planes():
    pts, _ = planted(3000, 8, 3, 0.01, 7)
    base_labels, base = kplane(pts, 3, restarts=1, seed=0, pursuit=True)
    q, _ = np.linalg.qr(np.random.default_rng(3).normal(size=(8, 8)))
    for s in (1e-3, 1e4):
        moved_labels, moved = kplane(s * pts @ q.T + 50.0 * s, 3, restarts=1, seed=0, pursuit=True)
        assert moved == pytest.approx(base * s * s, rel=1e-6)
        pairs = set(zip(base_labels.tolist(), moved_labels.tolist()))
        assert len(pairs) == 3                       # the same clusters, up to their names


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), k=st.integers(2, 4), n=st.integers(5, 8),
       sigma=st.sampled_from([0.0, 0.01, 0.3]))
def test_the_pursuit_start_never_raises_the_cost(seed, k, n, sigma):
    pts, _ = planted(12 * n * k, n, k, sigma, seed % 1000)
    _, with_start = kplane(pts, k, restarts=1, seed=seed, pursuit=True)
    _, without = kplane(pts, k, restarts=1, seed=seed, pursuit=False)
    assert with_start <= without * (1 + 1e-12) + 1e-12


def test_auto_means_five_dimensions_and_ten_n_points_per_plane():
    assert use_pursuit(1000, 5, 2, "auto") and use_pursuit(1000, 5, 2, None)
    assert not use_pursuit(1000, 4, 2, "auto")           # low dimensions: seeded restarts do well
    assert not use_pursuit(99, 5, 2, "auto")             # fewer than 10 n points per plane
    assert use_pursuit(10, 2, 2, True) and not use_pursuit(10 ** 6, 50, 10, False)
    with pytest.raises(ModelError, match="pursuit must be"):
        use_pursuit(1000, 5, 2, "off")                   # a word is the option's to read, not kplane's


def test_the_heuristic_method_takes_the_switch_and_refuses_other_words():
    pts, truth = planted(1500, 6, 3, 0.01, 9)
    model = HyperplaneClustering(pts, 3)
    on = model.solve("heuristic", pursuit="on", restarts=1)
    off = model.solve("heuristic", pursuit="off", restarts=1)
    assert on.objective <= off.objective * (1 + 1e-12)
    with pytest.raises(Exception, match="expected on, off or auto"):
        model.solve("heuristic", pursuit="sometimes")


def test_a_time_limit_cuts_the_pursuit_short():
    pts, _ = planted(20000, 40, 8, 0.01, 1)
    labels, cost = kplane(pts, 8, restarts=5, seed=0, pursuit=True, time_limit=0.5)
    assert labels.shape == (20000,) and cost == pytest.approx(cost_of(pts, labels, 8), rel=1e-9)
