"""Exact k-HC2 by branch-and-bound over assignments: the driver.

The search assigns the points one by one, in a fixed order, to clusters; a point may open at
most one new cluster and clusters are numbered in order of first use (symmetry breaking). A
node at depth d has clusters A_1..A_k of the first d points and the suffix U_d = points d..m-1
still unassigned. Its lower bound is

    sum_j lambda_min(A_j)  +  R[d]

where lambda_min(A) is the smallest eigenvalue of the centred scatter of A (the optimal cost
of cluster A) and R[d] is a lower bound on OPT_k(U_d), the k-HC2 optimum of the suffix alone.
Valid because, for the planes P_1..P_k of any completion, the assigned points cost at least
sum_j lambda_min(A_j) (the optimal plane of A_j is the best one for A_j, and adding points to
a cluster never lowers its smallest eigenvalue) and the suffix points cost at least
OPT_k(U_d) (the completion's planes are k planes for the suffix, each point paying at least its
distance to its nearest one). The two parts are over disjoint points, so they add. (The
tempting "sum over unassigned points of their cheapest single-point increase" is NOT valid:
increases are not superadditive; two points on one far line cost less together than apart.)

Without dolls R = 0 (the plain bound). With ``suffix_bounds=True``, R is computed by "Russian
doll search": the suffixes are solved from the shortest upwards by the same search, each using
the R of the shorter ones (suffixes of at most k n points have R = 0: k hyperplanes pass through
any k n points); the last doll is the whole problem. On the shared instances and on random ones
with m up to 60 the dolls cost more than they prune (benchmarks/khc_bnb.py measures both), but
they give a stopped run a real bound: the default ``"auto"`` searches without them for half of
a time limit and spends the rest on them when the search has not finished. The dynamic order
picks its points anywhere, so its dolls are fewer and larger: the split dolls of
:func:`split_starts` (on and auto, from SPLIT_FROM points on), with ``R[d]`` bounding the points
from ``ends[d]`` on.

``charge_bound=True`` adds :func:`solvopt.khc.bounds.charge_bound` at every node: the unassigned
points charged against the clusters' planes with the clusters' excess shared between them
(proof there); it removes 40-80% of the nodes (m = 40, k = 3) but costs O(m k) per node, so it
is opt-in. The dynamic order (the default from DYNAMIC_FROM points on) picks the branching point
per node by the product rule over bounds.py's cheap estimates of each point's placements, and
bounds the node by the joint increase of its hardest points (the kernel's picker).

The search itself is the Numba kernel of :mod:`solvopt.khc.bnb_kernel` (:class:`DollSearch`);
this module orders the points, finds the first incumbents, chains the dolls and checks the
limits between kernel batches. With ``threads`` > 1 the same kernel searches subtrees of one
tree on several threads (:mod:`solvopt.khc.parallel`).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..core.errors import ModelError
from ..core.interrupt import stop_reason, stop_requested
from ..core.progress import Progress
from ..core.result import Termination
from .bnb_kernel import DollSearch
from .geometry import assignment_cost, fit_planes, point_distances
from .heuristics import kplane, local_search
from .parallel import ParallelSearch, default_threads

BATCH_NODES = (10_000, 1_000_000)  # nodes per kernel call between time checks: first, largest
BATCH_POINT_NODES = 200_000        # ... the first batch at most this / m nodes (a node of the charge
                                   # or the dynamic order costs O(m k): 10^4 of them took > 1 s at m = 1735)
BATCH_SECONDS = 0.2                # the batch grows while a call takes less than this
SUFFIX_REL_GAP = 1e-10         # the dolls are solved (almost) exactly: their bounds feed the next
ORDERS = ("auto", "farthest", "dynamic", "input", "margin")
DYNAMIC_FROM = 31                # order "auto": dynamic from this many points on, farthest below
PARALLEL_FROM = 31               # threads=None: the cores available from this many points on, 1 below
SPLIT_FROM = 70                  # dynamic order with dolls: a doll of this many points or more is split ...
SPLIT_SHARE = 0.30               # ... into its first 30%, searched first, and the rest, solved before (split_starts)


# --- orders and incumbents --------------------------------------------------------------------
def branching_order(points: np.ndarray, k: int, how: str, assignment: np.ndarray | None = None) -> np.ndarray:
    """The order in which points are branched on (the dolls are its suffixes).

    ``farthest``: farthest-first traversal from the point farthest from the centroid (spread
    points early make clusters expensive early); ``dynamic``: per node (see ``_pick_point``),
    ties and the first levels in the farthest order; ``margin``: most ambiguous points last, by the
    gap between their nearest and second nearest plane of ``assignment``; ``input``: as given.
    """
    m = points.shape[0]
    if how == "input" or m <= 1:
        return np.arange(m)
    if how in ("farthest", "dynamic"):
        centred = points - points.mean(axis=0)
        first = int(np.argmax((centred ** 2).sum(axis=1)))
        order = [first]
        dist = ((points - points[first]) ** 2).sum(axis=1)
        for _ in range(m - 1):
            dist[order[-1]] = -1.0
            nxt = int(np.argmax(dist))
            order.append(nxt)
            dist = np.minimum(dist, ((points - points[nxt]) ** 2).sum(axis=1))
        return np.array(order, dtype=np.int64)
    if how == "margin":
        normals, offsets, _ = fit_planes(points, assignment, k)
        d = np.sort(point_distances(points, normals, offsets), axis=1)
        margin = d[:, 1] - d[:, 0] if k > 1 else d[:, 0]
        return np.argsort(-margin, kind="stable").astype(np.int64)
    raise ValueError(f"unknown branching order {how!r}; choose from {', '.join(ORDERS)}")


def _relabel(labels: np.ndarray) -> np.ndarray:
    """Number clusters in order of first use (the search's symmetry-broken form)."""
    mapping: dict[int, int] = {}
    out = np.empty_like(labels)
    for i, lab in enumerate(labels):
        out[i] = mapping.setdefault(int(lab), len(mapping))
    return out


def _doll_incumbent(X: np.ndarray, k: int, previous: np.ndarray | None, seed: int,
                    deadline: float | None = None, thorough: bool = False) -> tuple[np.ndarray, float]:
    """A good assignment of a doll: the previous doll's optimum (of its last points) extended by
    the new points, polished, or k-plane's best.

    One new point (the static order's dolls) tries it in every cluster; several (the split
    dolls) go to their nearest planes of the previous optimum. ``thorough``: k-plane with
    :func:`first_incumbent`'s restarts instead of 4 (a split doll is one long search: an
    incumbent above its optimum made the 47-point doll of m = 70 need 5.0 instead of 2.7
    million nodes). Both the polish and the k-plane restarts stop at ``deadline`` (or a stop
    request) with their best so far: with a thousand dolls of a thousand points this was most
    of a run's time."""
    candidates = []
    new = 0 if previous is None else len(X) - len(previous)
    if previous is not None and new == 1:
        for j in range(k):
            labels = local_search(X, np.concatenate(([j], previous)), k, deadline=deadline)
            candidates.append((assignment_cost(X, labels, k), labels))
    elif previous is not None and new > 1:
        normals, offsets, _ = fit_planes(X[new:], previous, k)
        nearest = np.argmin(point_distances(X[:new], normals, offsets), axis=1)
        labels = local_search(X, np.concatenate((nearest, previous)), k, deadline=deadline)
        candidates.append((assignment_cost(X, labels, k), labels))
    left = None if deadline is None else max(deadline - time.perf_counter(), 0.0)
    if thorough:
        labels, cost = first_incumbent(X, k, 10, None, seed, left)
    else:
        labels, cost = kplane(X, k, restarts=4, seed=seed, time_limit=left)
    candidates.append((cost, labels))
    cost, labels = min(candidates, key=lambda c: c[0])
    return _relabel(labels), cost


@dataclass
class BnbOutcome:
    assignment: np.ndarray
    objective: float
    bound: float
    complete: bool          # the whole problem was searched to the gap
    stopped_by: Termination | None  # TIME_LIMIT / ITERATION_LIMIT (the node limit) / INTERRUPTED / None
    nodes: int
    dolls_solved: int
    heuristic_objective: float = math.nan  # the first incumbent's cost (k-plane)
    suffix_bounds: bool = False            # whether Russian dolls were searched (auto: after half the time)
    order: str = "farthest"                # the branching order used (order "auto" resolved)
    threads: int = 1                       # the threads that searched (1: the serial search)
    search_seconds: float = 0.0            # wall time after the first incumbent (the tree search)


EXTRA_RESTARTS_FROM = 20      # extra_restarts=None: m - 20 more restarts above 20 points ...
EXTRA_RESTARTS_TIME = 0.1     # ... within this share of the time limit


def first_incumbent(pts: np.ndarray, k: int, restarts: int, extra_restarts: int | None, seed: int,
                    time_limit: float | None) -> tuple[np.ndarray, float]:
    """bnb's first incumbent: k-plane with ``restarts`` (0: a trivial assignment), then more.

    The first run is exactly the "heuristic" method's with the same restarts and seed, so the
    exact method never starts from worse than ``solve("heuristic")``. Then ``extra_restarts``
    more restarts start from its best (another seed); None sizes them for the problem: m - 20
    above 20 points, within EXTRA_RESTARTS_TIME of a time limit (on hard instances the
    incumbent's quality matters more than anything for a stopped run).
    """
    m, n = pts.shape
    if restarts == 0:  # a trivial start: n points per cluster in input order
        labels = np.minimum(np.arange(m) // max(n, 1), k - 1).astype(np.int64)
        return labels, assignment_cost(pts, labels, k)
    labels, cost = kplane(pts, k, restarts=restarts, seed=seed, time_limit=time_limit)
    budget = None
    if extra_restarts is None:
        extra_restarts = max(0, m - EXTRA_RESTARTS_FROM)
        budget = None if time_limit is None else EXTRA_RESTARTS_TIME * time_limit
    if extra_restarts > 0 and not stop_requested():
        more, more_cost = kplane(pts, k, restarts=extra_restarts, seed=seed + 1, init=labels, time_limit=budget)
        if more_cost < cost:
            labels, cost = more, more_cost
    return labels, cost


def _resolve_suffix_bounds(suffix_bounds, order: str, m: int, time_limit: float | None) -> bool | str:
    """True / False, or "auto": the dynamic order's split dolls (from SPLIT_FROM points on) or no
    dolls, for half the time limit, then dolls in the static order for a bound."""
    if suffix_bounds == "auto":
        if time_limit is None:
            return order == "dynamic" and m >= SPLIT_FROM
        return "auto"
    return bool(suffix_bounds)


def split_starts(m: int) -> list[int]:
    """The dynamic order's dolls: starts s_r > ... > s_1 > 0 of the suffixes X[s:] searched in turn.

    A doll of at least SPLIT_FROM points is split after its first SPLIT_SHARE of points: its
    suffix is the next doll, solved first, and its search picks only among the first part until
    that part is assigned, each node's bound adding the suffix's optimum (R[d] for d below the
    split); then every point is a candidate and R is 0. Valid because the suffix's points cost
    at least its k-HC2 optimum under any k planes, and they are disjoint from the points the
    node's clusters and joint increase count. Measured on uniform n = 3, k = 3 (one doll each,
    benchmarks/results/khc_bnb_scale.md section 8): m = 70 and 80 need 1.8 and 2.1-2.4 times
    fewer nodes in all than the unsplit search; m = 60 about the same (0.9-1.16), and the 67-point
    doll of m = 100 slower split than whole (over 88 s against 63 s), hence SPLIT_FROM.
    The split raises the bound where the tree is widest (depth ~m / 3); the suffix doll is a
    smaller problem, itself split when large enough. The share (section 9, two threads, seed 431
    unless said, before section 10's cheaper nodes): 30% against a third took 380 against 468 s
    at m = 100, 121 against 137 s at m = 90 (seed 432: both over 400 s), 25 s either way at
    m = 80 (seed 432: 128 against 157 s), 8.2 against 5.5 s at m = 70; 27% took over 700 s at
    m = 100, and 25% or 40% 2.5 times a third's time at m = 80. After section 10 a third still
    did not prove m = 100 within 300 s (30%: 287 s)."""
    starts, s = [0], 0
    while m - s >= SPLIT_FROM:
        s += int(round((m - s) * SPLIT_SHARE))
        starts.append(s)
    return starts[::-1]


@dataclass
class _Chain:
    """One search over the dolls X[s:] for s in ``starts`` (the last start must be 0)."""

    X: np.ndarray
    k: int
    R: np.ndarray
    incumbent: np.ndarray   # an assignment of X (first-use labels) and its cost
    cost: float
    rel_gap: float
    abs_gap: float
    order: str
    charge: bool
    seed: int
    progress: Progress
    cost_unit: float
    threads: int = 1        # > 1: each search is a parallel.ParallelSearch on that many threads
    split: bool = False     # the dynamic order's split dolls (split_starts), else every suffix in a static order
    nodes: int = 0
    dolls: int = 0

    def run(self, starts, deadline: float | None, node_limit: int | None) -> tuple[float, bool, Termination | None]:
        """Search the dolls in turn; (bound of the whole problem, complete, stopped_by).

        A stopped doll s leaves R[s] = its bound, a lower bound of the whole problem too (the
        k-HC2 optimum of a subset is at most that of the set)."""
        m, n = self.X.shape
        k = self.k
        dolls = len(starts) > 1 or starts[0] > 0
        previous = None
        solved_bound = 0.0  # the bound of the largest doll solved so far (0: none yet)
        if dolls and not self.split:  # the trivial doll's optimum (at most k n points): n points per cluster
            previous = np.minimum(np.arange(m - starts[0] - 1) // max(n, 1), k - 1).astype(np.int64)
        inner = None  # split dolls: the start of the doll solved last (the next one's suffix)
        for s in starts:
            if dolls:  # a doll that finishes within its first kernel batch never reaches _drive's checks
                stopped = stop_reason(deadline)
                if stopped is not None:
                    return solved_bound, False, stopped
            Xs = self.X[s:]
            if s == 0:
                inc_labels, inc_cost = self.incumbent, self.cost
                if previous is not None:
                    ext, ext_cost = _doll_incumbent(Xs, k, previous, self.seed, deadline)
                    if ext_cost < inc_cost:
                        inc_labels, inc_cost = ext, ext_cost
                gap_rel, gap_abs = self.rel_gap, self.abs_gap
            else:
                inc_labels, inc_cost = _doll_incumbent(Xs, k, previous, self.seed, deadline, thorough=self.split)
                gap_rel, gap_abs = SUFFIX_REL_GAP, 0.0
            R, ends = self.R[s:], None
            if self.split:  # picks among X[s:inner] while it lasts, its nodes' bounds adding the inner doll's
                R, ends = np.zeros(m - s + 1), np.full(m - s + 1, m - s, dtype=np.int64)
                if inner is not None:
                    R[:inner - s] = self.R[inner]
                    ends[:inner - s] = inner - s
            search: ParallelSearch | DollSearch
            if self.threads > 1:
                search = ParallelSearch(Xs, R, k, inc_cost, inc_labels, dynamic=self.order == "dynamic",
                                        charge=self.charge, threads=self.threads, ends=ends)
            else:
                search = DollSearch(Xs, R, k, inc_cost, inc_labels, dynamic=self.order == "dynamic",
                                    charge=self.charge, ends=ends)
            stopped = self._drive(search, s, dolls, gap_rel, gap_abs, deadline, node_limit)
            self.nodes += search.nodes
            self.dolls += 1 if stopped is None else 0
            self.R[s] = search.bound()
            previous = search.incumbent_assignment
            inner = s
            if s == 0:
                self.incumbent, self.cost = search.incumbent_assignment, search.incumbent
            if stopped is not None or s == 0:  # a doll's bound and a smaller doll's both bound the whole
                return max(self.R[s], solved_bound), stopped is None and s == 0, stopped
            solved_bound = self.R[s]
        raise AssertionError("the last doll is the whole problem")

    def _drive(self, search: DollSearch | ParallelSearch, s: int, dolls: bool, gap_rel: float, gap_abs: float,
               deadline: float | None, node_limit: int | None) -> Termination | None:
        """Run one doll's kernel in batches until it is done or stopped; the stop reason."""
        m = len(self.X)
        batch = max(1, min(BATCH_NODES[0], BATCH_POINT_NODES // m))
        label = f"doll {m - s}/{m} " if dolls else ""
        while True:
            budget = batch
            if node_limit is not None:
                budget = min(budget, node_limit - self.nodes - search.nodes)
            call_start = time.perf_counter()
            done = search.run(max(budget, 0), gap_rel, gap_abs) if budget > 0 else False
            if time.perf_counter() - call_start < BATCH_SECONDS:
                batch = min(2 * batch, BATCH_NODES[1])
            open_count, _ = search.open_nodes()
            bound_now = search.bound()
            gap_now = (search.incumbent - bound_now) / max(abs(search.incumbent), 1e-10)
            self.progress(f"bnb {label}nodes {self.nodes + search.nodes} open {open_count} "
                          f"incumbent {search.incumbent * self.cost_unit:.8g} bound {bound_now * self.cost_unit:.8g} "
                          f"gap {100 * gap_now:.3g}%", force=done and s == 0)
            if done:
                return None
            if node_limit is not None and self.nodes + search.nodes >= node_limit and not stop_requested():
                return Termination.ITERATION_LIMIT
            stopped = stop_reason(deadline)
            if stopped is not None:
                return stopped


def solve_bnb(points, k: int, time_limit: float | None = None, node_limit: int | None = None,
              rel_gap: float = 1e-6, abs_gap: float = 0.0, restarts: int = 10, extra_restarts: int | None = None,
              seed: int = 0,
              order: str = "auto", progress: Progress | None = None,
              suffix_bounds: bool | str = "auto", charge_bound: bool = False, cost_unit: float = 1.0,
              threads: int | None = 1) -> BnbOutcome:
    """Solve k-HC2 on ``points`` exactly (to the gap) by branch-and-bound.

    ``suffix_bounds=True`` adds the Russian-doll suffix bounds R (see the module docstring);
    ``"auto"`` (default) searches without them for the first half of a time limit and, if that
    did not finish, spends the second half on the dolls (in the farthest order when ``order``
    is dynamic), so that a stopped run reports the dolls' bound (the depth-first search's open
    nodes near the root bound next to nothing); without a time limit "auto" is False.
    ``charge_bound=True`` adds the unassigned-point charge of :mod:`solvopt.khc.bounds` (static orders).
    ``restarts``, ``extra_restarts``: see :func:`first_incumbent`. ``order``: see :func:`branching_order`;
    "auto" is "dynamic" from DYNAMIC_FROM points on (unless ``suffix_bounds`` or ``charge_bound`` is
    True) (measured: far fewer nodes and less time at m >= 40, see
    benchmarks/results/khc_bnb_scale.md), "farthest" below.
    Between kernel batches (at most ~0.4 s apart) and before every doll the search checks the time
    and node limits and a stop request (Ctrl-C, :func:`~solvopt.core.interrupt.request_stop`): a stopped search
    returns its incumbent and a valid bound with ``stopped_by`` TIME_LIMIT, ITERATION_LIMIT (nodes) or
    INTERRUPTED.
    ``cost_unit`` multiplies the costs shown in progress lines (the caller's units).
    ``threads`` > 1 shares each search out between that many threads (:mod:`solvopt.khc.parallel`:
    the same optimum to the gap, valid bounds when stopped, node counts that vary from run to
    run); 1 is the serial search; None takes the cores available (capped) from PARALLEL_FROM
    points on and 1 below.
    """
    pts = np.asarray(points, dtype=np.float64)
    m, n = pts.shape
    if order == "auto":  # small problems: the static order's kernel compiles faster and needs no picks;
        # suffix_bounds=True from the start means every suffix's doll, and the charge: a static order
        static = suffix_bounds is True or charge_bound
        order = "dynamic" if m >= DYNAMIC_FROM and not static else "farthest"
    if order == "dynamic" and charge_bound:
        raise ModelError("the charge bound needs a static branching order; order='dynamic' cannot use it")
    mode = _resolve_suffix_bounds(suffix_bounds, order, m, time_limit)
    if threads is None:
        threads = default_threads() if m >= PARALLEL_FROM else 1
    start = time.perf_counter()
    deadline = None if time_limit is None else start + time_limit
    progress = progress or Progress(enabled=False)

    labels, cost = first_incumbent(pts, k, restarts, extra_restarts, seed, time_limit)
    search_start = time.perf_counter()
    perm = branching_order(pts, k, order, labels)
    X = np.ascontiguousarray(pts[perm])
    first_doll = m - min(m, k * n) - 1  # suffixes of at most k n points cost 0
    if first_doll < 0:  # m <= k n: every cluster holds at most n points, cost 0
        assignment = np.empty(m, dtype=np.int64)
        assignment[perm] = np.minimum(np.arange(m) // max(n, 1), k - 1)
        return BnbOutcome(assignment, assignment_cost(pts, assignment, k), 0.0, True, None, 0, 0, cost, False, order)
    chain = _Chain(X, k, np.zeros(m + 1), _relabel(labels[perm]), cost, rel_gap, abs_gap, order, charge_bound,
                   seed, progress, cost_unit, threads=threads)
    dolls = list(range(first_doll, -1, -1))
    split = split_starts(m) if order == "dynamic" else [0]
    chain.split = order == "dynamic"
    if mode is True:
        bound, complete, stopped = chain.run(split if order == "dynamic" else dolls, deadline, node_limit)
    else:
        half = None if mode is False or time_limit is None else start + 0.5 * time_limit  # "auto": a limit
        bound, complete, stopped = chain.run(split if mode == "auto" else [0], half if half is not None else deadline,
                                             node_limit)
        if (mode == "auto" and stopped is Termination.TIME_LIMIT and deadline is not None
                and time.perf_counter() < deadline):
            plain_bound = bound
            chain.R[:] = 0.0
            chain.split = False
            if order == "dynamic":  # the dolls are suffixes of a static order: X is in the farthest order
                chain.order = "farthest"
            bound, complete, stopped = chain.run(dolls, deadline, node_limit)
            bound = max(bound, plain_bound)
            mode = True
        elif mode == "auto" and len(split) > 1:
            mode = True  # the split dolls were searched
    assignment = np.empty(m, dtype=np.int64)
    assignment[perm] = chain.incumbent
    objective = assignment_cost(pts, assignment, k)
    return BnbOutcome(assignment, objective, min(bound, objective), complete, stopped, chain.nodes, chain.dolls,
                      cost, mode is True, order, threads, time.perf_counter() - search_start)
