"""HiGHS backend: loads a StandardForm as arrays (one ``passModel``), solves LP, MILP and convex QP.

LPs return row duals and reduced costs; MILPs return the incumbent and HiGHS' dual bound,
also when a time limit stops the search.
"""
from __future__ import annotations

import contextlib
import os
import sys

import numpy as np
import scipy.sparse as sp

from solvopt.core.errors import BackendUnavailable, ModelError, SolverError
from solvopt.core.options import SolveOptions
from solvopt.core.registry import Solver, register
from solvopt.core.result import Result, Termination

from ..standard_form import StandardForm
from .common import backend_result

_banner_shown = False


@contextlib.contextmanager
def _quiet_stdout():
    """Silence the C-level stdout (HiGHS prints its banner from C++ on the first Highs())."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        yield
        return
    sys.stdout.flush()
    saved = os.dup(fd)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), fd)
            yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)


def new_highs():
    """A silent ``highspy.Highs`` (no banner on stdout, so JSON output stays clean)."""
    global _banner_shown
    try:
        import highspy
    except ImportError:
        raise BackendUnavailable("highspy is not installed: pip install highspy") from None
    if _banner_shown:
        h = highspy.Highs()
    else:
        with _quiet_stdout():
            h = highspy.Highs()
        _banner_shown = True
    h.setOptionValue("output_flag", False)
    return h


def load_standard_form(h, sf: StandardForm, keep_names: bool = False) -> None:
    """Pass the whole model to HiGHS in one call (row-wise matrix, arrays, Hessian).

    ``keep_names`` also passes variable and row names (for writing MPS/LP files). MIQPs load
    (HiGHS writes them) but :func:`solve_with_highs` refuses to solve them.
    """
    import highspy
    if sf.quad_constraints:
        raise ModelError("HiGHS does not take quadratic constraints; solve this model with method='scip' or "
                         "'gurobi' (the same model is exported to them)")
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = sf.num_vars, sf.num_rows
    lp.col_cost_ = np.ascontiguousarray(sf.c, dtype=float)
    lp.col_lower_ = np.ascontiguousarray(sf.col_lower, dtype=float)
    lp.col_upper_ = np.ascontiguousarray(sf.col_upper, dtype=float)
    lp.row_lower_ = np.ascontiguousarray(sf.row_lower, dtype=float)
    lp.row_upper_ = np.ascontiguousarray(sf.row_upper, dtype=float)
    lp.offset_ = float(sf.offset)
    lp.sense_ = highspy.ObjSense.kMaximize if sf.sense < 0 else highspy.ObjSense.kMinimize
    A = sf.A.tocsr()
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_ = np.asarray(A.indptr, dtype=np.int32)
    lp.a_matrix_.index_ = np.asarray(A.indices, dtype=np.int32)
    lp.a_matrix_.value_ = np.asarray(A.data, dtype=float)
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = sf.num_vars, sf.num_rows
    if sf.is_mip:
        lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
                           for i in sf.integrality]
    if keep_names and sf.var_names is not None:
        lp.col_names_ = list(sf.var_names)
    if keep_names and sf.row_names is not None:
        lp.row_names_ = list(sf.row_names)
    if h.passModel(lp) == highspy.HighsStatus.kError:
        raise ModelError("HiGHS rejected the model (passModel failed)")
    if sf.Q is not None and sf.Q.nnz:
        H = sp.tril(sf.Q).tocsc()
        H.sort_indices()
        status = h.passHessian(sf.num_vars, H.nnz, highspy.HessianFormat.kTriangular, H.indptr.astype(np.int32),
                               H.indices.astype(np.int32), H.data.astype(float))
        if status == highspy.HighsStatus.kError:
            raise ModelError("HiGHS rejected the quadratic objective (is Q positive semidefinite?)")


def apply_options(h, options: SolveOptions, is_mip: bool) -> None:
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
    if options.progress:
        h.setOptionValue("output_flag", True)
        h.setOptionValue("log_to_console", True)


def _termination(model_status) -> Termination:
    import highspy
    S = highspy.HighsModelStatus
    table = {
        S.kOptimal: Termination.OPTIMAL, S.kInfeasible: Termination.INFEASIBLE, S.kUnbounded: Termination.UNBOUNDED,
        S.kUnboundedOrInfeasible: Termination.ERROR, S.kTimeLimit: Termination.TIME_LIMIT,
        S.kIterationLimit: Termination.ITERATION_LIMIT, S.kSolutionLimit: Termination.ITERATION_LIMIT,
        S.kInterrupt: Termination.INTERRUPTED, S.kHighsInterrupt: Termination.INTERRUPTED,
        S.kObjectiveBound: Termination.FEASIBLE_WITHIN_GAP, S.kObjectiveTarget: Termination.FEASIBLE_WITHIN_GAP,
        S.kModelEmpty: Termination.OPTIMAL,
    }
    return table.get(model_status, Termination.ERROR)


def solve_with_highs(sf: StandardForm, options: SolveOptions) -> Result:
    if sf.kind == "miqp":
        raise ModelError("HiGHS does not solve mixed-integer QPs; use method='scip' or 'gurobi'")
    import highspy
    h = new_highs()
    load_standard_form(h, sf)
    apply_options(h, options, sf.is_mip)
    if h.run() == highspy.HighsStatus.kError:
        hint = " (a quadratic objective must be convex for HiGHS: use method='scip' or 'gurobi')" if sf.Q is not None \
            and sf.Q.nnz else ""
        raise SolverError(f"HiGHS failed to solve the model: {h.modelStatusToString(h.getModelStatus())}{hint}")
    model_status = h.getModelStatus()
    if model_status == highspy.HighsModelStatus.kUnboundedOrInfeasible:
        # presolve could not tell which: settle it without presolve (the answer differs for users)
        h.setOptionValue("presolve", "off")
        h.run()
        model_status = h.getModelStatus()
    termination = _termination(model_status)
    info = h.getInfo()
    sol = h.getSolution()
    has_primal = info.primal_solution_status == 2  # kSolutionStatusFeasible
    solution, objective, bound = {}, None, None
    if has_primal and sf.num_vars:
        solution["x"] = np.asarray(sol.col_value, dtype=float)
    if has_primal:
        objective = float(info.objective_function_value)
    if sf.is_mip:
        bound = float(info.mip_dual_bound) if has_primal or termination is Termination.TIME_LIMIT else None
    elif termination is Termination.OPTIMAL:
        bound = objective
        if sol.dual_valid:
            solution["row_dual"] = np.asarray(sol.row_dual, dtype=float)
            solution["reduced_cost"] = np.asarray(sol.col_dual, dtype=float)
    if sf.num_vars == 0 and termination is Termination.OPTIMAL:
        objective, bound, solution["x"] = float(sf.offset), float(sf.offset), np.zeros(0)
    stats = {"backend": "highs", "device": "cpu", "simplex_iterations": int(info.simplex_iteration_count),
             "kind": sf.kind}
    if sf.is_mip:
        stats["nodes"] = int(info.mip_node_count)
    return backend_result(sf, termination, holds_point=has_primal, objective=objective, bound=bound,
                          solution=solution, stats=stats, message=h.modelStatusToString(model_status))


@register
class HighsSolver(Solver):
    family = "lp"
    name = "highs"
    description = "HiGHS: LP (simplex/IPM), MILP (branch-and-cut), convex QP; duals for LPs"
    capabilities = ("lp", "milp", "qp")
    default = True
    install_hint = "pip install highspy"

    def solve(self, compiled: StandardForm, options: SolveOptions) -> Result:
        return solve_with_highs(compiled, options)
