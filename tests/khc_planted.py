"""What the k-HC scale tests share: the planted point sets of :mod:`solvopt.khc.samples`, and an
assignment's cost computed independently of solvopt.khc.geometry."""
from __future__ import annotations

import numpy as np

from solvopt.khc.samples import planted  # noqa: F401  (the tests import it from here)


def cost_of(points: np.ndarray, labels: np.ndarray, k: int) -> float:
    """Sum over clusters of the smallest eigenvalue of the centred scatter (independent of geometry.py)."""
    total = 0.0
    for j in range(k):
        members = points[labels == j]
        if len(members) > points.shape[1]:
            centred = members - members.mean(axis=0)
            total += max(np.linalg.eigvalsh(centred.T @ centred)[0], 0.0)
    return total
