"""bnb on several threads (solvopt.khc.parallel): the same optimum, valid bounds when stopped.

References: the optimum by enumeration (tests/khc_reference.py, m <= 8; the brute-force method's
Numba enumeration up to m = 12) and the serial search. Node counts of a threaded run vary, so
only values are compared; the serial search (threads=1) is the one before the threads existed.
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from helpers import PROMPT
from hypothesis import given, settings
from hypothesis import strategies as st
from khc_reference import brute_force

from solvopt.cli import main
from solvopt.core.interrupt import clear_stop, request_stop
from solvopt.core.result import Termination
from solvopt.dsl import HyperplaneClustering
from solvopt.khc import parallel
from solvopt.khc.bnb import branching_order, solve_bnb
from solvopt.khc.bnb_kernel import DollSearch
from solvopt.khc.brute_force import solve_brute_force
from solvopt.khc.geometry import assignment_cost
from solvopt.khc.parallel import ParallelSearch, default_threads

# the optimum of instance(3, 90, 3) with k = 3, proven by solve_bnb(threads=2, suffix_bounds=False)
# in 93 s (169 million nodes; the true optimum is within 1e-6 relative of it); too slow to recompute
# in a test. (instance(3, 60, 3), this file's instance before, is proven in 1.3 s on two threads now:
# it raced the 2 s limit and the 1 s stop of the tests below.)
OPTIMUM_90_3_3 = 45.4105655932466


def close(a: float, b: float, rel: float = 1e-6) -> bool:
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


def below(bound: float, value: float) -> bool:
    return bound <= value * (1 + 1e-9) + 1e-12


def instance(seed: int, m: int, n: int, flat: bool = False) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 10.0, size=(m, n))
    if flat:  # half the points near a hyperplane: ties and deep pruning
        X[: m // 2, -1] = 0.1 * rng.normal(size=m // 2)
    return X


def reference(X: np.ndarray, k: int) -> float:
    if len(X) <= 8:
        return brute_force(X, k)
    return _enumerated(X.tobytes(), X.shape, k)


@functools.cache
def _enumerated(data: bytes, shape: tuple, k: int) -> float:
    """The brute-force method's optimum (Numba enumeration), once per instance."""
    _, cost, complete = solve_brute_force(np.frombuffer(data).reshape(shape), k)
    assert complete
    return cost


# --- the whole search ------------------------------------------------------------------------------
@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10**6), st.integers(5, 8), st.sampled_from([(2, 2), (2, 3), (3, 2), (1, 3)]),
       st.sampled_from([2, 3]), st.sampled_from([{}, {"order": "dynamic"}, {"charge_bound": True},
                                                 {"suffix_bounds": True}]))
def test_threads_find_the_optimum_of_one_thread_and_of_brute_force(seed, m, nk, threads, options):
    n, k = nk
    X = instance(seed, m, n, flat=seed % 2 == 1)
    best = reference(X, k)
    one = solve_bnb(X, k, restarts=0, threads=1, **options)
    many = solve_bnb(X, k, restarts=0, threads=threads, **options)
    assert one.complete and many.complete
    assert many.threads == (threads if m > k * n else 1)  # m <= k n: cost 0 without a search
    assert close(many.objective, best) and close(many.objective, one.objective)
    assert below(many.bound, best)


@pytest.mark.parametrize("seed,n,k,dynamic", [(0, 2, 3, False), (1, 2, 3, True), (2, 3, 2, True)])
def test_many_small_windows_share_the_work_and_bracket_the_optimum(monkeypatch, seed, n, k, dynamic):
    """Windows of 30 nodes and a first queue of one subtree per thread: paused subtrees, work
    handed over between them, a bound after every window; the end is the brute-force optimum."""
    monkeypatch.setattr(parallel, "FRONTIER_PER_THREAD", 1)
    handed = []
    split_open = DollSearch.split_open

    def counting(self):
        out = split_open(self)
        handed.extend(out)
        return out

    monkeypatch.setattr(DollSearch, "split_open", counting)
    X = instance(seed, 12, n)
    best = reference(X, k)
    perm = branching_order(X, k, "farthest")
    start = np.minimum(np.arange(12) // n, k - 1)  # a poor first incumbent: the search has work to do
    search = ParallelSearch(X[perm], np.zeros(13), k, assignment_cost(X[perm], start, k), start,
                            dynamic=dynamic, threads=2)
    windows = 0
    while not search.run(30, 1e-9, 0.0):
        windows += 1
        assert below(search.bound(), best) and search.incumbent >= best * (1 - 1e-9)
    assert windows > 3 and handed and close(search.incumbent, best, 1e-9)
    assert close(assignment_cost(X[perm], search.incumbent_assignment, k), best, 1e-9)
    assert below(search.bound(), best) and search.bound() >= best * (1 - 1e-6)


def test_lost_improvements_of_the_shared_incumbent_cost_only_pruning(monkeypatch):
    """The worst race, every time: before each kernel call the shared incumbent is wiped to
    infinity (every improvement another thread wrote there is lost). Each search then prunes
    against its own incumbent only; the answer and the bound stay exact."""
    run = DollSearch.run

    def forgetful(self, *args):
        self.shared[0] = np.inf
        return run(self, *args)

    monkeypatch.setattr(DollSearch, "run", forgetful)
    X = instance(9, 12, 2)
    best = reference(X, 3)
    out = solve_bnb(X, 3, restarts=0, threads=2)
    assert out.complete and close(out.objective, best) and below(out.bound, best)


def test_handed_over_subtrees_and_the_rest_cover_the_tree():
    """split_open: the donor's remaining search and the subtrees below the handed-over paths,
    each searched alone from the same poor incumbent, together find the optimum."""
    X = instance(7, 11, 2)
    k = 3
    best = reference(X, k)
    start = np.minimum(np.arange(11) // 2, k - 1)
    cost = assignment_cost(X, start, k)
    donor = DollSearch(X, np.zeros(12), k, cost, start)
    donor.run(40, 1e-9, 0.0)
    handed = donor.split_open()
    assert handed, "the donor had open children"
    found = [donor.incumbent if donor.run(10**9, 1e-9, 0.0) else np.inf]
    for b, path in handed:
        sub = DollSearch(X, np.zeros(12), k, cost, start, path=path)
        assert sub.run(10**9, 1e-9, 0.0)
        assert below(b, sub.incumbent) or sub.incumbent == cost  # the handed bound bounds the subtree
        found.append(sub.incumbent)
    assert close(min(found), best, 1e-9)


# --- stopped runs ---------------------------------------------------------------------------------
@pytest.mark.parametrize("node_limit", [1, 40, 400, 4000])
@pytest.mark.parametrize("options", [{"order": "dynamic"}, {"suffix_bounds": True}])
def test_stopped_runs_bracket_the_optimum(node_limit, options):
    X = instance(4, 12, 2)
    best = reference(X, 3)
    out = solve_bnb(X, 3, restarts=0, node_limit=node_limit, threads=2, **options)
    assert below(out.bound, best) and best <= out.objective * (1 + 1e-9)
    if not out.complete:
        assert out.stopped_by is Termination.ITERATION_LIMIT


def test_a_time_limited_run_on_two_threads_returns_a_valid_bound():
    """m = 90, n = 3, k = 3 uniform needs ~90 s on two threads: stopped at 2 s (dolls in the
    second second), the certified bound is positive and below the optimum."""
    X = instance(3, 90, 3)
    start = time.perf_counter()
    r = HyperplaneClustering(X, 3).solve("bnb", time_limit=2.0, threads=2)
    assert time.perf_counter() - start < PROMPT
    assert r.termination == Termination.TIME_LIMIT and r.stats["threads"] == 2
    assert 0.0 < r.bound <= OPTIMUM_90_3_3 * (1 + 1e-6) and OPTIMUM_90_3_3 * (1 - 1e-6) <= r.objective


def test_a_stop_request_returns_promptly_with_incumbent_and_bound():
    X = instance(3, 90, 3)
    timer = threading.Timer(1.0, request_stop)
    start = time.perf_counter()
    timer.start()
    try:
        r = HyperplaneClustering(X, 3).solve("bnb", threads=2, extra_restarts=0)
    finally:
        timer.cancel()
        timer.join()
        clear_stop()
    assert time.perf_counter() - start < PROMPT
    assert r.termination == Termination.INTERRUPTED and r.stats["threads"] == 2
    assert 0.0 <= r.bound <= r.objective


def test_a_worker_error_reaches_the_caller(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("kernel failed")
    X = instance(5, 40, 2)
    monkeypatch.setattr(parallel.DollSearch, "run", broken)
    with pytest.raises(RuntimeError, match="kernel failed"):
        solve_bnb(X, 2, threads=2, restarts=1, extra_restarts=0)


# --- the option and the command line ----------------------------------------------------------------
def test_the_default_is_the_cores_available_from_31_points_on():
    small = HyperplaneClustering(instance(1, 20, 2), 2).solve("bnb")
    large = HyperplaneClustering(instance(1, 35, 2), 2).solve("bnb", node_limit=50)
    assert small.stats["threads"] == 1
    assert large.stats["threads"] == default_threads() >= 1
    assert HyperplaneClustering(instance(1, 35, 2), 2).solve("bnb", threads=1, node_limit=50).stats["threads"] == 1


def test_the_default_follows_numba_s_thread_count():
    """Dask workers (solvopt.core.tasks) run with NUMBA_NUM_THREADS=1, one task per core: bnb
    there must not start threads of its own."""
    code = "from solvopt.khc.parallel import default_threads; print(default_threads())"
    env = dict(os.environ, NUMBA_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1"


def test_cli_threads_reaches_bnb(tmp_path, capsys):
    path = tmp_path / "points.csv"
    np.savetxt(path, instance(2, 14, 2), delimiter=",")
    for threads in ("1", "2"):
        assert main(["solve", str(path), "--k", "2", "--json", "--threads", threads]) == 0
        record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert record["termination"] == "optimal" and record["stats"]["threads"] == int(threads)
    assert main(["solve", str(path), "--k", "2", "--method", "heuristic", "--threads", "2"]) == 1
    assert "threads" in capsys.readouterr().err


def test_a_subtree_replayed_after_the_incumbent_improved_branches_on_the_recorded_points():
    """The dynamic order's pick depends on the incumbent (through the node's slack): a frontier
    or handed-over path replayed after a better incumbent was found must still branch on the
    points it was recorded with, or the subtrees would not cover the tree. The clusters alone
    (a 1-d path, the kernel picking again) do branch elsewhere on some of these paths."""
    X = instance(0, 40, 3)
    k = 3
    perm = branching_order(X, k, "farthest")
    Y = X[perm]
    labels = np.minimum(np.arange(40) // 3, k - 1)
    good = solve_bnb(Y, k, node_limit=1).objective  # the k-plane start: far better than ``poor``
    poor = good * 1.3
    frontier = DollSearch(Y, np.zeros(41), k, poor, labels, dynamic=True, split_depth=16, front_capacity=10_000)
    frontier.run(2 ** 62, 1e-9, 0.0)
    paths = [path for _, path in frontier.frontier()[:150]]
    assert paths and all(path.shape == (2, 16) for path in paths)

    def replay(path, incumbent):
        search = DollSearch(Y, np.zeros(41), k, incumbent, labels, dynamic=True, path=path)
        search.run(path.shape[-1] + 1, 1e-9, 0.0)
        return search.arrays["branch_point"][:16]

    moved = 0
    for path in paths:
        recorded = path[1]
        assert np.array_equal(replay(path, poor), recorded)
        points = replay(path, good)  # a pruned replay leaves later levels unset (0: point 0 is level 0's)
        assert all(points[d] in (0, recorded[d]) for d in range(1, 16))
        again = replay(path[0], good)
        moved += any(again[d] not in (0, recorded[d]) for d in range(1, 16))
    assert moved > 0
