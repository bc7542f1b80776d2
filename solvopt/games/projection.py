"""Euclidean projections onto the feasible sets of games, and concave QPs / LPs over polyhedra.

Closed forms (exact, vectorised over leading axes): boxes, scaled simplices, budget sets
{x >= 0, p.x <= w}; a box with one row {lb <= x <= ub, lo <= r.x <= hi} by its breakpoints.
Polyhedra {lb <= x <= ub, lo <= A x <= hi}: a projection is a convex QP; :class:`Polyhedron` hands
it (and any convex QP, and the LPs behind Frank-Wolfe gaps) to HiGHS, then *polishes* the answer:
it takes the active set HiGHS found, solves the KKT equations of that face exactly, and keeps the
polished point when it is feasible with multipliers of the right sign (the exact optimum up to
rounding). Otherwise it keeps HiGHS's point — the exploitability
certificates (:mod:`solvopt.games.exploitability`) never rely on the polish being exact.
"""
from __future__ import annotations

import contextlib
import time

import numpy as np
import scipy.sparse as sp

from solvopt.core.errors import ModelError, SolverError
from solvopt.core.interrupt import stop_reason
from solvopt.core.result import Termination

FEAS_TOL = 1e-9      # absolute slack accepted as feasible (rows are compared in their own units)
POLISH_MAX = 2000    # the KKT polish is dense: skipped above this many variables


# --- stops: every HiGHS call and inner loop of a games solve honours the run's deadline and Ctrl-C ---
class Stopped(Exception):
    """Raised inside a projection, best response or inner loop when the run must stop now."""

    def __init__(self, reason):
        super().__init__(f"stopped: {reason}")
        self.reason = reason


_deadline: list = [None]     # the running solve's deadline (time.perf_counter()), set by :func:`stopping_at`


@contextlib.contextmanager
def stopping_at(deadline):
    """While inside, :func:`check_stop` and every HiGHS call here honour ``deadline`` and Ctrl-C."""
    previous = _deadline[0]
    _deadline[0] = deadline
    try:
        yield
    finally:
        _deadline[0] = previous


def run_highs(h):
    """Run HiGHS model ``h`` within the running solve's time left and Ctrl-C; its model status, or
    :class:`Stopped` when either cut the run short."""
    import highspy

    from solvopt.dsl.highs_export import watch_interrupt
    deadline = _deadline[0]
    # HiGHS's run clock adds up over the runs of one Highs: the limit is that clock plus the time left
    h.setOptionValue("time_limit", float("inf") if deadline is None
                     else h.getRunTime() + max(1e-3, deadline - time.perf_counter()))
    with watch_interrupt(h):
        h.run()
    status = h.getModelStatus()
    if status in (highspy.HighsModelStatus.kTimeLimit, highspy.HighsModelStatus.kInterrupt,
                  getattr(highspy.HighsModelStatus, "kHighsInterrupt", highspy.HighsModelStatus.kInterrupt)):
        raise Stopped(stop_reason(deadline) or Termination.TIME_LIMIT)   # deadline or Ctrl-C: stop the run
    return status


def check_stop() -> None:
    """Raise :class:`Stopped` when the deadline has passed or a stop was requested (inner loops call this)."""
    reason = stop_reason(_deadline[0])
    if reason is not None:
        raise Stopped(reason)


def project_box(z, lb, ub):
    """The nearest point of the box [lb, ub] (clip)."""
    return np.minimum(np.maximum(z, lb), ub)


def project_simplex(z, total=1.0):
    """The nearest point of {x >= 0, sum x = total} along the last axis (sort-based, exact)."""
    z = np.asarray(z, dtype=float)
    total = np.asarray(total, dtype=float)[..., None]
    u = -np.sort(-z, axis=-1)
    css = np.cumsum(u, axis=-1) - total
    k = np.arange(1, z.shape[-1] + 1)
    cond = u - css / k > 0
    rho = np.sum(cond, axis=-1, keepdims=True)          # cond is a prefix: its length
    theta = np.take_along_axis(css, rho - 1, axis=-1) / rho
    return np.maximum(z - theta, 0.0)


def project_budget(z, prices, budget):
    """The nearest point of {x >= 0, p.x <= budget} along the last axis (exact, by sorting breakpoints).

    x(lam) = max(0, z - lam p); lam = 0 when that is within budget, else p.x(lam) = budget,
    a piecewise-linear decreasing function of lam with breakpoints z_j / p_j.
    """
    z = np.asarray(z, dtype=float)
    p = np.broadcast_to(np.asarray(prices, dtype=float), z.shape)
    if np.any(p <= 0):
        raise ModelError("budget-set projection needs prices > 0")
    b = np.broadcast_to(np.asarray(budget, dtype=float), z.shape[:-1])
    free = np.maximum(z, 0.0)
    within = np.sum(p * free, axis=-1) <= b
    brk = z / p
    order = np.argsort(-brk, axis=-1)                     # goods leave the support as lam passes z_j/p_j
    bs = np.take_along_axis(brk, order, axis=-1)
    ps = np.take_along_axis(p, order, axis=-1)
    zs = np.take_along_axis(z, order, axis=-1)
    # with the first k goods in the support: lam_k = (sum p_j z_j - b) / sum p_j^2 over them
    lam = (np.cumsum(ps * zs, axis=-1) - b[..., None]) / np.cumsum(ps * ps, axis=-1)
    nxt = np.concatenate([bs[..., 1:], np.full(bs.shape[:-1] + (1,), -np.inf)], axis=-1)
    ok = (lam <= bs) & (lam >= nxt)
    k = np.argmax(ok, axis=-1)[..., None]
    lam_star = np.maximum(np.take_along_axis(lam, k, axis=-1), 0.0)
    out = np.maximum(z - lam_star * p, 0.0)
    return np.where(within[..., None], free, out)


def project_box_row(z, lb, ub, row, lo, hi):
    """The nearest point of {lb <= x <= ub, lo <= row . x <= hi} (one row; exact, by its breakpoints).

    x(lam) = clip(z - lam row, lb, ub) and row . x(lam) is nonincreasing and piecewise linear in
    lam, with breakpoints where a coordinate reaches a bound: lam = 0 when x(0) satisfies the row,
    else the root of row . x(lam) = hi (or lo), found on the sorted breakpoints and then exactly on
    the linear piece that holds it. Empty set: ModelError.
    """
    z, lb, ub, row = (np.asarray(v, dtype=float) for v in (z, lb, ub, row))
    x0 = project_box(z, lb, ub)
    r0 = float(row @ x0)
    if lo <= r0 <= hi:
        return x0
    sign, c = (1.0, hi) if r0 > hi else (-1.0, lo)

    def g(t):                                # sign (row . x(sign t) - c): nonincreasing in t >= 0
        return sign * (float(row @ project_box(z - sign * t * row, lb, ub)) - c)

    nz = row != 0
    with np.errstate(divide="ignore", invalid="ignore"):
        bp = np.concatenate([sign * (z[nz] - lb[nz]) / row[nz], sign * (z[nz] - ub[nz]) / row[nz]])
    bp = np.unique(bp[np.isfinite(bp) & (bp > 0)])
    cand = np.concatenate([[0.0], bp])
    lo_k, hi_k = 0, len(cand) - 1            # g(cand[lo_k]) > 0; find the last candidate with g >= 0
    if g(cand[hi_k]) >= 0.0:
        lo_k = hi_k
    else:
        while hi_k - lo_k > 1:
            mid = (lo_k + hi_k) // 2
            if g(cand[mid]) >= 0.0:
                lo_k = mid
            else:
                hi_k = mid
    t0 = cand[lo_k]
    g0 = g(t0)
    t1 = cand[lo_k + 1] if lo_k + 1 < len(cand) else t0 + 1.0     # past the last breakpoint: linear
    g1 = g(t1)
    if g0 - g1 <= 0.0:
        if g0 <= FEAS_TOL * (1.0 + abs(c)):
            return project_box(z - sign * t0 * row, lb, ub)
        raise ModelError("the feasible set is empty (the constraints cannot all hold)")
    t = t0 + (t1 - t0) * g0 / (g0 - g1)
    return project_box(z - sign * t * row, lb, ub)


class Polyhedron:
    """P = {x : lb <= x <= ub, lo <= A x <= hi} (A sparse, rows may be one-sided with +-inf)."""

    def __init__(self, lb, ub, A=None, lo=None, hi=None):
        self.lb = np.asarray(lb, dtype=float)
        self.ub = np.asarray(ub, dtype=float)
        n = self.lb.size
        self.A = sp.csr_matrix((0, n)) if A is None else sp.csr_matrix(A, dtype=float)
        m = self.A.shape[0]
        self.lo = np.full(m, -np.inf) if lo is None else np.asarray(lo, dtype=float)
        self.hi = np.full(m, np.inf) if hi is None else np.asarray(hi, dtype=float)
        self.n = n
        self._session = None      # (H, Highs) of the last QP: a repeated QP with the same H only changes costs
        self._face = None         # (H, active face) of the last QP: tried first by the next one
        self._dense_h = self._dense_a = None
        self._eye = None
        self._row = None          # the one row, dense, when there is exactly one

    @property
    def is_box(self) -> bool:
        return self.A.shape[0] == 0

    def violation(self, x) -> float:
        """The largest bound or row violation of x (0 when feasible)."""
        x = np.asarray(x, dtype=float)
        v = max(0.0, float(np.max(self.lb - x, initial=0.0)), float(np.max(x - self.ub, initial=0.0)))
        if self.A.shape[0]:
            r = self.A @ x
            v = max(v, float(np.max(self.lo - r, initial=0.0)), float(np.max(r - self.hi, initial=0.0)))
        return v

    def project(self, z):
        """The Euclidean projection of z onto P (closed form for a box, else a polished QP)."""
        z = np.asarray(z, dtype=float)
        if self.is_box:
            return project_box(z, self.lb, self.ub)
        if self.A.shape[0] == 1:
            if self._row is None:
                self._row = self.A.toarray().ravel()
            return project_box_row(z, self.lb, self.ub, self._row, self.lo[0], self.hi[0])
        if self._eye is None:
            self._eye = sp.identity(self.n, format="csc")
        return self.minimize_qp(self._eye, -z)

    def maximize_linear(self, g):
        """(argmax, max) of g.x over P (an LP; closed form for a box). Unbounded: ModelError."""
        g = np.asarray(g, dtype=float)
        if self.is_box:
            y = np.where(g > 0, self.ub, np.where(g < 0, self.lb, np.clip(0.0, self.lb, self.ub)))
            if np.any(~np.isfinite(y[g != 0])):
                raise ModelError("a player's feasible set is unbounded in an improving direction")
            return y, float(g @ y)
        y, _ = self._highs(None, -g)
        return y, float(g @ y)

    def minimize_qp(self, H, c):
        """argmin 0.5 x'Hx + c'x over P, for H positive semidefinite (sparse or dense).

        Tries the active face of the previous solve with the same H (then the empty face) first:
        an exact KKT solve that is kept only if it checks out; otherwise HiGHS, then its face.
        """
        c = np.asarray(c, dtype=float)
        if self.n <= POLISH_MAX:
            Hd = self._dense(H)
            guesses = [self._face] if self._face is not None and self._face[0] is H else []
            for guess in guesses + [(H, _empty_face(self))]:
                check_stop()                      # a dense face solve is not interruptible: check before each
                y = self._solve_face(Hd, c, guess[1])
                if y is not None:
                    return y
        salvage = self.n <= POLISH_MAX
        x, failure = self._highs(H, c, salvage)  # H itself (not a copy): a repeated H reuses the loaded model
        if self.n > POLISH_MAX:
            return x
        # HiGHS's point names the active face; where HiGHS itself reported a failure (its QP solver can end
        # with "Solve error" next to the optimum) looser tolerances name it too. The face's KKT solve is
        # checked (feasible, multipliers of the right sign), so a wrong face is never taken.
        for tol in (1e-7,) if failure is None else (1e-7, 1e-5, 1e-3):
            face = self._active_face(x, tol)
            check_stop()
            y = self._solve_face(Hd, c, face)
            if y is not None:
                self._face = (H, face)
                return y
        if failure is not None:
            raise _highs_failed(failure)
        return x

    def _dense_rows(self):
        if self._dense_a is None:
            self._dense_a = self.A.toarray()
        return self._dense_a

    def _dense(self, H):
        if self._dense_h is None or self._dense_h[0] is not H:
            self._dense_h = (H, H.toarray() if sp.issparse(H) else np.asarray(H, dtype=float))
        return self._dense_h[1]

    # --- HiGHS ---------------------------------------------------------------------------------
    def _highs(self, H, c, salvage=False):
        """(HiGHS's minimiser of 0.5 x'Hx + c'x over the polyhedron, None): where HiGHS does not say optimal
        and ``salvage`` asks for its point anyway, HiGHS's status in place of None; otherwise a SolverError."""
        import highspy

        check_stop()
        if H is not None and self._session is not None and self._session[0] is H:
            h = self._session[1]                      # same model, new costs: HiGHS warm-starts
            h.changeColsCost(self.n, np.arange(self.n, dtype=np.int32), np.ascontiguousarray(c, dtype=float))
        else:
            h = self._load(H, c)
            if H is not None:
                self._session = (H, h)
        status = run_highs(h)
        if status == highspy.HighsModelStatus.kInfeasible:
            raise ModelError("the feasible set is empty (the constraints cannot all hold)")
        if status in (highspy.HighsModelStatus.kUnbounded, highspy.HighsModelStatus.kUnboundedOrInfeasible):
            raise ModelError("a player's problem is unbounded (its utility grows without bound on its feasible set)")
        x = np.asarray(h.getSolution().col_value, dtype=float)
        if status != highspy.HighsModelStatus.kOptimal:
            if salvage and len(x) == self.n and np.all(np.isfinite(x)):
                return x, h.modelStatusToString(status)
            raise _highs_failed(h.modelStatusToString(status))
        return x, None

    def _load(self, H, c):
        import highspy

        from solvopt.dsl.highs_export import colwise_matrix, new_highs
        h = new_highs()
        h.setOptionValue("primal_feasibility_tolerance", 1e-10)
        h.setOptionValue("dual_feasibility_tolerance", 1e-10)
        A = colwise_matrix(self.A)
        n, m = self.n, self.A.shape[0]
        h.passModel(n, m, int(A.nnz), int(highspy.MatrixFormat.kColwise), int(highspy.ObjSense.kMinimize), 0.0,
                    np.ascontiguousarray(c, dtype=float), np.ascontiguousarray(self.lb), np.ascontiguousarray(self.ub),
                    np.ascontiguousarray(self.lo), np.ascontiguousarray(self.hi), A.indptr.astype(np.int32),
                    A.indices.astype(np.int32), np.ascontiguousarray(A.data), np.zeros(n, dtype=np.int32))
        if H is not None:
            T = sp.tril(sp.csc_matrix(H)).tocsc()
            T.sum_duplicates()
            h.passHessian(n, int(T.nnz), int(highspy.HessianFormat.kTriangular), T.indptr.astype(np.int32),
                          T.indices.astype(np.int32), np.ascontiguousarray(T.data, dtype=float))
        return h

    def _active_face(self, x, tol=1e-7):
        """(at lower bound, at upper bound, upper rows, lower rows) active at x."""
        at_lb = np.abs(x - self.lb) <= tol
        at_ub = (np.abs(x - self.ub) <= tol) & ~at_lb
        r = self.A @ x if self.A.shape[0] else np.zeros(0)
        with np.errstate(invalid="ignore"):
            up = np.isfinite(self.hi) & (np.abs(r - self.hi) <= tol * np.maximum(1.0, np.abs(self.hi)))
            low = np.isfinite(self.lo) & (np.abs(r - self.lo) <= tol * np.maximum(1.0, np.abs(self.lo))) & ~up
        return at_lb, at_ub, up, low

    def _solve_face(self, Hd, c, face):
        """The KKT point of the QP on a face, or None unless it is feasible with multipliers of the right sign."""
        at_lb, at_ub, up, low = face
        fixed = at_lb | at_ub
        xf = np.where(at_lb, self.lb, np.where(at_ub, self.ub, 0.0))
        act = np.flatnonzero(up | low)
        rhs_rows = np.where(up, self.hi, self.lo)[act]
        free = np.flatnonzero(~fixed)
        Aa = self._dense_rows()[act]
        k = len(free)
        K = np.zeros((k + len(act), k + len(act)))
        K[:k, :k] = Hd[np.ix_(free, free)]
        K[:k, k:] = Aa[:, free].T
        K[k:, :k] = Aa[:, free]
        rhs = np.concatenate([-c[free] - Hd[np.ix_(free, np.flatnonzero(fixed))] @ xf[fixed],
                              rhs_rows - Aa[:, fixed] @ xf[fixed]])
        if not np.all(np.isfinite(rhs)):
            return None
        try:
            sol = np.linalg.lstsq(K, rhs, rcond=None)[0]
        except np.linalg.LinAlgError:
            return None
        scale = max(1.0, float(np.max(np.abs(rhs), initial=0.0)))
        if float(np.max(np.abs(K @ sol - rhs), initial=0.0)) > 1e-10 * scale:
            return None
        y = xf
        y[free] = sol[:k]
        mu = sol[k:]
        # stationarity grad f + A'mu = 0: an active upper row needs mu >= 0, a lower one mu <= 0 (equalities: any)
        eq = (self.lo == self.hi)[act]
        sign_ok = np.all(mu[up[act] & ~eq] >= -1e-9) and np.all(mu[low[act] & ~eq] <= 1e-9)
        grad = Hd @ y + c + (Aa.T @ mu if len(act) else 0.0)
        bound_ok = np.all(grad[at_lb] >= -1e-9) and np.all(grad[at_ub] <= 1e-9)
        if sign_ok and bound_ok and self.violation(y) <= FEAS_TOL:
            return y
        return None


def _highs_failed(status: str) -> SolverError:
    """The error of a projection or best response HiGHS ends with ``status``, not optimal."""
    return SolverError(f"HiGHS stopped with status {status} on a projection / best response")


def _empty_face(P: Polyhedron):
    none = np.zeros(P.n, dtype=bool)
    rows = np.zeros(P.A.shape[0], dtype=bool)
    return none, none, rows, rows
