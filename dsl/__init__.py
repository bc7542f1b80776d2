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

# Family models (a new family adds its model module's import here).
from .games import ArrowDebreuMarket, FisherMarket, PseudoGame
from .hyperplane import HyperplaneClustering
from .inventory import InventoryReinsertion
from .layered_dp import LayeredDP, Transitions
from .markov_games import LinearQuadraticMarkovGame, MarkovExchangeEconomy, MarkovPseudoGame
from .model import Components, Model, Param, Var
from .production import ProductionEconomy
from .scalar_game import ScalarGame
from .split import Split, StochasticSplit
from .standard_form import QuadConstraint, StandardForm
from .transport import Transport

__all__ = ["ArrowDebreuMarket", "Components", "Constraint", "FamilyModel", "FisherMarket", "HyperplaneClustering",
           "InventoryReinsertion", "LayeredDP", "LinExpr", "LinearQuadraticMarkovGame", "MarkovExchangeEconomy",
           "MarkovPseudoGame", "Model", "Param",
           "ProductionEconomy", "PseudoGame", "QuadConstraint", "QuadExpr", "ScalarGame", "Split", "StandardForm",
           "StochasticSplit", "Transitions", "Transport", "Var"]
