"""Transport at the ends of float64's range: large p, huge and tiny totals, huge costs.

Each test failed before: ``--p 1000 --method exact`` reported ``optimal`` 0.539 where W_inf is
0.317 (d^p underflowed); ``approx`` at p >= 1000 raised OverflowError (3^(p-1)); masses of
1e308 each (total inf) gave ``optimal`` W_2 = 0; a finite cost matrix near 1e300 raised
OverflowError.
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from solvopt.core.errors import ModelError
from solvopt.core.registry import Availability, get_solver
from solvopt.core.result import Termination
from solvopt.dsl import Transport
from solvopt.transport.result import dual_bound

HAS_POT = get_solver("transport", "pot").available() is Availability.AVAILABLE


def _points(seed, n, m):
    rng = np.random.default_rng(seed)
    return rng.uniform(size=(n, 2)), rng.uniform(size=(m, 2))


@pytest.mark.parametrize("shape", [(30, 30), (30, 20)])     # assignment, and min-cost flow
@pytest.mark.parametrize("p", [9, 50, 1000])
def test_exact_at_large_p_is_optimal_and_never_above_w_inf(shape, p):
    x, y = _points(7, *shape)
    w_inf = Transport(x, y, p="inf").solve("bottleneck").objective
    w_1 = Transport(x, y, p=1).solve("exact").objective
    result = Transport(x, y, p=p).solve("exact")
    assert result.termination is Termination.OPTIMAL, result.summary()
    # probability masses: W_1 <= W_p <= W_inf
    assert w_1 * (1 - 1e-9) <= result.objective <= w_inf * (1 + 1e-12)
    assert result.bound <= result.objective
    flow = Transport(x, y, p=p).solve("exact", assignment=False, engine="highs")
    assert flow.objective == pytest.approx(result.objective, rel=1e-6)
    if HAS_POT:
        assert Transport(x, y, p=p).solve("pot").objective == pytest.approx(result.objective, rel=1e-6)


def test_exact_at_p_1000_matches_the_issue_instance_shape():
    # many points: d^1000 underflows for almost every pair unless lengths are measured in W_inf
    x, y = _points(11, 60, 60)
    w_inf = Transport(x, y, p="inf").solve("exact").objective
    result = Transport(x, y, p=1000).solve("exact")
    assert result.termination is Termination.OPTIMAL
    assert result.objective <= w_inf * (1 + 1e-12)
    assert result.objective >= w_inf * (1 / 60) ** (1 / 1000) * (1 - 1e-9)   # a vertex moves >= 1/n at W_inf


@pytest.mark.parametrize("p", [300, 1000, 5000, 1e6])
def test_approx_at_huge_p_raises_nothing_and_stays_honest(p):
    x, y = _points(3, 40, 30)
    result = Transport(x, y, p=p).solve("approx")
    exact = Transport(x, y, p=p).solve("exact")
    assert result.termination in (Termination.FEASIBLE_WITHIN_GAP, Termination.OPTIMAL)
    assert exact.objective <= result.objective * (1 + 1e-9)
    assert result.bound is None or result.bound <= exact.objective * (1 + 1e-9)
    w_inf = Transport(x, y, p="inf").solve("bottleneck").objective
    assert result.objective <= 3 * w_inf * (1 + 1e-9)   # never worse than the p = inf search's plan


def test_masses_whose_total_overflows_are_refused_in_one_line(tmp_path):
    x, y = _points(0, 5, 5)
    with pytest.raises(ModelError, match="overflows"):
        Transport(x, y, a=np.full(5, 1e308), b=np.full(5, 1e308))
    with pytest.raises(ModelError, match="overflows"):
        Transport(x, y, a=np.full(5, 1e308))
    path = tmp_path / "huge.npz"
    np.savez(path, x=x, y=y, a=np.full(5, 1e308), b=np.full(5, 1e308))
    run = subprocess.run([sys.executable, "-m", "solvopt.cli", "solve", str(path)], capture_output=True, text=True)
    assert run.returncode != 0
    assert "overflows" in run.stderr and "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1


def test_large_finite_masses_still_solve():
    x, y = _points(0, 6, 6)
    base = Transport(x, y, p=2).solve("exact")
    big = Transport(x, y, a=np.full(6, 1e300), b=np.full(6, 1e300), p=2).solve("exact")
    assert big.termination is Termination.OPTIMAL
    assert big.objective == pytest.approx(base.objective * (6e300) ** 0.5, rel=1e-9)


@pytest.mark.parametrize("method", ["approx", "exact"] + (["pot"] if HAS_POT else []))
def test_cost_matrix_near_1e300_is_solved_in_its_units(method):
    rng = np.random.default_rng(5)
    cost = rng.uniform(size=(12, 9))
    base = Transport(distance=cost, p=2).solve(method)
    huge = Transport(distance=cost * 1e300, p=2).solve(method)
    assert huge.termination is base.termination
    assert huge.objective == pytest.approx(base.objective * 1e300, rel=1e-9)
    assert huge.bound == pytest.approx(base.bound * 1e300, rel=1e-6)


def test_costs_and_points_beyond_the_safe_range_are_refused():
    with pytest.raises(ModelError, match="above 1e"):
        Transport(distance=np.full((3, 3), 1e305))
    x, y = _points(0, 4, 4)
    with pytest.raises(ModelError, match="span more than"):
        Transport(x * 1e200, y * 1e200)
    with pytest.raises(ModelError, match="span less than"):
        Transport(x * 1e-200, y * 1e-200)
    # within the range: solved, in its units
    assert Transport(x * 1e140, y * 1e140).solve("exact").termination is Termination.OPTIMAL


def test_dual_bound_never_overflows_for_large_p():
    x, y = _points(2, 8, 8)
    model = Transport(x, y, p=2000)
    u = np.zeros(8)
    bound = dual_bound(model, u, scale=1e-3, cap=50.0)     # (d / 1e-3)^2000 overflows: capped
    assert bound is not None and 0 <= bound <= Transport(x, y, p=2000).solve("exact").objective


def test_a_w_p_beyond_float64_is_refused_and_extreme_totals_settle():
    """Masses near float64's largest value: a W_p that could overflow is refused in one line (it
    raised "plan marginals are off" before); zero costs, a subnormal cost, or a large cost in a
    column without mass settle OPTIMAL (each raised "bound exceeds the plan's W_p" before: the
    duals' rounding times the mass)."""
    from solvopt.transport.api import emd2
    x, y = np.ones((5, 2)), np.zeros((1, 2))
    a = np.array([0, 0, 0, 1e300, 1.7e308])
    with pytest.raises(ModelError, match="could exceed float64"):
        Transport(x, y, a=a, b=[a.sum()], p=1)
    a = np.array([0.0, 1e300, 1.7e308])
    b = np.array([1e-320, 0.0, 0.0, 1e300])
    b = b * (a.sum() / b.sum())
    for tail in ((0.0, 0.0), (1e-320, 0.0), (1e-320, 3.0), (1e-150, 3.0)):
        M = np.zeros((3, 4))
        M[2, :2] = tail                         # (column 1 has no mass)
        value, result = emd2(a, b, M, return_result=True)
        assert result.termination is Termination.OPTIMAL
        assert value == 0.0 and result.bound == 0.0


def test_a_subnormal_total_mass_is_refused_in_one_line():
    """Masses whose total is below float64's normal range keep a few significant bits: the bound and
    W_p could not be compared (it raised "bound exceeds the plan's W_p" before)."""
    from solvopt.transport.small import certified_points
    x, y = _points(1, 1, 3)
    a, b = np.array([1e-320]), np.full(3, 1e-320 / 3)
    with pytest.raises(ModelError, match="normal range"):
        Transport(x, y, a=a, b=b, p=1.5)
    assert certified_points(x, y, a, b, 1.5, "euclidean") is None
    rescaled = Transport(x, y, a=[1.0], b=np.full(3, 1 / 3), p=1.5).solve("exact")
    assert rescaled.termination is Termination.OPTIMAL
