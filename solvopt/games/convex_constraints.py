"""Convex nonlinear constraints g(a) <= 0 in pseudo-games: feasibility, the unit frame, certified best responses.

A player's nonlinear constraints (and the shared ones) make its feasible set
X_i(a_-i) = P_i ∩ {b : g_j(b, a_-i) <= 0}, P_i the polyhedron of its bounds and rows. Its best
response is computed by semismooth Newton on the player's own KKT system (the players' joint
system of :mod:`solvopt.games.gnep_kkt` restricted to one player, the others' actions fixed),
and *certified* without trusting that solve, by Lagrangian weak duality: for any multipliers
lambda >= 0 the function L(y) = u_i(y) - lambda . g(y) is concave (u_i concave, g_j convex in the
player's action) and at least u_i on X_i, so

    max over X_i of u_i  <=  max over y in P_i of L(y)  <=  max over y in P_i of min_t [L(t) + grad L(t).(y - t)],

the last a linear program (Kelley's cutting planes on L: tangents at the response b, then at each
LP solution, until the LP's value meets L's). The LP's y is also kept in the constraints'
tangent half-spaces g(t) + grad g(t).(y - t) <= 0 at the same points (outer approximation: they
contain X_i, so the bound stays valid, and they close directions where P_i is unbounded). With
Newton's multipliers the bound is tight at the optimum. Where P_i is unbounded the LP runs on an
artificial box: a local maximum of a concave function is a global one, so only a solution
strictly inside that box bounds max over P_i; on it, the planes go on, and a bound still on it
after KELLEY_STEPS is +inf. The VE gap of a game whose nonlinear constraints are all shared is
the same construction for all players at once (:func:`nonlinear_ve_gap`).

The tangent points double as convexity checks: a constraint that
breaks its own tangent inequality there (a callable that is not convex, a wrong gradient) stops
the solve with a ModelError instead of certifying a lie.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp

from solvopt.core.errors import ModelError
from solvopt.dsl.games import JointUtility

from .certificate import Exploitability, check_concave, joint_gradient, joint_value
from .kkt_newton import KKTSystem, solve_kkt
from .projection import FEAS_TOL, Polyhedron, check_stop

KELLEY_STEPS = 30       # cutting-plane LPs per certified bound
KELLEY_TOL = 1e-13      # stop when the LP's value is within this (relative) of the best value of L
REACH = 1e6             # the artificial box: this many times (1 + |b|) around b where P_i is unbounded
CONVEXITY_TOL = 1e-9    # relative slack of the tangent-inequality check
RESPONSE_STEPS = 60     # Newton steps of one best response


def binding(game, i: int) -> list[int]:
    """Indices of the nonlinear constraints that bind player i: its own and the shared ones."""
    return [k for k, c in enumerate(getattr(game, "nonlinear", ())) if c.owner in (-1, i)]


def violation(game, a) -> float:
    """The largest g_j(a) > 0 over every nonlinear constraint (0 when all hold; +inf where one is undefined)."""
    worst = 0.0
    for c in getattr(game, "nonlinear", ()):
        try:
            worst = max(worst, c.value(a))
        except (ArithmeticError, ValueError, ModelError):
            return np.inf
    return worst


# --- the unit frame ------------------------------------------------------------------------------
class FramedConstraint:
    """g(w * z) / s in the unit frame, s its largest gradient entry there at the start (1 if none)."""

    def __init__(self, c, widths: np.ndarray, z0: np.ndarray):
        self.c, self.widths = c, widths
        self.owner, self.n, self.name, self.convexity = c.owner, c.n, c.name, c.convexity
        try:
            top = float(np.abs(c.gradient(widths * z0) * widths).max(initial=0.0))
        except (ArithmeticError, ValueError, ModelError):
            top = 0.0
        self.scale = top if np.isfinite(top) and top > 0.0 else 1.0

    def value(self, z):
        return self.c.value(self.widths * z) / self.scale

    def gradient(self, z):
        return self.c.gradient(self.widths * z) * self.widths / self.scale

    def hessian(self, z):
        """The exact Hessian W H(w * z) W / s where the gradient's owner computes one (the JSON reader's expression
        trees: :meth:`solvopt.games.expressions.ConvexExpression.hessian`), else None."""
        exact = getattr(getattr(self.c.grad, "__self__", None), "hessian", None)
        if exact is None:
            return None
        return exact(self.widths * z) * np.outer(self.widths, self.widths) / self.scale


def framed(game, widths: np.ndarray, z0: np.ndarray) -> list:
    return [FramedConstraint(c, widths, z0) for c in getattr(game, "nonlinear", ())]


# --- one player's problem with the others fixed -------------------------------------------------
class _Restricted(JointUtility):
    """u_i or g_j as a function of player i's action y alone (the others' actions fixed at a)."""

    def __init__(self, f, a, cols, owner=0):
        self.f, self.a, self.cols, self.owner = f, a, cols, owner
        self.n = len(cols)

    def _joint(self, y):
        z = self.a.copy()
        z[self.cols] = y
        return z

    def value(self, y):
        return self.f.value(self._joint(y))

    def gradient(self, y):
        return self.f.gradient(self._joint(y))[self.cols]


def player_problem(game, i: int, a, P: Polyhedron):
    """Player i's problem as a one-player game (the shape :class:`~solvopt.games.kkt_newton.KKTSystem` reads)."""
    from solvopt.dsl.games import GameData, QuadraticUtility
    cols = game.blocks[i]
    u = game.utilities[i]
    utility: QuadraticUtility | _Restricted
    if u.quadratic:
        rest = a.copy()
        rest[cols] = 0.0
        utility = QuadraticUtility(sp.csr_matrix(u.Q[cols][:, cols]), u.gradient(rest)[cols], u.value(rest))
    else:
        utility = _Restricted(u, a, cols)
    n = len(cols)
    sub = GameData([game.names[i]], [np.arange(n)], [utility], P.lb, P.ub, P.A, P.lo, P.hi,
                   np.zeros(P.A.shape[0], dtype=int))
    sub.nonlinear = [_Restricted(game.nonlinear[k], a, cols) for k in binding(game, i)]  # type: ignore[misc]
    return sub


def nonlinear_response(game, i: int, a, P: Polyhedron, start=None):
    """(b, u_i(b, a_-i) or -inf when b is not feasible, certified upper bound on max u_i over X_i(a_-i))."""
    cols = game.blocks[i]
    y0 = P.project(a[cols] if start is None else np.asarray(start, dtype=float))
    return certified_maximum(player_problem(game, i, a, P), P, y0, game.names[i])


def certified_maximum(sub, P: Polyhedron, y0, who: str):
    """(b, u(b) or -inf when b is not feasible, certified upper bound on max u over P ∩ {g <= 0}) for the
    one-player game ``sub`` (utility u, constraints g, polyhedron P): Newton on its KKT system, the
    Lagrangian bound with Newton's multipliers (module doc)."""
    system = KKTSystem(sub)
    best = (np.inf, y0, np.zeros(len(sub.nonlinear)))
    for attempt in range(2):                     # Newton from the point, then from a local solver's answer
        if attempt == 1:
            if best[0] <= 1e-12:
                break
            y0 = _local_solution(sub, P, y0)
        try:
            z0 = system.estimate_multipliers(y0)
            for _, y, norm in solve_kkt(system, y0, iterations=RESPONSE_STEPS, multipliers=z0):
                if norm < best[0]:
                    best = (norm, y, system.split(system.last_z)[3])
                if norm <= 1e-14:
                    break
        except (ArithmeticError, ValueError, np.linalg.LinAlgError, ModelError):
            pass
    _, b, lam = best
    b = np.clip(b, P.lb, P.ub)
    lam = np.maximum(lam, 0.0)
    u = sub.utilities[0]
    gs = sub.nonlinear
    feasible = P.violation(b) <= FEAS_TOL and all(g.value(b) <= FEAS_TOL for g in gs)
    value = u.value(b) if feasible else -np.inf
    top = lagrangian_bound(u, gs, lam, P, b, who=who)
    return b, value, top


# --- the VE gap: all players' deviations at once over the joint set ------------------------------------
class _JointDeviation(JointUtility):
    """Psi(a, .) + sum_i u_i(a) = sum_i u_i(b_i, a_-i) as a function of the joint deviation b (concave)."""

    def __init__(self, game, a):
        self.game, self.a = game, a
        self.n = game.n

    def value(self, b):
        return joint_value(self.game, self.a, b)

    def gradient(self, b):
        return joint_gradient(self.game, self.a, b)


def joint_problem(game, a, K: Polyhedron):
    """max over b in K ∩ {every g <= 0} of sum_i u_i(b_i, a_-i) as a one-player game (quadratic when every
    utility is: the blocks' own Hessians, the others' actions fixed at a)."""
    from solvopt.dsl.games import GameData, QuadraticUtility
    n = game.n
    utility: QuadraticUtility | _JointDeviation
    if game.all_quadratic:
        Q = sp.lil_matrix((n, n))
        c = np.empty(n)
        k = 0.0
        for cols, u in zip(game.blocks, game.utilities):
            rest = a.copy()
            rest[cols] = 0.0
            Q[np.ix_(cols, cols)] = u.Q[cols][:, cols].toarray()
            c[cols] = u.gradient(rest)[cols]
            k += u.value(rest)
        utility = QuadraticUtility(Q.tocsr(), c, k)
    else:
        utility = _JointDeviation(game, a)
    sub = GameData(["joint deviation"], [np.arange(n)], [utility], K.lb, K.ub, K.A, K.lo, K.hi,
                   np.zeros(K.A.shape[0], dtype=int))
    sub.nonlinear = [_Restricted(c, a, np.arange(n)) for c in getattr(game, "nonlinear", ())]  # type: ignore[misc]
    return sub


def nonlinear_ve_gap(game, a, K: Polyhedron):
    """Certified max over b in K ∩ {g <= 0} of Psi(a, b) = sum_i [u_i(b_i, a_-i) - u_i(a)], zero exactly at a
    variational equilibrium: the joint deviation by Newton, bounded above by the Lagrangian cutting planes
    over K (as a player's response); the deviation found, when feasible, is the lower value."""
    a = np.asarray(a, dtype=float)
    here = sum(u.value(a) for u in game.utilities)
    sub = joint_problem(game, a, K)
    b, found, top = certified_maximum(sub, K, K.project(a), "the joint deviation")
    lower = max(0.0, found - here) if np.isfinite(found) else 0.0
    upper = max(0.0, top - here, lower)        # the deviation's value bounds the maximum too (rounding)
    return Exploitability(upper, lower, np.array([upper]), [b], max(K.violation(a), violation(game, a)))


def _local_solution(sub, P: Polyhedron, y0):
    """SLSQP on the player's problem (a start for Newton only: nothing of it is trusted); y0 where it fails."""
    from scipy.optimize import LinearConstraint, NonlinearConstraint, minimize
    u, gs = sub.utilities[0], sub.nonlinear
    cons = [NonlinearConstraint(lambda y, g=g: g.value(y), -np.inf, 0.0,
                                jac=lambda y, g=g: np.atleast_2d(g.gradient(y))) for g in gs]
    if P.A.shape[0]:
        cons.append(LinearConstraint(P.A.toarray(), P.lo, P.hi))
    bounds = [(lo if np.isfinite(lo) else None, hi if np.isfinite(hi) else None) for lo, hi in zip(P.lb, P.ub)]
    try:
        res = minimize(lambda y: -u.value(y), y0, jac=lambda y: -u.gradient(y), bounds=bounds, constraints=cons,
                       method="SLSQP", options={"ftol": 1e-14, "maxiter": 200})
    except (ArithmeticError, ValueError, ModelError):
        return y0
    return res.x if np.all(np.isfinite(res.x)) else y0


def lagrangian_bound(u, gs, lam, P: Polyhedron, b, who: str = "") -> float:
    """An upper bound on max u over P ∩ {g <= 0}: Kelley's cutting planes on L = u - lam . g over P (module doc),
    P narrowed by the constraints' tangent cuts (outer approximation, module doc)."""
    n = P.n

    def L(y):
        values = [g.value(y) for g in gs]
        grads = [g.gradient(y) for g in gs]
        v = u.value(y) - sum(l * gv for l, gv in zip(lam, values) if l)
        d = u.gradient(y) - sum((l * dg for l, dg in zip(lam, grads) if l), np.zeros(n))
        cuts = [(dg, float(dg @ y) - gv) for gv, dg in zip(values, grads)]     # dg . y' <= dg . y - g(y)
        return v, d, cuts

    points: list[tuple[np.ndarray, float, np.ndarray]] = []
    cuts: list[tuple[np.ndarray, float]] = []

    def add(y):
        try:
            v, d, more = L(y)
        except (ArithmeticError, ValueError, ModelError):
            return False                       # outside a function's domain: no tangent there
        if not (np.isfinite(v) and np.all(np.isfinite(d))):
            return False
        _check_tangents(u, gs, points, y, who)
        points.append((y.copy(), v, d))
        cuts.extend((dg, rhs) for dg, rhs in more if np.isfinite(rhs) and np.all(np.isfinite(dg)) and dg.any())
        return True

    if not add(b):
        return np.inf
    _probe(u, gs, P, b, who)
    lb = np.where(np.isfinite(P.lb), P.lb, b - REACH * (1.0 + np.abs(b).max()))
    ub = np.where(np.isfinite(P.ub), P.ub, b + REACH * (1.0 + np.abs(b).max()))
    artificial_lb, artificial_ub = ~np.isfinite(P.lb), ~np.isfinite(P.ub)
    top = np.inf
    for _ in range(KELLEY_STEPS):
        check_stop()
        try:
            y, top = _epigraph_lp(P, lb, ub, points, cuts)
        except ModelError:                     # the cuts leave nothing (the constraints cannot hold): no bound
            return np.inf
        best = max(v for _, v, _ in points)
        touching = np.any(artificial_lb & (y <= lb + 1e-9 * (1.0 + np.abs(lb)))) or \
            np.any(artificial_ub & (y >= ub - 1e-9 * (1.0 + np.abs(ub))))
        if top - best <= KELLEY_TOL * (1.0 + abs(best)) and not touching:
            break
        if not add(y):
            break
    return np.inf if touching else top


def _epigraph_lp(P: Polyhedron, lb, ub, points, cuts=()):
    """(y, s) maximising s subject to s <= L(t) + grad L(t).(y - t) for the tangent points t, the constraints'
    tangent cuts (relaxed by 1e-12 relative: rounding must not empty the set), y in P (box lb, ub)."""
    n, m = P.n, P.A.shape[0]
    D = np.array([d for _, _, d in points])
    rhs = np.array([v - float(d @ t) for t, v, d in points])
    C = np.array([c for c, _ in cuts]).reshape(-1, n)
    side = np.array([r for _, r in cuts], dtype=float)
    side = side + 1e-12 * (1.0 + np.abs(side) + np.abs(C).sum(axis=1) * (1.0 + np.abs(points[0][0]).max()))
    A = sp.vstack([sp.hstack([P.A, sp.csr_matrix((m, 1))]),
                   sp.hstack([sp.csr_matrix(-D), sp.csr_matrix(np.ones((len(points), 1)))]),
                   sp.hstack([sp.csr_matrix(C), sp.csr_matrix((len(cuts), 1))])], format="csr")
    Q = Polyhedron(np.append(lb, -np.inf), np.append(ub, np.inf), A,
                   np.concatenate([P.lo, np.full(len(points) + len(cuts), -np.inf)]),
                   np.concatenate([P.hi, rhs, side]))
    e = np.zeros(n + 1)
    e[-1] = 1.0
    z, top = Q.maximize_linear(e)
    return z[:n], top


def _probe(u, gs, P: Polyhedron, b, who):
    """Two cheap convexity probes: b moved by +-(1 + |b|) along every own coordinate (kept in the bounds),
    where a constraint that is not convex (or a wrong gradient) often shows at once."""
    width = 1.0 + float(np.abs(b).max(initial=0.0))
    for sign in (1.0, -1.0):
        y = np.clip(b + sign * width, P.lb, P.ub)
        if np.array_equal(y, b):
            continue
        try:
            for g in gs:
                g.value(y), g.gradient(y)
        except (ArithmeticError, ValueError, ModelError):
            continue                         # outside a constraint's domain: nothing to probe there
        _check_tangents(u, gs, [(b, None, None)], y, who)


def _check_tangents(u, gs, points, y, who):
    """Convexity (and concavity of u) along the tangent points: g(y) >= g(t) + grad g(t).(y - t) both ways."""
    if not points:
        return
    for t, _, _ in points[-3:]:
        d = y - t
        if not u.quadratic:
            check_concave(u.value(t), u.gradient(t), u.value(y), d, f"the utility of player {who!r}")
            check_concave(u.value(y), u.gradient(y), u.value(t), -d, f"the utility of player {who!r}")
        for g in gs:
            for x0, x1, step in ((t, y, d), (y, t, -d)):
                gx, dg, gy = g.value(x0), g.gradient(x0), g.value(x1)
                lin = float(dg @ step)
                short = gx + lin - gy
                if short > CONVEXITY_TOL * (abs(gx) + abs(gy) + abs(lin)) + 1e-11:
                    name = getattr(getattr(g, "f", g), "name", "")
                    raise ModelError(f"the constraint {name!r} of player {who!r} is not convex in the player's action, "
                                     f"or its gradient is wrong: g(y) is below g(x) + grad g(x).(y - x) by {short:.3g}")


def framed_game(game, widths, z0):
    """``dataclasses.replace`` helper: the game's nonlinear constraints in the unit frame."""
    return dataclasses.replace(game, nonlinear=framed(game, widths, z0))
