"""The k-HC2 data rules: norm sets, point / k / big-M validation, the unit frame and the diameter.

The one validation every k-HC reader, model and method uses (:class:`~solvopt.dsl.hyperplane.HyperplaneClustering`,
:func:`~solvopt.dsl.hyperplane_formulation.khc_minlp`, the khc family's solvers). :func:`unit_frame`
gives the centre and scale that bring any finite point set to a comfortable range without
overflow; the methods solve there and report in the user's units. Imports only NumPy and
solvopt.core.
"""
from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
import numpy.typing as npt

from solvopt.core.errors import ModelError

from .arrays import FloatArray

NORMS = ("2", "1", "inf")
# The norm sets of the published models: the 2-norm MINLP with optional strengthening blocks,
# and the pure p-norm problems whose optima are lower bounds LB_p <= OPT_2.
NORM_SETS = (frozenset({"2"}), frozenset({"2", "inf"}), frozenset({"2", "1"}), frozenset({"2", "1", "inf"}),
             frozenset({"inf"}), frozenset({"1"}))
DEFAULT_NORMS = frozenset({"2", "inf"})
# A positive floor of the diameter big-M, so that the distance rows stay meaningful when all points coincide.
BIG_M_FLOOR = 1e-9


def parse_norms(norms: Any, require_two: bool = False) -> frozenset[str]:
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


def validate_points(points: Any, what: str = "points") -> FloatArray:
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


def validate_k(k: Any, m: int) -> int:
    """k as an int in 1..m; ModelError otherwise."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise ModelError(f"k must be an integer, got {k!r}")
    value = int(k)
    if not 1 <= value <= m:
        raise ModelError(f"k must satisfy 1 <= k <= m = {m}, got {k}")
    return value


def unit_frame(points: FloatArray) -> tuple[FloatArray, float]:
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


def unit_points(points: FloatArray) -> tuple[FloatArray, FloatArray, float]:
    """``(unit, centre, scale)``: the points moved and scaled to a comfortable range (see :func:`unit_frame`)."""
    centre, scale = unit_frame(points)
    return (points - centre) / scale, centre, scale


def diameter(points: npt.ArrayLike) -> float:
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


def data_big_m(points: npt.ArrayLike) -> float:
    """A valid, positive big-M for the distance rows: the diameter of the point set (floored at BIG_M_FLOOR)."""
    return max(diameter(points), BIG_M_FLOOR)


def validate_big_m(big_m: Any) -> float | None:
    """None, or a positive finite float; ModelError otherwise."""
    if big_m is None:
        return None
    if isinstance(big_m, bool) or not isinstance(big_m, numbers.Real) or not math.isfinite(big_m) or big_m <= 0:
        raise ModelError(f"big_m must be a positive finite number or None, got {big_m!r}")
    return float(big_m)
