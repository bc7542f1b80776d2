"""The CLI handler of k-HC instances: ``solvopt solve FILE.dat|FILE.csv --k K [--norms 2,inf] [--restarts N]``.

Family flags go only to methods that declare them: ``--norms`` to the MINLP methods (sbb,
scip, gurobi), ``--restarts`` to methods with a heuristic (bnb, heuristic; sbb's
``heuristic_restarts``). A flag the chosen method does not take is an error, never ignored.
"""
from __future__ import annotations

from ..core.errors import ModelError
from ..core.registry import get_solver, solvers
from ..core.result import Result

# family flag -> the option names it may fill, first declared one wins
FLAG_OPTIONS = {"norms": ("norms",), "restarts": ("restarts", "heuristic_restarts")}


def solve_instance(instance, method: str | None, options: dict, params: dict) -> Result:
    """Solve a k-HC :class:`~solvopt.io.base.Instance` (data = {"points", "k"}) with ``method``."""
    from solvopt.dsl.hyperplane import HyperplaneClustering

    unknown = sorted(set(params) - set(FLAG_OPTIONS) - {"k"})
    if unknown:
        raise ModelError(f"k-HC instances take --k, --norms, --restarts; not {', '.join('--' + p for p in unknown)}")
    k = params.get("k", instance.data["k"])
    model = HyperplaneClustering(instance.data["points"], k)
    solver = get_solver("khc", method)
    options = dict(options)
    for flag, names in FLAG_OPTIONS.items():
        if flag not in params:
            continue
        target = next((name for name in names if name in solver.extra_options), None)
        if target is None:
            takers = [s.name for s in solvers("khc") if any(name in s.extra_options for name in names)]
            raise ModelError(f"--{flag} does not apply to method {solver.name!r}; it applies to: {', '.join(takers)}")
        options[target] = params[flag]
    return model.solve(solver.name, **options)
