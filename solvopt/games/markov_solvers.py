"""The games family's Markov methods: ``gda`` for Markov pseudo-games, ``markov-tatonnement`` and
``markov-newton`` (smooth demands) for Markov exchange economies, ``markov-horizon`` for those with
a finite horizon (:mod:`solvopt.games.economy_horizon` on a deterministic chain, with endowment floors and
caps :mod:`solvopt.games.economy_clip`; :mod:`solvopt.games.economy_lattice` on a stochastic one, with
floors and caps :mod:`solvopt.games.economy_clip_tree`). All report the certified
exploitability of their best iterate (:mod:`solvopt.games.markov`, :mod:`solvopt.games.economy`;
the economies' methods run through :mod:`solvopt.games.economy_methods`) and settle their status
through :class:`~solvopt.games.tracking.EquilibriumRun` (OPTIMAL only at certified exploitability <= 1e-9).
"""
from __future__ import annotations

from solvopt.core.errors import ModelError
from solvopt.core.options import Option, integer_at_least, positive_number
from solvopt.core.registry import Solver, register
from solvopt.core.result import Termination
from solvopt.core.threads import on_one_blas_thread

from . import economy, economy_horizon, economy_lattice, economy_methods, markov
from .tracking import COMMON_HONOURS, EquilibriumRun


class _MarkovSolver(Solver):
    """A Markov method: it takes one model class of :mod:`solvopt.dsl.markov_games`."""

    family = "games"
    honours = COMMON_HONOURS
    model_class = ""

    @classmethod
    def compile(cls, model):
        from solvopt.dsl import markov_games
        if not isinstance(model, getattr(markov_games, cls.model_class)):
            raise ModelError(f"method {cls.name!r} solves {cls.model_class} models, got {type(model).__name__}")
        if cls.model_class == "MarkovExchangeEconomy":
            for option, supported in model.method_support():
                if not supported:
                    raise ModelError(f"method {cls.name!r} does not support {option}")
        return model


@register
class MarkovGDA(_MarkovSolver):
    name = "gda"
    description = "two-time-scale gradient descent-ascent for Markov pseudo-games (exact policy gradients)"
    capabilities = ("markov_pseudo_game",)
    options = (
        Option("tolerance", positive_number, 1e-8, "stop when the certified exploitability is at most this"),
        Option("step", positive_number, 0.4, "policy step (divided by the own-reward curvature)"),
        Option("adversary_step", positive_number, 1.0, "adversary step (the fast time scale)"),
        Option("adversary_steps", integer_at_least(1), 1, "adversary ascent steps per policy step"),
        Option("check_every", integer_at_least(1), 20, "certify the exploitability every this many iterations"),
        Option("start", None, None, "starting policy, (states, actions)"),
    )

    model_class = "MarkovPseudoGame"

    def solve(self, game, options):
        x = options.extra
        run = EquilibriumRun(options, x["tolerance"])
        markov.gda(game, run, x["start"], step=x["step"], adversary_step=x["adversary_step"],
                   adversary_steps=x["adversary_steps"], check_every=x["check_every"])
        pi = run.best_point
        solution = {} if pi is None else {"policy": pi, "players": {
            name: pi[:, sl] for name, sl in zip(game.players, game.slices)}}
        extra = {}
        if run.best is not None:
            extra = {"per_state_exploitability": run.best.per_state, "values": run.best.values}
        return run.result(solution, **extra)


@register
class MarkovTatonnement(_MarkovSolver):
    name = "markov-tatonnement"
    description = ("recursive Radner equilibria of Markov exchange economies: tatonnement (proportional response "
                   "for linear utilities), exact best responses")
    capabilities = ("markov_exchange_economy",)
    options = (
        Option("tolerance", positive_number, 1e-4, "stop when the certified exploitability is at most this fraction "
                                              "of the total endowment value"),
        Option("step", positive_number, 0.5, "price step of the tatonnement"),
        Option("asset_step", positive_number, 1.0,
               "damping of the asset-market clearing (1: jump to the clearing holdings)"),
        Option("asset_every", integer_at_least(1), 10, "clear the asset markets every this many price steps"),
        Option("asset_decay", float, 1.0, "the damping of the k-th clearing is asset_step / k^asset_decay"),
        Option("check_every", integer_at_least(1), 25, "certify the exploitability every this many iterations"),
    )

    model_class = "MarkovExchangeEconomy"

    def solve(self, econ, options):
        x = options.extra
        run = _economy_run(econ, options)
        history = economy_methods.solve(econ, run, self.name, step=x["step"], asset_step=x["asset_step"],
                                        asset_every=x["asset_every"], asset_decay=x["asset_decay"],
                                        check_every=x["check_every"])
        return _economy_result(econ, run, history)


@register
class MarkovNewton(_MarkovSolver):
    name = "markov-newton"
    description = ("recursive Radner equilibria of Markov exchange economies: Newton's method on logit-smoothed "
                   "portfolios (and CES-smoothed demands for linear utilities), continued to sharp ones; exact best "
                   "responses certify every iterate")
    capabilities = ("markov_exchange_economy",)
    options = (
        Option("tolerance", positive_number, 1e-4, "stop when the certified exploitability is at most this fraction "
                                                   "of the total endowment value"),
        Option("tau_start", positive_number, 0.1, "first portfolio smoothing (logit scale of the log reservation "
                                                  "price margin)"),
        Option("tau_end", positive_number, 1e-6, "smallest smoothing the continuation goes to"),
        Option("tau_factor", positive_number, 0.25, "largest reduction of the smoothing from one stage to the next "
                                                    "(smaller after a stage fails)"),
        Option("newton_steps", integer_at_least(1), 8, "Newton steps per stage (six times this in the first)"),
        Option("warm_steps", integer_at_least(0), 500, "tatonnement steps on goods prices without asset trade "
                                                       "that give the starting prices"),
    )

    model_class = "MarkovExchangeEconomy"

    def solve(self, econ, options):
        x = options.extra
        if x["tau_factor"] >= 1:
            raise ModelError(f"tau_factor must be < 1, got {x['tau_factor']}")
        run = _economy_run(econ, options)
        history = economy_methods.solve(econ, run, self.name, tau_start=x["tau_start"], tau_end=x["tau_end"],
                                tau_factor=x["tau_factor"], newton_steps=x["newton_steps"],
                                warm_steps=x["warm_steps"])
        return _economy_result(econ, run, history)


@register
class MarkovHorizon(_MarkovSolver):
    name = "markov-horizon"
    description = ("finite-horizon Markov exchange economies, deterministic or stochastic chains: each period's "
                   "(or class of histories') equilibrium built forward, certified over every deviation")
    capabilities = ("markov_exchange_economy",)
    options = (
        Option("tolerance", positive_number, 1e-4, "stop the rounds when the certified exploitability is at most "
                                                   "this fraction of the endowment value of the periods"),
        Option("rounds", integer_at_least(0), 8, "rounds that re-solve a period with indifferent consumers "
                                                 "(Cobb-Douglas; degree h < 1: rounds of best paths)"),
    )

    model_class = "MarkovExchangeEconomy"

    @classmethod
    def compile(cls, model):
        from solvopt.dsl import markov_games
        if not isinstance(model, markov_games.MarkovExchangeEconomy):
            raise ModelError(f"method {cls.name!r} solves MarkovExchangeEconomy models, got {type(model).__name__}")
        economy_horizon.check_supported(model)
        return model

    @on_one_blas_thread                      # every period a 10 x 10 Fisher market (solvopt.core.threads)
    def solve(self, econ, options):
        import numpy as np

        from solvopt.core.interrupt import stop_reason

        from . import economy_clip
        from .projection import Stopped
        x = options.extra
        clipped = econ.endowment_floor is not None
        stochastic = economy_horizon.is_stochastic(econ)      # then classes of histories, not periods
        if stochastic:
            scale = economy_lattice.uniform_endowment_value(econ)
        else:
            expanded = economy_horizon.time_expanded(economy_clip.floorless(econ) if clipped else econ)
            T, big = expanded.horizon, expanded.economy
            uniform = np.full((T, econ.n_goods), econ.price_sum / econ.n_goods)
            scale = economy_horizon.horizon_endowment_value(big, uniform, T)
        # the frame: the periods' endowment value (every profile of the construction has this one)
        run = EquilibriumRun(options, x["tolerance"], scale=scale)
        history: dict = {}

        def record(k, prof, m, expl):
            history[k] = m
            return run.record(k, prof, expl) or run.should_stop(k + 1)

        def step():
            # the first construction may run into the grace time (a certified profile even at a tiny limit)
            reason = stop_reason(run.first_deadline() if run.best is None else run.deadline)
            if reason is not None:
                raise Stopped(reason)

        from .economy_deviation import GUARANTEE
        from .economy_path import PATH_GUARANTEE
        if stochastic and clipped:      # the construction, and what its certificate covers
            from . import economy_clip_tree
            construct, guarantee = economy_clip_tree.tree_equilibrium, economy_clip_tree.TREE_GUARANTEE
        elif stochastic:
            construct, guarantee = economy_lattice.forward_equilibrium, economy_lattice.GUARANTEE
        elif clipped:
            construct, guarantee = economy_clip.clip_equilibrium, economy_clip.CLIP_GUARANTEE
        elif econ.degree == 1.0:
            construct = economy_horizon.forward_equilibrium
            guarantee = GUARANTEE + " (on the time-expanded economy: an upper bound for the finite horizon)"
        else:
            construct, guarantee = economy_horizon.degree_equilibrium, PATH_GUARANTEE
        from .projection import stopping_at
        # inner calls (certificates' HiGHS runs, Newton loops) may use the first certificate's grace too;
        # step() holds the later rounds to the run's own deadline
        least = None
        with run.guard(), stopping_at(run.first_deadline()):
            # where it applies, the floor under every profile: the result's bound (a tolerance below it is
            # unreachable, not just unmet)
            least = _least_exploitability(econ, run) if clipped and not stochastic else None
            construct(econ, rounds=x["rounds"], tolerance=run.tolerance / run.scale, record=record, check=step,
                      note=run.progress)
        if run.best is None and run.stopped is None:
            run.stopped = Termination.ITERATION_LIMIT
        prof = run.best_point
        if prof is None:
            return run.result({})
        if stochastic:
            lat, prof = prof
            T = len(lat.period)
        else:
            T = expanded.horizon
        solution = {"prices": prof.prices[:T], "asset_prices": prof.asset_prices[:T],
                    "consumption": prof.consumption[:T], "portfolio": prof.portfolio[:T]}
        solution.update(economy_lattice.solution(lat) if stochastic else {"worlds": expanded.worlds.tolist()})
        best = history[max(k for k in history if history[k]["exploitability"] == run.best.value)]
        metrics = {k: v for k, v in best.items() if k != "per_player"}
        result = run.result(solution, metrics=metrics, rounds=best["rounds"],
                            metric_history=[[k] + [history[k].get(n) for n in HORIZON_METRICS]
                                            for k in sorted(history)],
                            metric_names=list(HORIZON_METRICS))
        result.guarantee = guarantee
        if least is not None:
            result.bound = least.value
            result.stats.update(least_exploitability=least.value, least_relative_exploitability=least.relative)
        return result


FLOOR_SHARE = 0.1           # the share of a run's time limit the proven floor may take before the construction


def _least_exploitability(econ, run):
    """The proven least exploitability of every profile (:mod:`solvopt.games.economy_clip_lower`) where the
    economy meets its argument, else None. It depends on the economy alone, so it is computed before the
    construction (a stopped run keeps it too), within FLOOR_SHARE of the time limit (None when that runs
    out first; Ctrl-C stops it at once)."""
    import time

    from .economy_clip_lower import least_exploitability
    from .projection import Stopped, check_stop, stopping_at
    now = time.perf_counter()
    until = None if run.deadline is None else now + FLOOR_SHARE * max(run.deadline - now, 0.0)
    try:
        with stopping_at(until):            # the MIPs' HiGHS runs and the checks between them
            return least_exploitability(econ, check=check_stop)
    except (ModelError, Stopped):
        return None


def _economy_run(econ, options) -> EquilibriumRun:
    """The run of an economy method: the tolerance is relative to the total endowment value at the
    starting prices (prices sum to price_sum in every state, so that value barely moves); the
    result reports the final one."""
    chain = economy.pair_chain(econ)
    start = economy.metrics(econ, chain, economy.initial_profile(econ, chain))
    return EquilibriumRun(options, options.extra["tolerance"], scale=start["endowment_value"])


def _economy_result(econ, run, history):
    """The Result of an economy method from its best certified profile and metric history."""
    prof = run.best_point
    if prof is None:
        return run.result({})
    chain = economy.pair_chain(econ)
    best = history[max(k for k in history if history[k]["exploitability"] == run.best.value)]
    solution = {"prices": prof.prices, "asset_prices": prof.asset_prices, "consumption": prof.consumption,
                "portfolio": prof.portfolio, "states": [[int(v), int(w)] for v, w in zip(chain.prev, chain.world)]}
    metrics = {k: v for k, v in best.items() if k != "per_player"}
    result = run.result(solution, metrics=metrics,
                        metric_history=[[k] + [history[k][n] for n in METRIC_NAMES] for k in sorted(history)],
                        metric_names=list(METRIC_NAMES))
    from .economy_deviation import GUARANTEE
    result.guarantee = GUARANTEE         # which deviations the certificate covers
    return result


HORIZON_METRICS = ("horizon_relative_exploitability", "excess_demand", "bellman_error", "portfolio_foc")
METRIC_NAMES = ("relative_exploitability", "excess_demand", "asset_excess_demand", "bellman_error", "portfolio_foc")
