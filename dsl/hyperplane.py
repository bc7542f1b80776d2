"""The k-HC2 family model: k-hyperplane clustering in the 2-norm.

Given points a_1..a_m in R^n and k, find k hyperplanes {x : w_j^T x = gamma_j}, ||w_j||_2 = 1,
and an assignment of the points to them minimising the sum of squared point-to-plane
distances. The model validates its data at construction; ``solve(method)`` runs one of the
registered "khc" methods (``solvopt methods --family khc``): "bnb" (exact assignment
branch-and-bound), "heuristic" (k-plane), "brute-force", "sbb" (spatial branch-and-bound on
the MINLP) and, where installed, "scip" / "gurobi" on the same MINLP.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from solvopt.core.errors import ModelError

from .family import FamilyModel

NORMS = ("2", "1", "inf")


def _parse_norms(norms) -> tuple[str, ...]:
    """A sorted tuple of norm names from "2,inf" or an iterable; must contain "2"."""
    if isinstance(norms, str):
        items = [p.strip() for p in norms.split(",") if p.strip()]
    else:
        try:
            items = [str(p).strip() for p in norms]
        except TypeError:
            raise ModelError(f"norms must be a collection of '2', '1', 'inf', got {norms!r}") from None
    unknown = sorted(set(items) - set(NORMS))
    if unknown:
        raise ModelError(f"unknown norm(s) {', '.join(map(repr, unknown))}; norms are a subset of 2, 1, inf")
    if "2" not in items:
        raise ModelError(f"norms must contain '2' (the k-HC2 objective), got {sorted(set(items))}")
    return tuple(n for n in NORMS if n in items)


class HyperplaneClustering(FamilyModel):
    """k-HC2 on ``points`` (m x n) with ``k`` hyperplanes.

    ``norms``: the norm blocks of the MINLP formulation used by the MINLP methods ("2" always;
    "inf" and/or "1" add the valid MILP strengthenings). ``big_m``: the big-M of the distance
    rows; None derives a valid one from the data (see :attr:`big_m`).
    ``symmetry_breaking``: x_ij = 0 for j > i in the MINLP.
    """

    family = "khc"

    def __init__(self, points, k, norms=("2", "inf"), big_m=None, symmetry_breaking=True):
        try:
            pts = np.array(points, dtype=np.float64)
        except (TypeError, ValueError):
            raise ModelError("points must be a numeric (m, n) array") from None
        if pts.ndim != 2:
            raise ModelError(f"points must be a 2-D array (m points x n coordinates), got {pts.ndim}-D "
                             f"with shape {pts.shape}")
        if pts.shape[0] < 1 or pts.shape[1] < 1:
            raise ModelError(f"points need m >= 1 rows and n >= 1 columns, got shape {pts.shape}")
        if not np.all(np.isfinite(pts)):
            bad = int(np.argwhere(~np.isfinite(pts))[0, 0])
            raise ModelError(f"points must be finite; point {bad} is {pts[bad].tolist()}")
        if isinstance(k, bool) or not isinstance(k, numbers.Integral):
            raise ModelError(f"k must be an integer, got {k!r}")
        if not 1 <= k <= pts.shape[0]:
            raise ModelError(f"k must satisfy 1 <= k <= m = {pts.shape[0]}, got {k}")
        if big_m is not None:
            if isinstance(big_m, bool) or not isinstance(big_m, numbers.Real) or not math.isfinite(big_m) \
                    or big_m <= 0:
                raise ModelError(f"big_m must be a positive finite number or None, got {big_m!r}")
        pts.setflags(write=False)
        self.points = pts
        self.k = int(k)
        self.m, self.n = pts.shape
        self.norms = _parse_norms(norms)
        self.symmetry_breaking = bool(symmetry_breaking)
        self._big_m = None if big_m is None else float(big_m)

    @property
    def big_m(self) -> float:
        """The big-M of the distance rows: the given one, else the diameter of the point set.

        Why the diameter is valid: only optimal solutions need to satisfy the rows. In an
        optimal solution every nonempty cluster's plane is its least-squares plane, which passes
        through the cluster's centroid; the centroid lies in the convex hull of the points, so
        the distance of any point a to that plane is at most ||a - centroid|| <= the largest
        distance between two points of the set (the distance to a convex combination is at most
        the largest distance to its members). An empty cluster's plane can be put through any
        point. (A tiny positive floor keeps the rows meaningful when all points coincide.)
        """
        if self._big_m is not None:
            return self._big_m
        from solvopt.khc.relaxation import data_big_m
        return data_big_m(self.points)

    @classmethod
    def from_instance(cls, instance, **kwargs) -> "HyperplaneClustering":
        """The model of a k-HC :class:`~solvopt.io.base.Instance` (data = {"points", "k"})."""
        if getattr(instance, "family", None) != "khc":
            raise ModelError(f"expected a k-HC instance, got family {getattr(instance, 'family', None)!r}")
        return cls(instance.data["points"], instance.data["k"], **kwargs)

    def to_model(self):
        """The MINLP formulation as a DSL Model (built by :func:`solvopt.khc.formulation.build_model`,
        which also returns the variable handles)."""
        from solvopt.khc.formulation import build_model
        built = build_model(self)
        return built[0] if isinstance(built, tuple) else built

    def to_pyomo(self):
        """The MINLP formulation as a Pyomo ConcreteModel (SCIP, Gurobi, ... through Pyomo)."""
        return self.to_model().to_pyomo()

    def __repr__(self) -> str:
        return f"HyperplaneClustering(m={self.m}, n={self.n}, k={self.k}, norms={','.join(self.norms)})"
