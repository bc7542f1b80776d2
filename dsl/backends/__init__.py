"""Backends that solve a StandardForm: HiGHS (default), SCIP and Gurobi, plus the Pyomo export.

Importing this package registers the ``lp`` family's solvers.
"""
from __future__ import annotations

from solvopt.core.registry import get_solver
from solvopt.core.result import Result

from ..standard_form import StandardForm
from . import gurobi, highs, scip  # noqa: F401  (registration)


def solve_standard_form(sf: StandardForm, method: str | None = None, **options) -> Result:
    """Solve a compiled model with the ``lp`` family's ``method`` (default HiGHS)."""
    solver = get_solver("lp", method)
    kinds = set(solver.capabilities)
    if kinds and sf.kind not in kinds:
        from solvopt.core.errors import ModelError
        raise ModelError(f"method {solver.name!r} does not solve {sf.kind.upper()} models (it takes "
                         f"{', '.join(sorted(kinds))}); try method='scip' or 'gurobi'")
    return solver.run(sf, **options)


__all__ = ["solve_standard_form"]
