"""The compiled form every k-HC2 method solves: the validated points in unit scale, and the way back.

k-HC2 is similarity-equivariant: translating the points changes no cost, scaling them by s
scales every cost by s^2 and keeps every assignment's rank. So every method solves the points
moved into [-1, 1]^n (:func:`solvopt.dsl.hyperplane_data.unit_points`) and :class:`KhcProblem`
reports the answer in the user's units: objective, bound, distances and cluster costs times
s^2, offsets moved back, normals unchanged. This makes coordinates of 1e-300 or 1e300 and
spreads of 1e7 as easy as coordinates of 1; a result is refused (ModelError) only when a cost
in the user's units exceeds the float range.

:meth:`KhcProblem.result` is the one place that turns a method's assignment, certified bound
and stop reason into a Result, through the one gap rule (:func:`solvopt.core.status.settle`).

Tolerances and scale. Because the answer's status must not depend on the user's units, the
gap rule is applied to the objective and bound in unit scale, where the default absolute
tolerance :data:`~solvopt.core.options.DEFAULT_ABS_GAP` means the same on every scaling of
the data (in the user's units it would be huge for points of size 1e-6 and void for 1e6).
Likewise the stopping tolerance handed to a method (:meth:`KhcProblem.unit_abs_gap`):
``abs_gap`` left at its default :data:`DEFAULT_ABS_GAP` is taken in unit scale as it is; an
``abs_gap`` the user set to another value is a cost in the user's units and is converted.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import overload

import numpy as np

from solvopt.core.errors import ModelError
from solvopt.core.options import DEFAULT_ABS_GAP, SolveOptions
from solvopt.core.registry import Solver
from solvopt.core.result import Result, Termination
from solvopt.core.status import settle
from solvopt.dsl.hyperplane_data import parse_norms, unit_points, validate_big_m, validate_k, validate_points

from .geometry import khc_solution


@dataclass(frozen=True)
class KhcProblem:
    """A validated k-HC2 instance: user points, k, and the same points in unit scale.

    ``unit = (points - centre) / scale``. ``norms`` / ``big_m`` / ``symmetry_breaking`` are
    the model's MINLP settings (None: not set by the model); ``big_m`` is in the user's units.
    """

    points: np.ndarray
    k: int
    unit: np.ndarray
    centre: np.ndarray
    scale: float
    norms: frozenset[str] | None = None
    big_m: float | None = None
    symmetry_breaking: bool = True

    @classmethod
    def of(cls, model) -> KhcProblem:
        """The problem of a HyperplaneClustering model (or any object with ``.points`` and ``.k``)."""
        if isinstance(model, KhcProblem):
            return model
        try:
            points, k = model.points, model.k
        except AttributeError:
            raise ModelError("expected a HyperplaneClustering model (with .points and .k)") from None
        pts = validate_points(points)
        k = validate_k(k, pts.shape[0])
        norms = getattr(model, "norms", None)
        big_m = model.given_big_m if hasattr(model, "given_big_m") else getattr(model, "big_m", None)
        unit, centre, scale = unit_points(pts)
        return cls(pts, k, unit, centre, scale,
                   norms=None if norms is None else parse_norms(norms),
                   big_m=validate_big_m(big_m), symmetry_breaking=bool(getattr(model, "symmetry_breaking", True)))

    @classmethod
    def identity(cls, points: np.ndarray, k: int) -> KhcProblem:
        """Points taken as they are (no moving or scaling): for engines used directly."""
        pts = validate_points(points)
        return cls(pts, validate_k(k, pts.shape[0]), pts, np.zeros(pts.shape[1]), 1.0)

    @property
    def m(self) -> int:
        return self.points.shape[0]

    @property
    def n(self) -> int:
        return self.points.shape[1]

    def rescaled(self, factor: float) -> KhcProblem:
        """The same problem with the solved points multiplied by ``factor`` (a power of two: exact)."""
        return replace(self, unit=self.unit * factor, scale=self.scale / factor)

    # --- units ------------------------------------------------------------------------------
    @overload
    def cost(self, value: float) -> float: ...
    @overload
    def cost(self, value: float | None) -> float | None: ...

    def cost(self, value: float | None) -> float | None:
        """A unit-scale cost in the user's units (times scale^2, without an intermediate overflow)."""
        if value is None or not math.isfinite(value):
            return value
        return (value * self.scale) * self.scale   # Python floats: an overflow gives inf, no warning

    def unit_cost(self, value: float) -> float:
        """A cost in the user's units in unit scale (e.g. an absolute gap)."""
        return (value / self.scale) / self.scale

    def unit_abs_gap(self, abs_gap: float) -> float:
        """The absolute stopping gap in unit scale.

        ``abs_gap`` equal to :data:`~solvopt.core.options.DEFAULT_ABS_GAP` (SolveOptions' default:
        the user did not set one, or set the default) is a tolerance of the unit-scale problem
        and stays as it is, so that the search stops alike on every scaling of the data; any
        other value is a cost in the user's units, converted by :meth:`unit_cost`.
        """
        return abs_gap if abs_gap == DEFAULT_ABS_GAP else self.unit_cost(abs_gap)

    def unit_options(self, options: SolveOptions) -> SolveOptions:
        """The options with ``abs_gap`` in unit scale (:meth:`unit_abs_gap`)."""
        return replace(options, abs_gap=self.unit_abs_gap(options.abs_gap))

    def unit_big_m(self) -> float | None:
        """The model's big-M in unit scale (None when the data's diameter is to be used)."""
        return None if self.big_m is None else self.big_m / self.scale

    def solution(self, assignment) -> dict[str, np.ndarray]:
        """:func:`~solvopt.khc.geometry.khc_solution` of an assignment, planes fitted in unit scale,
        reported in the user's units. ModelError when a cost exceeds the float range."""
        return self._user_solution(khc_solution(self.unit, assignment, self.k))

    def _user_solution(self, sol: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """A unit-scale :func:`~solvopt.khc.geometry.khc_solution` moved to the user's units (in place)."""
        s = self.scale
        with np.errstate(over="ignore", invalid="ignore"):   # an overflow is reported below, as an error
            sol["offsets"] = sol["offsets"] * s + sol["normals"] @ self.centre
            sol["distances"] = (sol["distances"] * s) * s
            sol["cluster_costs"] = (sol["cluster_costs"] * s) * s
            total = sol["cluster_costs"].sum()
        for key in ("offsets", "distances", "cluster_costs"):
            if not np.all(np.isfinite(sol[key])) or (key == "cluster_costs" and not math.isfinite(total)):
                raise ModelError(f"the k-HC2 solution cannot be represented in float64: its {key.replace('_', ' ')} "
                                 f"exceed {np.finfo(float).max:.3g} (points spread over {2 * s:.3g}; squared "
                                 f"distances of that size overflow); rescale the points")
        return sol

    # --- the Result -------------------------------------------------------------------------
    def result(self, assignment, unit_bound: float | None, *, stopped: Termination | None, method: str,
               stats: dict | None = None, message: str = "") -> Result:
        """The Result of an assignment and a certified unit-scale lower bound, settled by the gap rule.

        ``stopped``: None when the method finished by its own criterion (tree exhausted or the
        user's gap reached), else why it stopped (TIME_LIMIT, ITERATION_LIMIT, INTERRUPTED).
        The objective is the cost of the assignment with its planes refitted; the bound is
        capped at it and floored at 0. The gap rule sees the unit-scale objective and bound
        (see the module docstring): the status is the same on every scaling of the points.
        """
        unit_solution = khc_solution(self.unit, assignment, self.k)
        unit_objective = float(unit_solution["cluster_costs"].sum())
        # costs are sums of squares: 0 is always a bound (a backend's -1e-9 is its tolerance)
        unit_bound = None if unit_bound is None else min(max(float(unit_bound), 0.0), unit_objective)
        termination, status, gap = settle(unit_objective, unit_bound, has_solution=True, stopped=stopped)
        solution = self._user_solution(unit_solution)
        objective = float(solution["cluster_costs"].sum())
        bound = None if unit_bound is None else min(self.cost(unit_bound), objective)
        stats = dict(stats or {})
        if self.scale != 1.0 or np.any(self.centre):
            stats.setdefault("unit_scale", self.scale)
        return Result(termination, status, objective=objective, bound=bound, gap=gap, solution=solution,
                      stats=stats, family="khc", method=method, message=message)


class KhcSolver(Solver):
    """A method of the ``khc`` family: every one compiles a model to the same :class:`KhcProblem`."""

    family = "khc"

    @classmethod
    def compile(cls, model) -> KhcProblem:
        return KhcProblem.of(model)
