"""Nearest-neighbour candidate pairs of two point clouds (k-d trees under the named metric): the
start of ``sparse-exact`` and the extra pairs of :func:`solvopt.transport.dual.refined_bound`."""
from __future__ import annotations

import math

import numpy as np

# Minkowski exponent of scipy's k-d tree for each named metric.
TREE_NORM = {"euclidean": 2.0, "cityblock": 1.0, "chebyshev": math.inf}


def neighbour_pairs(model, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols): each source with mass to its k nearest targets with mass, and back."""
    from scipy.spatial import cKDTree
    rows, cols = np.flatnonzero(model.a > 0), np.flatnonzero(model.b > 0)
    norm = TREE_NORM[model.metric]
    out_r, out_c = [], []
    for here, there, pts, other, flip in ((rows, cols, model.x, model.y, False), (cols, rows, model.y, model.x, True)):
        kk = min(k, len(there))
        if kk == 0 or len(here) == 0:
            continue
        _, near = cKDTree(other[there]).query(pts[here], k=kk, p=norm, workers=-1)
        near = there[np.asarray(near).reshape(len(here), kk)].ravel()
        mine = np.repeat(here, kk)
        out_r.append(near if flip else mine)
        out_c.append(mine if flip else near)
    if not out_r:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(out_r).astype(np.int64), np.concatenate(out_c).astype(np.int64)


__all__ = ["TREE_NORM", "neighbour_pairs"]
