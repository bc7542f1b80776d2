"""The k-HC2 family's cases for the spine's scale and stop property tests (:mod:`solvopt.core.scaling`).

Scale: the points times ``f`` multiply every cost, the objective and the bound by ``f^2``
(the problem is similarity-equivariant; every method solves in the unit frame of
:class:`solvopt.khc.problem.KhcProblem` and settles its status there). Stop: 100 uniform
points in 3-D with k = 3, which bnb does not prove within minutes, and which keeps sbb and
partition-bound busy as long (the heuristic with a million restarts); brute force on 16 points
in 3-D (about 7.2e6 assignments, under its refusal limit).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from solvopt.core.scaling import ScaleCase, StopCase


def quadratic(objective: float, factor: float) -> float:
    """The k-HC2 objective law: the points times ``factor``, every cost times ``factor^2``."""
    return objective * factor * factor


def _points(seed: int, m: int, n: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.0, 10.0, (m, n))


def _build(points: np.ndarray, k: int):
    def build(factor: float):
        from solvopt.dsl import HyperplaneClustering
        return HyperplaneClustering(points * factor, k)
    return build


def _available(methods) -> tuple[str, ...]:
    from solvopt.core.registry import Availability, get_solver
    out = []
    for m in methods:
        try:
            if get_solver("khc", m).available() is Availability.AVAILABLE:
                out.append(m)
        except Exception:
            continue
    return tuple(out)


def scale_cases() -> list[ScaleCase]:
    pts = _points(24, 10, 2)
    return [
        ScaleCase("planes-10x2-k2", _build(pts, 2), quadratic, _available(("bnb", "brute-force", "partition-bound"))),
        # the MINLP methods take about a second per solve even at 6 points
        ScaleCase("planes-6x2-k2", _build(_points(24, 6, 2), 2), quadratic, _available(("sbb", "scip", "gurobi"))),
        # the heuristic's status (feasible, bound 0) and objective hold on every scale too
        ScaleCase("planes-10x2-k2-heuristic", _build(pts, 2), quadratic, ("heuristic",), {"restarts": 3}),
    ]


def _write_points(folder, name: str, points: np.ndarray) -> Path:
    path = Path(folder) / name
    path.write_text(",".join(f"x{i + 1}" for i in range(points.shape[1])) + "\n"
                    + "\n".join(",".join(f"{v:.6f}" for v in row) for row in points) + "\n")
    return path


def _hard(folder) -> list[str]:
    # 100 uniform points in 3-D, k = 3: bnb needs minutes on two cores (docs/khc.md, goal 1)
    return [str(_write_points(folder, "khc_hard.csv", _points(431, 100, 3))), "--k", "3"]


def _restarts(folder) -> list[str]:
    # the heuristic with a million k-plane restarts: minutes
    return [*_hard(folder), "--restarts", "1000000"]


def _enumeration(folder) -> list[str]:
    # 16 points in 3-D, k = 3: about 7.2e6 assignments (under brute force's refusal limit), minutes
    return [str(_write_points(folder, "khc_enumerate.csv", _points(1, 16, 3))), "--k", "3"]


def stop_cases(folder=None) -> list[StopCase]:
    return [StopCase("uniform-100x3-k3", _hard, _available(("bnb", "sbb", "partition-bound", "scip"))),
            StopCase("uniform-100x3-k3-restarts", _restarts, ("heuristic",)),
            StopCase("uniform-16x3-k3", _enumeration, ("brute-force",))]
