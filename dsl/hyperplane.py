"""The k-HC2 family model: k-hyperplane clustering in the 2-norm.

Given points a_1..a_m in R^n and k, find k hyperplanes {x : w_j^T x = gamma_j}, ||w_j||_2 = 1,
and an assignment of the points to them minimising the sum of squared point-to-plane
distances. The model validates its data at construction with the family's one validation
(:mod:`solvopt.dsl.hyperplane_data`); ``solve(method)`` runs one of the registered "khc"
methods (``solvopt methods --family khc``): "bnb" (exact assignment branch-and-bound),
"heuristic" (k-plane), "brute-force", "sbb" (spatial branch-and-bound on the MINLP) and, where
installed, "scip" / "gurobi" on the same MINLP (:mod:`solvopt.dsl.hyperplane_formulation`).

The problem is similarity-equivariant: translating the points changes nothing, scaling them by
s scales every cost by s^2 (:func:`~solvopt.dsl.hyperplane_data.unit_frame`).

This module imports only the DSL and solvopt.core (no solver, no Numba).
"""
from __future__ import annotations

from typing import Any

from solvopt.core.errors import ModelError

from .family import FamilyModel
from .hyperplane_data import NORMS, data_big_m, parse_norms, validate_big_m, validate_k, validate_points
from .hyperplane_formulation import khc_minlp
from .model import Model


class HyperplaneClustering(FamilyModel):
    """k-HC2 on ``points`` (m x n) with ``k`` hyperplanes.

    ``norms``: the norm blocks of the MINLP formulation used by the MINLP methods ("2" always;
    "inf" and/or "1" add the valid MILP strengthenings). ``big_m``: the big-M of the distance
    rows; None derives a valid one from the data (see :attr:`big_m`).
    ``symmetry_breaking``: x_ij = 0 for j > i in the MINLP.
    """

    family = "khc"

    def __init__(self, points: Any, k: Any, norms: Any = ("2", "inf"), big_m: Any = None,
                 symmetry_breaking: bool = True):
        pts = validate_points(points)
        self.k = validate_k(k, pts.shape[0])
        pts.setflags(write=False)
        self.points = pts
        self.m, self.n = pts.shape
        parsed = parse_norms(norms, require_two=True)
        self.norms = tuple(n for n in NORMS if n in parsed)
        self.symmetry_breaking = bool(symmetry_breaking)
        self._big_m = validate_big_m(big_m)

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
        return data_big_m(self.points)

    @property
    def given_big_m(self) -> float | None:
        """The big-M passed by the user (None: derived from the data)."""
        return self._big_m

    @classmethod
    def from_instance(cls, instance: Any, **kwargs: Any) -> HyperplaneClustering:
        """The model of a k-HC :class:`~solvopt.io.base.Instance` (data = {"points", "k"})."""
        if getattr(instance, "family", None) != "khc":
            raise ModelError(f"expected a k-HC instance, got family {getattr(instance, 'family', None)!r}")
        return cls(instance.data["points"], instance.data["k"], **kwargs)

    def to_model(self) -> Model:
        """The published MINLP of this model as a DSL Model, in the user's units
        (:func:`solvopt.dsl.hyperplane_formulation.khc_minlp`)."""
        return khc_minlp(self.points, self.k, frozenset(self.norms), big_m=self.big_m,
                         symmetry_breaking=self.symmetry_breaking)[0]

    def to_pyomo(self) -> Any:
        """The MINLP formulation as a Pyomo ConcreteModel (SCIP, Gurobi, ... through Pyomo)."""
        return self.to_model().to_pyomo()

    def __repr__(self) -> str:
        return f"HyperplaneClustering(m={self.m}, n={self.n}, k={self.k}, norms={','.join(self.norms)})"
