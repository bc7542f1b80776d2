"""k-HC2 statuses do not depend on the user's units.

k-HC2 is scale-equivariant: multiplying the points by s multiplies every cost by s^2 and keeps
every assignment's rank. So every method must report the same termination on every scaling,
with the objective scaled by s^2 (reference: the same method at s = 1), and the default
absolute tolerance must not turn into a huge gap on small data (it did: 1e-9 in the user's
units is a 2.6% gap at s = 1e-4 on sr_20 and stopped bnb before its first node at s = 1e-6).
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from solvopt.core.options import DEFAULT_ABS_GAP
from solvopt.core.result import SolutionStatus, Termination
from solvopt.dsl import HyperplaneClustering
from solvopt.khc.geometry import assignment_cost
from solvopt.khc.problem import KhcProblem

SCALES = (1e-8, 1e-4, 1.0, 1e4, 1e8)


def points() -> np.ndarray:
    return np.random.default_rng(5).uniform(0.0, 10.0, (12, 2))


@pytest.mark.parametrize("method,options", [
    ("bnb", {}),
    ("sbb", {}),
    ("heuristic", {"restarts": 3}),
])
def test_termination_and_objective_do_not_depend_on_the_scale(method, options):
    pts = points()
    reference = HyperplaneClustering(pts, 2).solve(method, **options)
    if method != "heuristic":
        assert reference.termination is Termination.OPTIMAL
    for s in SCALES:
        r = HyperplaneClustering(pts * s, 2).solve(method, **options)
        assert r.termination is reference.termination, (s, r.message)
        assert r.solution_status is reference.solution_status, s
        assert r.objective == pytest.approx(reference.objective * s * s, rel=1e-6), s
        assert r.objective == pytest.approx(assignment_cost(pts * s, r.solution["assignment"], 2), rel=1e-9), s
        assert 0.0 <= r.bound <= r.objective
        if method != "heuristic":
            assert r.bound == pytest.approx(reference.bound * s * s, rel=1e-6), s
        else:   # the trivial bound 0 proves nothing about a positive cost, on any scale
            assert r.bound == 0.0 and r.objective > 0.0
            assert r.termination is not Termination.OPTIMAL and r.solution_status is SolutionStatus.FEASIBLE


def test_a_user_abs_gap_is_a_cost_in_the_users_units():
    """abs_gap set by the user stops the search alike on every scale when scaled by s^2 with the data."""
    pts = points()
    optimum = HyperplaneClustering(pts, 2).solve("sbb").objective
    for s in (1e-6, 1.0, 1e6):
        r = HyperplaneClustering(pts * s, 2).solve("sbb", abs_gap=0.5 * optimum * s * s)
        assert r.termination is Termination.FEASIBLE_WITHIN_GAP, s
        assert r.objective - r.bound <= 0.5 * optimum * s * s * (1 + 1e-9)


def test_unit_abs_gap_keeps_the_default_and_converts_a_given_gap():
    problem = KhcProblem.of(HyperplaneClustering(points() * 1e-6, 2))
    assert problem.unit_abs_gap(DEFAULT_ABS_GAP) == DEFAULT_ABS_GAP
    assert problem.unit_abs_gap(2e-12) == pytest.approx(2e-12 / problem.scale ** 2)


def test_a_tiny_positive_objective_with_bound_zero_is_not_optimal():
    """Results settle in unit scale: a cost of 1e-14 on points of size 1e-6 is 1% of the unit cost."""
    pts = points() * 1e-6
    problem = KhcProblem.of(HyperplaneClustering(pts, 2))
    labels = np.arange(12) % 2
    r = problem.result(labels, 0.0, stopped=None, method="test")
    assert r.objective > 0 and r.objective < DEFAULT_ABS_GAP
    assert r.termination is Termination.FEASIBLE_WITHIN_GAP and r.gap == 1.0


def test_sbb_does_not_import_the_external_methods():
    code = "import sys, solvopt.khc.sbb; print('solvopt.khc.external' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
