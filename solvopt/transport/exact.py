"""Exact transport references on the full n x m distance matrix: methods ``exact``, ``bottleneck``, ``pot``.

- ``exact``: W_p for finite p by our dense network simplex (:func:`dense_flow`: column generation
  on the cost matrix, exact integer pricing of every pair), or, asked for, a min-cost flow engine
  of :func:`solvopt.transport.flow.min_cost_flow` on the full bipartite graph, or
  ``scipy.optimize.linear_sum_assignment`` when n = m with uniform weights (option
  ``assignment``); its bound is a certified LP dual bound
  (:func:`solvopt.transport.result.dual_bound`). For p = inf it runs the bottleneck search.
- ``bottleneck``: exact W_inf, the smallest threshold t such that a plan uses only pairs with
  d <= t: a galloping search over the distinct distances up from a proven floor, then bisection,
  each step a max-flow feasibility test
  (:func:`solvopt.transport.flow.feasible_flow`: OR-Tools or SciPy max flow on integer units of
  the masses, HiGHS for general real masses; or, asked for, SciPy's Hopcroft-Karp perfect
  matching for n = m uniform weights, which is far slower near the critical threshold: 10-30 s
  per test against 0.02-0.05 s for the max flows at n = 2000, and one test can run for minutes,
  past a time limit). Every threshold below the answer is proven infeasible, so a stopped search
  still returns its best plan and a certified bound. Measured side by side (2-D uniform, n = m,
  medians of 3 on the shared 2-core machine): n = 1000: 0.61 s (auto: OR-Tools) / 0.90 s (scipy);
  n = 2000: 2.45 s / 3.23 s; Hopcroft-Karp had not finished within 60 s at either size.
- ``pot``: POT's network simplex ``ot.emd`` (optional: ``pip install pot``), with an iteration
  limit high enough to reach the optimum (its default, 100000, stops early).

All of them hold the full distance matrix: they are references for small and medium inputs,
not for the sizes the ``approx`` method is for. A time limit or Ctrl-C stops the bottleneck search
between its tests (with its plan and bound) and the flow engines inside their runs (see
:func:`solvopt.transport.flow.min_cost_flow`); ``linear_sum_assignment``, ``ot.emd``, the full
matrix and the sort of all distances cannot be interrupted and run in a watched thread that is
abandoned on a stop (:func:`solvopt.transport.stopping.run_abandonable`). A stopped run returns
its best plan, or the quick plan, and a certified bound (:func:`solvopt.transport.quick.stopped_result`).

Large p (> ``LARGE_P``): ``exact`` and ``pot`` first find W_inf and measure lengths in units of
it, with capped costs (:func:`large_p_frame`), and keep the bottleneck plan when it is cheaper.
"""
from __future__ import annotations

import math
import time
import warnings

import numpy as np

from solvopt.core.errors import ModelError, SolverError
from solvopt.core.interrupt import stop_reason
from solvopt.core.memory import format_bytes, memory_budget
from solvopt.core.options import Option
from solvopt.core.progress import Progress
from solvopt.core.registry import Solver, register
from solvopt.core.result import Termination
from solvopt.core.status import within_default_tolerance

from .flow import ENGINES, FEASIBILITY_ENGINES, FlowStopped, feasible_flow, integer_data, min_cost_flow
from .flow_types import _MAX_UNITS, FlowSolution, rounding_bound, run_stoppable
from .network_simplex import (
    BLOCK_FACTOR,
    DENSE_BLOCK_FACTOR,
    DIRECT_PAIRS,
    SWITCH_FLOOR,
    SWITCH_SHRINK,
    dense_transport,
)
from .plan_kernels import mass_supplies, point_costs
from .quick import stopped_result
from .result import (
    LARGE_P,
    METRIC_CODES,
    certified_optimum,
    csr_plan_cost,
    dual_bound,
    dual_scale,
    dual_value,
    metric_code,
    plan_cost,
    status_scale,
    transport_result,
)
from .stopping import Stopped, run_abandonable

# Feasibility tests of the bottleneck search: flow.feasible_flow's engines, or SciPy's Hopcroft-Karp.
BOTTLENECK_ENGINES = FEASIBILITY_ENGINES + ("hopcroft-karp",)
# Peak bytes per (source, target) pair of each method (distances, costs, arc arrays, the engine's
# copy), rounded up from the peak RSS measured at 1500 x 1200 points: 25 / 159 / 42 / 42.
PAIR_BYTES = {"assignment": 32, "flow": 168, "dense": 48, "bottleneck": 56, "pot": 48}
# Cheapest arcs per row and per column that start the dense simplex's column generation (side
# by side at n = m = 300 to 2000, kernel only: 16 took 0.4-0.9x the time of 8, 8 0.7-0.9x that of 4).
DENSE_NEIGHBOURS = 16
# The dense simplex's tuning, in dense_transport's order (after its pivot limit).
DENSE_TUNING = (DENSE_NEIGHBOURS, BLOCK_FACTOR, SWITCH_SHRINK, SWITCH_FLOOR, DENSE_BLOCK_FACTOR, DIRECT_PAIRS)
# Matrices below this many bytes skip the memory check.
SMALL_BYTES = 64 << 20
# Up to this many pairs method exact runs its steps in place, not in a watched thread.
INLINE_PAIRS = 1 << 18
# Iteration limit handed to ot.emd when the user sets none (its own default stops early).
POT_ITERATIONS = 10**12



def full_distances(model, method: str, bytes_per_pair: int) -> np.ndarray:
    """The (n, m) distance matrix (not raised to p): the cost matrix itself, or every pair of points.

    Refused (ModelError, before allocating) when ``bytes_per_pair`` x n x m, what ``method``
    holds at its peak, exceeds half of the machine's memory (:func:`check_memory`).
    """
    check_memory(model, method, bytes_per_pair)
    return model.distance_block(slice(None))


def check_memory(model, method: str, bytes_per_pair: int) -> None:
    """ModelError when ``bytes_per_pair`` x n x m exceeds half of the machine's memory."""
    need = bytes_per_pair * model.n * model.m
    if need > SMALL_BYTES and need > memory_budget():      # (reading the budget costs about a millisecond)
        raise ModelError(f"method {method!r} holds the full {model.n} x {model.m} distance matrix and its work arrays: "
                         f"about {format_bytes(need)}, more than half of this machine's memory "
                         f"({format_bytes(memory_budget(1.0))}); use method 'approx'")


def scaled_costs(distances: np.ndarray, p: float, reference: float | None = None,
                 cap: float = math.inf) -> tuple[np.ndarray, float]:
    """((d / s)^p capped at ``cap``, s): s = ``reference``, else the largest distance (1 when all
    are 0); no overflow for any p (see :func:`large_p_frame` for a reference and a cap)."""
    if reference is None:
        scale = float(distances.max()) if distances.size else 0.0
        scale = scale if scale > 0 else 1.0
    else:
        scale = reference
    with np.errstate(over="ignore", under="ignore"):
        costs = np.divide(distances, scale)        # a new array: ``distances`` may be the model's own
        if p == 2.0:                # several times faster than the general power
            np.multiply(costs, costs, out=costs)
        elif p != 1.0:
            np.power(costs, p, out=costs)
    if math.isfinite(cap):
        np.minimum(costs, cap, out=costs)
    return costs, scale


def uniform_square(model) -> bool:
    """n = m with all weights equal: an optimal plan is a permutation (Birkhoff)."""
    return bool(model.n == model.m and np.all(model.a == model.a[0]) and np.all(model.b == model.b[0]))


def permutation_plan(model, cols: np.ndarray):
    """The plan sending mass / n from each source i to target cols[i]."""
    import scipy.sparse as sp
    n = model.n
    return sp.csr_matrix((np.full(n, model.mass / n), (np.arange(n), cols)), shape=(n, model.m))


def bipartite_flow(model, costs: np.ndarray, rows: np.ndarray, cols: np.ndarray, engine: str, stop=None):
    """Min-cost flow from sources ``rows`` to targets ``cols`` on every pair, arc costs ``costs``
    (a (len(rows), len(cols)) matrix), supplies normalised to total 1.

    Returns (plan (n x m CSR, the model's masses), FlowSolution).
    """
    import scipy.sparse as sp
    r_grid = np.empty((len(rows), len(cols)), dtype=np.int64)
    r_grid[:] = np.arange(len(rows))[:, None]            # broadcast copies: several times faster than repeat/tile
    if stop is not None and stop():
        raise FlowStopped
    c_grid = np.empty((len(rows), len(cols)), dtype=np.int64)
    c_grid[:] = np.arange(len(rows), len(rows) + len(cols))[None, :]
    r, c = r_grid.ravel(), c_grid.ravel()
    supplies = np.concatenate([model.a[rows], -model.b[cols]]) / model.mass
    if stop is not None and stop():
        raise FlowStopped
    sol = min_cost_flow(r, c, np.ascontiguousarray(costs).ravel(), supplies, engine=engine, path_arcs=1, stop=stop)
    used = sol.flow > 0
    plan = sp.csr_matrix((sol.flow[used] * model.mass, (rows[r[used]], cols[c[used] - len(rows)])),
                         shape=(model.n, model.m))
    return plan, sol


def dense_flow(model, costs: np.ndarray, rows: np.ndarray, cols: np.ndarray, stop=None):
    """Min-cost flow from sources ``rows`` to targets ``cols`` on the full cost matrix ``costs``
    (len(rows), len(cols)) by the dense network simplex with column generation
    (:func:`solvopt.transport.network_simplex.dense_simplex`): nothing per arc beyond the matrix
    and its integer copy. Costs are scaled to integers from the largest one, as for the
    ``simplex`` engine, so the flow's cost error is bounded by ``abs_error``. Returns (plan, FlowSolution)."""
    import scipy.sparse as sp
    (indptr, indices, data), sol = _dense_solution(model, costs, rows, cols, stop)
    plan = sp.csr_matrix((data, indices, indptr), shape=(model.n, model.m))
    plan.has_canonical_format = True          # sorted, distinct pairs
    return plan, sol


def _dense_solution(model, costs, rows, cols, stop):
    """:func:`dense_flow`'s solve: ((indptr, indices, data) of the plan in CSR form, FlowSolution)."""
    # the supplies per unit of mass, in integer units when the masses are uniform (uniform_units)
    supplies, unit, ints, found = mass_supplies(model.a, model.b, rows, cols, model.mass, _MAX_UNITS)
    units = (unit, ints, None) if found else integer_data(supplies, None)
    unit = 1.0 if units is None else units[0]
    scaled = supplies if units is None else units[1].astype(np.float64)
    nodes = len(rows) + len(cols)
    # integer costs as flow.integer_costs (the simplex engine's scaling), the simplex and the plan of
    # its tree (the flow in units of the mass, zero flows left out, the flow's cost): one kernel call
    limit = float(min(2**53, 2**62 // (4 * (nodes + 2))))
    indptr, indices, data, flow, cost, total, potentials, partners, left, rounds, matrix, cost_scale = (
        run_stoppable(
            dense_transport,
            (np.ascontiguousarray(costs), scaled, limit, rows, cols, model.n, model.m, unit, model.mass),
            (0, *DENSE_TUNING), stop))
    if left > 1e-9 * max(float(np.abs(scaled).max()), 1.0):
        raise SolverError("the dense network simplex ended with flow on an artificial arc")
    # the rounding error bound (path_arcs = 1: one arc from each source to each target), from the
    # totals at hand (the first len(rows) supplies are the sources' positive ones)
    error = rounding_bound(total, float(supplies[:len(rows)].sum()), cost_scale, 1)
    sol = FlowSolution(flow, cost, potentials, "dense network simplex", error, rounds=int(rounds),
                       matrix_search=bool(matrix), partners=partners)
    return (indptr, indices, data), sol


def uniform_units(supplies: np.ndarray, sources: int):
    """:func:`solvopt.transport.flow.integer_data` of ``supplies`` when the first ``sources`` are
    equal and the others too (uniform masses, the common case): unit 1 / lcm(n, m), checked as
    there, without its search for the denominators; None otherwise (the general search decides).
    The test is :func:`solvopt.transport.plan_kernels.uniform_ints`, which :func:`dense_flow` runs in
    its supplies kernel (:func:`~solvopt.transport.plan_kernels.mass_supplies`)."""
    from .plan_kernels import uniform_ints
    unit, ints, found = uniform_ints(np.asarray(supplies, dtype=np.float64), sources, _MAX_UNITS)
    return (unit, ints, None) if found else None


def support_potentials(costs: np.ndarray, plan, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Source potentials u (n,) with u_i + v_j = c_ij on a spanning forest of the plan's support.

    For a flow engine that returns no duals: tight where the flow is a basic optimal solution,
    and a valid start for :func:`dual_bound` in any case (which repairs it into a feasible dual).
    """
    import scipy.sparse as sp
    from scipy.sparse.csgraph import breadth_first_order, connected_components
    k, l = len(rows), len(cols)
    where_row = np.full(plan.shape[0], -1)
    where_row[rows] = np.arange(k)
    where_col = np.full(plan.shape[1], -1)
    where_col[cols] = np.arange(l)
    coo = plan.tocoo()
    ri, cj = where_row[coo.row], where_col[coo.col]
    n_nodes = k + l
    graph = sp.coo_matrix((np.ones(len(ri)), (ri, k + cj)), shape=(n_nodes + 1, n_nodes + 1)).tocsr()
    _, label = connected_components(graph[:n_nodes, :n_nodes], directed=False)
    roots = np.unique(label, return_index=True)[1]          # one node per component, hung under a hub
    hub = sp.coo_matrix((np.ones(len(roots)), (np.full(len(roots), n_nodes), roots)), shape=graph.shape)
    order, pred = breadth_first_order(graph + hub, n_nodes, directed=False, return_predecessors=True)
    pot = np.zeros(n_nodes + 1)
    for node in order[1:]:
        parent = pred[node]
        if parent == n_nodes:
            continue                                           # a component's root: potential 0
        if node < k:                                           # source under target: u = c - v
            pot[node] = costs[node, parent - k] - pot[parent]
        else:                                                  # target under source: v = c - u
            pot[node] = costs[parent, node - k] - pot[parent]
    u = np.zeros(plan.shape[0])
    u[rows] = pot[:k]
    return u


def flow_bound(model, costs, scale, plan, sol, rows, cols, stop=None) -> float | None:
    """The best certified bound on W_p from a full-graph flow on ``costs`` (the rows x cols
    matrix of (d / scale)^p the flow ran on, capped or not): the engine's duals (either sign
    convention; the dense simplex's in one, with their best partners from its kernel), the
    support's tree potentials, and the engine's stated cost error. The dual
    passes read ``costs``; ``stop``: when it turns true, the passes not yet made are skipped
    (the bound so far stays valid)."""
    candidates: list[float | None] = []
    partners = sol.partners
    if partners is not None:
        # the dense simplex's potentials are exact duals in HiGHS' sign convention: one sign, and one
        # pass (the targets' best partners, made by its kernel) makes them feasible for the float costs
        candidates.append(dual_value(model, rows, cols, sol.potentials[:len(rows)], partners, scale))
    elif sol.potentials is not None:
        full = np.zeros(model.n)
        for sign in (1.0, -1.0):
            if candidates and stop is not None and stop():
                break
            full[rows] = sign * sol.potentials[:len(rows)]
            candidates.append(dual_bound(model, full, scale, costs=costs, support=(rows, cols)))
    else:
        candidates.append(dual_bound(model, support_potentials(costs, plan, rows, cols), scale, costs=costs))
        cost_low = sol.cost - sol.abs_error           # the engine's own optimality statement
        if cost_low > 0:
            candidates.append(scale * (cost_low * model.mass) ** (1.0 / model.p))
    return max((c for c in candidates if c is not None), default=None)


def engine_option(engines=ENGINES, what: str = "min-cost flow") -> Option:
    return Option("engine", str, "auto", f"{what} engine (see solvopt.transport.flow)", choices=engines)


@register
class ExactTransport(Solver):
    family = "transport"
    name = "exact"
    description = ("exact W_p on the full n x m matrix: our dense network simplex (or linear_sum_assignment, or "
                   "another min-cost flow engine, asked for); p = inf: the bottleneck search")
    options = (engine_option(), Option("assignment", bool, False,
                                       "use linear_sum_assignment when n = m with uniform weights (else the "
                                       "dense network simplex, measured faster)"))

    def solve(self, model, options):
        if math.isinf(model.p):
            engine = options.extra["engine"]
            return bottleneck_search(model, options, engine=engine if engine in BOTTLENECK_ENGINES else "auto")
        start = time.perf_counter()
        deadline = None if options.time_limit is None else start + options.time_limit
        stop = lambda: stop_reason(deadline) is not None          # noqa: E731
        assignment = options.extra["assignment"] and uniform_square(model)
        Progress(options.progress, log=options.log)(
            f"exact: {model.n} x {model.m}, p = {model.p:g}: "
            + ("linear_sum_assignment" if assignment else "min-cost flow") + " on the full matrix", force=True)
        reference, cap, bottleneck = None, math.inf, None
        if model.p > LARGE_P:
            # d^p spans more decades than float64 and the engines resolve: settle the bottleneck
            # first and measure lengths in units of W_inf (see large_p_frame)
            bottleneck, w_inf, stopped = bottleneck_search(model, options, engine="auto", raw=True)
            if stopped is not None:
                return stopped_result(model, stopped, {"engine": "bottleneck search"}, plan=bottleneck)
            reference, cap = large_p_frame(model, w_inf)
            if reference is None:          # W_inf = 0: the bottleneck plan moves nothing
                return transport_result(model, bottleneck, guarantee=1.0, proven_optimal=True,
                                        stats={"engine": "bottleneck search"})
        def halted(bound=None, engine="exact"):         # a stop between two steps: the best held so far
            return stopped_result(model, stop_reason(deadline), {"engine": engine}, bound=bound, plan=bottleneck)
        need = PAIR_BYTES["assignment" if assignment else "dense" if options.extra["engine"] == "auto" else "flow"]
        # small inputs take milliseconds: run in place (a watching thread costs as much), stops seen between steps
        watch = None if model.n * model.m <= INLINE_PAIRS else stop
        named = METRIC_CODES.get(model.metric) if model.cost is None and isinstance(model.metric, str) else None
        try:          # the full matrix and its p-th powers: seconds for large inputs, watched
            if watch is None and named is not None and reference is None:
                check_memory(model, "exact", need)            # small point inputs: one kernel, no temporaries
                costs, scale = point_costs(model.x, model.y, named, model.p)
            else:
                costs, scale = run_abandonable(
                    lambda: scaled_costs(full_distances(model, "exact", need), model.p, reference, cap), watch)
        except Stopped:
            return halted()
        rows, cols, sub = _with_mass(model, costs)     # (assignment: equal positive masses, all rows and columns)
        minima: list[float] = []

        def lowest() -> float:
            """The row and column minima bound, in units of scale^p per unit of mass (computed once,
            when a stop, a first LP engine or a gap left open needs it: two passes over the matrix)."""
            if not minima:
                minima.append(max(np.dot(model.a[rows], sub.min(axis=1)),
                                  np.dot(model.b[cols], sub.min(axis=0))) / model.mass)
            return minima[0]

        def cheap() -> float | None:
            return dual_scale(scale, model.mass, model.p, lowest())
        if stop():
            return halted(cheap())
        if assignment:
            from scipy.optimize import linear_sum_assignment
            try:
                _, perm = run_abandonable(lambda: linear_sum_assignment(costs), stop)
            except Stopped:
                return halted(cheap(), "linear_sum_assignment")
            plan = permutation_plan(model, perm)
            return _best_of(model, plan, bottleneck, guarantee=1.0, proven_optimal=True,
                            stats={"engine": "linear_sum_assignment"})
        # LP engines work to absolute tolerances: put the optimum near 1 (d^p spans many decades
        # for large p). First guess: between a lower bound and the largest cost; if the certified
        # bound does not close the gap, once more with the cost found (and, under engine "auto",
        # with HiGHS, whose duals certify a degenerate optimum that support potentials cannot).
        # (in the large-p frame the optimum is already between the smallest mass fraction and 1)
        # Under engine "auto" the dense network simplex runs first (integer costs scaled from the
        # largest: no absolute tolerance, so no unit; its potentials are exact duals).
        chosen = options.extra["engine"]
        unit = 1.0
        if chosen != "auto" and reference is None and lowest() > 0:
            unit = math.sqrt(lowest())
        for attempt, engine in enumerate(("dense", "highs") if chosen == "auto" else (chosen, chosen)):
            here = 1.0 if engine == "dense" else unit
            work = sub if here == 1.0 else sub / here
            try:
                if engine == "dense":
                    plan, sol = dense_flow(model, work, rows, cols, stop=watch)
                else:
                    plan, sol = bipartite_flow(model, work, rows, cols, engine, stop=stop)
            except FlowStopped:
                if attempt == 0:
                    return halted(cheap(), engine)
                break                     # keep the first attempt's plan and bound
            unit_scale = scale * here ** (1.0 / model.p)        # (d / unit_scale)^p = cost / unit
            bound = flow_bound(model, work, unit_scale, plan, sol, rows, cols, stop=stop)
            # the flow's own cost on uncapped costs is the plan's W_p up to float rounding (the
            # Result measures it again on the distances)
            objective = unit_scale * (model.mass * sol.cost) ** (1.0 / model.p) if math.isinf(cap) \
                else plan_cost(model, plan)[0]
            closed = bound is not None and within_default_tolerance(objective, bound,
                                                                    scale=status_scale(model, objective))
            if closed or not sol.cost > 0 or stop():
                break
            unit = here * sol.cost
        if not closed:
            bound = max((b for b in (bound, cheap()) if b is not None), default=None)
        return _best_of(model, plan, bottleneck, guarantee=1.0, bound=bound, stopped=stop_reason(deadline), owned=True,
                        stats={"engine": sol.engine, "flow_solves": attempt + 1,
                               "pricing_rounds": getattr(sol, "rounds", None),
                               "matrix_search": getattr(sol, "matrix_search", None)})


def _with_mass(model, costs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, cols, sub): the sources and targets with mass and their block of ``costs`` (``costs``
    itself, no copy, when every point has mass; masses are nonnegative, so nonzero is positive)."""
    rows = np.arange(model.n) if model.a.all() else np.flatnonzero(model.a)
    cols = np.arange(model.m) if model.b.all() else np.flatnonzero(model.b)
    return rows, cols, costs if len(rows) == model.n and len(cols) == model.m else costs[np.ix_(rows, cols)]


def certified_value(model) -> float | None:
    """W_p of a small input by the dense network simplex, without a Result (the value-only
    call :func:`solvopt.transport.api.wasserstein` makes where ``auto`` runs ``exact``): the plan's
    W_p when the simplex's certified dual bound meets it within the default tolerance, in the
    frame of :func:`~solvopt.transport.result.status_scale` (the value ``exact`` would report with
    status OPTIMAL), else None (the caller then solves in full). What it leaves out is the fixed
    cost of a solve, a fifth of a millisecond: the registry's options and Ctrl-C guard (a call this
    short is not worth stopping), the plan as a SciPy matrix and the Result. Only for finite p up to
    ``LARGE_P``, a cost matrix or a named metric, and inputs that run in place (at most ``INLINE_PAIRS``
    pairs); :func:`solvopt.transport.api.emd2` uses it too."""
    found = certified_plan(model)
    return None if found is None else found[0]


def certified_plan(model) -> tuple[float, tuple[np.ndarray, np.ndarray, np.ndarray]] | None:
    """:func:`certified_value` with its plan: (W_p, (indptr, indices, data)), the plan's CSR arrays
    (n x m, entries in units of mass), or None where :func:`certified_value` gives None
    (:func:`solvopt.transport.api.emd` returns that plan as POT's ``ot.emd`` does)."""
    code = metric_code(model)
    if code is None or not 1 <= model.p <= LARGE_P or model.n * model.m > INLINE_PAIRS:
        return None
    costs, scale = scaled_costs(model.cost, model.p) if code < 0 else point_costs(model.x, model.y, code, model.p)
    rows, cols, sub = _with_mass(model, costs)
    csr, sol = _dense_solution(model, sub, rows, cols, None)
    bound = flow_bound(model, sub, scale, None, sol, rows, cols)
    if bound is None or len(csr[2]) == 0:
        return None
    value, cost_p = csr_plan_cost(model, *csr)          # as plan_cost measures the plan
    if value == 0.0 or math.isinf(cost_p):
        return None
    return (value, csr) if certified_optimum(value, bound, status_scale(model, value)) else None


def large_p_frame(model, w_inf: float) -> tuple[float | None, float]:
    """(reference length, cost cap) for a large p: lengths in units of W_inf, costs capped.

    Measured in units of t = W_inf, a plan's cost sum pi (d / t)^p is at most the total mass for
    the bottleneck plan, so the optimum is of order one whatever p; a pair with (d / t)^p above
    ``cap`` = 2 M / (the smallest positive mass) can carry no more than half a smallest mass in
    a plan as cheap as the bottleneck plan, so capping costs there leaves the optimum of an
    assignment unchanged (a permutation moves whole masses) and only lowers the costs of a flow:
    every dual bound computed with capped costs stays a valid lower bound, and the plan's W_p is
    measured on the true distances. Pairs far below t underflow to cost 0: each is below 1e-308
    of the optimum's scale. None when W_inf = 0 (nothing moves)."""
    if not w_inf > 0:
        return None, math.inf
    smallest = min(float(model.a[model.a > 0].min()), float(model.b[model.b > 0].min()))
    return w_inf, 2.0 * model.mass / smallest


def _best_of(model, plan, bottleneck, **kwargs):
    """transport_result for ``plan``, or for the bottleneck plan when its W_p is lower (large p:
    the returned W_p is then never above W_inf M^(1/p))."""
    other = bottleneck
    if other is not None and plan_cost(model, other)[0] < plan_cost(model, plan)[0]:
        kwargs["stats"] = dict(kwargs.get("stats") or {}, plan="the bottleneck plan (lower W_p than the flow's)")
        plan = other
        kwargs["proven_optimal"] = False
        kwargs["owned"] = False
    return transport_result(model, plan, **kwargs)


def northwest_corner(model):
    """A feasible plan with at most n + m - 1 entries (the north-west corner rule)."""
    import scipy.sparse as sp
    a, b = model.a.copy(), model.b.copy()
    rows, cols, mass = [], [], []
    i = j = 0
    while i < model.n and j < model.m:
        moved = min(a[i], b[j])
        if moved > 0:
            rows.append(i), cols.append(j), mass.append(moved)
        a[i] -= moved
        b[j] -= moved
        if (a[i] <= b[j] and i < model.n - 1) or j == model.m - 1:
            i += 1
        else:
            j += 1
    return sp.csr_matrix((mass, (rows, cols)), shape=(model.n, model.m))


def bottleneck_search(model, options, engine: str = "auto", raw: bool = False):
    """Exact W_inf by a search over the candidate distances (see the module docstring).

    ``raw``: return (plan or None, certified lower bound on W_inf, stop reason or None) instead
    of the Result (for the large-p frame of the exact methods, whose model has a finite p)."""
    start = time.perf_counter()
    deadline = None if options.time_limit is None else start + options.time_limit
    progress = Progress(options.progress, log=options.log)
    # the start line from its own Progress: the search's first test line is not throttled away
    Progress(options.progress, log=options.log)(f"bottleneck: {model.n} x {model.m}: sorting the distances",
                                                force=True)
    rows, cols = np.flatnonzero(model.a > 0), np.flatnonzero(model.b > 0)

    def prepare():
        distances = full_distances(model, "bottleneck", PAIR_BYTES["bottleneck"])
        sub = distances[np.ix_(rows, cols)]
        del distances
        # every source and target with mass must ship along one of its own pairs: nothing below this works
        floor = max(sub.min(axis=1).max(), sub.min(axis=0).max())
        order = np.argsort(sub, axis=None)               # the pairs by distance: a threshold's arcs are a prefix
        ordered = sub.ravel()[order]
        del sub
        starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
        # the distinct distances, increasing; pairs with d <= candidates[k]: order[:prefix[k]]
        return floor, order, ordered[starts], np.append(starts[1:], len(ordered))
    try:      # the distances and their sort: seconds at n = 4000, watched (they release the GIL)
        floor, order, candidates, prefix = run_abandonable(prepare, lambda: stop_reason(deadline) is not None)
    except Stopped:
        if raw:
            return None, None, stop_reason(deadline)
        return stopped_result(model, stop_reason(deadline), {"engine": "bottleneck search"})
    matching = engine == "hopcroft-karp"
    if matching and not uniform_square(model):
        raise ModelError("engine 'hopcroft-karp' tests perfect matchings: it needs n = m and uniform weights")
    flows = None
    if engine == "auto" and not matching and integer_data(
            np.concatenate([model.a[rows], -model.b[cols]]) / model.mass, None) is None:
        # general real masses: the warm-started max flow on the pairs by length (exact to 1e-12 of
        # the mass, each test from the preflow of the largest threshold proven infeasible)
        from .maxflow import WarmFlow
        r_all, c_all = np.divmod(order, len(cols))
        flows = WarmFlow(r_all, c_all, model.a[rows], model.b[cols])
    incumbent = northwest_corner(model)
    coo = incumbent.tocoo()
    lo = int(np.searchsorted(candidates, floor))
    hi = int(np.searchsorted(candidates, model.pair_distances(coo.row, coo.col).max()))
    steps, stopped, gap = 0, None, 1
    while lo < hi:
        stopped = stop_reason(deadline)
        if stopped is not None:
            break
        # galloping up from the floor (W_inf is usually a few times it: the tests stay on sparse
        # graphs), bisecting once a feasible threshold is known
        mid = min(lo + gap - 1, (lo + hi) // 2)
        try:
            plan = threshold_plan(model, order[:prefix[mid]], rows, cols, matching, engine, flows)
        except KeyboardInterrupt:      # a flow engine stopped by Ctrl-C: keep the incumbent and bound
            stopped = Termination.INTERRUPTED
            break
        steps += 1
        if plan is None:
            lo, gap = mid + 1, 2 * gap
        else:
            hi, incumbent = mid, plan
        progress(f"bottleneck: W_inf in [{candidates[lo]:.6g}, {candidates[hi]:.6g}], {steps} tests")
    stats = {"engine": engine if matching else f"max-flow ({engine})", "iterations": steps,
             "candidates": int(len(candidates))}
    if raw:
        return incumbent, float(candidates[lo]), stopped
    return transport_result(model, incumbent, guarantee=1.0 if stopped is None else None,
                            bound=float(candidates[lo]), stopped=stopped, stats=stats)


def threshold_plan(model, pairs: np.ndarray, rows, cols, matching: bool, engine: str, flows=None):
    """A plan using only the given pairs (flat indices into the rows x cols matrix), or None when
    there is none.

    ``matching``: Hopcroft-Karp perfect matching (n = m uniform); ``flows``: a
    :class:`solvopt.transport.maxflow.WarmFlow` on every pair by length, of which ``pairs`` is a
    prefix; else a max flow (:func:`solvopt.transport.flow.feasible_flow`, on the sources and
    targets with mass).
    """
    import scipy.sparse as sp
    r, c = np.divmod(pairs, len(cols))
    if flows is not None:
        try:
            flow = flows.test(len(pairs))
        except ArithmeticError:         # rounding left no proof either way: the flow LP decides
            flow = False
        if flow is None:
            return None
        if flow is not False:
            flow = flow[:len(pairs)]
            used = flow > 0
            return sp.csr_matrix((flow[used] * model.mass, (rows[r[used]], cols[c[used]])),
                                 shape=(model.n, model.m))
    if matching:
        from scipy.sparse.csgraph import maximum_bipartite_matching
        graph = sp.csr_matrix((np.ones(len(r), dtype=np.int8), (r, c)), shape=(len(rows), len(cols)))
        match = maximum_bipartite_matching(graph, perm_type="column")
        return None if np.any(match < 0) else permutation_plan(model, cols[match])
    supplies = np.concatenate([model.a[rows], -model.b[cols]]) / model.mass
    flow = feasible_flow(r, len(rows) + c, supplies, engine=engine)
    if flow is None:
        return None
    used = flow > 0
    return sp.csr_matrix((flow[used] * model.mass, (rows[r[used]], cols[c[used]])), shape=(model.n, model.m))


def import_pot():
    """Import POT with anything it prints going to stderr: an optional backend of POT (KeOps) prints a
    warning on stdout at import, which would break the CLI's JSON output."""
    import contextlib
    import sys
    if "ot" in sys.modules:
        return sys.modules["ot"]
    with contextlib.redirect_stdout(sys.stderr):
        import ot
    return ot


@register
class PotTransport(Solver):
    family = "transport"
    name = "pot"
    description = ("POT's exact network simplex ot.emd on the full matrix (finite p), iteration limit set to reach "
                   "the optimum")
    honours = frozenset({"iteration_limit", "threads"})
    requires_modules = ("ot",)
    backend_packages = ("pot",)
    install_hint = "pip install pot"

    def solve(self, model, options):
        if math.isinf(model.p):
            raise ModelError("method 'pot' computes W_p for finite p; use method 'bottleneck' for p = inf")
        start = time.perf_counter()
        deadline = None if options.time_limit is None else start + options.time_limit
        stop = lambda: stop_reason(deadline) is not None          # noqa: E731
        Progress(options.progress, log=options.log)(f"pot: {model.n} x {model.m}, p = {model.p:g}: ot.emd",
                                                    force=True)
        reference, cap, bottleneck = None, math.inf, None
        if model.p > LARGE_P:                       # as for method exact: lengths in units of W_inf
            bottleneck, w_inf, stopped = bottleneck_search(model, options, engine="auto", raw=True)
            if stopped is not None:
                return stopped_result(model, stopped, {"engine": "bottleneck search"}, plan=bottleneck)
            reference, cap = large_p_frame(model, w_inf)
            if reference is None:
                return transport_result(model, bottleneck, guarantee=1.0, proven_optimal=True,
                                        stats={"engine": "bottleneck search"})
        try:
            costs, scale = run_abandonable(
                lambda: scaled_costs(full_distances(model, "pot", PAIR_BYTES["pot"]), model.p, reference, cap), stop)
        except Stopped:
            return stopped_result(model, stop_reason(deadline), {"engine": "ot.emd"}, plan=bottleneck)
        limit = options.iteration_limit if options.iteration_limit is not None else POT_ITERATIONS

        def emd():
            ot = import_pot()  # seconds the first time: in the watched thread too
            with warnings.catch_warnings():   # its "numItermax reached" warning becomes the status and stats
                warnings.simplefilter("ignore", UserWarning)
                # masses per unit of the total (POT checks equal totals to an absolute 1e-6)
                return ot.emd(model.a / model.mass, model.b / model.mass, costs, numItermax=limit, log=True,
                              numThreads=options.threads or 1)
        try:
            dense, log = run_abandonable(emd, stop)     # ot.emd has no callback: abandoned on a stop
        except Stopped:
            return stopped_result(model, stop_reason(deadline), {"engine": "ot.emd"}, plan=bottleneck)
        import scipy.sparse as sp
        stats = {"engine": "ot.emd", "result_code": int(log["result_code"])}
        reached = log["result_code"] == 1
        if not reached:
            stats["warning"] = str(log.get("warning"))
        stopped = None if reached else Termination.ITERATION_LIMIT
        try:
            return _best_of(model, sp.csr_matrix(dense) * model.mass, bottleneck, guarantee=1.0 if reached else None,
                            bound=dual_bound(model, log["u"], scale, cap=cap), stopped=stopped, stats=stats)
        except SolverError:
            if reached:
                raise
            # stopped before its plan met the marginals: nothing to return but the stop
            return transport_result(model, None, guarantee=None, stopped=stopped, stats=stats)

