"""``approx`` on the full cost matrix (``graph="dense"``, the default for small assignment problems):
an auction with eps-scaling stopped at a coarse resolution, certified by a double c-transform.

Where it applies: points with a named metric, finite p <= ``LARGE_P``, n = m and uniform masses
(an assignment problem: every optimal vertex of the transport polytope is a permutation), and at
most :data:`DENSE_MAX_PAIRS` pairs; ``graph="auto"`` takes it up to :data:`DENSE_PAIRS`, or up to
:data:`DENSE_MAX_PAIRS` when the distances tie (:func:`dense_default`). There the n x n matrix of
costs is cheap to hold and to scan, and the auction reaches a plan within 1% of the optimum, with a
proof, faster than the two-hop graph's flow.

Algorithm (costs C_ij = (d_ij / D)^p, D the data's distance scale, so C <= 1):

1. eps-scaling phases of Bertsekas' forward auction (:func:`~solvopt.transport.kernels_dense.auction_phase`),
   prices kept from phase to phase, eps divided by :data:`THETA` each phase (starting from the
   larger of the mean of the row minima, a lower bound on the optimum per unit of mass, and
   :data:`START_SHARE` (p = 1) or :data:`START_SHARE_P` (p > 1) times the mean cost), each phase
   ending with a full assignment sigma in eps-complementary slackness:
   C_i sigma(i) + price_sigma(i) <= min_j (C_ij + price_j) + eps.
   After a phase whose eps is within :data:`CHECK_FROM` of the stop rule's, the certificate of
   step 3 is computed and ends the phases when it already proves the target.
2. *Stop rule.* With u_i = min_j (C_ij + price_j) and v_j = -price_j (a dual pair feasible for every
   pair), summing eps-CS over the persons (sigma is a bijection) gives
   P <= (sum u + sum v) / n + eps <= OPT + eps, P the assignment's mean cost and OPT the optimum's. The
   phases stop once eps <= P (1 - T^(-p)), T = :data:`TARGET`: the plan's W_p is then within a
   factor T of the dual bound below, proven before it is computed.
3. *Certificate.* The double c-transform of the prices on the held matrix (u as above, then
   v_j = min_i (C_ij - u_i) >= -price_j: the dual value only rises), less the rounding margin of
   :mod:`solvopt.transport.dual` (float error of the costs and the sums): W_p >= D (M value)^(1/p).
4. *Factor.* The plan's W_p over that bound, a number proven for this plan (at most T, up to the
   margin). It is stated only when at most 3, the factor of the two-hop graph; otherwise, or when
   the bids exceed :data:`BID_CAP` per person (price wars at a tiny eps), the caller solves on the
   two-hop graph instead.

The plan: mass M / n on every pair (i, sigma(i)), exact marginals. The status is OPTIMAL only
when the bound meets the plan's W_p within the default tolerance (it usually does not: the gap is
about 0.1-1%), FEASIBLE_WITHIN_GAP otherwise.
"""
from __future__ import annotations

import math
import threading
import time

import numpy as np

from solvopt.core.interrupt import stop_reason
from solvopt.core.memory import memory_budget

from .result import LARGE_P, pair_plan, transport_result
from .stopping import Stopped, run_abandonable

# the most pairs n x m solved on the full matrix (8 bytes each), and under graph="auto" the most
# without ties in the distances (see dense_default)
DENSE_MAX_PAIRS = 4_000_000
DENSE_PAIRS = 2_250_000
# graph="auto" takes the auction up to DENSE_MAX_PAIRS when at least this share of TIE_SAMPLE
# sampled pair distances ties with another (the colours of two photos: 4.2-4.6% at n = 500-2000;
# uniform points in d = 2, 3: 0)
TIED_PAIRS_SHARE = 0.01
TIE_SAMPLE = 4096
# below this many pairs the matrix is filled in the calling thread (a parallel region costs more)
SERIAL_PAIRS = 1 << 21
# the phases stop once the plan's W_p is proven within this factor of the certified bound (a 1% gap)
TARGET = 1.01
# the first phase's eps: the larger of the mean row minimum and this share of the mean cost (p = 1;
# START_SHARE_P for p > 1). Measured (bids on the benchmark's clouds, n = 1000 and 2000): 0.1 at p = 1
# and 0.03 at p = 2 took the fewest; a start that falls with p (0.1^p) set off price wars between
# repeated points at p = 3 (more than BID_CAP bids per person on 8 points)
START_SHARE = 0.1
START_SHARE_P = 0.03
# eps is divided by this from one phase to the next
THETA = 8.0
# after a phase whose eps is within this factor of the eps that proves the target, the certificate
# is computed (two passes over the matrix) and ends the phases when it proves the target already
CHECK_FROM = 8.0
# bids per person, over all phases, after which the auction gives up (the two-hop graph solves)
BID_CAP = 256
# the smallest eps tried (costs are at most 1): below it price rises are lost to rounding
EPS_FLOOR = 1e-10
# units in the last place of the largest term, per pair, allowed for float rounding (as dual.py)
MARGIN_ULPS = 64
# seconds between two looks at the stop while a phase runs
POLL_SECONDS = 0.05
# the largest factor stated (the two-hop graph's proven factor)
MAX_FACTOR = 3.0
EPS = float(np.finfo(np.float64).eps)


def dense_applies(model) -> bool:
    """Whether ``model`` is an assignment problem on points that the dense auction takes."""
    if model.cost is not None or callable(model.metric) or model.x is None:
        return False
    if math.isinf(model.p) or model.p > LARGE_P or model.n != model.m or model.n < 2:
        return False
    matrix_bytes = 8 * model.n * model.m       # (reading the memory available costs a millisecond: only for large ones)
    if model.n * model.m > DENSE_MAX_PAIRS or (matrix_bytes > 1 << 26 and matrix_bytes > memory_budget(0.5)):
        return False
    a, b = model.a, model.b
    return bool(a[0] > 0 and np.all(a == a[0]) and np.all(b == b[0]))


def dense_default(model) -> bool:
    """Whether ``graph="auto"`` takes the auction: where it applies, up to :data:`DENSE_PAIRS`
    pairs, and up to :data:`DENSE_MAX_PAIRS` when the distances tie (a share of at least
    :data:`TIED_PAIRS_SHARE` of a sample of pairs: points on a lattice, such as 8-bit colours, on
    which the two-hop graph's flow is slow and the auction is not). Measured in one process, n = m,
    p = 1 and 2: on uniform points in d = 2 the two-hop graph took 0.07-0.08 s at n = 2000 against
    0.10-0.11 s for the auction, about the same at 1500 and more at 1000 (d = 3: about the same at
    2000); on the colours of two photos the auction took 0.05-0.06 s at 2000 against 0.10-0.11 s."""
    if not dense_applies(model):
        return False
    if model.n * model.m <= DENSE_PAIRS:
        return True
    rng = np.random.default_rng(0)                      # a fixed sample: the same choice every run
    keys = np.unique(rng.integers(0, model.n * model.m, TIE_SAMPLE))
    return tied_share(model.pair_distances(keys // model.m, keys % model.m)) >= TIED_PAIRS_SHARE


def tied_share(values: np.ndarray, sample: int | None = None) -> float:
    """The share of a sample of ``values`` (evenly spaced, deterministic; all of them when
    ``sample`` is None or larger) equal to another value of the sample: about 0 for distances
    between points in general position, large for points on a lattice whose distances repeat."""
    sample = TIE_SAMPLE if sample is None else sample
    if len(values) < 2:
        return 0.0
    picked = np.sort(values[np.linspace(0, len(values) - 1, min(sample, len(values))).astype(np.int64)])
    same = picked[1:] == picked[:-1]
    tied = np.zeros(len(picked), dtype=bool)
    tied[1:] |= same
    tied[:-1] |= same
    return float(tied.mean())


def solve_dense(model, deadline, progress, stats: dict):
    """The dense auction's Result, or None when it cannot prove a factor of at most 3 (or gives up:
    the caller then builds the two-hop graph). A stop (time limit, Ctrl-C) keeps the last complete
    phase's assignment and its certificate; before one, None with ``stats["stopped"]`` set."""
    from .kernels_numpy import metric_code

    def stop() -> bool:
        return stop_reason(deadline) is not None
    stopped = stop_reason(deadline)
    if stopped is not None:
        stats["stopped"] = stopped
        return None
    t0 = time.perf_counter()
    n, m, p = model.n, model.m, float(model.p)
    unit = model.distance_scale() or 1.0
    if not (math.isfinite(unit) and unit > 0):
        unit = 1.0
    C = np.empty((n, m))
    row_min, row_sum = np.empty(n), np.empty(n)
    cost_args = (model.x, model.y, metric_code(model.metric), unit, p, C, row_min, row_sum)
    try:                                 # the kernels' first load (seconds to compile): a stop is seen at once
        run_abandonable(lambda: _load_kernels(cost_args), stop)
    except Stopped:
        stats["stopped"] = stop_reason(deadline)
        return None
    from .kernels_dense import CAPPED, STOPPED, assigned_cost, auction_phase, dense_costs, dense_costs_serial
    fill = dense_costs if n * m > SERIAL_PAIRS else dense_costs_serial
    with np.errstate(under="ignore"):
        fill(*cost_args)
    lower = float(row_min.mean())                     # <= the optimum per unit of mass
    mean = float(row_sum.sum()) / (n * m)             # the mean cost: what a random plan pays
    stats.update(graph="dense", engine="auction", graph_time=time.perf_counter() - t0)
    t1 = time.perf_counter()
    eps = max(lower, (START_SHARE if p <= 1.0 else START_SHARE_P) * mean, EPS_FLOOR)
    price = np.zeros(m)
    assign = np.empty(n, np.int64)
    owner = np.empty(m, np.int64)
    done: np.ndarray | None = None                 # the last complete phase's assignment
    bids_left = BID_CAP * n
    phase_bids: list[int] = []
    value = None                                   # the certified dual value, once computed
    dual_time = 0.0
    while True:
        bids, status = _run_phase(auction_phase, (C, price, eps, assign, owner), bids_left, stop)
        if status == STOPPED:
            stopped = stop_reason(deadline)
            break
        phase_bids.append(int(bids))
        bids_left -= bids
        if status == CAPPED:
            stats.update(phase_bids=phase_bids, dense_gave_up=f"more than {BID_CAP} bids per person")
            return None
        done = assign.copy()
        cost = assigned_cost(C, assign) / n
        need = cost * (1.0 - TARGET ** -p)      # eps <= need proves the target (the module docstring)
        progress(f"auction phase {len(phase_bids)}: eps {eps:.3g}, mean cost {cost:.6g}")
        if eps <= need or cost == 0.0 or eps <= EPS_FLOOR:
            value = None
            break
        if eps <= CHECK_FROM * need:            # the certificate is usually far tighter than eps: look
            t2 = time.perf_counter()
            value = _certified_value(C, price)
            dual_time += time.perf_counter() - t2
            if value > 0 and cost <= value * TARGET ** p:
                break
            value = None
        stopped = stop_reason(deadline)
        if stopped is not None:
            break
        eps = max(eps / THETA, 0.9 * need, EPS_FLOOR)
    stats.update(flow_time=time.perf_counter() - t1 - dual_time, phase_bids=phase_bids, epsilon=eps,
                 bids=BID_CAP * n - bids_left)
    if done is None:
        stats["stopped"] = stopped
        return None
    if value is None:
        t2 = time.perf_counter()
        value = _certified_value(C, price)
        dual_time += time.perf_counter() - t2
    stats.update(dual_time=dual_time)
    cost = assigned_cost(C, done) / n
    mass = model.mass
    bound = 0.0 if value <= 0 else unit * (mass * value) ** (1.0 / p)
    stats["dual_bound"] = bound
    if cost == 0.0:
        factor: float | None = 1.0                     # a plan of cost 0 is optimal
    elif value > 0:
        factor = (cost / value) ** (1.0 / p) * (1.0 + 1e-9)      # a hair up: float error of the ratio
    else:
        factor = None
    if stopped is None and (factor is None or factor > MAX_FACTOR):
        stats["dense_gave_up"] = "no factor of at most 3 proven"
        return None
    plan = pair_plan((n, m), np.arange(n, dtype=np.int64), done, np.full(n, mass / n))
    return transport_result(model, plan, guarantee=factor, bound=bound, stopped=stopped, stats=stats, owned=True)


def _load_kernels(cost_args) -> None:
    """Load every kernel of the dense route (from Numba's cache, or compile it) for the argument
    types of this solve, without running any: seconds the first time in a process, microseconds
    after. Run through :func:`~solvopt.transport.stopping.run_abandonable`, so a stop during a
    compilation is seen within 50 ms (as the two-hop graph's kernels are loaded)."""
    from numba import typeof

    from . import kernels_dense as kd
    C = cost_args[5]
    ints, floats, flag = np.zeros(1, np.int64), np.zeros(1), np.zeros(1, np.int8)
    calls = ((kd.dense_costs, cost_args), (kd.dense_costs_serial, cost_args),
             (kd.auction_phase, (C, floats, 0.5, ints, ints, flag, 1)), (kd.assigned_cost, (C, ints)),
             (kd.double_c_transform, (C, floats, floats, floats)))
    for kernel, args in calls:
        if hasattr(kernel, "compile"):           # (a stand-in without one, in tests, has nothing to load)
            kernel.compile(tuple(typeof(arg) for arg in args))


def _run_phase(kernel, args, max_bids, stop):
    """``kernel(*args, flag, max_bids)`` (an auction phase, which releases the GIL) in a worker
    thread, setting the flag when ``stop()`` turns true while it runs; the main thread keeps running
    Python, so Ctrl-C is seen at once. A phase that finished is kept whatever ``stop`` says after."""
    from .kernels_dense import STOPPED
    if stop():
        return 0, STOPPED
    flag = np.zeros(1, dtype=np.int8)
    out: list = []
    failed: list = []

    def work() -> None:
        try:
            out.append(kernel(*args, flag, max_bids))
        except BaseException as error:       # re-raised below
            failed.append(error)
    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(POLL_SECONDS)
        if worker.is_alive() and flag[0] == 0 and stop():
            flag[0] = 1
    if failed:
        raise failed[0]
    return out[0]


def _certified_value(C, price) -> float:
    """A certified lower bound on the optimum's mean cost (the costs of ``C``, per unit of mass):
    the double c-transform of the prices less a rounding margin (see the module docstring and
    :mod:`solvopt.transport.dual`: a pair with C_ij > S = max|u| + max|v| cannot be violated, the
    others by a few units in the last place of C_ij + S; the margin also covers the sums)."""
    from .kernels_dense import double_c_transform
    n, m = C.shape
    u, v = np.empty(n), np.empty(m)
    double_c_transform(C, price, u, v)
    if not (np.all(np.isfinite(u)) and np.all(np.isfinite(v))):
        return 0.0
    spread = float(np.abs(u).max()) + float(np.abs(v).max())
    cmax = 1.0                                  # costs are (d / D)^p with D >= every distance
    terms = min(cmax, 2.0 * spread) + spread
    margin = (MARGIN_ULPS + n + m) * EPS * terms
    value = float(u.mean() + v.mean()) - margin
    return value if math.isfinite(value) else 0.0
