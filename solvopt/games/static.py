"""Variational equilibria of static pseudo-games with jointly convex (linear) constraints.

Both methods work on K = {a : bounds, own rows, shared rows} and return the iterate of smallest
*certified* exploitability (:mod:`solvopt.games.exploitability`).

- ``extragradient`` (default): Korpelevich's extragradient on the variational inequality
  VI(K, F) with F(a) = -(grad_{a_i} u_i(a))_i, the pseudo-gradient. F(a) = -grad_b Psi(a, b) at
  b = a, so this is extragradient descent-ascent on Psi(a, b) = sum_i [u_i(b_i, a_-i) - u_i(a)]
  restricted to its diagonal; the VI's solutions are the VEs. Adaptive step: halved until
  eta ||F(y) - F(a)|| <= 0.9 ||y - a||, then allowed to grow by 10% per iteration. Linear
  convergence for strongly monotone F (Harker's and the river-basin games), O(1/eps) for monotone F.
- ``nested``: spectral projected gradient (Barzilai-Borwein steps, nonmonotone Armijo) on the
  regularised exploitability
  V(a) = max over b in K of Psi(a, b) - (alpha/2) ||a - b||^2, whose inner maximiser b(a) is
  unique (a strongly concave QP for quadratic utilities, projected ascent otherwise) and whose
  gradient is exact by Danskin: sum_i grad u_i(b_i, a_-i) off block i - sum_i grad u_i(a)
  + alpha (b - a). V >= 0 and V(a) = 0 exactly at VEs (von Heusinger-Kanzow).

**Polish.** At each check both methods also certify Newton's point on the face of K active at
the iterate (:mod:`solvopt.games.face_newton`, option ``polish``): the first-order iterates find
the face early and the point itself slowly; the polished point is kept only if it certifies.

**Checks.** Every ``check_every`` iterations, but a check certifies only when the natural residual
||a - P_K(a - F(a))|| has fallen tenfold since the last certificate, the active face has changed
(a new polish), or CHECK_PATIENCE checks were skipped; a stop certifies its point. The VE gap is
bounded only for a point whose exploitability does not already rule it out as the best.

**Scale.** Both methods run on the game's unit frame (:mod:`solvopt.games.frame`): each action
measured in its own range, each row divided by its largest coefficient, every payoff divided by
the payoff scale. Every inner test and step (feasibility, projections, best responses, the
polish, the step sizes) sees the same numbers whatever the user's units; the reported
exploitability and VE gap are multiplied back, and the status is settled on them divided by the
scale, the smaller of the start's and the point's own (:meth:`UnitFrame.status_scale`).
Multiplying the payoffs' or the actions' units by 10^k gives the same iterates and status.
"""
from __future__ import annotations

import numpy as np

from solvopt.core.errors import ModelError
from solvopt.core.options import Option, positive_number
from solvopt.core.registry import Solver, register

from .exploitability import (
    check_concave,
    joint_polyhedron,
    joint_response,
    static_exploitability,
    ve_gap,
)
from .face_newton import active_face, face_newton, pseudo_gradient
from .frame import UnitFrame
from .projection import check_stop, stopping_at
from .tracking import COMMON_HONOURS, EquilibriumRun

DEFAULT_TOLERANCE = 1e-9
CHECK_PATIENCE = 4       # checks skipped in a row at most (see ``due`` in the solve)


TOLERANCE = Option("tolerance", positive_number, DEFAULT_TOLERANCE,
                   "stop when the certified exploitability is at most this")
CHECK_EVERY = Option("check_every", int, 10, "certify the exploitability every this many iterations")
START = Option("start", None, None, "starting joint action (default: 0 clipped to the bounds)")
POLISH = Option("polish", bool, True, "at each check, also certify Newton's point on the iterate's active face")


def start_point(game, K, options):
    start = options.extra.get("start")
    if start is None:
        start = np.clip(np.zeros(game.n), game.lb, game.ub)
    from solvopt.dsl.arrays import real_array
    start = real_array(start, "start", allow_inf=True).ravel()        # complex or text: refused, never cut
    if start.shape != (game.n,) or not np.all(np.isfinite(start)):
        raise ModelError(f"start must be {game.n} finite numbers (the joint action)")
    return inside_domain(game, K, K.project(start), options)


def _defined(game, a):
    """None when every utility has a finite value and gradient at a, else the error it raised."""
    try:
        for u in game.utilities:
            if not (np.isfinite(u.value(a)) and np.all(np.isfinite(u.gradient(a)))):
                return ModelError("a utility is not finite at the start point")
    except (ModelError, ArithmeticError, ValueError) as exc:
        return exc
    return None


def inside_domain(game, K, a, options=None):
    """``a``, or where a utility is undefined there (a cost with S^(-1/gamma) at S = 0, a log at 0), the
    first point on the segment toward the middle of K where every utility is defined (said in one line).
    Undefined all along: the error the utility raised at ``a``."""
    first = _defined(game, a)
    if first is None:
        return a
    lb, ub = game.lb, game.ub
    middle = np.where(np.isfinite(lb) & np.isfinite(ub), 0.5 * (lb + ub),
                      np.where(np.isfinite(lb), lb + 1.0 + np.abs(lb),
                               np.where(np.isfinite(ub), ub - 1.0 - np.abs(ub), a)))
    middle = K.project(middle)
    for theta in (1e-3, 1e-2, 0.1, 0.5, 1.0):
        b = a + theta * (middle - a)                 # a convex combination of points of K
        if _defined(game, b) is None:
            if options is not None:
                options.emit(f"the start is outside a utility's domain; moved {theta:g} of the way to the middle of "
                             "the feasible set")
            return b
    raise first         # undefined everywhere tried: the utility's own error at the start (a bad callable says why)


def probe_concavity(game, K, a) -> None:
    """Check each library-form or callable utility against its linearisation at the start point.

    Two probe points per player, the start moved by +-(1 + |a|) along its own coordinates (kept in
    its bounds): concavity needs u(y) <= u(x) + g(x).(y - x) both ways. A convex utility (whose
    gradient may vanish at the start) or a gradient of the wrong sign fails here at once: ModelError.
    """
    from .projection import project_box
    for i, (cols, u) in enumerate(zip(game.blocks, game.utilities)):
        if u.quadratic:
            continue
        who = f"the utility of player {game.names[i]!r}"
        fx, gx = u.value(a), u.gradient(a)[cols]
        width = 1.0 + float(np.abs(a[cols]).max(initial=0.0))
        for sign in (1.0, -1.0):
            y = a.copy()
            y[cols] = project_box(a[cols] + sign * width, game.lb[cols], game.ub[cols])
            if K.violation(y) > 0 or np.array_equal(y, a):
                continue
            try:
                fy, gy = u.value(y), u.gradient(y)[cols]
            except ModelError:
                raise
            except Exception:                         # outside the utility's domain: nothing to probe there
                continue
            check_concave(fx, gx, fy, y[cols] - a[cols], who)
            check_concave(fy, gy, fx, a[cols] - y[cols], who)


def framed_start(model, options):
    """(frame, K, a): the pseudo-game in its unit frame (actions in their widths, payoffs of about 1, so
    no inner test sees the user's units), its joint feasible set there and the start, concavity probed."""
    user = model.data()
    start = start_point(user, joint_polyhedron(user), options)
    frame = UnitFrame.of(user, start)
    K = joint_polyhedron(frame.game)
    a = frame.to_unit(start)
    probe_concavity(frame.game, K, a)
    return frame, K, a


class _StaticSolver(Solver):
    family = "games"
    honours = COMMON_HONOURS
    capabilities = ("pseudo_game",)

    @classmethod
    def compile(cls, model):
        from solvopt.dsl.games import PseudoGame
        if not isinstance(model, PseudoGame):
            raise ModelError(f"method {cls.name!r} solves pseudo-games; for markets use eisenberg-gale, "
                             "proportional-response or tatonnement")
        if model.data().concept == "GNE":
            raise ModelError(f"method {cls.name!r} computes variational equilibria, where every coupled row is shared; "
                             "this game has player-specific coupled rows (game.constrain involving other players): "
                             "use method 'gnep-kkt'")
        if model.data().nonlinear:
            raise ModelError(f"method {cls.name!r} projects onto linear constraints only; this game has nonlinear "
                             "constraints: use method 'gnep-kkt'")
        return model

    def solve(self, model, options):
        frame, K, a = framed_start(model, options)
        game, scale = frame.game, frame.scale
        run = EquilibriumRun(options, options.extra["tolerance"], scale=scale, scale_at=frame.status_scale)
        every = max(1, options.extra["check_every"])

        polish = options.extra.get("polish", True)

        def certify_point(it, a):
            e = frame.in_user_units(static_exploitability(game, a))
            # the VE gap only where the point may still be the best: a larger exploitability alone rules it out
            worse = run.best_score is not None and e.value > run.best_score
            return run.record(it, a, e, also=None if worse else ve_gap(game, a, K).value * scale)

        def certify(it, a):
            if polish:                               # Newton on the iterate's face: certified like any point
                b = face_newton(game, K, a)
                if b is not None and not np.array_equal(b, a) and certify_point(it, b):
                    return True
            return certify_point(it, a)

        gate: dict = {"residual": None, "face": None, "skipped": 0}

        def due(a):
            """Whether a check certifies ``a``. Far from a solution a certificate costs more than it tells:
            only when the natural residual ||a - P_K(a - F(a))|| has fallen tenfold since the last certified
            check, the active face (what the polish solves on) has changed, or CHECK_PATIENCE checks passed."""
            r = float(np.abs(a - K.project(a - pseudo_gradient(game, a))).max(initial=0.0))
            face = active_face(K, a)
            if gate["residual"] is not None and r > 0.1 * gate["residual"] and face == gate["face"] \
                    and gate["skipped"] < CHECK_PATIENCE:
                gate["skipped"] += 1
                return False
            gate.update(residual=r, face=face, skipped=0)
            return True

        with run.guard():
            with stopping_at(run.first_deadline()):      # the start's certificate: a returned point
                first = certify(0, a)
                gate.update(residual=np.inf, face=active_face(K, a))
            if not first:
                for it, point in self.iterate(game, K, a, options):
                    checked = it % every == 0 and due(point)
                    if checked and certify(it, point):
                        break
                    if run.should_stop(it):
                        if not checked:
                            certify(it, point)
                        break
        best = None if run.best_point is None else frame.to_user(run.best_point)
        solution = {} if best is None else {"actions": best, "players": model.action_dict(best)}
        return run.result(solution, equilibrium="VE")

    def iterate(self, game, K, a, options):  # pragma: no cover - abstract
        raise NotImplementedError


@register
class Extragradient(_StaticSolver):
    name = "extragradient"
    description = "extragradient on the pseudo-gradient VI over the shared set (variational equilibrium)"
    options = (TOLERANCE, CHECK_EVERY, START, POLISH,
               Option("step", positive_number, 1.0, "initial step size (adapted)"))

    def iterate(self, game, K, a, options):
        eta, it = options.extra["step"], 0
        while True:
            it += 1
            Fa = pseudo_gradient(game, a)
            eta = min(eta, _step_cap(a, Fa))
            while True:
                check_stop()
                y = K.project(a - eta * Fa)
                Fy = pseudo_gradient(game, y)
                d = np.linalg.norm(y - a)
                if eta * np.linalg.norm(Fy - Fa) <= 0.9 * d or d == 0.0 or eta < 1e-14:
                    break
                eta *= 0.5
            a = K.project(a - eta * Fy)
            eta *= 1.1
            yield it, a


@register
class Nested(_StaticSolver):
    name = "nested"
    description = "spectral projected gradient on the regularised exploitability (inner maximisation exact)"
    options = (TOLERANCE, CHECK_EVERY, START, POLISH,
               Option("alpha", positive_number, 1.0, "regularisation weight alpha"))

    def iterate(self, game, K, a, options):
        """Spectral projected gradient (Birgin-Martinez-Raydan): Barzilai-Borwein steps, nonmonotone Armijo."""
        alpha, t, it = options.extra["alpha"], 1.0, 0
        value, grad = _regularised(game, K, a, alpha)
        recent = [value]
        while True:
            it += 1
            t = min(t, _step_cap(a, grad))
            if not np.isfinite(t):
                t = 1.0
            d = K.project(a - t * grad) - a
            lam, ref = 1.0, max(recent[-10:])
            while True:
                check_stop()
                y = a + lam * d                       # a convex combination of points of K
                vy, gy = _regularised(game, K, y, alpha)
                if vy <= ref + 1e-4 * lam * float(grad @ d) or lam < 1e-12:
                    break
                lam *= 0.5
            s_, g_ = y - a, gy - grad
            curv = float(s_ @ g_)
            # Barzilai-Borwein step; without positive curvature the largest step _step_cap allows
            t = max(1e-10, float(s_ @ s_) / curv) if curv > 0 else np.inf
            a, value, grad = y, vy, gy
            recent.append(value)
            yield it, a


STEP_REACH = 1e6     # a trial point moves at most this many times the iterate's magnitude (plus 1)


def _step_cap(a, grad) -> float:
    """The largest step that moves the point by at most STEP_REACH (1 + |a|): no trial point far off
    in space (the old fallback step 1e10 handed the projection a point of norm 1e11). Generous, so
    that Barzilai-Borwein steps keep their length (components pushing against a bound count too)."""
    gmax = float(np.abs(grad).max(initial=0.0))
    return np.inf if gmax == 0.0 else STEP_REACH * (1.0 + float(np.abs(a).max(initial=0.0))) / gmax


def _regularised(game, K, a, alpha):
    """(V(a), grad V(a)) of the regularised exploitability, with the exact inner maximiser (Danskin)."""
    b = joint_response(game, K, a, alpha)
    value, grad = -0.5 * alpha * float((b - a) @ (b - a)), alpha * (b - a)
    for cols, u in zip(game.blocks, game.utilities):
        mixed = a.copy()
        mixed[cols] = b[cols]
        value += u.value(mixed) - u.value(a)
        gm = u.gradient(mixed)
        gm[cols] = 0.0
        grad += gm - u.gradient(a)
    return value, grad
