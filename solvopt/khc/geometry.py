"""Least-squares hyperplanes of point clusters: the geometry every k-HC2 method shares.

For a fixed cluster P (p points in R^n) the hyperplane {x : w^T x = gamma}, ||w||_2 = 1,
minimising the sum of squared distances passes through the centroid c of P and its normal w
is an eigenvector of the smallest eigenvalue of the centred scatter S = sum (a - c)(a - c)^T;
the optimal cost is that eigenvalue. Clusters of at most n points have cost 0 (a hyperplane
passes through any n points). All work is in float64 on centred data (numerically careful).
"""
from __future__ import annotations

import numpy as np

# Components smaller than this (relative to 1 = the norm of the normal) are treated as zero
# when choosing the sign of a normal, so that rounding noise cannot flip it.
_SIGN_TOL = 1e-12


def _as_points(points) -> np.ndarray:
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim != 2:
        raise ValueError(f"points must be a 2-D array (m, n), got shape {pts.shape}")
    return pts


def normalise_sign(normal: np.ndarray) -> np.ndarray:
    """Scale ``normal`` to unit 2-norm with its first nonzero component positive."""
    normal = np.asarray(normal, dtype=np.float64)
    normal = normal / np.linalg.norm(normal)
    nonzero = np.flatnonzero(np.abs(normal) > _SIGN_TOL)
    if nonzero.size and normal[nonzero[0]] < 0:
        normal = -normal
    return normal


def _default_normal(n: int) -> np.ndarray:
    e = np.zeros(n)
    e[0] = 1.0
    return e


def cluster_plane(points) -> tuple[float, np.ndarray, float]:
    """The optimal hyperplane of one cluster: ``(cost, normal, offset)``.

    ``cost`` is the sum of squared distances of the points to {x : normal^T x = offset}
    (the smallest eigenvalue of the centred scatter, computed as the residual of the returned
    plane so it matches :func:`point_distances` exactly). Empty clusters get the first unit
    vector and offset 0; clusters of at most n points get cost 0 exactly when their points
    lie on the plane (always, up to rounding).
    """
    pts = _as_points(points)
    p, n = pts.shape
    if p == 0:
        return 0.0, _default_normal(n), 0.0
    centroid = pts.mean(axis=0)
    centred = pts - centroid
    if p == 1 or not np.any(centred):
        normal = _default_normal(n)  # every direction fits a single (or repeated) point
    else:
        _, vectors = np.linalg.eigh(centred.T @ centred)
        normal = normalise_sign(vectors[:, 0])
    residual = centred @ normal
    cost = float(residual @ residual)
    return cost, normal, float(normal @ centroid)


def _check_assignment(assignment, m: int, k: int) -> np.ndarray:
    labels = np.asarray(assignment)
    if labels.shape != (m,):
        raise ValueError(f"assignment must have shape ({m},), got {labels.shape}")
    if labels.size and (not np.issubdtype(labels.dtype, np.integer) and not np.all(labels == np.round(labels))):
        raise ValueError("assignment must hold integer cluster labels")
    labels = labels.astype(np.int64)
    if labels.size and (labels.min() < 0 or labels.max() >= k):
        raise ValueError(f"assignment labels must lie in 0..{k - 1}")
    return labels


def fit_planes(points, assignment, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Optimal plane of each of the ``k`` clusters: ``(normals (k, n), offsets (k,), costs (k,))``.

    An empty cluster gets the first unit vector, offset 0 and cost 0.
    """
    pts = _as_points(points)
    m, n = pts.shape
    labels = _check_assignment(assignment, m, k)
    normals = np.zeros((k, n))
    offsets = np.zeros(k)
    costs = np.zeros(k)
    order = np.argsort(labels, kind="stable")
    bounds = np.searchsorted(labels[order], np.arange(k + 1))
    for j in range(k):
        members = pts[order[bounds[j]:bounds[j + 1]]]
        costs[j], normals[j], offsets[j] = cluster_plane(members)
    return normals, offsets, costs


def point_distances(points, normals, offsets) -> np.ndarray:
    """Squared distances (m, k) of every point to every plane {x : normals[j]^T x = offsets[j]}."""
    pts = _as_points(points)
    signed = pts @ np.asarray(normals, dtype=np.float64).T - np.asarray(offsets, dtype=np.float64)
    return signed * signed


def assignment_cost(points, assignment, k: int) -> float:
    """Total k-HC2 cost of an assignment: the sum of its clusters' optimal plane costs."""
    return float(fit_planes(points, assignment, k)[2].sum())


def khc_solution(points, assignment, k: int) -> dict[str, np.ndarray]:
    """The solution arrays a k-HC2 :class:`~solvopt.core.result.Result` carries.

    Keys: ``assignment`` (int64 (m,)), ``normals`` (k, n), ``offsets`` (k,), ``distances``
    (m,) squared distance of each point to its own plane, ``cluster_costs`` (k,).
    """
    pts = _as_points(points)
    labels = _check_assignment(assignment, pts.shape[0], k)
    normals, offsets, costs = fit_planes(pts, labels, k)
    all_distances = point_distances(pts, normals, offsets)
    distances = all_distances[np.arange(pts.shape[0]), labels] if pts.shape[0] else np.zeros(0)
    return {"assignment": labels, "normals": normals, "offsets": offsets, "distances": distances,
            "cluster_costs": costs}
