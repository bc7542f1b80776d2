"""Methods "scip" and "gurobi" for k-HC2: the published MINLP (built in the DSL) solved by them.

The model of :func:`~solvopt.khc.formulation.build_model` compiles to a StandardForm with the
nonconvex unit-norm rows as quadratic constraints; the DSL's SCIP (pyscipopt) and Gurobi
(gurobipy, NonConvex=2) backends solve that very form. The incumbent assignment is read from
``x`` and its planes refitted (:func:`~solvopt.khc.geometry.khc_solution`), so ``objective`` is
the k-HC2 cost of the assignment (never above the solver's own value); ``bound`` is the
solver's dual bound (for a p-norm model: a bound on LB_p, hence on OPT_2).
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from solvopt.core.options import COMMON_OPTIONS, SolveOptions
from solvopt.core.registry import Solver, register
from solvopt.core.result import Result, SolutionStatus, Termination, relative_gap

from .formulation import build_model, model_norms
from .geometry import khc_solution, model_data


def assignment_from_x(x: np.ndarray) -> np.ndarray:
    """Cluster labels from (near-)binary assignment values."""
    return np.argmax(np.asarray(x), axis=1).astype(np.int64)


class ExternalMINLPSolver(Solver):
    """Solve the exported MINLP with one of the DSL's global backends."""

    family = "khc"
    backend: ClassVar[str]
    extra_options = {"norms": None}

    @classmethod
    def compile(cls, model):
        model_data(model)
        return model

    def solve(self, compiled, options: SolveOptions) -> Result:
        points, k = model_data(compiled)
        norms = model_norms(compiled, options.extra["norms"])
        model, handles = build_model(compiled, norms)
        common = {name: getattr(options, name) for name in COMMON_OPTIONS}
        raw = model.solve(method=self.backend, **common)
        stats = dict(raw.stats, norms=sorted(norms), model_objective=raw.objective,
                     backend=self.backend, threads=options.threads)
        if raw.objective is None or handles["x"].value is None:
            return Result(raw.termination, SolutionStatus.NONE, bound=raw.bound, stats=stats, family="khc",
                          method=self.name, message=raw.message)
        solution = khc_solution(points, assignment_from_x(handles["x"].value), k)
        objective = float(solution["cluster_costs"].sum())
        bound = raw.bound
        if bound is not None and "2" in norms:
            bound = min(bound, objective)
        solved = "2" in norms and raw.termination is Termination.OPTIMAL
        return Result(raw.termination, SolutionStatus.OPTIMAL if solved else SolutionStatus.FEASIBLE,
                      objective=objective, bound=bound, gap=relative_gap(objective, bound), solution=solution,
                      stats=stats, family="khc", method=self.name, message=raw.message)


@register
class ScipMINLP(ExternalMINLPSolver):
    name = "scip"
    backend = "scip"
    requires_modules = ("pyscipopt",)
    description = "SCIP (pyscipopt) on the published MINLP built in the DSL, with the chosen norm blocks"
    capabilities = ("exact", "time_limit", "bound", "norms")
    install_hint = "pip install pyscipopt  (or solvopt[bench])"


@register
class GurobiMINLP(ExternalMINLPSolver):
    name = "gurobi"
    backend = "gurobi"
    requires_modules = ("gurobipy",)
    description = "Gurobi (NonConvex=2) on the published MINLP built in the DSL, with the chosen norm blocks"
    capabilities = ("exact", "time_limit", "bound", "norms")
    install_hint = "pip install gurobipy  (its bundled licence is size-limited)"
