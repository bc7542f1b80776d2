"""The ``games`` family's descriptor (see :mod:`solvopt.core.family`).

Static pseudo-games (generalized Nash equilibria), Fisher and Arrow-Debreu markets, Markov
pseudo-games, Markov exchange economies and linear-quadratic Markov games.
"""
from solvopt.core.family import Family, Param

FAMILY = Family(
    name="games",
    description="generalized Nash equilibria of pseudo-games, market equilibria (exploitability minimisation)",
    solver_modules=("solvopt.games.static", "solvopt.games.gnep_kkt", "solvopt.games.markets", "solvopt.games.auto",
                    "solvopt.games.markov_solvers", "solvopt.games.parametric_solvers",
                    "solvopt.games.exchange", "solvopt.games.production", "solvopt.games.scalar_equilibrium"),
    reader_modules=("solvopt.games.production_reader", "solvopt.games.reader", "solvopt.games.json_checks"),
    models=("solvopt.dsl.games:PseudoGame", "solvopt.dsl.games:FisherMarket", "solvopt.dsl.games:ArrowDebreuMarket",
            "solvopt.dsl.production:ProductionEconomy", "solvopt.dsl.scalar_game:ScalarGame",
            "solvopt.dsl.markov_games:MarkovPseudoGame", "solvopt.dsl.markov_games:MarkovExchangeEconomy",
            "solvopt.dsl.markov_games:LinearQuadraticMarkovGame"),
    params=(
        Param("tolerance", float, "stop when the certified exploitability / payoff scale is at most this",
              target="solver"),
    ),
    from_instance="solvopt.games.instance:model_from_instance",
    scale_cases="solvopt.games.scaling:scale_cases",
    stop_cases="solvopt.games.scaling:stop_cases",
)
