"""SCIP backend (pyscipopt, direct): the same StandardForm, including nonconvex quadratic constraints.

SCIP is a global MINLP solver, so models HiGHS cannot take (MIQP, quadratic constraints,
nonconvex) solve here. A quadratic objective becomes an epigraph variable, as SCIP wants a
linear objective.
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

_STATUS = {
    "optimal": Termination.OPTIMAL, "infeasible": Termination.INFEASIBLE, "unbounded": Termination.UNBOUNDED,
    "inforunbd": Termination.ERROR, "timelimit": Termination.TIME_LIMIT, "nodelimit": Termination.ITERATION_LIMIT,
    "totalnodelimit": Termination.ITERATION_LIMIT, "stallnodelimit": Termination.ITERATION_LIMIT,
    "gaplimit": Termination.FEASIBLE_WITHIN_GAP, "userinterrupt": Termination.INTERRUPTED,
    "memlimit": Termination.ERROR, "sollimit": Termination.ITERATION_LIMIT, "bestsollimit": Termination.ITERATION_LIMIT,
}


def _quad_expr(P, q, x, quicksum):
    P = P.tocoo()
    terms = [float(v) * x[i] * x[j] for i, j, v in zip(P.row, P.col, P.data)]
    nz = np.nonzero(q)[0]
    terms += [float(q[j]) * x[j] for j in nz]
    return quicksum(terms)


def build_scip_model(sf: StandardForm, options: SolveOptions):
    """A pyscipopt Model of the standard form and its variable list."""
    from pyscipopt import Model, quicksum
    m = Model()
    m.hideOutput(not options.progress)
    x = [m.addVar(name=f"x{j}", lb=None if not math.isfinite(sf.col_lower[j]) else float(sf.col_lower[j]),
                  ub=None if not math.isfinite(sf.col_upper[j]) else float(sf.col_upper[j]),
                  vtype="I" if sf.integrality[j] else "C") for j in range(sf.num_vars)]
    G, h, E, e = sf.split_rows()
    for mat, rhs, equal in ((G, h, False), (E, e, True)):
        for r in range(mat.shape[0]):
            lo, hi = mat.indptr[r], mat.indptr[r + 1]
            expr = quicksum(float(v) * x[j] for j, v in zip(mat.indices[lo:hi], mat.data[lo:hi]))
            m.addCons(expr == float(rhs[r]) if equal else expr <= float(rhs[r]))
    for qc in sf.quad_constraints:
        expr = _quad_expr(qc.P, qc.q, x, quicksum)
        if math.isfinite(qc.lower) and qc.lower == qc.upper:
            m.addCons(expr == qc.lower)
            continue
        if math.isfinite(qc.lower):
            m.addCons(expr >= qc.lower)
        if math.isfinite(qc.upper):
            m.addCons(expr <= qc.upper)
    linear = quicksum(float(sf.c[j]) * x[j] for j in np.nonzero(sf.c)[0])
    sense = "minimize" if sf.sense > 0 else "maximize"
    if sf.Q is not None and sf.Q.nnz:
        z = m.addVar(name="objective_epigraph", lb=None, ub=None)
        quad = _quad_expr(sf.Q * 0.5, np.zeros(sf.num_vars), x, quicksum)
        m.addCons(z >= linear + quad if sf.sense > 0 else z <= linear + quad)
        m.setObjective(z + sf.offset, sense)
    else:
        m.setObjective(linear + sf.offset, sense)
    if options.time_limit is not None:
        m.setParam("limits/time", float(options.time_limit))
    m.setParam("limits/gap", float(options.rel_gap))
    m.setParam("limits/absgap", float(options.abs_gap))
    if options.node_limit is not None:
        m.setParam("limits/nodes", int(options.node_limit))
    m.setParam("randomization/randomseedshift", int(options.seed) % 2**31)
    return m, x


@register
class ScipSolver(Solver):
    family = "lp"
    name = "scip"
    description = "SCIP (pyscipopt): MILP, MIQP and nonconvex quadratically constrained models, globally"
    capabilities = ("lp", "milp", "qp", "miqp", "qcp")
    requires_modules = ("pyscipopt",)
    install_hint = "pip install pyscipopt  (or solvopt[bench])"

    def solve(self, compiled: StandardForm, options: SolveOptions) -> Result:
        m, x = build_scip_model(compiled, options)
        try:
            m.optimize()
        except Exception as exc:  # pyscipopt raises plain Exceptions
            raise SolverError(f"SCIP failed: {exc}") from exc
        status = m.getStatus()
        if status == "inforunbd":  # presolve could not tell which: settle it without presolving
            from pyscipopt import SCIP_PARAMSETTING
            m.freeTransform()
            m.setPresolve(SCIP_PARAMSETTING.OFF)
            m.optimize()
            status = m.getStatus()
        termination = _STATUS.get(status, Termination.ERROR)
        solution, objective = {}, None
        if m.getNSols() > 0:
            best = m.getBestSol()
            solution["x"] = np.array([m.getSolVal(best, v) for v in x], dtype=float)
            objective = float(m.getObjVal())
        bound = float(m.getDualbound()) if termination is not Termination.INFEASIBLE else None
        stats = {"backend": "scip", "device": "cpu", "nodes": int(m.getNNodes()), "kind": compiled.kind}
        return backend_result(compiled, termination, holds_point="x" in solution, objective=objective, bound=bound,
                              solution=solution, stats=stats, message=status, infinity=1e20)
