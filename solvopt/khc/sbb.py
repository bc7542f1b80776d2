"""Method "sbb": our spatial branch-and-bound for k-HC2, strengthened by the 1- and inf-norm blocks.

The tree partitions the canonical optimal solutions (see :mod:`solvopt.khc.relaxation`): a
node fixes some points to clusters, restricts each normal w_j to a box and (with the inf-norm
block) decides some of its binaries. Each node is bounded by

* the node LP (:class:`~solvopt.khc.node_lp.NodeLP`, one HiGHS object re-solved from the last
  basis): the published MINLP with the d^2 objective outer-approximated by tangent cuts, the
  secant of ||w_j||^2 >= 1 over the box, the inf-/1-norm MILP blocks relaxed, per-node big-M;
* the fixed-assignment bound: the least-squares cost of the points already fixed to each
  cluster (option ``assignment_bound``);

after interval tightening of the box (FBBT). Branching: on a point whose assignment the LP
leaves fractional (k-way); when the assignment is integral, on a fractional norm-block binary,
then on the sign of a component of an infeasible normal (orthant), then by bisection. Node
selection is best-bound with dives; every LP rounding is refitted and locally improved into
an incumbent, the first one comes from the k-plane heuristic. The global bound is the smallest
bound of the open nodes at every moment, so any stop (time, nodes, gap) returns incumbent and
a valid bound. A stop request (Ctrl-C) is checked before every node and inside every node LP
(HiGHS' interrupt callbacks, :func:`solvopt.dsl.highs_export.watch_interrupt`): the search
then returns its incumbent and bound with termination INTERRUPTED, the interrupted node kept
open. The engine works on the points in unit scale (:class:`~solvopt.khc.problem.KhcProblem`)
and reports in the user's units. Methods "scip" and "gurobi" (the same MINLP through the DSL)
live in :mod:`solvopt.khc.external`, a solver module of the family's descriptor.
"""
from __future__ import annotations

import heapq
import itertools
import math
import time
from dataclasses import dataclass, field

import numpy as np

from solvopt.core.errors import ModelError
from solvopt.core.interrupt import stop_reason
from solvopt.core.options import Option, SolveOptions
from solvopt.core.progress import Progress
from solvopt.core.registry import register
from solvopt.core.result import Result, Termination, relative_gap
from solvopt.dsl.hyperplane_data import data_big_m

from . import relaxation as rx
from .geometry import assignment_cost
from .heuristics import kplane, local_search
from .node_lp import NodeLP
from .options import NORMS, count_option, problem_norms, restarts_option
from .problem import KhcProblem, KhcSolver

INTEGRALITY_TOL = 1e-6
_WHY = {None: "search complete", Termination.TIME_LIMIT: "time limit reached",
        Termination.ITERATION_LIMIT: "node limit reached", Termination.INTERRUPTED: "interrupted"}
NORM_TOL = 1e-6
# node-LP statuses that stop the search (the node stays open, its bound still valid)
_LP_STOPS = {"time_limit": Termination.TIME_LIMIT, "interrupted": Termination.INTERRUPTED}


@dataclass(order=True)
class Node:
    bound: float                                 # heap key: best bound first, then deepest, then oldest
    order: int
    allowed: np.ndarray = field(compare=False)   # (m, k) bool: clusters point i may still join
    wlo: np.ndarray = field(compare=False)       # (k, n) box of the normals
    whi: np.ndarray = field(compare=False)
    ulo: np.ndarray = field(compare=False)       # (k, n) bounds of the inf-norm binaries
    uhi: np.ndarray = field(compare=False)
    depth: int = field(compare=False, default=0)
    distances: np.ndarray | None = field(compare=False, default=None)   # (m, k) to the decided planes

    def child(self, bound: float, order: int, **changes) -> Node:
        fields_ = {name: getattr(self, name).copy() for name in ("allowed", "wlo", "whi", "ulo", "uhi")}
        node = Node(bound, order, depth=self.depth + 1, **fields_)
        for name, (index, value) in changes.items():
            getattr(node, name)[index] = value
        return node


class SpatialBranchAndBound:
    """One solve of k-HC2 (or of a p-norm relaxation) by spatial branch-and-bound.

    ``points`` are solved as given (costs, ``big_m`` and ``options.abs_gap`` in their units);
    ``problem`` (a :class:`~solvopt.khc.problem.KhcProblem` whose ``unit`` points these are)
    reports the result in the user's units. ``restarts``: k-plane restarts of the first
    incumbent (0: none); ``initial``: an assignment to start from instead.
    """

    def __init__(self, points: np.ndarray, k: int, norms: frozenset[str], options: SolveOptions,
                 big_m: float | None = None, symmetry_breaking: bool = True, assignment_bound: bool = True,
                 restarts: int = 10, point_rule: str = "maxmin", cut_rounds: int = 1,
                 problem: KhcProblem | None = None, initial: np.ndarray | None = None):
        self.problem = problem if problem is not None else KhcProblem.identity(points, k)
        self.points = points
        self.m, self.n = points.shape
        self.k = k
        self.norms = norms
        self.two_norm = "2" in norms
        self.options = options
        self.assignment_bound = assignment_bound
        # the fixed-assignment bound assumes unit 2-norm normals; a p-norm model allows
        # ||w||_2 >= 1/sqrt(n) (||w||_inf >= 1/sqrt n, or ||w||_1 >= 1), which scales costs by 1/n
        self.assignment_scale = 1.0 if self.two_norm else 1.0 / self.n
        self.restarts = restarts
        self.initial = initial
        if point_rule not in ("maxmin", "fractional"):
            raise ModelError(f"point_rule must be 'maxmin' or 'fractional', got {point_rule!r}")
        self.point_rule = point_rule
        # costs below this are rounding noise (e.g. a perfect fit computes as 1e-31, not 0)
        self.zero_tol = 1e-12 * max(1.0, float(np.sum((points - points.mean(axis=0)) ** 2)))
        diameter = data_big_m(points)
        self.big_m = diameter if big_m is None else min(float(big_m), diameter)
        root_allowed = np.ones((self.m, k), dtype=bool)
        if symmetry_breaking:   # clusters are labelled in order of their first point: x_ij only for j <= i
            root_allowed &= np.arange(k)[None, :] <= np.arange(self.m)[:, None]
        self.root_allowed = root_allowed
        self.pairs = np.argwhere(root_allowed)
        self.pair_index = -np.ones((self.m, k), dtype=np.int64)
        self.pair_index[self.pairs[:, 0], self.pairs[:, 1]] = np.arange(len(self.pairs))
        self.inf_threshold = 1.0 / math.sqrt(self.n)
        if not isinstance(cut_rounds, (int, np.integer)) or cut_rounds < 0:
            raise ModelError(f"cut_rounds must be an integer >= 0, got {cut_rounds!r}")
        self.lp = NodeLP(points, k, norms, self.pairs, self.big_m, cut_rounds=int(cut_rounds))
        # incumbent: best k-HC2 assignment (refitted planes) and the best value of the solved model
        self.best_assignment: np.ndarray | None = None
        self.best_cost = math.inf
        self.upper_assignment: np.ndarray | None = None
        self.upper = math.inf            # best feasible value of the model being solved (k-HC2 or LB_p problem)
        self.pruned_floor = math.inf     # smallest bound of a node pruned only thanks to the gap tolerance
        self.seen_roundings: set[bytes] = set()
        self.stats: dict[str, float] = {"nodes": 0, "lp_iterations": 0, "cut_rounds": 0, "max_depth": 0,
                      "branch_point": 0, "branch_binary": 0, "branch_orthant": 0, "branch_bisect": 0,
                      "pruned_by_assignment_bound": 0, "infeasible_nodes": 0, "lp_raised_bound": 0}
        self.counter = itertools.count()
        self.lp_stop: Termination | None = None   # why the last node LP was cut short

    # --- incumbents ----------------------------------------------------------------------
    def offer(self, assignment: np.ndarray, improve: bool = False) -> None:
        """Try an assignment as incumbent (after a local search when ``improve``)."""
        key = assignment.astype(np.int8).tobytes()
        if key in self.seen_roundings:
            return
        self.seen_roundings.add(key)
        if improve:
            assignment = local_search(self.points, assignment, self.k)
        cost = assignment_cost(self.points, assignment, self.k)
        if cost < self.best_cost - 1e-12 * (1 + abs(cost)):
            self.best_cost, self.best_assignment = cost, np.asarray(assignment, dtype=np.int64).copy()
        self.improve_upper(cost, assignment)   # a unit-norm solution is feasible for every norm set

    def improve_upper(self, value: float, assignment: np.ndarray) -> None:
        """A feasible value of the model being solved, and the assignment that attains it."""
        if value < self.upper:
            self.upper, self.upper_assignment = value, np.asarray(assignment, dtype=np.int64).copy()

    def initial_incumbent(self) -> None:
        self.offer(np.zeros(self.m, dtype=np.int64))
        if self.initial is not None:
            self.offer(self.canonical_labels(np.asarray(self.initial)))
        elif self.restarts > 0 and self.k > 1:
            assignment, _ = kplane(self.points, self.k, restarts=self.restarts, seed=self.options.seed,
                                   time_limit=self.options.time_limit)
            self.offer(self.canonical_labels(np.asarray(assignment)))

    def canonical_labels(self, assignment: np.ndarray) -> np.ndarray:
        """Relabel clusters in order of first appearance (the symmetry-breaking order)."""
        mapping: dict[int, int] = {}
        out = np.empty_like(assignment)
        for i, c in enumerate(assignment):
            out[i] = mapping.setdefault(int(c), len(mapping))
        return out

    # --- the node -------------------------------------------------------------------------
    def tighten(self, node: Node) -> bool:
        """FBBT on the node's boxes and inf-norm binaries (in place); False when infeasible."""
        for j in range(self.k):
            lo, hi = node.wlo[j], node.whi[j]
            if self.two_norm:
                if not rx.tighten_unit_box(lo, hi):
                    return False
            if "inf" in self.norms:
                node.uhi[j][hi < self.inf_threshold - 1e-12] = 0.0
                if node.uhi[j].sum() < 0.5 or node.ulo[j].sum() > 1.5:
                    return False
                if node.uhi[j].sum() < 1.5:            # only one component can carry the inf-norm
                    node.ulo[j] = node.uhi[j].copy()
                chosen = node.ulo[j] > 0.5
                lo[chosen] = np.maximum(lo[chosen], self.inf_threshold)
                if np.any(lo > hi + 1e-12):
                    return False
        return True

    def lp_bound(self, node: Node, deadline: float | None):
        glo, ghi = np.empty(self.k), np.empty(self.k)
        for j in range(self.k):
            glo[j], ghi[j] = rx.offset_range(self.points, node.wlo[j], node.whi[j])
        big_m = rx.node_big_m(self.points, node.wlo, node.whi, glo, ghi, self.big_m)
        pair_m = big_m[self.pairs[:, 0], self.pairs[:, 1]]
        allowed_pairs = node.allowed[self.pairs[:, 0], self.pairs[:, 1]]
        self.lp.purge_cuts(max(2000, 20 * len(self.pairs)))
        self.lp.set_node(node.wlo, node.whi, glo, ghi, allowed_pairs, pair_m, node.ulo, node.uhi)
        time_left = None if deadline is None else deadline - time.perf_counter()
        sol = self.lp.solve(time_left)
        self.stats["lp_iterations"] += sol.iterations
        self.stats["cut_rounds"] += sol.cut_rounds
        return sol

    def model_value(self, labels: np.ndarray, w: np.ndarray, g: np.ndarray) -> float:
        """The model objective of an LP point with an integral assignment (exact squares)."""
        r = np.einsum("il,il->i", self.points, w[labels]) - g[labels]
        return float(r @ r)

    def branch(self, node: Node, sol, refined: bool = False) -> list[Node] | None:
        """Children of ``node``: [] when its LP point solves the model on the node, None when the
        LP point is feasible but the tangent cuts have not converged yet (refine, then ask again)."""
        x = np.where(node.allowed, sol.x, -1.0)
        open_points = node.allowed.sum(axis=1) > 1
        fractional = np.where(open_points, 1.0 - x.max(axis=1), 0.0)
        labels = np.argmax(x, axis=1)
        bound = node.bound
        if fractional.max() > INTEGRALITY_TOL:
            return self.point_children(node, self.branching_point(node, fractional), x, bound)
        if sol.u is not None:
            frac_u = np.minimum(sol.u, 1.0 - sol.u)
            if frac_u.max() > INTEGRALITY_TOL:
                j, l = np.unravel_index(np.argmax(frac_u), frac_u.shape)
                self.stats["branch_binary"] += 1
                one = node.child(bound, next(self.counter), ulo=((j, l), 1.0))
                zero = node.child(bound, next(self.counter), uhi=((j, l), 0.0))
                return [one, zero] if sol.u[j, l] >= 0.5 else [zero, one]
        if sol.s is not None:
            frac_s = np.minimum(sol.s, 1.0 - sol.s)
            if frac_s.max() > INTEGRALITY_TOL:
                j, l = np.unravel_index(np.argmax(frac_s), frac_s.shape)
                self.stats["branch_binary"] += 1
                return self.split(node, int(j), int(l), 0.0, bound, prefer_upper=sol.s[j, l] >= 0.5)
        used = np.unique(labels)
        if self.two_norm:
            sq = np.sum(sol.w * sol.w, axis=1)
            short = [j for j in used if sq[j] < 1.0 - NORM_TOL]
            if short:
                j = max(short, key=lambda c: 1.0 - sq[c])
                return self.spatial_children(node, int(j), sol.w[j], bound)
        value = self.model_value(labels, sol.w, sol.g)
        self.improve_upper(value, labels)           # the LP point is feasible for the model
        if value <= sol.value + max(self.tolerance(), 1e-9 * (1.0 + abs(value))):
            # nothing in the node beats the incumbent by more than the tolerance: close it, and
            # keep its LP value in the global bound when that is below the incumbent
            if sol.value < self.upper:
                self.pruned_floor = min(self.pruned_floor, sol.value)
            return []
        if not refined:
            return None                             # ask for converged cuts first
        return self.fallback_children(node)

    def branching_point(self, node: Node, fractional: np.ndarray) -> int:
        """The open point to branch on: with rule "maxmin" the one farthest from every plane it may
        join (fitted to the decided points), so that each child raises the assignment bound;
        ties (e.g. no planes yet) and rule "fractional" take the LP's most fractional point."""
        if self.point_rule == "maxmin" and node.distances is not None:
            open_ = node.allowed.sum(axis=1) > 1
            reach = np.where(node.allowed, node.distances, np.inf).min(axis=1)
            score = np.where(open_, reach, -1.0)
            if score.max() > 0.0:
                return int(np.argmax(score + 1e-9 * fractional))
        return int(np.argmax(fractional))

    def point_children(self, node: Node, i: int, x: np.ndarray, bound: float) -> list[Node]:
        """k-way branch: point i joins one of its allowed clusters (nearest plane, then most LP weight, first)."""
        self.stats["branch_point"] += 1
        children = []
        near = node.distances[i] if node.distances is not None else np.zeros(self.k)
        for j in sorted(np.flatnonzero(node.allowed[i]), key=lambda c: (near[c], -x[i, c])):
            row = np.zeros(self.k, dtype=bool)
            row[j] = True
            children.append(node.child(bound, next(self.counter), allowed=(i, row)))
        return children

    def spatial_children(self, node: Node, j: int, wj: np.ndarray, bound: float) -> list[Node]:
        """Branch on normal j: the sign of a straddling component first, else bisection."""
        lo, hi = node.wlo[j], node.whi[j]
        straddle = np.flatnonzero((lo < -1e-9) & (hi > 1e-9))
        if straddle.size:
            l = int(straddle[np.argmax((hi - lo)[straddle])])
            self.stats["branch_orthant"] += 1
            return self.split(node, j, l, 0.0, bound, prefer_upper=wj[l] >= 0)
        gap = rx.secant_gap(wj, lo, hi)
        l = int(np.argmax(gap * (hi - lo)))
        self.stats["branch_bisect"] += 1
        return self.split(node, j, l, 0.5 * (lo[l] + hi[l]), bound, prefer_upper=wj[l] >= 0.5 * (lo[l] + hi[l]))

    def split(self, node: Node, j: int, l: int, at: float, bound: float, prefer_upper: bool) -> list[Node]:
        upper = node.child(bound, next(self.counter), wlo=((j, l), at))
        lower = node.child(bound, next(self.counter), whi=((j, l), at))
        return [upper, lower] if prefer_upper else [lower, upper]

    # --- the tree ------------------------------------------------------------------------
    def tolerance(self) -> float:
        """Gap below which a node cannot improve the incumbent enough to matter."""
        if not math.isfinite(self.upper):
            return 0.0
        return max(self.options.abs_gap, self.options.rel_gap * abs(self.upper), self.zero_tol)

    def prunable(self, bound: float) -> bool:
        if bound >= self.upper:
            return True
        if bound >= self.upper - self.tolerance():
            self.pruned_floor = min(self.pruned_floor, bound)
            return True
        return False

    def global_bound(self, heap: list[tuple], extra: list[Node]) -> float:
        candidates = [self.upper, self.pruned_floor] + [nd.bound for nd in extra]
        if heap:
            candidates.append(heap[0][0])
        return min(candidates)

    def process(self, node: Node, deadline: float | None) -> list[Node] | None:
        """Bound one node; returns its children ([] when closed) or None when its LP was cut short
        (HiGHS' time limit, or a stop request: ``self.lp_stop`` says which)."""
        if not self.tighten(node):
            self.stats["infeasible_nodes"] += 1
            return []
        if self.assignment_bound:
            fixed, node.distances = rx.fixed_planes(self.points, node.allowed)
            fixed *= self.assignment_scale
            node.bound = max(node.bound, fixed)
            if self.prunable(node.bound):
                self.stats["pruned_by_assignment_bound"] += 1
                return []
        sol = self.lp_bound(node, deadline)
        if sol.status in _LP_STOPS:
            self.lp_stop = _LP_STOPS[sol.status]
            return None
        if sol.status == "infeasible":
            self.stats["infeasible_nodes"] += 1
            return []
        if sol.status != "optimal":
            return self.fallback_children(node)
        if sol.value > node.bound + self.zero_tol:
            self.stats["lp_raised_bound"] += 1     # how often the LP beats the assignment bound
        node.bound = max(node.bound, sol.value)
        if self.stats["nodes"] == 1:
            self.stats["root_lp_bound"] = sol.value
        x = np.where(node.allowed, sol.x, -1.0)
        self.offer(np.argmax(x, axis=1), improve=True)
        if self.prunable(node.bound):
            return []
        children = self.branch(node, sol)
        if children is None:
            sol = self.lp.refine(None if deadline is None else deadline - time.perf_counter())
            self.stats["lp_iterations"] += sol.iterations
            self.stats["cut_rounds"] += sol.cut_rounds
            if sol.status in _LP_STOPS:
                self.lp_stop = _LP_STOPS[sol.status]
                return None
            if sol.status != "optimal":
                return self.fallback_children(node)
            node.bound = max(node.bound, sol.value)
            if self.prunable(node.bound):
                return []
            children = self.branch(node, sol, refined=True)
        return children

    def fallback_children(self, node: Node) -> list[Node]:
        """When HiGHS fails on a node, split it without LP information (the bound stays valid)."""
        open_points = np.flatnonzero(node.allowed.sum(axis=1) > 1)
        if open_points.size:
            return self.point_children(node, int(open_points[0]), np.zeros((self.m, self.k)), node.bound)
        j = int(np.argmax([np.max(node.whi[c] - node.wlo[c]) for c in range(self.k)]))
        return self.spatial_children(node, j, 0.5 * (node.wlo[j] + node.whi[j]), node.bound)

    def root(self) -> Node:
        wlo, whi = -np.ones((self.k, self.n)), np.ones((self.k, self.n))
        if "inf" not in self.norms:
            wlo[:, 0] = 0.0       # sign symmetry: (w, g) and (-w, -g) are the same plane
        return Node(0.0, next(self.counter), self.root_allowed.copy(), wlo, whi,
                    np.zeros((self.k, self.n)), np.ones((self.k, self.n)))

    def solve(self) -> Result:
        opts = self.options
        start = time.perf_counter()
        deadline = None if opts.time_limit is None else start + opts.time_limit
        progress = Progress(opts.progress, log=opts.log)
        self.initial_incumbent()
        heap: list[tuple] = []   # (bound, -depth, order, node)
        dive: list[Node] = [self.root()]
        stopped = None           # why the search stopped early (None: tree closed or gap reached)
        max_dive = self.m + 2 * self.k * self.n
        dive_length = 0
        unit = self.problem.cost(1.0)
        while True:
            lower = self.global_bound(heap, dive)
            gap = relative_gap(self.best_cost, lower)
            progress(f"sbb nodes {self.stats['nodes']} open {len(heap) + len(dive)} incumbent "
                     f"{self.best_cost * unit:.8g} bound {lower * unit:.8g} gap {100 * gap:.3g}%")
            if not heap and not dive:
                break
            if self.upper - lower <= self.tolerance():
                break
            stopped = stop_reason(deadline)
            if stopped is not None:
                break
            if opts.node_limit is not None and self.stats["nodes"] >= opts.node_limit:
                stopped = Termination.ITERATION_LIMIT
                break
            node = dive.pop() if dive else heapq.heappop(heap)[-1]
            if self.prunable(node.bound):
                continue
            self.stats["nodes"] += 1
            self.stats["max_depth"] = max(self.stats["max_depth"], node.depth)
            children = self.process(node, deadline)
            if children is None:             # HiGHS ran out of time or was interrupted: the node stays open
                heapq.heappush(heap, (node.bound, -node.depth, node.order, node))
                stopped = self.lp_stop
                break
            for child in children:
                child.bound = max(child.bound, node.bound)
            children = [c for c in children if not self.prunable(c.bound)]
            if children and dive_length < max_dive:
                dive.append(children[0])       # dive into the child the LP prefers
                dive_length += 1
                children = children[1:]
            else:
                dive_length = 0
            for child in children:
                heapq.heappush(heap, (child.bound, -child.depth, child.order, child))
        lower = min(self.global_bound(heap, dive), self.best_cost)
        return self.result(stopped, lower, time.perf_counter() - start)

    def result(self, stopped: Termination | None, lower: float, wall: float) -> Result:
        """The Result in the user's units (the gap rule decides OPTIMAL; a p-norm run's bound is LB_p)."""
        pb = self.problem
        stats = dict(self.stats, wall_time=wall, cuts=self.lp.num_cuts, norms=sorted(self.norms),
                     big_m=self.big_m * pb.scale, assignment_bound=self.assignment_bound, backend="highs", threads=1)
        if "root_lp_bound" in self.stats:
            stats["root_lp_bound"] = pb.cost(self.stats["root_lp_bound"])
        message = _WHY[stopped]
        if not self.two_norm:
            stats["p_norm_bound"] = pb.cost(lower)
            stats["p_norm_objective"] = pb.cost(self.upper)
            # the p-norm solution rescaled to unit 2-norm planes (refitted): a k-HC2 solution
            stats["p_norm_solution_cost"] = pb.cost(assignment_cost(self.points, self.upper_assignment, self.k))
            stats["p_norm_status"] = "solved" if stopped is None else "stopped"
            message += (f"; solved the {'+'.join(sorted(self.norms))}-norm relaxation: "
                       "bound = its optimum LB_p <= OPT_2,"
                       " objective = the best k-HC2 solution met (the p-norm solution refitted:"
                       " stats['p_norm_solution_cost'])")
        return pb.result(self.best_assignment, lower, stopped=stopped, method="sbb", stats=stats, message=message)


@register
class SBBSolver(KhcSolver):
    name = "sbb"
    description = ("spatial branch-and-bound: HiGHS node LPs with tangent cuts, secants of ||w||^2 >= 1, "
                   "inf-/1-norm strengthening, orthant branching and FBBT")
    capabilities = ("exact", "time_limit", "bound", "norms")
    honours = frozenset({"rel_gap", "abs_gap", "node_limit"})
    backend_packages = ("highspy",)
    options = (
        NORMS,
        Option("assignment_bound", bool, True, "bound nodes by the cost of the points already fixed to clusters"),
        restarts_option(0, "for the first incumbent (0: none)"),
        Option("point_rule", str, "maxmin", "which open point to branch on", choices=("maxmin", "fractional")),
        count_option("cut_rounds", 0, 1, "rounds of tangent cuts per node LP"),
    )

    def solve(self, compiled, options: SolveOptions) -> Result:
        problem = KhcProblem.of(compiled)
        extra = options.extra
        # the heuristic's cost sets the scale of the node LPs; with restarts=0 one start only estimates it
        start, cost = kplane(problem.unit, problem.k, restarts=max(extra["restarts"], 1), seed=options.seed,
                             time_limit=options.time_limit)
        initial = None if extra["restarts"] == 0 else start
        problem = problem.rescaled(cost_scale(problem.unit, cost))
        sbb = SpatialBranchAndBound(problem.unit, problem.k, problem_norms(problem, extra["norms"]),
                                    problem.unit_options(options), big_m=problem.unit_big_m(),
                                    symmetry_breaking=problem.symmetry_breaking,
                                    assignment_bound=extra["assignment_bound"], restarts=extra["restarts"],
                                    point_rule=extra["point_rule"], cut_rounds=extra["cut_rounds"], problem=problem,
                                    initial=initial)
        return sbb.solve()


def cost_scale(points: np.ndarray, cost: float) -> float:
    """A power of two f such that the points times f have a first incumbent cost near 1.

    HiGHS' tolerances are absolute (1e-7): a node LP cannot separate bounds closer than that, so
    an instance whose optimum is 1e-4 stalls a few digits short of a 1e-6 gap. Scaling the points
    by f scales every cost by f^2 (k-HC2 is equivariant), so solving the scaled points keeps the
    gap target well above the LP's noise. f keeps the coordinates within [2^-4, 2^10] in size.
    """
    if not cost > 0.0 or not math.isfinite(cost):
        return 1.0
    size = float(np.max(np.abs(points))) if points.size else 0.0
    if not size > 0.0:
        return 1.0
    exponent = -round(math.log2(cost) / 2)
    low, high = math.ceil(math.log2(2.0 ** -4 / size)), math.floor(math.log2(2.0 ** 10 / size))
    return math.ldexp(1.0, max(low, min(high, exponent)))
