"""The ``khc`` family's descriptor (see :mod:`solvopt.core.family`): its one declaration.

Solvers: :mod:`solvopt.khc.solvers` (bnb, heuristic, brute-force), :mod:`solvopt.khc.sbb`
(sbb) and :mod:`solvopt.khc.external` (scip, gurobi). Readers (:mod:`solvopt.khc.reader`): AMPL
``.dat`` and point files (``.csv``, ``.npy``). Model: :class:`solvopt.dsl.hyperplane.HyperplaneClustering`.
"""
from solvopt.core.family import Family, Param

FAMILY = Family(
    name="khc",
    description="k-hyperplane clustering in the 2-norm (k-HC2)",
    solver_modules=("solvopt.khc.solvers", "solvopt.khc.sbb", "solvopt.khc.external",
                    "solvopt.khc.partition_bound"),
    reader_modules=("solvopt.khc.reader",),
    models=("solvopt.dsl.hyperplane:HyperplaneClustering",),
    params=(
        Param("k", int, "number of hyperplanes (overrides the file's K; needed for point files)", metavar="K"),
        Param("norms", str, "norm set of the MINLP methods (sbb, scip, gurobi): 2 | 2,inf | 2,1 | 2,1,inf, "
                            "or the p-norm relaxations inf | 1", target="solver", metavar="SET"),
        Param("restarts", int, "k-plane restarts (heuristic; first incumbent of bnb and sbb, 0: none)",
              target="solver", metavar="N"),
        Param("extra_restarts", int, "bnb: more k-plane restarts from the first incumbent (default: m - 20 "
                                     "above 20 points)", target="solver", metavar="N"),
        Param("order", str, "bnb's branching order: farthest | dynamic | margin | input", target="solver",
              metavar="ORDER"),
        Param("suffix_bounds", str, "bnb's Russian-doll suffix bounds: on | off | auto (auto: after half "
                                    "the time limit)", target="solver", metavar="MODE"),
        Param("charge_bound", str, "bnb's charge of the unassigned points: on | off", target="solver",
              metavar="MODE"),
        Param("pursuit", str, "heuristic: the projection-pursuit start: on | off | auto (auto: n >= 5 and "
                              "10 n points per plane)", target="solver", metavar="MODE"),
        Param("group_size", int, "partition-bound: points per group (0: calibrated to --group-seconds)",
              target="solver", metavar="N"),
        Param("group_seconds", float, "partition-bound: target bnb time per group in seconds (calibrates the "
                                      "group size)", target="solver", metavar="S"),
        Param("partitions", int, "partition-bound: stratified partitions solved (the best bound is kept)",
              target="solver", metavar="N"),
        # partition-bound's ``workers`` option has no flag here: --workers is the CLI's own (a dask
        # cluster for the instances), and argparse takes one meaning per flag.
    ),
    from_instance="solvopt.khc.instance:model_from_instance",
    scale_cases="solvopt.khc.scaling:scale_cases",
    stop_cases="solvopt.khc.scaling:stop_cases",
)
