"""Method ``approx``: a proven factor-3 approximation of W_p for every p in [1, inf], on a sparse graph.

Construction (the two-hop graph, :mod:`solvopt.transport.graph`)
-----------------------------------------------------------------
Draw k centres uniformly without replacement from the targets (k = round(sqrt(n)) by default,
option ``centres``; ``seed`` fixes the draw). For every source a let c(a) be its nearest centre
and r_a = d(a, c(a)); its *bunch* is the set of targets b with d(a, b) < r_a. The graph has the
n sources, the m targets and one hub per centre that some source uses, and the arcs

    a -> b       for b in the bunch of a,            cost  d(a, b)^p
    a -> c(a)    one per source,                      cost  3^(p-1) r_a^p
    c -> b       for every hub c and every target b,  cost  (3/2)^(p-1) D(c, b)^p

with D = d for point inputs (centres are targets, so D(c, b) is a target-target distance) and,
for a cost-matrix input, D(c, b) = min over the sources a' with c(a') = c of C[a', c] + C[a', b]
(an upper bound on d(c, b) when C is a metric, and at most r_a + d(a, b) for every source a of
the hub: exactly what the proof below uses). Sources supply a, targets demand b. Expected size:
about m/k bunch arcs per source and k m hub arcs, ~2 n^(3/2) arcs for n = m.

Proof of the factor 3 on W_p (1 <= p < inf)
--------------------------------------------
Lemma 1 (convexity). For x, y >= 0: (x + y)^p <= 3^(p-1) x^p + (3/2)^(p-1) y^p. Write
x + y = (1/3)(3x) + (2/3)(3y/2) and apply Jensen to t -> t^p with weights 1/3, 2/3.

Lemma 2 (flow -> plan, no dearer). Let F be a min-cost flow. Its bunch arcs are plan entries
at their own cost. At a hub c, pair the mass arriving from sources with the mass leaving to
targets in any way (north-west corner): a pair (a, b) routed a -> c -> b has
d(a, b) <= r_a + d(c, b) <= r_a + D(c, b) (triangle inequality), so by Lemma 1 its cost
d(a, b)^p is at most the path's cost. The plan costs at most cost(F) (call it Fcost).

Lemma 3 (optimum -> flow, at most 3^p dearer). Route each pair (a, b) of an optimal plan: on its
bunch arc if b is in the bunch (same cost), else via c(a): then r_a <= d(a, b) (b is not closer
than the nearest centre) and D(c(a), b) <= r_a + d(a, b) <= 2 d(a, b), so the path costs at most
3^(p-1) d^p + (3/2)^(p-1) 2^p d^p = 3^p d(a, b)^p. Hence Fcost <= 3^p OPT.

So the plan P has cost(P) <= Fcost <= 3^p OPT: W_p(P) <= 3 W_p, whatever centres were drawn (the
randomness changes only the graph's size), and W_p >= Fcost^(1/p) / 3 is a certified lower
bound (the ``bound`` reported; with the engines that round costs to integers, our network
simplex (the default) and OR-Tools, Fcost less the rounding error the engine states, and the
factor stated is 3 (Fcost / that)^(1/p): 3 to about 1e-9 at p <= 3 on these graphs). For a cost
matrix Lemma 3 holds for any C; Lemma 2 needs the triangle inequality, which is checked at run
time: the method reports the factor only when cost(P) <= Fcost actually holds (it does whenever C
is a metric).

The plan returned is better than Lemma 2's pairing and keeps the bound: with ``improve`` (the
default) it is an exact min-cost plan over the candidate pairs "bunch arcs with flow, and, at
each hub, every source sending to it x every target it serves" (a bipartite problem with true
costs d^p, of which Lemma 2's pairing is one feasible plan, so it is no dearer).

p = inf (bottleneck)
--------------------
Give each arc a threshold: d(a, b) for a bunch arc, r_a for a -> c(a), D(c, b) / 2 for c -> b.
For a threshold t, G_t keeps the arcs of threshold <= t. If W_inf <= t, every optimal pair is a
bunch arc of length <= t or has r_a <= d(a, b) <= t and D(c(a), b) <= 2t: G_t carries all the
mass (a max-flow test). Conversely a feasible flow in G_t pairs a, b only with
d(a, b) <= r_a + D(c, b) <= t + 2t = 3t. Binary search over the distinct thresholds gives the
smallest feasible t_min: every smaller candidate is infeasible, so W_inf >= t_min (the bound),
and the plan's largest distance U is <= 3 t_min <= 3 W_inf. With ``improve``: W_inf <= U, so
every pair of an optimal plan has d <= U; when those pairs are few (at most
``EXACT_PAIRS_PER_ARC`` x the graph's arcs; one counting pass over the distances decides, as for
uniform points where they are about n * pi U^2 m), a threshold search over exactly those pairs
gives W_inf itself, proven optimal (every smaller threshold is infeasible on all pairs below it).
Otherwise the plan is the bottleneck-optimal plan over the flow's candidate pairs (a second
threshold search), again no worse than the pairing.

Stopping early (Ctrl-C, ``time_limit``) after the flow is known returns the Lemma 2 plan with
the factor (p = inf: a stopped threshold search certifies only the smallest threshold above the
largest one it proved infeasible, t_lower; bound t_lower, factor = the plan's bottleneck / t_lower).
Before that (the kernels' first load and the graph's passes are watched between blocks, the
network simplex every 50 ms) the run returns the quick plan and the projection bound of
:mod:`solvopt.transport.quick`, with no factor.

Units: masses are handled per unit of the total M and lengths in units of the largest effective
arc length s (3^((p-1)/p) r_a, (3/2)^((p-1)/p) D: every cost in [0, 1], nothing overflows at any
p); the bound is s (M F_low)^(1/p) / 3. For p > ``LARGE_P`` the p = inf threshold search's plan is
also tried (bottleneck <= 3 W_inf) and the projection bound taken when better.

Repeated points (identical coordinates) are first merged into one point with the summed mass when
that removes at least 2% of them (:mod:`solvopt.transport.merge`: an exact reduction), and the
plan is split back onto the original points at the same cost.

Certified gap: for 1 <= p <= ``LARGE_P`` the bound reported is the larger of the factor bound and
the a-posteriori dual bound of :func:`solvopt.transport.dual.refined_bound` (potentials of exact
solves on the candidate pairs, made feasible for every pair by a c-transform; ``stats``
``dual_bound``, ``dual_rounds``, ``dual_time``), priced until a 1% gap or the solve's own time
again (at least ``DUAL_MIN_SECONDS``). A stop during it keeps the factor bound.

Small assignments (option ``graph="dense"``, :mod:`solvopt.transport.approx_dense`)
------------------------------------------------------------------------------------
For points with a named metric, finite p <= ``LARGE_P``, n = m and uniform masses, up to
``DENSE_PAIRS`` pairs (``DENSE_MAX_PAIRS`` when sampled distances tie: points on a lattice),
``graph="auto"`` (with ``engine="auto"``) solves on the full cost matrix instead: an eps-scaling
auction stopped once its plan is proven within 1% by a certified double c-transform of its prices;
the factor stated is the plan's W_p over that bound (at most 3, else the two-hop graph solves).
Proof in that module and in docs/transport.md.

The grid hierarchy (option ``graph``, :mod:`solvopt.transport.hierarchy`)
------------------------------------------------------------------------
For points with a named metric and finite p, the two-hop graph may be replaced by a grid
hierarchy of O((n + m) log) arcs: every path is source -> in hub -> out hub -> target (or one
direct arc), with weights 4^(p-1), 2^(p-1), 4^(p-1) that make a path no cheaper than its pair,
and a proven factor 4 |(1, ..., 1)| (5.66 for euclidean d = 2) in place of 3; the same flow,
pairing, re-solve and dual bound follow (proof in that module and in docs/transport.md).
"""
from __future__ import annotations

import math
import time

import numpy as np
import scipy.sparse as sp

from solvopt.core.backend import resolve_device
from solvopt.core.errors import ModelError
from solvopt.core.interrupt import stop_reason
from solvopt.core.options import Option
from solvopt.core.progress import Progress
from solvopt.core.registry import Solver, register

from .approx_dense import DENSE_MAX_PAIRS, MAX_FACTOR, dense_applies, dense_default, solve_dense, tied_share
from .dual import sorted_keys
from .flow import ENGINES, FlowStopped, feasible_flow, integer_data, min_cost_flow, ortools_installed
from .graph import Distances, TwoHopGraph, build_two_hop, default_centres
from .hierarchy import GridGraph, build_grid
from .hierarchy import supported as grid_supported
from .merge import STOPS, solve_merged
from .quick import north_west, quick_bound, stopped_result
from .result import LARGE_P, plan_cost, transport_result
from .stopping import Stopped, run_abandonable

FACTOR = 3.0
# A plan may cost more than the flow by float error only (relative) for the factor to be stated.
COST_RTOL = 1e-9
# p = inf: pairs within the plan's bottleneck, per arc of the graph, up to which improve solves exactly.
EXACT_PAIRS_PER_ARC = 4
# Candidate pairs per hub beyond which improve keeps the pairing's pairs for that hub.
PAIRS_PER_HUB_NODE = 64
# The smallest normal float64: an arc cost below it may have underflowed to 0.
UNDERFLOW = 2.0 ** -1022
# The dual bound's pricing rounds stop once the bound is this close to the plan's W_p (a 1% gap).
DUAL_TARGET = 0.99
# ... or before a round would end past this many times the solve's own time (at least DUAL_MIN_SECONDS).
DUAL_TIME_RATIO = 1.0
DUAL_MIN_SECONDS = 1.0
# graph="auto": the multiscale pricing (an a-posteriori gap, no factor) from this many pairs n x m
# on, for points in dimension <= GRID_MAX_DIM with a named metric and finite p <= LARGE_P (below,
# the two-hop graph's proven factor 3). Measured side by side in one process (uniform points, CPU
# seconds, load about 1.3 on 2 cores; benchmarks/transport_multiscale.py, the table in
# benchmarks/results/transport_multiscale.md): n = 10^4, d = 2 / 3, p = 1 / 2: multiscale
# 0.8-1.1 s at gaps 0.10-0.40%, grid 1.8-2.4 s and two-hop 2.3-2.7 s at 0.06-0.66%; n = 10^5:
# multiscale 6.2-9.0 s at 0.3-0.9%; n = 10^6: 88-118 s at 0.3-0.9% (earlier, at load 5, the
# grid took 54-74 s at 10^5, its certified ratio 1.004 and 1.44). The grid hierarchy (factor
# 4 |(1, ..., 1)|) stays available as graph="grid".
GRID_FROM_PAIRS = 10**9
# graph="auto", finite p: the multiscale pricing from this many pairs on, where it applies (points
# with a named metric, d <= GRID_MAX_DIM, finite p <= LARGE_P) and the auction does not; its plan
# is kept when its certified bound proves it within MAX_FACTOR, else the two-hop graph solves. Side
# by side in one process (2026-12-05, load about 2; random masses unless n = m): n = m = 1000-1500:
# multiscale 0.05-0.53 s against 0.09-1.22 s for the two-hop graph, about level on uniform clouds,
# 3-8x quicker on the colours of two photos and on a Gaussian mixture; n = 2000-30000 (uniform and
# random masses): 0.11-6.3 s against 0.12-141 s, quicker in 37 of 40 cases (the photos' colours at
# 10^4 with uniform masses: 2.9-3.2 s against 1.8-2.0 s); reported gaps 0.01-0.97% against up to
# 23% for the two-hop graph's certificate (whose true gap there was 1.6%). At 500 x 600: level.
MULTISCALE_FROM_PAIRS = 10**6
# engine="auto" on the two-hop graph: cost scaling instead of the network simplex when at least this
# share of a sample of TIE_SAMPLE arc costs ties with another (see _flow_engine; the colours of two
# photos, repeated ones merged: 0.12-0.23 of the sample at n = 1000-10^4, p = 1, 2; uniform points
# in d = 2, 3: at most 0.002)
TIED_SHARE = 0.05
GRID_MAX_DIM = 3


@register
class Approx(Solver):
    family = "transport"
    name = "approx"
    description = ("approximation of W_p (every p in [1, inf]): a proven factor 3 on a sparse two-hop graph "
                   "(4 |(1,..,1)| on graph='grid'); for assignment problems on points up to 4 million pairs "
                   "(graph='dense', the default up to 2.25 million, 4 million when distances tie) an auction on "
                   "the full matrix proven within 1%; for point clouds in d <= 3 from 10^6 pairs "
                   "(graph='multiscale', the default there) multiscale pricing with an a-posteriori certified "
                   "gap, kept under 'auto' when it proves factor 3 (the factor stated is the proven one); p = inf "
                   "from 10^9 pairs: threshold searches on a grid of cells, within a proven additive error)")
    honours = frozenset({"device"})
    options = (
        Option("centres", int, 0, "number of centres drawn from the targets (0: round(sqrt(n)))"),
        Option("engine", str, "auto", "min-cost flow engine on the sparse graph (graph='multiscale': 'auto' "
               "solves the levels of 60,000 points and more by warm cost scaling (the points' flows to 0.2% of "
               "W_p, the coarser levels' to 1% of their cost), the smaller ones by the network simplex; 'simplex' "
               "every level exactly; 'costscaling' every level by warm cost scaling)", ENGINES),
        Option("graph", str, "auto", "the sparse graph: 'two-hop' (factor 3, about 2 n^1.5 arcs), 'grid' "
               "(points with a named metric, finite p: a grid hierarchy of O(n log n) arcs, factor 4 |(1,..,1)|, "
               "5.66 for euclidean d = 2), 'multiscale' (points with a named metric, finite p: candidate pairs "
               "from coarsened problems, a few pricing rounds; no a-priori factor, the gap is measured by the "
               "certified dual bound; p = inf: threshold searches on a grid of cells, within twice a cell's "
               "diameter), 'dense' (points with a named metric, finite p <= 8, n = m with uniform masses, up to "
               "4 million pairs: an auction on the full cost matrix stopped within 1% of the optimum, proven by a "
               "certified dual bound; the factor stated is the plan's W_p over that bound), 'auto' (with "
               "engine='auto': dense where it applies up to 2.25 million pairs, 4 million when the distances tie; "
               "multiscale for d <= 3 from 10^6 pairs (10^9 with certificate='factor') where it applies and its "
               "certified bound proves factor 3 (the proven factor is stated; else two-hop); for p = inf the grid "
               "of cells for d <= 3 from 10^9 pairs; else two-hop)",
               ("auto", "two-hop", "grid", "multiscale", "dense")),
        Option("improve", bool, True, "re-solve exactly over the flow's candidate pairs (same bound, better plan)"),
        Option("certificate", str, "dual", "the reported bound: 'dual' prices a certified dual bound by "
               "c-transforms (the real gap, up to the solve's own time again), 'factor' keeps the proven factor "
               "bound only (fastest)", ("dual", "factor")),
    )

    def solve(self, model, options):
        gave_up = None
        if _use_dense(model, options.extra["graph"], options.extra["engine"]):
            start = time.perf_counter()
            deadline = None if options.time_limit is None else start + options.time_limit
            progress = Progress(options.progress, log=options.log)
            progress(f"approx: {model.n} x {model.m}, p = {model.p:g}: auction on the full matrix", force=True)
            stats: dict = {}
            result = solve_dense(model, deadline, progress, stats)
            if result is not None:
                return result
            if stats.get("stopped") is not None:
                return stopped_result(model, stats["stopped"], stats)
            gave_up = stats.get("dense_gave_up")
        # repeated points: one point each (exact, see merge); the guarantee stays the proven factor
        result = solve_merged(model, lambda m: self._solve(m, options), lambda result: result.stats.get("factor"))
        if gave_up is not None:
            result.stats["dense_gave_up"] = gave_up
        return result

    def _solve(self, model, options):
        start = time.perf_counter()
        deadline = None if options.time_limit is None else start + options.time_limit
        progress = Progress(options.progress, log=options.log)
        extra = options.extra
        stats: dict = {}
        if math.isinf(model.p) and _use_grid_bottleneck(model, extra["graph"]):
            from .bottleneck_grid import grid_bottleneck
            progress(f"approx: {model.n} x {model.m}, p = inf: threshold searches on a grid of cells", force=True)
            result = grid_bottleneck(model, options)
            result.stats["graph"] = "grid"
            return result
        if _use_multiscale(model, extra["graph"], extra["engine"], extra["certificate"]):
            from .approx_multiscale import solve_multiscale
            progress(f"approx: {model.n} x {model.m}, p = {model.p:g}: multiscale pricing", force=True)
            result = solve_multiscale(model, deadline, progress, stats, extra["engine"])
            if extra["graph"] == "multiscale":
                return result
            kept = _within_factor(model, result)
            if kept is not None:
                return kept
            stats = {"multiscale_gave_up": f"certified within {_ratio(result)} only, more than {MAX_FACTOR:g}"}
            progress("approx: the multiscale plan is not proven within the factor; the two-hop graph", force=True)
        progress(f"approx: {model.n} x {model.m}, p = {model.p:g}: the sparse graph", force=True)
        kernels = "cuda" if resolve_device(options.device) == "gpu" and model.cost is None else "numba"
        k = extra["centres"] or default_centres(model.n, model.m)
        stats["kernels"] = kernels
        stop = lambda: stop_reason(deadline) is not None     # noqa: E731

        def prepare():                 # importing Numba and loading the kernels: seconds the first time
            ready = Distances(model, kernels=kernels)
            ready.warm_up()
            return ready
        try:
            distances = run_abandonable(prepare, stop)       # watched: a stop during it is seen at once
            stats["kernels"] = distances.kernels
            if _use_grid(model, extra["graph"]):
                graph = build_grid(model, np.random.default_rng(options.seed), stop=stop)
            else:
                graph = build_two_hop(distances, k, np.random.default_rng(options.seed), stop=stop)
        except Stopped:
            stats["graph_time"] = time.perf_counter() - start
            return stopped_result(model, stop_reason(deadline), stats)
        if isinstance(graph, GridGraph):
            stats.update({"graph": "grid", "hubs": graph.n_hubs, "levels": graph.levels, "arcs": graph.n_arcs,
                          "direct_arcs": len(graph.dir_src), "graph_time": time.perf_counter() - start})
            progress(f"grid hierarchy: {graph.levels} levels, {graph.n_hubs} hubs, {graph.n_arcs:,} arcs", force=True)
        else:
            stats.update({"graph": "two-hop", "centres": graph.n_hubs, "arcs": graph.n_arcs,
                          "bunch_arcs": len(graph.bunch_cols), "graph_time": time.perf_counter() - start})
            progress(f"two-hop graph: {graph.n_hubs} hubs, {graph.n_arcs:,} arcs", force=True)
        stopped = stop_reason(deadline)
        if stopped is not None:
            return stopped_result(model, stopped, stats)
        if math.isinf(model.p):
            return _bottleneck(model, graph, distances, extra, deadline, progress, stats)
        return _finite(model, graph, distances, extra, deadline, progress, stats)


def _use_grid_bottleneck(model, choice: str) -> bool:
    """Whether W_inf goes to the grid of cells (:mod:`solvopt.transport.bottleneck_grid`: a proven
    additive error, a certified bound): asked for by graph="grid", or under "auto" for point
    clouds with a named metric in d <= GRID_MAX_DIM from GRID_FROM_PAIRS pairs, where the two-hop
    graph's n^1.5 arcs no longer fit (ModelError where it does not apply)."""
    from .bottleneck import tree_path
    fits = tree_path(model)
    if choice == "grid":
        if not fits:
            raise ModelError("graph='grid' for p = inf needs points with a named metric (euclidean, cityblock, "
                             "chebyshev); use graph='two-hop'")
        return True
    return choice == "auto" and fits and model.dimension <= GRID_MAX_DIM and model.n * model.m >= GRID_FROM_PAIRS


def _use_dense(model, choice: str, engine: str) -> bool:
    """Whether to solve by the auction on the full matrix (:mod:`solvopt.transport.approx_dense`):
    asked for by graph="dense" (ModelError where it does not apply), or under graph="auto" and
    engine="auto" for assignment problems on points where it was measured the faster (see
    :func:`~solvopt.transport.approx_dense.dense_default`)."""
    if choice == "dense":
        if not dense_applies(model):
            raise ModelError("graph='dense' needs points with a named metric, a finite p <= "
                             f"{LARGE_P:g}, n = m with uniform masses and at most {DENSE_MAX_PAIRS:,} pairs; "
                             "use graph='two-hop'")
        return True
    return choice == "auto" and engine == "auto" and model.n * model.m < GRID_FROM_PAIRS and dense_default(model)


def _use_multiscale(model, choice: str, engine: str = "auto", certificate: str = "dual") -> bool:
    """Whether to solve by the multiscale pricing (option ``graph``; ModelError where it does not apply).
    Under "auto" from MULTISCALE_FROM_PAIRS pairs with the dual certificate (asked for the factor
    bound only, the two-hop graph is the faster below GRID_FROM_PAIRS: no certificate to price)."""
    from .approx_multiscale import FINE_ENGINES
    from .sparse_exact import supported as why_not
    why = why_not(model)
    if choice == "auto":
        start = MULTISCALE_FROM_PAIRS if certificate == "dual" else GRID_FROM_PAIRS
        return (why is None and model.dimension <= GRID_MAX_DIM and model.n * model.m >= start
                and engine in FINE_ENGINES)
    if choice != "multiscale":
        return False
    if why is not None:
        raise ModelError(f"graph='multiscale': {why}")
    return True


def _ratio(result) -> str:
    """The plan's W_p over its certified bound, as text."""
    if result.objective is None or not result.bound:
        return "no bound"
    return f"{result.objective / result.bound:.3g}"


def _within_factor(model, result):
    """The multiscale Result under graph="auto" stating its proven factor (W_p over the certified
    bound) when that is at most MAX_FACTOR, or as it is when a stop ended it (the best so far);
    None when its bound does not prove the factor (the caller then builds the two-hop graph)."""
    if result.termination in STOPS or result.solution is None:
        return result
    if result.objective == 0.0:
        factor = 1.0
    elif result.bound and result.objective <= MAX_FACTOR * result.bound:
        factor = max(1.0, result.objective / result.bound)
    else:
        return None
    return transport_result(model, result.solution["plan"], guarantee=factor, bound=result.bound,
                            stats=result.stats, owned=True)


def _use_grid(model, choice: str) -> bool:
    """Whether to build the grid hierarchy (option ``graph``; ModelError where it does not apply)."""
    fits = grid_supported(model) and model.p <= LARGE_P
    if choice == "grid":
        if not fits:
            raise ModelError("graph='grid' needs points with a named metric and a finite p <= "
                             f"{LARGE_P:g}; use graph='two-hop'")
        return True
    return False        # under "auto" the multiscale pricing takes the large point clouds (see GRID_FROM_PAIRS)


def _flow_engine(graph, engine: str, supplies, costs) -> str:
    """The engine for the graph's flow: under ``auto`` the grid hierarchy goes to OR-Tools' cost
    scaling where it applies (3x faster than our network simplex on it at n = 10^5: many hubs),
    and the two-hop graph to our cost scaling when its arc costs tie a lot (:func:`tied_share`;
    the simplex stalls on the degenerate pivots ties make: measured on the colours of two photos,
    n = 10^4, the flow took 0.58 s by cost scaling against 1.5-1.9 s for the simplex until it gave
    up and then cost scaling; on uniform points, no ties, the simplex took a quarter of cost
    scaling's time)."""
    if engine != "auto" or integer_data(supplies, None) is None:
        return engine
    if isinstance(graph, GridGraph):
        return "ortools" if ortools_installed() else engine
    return "costscaling" if tied_share(costs) >= TIED_SHARE else engine


def _graph_factor(graph) -> float:
    return graph.factor if isinstance(graph, GridGraph) else FACTOR


def _finite(model, graph: TwoHopGraph | GridGraph, distances: Distances, extra, deadline, progress, stats):
    # Everything in normalised units: masses over the total M, lengths over the largest effective
    # arc length s (every arc cost in [0, 1], any p). The flow's cost F is then per unit of mass in
    # units of s^p: W_p >= s (M F_low)^(1/p) / 3.
    p, mass = model.p, model.mass
    graph_factor = _graph_factor(graph)
    path_arcs = 3 if isinstance(graph, GridGraph) else 2
    scale = _length_scale(graph, p)
    tails, heads = graph.arc_ends()
    t0 = time.perf_counter()

    def stop() -> bool:                 # polled while the flow runs: a heartbeat line, and Ctrl-C / time limit
        progress(f"min-cost flow on {graph.n_arcs:,} arcs: {time.perf_counter() - t0:.0f}s")
        return stop_reason(deadline) is not None

    try:
        supplies = graph.supplies(model.a / mass, model.b / mass)
        costs = graph.arc_costs(p, scale)
        sol = min_cost_flow(tails, heads, costs, supplies, n_nodes=graph.n_nodes,
                            engine=_flow_engine(graph, extra["engine"], supplies, costs), path_arcs=path_arcs,
                            stop=stop)
    except FlowStopped:
        return stopped_result(model, stop_reason(deadline), stats)
    flow_cost_p = _in_units(sol.cost * mass, scale, p)
    stats.update(engine=sol.engine, flow_time=time.perf_counter() - t0, flow_cost_p=flow_cost_p)
    progress(f"min-cost flow ({sol.engine}): cost {flow_cost_p:.6g}", force=True)
    # certified: optimum of the graph >= lower; the costs that underflowed to 0 (each below
    # 2^-1022, on at most path_arcs arcs per unit of mass) are added to the error
    error = sol.abs_error + path_arcs * UNDERFLOW
    lower = max(sol.cost - error, 0.0)
    bound = scale * mass ** (1.0 / p) * lower ** (1.0 / p) / graph_factor
    rows, cols, flow_mass = _pairing(graph, sol.flow)
    with np.errstate(under="ignore"):
        pair_cost = float(flow_mass @ (distances.pairs(rows, cols) / scale) ** p)
    plan = _plan(model, rows, cols, flow_mass * mass)
    stopped = stop_reason(deadline)
    proven = pair_cost <= sol.cost * (1 + COST_RTOL) + error
    # potentials for the certified dual bound: the flow's (graph costs, units of scale^p), replaced
    # below by the re-solve's (true costs over the candidate pairs: a tighter bound)
    duals: tuple | None = None if sol.potentials is None else (sol.potentials[:model.n], scale)
    if extra["improve"] and stopped is None:
        t0 = time.perf_counter()
        cand_rows, cand_cols = _candidates(graph, sol.flow, rows, cols)
        lengths = distances.pairs(cand_rows, cand_cols)
        top = float(lengths.max()) if len(lengths) else 0.0
        with np.errstate(under="ignore"):
            costs = (lengths / (top if top > 0 else 1.0)) ** p     # in [0, 1], in units of their own top
        try:
            better = min_cost_flow(cand_rows, cand_cols + model.n, costs,
                                   np.concatenate([model.a, -model.b]) / mass,
                                   n_nodes=model.n + model.m, engine=extra["engine"], path_arcs=1,
                                   stop=lambda: stop_reason(deadline) is not None)
        except FlowStopped:               # keep the pairing's plan: the factor and the bound hold for it
            better, stopped = None, stop_reason(deadline)
        stats.update(improve_time=time.perf_counter() - t0, candidate_pairs=len(cand_rows))
        if better is not None:
            duals = (cand_rows, cand_cols, top if top > 0 else 1.0)   # priced from these pairs
            keep = better.flow > 0
            improved = _plan(model, cand_rows[keep], cand_cols[keep], better.flow[keep] * mass)
            if plan_cost(model, improved)[0] < plan_cost(model, plan)[0]:
                plan = improved
    if p > LARGE_P and stopped is None and isinstance(graph, TwoHopGraph):     # (the grid: p <= LARGE_P)
        # the costs resolve only the longest arcs: the p = inf search's plan (bottleneck <= 3 W_inf,
        # so W_p <= 3 M^(1/p) W_inf) may be cheaper, and the projections may bound W_p better
        _, flow_inf, stopped, _ = _threshold_search(tails, heads, graph.arc_thresholds(),
                                                    graph.supplies(model.a / mass, model.b / mass), graph.n_nodes,
                                                    "auto", deadline, progress, "two-hop (p = inf)")
        r_inf, c_inf, m_inf = _pairing(graph, flow_inf)
        other = _plan(model, r_inf, c_inf, m_inf * mass)
        if plan_cost(model, other)[0] < plan_cost(model, plan)[0]:
            plan = other
            stats["plan"] = "the p = inf threshold search's (lower W_p than the flow's)"
        cheap = quick_bound(model)
        bound = max(bound, cheap) if cheap is not None else bound
    if duals is not None and stopped is None and p <= LARGE_P and extra["certificate"] == "dual":
        priced: list = []
        bound, stopped = _with_dual_bound(model, duals, bound, deadline, progress, stats, extra["engine"],
                                           DUAL_TARGET * plan_cost(model, plan)[0], priced)
        if priced:          # the pricing's last restricted optimum: a plan, kept when cheaper (factor unchanged)
            other = _plan(model, priced[0][0], priced[0][1], priced[0][2] * mass)
            if plan_cost(model, other)[0] < plan_cost(model, plan)[0]:
                plan = other
                stats["plan"] = "the dual pricing's last restricted optimum"
    # the factor holds when the pairing (and so the plan, no dearer) costs no more than the flow
    # (Lemma 2; always for a metric)
    if lower > 0:
        factor = graph_factor * (sol.cost / lower) ** (1.0 / p)
    else:               # a flow of cost 0 (to rounding) proves a plan of cost 0; else nothing
        factor = graph_factor if sol.cost == 0 else None
    factor = factor if proven else None
    return transport_result(model, plan, guarantee=factor, bound=bound if proven or model.cost is not None else None,
                            stopped=stopped, stats=stats)


def _with_dual_bound(model, duals, bound, deadline, progress, stats, engine, target, plans=None):
    """max(bound, the certified dual bound of the potentials ``duals`` = (u, unit)) and the stop
    seen (see :mod:`solvopt.transport.dual`; a stop during it keeps ``bound``). ``duals``: (u, unit),
    or (rows, cols, unit): pairs from which :func:`~solvopt.transport.dual.refined_bound` prices
    (``plans`` then receives its last restricted optimum, see there)."""
    from .dual import certified_bound, refined_bound
    t0 = time.perf_counter()
    try:
        watch = lambda: stop_reason(deadline) is not None       # noqa: E731
        if len(duals) == 3:
            spent = sum(stats.get(key, 0.0) for key in ("graph_time", "flow_time", "improve_time"))
            dual, rounds = refined_bound(model, *duals, engine=engine, stop=watch, target=target,
                                         budget=max(DUAL_MIN_SECONDS, DUAL_TIME_RATIO * spent), plans=plans,
                                         ratio=DUAL_TARGET)
            stats["dual_rounds"] = rounds
        else:
            dual = certified_bound(model, *duals, stop=watch)
    except Stopped:
        stats["dual_time"] = time.perf_counter() - t0
        return bound, stop_reason(deadline)
    stats.update(dual_bound=dual, dual_time=time.perf_counter() - t0)
    if dual is not None:
        progress(f"dual bound (c-transform): {dual:.6g}", force=True)
        bound = max(bound, dual)
    return bound, None


def _in_units(value: float, scale: float, p: float) -> float:
    """value * scale^p, inf when it overflows float64 (no OverflowError)."""
    if value <= 0:
        return 0.0
    log = math.log(value) + p * math.log(scale)
    return math.exp(log) if log < 709 else math.inf


def _bottleneck(model, graph: TwoHopGraph, distances: Distances, extra, deadline, progress, stats):
    tails, heads = graph.arc_ends()
    mass = model.mass                  # flows in units of the total mass (any masses, same tests)
    supplies = graph.supplies(model.a / mass, model.b / mass)
    engine = "highs" if extra["engine"] == "highs" else "auto"
    t0 = time.perf_counter()
    t_min, flow, stopped, t_lower = _threshold_search(tails, heads, graph.arc_thresholds(), supplies,
                                                      graph.n_nodes, engine, deadline, progress, "two-hop")
    stats.update(flow_time=time.perf_counter() - t0, threshold=t_min)
    if flow is None:
        return stopped_result(model, stopped, stats)
    rows, cols, flow_mass = _pairing(graph, flow)
    plan = _plan(model, rows, cols, flow_mass * mass)
    largest = float(distances.pairs(rows, cols).max())
    if extra["improve"] and stopped is None:
        t0 = time.perf_counter()
        exact = _exact_within(model, distances, largest, graph.n_arcs, engine, deadline, progress)
        if exact is not None:
            t_exact, exact_plan = exact
            stats.update(improve_time=time.perf_counter() - t0, improve="exact within the plan's bottleneck")
            return transport_result(model, exact_plan, guarantee=1.0, bound=t_exact, proven_optimal=True,
                                    stats=stats)
        stopped = stop_reason(deadline)
    if extra["improve"] and stopped is None:
        cand_rows, cand_cols = _candidates(graph, flow, rows, cols)
        lengths = distances.pairs(cand_rows, cand_cols)
        keep = lengths <= largest                                  # no pair longer than the pairing's
        cand_rows, cand_cols, lengths = cand_rows[keep], cand_cols[keep], lengths[keep]
        best, better, stopped_here, _ = _threshold_search(cand_rows, cand_cols + model.n, lengths,
                                                       np.concatenate([model.a, -model.b]) / mass,
                                                       model.n + model.m, engine, deadline, progress,
                                                       "candidate pairs")
        stopped = stopped or stopped_here     # the pairing's factor and bound hold: the search only improves
        stats.update(improve_time=time.perf_counter() - t0, candidate_pairs=len(cand_rows), improve="candidate pairs")
        if better is not None and best < largest:
            used = better > 0
            plan = _plan(model, cand_rows[used], cand_cols[used], better[used] * mass)
            largest = best
    # a stopped search proved only t_lower (the smallest threshold above the last infeasible one)
    # a lower bound, and holds a plan of bottleneck <= 3 t_min: its proven factor is largest / t_lower
    proven = largest <= FACTOR * t_min * (1 + COST_RTOL)
    factor = FACTOR if t_lower == t_min else max(largest / t_lower, 1.0) if t_lower > 0 else None
    return transport_result(model, plan, guarantee=factor if proven else None, bound=t_lower if proven else None,
                            stopped=stopped, stats=stats)


def _exact_within(model, distances: Distances, largest: float, n_arcs: int, engine, deadline, progress):
    """Exact W_inf when few pairs lie within the plan's bottleneck ``largest`` (an upper bound on
    W_inf, so every pair of an optimal plan is among them): (W_inf, an optimal plan), or None when
    they are more than ``EXACT_PAIRS_PER_ARC`` x the graph's arcs or the search was stopped."""
    radius = np.full(model.n, np.nextafter(largest, np.inf))
    stop = lambda: stop_reason(deadline) is not None     # noqa: E731
    try:
        if distances.count_within(radius, stop=stop) > EXACT_PAIRS_PER_ARC * n_arcs:
            return None
        indptr, cols, lengths = distances.bunches(radius, stop=stop)
    except Stopped:
        return None
    rows = np.repeat(np.arange(model.n, dtype=np.int64), np.diff(indptr))
    t, flow, stopped, _ = _threshold_search(rows, cols + model.n, lengths,
                                         np.concatenate([model.a, -model.b]) / model.mass,
                                         model.n + model.m, engine, deadline, progress, "pairs within the bottleneck")
    if stopped is not None:
        return None
    used = flow > 0
    return t, _plan(model, rows[used], cols[used], flow[used] * model.mass)


def _threshold_search(tails, heads, thresholds, supplies, n_nodes, engine, deadline, progress, what):
    """Smallest t among the thresholds with a feasible flow on the arcs of threshold <= t.

    Returns (t, that flow over all arcs (zeros off G_t), stop reason, certified lower bound). The
    largest candidate must be feasible. Finished, the bound is t itself; a stopped search returns
    its smallest feasible t so far and, as the bound, the smallest candidate above the largest one
    proven infeasible (below the smallest candidate there is no arc: infeasible for any mass)."""
    candidates = np.unique(thresholds)
    lo, hi = -1, len(candidates) - 1                      # candidates[lo] infeasible (or none), [hi] feasible
    best = _feasible_at(tails, heads, thresholds, supplies, n_nodes, engine, candidates[hi])
    if best is None:
        raise RuntimeError(f"the {what} graph cannot carry the mass at its largest threshold")
    stopped = None
    while hi - lo > 1:
        stopped = stop_reason(deadline)
        if stopped is not None:
            break
        mid = (lo + hi) // 2
        flow = _feasible_at(tails, heads, thresholds, supplies, n_nodes, engine, candidates[mid])
        if flow is None:
            lo = mid
        else:
            hi, best = mid, flow
        progress(f"{what} threshold search: {hi - lo} candidates left, t <= {candidates[hi]:.6g}")
    return float(candidates[hi]), best, stopped, float(candidates[lo + 1])


def _feasible_at(tails, heads, thresholds, supplies, n_nodes, engine, t):
    keep = np.flatnonzero(thresholds <= t)
    flow = feasible_flow(tails[keep], heads[keep], supplies, n_nodes=n_nodes, engine=engine)
    if flow is None:
        return None
    full = np.zeros(len(tails))
    full[keep] = flow
    return full


def _length_scale(graph: TwoHopGraph | GridGraph, p: float) -> float:
    """The largest effective arc length (costs are (length / scale)^p, in [0, 1]: no overflow for any p)."""
    top = max((float(x.max()) for x in graph.effective_lengths(p) if x.size), default=0.0)
    return top if top > 0 else 1.0


def _hub_groups(graph: TwoHopGraph, flow):
    """Per hub with flow through it: (sources sending to it, their masses, targets it serves,
    their masses); and the bunch part of the flow as (rows, cols, mass)."""
    direct, into_hub, out_of_hub = graph.split_flow(flow)
    sources = np.flatnonzero(into_hub > 0)
    order = sources[np.argsort(graph.hub_of[sources], kind="stable")]
    bounds = np.searchsorted(graph.hub_of[order], np.arange(graph.n_hubs + 1))
    groups = []
    for hub in range(graph.n_hubs):
        srcs = order[bounds[hub]:bounds[hub + 1]]
        tgts = np.flatnonzero(out_of_hub[hub] > 0)
        if len(srcs) and len(tgts):
            groups.append((srcs, into_hub[srcs], tgts, out_of_hub[hub, tgts]))
    return direct, groups


def _pairing(graph: TwoHopGraph | GridGraph, flow: np.ndarray):
    """Lemma 2's plan as (rows, cols, mass): the bunch arcs' flow, and at each hub the north-west
    corner pairing of the mass arriving (sources in index order) with the mass leaving (targets)
    (the grid hierarchy: its own path decomposition)."""
    if isinstance(graph, GridGraph):
        return graph.pairing(flow)
    direct, groups = _hub_groups(graph, flow)
    parts = [direct] + [north_west(*group) for group in groups]
    return tuple(np.concatenate(x) for x in zip(*parts))


def _candidates(graph: TwoHopGraph | GridGraph, flow, rows, cols):
    """Candidate pairs for the re-solve: the pairing's own pairs (bunch arcs with flow, hub pairs:
    so the pairing is a feasible plan of the re-solve) and, at each hub, every source sending to
    it x every target it serves (when not too many)."""
    if isinstance(graph, GridGraph):
        return graph.candidates(flow, rows, cols, PAIRS_PER_HUB_NODE)
    _, groups = _hub_groups(graph, flow)
    parts_r, parts_c = [rows], [cols]
    for srcs, _, tgts, _ in groups:
        if len(srcs) * len(tgts) <= PAIRS_PER_HUB_NODE * (len(srcs) + len(tgts)):
            parts_r.append(np.repeat(srcs, len(tgts)))
            parts_c.append(np.tile(tgts, len(srcs)))
    r, c = np.concatenate(parts_r), np.concatenate(parts_c)
    key = sorted_keys(r * graph.m + c)
    return key // graph.m, key % graph.m


def _plan(model, rows, cols, mass):
    return sp.csr_matrix((mass, (rows, cols)), shape=(model.n, model.m))
