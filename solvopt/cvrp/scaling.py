"""The ``cvrp`` family's cases for the spine's scale and stop property tests (:mod:`solvopt.core.scaling`).

Scale: distances times ``f`` multiply every route's cost, the objective (the split's cost, or
the mean over the demand scenarios) and the bound by ``f``; demands and capacity times the same
``g`` leave every route's feasibility, hence the objective, unchanged (deterministic split;
scenario demands are integers, so only the distances are scaled there); a soft capacity's
penalty per unit of excess load is a cost and scales with the distances. The statuses need no
tolerance: a deterministic split is exact (bound = objective), a stochastic one certifies no
bound, so neither depends on the units.

Stop: X-n101-k25's tour under 2 * 10^7 Poisson scenarios, far more than the scenario kernels
finish in a few seconds; the run stops between chunks and reports the mean over the scenarios
done.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from solvopt.core.scaling import ScaleCase, StopCase, invariant, linear


def _available(methods) -> tuple[str, ...]:
    from solvopt.core.registry import Availability, get_solver
    return tuple(m for m in methods if get_solver("cvrp", m).available() is Availability.AVAILABLE)


def _instance(seed: int, n: int = 9):
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0.0, 100.0, (n + 1, 2))
    dist = np.sqrt(((xy[:, None, :] - xy[None, :, :]) ** 2).sum(-1))
    demands = np.concatenate([[0.0], rng.integers(1, 8, n).astype(float)])
    return dist, demands, 12.5          # a half-integer capacity: no scaled load sits on it


def _split(factor_d: float, factor_q: float, **kwargs):
    from solvopt.dsl import Split
    dist, demands, cap = _instance(24)
    return Split(dist * factor_d, demands * factor_q, cap * factor_q, **kwargs)


def _stochastic(factor: float):
    from solvopt.dsl import StochasticSplit
    dist, demands, cap = _instance(25)
    scen = np.random.default_rng(3).poisson(demands[1:] * 0.8, (40, demands.size - 1))
    return StochasticSplit(dist * factor, demands, cap, scenarios=scen)


def _stochastic_penalty(factor: float):
    from solvopt.dsl import StochasticSplit
    dist, demands, cap = _instance(26)
    scen = np.random.default_rng(4).poisson(demands[1:] * 1.5, (40, demands.size - 1))
    return StochasticSplit(dist * factor, demands, cap, scenarios=scen, policy="penalty", penalty=5.0 * factor)


def scale_cases() -> list[ScaleCase]:
    methods = _available(("split", "split-numpy", "split-cuda"))
    return [
        ScaleCase("split-distances", lambda f: _split(f, 1.0), linear, methods),
        ScaleCase("split-fleet-distances", lambda f: _split(f, 1.0, fleet=4), linear, methods),
        ScaleCase("split-demands-capacity", lambda f: _split(1.0, f), invariant, methods),
        # a soft capacity: the penalty per unit of excess load is a cost, scaled with the distances
        ScaleCase("split-penalty-distances", lambda f: _split(f, 1.0, penalty=3.0 * f), linear, methods),
        ScaleCase("stochastic-split-distances", _stochastic, linear, methods),
        ScaleCase("stochastic-split-penalty-distances", _stochastic_penalty, linear, methods),
    ]


def _many_scenarios(folder) -> list[str]:
    src = Path(__file__).resolve().parents[2] / "instances" / "cvrp" / "X-n101-k25.vrp"
    path = Path(folder) / "cvrp_many.vrp"
    path.write_text(src.read_text())
    return [str(path), "--scenarios", str(2 * 10 ** 7)]


def stop_cases(folder=None) -> list[StopCase]:
    return [StopCase("x-n101-k25-poisson-2e7", _many_scenarios, _available(("split", "split-numpy", "split-cuda")))]
