"""Distance conventions shared by the routing readers (CVRPLIB, Archetti IRP).

Both benchmark sets define the cost of an edge as the Euclidean distance rounded to the
nearest integer, ``floor(d + 0.5)`` (TSPLIB ``nint``), so published objective values can only
be reproduced with exactly this rounding.
"""
from __future__ import annotations

import numpy as np


def euclidean(coords: np.ndarray) -> np.ndarray:
    """Pairwise Euclidean distances of the rows of ``coords`` (N, d) -> (N, N) float64."""
    squared = np.zeros((coords.shape[0], coords.shape[0]))
    for axis in range(coords.shape[1]):  # one (N, N) difference at a time: no (N, N, d) temporary
        diff = coords[:, None, axis] - coords[None, :, axis]
        squared += diff * diff
    return np.sqrt(squared, out=squared)


def rounded_euclidean(coords: np.ndarray) -> np.ndarray:
    """Euclidean distances rounded half up to the nearest integer (float64, zero diagonal)."""
    return np.floor(euclidean(np.asarray(coords, dtype=np.float64)) + 0.5)
