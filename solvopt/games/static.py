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
"""
from __future__ import annotations

import numpy as np

from solvopt.core.errors import ModelError
from solvopt.core.options import Option, positive_number
from solvopt.core.registry import Solver, register

from .exploitability import joint_polyhedron, joint_response, static_exploitability, ve_gap
from .tracking import COMMON_HONOURS, EquilibriumRun

DEFAULT_TOLERANCE = 1e-9


TOLERANCE = Option("tolerance", positive_number, DEFAULT_TOLERANCE, "stop when the certified exploitability is at most this")
CHECK_EVERY = Option("check_every", int, 10, "certify the exploitability every this many iterations")
START = Option("start", None, None, "starting joint action (default: 0 clipped to the bounds)")


def pseudo_gradient(game, a) -> np.ndarray:
    """F(a) = -(grad_{a_i} u_i(a))_i."""
    F = np.empty(game.n)
    for cols, u in zip(game.blocks, game.utilities):
        F[cols] = -u.gradient(a)[cols]
    return F


def _start(game, K, options):
    start = options.extra.get("start")
    if start is None:
        start = np.clip(np.zeros(game.n), game.lb, game.ub)
    start = np.asarray(start, dtype=float).ravel()
    if start.shape != (game.n,) or not np.all(np.isfinite(start)):
        raise ModelError(f"start must be {game.n} finite numbers (the joint action)")
    return K.project(start)


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
        return model

    def solve(self, model, options):
        game = model.data()
        K = joint_polyhedron(game)
        a = _start(game, K, options)
        run = EquilibriumRun(options, options.extra["tolerance"])
        every = max(1, options.extra["check_every"])

        def certify(it, a):
            return run.record(it, a, static_exploitability(game, a), also=ve_gap(game, a, K).value)

        if not certify(0, a):
            for it, a in self.iterate(game, K, a, options):
                if it % every == 0 and certify(it, a):
                    break
                if run.should_stop(it):
                    if it % every:
                        certify(it, a)
                    break
        best = run.best_point
        solution = {} if best is None else {"actions": best, "players": model.action_dict(best)}
        return run.result(solution)

    def iterate(self, game, K, a, options):  # pragma: no cover - abstract
        raise NotImplementedError


@register
class Extragradient(_StaticSolver):
    name = "extragradient"
    description = "extragradient on the pseudo-gradient VI over the shared set (variational equilibrium)"
    options = (TOLERANCE, CHECK_EVERY, START, Option("step", positive_number, 1.0, "initial step size (adapted)"))

    def iterate(self, game, K, a, options):
        eta, it = options.extra["step"], 0
        while True:
            it += 1
            Fa = pseudo_gradient(game, a)
            while True:
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
    options = (TOLERANCE, CHECK_EVERY, START, Option("alpha", positive_number, 1.0, "regularisation weight alpha"))

    def iterate(self, game, K, a, options):
        """Spectral projected gradient (Birgin-Martinez-Raydan): Barzilai-Borwein steps, nonmonotone Armijo."""
        alpha, t, it = options.extra["alpha"], 1.0, 0
        value, grad = _regularised(game, K, a, alpha)
        recent = [value]
        while True:
            it += 1
            d = K.project(a - t * grad) - a
            lam, ref = 1.0, max(recent[-10:])
            while True:
                y = a + lam * d                       # a convex combination of points of K
                vy, gy = _regularised(game, K, y, alpha)
                if vy <= ref + 1e-4 * lam * float(grad @ d) or lam < 1e-12:
                    break
                lam *= 0.5
            s_, g_ = y - a, gy - grad
            curv = float(s_ @ g_)
            t = min(1e10, max(1e-10, float(s_ @ s_) / curv)) if curv > 0 else 1e10
            a, value, grad = y, vy, gy
            recent.append(value)
            yield it, a


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
