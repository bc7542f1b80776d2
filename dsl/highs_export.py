"""The handover of a StandardForm to HiGHS: one ``passModel`` call on the arrays themselves.

HiGHS stores its matrix column-wise. ``Model.compile`` produces it column-wise (CSC) already,
so the load is ``Highs.passModel(num_col, num_row, num_nz, kColwise, sense, offset, cost,
col_lower, col_upper, row_lower, row_upper, start, index, value, integrality)``: highspy reads
the NumPy buffers directly (int32 indices, float64 values) and HiGHS copies them once. Filling
a ``HighsLp`` field by field instead converts every index through a Python sequence (about 4x
slower at 10^6 nonzeros), and a row-wise matrix makes HiGHS transpose it (``benchmarks/dsl_build.py``
measures the alternatives).

It also holds the HiGHS session utilities every HiGHS user shares (the LP solver, the MPS/LP
reader, the k-HC node LPs): :func:`highspy_module` (the one "import highspy or raise
BackendUnavailable"), :func:`new_highs` (a silent Highs), and :func:`watch_interrupt` /
:func:`was_interrupted` (Ctrl-C stops a HiGHS run through highspy's interrupt callbacks).

This module imports highspy only when called: ``import solvopt.dsl`` does not load it.
"""
from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from solvopt.core.errors import BackendUnavailable, ModelError
from solvopt.core.interrupt import stop_requested

from .standard_form import StandardForm

if TYPE_CHECKING:
    from highspy import Highs

HIGHS_INT_MAX = 2**31 - 1   # HighsInt is 32-bit in the highspy wheels

_banner_shown = False


@contextlib.contextmanager
def _quiet_stdout() -> Iterator[None]:
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


def highspy_module(needed_by: str | None = None) -> ModuleType:
    """The ``highspy`` module, or BackendUnavailable naming what needs it (e.g. "method 'sbb'")."""
    try:
        import highspy
    except ImportError:
        what = "highspy is not installed" if needed_by is None else f"{needed_by} needs highspy (HiGHS)"
        raise BackendUnavailable(f"{what}: pip install highspy") from None
    return highspy


def new_highs() -> Highs:
    """A silent ``highspy.Highs`` (no banner on stdout, ``output_flag`` off: JSON output stays clean)."""
    global _banner_shown
    highspy = highspy_module()
    if _banner_shown:
        h = highspy.Highs()
    else:
        with _quiet_stdout():
            h = highspy.Highs()
        _banner_shown = True
    h.setOptionValue("output_flag", False)
    highs: Highs = h
    return highs


def _interrupt_callbacks(h: Highs) -> list[Any]:
    from highspy import cb
    kinds = [cb.HighsCallbackType.kCallbackSimplexInterrupt, cb.HighsCallbackType.kCallbackIpmInterrupt,
             cb.HighsCallbackType.kCallbackMipInterrupt]
    qp = getattr(cb.HighsCallbackType, "kHighsCallbackQpInterrupt", None)
    if qp is not None and int(qp) < len(h.callbacks):
        kinds.append(qp)
    return [h.callbacks[int(k)] for k in kinds]


def _stop_check(event: Any) -> None:
    # set both ways: HiGHS keeps the flag from an earlier interrupted run of the same Highs
    event.interrupt(stop_requested())


@contextlib.contextmanager
def watch_interrupt(h: Highs) -> Iterator[None]:
    """While inside, runs of ``h`` stop (model status ``kInterrupt``) once a stop is requested.

    A stop request is Ctrl-C or :func:`solvopt.core.interrupt.request_stop`. HiGHS checks it at
    every simplex/IPM/QP iteration and every few MIP nodes; the run keeps its incumbent and
    bound. This uses highspy's ``kCallback*Interrupt`` callbacks (``cancelSolve()`` is the same
    flag), which run Python on the solving thread, where CPython also runs the SIGINT handler:
    no watcher thread is needed. Wrap one run or a whole sequence of runs of the same Highs;
    after a run, :func:`was_interrupted` tells whether it was cut short this way.
    """
    events = _interrupt_callbacks(h)
    for event in events:
        event.subscribe(_stop_check)
    try:
        yield
    finally:
        for event in events:
            event.unsubscribe(_stop_check)


def was_interrupted(h: Highs) -> bool:
    """True when the last run of ``h`` stopped because of a user interrupt."""
    highspy = highspy_module()
    return h.getModelStatus() in (highspy.HighsModelStatus.kInterrupt, highspy.HighsModelStatus.kHighsInterrupt)


def _int32(values: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.int32]:
    return values.astype(np.int32, copy=False)  # no copy when already int32


def _float64(values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    return np.ascontiguousarray(values, dtype=np.float64)


def colwise_matrix(A: Any) -> sp.csc_matrix:
    """``A`` column-wise with each entry once (the caller's matrix is never modified)."""
    if A.format != "csc":
        A = A.tocsc()             # a fresh matrix: free to sum duplicates in place
    elif not A.has_canonical_format:
        A = A.copy()
    A.sum_duplicates()
    return A


def load_standard_form(h: Highs, sf: StandardForm, keep_names: bool = False) -> None:
    """Pass the whole model to HiGHS: one column-wise ``passModel`` on arrays, then the Hessian.

    ``keep_names`` also passes variable and row names (for writing MPS/LP files). MIQPs load
    (HiGHS writes them) but HiGHS does not solve them.
    """
    import highspy
    if sf.quad_constraints:
        raise ModelError("HiGHS does not take quadratic constraints; solve this model with method='scip' or "
                         "'gurobi' (the same model is exported to them)")
    n, m = sf.num_vars, sf.num_rows
    A = colwise_matrix(sf.A)
    if max(n, m, A.nnz) > HIGHS_INT_MAX:
        raise ModelError(f"the model has {n:,} variables, {m:,} rows and {A.nnz:,} nonzeros; HiGHS holds at most "
                         f"{HIGHS_INT_MAX:,} of each")
    sense = highspy.ObjSense.kMaximize if sf.sense < 0 else highspy.ObjSense.kMinimize
    status = h.passModel(n, m, int(A.nnz), int(highspy.MatrixFormat.kColwise), int(sense), float(sf.offset),
                         _float64(sf.c), _float64(sf.col_lower), _float64(sf.col_upper), _float64(sf.row_lower),
                         _float64(sf.row_upper), _int32(A.indptr), _int32(A.indices), _float64(A.data),
                         # highspy reads num_col entries even when no column is integer: always pass them
                         np.ascontiguousarray(sf.integrality, dtype=np.int32))
    if status == highspy.HighsStatus.kError:
        raise ModelError("HiGHS rejected the model (passModel failed)")
    if sf.Q is not None and sf.Q.nnz:
        H = sp.tril(sf.Q).tocsc()
        H.sum_duplicates()
        status = h.passHessian(n, int(H.nnz), int(highspy.HessianFormat.kTriangular), _int32(H.indptr),
                               _int32(H.indices), _float64(H.data))
        if status == highspy.HighsStatus.kError:
            raise ModelError("HiGHS rejected the quadratic objective (is Q positive semidefinite?)")
    if keep_names and sf.var_names is not None:
        for j, name in enumerate(sf.var_names):
            h.passColName(j, name)
    if keep_names and sf.row_names is not None:
        for i, name in enumerate(sf.row_names):
            h.passRowName(i, name)
