"""The players' joint KKT system in Fischer-Burmeister form and semismooth Newton on it.

:class:`KKTSystem` stacks every player's stationarity and complementarity (linear rows, bounds and
convex nonlinear constraints, each player with its own multipliers, or one per shared constraint in
the variational case); :func:`solve_kkt` runs Newton's method with an Armijo line search on the
merit ||Phi||^2 / 2 (the method is described in :mod:`solvopt.games.gnep_kkt`, the solver built on
it). One player's best response under nonlinear constraints
(:mod:`solvopt.games.convex_constraints`) runs on the same system, so this module imports neither.
"""
from __future__ import annotations

import numpy as np

from solvopt.core.errors import ModelError

from .face_newton import affine_jacobian, jacobian_columns, pseudo_gradient
from .projection import check_stop

MAX_UNKNOWNS = 4000     # the Newton system is dense: variables + multipliers above this are refused
ARMIJO = 1e-4
STALL_WINDOW = 30        # a run whose merit has not halved over this many steps has stalled
DESCENT = 1e-10         # a Newton direction must satisfy grad Psi . d <= -DESCENT ||d||^2.1


class KKTSystem:
    """The players' stacked KKT conditions in Fischer-Burmeister form (see the module doc).

    Inequalities G x <= h (rows with a finite upper side, lower sides negated, finite bounds),
    equalities E x = e; ``owner_g`` / ``owner_e`` name the player each copy belongs to (a shared
    row appears once per player whose action it involves). ``MG`` / ``ME`` are G / E with the
    columns outside the owner's block zeroed: what enters the owner's stationarity.
    """

    def __init__(self, game, variational: bool = False):
        n = game.n
        block_of = np.empty(n, dtype=int)
        for i, cols in enumerate(game.blocks):
            block_of[cols] = i
        A = game.A.toarray() if game.A.shape[0] else np.zeros((0, n))
        G: list = []
        h: list = []
        og: list = []
        E: list = []
        e: list = []
        oe: list = []

        def inequality(row, side, p):
            G.append(row)
            h.append(side)
            og.append(p)

        for r in range(A.shape[0]):
            row = A[r]
            owners = [int(game.owner[r])] if game.owner[r] >= 0 else \
                ([-1] if variational else sorted({int(block_of[j]) for j in np.flatnonzero(row)}))
            for p in owners:
                if game.lo[r] == game.hi[r]:
                    E.append(row)
                    e.append(game.hi[r])
                    oe.append(p)
                    continue
                if np.isfinite(game.hi[r]):
                    inequality(row, game.hi[r], p)
                if np.isfinite(game.lo[r]):
                    inequality(-row, -game.lo[r], p)
        for j in range(n):
            unit = np.zeros(n)
            unit[j] = 1.0
            if np.isfinite(game.ub[j]):
                inequality(unit, game.ub[j], int(block_of[j]))
            if np.isfinite(game.lb[j]):
                inequality(-unit, -game.lb[j], int(block_of[j]))
        # nonlinear constraints g_k(x) <= 0: one copy per player they bind (one shared copy when variational)
        self.nl, masks = [], []
        players = range(len(game.blocks))
        for k, c in enumerate(getattr(game, "nonlinear", ())):
            for p in ([c.owner] if c.owner >= 0 else ([-1] if variational else players)):
                self.nl.append(k)
                masks.append(np.ones(n, bool) if p < 0 else block_of == p)
        self.nl_mask = np.array(masks, dtype=float).reshape(-1, n)
        self.G = np.array(G).reshape(-1, n)
        self.h = np.array(h, dtype=float)
        self.E = np.array(E).reshape(-1, n)
        self.e = np.array(e, dtype=float)
        mask = lambda owners: (block_of[None, :] == np.array(owners, dtype=int)[:, None]) | \
            (np.array(owners, dtype=int)[:, None] < 0)                                    # noqa: E731
        self.MG = self.G * mask(og)
        self.ME = self.E * mask(oe)
        self.n, self.m, self.me, self.q = n, len(h), len(e), len(self.nl)
        self.game = game
        self.variational = variational
        self.last_z = np.zeros(self.n + self.m + self.me + self.q)     # the latest iterate of solve_kkt
        if self.size > MAX_UNKNOWNS:
            raise ModelError(f"method 'gnep-kkt' solves a dense Newton system: this game has {self.size} variables and "
                             f"multipliers (at most {MAX_UNKNOWNS})")

    @property
    def size(self) -> int:
        return self.n + self.m + self.me + self.q

    def estimate_multipliers(self, x, active: float = 1e-6):
        """Multipliers (lambda, mu, nu) >= 0 (mu free) of the constraints within ``active`` of binding at x that
        best cancel the stationarity residual (least squares; a warm start for Newton near a solution)."""
        from scipy.optimize import lsq_linear
        F = pseudo_gradient(self.game, x)
        gv, GN = self._nonlinear(x)
        slack = np.concatenate([self.h - self.G @ x, -gv])
        near = slack <= active * (1.0 + np.abs(np.concatenate([self.h, np.zeros(self.q)])))
        M = np.hstack([self.MG.T, GN.T, self.ME.T])
        keep = np.concatenate([near, np.ones(self.me, bool)])
        out = np.zeros(M.shape[1])
        if np.any(keep):
            lo = np.concatenate([np.zeros(self.m + self.q), np.full(self.me, -np.inf)])[keep]
            out[keep] = lsq_linear(M[:, keep], -F, bounds=(lo, np.full(lo.size, np.inf))).x
        lam, nu, mu = out[:self.m], out[self.m:self.m + self.q], out[self.m + self.q:]
        return np.concatenate([lam, mu, nu])

    def split(self, z):
        n, m, me = self.n, self.m, self.me
        return z[:n], z[n:n + m], z[n + m:n + m + me], z[n + m + me:]

    def _nonlinear(self, x):
        """(g_k(x) per copy, the copies' gradients masked to their player's columns)."""
        cons = self.game.nonlinear
        if not self.q:
            return np.zeros(0), np.zeros((0, self.n))
        vals, grads = {}, {}
        for k in set(self.nl):
            vals[k], grads[k] = cons[k].value(x), cons[k].gradient(x)
        return np.array([vals[k] for k in self.nl]), np.array([grads[k] for k in self.nl]) * self.nl_mask

    def residual(self, z):
        """Phi(z): stationarity, Fischer-Burmeister complementarity (rows, then nonlinear constraints), equalities."""
        x, lam, mu, nu = self.split(z)
        F = pseudo_gradient(self.game, x)
        s = self.h - self.G @ x
        fb = np.hypot(lam, s) - lam - s
        gv, GN = self._nonlinear(x)
        fbn = np.hypot(nu, -gv) - nu + gv
        return np.concatenate([F + self.MG.T @ lam + self.ME.T @ mu + GN.T @ nu, fb, self.E @ x - self.e, fbn]), F

    def _curvature(self, x, nu):
        """d/dx of sum_k nu_k (masked grad g_k)(x), only the constraints with a nonzero multiplier: their exact
        Hessians where they have one (expression trees), else forward differences of the exact gradients
        (inward at a bound)."""
        n = self.n
        out = np.zeros((n, n))
        live = np.flatnonzero(nu != 0.0)
        if not live.size:
            return out
        cons = self.game.nonlinear
        weights: dict = {}
        for c in live:                           # sum of nu over a constraint's copies, masked per copy
            weights.setdefault(self.nl[c], np.zeros(n))
            weights[self.nl[c]] += nu[c] * self.nl_mask[c]
        used = []
        for k in sorted(weights):
            H = _exact_hessian(cons[k], x)
            if H is None:
                used.append(k)
            else:
                out += weights[k][:, None] * H
        if not used:
            return out

        def field(y):
            return sum(weights[k] * cons[k].gradient(y) for k in used)

        base = field(x)
        ub = self.game.ub
        for j in range(n):
            step = 1e-7 * (1.0 + abs(x[j]))
            if np.isfinite(ub[j]) and x[j] + step > ub[j]:
                step = -step
            y = x.copy()
            y[j] += step
            out[:, j] += (field(y) - base) / step
        return out

    def jacobian(self, z, F):
        """An element of Phi's generalized Jacobian at z (at a = b = 0 the FB derivative's limit along (1, 1))."""
        x, lam, mu, nu = self.split(z)
        n, m, me = self.n, self.m, self.me
        game = self.game
        JF = affine_jacobian(game)
        if JF is None:
            JF = jacobian_columns(game, x, F, np.arange(n), np.full(n, -np.inf), np.full(n, np.inf))
        s = self.h - self.G @ x
        da, db = _fb_derivatives(lam, s)
        J = np.zeros((self.size, self.size))
        J[:n, :n] = JF
        J[:n, n:n + m] = self.MG.T
        J[:n, n + m:n + m + me] = self.ME.T
        J[n:n + m, :n] = -db[:, None] * self.G
        J[n:n + m, n:n + m] = np.diag(da)
        J[n + m:n + m + me, :n] = self.E
        if self.q:
            gv, GN = self._nonlinear(x)
            J[:n, :n] += self._curvature(x, nu)
            J[:n, n + m + me:] = GN.T
            ea, eb = _fb_derivatives(nu, -gv)
            grads = np.array([game.nonlinear[k].gradient(x) for k in self.nl])
            J[n + m + me:, :n] = -eb[:, None] * grads
            J[n + m + me:, n + m + me:] = np.diag(ea)
        return J


def _exact_hessian(constraint, x):
    """The constraint's exact Hessian at x where it has one and it is finite there, else None (differences)."""
    hessian = getattr(constraint, "hessian", None)
    try:
        H = None if hessian is None else hessian(x)
    except (ModelError, ArithmeticError, ValueError):
        return None
    return H if H is not None and np.all(np.isfinite(H)) else None


def _fb_derivatives(a, b):
    """The partial derivatives of phi(a, b) = sqrt(a^2 + b^2) - a - b (at a = b = 0 the limit along (1, 1))."""
    r = np.hypot(a, b)
    safe = r > 1e-300
    da = np.where(safe, a / np.where(safe, r, 1.0), 1.0 / np.sqrt(2.0)) - 1.0
    db = np.where(safe, b / np.where(safe, r, 1.0), 1.0 / np.sqrt(2.0)) - 1.0
    return da, db


def solve_kkt(system: KKTSystem, x0, *, iterations: int = 500, multipliers=None):
    """Semismooth Newton with an Armijo line search on Psi = ||Phi||^2 / 2; yields (iteration, x, ||Phi||_inf).

    Multipliers start at 0 (or at ``multipliers``). Stops when Phi = 0 to rounding, when the line search or the step
    vanishes, when Psi has not halved over STALL_WINDOW steps (a stationary point of the merit
    that is no solution: the caller restarts), or after ``iterations``.
    """
    z = np.concatenate([x0, np.zeros(system.m + system.me + system.q) if multipliers is None else multipliers])
    phi, F = system.residual(z)
    psi = 0.5 * float(phi @ phi)
    history = [psi]
    for it in range(1, iterations + 1):
        check_stop()
        J = system.jacobian(z, F)
        grad = J.T @ phi
        try:
            d = np.linalg.solve(J, -phi)
            if not np.all(np.isfinite(d)):
                raise np.linalg.LinAlgError
        except np.linalg.LinAlgError:
            d = np.linalg.lstsq(J, -phi, rcond=None)[0]
        slope = float(grad @ d)
        if not np.isfinite(slope) or slope > -DESCENT * float(d @ d) ** 1.05:
            d, slope = -grad, -float(grad @ grad)            # steepest descent on the merit
        t = 1.0
        while True:
            trial = z + t * d
            try:
                phi_t, F_t = system.residual(trial)
                psi_t = 0.5 * float(phi_t @ phi_t)
            except (ModelError, ArithmeticError, ValueError):    # outside a function's domain: a shorter step
                psi_t = np.inf
            if np.isfinite(psi_t) and psi_t <= psi + ARMIJO * t * slope:
                break
            t *= 0.5
            if t < 1e-12:
                return
        z, phi, F, psi = trial, phi_t, F_t, psi_t
        system.last_z = z
        history.append(psi)
        norm = float(np.abs(phi).max(initial=0.0))
        yield it, system.split(z)[0].copy(), norm
        if norm <= 1e-15 or float(np.abs(t * d).max(initial=0.0)) <= 1e-16 * (1.0 + float(np.abs(z).max())):
            return
        if len(history) > STALL_WINDOW and psi > 0.5 * history[-STALL_WINDOW - 1]:
            return                            # the merit no longer halves: a stationary point that is no solution
