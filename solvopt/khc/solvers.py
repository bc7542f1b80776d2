"""Registry provider of the k-HC2 assignment methods: "bnb", "heuristic", "brute-force".

Each compiles a :class:`~solvopt.dsl.hyperplane.HyperplaneClustering` (or anything with
``.points`` and ``.k``) to a :class:`~solvopt.khc.problem.KhcProblem` (the points in unit scale),
solves there and returns a Result in the user's units whose ``objective`` is the sum of squared
distances of the reported assignment (planes refitted), ``solution`` is
:func:`~solvopt.khc.geometry.khc_solution`, and ``bound`` is a proven lower bound (or the
trivial 0); termination and status come from the one gap rule
(:func:`solvopt.core.status.settle`). Every method returns its best on Ctrl-C (termination
INTERRUPTED). The MINLP methods ("sbb", "scip", "gurobi") live in :mod:`solvopt.khc.sbb` and
:mod:`solvopt.khc.external`.
"""
from __future__ import annotations

import time

from ..core.interrupt import stop_requested
from ..core.options import Option, SolveOptions
from ..core.progress import Progress
from ..core.registry import register
from ..core.result import Result, Termination
from .bnb import ORDERS, solve_bnb
from .brute_force import solve_brute_force
from .heuristics import kplane
from .options import count_option, restarts_option, switch, switch_or_auto
from .problem import KhcProblem, KhcSolver

_WHY = {None: "search complete", Termination.TIME_LIMIT: "time limit reached",
        Termination.ITERATION_LIMIT: "node limit reached", Termination.INTERRUPTED: "interrupted"}


@register
class BnbSolver(KhcSolver):
    name = "bnb"
    default = True
    description = "exact assignment branch-and-bound on partial-cluster eigenvalue bounds (Numba)"
    capabilities = ("exact", "time_limit", "node_limit", "bound")
    honours = frozenset({"rel_gap", "abs_gap", "node_limit", "threads"})  # threads: solvopt.khc.parallel
    options = (
        restarts_option(0, "for the first incumbent (0: a trivial one)"),
        count_option("extra_restarts", 0, None, "more k-plane restarts from the first incumbent (default: "
                                                "m - 20 above 20 points, within 10% of a time limit)"),
        Option("order", str, "auto", "branching order of the points (auto: dynamic from 31 points on)",
               choices=ORDERS),
        Option("suffix_bounds", switch_or_auto, "auto",
               "Russian-doll suffix bounds (static orders: solve every suffix first; dynamic: the split "
               "dolls from 70 points on); auto: dynamic's split dolls, and every suffix after half a time limit"),
        Option("charge_bound", switch, False, "charge the unassigned points (solvopt.khc.bounds; static orders)"),
    )

    def solve(self, compiled, options: SolveOptions) -> Result:
        problem = KhcProblem.of(compiled)
        extra = options.extra
        out = solve_bnb(problem.unit, problem.k, time_limit=options.time_limit, node_limit=options.node_limit,
                        rel_gap=options.rel_gap, abs_gap=problem.unit_abs_gap(options.abs_gap),
                        restarts=extra["restarts"], extra_restarts=extra["extra_restarts"], seed=options.seed,
                        order=extra["order"],
                        progress=Progress(options.progress, log=options.log), suffix_bounds=extra["suffix_bounds"],
                        charge_bound=extra["charge_bound"], cost_unit=problem.cost(1.0), threads=options.threads)
        message = _WHY[out.stopped_by]
        if not out.complete and out.suffix_bounds:
            message += f" after {out.dolls_solved} of the nested suffix problems"
        stats = {"nodes": out.nodes, "order": out.order, "heuristic_objective": problem.cost(out.heuristic_objective),
                 "suffix_bounds": out.suffix_bounds, "threads": out.threads}
        if out.suffix_bounds:
            stats["dolls_solved"] = out.dolls_solved
        return problem.result(out.assignment, out.bound, stopped=out.stopped_by, method=self.name,
                              stats=stats, message=message)


@register
class HeuristicSolver(KhcSolver):
    name = "heuristic"
    description = "k-plane (Bradley-Mangasarian) restarts with rank-one local search; no optimality proof"
    capabilities = ("time_limit",)
    honours = frozenset()
    options = (
        restarts_option(1, "(seeded k-plane++ / random starts, each polished by local search)"),
        count_option("max_iter", 1, 100, "k-plane iterations and local-search passes per start"),
        Option("pursuit", switch_or_auto, "auto",
               "one more start by projection-pursuit peeling (solvopt.khc.pursuit); auto: from 5 dimensions "
               "on, with 10 n points per plane"),
    )

    def solve(self, compiled, options: SolveOptions) -> Result:
        problem = KhcProblem.of(compiled)
        restarts = options.extra["restarts"]
        start = time.perf_counter()
        Progress(options.progress, log=options.log)(f"heuristic: {restarts:,} k-plane restarts")   # the run has begun
        labels, _ = kplane(problem.unit, problem.k, restarts=restarts, seed=options.seed,
                           max_iter=options.extra["max_iter"], time_limit=options.time_limit,
                           pursuit=options.extra["pursuit"])
        # A heuristic proves nothing beyond the trivial bound 0 (costs are sums of squares): the gap
        # rule calls it optimal only when its cost is within the absolute tolerance of 0.
        if stop_requested():
            stopped, message = Termination.INTERRUPTED, "heuristic: interrupted"
        elif options.time_limit is not None and time.perf_counter() - start > options.time_limit:
            stopped, message = Termination.TIME_LIMIT, "heuristic: time limit reached"
        else:
            stopped, message = Termination.ITERATION_LIMIT, "heuristic: stopped after its restarts"
        return problem.result(labels, 0.0, stopped=stopped, method=self.name, stats={"restarts": restarts},
                              message=message + "; the bound is the trivial 0, no optimality proof")


@register
class BruteForceSolver(KhcSolver):
    name = "brute-force"
    description = "enumerate every assignment up to relabelling (reference; refuses k^m/k! > 1e7)"
    capabilities = ("exact", "time_limit")
    honours = frozenset()

    def solve(self, compiled, options: SolveOptions) -> Result:
        problem = KhcProblem.of(compiled)
        labels, cost, complete = solve_brute_force(problem.unit, problem.k, time_limit=options.time_limit,
                                                   progress=Progress(options.progress, log=options.log))
        if complete:
            return problem.result(labels, cost, stopped=None, method=self.name, message="every assignment enumerated")
        stopped = Termination.INTERRUPTED if stop_requested() else Termination.TIME_LIMIT
        return problem.result(labels, 0.0, stopped=stopped, method=self.name,
                              message=f"{_WHY[stopped]} before the enumeration "
                                      "ended; the bound is the trivial 0")
