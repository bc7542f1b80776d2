"""The driver of the Markov exchange economies' methods: ``markov-tatonnement``
(:func:`solvopt.games.economy.tatonnement`) and ``markov-newton``
(:func:`solvopt.games.economy_newton.newton`) on the world states the chain reaches, with
markov-newton's restarts and its fallback to tatonnement until the time limit.
"""
from __future__ import annotations

import numpy as np

from .economy import LiftedRun, reachable_worlds, tatonnement
from .economy_newton import newton

RESTART_TAUS = (1.0, 0.01, 0.3, 0.003)    # markov-newton's restarts (first smoothing), then tatonnement


def solve(econ, run, method, **params) -> dict:
    """Run ``method`` ("markov-newton" or "markov-tatonnement") on the economy until the run stops
    (tolerance, time or iteration limit, interrupt): world states the chain never reaches are left
    out and given consistent prices (:func:`solvopt.games.economy.lift_profile`); when markov-newton's continuation ends
    before the tolerance it restarts with another first smoothing (RESTART_TAUS), and after those
    falls back to tatonnement until the time limit (without a time limit the run then ends, with
    the best certified profile and ITERATION_LIMIT). Returns the full economy's metrics keyed by
    iteration."""
    keep = reachable_worlds(econ)
    target, lifted = econ, None
    if not keep.all():
        worlds = np.flatnonzero(keep)
        target = econ.restricted(worlds)
        run = lifted = LiftedRun(run, econ, target, worlds)
    history = {}

    def finished(it) -> bool:
        return (run.best is not None and run.best_score <= run.tolerance) or run.should_stop(it)

    if method == "markov-tatonnement":
        history.update(tatonnement(target, run, **params))
    else:
        first = params.pop("tau_start")
        for tau in [first] + [t for t in RESTART_TAUS if t != first]:
            history.update(newton(target, run, tau_start=tau, start_iteration=max(history, default=0), **params))
            if finished(max(history)):
                break
        else:
            if run.deadline is not None:
                history.update(tatonnement(target, run, start_iteration=max(history) + 1))
    return history if lifted is None else lifted.history
