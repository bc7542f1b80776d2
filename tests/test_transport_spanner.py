"""The grid-hierarchy graph of ``approx`` (``graph="grid"``): its proven factor, checked independently.

- every source-to-target path costs at least its pair (Lemma B) and the cheapest path of every
  pair at most (F d)^p (Lemma C), by brute-force min-plus products over the graph's arcs;
- ``approx`` on the grid within the factor of the exact optimum (SciPy's HiGHS LP on the dense
  problem), its bound below the optimum, its plan with exact marginals;
- stops honoured, positions shared by sources and targets, where the grid applies.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import transport_lp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist

import solvopt.transport.approx as approx_module
from solvopt.core.errors import ModelError
from solvopt.core.result import SolutionStatus, Termination
from solvopt.dsl import Transport
from solvopt.transport.hierarchy import build_grid, factor
from solvopt.transport.result import clean_plan

SCIPY_METRIC = {"euclidean": "euclidean", "cityblock": "cityblock", "chebyshev": "chebyshev"}


def _cloud(seed, n, m, dim, duplicates):
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=(n, dim))
    y = rng.uniform(size=(m, dim))
    if duplicates:                      # shared positions, and points on one grid line
        k = min(n, m) // 2
        y[:k] = x[:k]
        x[-1] = np.round(x[-1], 1)
    return x, y


def _cheapest_paths(graph, p):
    """(n, m) cheapest path cost from each source to each target, with the arc costs of the graph
    (weights included), by min-plus products: direct arcs, and source -> in -> out -> target."""
    n, m = graph.n, graph.m
    w_dir, w_src, w_mid, w_tgt = graph.effective_lengths(p)
    best = np.full((n, m), np.inf)
    np.minimum.at(best, (graph.dir_src, graph.dir_tgt), w_dir ** p)
    to_in = np.full((n, graph.n_in), np.inf)
    np.minimum.at(to_in, (graph.src, graph.src_hub), w_src ** p)
    mid = np.full((graph.n_in, graph.n_out), np.inf)
    np.minimum.at(mid, (graph.mid_in, graph.mid_out), w_mid ** p)
    from_out = np.full((graph.n_out, m), np.inf)
    np.minimum.at(from_out, (graph.tgt_hub, graph.tgt), w_tgt ** p)
    if graph.n_in and graph.n_out:
        to_out = (to_in[:, :, None] + mid[None, :, :]).min(axis=1)
        best = np.minimum(best, (to_out[:, :, None] + from_out[None, :, :]).min(axis=1))
    return best


def _every_path_cost(graph, p):
    """Cost and (source, target) of every path of the graph (direct arcs and three-arc paths)."""
    w_dir, w_src, w_mid, w_tgt = graph.effective_lengths(p)
    rows, cols, costs = [graph.dir_src], [graph.dir_tgt], [w_dir ** p]
    for i in range(len(graph.src)):
        for j in np.flatnonzero(graph.mid_in == graph.src_hub[i]):
            for k in np.flatnonzero(graph.tgt_hub == graph.mid_out[j]):
                rows.append([graph.src[i]])
                cols.append([graph.tgt[k]])
                costs.append([w_src[i] ** p + w_mid[j] ** p + w_tgt[k] ** p])
    return np.concatenate(rows).astype(int), np.concatenate(cols).astype(int), np.concatenate(costs)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 9), m=st.integers(1, 9), dim=st.integers(1, 3),
       metric=st.sampled_from(sorted(SCIPY_METRIC)), p=st.sampled_from([1.0, 2.0, 3.5]),
       duplicates=st.booleans(), leaf=st.sampled_from([0, 1, 64]))
def test_paths_are_no_cheaper_than_their_pair_and_the_cheapest_within_the_factor(seed, n, m, dim, metric, p,
                                                                                   duplicates, leaf):
    x, y = _cloud(seed, n, m, dim, duplicates)
    model = Transport(x, y, p=p, metric=metric)
    graph = build_grid(model, np.random.default_rng(seed), leaf=leaf)
    d = cdist(x, y, SCIPY_METRIC[metric])
    f = factor(metric, dim)
    assert graph.factor == pytest.approx(4 * {"euclidean": math.sqrt(dim), "cityblock": dim, "chebyshev": 1}[metric])
    # Lemma B: no path is cheaper than its pair's cost
    r, c, cost = _every_path_cost(graph, p)
    assert np.all(cost >= d[r, c] ** p * (1 - 1e-9) - 1e-12)
    # Lemma C: every pair has a path of cost <= (F d)^p (0 for a shared position)
    best = _cheapest_paths(graph, p)
    assert np.all(best <= (f * d) ** p * (1 + 1e-9) + 1e-12), (best / np.maximum(d, 1e-300) ** p).max()


def _exact(model):
    """W_p by SciPy's HiGHS on the dense transport LP (independent of the package's engines)."""
    cost = cdist(model.x, model.y, SCIPY_METRIC[model.metric]) ** model.p
    return transport_lp(cost, model.a, model.b) ** (1 / model.p)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 25), m=st.integers(1, 25), dim=st.integers(1, 3),
       metric=st.sampled_from(sorted(SCIPY_METRIC)), p=st.sampled_from([1.0, 2.0, 3.0]),
       duplicates=st.booleans(), weighted=st.booleans())
def test_approx_on_the_grid_is_within_its_factor_of_the_optimum(seed, n, m, dim, metric, p, duplicates, weighted):
    x, y = _cloud(seed, n, m, dim, duplicates)
    rng = np.random.default_rng(seed + 1)
    a = rng.uniform(0.1, 2.0, size=n) if weighted else None
    b = None
    if weighted:
        b = rng.uniform(0.1, 2.0, size=m)
        b *= a.sum() / b.sum()
    model = Transport(x, y, a=a, b=b, p=p, metric=metric)
    optimum = _exact(model)
    f = factor(metric, dim)
    for certificate in ("factor", "dual"):
        result = model.solve("approx", graph="grid", certificate=certificate, seed=seed)
        assert result.stats["graph"] == "grid"
        plan, error = clean_plan(model, result.solution["plan"])
        assert error <= 1e-9 * model.mass
        assert np.allclose(np.asarray(plan.sum(axis=1)).ravel(), model.a, rtol=0, atol=1e-9 * model.mass)
        assert np.allclose(np.asarray(plan.sum(axis=0)).ravel(), model.b, rtol=0, atol=1e-9 * model.mass)
        tol = 1e-7 * max(optimum, 1e-12) + 1e-12
        # the factor stated: F, or a hair above when the engine rounded the costs (its error stated)
        stated = result.stats["factor"]
        assert f <= stated <= f * (1 + 1e-4)
        assert result.objective <= stated * optimum * (1 + 1e-7) + tol
        assert result.bound <= optimum + tol
        assert result.objective >= optimum - tol


def test_shared_positions_cost_nothing():
    x = np.random.default_rng(3).uniform(size=(50, 2))
    model = Transport(x, x[::-1].copy(), p=2)
    result = model.solve("approx", graph="grid", certificate="factor")
    assert result.objective == 0 and result.solution_status is SolutionStatus.OPTIMAL


def test_auto_takes_multiscale_where_the_grid_applied():
    """graph="auto" now runs the multiscale pricing where it ran the grid (large point clouds,
    d <= 3, finite p); the grid is built only when asked for."""
    big = np.zeros((40000, 2)), np.ones((40000, 2))
    multiscale = approx_module._use_multiscale
    assert multiscale(Transport(*big, p=2), "auto") and not approx_module._use_grid(Transport(*big, p=2), "auto")
    assert multiscale(Transport(*big, p=1, metric="cityblock"), "auto")
    assert not multiscale(Transport(*big, p=math.inf), "auto")
    assert not multiscale(Transport(np.zeros((40000, 4)), np.ones((40000, 4)), p=2), "auto")
    assert not multiscale(Transport(np.zeros((50, 2)), np.ones((60, 2)), p=2), "auto")
    assert not multiscale(Transport(*big, p=2), "two-hop")
    assert approx_module._use_grid_bottleneck(Transport(*big, p=math.inf), "auto")     # W_inf: the grid of cells
    small = Transport(np.zeros((5, 2)), np.ones((5, 2)), p=math.inf)
    assert not approx_module._use_grid_bottleneck(small, "auto")
    assert "additive_error" in small.solve("approx", graph="grid").stats
    with pytest.raises(ModelError, match="graph='grid'"):
        Transport(cost=np.ones((3, 3))).solve("approx", graph="grid")


def test_the_grid_is_near_linear_in_size():
    """Arcs per point stay bounded as n grows 16-fold (uniform points, d = 2): no n^1.5 growth."""
    sizes = []
    for n in (1000, 16000):
        rng = np.random.default_rng(n)
        model = Transport(rng.uniform(size=(n, 2)), rng.uniform(size=(n, 2)), p=2)
        sizes.append(build_grid(model, np.random.default_rng(0)).n_arcs / n)
    assert sizes[1] < 1.5 * sizes[0], sizes


@pytest.mark.parametrize("polls", [1, 2, 3, 5])
def test_approx_on_the_grid_stopped_returns_a_plan_and_a_bound(monkeypatch, polls):
    rng = np.random.default_rng(7)
    model = Transport(rng.uniform(size=(80, 2)), rng.uniform(size=(70, 2)), p=2)
    optimum = _exact(model)
    calls = []

    def reason(deadline=None):
        calls.append(1)
        return Termination.TIME_LIMIT if len(calls) >= polls else None
    monkeypatch.setattr(approx_module, "stop_reason", reason)
    result = model.solve("approx", graph="grid", time_limit=100.0)
    assert result.termination is Termination.TIME_LIMIT, result.summary()
    assert result.solution_status is SolutionStatus.FEASIBLE
    clean_plan(model, result.solution["plan"])
    assert result.bound is not None and 0 < result.bound <= optimum * (1 + 1e-9) <= result.objective * (1 + 2e-9)


def test_grid_build_polls_its_stop_per_level():
    from solvopt.transport.stopping import Stopped
    rng = np.random.default_rng(8)
    model = Transport(rng.uniform(size=(300, 2)), rng.uniform(size=(300, 2)), p=1)
    polls = []
    with pytest.raises(Stopped):
        build_grid(model, np.random.default_rng(0), stop=lambda: polls.append(1) or len(polls) > 4)
    assert len(polls) == 5
    polls.clear()
    build_grid(model, np.random.default_rng(0), stop=lambda: polls.append(1) and False)
    assert len(polls) > 10                      # about three polls per level


@pytest.mark.parametrize("metric", sorted(SCIPY_METRIC))
def test_far_apart_clusters_with_fine_structure(metric):
    """Two clusters 1 apart, each spread over 1e-9 (d = 3): at the fine levels the cells' indices
    span 2^30 per axis and are ranked before keying; both lemmas still hold."""
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.uniform(size=(4, 3)) * 1e-9, 1 + rng.uniform(size=(4, 3)) * 1e-9])
    y = np.concatenate([rng.uniform(size=(3, 3)) * 1e-9, 1 + rng.uniform(size=(5, 3)) * 1e-9])
    model = Transport(x, y, p=2, metric=metric)
    graph = build_grid(model, np.random.default_rng(1), leaf=0)
    assert graph.levels > 30
    d = cdist(x, y, SCIPY_METRIC[metric])
    r, c, cost = _every_path_cost(graph, 2.0)
    assert np.all(cost >= d[r, c] ** 2 * (1 - 1e-9))
    assert np.all(_cheapest_paths(graph, 2.0) <= (graph.factor * d) ** 2 * (1 + 1e-9))
