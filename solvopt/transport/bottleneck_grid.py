"""W_inf of large point clouds within a proven additive error: threshold searches on a grid of cells.

Cut space into cubes of side delta (cells); a cell's mass is the mass of its points. For two cells
whose integer positions differ by the offset o, every pair of their points is at distance between

    dmin(o) = delta ||max(|o| - 1, 0)||   and   dmax(o) = delta ||(|o| + 1)||

(the norm of the metric: Minkowski order 2, 1 or inf), and dmax(o) <= dmin(o) + 2 h, where
h = delta ||(1, ..., 1)|| is a cell's diameter (delta sqrt(d) for the euclidean metric). Two cell
graphs per threshold t, each tested by a max flow over the cell masses (arcs uncapacitated):

- **Lower test.** L_t joins the cells with dmin <= t. If W_inf <= t, an optimal plan moves mass
  only between points at distance <= t, so between cells joined in L_t: its cell totals are a
  flow of L_t. Hence L_t infeasible proves W_inf > t, and since L_t changes only at the values
  dmin takes, the smallest feasible value t_lo is a certified lower bound: W_inf >= t_lo.
- **Upper test.** U_t joins the cells with dmax <= t. A flow of U_t, split among the points of
  each cell (north-west corner rule), is a plan whose pairs are all at distance <= t.
- **The gap.** Every arc of L_t has dmax <= t + 2 h, so L_{t_lo} is a subgraph of U_{t_lo + 2h}:
  the latter is feasible, and the smallest feasible U-threshold t_hi <= t_lo + 2h. The plan's
  bottleneck is at most t_hi, so W_inf <= plan <= t_lo + 2h <= W_inf + 2h: an additive error of
  at most 2h = 2 delta sqrt(d) (euclidean), with the certified bound max(floor, t_lo) beside it.

The floor max(max_i min_j d_ij, max_j min_i d_ij) (nearest neighbours both ways) is a lower bound
too; the lower searches run over radius rounds from it (all cell pairs with dmin <= R, R growing
by :data:`GROWTH` per round, an infeasible round proving W_inf > R), each round's max flow warm
from the last round's preflow. The default delta gives about :data:`PER_CELL` sources per
occupied cell; a smaller delta tightens the error and multiplies the arcs.

Cell assignment rounds: a point may land in a neighbouring cell by an ulp of its coordinates, so
the lower test uses dmin minus :func:`_slack` (a few ulps of the coordinates' size). Infeasible
answers are proven by a Hall violator whose deficit exceeds the rounding of the cell masses.
"""
from __future__ import annotations

import math
import numbers
import time

import numpy as np
from numba import njit

from solvopt.core.errors import ModelError
from solvopt.core.interrupt import stop_reason
from solvopt.core.options import SolveOptions
from solvopt.core.progress import Progress

from .maxflow import WarmFlow
from .stopping import Stopped, run_abandonable

# Default occupancy: delta is chosen so that the bounding box holds about this many points per cell.
PER_CELL = 4.0
# Shrinking steps of the default cell side while the sources occupy too few cells (clustered clouds).
OCCUPANCY_ROUNDS = 4
# Radius rounds of the lower search: R grows by this factor while L_R is infeasible.
GROWTH = 1.25
# Cells held in a dense lookup table up to this many grid positions; beyond, a binary search.
DENSE_CELLS = 1 << 24
# Cell pairs from a lookup per offset up to this many offsets in reach; beyond, from a k-d tree.
MAX_OFFSETS = 1024
# Minkowski order of each named metric (as the spatial-tree path of method ``bottleneck``).
ORDERS = {"euclidean": 2.0, "cityblock": 1.0, "chebyshev": math.inf}


def grid_bottleneck(model, options: SolveOptions | None = None, *, delta: float | None = None,
                    per_cell: float = PER_CELL):
    """A plan for W_inf of point inputs (named metric) within 2 h of the optimum, h the diameter of a
    cell of side ``delta`` (default: about ``per_cell`` sources per occupied cell), and a certified
    lower bound (see the module docstring). Returns a transport Result: ``bound`` the certified
    lower bound, ``guarantee`` the factor objective / bound, ``stats["additive_error"]`` = 2h."""
    from .result import clean_plan, plan_cost, transport_result
    options = options or SolveOptions()
    if model.x is None or not isinstance(model.metric, str) or model.metric not in ORDERS:
        raise ModelError("the grid bottleneck needs point inputs with a named metric (euclidean, cityblock, chebyshev)")
    if not math.isinf(model.p):
        raise ModelError(f"the grid bottleneck computes W_inf; the model has p = {model.p:g}")
    start = time.perf_counter()
    deadline = None if options.time_limit is None else start + options.time_limit
    stage = Progress(options.progress, log=options.log)

    def stop() -> bool:
        return stop_reason(deadline) is not None

    def poll() -> None:
        if stop():
            raise Stopped

    rows, cols = np.flatnonzero(model.a > 0), np.flatnonzero(model.b > 0)
    x, y = np.asarray(model.x[rows], np.float64), np.asarray(model.y[cols], np.float64)
    order = ORDERS[model.metric]
    dim = x.shape[1]
    origin = np.minimum(x.min(axis=0), y.min(axis=0))
    extent = np.maximum(x.max(axis=0), y.max(axis=0)) - origin
    if isinstance(per_cell, bool) or not (isinstance(per_cell, numbers.Real) and per_cell > 0):
        raise ModelError(f"per_cell must be a positive number, got {per_cell!r}")
    if delta is not None and (isinstance(delta, bool) or not (isinstance(delta, numbers.Real)
                                                              and math.isfinite(delta) and delta > 0)):
        raise ModelError(f"delta must be a positive number, got {delta!r}")
    stats: dict = {"path": "grid", "tests": 0, "radius_rounds": 0}
    state: dict = {"lower": 0.0}
    try:
        # the set-up passes over every point (the cell side, the slack, the binning) run watched, so a
        # stop is seen within POLL_SECONDS there too (0.3-0.8 s of them at 3 x 10^5 points)
        if delta is None:
            delta = run_abandonable(lambda: default_delta(x, origin, extent, per_cell), stop)
        delta = float(delta)
        dims = np.floor(extent / delta).astype(np.int64) + 1
        if float(np.prod(dims.astype(np.float64))) >= 2.0 ** 62:
            raise ModelError(f"delta = {delta:g} makes more than 2^62 grid positions: take a larger delta")
        diameter = delta * float(_norm(np.ones(dim), order))
        stats.update(delta=delta, cell_diameter=diameter, additive_error=2 * diameter)
        slack = run_abandonable(lambda: _slack(x, y, delta, order), stop)
        cells = run_abandonable(lambda: _Cells(x, y, model.a[rows], model.b[cols], origin, delta, dims, order, slack),
                                stop)
        stats.update(source_cells=cells.ns, target_cells=cells.nt)
        stage(f"bottleneck grid: delta {delta:.4g}, {cells.ns} + {cells.nt} cells", force=True)
        floor = run_abandonable(lambda: _floor(x, y, order), stop)
        floor *= 1 - 1e-12                                   # safe side of rounding
        state["lower"] = floor
        stats["floor"] = floor

        def tester(arcs_r, arcs_c):
            flows = WarmFlow(arcs_r, arcs_c, cells.a, cells.b, margin=cells.margin)

            def run(k):
                poll()
                try:
                    out = run_abandonable(lambda: flows.test(k), stop)
                except ArithmeticError:                  # no proof either way: undecided
                    out = "undecided"
                stats["tests"] += 1
                return out
            return flows, run

        def upper(t_lo, infeasible_upto):
            """The smallest feasible U-threshold up to top = t_lo + 2h and its flow, or None when U_top
            is infeasible (then so is L_{t_lo}, its subgraph). Radius rounds from the bound up (U_R
            for R growing by :data:`GROWTH`, each warm from the last round's preflow, the last at
            top), then a bisection over the feasible round's dmax values. U_t is a subgraph of L_t,
            and no plan is within t < W_inf: the values up to the largest infeasible L, and below
            the bound, are infeasible."""
            top = t_lo + 2 * diameter + 2 * slack
            radius = min(max(state["lower"], diameter), top)
            below, carried = max(infeasible_upto, np.nextafter(state["lower"], -math.inf)), None
            while True:
                poll()
                r, c, length = cells.pairs(radius, False)
                values, prefix = _distinct(length)
                flows, run = tester(r, c)
                if carried is not None:
                    flows.seed(carried, int(np.searchsorted(length, below, side="right")))
                stats["upper_arcs"], stats["upper_rounds"] = len(r), stats.get("upper_rounds", 0) + 1
                best = run(len(r)) if len(r) else None
                stage(f"bottleneck grid: plan round {stats['upper_rounds']}: {len(r)} cell pairs within "
                      f"{radius:.6g}, {'feasible' if isinstance(best, np.ndarray) else 'infeasible'}", force=True)
                if isinstance(best, np.ndarray):
                    break
                if radius >= top:
                    return None
                below = max(below, radius)
                carried = flows.carried() if best is None and flows.base[4] > 0 else None
                radius = min(max(radius * GROWTH, radius + delta), top)
            lo, hi = int(np.searchsorted(values, below, side="right")), len(values) - 1
            while lo < hi:
                mid = (lo + hi) // 2
                out = run(int(prefix[mid]))
                if isinstance(out, np.ndarray):
                    hi, best = mid, out
                else:
                    lo = mid + 1
            stats["t_hi"] = float(values[hi])
            return best, r, c

        # first U at floor + 2h: when it carries a plan, the floor is the bound and L is not needed
        found = upper(floor, -math.inf)
        stats["t_lo"] = floor
        infeasible_upto = -math.inf
        if found is None:
            # W_inf > floor: radius rounds of L_R, a bisection over the last round's dmin values, then U
            radius = max(floor, delta)
            carried = None
            while True:
                poll()
                r, c, length = cells.pairs(radius, True)
                flows, run = tester(r, c)
                if carried is not None:
                    flows.seed(carried, int(np.searchsorted(length, infeasible_upto, side="right")))
                stats["radius_rounds"] += 1
                stats["lower_arcs"] = len(r)
                values, prefix = _distinct(length)
                full = run(len(r))
                stage(f"bottleneck grid: round {stats['radius_rounds']}: {len(r)} cell pairs within {radius:.6g}, "
                      f"{'infeasible' if full is None else 'feasible'}", force=True)
                if full is not None:
                    break
                infeasible_upto = radius
                state["lower"] = max(state["lower"], radius)
                carried = flows.carried() if flows.base[4] > 0 else None
                radius = max(radius * GROWTH, radius + delta)
            lo, hi = int(np.searchsorted(values, infeasible_upto, side="right")), len(values) - 1
            while lo < hi:
                mid = (lo + hi) // 2
                if run(int(prefix[mid])) is None:
                    infeasible_upto, lo = float(values[mid]), mid + 1
                else:
                    hi = mid
            t_lo = float(values[hi])
            if infeasible_upto > -math.inf:        # L is constant between its values: W_inf >= t_lo
                state["lower"] = max(state["lower"], t_lo)
            stats["t_lo"] = t_lo
            found = upper(t_lo, infeasible_upto)
            if found is None:
                raise ArithmeticError("bottleneck grid: the cell graph U at t_lo + 2h tested infeasible (rounding)")
        plan_flow, r, c = found
        used = plan_flow > 0
        plan = cells.plan(r[used], c[used], plan_flow[used] * model.mass, rows, cols, (model.n, model.m))
        stopped = None
    except Stopped:
        from .quick import stopped_result
        stats["time"] = time.perf_counter() - start
        return stopped_result(model, stop_reason(deadline), stats, bound=state["lower"])
    except KeyboardInterrupt:
        from solvopt.core.result import Termination

        from .quick import stopped_result
        return stopped_result(model, Termination.INTERRUPTED, stats, bound=state["lower"])
    lower = state["lower"]
    plan = clean_plan(model, plan)[0]          # float noise of the split dropped: the plan reported
    objective = plan_cost(model, plan)[0]
    stats["time"] = time.perf_counter() - start
    factor = objective / lower if lower > 0 else None
    if factor is not None and factor <= 1.0:
        factor = 1.0
    return transport_result(model, plan, guarantee=factor, bound=lower, stopped=stopped, stats=stats,
                            proven_optimal=factor == 1.0)


def default_delta(x: np.ndarray, origin: np.ndarray, extent: np.ndarray, per_cell: float = PER_CELL) -> float:
    """The cell side giving about ``per_cell`` of the points ``x`` (the sources) per occupied cell:
    first from the bounding box's volume (over its non-degenerate axes), then shrunk while the
    points occupy less than half the cells that assumes (clustered clouds). 1.0 when every
    point coincides."""
    spans = extent[extent > 0]
    if len(spans) == 0:
        return 1.0
    want = max(len(x) / per_cell, 1.0)
    side = min(math.exp((np.log(spans).sum() - math.log(want)) / len(spans)), float(spans.max()))
    for _ in range(OCCUPANCY_ROUNDS):
        if np.any(extent / side >= 2.0 ** (62 / len(extent))):
            break
        occupied = len(np.unique(np.floor((x - origin) / side).astype(np.int64), axis=0))
        if occupied >= want / 2:
            break
        side *= (occupied / want) ** (1.0 / len(spans))
    return float(side)


def _norm(v: np.ndarray, order: float) -> np.ndarray:
    """The Minkowski norm of each row of v (or of the vector v)."""
    v = np.abs(np.asarray(v, np.float64))
    if math.isinf(order):
        return v.max(axis=-1)
    if order == 1.0:
        return v.sum(axis=-1)
    return np.sqrt((v * v).sum(axis=-1))


def _slack(x: np.ndarray, y: np.ndarray, delta: float, order: float) -> float:
    """How far a point may sit outside its cell by the rounding of (coordinate - origin) / delta,
    measured in the metric: a few ulps of the coordinates' size per axis."""
    size = max(float(np.abs(x).max(initial=0.0)), float(np.abs(y).max(initial=0.0)), delta)
    return 16 * np.finfo(np.float64).eps * size * float(_norm(np.ones(x.shape[1]), order)) + 1e-300


def _floor(x: np.ndarray, y: np.ndarray, order: float) -> float:
    """max(max_i min_j d_ij, max_j min_i d_ij): every point ships along one of its own pairs."""
    from scipy.spatial import cKDTree
    near_y = cKDTree(y).query(x, k=1, p=order)[0]
    near_x = cKDTree(x).query(y, k=1, p=order)[0]
    return float(max(near_y.max(initial=0.0), near_x.max(initial=0.0)))


def _lengths(offsets: np.ndarray, delta: float, order: float, lower: bool, slack: float) -> np.ndarray:
    """dmin (``lower``: less the slack, floored at 0) or dmax of each integer offset (rows)."""
    if lower:
        return np.maximum(delta * _norm(np.maximum(np.abs(offsets) - 1, 0), order) - slack, 0.0)
    return delta * _norm(np.abs(offsets) + 1, order)


def _distinct(length: np.ndarray):
    """The distinct values of a sorted array and, for each, how many entries are <= it."""
    if len(length) == 0:
        return np.zeros(1), np.zeros(1, np.int64)
    starts = np.flatnonzero(np.concatenate(([True], length[1:] != length[:-1])))
    return length[starts], np.append(starts[1:], len(length))


class _Cells:
    """The occupied cells of the sources and of the targets, their masses, their arcs per offset
    and the split of a cell flow among the points."""

    def __init__(self, x, y, a, b, origin, delta, dims, order, slack):
        self.dims, self.delta, self.order, self.slack = dims, delta, order, slack
        self.strides = np.ones(len(dims), np.int64)
        for k in range(len(dims) - 2, -1, -1):
            self.strides[k] = self.strides[k + 1] * dims[k + 1]
        self.src_keys, self.src_of, self.src_pos = self._cells(x, origin, delta)
        self.tgt_keys, self.tgt_of, self.tgt_pos = self._cells(y, origin, delta)
        self.ns, self.nt = len(self.src_keys), len(self.tgt_keys)
        self.a, self.b, self.margin = _cell_masses(a, b, self.src_of, self.tgt_of, self.ns, self.nt)
        self.point_a, self.point_b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        total = int(np.prod(dims.astype(np.float64)))
        if total <= DENSE_CELLS:
            self.table = np.full(total, -1, np.int64)
            self.table[self.tgt_keys] = np.arange(self.nt)
        else:
            self.table = np.zeros(0, np.int64)

    def _cells(self, points, origin, delta):
        pos = np.floor((points - origin) / delta).astype(np.int64)
        np.clip(pos, 0, self.dims - 1, out=pos)
        keys = pos @ self.strides
        unique, first, of = np.unique(keys, return_index=True, return_inverse=True)
        return unique, of.astype(np.int64), pos[first]

    def pairs(self, radius: float, lower: bool):
        """(source cell, target cell, length) of every occupied cell pair whose dmin (``lower``) or
        dmax is <= radius, sorted by length (ties in a fixed order). Few offsets within reach: each
        offset looked up for every source cell; else a k-d tree of the cell centres (a pair's centres
        are at most dmin + h apart)."""
        dim = len(self.dims)
        reach = int(math.floor(max(radius, 0.0) / self.delta)) + 1
        if (2 * reach + 1) ** dim <= MAX_OFFSETS:
            axis = np.arange(-reach, reach + 1, dtype=np.int64)
            offsets = np.stack(np.meshgrid(*([axis] * dim), indexing="ij"), axis=-1).reshape(-1, dim)
            lengths = _lengths(offsets, self.delta, self.order, lower, self.slack)
            keep = lengths <= radius
            offsets, lengths = offsets[keep], lengths[keep]
            ranks = np.lexsort((*offsets.T[::-1], lengths))
            offsets, lengths = offsets[ranks], lengths[ranks]
            r, c, which = _cell_arcs(self.src_pos, offsets, self.dims, self.strides, self.table, self.tgt_keys)
            return r, c, lengths[which]
        from scipy.spatial import cKDTree
        reach_centres = (radius + self.slack) * (1 + 1e-9) + self.delta * float(_norm(np.ones(dim), self.order))
        found = cKDTree(self.src_pos + 0.5).sparse_distance_matrix(
            cKDTree(self.tgt_pos + 0.5), reach_centres / self.delta, p=self.order, output_type="ndarray")
        r, c = found["i"].astype(np.int64), found["j"].astype(np.int64)
        lengths = _lengths(self.tgt_pos[c] - self.src_pos[r], self.delta, self.order, lower, self.slack)
        keep = lengths <= radius
        r, c, lengths = r[keep], c[keep], lengths[keep]
        ranks = np.lexsort((c, r, lengths))
        return r[ranks], c[ranks], lengths[ranks]

    def plan(self, r, c, mass, rows, cols, shape):
        """The point plan splitting the flow ``mass`` on cell pairs (r, c) (north-west corner
        rule within each cell, then within each pair)."""
        import scipy.sparse as sp
        s_order = np.argsort(self.src_of, kind="stable")
        s_ptr = np.zeros(self.ns + 1, np.int64)
        np.cumsum(np.bincount(self.src_of, minlength=self.ns), out=s_ptr[1:])
        t_order = np.argsort(self.tgt_of, kind="stable")
        t_ptr = np.zeros(self.nt + 1, np.int64)
        np.cumsum(np.bincount(self.tgt_of, minlength=self.nt), out=t_ptr[1:])
        by_r = np.argsort(r, kind="stable")
        arc_s, pt_s, m_s = _corner(r[by_r], by_r, mass, s_ptr, s_order, self.point_a)
        by_c = np.argsort(c, kind="stable")
        arc_t, pt_t, m_t = _corner(c[by_c], by_c, mass, t_ptr, t_order, self.point_b)
        # both piece lists grouped by arc, then paired arc by arc
        k_s, k_t = np.argsort(arc_s, kind="stable"), np.argsort(arc_t, kind="stable")
        i, j, m = _pair_pieces(arc_s[k_s], pt_s[k_s], m_s[k_s], arc_t[k_t], pt_t[k_t], m_t[k_t])
        return sp.csr_matrix((m, (rows[i], cols[j])), shape=shape)


def _cell_masses(a, b, src_of, tgt_of, ns, nt):
    """Cell masses (a, b) for the max flow and the rounding a Hall deficit must exceed. Uniform
    masses on both sides: integer multiples (exact sums, no margin); else correctly rounded sums."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if len(a) and len(b) and np.all(a == a[0]) and np.all(b == b[0]):
        return (np.bincount(src_of, minlength=ns).astype(np.float64) * len(b),
                np.bincount(tgt_of, minlength=nt).astype(np.float64) * len(a), 0.0)

    def sums(w, of, count):
        order = np.argsort(of, kind="stable")
        bounds = np.searchsorted(of[order], np.arange(count + 1))
        ws = w[order]
        return np.array([math.fsum(ws[bounds[k]:bounds[k + 1]]) for k in range(count)])
    total = math.fsum(a)
    margin = 4 * (ns + nt) * np.finfo(np.float64).eps * total
    return sums(a, src_of, ns), sums(b, tgt_of, nt), margin


@njit(cache=True)
def _lookup(key, table, keys):
    if len(table):
        return table[key]
    k = np.searchsorted(keys, key)
    if k < len(keys) and keys[k] == key:
        return k
    return -1


@njit(cache=True)
def _cell_arcs(src_pos, offsets, dims, strides, table, keys):
    """Arcs (source cell, target cell, offset index) for each offset in turn, each over the source cells."""
    ns, dim = src_pos.shape
    count = 0
    for pass_ in range(2):
        if pass_ == 1:
            r = np.empty(count, np.int64)
            c = np.empty(count, np.int64)
            which = np.empty(count, np.int64)
        count = 0
        for o in range(offsets.shape[0]):
            for s in range(ns):
                key = 0
                inside = True
                for k in range(dim):
                    q = src_pos[s, k] + offsets[o, k]
                    if q < 0 or q >= dims[k]:
                        inside = False
                        break
                    key += q * strides[k]
                if not inside:
                    continue
                t = _lookup(key, table, keys)
                if t < 0:
                    continue
                if pass_ == 1:
                    r[count] = s
                    c[count] = t
                    which[count] = o
                count += 1
    return r, c, which


@njit(cache=True)
def _corner(group, arcs, arc_mass, ptr, points, point_mass):
    """North-west corner within each cell: the arcs of cell g (``group``, sorted, with arc ids
    ``arcs``) against its points points[ptr[g]:ptr[g+1]]. Pieces (arc, point, mass); float drift
    left at a cell's end is dropped (the plan's marginals are repaired within tolerance)."""
    n = len(arcs)
    size = n + len(points)
    out_a = np.empty(size, np.int64)
    out_p = np.empty(size, np.int64)
    out_m = np.empty(size, np.float64)
    count = 0
    e = 0
    while e < n:
        g = group[e]
        end = e
        while end < n and group[end] == g:
            end += 1
        q = ptr[g]
        left_p = point_mass[points[q]] if q < ptr[g + 1] else 0.0
        left_a = arc_mass[arcs[e]]
        while e < end and q < ptr[g + 1]:
            moved = min(left_a, left_p)
            if moved > 0:
                out_a[count] = arcs[e]
                out_p[count] = points[q]
                out_m[count] = moved
                count += 1
            left_a -= moved
            left_p -= moved
            if left_a <= left_p:
                e += 1
                if e < end:
                    left_a = arc_mass[arcs[e]]
            else:
                q += 1
                if q < ptr[g + 1]:
                    left_p = point_mass[points[q]]
        e = end
    return out_a[:count], out_p[:count], out_m[:count]


@njit(cache=True)
def _pair_pieces(arc_s, pt_s, m_s, arc_t, pt_t, m_t):
    """North-west corner within each arc between its source pieces and its target pieces."""
    size = len(arc_s) + len(arc_t)
    out_i = np.empty(size, np.int64)
    out_j = np.empty(size, np.int64)
    out_m = np.empty(size, np.float64)
    count = 0
    s = t = 0
    left_s = m_s[0] if len(m_s) else 0.0
    left_t = m_t[0] if len(m_t) else 0.0
    while s < len(arc_s) and t < len(arc_t):
        if arc_s[s] < arc_t[t]:            # drift: pieces of an arc the other side lacks
            s += 1
            if s < len(arc_s):
                left_s = m_s[s]
            continue
        if arc_t[t] < arc_s[s]:
            t += 1
            if t < len(arc_t):
                left_t = m_t[t]
            continue
        moved = min(left_s, left_t)
        if moved > 0:
            out_i[count] = pt_s[s]
            out_j[count] = pt_t[t]
            out_m[count] = moved
            count += 1
        left_s -= moved
        left_t -= moved
        if left_s <= left_t:               # the next arc's pieces are skipped to above when one side ends first
            s += 1
            if s < len(arc_s):
                left_s = m_s[s]
        else:
            t += 1
            if t < len(arc_t):
                left_t = m_t[t]
    return out_i[:count], out_j[:count], out_m[:count]


__all__ = ["GROWTH", "PER_CELL", "default_delta", "grid_bottleneck"]
