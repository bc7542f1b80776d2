"""Generalized Nash equilibria of one-variable players with nonconcave utilities (``scalar-global``).

For a :class:`~solvopt.dsl.ScalarGame` every player's feasible set, the others fixed, is an interval
(:meth:`~solvopt.dsl.ScalarGame.interval`), and its best response is a global maximum over it,
found and proven by branch and bound (:func:`solvopt.games.scalar_global.global_maximum`).

The method iterates best responses (Gauss-Seidel: each player in turn moves to its certified
global best response when that gains more than the tolerance, else stays, clipped into its
interval; a player with no feasible action takes the bound nearest to what its rows allow) until a
sweep moves nobody; then, and at every sweep, the point is certified: per
player the certified upper bound of its best response's utility minus its utility, divided by its
payoff's range over its interval (the bound minus the least of its utility at the interval's ends
and at its action; 1 where that range is 0), so the measure does not depend on any player's
utility units. A point outside a player's interval is not certified. ``optimal`` means the sum is
at most ``tolerance``; best-response iteration need not converge (cycles), and then the run ends
at its iteration limit with its best certified point, never called an equilibrium.
"""
from __future__ import annotations

import numpy as np

from solvopt.core.errors import ModelError
from solvopt.core.options import Option
from solvopt.core.registry import Solver, register

from .certificate import Exploitability, with_block
from .scalar_global import curvature_enclosure, global_maximum
from .static import positive_number
from .tracking import COMMON_HONOURS, EquilibriumRun


def best_response(game, i: int, x, tol: float):
    """Player i's certified global best response at x: (GlobalMaximum, (L, U)), or (None, (L, U)) when its
    interval is empty; ``tol`` is relative to its payoff's range on the interval (any utility units)."""
    x = np.asarray(x, dtype=float)
    lo, hi = game.interval(i, x)
    if lo > hi:
        return None, (lo, hi)
    p = game.players[i]

    def at(t):
        z = x.copy()
        z[i] = t
        return z

    f = lambda t: float(p.utility(at(t)))                                   # noqa: E731
    if p.derivative_range is not None:
        enclose = lambda a, b: p.derivative_range(at(a), a, b)               # noqa: E731
    else:
        def enclose(a, b):
            return curvature_enclosure(lambda t: float(p.derivative(at(t))), float(p.curvature(at(a), a, b)))(a, b)
    gm = global_maximum(f, lo, hi, derivative_range=enclose, tol=0.0, rtol=tol, candidates=(min(max(x[i], lo), hi),))
    return gm, (lo, hi)


def _payoff_range(p, x, i, lo, hi, own: float, upper: float) -> float:
    """Player i's payoff range on its interval [lo, hi]: the best response's upper bound minus the least
    of its payoff now (``own``) and at the interval's ends."""
    return upper - min(own, float(p.utility(with_block(x, i, lo))), float(p.utility(with_block(x, i, hi))))


def scalar_exploitability(game, x, tol: float = 1e-13) -> Exploitability:
    """The certified relative exploitability of x (see the module doc): per player its best response's
    upper bound minus its utility, over its payoff's range on its interval."""
    x = np.asarray(x, dtype=float)
    if x.shape != (game.n,) or not np.all(np.isfinite(x)):
        raise ModelError(f"a point of this game is {game.n} finite numbers")
    per = np.zeros(game.n)
    violation = 0.0
    for i, p in enumerate(game.players):
        gm, (lo, hi) = best_response(game, i, x, tol)
        width = max(p.ub - p.lb, 1e-300)
        if gm is None:
            violation = max(violation, (lo - hi) / width)
            per[i] = np.inf
            continue
        violation = max(violation, (lo - x[i]) / width, (x[i] - hi) / width)
        own = float(p.utility(x))
        span = _payoff_range(p, x, i, lo, hi, own, gm.upper)
        per[i] = max(gm.upper - own, 0.0) / (span if span > 0 else 1.0)
    total = float(per.sum())
    return Exploitability(total, 0.0, per, [], max(violation, 0.0))


@register
class ScalarGlobal(Solver):
    name = "scalar-global"
    description = ("best-response iteration with certified global best responses (branch and bound) for "
                   "one-variable players whose utilities need not be concave")
    family = "games"
    honours = COMMON_HONOURS
    options = (Option("tolerance", positive_number, 1e-9,
                      "stop when the certified relative exploitability is at most this"),
               Option("start", None, None, "starting joint action (default: the bounds' midpoints)"))

    @classmethod
    def compile(cls, model):
        from solvopt.dsl.scalar_game import ScalarGame
        if not isinstance(model, ScalarGame):
            raise ModelError(f"method {cls.name!r} solves ScalarGame models; got {type(model).__name__}")
        if model.n == 0:
            raise ModelError("the game has no players")
        return model

    def solve(self, model, options):
        tol = options.extra["tolerance"]
        run = EquilibriumRun(options, tol)
        start = options.extra.get("start")
        x = model.start() if start is None else np.asarray(start, dtype=float).ravel()
        if x.shape != (model.n,) or not np.all(np.isfinite(x)):
            raise ModelError(f"start must be {model.n} finite numbers")
        x = np.clip(x, [p.lb for p in model.players], [p.ub for p in model.players])
        inner = 1e-3 * tol
        limit = options.iteration_limit if options.iteration_limit is not None else 200
        with run.guard():
            for sweep in range(limit + 1):
                e = scalar_exploitability(model, x, inner)
                if run.record(sweep, x.copy(), e) or run.should_stop(sweep + 1) or sweep == limit:
                    break
                moved = False
                for i, p in enumerate(model.players):
                    gm, (lo, hi) = best_response(model, i, x, inner)
                    if gm is None:            # no feasible action: the bound nearest to what the rows allow
                        x[i] = p.lb if hi < p.lb else (p.ub if lo > p.ub else x[i])
                        moved = True
                        continue
                    own = float(p.utility(with_block(x, i, min(max(x[i], lo), hi))))
                    span = _payoff_range(p, x, i, lo, hi, own, gm.upper)
                    if gm.value > own + inner * span:    # a gain beyond the tolerance, in the payoff's range
                        moved = moved or gm.x != x[i]
                        x[i] = gm.x
                    else:
                        x[i] = min(max(x[i], lo), hi)
                if not moved:
                    e = scalar_exploitability(model, x, inner)
                    run.record(sweep + 1, x.copy(), e)
                    break
        if run.best_point is None:
            return run.result({}, equilibrium="GNE")
        return run.result({"actions": run.best_point}, equilibrium="GNE")   # global best responses over own rows
