"""The ``lp`` family's descriptor (see :mod:`solvopt.core.family`)."""
from solvopt.core.family import Family

FAMILY = Family(
    name="lp",
    description="LP, MILP and QP models: the DSL's algebraic core, MPS and LP files",
    solver_modules=("solvopt.lp.highs", "solvopt.lp.scip", "solvopt.lp.gurobi"),
    reader_modules=("solvopt.lp.reader",),
    models=("solvopt.dsl.model:Model", "solvopt.lp.instance:FileModel"),
    from_instance="solvopt.lp.instance:model_from_instance",
    scale_cases="solvopt.lp.scaling:scale_cases",
    stop_cases="solvopt.lp.scaling:stop_cases",
)
