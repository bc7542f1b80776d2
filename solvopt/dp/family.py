"""The ``dp`` family's descriptor (see :mod:`solvopt.core.family`)."""
from solvopt.core.family import Family

FAMILY = Family(
    name="dp",
    description="min-plus dynamic programs over layered DAGs (LayeredDP), batched over scenarios",
    solver_modules=("solvopt.dp.solvers",),
    models=("solvopt.dsl.layered_dp:LayeredDP",),
    scale_cases="solvopt.dp.scaling:scale_cases",
    stop_cases="solvopt.dp.scaling:stop_cases",
)
