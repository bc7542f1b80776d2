"""Newton's method on the active face: an exact variational equilibrium from a nearby iterate.

Near a variational equilibrium the first-order methods' iterates sit on the right face of K (a
projection lands on it exactly once it is identified) but approach the point itself only
linearly, slowly when the game is weakly monotone. On the face the VI's KKT conditions are
square equations,

    F(x)_free + A_act[:, free]' mu = 0,    A_act x = rhs,    x_fixed = its bounds,

with F the pseudo-gradient; Newton's method solves them (F's Jacobian exact for quadratic
utilities, central differences of the exact gradients otherwise). The point is kept only when it
is in K with multipliers of the right sign (then it is a KKT point of the VI up to rounding); the
solver certifies it like any other iterate, so nothing here is trusted.
"""
from __future__ import annotations

import numpy as np

from solvopt.core.errors import ModelError

from .projection import FEAS_TOL, Polyhedron, check_stop

FACE_TOL = 1e-9        # a bound or row within this (relative) of the iterate is active
NEWTON_STEPS = 30      # Newton steps per polish
SIGN_TOL = 1e-9        # multipliers of the wrong sign by at most this (relative to |F|) still pass
MAX_DENSE = 2000       # the KKT system is dense: no polish above this many variables
MAX_DIFFERENCED = 200  # central differences cost 2 n pseudo-gradients (n^2 gradient calls): no polish above


def pseudo_gradient(game, a) -> np.ndarray:
    """F(a) = -(grad_{a_i} u_i(a))_i."""
    F = np.empty(game.n)
    for cols, u in zip(game.blocks, game.utilities):
        F[cols] = -u.gradient(a)[cols]
    return F


def affine_jacobian(game):
    """F's constant Jacobian when every utility is quadratic (cached on the game), else None."""
    cached = getattr(game, "_pseudo_jacobian", False)
    if cached is False:
        cached = None
        if game.all_quadratic:
            cached = np.zeros((game.n, game.n))
            for cols, u in zip(game.blocks, game.utilities):
                cached[cols] = -u.Q[cols].toarray()
        try:
            object.__setattr__(game, "_pseudo_jacobian", cached)
        except (AttributeError, TypeError):      # pragma: no cover - a frozen game: no cache
            pass
    return cached


def jacobian_columns(game, x, Fx, free, lb, ub):
    """Columns ``free`` of F's Jacobian at x: exact for quadratics, else central differences (inward at a bound)."""
    M = affine_jacobian(game)
    if M is not None:
        return M[:, free]
    out = np.empty((game.n, len(free)))
    for k, j in enumerate(free):
        h = 1e-6 * (1.0 + abs(x[j]))
        up, down = x.copy(), x.copy()
        if x[j] + h <= ub[j] and x[j] - h >= lb[j]:
            up[j] += h
            down[j] -= h
            out[:, k] = (pseudo_gradient(game, up) - pseudo_gradient(game, down)) / (2 * h)
        elif x[j] + h <= ub[j]:
            up[j] += h
            out[:, k] = (pseudo_gradient(game, up) - Fx) / h
        else:
            down[j] -= h
            out[:, k] = (Fx - pseudo_gradient(game, down)) / h
    return out


def face_newton(game, K: Polyhedron, a):
    """A variational equilibrium on the face of K active at ``a`` by Newton's method, or None.

    None too for games too large for a dense Newton step (MAX_DENSE variables, MAX_DIFFERENCED
    when the Jacobian comes from differences)."""
    if game.n > MAX_DENSE or (affine_jacobian(game) is None and game.n > MAX_DIFFERENCED):
        return None
    try:
        return _face_newton(game, K, np.asarray(a, dtype=float))
    except ModelError:
        raise
    except (ArithmeticError, ValueError, np.linalg.LinAlgError):    # a utility undefined off the face: no polish
        return None


def _activity(K: Polyhedron, a, A):
    """(at_lb, at_ub, up, low): the bounds and row sides within FACE_TOL of ``a`` (A: K's rows, dense)."""
    lb, ub = K.lb, K.ub
    with np.errstate(invalid="ignore"):
        at_lb = np.isfinite(lb) & (np.abs(a - lb) <= FACE_TOL * (1.0 + np.abs(lb)))
        at_ub = np.isfinite(ub) & (np.abs(a - ub) <= FACE_TOL * (1.0 + np.abs(ub))) & ~at_lb
    r = A @ a
    with np.errstate(invalid="ignore"):
        up = np.isfinite(K.hi) & (np.abs(r - K.hi) <= FACE_TOL * (1.0 + np.abs(K.hi)))
        low = np.isfinite(K.lo) & (np.abs(r - K.lo) <= FACE_TOL * (1.0 + np.abs(K.lo))) & ~up
    return at_lb, at_ub, up, low


def active_face(K: Polyhedron, a) -> bytes:
    """The face of K active at ``a`` (what :func:`face_newton` solves on), as a key to compare faces."""
    a = np.asarray(a, dtype=float)
    return np.concatenate(_activity(K, a, K.A)).tobytes()


def _face_newton(game, K: Polyhedron, a):
    lb, ub = K.lb, K.ub
    A = K.A.toarray() if K.A.shape[0] else np.zeros((0, game.n))
    at_lb, at_ub, up, low = _activity(K, a, A)
    act = np.flatnonzero(up | low)
    rhs = np.where(up, K.hi, K.lo)[act]
    fixed = at_lb | at_ub
    free = np.flatnonzero(~fixed)
    x = np.where(at_lb, lb, np.where(at_ub, ub, a))
    Af = A[act][:, free]
    k, m = len(free), len(act)
    F = pseudo_gradient(game, x)
    mu = np.linalg.lstsq(Af.T, -F[free], rcond=None)[0] if m and k else np.zeros(m)

    def residual(x, F, mu):
        return np.concatenate([F[free] + Af.T @ mu, A[act] @ x - rhs])

    res = residual(x, F, mu)
    size = 1.0 + float(np.abs(F).max(initial=0.0))
    for _ in range(NEWTON_STEPS):
        check_stop()
        norm = float(np.abs(res).max(initial=0.0))
        if norm <= 1e-15 * size:
            break
        J = jacobian_columns(game, x, F, free, lb, ub)
        KKT = np.zeros((k + m, k + m))
        KKT[:k, :k] = J[free]
        KKT[:k, k:] = Af.T
        KKT[k:, :k] = Af
        step = np.linalg.lstsq(KKT, -res, rcond=None)[0]
        y = x.copy()
        y[free] += step[:k]
        if not np.all(np.isfinite(y)):
            return None
        Fy = pseudo_gradient(game, y)
        new_mu = mu + step[k:]
        new_res = residual(y, Fy, new_mu)
        if float(np.abs(new_res).max(initial=0.0)) >= norm:
            break
        x, F, mu, res = y, Fy, new_mu, new_res
    if not np.all(np.isfinite(x)) or float(np.abs(res).max(initial=0.0)) > 1e-8 * size:
        return None
    # a KKT point of the VI: inside K, active upper rows mu >= 0 (lower rows <= 0), bounds pushed outward
    if K.violation(x) > FEAS_TOL:
        return None
    eq = (K.lo == K.hi)[act]
    tol = SIGN_TOL * size
    if np.any(mu[up[act] & ~eq] < -tol) or np.any(mu[low[act] & ~eq] > tol):
        return None
    g = F + A[act].T @ mu
    if np.any(g[at_lb] < -tol) or np.any(g[at_ub] > tol):
        return None
    return x
