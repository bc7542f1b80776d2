"""Registry provider of the k-HC2 assignment methods: "bnb", "heuristic", "brute-force".

Each works on a :class:`~solvopt.dsl.hyperplane.HyperplaneClustering` (or anything with
``.points`` and ``.k``) and returns a Result whose ``objective`` is the sum of squared
distances of the reported assignment (planes refitted), ``solution`` is
:func:`~solvopt.khc.geometry.khc_solution`, and ``bound`` is a proven lower bound (or the
trivial 0). The MINLP methods ("sbb", "scip", "gurobi") live in :mod:`solvopt.khc.sbb`.
"""
from __future__ import annotations

import numbers
import time

from ..core.errors import ModelError
from ..core.options import SolveOptions
from ..core.progress import Progress
from ..core.registry import Solver, register
from ..core.result import Result, SolutionStatus, Termination, relative_gap
from .bnb import ORDERS, solve_bnb
from .brute_force import solve_brute_force
from .geometry import khc_solution, model_data
from .heuristics import kplane

# Gaps at or below this count as proven optimal (the default SolveOptions.rel_gap).
OPTIMAL_GAP = 1e-6


def _positive_int(options: SolveOptions, name: str) -> int:
    value = options.extra[name]
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ModelError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _result(points, k, assignment, bound, termination, options, method, stats, message="") -> Result:
    solution = khc_solution(points, assignment, k)
    objective = float(solution["cluster_costs"].sum())
    if bound is not None:
        bound = min(float(bound), objective)
    gap = relative_gap(objective, bound)
    if termination is Termination.OPTIMAL and gap is not None and gap > OPTIMAL_GAP \
            and objective - bound > options.abs_gap:
        termination = Termination.FEASIBLE_WITHIN_GAP
    status = SolutionStatus.OPTIMAL if termination is Termination.OPTIMAL else SolutionStatus.FEASIBLE
    return Result(termination, status, objective=objective, bound=bound, gap=gap, solution=solution,
                  stats=stats, family="khc", method=method, message=message)


class _AssignmentSolver(Solver):
    family = "khc"

    @classmethod
    def compile(cls, model):
        model_data(model)  # validate early
        return model


@register
class BnbSolver(_AssignmentSolver):
    name = "bnb"
    default = True
    description = "exact assignment branch-and-bound on partial-cluster eigenvalue bounds (Numba)"
    capabilities = ("exact", "time_limit", "node_limit", "bound")
    extra_options = {"restarts": 10, "order": "farthest", "suffix_bounds": False}

    def solve(self, compiled, options: SolveOptions) -> Result:
        points, k = model_data(compiled)
        restarts = _positive_int(options, "restarts")
        order = options.extra["order"]
        if order not in ORDERS:
            raise ModelError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
        progress = Progress(options.progress, log=options.log)
        out = solve_bnb(points, k, time_limit=options.time_limit, node_limit=options.node_limit,
                        rel_gap=options.rel_gap, abs_gap=options.abs_gap, restarts=restarts, seed=options.seed,
                        order=order, progress=progress, suffix_bounds=bool(options.extra["suffix_bounds"]))
        if out.complete:
            termination, message = Termination.OPTIMAL, "search complete"
        elif out.stopped_by == "nodes":
            termination, message = Termination.ITERATION_LIMIT, "node limit reached"
        else:
            termination, message = Termination.TIME_LIMIT, "time limit reached"
        if not out.complete and options.extra["suffix_bounds"]:
            message += f" after {out.dolls_solved} of the nested suffix problems"
        stats = {"nodes": out.nodes, "order": order}
        if options.extra["suffix_bounds"]:
            stats["dolls_solved"] = out.dolls_solved
        return _result(points, k, out.assignment, out.bound, termination, options, self.name, stats, message)


@register
class HeuristicSolver(_AssignmentSolver):
    name = "heuristic"
    description = "k-plane (Bradley-Mangasarian) restarts with rank-one local search; no optimality proof"
    capabilities = ("time_limit",)
    extra_options = {"restarts": 10, "max_iter": 100}

    def solve(self, compiled, options: SolveOptions) -> Result:
        points, k = model_data(compiled)
        restarts = _positive_int(options, "restarts")
        max_iter = _positive_int(options, "max_iter")
        start = time.perf_counter()
        labels, cost = kplane(points, k, restarts=restarts, seed=options.seed, max_iter=max_iter,
                              time_limit=options.time_limit)
        timed_out = options.time_limit is not None and time.perf_counter() - start > options.time_limit
        # A heuristic proves nothing beyond the trivial bound 0 (costs are sums of squares);
        # it is optimal only when it finds cost 0.
        if cost <= 0.0:
            termination = Termination.OPTIMAL
            message = "heuristic found cost 0, which the trivial bound 0 proves optimal"
        elif timed_out:
            termination = Termination.TIME_LIMIT
            message = "heuristic: time limit reached; bound is the trivial 0, no optimality proof"
        else:
            termination = Termination.ITERATION_LIMIT
            message = "heuristic: stopped after its restarts; bound is the trivial 0, no optimality proof"
        stats = {"restarts": restarts}
        return _result(points, k, labels, 0.0, termination, options, self.name, stats, message)


@register
class BruteForceSolver(_AssignmentSolver):
    name = "brute-force"
    description = "enumerate every assignment up to relabelling (reference; refuses k^m/k! > 1e7)"
    capabilities = ("exact", "time_limit")

    def solve(self, compiled, options: SolveOptions) -> Result:
        points, k = model_data(compiled)
        labels, cost, complete = solve_brute_force(points, k, time_limit=options.time_limit)
        if complete:
            return _result(points, k, labels, cost, Termination.OPTIMAL, options, self.name, {},
                           "every assignment enumerated")
        return _result(points, k, labels, 0.0, Termination.TIME_LIMIT, options, self.name, {},
                       "time limit reached before the enumeration ended; bound is the trivial 0")
