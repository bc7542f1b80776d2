"""The W_p optimal-transport family model: two weighted point sets (or a matrix) and p.

W_p(a, b) = (min over plans pi of sum_ij pi_ij d(i, j)^p)^(1/p), the plans pi >= 0 having row
sums a and column sums b (with a ready cost matrix C, as POT's ``M``: (min sum pi_ij C_ij)^(1/p));
for p = inf, the smallest possible largest distance d(i, j) that a plan puts mass on (the
bottleneck distance). The model validates its data at construction
(:func:`validate_points`, :func:`validate_weights`, :func:`validate_p`, ...: the one validation
the ``.npz`` reader and every method share) and gives the methods the distances they need one
block at a time (:meth:`Transport.distance_block`, :meth:`Transport.pair_distances`), so no
method has to hold the full n x m matrix of a point input.

This module imports only NumPy and solvopt.core (SciPy's ``cdist`` lazily, when distances are
asked for).
"""
from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Callable
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from solvopt.core.errors import ModelError

from .arrays import FloatArray, real_array
from .family import FamilyModel

METRICS = ("euclidean", "cityblock", "chebyshev")
# Relative tolerance on the equality of the two total masses; b is rescaled onto a's total
# within it, so that flows balance exactly.
MASS_RTOL = 1e-9
# Pairs per call of a callable metric in pair_distances (its block is at most this square).
PAIR_CHUNK = 1024
# Largest distance (or cost entry) accepted: the methods add two distances and multiply one by
# at most 3 (the approximation's arcs), which must stay finite in float64.
MAX_DISTANCE = 1e300
# Euclidean point sets must span between these: the kernels square coordinate differences,
# which must neither overflow nor fall below the normal float64 range.
EUCLIDEAN_SPAN = (1e-150, 1e150)

# a named metric, or a callable (X_block, Y) -> distances
Metric: TypeAlias = str | Callable[[FloatArray, FloatArray], Any]
# rows or columns of a block: a slice or an integer index array
Index: TypeAlias = slice | npt.NDArray[np.integer[Any]]


def validate_p(p: Any) -> float:
    """p as a float in [1, inf]; ``"inf"`` (any case, also "infinity") is accepted."""
    if isinstance(p, str):
        text = p.strip().lower()
        if text in ("inf", "infinity", "+inf"):
            return math.inf
        try:
            p = float(text)
        except ValueError:
            raise ModelError(f"p must be a number in [1, inf] or 'inf', got {p!r}") from None
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise ModelError(f"p must be a number in [1, inf] or 'inf', got {p!r}")
    value = float(p)
    if math.isnan(value) or value < 1:
        raise ModelError(f"p must be in [1, inf] (W_p is a distance only for p >= 1), got {value!r}")
    return value


def _real_array(value: Any, name: str) -> FloatArray:
    """A finite real float64 array (C-contiguous); ModelError for strings, objects, complex, NaN or inf."""
    return real_array(value, repr(name))


def validate_points(points: Any, name: str) -> FloatArray:
    """Points as a finite (count, dimension) float64 array with count, dimension >= 1.

    A 1-D array is read as points on the line (count, 1).
    """
    arr = _real_array(points, name)
    if arr.ndim == 1:
        arr = arr.reshape(-1, 1)
    if arr.ndim != 2:
        raise ModelError(f"{name!r} must be 2-D (count, dimension), got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ModelError(f"{name!r} is empty: a transport problem needs at least one point on each side")
    if arr.shape[1] == 0:
        raise ModelError(f"{name!r} has points of dimension 0")
    return arr


def validate_cost(cost: Any, name: str = "cost") -> FloatArray:
    """A finite, nonnegative (n, m) matrix with n, m >= 1 (``name``: "cost" or "distance")."""
    arr = _real_array(cost, name)
    what = "distances" if name == "distance" else "costs"
    if arr.ndim != 2:
        raise ModelError(f"{name!r} must be a 2-D (n, m) matrix of {what}, got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ModelError(f"{name!r} is empty (shape {arr.shape}): a transport problem needs at least one point "
                         "on each side")
    if float(arr.min()) < 0:              # (reductions: no boolean temporaries of the matrix's size)
        where = tuple(int(i) for i in np.argwhere(arr < 0)[0])
        raise ModelError(f"{name!r} has a negative {what[:-1]} at {where}")
    if float(arr.max()) > MAX_DISTANCE:
        where = tuple(int(i) for i in np.argwhere(arr > MAX_DISTANCE)[0])
        raise ModelError(f"{name!r} has an entry above {MAX_DISTANCE:g} at {where}: divide the matrix by a "
                         "constant (W_p scales with it)")
    return arr


def validate_weights(weights: Any, name: str, count: int, owner: str) -> FloatArray:
    """Nonnegative finite masses, one per point of ``owner``, with a positive total."""
    w = _real_array(weights, name)
    if w.ndim != 1:
        raise ModelError(f"{name!r} must be 1-D (one mass per point), got shape {w.shape}")
    if w.shape[0] != count:
        raise ModelError(f"{name!r} has {w.shape[0]} entries but {owner!r} has {count} points")
    if w.size and float(w.min()) < 0:
        raise ModelError(f"{name!r} has a negative weight at index {int(np.argmax(w < 0))}")
    if w.size and float(w.max()) * w.size < 1e308:      # the sum cannot overflow: no errstate (microseconds)
        total = float(w.sum())
    else:
        with np.errstate(over="ignore"):
            total = float(w.sum())
    if not total > 0:
        raise ModelError(f"{name!r} must have a positive total mass")
    if total < sys.float_info.min:      # subnormal: a few significant bits, no status can be settled on it
        raise ModelError(f"{name!r} has a total mass of {total:g}, below float64's normal range: multiply the masses "
                         "by a constant (W_p scales with the total mass to the 1/p)")
    if not math.isfinite(total):
        raise ModelError(f"{name!r} has a total mass that overflows float64: divide the masses by a constant "
                         "(W_p scales with the total mass to the 1/p)")
    return w


def balanced_weights(a: Any, b: Any, n: int, m: int, a_owner: str = "x",
                     b_owner: str = "y") -> tuple[FloatArray, FloatArray]:
    """(a, b) validated, with equal totals.

    A missing side gets uniform weights carrying the other side's total (1 when both are
    missing: 1/n and 1/m). Totals that differ by more than :data:`MASS_RTOL` (relative) are a
    ModelError; within it, b is rescaled onto a's total so that flows balance exactly.
    """
    a = None if a is None else validate_weights(a, "a", n, a_owner)
    b = None if b is None else validate_weights(b, "b", m, b_owner)
    if a is None:
        a = np.full(n, (1.0 if b is None else float(b.sum())) / n)
    if b is None:
        b = np.full(m, float(a.sum()) / m)
    total_a, total_b = float(a.sum()), float(b.sum())
    if abs(total_a - total_b) > MASS_RTOL * max(total_a, total_b):
        raise ModelError(f"'a' and 'b' must have equal total mass (relative tolerance {MASS_RTOL:g}), "
                         f"got {total_a!r} and {total_b!r}")
    if total_a != total_b:
        b = b * (total_a / total_b)
    return a, b


def _metric(metric: Any) -> Metric:
    if callable(metric):
        named: Metric = metric
        return named
    if isinstance(metric, str) and metric.lower() in METRICS:
        return metric.lower()
    raise ModelError(f"metric must be one of {', '.join(METRICS)} or a callable (X_block, Y) -> distances, "
                     f"got {metric!r}")


class Transport(FamilyModel):
    """W_p optimal transport between weighted point sets x (n, d) and y (m, d), or over a matrix.

    Parameters: ``x``, ``y`` point arrays (a 1-D array is points on the line); or ``cost`` an
    (n, m) ready cost matrix C, exactly POT's ``M`` (W_p = (min sum pi C)^(1/p): C is not raised
    to p; e.g. squared euclidean distances with p = 2; finite p only); or ``distance`` an (n, m)
    matrix of distances d(i, j), raised to p (then x and y stay None); ``a``, ``b``
    nonnegative masses with equal totals (uniform by default, see :func:`balanced_weights`);
    ``p`` in [1, inf] (``float("inf")`` or ``"inf"``: the bottleneck distance); ``metric``
    "euclidean", "cityblock", "chebyshev" or a callable ``metric(X_block, Y)`` returning the
    (len(X_block), len(Y)) distances (it should be a metric for the approximation's guarantee).

    Attributes: ``x``, ``y``, ``a``, ``b``, ``p``, ``metric`` (None for a matrix), ``n``, ``m``,
    ``dimension`` (None for a matrix), ``mass`` (the common total); ``distances``: the (n, m)
    distance matrix the methods use (``distance`` itself, or C^(1/p) for a ready cost; None for
    points), also under its older name ``cost``; ``ready_cost``: C as given (None otherwise).
    """

    family = "transport"

    x: FloatArray | None
    y: FloatArray | None
    cost: FloatArray | None
    metric: Metric | None
    dimension: int | None

    def __init__(self, x: Any = None, y: Any = None, a: Any = None, b: Any = None, p: Any = 2,
                 metric: Any = "euclidean", cost: Any = None, distance: Any = None):
        self.p = validate_p(p)
        self.ready_cost: FloatArray | None = None
        if cost is not None and distance is not None:
            raise ModelError("give either 'cost' (a ready cost, POT's M, not raised to p) or 'distance' "
                             "(distances, raised to p), not both")
        if cost is not None or distance is not None:
            name = "cost" if cost is not None else "distance"
            if x is not None or y is not None:
                raise ModelError(f"give either the points x and y or a {name} matrix, not both")
            if not (isinstance(metric, str) and metric == "euclidean"):
                raise ModelError(f"metric applies to point inputs; a {name} matrix already holds the "
                                 + ("costs" if name == "cost" else "distances"))
            if distance is not None:
                self.cost = validate_cost(distance, "distance")
            else:
                if math.isinf(self.p):
                    raise ModelError("a ready cost matrix (cost=, POT's M) needs a finite p: W_p = (min <P, C>)^(1/p); "
                                     "for the bottleneck W_inf give distances (distance=)")
                self.ready_cost = validate_cost(cost, "cost")
                with np.errstate(under="ignore"):
                    self.cost = np.power(self.ready_cost, 1.0 / self.p) if self.p != 1.0 else self.ready_cost
            self.x = self.y = None
            self.metric = None
            self.n, self.m = self.cost.shape
            self.dimension = None
            self.a, self.b = balanced_weights(a, b, self.n, self.m, f"{name} rows", f"{name} columns")
        else:
            if x is None or y is None:
                raise ModelError("give the points x and y (arrays of shape (count, dimension)), a cost matrix "
                                 "(cost=, POT's M) or a distance matrix (distance=)")
            self.cost = None
            self.x = validate_points(x, "x")
            self.y = validate_points(y, "y")
            if self.x.shape[1] != self.y.shape[1]:
                raise ModelError(f"'x' and 'y' must have the same dimension, got {self.x.shape[1]} and "
                                 f"{self.y.shape[1]}")
            self.metric = _metric(metric)
            self.n, self.m = self.x.shape[0], self.y.shape[0]
            self.dimension = self.x.shape[1]
            self.a, self.b = balanced_weights(a, b, self.n, self.m)
            if callable(self.metric):
                self.distance_block(slice(0, 1), np.arange(min(self.m, 4)))  # a bad metric fails here, clearly
        self._distance_scale: float | None = None
        if self.cost is None and not callable(self.metric):
            self._check_span()              # (sets the distance scale from its bounding box)
        self.mass = float(self.a.sum())
        self._check_value_range()

    def _check_value_range(self) -> None:
        """ModelError when W_p could leave float64's range: the data's distance scale D times the
        total mass M to the 1/p (W_p <= D M^(1/p)) overflows; callable metrics have no scale."""
        if math.isinf(self.p):
            return
        distance = self.distance_scale()
        if distance is not None and not math.isfinite(distance * self.mass ** (1.0 / self.p)):
            raise ModelError("W_p could exceed float64's range (the largest distance times the total mass to the 1/p "
                             "overflows): divide the masses or the coordinates by a constant (W_p scales with both)")

    @property
    def distances(self) -> FloatArray | None:
        """The (n, m) distance matrix the methods use (raised to p by them); None for points."""
        return self.cost

    def _points(self) -> tuple[FloatArray, FloatArray]:
        """(x, y) of a point input (a matrix input has none)."""
        if self.x is None or self.y is None:
            raise ModelError("this transport problem is given by a matrix: it has no points")
        return self.x, self.y

    def _box_extent(self) -> FloatArray:
        """Per axis, the extent of the bounding box of the points with positive mass."""
        x, y = self._points()
        # the masses are nonnegative: all nonzero is all positive, and then no masked copies
        both = np.concatenate((x if self.a.all() else x[self.a > 0], y if self.b.all() else y[self.b > 0]))
        high, low = both.max(axis=0), both.min(axis=0)
        if math.isfinite(float(high.max()) - float(low.min())):     # (Python floats overflow silently)
            extent: FloatArray = high - low                         # no axis overflows: no errstate (microseconds)
            return extent
        with np.errstate(over="ignore"):
            extent = high - low
        return extent

    def _metric_length(self, extent: FloatArray) -> float:
        """The named metric's length of a per-axis extent (the bounding box's diagonal for euclidean)."""
        return float(np.sqrt(np.dot(extent, extent)) if self.metric == "euclidean"
                     else extent.sum() if self.metric == "cityblock" else extent.max())

    def _check_span(self) -> None:
        """ModelError when the distances of a named metric would leave float64's safe range; else
        the distance scale from the same bounding box (one pass over the points)."""
        extent = self._box_extent()
        if not math.isfinite(float(extent.max())):         # (extents are >= 0 or inf, never NaN)
            raise ModelError("the points span more than float64 holds: divide the coordinates by a constant "
                             "(W_p scales with them)")
        if self.metric != "euclidean":
            if float(extent.sum()) > MAX_DISTANCE:
                raise ModelError(f"the points span more than {MAX_DISTANCE:g}: divide the coordinates by a constant "
                                 "(W_p scales with them)")
            self._distance_scale = self._metric_length(extent)
            return
        low, high = EUCLIDEAN_SPAN
        top = float(extent.max())
        if top > high:
            raise ModelError(f"the points span more than {high:g} (squared differences would overflow): divide the "
                             "coordinates by a constant (W_p scales with them)")
        if 0 < top < low:
            raise ModelError(f"the points span less than {low:g} (squared differences would underflow): multiply "
                             "the coordinates by a constant (W_p scales with them)")
        self._distance_scale = self._metric_length(extent)

    def distance_scale(self) -> float | None:
        """The data's own scale of distances: an upper bound on every distance between points with mass.

        Named metrics: the metric's length of the bounding box's extent (its diagonal for
        euclidean, within a factor sqrt(dimension) of the largest distance); a cost matrix: its
        largest entry between rows and columns with mass; a callable metric: None (the methods
        then use the largest distance their plan uses). 0 when every distance is 0. It scales
        with the points (or the matrix), so statuses settled in units of it do not depend on the
        data's units (see :func:`solvopt.transport.result.status_scale`).
        """
        if self._distance_scale is None:
            if self.cost is not None:
                rows, cols = np.flatnonzero(self.a > 0), np.flatnonzero(self.b > 0)
                if len(rows) == self.n and len(cols) == self.m:
                    self._distance_scale = float(self.cost.max())
                else:                   # row blocks: no copy of the whole matrix
                    step = max(1, (1 << 22) // max(len(cols), 1))
                    self._distance_scale = max(float(self.cost[rows[i:i + step]][:, cols].max())
                                               for i in range(0, len(rows), step))
            elif callable(self.metric):
                return None
            else:
                self._distance_scale = self._metric_length(self._box_extent())
        return self._distance_scale

    def __repr__(self) -> str:
        if self.cost is not None:
            what = f"{'cost' if self.ready_cost is not None else 'distance'} {self.n}x{self.m}"
        else:
            metric = getattr(self.metric, "__name__", self.metric)
            what = f"x {self.n}x{self.dimension}, y {self.m}x{self.dimension}, metric={metric}"
        return f"Transport({what}, p={self.p:g}, mass={self.mass:g})"

    def distance_block(self, rows: Index = slice(None), cols: Index | None = None) -> FloatArray:
        """d(i, j) (not raised to p) for i in ``rows`` and j in ``cols`` (all targets when None).

        ``rows`` / ``cols``: a slice or an integer index array. Returns a float64 (rows x cols)
        array; for a callable metric, its answer is checked (shape, finite, nonnegative).
        """
        if self.cost is not None:
            block = self.cost[rows]
            return block if cols is None else block[:, cols]
        x, y = self._points()
        xs = np.atleast_2d(x[rows])
        ys = y if cols is None else np.atleast_2d(y[cols])
        if callable(self.metric):
            return self.callable_block(xs, ys)
        from scipy.spatial.distance import cdist  # exact differences (no |x|^2 + |y|^2 - 2xy cancellation)
        dist: FloatArray = cdist(xs, ys, self.metric)
        return dist

    def callable_block(self, xs: FloatArray, ys: FloatArray) -> FloatArray:
        """The callable metric's (len(xs), len(ys)) distances between two point blocks, checked."""
        metric = self.metric
        name = getattr(metric, "__name__", type(metric).__name__)
        if not callable(metric):
            raise ModelError(f"metric {name} is not a callable")
        try:
            out = np.asarray(metric(xs, ys), dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ModelError(f"metric {name} failed on a ({len(xs)}, {len(ys)}) block: {exc}") from None
        if out.shape != (len(xs), len(ys)):
            raise ModelError(f"metric {name} must return a ({len(xs)}, {len(ys)}) array of distances for "
                             f"{len(xs)} sources and {len(ys)} targets, got shape {out.shape}")
        if not np.all(np.isfinite(out)) or np.any(out < 0):
            raise ModelError(f"metric {name} returned a negative or non-finite distance")
        return out

    def pair_distances(self, i: npt.ArrayLike, j: npt.ArrayLike) -> FloatArray:
        """d(i[k], j[k]) for each k (the distances a plan's support uses), float64."""
        ii = np.asarray(i, dtype=np.int64)
        jj = np.asarray(j, dtype=np.int64)
        if ii.shape != jj.shape:
            raise ModelError(f"pair_distances needs index arrays of one shape, got {ii.shape} and {jj.shape}")
        if self.cost is not None:
            return self.cost[ii, jj]
        if not callable(self.metric):
            x, y = self._points()
            diff = x[ii] - y[jj]
            out: FloatArray
            if self.metric == "euclidean":
                out = np.sqrt(np.einsum("...k,...k->...", diff, diff))
                return out
            np.abs(diff, out=diff)
            out = diff.sum(axis=-1) if self.metric == "cityblock" else diff.max(axis=-1)
            return out
        return self._callable_pairs(ii.ravel(), jj.ravel()).reshape(ii.shape)

    def _callable_pairs(self, i: npt.NDArray[np.int64], j: npt.NDArray[np.int64]) -> FloatArray:
        """Pairs for a callable metric: blocks of sources against the targets they use."""
        x, y = self._points()
        out = np.empty(len(i))
        order = np.argsort(i, kind="stable")
        for start in range(0, len(order), PAIR_CHUNK):
            ks = order[start:start + PAIR_CHUNK]
            rows, row_at = np.unique(i[ks], return_inverse=True)
            cols, col_at = np.unique(j[ks], return_inverse=True)
            out[ks] = self.callable_block(x[rows], y[cols])[row_at, col_at]
        return out
