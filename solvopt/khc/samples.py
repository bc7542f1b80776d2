"""Planted k-HC2 point sets: points near k known hyperplanes, for examples, tests and benchmarks.

The planted assignment's cost is an upper bound on the optimum that a good heuristic should meet
within the noise (the benchmarks report objective / planted cost).
"""
from __future__ import annotations

import numpy as np


def planted(m: int, n: int, k: int, sigma: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(points, truth)``: m standard-normal points in R^n, each projected onto one of k random
    hyperplanes (unit normals, offsets 0..k-1; ``truth`` its index), plus Gaussian noise ``sigma``."""
    rng = np.random.default_rng(seed)
    normals = rng.normal(size=(k, n))
    normals /= np.linalg.norm(normals, axis=1)[:, None]
    truth = rng.integers(0, k, size=m)
    pts = rng.normal(size=(m, n))
    pts -= (np.einsum("mn,mn->m", pts, normals[truth]) - truth)[:, None] * normals[truth]
    return pts + sigma * rng.normal(size=(m, n)), truth
