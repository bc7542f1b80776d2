"""Projection-pursuit peeling: a k-HC2 start that finds the planes one at a time (high dimensions).

Where k-plane restarts fail (n = 50, k = 10: neither n scattered points nor a point's nearest
neighbours tend to share a plane, and every seeded start lands in a local optimum about 200 times
the planted cost), the planes can still be seen one at a time: projected onto the normal of a
plane that holds a share of the points, the data has an *atom* (that share, at the plane's offset,
as wide as the noise) on top of the rest. So:

1. **Directions.** Projection pursuit (FastICA's fixed-point iteration on the whitened points,
   contrasts cycling through Gaussian, log-cosh and kurtosis) from random starts returns
   directions whose projection is far from Gaussian; many lie within 10-25 degrees of a normal.
2. **Offsets.** The peaks of the projection's histogram (and of its difference of Gaussians,
   which turns a shoulder into a peak) are the candidate offsets.
3. **Refinement.** From each (direction, offset): the annealed Welsch fit (iteratively reweighted
   total least squares with weights exp(-r^2 / 2h^2), the window h shrinking geometrically), and
   the same fit after a tilt search (:func:`tilt_search`). The tilt is needed because a window
   is thin along its own direction: the points of the other planes inside it (a third of them at
   25 degrees off) hold a reweighted fit there, while they give away the true normal as the
   window's direction of largest spread.
4. **Acceptance.** A candidate counts when its band of width 8 * scale holds at least 10 n points
   and ``ACCEPT`` times what the background density around it predicts (a plane fitted to
   nothing has ratio about 1; the planted planes of the benchmark score 10-20). The best one is
   accepted, its points (within 5 robust noise scales) are removed, and the search repeats on
   the rest until k planes are found or none is.

The result is a start, not an answer: :func:`pursuit_assignment` labels every point by its
nearest found plane and :func:`~solvopt.khc.heuristics.kplane` polishes it by k-plane and the
local search and keeps it only if it beats the other starts. It assumes every plane it should
find holds at least 10 n points; with fewer, it finds fewer planes and the other starts decide.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..core.interrupt import stop_reason
from .geometry import point_distances

# Pursuit starts per round, tried in turn while no plane is found (the first round: the first batch).
START_BATCHES = (12, 24)
# Minimum band density over the background density for a candidate plane.
ACCEPT = 3.0
# A candidate this much denser than the background is taken at once (no further directions).
TAKE_AT_ONCE = 6.0
# Points a plane must hold, in multiples of n (fewer do not determine a plane in R^n robustly).
MIN_POINTS_PER_DIM = 10
# First Welsch window and the smallest one, relative to the data's spread; the shrink factor.
FIRST_WINDOW, LAST_WINDOW, SHRINK = 0.3, 1e-4, 0.6
# Angles (radians) tried by the tilt search, up to 60 degrees either way, in 1 degree steps.
TILT_ANGLES = np.radians(np.r_[-60:0, 1:61].astype(float))
CONTRASTS = ("gauss", "logcosh", "kurtosis")
# Whole searches when one finds some of the k planes but not all (the best one is kept).
ATTEMPTS = 2


def _whitened(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(z, back): whitened centred points and the map taking a direction in z back to x-space."""
    centred = points - points.mean(axis=0)
    values, vectors = np.linalg.eigh(centred.T @ centred / len(points))
    values = np.maximum(values, 1e-12 * max(values[-1], 1e-300))
    back = vectors / np.sqrt(values)
    return centred @ back, back


def pursuit_directions(points: np.ndarray, starts: int, rng: np.random.Generator, max_iter: int = 200):
    """Unit directions (x-space) of locally most non-Gaussian projections, one per random start."""
    z, back = _whitened(points)
    size = len(z)
    for s in range(starts):
        contrast = CONTRASTS[s % len(CONTRASTS)]
        g = rng.normal(size=z.shape[1])
        g /= np.linalg.norm(g)
        for _ in range(max_iter):
            u = z @ g
            if contrast == "kurtosis":
                new = z.T @ u ** 3 / size - 3.0 * g
            elif contrast == "gauss":
                e = np.exp(-0.5 * u ** 2)
                new = z.T @ (u * e) / size - np.mean((1.0 - u ** 2) * e) * g
            else:
                t = np.tanh(u)
                new = z.T @ t / size - np.mean(1.0 - t ** 2) * g
            norm = np.linalg.norm(new)
            if not np.isfinite(norm) or norm == 0.0:
                break
            new /= norm
            converged = abs(new @ g) > 1.0 - 1e-9
            g = new
            if converged:
                break
        b = back @ g
        yield b / np.linalg.norm(b)


def _smooth(counts: np.ndarray, width: float) -> np.ndarray:
    r = int(np.ceil(3 * width))
    kernel = np.exp(-0.5 * np.arange(-r, r + 1) ** 2 / width ** 2)
    return np.convolve(np.pad(counts, r), kernel / kernel.sum(), mode="valid")


def projection_peaks(values: np.ndarray, width: float, top: int = 4) -> np.ndarray:
    """Candidate offsets: the highest local maxima of the smoothed histogram of ``values`` (bins of
    ``width``) and of its difference of Gaussians (a narrow atom on the flank of the bulk)."""
    lo, hi = np.percentile(values, [0.1, 99.9])
    if not hi - lo > 8 * width:          # all on one atom already
        return np.array([float(np.median(values))])
    counts, edges = np.histogram(values, bins=max(int((hi - lo) / width), 8), range=(lo, hi))
    centres = 0.5 * (edges[:-1] + edges[1:])
    narrow = _smooth(counts.astype(float), 1.5)
    found = []
    for curve in (narrow, narrow - _smooth(counts.astype(float), 6.0)):
        padded = np.r_[-np.inf, curve, -np.inf]
        local = np.flatnonzero((padded[1:-1] > padded[:-2]) & (padded[1:-1] >= padded[2:]) & (curve > 0))
        found.extend(centres[local[np.argsort(-curve[local])][:top]])
    return np.unique(np.round(np.asarray(found) / width)) * width


class Candidate(NamedTuple):
    """A plane {x : normal . x = offset}, its fitted scale, and its band's density ratio."""

    normal: np.ndarray
    offset: float
    scale: float
    ratio: float


def welsch_fit(points: np.ndarray, normal: np.ndarray, offset: float, first: float, last: float,
               min_points: int) -> Candidate | None:
    """Annealed Welsch plane fit from (normal, offset); the stage with the densest band wins.

    At window h the weights are exp(-r^2 / 2h^2) and the plane is the weighted total least squares
    fit (smallest eigenvector of the weighted scatter: a majorise-minimise step of the Welsch
    loss). h shrinks by SHRINK from ``first`` to ``last`` or until the weights sum to less than
    ``min_points / 2``. Each stage's plane is scored by the points within 4 of its scales
    against the background density measured in the first window.
    """
    best = None
    h = first
    while h >= last:
        mass = 0.0
        for _ in range(4):
            r = points @ normal - offset
            near = np.abs(r) < 5.0 * h                 # the rest weigh < 4e-6
            w = np.exp(-0.5 * (r[near] / h) ** 2)
            mass = w.sum()
            if mass < min_points / 2:
                break
            centre = w @ points[near] / mass
            centred = (points[near] - centre) * np.sqrt(w)[:, None]
            values, vectors = np.linalg.eigh(centred.T @ centred / mass)
            normal, offset = vectors[:, 0], float(vectors[:, 0] @ centre)
        if mass < min_points / 2:
            break
        r = np.abs(points @ normal - offset)
        scale = max(float(np.sqrt(max(values[0], 0.0))), last)
        in_band = np.count_nonzero(r < 4.0 * scale)
        background = max(int(np.count_nonzero(r < first)), 1) / (2.0 * first)
        ratio = in_band / (background * 8.0 * scale)
        if in_band >= min_points and (best is None or ratio > best.ratio):
            best = Candidate(normal.copy(), offset, scale, ratio)
        h *= SHRINK
    return best


def _densest(values: np.ndarray, width: float) -> tuple[int, float]:
    """(count, centre) of the densest window of ``width`` among two adjacent bins of width / 2."""
    low = float(values.min())
    counts = np.bincount(((values - low) / (width / 2.0)).astype(np.int64))
    if len(counts) > 1:
        counts = counts[:-1] + counts[1:]
    i = int(np.argmax(counts))
    return int(counts[i]), low + (i + 1) * width / 2.0


def tilt_search(points: np.ndarray, normal: np.ndarray, offset: float, h: float,
                max_rounds: int = 20) -> tuple[np.ndarray, float]:
    """Turn (normal, offset) towards the plane whose atom shows in the slab |normal . x - offset| < h.

    The slab's points that lie off the plane sit on one side of it, away from it along the
    plane's normal w; inside a slab thin along ``normal`` that shows along u, the part of w
    orthogonal to ``normal``: u is the direction of largest variance of the slab orthogonal to
    ``normal``. The new normal is the cos t normal + sin t u, |t| <= 60 degrees, whose
    projection has the densest window of width h / 2; repeated while t != 0.
    """
    for _ in range(max_rounds):
        slab = points[np.abs(points @ normal - offset) < h]
        if len(slab) < 2 * points.shape[1]:
            break
        centred = slab - slab.mean(axis=0)
        off_normal = centred - np.outer(centred @ normal, normal)
        u = np.linalg.eigh(off_normal.T @ off_normal)[1][:, -1]
        along, across = points @ normal, points @ u
        best_count, best_offset = _densest(along, h / 2.0)
        best_angle = 0.0
        for angle in TILT_ANGLES:
            count, centre = _densest(np.cos(angle) * along + np.sin(angle) * across, h / 2.0)
            if count > best_count:
                best_count, best_angle, best_offset = count, angle, centre
        if best_angle == 0.0:
            break
        normal = np.cos(best_angle) * normal + np.sin(best_angle) * u
        normal /= np.linalg.norm(normal)
        offset = best_offset
    return normal, offset


def _best_plane(points: np.ndarray, spread: float, rng: np.random.Generator,
                deadline: float | None, batches=START_BATCHES) -> Candidate | None:
    """The densest acceptable plane of one peeling round (None if no direction gives one)."""
    n = points.shape[1]
    first, last, min_points = FIRST_WINDOW * spread, LAST_WINDOW * spread, MIN_POINTS_PER_DIM * n
    best = None
    for starts in batches:
        for direction in pursuit_directions(points, starts, rng):
            for offset in projection_peaks(points @ direction, 0.1 * spread):
                found = [welsch_fit(points, direction, offset, first, last, min_points)]
                tilted = tilt_search(points, direction, offset, first)
                found.append(welsch_fit(points, tilted[0], tilted[1], first / 3.0, last, min_points))
                for cand in found:
                    if cand is not None and cand.ratio >= ACCEPT and (best is None or cand.ratio > best.ratio):
                        best = cand
                if (best is not None and best.ratio >= TAKE_AT_ONCE) or stop_reason(deadline) is not None:
                    return best
        if best is not None:
            return best
    return best


def _noise_scale(r: np.ndarray, scale: float) -> float:
    """Noise scale of a found plane from its residuals |r|, against the background next to it.

    A first guess s0 is the MAD of the residuals within 10 fitted scales (the fit may come from a
    window narrower than the noise, so s0 can be low). The plane's excess over the background
    density (measured in the ring 10 s0 <= |r| < 20 s0) grows with the band half-width t until
    the band holds the plane's points; the t where it first reaches 95% of its largest value is
    1.96 noise scales for Gaussian noise. (Iterating the MAD instead runs away into the
    background next to a plane that crosses the bulk.)
    """
    ordered = np.sort(r)
    near = ordered[: np.searchsorted(ordered, 10.0 * scale)]
    first = max(1.4826 * float(np.median(near)), scale) if len(near) else scale
    density = (np.searchsorted(ordered, 20.0 * first) - np.searchsorted(ordered, 10.0 * first)) / (20.0 * first)
    widths = scale * 1.25 ** np.arange(int(np.ceil(np.log(10.0 * first / scale) / np.log(1.25))) + 1)
    excess = np.searchsorted(ordered, widths) - 2.0 * density * widths
    reached = widths[np.argmax(excess >= 0.95 * excess.max())]
    return max(float(reached) / 1.96, scale)


def pursuit_planes(points, k: int, rng: np.random.Generator, deadline: float | None = None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Up to k planes found one at a time by projection pursuit and peeling.

    Returns ``(normals, offsets, widths)``: a found plane's points are those within its width
    (5 robust noise scales); they are removed before the next round.
    """
    pts = np.asarray(points, dtype=np.float64)
    m, n = pts.shape
    spread = float(np.sqrt(np.mean(np.var(pts, axis=0))))
    normals: list[np.ndarray] = []
    offsets: list[float] = []
    widths: list[float] = []
    remaining = np.arange(m)
    while (spread > 0.0 and len(normals) < k and len(remaining) >= MIN_POINTS_PER_DIM * n
           and stop_reason(deadline) is None):
        rest = pts[remaining]
        # no plane in the first batch: most likely none to find (points not on planes); give up soon
        cand = _best_plane(rest, spread, rng, deadline, START_BATCHES if normals else START_BATCHES[:1])
        if cand is None:
            break
        r = np.abs(rest @ cand.normal - cand.offset)
        width = 5.0 * _noise_scale(r, cand.scale)
        normals.append(cand.normal)
        offsets.append(cand.offset)
        widths.append(width)
        remaining = remaining[r >= width]
    return np.array(normals).reshape(-1, n), np.array(offsets), np.array(widths)


def pursuit_assignment(points, k: int, rng: np.random.Generator, deadline: float | None = None,
                       sample_size: int | None = None) -> tuple[np.ndarray, int]:
    """A start for k-plane from the pursuit planes: ``(labels, planes found)``.

    The planes are searched on a random sample of ``sample_size`` points when m is larger; when
    some but not all k are found, the search runs once more (a new sample, new directions: the
    peeling order changes) and the run that found more is kept. A point
    within a found plane's width takes the nearest such plane; when fewer than k planes were
    found, the points near none of them form one more cluster (k-plane's refits take it from there).
    """
    pts = np.asarray(points, dtype=np.float64)
    m = pts.shape[0]
    best = None
    for _ in range(ATTEMPTS):
        small = sample_size is None or m <= sample_size
        work = pts if small else pts[rng.choice(m, size=sample_size, replace=False)]
        planes = pursuit_planes(work, k, rng, deadline)
        if best is None or len(planes[0]) > len(best[0]):
            best = planes
        # none found: no planes to find
        if len(best[0]) == k or len(best[0]) == 0 or stop_reason(deadline) is not None:
            break
    assert best is not None             # ATTEMPTS >= 1
    normals, offsets, widths = best
    found = len(normals)
    if found == 0:
        return np.zeros(m, dtype=np.int64), 0
    distances = point_distances(pts, normals, offsets)
    labels = np.argmin(distances, axis=1).astype(np.int64)
    if found < k:
        labels[np.all(distances >= widths ** 2, axis=1)] = found
    return labels, found
