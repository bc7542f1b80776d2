"""The declarative modeling layer of solvopt (installed as ``solvopt.dsl``).

- the algebraic core: :class:`Model`, :class:`Var`, :class:`Param`, vectorised linear and
  quadratic expressions, constraints; compiled to a :class:`StandardForm` that HiGHS loads as
  arrays (``Model.to_highspy``, :mod:`.highs_export`) and that SCIP, Gurobi and Pyomo take as well;
  ``Model.solve`` finds the ``lp`` family's solvers through the registry;
- the family models (``HyperplaneClustering``, ``LayeredDP``, ``Split``, ...), each a
  :class:`FamilyModel` with ``compile(method)`` and ``solve(method, **options)``.

Importing this package loads no solver, no Numba and no HiGHS (``tests/test_dsl_imports.py``).
"""
from .expr import Constraint, LinExpr, QuadExpr
from .family import FamilyModel
from .model import Components, Model, Param, Var
from .standard_form import QuadConstraint, StandardForm

__all__ = ["Components", "Constraint", "FamilyModel", "LinExpr", "Model", "Param", "QuadConstraint", "QuadExpr",
           "StandardForm", "Var"]

# Family models (each module adds its class to the namespace below).
from .layered_dp import LayeredDP, Transitions  # noqa: E402
from .inventory import InventoryReinsertion  # noqa: E402
from .split import Split, StochasticSplit  # noqa: E402
from .hyperplane import HyperplaneClustering  # noqa: E402
