"""Certified best responses of single-variable players, without a projection per step.

A player with one variable maximises a concave phi(t) over an interval [l, h] (its bounds and
every row that involves it, the others' actions fixed). :func:`concave_max_1d` brackets the root
of phi' (phi' is nonincreasing by concavity) and shrinks the bracket by Illinois false position on
phi'. Its bound is certified by concavity alone: phi lies below every tangent, so with
s1 < s2, phi'(s1) > 0 > phi'(s2),

    max over [l, h] of phi  =  max over [s1, s2] of phi  <=  max over t of min(T1(t), T2(t)),

the value where the two tangents T1, T2 cross; phi'(l) <= 0 (or phi'(h) >= 0) makes the end
point the exact maximiser. Nothing is taken on trust from the iteration: a loose stop only
loosens the bound.

:func:`separable_response` does the same for the whole joint response
max over b in K of sum_i u_i(b_i, a_-i) - (alpha/2)||b - a||^2 when every player has one variable
and K is intervals plus at most one row coupling several players: by Lagrangian duality
(weak duality for any multiplier, so the bound never relies on the multiplier being exact),
each multiplier lambda of the row gives the separable upper bound
sum_i max_t [phi_i(t) - lambda r_i t] + lambda c, and lambda is found by false position on
the row's residual.
"""
from __future__ import annotations

import numpy as np

from solvopt.core.errors import ModelError

from .projection import FEAS_TOL, check_stop

REL_STOP = 4e-16        # stop when the bound is this close (relative) to the best value found
MAX_STEPS = 100         # bracket shrinking steps per maximisation
GROW_STEPS = 200        # doublings when searching for a bracket on an unbounded side


def _tangent_bound(s1, v1, d1, s2, v2, d2) -> float:
    """max over t of min(T1(t), T2(t)), the tangents at s1 (slope d1 > 0) and s2 (slope d2 < 0).

    Evaluated as max(T1, T2) at the computed crossing: T1 rises and T2 falls, so that is never
    below the true crossing value whatever the rounding of the crossing point.
    """
    t = (v2 - v1 + d1 * s1 - d2 * s2) / (d1 - d2)
    return max(v1 + d1 * (t - s1), v2 + d2 * (t - s2), v1, v2)


def concave_max_1d(fg, l: float, h: float, x0: float, check=None):
    """(t, phi(t), certified upper bound on max over [l, h] of phi) for a concave phi.

    ``fg(t)`` returns (phi(t), phi'(t)); ``check(v_x, d_x, v_y, y - x)`` (optional) refuses a
    point that breaks a tangent (a non-concave phi or a wrong derivative would make the bound a lie).
    """
    if l > h:
        raise ModelError("a player's feasible set is empty (its bounds and constraints cannot all hold)")
    x0 = min(max(x0, l), h)
    if not np.isfinite(x0):
        x0 = 0.0 if l < 0.0 < h else (h if np.isfinite(h) else l)
    pts: dict[float, tuple[float, float]] = {}
    recent: list[float] = []

    def at(t, known=None):
        if t in pts:
            return pts[t]
        v, d = fg(t) if known is None else known
        if check is not None:                 # against the latest points (the bracket's ends among them)
            for s in recent[-3:]:
                vs, ds = pts[s]
                check(vs, ds, v, t - s)
                check(v, d, vs, s - t)
        pts[t] = (v, d)
        recent.append(t)
        return v, d

    v0, d0 = at(x0)
    if d0 == 0.0:
        return x0, v0, v0
    l, h, sliver = _defined_end(fg, at, l, h, x0, d0 > 0.0)
    t, v, top = _bracketed(at, l, h, x0, v0, d0)
    return t, v, max(top, sliver)


def _defined_end(fg, at, l, h, x0, upward: bool):
    """The interval's end in the direction of ascent, moved inside where phi is undefined there.

    (A utility's domain may end at a bound: A.16's cost at S = 0.) An end where phi fails is
    replaced by the nearest point toward x0 where it is defined (halving the distance); the sliver
    left out is bounded by the tangent there (concavity): phi <= phi(t) + |phi'(t)| |end - t| when
    phi' points to the end, else phi(t). Returns (l, h, that bound).
    """
    end = h if upward else l
    if not np.isfinite(end) or end == x0:
        return l, h, -np.inf
    try:
        known = fg(end)
    except (ModelError, ArithmeticError, ValueError):
        known = None
    if known is not None:
        at(end, known)                                # checked and kept: _outward finds it there
        return l, h, -np.inf
    inside = None
    for e in range(1, 60):
        t = end + (x0 - end) * 2.0 ** -e
        try:
            fg(t)
        except (ModelError, ArithmeticError, ValueError):
            break
        inside = t
    if inside is None or inside == x0:
        raise ModelError("a utility is undefined next to the start point of its player's interval")
    v, d = at(inside)
    out = d if upward else -d                         # the slope toward the end
    sliver = v + max(0.0, out) * abs(end - inside)
    return (l, inside, sliver) if upward else (inside, h, sliver)


def _bracketed(at, l, h, x0, v0, d0):
    """concave_max_1d once phi is defined on [l, h] and phi'(x0) != 0."""
    if d0 > 0.0:
        s1, v1, d1 = x0, v0, d0
        s2, v2, d2 = _outward(at, x0, h, +1.0)
        if d2 >= 0.0:                         # the upper end: the exact maximiser
            return s2, v2, v2
    else:
        s2, v2, d2 = x0, v0, d0
        s1, v1, d1 = _outward(at, x0, l, -1.0)
        if d1 <= 0.0:
            return s1, v1, v1
    if d1 == 0.0:
        return s1, v1, v1
    if d2 == 0.0:
        return s2, v2, v2
    # Illinois false position on phi' over the bracket [s1, s2] (d1 > 0 > d2)
    w1, w2, side = d1, d2, 0
    for _ in range(MAX_STEPS):
        best = max(v1, v2)
        top = _tangent_bound(s1, v1, d1, s2, v2, d2)
        if top - best <= REL_STOP * (1.0 + abs(best)) or s2 - s1 <= 2e-16 * max(abs(s1), abs(s2)):
            break
        t = s1 + w1 * (s2 - s1) / (w1 - w2)
        if not (s1 < t < s2):
            t = 0.5 * (s1 + s2)
            if not (s1 < t < s2):
                break
        v, d = at(t)
        if d == 0.0:
            return t, v, v
        if d > 0.0:
            s1, v1, d1, w1 = t, v, d, d
            if side == 1:
                w2 *= 0.5
            side = 1
        else:
            s2, v2, d2, w2 = t, v, d, d
            if side == -1:
                w1 *= 0.5
            side = -1
    top = _tangent_bound(s1, v1, d1, s2, v2, d2)
    return (s1, v1, top) if v1 >= v2 else (s2, v2, top)


def _outward(at, x0, end, sign):
    """The end point (when finite) or the first doubling step past which phi' changes sign."""
    if np.isfinite(end):
        return (end,) + at(end)
    width = 1.0 + abs(x0)
    for _ in range(GROW_STEPS):
        check_stop()
        t = x0 + sign * width
        v, d = at(t)
        if sign * d <= 0.0:
            return t, v, d
        width *= 2.0
    raise ModelError("a player's problem is unbounded (its utility grows without bound on its feasible set)")


# --- intervals of single-variable players --------------------------------------------------
def interval(lb: float, ub: float, coef, lo, hi, slack: float = FEAS_TOL):
    """The interval {lb <= t <= ub, lo <= coef t <= hi} (rows with coefficient 0 are ignored).

    An empty set by at most ``slack`` (rounding at a point on the boundary) is the single point
    in between; emptier raises ModelError.
    """
    l, h = float(lb), float(ub)
    coef, lo, hi = np.asarray(coef, float), np.asarray(lo, float), np.asarray(hi, float)
    keep = coef != 0.0                       # a zero coefficient (stored explicitly) bounds nothing
    coef, lo, hi = coef[keep], lo[keep], hi[keep]
    with np.errstate(divide="ignore", invalid="ignore"):
        a, b = lo / coef, hi / coef
    low = np.where(coef > 0, a, b)
    up = np.where(coef > 0, b, a)
    low = low[~np.isnan(low)]
    up = up[~np.isnan(up)]
    l = max(l, float(low.max(initial=-np.inf)))
    h = min(h, float(up.min(initial=np.inf)))
    if l > h:
        if l - h > slack * (1.0 + max(abs(l), abs(h))):
            raise ModelError("a player's feasible set is empty (its bounds and constraints cannot all hold)")
        l = h = 0.5 * (l + h)
    return l, h


class ScalarStructure:
    """K for games whose players all have one variable: intervals plus at most one coupling row.

    ``None`` from :meth:`of` when the game does not have that shape (the generic path is used).
    """

    def __init__(self, lo_b, hi_b, row, row_lo, row_hi):
        self.l, self.h = lo_b, hi_b
        self.row, self.row_lo, self.row_hi = row, row_lo, row_hi     # row is None when there is none
        self.last = 0.0                     # the row's multiplier at the last joint response (a warm start)

    @classmethod
    def of(cls, game):
        if any(len(cols) != 1 for cols in game.blocks):
            return None
        cols = np.array([c[0] for c in game.blocks])
        A = game.A.tocsr()
        l, h = game.lb[cols].astype(float), game.ub[cols].astype(float)
        coupling = []
        for k in range(A.shape[0]):
            idx = A.indices[A.indptr[k]:A.indptr[k + 1]]
            val = A.data[A.indptr[k]:A.indptr[k + 1]]
            nz = val != 0
            idx, val = idx[nz], val[nz]
            if len(idx) == 0:
                continue
            if len(idx) == 1:
                j = int(np.flatnonzero(cols == idx[0])[0])
                l[j], h[j] = interval(l[j], h[j], val, [game.lo[k]], [game.hi[k]], slack=np.inf)
                continue
            coupling.append(k)
        if len(coupling) > 1:
            return None
        if not coupling:
            return cls(l, h, None, None, None)
        k = coupling[0]
        row = np.asarray(A[k].toarray()).ravel()[cols]
        return cls(l, h, row, float(game.lo[k]), float(game.hi[k]))


def separable_response(game, S: ScalarStructure, a, alpha: float = 0.0, check=None):
    """(b, value at b, certified upper bound) of max over b in K of sum_i u_i(b_i, a_-i) - (alpha/2)||b - a||^2.

    ``b`` lies in K (the coupling row enforced by the closed-form projection onto K).
    """
    n = len(game.blocks)
    cols = [c[0] for c in game.blocks]

    def solve_all(lam, starts):
        b, top, val = np.empty(n), 0.0, 0.0
        for i in range(n):
            j, u = cols[i], game.utilities[i]
            r = 0.0 if S.row is None else S.row[i]

            def fg(t, j=j, u=u, r=r):
                z = a.copy()
                z[j] = t
                return (u.value(z) - 0.5 * alpha * (t - a[j]) ** 2 - lam * r * t,
                        float(u.gradient(z)[j]) - alpha * (t - a[j]) - lam * r)

            check_stop()
            t, v, ub = concave_max_1d(fg, S.l[i], S.h[i], starts[i], check)
            b[i], top, val = t, top + ub, val + v + lam * r * t
        return b, top

    starts = np.array([a[j] for j in cols], dtype=float)
    b, top = solve_all(0.0, starts)
    best_top = top
    if S.row is not None:
        res = float(S.row @ b)
        if res > S.row_hi or res < S.row_lo:
            c = S.row_hi if res > S.row_hi else S.row_lo
            sign = 1.0 if res > S.row_hi else -1.0      # the multiplier's sign
            lam1, g1 = 0.0, res - c                     # g(lam) = r.b(lam) - c, nonincreasing in lam
            lam2 = g2 = None
            # bracket the root from the last solve's multiplier (the iterates move little between checks)
            mag = abs(S.last) if S.last * sign > 0.0 else 1.0
            factor, found_low, b2 = 1.05, False, b
            for _ in range(GROW_STEPS):
                lam = sign * mag
                bt, tt = solve_all(lam, b2)
                best_top = min(best_top, tt + lam * c)
                gt = float(S.row @ bt) - c
                if sign * gt > 0.0:
                    lam1, g1, b, found_low = lam, gt, bt, True
                else:
                    lam2, g2, b2 = lam, gt, bt
                if lam2 is not None and (found_low or mag < 1e-12):
                    break
                mag = mag * factor if lam2 is None else mag / factor
                factor = min(4.0, factor * factor)
            else:
                raise ModelError("the joint response is unbounded along the coupling row")
            assert lam2 is not None and g2 is not None   # the loop above breaks only once they are set
            w1, w2, side, bmid = g1, g2, 0, b2
            for _ in range(MAX_STEPS):
                if g2 == 0.0 or abs(lam2 - lam1) <= 4e-16 * max(abs(lam1), abs(lam2)):
                    break
                lam = lam1 + w1 * (lam2 - lam1) / (w1 - w2)
                if not (min(lam1, lam2) < lam < max(lam1, lam2)):
                    lam = 0.5 * (lam1 + lam2)
                bmid, tm = solve_all(lam, bmid)
                best_top = min(best_top, tm + lam * c)
                gm = float(S.row @ bmid) - c
                b = bmid
                if sign * gm > 0.0:
                    lam1, g1, w1 = lam, gm, gm
                    if side == 1:
                        w2 *= 0.5
                    side = 1
                else:
                    lam2, g2, w2 = lam, gm, gm
                    if side == -1:
                        w1 *= 0.5
                    side = -1
                low = _value(game, cols, a, alpha, project_interval_row(b, S))
                if best_top - low <= REL_STOP * 8 * (1.0 + abs(low)):
                    break
            S.last = lam1 if abs(g1) <= abs(g2) else lam2
    b = project_interval_row(b, S)
    return b, _value(game, cols, a, alpha, b), best_top


def _value(game, cols, a, alpha, b) -> float:
    total = 0.0
    for i, (j, u) in enumerate(zip(cols, game.utilities)):
        z = a.copy()
        z[j] = b[i]
        total += u.value(z) - 0.5 * alpha * (b[i] - a[j]) ** 2
    return total


def project_interval_row(z, S: ScalarStructure):
    """The nearest point of {l <= x <= h, row_lo <= row . x <= row_hi} (closed form)."""
    from .projection import project_box_row
    if S.row is None:
        return np.minimum(np.maximum(z, S.l), S.h)
    return project_box_row(z, S.l, S.h, S.row, S.row_lo, S.row_hi)
