"""The ``dp`` family's cases for the spine's scale and stop property tests (:mod:`solvopt.core.scaling`).

Scale: every cost (and initial value) times ``f`` multiplies each path's cost, the objective
(the mean over scenarios of the best final value) and the bound by ``f``; the argmins do not
move. The status needs no tolerance here: an exact run's bound *is* its objective (the minimum
over the DP's paths), a sampled or stopped run certifies none, so the termination cannot depend
on the units.

Stop: the ``dp`` family reads no instance files (``LayeredDP`` is built in Python), so it has
no CLI stop case of its own; the CLI stop test reaches its engine through the ``cvrp`` and
``irp`` families, whose scenario runs are the engine's chunk loop.
"""
from __future__ import annotations

import numpy as np

from solvopt.core.scaling import ScaleCase, StopCase, linear


def _available(methods) -> tuple[str, ...]:
    from solvopt.core.registry import Availability, get_solver
    return tuple(m for m in methods if get_solver("dp", m).available() is Availability.AVAILABLE)


def _layers(seed: int, states=(1, 3, 4, 3, 2), scenarios: int = 6):
    rng = np.random.default_rng(seed)
    layers = []
    for a, b in zip(states[:-1], states[1:]):
        costs = rng.uniform(-2.0, 10.0, (scenarios, a, b))
        costs[:, rng.random((a, b)) < 0.25] = np.inf          # a few forbidden transitions
        costs[:, :, 0] = np.where(np.isfinite(costs[:, :, 0]), costs[:, :, 0], 1.0)   # keep every target reachable
        layers.append(costs)
    return list(states), layers


def _build(seed: int, final: str):
    states, layers = _layers(seed)

    def build(factor: float):
        from solvopt.dsl import LayeredDP
        return LayeredDP(states, [c * factor for c in layers], final=final)
    return build


def scale_cases() -> list[ScaleCase]:
    methods = _available(("numpy", "numba", "cuda"))
    return [ScaleCase("layers-5-per-scenario", _build(24, "per_scenario"), linear, methods),
            ScaleCase("layers-5-shared-final", _build(25, "shared"), linear, methods)]


def stop_cases(folder=None) -> list[StopCase]:
    return []
