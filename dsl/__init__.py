"""The declarative modeling layer of solvopt (installed as ``solvopt.dsl``).

- the algebraic core: :class:`Model`, :class:`Var`, :class:`Param`, vectorised linear and
  quadratic expressions, constraints; compiled to a :class:`StandardForm` that HiGHS loads as
  arrays and that SCIP, Gurobi and Pyomo take as well;
- the family models (``HyperplaneClustering``, ``LayeredDP``, ``Split``, ...), each a
  :class:`FamilyModel` with ``compile(method)`` and ``solve(method, **options)``.
"""
from .expr import Constraint, LinExpr, QuadExpr
from .family import FamilyModel
from .model import Model, Param, Var
from .standard_form import QuadConstraint, StandardForm

__all__ = ["Constraint", "FamilyModel", "LinExpr", "Model", "Param", "QuadConstraint", "QuadExpr", "StandardForm",
           "Var"]

# Family models (each module adds its class to the namespace below).
from .layered_dp import LayeredDP, Transitions  # noqa: E402
from .inventory import InventoryReinsertion  # noqa: E402
from .split import Split, StochasticSplit  # noqa: E402
from .hyperplane import HyperplaneClustering  # noqa: E402
