"""Planted k-HC2 point sets the k-HC scale tests share (benchmarks/khc_heuristic.py's generator)."""
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
