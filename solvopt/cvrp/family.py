"""The ``cvrp`` family's descriptor (see :mod:`solvopt.core.family`)."""
from solvopt.core.family import Family, Param

FAMILY = Family(
    name="cvrp",
    description="CVRP split of a giant tour; stochastic split over demand scenarios",
    solver_modules=("solvopt.cvrp.solvers",),
    reader_modules=("solvopt.cvrp.reader",),
    models=("solvopt.dsl.split:Split", "solvopt.dsl.split:StochasticSplit"),
    params=(
        Param("tour", str, "giant tour: 'identity' (file order) or a file of customer ids"),
        Param("scenarios", int, "number of demand scenarios (stochastic split)"),
        Param("demand", str, "demand model: 'poisson' or a .npy (S, N-1) matrix of scenarios"),
        Param("fleet", int, "at most this many routes"),
        Param("penalty", float, "soft-capacity penalty per unit of excess load"),
        Param("policy", str, "customers whose demand exceeds Q: 'penalty' or 'infeasible'"),
        Param("chunk", int, "scenarios per chunk (bounds memory)", target="solver"),
    ),
    from_instance="solvopt.cvrp.instance:model_from_instance",
    scale_cases="solvopt.cvrp.scaling:scale_cases",
    stop_cases="solvopt.cvrp.scaling:stop_cases",
)
