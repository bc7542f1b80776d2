"""Methods "scip" and "gurobi" for k-HC2: the published MINLP (built in the DSL) solved by them.

The model of :func:`~solvopt.dsl.hyperplane_formulation.khc_minlp`, built on the points in unit
scale (:class:`~solvopt.khc.problem.KhcProblem`), compiles to a StandardForm with the nonconvex
unit-norm rows as quadratic constraints; the ``lp`` family's SCIP (pyscipopt) and Gurobi
(gurobipy, NonConvex=2) methods solve that very form. The incumbent assignment is read from
``x`` and its planes refitted, so ``objective`` is the k-HC2 cost of the assignment (never above
the solver's own value); ``bound`` is the solver's dual bound (for a p-norm model: a bound on
LB_p, hence on OPT_2), both in the user's units. Termination and status follow the one gap rule
(:func:`solvopt.core.status.settle`) on those numbers; the backend's feasibility tolerance is
tightened to 1e-8 (option ``feastol``) so that its verdicts can meet the 1e-6 gap of OPTIMAL. A
Ctrl-C reaches the backend through the ``lp`` method (SCIP: ``interruptSolve`` from its event
handler; Gurobi: its callback), which returns its incumbent and bound: reported here as INTERRUPTED.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from solvopt.core.options import UNIVERSAL_OPTIONS, Option, SolveOptions
from solvopt.core.registry import register
from solvopt.core.result import Result, Termination
from solvopt.core.status import settle
from solvopt.dsl.hyperplane_formulation import khc_minlp

from .options import NORMS, problem_norms
from .problem import KhcProblem, KhcSolver

# the backend's own verdict -> why it stopped (None: finished by its own criterion; settle decides)
_FINISHED = (Termination.OPTIMAL, Termination.FEASIBLE_WITHIN_GAP)


def _feastol(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1e-9 <= value <= 1e-2:
        raise ValueError(f"expected a tolerance in [1e-9, 1e-2], got {value!r}")
    return float(value)


_feastol.__name__ = "float"


def assignment_from_x(x: np.ndarray) -> np.ndarray:
    """Cluster labels from (near-)binary assignment values."""
    return np.argmax(np.asarray(x), axis=1).astype(np.int64)


class ExternalMINLPSolver(KhcSolver):
    """Solve the exported MINLP with one of the ``lp`` family's global backends."""

    backend: ClassVar[str]
    feastol_param: ClassVar[str]          # the backend's name of its feasibility tolerance
    capabilities = ("exact", "time_limit", "bound", "norms")
    options = (
        NORMS,
        Option("feastol", _feastol, 1e-8,
               "the backend's feasibility tolerance on the MINLP rows; at the usual 1e-6 the unit-norm rows "
               "let |w| shrink and the bound overstate by ~1e-6 relative, more than OPTIMAL allows"),
    )

    def backend_options(self, problem: KhcProblem, options: SolveOptions) -> dict:
        """The common options for the backend method: the universal ones and those this method honours
        (which the backend honours too), ``abs_gap`` in unit scale (:meth:`KhcProblem.unit_abs_gap`)."""
        passed = {name: getattr(options, name) for name in UNIVERSAL_OPTIONS}
        for name in self.honours:
            passed[name] = getattr(options, name)
        passed["abs_gap"] = problem.unit_abs_gap(options.abs_gap)
        passed["params"] = {self.feastol_param: options.extra["feastol"]}
        return {k: v for k, v in passed.items() if v is not None}

    def solve(self, compiled, options: SolveOptions) -> Result:
        problem = KhcProblem.of(compiled)
        norms = problem_norms(problem, options.extra["norms"])
        model, handles = khc_minlp(problem.unit, problem.k, norms, big_m=problem.unit_big_m(),
                                   symmetry_breaking=problem.symmetry_breaking)
        raw = model.solve(method=self.backend, **self.backend_options(problem, options))
        stats = dict(raw.stats, norms=sorted(norms), model_objective=problem.cost(raw.objective),
                     backend=self.backend, threads=options.threads)
        stopped = None if raw.termination in _FINISHED else raw.termination
        if raw.objective is None or handles["x"].value is None:
            termination, status, _ = settle(None, None, has_solution=False, stopped=stopped)
            bound = problem.cost(raw.bound) if termination is not Termination.INFEASIBLE else None
            return Result(termination, status, bound=bound, stats=stats, family="khc", method=self.name,
                          message=raw.message)
        bound = raw.bound
        if bound is not None and not np.isfinite(bound):
            bound = None
        message = raw.message if "2" in norms else (
            f"{raw.message}; solved the {'+'.join(sorted(norms))}-norm model: bound <= LB_p <= OPT_2")
        return problem.result(assignment_from_x(handles["x"].value), bound, stopped=stopped, method=self.name,
                              stats=stats, message=message)


@register
class ScipMINLP(ExternalMINLPSolver):
    name = "scip"
    backend = "scip"
    feastol_param = "numerics/feastol"
    requires_modules = ("pyscipopt",)
    backend_packages = ("pyscipopt",)
    # SCIP's tree search is serial (lp/scip takes no threads): an explicit threads= is refused
    honours = frozenset({"rel_gap", "abs_gap", "node_limit"})
    description = "SCIP (pyscipopt) on the published MINLP built in the DSL, with the chosen norm blocks"
    install_hint = "pip install pyscipopt  (or solvopt[bench])"


@register
class GurobiMINLP(ExternalMINLPSolver):
    name = "gurobi"
    backend = "gurobi"
    feastol_param = "FeasibilityTol"
    requires_modules = ("gurobipy",)
    backend_packages = ("gurobipy",)
    honours = frozenset({"rel_gap", "abs_gap", "threads", "node_limit"})
    description = "Gurobi (NonConvex=2) on the published MINLP built in the DSL, with the chosen norm blocks"
    install_hint = "pip install gurobipy  (its bundled licence is size-limited)"

