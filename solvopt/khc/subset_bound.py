"""Certified k-HC2 lower bounds at scale from exact solves of the groups of a partition.

For any partition of the points into groups S_1..S_r,

    OPT_k(all points)  >=  sum_r OPT_k(S_r),

because the k optimal planes of all points, restricted to a group, are k planes for that group
(each point still pays at least its distance to the nearest one). So exact branch-and-bound
solves of small groups (:func:`solvopt.khc.bnb.solve_bnb`) add up to a valid bound on a point set
far too large to solve, and the groups are independent tasks (:func:`solvopt.core.tasks.map_tasks`:
in this process, or on a dask cluster). Only certified values enter the sum: a group's proven
optimum, or the proven lower bound of a bnb run stopped by its time limit (still valid); a
group never solved counts 0. Every partition gives a bound, so the best of several is kept.

**Which groups.** A group's optimum is its own best k planes, so the bound is strong when a
group cannot do much better than the global planes. Spatially local groups fail that: k planes
fit a small patch almost perfectly (measured: a bound of 1-40% of the optimum). Groups that
sample the whole point set evenly behave like the whole (the planes must cover every cluster)
and lose only what a sample of g points overfits, about k n of its g degrees of freedom on
noisy planes. So each group here is a *stratified sample*: the points are put in a spatial
order (Morton order of a grid; the first principal component in more than 8 dimensions), cut
into consecutive blocks of r points, and each block deals one point to every group in a random
order. Bigger groups overfit less, and bnb's time grows fast with the group size, so the size is
calibrated on trial groups (:func:`calibrate_group_size`): to what bnb proves in about
``group_seconds``, or under a time limit, to the largest groups whose partition fits in it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..core.errors import ModelError
from ..core.interrupt import stop_reason
from ..core.result import Termination
from ..core.tasks import map_tasks

GROUP_RESTARTS = 5        # k-plane restarts for each group's first incumbent (no extra ones: measured
                          # 9x slower on groups of 300 planted points, no faster on uniform ones).
                          # No suffix bounds either: their "auto" phase ran 129 s past a 2 s limit on
                          # a group of 1735 points (the plain search proved it in 2.4 s)
GROWTH = 1.25             # group size growth per calibration step
CALIBRATION_TRIALS = 2    # groups solved per calibration step (the slower one counts)
CALIBRATION_SHARE = 0.2   # of the time left: the most the calibration may take
MAX_GROUP_SIZE = 2000     # calibration never goes beyond this many points per group
MORTON_BITS = 60          # bits of a Morton code (split among the dimensions)
MORTON_MAX_DIM = 8        # beyond this, order along the first principal component


@dataclass(frozen=True)
class GroupTask:
    """One group's exact solve: picklable, so it can run on a dask worker.

    ``wall_deadline`` is a ``time.time()`` value (comparable across processes), None for none.
    """

    points: np.ndarray
    k: int
    seconds: float | None
    wall_deadline: float | None
    seed: int


@dataclass(frozen=True)
class GroupOutcome:
    bound: float        # certified lower bound on the group's optimum
    proven: bool        # bound is the group's optimum (bnb finished)
    nodes: int
    seconds: float


def solve_group(task: GroupTask) -> GroupOutcome:
    """bnb on one group, cut at its time limit or the run's deadline; returns the certified bound."""
    from .bnb import solve_bnb  # Numba: imported where groups are solved (also on a worker)

    start = time.perf_counter()
    m, n = task.points.shape
    if m <= task.k * n:   # k planes pass through any k n points
        return GroupOutcome(0.0, True, 0, 0.0)
    limit = task.seconds
    if task.wall_deadline is not None:
        left = max(task.wall_deadline - time.time(), 0.01)
        limit = left if limit is None else min(limit, left)
    out = solve_bnb(task.points, task.k, time_limit=limit, restarts=GROUP_RESTARTS, extra_restarts=0,
                    suffix_bounds=False, seed=task.seed)
    return GroupOutcome(max(float(out.bound), 0.0), bool(out.complete), int(out.nodes), time.perf_counter() - start)


def spatial_order(points: np.ndarray) -> np.ndarray:
    """A permutation that visits the points in a space-filling order (nearby points near each other)."""
    pts = np.asarray(points, dtype=np.float64)
    m, n = pts.shape
    span = pts.max(axis=0) - pts.min(axis=0)
    if n > MORTON_MAX_DIM:
        centred = pts - pts.mean(axis=0)
        _, _, vt = np.linalg.svd(centred[: min(m, 20_000)], full_matrices=False)
        return np.argsort(centred @ vt[0], kind="stable")
    bits = MORTON_BITS // n
    cells = np.where(span > 0, (pts - pts.min(axis=0)) / np.where(span > 0, span, 1.0), 0.0)
    cells = np.minimum((cells * (1 << bits)).astype(np.uint64), np.uint64((1 << bits) - 1))
    code = np.zeros(m, dtype=np.uint64)
    for b in range(bits - 1, -1, -1):
        for d in range(n):
            code = (code << np.uint64(1)) | ((cells[:, d] >> np.uint64(b)) & np.uint64(1))
    return np.argsort(code, kind="stable")


def stratified_partition(order: np.ndarray, groups: int, rng: np.random.Generator) -> list[np.ndarray]:
    """``groups`` groups, each a stratified sample along ``order``: every block of ``groups``
    consecutive points gives one point to each group (in a random order); the last, partial block
    goes to randomly chosen groups, so sizes differ by at most one."""
    m = order.shape[0]
    full = (m // groups) * groups
    deal = np.argsort(rng.random((m // groups, groups)), axis=1)          # per block: point -> group
    labels = np.empty(m, dtype=np.int64)
    labels[:full] = deal.reshape(-1)
    labels[full:] = rng.permutation(groups)[: m - full]
    by_group = np.argsort(labels, kind="stable")
    cuts = np.searchsorted(labels[by_group], np.arange(1, groups))
    return [order[part] for part in np.split(by_group, cuts)]


def calibrate_group_size(points: np.ndarray, k: int, group_seconds: float, order: np.ndarray,
                         rng: np.random.Generator, max_size: int, wall_deadline: float | None,
                         workers: int = 1) -> int:
    """The group size, grown by GROWTH from 3 k n while bnb proves the trial groups.

    Growth goes on while the slower of CALIBRATION_TRIALS trial groups is proven within half of
    ``group_seconds``, or, with a deadline, while one partition of groups of that size would
    not be solved in half the time left (fewer, larger groups then finish where many small ones
    would not, and a partition with unsolved groups gives a weak bound). Trials are cut at
    twice ``group_seconds``; an unproven trial ends the growth, and so does spending
    CALIBRATION_SHARE of the time left.
    """
    m, n = points.shape
    stop_at = None if wall_deadline is None else time.time() + CALIBRATION_SHARE * (wall_deadline - time.time())
    size = min(max(3 * k * n, k * n + 2), max_size, m)
    solve_group(GroupTask(points[order[:size]], k, group_seconds, wall_deadline, 0))  # load the compiled kernel
    while size < min(max_size, m):
        nxt = min(int(np.ceil(size * GROWTH)), max_size, m)
        trials = stratified_partition(order, max(m // nxt, 1), rng)[:CALIBRATION_TRIALS]
        slowest = 0.0
        for group in trials:
            out = solve_group(GroupTask(points[group], k, 2.0 * group_seconds, wall_deadline, int(rng.integers(2**31))))
            slowest = max(slowest, out.seconds if out.proven else np.inf)
        if stop_reason(None) is not None or not np.isfinite(slowest):
            break
        left = None if wall_deadline is None else wall_deadline - time.time()
        too_many = left is not None and (m / nxt) * slowest / max(workers, 1) > left / 2
        if slowest > group_seconds / 2 and not too_many:
            break
        size = nxt
        if stop_at is not None and time.time() > stop_at:
            break
    return size


@dataclass
class PartitionBound:
    """The best certified bound over the partitions solved, and how it was obtained."""

    bound: float                       # max over partitions of the sum of group bounds
    group_size: int                    # points per group (target; sizes differ by at most one)
    groups: int                        # groups per partition
    partition_bounds: list[float] = field(default_factory=list)
    groups_solved: int = 0             # groups of the best partition whose solve finished (proven or cut)
    groups_proven: int = 0             # groups of the best partition solved to optimality
    nodes: int = 0                     # bnb nodes over all groups of all partitions
    stopped: Termination | None = None  # why the run ended early (time limit, Ctrl-C), None when complete
    seconds: float = 0.0


def subset_bound(points, k: int, *, group_size: int | None = None, group_seconds: float = 1.0,
                 partitions: int = 3, time_limit: float | None = None, seed: int = 0,
                 client=None, workers: int | None = None, progress=None, on_bound=None) -> PartitionBound:
    """A certified lower bound on the k-HC2 optimum of ``points`` from exact solves of partitions' groups.

    ``group_size`` None calibrates it (:func:`calibrate_group_size`, from 3 k n up to
    MAX_GROUP_SIZE) to bnb's time on trial groups; each group's solve is
    cut at 4 ``group_seconds`` (its stopped bound still counts). Up to ``partitions`` different
    stratified partitions are solved, each within what is left of ``time_limit``; a stop (time
    limit, Ctrl-C) keeps what finished: unsolved groups count 0, so the bound stays valid.
    ``client`` / ``workers`` choose where the groups run (see :func:`solvopt.core.tasks.map_tasks`).
    The bound is in the units of ``points`` (callers pass the unit-scale points).
    ``on_bound(seconds, bound)`` is called whenever the certified bound rises (a partition's
    running sum is itself a bound: the groups not solved yet count 0).
    """
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[0] < 1:
        raise ModelError(f"points must be a nonempty 2-D array (m, n), got shape {pts.shape}")
    m, n = pts.shape
    if isinstance(partitions, bool) or int(partitions) != partitions or partitions < 1:
        raise ModelError(f"partitions must be a positive integer, got {partitions!r}")
    if not group_seconds > 0:
        raise ModelError(f"group_seconds must be positive, got {group_seconds!r}")
    start = time.perf_counter()
    wall_deadline = None if time_limit is None else time.time() + time_limit
    deadline = None if time_limit is None else start + time_limit
    rng = np.random.default_rng(seed)
    order = spatial_order(pts)
    if group_size is None:
        group_size = calibrate_group_size(pts, k, group_seconds, order, rng, min(MAX_GROUP_SIZE, m), wall_deadline,
                                          workers=workers or 1)
    elif isinstance(group_size, bool) or int(group_size) != group_size or group_size < 1:
        raise ModelError(f"group_size must be a positive integer, got {group_size!r}")
    groups = max(m // int(group_size), 1)
    result = PartitionBound(0.0, int(group_size), groups)
    for _ in range(partitions):
        if stop_reason(deadline) is not None:
            result.stopped = stop_reason(deadline)
            break
        tasks = [GroupTask(pts[g], k, 4.0 * group_seconds, wall_deadline, int(rng.integers(2**31)))
                 for g in stratified_partition(order, groups, rng)]
        runs = map_tasks(solve_group, tasks, client=client, workers=workers, deadline=deadline, progress=progress,
                         what="groups")
        total, solved, proven = 0.0, 0, 0
        for _, out in runs:
            total += out.bound
            solved += 1
            proven += out.proven
            result.nodes += out.nodes
            if on_bound is not None and total > result.bound:
                on_bound(time.perf_counter() - start, total)
        result.partition_bounds.append(total)
        if total >= result.bound:
            result.bound, result.groups_solved, result.groups_proven = total, solved, proven
        if runs.stopped is not None:
            result.stopped = runs.stopped
            break
    if result.stopped is None and deadline is not None and time.perf_counter() > deadline:  # groups were cut
        result.stopped = Termination.TIME_LIMIT
    result.seconds = time.perf_counter() - start
    return result
