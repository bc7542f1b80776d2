"""The one Result builder every transport method uses: :func:`transport_result`.

A method hands over its plan (scipy.sparse, n x m), the factor it proves and any certified
lower bound it has; the builder checks the plan's marginals (repairing tiny float drift, refusing
more), computes W_p from the plan's own support (never trusting a method's objective), states
the guarantee, and settles the status through :func:`solvopt.core.status.settle`, so that every
method reports W_p, its bound and OPTIMAL the same way.
"""
from __future__ import annotations

import math
import sys

import numpy as np

from solvopt.core.errors import SolverError
from solvopt.core.result import Result, Termination
from solvopt.core.status import settle, within_default_tolerance

# Marginals must match a and b within this, relative to the total mass (absolute 1e-9 for mass 1).
MARGINAL_TOL = 1e-9
# Plan entries at or below this (relative to the total mass) are float noise of a solver: dropped.
ZERO_MASS = 1e-15
# A certified bound may exceed the plan's W_p by float error only (relative).
BOUND_SLACK = 1e-7
# Row / column rescaling rounds that remove float drift of the marginals on the plan's support.
REPAIR_ROUNDS = 3
# Above this p, d^p spans more decades than float64 and the flow engines resolve: the exact
# methods measure lengths in units of W_inf, approx also tries its p = inf plan.
LARGE_P = 8.0
# float64's machine epsilon (np.finfo costs a microsecond a call)
EPS = float(np.finfo(np.float64).eps)
# The named metrics as :func:`solvopt.transport.plan_kernels.plan_power_sum` numbers them.
METRIC_CODES = {"euclidean": 0, "cityblock": 1, "chebyshev": 2}


def metric_code(model) -> int | None:
    """How :func:`solvopt.transport.plan_kernels.plan_power_sum` reads the model's distances: -1 from
    its matrix, a :data:`METRIC_CODES` number from its points, None for a callable metric."""
    if model.cost is not None:
        return -1
    return METRIC_CODES.get(model.metric) if isinstance(model.metric, str) else None


def plan_cost(model, plan) -> tuple[float, float]:
    """(W_p, sum pi d^p) of a plan (any scipy.sparse n x m matrix, nonnegative).

    For p = inf: (the largest distance carrying mass, the same). Computed with the largest
    support distance factored out, so a large p does not overflow.
    """
    from .plan_kernels import power_sum
    if plan.nnz == 0:
        return 0.0, 0.0
    if plan.format == "csr" and metric_code(model) is not None:   # one pass: no index or distance copies
        return csr_plan_cost(model, plan.indptr, plan.indices, plan.data)
    coo = plan.tocoo()
    p = 1.0 if math.isinf(model.p) else float(model.p)
    return cost_of(model.p, *power_sum(np.asarray(coo.data, dtype=np.float64),
                                      model.pair_distances(coo.row, coo.col), p))


def csr_plan_cost(model, indptr, indices, data) -> tuple[float, float]:
    """:func:`plan_cost` of a plan given by its CSR arrays, for a model whose :func:`metric_code`
    is not None (the distances read in one pass over the plan)."""
    from .plan_kernels import plan_power_sum
    code = metric_code(model)
    if code is None:
        raise ValueError("csr_plan_cost reads named metrics and matrices; a callable metric goes through plan_cost")
    held = (model.cost, model.cost) if code < 0 else (model.x, model.y)
    p = 1.0 if math.isinf(model.p) else float(model.p)
    return cost_of(model.p, *plan_power_sum(indptr, indices, np.asarray(data, dtype=np.float64), *held, code, p))


def cost_of(p: float, top: float, scaled: float) -> tuple[float, float]:
    """(W_p, sum pi d^p) from the largest support distance ``top`` and sum pi (d / top)^p."""
    if math.isinf(p):
        return top, top
    if top == 0.0:
        return 0.0, 0.0
    cost_p = scaled * top ** p if p * math.log(top) < 700 else math.inf
    return top * scaled ** (1.0 / p), cost_p


def clean_plan(model, plan, owned: bool = False):
    """The plan as CSR with float noise dropped and marginal drift repaired; SolverError when off.

    Refuses a plan of the wrong shape, with a negative entry beyond noise, or with marginals
    off by more than :data:`MARGINAL_TOL` x mass. Returns (plan, largest marginal error).
    ``owned``: the plan is a CSR float64 matrix the caller built for this and holds nowhere
    else (e.g. from :func:`pair_plan`): it is cleaned in place instead of copied.
    """
    import scipy.sparse as sp
    if not sp.issparse(plan):
        plan = sp.csr_matrix(np.asarray(plan, dtype=np.float64))
    if plan.shape != (model.n, model.m):
        raise SolverError(f"transport plan has shape {plan.shape}, expected ({model.n}, {model.m})")
    if plan.format == "csr" and plan.dtype == np.float64:
        plan = plan if owned else plan.copy()
    else:
        plan = sp.csr_matrix(plan, dtype=np.float64, copy=True)
    plan.sum_duplicates()
    from .plan_kernels import checked_error, marginal_error, rescale
    a, b = model.a, model.b
    # the entries checked, noise zeroed in place (zeros change no sum), and the marginal error
    code, low, zeroed, error = checked_error(plan.indptr, plan.indices, plan.data, a, b, ZERO_MASS * model.mass)
    if code == 1:
        raise SolverError("transport plan has a non-finite entry")
    if code == 2:
        raise SolverError(f"transport plan has a negative entry {low!r}")
    if zeroed:
        plan.eliminate_zeros()
    tol = MARGINAL_TOL * model.mass
    if error > tol:
        raise SolverError(f"transport plan marginals are off by {error:.3g} (tolerance {tol:.3g})")
    floor = EPS * model.mass
    for _ in range(REPAIR_ROUNDS):
        if error <= floor:             # drift at the rounding of the total: nothing to repair
            break
        rescale(plan.indptr, plan.indices, plan.data, a, b)
        error, before = marginal_error(plan.indptr, plan.indices, plan.data, a, b), error
        if error > 0.5 * before:       # the rescaling no longer halves it: float noise of the sums
            break
    return plan, error


def pair_plan(shape, rows: np.ndarray, cols: np.ndarray, mass: np.ndarray):
    """The CSR plan with ``mass[k]`` on (rows[k], cols[k]) (distinct pairs; zero masses left
    out), built in one Numba pass (:func:`solvopt.transport.plan_kernels.csr_from_pairs`)."""
    import scipy.sparse as sp

    from .plan_kernels import csr_from_pairs
    indptr, indices, data = csr_from_pairs(shape[0], shape[1], rows, cols, np.asarray(mass, dtype=np.float64))
    plan = sp.csr_matrix((data, indices, indptr), shape=shape)
    plan.has_canonical_format = True          # sorted, distinct pairs: nothing for sum_duplicates to do
    return plan


def status_scale(model, objective: float | None = None) -> float:
    """The scale in which a transport status is settled: D * M^(1/p) (D for p = inf).

    D is the data's distance scale (:meth:`~solvopt.dsl.transport.Transport.distance_scale`: the
    bounding box's diagonal under the metric, or the cost matrix's largest entry; for a callable
    metric, the objective's own size) and M the total mass. Moving the points by f multiplies W_p
    and D by f; multiplying the masses by f multiplies W_p and M^(1/p) by f^(1/p): the status,
    settled on W_p / (D M^(1/p)), is the same in any units. 1.0 when every distance is 0.
    """
    distance = model.distance_scale()
    if distance is None:            # a callable metric: the objective's own size
        return objective if objective is not None and math.isfinite(objective) and objective > 0 else 1.0
    return frame_of(distance, model.mass, model.p)


def frame_of(distance: float, mass: float, p: float) -> float:
    """:func:`status_scale` from the data's distance scale D and total mass M: D M^(1/p). A subnormal
    frame counts as the smallest normal float (below it float64 keeps too few digits to settle on)."""
    if not (math.isfinite(distance) and distance > 0):
        return 1.0
    scale = distance if math.isinf(p) else distance * mass ** (1.0 / p)
    return max(scale, sys.float_info.min) if math.isfinite(scale) else 1.0


def certified_optimum(value: float, bound: float, frame: float) -> bool:
    """A plan of W_p ``value`` is proven optimal by the certified ``bound`` (both in the units of the
    data, ``frame`` its :func:`status_scale`): the bound is not above the value beyond rounding
    (:data:`BOUND_SLACK`; else something is wrong and nothing is claimed), and the gap is within the
    default tolerance."""
    if above_rounding(bound, value, frame):
        return False
    return within_default_tolerance(value, min(bound, value), scale=frame)


def above_rounding(bound: float, value: float, frame: float) -> bool:
    """The bound exceeds the plan's W_p by more than rounding (:data:`BOUND_SLACK` of the larger of
    the frame and the value): a bound that cannot be right."""
    return bound - value > BOUND_SLACK * max(frame, value)


def guarantee_text(factor: float | None, p: float) -> str | None:
    """What is proven about W_p, in words (None when nothing is)."""
    if factor is None or not math.isfinite(factor):
        return None
    which = "W_inf (bottleneck)" if math.isinf(p) else f"W_{p:g}"
    if factor == 1.0:
        return f"{which} is optimal (exact method)"
    return f"{which} within factor {factor:g} of the optimum (proven)"


def transport_result(model, plan, *, guarantee: float | None, bound: float | None = None,
                     proven_optimal: bool = False, stopped: Termination | None = None,
                     stats: dict | None = None, owned: bool = False) -> Result:
    """The Result of a transport method from its plan.

    - ``plan``: scipy.sparse (n x m) with marginals a, b (or None when the method holds none);
    - ``guarantee``: the factor proven for this plan on W_p (1.0 for exact; None when nothing
      is proven, e.g. a run stopped before its guarantee holds). A factor > 1 gives the bound
      objective / factor; a factor of 1 is stated only when the status settles OPTIMAL;
    - ``bound``: a certified lower bound on W_p (e.g. from a dual solution), or None;
    - ``proven_optimal``: the method proves its plan optimal by itself (an exact combinatorial
      algorithm: assignment, bottleneck search): the bound is then the objective;
    - ``stopped``: why the method stopped early (TIME_LIMIT, INTERRUPTED, ...) or None;
    - ``owned``: the plan is the method's own fresh CSR matrix (see :func:`clean_plan`).

    objective = W_p of the plan (p = inf: its largest distance carrying mass); stats gains
    ``cost_p`` (sum pi d^p; W_inf itself for p = inf), ``factor``, ``support`` (stored plan
    entries), ``marginal_error`` and ``p``; solution = {"plan": CSR matrix}.
    """
    stats = dict(stats or {})
    stats.update(p=model.p, n=model.n, m=model.m, factor=guarantee)
    if plan is None:
        term, status, gap = settle(None, bound, has_solution=False, stopped=stopped, scale=status_scale(model))
        return Result(term, status, bound=bound, gap=gap, stats=stats,
                      message="stopped before a transport plan was found")
    plan, error = clean_plan(model, plan, owned)
    objective, cost_p = plan_cost(model, plan)
    candidates = [b for b in (bound,) if b is not None]
    if guarantee is not None and math.isfinite(guarantee) and guarantee > 1:
        candidates.append(objective / guarantee)   # the approximation's proof: OPT >= W_p / factor
    if proven_optimal:
        candidates.append(objective)
    best = max(candidates) if candidates else None
    scale = status_scale(model, objective)
    if best is not None and best > objective:
        # (every distance between points with mass 0: every plan has W_p = 0, and a bound above it is
        # the duals' rounding times the mass, in a frame the data do not set)
        if above_rounding(best, objective, scale) and model.distance_scale() != 0:
            raise SolverError(f"transport bound {best!r} exceeds the plan's W_p {objective!r}")
        best = objective
    stats.update(cost_p=cost_p, support=int(plan.nnz), marginal_error=error)
    term, status, gap = settle(objective, best, has_solution=True, stopped=stopped, scale=scale)
    if guarantee == 1.0 and term is not Termination.OPTIMAL:
        guarantee = None   # an exact method whose optimality is not certified (a stopped search, loose duals)
        stats["factor"] = None
    return Result(term, status, objective=objective, bound=best, gap=gap, solution={"plan": plan}, stats=stats,
                  guarantee=guarantee_text(guarantee, model.p))



# Rows of d^p computed at once by the dual-bound passes (bounded memory for point inputs).
BOUND_BLOCK_ENTRIES = 1 << 22
# Entries of a held cost matrix read at once by those passes (the temporaries stay in cache).
HELD_BLOCK_ENTRIES = 1 << 16


def dual_bound(model, u, scale: float, passes: int = 2, cap: float = math.inf,
               costs: np.ndarray | None = None, support: tuple | None = None) -> float | None:
    """A certified lower bound on W_p from any source potentials ``u`` (n,), in units of (d / scale)^p.

    Weak LP duality: for every (u, v) with u_i + v_j <= (d_ij / scale)^p,
    sum_i a_i u_i + sum_j b_j v_j <= min_pi sum pi (d / scale)^p. The best v for u is
    v_j = min_i ((d_ij / scale)^p - u_i) (one pass over the distances, block by block); a second
    pass then takes the best u for that v. Any u (an engine's duals of either sign convention,
    rough potentials) thus gives a valid bound; near-optimal potentials give a tight one.
    Points of zero mass are left out (they change nothing). None for p = inf (no linear dual).
    ``cap``: costs are taken as min((d / scale)^p, cap) (lower costs: the bound stays valid, and
    nothing overflows for large p). ``costs``: those costs already held, as a (sources with mass,
    targets with mass) matrix: the passes read it instead of recomputing the distances.
    ``support``: (sources with mass, targets with mass) when the caller holds them.
    """
    if math.isinf(model.p) or not scale > 0:
        return None
    rows, cols = support if support is not None else (np.flatnonzero(model.a > 0), np.flatnonzero(model.b > 0))
    u = np.asarray(u, dtype=np.float64)[rows]
    if not np.all(np.isfinite(u)):
        return None
    v = _best_partner(model, rows, cols, u, scale, axis=0, cap=cap, costs=costs)
    if passes > 1:
        u = _best_partner(model, rows, cols, v, scale, axis=1, cap=cap, costs=costs)
    return dual_value(model, rows, cols, u, v, scale)


def dual_value(model, rows, cols, u, v, scale: float) -> float | None:
    """The bound on W_p of :func:`dual_bound` from a feasible dual pair: u (len(rows)) and v
    (len(cols)) with u_i + v_j <= (d_ij / scale)^p for the sources ``rows`` and targets ``cols``
    with mass (e.g. v the best partners of u); None when it is not finite."""
    # per unit of mass (masses of any size), then back: W_p >= scale (M value)^(1/p)
    value = float(np.dot(model.a[rows] / model.mass, u) + np.dot(model.b[cols] / model.mass, v))
    return dual_scale(scale, model.mass, model.p, value)


def dual_scale(scale: float, mass: float, p: float, value: float) -> float | None:
    """The bound on W_p of a dual ``value`` per unit of mass (sum a u + sum b v over the total mass,
    costs (d / scale)^p): scale (mass value)^(1/p); None when it is not finite."""
    if not math.isfinite(value):
        return None
    # Per unit of mass, with the costs in [0, 1], a value below 1e-300 is the rounding of subnormal
    # costs, which the mass would blow up (1e-308 x 1e308): it bounds nothing but 0, and a W_p that
    # small is settled by the status frame's absolute tolerance anyway.
    if value < 1e-300:
        return 0.0
    bound = scale * mass ** (1.0 / p) * value ** (1.0 / p)
    return bound if math.isfinite(bound) else None        # (the scale of all costs, not only those with mass)


def _best_partner(model, rows, cols, pot, scale, axis: int, cap: float = math.inf, costs=None) -> np.ndarray:
    """axis=0: v_j = min_i (c_ij - u_i); axis=1: u_i = min_j (c_ij - v_j); c = (d / scale)^p, or ``costs``."""
    step = max(1, (BOUND_BLOCK_ENTRIES if costs is None else HELD_BLOCK_ENTRIES) // max(1, len(cols)))
    out = np.full(len(cols), np.inf) if axis == 0 else np.empty(len(rows))
    for start in range(0, len(rows), step):
        if costs is None:
            block = model.distance_block(rows[start:start + step], cols) / scale
            with np.errstate(over="ignore", under="ignore"):
                np.power(block, model.p, out=block)
            if math.isfinite(cap):
                np.minimum(block, cap, out=block)
        else:
            block = costs[start:start + step]
            if block.dtype == np.float64:       # one pass, no (rows, cols) temporary
                from .plan_kernels import best_partners
                if axis == 0:
                    np.minimum(out, best_partners(block, pot[start:start + step], 0), out=out)
                else:
                    out[start:start + step] = best_partners(block, pot, 1)
                continue
        if axis == 0:
            np.minimum(out, (block - pot[start:start + step, None]).min(axis=0), out=out)
        else:
            out[start:start + step] = (block - pot[None, :]).min(axis=1)
    return out
