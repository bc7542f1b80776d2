"""Method ``lp/gurobi``: Gurobi (gurobipy matrix API) on the same StandardForm; nonconvex quadratics with NonConvex=2.

gurobipy's pip package carries a size-limited licence; a model over that limit fails with a
SolverError that says so. Gurobi's console log is off; its log lines reach the progress lines
on stderr through the MESSAGE callback, and the same callback calls ``terminate()`` once a stop
is requested (Gurobi also catches Ctrl-C itself).
"""
from __future__ import annotations

import math

import numpy as np

from solvopt.core.errors import ModelError, SolverError
from solvopt.core.interrupt import request_stop, stop_requested
from solvopt.core.options import SolveOptions
from solvopt.core.registry import register
from solvopt.core.result import Result, Termination
from solvopt.dsl.standard_form import StandardForm

from .common import LpSolver, backend_log, lp_result, params_option

# Gurobi status code -> why it stopped (None: finished by its own criterion)
_STOPPED = {2: None, 15: None, 3: Termination.INFEASIBLE, 4: Termination.ERROR, 5: Termination.UNBOUNDED,
            6: Termination.ERROR, 7: Termination.ITERATION_LIMIT, 8: Termination.ITERATION_LIMIT,
            9: Termination.TIME_LIMIT, 10: Termination.ITERATION_LIMIT, 11: Termination.INTERRUPTED,
            12: Termination.NUMERICAL_ERROR, 13: Termination.NUMERICAL_ERROR, 16: Termination.TIME_LIMIT}
GUROBI_INFINITY = 1e100


def build_gurobi_model(sf: StandardForm, options: SolveOptions, logging: bool):
    import gurobipy as gp
    from gurobipy import GRB
    env = gp.Env(empty=True)
    env.setParam("OutputFlag", 1 if logging else 0)
    env.setParam("LogToConsole", 0)   # never stdout: the log reaches us through the MESSAGE callback
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
    if options.iteration_limit is not None:
        m.Params.IterationLimit = float(options.iteration_limit)
    m.Params.Seed = int(options.seed) % 2**31
    for name, value in (options.extra.get("params") or {}).items():
        try:
            m.setParam(name, value)
        except gp.GurobiError as exc:
            raise ModelError(f"Gurobi rejected its parameter {name}={value!r}: {exc}") from None
    return m, x, env


def _callback(show):
    from gurobipy import GRB

    def callback(model, where):
        if show is not None and where == GRB.Callback.MESSAGE:
            for line in model.cbGet(GRB.Callback.MSG_STRING).splitlines():
                show(line)
        if stop_requested():
            model.terminate()
    return callback


@register
class GurobiSolver(LpSolver):
    name = "gurobi"
    description = "Gurobi (gurobipy): LP, MILP, MIQP, nonconvex quadratic constraints (NonConvex=2)"
    capabilities = ("lp", "milp", "qp", "miqp", "qcp")
    honours = frozenset({"rel_gap", "abs_gap", "threads", "node_limit", "iteration_limit"})
    options = (params_option("Gurobi"),)
    requires_modules = ("gurobipy",)
    backend_packages = ("gurobipy",)
    install_hint = "pip install gurobipy  (or solvopt[bench]; its bundled licence is size-limited)"

    def solve_form(self, sf: StandardForm, options: SolveOptions) -> Result:
        import gurobipy as gp
        show = backend_log(options, "gurobi")
        try:
            m, x, env = build_gurobi_model(sf, options, logging=show is not None)
            callback = _callback(show)
            m.optimize(callback)
            if m.Status == 4:  # INF_OR_UNBD: settle which one without dual reductions
                m.Params.DualReductions = 0
                m.optimize(callback)
        except gp.GurobiError as exc:
            raise SolverError(f"Gurobi failed: {exc}") from exc
        stopped = _STOPPED.get(int(m.Status), Termination.ERROR)
        if stopped is Termination.INTERRUPTED:
            request_stop()   # Gurobi may have caught the Ctrl-C itself: let the rest of the run know
        solution, objective, bound = {}, None, None
        if m.SolCount > 0:
            solution["x"] = np.asarray(x.X, dtype=float)
            objective = float(m.ObjVal)
        if sf.is_mip or sf.quad_constraints:
            try:
                bound = float(m.ObjBound)
            except (gp.GurobiError, AttributeError):
                bound = None
        elif int(m.Status) == 2:
            bound = objective
        stats: dict[str, object] = {"backend": "gurobi", "device": "cpu", "kind": sf.kind}
        if sf.is_mip or sf.quad_constraints:
            stats["nodes"] = int(m.NodeCount)
        status = int(m.Status)
        m.dispose()
        env.dispose()
        return lp_result(sf, stopped, objective=objective, bound=bound, solution=solution, stats=stats,
                         message=f"gurobi status {status}", infinity=GUROBI_INFINITY)
