"""bnb on several cores: one search tree shared out between threads running the nogil kernel.

:class:`ParallelSearch` is a drop-in for :class:`~solvopt.khc.bnb_kernel.DollSearch` (the same ``run``,
``open_nodes``, ``bound``, ``nodes``, ``incumbent`` and ``incumbent_assignment``) that searches
one problem with ``threads`` workers:

1. **Frontier.** A first search expands the tree down to a split depth and records the nodes
   there instead of expanding them (the depth grows until there are FRONTIER_PER_THREAD nodes
   per thread, or the count stops growing from one depth to the next, or the tree ends). They go
   into a queue ordered by bound: the workers take the most promising subtree first (best-first at
   the top levels, depth-first below).
2. **Workers.** Each ``run`` call is a window: ``threads`` Python threads each take a subtree
   (a paused search first, else the queue's best), run the kernel on it in chunks (the kernel
   releases the GIL, so the threads run at once) until the subtree is done, the window's node
   budget or time is spent, or a stop is requested, and then take the next. At the end of the
   window every thread has returned: between windows nothing runs, so the bound, the node
   count and the incumbent read then are exact, and the caller checks its limits there.
3. **Work sharing.** When fewer subtrees are queued than threads, paused searches (the largest
   first) hand the open children of their shallowest open level to the queue
   (:meth:`~solvopt.khc.bnb_kernel.DollSearch.split_open`), so no thread idles behind a long subtree
   for more than a window.

**The shared incumbent.** Every search prunes against min(its own incumbent, ``shared[0]``),
one float that the kernels read and write without a lock. The kernels write it only with the
cost of a complete assignment they hold in their own ``best`` (the 8-byte store is atomic on the
machines Numba targets: a reader sees an old or a new value, never a torn one). A race can lose
an improvement (thread A reads 10, B writes 8, A writes 9): then ``shared[0]`` is 9, the cost of a
real assignment, so pruning is weaker but still valid: a node is pruned only when its bound is
within the gap of a solution that exists. Every window end restores ``shared[0]`` = the best
cost found, and the answer is the best of the searches' own incumbents (each exact for its own
assignment), so the race costs only pruning, never correctness.

**The bound of a stopped run** is the minimum of: the incumbent; the bounds of the queued
subtrees (the frontier nodes not started and the children handed over); each paused search's
own bound (its open children and its nodes pruned within the gap); and the smallest bound of any
node pruned within the gap so far (by the frontier search, by a finished subtree, or taken from
the queue already pruned). Every completion of the problem lies below exactly one frontier node,
so it is in a finished subtree (found, or cut off by a pruned node's bound), a paused one, or a
queued one: each part is bounded by its term. A finished search adds no term but its pruned
nodes: what it explored fully is at least the incumbent.
"""
from __future__ import annotations

import heapq
import itertools
import math
import os
import threading
import time

import numpy as np

from ..core.interrupt import stop_requested
from .bnb_kernel import DollSearch, own_cache_lines

FRONTIER_PER_THREAD = 16   # subtrees in the first queue per thread (more: better balance, more replays)
WINDOW_SECONDS = 0.25      # a run call returns after at most about this (the caller checks its limits)
CHUNK_NODES = (1_000, 1_000_000)  # nodes per kernel call within a window: first, largest ...
CHUNK_SECONDS = 0.02       # ... grown while a call takes less than this (a window ends between calls)
MAX_THREADS = 8            # threads=None: the cores this process may use, at most this many


def default_threads() -> int:
    """The cores this process may run on (its affinity mask), capped at MAX_THREADS and at
    Numba's thread count (NUMBA_NUM_THREADS: 1 in the Dask workers of solvopt.core.tasks, which
    run one task per core already)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not every platform has affinity masks
        cores = os.cpu_count() or 1
    from numba import config
    # NUMBA_NUM_THREADS is set at import from the environment: not in numba's stubs
    return max(1, min(cores, MAX_THREADS, int(config.NUMBA_NUM_THREADS)))  # type: ignore[attr-defined]


class ParallelSearch:
    """One branch-and-bound over the points X searched by ``threads`` workers (see the module)."""

    def __init__(self, X: np.ndarray, R: np.ndarray, k: int, incumbent: float, incumbent_assignment: np.ndarray,
                 dynamic: bool = False, charge: bool = False, threads: int = 2, ends: np.ndarray | None = None):
        self.X = np.ascontiguousarray(X, dtype=np.float64)
        self.R = np.ascontiguousarray(R, dtype=np.float64)
        self.k = int(k)
        self.dynamic, self.charge = dynamic, charge
        self.ends = ends  # the dynamic order's candidate limits (DollSearch.ends)
        self.threads = max(1, int(threads))
        self.incumbent = float(incumbent)
        self.incumbent_assignment = np.array(incumbent_assignment, dtype=np.int64)
        self.shared = own_cache_lines([self.incumbent])
        self.queue: list[tuple[float, int, np.ndarray]] = []  # (bound, tie-break, path): a heap
        self._ticket = itertools.count()
        self.paused: list[DollSearch] = []    # subtrees started and not finished
        self.pruned = math.inf                # smallest bound of a node pruned within the gap
        self.finished_nodes = 0               # nodes of the finished searches (the frontier's too)
        self.started = False
        self._lock = threading.Lock()

    # --- the DollSearch interface ------------------------------------------------------------
    @property
    def nodes(self) -> int:
        return self.finished_nodes + sum(s.nodes for s in self.paused)

    def open_nodes(self) -> tuple[int, float]:
        """Open nodes (queued subtrees and the paused searches' open children) and their smallest bound."""
        if not self.started:
            return 1, float(self.R[1]) if len(self.R) > 1 else 0.0
        count = len(self.queue)
        smallest = self.queue[0][0] if self.queue else math.inf
        for search in self.paused:
            c, s = search.open_nodes()
            count += c
            smallest = min(smallest, s)
        return count, smallest

    def bound(self) -> float:
        """A valid lower bound now (between windows): see the module docstring."""
        _, smallest_open = self.open_nodes()
        paused = min((float(s.arrays["scal"][1]) for s in self.paused), default=math.inf)
        return min(self.incumbent, smallest_open, paused, self.pruned)

    def run(self, max_nodes: int, rel_gap: float, abs_gap: float) -> bool:
        """Search one window of at most ``max_nodes`` nodes (all threads together) and about
        WINDOW_SECONDS; True when the whole tree is searched."""
        if not self.started:
            self._make_frontier(rel_gap, abs_gap)
            self.started = True
            if self._complete():
                return True
        self._share_work()
        window_end = time.perf_counter() + WINDOW_SECONDS
        budget = [int(max_nodes)]  # nodes left in this window, taken by the workers under the lock
        errors: list[BaseException] = []
        workers = [threading.Thread(target=self._worker, args=(window_end, budget, rel_gap, abs_gap, errors),
                                    name=f"khc-bnb-{i}", daemon=True) for i in range(self.threads)]
        for w in workers:
            w.start()
        for w in workers:
            while w.is_alive():  # a timed join keeps the main thread responsive to signals (Ctrl-C)
                w.join(0.05)
        self.shared[0] = min(self.shared[0], self.incumbent)  # undo a lost race (see the module)
        if errors:
            raise errors[0]
        return self._complete()

    # --- the pieces ------------------------------------------------------------------------------
    def _complete(self) -> bool:
        return not self.queue and not self.paused

    def _search(self, path: np.ndarray | None, **kw) -> DollSearch:
        return DollSearch(self.X, self.R, self.k, self.incumbent, self.incumbent_assignment, dynamic=self.dynamic,
                          charge=self.charge, shared=self.shared, path=path, ends=self.ends, **kw)

    def _make_frontier(self, rel_gap: float, abs_gap: float) -> None:
        """Expand the tree to the shallowest depth with FRONTIER_PER_THREAD nodes per thread
        (each try is a fresh search to that depth: the total is a few times the frontier)."""
        M = len(self.X)
        target = FRONTIER_PER_THREAD * self.threads
        capacity = self.k * target + 1  # one level more multiplies the count by at most k
        depth, previous = 2, 0  # depth 2 holds at most 2 nodes (point 0 opens cluster 0)
        while True:
            search = self._search(None, split_depth=depth, front_capacity=capacity)
            search.run(2 ** 62, rel_gap, abs_gap)  # about k * capacity nodes at most
            self.finished_nodes += search.nodes
            self._take_incumbent(search)
            if search.frontier_overflowed():  # cannot happen: the previous depth had < target nodes
                raise AssertionError(f"frontier over {capacity} nodes at depth {depth}")
            nodes = search.frontier()
            # enough; or the tree ends; or it stopped widening (pruning keeps it thin: each try
            # re-searches the levels above, so going on would cost depth^2 nodes, and the work
            # sharing splits a long subtree later anyway)
            if len(nodes) >= target or depth >= M - 1 or len(nodes) <= previous:
                break
            depth, previous = depth + 1, len(nodes)
        # the last try's pruned nodes are every node cut above the frontier (earlier tries cut a subset)
        self.pruned = min(self.pruned, float(search.arrays["scal"][1]))
        for b, path in nodes:
            heapq.heappush(self.queue, (b, next(self._ticket), path))

    def _take_incumbent(self, search: DollSearch) -> None:
        """Keep ``search``'s incumbent when it beats ours (call under the lock or between windows)."""
        if search.incumbent < self.incumbent:
            self.incumbent = search.incumbent
            self.incumbent_assignment = search.incumbent_assignment
        if self.incumbent < self.shared[0]:
            self.shared[0] = self.incumbent

    def _share_work(self) -> None:
        """Keep at least ``threads`` subtrees queued: while fewer, paused searches (the largest
        first) hand over the open children of their shallowest open level."""
        for search in sorted(self.paused, key=lambda s: -s.nodes):
            if len(self.queue) >= self.threads:
                break
            for b, path in search.split_open():
                heapq.heappush(self.queue, (b, next(self._ticket), path))

    def _next(self, rel_gap: float, abs_gap: float) -> DollSearch | None:
        """The next subtree to work on (under the lock): a paused one, else the queue's best."""
        if self.paused:
            return self.paused.pop()
        while self.queue:
            b, _, path = heapq.heappop(self.queue)
            ub = min(self.incumbent, float(self.shared[0]))
            if b >= ub - max(rel_gap * abs(ub), abs_gap):  # the kernel's own pruning rule
                self.pruned = min(self.pruned, b)
                continue
            return self._search(path)
        return None

    def _worker(self, window_end: float, budget: list[int], rel_gap: float, abs_gap: float,
                errors: list[BaseException]) -> None:
        try:
            chunk = CHUNK_NODES[0]
            while time.perf_counter() < window_end and not stop_requested():
                with self._lock:  # a search is taken only with nodes to run it: a queued subtree keeps
                    take = min(chunk, budget[0])  # its bound until it has run (its fresh root's is R[1])
                    if take <= 0:
                        return
                    search = self._next(rel_gap, abs_gap)
                    if search is None:
                        return
                    budget[0] -= take
                while True:
                    started = time.perf_counter()
                    done = search.run(take, rel_gap, abs_gap)
                    took = time.perf_counter() - started
                    if took < CHUNK_SECONDS:
                        chunk = min(2 * chunk, CHUNK_NODES[1])
                    elif took > 4 * CHUNK_SECONDS:
                        chunk = max(chunk // 2, CHUNK_NODES[0])
                    if done or time.perf_counter() >= window_end or stop_requested():
                        break
                    with self._lock:
                        take = min(chunk, budget[0])
                        budget[0] -= take
                    if take <= 0:
                        break
                with self._lock:
                    self._take_incumbent(search)
                    if done:
                        self.finished_nodes += search.nodes
                        self.pruned = min(self.pruned, float(search.arrays["scal"][1]))
                    else:
                        self.paused.append(search)
                if not done:
                    return  # the window is over (time, budget or a stop)
        except BaseException as exc:  # re-raised by run() in the calling thread
            errors.append(exc)
