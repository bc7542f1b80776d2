"""Ctrl-C returns the best: every k-HC2 method stops on a stop request and returns incumbent + bound.

In-process: ``threading.Timer(0.5, request_stop)`` during a solve that would take many minutes
(100 random points in R^3, k = 3: bnb needs far more than a minute, sbb and SCIP longer still;
60 such points, this file's instance until bnb proved them in 1.3 s on two threads, raced the stop). Subprocess:
the CLI gets a real SIGINT once its search runs, prints the JSON line and exits 130.
"""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from helpers import PROMPT

from solvopt.core.interrupt import clear_stop, request_stop
from solvopt.core.registry import Availability, get_solver
from solvopt.core.result import SolutionStatus, Termination
from solvopt.dsl import HyperplaneClustering
from solvopt.khc.geometry import assignment_cost

scip_installed = get_solver("khc", "scip").available() is Availability.AVAILABLE


def hard_points() -> np.ndarray:
    return np.random.default_rng(3).uniform(0.0, 10.0, size=(100, 3))


@pytest.fixture
def stop_after():
    """Request a stop ``delay`` seconds from now; the stop request is cleared after the test."""
    timers = []

    def start(delay: float):
        timer = threading.Timer(delay, request_stop)
        timer.start()
        timers.append(timer)

    yield start
    for timer in timers:
        timer.cancel()
        timer.join()
    clear_stop()


@pytest.mark.parametrize("method,options", [
    ("bnb", {}),
    ("bnb", {"suffix_bounds": True}),
    ("sbb", {}),
    ("heuristic", {"restarts": 100_000}),
    pytest.param("scip", {}, marks=pytest.mark.skipif(not scip_installed, reason="pyscipopt not installed")),
])
def test_a_stop_request_returns_incumbent_and_bound(stop_after, method, options):
    pts = hard_points()
    model = HyperplaneClustering(pts, 3)
    stop_after(2.0 if method == "scip" else 0.5)     # SCIP: past building the model
    start = time.perf_counter()
    r = model.solve(method, **options)
    elapsed = time.perf_counter() - start
    assert elapsed < PROMPT + (2.0 if method == "scip" else 0.5)
    assert r.termination is Termination.INTERRUPTED, r.message
    assert "interrupt" in r.message.lower() or method == "scip"
    if method == "scip" and r.objective is None:   # SCIP may be stopped before its first incumbent
        assert r.solution_status is SolutionStatus.NONE
        return
    assert r.solution_status is SolutionStatus.FEASIBLE
    assert r.objective is not None and r.bound is not None and 0.0 <= r.bound <= r.objective
    assert r.objective == pytest.approx(assignment_cost(pts, r.solution["assignment"], 3), rel=1e-9)


def _wait_for(lines: queue.Queue[str], needle: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            continue
        if needle in line:
            return True
    return False


@pytest.mark.parametrize("method", ["bnb", "sbb"])
def test_sigint_on_the_cli_prints_the_best_and_exits_130(tmp_path, method):
    path = tmp_path / "hard.csv"
    np.savetxt(path, hard_points(), delimiter=",")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "solvopt.cli", "solve", str(path), "--k", "3", "--method", method,
                             "--json", "--progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    lines: queue.Queue[str] = queue.Queue()
    err: list[str] = []

    def pump():
        for line in proc.stderr:
            err.append(line)
            lines.put(line)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        # the search is running once its first progress line is out (the SIGINT handler is in place)
        # ("bnb doll 67/100 nodes ..." while bnb's split dolls run)
        assert _wait_for(lines, " nodes ", timeout=240), "".join(err)
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(timeout=5)
    assert proc.returncode == 130, "".join(err)
    record = json.loads(out.strip().splitlines()[-1])
    assert record["termination"] == "interrupted" and record["method"] == method
    assert record["objective"] is not None and record["bound"] is not None
    assert 0.0 <= record["bound"] <= record["objective"]
    assert "Traceback" not in "".join(err)


# --- the node LPs of sbb: HiGHS runs are stopped inside, not only between nodes ------------------
def _node_lp(m: int = 400):
    from solvopt.dsl.hyperplane_data import data_big_m
    from solvopt.khc.node_lp import NodeLP
    pts = np.random.default_rng(0).uniform(-1.0, 1.0, (m, 3))
    allowed = np.arange(3)[None, :] <= np.arange(m)[:, None]
    return NodeLP(pts, 3, frozenset({"2", "inf"}), np.argwhere(allowed), data_big_m(pts))


def test_a_stop_request_interrupts_a_node_lp_run():
    lp = _node_lp()
    request_stop()
    try:
        stopped = lp.solve()
    finally:
        clear_stop()
    assert stopped.status == "interrupted" and stopped.iterations == 0
    solved = lp.solve()             # the next run is not stopped by the old flag
    assert solved.status == "optimal" and solved.iterations > 0


def test_sbb_returns_interrupted_when_a_node_lp_is_interrupted(monkeypatch):
    """A Ctrl-C arriving while HiGHS runs a node LP: HiGHS stops, sbb returns incumbent and bound."""
    from solvopt.khc.node_lp import NodeLP
    original = NodeLP._run
    calls, outcomes = [], []

    def run_with_ctrl_c(self):
        calls.append(1)
        if len(calls) == 5:
            request_stop()          # as the SIGINT handler does, just before HiGHS starts iterating
        outcomes.append(original(self))
        return outcomes[-1]

    monkeypatch.setattr(NodeLP, "_run", run_with_ctrl_c)
    pts = hard_points()
    try:
        r = HyperplaneClustering(pts, 3).solve("sbb")
    finally:
        clear_stop()
    assert outcomes[4] == "interrupted" and len(outcomes) == 5   # no LP ran after the stop
    assert r.termination is Termination.INTERRUPTED and "interrupt" in r.message
    assert r.solution_status is SolutionStatus.FEASIBLE
    assert r.objective is not None and r.bound is not None and 0.0 <= r.bound <= r.objective
    assert r.objective == pytest.approx(assignment_cost(pts, r.solution["assignment"], 3), rel=1e-9)
