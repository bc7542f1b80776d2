"""Method ``lp/scip``: SCIP (pyscipopt) on the same StandardForm, including nonconvex quadratic constraints.

SCIP is a global MINLP solver, so models HiGHS cannot take (MIQP, quadratic constraints,
nonconvex) solve here. A quadratic objective becomes an epigraph variable, as SCIP wants a
linear objective. SCIP's own output is hidden; a light event handler (at each solved node and
new incumbent) sends a progress line to stderr when progress is on and stops the solve with
``interruptSolve()`` once a stop is requested. SCIP's own Ctrl-C handler is off (it prints to
stdout): the first Ctrl-C sets solvopt's stop request, seen at the next event (an LP solved, a
node solved, an incumbent found).
"""
from __future__ import annotations

import math

import numpy as np

from solvopt.core.errors import ModelError, SolverError
from solvopt.core.interrupt import stop_requested
from solvopt.core.options import Option, SolveOptions
from solvopt.core.progress import Progress
from solvopt.core.registry import register
from solvopt.core.result import Result, Termination, relative_gap
from solvopt.dsl.standard_form import StandardForm

from .common import LpSolver, lp_result, params_option

# SCIP status -> why it stopped (None: finished by its own criterion; settle decides OPTIMAL or not)
_STOPPED = {
    "optimal": None, "gaplimit": None,
    "infeasible": Termination.INFEASIBLE, "unbounded": Termination.UNBOUNDED, "inforunbd": Termination.ERROR,
    "timelimit": Termination.TIME_LIMIT, "nodelimit": Termination.ITERATION_LIMIT,
    "totalnodelimit": Termination.ITERATION_LIMIT, "stallnodelimit": Termination.ITERATION_LIMIT,
    "sollimit": Termination.ITERATION_LIMIT, "bestsollimit": Termination.ITERATION_LIMIT,
    "restartlimit": Termination.ITERATION_LIMIT, "userinterrupt": Termination.INTERRUPTED,
    "terminate": Termination.INTERRUPTED, "memlimit": Termination.ERROR,
}
SCIP_INFINITY = 1e20


def _quad_expr(P, q, x, quicksum):
    P = P.tocoo()
    terms = [float(v) * x[i] * x[j] for i, j, v in zip(P.row, P.col, P.data)]
    nz = np.nonzero(q)[0]
    terms += [float(q[j]) * x[j] for j in nz]
    return quicksum(terms)


def build_scip_model(sf: StandardForm, options: SolveOptions):
    """A pyscipopt Model of the standard form (output hidden, options set) and its variable list."""
    from pyscipopt import Model, quicksum
    m = Model()
    m.hideOutput(True)   # SCIP never writes to stdout; progress goes through the event handler
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
    # Ctrl-C reaches solvopt's handler (SCIP's own prints to stdout); the event handler then stops SCIP
    m.setParam("misc/catchctrlc", False)
    if options.extra.get("presolve") is False:
        from pyscipopt import SCIP_PARAMSETTING
        m.setPresolve(SCIP_PARAMSETTING.OFF)
    for name, value in (options.extra.get("params") or {}).items():
        try:
            m.setParam(name, value)
        except Exception as exc:  # pyscipopt raises plain exceptions (KeyError, LookupError, ...)
            raise ModelError(f"SCIP rejected its parameter {name}={value!r}: {exc}") from None
    return m, x


def _watcher(progress: Progress):
    """A SCIP event handler: a stop request interrupts the solve; progress lines at nodes and incumbents."""
    from pyscipopt import SCIP_EVENTTYPE, Eventhdlr

    events = SCIP_EVENTTYPE.NODESOLVED | SCIP_EVENTTYPE.BESTSOLFOUND | SCIP_EVENTTYPE.LPSOLVED

    class Watch(Eventhdlr):
        def eventinit(self):
            self.model.catchEvent(events, self)

        def eventexit(self):
            self.model.dropEvent(events, self)

        def eventexec(self, event):
            m = self.model
            if stop_requested():
                m.interruptSolve()
            if progress.enabled or progress.log is not None:
                primal, dual = m.getPrimalbound(), m.getDualbound()
                sense = 1 if m.getObjectiveSense() == "minimize" else -1
                gap = relative_gap(primal, dual, sense) if abs(primal) < SCIP_INFINITY else None
                progress(f"scip: nodes {m.getNNodes()}  incumbent {_num(primal)}  bound {_num(dual)}  "
                         f"gap {'-' if gap is None or not math.isfinite(gap) else f'{100 * gap:.3g}%'}")
            return {}

    return Watch()


def _num(v: float) -> str:
    return "-" if abs(v) >= SCIP_INFINITY else f"{v:.10g}"


@register
class ScipSolver(LpSolver):
    name = "scip"
    description = "SCIP (pyscipopt): MILP, MIQP and nonconvex quadratically constrained models, globally"
    capabilities = ("lp", "milp", "qp", "miqp", "qcp")
    honours = frozenset({"rel_gap", "abs_gap", "node_limit"})
    options = (
        Option("presolve", bool, True, "run SCIP's presolve"),
        params_option("SCIP"),
    )
    requires_modules = ("pyscipopt",)
    backend_packages = ("pyscipopt",)
    install_hint = "pip install pyscipopt  (or solvopt[bench])"

    def solve_form(self, sf: StandardForm, options: SolveOptions) -> Result:
        m, x = build_scip_model(sf, options)
        progress = Progress(options.progress, log=options.log)
        m.includeEventhdlr(_watcher(progress), "solvopt_watch", "Ctrl-C and progress for solvopt")
        try:
            m.optimize()
            status = m.getStatus()
            if status == "inforunbd":  # presolve could not tell which: settle it without presolving
                from pyscipopt import SCIP_PARAMSETTING
                m.freeTransform()
                m.setPresolve(SCIP_PARAMSETTING.OFF)
                m.optimize()
                status = m.getStatus()
        except Exception as exc:  # pyscipopt raises plain Exceptions
            raise SolverError(f"SCIP failed: {exc}") from exc
        stopped = _STOPPED.get(status, Termination.ERROR)
        solution, objective = {}, None
        if m.getNSols() > 0:
            best = m.getBestSol()
            solution["x"] = np.array([m.getSolVal(best, v) for v in x], dtype=float)
            objective = float(m.getSolObjVal(best))
        bound = float(m.getDualbound()) if stopped not in (Termination.INFEASIBLE, Termination.ERROR) else None
        stats = {"backend": "scip", "device": "cpu", "nodes": int(m.getNNodes()), "kind": sf.kind}
        progress(f"scip: {status}, nodes {stats['nodes']}, incumbent {_num(m.getPrimalbound())}, "
                 f"bound {_num(m.getDualbound())}", force=True)
        return lp_result(sf, stopped, objective=objective, bound=bound, solution=solution, stats=stats,
                         message=status, infinity=SCIP_INFINITY)
