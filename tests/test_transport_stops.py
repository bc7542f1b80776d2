"""Time limits and Ctrl-C reach every step of a transport run, and a stopped run keeps a plan and a bound.

Each test failed before: ``approx`` stopped before its flow returned no plan and no bound (n =
20000 with ``--time-limit 1`` took 2.8 s), the exact flow, ``linear_sum_assignment``, HiGHS and
``ot.emd`` ran to their end past any limit (exact 4000 x 3000 with a 1 s limit ran 4.9 s).
Stops are made deterministic here by a stop reason that turns on after a number of polls.
"""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import solvopt.transport.approx as approx_module
import solvopt.transport.exact as exact_module
from solvopt.core.registry import Availability, get_solver
from solvopt.core.result import SolutionStatus, Termination
from solvopt.dsl import Transport
from solvopt.transport.flow import FlowStopped, min_cost_flow
from solvopt.transport.graph import Distances, build_two_hop
from solvopt.transport.quick import quick_bound, quick_plan
from solvopt.transport.result import clean_plan, plan_cost
from solvopt.transport.stopping import Stopped, run_abandonable

HAS_POT = get_solver("transport", "pot").available() is Availability.AVAILABLE


def _points(seed, n, m, dim=2):
    rng = np.random.default_rng(seed)
    return rng.uniform(size=(n, dim)), rng.uniform(size=(m, dim))


def _stop_after(module, monkeypatch, polls: int):
    """Make ``module.stop_reason`` answer TIME_LIMIT from its ``polls``-th call on."""
    calls = []

    def reason(deadline=None):
        calls.append(1)
        return Termination.TIME_LIMIT if len(calls) >= polls else None
    monkeypatch.setattr(module, "stop_reason", reason)
    return calls


def _check_stopped(result, model, optimum):
    assert result.termination is Termination.TIME_LIMIT, result.summary()
    assert result.solution_status is SolutionStatus.FEASIBLE
    clean_plan(model, result.solution["plan"])               # a feasible plan: marginals a and b
    assert result.bound is not None and 0 < result.bound <= optimum * (1 + 1e-9) <= result.objective * (1 + 2e-9)


@pytest.mark.parametrize("polls", [1, 2, 4, 8])
def test_approx_stopped_in_the_graph_passes_returns_a_plan_and_a_bound(monkeypatch, polls):
    monkeypatch.setattr("solvopt.transport.graph.PASS_BLOCK_ENTRIES", 64)   # many blocks: many polls
    x, y = _points(0, 80, 70)
    model = Transport(x, y, p=2)
    optimum = model.solve("exact").objective
    _stop_after(approx_module, monkeypatch, polls)
    _check_stopped(model.solve("approx", time_limit=100.0), model, optimum)


def test_graph_passes_poll_their_stop_between_blocks(monkeypatch):
    monkeypatch.setattr("solvopt.transport.graph.PASS_BLOCK_ENTRIES", 100)
    x, y = _points(1, 200, 200)
    distances = Distances(Transport(x, y))
    polls = []
    with pytest.raises(Stopped):
        build_two_hop(distances, 14, np.random.default_rng(0), stop=lambda: polls.append(1) or len(polls) > 5)
    assert len(polls) == 6
    full = build_two_hop(distances, 14, np.random.default_rng(0))
    blocked = build_two_hop(distances, 14, np.random.default_rng(0), stop=lambda: False)
    assert np.array_equal(full.bunch_indptr, blocked.bunch_indptr)
    assert np.array_equal(full.bunch_cols, blocked.bunch_cols)


@pytest.mark.parametrize("assignment", [True, False])
def test_exact_stopped_returns_a_plan_and_a_bound(monkeypatch, assignment):
    x, y = _points(2, 40, 40 if assignment else 30)
    model = Transport(x, y, p=2)
    optimum = model.solve("exact").objective
    monkeypatch.setattr(exact_module, "INLINE_PAIRS", 0)          # the watched steps of a large input
    _stop_after(exact_module, monkeypatch, 2)
    result = model.solve("exact", time_limit=100.0, assignment=assignment)
    _check_stopped(result, model, optimum)


def test_exact_stopped_during_its_flow_keeps_a_bound(monkeypatch):
    x, y = _points(3, 40, 30)
    model = Transport(x, y, p=2)
    optimum = model.solve("exact").objective
    asked = []

    def stopping_flow(*args, stop=None, **kwargs):
        asked.append(1)                                       # Ctrl-C arrives while the engine runs
        raise FlowStopped
    monkeypatch.setattr(exact_module, "min_cost_flow", stopping_flow)
    monkeypatch.setattr(exact_module, "dense_flow", stopping_flow)
    monkeypatch.setattr(exact_module, "stop_reason", lambda deadline=None: Termination.INTERRUPTED if asked else None)
    result = model.solve("exact", assignment=False)
    assert asked and result.termination is Termination.INTERRUPTED
    assert result.bound <= optimum * (1 + 1e-9) <= result.objective * (1 + 2e-9)


@pytest.mark.parametrize("engine", ["simplex", "highs", "ortools"])
def test_flow_engines_stop_when_asked(engine):
    x, y = _points(4, 60, 60)
    n = 60
    r, c = np.repeat(np.arange(n), n), np.tile(np.arange(n), n) + n
    costs = np.sqrt(((x[r] - y[c - n]) ** 2).sum(1))
    supplies = np.concatenate([np.ones(n), -np.ones(n)]) / n
    with pytest.raises(FlowStopped):
        min_cost_flow(r, c, costs, supplies, engine=engine, stop=lambda: True)
    polls = []
    sol = min_cost_flow(r, c, costs, supplies, engine=engine, stop=lambda: polls.append(1) and False)
    ref = min_cost_flow(r, c, costs, supplies, engine="highs")
    assert sol.cost == pytest.approx(ref.cost, rel=1e-7, abs=1e-9)


def test_run_abandonable_returns_at_once_on_a_stop():
    start = time.perf_counter()
    release = threading.Event()
    with pytest.raises(Stopped):
        run_abandonable(lambda: release.wait(30), lambda: time.perf_counter() - start > 0.2)
    assert time.perf_counter() - start < 5.0                  # generous: the wait itself is 30 s
    release.set()
    assert run_abandonable(lambda: 7, lambda: False) == 7
    with pytest.raises(ZeroDivisionError):
        run_abandonable(lambda: 1 / 0, lambda: False)


@pytest.mark.skipif(not HAS_POT, reason="POT not installed")
def test_pot_stopped_returns_a_plan_and_a_bound(monkeypatch):
    x, y = _points(5, 30, 25)
    model = Transport(x, y, p=2)
    optimum = model.solve("exact").objective
    _stop_after(exact_module, monkeypatch, 2)
    _check_stopped(model.solve("pot", time_limit=100.0), model, optimum)


def test_bottleneck_stopped_before_its_sort_returns_a_plan_and_a_bound(monkeypatch):
    # a distance matrix takes the dense search over the sorted distances (points with a named
    # metric take the spatial trees, whose stops tests/test_transport_bottleneck_scale.py checks)
    x, y = _points(6, 40, 40)
    model = Transport(distance=np.sqrt(((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)), p="inf")
    optimum = model.solve("bottleneck").objective
    _stop_after(exact_module, monkeypatch, 1)
    _check_stopped(model.solve("bottleneck", time_limit=100.0), model, optimum)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**6), p=st.sampled_from([1.0, 2.0, 3.0, float("inf")]),
       metric=st.sampled_from(["euclidean", "cityblock", "chebyshev"]), dim=st.integers(1, 4))
def test_quick_plan_is_feasible_and_quick_bound_certified(seed, p, metric, dim):
    rng = np.random.default_rng(seed)
    n, m = rng.integers(2, 15), rng.integers(2, 15)
    x, y = rng.normal(size=(n, dim)), rng.normal(size=(m, dim)) + rng.normal(size=dim)
    a = rng.uniform(0, 1, n) * (rng.uniform(size=n) > 0.2) + 1e-3
    model = Transport(x, y, a=a, p=p, metric=metric)
    exact = model.solve("exact").objective
    plan, _ = clean_plan(model, quick_plan(model))
    assert plan_cost(model, plan)[0] >= exact * (1 - 1e-9)
    assert quick_bound(model) <= exact * (1 + 1e-9)


def test_quick_bound_on_a_cost_matrix_is_the_row_and_column_minima_bound():
    rng = np.random.default_rng(8)
    cost = rng.uniform(size=(9, 7))
    model = Transport(distance=cost, p=2)
    rows = np.sqrt(np.mean(cost.min(axis=1) ** 2))
    cols = np.sqrt(np.mean(cost.min(axis=0) ** 2))
    assert quick_bound(model) == pytest.approx(max(rows, cols))
    assert quick_bound(model) <= model.solve("exact").objective
