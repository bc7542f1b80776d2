"""Box reasoning for the k-HC2 spatial branch-and-bound: valid bounds derived from a node's box.

A node of the SBB restricts each normal w_j to a box [lo_j, hi_j] and each point to a set of
allowed clusters. Everything here is pure NumPy and reasons about the *canonical* optimal
solutions, which exist for every instance and which every node constraint keeps:

* ||w_j||_2 = 1 exactly (scaling a plane down only shrinks its distances, so an optimal plane
  with ||w_j|| > 1 can be rescaled to norm 1 without loss);
* gamma_j is the mean of the projections a_i^T w_j of the cluster's points (the least-squares
  offset), hence lies between the smallest and the largest projection of all points;
* the distance of any point to any plane is at most the diameter of the point set (each plane
  passes through its cluster's centroid, inside the convex hull).

From these facts: the secant (concave overestimator) relaxation of sum_l w_l^2 >= 1, the
interval tightening of the box (FBBT), the offset range, the per-node big-M of the distance
rows, and the fixed-assignment bound (the least-squares cost of the points already fixed to a
cluster can only grow when more points join it).
"""
from __future__ import annotations

import numpy as np

from .geometry import cluster_plane

FEAS_TOL = 1e-9


def secant(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, float]:
    """Secant relaxation of sum_l w_l^2 >= 1 over one box: ``coef @ w >= rhs``.

    On [lo, hi] the chord (lo + hi) w - lo hi lies above w^2, so sum_l (lo_l + hi_l) w_l >=
    1 + sum_l lo_l hi_l holds for every w in the box with ||w|| >= 1. On [-1, 1] the chord is
    the constant 1 and the row says nothing: that is why the plain relaxation is weak.
    """
    return lo + hi, 1.0 + float(np.dot(lo, hi))


def secant_gap(w: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """How much the chord overestimates w_l^2 at the LP point: (lo+hi) w - lo hi - w^2 >= 0."""
    return (lo + hi) * w - lo * hi - w * w


def square_range(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Elementwise range [min, max] of w^2 over [lo, hi]."""
    top = np.maximum(lo * lo, hi * hi)
    bottom = np.where((lo <= 0.0) & (hi >= 0.0), 0.0, np.minimum(lo * lo, hi * hi))
    return bottom, top


def tighten_unit_box(lo: np.ndarray, hi: np.ndarray, rounds: int = 3) -> bool:
    """FBBT on one normal's box for ||w||_2 = 1 (in place). Returns False when the box is empty.

    From sum w^2 >= 1: w_l^2 >= 1 - sum_{others} max w^2, which cuts a hole around 0 out of
    [lo_l, hi_l]; if only one side of the hole meets the box, the box shrinks to that side.
    From sum w^2 <= 1 (canonical optimum): |w_l| <= sqrt(1 - sum_{others} min w^2).
    """
    for _ in range(rounds):
        if np.any(lo > hi + FEAS_TOL):
            return False
        bottom, top = square_range(lo, hi)
        total_top, total_bottom = top.sum(), bottom.sum()
        if total_top < 1.0 - 1e-9 or total_bottom > 1.0 + 1e-9:
            return False
        changed = False
        need = 1.0 - (total_top - top)            # w_l^2 >= need_l
        for l in np.flatnonzero(need > 1e-12):
            r = np.sqrt(need[l])
            if lo[l] > -r + 1e-12 and lo[l] < r - 1e-12:   # the negative side is cut off
                if hi[l] < r - 1e-12:
                    return False
                lo[l] = r
                changed = True
            elif hi[l] < r - 1e-12 and hi[l] > -r + 1e-12:  # the positive side is cut off
                hi[l] = -r
                changed = True
        room = np.sqrt(np.maximum(1.0 - (total_bottom - bottom), 0.0))  # |w_l| <= room_l
        new_hi, new_lo = np.minimum(hi, room), np.maximum(lo, -room)
        if np.any(new_hi < hi - 1e-12) or np.any(new_lo > lo + 1e-12):
            changed = True
            hi[:], lo[:] = new_hi, new_lo
        if not changed:
            break
    return bool(np.all(lo <= hi + FEAS_TOL))


def projection_range(points: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Range of a_i^T w over the box, for every point: arrays (m,) of minima and maxima."""
    low = np.minimum(points * lo, points * hi).sum(axis=1)
    high = np.maximum(points * lo, points * hi).sum(axis=1)
    return low, high


def offset_range(points: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[float, float]:
    """Range of the canonical offset gamma (a mean of projections) over the box."""
    low, high = projection_range(points, lo, hi)
    return float(low.min()), float(high.max())


def node_big_m(points: np.ndarray, wlo: np.ndarray, whi: np.ndarray, glo: np.ndarray, ghi: np.ndarray,
               diameter: float) -> np.ndarray:
    """Per node big-M (m, k): max |a_i^T w_j - gamma_j| over the node's box, capped at the diameter."""
    m, k = points.shape[0], wlo.shape[0]
    out = np.empty((m, k))
    for j in range(k):
        low, high = projection_range(points, wlo[j], whi[j])
        out[:, j] = np.maximum(high - glo[j], ghi[j] - low)
    return np.minimum(np.maximum(out, 0.0), diameter)


def fixed_planes(points: np.ndarray, allowed: np.ndarray) -> tuple[float, np.ndarray]:
    """Bound and squared distances from the points whose cluster is already decided at a node.

    A point allowed in exactly one cluster belongs to it; the least-squares cost of a cluster
    never decreases when points are added, so the sum over clusters of the optimal plane cost
    of the decided points bounds every completion (the bound of the exact assignment B&B).
    Also returns (m, k) squared distances of every point to those planes (0 for a cluster
    with at most n decided points, whose plane is not determined yet): a point far from all
    the planes it may join is the one whose branching raises the bound most.
    """
    m, k = allowed.shape
    n = points.shape[1]
    distances = np.zeros((m, k))
    decided = allowed.sum(axis=1) == 1
    if not np.any(decided):
        return 0.0, distances
    labels = np.argmax(allowed, axis=1)
    total = 0.0
    for j in range(k):
        group = points[decided & (labels == j)]
        if group.shape[0] > n:
            cost, normal, offset = cluster_plane(group)
            total += cost
            r = points @ normal - offset
            distances[:, j] = r * r
    return total, distances


def fixed_assignment_bound(points: np.ndarray, allowed: np.ndarray) -> float:
    """The bound part of :func:`fixed_planes`."""
    return fixed_planes(points, allowed)[0]
