"""Exports of a DSL model to other modelling tools (:mod:`.pyomo_export`); no solver lives here.

The ``lp`` family's solvers (HiGHS, SCIP, Gurobi) are in :mod:`solvopt.lp`; ``Model.solve``
finds them through the registry by family name. The HiGHS array handover is
:mod:`solvopt.dsl.highs_export`.
"""
