"""Family ``lp``: LP / MILP / QP models of the DSL's algebraic core and MPS/LP files, on HiGHS, SCIP, Gurobi."""
