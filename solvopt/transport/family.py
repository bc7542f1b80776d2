"""The ``transport`` family's descriptor (see :mod:`solvopt.core.family`).

``--p`` and ``--metric`` go to the model (:func:`solvopt.transport.instance.model_from_instance`);
``--engine`` (the min-cost flow engine) to the methods that take it.
"""
from solvopt.core.family import Family, Param

FAMILY = Family(
    name="transport",
    description="W_p optimal transport between weighted point sets (or over a cost matrix), p in [1, inf]",
    solver_modules=("solvopt.transport.exact", "solvopt.transport.approx"),
    reader_modules=("solvopt.transport.reader",),
    models=("solvopt.dsl.transport:Transport",),
    params=(
        Param("p", float, "the order p of W_p, in [1, inf] ('inf': the bottleneck distance; default 2)"),
        Param("metric", str, "distance between points: euclidean (default), cityblock or chebyshev"),
        Param("engine", str, "min-cost flow engine: auto, highs, ortools, networkx", target="solver"),
    ),
    from_instance="solvopt.transport.instance:model_from_instance",
)
