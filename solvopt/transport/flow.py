"""Min-cost flow on a sparse directed graph with real-valued supplies: the engine under every
transport method (the approximation's sparse graph, the exact full bipartite graph).

One entry point, :func:`min_cost_flow`, several engines behind it:

- ``"highs"``: the flow LP (one column per arc, one equality row per node: out - in = supply)
  passed column-wise to HiGHS in one ``passModel``. Exact up to HiGHS' feasibility and
  optimality tolerances; its row duals are node potentials (``cost_ij >= pi_tail - pi_head`` up to
  tolerance), from which callers build certified dual bounds.
- ``"ortools"``: OR-Tools ``SimpleMinCostFlow`` (C++ cost scaling). It takes integers only, so
  supplies must be integer multiples of one unit (uniform weights are; checked, else ModelError)
  and costs are scaled to integers below ``ORTOOLS_COST_RANGE`` and rounded. The flow it returns
  is optimal for the rounded costs, hence within ``abs_error`` of the optimum for the true costs
  (see :func:`rounding_error`; pass ``path_arcs`` to make it tight). No potentials.
- ``"simplex"``: our primal network simplex in Numba (:mod:`solvopt.transport.network_simplex`)
  on costs scaled to integers like OR-Tools' (``abs_error`` likewise), uncapacitated arcs only;
  its potentials are exact duals of the rounded costs.
- ``"costscaling"``: our cost-scaling push-relabel in Numba (:mod:`solvopt.transport.cost_scaling`)
  on costs scaled to integers like the simplex's, uncapacitated arcs and supplies that are
  integer multiples of one unit; it ends eps-optimal at eps = one integer cost unit, and its
  ``abs_error`` states that with the rounding (3x the simplex's). Its prices are returned as
  potentials when every arc prices out within that eps. ``auto`` does not choose it: on the grid
  hierarchy's graph (uniform points, p = 2, n = 10^4 and 3 x 10^4) it took 1.2-3.8x OR-Tools' time
  and 1.4-3.2x the simplex's (``benchmarks/transport_flow.py --graph grid``). Its kernel takes a
  warm start (prices): :func:`warm_cost_scaling` solves bipartite flows from a coarser level's
  potentials to a stated resolution, the multiscale approximation's engine from 60,000 points.
- ``"networkx"``: ``networkx.min_cost_flow`` on integer data, a tiny-case reference for tests.

``engine="auto"`` picks the fastest engine that is exact on these inputs, as measured by
``benchmarks/transport_flow.py`` (see ``benchmarks/results/transport_flow.md``): the network
simplex whenever it applies (no capacities, costs >= 0), else OR-Tools, else HiGHS. The simplex
can stall on inputs with many ties (pixel colour clouds: ~100 pivots per node against 4-11 on
uniform points); under ``auto`` it gives up after ``SIMPLEX_PIVOTS_PER_NODE`` pivots per node and
our cost scaling (when the supplies are unit multiples) solves the flow instead: on the two-hop
graph of the pixel clouds (n = 2500 and 5000, p = 1 and 2) the whole flow then took 0.11-0.20 s
where the hand-over to OR-Tools (a forked child) took 0.26-0.50 s.
"""
from __future__ import annotations

import os
import time

import numpy as np

from solvopt.core.errors import BackendUnavailable, ModelError, SolverError

# the result types and integer scaling live in flow_types (the engines import them from there);
# re-exported here, the module callers know
from .flow_types import (  # noqa: F401
    ORTOOLS_COST_RANGE,
    FlowSolution,
    FlowStopped,
    integer_costs,
    integer_data,
    integer_units,
    rounding_error,
    run_stoppable,
)

ENGINES = ("auto", "simplex", "highs", "ortools", "costscaling", "networkx")
# engine="auto": pivots per node after which the simplex hands over to cost scaling. Uniform points
# take 4-11 pivots per node; colour clouds with many ties took ~100 (OR-Tools was 3-4x faster there,
# our cost scaling 2-3x faster than OR-Tools on the two-hop graph of pixel colours, n = 2500-5000).
SIMPLEX_PIVOTS_PER_NODE = 25
FEASIBILITY_ENGINES = ("auto", "ortools", "scipy", "highs")


def _check(tails, heads, costs, supplies, n_nodes, capacities):
    tails = np.ascontiguousarray(tails, dtype=np.int64)
    heads = np.ascontiguousarray(heads, dtype=np.int64)
    costs = np.ascontiguousarray(costs, dtype=np.float64)
    supplies = np.ascontiguousarray(supplies, dtype=np.float64)
    if not (tails.ndim == heads.ndim == costs.ndim == supplies.ndim == 1) or not (
            len(tails) == len(heads) == len(costs)):
        raise ModelError("min_cost_flow: tails, heads and costs must be 1-D arrays of one length, supplies 1-D")
    n_nodes = len(supplies) if n_nodes is None else int(n_nodes)
    if len(supplies) != n_nodes:
        raise ModelError(f"min_cost_flow: {len(supplies)} supplies for {n_nodes} nodes")
    if len(tails) and (min(tails.min(), heads.min()) < 0 or max(tails.max(), heads.max()) >= n_nodes):
        raise ModelError(f"min_cost_flow: an arc end is outside 0..{n_nodes - 1}")
    if not (np.all(np.isfinite(costs)) and np.all(np.isfinite(supplies))):
        raise ModelError("min_cost_flow: costs and supplies must be finite")
    scale = max(float(np.abs(supplies).sum()), 1.0)
    if abs(float(supplies.sum())) > 1e-9 * scale:
        raise ModelError(f"min_cost_flow: supplies sum to {supplies.sum():.3g}, not 0")
    if capacities is not None:
        capacities = np.ascontiguousarray(capacities, dtype=np.float64)
        if capacities.shape != costs.shape or np.any(capacities < 0):
            raise ModelError("min_cost_flow: capacities must be nonnegative, one per arc")
    return tails, heads, costs, supplies, n_nodes, capacities


def min_cost_flow(tails, heads, costs, supplies, *, n_nodes=None, capacities=None, engine="auto",
                  path_arcs=None, stop=None, rough_potentials: bool = False) -> FlowSolution:
    """A min-cost flow: arcs ``tails[k] -> heads[k]`` of cost ``costs[k]`` (capacity
    ``capacities[k]``, default unbounded), node ``i`` sending ``supplies[i]`` (positive: source,
    negative: sink; the supplies sum to 0). Raises ModelError when no feasible flow exists.

    ``path_arcs``: the most arcs on a supply-to-demand path of the graph (1 for a bipartite
    graph, 2 for the two-hop graph; default n_nodes - 1), which bounds the total arc flow of an
    optimal flow and so the cost error of the engines that round costs to integers.

    ``stop``: a callable polled about every 50 ms while the ``simplex`` engine runs (in a worker
    thread), at every HiGHS simplex iteration, and every 50 ms while OR-Tools solves in a forked
    child process (its solve holds the GIL and has no callback; the child is killed on a stop);
    when it returns true the run ends by raising :class:`FlowStopped`. (Without ``stop`` HiGHS
    still stops on Ctrl-C, raising KeyboardInterrupt; OR-Tools runs in place, to its end.)

    ``rough_potentials``: the ``costscaling`` engine returns its final prices as potentials even
    when some arc prices out below -eps (arcs its transit bounds saturate), for callers that
    certify by c-transforms, which make any finite potentials dual feasible."""
    if engine not in ENGINES:
        raise ModelError(f"unknown min-cost-flow engine {engine!r}; choose one of {', '.join(ENGINES)}")
    tails, heads, costs, supplies, n_nodes, capacities = _check(tails, heads, costs, supplies, n_nodes, capacities)
    if stop is not None and stop():
        raise FlowStopped
    fallback = None
    if engine == "auto":
        engine = auto_engine(supplies, capacities, costs)
        if engine == "simplex" and integer_data(supplies, None) is not None:
            fallback = "costscaling"
    if engine == "highs":
        return _highs(tails, heads, costs, supplies, n_nodes, capacities, stop)
    if engine == "simplex":
        sol = _simplex(tails, heads, costs, supplies, n_nodes, capacities, path_arcs, stop,
                       max(1, int(SIMPLEX_PIVOTS_PER_NODE * n_nodes)) if fallback else 0)
        if sol is not None:
            return sol
        engine = fallback               # the simplex stalled (many ties): cost scaling does not
    units = integer_data(supplies, capacities)
    if engine == "costscaling":
        return _cost_scaling(tails, heads, costs, supplies, units, n_nodes, capacities, path_arcs, stop,
                             rough_potentials)
    if units is None:
        raise ModelError(f"engine {engine!r} needs supplies (and capacities) that are integer multiples of one "
                         "unit; use engine='highs' for general real supplies")
    if engine == "ortools":
        if stop is not None and hasattr(os, "fork"):
            return _ortools_forked(tails, heads, costs, units, n_nodes, path_arcs, stop)
        return _ortools(tails, heads, costs, units, n_nodes, path_arcs)
    return _networkx(tails, heads, costs, units, n_nodes)


def auto_engine(supplies, capacities=None, costs=None) -> str:
    """The default engine: our network simplex for uncapacitated arcs of costs >= 0 (measured the
    fastest on the transport graphs, see the module docstring), else OR-Tools where installed and
    the supplies are integer multiples of one unit, else HiGHS."""
    uncapacitated = capacities is None or not np.any(np.isfinite(capacities))
    if uncapacitated and (costs is None or not len(costs) or costs.min() >= 0):
        return "simplex"
    try:
        import ortools.graph.python.min_cost_flow  # noqa: F401
    except ImportError:
        return "highs"
    return "ortools" if integer_data(supplies, capacities) is not None else "highs"


def _highs(tails, heads, costs, supplies, n_nodes, capacities, stop=None) -> FlowSolution:
    from solvopt.dsl.highs_export import HIGHS_INT_MAX, highspy_module, new_highs, was_interrupted, watch_interrupt
    highspy = highspy_module("min-cost flow engine 'highs'")
    n_arcs = len(tails)
    if n_arcs == 0:               # HiGHS calls an LP without columns "empty"; answer it here
        if np.any(supplies != 0):
            raise ModelError("min_cost_flow: no feasible flow (the arcs cannot carry the supplies)")
        return FlowSolution(np.zeros(0), 0.0, np.zeros(n_nodes), "highs")
    if 2 * n_arcs > HIGHS_INT_MAX:
        raise ModelError(f"{n_arcs:,} arcs: more than HiGHS holds")
    h = new_highs()
    # column k: +1 in row tails[k], -1 in row heads[k] (out - in = supply); a self-loop has no entry
    loop = tails == heads
    index = np.empty(2 * n_arcs, dtype=np.int32)
    index[0::2], index[1::2] = tails, heads
    value = np.empty(2 * n_arcs)
    value[0::2], value[1::2] = 1.0, -1.0
    start = np.arange(0, 2 * n_arcs + 1, 2, dtype=np.int32)
    if loop.any():
        keep = np.repeat(~loop, 2)
        index, value = index[keep], value[keep]
        start = np.concatenate(([0], np.cumsum(np.where(loop, 0, 2)))).astype(np.int32)
    upper = np.full(n_arcs, np.inf) if capacities is None else capacities
    status = h.passModel(n_arcs, n_nodes, len(index), int(highspy.MatrixFormat.kColwise),
                         int(highspy.ObjSense.kMinimize), 0.0, costs, np.zeros(n_arcs), upper,
                         supplies, supplies, start, index, value, np.zeros(n_arcs, dtype=np.int32))
    if status == highspy.HighsStatus.kError:
        raise SolverError("HiGHS rejected the flow LP")
    h.setOptionValue("solver", "simplex")
    # presolve finds little to remove in a flow LP and cannot be interrupted: off, it was 4.5x
    # faster on a 600 x 600 transport LP (1.6 s against 7.2 s) and a stop is seen within 0.1 s
    h.setOptionValue("presolve", "off")
    if stop is None:
        with watch_interrupt(h):
            h.run()
    else:                      # HiGHS asks at every simplex iteration: the caller's stop (time limit, Ctrl-C)
        stopped: list[bool] = []

        def ask(event):
            if not stopped and stop():
                stopped.append(True)
            event.interrupt(bool(stopped))
        event = h.callbacks[int(highspy.cb.HighsCallbackType.kCallbackSimplexInterrupt)]
        event.subscribe(ask)
        try:
            h.run()
        finally:
            event.unsubscribe(ask)
    model_status = h.getModelStatus()
    if was_interrupted(h):
        if stop is not None:
            raise FlowStopped
        raise KeyboardInterrupt
    if model_status == highspy.HighsModelStatus.kInfeasible:
        raise ModelError("min_cost_flow: no feasible flow (the arcs cannot carry the supplies)")
    if model_status != highspy.HighsModelStatus.kOptimal:
        raise SolverError(f"HiGHS stopped the flow LP with status {h.modelStatusToString(model_status)}")
    solution = h.getSolution()
    flow = np.maximum(np.asarray(solution.col_value, dtype=np.float64), 0.0)
    potentials = np.asarray(solution.row_dual, dtype=np.float64)
    return FlowSolution(flow, float(flow @ costs), potentials, "highs")


def _simplex(tails, heads, costs, supplies, n_nodes, capacities, path_arcs, stop, max_pivots):
    """The network simplex's solution, or None when it used up ``max_pivots`` (0: no limit)."""
    if capacities is not None and np.any(np.isfinite(capacities)):
        raise ModelError("engine 'simplex' takes uncapacitated arcs only; use engine='highs' or 'ortools'")
    from .network_simplex import network_simplex
    if len(costs) and costs.min() < 0:
        raise ModelError("engine 'simplex' needs costs >= 0")
    units = integer_data(supplies, None)
    unit = 1.0 if units is None else units[0]
    # the simplex's potentials and reduced costs stay below 3 (n_nodes + 2) x the largest cost:
    # the finest integer costs that cannot overflow int64 (and are exact in float64)
    int_costs, scale = integer_costs(costs, min(2**53, 2**62 // (4 * (n_nodes + 2))))
    scaled = supplies if units is None else units[1].astype(np.float64)
    if stop is not None and stop():
        raise FlowStopped
    flow, pi, left = run_stoppable(network_simplex, (tails, heads, int_costs, scaled), (max_pivots,), stop)
    if left < 0:
        return None
    if left > 1e-9 * max(float(np.abs(scaled).max()), 1.0):
        raise ModelError("min_cost_flow: no feasible flow (the arcs cannot carry the supplies)")
    flow = np.maximum(flow, 0.0, out=flow)
    flow *= unit
    # pi: int_cost + pi[tail] - pi[head] >= 0; in the convention of the HiGHS duals
    # (cost >= P[tail] - P[head]) P = -pi, in the caller's cost units
    return FlowSolution(flow, float(flow @ costs), -pi.astype(np.float64) / scale, "simplex",
                        rounding_error(flow, supplies, scale, n_nodes, path_arcs))


def _run_cost_scaling(graph, supplies, n_nodes, tail, stop, label: str):
    """The cost-scaling kernel on ``graph`` (tails, heads, integer costs, capacities, integer
    supplies) with the trailing arguments ``tail``, in a worker thread: (flow, prices). A stop
    raises FlowStopped; an infeasible verdict is confirmed by a max flow (ModelError), else it is
    the kernel's fault (SolverError)."""
    from . import cost_scaling as cs
    tails, heads, costs, caps, ints = graph
    if len(tails) > cs.MAX_ARCS:
        raise ModelError(f"{label}: more than {cs.MAX_ARCS:,} arcs; use engine='simplex'")
    graph = (tails, heads, cs.narrow(costs), cs.narrow(caps), ints)
    flow, price, status = run_stoppable(cs.cost_scaling, graph, tail, stop)
    if status == cs.STOPPED:
        raise FlowStopped
    if status == cs.INFEASIBLE:
        if feasible_flow(tails, heads, supplies, n_nodes=n_nodes) is None:
            raise ModelError("min_cost_flow: no feasible flow (the arcs cannot carry the supplies)")
        raise SolverError(f"{label}: prices left their proven range on a feasible problem")
    return flow, price


def _cost_scaling(tails, heads, costs, supplies, units, n_nodes, capacities, path_arcs, stop,
                  rough: bool = False) -> FlowSolution:
    """Engine ``costscaling`` (see the module docstring and :mod:`solvopt.transport.cost_scaling`)."""
    from . import cost_scaling as cs
    if capacities is not None and np.any(np.isfinite(capacities)):
        raise ModelError("engine 'costscaling' takes uncapacitated arcs only; use engine='highs' or 'ortools'")
    if len(costs) and costs.min() < 0:
        raise ModelError("engine 'costscaling' needs costs >= 0")
    if units is None:
        raise ModelError("engine 'costscaling' needs supplies that are integer multiples of one unit; "
                         "use engine='simplex' or 'highs' for general real supplies")
    unit, ints, _ = units
    caps = cs.transit_caps(tails, heads, ints)
    # excesses stay below the arcs' capacities summed over a node: refuse what could overflow int64
    degree = np.bincount(tails, minlength=n_nodes) + np.bincount(heads, minlength=n_nodes)
    if float(caps.max(initial=0)) * (float(degree.max(initial=0)) + 1) >= 2.0**62:
        raise ModelError("engine 'costscaling': too many supply units for int64 excesses; use engine='simplex'")
    # prices fall by at most about 1.7 (n_nodes + 1) x the largest cost over all phases (module docstring)
    int_costs, scale = integer_costs(costs, min(2**53, 2**62 // (16 * (n_nodes + 2))))
    if stop is not None and stop():
        raise FlowStopped
    top = int(int_costs.max(initial=0))
    flow, price = _run_cost_scaling((tails, heads, int_costs, caps, ints), supplies, n_nodes,
                                    (np.zeros(n_nodes, np.int64), max(top, 1), cs.ALPHA), stop, "engine 'costscaling'")
    flow *= unit
    # eps = 1 integer unit: within (|f| + |f*|) / scale of the rounded costs' optimum, plus the rounding
    error = 3.0 * rounding_error(flow, supplies, scale, n_nodes, path_arcs)
    reduced = int_costs + price[tails] - price[heads]
    potentials = -price.astype(np.float64) / scale if rough or not len(reduced) or reduced.min() >= -1 else None
    return FlowSolution(flow, float(flow @ costs), potentials, "costscaling", error)


def tight_potentials(tails, heads, costs, potentials) -> np.ndarray:
    """``potentials`` with each sending node's raised (lowered, as a price) to its best arc's:
    u_i = min over its arcs of (costs + potentials[head]), every arc's reduced cost then >= 0.

    A saturated arc (its transit bound met: every arc of an assignment that carries flow) may
    price out far below -eps after :func:`warm_cost_scaling`, which weakens a c-transform's bound
    started from the sending side; this repairs it (n = 10^5, a level of cells: the bound stalled
    at a 7% gap without it, and came within 0.06% in two rounds with it)."""
    tight = np.array(potentials, dtype=np.float64)
    best = np.full(len(tight), np.inf)
    np.minimum.at(best, tails, costs + tight[heads])
    tight[tails] = best[tails]
    return tight


def bipartite_caps(tails, heads, supplies) -> np.ndarray:
    """:func:`solvopt.transport.cost_scaling.transit_caps` where no node is both a tail and a head
    (a transport graph): an arc carries at most its tail's supply and its head's demand, read
    directly (0.4 s saved at 22 million arcs); the general count otherwise."""
    from . import cost_scaling as cs
    is_tail = np.zeros(len(supplies), np.bool_)
    is_tail[tails] = True
    if is_tail[heads].any():
        return cs.transit_caps(tails, heads, supplies)
    return np.maximum(np.minimum(supplies[tails], -supplies[heads]), 0)


# warm_cost_scaling: a global update after every (nodes / this) relabels (n = 10^5 transport, prices
# from cells of four points: nodes / 6 and / 4 took 3.0 s, nodes / 20 6.5 s, one per phase 12 s)
WARM_UPDATES = 6


def warm_cost_scaling(tails, heads, costs, supplies, potentials, resolution: float, *, n_nodes=None,
                      stop=None) -> FlowSolution:
    """A min-cost flow on a bipartite graph (every arc from a node that only sends to one that
    only receives) by cost scaling from close prices, to a stated resolution: the multiscale
    approximation's fine solve.

    ``potentials``: one per node, of which only the sending nodes' count (e.g. a coarser level's,
    moved to the points, or the last round's after :func:`tight_potentials`): each receiving
    node's price starts as its cheapest arc's, so no arc prices out below 0 and the zero flow is
    0-optimal. (Starting from the last round's flow as well was measured no faster: n = 3 x 10^5,
    the second round 8.6 s against 7.3 s from its prices alone.) Costs are rounded to multiples of
    ``resolution`` and one phase of the push-relabel at eps = 1 unit runs, with frequent global
    updates (:data:`WARM_UPDATES`; phases from eps = 8 or 64 down took 1.4-2x as long). The flow
    costs at most ``abs_error`` = 3 |f| ``resolution`` more than the optimum (eps = 1 on the
    rounded costs, as :func:`min_cost_flow`'s ``costscaling``, |f| the total supply). The
    potentials returned are the kernel's final prices, eps-optimal except on saturated arcs
    (:func:`tight_potentials` repairs the sending side, for a certificate and for the next round).
    Raises ModelError where the supplies are not integer multiples of one unit or the rounded
    costs would overflow."""
    from . import cost_scaling as cs
    tails, heads, costs, supplies, n_nodes, _ = _check(tails, heads, costs, supplies, n_nodes, None)
    if len(costs) and costs.min() < 0:
        raise ModelError("warm cost scaling needs costs >= 0")
    units = integer_data(supplies, None)
    if units is None:
        raise ModelError("warm cost scaling needs supplies that are integer multiples of one unit")
    if not (resolution > 0 and np.isfinite(resolution)):
        raise ModelError(f"warm cost scaling needs a finite resolution > 0, got {resolution!r}")
    unit, ints, _ = units
    with np.errstate(over="ignore"):
        scaled = np.divide(costs, resolution)
        start = -np.asarray(potentials, dtype=np.float64)[:n_nodes] / resolution
    limit = 2.0**62 / (16.0 * (n_nodes + 2))
    if len(scaled) and not (np.all(np.isfinite(start[tails])) and scaled.max() < limit
                            and np.abs(start[tails]).max() < limit):
        raise ModelError("warm cost scaling: costs over the resolution overflow int64")
    int_costs = np.rint(scaled).astype(np.int64)
    caps = bipartite_caps(tails, heads, ints)
    prices = np.zeros(n_nodes, np.int64)
    prices[tails] = np.rint(start[tails]).astype(np.int64)
    cheapest = np.full(n_nodes, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(cheapest, heads, int_costs + prices[tails])
    prices[heads] = cheapest[heads]          # every arc's reduced cost >= 0: the zero flow is 0-optimal
    every = max(1, n_nodes // WARM_UPDATES)
    reduced = int_costs + prices[tails] - prices[heads]       # a feasible flow's path prices within n x this
    slack = int(np.abs(reduced).max(initial=0))
    flow, price = _run_cost_scaling((tails, heads, int_costs, caps, ints), supplies, n_nodes,
                                    (prices, cs.ALPHA, cs.ALPHA, every, slack), stop, "warm cost scaling")
    flow *= unit
    error = 3.0 * float(flow.sum()) * resolution
    return FlowSolution(flow, float(flow @ costs), -price.astype(np.float64) * resolution, "costscaling", error)


def _ortools(tails, heads, costs, units, n_nodes, path_arcs) -> FlowSolution:
    try:
        from ortools.graph.python import min_cost_flow as ort
    except ImportError:
        raise BackendUnavailable("min-cost flow engine 'ortools' needs OR-Tools: pip install ortools") from None
    unit, int_supplies, caps = units
    if caps is None:          # unbounded arcs: no flow on an arc exceeds the total supply
        caps = np.full(len(tails), int(int_supplies[int_supplies > 0].sum()), dtype=np.int64)
    int_costs, scale = integer_costs(costs)
    solver = ort.SimpleMinCostFlow()
    solver.add_arcs_with_capacity_and_unit_cost(tails, heads, caps, int_costs)
    solver.set_nodes_supplies(np.arange(n_nodes), int_supplies)
    status = solver.solve()
    if status == solver.INFEASIBLE:
        raise ModelError("min_cost_flow: no feasible flow (the arcs cannot carry the supplies)")
    if status != solver.OPTIMAL:
        raise SolverError(f"OR-Tools min-cost flow stopped with status {status}")
    flow = solver.flows(np.arange(len(tails))).astype(np.float64) * unit
    return FlowSolution(flow, float(flow @ costs), None, "ortools",
                        rounding_error(flow, unit * int_supplies, scale, n_nodes, path_arcs))


def _ortools_forked(tails, heads, costs, units, n_nodes, path_arcs, stop) -> FlowSolution:
    """:func:`_ortools` in a forked child (the data reach it by copy-on-write, the flow comes back
    through shared memory), killed as soon as ``stop()`` turns true: FlowStopped."""
    import mmap
    import signal
    try:                   # imported here, once: not again in every child
        from ortools.graph.python import min_cost_flow as _  # noqa: F401
    except ImportError:
        raise BackendUnavailable("min-cost flow engine 'ortools' needs OR-Tools: pip install ortools") from None
    if stop():
        raise FlowStopped
    n_arcs = len(tails)
    shared = mmap.mmap(-1, 8 * (n_arcs + 2))
    out = np.frombuffer(shared, dtype=np.float64)
    out[0] = -1.0                               # status: -1 crashed, 0 optimal, 1 infeasible, 2 other failure
    pid = os.fork()
    if pid == 0:                                # the child: solve, write, leave without any cleanup
        code = 2.0
        try:
            sol = _ortools(tails, heads, costs, units, n_nodes, path_arcs)
            out[1], out[2:] = sol.abs_error, sol.flow
            code = 0.0
        except ModelError:
            code = 1.0
        except BaseException:
            code = 2.0
        finally:
            out[0] = code
            os._exit(0)
    try:
        pause = 0.001
        while os.waitpid(pid, os.WNOHANG)[0] == 0:
            if stop():
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise FlowStopped
            time.sleep(pause)
            pause = min(2 * pause, 0.05)        # quick solves are not kept waiting; long ones polled every 50 ms
    except BaseException:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        raise
    code = out[0]
    if code == 1.0:
        raise ModelError("min_cost_flow: no feasible flow (the arcs cannot carry the supplies)")
    if code != 0.0:
        raise SolverError("OR-Tools min-cost flow failed in its child process")
    flow = out[2:].copy()
    return FlowSolution(flow, float(flow @ costs), None, "ortools", float(out[1]))


def _networkx(tails, heads, costs, units, n_nodes) -> FlowSolution:
    import networkx as nx
    unit, int_supplies, caps = units
    int_costs, scale = integer_costs(costs)
    graph = nx.MultiDiGraph()
    for node in range(n_nodes):
        graph.add_node(node, demand=-int(int_supplies[node]))
    for k, (t, h) in enumerate(zip(tails.tolist(), heads.tolist())):
        attrs = {"weight": int(int_costs[k])}
        if caps is not None:
            attrs["capacity"] = int(caps[k])
        graph.add_edge(t, h, key=k, **attrs)
    try:
        flow_dict = nx.min_cost_flow(graph)
    except nx.NetworkXUnfeasible:
        raise ModelError("min_cost_flow: no feasible flow (the arcs cannot carry the supplies)") from None
    flow = np.array([flow_dict[t][h][k] for k, (t, h) in enumerate(zip(tails.tolist(), heads.tolist()))],
                    dtype=np.float64) * unit
    return FlowSolution(flow, float(flow @ costs), None, "networkx",
                        rounding_error(flow, unit * int_supplies, scale, n_nodes, None))


def feasible_flow(tails, heads, supplies, *, n_nodes=None, engine="auto"):
    """A flow meeting the supplies over uncapacitated arcs, or None when none exists.

    A max-flow from a super source (arcs to the sources, capacity = supply) to a super sink:
    OR-Tools ``SimpleMaxFlow`` (``auto`` where installed) or SciPy's ``maximum_flow`` (the arcs
    must then be distinct (tail, head) pairs) on integer units of the supplies, HiGHS (a
    zero-cost flow LP) for general real supplies. Used by the p = inf threshold searches.
    """
    if engine not in FEASIBILITY_ENGINES:
        raise ModelError(f"unknown feasibility engine {engine!r}; choose one of {', '.join(FEASIBILITY_ENGINES)}")
    tails, heads, costs, supplies, n_nodes, _ = _check(tails, heads, np.zeros(len(tails)), supplies, n_nodes, None)
    units = integer_data(supplies, None)
    use_ortools = engine in ("auto", "ortools") and ortools_installed()
    if engine == "ortools" and not use_ortools:
        raise BackendUnavailable("flow engine 'ortools' needs OR-Tools: pip install ortools")
    if engine == "highs" or units is None or (not use_ortools and units[1][units[1] > 0].sum() >= 2**31):
        try:
            return _highs(tails, heads, costs, supplies, n_nodes, None).flow
        except ModelError:
            return None
    unit, ints, _ = units
    total = int(ints[ints > 0].sum())
    source, sink = n_nodes, n_nodes + 1
    src_nodes, snk_nodes = np.flatnonzero(ints > 0), np.flatnonzero(ints < 0)
    all_tails = np.concatenate([tails, np.full(len(src_nodes), source), snk_nodes])
    all_heads = np.concatenate([heads, src_nodes, np.full(len(snk_nodes), sink)])
    caps = np.concatenate([np.full(len(tails), total), ints[src_nodes], -ints[snk_nodes]]).astype(np.int64)
    if use_ortools:
        from ortools.graph.python import max_flow
        solver = max_flow.SimpleMaxFlow()
        solver.add_arcs_with_capacity(all_tails, all_heads, caps)
        if solver.solve(source, sink) != solver.OPTIMAL:
            raise SolverError("OR-Tools max flow failed")
        if solver.optimal_flow() < total:
            return None
        return solver.flows(np.arange(len(tails))).astype(np.float64) * unit
    return _scipy_feasible(all_tails, all_heads, caps, n_nodes + 2, source, sink, total, len(tails), unit)


def _scipy_feasible(tails, heads, caps, n_nodes, source, sink, total, n_arcs, unit):
    import scipy.sparse as sp
    from scipy.sparse.csgraph import maximum_flow
    graph = sp.csr_matrix((np.minimum(caps, 2**31 - 1).astype(np.int32), (tails, heads)), shape=(n_nodes, n_nodes))
    result = maximum_flow(graph, source, sink)
    if result.flow_value < total:
        return None
    # the arcs are distinct (tail, head) pairs in our graphs; read each one's flow back
    return np.asarray(result.flow[tails[:n_arcs], heads[:n_arcs]]).ravel().astype(np.float64) * unit


def ortools_installed() -> bool:
    try:
        import ortools.graph.python.max_flow  # noqa: F401
    except ImportError:
        return False
    return True
