"""Method ``lp/highs``: HiGHS solves a StandardForm (LP, MILP, convex QP), loaded as arrays in one call.

LPs return row duals and reduced costs; MILPs return the incumbent and HiGHS' dual bound, also
when a limit or Ctrl-C stops the search. Its log goes to the progress lines on stderr (never to
stdout), Ctrl-C stops it through highspy's interrupt callbacks (:mod:`solvopt.dsl.highs_export`).
"""
from __future__ import annotations

import numpy as np

from solvopt.core.errors import ModelError, SolverError
from solvopt.core.interrupt import stop_requested
from solvopt.core.options import Option, SolveOptions
from solvopt.core.registry import register
from solvopt.core.result import Result, Termination
from solvopt.dsl.highs_export import highspy_module, load_standard_form, new_highs, was_interrupted, watch_interrupt
from solvopt.dsl.standard_form import StandardForm

from .common import LpSolver, backend_log, lp_result, params_option
from .highs_session import forward_log

__all__ = ["HighsSolver", "apply_options", "solve_with_highs"]


def apply_options(h, options: SolveOptions, is_mip: bool) -> None:
    """Set solvopt's common options (and the method's extras) on a loaded ``highspy.Highs``."""
    if options.time_limit is not None:
        h.setOptionValue("time_limit", float(options.time_limit))
    if options.threads is not None:
        # HiGHS keeps one scheduler per process, sized by the first run: a different thread count
        # later makes run() fail unless that scheduler is reset first (it restarts on the next run)
        import highspy
        highspy.Highs.resetThreadScheduler(True)  # blocking: the old workers are joined
        h.setOptionValue("threads", int(options.threads))
    h.setOptionValue("random_seed", int(options.seed) % (2**31 - 1))
    if is_mip:
        h.setOptionValue("mip_rel_gap", float(options.rel_gap))
        h.setOptionValue("mip_abs_gap", float(options.abs_gap))
        if options.node_limit is not None:
            h.setOptionValue("mip_max_nodes", int(options.node_limit))
    if options.iteration_limit is not None:
        h.setOptionValue("simplex_iteration_limit", int(options.iteration_limit))
        h.setOptionValue("ipm_iteration_limit", int(options.iteration_limit))
    extra = options.extra
    if extra.get("presolve") is not None:
        h.setOptionValue("presolve", extra["presolve"])
    if extra.get("lp_algorithm") is not None:
        h.setOptionValue("solver", extra["lp_algorithm"])
    import highspy
    for name, value in (extra.get("params") or {}).items():
        if h.setOptionValue(name, value) == highspy.HighsStatus.kError:
            raise ModelError(f"HiGHS rejected its parameter {name}={value!r} (see the HiGHS options list)")


def _stop_reason(model_status) -> Termination | None:
    """Why HiGHS stopped, for :func:`solvopt.core.status.settle` (None: finished by its own criterion)."""
    import highspy
    S = highspy.HighsModelStatus
    finished = (S.kOptimal, S.kModelEmpty, S.kObjectiveBound, S.kObjectiveTarget)
    if model_status in finished:
        return None
    table = {
        S.kInfeasible: Termination.INFEASIBLE, S.kUnbounded: Termination.UNBOUNDED,
        S.kTimeLimit: Termination.TIME_LIMIT, S.kIterationLimit: Termination.ITERATION_LIMIT,
        S.kSolutionLimit: Termination.ITERATION_LIMIT,   # also HiGHS' node limit
        S.kInterrupt: Termination.INTERRUPTED,
        S.kHighsInterrupt: Termination.INTERRUPTED,  # type: ignore[attr-defined]  # in highspy, not in its stubs
    }
    return table.get(model_status, Termination.ERROR)


def _option(h, name: str):
    value = h.getOptionValue(name)   # highspy returns (status, value)
    return value[1] if isinstance(value, tuple) else value


def _errors(lines: list[str]) -> list[str]:
    return [line.split(":", 1)[1].strip() for line in lines if line.startswith("ERROR:")]


def solve_with_highs(sf: StandardForm, options: SolveOptions) -> Result:
    """Load ``sf`` into a silent HiGHS, solve under the Ctrl-C watch, and settle the result."""
    highspy = highspy_module()
    h = new_highs()
    load_standard_form(h, sf)
    apply_options(h, options, sf.is_mip)
    show = backend_log(options, "highs")
    lines: list[str] = []

    def sink(line: str) -> None:
        lines.append(line)
        if show is not None:
            show(line)

    # cuPDLP-C prints its log with printf (to stdout) whenever HiGHS' output is on: keep it off there
    logged = None if _option(h, "solver") == "pdlp" else sink
    with watch_interrupt(h), forward_log(h, logged):
        status = h.run()
        either = highspy.HighsModelStatus.kUnboundedOrInfeasible
        if status != highspy.HighsStatus.kError and h.getModelStatus() == either:
            # presolve could not tell which: settle it without presolve (the answer differs for users)
            h.setOptionValue("presolve", "off")
            status = h.run()
    model_status = h.getModelStatus()
    # a second Ctrl-C raises KeyboardInterrupt inside a callback, which HiGHS turns into a solve error
    hard_stop = status == highspy.HighsStatus.kError and stop_requested()
    if status == highspy.HighsStatus.kError and not hard_stop and not was_interrupted(h):
        reasons = _errors(lines)
        if sf.Q is not None and sf.Q.nnz and any("non-convex" in r or "semidefinite" in r for r in reasons):
            raise SolverError("HiGHS solves convex QPs only and this quadratic objective is not convex "
                              f"({reasons[0]}); use method='scip' or 'gurobi'")
        raise SolverError(f"HiGHS failed to solve the model: {'; '.join(reasons) or 'no reason given'}")
    stopped = Termination.INTERRUPTED if hard_stop else _stop_reason(model_status)
    info = h.getInfo()
    sol = h.getSolution()
    # after a hard stop HiGHS' info is not trustworthy (it reports a dual bound of 0): keep nothing
    has_primal = info.primal_solution_status == 2 and not hard_stop  # kSolutionStatusFeasible
    solution, objective, bound = {}, None, None
    if has_primal:
        solution["x"] = np.asarray(sol.col_value, dtype=float)
        objective = float(info.objective_function_value)
    if sf.is_mip and not hard_stop:
        bound = float(info.mip_dual_bound)
    elif model_status == highspy.HighsModelStatus.kOptimal:
        bound = objective
        if sol.dual_valid:
            solution["row_dual"] = np.asarray(sol.row_dual, dtype=float)
            solution["reduced_cost"] = np.asarray(sol.col_dual, dtype=float)
    if model_status == highspy.HighsModelStatus.kModelEmpty or (sf.num_vars == 0 and stopped is None):
        objective = bound = float(sf.offset)
        solution["x"] = np.zeros(sf.num_vars)
    stats = {"backend": "highs", "device": "cpu", "simplex_iterations": max(0, int(info.simplex_iteration_count)),
             "kind": sf.kind}
    if sf.is_mip:
        stats["nodes"] = int(info.mip_node_count)
    return lp_result(sf, stopped, objective=objective, bound=bound, solution=solution, stats=stats,
                     message="stopped hard (a second Ctrl-C): HiGHS keeps no usable incumbent or bound"
                     if hard_stop else h.modelStatusToString(model_status), infinity=float(highspy.kHighsInf))


@register
class HighsSolver(LpSolver):
    name = "highs"
    description = "HiGHS: LP (simplex/IPM), MILP (branch-and-cut), convex QP; duals for LPs"
    capabilities = ("lp", "milp", "qp")
    honours = frozenset({"rel_gap", "abs_gap", "threads", "node_limit", "iteration_limit"})
    options = (
        Option("presolve", str, None, "HiGHS presolve (default: HiGHS' choice)", ("choose", "on", "off")),
        Option("lp_algorithm", str, None, "LP algorithm (HiGHS' 'solver' option; default: HiGHS' choice)",
               ("choose", "simplex", "ipm", "pdlp")),
        params_option("HiGHS"),
    )
    default = True
    requires_modules = ("highspy",)
    backend_packages = ("highspy",)
    install_hint = "pip install highspy"

    def solve_form(self, sf: StandardForm, options: SolveOptions) -> Result:
        return solve_with_highs(sf, options)
