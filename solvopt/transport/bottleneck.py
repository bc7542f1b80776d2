"""Exact W_inf for point clouds without the n x m matrix: the ``bottleneck`` method's path for
named metrics (euclidean, cityblock, chebyshev: Minkowski p = 2, 1, inf of ``scipy.spatial.cKDTree``).

1. **Floor.** Every source and target with mass ships along one of its own pairs, so
   W_inf >= max(max_i min_j d_ij, max_j min_i d_ij) (nearest-neighbour queries both ways).
2. **Upper bound U.** The candidate graph of the k nearest targets of each source and the k
   nearest sources of each target (k = 8, doubled until it holds a feasible transport: at
   k >= max(n, m) it is complete, hence feasible); U is the smallest threshold feasible on it
   (a search over its distinct distances). Any threshold feasible on a subgraph is feasible on
   the full graph, so W_inf <= U.
3. **Exact search.** Every pair with d <= U (``cKDTree.sparse_distance_matrix``, distances then
   recomputed by the model so the plan's W_inf is measured the same way) and a search over their
   distinct distances in [floor, U]: first the largest one below U (U is usually the answer, and
   one infeasible test proves it), then galloping up from the floor and bisection. Since the
   graph holds every pair with d <= U, the smallest feasible threshold on it is W_inf itself.

For n = m uniform masses with a positive floor, steps 2 and 3 are radius rounds instead: all
pairs within R = floor, R growing by 1.1 per round (1.5 after 8), each round warm-started from the
previous round's maximum matching, until a round is feasible; that round holds every pair of
length <= R, so its exact search gives W_inf (an infeasible round proves W_inf > R). A round that
leaves more than :data:`SWITCH_UNMATCHED` sources unmatched hands the next rounds to the max flow
below (its matching the first preflow): push-relabel settles large deficits faster.

Feasibility tests under engine ``auto``: for n = m uniform masses a Numba Hopcroft-Karp
warm-started from the maximum matching of the largest threshold proven infeasible; otherwise a
Numba push-relabel max flow on the real masses (:mod:`solvopt.transport.maxflow`) warm-started
from the preflow of the largest threshold proven infeasible (the exact step from the candidate
graph's), an infeasible answer proven by a Hall violator, the lengths bisected geometrically while
the bracket spans more than :data:`GEOMETRIC_RATIO`. Engines ``ortools``, ``scipy`` and ``highs``
run :func:`solvopt.transport.flow.feasible_flow` instead (integer units only where exact, else a
zero-cost flow LP with HiGHS).
Engine ``hopcroft-karp`` (n = m uniform masses) uses SciPy's
``maximum_bipartite_matching`` instead.

Stops (time limit, Ctrl-C) are checked between steps; each step (tree query, flow test) runs in
a watched thread (:func:`solvopt.transport.stopping.run_abandonable`). A stopped search returns
its best feasible plan (the north-west corner plan before any test succeeded) and, as bound, the
smallest distinct distance above the largest threshold proven infeasible (the floor before that).
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from solvopt.core.errors import ModelError
from solvopt.core.interrupt import stop_reason
from solvopt.core.progress import Progress
from solvopt.core.registry import Solver, register

from .exact import (
    BOTTLENECK_ENGINES,
    bottleneck_search,
    engine_option,
    northwest_corner,
    permutation_plan,
    uniform_square,
)
from .flow import feasible_flow
from .maxflow import WarmFlow
from .quick import stopped_result
from .result import transport_result
from .stopping import Stopped, run_abandonable

# Minkowski order of cKDTree for each named metric.
MINKOWSKI = {"euclidean": 2.0, "cityblock": 1.0, "chebyshev": np.inf}
# First k of the candidate graph (doubled until it is feasible).
FIRST_K = 8
# Relative slack of tree queries by radius: the tree's distances may differ from the model's by
# rounding; pairs are recomputed by the model and filtered exactly afterwards.
RADIUS_SLACK = 1e-9
# Relative precision of the upper bound's search on the candidate graph: U within 1 % of the
# candidate graph's own optimum is enough (the exact search then bisects between floor and U).
UPPER_TOLERANCE = 0.01
# General masses: the searches bisect the lengths geometrically while the bracket spans more than this ratio.
GEOMETRIC_RATIO = 1.02
# General masses: radius rounds too (growth per round), the preflow carried from round to round.
RADIUS_FLOWS = True
FLOW_GROWTH = 1.25
# n = m uniform masses: growth per radius round of the matching tests.
MATCH_GROWTH = 1.1
# n = m uniform masses: a radius round leaving more sources unmatched hands the next rounds to the
# max flow (measured, uniform points in the plane: 1118 left at 10^5, where the max flow took 0.6 of
# the matching's time; 335 at 3 x 10^4, where it took 2 times as long).
SWITCH_UNMATCHED = 500


def tree_path(model) -> bool:
    """Whether the tree path applies: point inputs with a named metric."""
    return model.x is not None and isinstance(model.metric, str) and model.metric in MINKOWSKI


def point_bottleneck(model, options, engine: str = "auto", raw: bool = False):
    """Exact W_inf on point inputs (see the module docstring). ``raw`` as for
    :func:`solvopt.transport.exact.bottleneck_search`: (plan or None, lower bound, stop reason)."""
    start = time.perf_counter()
    deadline = None if options.time_limit is None else start + options.time_limit
    progress = Progress(options.progress, log=options.log)
    # stage lines from their own Progress: the first test line is not throttled away
    stage = Progress(options.progress, log=options.log)
    stage(f"bottleneck: {model.n} x {model.m} points: spatial trees", force=True)
    matching = engine == "hopcroft-karp"
    if matching and not uniform_square(model):
        raise ModelError("engine 'hopcroft-karp' tests perfect matchings: it needs n = m and uniform weights")
    rows, cols = np.flatnonzero(model.a > 0), np.flatnonzero(model.b > 0)
    nr, nc = len(rows), len(cols)
    order = MINKOWSKI[model.metric]
    supplies = np.concatenate([model.a[rows], -model.b[cols]]) / model.mass

    def stop() -> bool:
        return stop_reason(deadline) is not None
    state: dict[str, Any] = {"plan": None, "bound": None, "tests": 0, "pairs": 0, "k": 0}

    def test(r, c):
        """A plan on the pairs (r[k], c[k]) (local indices), or None when none exists."""
        plan = feasible(r, c)
        state["tests"] += 1
        progress(f"bottleneck: {len(r)} pairs {'feasible' if plan is not None else 'infeasible'}, "
                 f"{state['tests']} tests")
        return plan

    def feasible(r, c):
        if matching:
            import scipy.sparse as sp
            from scipy.sparse.csgraph import maximum_bipartite_matching
            graph = sp.csr_matrix((np.ones(len(r), dtype=np.int8), (r, c)), shape=(nr, nc))
            match = run_abandonable(lambda: maximum_bipartite_matching(graph, perm_type="column"), stop)
            return None if np.any(match < 0) else permutation_plan(model, cols[match])
        flow = run_abandonable(lambda: feasible_flow(r, nr + c, supplies, engine=engine), stop)
        if flow is None:
            return None
        import scipy.sparse as sp
        used = flow > 0
        return sp.csr_matrix((flow[used] * model.mass, (rows[r[used]], cols[c[used]])), shape=(model.n, model.m))

    warm = engine == "auto" and uniform_square(model) and nr == nc
    flowing = engine == "auto" and not warm       # general masses: the warm-started max flow
    d_sorted: list = [None]

    def flower(r, c):
        """Tests on the prefixes r[:k], c[:k] by the warm-started max flow of
        :mod:`solvopt.transport.maxflow` (each from the flow of the largest prefix proven
        infeasible; an infeasible test is proven by a Hall violator). A test whose rounding leaves
        no proof either way falls back to :func:`feasible_flow`."""
        warm_flow = WarmFlow(r, c, model.a[rows], model.b[cols])
        carried = state.pop("carried", None)
        if carried is not None:             # the last graph's preflow at its largest infeasible threshold
            warm_flow.seed(carried[0], int(np.searchsorted(d_sorted[0], carried[1], side="right")))
        state["flows"] = warm_flow

        def run(k):
            try:
                flow = run_abandonable(lambda: warm_flow.test(k), stop)
            except ArithmeticError:
                return test(r[:k], c[:k])
            state["tests"] += 1
            progress(f"bottleneck: {k} pairs {'feasible' if flow is not None else 'infeasible'}, "
                     f"{state['tests']} tests")
            if flow is None:
                return None
            import scipy.sparse as sp
            used = flow > 0
            # the flow's longest pair: every threshold from its length on is feasible too
            state["reach"] = int(np.flatnonzero(used)[-1]) + 1 if used.any() else 0
            total = model.mass
            return sp.csr_matrix((flow[used] * total, (rows[r[used]], cols[c[used]])), shape=(model.n, model.m))
        return run

    def matcher(r, c):
        """Tests on the prefixes r[:k], c[:k] by a warm-started Hopcroft-Karp (n = m uniform):
        the maximum matching of the largest prefix proven infeasible is valid on every longer
        prefix, so each test only adds the few augmenting paths it lacks."""
        augment = _augment()
        by_row = np.argsort(r, kind="stable")          # rows grouped, each by increasing distance
        indices = c[by_row].astype(np.int64)
        indptr = np.zeros(nr + 1, np.int64)
        np.cumsum(np.bincount(r, minlength=nr), out=indptr[1:])
        # "carry": a matching of a threshold below every one tested here (the radius rounds)
        base = state.pop("carry", None) or [np.full(nr, -1, np.int64), np.full(nc, -1, np.int64)]
        # a matching on a smaller candidate graph (fewer nearest neighbours) is valid on this whole
        # graph, but not on its prefixes (it may use longer pairs)
        whole = state.pop("kbase", None) or base

        def run(k):
            limit = indptr[:-1] + np.bincount(r[:k], minlength=nr)
            start = whole if k == len(r) else base
            mr, mc = start[0].copy(), start[1].copy()
            matched = run_abandonable(lambda: augment(indptr, indices, limit, mr, mc), stop)
            state["tests"] += 1
            verdict = "feasible" if matched == nr else f"infeasible ({nr - matched} unmatched)"
            progress(f"bottleneck: {k} pairs {verdict}, {state['tests']} tests")
            if matched < nr:
                base[0], base[1] = mr, mc
                if k == len(r):
                    state["kbase"] = [mr, mc]
                return None
            return permutation_plan(model, cols[mr])
        return run

    def search(r, c, d, lo_value, hi_known, certify, rel=0.0):
        """Smallest distinct value t of d with t >= lo_value whose pairs admit a plan.

        ``hi_known``: a value of d known feasible (its plan already in state), or None (the
        largest value is tested). Returns the index into the distinct values and the values."""
        keys = np.argsort(d, kind="stable")
        r, c, ds = r[keys], c[keys], d[keys]
        starts = np.flatnonzero(np.concatenate(([True], ds[1:] != ds[:-1])))
        values, prefix = ds[starts], np.append(starts[1:], len(ds))
        lo = int(np.searchsorted(values, lo_value))
        if warm:
            tester = matcher(r, c)
        elif flowing:
            d_sorted[0] = ds
            tester = flower(r, c)
        else:
            def tester(k):
                return test(r[:k], c[:k])
        if hi_known is None:
            hi = len(values) - 1
            plan = tester(len(r))
            if plan is None:
                return None, values
            state["plan"] = plan
            hi = tightened(hi, prefix)
        else:
            hi = int(np.searchsorted(values, hi_known))
        lo = min(lo, hi)
        gap = 1 if rel > 0 and not flowing else len(values)     # galloping only on the candidate graph
        seeded = state.pop("seed_value", None)
        if flowing and seeded is not None and values[lo] < seeded < values[hi]:
            # first the candidate graph's largest infeasible threshold: infeasible here too, as a rule,
            # which proves the bracket [that, U] at once; the carried preflow starts it
            mid = int(np.searchsorted(values, seeded, side="right")) - 1
            plan = tester(prefix[mid])
            if plan is None:
                lo = mid + 1
                if certify:
                    state["bound"] = float(values[lo])
            else:
                hi, state["plan"] = tightened(mid, prefix), plan
        while lo < hi and values[hi] > values[lo] * (1 + rel):
            poll_stop()
            mid = min(lo + gap - 1, (lo + hi) // 2)
            if flowing and values[lo] > 0 and values[hi] > GEOMETRIC_RATIO * values[lo]:
                # general masses: bisect the lengths geometrically while they span a wide range (the
                # floor can lie far below W_inf; galloping by index took ~20 tests to climb)
                mid = int(np.clip(np.searchsorted(values, math.sqrt(values[lo] * values[hi])), lo, hi - 1))
            plan = tester(prefix[mid])
            if plan is None:
                lo, gap = mid + 1, 2 * gap
                if certify:
                    state["bound"] = float(values[lo])
            else:
                hi, state["plan"] = tightened(mid, prefix), plan
            progress(f"bottleneck: W_inf in [{values[lo]:.6g}, {values[hi]:.6g}], {state['tests']} tests")
        return hi, values

    def tightened(hi, prefix):
        """``hi`` after a feasible flow test: lowered to the length of the longest pair its flow uses."""
        reach = state.pop("reach", None)
        return hi if reach is None else min(hi, int(np.searchsorted(prefix, reach)))

    def poll_stop():
        if stop():
            raise Stopped

    def carry():
        """General masses: hand the last search's preflow at its largest infeasible threshold to
        the next pair list (the next candidate graph, or every pair within U), which holds all
        of its pairs: valid there on every prefix reaching that threshold."""
        flows = state.pop("flows", None)
        if flows is not None and flows.base[4] > 0:
            state["carried"] = (flows.carried(), float(d_sorted[0][flows.base[4] - 1]))
            state["seed_value"] = state["carried"][1]

    def pairs_within(tx, ty, radius, name):
        """Every pair (row, column, distance) with distance <= ``radius`` (the tree's search reaches
        a hair beyond it; the model's own distances decide)."""
        poll_stop()
        reach = radius * (1 + RADIUS_SLACK) + 1e-300
        found = run_abandonable(lambda: tx.sparse_distance_matrix(ty, reach, p=order, output_type="ndarray"), stop)
        r, c = found["i"].astype(np.int64), found["j"].astype(np.int64)
        d = model.pair_distances(rows[r], cols[c])
        keep = d <= radius
        r, c, d = r[keep], c[keep], d[keep]
        state["pairs"] = int(len(d))
        stage(f"bottleneck: {len(d)} pairs within {name} = {radius:.6g}", force=True)
        return r, c, d

    def matching_preflow(mr):
        """The matching mr (row -> column, -1 free) as a preflow of :class:`WarmFlow` (its
        :meth:`~solvopt.transport.maxflow.WarmFlow.carried` form): equal masses, so each matched
        pair carries its row's whole supply and fills its column."""
        a, b = model.a[rows], model.b[cols]
        total = math.fsum(a)
        matched = np.flatnonzero(mr >= 0)
        supply, room = a / total, b / total
        flows = supply[matched].copy()
        supply[matched] = 0.0
        room[mr[matched]] = 0.0
        return matched * nc + mr[matched], flows, supply, np.zeros(nc), room

    def radius_rounds(tx, ty, floor):
        """n = m uniform: all pairs within a radius R growing from the floor (x 1.1, then faster),
        each round's maximum matching carried to the next; the first feasible round is searched
        exactly (it holds every pair of length <= R)."""
        nonlocal warm, flowing
        radius, below, rounds = floor, None, 0
        while True:
            r, c, d = pairs_within(tx, ty, radius, "R")
            if len(d) == 0:                        # no pair yet: nothing to match
                rounds += 1
                radius *= 1.1
                continue
            state["rounds"] = rounds + 1
            if below is not None:
                state["carry"] = below
            lo_value = floor if rounds == 0 else np.nextafter(state["bound"], np.inf)
            index, values = search(r, c, d, lo_value, None, True)
            if index is not None:
                return float(values[index])
            if flowing:
                carry()                            # the preflow at R: valid beyond R
            else:
                below = state.pop("kbase")         # the maximum matching at R: valid beyond R
                if np.count_nonzero(below[0] < 0) > SWITCH_UNMATCHED:
                    # many sources left unmatched: push-relabel settles large deficits faster than
                    # Hopcroft-Karp's phases; the matching is its first preflow
                    warm, flowing = False, True
                    state["carried"] = (matching_preflow(below[0]), radius)
                    state["switched"] = True
            state["bound"] = radius                # R is infeasible: W_inf > R
            rounds += 1
            radius *= (FLOW_GROWTH if flowing else MATCH_GROWTH) if rounds < 8 else 1.5

    try:
        tx = run_abandonable(lambda: _tree(model.x[rows]), stop)
        ty = run_abandonable(lambda: _tree(model.y[cols]), stop)
        # 1. the floor, from the nearest neighbours both ways (distances recomputed by the model)
        _, near_c = run_abandonable(lambda: ty.query(model.x[rows], k=1, p=order), stop)
        _, near_r = run_abandonable(lambda: tx.query(model.y[cols], k=1, p=order), stop)
        floor = max(float(model.pair_distances(rows, cols[near_c]).max()),
                    float(model.pair_distances(rows[near_r], cols).max()))
        floor *= 1 - 1e-12                                           # safe side of rounding
        state["bound"] = floor
        if (warm or (flowing and RADIUS_FLOWS)) and floor > 0:
            w_inf = radius_rounds(tx, ty, floor)
            raise _Done
        # 2. the upper bound: the smallest feasible threshold on a k-nearest candidate graph
        k = FIRST_K
        while True:
            poll_stop()
            kc, kr = min(k, nc), min(k, nr)
            state["k"] = k
            _, jc = run_abandonable(partial(ty.query, model.x[rows], k=kc, p=order), stop)
            _, ir = run_abandonable(partial(tx.query, model.y[cols], k=kr, p=order), stop)
            jc, ir = jc.reshape(nr, kc), ir.reshape(nc, kr)
            r = np.concatenate([np.repeat(np.arange(nr), kc), ir.ravel()])
            c = np.concatenate([jc.ravel(), np.repeat(np.arange(nc), kr)])
            flat = np.unique(r.astype(np.int64) * nc + c)                # distinct pairs
            r, c = np.divmod(flat, nc)
            d = model.pair_distances(rows[r], cols[c])
            stage(f"bottleneck: {k} nearest each way: {len(flat)} candidate pairs", force=True)
            index, values = search(r, c, d, floor, None, False, UPPER_TOLERANCE)
            if index is not None:
                upper = float(values[index])
                break
            if kc >= nc and kr >= nr:           # cannot happen: the complete graph is feasible
                raise RuntimeError("bottleneck: the complete bipartite graph tested infeasible")
            carry()                             # the k nearest are among the 2k nearest
            k *= 2
        state.pop("kbase", None)
        carry()
        # 3. every pair with d <= U, and the exact search on them
        r, c, d = pairs_within(tx, ty, upper, "U")
        index, values = search(r, c, d, floor, upper, True)
        w_inf = float(values[index])
        stopped = None
    except _Done:
        stopped = None
    except Stopped:
        stopped = stop_reason(deadline)
    except KeyboardInterrupt:
        from solvopt.core.result import Termination
        stopped = Termination.INTERRUPTED
    stats = {"engine": "hopcroft-karp" if matching else "warm-started hopcroft-karp (numba)" if warm
             else "warm-started max flow (numba)" if flowing else f"max-flow ({engine})", "iterations": state["tests"],
             "candidate_k": state["k"], "switched_to_flow": state.get("switched", False),
             "radius_rounds": state.get("rounds", 0), "pairs": state["pairs"],
             "path": "spatial tree"}
    plan = state["plan"]
    if stopped is None:
        state["bound"] = w_inf
    if raw:
        return (plan if plan is not None else northwest_corner(model)), state["bound"], stopped
    if stopped is not None:
        if plan is None:
            return stopped_result(model, stopped, stats, bound=state["bound"])
        return transport_result(model, plan, guarantee=None, bound=state["bound"], stopped=stopped, stats=stats)
    return transport_result(model, plan, guarantee=1.0, bound=w_inf, proven_optimal=True, stats=stats)


def _tree(points):
    from scipy.spatial import cKDTree
    return cKDTree(points)


_KERNEL: list[Callable] = []     # the compiled kernel, once built


class _Done(Exception):
    """The radius rounds settled W_inf."""


def _augment():
    if not _KERNEL:
        _KERNEL.append(_hopcroft_karp_kernel())
    return _KERNEL[0]


def _hopcroft_karp_kernel():
    """Numba Hopcroft-Karp on a row-CSR graph whose row i keeps its arcs indptr[i]:limit[i],
    warm-started from a matching (mr: row -> column, mc: column -> row, -1 free), updated in place."""
    import numba

    @numba.njit(cache=True)
    def augment(indptr, indices, limit, mr, mc):
        n = len(mr)
        inf = 1 << 60
        dist = np.empty(n, np.int64)
        queue = np.empty(n, np.int64)
        ptr = np.empty(n, np.int64)
        rows = np.empty(n + 1, np.int64)
        cols = np.empty(n + 1, np.int64)
        while True:
            head = tail = 0
            for i in range(n):
                if mr[i] < 0:
                    dist[i] = 0
                    queue[tail] = i
                    tail += 1
                else:
                    dist[i] = inf
            found = inf
            while head < tail:
                i = queue[head]
                head += 1
                if dist[i] + 1 > found:
                    continue
                for e in range(indptr[i], limit[i]):
                    k = mc[indices[e]]
                    if k < 0:
                        if found == inf:
                            found = dist[i] + 1
                    elif dist[k] == inf:
                        dist[k] = dist[i] + 1
                        queue[tail] = k
                        tail += 1
            if found == inf:
                break
            for i in range(n):
                ptr[i] = indptr[i]
            for s in range(n):
                if mr[s] >= 0 or dist[s] != 0:
                    continue
                depth = 0
                rows[0] = s
                while depth >= 0:
                    i = rows[depth]
                    if ptr[i] >= limit[i]:
                        dist[i] = inf
                        depth -= 1
                        continue
                    j = indices[ptr[i]]
                    ptr[i] += 1
                    k = mc[j]
                    if k < 0:
                        if dist[i] + 1 == found:
                            cols[depth] = j
                            for t in range(depth, -1, -1):
                                mr[rows[t]] = cols[t]
                                mc[cols[t]] = rows[t]
                            break
                    elif dist[k] == dist[i] + 1:
                        cols[depth] = j
                        depth += 1
                        rows[depth] = k
        matched = 0
        for i in range(n):
            if mr[i] >= 0:
                matched += 1
        return matched

    return augment


@register
class BottleneckTransport(Solver):
    family = "transport"
    name = "bottleneck"
    description = ("exact W_inf: search over the sorted distances with max-flow (or matching) feasibility tests "
                   "(p = inf)")
    options = (engine_option(BOTTLENECK_ENGINES, "feasibility test (hopcroft-karp: n = m uniform weights only)"),)

    def solve(self, model, options):
        if not math.isinf(model.p):
            raise ModelError(f"method 'bottleneck' computes W_inf; the model has p = {model.p:g} "
                             "(use p = inf, or method 'exact' for finite p)")
        if tree_path(model):       # point inputs, named metric: spatial trees, never the full matrix
            return point_bottleneck(model, options, engine=options.extra["engine"])
        return bottleneck_search(model, options, engine=options.extra["engine"])
