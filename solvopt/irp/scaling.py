"""The ``irp`` family's cases for the spine's scale and stop property tests (:mod:`solvopt.core.scaling`).

Scale: every cost (holding, supplier holding, insertion, stockout and capacity penalties) times
``f`` multiplies each plan's cost, the objective and the bound by ``f`` and keeps the decision.
The status needs no tolerance: an exact run's bound is its objective, a stopped one certifies
none, so the termination cannot depend on the units.

Stop: abs1n5_1's customer 1 under 3 * 10^7 Poisson demand scenarios, far more than the engine
finishes in a few seconds; the run stops between chunks.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from solvopt.core.scaling import ScaleCase, StopCase, linear


def _available(methods) -> tuple[str, ...]:
    from solvopt.core.registry import Availability, get_solver
    return tuple(m for m in methods if get_solver("irp", m).available() is Availability.AVAILABLE)


def _build(factor: float):
    from solvopt.dsl import InventoryReinsertion
    rng = np.random.default_rng(24)
    horizon = 4
    insertion = [rng.uniform(5.0, 40.0, 3) for _ in range(horizon)]
    demand = rng.poisson(3.0, (12, horizon))
    return InventoryReinsertion(horizon, 9, 4, 0.5 * factor, [c * factor for c in insertion],
                                route_slack=[rng.uniform(-2.0, 9.0, 3) for _ in range(horizon)],
                                supplier_holding_cost=0.2 * factor, stockout_penalty=7.0 * factor,
                                capacity_penalty=3.0 * factor, demand=demand)


def scale_cases() -> list[ScaleCase]:
    return [ScaleCase("reinsertion-4-days", _build, linear, _available(("numpy", "numba", "cuda")))]


def _many_scenarios(folder) -> list[str]:
    src = Path(__file__).resolve().parents[2] / "instances" / "irp" / "abs1n5_1.dat"
    path = Path(folder) / "irp_many.dat"
    path.write_text(src.read_text())
    return [str(path), "--scenarios", str(3 * 10 ** 7)]


def stop_cases(folder=None) -> list[StopCase]:
    return [StopCase("abs1n5-poisson-3e7", _many_scenarios, _available(("numpy", "numba", "cuda")))]
