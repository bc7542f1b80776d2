"""The spine shared by every family: results, options, errors, the registry, array backends."""
from .backend import array_module, gpu_available, resolve_device, to_numpy
from .errors import BackendUnavailable, InstanceFormatError, ModelError, SolverError, SolvoptError
from .options import SolveOptions, parse_options
from .progress import Progress
from .registry import Availability, Solver, get_solver, register, solvers
from .result import Result, SolutionStatus, Termination, relative_gap

__all__ = [
    "Availability", "BackendUnavailable", "InstanceFormatError", "ModelError", "Progress", "Result",
    "SolutionStatus", "SolveOptions", "Solver", "SolverError", "SolvoptError", "Termination",
    "array_module", "get_solver", "gpu_available", "parse_options", "register", "relative_gap",
    "resolve_device", "solvers", "to_numpy",
]
