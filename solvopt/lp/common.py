"""What the ``lp`` solvers (HiGHS, SCIP, Gurobi) share: the base class, the kind check, the Result.

Every backend reports its incumbent, its certified bound and why it stopped; :func:`lp_result`
turns that into a :class:`~solvopt.core.result.Result` through the one gap rule
(:func:`solvopt.core.status.settle`), so that OPTIMAL, FEASIBLE_WITHIN_GAP, the limits,
INTERRUPTED and UNBOUNDED mean the same on every backend and in every family.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from solvopt.core.errors import ModelError
from solvopt.core.options import DEFAULT_ABS_GAP, Option, SolveOptions
from solvopt.core.progress import Progress
from solvopt.core.registry import Solver, solvers
from solvopt.core.result import Result, SolutionStatus, Termination
from solvopt.core.status import settle
from solvopt.dsl.standard_form import StandardForm


def _raw_params(value: Any) -> dict[str, Any]:
    """A mapping of a backend's own parameter names to plain values (the escape hatch)."""
    if not isinstance(value, dict):
        raise TypeError(f"expected a dict of parameter name -> value, got {type(value).__name__}")
    for key, v in value.items():
        if not isinstance(key, str):
            raise TypeError(f"parameter names must be strings, got {key!r}")
        if not isinstance(v, (bool, int, float, str)):
            raise TypeError(f"parameter {key!r} must be a bool, number or string, got {type(v).__name__}")
    return dict(value)


_raw_params.__name__ = "dict"   # the type `solvopt methods --verbose` shows


def params_option(backend: str) -> Option:
    return Option("params", _raw_params, None,
                  f"{backend} parameters by their {backend} names, set after solvopt's (name -> value)")


class LpSolver(Solver):
    """Base of the ``lp`` family's solvers: they solve a :class:`StandardForm` of the kinds they list.

    ``capabilities`` lists the kinds (lp, milp, qp, miqp, qcp) a backend takes; a model of
    another kind is a ModelError pointing at the methods that take it.
    """

    family = "lp"

    @classmethod
    def compile(cls, model) -> StandardForm:
        """A DSL ``Model`` (or a file's model) compiled to its StandardForm; a StandardForm as is."""
        if isinstance(model, StandardForm):
            return model
        if not callable(getattr(model, "compile", None)):
            raise ModelError(f"method lp/{cls.name} solves a DSL Model or a StandardForm, got {type(model).__name__}")
        return model.compile()

    def solve(self, compiled: StandardForm, options: SolveOptions) -> Result:
        if not isinstance(compiled, StandardForm):
            raise ModelError(f"method lp/{self.name} solves a StandardForm (Model.compile()), "
                             f"got {type(compiled).__name__}")
        kinds = set(self.capabilities)
        if compiled.kind not in kinds:
            takers = [s.name for s in solvers("lp") if compiled.kind in s.capabilities]
            raise ModelError(f"method {self.name!r} does not solve {compiled.kind.upper()} models (it takes "
                             f"{', '.join(sorted(kinds))}); try method={' or '.join(map(repr, takers)) or 'none'}")
        scale = objective_scale(compiled)
        if scale == 1.0:
            return self.solve_form(compiled, options)
        return unscaled_result(self.solve_form(scaled_form(compiled, scale), scaled_options(options, scale)), scale)

    def solve_form(self, sf: StandardForm, options: SolveOptions) -> Result:  # pragma: no cover - abstract
        raise NotImplementedError


def objective_scale(sf: StandardForm) -> float:
    """The objective's own scale: the power of two at or just above its largest coefficient.

    The backends' tolerances are absolute (HiGHS: dual feasibility 1e-7 and a MIP absolute gap;
    SCIP and Gurobi alike), so an objective whose coefficients are all 1e-12 looks optimal at
    any feasible point, and one of 1e12 never converges. :meth:`LpSolver.solve` hands the
    backend the objective divided by this scale (exactly: a power of two) and settles the status
    there, so multiplying the objective by 10^k changes neither the termination nor the point.
    1.0 for an objective without a nonzero finite coefficient.
    """
    high = float(np.max(np.abs(sf.c), initial=0.0)) if sf.c.size else 0.0
    if sf.Q is not None and sf.Q.nnz:
        high = max(high, float(np.max(np.abs(sf.Q.data))))
    if not (math.isfinite(high) and high > 0.0):
        return 1.0
    return math.ldexp(1.0, math.frexp(high)[1])


def scaled_form(sf: StandardForm, scale: float) -> StandardForm:
    """``sf`` with its objective (linear, quadratic, offset) divided by ``scale``; the rows as they are."""
    return dataclasses.replace(sf, c=sf.c / scale, Q=None if sf.Q is None else sf.Q / scale,
                               offset=sf.offset / scale)


def scaled_options(options: SolveOptions, scale: float) -> SolveOptions:
    """The options in the scaled frame: a user's ``abs_gap`` is an objective difference in the
    user's units (divided by ``scale``); left at its default it is the scaled frame's tolerance."""
    if options.abs_gap == DEFAULT_ABS_GAP:
        return options
    return dataclasses.replace(options, abs_gap=options.abs_gap / scale)


def unscaled_result(result: Result, scale: float) -> Result:
    """A Result solved in the scaled frame, back in the user's units: objective, bound and the
    duals (row duals, reduced costs) times ``scale``; the gap is relative and stays."""
    def back(v):
        return None if v is None else v * scale
    result.objective = back(result.objective)
    result.bound = back(result.bound)
    for key in ("row_dual", "reduced_cost"):
        if key in result.solution:
            result.solution[key] = np.asarray(result.solution[key], dtype=float) * scale
    result.stats["objective_scale"] = scale
    return result


def lp_result(sf: StandardForm, stopped: Termination | None, *, objective: float | None, bound: float | None,
              solution: dict, stats: dict, message: str, infinity: float = math.inf) -> Result:
    """The Result of a backend's solve of ``sf``, settled by the one gap rule.

    ``stopped`` is None when the backend finished by its own criterion (optimal, or its gap
    target reached), else why it stopped (TIME_LIMIT, ITERATION_LIMIT, INTERRUPTED, INFEASIBLE,
    UNBOUNDED, NUMERICAL_ERROR, ERROR). A bound at or beyond the backend's ``infinity`` is
    -inf (+inf when maximising). An unbounded model has objective and bound -inf (+inf) and
    solution status NONE: whatever point the backend holds is dropped.
    """
    if bound is not None and (abs(bound) >= infinity or math.isnan(bound)):
        bound = -math.inf * sf.sense
    if objective is not None and (abs(objective) >= infinity or math.isnan(objective)):
        objective = None
    has_solution = "x" in solution and objective is not None
    termination, status, gap = settle(objective, bound, has_solution=has_solution, stopped=stopped, sense=sf.sense)
    if termination is Termination.UNBOUNDED:
        objective = bound = -math.inf * sf.sense
        solution = {k: v for k, v in solution.items() if k != "x"}
    elif status is SolutionStatus.NONE:
        objective = None
        solution = {k: v for k, v in solution.items() if k != "x"}
    if termination in (Termination.INFEASIBLE, Termination.ERROR, Termination.NUMERICAL_ERROR):
        bound = None
    return Result(termination, status, objective=objective, bound=bound, gap=gap, solution=solution, stats=stats,
                  message=message)


def backend_log(options: SolveOptions, backend: str) -> Callable[[str], None] | None:
    """Where a backend's log lines go: progress lines on stderr (when enabled) and ``options.log``.

    None when neither is on, so the backend can leave its logging off. Solver logs never go
    to stdout (the CLI prints JSON there).
    """
    progress = Progress(options.progress, log=options.log)
    if not progress.enabled and options.log is None:
        return None

    def emit(line: str) -> None:
        line = line.rstrip()
        if line.strip():
            progress(f"{backend}: {line}", force=True)
    return emit
