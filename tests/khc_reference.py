"""The k-HC2 reference the k-HC tests share: the optimum by enumerating every assignment (m <= ~10)."""
from __future__ import annotations

import itertools

import numpy as np


def brute_force(points: np.ndarray, k: int) -> float:
    """Optimal k-HC2 cost: over every labelling, the sum per cluster of its smallest scatter eigenvalue."""
    best = np.inf
    for labels in itertools.product(range(k), repeat=len(points)):
        labels = np.array(labels)
        cost = 0.0
        for j in range(k):
            members = points[labels == j]
            if len(members) > points.shape[1]:
                centred = members - members.mean(axis=0)
                cost += max(0.0, np.linalg.eigvalsh(centred.T @ centred)[0])
        best = min(best, cost)
    return best
