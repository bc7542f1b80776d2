"""The ``transport`` family's cases for the spine's scale and stop property tests (:mod:`solvopt.core.scaling`).

Scale: moving the points (or the cost matrix) by ``f`` multiplies every distance, W_p and its
bound by ``f`` (law ``linear``), for every p; multiplying the masses by ``f`` multiplies
W_p^p = sum pi d^p by ``f``, so W_p by ``f^(1/p)`` (W_inf does not change). The statuses are
settled in units of D M^(1/p) (:func:`solvopt.transport.result.status_scale`), which moves the
same way, so the termination is the same at every factor. Cases cover every method on the
inputs it takes: ``approx``, ``exact`` (assignment and min-cost flow, and the large-p frame),
``bottleneck`` (p = inf), ``pot`` where POT is installed, ``sparse-exact`` (points), ``1d`` and
``auto`` (points on the line, a ready cost: W_p moves by ``f^(1/p)`` when the cost is multiplied
by ``f``), and ``approx``'s multiscale pricing and grid of cells, asked for on small clouds.

Stop: uniform points far past what each method finishes in a second (``approx`` and
``sparse-exact``: n = 20000 points, the graph's passes or the coarse levels, and the flow;
``exact``: 10000 x 8000 points, the min-cost flow on the full matrix, and 5000 x 5000 uniform masses,
``linear_sum_assignment``; ``pot``: ``ot.emd`` on 5000 x 5000; ``bottleneck``: its sort and max-flow
tests at p = inf; ``approx``'s multiscale pricing on 100000 points).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from solvopt.core.scaling import ScaleCase, StopCase, invariant, linear


def _available(methods) -> tuple[str, ...]:
    from solvopt.core.registry import Availability, get_solver
    return tuple(m for m in methods if get_solver("transport", m).available() is Availability.AVAILABLE)


def _points(seed: int, n: int, m: int, dim: int = 2):
    rng = np.random.default_rng(seed)
    return rng.uniform(size=(n, dim)), rng.normal(0.5, 0.3, size=(m, dim)), rng.uniform(0.5, 1.5, n)


def _on_points(factor: float, p, n: int = 24, m: int = 18, seed: int = 0, metric: str = "euclidean",
               weighted: bool = True):
    from solvopt.dsl import Transport
    x, y, a = _points(seed, n, m)
    return Transport(x * factor, y * factor, a=a if weighted else None, p=p, metric=metric)


def _on_masses(factor: float, p, n: int = 24, m: int = 18, seed: int = 1):
    from solvopt.dsl import Transport
    x, y, a = _points(seed, n, m)
    b = np.random.default_rng(seed + 100).uniform(0.5, 1.5, m)
    return Transport(x, y, a=a * factor, b=b * (a.sum() / b.sum()) * factor, p=p)


def _on_cost(factor: float, p, seed: int = 2):
    from solvopt.dsl import Transport
    x, y, _ = _points(seed, 20, 16)
    cost = np.sqrt(((x[:, None, :] - y[None, :, :]) ** 2).sum(-1))
    return Transport(distance=cost * factor, p=p)


def _on_line(factor: float, p, seed: int = 3):
    from solvopt.dsl import Transport
    x, y, a = _points(seed, 25, 19, dim=1)
    return Transport(x * factor, y * factor, a=a, p=p)


def _on_ready_cost(factor: float, p, seed: int = 4):
    from solvopt.dsl import Transport
    x, y, _ = _points(seed, 20, 16)
    return Transport(cost=((x[:, None, :] - y[None, :, :]) ** 2).sum(-1) * factor, p=p)


def _root(p: float):
    return lambda objective, factor: objective * factor ** (1.0 / p)


def scale_cases() -> list[ScaleCase]:
    finite = _available(("auto", "approx", "exact", "pot"))
    infinite = _available(("auto", "approx", "exact", "bottleneck"))
    exact = _available(("exact", "pot"))
    points = finite + ("sparse-exact",)          # point inputs with a named metric only
    return [
        ScaleCase("points-p2", lambda f: _on_points(f, 2), linear, points),
        ScaleCase("points-p1-cityblock", lambda f: _on_points(f, 1, metric="cityblock"), linear, points),
        ScaleCase("points-square-p2", lambda f: _on_points(f, 2, n=20, m=20, weighted=False), linear, points),
        ScaleCase("points-pinf", lambda f: _on_points(f, "inf"), linear, infinite),
        ScaleCase("points-p20", lambda f: _on_points(f, 20), linear, exact),
        ScaleCase("masses-p2", lambda f: _on_masses(f, 2), _root(2.0), points),
        ScaleCase("masses-pinf", lambda f: _on_masses(f, "inf"), invariant, infinite),
        ScaleCase("cost-p2", lambda f: _on_cost(f, 2), linear, finite),
        ScaleCase("ready-cost-p2", lambda f: _on_ready_cost(f, 2), _root(2.0), ("exact", "auto")),
        ScaleCase("line-p2", lambda f: _on_line(f, 2), linear, ("1d", "auto")),
        ScaleCase("line-pinf", lambda f: _on_line(f, "inf"), linear, ("1d",)),
        # approx's large-cloud paths, asked for on small clouds: the multiscale pricing (finite p)
        # and the grid of cells (p = inf)
        ScaleCase("points-p2-multiscale", lambda f: _on_points(f, 2, n=60, m=50), linear, ("approx",),
                  {"graph": "multiscale"}),
        ScaleCase("masses-p1-multiscale", lambda f: _on_masses(f, 1, n=60, m=50), _root(1.0), ("approx",),
                  {"graph": "multiscale"}),
        ScaleCase("points-pinf-grid", lambda f: _on_points(f, "inf", n=60, m=50), linear, ("approx",),
                  {"graph": "grid"}),
        ScaleCase("masses-pinf-grid", lambda f: _on_masses(f, "inf", n=60, m=50), invariant, ("approx",),
                  {"graph": "grid"}),
    ]


def _writer(name: str, n: int, m: int, seed: int):
    def write(folder) -> list[str]:
        rng = np.random.default_rng(seed)
        path = Path(folder) / f"transport-{name}.npz"
        np.savez(path, x=rng.uniform(size=(n, 2)), y=rng.uniform(size=(m, 2)))
        return [str(path)]
    return write


def _with_p(write, p: str):
    return lambda folder: write(folder) + ["--p", p]


def stop_cases() -> list[StopCase]:
    return [
        StopCase("approx-20000", _with_p(_writer("approx", 20000, 20000, 0), "2"), ("approx", "auto", "sparse-exact")),
        StopCase("exact-flow-10000x8000", _with_p(_writer("flow", 10000, 8000, 1), "2"), ("exact",)),
        StopCase("assignment-5000", _with_p(_writer("assignment", 5000, 5000, 2), "2"),
                 ("exact",) + _available(("pot",))),
        StopCase("bottleneck-100000", _with_p(_writer("bottleneck", 100000, 100000, 3), "inf"), ("bottleneck",)),
        # approx's multiscale pricing asked for on clouds it takes seconds on (about 5 s at 10^5 points;
        # 20,000 points, the case before, came to take about 1 s: a SIGINT at 1 s then found it done)
        StopCase("multiscale-100000", lambda folder: _writer("multiscale", 100000, 100000, 4)(folder)
                 + ["--p", "2", "--graph", "multiscale"], ("approx",)),
    ]
