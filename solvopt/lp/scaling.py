"""The ``lp`` family's cases for the spine's scale and stop property tests (:mod:`solvopt.core.scaling`).

Scale: the objective's coefficients (linear and quadratic) times ``f`` multiply the objective
and the bound by ``f`` and keep the optimal points. The backends' own tolerances are absolute
(HiGHS: dual feasibility 1e-7, MIP absolute gap 1e-6), so a model's objective is handed to them
divided by its own scale, the largest objective coefficient in absolute value (a power of two,
so the division is exact), and the result is settled in that frame
(:func:`solvopt.lp.common.objective_scale`).

Stop: a 0-1 multi-dimensional knapsack with 160 items and 8 rows, which HiGHS and SCIP do not
prove within seconds.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from solvopt.core.scaling import ScaleCase, StopCase, linear


def _takers(kind: str) -> tuple[str, ...]:
    from solvopt.core.registry import Availability, solvers
    return tuple(s.name for s in solvers("lp") if kind in s.capabilities and s.available() is Availability.AVAILABLE)


def _lp(factor: float):
    from solvopt.dsl import Model
    m = Model("production")
    x = m.add_var(shape=4, lb=0, name="x")
    m.add(np.array([[1, 1, 1, 1], [2, 1, 0, 3], [0, 1, 3, 1]]) @ x <= [10, 8, 12], name="capacity")
    m.maximize(np.array([3.0, 2.0, 4.0, 1.5]) * factor @ x)
    return m


def _milp(factor: float):
    from solvopt.dsl import Model
    rng = np.random.default_rng(24)
    w = rng.integers(3, 20, (2, 12)).astype(float)
    v = rng.uniform(1.0, 30.0, 12)
    m = Model("knapsack")
    x = m.add_var(shape=12, vtype="binary", name="x")
    y = m.add_var(shape=2, lb=0, ub=5, vtype="integer", name="y")
    m.add(w @ x + 4.0 * y <= w.sum(axis=1) / 2, name="weight")
    m.maximize((v * factor) @ x + (2.5 * factor) * y.sum())
    return m


def _qp(factor: float):
    from solvopt.dsl import Model
    rng = np.random.default_rng(25)
    a = rng.normal(size=(8, 4))
    b = rng.normal(size=8)
    m = Model("least-squares")
    x = m.add_var(shape=4, lb=-1.0, ub=1.0, name="x")
    m.add(x.sum() <= 1.5, name="budget")
    m.minimize(factor * ((a @ x - b) ** 2).sum() + (0.3 * factor) * x[0])
    return m


def scale_cases() -> list[ScaleCase]:
    return [ScaleCase("lp-production", _lp, linear, _takers("lp")),
            ScaleCase("milp-knapsack", _milp, linear, _takers("milp")),
            ScaleCase("qp-least-squares", _qp, linear, _takers("qp"), rtol=1e-5)]


def _hard_knapsack(folder) -> list[str]:
    """A 0-1 multi-dimensional knapsack (random weights, values correlated with them) as an MPS file."""
    from solvopt.dsl import Model
    rng = np.random.default_rng(431)
    n, rows = 160, 8
    w = rng.integers(10, 100, (rows, n)).astype(float)
    v = w.mean(axis=0) + rng.integers(0, 20, n)
    m = Model("mkp")
    x = m.add_var(shape=n, vtype="binary", name="x")
    m.add(w @ x <= np.floor(w.sum(axis=1) / 2), name="cap")
    m.maximize(v @ x)
    from solvopt.lp.reader import write_model_file
    path = Path(folder) / "lp_mkp.mps"
    write_model_file(m.compile(), str(path))
    return [str(path)]


def stop_cases(folder=None) -> list[StopCase]:
    return [StopCase("mkp-160x8", _hard_knapsack, _takers("milp"))]
