"""The node LP of the k-HC2 spatial branch-and-bound: one HiGHS object, changed node by node.

Columns (0-based, pairs (i, j) with j <= i under symmetry breaking):

    w[j, l] in the node box       normals                   g[j] in the node's offset range
    x[i, j] in [0, 1]             assignment (relaxed)      d[i, j] in [0, M_ij]  distances
    t[i, j] >= 0                  epigraph of d^2 (objective sum t, outer-approximated by tangents)
    u[j, l]                       inf-norm block  (when "inf" in norms)
    p[j, l], q[j, l], s[j, l]     1-norm block: w = p - q, p <= s, q <= 1 - s  (when "1" in norms)

Rows: sum_j x_ij = 1; d_ij >= +-(a_i^T w_j - g_j) - M_ij (1 - x_ij); the secant of
||w_j||^2 >= 1 over the node box (when "2" in norms); the norm blocks; and lazily added cuts
(tangents t >= 2 d0 d - d0^2, and tangent planes w_hat^T w <= 1 of the unit ball, valid
because a canonical optimum has ||w_j|| = 1). Node changes are bound changes and a few
coefficient changes, so HiGHS re-solves from the previous basis (dual simplex warm start).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from solvopt.core.errors import SolverError
from solvopt.dsl.highs_export import highspy_module, new_highs, was_interrupted, watch_interrupt

from . import relaxation as rx

INF = 1e30


@dataclass
class LPSolution:
    status: str                  # "optimal" | "infeasible" | "time_limit" | "interrupted" | "error"
    value: float = -np.inf       # LP objective (a valid bound of the node when optimal)
    x: np.ndarray | None = None  # (m, k), zero off the allowed pairs
    w: np.ndarray | None = None  # (k, n)
    g: np.ndarray | None = None  # (k,)
    u: np.ndarray | None = None  # (k, n) inf-norm binaries, None when the block is off
    s: np.ndarray | None = None  # (k, n) sign binaries of the 1-norm block
    iterations: int = 0
    cut_rounds: int = 0


class NodeLP:
    """The k-HC2 node relaxation held in one ``highspy.Highs`` object."""

    def __init__(self, points: np.ndarray, k: int, norms: frozenset[str], pairs: np.ndarray, big_m: float,
                 cut_rounds: int = 1, initial_tangents: tuple[float, ...] = (1 / 128, 1 / 32, 1 / 8, 1 / 2)):
        self._highspy = highspy_module("method 'sbb'")
        self.points = points
        self.m, self.n = points.shape
        self.k = k
        self.norms = norms
        self.pairs = pairs                       # (P, 2) array of (i, j)
        self.P = len(pairs)
        self.big_m = big_m
        self.max_cut_rounds = cut_rounds
        self.initial_tangents = initial_tangents
        self.num_cuts = 0
        self._layout()
        self._build()
        self._current_m = np.full(self.P, big_m)

    # --- layout --------------------------------------------------------------------------
    def _layout(self):
        k, n, P = self.k, self.n, self.P
        nxt = 0

        def block(size):
            nonlocal nxt
            idx = np.arange(nxt, nxt + size)
            nxt += size
            return idx

        self.cw = block(k * n).reshape(k, n)
        self.cg = block(k)
        self.cx = block(P)
        self.cd = block(P)
        self.ct = block(P)
        self.cu = block(k * n).reshape(k, n) if "inf" in self.norms else None
        if "1" in self.norms:
            self.cp = block(k * n).reshape(k, n)
            self.cq = block(k * n).reshape(k, n)
            self.cs = block(k * n).reshape(k, n)
        else:
            self.cp = self.cq = self.cs = None
        self.num_cols = nxt

    def _build(self):
        """Load the root LP (wide boxes) into a fresh Highs object."""
        hs = self._highspy
        k, n, P, m = self.k, self.n, self.P, self.m
        a = self.points
        M = self.big_m
        rows, cols, vals, lower, upper = [], [], [], [], []
        r = 0

        def add_row(c, v, lo, hi):
            nonlocal r
            rows.extend([r] * len(c))
            cols.extend(int(ci) for ci in c)
            vals.extend(float(vi) for vi in v)
            lower.append(lo)
            upper.append(hi)
            r += 1
            return r - 1

        pi, pj = self.pairs[:, 0], self.pairs[:, 1]
        for i in range(m):
            sel = np.flatnonzero(pi == i)
            add_row(self.cx[sel], np.ones(len(sel)), 1.0, 1.0)
        self.row_dpos = np.empty(P, dtype=np.int64)
        self.row_dneg = np.empty(P, dtype=np.int64)
        for p in range(P):
            i, j = pi[p], pj[p]
            cidx = [self.cd[p], *self.cw[j], self.cg[j], self.cx[p]]
            # d - a.w + g - M x >= -M   and   d + a.w - g - M x >= -M
            self.row_dpos[p] = add_row(cidx, [1.0, *(-a[i]), 1.0, -M], -M, INF)
            self.row_dneg[p] = add_row(cidx, [1.0, *a[i], -1.0, -M], -M, INF)
        self.row_secant = None
        if "2" in self.norms:
            self.row_secant = np.array([add_row(self.cw[j], np.zeros(n), -INF, INF) for j in range(k)])
        if "inf" in self.norms:
            c = 1.0 + 1.0 / np.sqrt(n)
            for j in range(k):
                add_row(self.cu[j], np.ones(n), 1.0, 1.0)
                for l in range(n):        # w_jl >= -1 + (1 + 1/sqrt n) u_jl
                    add_row([self.cw[j, l], self.cu[j, l]], [1.0, -c], -1.0, INF)
        if "1" in self.norms:
            for j in range(k):
                for l in range(n):
                    add_row([self.cw[j, l], self.cp[j, l], self.cq[j, l]], [1.0, -1.0, 1.0], 0.0, 0.0)
                    add_row([self.cp[j, l], self.cs[j, l]], [1.0, -1.0], -INF, 0.0)
                    add_row([self.cq[j, l], self.cs[j, l]], [1.0, 1.0], -INF, 1.0)
                add_row([*self.cp[j], *self.cq[j]], np.ones(2 * n), 1.0, INF)
        # tangents of d^2 at geometrically spaced fractions of M (more are added lazily)
        for frac in self.initial_tangents:
            d0 = frac * M
            for p in range(P):
                add_row([self.ct[p], self.cd[p]], [1.0, -2.0 * d0], -d0 * d0, INF)
        self.num_rows = r

        A = sp.csc_matrix((vals, (rows, cols)), shape=(r, self.num_cols))
        lp = hs.HighsLp()
        lp.num_col_ = self.num_cols
        lp.num_row_ = r
        cost = np.zeros(self.num_cols)
        cost[self.ct] = 1.0
        col_lo, col_hi = self._root_bounds()
        lp.col_cost_ = cost
        lp.col_lower_ = col_lo
        lp.col_upper_ = col_hi
        lp.row_lower_ = np.array(lower, dtype=float)
        lp.row_upper_ = np.array(upper, dtype=float)
        lp.a_matrix_.format_ = hs.MatrixFormat.kColwise
        lp.a_matrix_.start_ = A.indptr.astype(np.int32)
        lp.a_matrix_.index_ = A.indices.astype(np.int32)
        lp.a_matrix_.value_ = A.data.astype(float)
        lp.a_matrix_.num_col_ = self.num_cols
        lp.a_matrix_.num_row_ = r
        h = new_highs()     # silent: no banner on stdout (JSON output stays clean)
        h.setOptionValue("presolve", "off")       # warm-started re-solves: presolve would discard the basis
        # no `threads` option: HiGHS' simplex is serial, and the option fails every run once another
        # Highs in this process has started its (global) scheduler with a different thread count
        status = h.passModel(lp)
        if status == hs.HighsStatus.kError:
            raise SolverError("HiGHS rejected the k-HC2 node LP")
        self.h = h

    def _root_bounds(self):
        lo = np.zeros(self.num_cols)
        hi = np.full(self.num_cols, INF)
        lo[self.cw.ravel()], hi[self.cw.ravel()] = -1.0, 1.0
        lo[self.cg], hi[self.cg] = -INF, INF
        hi[self.cx] = 1.0
        hi[self.cd] = self.big_m
        for block in (self.cu, self.cp, self.cq, self.cs):
            if block is not None:
                hi[block.ravel()] = 1.0
        return lo, hi

    # --- node updates --------------------------------------------------------------------
    def set_node(self, wlo, whi, glo, ghi, allowed_pairs, pair_m, ulo=None, uhi=None):
        """Load a node: boxes of w and g, which pairs may be 1, the per-pair big-M, u bounds."""
        k, n = self.k, self.n
        idx, lo, hi = [], [], []

        def put(c, l_, h_):
            idx.append(np.asarray(c).ravel())
            lo.append(np.broadcast_to(np.asarray(l_, dtype=float), np.asarray(c).shape).ravel())
            hi.append(np.broadcast_to(np.asarray(h_, dtype=float), np.asarray(c).shape).ravel())

        put(self.cw, wlo, whi)
        put(self.cg, glo, ghi)
        put(self.cx, 0.0, allowed_pairs.astype(float))
        put(self.cd, 0.0, np.where(allowed_pairs, pair_m, 0.0))
        if self.cu is not None:
            put(self.cu, ulo, uhi)
        if self.cs is not None:
            # the sign binary is decided when the box lies on one side of 0
            s_lo = (wlo >= 0.0).astype(float)
            s_hi = np.where((whi <= 0.0) & (wlo < 0.0), 0.0, 1.0)
            put(self.cs, s_lo, s_hi)
            put(self.cp, 0.0, np.maximum(whi, 0.0))
            put(self.cq, 0.0, np.maximum(-wlo, 0.0))
        cols = np.concatenate(idx).astype(np.int32)
        self.h.changeColsBounds(len(cols), cols, np.concatenate(lo), np.concatenate(hi))
        # big-M coefficients of the distance rows, only where they changed
        changed = np.flatnonzero(np.abs(pair_m - self._current_m) > 1e-12)
        for p in changed:
            mv = float(pair_m[p])
            for row in (self.row_dpos[p], self.row_dneg[p]):
                self.h.changeCoeff(int(row), int(self.cx[p]), -mv)
            self.h.changeRowsBounds(2, np.array([self.row_dpos[p], self.row_dneg[p]], dtype=np.int32),
                                    np.array([-mv, -mv]), np.array([INF, INF]))
        self._current_m[changed] = pair_m[changed]
        if self.row_secant is not None:
            for j in range(k):
                coef, rhs = rx.secant(wlo[j], whi[j])
                for l in range(n):
                    self.h.changeCoeff(int(self.row_secant[j]), int(self.cw[j, l]), float(coef[l]))
                self.h.changeRowBounds(int(self.row_secant[j]), rhs, INF)

    # --- solving -------------------------------------------------------------------------
    def _add_cuts(self, col_value: np.ndarray, ball_cuts: bool) -> int:
        """Tangent cuts violated at the LP point; returns how many were added."""
        d = col_value[self.cd]
        t = col_value[self.ct]
        viol = np.flatnonzero(t < d * d - (1e-9 + 1e-8 * d * d))
        starts: list[int] = []
        index: list[int] = []
        value: list[float] = []
        lower: list[float] = []
        for p in viol:
            d0 = d[p]
            starts.append(len(index))
            index.extend([self.ct[p], self.cd[p]])
            value.extend([1.0, -2.0 * d0])
            lower.append(-d0 * d0)
        if ball_cuts:
            w = col_value[self.cw.ravel()].reshape(self.k, self.n)
            norms = np.linalg.norm(w, axis=1)
            for j in np.flatnonzero(norms > 1.0 + 1e-4):
                starts.append(len(index))
                index.extend(self.cw[j])
                value.extend(w[j] / norms[j])
                lower.append(-INF)
        count = len(lower)
        if count:
            upper = [INF] * count
            if ball_cuts:
                upper[len(viol):] = [1.0] * (count - len(viol))
            self.h.addRows(count, np.array(lower, dtype=float), np.array(upper, dtype=float), len(index),
                           np.array(starts, dtype=np.int32), np.array(index, dtype=np.int32),
                           np.array(value, dtype=float))
            self.num_cuts += count
        return count

    def solve(self, time_left: float | None = None, max_rounds: int | None = None,
              ball_cuts: bool = True, stall_stop: bool = True) -> LPSolution:
        """Solve the loaded node, adding violated cuts for up to ``max_rounds`` rounds.

        Every LP value along the way is a valid bound (the cuts only underestimate d^2), so a
        small round count just gives a weaker bound; :meth:`refine` continues the same node.
        With ``stall_stop``, a round that no longer raises the value by 1e-6 (relative) ends it.
        """
        if max_rounds is None:
            max_rounds = self.max_cut_rounds
        if time_left is not None:   # HiGHS measures its limit on a clock that runs across solves
            self.h.setOptionValue("time_limit", self.h.getRunTime() + max(float(time_left), 1e-3))
        iterations, rounds, previous = 0, 0, -np.inf
        while True:
            status = self._run()
            info = self.h.getInfo()
            iterations += max(int(info.simplex_iteration_count), 0)
            if status != "optimal":
                return LPSolution(status, iterations=iterations, cut_rounds=rounds)
            value = float(info.objective_function_value)
            col = np.asarray(self.h.getSolution().col_value)
            stalled = stall_stop and rounds >= 2 and value - previous <= 1e-6 * max(1.0, abs(value))
            if rounds >= max_rounds or stalled or self._add_cuts(col, ball_cuts and rounds == 0) == 0:
                break
            previous = value
            rounds += 1
        return self._unpack(col, value, iterations, rounds)

    def refine(self, time_left: float | None = None, rounds: int = 25) -> LPSolution:
        """Converge the cuts on the loaded node (used before declaring a node solved)."""
        return self.solve(time_left, max_rounds=rounds, ball_cuts=False, stall_stop=False)

    def _run(self) -> str:
        """One HiGHS run of the loaded LP; a stop request (Ctrl-C) ends it with "interrupted"."""
        hs = self._highspy
        with watch_interrupt(self.h):
            run_status = self.h.run()
            if was_interrupted(self.h):
                return "interrupted"
            if run_status == hs.HighsStatus.kError:
                # a setup failure (options, memory), not a troubled basis: no node LP would solve
                raise SolverError("HiGHS could not run the k-HC2 node LP (HighsStatus.kError)")
            status = self.h.getModelStatus()
            if status not in (hs.HighsModelStatus.kOptimal, hs.HighsModelStatus.kInfeasible,
                              hs.HighsModelStatus.kTimeLimit):
                self.h.clearSolver()           # recover once from a troubled basis by a cold start
                self.h.run()
                if was_interrupted(self.h):
                    return "interrupted"
                status = self.h.getModelStatus()
        if status == hs.HighsModelStatus.kOptimal:
            return "optimal"
        if status == hs.HighsModelStatus.kInfeasible:
            return "infeasible"
        if status == hs.HighsModelStatus.kTimeLimit:
            return "time_limit"
        return "error"

    def purge_cuts(self, keep_at_most: int) -> None:
        """Drop every lazily added cut once there are more than ``keep_at_most`` (they come back as needed)."""
        extra = self.h.getNumRow() - self.num_rows
        if extra > keep_at_most:
            self.h.deleteRows(extra, np.arange(self.num_rows, self.num_rows + extra, dtype=np.int32))

    def _unpack(self, col, value, iterations, rounds) -> LPSolution:
        x = np.zeros((self.m, self.k))
        x[self.pairs[:, 0], self.pairs[:, 1]] = col[self.cx]
        return LPSolution(
            "optimal", value=value, x=x, w=col[self.cw.ravel()].reshape(self.k, self.n), g=col[self.cg].copy(),
            u=None if self.cu is None else col[self.cu.ravel()].reshape(self.k, self.n),
            s=None if self.cs is None else col[self.cs.ravel()].reshape(self.k, self.n),
            iterations=iterations, cut_rounds=rounds)
