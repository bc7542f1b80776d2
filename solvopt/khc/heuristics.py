"""k-HC2 heuristics: the Bradley–Mangasarian k-plane method with seeded restarts and an exact
point-reassignment local search.

The k-plane method alternates (1) assign every point to its nearest hyperplane and (2) refit
every hyperplane to its cluster (smallest eigenpair of the centred scatter), until the
assignment is stable. It stops at assignments where no single point prefers another plane,
but a move can still pay off once both planes are refitted. The local search finds those
moves with rank-one updates of the clusters' scatter matrices:

* removing x from a cluster of N points with centroid c changes the scatter by
  ``-N/(N-1) (x-c)(x-c)^T``; adding it to a cluster of N points by ``+N/(N+1) (x-c)(x-c)^T``;
* with the planes' normals held fixed, the cost change of a move is therefore
  ``N_b/(N_b+1) (w_b^T(x-c_b))^2 - N_a/(N_a-1) (w_a^T(x-c_a))^2`` (O(kn) per point, vectorised
  over all points); refitting can only lower the cost further, so a negative value proves an
  improving move (the Hartigan-style screen, cheap enough for m = 1e5);
* on small problems every move is also evaluated exactly (smallest eigenvalue of the two
  updated n x n scatters), which finds the moves where the normals must rotate.

For large m the restarts run on a random subsample and only the best starts are refined on
all points, so that m = 1e5, n = 50 returns in seconds.

In higher dimensions (n >= PURSUIT_MIN_DIM, enough points per plane) one more start comes from
projection-pursuit peeling (:mod:`solvopt.khc.pursuit`), which finds planes that no seeded
restart finds at n = 50, k = 10; like every start it is kept only if its polished cost is best.
"""
from __future__ import annotations

import time

import numpy as np

from ..core.errors import ModelError
from ..core.interrupt import stop_reason
from .geometry import assignment_cost, cluster_plane, fit_planes, point_distances
from .pursuit import MIN_POINTS_PER_DIM, pursuit_assignment

# Largest m * k * n^3 for which every single-point move is evaluated exactly.
EXACT_MOVE_BUDGET = 300_000
# Restarts run on a subsample of this many points when m is larger (and k n is small enough).
SUBSAMPLE_SIZE = 4000
# Neighbours (times n) fitted with the seed point of a local k-plane++ start.
LOCAL_NEIGHBOURS = 2
# Share of the points relabelled at random by each perturbation round (iterated local search).
PERTURB_FRACTION = 0.15
# Starts refined on all points after the subsampled restarts.
REFINED_STARTS = 1
# The pursuit start runs by default from this dimension on (below it, seeded restarts do well).
PURSUIT_MIN_DIM = 5
# Points the pursuit searches its planes on (a random sample when m is larger): at least this many.
PURSUIT_SAMPLE = 20_000
# Seconds the pursuit may spend per million coordinates of its sample (at least 2 s): it finds the
# planted planes of the benchmarks in 2-12 s at 20000 x 50, and a search that fails costs its budget.
PURSUIT_SECONDS_PER_MILLION = 20.0


class ClusterStats:
    """Counts, centroids, centred scatters, normals and costs of the k clusters of an assignment.

    Also evaluates single-point moves: screened (normals fixed, O(kn) per point) and exact
    (rank-one updated scatters, one n x n eigenvalue problem per move).
    """

    def __init__(self, points: np.ndarray, labels: np.ndarray, k: int):
        m, n = points.shape
        self.k, self.n = k, n
        self.counts = np.bincount(labels, minlength=k).astype(np.int64)
        self.centroids = np.zeros((k, n))
        self.scatters = np.zeros((k, n, n))
        for j in range(k):
            members = points[labels == j]
            if len(members):
                self.centroids[j] = members.mean(axis=0)
                centred = members - self.centroids[j]
                self.scatters[j] = centred.T @ centred
        self.normals = np.zeros((k, n))
        self.costs = np.zeros(k)
        for j in range(k):
            self._refit(j)

    def _refit(self, j: int) -> None:
        if self.counts[j] <= 1:
            self.normals[j] = np.eye(self.n)[0]
            self.costs[j] = 0.0
            return
        values, vectors = np.linalg.eigh(self.scatters[j])
        self.normals[j] = vectors[:, 0]
        self.costs[j] = max(values[0], 0.0)

    def screened_gains(self, points: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """(m, k) guaranteed cost decrease of moving each point to each cluster, normals held fixed."""
        m = points.shape[0]
        signed = points @ self.normals.T - np.einsum("kn,kn->k", self.normals, self.centroids)
        counts = self.counts.astype(np.float64)
        add = (counts / (counts + 1.0)) * signed ** 2
        own = counts[labels]
        with np.errstate(divide="ignore", invalid="ignore"):
            remove = np.where(own > 1, own / np.maximum(own - 1.0, 1.0), 0.0) * signed[np.arange(m), labels] ** 2
        gains = remove[:, None] - add
        gains[np.arange(m), labels] = 0.0
        return gains

    def exact_gains(self, points: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """(m, k) exact cost decrease of moving each point to each cluster (both planes refitted)."""
        m, n = points.shape
        k = self.k
        counts = self.counts.astype(np.float64)
        d_own = points - self.centroids[labels]
        own = counts[labels]
        factor = np.where(own > 1, own / np.maximum(own - 1.0, 1.0), 0.0)
        removed = self.scatters[labels] - factor[:, None, None] * np.einsum("mi,mj->mij", d_own, d_own)
        removed_cost = np.where(own > 2, np.linalg.eigvalsh(removed)[:, 0], 0.0)
        d_all = points[:, None, :] - self.centroids[None, :, :]
        added = self.scatters[None] + (counts / (counts + 1.0))[None, :, None, None] * np.einsum(
            "mki,mkj->mkij", d_all, d_all)
        added_cost = np.where(counts[None, :] >= 1,
                              np.linalg.eigvalsh(added.reshape(m * k, n, n))[:, 0].reshape(m, k), 0.0)
        gains = ((self.costs[labels] - np.maximum(removed_cost, 0.0))[:, None]
                 + self.costs[None, :] - np.maximum(added_cost, 0.0))
        gains[np.arange(m), labels] = 0.0
        gains[own <= 1] = 0.0  # emptying a cluster never helps
        return gains


def _tolerance(total: float) -> float:
    return 1e-12 * (1.0 + abs(total))


def local_search(points, assignment, k: int, exact: bool | None = None, max_passes: int = 100,
                 deadline: float | None = None) -> np.ndarray:
    """Improve an assignment by single-point moves until none decreases the exact refit cost.

    Each pass first makes the screened moves (fixed normals: guaranteed improvements), then
    refits the planes. ``exact=None`` also evaluates every move exactly when m k n^3 is small
    (see EXACT_MOVE_BUDGET). Stops after ``max_passes`` passes or at ``deadline``.
    """
    pts = np.asarray(points, dtype=np.float64)
    labels = np.array(assignment, dtype=np.int64)
    m, n = pts.shape
    if exact is None:
        exact = m * k * n ** 3 <= EXACT_MOVE_BUDGET
    for _ in range(max_passes):
        if stop_reason(deadline) is not None:
            break
        stats = ClusterStats(pts, labels, k)
        moved = _screened_pass(pts, labels, stats)
        if exact:
            if moved:
                stats = ClusterStats(pts, labels, k)
            gains = stats.exact_gains(pts, labels)
            i, b = np.unravel_index(np.argmax(gains), gains.shape)
            if gains[i, b] > _tolerance(stats.costs.sum()):
                labels[i] = b
                moved = True
        if not moved:
            break
    return labels


def _screened_pass(pts: np.ndarray, labels: np.ndarray, stats: ClusterStats) -> bool:
    """One sequential pass of moves that lower the cost with the normals held fixed.

    With fixed normals the cost is sum_j sum_{i in j} (w_j^T(x_i - c_j))^2 and a move changes
    it by exactly ``add - remove`` (see the module docstring); only the clusters' sizes and
    levels w_j^T c_j change, in O(k) per move. Refitting afterwards lowers it further.
    Returns True if any point moved.
    """
    proj = pts @ stats.normals.T
    level = np.einsum("kn,kn->k", stats.normals, stats.centroids)
    counts = stats.counts.astype(np.float64)
    gains = stats.screened_gains(pts, labels)
    best = gains.max(axis=1)
    tol = _tolerance(stats.costs.sum())
    candidates = np.flatnonzero(best > tol)
    moved = False
    for i in candidates[np.argsort(-best[candidates])]:
        a = labels[i]
        if counts[a] <= 1:
            continue
        signed = proj[i] - level
        add = counts / (counts + 1.0) * signed ** 2
        add[a] = np.inf
        b = int(np.argmin(add))
        remove = counts[a] / (counts[a] - 1.0) * signed[a] ** 2
        if remove - add[b] > tol:
            level[a] -= signed[a] / (counts[a] - 1.0)
            counts[a] -= 1.0
            level[b] += signed[b] / (counts[b] + 1.0)
            counts[b] += 1.0
            labels[i] = b
            moved = True
    return moved


def _fill_empty(labels: np.ndarray, distances: np.ndarray, k: int) -> np.ndarray:
    """Give every empty cluster the point farthest from its own plane (from a cluster of >= 2)."""
    m = labels.shape[0]
    own = distances[np.arange(m), labels].copy()
    for j in range(k):
        counts = np.bincount(labels, minlength=k)
        if counts[j] > 0:
            continue
        own_masked = np.where(counts[labels] > 1, own, -1.0)
        i = int(np.argmax(own_masked))
        if own_masked[i] < 0:
            break
        labels[i] = j
        own[i] = 0.0
    return labels


def _lloyd(points: np.ndarray, labels: np.ndarray, k: int, max_iter: int, deadline: float | None) -> np.ndarray:
    """k-plane iterations from an assignment until it is stable (or max_iter / the deadline)."""
    for _ in range(max_iter):
        normals, offsets, _ = fit_planes(points, labels, k)
        distances = point_distances(points, normals, offsets)
        new = np.argmin(distances, axis=1)
        new = _fill_empty(new, distances, k)
        if np.array_equal(new, labels):
            break
        labels = new
        if stop_reason(deadline) is not None:
            break
    return labels


def _seed_planes(points: np.ndarray, k: int, rng: np.random.Generator, local: bool) -> np.ndarray:
    """k-plane++ start: each plane fitted to a sample, later ones seeded far from earlier planes.

    ``local=False``: the plane through n points sampled with probability proportional to their
    squared distance to the planes so far. ``local=True``: the least-squares plane of one such
    point and its LOCAL_NEIGHBOURS n nearest neighbours (points close together tend to lie on
    the same plane, which n scattered points rarely do when k is large).
    """
    m, n = points.shape
    normals = np.zeros((k, n))
    offsets = np.zeros(k)
    weights = np.ones(m)
    for j in range(k):
        usable = np.count_nonzero(weights) >= n
        prob = weights / weights.sum() if usable else None
        if local:
            seed = rng.choice(m, p=prob)
            near = np.argsort(((points - points[seed]) ** 2).sum(axis=1))[: min(m, LOCAL_NEIGHBOURS * n + 1)]
            chosen = near
        else:
            chosen = rng.choice(m, size=min(n, m), replace=False, p=prob)
        _, normals[j], offsets[j] = cluster_plane(points[chosen])
        weights = point_distances(points, normals[: j + 1], offsets[: j + 1]).min(axis=1)
    distances = point_distances(points, normals, offsets)
    return _fill_empty(np.argmin(distances, axis=1), distances, k)


def _starts(points: np.ndarray, k: int, restarts: int, rng: np.random.Generator):
    """Initial assignments, in turn: local k-plane++, k-plane++, uniformly random labels."""
    m: int = points.shape[0]
    for r in range(restarts):
        if r % 3 == 2:
            labels = rng.integers(0, k, size=m)
            labels[rng.permutation(m)[:k]] = np.arange(k)  # every cluster nonempty
            yield labels
        else:
            yield _seed_planes(points, k, rng, local=r % 3 == 0)


def _polished(points: np.ndarray, labels: np.ndarray, k: int, max_iter: int,
              deadline: float | None) -> tuple[float, np.ndarray]:
    """(cost, assignment): k-plane from ``labels``, then the local search."""
    labels = local_search(points, _lloyd(points, labels, k, max_iter, deadline), k, max_passes=max_iter,
                          deadline=deadline)
    return assignment_cost(points, labels, k), labels


def _perturbation_search(points: np.ndarray, k: int, best: tuple[float, np.ndarray], rounds: int, max_iter: int,
                         rng: np.random.Generator, deadline: float | None) -> tuple[float, np.ndarray]:
    """Iterated local search: relabel a random PERTURB_FRACTION of the best assignment's points,
    re-run k-plane and the local search, keep the result when it is better."""
    m = points.shape[0]
    size = max(1, int(round(PERTURB_FRACTION * m)))
    best_cost, best_labels = best
    for _ in range(rounds):
        if stop_reason(deadline) is not None:
            break
        labels = best_labels.copy()
        chosen = rng.choice(m, size=size, replace=False)
        labels[chosen] = rng.integers(0, k, size=size)
        cost, labels = _polished(points, labels, k, max_iter, deadline)
        if cost < best_cost:
            best_cost, best_labels = cost, labels
    return best_cost, best_labels


def use_pursuit(m: int, n: int, k: int, pursuit: bool | str | None) -> bool:
    """Whether kplane adds the pursuit start: on, off, or (None / "auto") from PURSUIT_MIN_DIM
    dimensions on when there are MIN_POINTS_PER_DIM n points per plane on average."""
    if pursuit is None or (isinstance(pursuit, str) and pursuit == "auto"):
        return k >= 2 and n >= PURSUIT_MIN_DIM and m >= MIN_POINTS_PER_DIM * n * k
    if not isinstance(pursuit, (bool, np.bool_)):
        raise ModelError(f"pursuit must be True, False, None or \"auto\", got {pursuit!r}")
    return bool(pursuit)


def _pursuit_start(points: np.ndarray, k: int, rng: np.random.Generator, sample_size: int, max_iter: int,
                   deadline: float | None) -> np.ndarray:
    """The pursuit's assignment (planes searched on ``sample_size`` points); when it found fewer than
    k - 1 planes, its rest cluster (the points near none of them) is split by k-plane restarts (by
    ``deadline``) into the planes still missing."""
    labels, found = pursuit_assignment(points, k, rng, deadline=deadline, sample_size=sample_size)
    rest = np.flatnonzero(labels == found) if 0 < found < k - 1 else np.zeros(0, dtype=np.int64)
    if len(rest) > k - found:
        split, _ = kplane(points[rest], k - found, restarts=3, seed=int(rng.integers(2 ** 31)), max_iter=max_iter,
                          time_limit=None if deadline is None else max(deadline - time.perf_counter(), 0.0),
                          pursuit=False)
        labels[rest] = found + split
    return labels


def _validate(points, k, restarts, max_iter, init):
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[0] < 1 or pts.shape[1] < 1:
        raise ModelError(f"points must be a nonempty 2-D array (m, n), got shape {pts.shape}")
    if not np.all(np.isfinite(pts)):
        raise ModelError("points must be finite")
    if int(k) != k or not 1 <= k <= pts.shape[0]:
        raise ModelError(f"k must be an integer with 1 <= k <= m = {pts.shape[0]}, got {k}")
    if int(restarts) != restarts or restarts < 1 or int(max_iter) != max_iter or max_iter < 1:
        raise ModelError("restarts and max_iter must be positive integers")
    if init is not None:
        init = np.asarray(init, dtype=np.int64)
        if init.shape != (pts.shape[0],) or init.min() < 0 or init.max() >= k:
            raise ModelError(f"init must be an assignment of shape ({pts.shape[0]},) with labels in 0..{k - 1}")
    return pts, int(k), init


def kplane(points, k: int, restarts: int = 10, seed: int = 0, max_iter: int = 100, init=None,
           time_limit: float | None = None, pursuit: bool | str | None = None) -> tuple[np.ndarray, float]:
    """Best k-HC2 assignment found by seeded k-plane restarts plus local search: ``(assignment, cost)``.

    ``init`` (an assignment) is used as an extra first start. ``pursuit`` adds the projection-pursuit
    start (:mod:`solvopt.khc.pursuit`): True, False, or None / "auto" (see :func:`use_pursuit`).
    ``time_limit`` (seconds) or a stop request (Ctrl-C, :func:`~solvopt.core.interrupt.request_stop`)
    stops starting new restarts and cuts the running one short; at least one start always yields an
    assignment. ``cost`` equals ``assignment_cost(points, assignment, k)``.
    """
    pts, k, init = _validate(points, k, restarts, max_iter, init)
    m, n = pts.shape
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    rng = np.random.default_rng(seed)
    if k == 1:
        labels = np.zeros(m, dtype=np.int64)
        return labels, assignment_cost(pts, labels, 1)

    sample = None
    sample_size = max(SUBSAMPLE_SIZE, 20 * k * n)
    if m > 2 * sample_size:
        sample = rng.choice(m, size=sample_size, replace=False)
    work = pts if sample is None else pts[sample]

    polished: list[tuple[float, np.ndarray]] = []   # starts polished on all points
    if use_pursuit(m, n, k, pursuit):   # it samples by itself, and its planes are sharp enough for all points
        own = np.random.default_rng(seed).spawn(1)[0]   # the restarts below draw the same as without it
        searched = max(PURSUIT_SAMPLE, 4 * MIN_POINTS_PER_DIM * n * k)
        # the search, the split and the polish share a budget: a search that finds nothing costs at most that
        budget = time.perf_counter() + max(2.0, PURSUIT_SECONDS_PER_MILLION * min(m, searched) * n / 1e6)
        until = budget if deadline is None else min(deadline, budget)
        polished.append(_polished(pts, _pursuit_start(pts, k, own, searched, max_iter, until), k, max_iter, until))

    candidates: list[tuple[float, np.ndarray]] = []
    for r, start in enumerate(_starts(work, k, restarts, rng)):   # lazily: a stop cuts the seeding short too
        if (r > 0 or polished) and stop_reason(deadline) is not None:
            break
        labels = _lloyd(work, start, k, max_iter, deadline)
        if sample is None:
            labels = local_search(work, labels, k, max_passes=max_iter, deadline=deadline)
        candidates.append((assignment_cost(work, labels, k), labels))
    if sample is None and candidates:
        candidates.append(_perturbation_search(work, k, min(candidates, key=lambda c: c[0]), restarts, max_iter,
                                               rng, deadline))

    if sample is not None:  # carry the best subsample planes to all points and refine there
        candidates.sort(key=lambda c: c[0])
        refined = []
        for _, labels in candidates[:REFINED_STARTS]:
            normals, offsets, _ = fit_planes(work, labels, k)
            distances = point_distances(pts, normals, offsets)
            full = _fill_empty(np.argmin(distances, axis=1), distances, k)
            refined.append(_polished(pts, full, k, max_iter, deadline))
            if stop_reason(deadline) is not None:
                break
        candidates = refined
    if init is not None:
        candidates.append(_polished(pts, init.copy(), k, max_iter, deadline))

    cost, labels = min(candidates + polished, key=lambda c: c[0])
    return labels.astype(np.int64), float(cost)
