"""Gurobi backend (gurobipy matrix API): the same StandardForm, nonconvex quadratics with NonConvex=2.

gurobipy's pip package carries a size-limited licence; a model over that limit fails with a
SolverError that says so.
"""
from __future__ import annotations

import math

import numpy as np

from solvopt.core.errors import SolverError
from solvopt.core.options import SolveOptions
from solvopt.core.registry import Solver, register
from solvopt.core.result import Result, Termination

from ..standard_form import StandardForm
from .common import backend_result

_STATUS = {2: Termination.OPTIMAL, 3: Termination.INFEASIBLE, 4: Termination.ERROR, 5: Termination.UNBOUNDED,
           7: Termination.ITERATION_LIMIT, 8: Termination.ITERATION_LIMIT, 9: Termination.TIME_LIMIT,
           10: Termination.ITERATION_LIMIT, 11: Termination.INTERRUPTED, 12: Termination.NUMERICAL_ERROR,
           13: Termination.FEASIBLE_WITHIN_GAP, 15: Termination.FEASIBLE_WITHIN_GAP}


def build_gurobi_model(sf: StandardForm, options: SolveOptions):
    import gurobipy as gp
    from gurobipy import GRB
    env = gp.Env(empty=True)
    env.setParam("OutputFlag", 1 if options.progress else 0)
    env.start()
    m = gp.Model(env=env)
    vtype = np.where(sf.integrality > 0, GRB.INTEGER, GRB.CONTINUOUS)
    x = m.addMVar(sf.num_vars, lb=sf.col_lower, ub=sf.col_upper, vtype=vtype)
    G, h, E, e = sf.split_rows()
    if G.shape[0]:
        m.addMConstr(G, x, GRB.LESS_EQUAL, h)
    if E.shape[0]:
        m.addMConstr(E, x, GRB.EQUAL, e)
    for qc in sf.quad_constraints:
        if math.isfinite(qc.lower) and qc.lower == qc.upper:
            m.addMQConstr(qc.P, qc.q, GRB.EQUAL, qc.lower, x, x, x)
            continue
        if math.isfinite(qc.upper):
            m.addMQConstr(qc.P, qc.q, GRB.LESS_EQUAL, qc.upper, x, x, x)
        if math.isfinite(qc.lower):
            m.addMQConstr(qc.P, qc.q, GRB.GREATER_EQUAL, qc.lower, x, x, x)
    Q = None if sf.Q is None or not sf.Q.nnz else sf.Q * 0.5
    m.setMObjective(Q, sf.c, float(sf.offset), x if Q is not None else None, x if Q is not None else None, x,
                    GRB.MINIMIZE if sf.sense > 0 else GRB.MAXIMIZE)
    if sf.quad_constraints or Q is not None:
        m.Params.NonConvex = 2
    if options.time_limit is not None:
        m.Params.TimeLimit = float(options.time_limit)
    m.Params.MIPGap = float(options.rel_gap)
    m.Params.MIPGapAbs = float(options.abs_gap)
    if options.threads is not None:
        m.Params.Threads = int(options.threads)
    if options.node_limit is not None:
        m.Params.NodeLimit = float(options.node_limit)
    m.Params.Seed = int(options.seed) % 2**31
    return m, x, env


@register
class GurobiSolver(Solver):
    family = "lp"
    name = "gurobi"
    description = "Gurobi (gurobipy): LP, MILP, MIQP, nonconvex quadratic constraints (NonConvex=2)"
    capabilities = ("lp", "milp", "qp", "miqp", "qcp")
    requires_modules = ("gurobipy",)
    install_hint = "pip install gurobipy  (or solvopt[bench]; its bundled licence is size-limited)"

    def solve(self, compiled: StandardForm, options: SolveOptions) -> Result:
        import gurobipy as gp
        try:
            m, x, env = build_gurobi_model(compiled, options)
            m.optimize()
            if m.Status == 4:  # INF_OR_UNBD: settle which one without dual reductions
                m.Params.DualReductions = 0
                m.optimize()
        except gp.GurobiError as exc:
            raise SolverError(f"Gurobi failed: {exc}") from exc
        termination = _STATUS.get(int(m.Status), Termination.ERROR)
        solution, objective, bound = {}, None, None
        if m.SolCount > 0:
            solution["x"] = np.asarray(x.X, dtype=float)
            objective = float(m.ObjVal)
        if compiled.is_mip or compiled.quad_constraints:
            try:
                bound = float(m.ObjBound)
            except (gp.GurobiError, AttributeError):
                bound = None
        elif termination is Termination.OPTIMAL:
            bound = objective
        stats = {"backend": "gurobi", "device": "cpu", "kind": compiled.kind}
        if compiled.is_mip or compiled.quad_constraints:
            stats["nodes"] = int(m.NodeCount)
        m.dispose()
        env.dispose()
        return backend_result(compiled, termination, holds_point="x" in solution, objective=objective, bound=bound,
                              solution=solution, stats=stats, message=f"gurobi status {termination.value}",
                              infinity=1e100)
