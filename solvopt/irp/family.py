"""The ``irp`` family's descriptor (see :mod:`solvopt.core.family`).

CLI defaults live here, once: ``--paths 5`` and ``--keep-values 0`` keep a JSON line short (the
API's defaults are the engine options' own); the Poisson scenario count defaults to the
model's ``DEFAULT_SCENARIOS`` (1000).
"""
from solvopt.core.family import Family, Param

FAMILY = Family(
    name="irp",
    description="inventory reinsertion DP of one customer under order-up-to, over demand scenarios",
    solver_modules=("solvopt.irp.solvers",),
    reader_modules=("solvopt.irp.reader",),
    models=("solvopt.dsl.inventory:InventoryReinsertion",),
    params=(
        Param("customer", int, "customer index (1-based, default 1)"),
        Param("scenarios", int, "number of Poisson demand scenarios (default 1000)"),
        Param("demand", str, "demand model: 'poisson' or a .npy (W, T) matrix of integer demands"),
        Param("stockout", float, "stockout penalty per unit"),
        Param("penalty", float, "soft-capacity penalty per unit of excess load"),
        Param("chunk", int, "scenarios per chunk (bounds memory)", target="solver"),
        Param("paths", int, "per-scenario plans to keep in the result", target="solver", default=5),
        Param("keep_values", int, "scenarios whose values to keep in the result", target="solver", default=0),
    ),
    from_instance="solvopt.irp.instance:model_from_instance",
    scale_cases="solvopt.irp.scaling:scale_cases",
    stop_cases="solvopt.irp.scaling:stop_cases",
)
