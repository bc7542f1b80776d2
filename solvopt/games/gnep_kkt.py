"""Generalized Nash equilibria from the players' joint KKT system (semismooth Newton, Fischer-Burmeister).

At a GNE every player's action solves its own convex problem given the others', so with linear
rows the KKT conditions of all players hold together, each player with *its own* multipliers
for the rows that bind it (its own rows, player-specific coupled rows, shared rows that involve
its action, its bounds):

    F_i(x) + G_i' lambda_i + E_i' mu_i = 0          (F = -(grad_{x_i} u_i)_i, the pseudo-gradient)
    lambda_i >= 0,  h_i - G_i x >= 0,  lambda_i . (h_i - G_i x) = 0,      E_i x = e_i

(G_i, E_i: the rows of player i, restricted to its columns in the first line). Conversely, for
concave utilities a solution is a GNE. The complementarity is written with the Fischer-Burmeister
function phi(a, b) = sqrt(a^2 + b^2) - a - b (zero iff a, b >= 0 and ab = 0), so the system is
Phi(z) = 0 in z = (x, lambda, mu), semismooth; :func:`solve_kkt` runs Newton's method on it with
an element of the generalized Jacobian and an Armijo line search on the merit
Psi = ||Phi||^2 / 2 (a gradient step where the Newton direction is not a descent direction: De
Luca, Facchinei, Kanzow). Quadratic locally near a nondegenerate solution. The merit may have
stationary points that are no solutions (games that are not monotone): a run whose merit stops
halving is restarted from the players' best responses at the last certified point, halfway to
them, or a random joint action (seeded), up to RESTARTS times.

Convex nonlinear constraints g_k(x) <= 0 (:mod:`solvopt.games.convex_constraints`) enter the same
way: their gradients (restricted to the bound player's columns) times their multipliers nu in the
stationarity, phi(nu_k, -g_k(x)) in the complementarity, and the Hessian term sum_k nu_k grad^2 g_k
in the Newton matrix, exact for expression trees (second-order forward mode) and by forward
differences of the exact gradients for callables. A shared one binds every
player it involves with that player's own multiplier; when every coupled constraint is shared and
some is nonlinear (``variational``), each shared constraint has one multiplier for all players,
the KKT system of the variational inequality, and each certificate bounds the VE gap too
(:func:`solvopt.games.convex_constraints.nonlinear_ve_gap`).

The solver (method ``gnep-kkt``, the default for games with player-specific rows or nonlinear
constraints) trusts none of
this: every candidate is certified by exact best responses over each player's true feasible set
(:func:`solvopt.games.exploitability.static_exploitability`: an exact QP for quadratic utilities,
bounded above through concavity by an LP), and the status is settled on that certificate in the
frame normalised by the game's payoff scale, as for the variational methods.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from solvopt.core.errors import ModelError
from solvopt.core.options import Option
from solvopt.core.registry import Solver, register
from solvopt.core.result import Termination
from solvopt.core.threads import one_blas_thread

from .convex_constraints import violation
from .exploitability import static_exploitability, ve_gap
from .kkt_newton import KKTSystem, solve_kkt
from .projection import FEAS_TOL, stopping_at
from .static import START, TOLERANCE, framed_start
from .tracking import COMMON_HONOURS, EquilibriumRun

NEWTON_ITERATIONS = 200  # Newton steps of one run (the iteration limit, a time limit and Ctrl-C stop it earlier)
RESTARTS = 20            # new runs from the best responses at the last certified point, after a stall
SMALL_SYSTEM = 2000      # KKT systems up to this many actions + rows solve on one BLAS thread (solvopt.core.threads)
FINISH_STEPS = 2        # Newton steps after the first point certified within the tolerance (the last certified)


def _guarantee(concept: str) -> str:
    what = "a generalized Nash equilibrium (each player's rows, its feasible set moving with the others' actions)" \
        if concept == "GNE" else "a generalized Nash equilibrium (not necessarily the variational one)"
    return ("objective is a certified upper bound on the exploitability of the returned point (exact best responses "
            f"over each player's feasible set given the others'); 0 only at {what}")


@register
class GNEPKKT(Solver):
    family = "games"
    name = "gnep-kkt"
    description = ("semismooth Newton on all players' KKT conditions (Fischer-Burmeister): a generalized Nash "
                   "equilibrium, player-specific coupled rows allowed")
    honours = COMMON_HONOURS
    capabilities = ("pseudo_game",)
    options = (TOLERANCE, START,
               Option("check_every", int, 5, "certify every this many Newton steps if the residual fell tenfold "
                                 "(and whenever it is small or fell 1000-fold)"))

    @classmethod
    def compile(cls, model):
        from solvopt.dsl.games import PseudoGame
        if not isinstance(model, PseudoGame):
            raise ModelError("method 'gnep-kkt' solves pseudo-games")
        return model

    def solve(self, model, options):
        data = model.data()
        with one_blas_thread(data.n + data.A.shape[0] <= SMALL_SYSTEM):   # see solvopt.core.threads
            return self._solve(model, options)

    def _solve(self, model, options):
        frame, K, a = framed_start(model, options)   # K: the joint actions where every player's rows hold
        if frame.game.nonlinear:                     # the convex constraints in the frame too (g / its scale)
            from .convex_constraints import framed
            frame.game = dataclasses.replace(frame.game, nonlinear=framed(model.data(), frame.widths, a))
        game, scale = frame.game, frame.scale
        variational = bool(game.nonlinear) and game.concept == "VE"
        system = KKTSystem(game, variational)
        run = EquilibriumRun(options, options.extra["tolerance"], scale=scale, scale_at=frame.status_scale)
        every = max(1, options.extra.get("check_every") or 5)

        last_cert = {}

        def certify(it, x):
            x = np.clip(x, game.lb, game.ub)
            if K.violation(x) > FEAS_TOL or violation(game, x) > FEAS_TOL:
                return False                  # not a joint action every player may take: nothing to certify
            e = static_exploitability(game, x)
            last_cert.update(point=x, responses=e.responses)
            also = ve_gap(game, x, K).value * scale if variational else None
            return run.record(it, x, frame.in_user_units(e), also=also)

        done = 0                              # Newton steps of the runs before this one
        rng = np.random.default_rng(0)        # restarts are reproducible
        with run.guard():
            with stopping_at(run.first_deadline()):      # the start's certificate: a returned point
                within = certify(0, a)
            x0 = a
            for restart in range(RESTARTS + 1):
                if within:
                    break
                within, stop, it = self._newton(system, x0, certify, run, done, every)
                done = it
                if stop:
                    break
                x0 = self._restart(game, K, last_cert, restart, rng, x0)
            else:
                run.iterations = done
                if not within:                # every run stalled short of an equilibrium
                    run.stopped = Termination.NUMERICAL_ERROR
        best = None if run.best_point is None else frame.to_user(run.best_point)
        solution = {} if best is None else {"actions": best, "players": model.action_dict(best)}
        result = run.result(solution, equilibrium="VE" if variational else "GNE")
        result.guarantee = _guarantee(game.concept)
        if variational:
            result.guarantee += ("; the KKT system gives each shared constraint one multiplier for all players, and "
                                 "stats['ve_gap'] is a certified upper bound on the VE gap (0 only at the variational "
                                 "equilibrium; optimal needs it within the tolerance too)")
        if result.termination is Termination.NUMERICAL_ERROR:
            result.message = (f"Newton's method on the KKT system stalled {RESTARTS + 1} times (restarted from best "
                              "responses and random points) before a certified equilibrium; the best certified point "
                              "is returned")
        return result

    @staticmethod
    def _restart(game, K, last_cert, restart, rng, previous):
        """Where a run starts after a stall (multipliers 0): the players' best responses at the last
        certified point, then halfway to them, then a random joint action (in K where the box is finite;
        before any point is certified, the best responses at the last start)."""
        if "point" not in last_cert:          # no certified point yet: the best responses at the last start
            try:
                last_cert.update(point=previous, responses=static_exploitability(game, previous).responses)
            except (ModelError, ArithmeticError, ValueError, np.linalg.LinAlgError):
                last_cert.update(point=previous, responses=None)
        base = last_cert["point"]
        if restart % 3 == 2 or last_cert["responses"] is None:
            lo = np.where(np.isfinite(game.lb), game.lb, base - 1.0 - np.abs(base))
            hi = np.where(np.isfinite(game.ub), game.ub, base + 1.0 + np.abs(base))
            return K.project(rng.uniform(lo, hi))
        b = base.copy()
        for cols, r in zip(game.blocks, last_cert["responses"]):
            b[cols] = r
        return base + (1.0 if restart % 3 == 0 else 0.5) * (b - base)

    @staticmethod
    def _newton(system, x0, certify, run, done, every):
        """One Newton run from x0, certifying as it goes: (within the tolerance, stop the method, last step).

        Far from a solution a certificate costs more than it tells, so a step is certified only when its
        residual is small (<= 1e-7), has fallen 1000-fold since the last certified step, or, every ``every``
        steps, tenfold; the run's last point (converged, stalled or stopped by the iteration limit) is
        certified too. After the first point within the tolerance up to FINISH_STEPS more steps are taken
        and only the last is certified (the best certified point is what the run returns)."""
        last, pending, it, within = None, None, done, False
        extra = FINISH_STEPS                  # Newton steps still taken once a point is certified
        for step, x, norm in solve_kkt(system, x0, iterations=NEWTON_ITERATIONS):
            it = done + step
            if within:                        # quadratic convergence: a few more steps cost little and sharpen
                extra -= 1
                if extra <= 0 or norm <= 1e-14 or run.should_stop(it):
                    certify(it, x)
                    return True, True, it
                pending = x
                continue
            if last is None:                  # the first step: the scale the residual falls from
                last = norm
            small = norm <= 1e-7 or norm <= 1e-3 * last or (step % every == 0 and norm <= 0.1 * last)
            if small and certify(it, x):
                within = True
                if run.best_score == 0.0:     # nothing left to sharpen
                    return True, True, it
            if small:
                last = norm
            pending = None if small else x
            if run.should_stop(it):
                if pending is not None and run.stopped is Termination.ITERATION_LIMIT:
                    within = certify(it, pending) or within
                return within, True, it
        if pending is not None:               # the run ended (converged or stalled): its last point, certified
            within = certify(it, pending) or within
        return within, within, it
