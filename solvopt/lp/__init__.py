"""Family ``lp``: LP / MILP / QP models (the DSL's algebraic core, MPS and LP files) on HiGHS, SCIP and Gurobi.

- :mod:`solvopt.lp.highs`, :mod:`solvopt.lp.scip`, :mod:`solvopt.lp.gurobi`: the methods;
- :mod:`solvopt.lp.common`: their base class and the Result through the one gap rule;
- :mod:`solvopt.lp.highs_session`: HiGHS' log lines forwarded to the progress log (a quiet
  ``highspy.Highs`` and its Ctrl-C watch, shared with the MPS reader and the k-HC node LPs, are in
  :mod:`solvopt.dsl.highs_export`);
- :func:`solve_standard_form`: solve a compiled model (``Model.compile()``, an MPS file's form).
"""
from __future__ import annotations

from solvopt.core.registry import get_solver
from solvopt.core.result import Result


def solve_standard_form(sf, method: str | None = None, **options) -> Result:
    """Solve a StandardForm with the ``lp`` family's ``method`` (default: HiGHS).

    The same entry point as ``Model.solve``: the registry finds the method by family name.
    """
    return get_solver("lp", method, options.get("device")).run(sf, **options)


__all__ = ["solve_standard_form"]
