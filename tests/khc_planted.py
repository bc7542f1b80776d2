"""Planted k-HC2 point sets the k-HC scale tests share (benchmarks/khc_heuristic.py's generator), and
an assignment's cost computed independently of solvopt.khc.geometry."""
from __future__ import annotations

import numpy as np


def planted(m: int, n: int, k: int, sigma: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """m points near k random hyperplanes (offsets 0..k-1), Gaussian noise sigma: (points, true labels)."""
    rng = np.random.default_rng(seed)
    normals = rng.normal(size=(k, n))
    normals /= np.linalg.norm(normals, axis=1)[:, None]
    truth = rng.integers(0, k, size=m)
    pts = rng.normal(size=(m, n))
    pts -= (np.einsum("mn,mn->m", pts, normals[truth]) - truth)[:, None] * normals[truth]
    return pts + sigma * rng.normal(size=(m, n)), truth


def cost_of(points: np.ndarray, labels: np.ndarray, k: int) -> float:
    """Sum over clusters of the smallest eigenvalue of the centred scatter (independent of geometry.py)."""
    total = 0.0
    for j in range(k):
        members = points[labels == j]
        if len(members) > points.shape[1]:
            centred = members - members.mean(axis=0)
            total += max(np.linalg.eigvalsh(centred.T @ centred)[0], 0.0)
    return total
