"""The ``khc`` family's descriptor (see :mod:`solvopt.core.family`)."""
from solvopt.core.family import Family, Param

FAMILY = Family(
    name="khc",
    description="k-hyperplane clustering in the 2-norm (k-HC2)",
    solver_modules=("solvopt.khc.solvers", "solvopt.khc.sbb", "solvopt.khc.external"),
    reader_modules=("solvopt.io.ampl_khc", "solvopt.io.points"),
    models=("solvopt.dsl.hyperplane:HyperplaneClustering",),
    params=(
        Param("k", int, "number of hyperplanes (overrides the file's K; needed for point files)"),
        Param("norms", str, "norm set of the MINLP methods, comma separated: 2 | 2,inf | 2,1 | 2,1,inf",
              target="solver"),
        Param("restarts", int, "heuristic restarts (bnb, heuristic, sbb)", target="solver"),
    ),
    from_instance="solvopt.khc.cli:model_from_instance",
)
