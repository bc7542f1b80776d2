"""The k-HC2 family model: k-hyperplane clustering in the 2-norm.

Given points a_1..a_m in R^n and k, find k hyperplanes {x : w_j^T x = gamma_j}, ||w_j||_2 = 1,
and an assignment of the points to them minimising the sum of squared point-to-plane
distances. The model validates its data at construction (:func:`validate_points`,
:func:`validate_k`: the one validation every k-HC reader and method uses); ``solve(method)``
runs one of the registered "khc" methods (``solvopt methods --family khc``): "bnb" (exact
assignment branch-and-bound), "heuristic" (k-plane), "brute-force", "sbb" (spatial
branch-and-bound on the MINLP) and, where installed, "scip" / "gurobi" on the same MINLP
(:mod:`solvopt.dsl.hyperplane_formulation`).

The problem is similarity-equivariant: translating the points changes nothing, scaling them by
s scales every cost by s^2. :func:`unit_frame` gives the centre and scale that bring any finite
point set to a comfortable range without overflow; the methods solve there and report in the
user's units.

This module imports only NumPy and solvopt.core (no solver, no Numba).
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from solvopt.core.errors import ModelError

from .family import FamilyModel

NORMS = ("2", "1", "inf")
# The norm sets of the published models: the 2-norm MINLP with optional strengthening blocks,
# and the pure p-norm problems whose optima are lower bounds LB_p <= OPT_2.
NORM_SETS = (frozenset({"2"}), frozenset({"2", "inf"}), frozenset({"2", "1"}), frozenset({"2", "1", "inf"}),
             frozenset({"inf"}), frozenset({"1"}))
DEFAULT_NORMS = frozenset({"2", "inf"})
# A positive floor of the diameter big-M, so that the distance rows stay meaningful when all points coincide.
BIG_M_FLOOR = 1e-9


def parse_norms(norms, require_two: bool = False) -> frozenset[str]:
    """A norm set from "2,inf", ("2", "inf"), {"1"}, ...; ModelError for anything else.

    ``require_two``: the set must contain "2" (a k-HC2 model; the pure p-norm sets are
    relaxations a solver may be asked to solve, never the model itself).
    """
    if isinstance(norms, str):
        items = [p.strip() for p in norms.replace("+", ",").split(",") if p.strip()]
    else:
        try:
            items = [str(p).strip() for p in norms]
        except TypeError:
            raise ModelError(f"norms must be a collection of '2', '1', 'inf', got {norms!r}") from None
    items = ["inf" if p.lower() in ("inf", "infinity", "max") else p for p in items]
    unknown = sorted(set(items) - set(NORMS))
    if unknown:
        raise ModelError(f"unknown norm(s) {', '.join(map(repr, unknown))}; norms are a subset of 2, 1, inf")
    result = frozenset(items)
    if require_two and "2" not in result:
        raise ModelError(f"norms must contain '2' (the k-HC2 objective), got {sorted(result)}")
    if result not in NORM_SETS:
        valid = ", ".join("{" + ",".join(sorted(s)) + "}" for s in NORM_SETS)
        raise ModelError(f"norms {sorted(result)} is not a supported norm set; valid: {valid}")
    return result


def norm_names(norms: frozenset[str]) -> str:
    """The canonical text of a norm set: "2,inf", "2,1,inf", "1", ..."""
    return ",".join(n for n in NORMS if n in norms)


def validate_points(points, what: str = "points") -> np.ndarray:
    """The points as a finite, real (m, n) float64 array with m, n >= 1; ModelError otherwise.

    Complex, object and string arrays are refused (never truncated or parsed silently).
    """
    try:
        raw = np.asarray(points)
    except (TypeError, ValueError):
        raise ModelError(f"{what} must be a numeric (m, n) array (rows of equal length)") from None
    if raw.dtype.kind == "c":
        raise ModelError(f"{what} must be real; got a complex array (pass its .real explicitly if that is meant)")
    if raw.dtype.kind not in "biuf":
        raise ModelError(f"{what} must be a real numeric (m, n) array, got dtype {raw.dtype}")
    pts = np.array(raw, dtype=np.float64)
    if pts.ndim != 2:
        raise ModelError(f"{what} must be a 2-D array (m points x n coordinates), got {pts.ndim}-D "
                         f"with shape {pts.shape}")
    if pts.shape[0] < 1 or pts.shape[1] < 1:
        raise ModelError(f"{what} need m >= 1 rows and n >= 1 columns, got shape {pts.shape}")
    if not np.all(np.isfinite(pts)):
        bad = int(np.argwhere(~np.isfinite(pts))[0, 0])
        raise ModelError(f"{what} must be finite; point {bad} is {pts[bad].tolist()}")
    return pts


def validate_k(k, m: int) -> int:
    """k as an int in 1..m; ModelError otherwise."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise ModelError(f"k must be an integer, got {k!r}")
    if not 1 <= k <= m:
        raise ModelError(f"k must satisfy 1 <= k <= m = {m}, got {k}")
    return int(k)


def unit_frame(points: np.ndarray) -> tuple[np.ndarray, float]:
    """``(centre, scale)`` that bring the points to a comfortable range, computed without overflow.

    ``(points - centre) / scale`` is what the methods solve. Points whose half-width
    h = max |point - midpoint| lies in [2^-6, 2^12] are left at their scale (scale 1), others
    are scaled by a power of two (exact in floating point) to a half-width in [8, 16). They are
    centred on the midpoint of their bounding box only when the offset dominates (the largest
    coordinate is more than 64 h): otherwise centre 0, so ordinary data is solved exactly as
    given. ``lo/2 + hi/2`` never overflows, and every ``point - midpoint`` is at most half the
    box's width, itself a finite float. One scale for every coordinate: k-HC2 is equivariant
    under similarities only.
    """
    lo, hi = points.min(axis=0), points.max(axis=0)
    middle = lo / 2 + hi / 2
    half = float(np.max(np.abs(points - middle)))
    largest = float(np.max(np.abs(points)))
    if largest > 64.0 * half:
        centre = middle
    else:
        centre = np.zeros(points.shape[1])
    spread = float(np.max(np.abs(points - centre)))
    if not spread > 0.0 or 2.0 ** -6 <= spread <= 2.0 ** 12:
        return centre, 1.0
    return centre, math.ldexp(1.0, math.frexp(spread)[1] - 4)   # spread / scale in [8, 16)


def unit_points(points: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """``(unit, centre, scale)``: the points moved and scaled to a comfortable range (see :func:`unit_frame`)."""
    centre, scale = unit_frame(points)
    return (points - centre) / scale, centre, scale


def diameter(points) -> float:
    """Largest distance between two of the points (0 for a single point), computed without overflow.

    A valid big-M for the distance rows of the MINLP: an optimal plane passes through its
    cluster's centroid, inside the convex hull, so no point is farther from it than this.
    Returns inf when the diameter itself exceeds the float range.
    """
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[0] < 2:
        return 0.0
    unit, _, scale = unit_points(pts)
    sq = np.einsum("ij,ij->i", unit, unit)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * unit @ unit.T, 0.0)
    return float(np.sqrt(d2.max())) * scale


def data_big_m(points) -> float:
    """A valid, positive big-M for the distance rows: the diameter of the point set (floored at BIG_M_FLOOR)."""
    return max(diameter(points), BIG_M_FLOOR)


def validate_big_m(big_m) -> float | None:
    """None, or a positive finite float; ModelError otherwise."""
    if big_m is None:
        return None
    if isinstance(big_m, bool) or not isinstance(big_m, numbers.Real) or not math.isfinite(big_m) or big_m <= 0:
        raise ModelError(f"big_m must be a positive finite number or None, got {big_m!r}")
    return float(big_m)


class HyperplaneClustering(FamilyModel):
    """k-HC2 on ``points`` (m x n) with ``k`` hyperplanes.

    ``norms``: the norm blocks of the MINLP formulation used by the MINLP methods ("2" always;
    "inf" and/or "1" add the valid MILP strengthenings). ``big_m``: the big-M of the distance
    rows; None derives a valid one from the data (see :attr:`big_m`).
    ``symmetry_breaking``: x_ij = 0 for j > i in the MINLP.
    """

    family = "khc"

    def __init__(self, points, k, norms=("2", "inf"), big_m=None, symmetry_breaking=True):
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
    def from_instance(cls, instance, **kwargs) -> "HyperplaneClustering":
        """The model of a k-HC :class:`~solvopt.io.base.Instance` (data = {"points", "k"})."""
        if getattr(instance, "family", None) != "khc":
            raise ModelError(f"expected a k-HC instance, got family {getattr(instance, 'family', None)!r}")
        return cls(instance.data["points"], instance.data["k"], **kwargs)

    def to_model(self):
        """The published MINLP of this model as a DSL Model, in the user's units
        (:func:`solvopt.dsl.hyperplane_formulation.khc_minlp`)."""
        from .hyperplane_formulation import khc_minlp
        return khc_minlp(self.points, self.k, frozenset(self.norms), big_m=self.big_m,
                         symmetry_breaking=self.symmetry_breaking)[0]

    def to_pyomo(self):
        """The MINLP formulation as a Pyomo ConcreteModel (SCIP, Gurobi, ... through Pyomo)."""
        return self.to_model().to_pyomo()

    def __repr__(self) -> str:
        return f"HyperplaneClustering(m={self.m}, n={self.n}, k={self.k}, norms={','.join(self.norms)})"
