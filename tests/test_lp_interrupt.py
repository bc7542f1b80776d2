"""Ctrl-C on the lp family: HiGHS (interrupt callbacks), SCIP (event handler), Gurobi (callback terminate).

The hard MILP is a 60-item, 10-constraint binary knapsack that HiGHS does not close within 15 s
(it holds a 1-2% gap after a fraction of a second), so a stop after ~1 s always finds an
incumbent and a bound.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from test_lp_solvers import knapsack

from solvopt.core.interrupt import clear_stop, request_stop
from solvopt.core.registry import Availability, get_solver
from solvopt.core.result import SolutionStatus, Termination
from solvopt.dsl import Model

METHODS = ["highs", "scip", "gurobi"]


@pytest.fixture(autouse=True)
def _no_stop_left():
    yield
    clear_stop()


def _needs(method):
    if get_solver("lp", method).available() is not Availability.AVAILABLE:
        pytest.skip(f"{method} is not installed")


def hard_knapsack():
    """60 items, 10 knapsack rows: HiGHS needs about 44 s to prove it."""
    return knapsack(60, 10, 0)


@pytest.mark.parametrize("method", METHODS)
def test_stop_request_returns_interrupted_with_incumbent_and_bound(method):
    _needs(method)
    model, x, W, cap, p = hard_knapsack()
    timer = threading.Timer(1.0, request_stop)
    timer.start()
    start = time.perf_counter()
    try:
        r = model.solve(method=method, time_limit=60)
    finally:
        timer.cancel()
    elapsed = time.perf_counter() - start
    assert r.termination is Termination.INTERRUPTED, r.summary()
    assert elapsed < 30   # stopped by the request, far before the time limit
    assert r.solution_status is SolutionStatus.FEASIBLE
    assert np.all(W @ x.value <= cap + 1e-6) and p @ x.value == pytest.approx(r.objective)
    assert np.isfinite(r.bound) and r.bound >= r.objective and 0 < r.gap < 0.1


def test_watch_interrupt_stops_a_plain_highs_lp():
    """The helper the k-HC node LPs use: a stop request interrupts the simplex of any Highs."""
    import scipy.sparse as sp

    from solvopt.dsl.highs_export import load_standard_form, new_highs, was_interrupted, watch_interrupt
    rng = np.random.default_rng(1)
    m = Model()
    y = m.add_var(shape=80, lb=0, ub=10, name="y")
    m.add(sp.csr_matrix(rng.random((60, 80))) @ y <= 5 + rng.random(60))
    m.maximize(rng.random(80) @ y)
    h = new_highs()
    load_standard_form(h, m.compile())
    h.setOptionValue("presolve", "off")
    request_stop()
    with watch_interrupt(h):
        h.run()
    assert was_interrupted(h)
    clear_stop()
    h.clearSolver()
    with watch_interrupt(h):
        h.run()
    assert not was_interrupted(h) and h.modelStatusToString(h.getModelStatus()) == "Optimal"
    h.clearSolver()
    request_stop()
    h.run()   # outside the watch: not interrupted
    assert not was_interrupted(h)


@pytest.mark.parametrize("method", ["highs", "scip"])
def test_sigint_on_the_cli_prints_the_interrupted_json_and_exits_130(method, tmp_path):
    _needs(method)
    from solvopt.lp.reader import write_model_file
    model, *_ = hard_knapsack()
    path = tmp_path / "hard.mps"
    write_model_file(model.compile(), str(path))
    proc = subprocess.Popen([sys.executable, "-m", "solvopt.cli", "solve", str(path), "--json", "--method", method,
                             "--time-limit", "120", "--progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    first = proc.stderr.readline()   # the solve has started once its progress lines appear on stderr
    assert f"{method}:" in first, first
    time.sleep(1.0)
    start = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert time.perf_counter() - start < 20
    assert proc.returncode == 130, err
    lines = out.splitlines()
    assert len(lines) == 1, out   # only the JSON line on stdout
    record = json.loads(lines[0])
    assert record["termination"] == "interrupted" and record["solution_status"] == "feasible"
    assert isinstance(record["objective"], float) and isinstance(record["bound"], float)
    assert record["bound"] >= record["objective"]


def test_a_hard_stop_inside_a_highs_callback_is_interrupted_not_an_error(monkeypatch):
    """A second Ctrl-C raises KeyboardInterrupt inside HiGHS' callback; HiGHS reports a solve error."""
    from solvopt.core.interrupt import stop_requested
    from solvopt.dsl import highs_export

    def raising_check(event):
        if stop_requested():
            raise KeyboardInterrupt
    monkeypatch.setattr(highs_export, "_stop_check", raising_check)
    model, x, W, cap, p = hard_knapsack()
    timer = threading.Timer(1.0, request_stop)
    timer.start()
    try:
        r = model.solve(time_limit=60)
    finally:
        timer.cancel()
    assert r.termination is Termination.INTERRUPTED, r.summary()
    # HiGHS' numbers after such a stop are not trustworthy (a dual bound of 0 here): none is reported
    assert r.solution_status is SolutionStatus.NONE and r.objective is None and r.bound is None
