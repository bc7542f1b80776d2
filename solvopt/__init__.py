"""solvopt: optimization solvers with a declarative modeling DSL.

Families: k-hyperplane clustering (``solvopt.khc``), min-plus dynamic programs over layered
DAGs (``solvopt.dp``), and LP/MILP/QP models through the DSL (``solvopt.dsl``).
"""
from .core import (BackendUnavailable, InstanceFormatError, ModelError, Result, SolutionStatus,
                   SolveOptions, SolverError, SolvoptError, Termination)

__version__ = "0.1.0"
__all__ = ["BackendUnavailable", "InstanceFormatError", "ModelError", "Result", "SolutionStatus",
           "SolveOptions", "SolverError", "SolvoptError", "Termination", "__version__"]
