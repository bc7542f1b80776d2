"""The k-HC2 reference the k-HC tests share: the optimum by enumerating every assignment (m <= ~12)."""
from __future__ import annotations

import numpy as np

CHUNK = 1 << 16  # labellings costed at once


def brute_force(points: np.ndarray, k: int) -> float:
    """Optimal k-HC2 cost: over every labelling, the sum per cluster of its smallest scatter eigenvalue.

    Each of the 2^m point subsets is costed once (eigvalsh of its scatter matrix); the k^m
    labellings are then enumerated in NumPy chunks, each summing its clusters' subset costs."""
    points = np.asarray(points, dtype=float)
    m, n = points.shape
    subset_cost = np.zeros(1 << m)
    for mask in range(1 << m):
        members = points[[i for i in range(m) if mask >> i & 1]]
        if len(members) > n:
            centred = members - members.mean(axis=0)
            subset_cost[mask] = max(0.0, np.linalg.eigvalsh(centred.T @ centred)[0])
    place = k ** np.arange(m, dtype=np.int64)   # labelling code -> label of point i: code // k^i % k
    bit = np.int64(1) << np.arange(m, dtype=np.int64)
    best = np.inf
    for start in range(0, k**m, CHUNK):
        labels = np.arange(start, min(start + CHUNK, k**m), dtype=np.int64)[:, None] // place % k
        cost = np.zeros(len(labels))
        for j in range(k):
            cost += subset_cost[(labels == j) @ bit]
        best = min(best, float(cost.min()))
    return best
