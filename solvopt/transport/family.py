"""The ``transport`` family's descriptor (see :mod:`solvopt.core.family`).

``--p`` and ``--metric`` go to the model (:func:`solvopt.transport.instance.model_from_instance`);
the others to the methods that declare them as options (``solvopt methods --family transport
--verbose``): ``--engine`` (approx and exact: the min-cost flow engine; bottleneck: its
feasibility test), ``--centres`` and ``--improve`` (approx), ``--assignment`` (exact). The default
method ``auto`` takes them all and hands each to the method it picks when that method takes it
(:mod:`solvopt.transport.auto`).
"""
from solvopt.core.family import Family, Param


def yes_no(text: str) -> bool:
    """A boolean flag value: yes/no, true/false, on/off, 1/0."""
    value = {"yes": True, "true": True, "on": True, "1": True,
             "no": False, "false": False, "off": False, "0": False}.get(text.strip().lower())
    if value is None:
        raise ValueError(f"expected yes or no, got {text!r}")
    return value


FAMILY = Family(
    name="transport",
    description="W_p optimal transport between weighted point sets (or over a cost matrix), p in [1, inf]",
    solver_modules=("solvopt.transport.exact", "solvopt.transport.bottleneck", "solvopt.transport.approx",
                    "solvopt.transport.one_d", "solvopt.transport.sparse_exact", "solvopt.transport.auto"),
    reader_modules=("solvopt.transport.reader",),
    models=("solvopt.dsl.transport:Transport",),
    params=(
        Param("p", float, "the order p of W_p, in [1, inf] ('inf': the bottleneck distance; default 2)"),
        Param("metric", str, "distance between points: euclidean (default), cityblock or chebyshev"),
        Param("engine", str, "approx, exact: min-cost flow engine (auto, simplex, highs, ortools, networkx); "
                             "bottleneck: feasibility test (auto, ortools, scipy, highs, hopcroft-karp); "
                             "auto (the default method): to the method it picks, when that one has the engine",
              target="solver"),
        Param("centres", int, "approx: number of centres drawn from the targets (0: round(sqrt(n)))",
              target="solver"),
        Param("graph", str, "approx: the sparse graph (auto, two-hop, grid: a grid hierarchy of O(n log n) arcs "
                            "for points in d <= 3, multiscale: pricing from coarsened problems, a measured gap "
                            "and no factor)", target="solver"),
        Param("improve", yes_no, "approx: re-solve exactly over the flow's candidate pairs (yes/no)",
              target="solver", metavar="YES|NO"),
        Param("assignment", yes_no, "exact: linear_sum_assignment when n = m with uniform weights (yes/no)",
              target="solver", metavar="YES|NO"),
    ),
    from_instance="solvopt.transport.instance:model_from_instance",
    scale_cases="solvopt.transport.scaling:scale_cases",
    stop_cases="solvopt.transport.scaling:stop_cases",
)
