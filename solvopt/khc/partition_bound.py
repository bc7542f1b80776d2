"""Registry provider of the k-HC2 method for large point sets: "partition-bound".

The incumbent comes from the k-plane heuristic (:func:`~solvopt.khc.heuristics.kplane`, which
subsamples its restarts above a few thousand points), the certified bound from exact solves of
the groups of stratified partitions (:func:`~solvopt.khc.subset_bound.subset_bound`:
OPT(all) >= sum_r OPT(S_r)). Both run in the unit scale of
:class:`~solvopt.khc.problem.KhcProblem`; the status comes from the one gap rule. The method
proves optimality only where the groups' optima happen to add up to the heuristic's cost
(e.g. points exactly on k planes); it is meant for a certified *gap* at m = 10^4 to 10^5.
"""
from __future__ import annotations

import time

from ..core.interrupt import stop_reason
from ..core.options import Option, SolveOptions, positive_number
from ..core.progress import Progress
from ..core.registry import register
from ..core.result import Result, Termination
from .heuristics import kplane
from .options import count_option, restarts_option
from .problem import KhcProblem, KhcSolver
from .subset_bound import subset_bound

# share of the time limit the heuristic may take before the bound starts
HEURISTIC_SHARE = 0.25


@register
class PartitionBoundSolver(KhcSolver):
    name = "partition-bound"
    description = ("k-plane incumbent + certified bound from exact bnb solves of the groups of "
                   "stratified partitions (large m)")
    capabilities = ("time_limit", "bound")
    honours = frozenset()
    options = (
        restarts_option(1, "for the incumbent"),
        count_option("group_size", 0, 0, "points per group (0: calibrated to group_seconds)"),
        Option("group_seconds", positive_number, 1.0, "target bnb time per group (calibrates the group size)"),
        count_option("partitions", 1, 3, "stratified partitions solved (the best bound is kept)"),
        count_option("workers", 1, 1, "processes solving groups (>1: a dask LocalCluster; needs the dist extra)"),
    )

    def solve(self, compiled, options: SolveOptions) -> Result:
        problem = KhcProblem.of(compiled)
        extra = options.extra
        start = time.perf_counter()
        limit = options.time_limit
        heuristic_limit = None if limit is None else HEURISTIC_SHARE * limit
        progress = Progress(options.progress, log=options.log)
        progress("partition-bound: k-plane incumbent, then the partitions' bound")   # at once: the run has begun
        labels, _ = kplane(problem.unit, problem.k, restarts=extra["restarts"], seed=options.seed,
                           time_limit=heuristic_limit)
        left = None if limit is None else max(limit - (time.perf_counter() - start), 0.0)
        stopped = stop_reason(None if limit is None else start + limit)
        if stopped is None:
            workers = extra["workers"]
            trace = []   # (seconds since the solve started, certified bound in the user's units)
            offset = time.perf_counter() - start
            out = subset_bound(problem.unit, problem.k, group_size=extra["group_size"] or None,
                               group_seconds=extra["group_seconds"], partitions=extra["partitions"],
                               time_limit=left, seed=options.seed, workers=None if workers == 1 else workers,
                               progress=progress,
                               on_bound=lambda seconds, bound: trace.append((offset + seconds, problem.cost(bound))))
            bound, stopped = out.bound, out.stopped
            stats = {"group_size": out.group_size, "groups": out.groups, "groups_proven": out.groups_proven,
                     "groups_solved": out.groups_solved, "partitions_solved": len(out.partition_bounds),
                     "partition_bounds": [problem.cost(b) for b in out.partition_bounds], "nodes": out.nodes,
                     "bound_time": out.seconds, "bound_trace": trace}
            message = (f"bound from {len(out.partition_bounds)} partition(s) into {out.groups} groups of "
                       f"~{out.group_size} points ({out.groups_proven} of {out.groups} proven in the best)")
        else:
            bound, stats, message = 0.0, {}, "stopped before the bound started; the bound is the trivial 0"
        # A finished run is not a search that closed its gap: it stopped after its partitions.
        why = Termination.ITERATION_LIMIT if stopped is None else stopped
        return problem.result(labels, bound, stopped=why, method=self.name, stats=stats, message=message)
