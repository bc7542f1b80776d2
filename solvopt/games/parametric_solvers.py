"""The games family's method for Markov games with a continuous state component: ``affine-gda``.

Policies are affine in [1, z] per finite state (clipped to the action box). Without action
bounds everything is exact (:mod:`solvopt.games.parametric`): the result's ``objective`` is the
exact exploitability (the best responses over all policies are affine, found by Riccati policy
iteration) and the status settles through :class:`~solvopt.games.tracking.EquilibriumRun`. With
bounds the values come from a fixed batch of rollouts (:mod:`solvopt.games.parametric_sampled`):
the exploitability is an ESTIMATE relative to clipped affine policies, reported in
``stats["exploitability_estimate"]`` with its standard error, ``objective`` and ``bound`` unset,
and the status never OPTIMAL.
"""
from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from solvopt.core.errors import ModelError
from solvopt.core.options import Option, integer_at_least, non_negative_number, positive_number
from solvopt.core.registry import Solver, register
from solvopt.core.result import Result, SolutionStatus, Termination
from solvopt.core.threads import one_blas_thread

from . import parametric as pm
from . import parametric_sampled as ps
from .tracking import COMMON_HONOURS, EquilibriumRun

POLICY_CLASS = "affine: a = k(s) + K(s) z per finite state s"
STALL = 1e-10              # relative move of the gains between two checks below which sampled GDA has stopped


def start_gains(game, start) -> np.ndarray:
    """The starting gain table (S, D, 1 + c): ``start`` checked, or the constant policy at the middle of
    each action's range (0 where unbounded; a start on a bound would have a zero pathwise gradient)."""
    if start is None:
        G = pm.zero_policy(game)
        lo, hi = game.lower, game.upper
        with np.errstate(invalid="ignore"):
            G[:, :, 0] = np.where(np.isfinite(lo) & np.isfinite(hi), 0.5 * (lo + hi),
                                  np.where(np.isfinite(lo), lo + 1.0, np.where(np.isfinite(hi), hi - 1.0, 0.0)))
        return G
    shape = (game.n_states, game.n_actions, 1 + game.n_continuous)
    from solvopt.dsl.arrays import real_array
    G = real_array(start, "start gains", allow_inf=True)        # complex or text: refused, never cut
    if G.shape != shape:
        raise ModelError(f"start gains must have shape (states, actions, 1 + continuous) = {shape}, got {G.shape}")
    if not np.all(np.isfinite(G)):
        raise ModelError("start gains must be finite")
    return G


@register
class AffineGDA(Solver):
    family = "games"
    name = "affine-gda"
    description = ("two-time-scale GDA over affine policies for Markov games with a continuous state (exact "
                   "Lyapunov/Riccati values without action bounds; rollouts with pathwise gradients with bounds)")
    capabilities = ("linear_quadratic_markov_game",)
    honours = COMMON_HONOURS
    options = (
        Option("policy", str, "affine", "policy class (affine in [1, z], clipped to the action box)", ("affine",)),
        Option("evaluation", str, "auto", "exact (Lyapunov; no action bounds), sampled (rollouts), or auto",
               ("auto", "exact", "sampled")),
        Option("tolerance", positive_number, 1e-10,
               "stop at this exploitability (exact) or estimate + 2 stderr (sampled)"),
        Option("step", positive_number, 0.5, "policy step (scaled by each player's own curvature)"),
        Option("adversary_step", positive_number, 1.0, "adversary step (the fast time scale)"),
        Option("adversary_steps", integer_at_least(1), 2, "adversary ascent steps per policy step"),
        Option("decay", non_negative_number, 0.0,
               "steps are divided by 1 + decay * iteration (for the kinks of clipped policies)"),
        Option("check_every", integer_at_least(1), 10, "evaluate the exploitability every this many iterations"),
        Option("samples", integer_at_least(2), 256, "rollouts in the fixed batch (sampled evaluation)"),
        Option("horizon", integer_at_least(1), None, "rollout length (default: until gamma^t < 1e-8)"),
        Option("start", None, None, "starting gains (states, actions, 1 + continuous)"),
    )

    @classmethod
    def compile(cls, model):
        from solvopt.dsl.markov_games import LinearQuadraticMarkovGame
        if not isinstance(model, LinearQuadraticMarkovGame):
            raise ModelError(f"method {cls.name!r} solves LinearQuadraticMarkovGame models, got {type(model).__name__}")
        return model

    def solve(self, game, options):
        with one_blas_thread():      # systems of at most a few hundred unknowns (see solvopt.core.threads)
            return self._solve(game, options)

    def _solve(self, game, options):
        x = options.extra
        G0 = start_gains(game, x["start"])
        sampled = x["evaluation"] == "sampled" or (x["evaluation"] == "auto" and game.constrained)
        if x["evaluation"] == "exact" and game.constrained:
            raise ModelError("exact evaluation needs unbounded actions (the clipped policy's value is not quadratic); "
                             "use evaluation='sampled'")
        steps = dict(step=x["step"], adversary_step=x["adversary_step"], adversary_steps=x["adversary_steps"],
                     decay=x["decay"], check_every=x["check_every"])
        if sampled:
            # the tolerance is relative to the reward scale there too (the estimate is in reward units)
            return solve_sampled(game, options, G0, samples=x["samples"], horizon=x["horizon"],
                                    tolerance=x["tolerance"] * reward_scale(game), **steps)
        # the game divided by its reward scale: values of about 1 in any units (statuses settle on value / scale)
        scale = reward_scale(game)
        data = normalised(pm.lq_data(game), scale)
        run = EquilibriumRun(options, x["tolerance"], scale=scale)
        # stop when the exploitability from mu AND the perfect-equilibrium residual reach the tolerance
        def record(it, G):
            expl, residual = pm.exploitability(data, G), pm.perfect_residual(data, G)
            expl = replace(expl, value=expl.value * scale, lower=expl.lower * scale, per_player=expl.per_player * scale,
                           values=expl.values * scale, residual=expl.residual * scale)
            return run.record(it, G.copy(), expl, also=residual * scale), max(expl.value, residual * scale) / scale

        with run.guard():
            pm.gda(pm.ExactEngine(data), run, G0, record=record, **steps)
        G = run.best_point
        extra = {"exploitability_kind": "exact", "policy_class": POLICY_CLASS}
        if run.best is not None:
            extra.update(values=run.best.values, riccati_residual=run.best.residual)
        result = run.result(solution_of(game, G), **extra)
        if "ve_gap" in result.stats:       # the run's second measure is the perfect residual here
            result.stats["perfect_residual"] = result.stats.pop("ve_gap")
        return result


def reward_scale(game) -> float:
    """The game's value scale: its largest reward coefficient (c, Q, e, Z, C) over (1 - gamma); 1 if all are 0."""
    parts = (game.linear, game.quadratic, game.state_linear, game.state_quadratic, game.cross)
    top = max(float(np.max(np.abs(p), initial=0.0)) for p in parts)
    return top / (1.0 - game.discount) if np.isfinite(top) and top > 0 else 1.0


def normalised(data, scale: float):
    """The exact engine's data with every reward divided by ``scale`` (same equilibria)."""
    return replace(data, Rxx=data.Rxx / scale, Rax=data.Rax / scale, Q=data.Q / scale)


def solution_of(game, G) -> dict:
    """The Result's solution: the gain table and each player's rows."""
    if G is None:
        return {}
    return {"gains": G, "players": {name: G[:, sl] for name, sl in zip(game.players, game.slices)}}


def solve_sampled(game, options, G0, *, samples, horizon, tolerance, step, adversary_step, adversary_steps,
                  check_every, decay) -> Result:
    """The bounded-action solve (:mod:`solvopt.games.parametric_sampled`): GDA on the training batch;
    the iterate of smallest estimate on a second batch is re-estimated on a third (so the reported
    figure carries no selection bias)."""
    T = ps.default_horizon(game) if horizon is None else horizon
    seed = 0 if options.seed is None else int(options.seed)
    train, select, report = (ps.SampledEngine(game, ps.draw_batch(game, samples, T, seed + k)) for k in range(3))
    run = EquilibriumRun(options, tolerance)            # its limits and stop requests; no certified record
    best = {"G": None, "value": np.inf, "last": None, "stalled": False}
    history = []

    def record(it, G):
        est = ps.estimate(select, G)
        history.append([it, time.perf_counter() - run.start, est.value, est.stderr])
        options.emit(f"iteration {it}: exploitability estimate {est.value:.3e} +- {est.stderr:.1e}")
        if est.value < best["value"]:
            best.update(G=G.copy(), value=est.value)
        last, best["last"] = best["last"], G.copy()
        # the iterate no longer moves: an equilibrium of the training batch; going on cannot lower the estimate
        best["stalled"] = last is not None and np.max(np.abs(G - last)) <= STALL * max(1.0, np.max(np.abs(G)))
        return est.value + 2 * est.stderr <= tolerance or best["stalled"], est.value

    pm.gda(train, run, G0, step=step, adversary_step=adversary_step, adversary_steps=adversary_steps,
           check_every=check_every, decay=decay, record=record)
    G = best["G"]
    final = ps.estimate(report, G)
    done = final.value + 2 * final.stderr <= tolerance
    term = Termination.FEASIBLE_WITHIN_GAP if done or best["stalled"] else (run.stopped or Termination.ITERATION_LIMIT)
    message = ("stationary on the training batch: the estimate is mostly its sampling error (more samples lower it)"
               if best["stalled"] and not done else "")
    stats = {"exploitability_kind": "estimate", "exploitability_estimate": final.value,
             "exploitability_stderr": final.stderr, "per_player_exploitability_estimate": final.per_player,
             "policy_class": "clipped " + POLICY_CLASS, "samples": samples, "horizon": T, "history": history,
             "iterations": history[-1][0] if history else 0, "tolerance": tolerance}
    return Result(term, SolutionStatus.FEASIBLE, objective=None, bound=None, gap=None, solution=solution_of(game, G),
                  message=message,
                  stats=stats, guarantee="no certificate: the exploitability is an estimate over rollouts, relative to "
                                         "clipped affine policies (stats['exploitability_estimate'] +- stderr)")
