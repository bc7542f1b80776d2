"""Exact W_p for point clouds without the n x m matrix: method ``sparse-exact`` (pricing on candidate pairs).

The transport LP is solved on a growing set of candidate pairs, and optimality over *all* pairs
is certified through the c-transform of :mod:`solvopt.transport.dual` (spatial index, never the
n x m matrix). Each round:

1. an exact min-cost flow on the candidate pairs (costs (d / D)^p, D the data's distance scale):
   the restricted optimum, a feasible plan, and node potentials optimal on those pairs;
2. the double c-transform of the source potentials: a dual feasible for every pair, hence a
   certified lower bound on W_p (:func:`solvopt.transport.dual.certified_bound`), and the
   c-transform's minimisers (for every target the source of least reduced cost, and back);
3. OPTIMAL once the bound meets the plan's W_p within the default tolerance in the frame of
   :func:`solvopt.transport.result.status_scale`; else the minimisers not yet candidates join the
   set (the pairs of most negative reduced cost), each with its :data:`SPREAD` nearest neighbours
   (both ways), and the next round starts. A round that stops closing in (it adds more than half
   the pairs the round before added: clouds of different shapes, whose optimal pairs lie far from
   the nearest neighbours) doubles the spread, up to :data:`MAX_SPREAD`. When none is new the
   c-transform's dual is at least the restricted dual: the bound reaches the optimum, to rounding.

Repeated points (identical coordinates) are first merged into one point with the summed mass when
that removes at least 2% of them (:mod:`solvopt.transport.merge`: exact for every p), and the plan
is split back onto the original points at the same cost.

Start (multiscale): the k nearest targets of every source and the k nearest sources of every target
(k-d trees under the metric), plus the refined support of a coarsened problem's optimum: the points
binned in a grid of about :data:`POINTS_PER_CELL` a cell (a finer grid when the points lie on a
thin set, such as pixel colours, and fill few cells), each cell's mass at its centroid, solved the
same way (recursively down to :data:`COARSEST` points); every pair of points whose cells carry mass
in the coarse optimum joins (the fine problem is feasible on them), and so do the c-transform's
minimisers under the coarse potentials. Without it (or when crowded cells would give too many
pairs) the north-west corner plan along the principal axis
(:func:`solvopt.transport.quick.quick_plan`) makes the restricted problem feasible. This is the
multiscale idea of Schmitzer's sparse multiscale algorithm in its simplest form (no shielding
neighbourhoods: the pricing over all pairs is what certifies).

Memory is O(candidates): about 16 pairs per point on uniform points. A time limit or Ctrl-C is
seen between rounds, inside the flow engine and between the c-transform's chunks; the run then
returns the last restricted optimum (or the quick plan) and the best certified bound.
"""
from __future__ import annotations

import math
import time
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from solvopt.core.errors import ModelError
from solvopt.core.interrupt import stop_reason
from solvopt.core.options import Option
from solvopt.core.progress import Progress
from solvopt.core.registry import Solver, register
from solvopt.core.status import within_default_tolerance

from .dual import bound_and_partners, pricing_rounds
from .flow import FlowStopped, integer_data
from .merge import solve_merged
from .multiscale import morton_codes, refined_plan, refined_tree
from .neighbours import neighbour_pairs
from .quick import quick_plan, stopped_result
from .result import LARGE_P, plan_cost, status_scale, transport_result
from .stopping import Stopped

# Nearest neighbours per point in the starting candidate set (both ways).
NEIGHBOURS = 4
# Pricing rounds before the method gives up (each adds at most n + m pairs).
MAX_ROUNDS = 200
# Multiscale start: points per grid cell of a coarser level, the size from which a level is
# coarsened, the least shrink worth a level, and pricing rounds spent on a coarse level.
POINTS_PER_CELL = 4
COARSEST = 1000
SHRINK = 0.7
COARSE_ROUNDS = 30
# Finer grids tried (at most) while the points fill fewer than FILL of the cells a level aims at.
FINER_TRIES = 8
FILL = 0.8
# Most refined pairs per point taken from a coarse optimum (beyond: the north-west start instead).
REFINED_PER_POINT = 64
# Pricing: nearest neighbours of each c-transform minimiser that join with it, at first and at most
# (the spread doubles after each round that stops closing in; see dual.pricing_rounds).
SPREAD = 4
MAX_SPREAD = 32
START_SPREAD = 8
# engine="scaling" (the multiscale approximation): levels with at least this many points (n + m)
# solve their flows by warm cost scaling (dual.pricing_rounds' ``resolution``), smaller ones by
# the warm network simplex; the flows to within this share of the start plan's cost; and a level
# stops pricing once its bound is this share of its plan's W_p.
SCALING_FROM = 60_000
SCALING_SHARE = 0.002
SCALING_RATIO = 0.99
# ... and the coarser levels (only a start for the next: n = 3 x 10^5, a level of 74,000 cells took
# 6.0 s at 0.2%, 3.2 s at 1%, 2.3 s at 3%)
SCALING_SHARE_COARSE = 0.01


def supported(model) -> str | None:
    """Why ``sparse-exact`` cannot take ``model`` (None when it can)."""
    if model.cost is not None or callable(model.metric):
        return "it needs points with a named metric (euclidean, cityblock, chebyshev); use method 'exact'"
    if math.isinf(model.p):
        return "p = inf has no linear dual to certify; use method 'bottleneck'"
    if model.p > LARGE_P:
        return f"for p > {LARGE_P:g} the costs d^p span more decades than the flow resolves; use method 'exact'"
    return None


def clusters(model, per_cell: int = POINTS_PER_CELL):
    """A coarsened problem: the points with mass binned in one grid (about ``per_cell`` points a
    cell), each cell's mass at its mass-weighted centroid. Returns (coarse model, source cell of
    every source with mass, target cell of every target with mass, rows, cols), or None when
    binning would not shrink the problem (few distinct points)."""
    rows, cols = np.flatnonzero(model.a > 0), np.flatnonzero(model.b > 0)
    xs, ys = model.x[rows], model.y[cols]
    dim = xs.shape[1]
    low = np.minimum(xs.min(axis=0), ys.min(axis=0))
    high = np.maximum(xs.max(axis=0), ys.max(axis=0))
    target = max(len(rows), len(cols)) / per_cell
    per_axis = max(1, int(round(target ** (1.0 / dim))))
    for _ in range(FINER_TRIES):     # points on a thin set (pixel colours) fill few cells: a finer grid
        width = np.where(high > low, (high - low) / per_axis, 1.0)
        filled = max(len(np.unique(_cells(pts, low, width, per_axis))) for pts in (xs, ys))
        if filled >= FILL * target:
            break
        per_axis = int(math.ceil(per_axis * min(2.0, (target / max(filled, 1)) ** (1.0 / dim))))
    width = np.where(high > low, (high - low) / per_axis, 1.0)

    def bin_of(pts, mass):
        _, label = np.unique(_cells(pts, low, width, per_axis), return_inverse=True)
        label = label.ravel()
        total = np.bincount(label, weights=mass)
        centre = np.column_stack([np.bincount(label, weights=mass * pts[:, axis]) for axis in range(dim)])
        return label, total, centre / total[:, None]
    sx, a, cx = bin_of(xs, model.a[rows])
    sy, b, cy = bin_of(ys, model.b[cols])
    if len(a) + len(b) > SHRINK * (len(rows) + len(cols)):
        return None
    b *= a.sum() / b.sum()
    return type(model)(cx, cy, a=a, b=b, p=model.p, metric=model.metric), sx, sy, rows, cols


def _cells(pts, low, width, per_axis: int) -> np.ndarray:
    """The grid cell (one integer) of every point: ``per_axis`` cells of ``width`` an axis from ``low``;
    in Z order where the codes fit 63 bits (the coarse levels' cells, numbered in that order, keep
    the flow kernels' memory reads local), else row by row."""
    index = np.minimum(((pts - low) / width).astype(np.int64), per_axis - 1)
    bits = max(1, int(per_axis - 1).bit_length())
    if bits * pts.shape[1] <= 63:
        return morton_codes(index, bits)
    cell = np.zeros(len(pts), dtype=np.int64)
    for axis in range(pts.shape[1]):
        cell = cell * per_axis + index[:, axis]
    return cell


def refined_pairs(coarse_plan, sx, sy, rows, cols, m: int, limit: int) -> np.ndarray | None:
    """Every fine pair (i, j) with i in source cell I, j in target cell J, (I, J) in the coarse
    plan's support, as flat keys i * m + j (the fine problem is feasible on them: split each coarse
    entry in proportion to the masses); None when they would be more than ``limit`` (cells
    crowded with repeated points)."""
    coo = coarse_plan.tocoo()
    keep = coo.data > 0
    big_i, big_j = coo.row[keep], coo.col[keep]
    order_x, order_y = np.argsort(sx, kind="stable"), np.argsort(sy, kind="stable")
    count_x, count_y = np.bincount(sx), np.bincount(sy)
    start_x = np.concatenate(([0], np.cumsum(count_x)))
    start_y = np.concatenate(([0], np.cumsum(count_y)))
    size_i, size_j = count_x[big_i], count_y[big_j]
    sizes = size_i * size_j
    if int(sizes.sum()) > limit:
        return None
    pair = np.repeat(np.arange(len(big_i)), sizes)
    q = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    fine_i = rows[order_x[start_x[big_i][pair] + q // size_j[pair]]]
    fine_j = cols[order_y[start_y[big_j][pair] + q % size_j[pair]]]
    return fine_i.astype(np.int64) * m + fine_j


def spread_pairs(model, rows: np.ndarray, cols: np.ndarray, k: int) -> np.ndarray:
    """Keys of the pairs (i', j) and (i, j') for every pair (i, j) of ``rows`` / ``cols``, i' among
    i's k nearest sources and j' among j's k nearest targets (a pricing round's spread, taken at
    the start by the warm cost scaling's levels: n = 3 x 10^5, one fine round then ended within
    0.74% where two rounds were needed without, 23 s against 32 s)."""
    from .dual import neighbour_spread, own_neighbours
    near_r, near_c = neighbour_spread(own_neighbours(model.x, model.metric, k),
                                      own_neighbours(model.y, model.metric, k), rows, cols, k)
    return near_r * model.m + near_c


def start_keys(model, k: int, *, multiscale: bool = True, engine: str = "simplex", stop=None,
               stats=None) -> np.ndarray:
    """The starting candidate pairs (flat keys): k nearest neighbours both ways, plus pairs that
    carry a feasible plan: the refined support of the coarsened problem's optimum (solved the same
    way, recursively, down to :data:`COARSEST` points), else the north-west corner plan."""
    return start_pairs(model, k, multiscale=multiscale, engine=engine, stop=stop, stats=stats).keys


class Start(NamedTuple):
    """The multiscale start: candidate pairs (flat keys), a starting tree for the simplex or None,
    a feasible plan (the coarse optimum refined, CSR) or None, its certified bound or None, the
    coarse source potentials moved to the points (costs (d / fine unit)^p) or None, and the
    level's flow engine (:func:`level_engine`)."""
    keys: np.ndarray
    tree: tuple | None = None
    plan: object = None
    bound: float | None = None
    potentials: np.ndarray | None = None
    engine: str = "simplex"


def level_engine(model, engine: str, scaling_from: int = SCALING_FROM) -> str:
    """The flow engine of one level: ``engine``, except that ``"scaling"`` means warm cost scaling
    (``"costscaling"`` with a resolution) on levels of at least ``scaling_from`` points whose
    masses are integer multiples of one unit, and the network simplex on the others."""
    if engine != "scaling":
        return engine
    if model.n + model.m < scaling_from:
        return "simplex"
    units = integer_data(np.concatenate([model.a, -model.b]) / model.mass, None)
    return "costscaling" if units is not None and units[1].max() <= 2**31 else "simplex"


def scaling_resolution(model, plan, share: float = SCALING_SHARE, *, of_root: bool = True) -> float | None:
    """The cost resolution (costs (d / fine unit)^p) to which warm cost scaling solves ``model``'s
    flows, from the cost per unit of mass of ``plan`` (a feasible plan, e.g. the refined start):
    with ``of_root``, p ``share`` of it over 3, so each flow's cost is within p ``share`` of the
    plan's cost of its optimum and its W_p (the p-th root: (1 + p s)^(1/p) <= 1 + s) within
    ``share`` (the fine level: the gap is judged on W_p); else ``share`` of it over 3 (the coarse
    levels, a start for the next: a coarser resolution at p = 2 cost them a second round)."""
    if plan is None:
        return None
    with np.errstate(over="ignore", under="ignore"):   # W_p^p sums pi d^p over the whole mass
        per_mass = (plan_cost(model, plan)[0] / fine_unit(model)) ** model.p / model.mass
    cost_share = share * model.p if of_root else share
    return cost_share * per_mass / 3.0 if per_mass > 0 and math.isfinite(per_mass) else None


def start_pairs(model, k: int, *, multiscale: bool = True, engine: str = "simplex", stop=None,
                stats=None, max_rounds: int = COARSE_ROUNDS, scaling_from: int = SCALING_FROM) -> Start:
    """:func:`start_keys` and more (a :class:`Start`): with the multiscale start, the coarse
    optimum refined to a plan of the points (:func:`solvopt.transport.multiscale.refined_plan`,
    kept when a stop comes before the first fine round ends), its tree (with the simplex: the
    first fine round starts from it; every coarse level starts warm the same way) and the bound
    certified by the coarse potentials. ``max_rounds``: pricing rounds on each coarse level.
    ``engine``: of every level's flows (``"scaling"`` and ``scaling_from``: see :func:`level_engine`)."""
    r, c = neighbour_pairs(model, k)
    keys = r * model.m + c
    here = level_engine(model, engine, scaling_from)
    coarse = clusters(model) if multiscale and model.n + model.m > COARSEST else None
    if coarse is not None:
        small, sx, sy, rows, cols = coarse
        held: list = []
        t0 = time.perf_counter()
        below = start_pairs(small, k, engine=engine, stop=stop, stats=stats, max_rounds=max_rounds,
                            scaling_from=scaling_from)
        mine = below.engine
        scaled = mine == "costscaling" and engine == "scaling"
        plan, _, more, stopped = price(small, below.keys, engine=mine, stop=stop, max_rounds=max_rounds,
                                       potentials=held, start=below.tree,
                                       ratio=SCALING_RATIO if engine == "scaling" else math.inf,
                                       warm=below.potentials if scaled else None,
                                       resolution=scaling_resolution(small, below.plan, SCALING_SHARE_COARSE,
                                                                             of_root=False)
                                       if scaled else None)
        if stats is not None:
            stats.setdefault("levels", []).append({"n": small.n, "m": small.m, **more,
                                                   "time": time.perf_counter() - t0})
        if stopped:
            raise Stopped
        fine = None if plan is None else refined_pairs(plan, sx, sy, rows, cols, model.m,
                                                       REFINED_PER_POINT * (model.n + model.m))
        if fine is not None:
            keys = np.concatenate([keys, fine])
            bound = u = None
            if held:         # the c-transform's minimisers under the coarse potentials, moved to the points
                u = np.zeros(model.n)
                u[rows] = held[0][sx] * (held[1] / fine_unit(model)) ** model.p
                out = bound_and_partners(model, u, fine_unit(model), stop, "auto")
                if out is not None:
                    bound = out[0]
                    keys = np.concatenate([keys, out[1][0] * model.m + out[1][1]])
                    if here == "costscaling":
                        low_r, low_c = out[1]
                        keys = np.concatenate([keys, spread_pairs(model, low_r, low_c, START_SPREAD)])
            fine_plan = refined_plan(plan, sx, sy, rows, cols, model)
            tree = refined_tree(fine_plan, model) if here == "simplex" else None
            return Start(keys, tree, fine_plan, bound, u, here)
    start = quick_plan(model).tocoo()
    return Start(np.concatenate([keys, start.row.astype(np.int64) * model.m + start.col]), engine=here)


def best_bound(*bounds) -> float | None:
    """The largest of the certified bounds given (None among them ignored; None when all are)."""
    known = [b for b in bounds if b is not None]
    return max(known) if known else None


def fine_unit(model) -> float:
    """The length unit of the costs (d / unit)^p: the data's distance scale (1 when it is 0)."""
    unit = model.distance_scale()
    return unit if unit is not None and math.isfinite(unit) and unit > 0 else 1.0


def price(model, keys: np.ndarray, *, engine: str = "simplex", method: str = "auto", stop=None,
          max_rounds: int = MAX_ROUNDS, progress=None, potentials: list | None = None, start=None,
          ratio: float = math.inf, label: str = "sparse-exact", warm=None, resolution: float | None = None):
    """The pricing loop on candidate pairs ``keys`` (flat indices i * m + j; they must carry a
    feasible plan). Returns (plan or None, best certified bound or None, stats, stopped: bool);
    ``stats["no_new_pairs"]`` when a round added no pair (exact flows: the optimum; approximate
    ones: what is left of the gap is not missing pairs, so more rounds would not close it).
    ``stop``: a callable; a stop ends the loop with what it holds. ``potentials``: a list that
    receives [source potentials of the last restricted optimum, their length unit]. ``start``: a
    starting tree for the simplex's first round (see :func:`start_pairs`). ``ratio``: also stop
    once the bound reaches ``ratio`` x the plan's W_p (an approximation: gap at most 1 - ratio).
    ``label``: the method named in the progress lines. ``warm`` and ``resolution``: the
    approximate flows of :func:`solvopt.transport.dual.pricing_rounds`."""
    n, m = model.n, model.m
    unit = fine_unit(model)
    plan, bound = None, None
    stats = {"rounds": 0, "flow_time": 0.0, "pricing_time": 0.0}
    stopped = False
    try:
        for step in pricing_rounds(model, keys, unit, engine=engine, method=method, stop=stop,
                                   spread=SPREAD, max_spread=MAX_SPREAD, start=start, warm=warm,
                                   resolution=resolution):
            stats["flow_time"] += step.flow_time
            stats["pricing_time"] += step.pricing_time
            stats["rounds"] += 1
            used = step.sol.flow > 0
            plan = sp.csr_matrix((step.sol.flow[used] * model.mass, (step.rows[used], step.cols[used])),
                                 shape=(n, m))
            objective = plan_cost(model, plan)[0]
            if step.sol.potentials is not None and potentials is not None:
                potentials[:] = [step.sol.potentials[:n], unit]
            if step.bound is None:          # an engine without duals, or nothing certified
                break
            bound = step.bound if bound is None else max(bound, step.bound)
            stats["candidates"] = int(len(step.rows))
            if progress is not None:
                progress(f"{label}: round {stats['rounds']}: {len(step.rows):,} pairs, W_p {objective:.9g}, "
                         f"bound {bound:.9g}", force=True)
            if within_default_tolerance(objective, bound, scale=status_scale(model, objective)) \
                    or stats["rounds"] >= max_rounds or bound >= ratio * objective:
                break
            if stop is not None and stop():
                stopped = True
                break
        else:           # the rounds ran out of pairs to add: every c-transform minimiser is a candidate
            stats["no_new_pairs"] = stats["rounds"] > 0
    except (FlowStopped, Stopped):
        stopped = True
    return plan, bound, stats, stopped


@register
class SparseExact(Solver):
    family = "transport"
    name = "sparse-exact"
    description = ("exact W_p (finite p) for points with a named metric without the n x m matrix: min-cost flow "
                   "on candidate pairs (nearest neighbours, grown by pricing), optimality certified over all "
                   "pairs by c-transforms on spatial indexes")
    options = (
        Option("engine", str, "auto", "min-cost flow engine on the candidate pairs, one with potentials "
               "(auto: simplex)", ("auto", "simplex", "highs")),
        Option("neighbours", int, NEIGHBOURS, "nearest neighbours per point in the starting candidate set"),
        Option("multiscale", bool, True, "start from the refined optimum of a coarsened problem (else the "
               "north-west corner plan)"),
    )

    def solve(self, model, options):
        why = supported(model)
        if why is not None:
            raise ModelError(f"method 'sparse-exact': {why}")
        k = options.extra["neighbours"]
        if k < 1:
            raise ModelError(f"method 'sparse-exact': neighbours must be >= 1, got {k}")
        # repeated points: one point each (exact, see merge)
        return solve_merged(model, lambda m: self._solve(m, options, k), lambda result: 1.0)

    def _solve(self, model, options, k):
        start = time.perf_counter()
        deadline = None if options.time_limit is None else start + options.time_limit
        stop = lambda: stop_reason(deadline) is not None          # noqa: E731
        progress = Progress(options.progress, log=options.log)
        progress(f"sparse-exact: {model.n} x {model.m}, p = {model.p:g}: {k} neighbours each way", force=True)
        engine = "simplex" if options.extra["engine"] == "auto" else options.extra["engine"]
        stats: dict = {"engine": engine}
        if stop():
            return stopped_result(model, stop_reason(deadline), stats)
        try:
            begun = start_pairs(model, k, multiscale=options.extra["multiscale"], engine=engine,
                                stop=stop, stats=stats)
        except Stopped:
            return stopped_result(model, stop_reason(deadline), stats)
        stats["start_time"] = time.perf_counter() - start
        plan, bound, more, stopped = price(model, begun.keys, engine=engine, stop=stop, progress=progress,
                                           start=begun.tree)
        stats.update(more)
        bound = best_bound(bound, begun.bound)
        if plan is None:
            return stopped_result(model, stop_reason(deadline), stats, bound=bound, plan=begun.plan)
        return transport_result(model, plan, guarantee=1.0, bound=bound,
                                stopped=stop_reason(deadline) if stopped else None, stats=stats)


__all__ = ["SparseExact", "Start", "neighbour_pairs", "price", "start_pairs", "supported"]
