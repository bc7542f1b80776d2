"""The games family's scale and stop cases (:mod:`solvopt.core.scaling`).

Scale: every payoff multiplied by ``factor`` (pseudo-games: the utilities' coefficients; Fisher
markets: the budgets, and separately the utilities' values; Arrow-Debreu: the values; Markov and
linear-quadratic Markov games: every reward; economies with production: the utilities' values (log
or quadratic), and separately the goods' units; scalar games: every cost). The equilibria do not
move, the exploitability is linear in the payoffs (for markets: in the budgets, invariant in the values, since a buyer's
regret is measured in money) and the status must not change. Markov exchange economies: every
consumer's utility values (the exploitability is in money: invariant), and separately the money
unit (goods price sum, asset returns and asset price cap: linear).

Stop: a nearly bilinear pseudo-game (barely strongly monotone, one shared budget row, so every
projection is a HiGHS QP) and a large linear Fisher market, each minutes of work to 1e-15.
"""
from __future__ import annotations

import json

import numpy as np

from solvopt.core.scaling import ScaleCase, StopCase, invariant, linear

STATIC_METHODS = ("extragradient", "nested")
ECONOMY_METHODS = ("markov-tatonnement", "markov-newton", "auto")


def harker(factor: float):
    """Harker's game with every cost coefficient times ``factor`` (VE (5, 9) at every scale)."""
    from solvopt.dsl import PseudoGame
    g = PseudoGame("harker")
    x1 = g.player("x1", lb=0, ub=10)
    x2 = g.player("x2", lb=0, ub=10)
    g.minimize(x1, factor * (x1 * x1 + (8 / 3) * x1 * x2 - 34 * x1))
    g.minimize(x2, factor * (x2 * x2 + (5 / 4) * x1 * x2 - 24.25 * x2))
    g.share(x1 + x2 <= 15)
    return g


def harker_in_units(factor: float):
    """Harker's game with the actions measured in units ``factor`` times smaller (bounds and rows
    times ``factor``, payoffs unchanged): VE (5, 9) * factor, the same exploitability at every scale."""
    from solvopt.dsl import PseudoGame
    g = PseudoGame("harker-units")
    x1 = g.player("x1", lb=0, ub=10 * factor)
    x2 = g.player("x2", lb=0, ub=10 * factor)
    g.minimize(x1, (x1 * x1 + (8 / 3) * x1 * x2 - 34 * factor * x1) * (1 / factor**2))
    g.minimize(x2, (x2 * x2 + (5 / 4) * x1 * x2 - 24.25 * factor * x2) * (1 / factor**2))
    g.share(x1 + x2 <= 15 * factor)
    return g


def callable_game(factor: float):
    """Two players with log utilities given as callables (the projected-ascent path), times ``factor``."""
    from solvopt.dsl import PseudoGame
    g = PseudoGame("logs")
    x = g.player("x", lb=0, ub=2)
    y = g.player("y", lb=0, ub=2)           # on [0, 2]^2 the pseudo-gradient is strongly monotone
    g.utility(x, lambda a: factor * (np.log1p(a[0]) - 0.1 * a[0] * a[1] - 0.1 * a[0]),
              lambda a: factor * np.array([1 / (1 + a[0]) - 0.1 * a[1] - 0.1, -0.1 * a[0]]))
    g.utility(y, lambda a: factor * (2 * np.log1p(a[1]) - 0.1 * a[0] * a[1] - 0.5 * a[1]),
              lambda a: factor * np.array([-0.1 * a[1], 2 / (1 + a[1]) - 0.1 * a[0] - 0.5]))
    return g


def _fisher_values(n: int = 40, m: int = 40):
    rng = np.random.default_rng(3)
    return rng.random((n, m)) + 0.05, rng.random(n) + 0.5


def fisher_budgets(factor: float):
    from solvopt.dsl import FisherMarket
    from solvopt.dsl.utilities import Linear
    v, B = _fisher_values()
    return FisherMarket(Linear(v), budgets=B * factor)


def fisher_values(factor: float):
    from solvopt.dsl import FisherMarket
    from solvopt.dsl.utilities import Linear
    v, B = _fisher_values()
    return FisherMarket(Linear(v * factor), budgets=B)


def ces_budgets(factor: float):
    from solvopt.dsl import FisherMarket
    from solvopt.dsl.utilities import CES
    v, B = _fisher_values(6, 5)
    return FisherMarket(CES(v, 0.5), budgets=B * factor)


def cobb_douglas_budgets(factor: float):
    from solvopt.dsl import FisherMarket
    from solvopt.dsl.utilities import CobbDouglas
    v, B = _fisher_values(6, 5)
    return FisherMarket(CobbDouglas(v / v.sum(axis=1, keepdims=True)), budgets=B * factor)


def exchange_values(factor: float):
    from solvopt.dsl import ArrowDebreuMarket
    from solvopt.dsl.utilities import Linear
    v, _ = _fisher_values()
    return ArrowDebreuMarket(Linear(v * factor), endowments=np.eye(len(v)) + 0.1)


def markov_game(factor: float):
    """A two-state, two-player Markov pseudo-game with every reward times ``factor``."""
    from solvopt.dsl.markov_games import MarkovPseudoGame
    targets = np.array([[1.0, 2.0], [2.5, 0.5]])
    lin = np.zeros((2, 2, 2))
    quad = np.zeros((2, 2, 2, 2))
    for i in range(2):
        j = 1 - i
        lin[i, :, i] = 2 * targets[:, i]
        quad[i, :, i, i] = -2.0
        quad[i, :, i, j] = quad[i, :, j, i] = -0.5
    return MarkovPseudoGame([1, 1], lin * factor, [[0.9, 0.1], [0.3, 0.7]], 0.9, quadratic=quad * factor,
                            lower=0.0, upper=4.0)


def lq_game(factor: float):
    """A scalar linear-quadratic Markov game (two players steering one state), rewards times ``factor``."""
    from solvopt.dsl.markov_games import LinearQuadraticMarkovGame
    quad = np.zeros((2, 1, 2, 2))
    quad[0, 0, 0, 0], quad[1, 0, 1, 1] = -1.0, -2.0
    Z = np.array([-2.0, -4.0]).reshape(2, 1, 1, 1)
    return LinearQuadraticMarkovGame([1, 1], np.zeros((2, 1, 2)), [[1.0]], 0.9, [[[1.02]]], [[[1.0, 0.6]]],
                                     quadratic=quad * factor, state_quadratic=Z * factor,
                                     initial_state=[1.0], initial_cov=[[0.5]])


def _economy(values_factor: float = 1.0, money_factor: float = 1.0):
    """A random 3 consumers x 3 goods x 1 asset x 2 world states linear economy (seed 0)."""
    from solvopt.dsl.markov_games import MarkovExchangeEconomy
    rng = np.random.default_rng(0)
    values = rng.uniform(0.1, 1.0, size=(3, 3))
    endowments = rng.uniform(0.1, 1.0, size=(2, 3, 3))
    T = rng.uniform(0.0, 1.0, size=(2, 2))
    T /= T.sum(axis=1, keepdims=True)
    returns = rng.uniform(0.5, 1.5, size=(2, 1))
    return MarkovExchangeEconomy(("linear", values * values_factor), endowments, T, 0.9,
                                 asset_returns=returns * money_factor, asset_price_max=10.0 * money_factor,
                                 price_sum=10.0 * money_factor)


def economy_values(factor: float):
    """The economy with every consumer's utility values times ``factor``."""
    return _economy(values_factor=factor)


def economy_money(factor: float):
    """The economy with the money unit changed: goods price sum, asset returns and asset price cap
    times ``factor``."""
    return _economy(money_factor=factor)


def horizon_economy(values_factor: float = 1.0, money_factor: float = 1.0, *, kind: str = "leontief",
                    payout: float = 0.05, horizon: int = 6):
    """A 3 consumers x 3 goods economy with a horizon on a deterministic chain (seed 0): a start world
    state, then one world state repeated, one asset paying a bundle there worth about ``payout``
    times the price sum. At 0.05 the asset is worth less than its cap, so the construction of
    markov-horizon (everyone buys at the cap) is far from an equilibrium: a certified exploitability
    well above rounding, whose law the scale property checks."""
    from solvopt.dsl.markov_games import MarkovExchangeEconomy
    rng = np.random.default_rng(0)
    weights = rng.uniform(0.2, 1.0, size=(3, 3))
    weights = weights / weights.sum(axis=1, keepdims=True) if kind == "cobb_douglas" else weights * values_factor
    endowments = np.ones((2, 3, 3))
    endowments[0] = rng.uniform(0.01, 0.1, size=(3, 3))
    bundles = np.zeros((2, 1, 3))
    bundles[1, 0] = rng.uniform(0.5, 1.1, size=3) * payout
    return MarkovExchangeEconomy((kind, weights), endowments, [[0.0, 1.0], [0.0, 1.0]], 0.9, initial=[1.0, 0.0],
                                 asset_returns=bundles, asset_price_max=money_factor, price_sum=10.0 * money_factor,
                                 horizon=horizon)


def horizon_values(factor: float):
    """The economy with a horizon, every consumer's Leontief requirements times ``factor``."""
    return horizon_economy(values_factor=factor)


def horizon_money(factor: float):
    """The economy with a horizon in a money unit ``factor`` times smaller (price sum and asset cap)."""
    return horizon_economy(money_factor=factor)


def _production(values_factor: float = 1.0, goods_factor: float = 1.0):
    """A random 3 consumers x 2 firms x 3 goods economy with shifted-log utilities (seed 0)."""
    from solvopt.dsl import ProductionEconomy
    from solvopt.dsl.utilities import Logarithmic
    rng = np.random.default_rng(0)
    values = rng.uniform(0.5, 3.0, size=(3, 3))
    shifts = rng.uniform(0.5, 5.0, size=(3, 3))
    endowments = rng.uniform(0.0, 4.0, size=(3, 3)) + 0.1
    shares = rng.dirichlet(np.ones(3), size=2).T * 0.8
    return ProductionEconomy(Logarithmic(values * values_factor, shifts * goods_factor), endowments * goods_factor,
                             np.array([1.0, 2.5]) * goods_factor, profit_shares=shares)


def production_values(factor: float):
    """The economy with production, every consumer's utility values times ``factor`` (gains are in
    money: the exploitability is invariant)."""
    return _production(values_factor=factor)


def production_goods(factor: float):
    """The economy with production, the goods' units ``factor`` times smaller: endowments, firm radii
    and the logs' shifts times ``factor`` (the same economy: the exploitability, in money, is linear)."""
    return _production(goods_factor=factor)


def production_quadratic(factor: float):
    """An economy with production whose consumers have satiable quadratic utilities b.x - 0.5 x'Qx,
    Q and b times ``factor`` (demand unchanged; the exploitability, in money, is invariant)."""
    from solvopt.dsl import ProductionEconomy
    from solvopt.dsl.quadratic_utility import Quadratic
    rng = np.random.default_rng(1)
    roots = rng.uniform(-0.5, 0.5, size=(3, 3, 3)) + 2.0 * np.eye(3)
    Q = np.einsum("kij,klj->kil", roots, roots)
    b = rng.uniform(5.0, 15.0, size=(3, 3))
    endowments = rng.uniform(0.5, 3.0, size=(3, 3))
    return ProductionEconomy(Quadratic(Q * factor, b * factor), endowments, np.array([1.0, 2.0]))


def scalar_a2(factor: float):
    """Problem A.2 (a ``scalar_game``: costs not convex in the own action) with every cost times
    ``factor``; the certificate divides by each payoff's range, so it is invariant."""
    from .gnep_library import problem
    from .scalar_instance import scalar_game_from_json
    data = problem("A.2").instance()
    for player in data["players"]:
        player["cost"]["expression"] = {"op": "mul", "args": [factor, player["cost"]["expression"]]}
    return scalar_game_from_json(data)


def scale_cases() -> list[ScaleCase]:
    """Each case stops at a small iteration limit, certified at every iteration: the exploitability
    there is far above rounding, so its law is testable (a converged run's is rounding, whose
    relative size no law fixes); tests/test_games_scale.py checks the converged statuses and points."""
    from .gnep_library_extra import PUBLISHED
    every = {"iteration_limit": 6, "check_every": 1}
    return [
        # the static methods' face-Newton polish lands on the equilibrium at once (rounding): off here
        ScaleCase("harker", harker, linear, ("extragradient",), dict(every, polish=False)),
        ScaleCase("harker-nested", harker, linear, ("nested",),
                  {"iteration_limit": 1, "check_every": 1, "polish": False}),
        # the actions' units: the unit frame measures each action in its range, so nothing changes
        ScaleCase("harker-action-units", harker_in_units, invariant, ("extragradient",), dict(every, polish=False),
                  rtol=1e-6),
        ScaleCase("harker-action-units-nested", harker_in_units, invariant, ("nested",),
                  {"iteration_limit": 1, "check_every": 1, "polish": False}, rtol=1e-6),
        ScaleCase("harker-action-units-kkt", harker_in_units, invariant, ("gnep-kkt",),
                  {"iteration_limit": 2, "check_every": 1}, rtol=1e-6),
        # callables take the projected-ascent path (nested's inner maximisation there is seconds: extragradient only)
        ScaleCase("callable-logs", callable_game, linear, ("extragradient",),
                  {"iteration_limit": 2, "check_every": 1, "polish": False}, rtol=1e-5),
        ScaleCase("fisher-linear-budgets", fisher_budgets, linear, ("eisenberg-gale", "proportional-response"),
                  every, rtol=1e-5),
        ScaleCase("fisher-linear-values", fisher_values, invariant, ("eisenberg-gale", "proportional-response"),
                  every, rtol=1e-5),
        ScaleCase("fisher-ces-budgets", ces_budgets, linear, ("eisenberg-gale", "proportional-response", "tatonnement"),
                  {"iteration_limit": 3, "check_every": 1}, rtol=1e-4),
        ScaleCase("fisher-cobb-douglas-budgets", cobb_douglas_budgets, linear, ("tatonnement",), every, rtol=1e-5),
        ScaleCase("exchange-linear-values", exchange_values, invariant, ("linear-exchange",), every, rtol=1e-5),
        ScaleCase("markov-pseudo-game", markov_game, linear, ("gda",), {"iteration_limit": 3, "check_every": 1},
                  rtol=1e-5),
        ScaleCase("linear-quadratic-markov", lq_game, linear, ("affine-gda",), {"iteration_limit": 3, "check_every": 1},
                  rtol=1e-5),
        ScaleCase("economy-values", economy_values, invariant, ECONOMY_METHODS, {"iteration_limit": 3}, rtol=1e-6),
        ScaleCase("economy-money", economy_money, linear, ECONOMY_METHODS, {"iteration_limit": 3}, rtol=1e-6),
        ScaleCase("economy-horizon-values", horizon_values, invariant, ("markov-horizon", "auto"), rtol=1e-6),
        ScaleCase("economy-horizon-money", horizon_money, linear, ("markov-horizon", "auto"), rtol=1e-6),
        # production-root's first certificate (uniform prices) is far from the equilibrium; one more
        # iteration lands on it (rounding): the law is tested at the start; tests/test_games_production.py
        # checks the converged statuses and points
        ScaleCase("production-values", production_values, invariant, ("production-root", "auto"),
                  {"iteration_limit": 0}, rtol=1e-9),
        ScaleCase("production-goods", production_goods, linear, ("production-root", "auto"),
                  {"iteration_limit": 0}, rtol=1e-9),
        ScaleCase("production-quadratic-values", production_quadratic, invariant, ("production-root", "auto"),
                  {"iteration_limit": 0}, rtol=1e-9),
        # from the published point (outside the bounds) one sweep leaves a certificate far above
        # rounding; the next lands on the equilibrium segment
        ScaleCase("scalar-a2", scalar_a2, invariant, ("scalar-global",),
                  {"iteration_limit": 1, "start": PUBLISHED.tolist()}, rtol=1e-9),
    ]


# --- stop cases ------------------------------------------------------------------------------
def write_slow_game(folder, players: int = 4, size: int = 20, seed: int = 0) -> str:
    """A random nearly bilinear game with one shared budget row (a JSON file): the pseudo-gradient is
    F(a) = (mu I - S) a - c with S skew-symmetric across players and mu = 1e-3, barely strongly
    monotone, so the methods need tens of thousands of iterations, each with HiGHS projections;
    solving it to 1e-15 is minutes of work."""
    rng = np.random.default_rng(seed)
    n = players * size
    S = rng.normal(size=(n, n)) / np.sqrt(n)
    S = S - S.T
    K = S - 1e-3 * np.eye(n)
    blocks = [slice(i * size, (i + 1) * size) for i in range(players)]
    for b in blocks:
        K[b, b] = -1e-3 * np.eye(size)                     # own block: concave in the own action
    c = np.round(rng.random(n), 6)
    entries = []
    for i, b in enumerate(blocks):
        Q = np.zeros((n, n))
        Q[b, :] = K[b, :]
        Q[:, b] = K[b, :].T
        ci = np.zeros(n)
        ci[b] = c[b]
        entries.append({"name": f"p{i}", "size": size, "lb": 0, "ub": 10,
                        "utility": {"Q": np.round(Q, 8).tolist(), "c": ci.tolist()}})
    data = {"kind": "pseudo_game", "name": "slow_game", "players": entries,
            "shared_constraints": [{"coefficients": [np.ones(n).tolist()], "sense": "<=", "rhs": 0.5 * n}]}
    path = str(folder / "slow_game.json") if hasattr(folder, "__truediv__") else f"{folder}/slow_game.json"
    with open(path, "w") as fh:
        json.dump(data, fh)
    return path


def write_slow_market(folder, n: int = 500, m: int = 500, seed: int = 0) -> str:
    """A large random linear Fisher market (JSON)."""
    rng = np.random.default_rng(seed)
    data = {"kind": "fisher_market", "name": "slow_market",
            "utility": {"kind": "linear", "values": np.round(rng.random((n, m)), 6).tolist()},
            "budgets": np.round(rng.random(n) + 0.5, 6).tolist()}
    path = str(folder / "slow_market.json") if hasattr(folder, "__truediv__") else f"{folder}/slow_market.json"
    with open(path, "w") as fh:
        json.dump(data, fh)
    return path


def stop_cases(folder=None) -> list[StopCase]:
    return [
        StopCase("slow-pseudo-game", lambda d: [write_slow_game(d), "--tolerance", "1e-15"], STATIC_METHODS),
        StopCase("slow-fisher-market", lambda d: [write_slow_market(d), "--tolerance", "1e-15"],
                 ("proportional-response",)),
    ]
