"""Quadratic utilities that can satiate: u_k(x) = b_k . x - 0.5 x' Q_k x with Q_k symmetric positive definite.

The consumers of the Facchinei-Kanzow production economies A.10a and A.10c have them. Unlike the
forms of :mod:`solvopt.dsl.utilities` a consumer may be satiated: its demand at prices p >= 0 and
budget B is bounded even where some prices are zero, and it may leave money unspent (at its bliss
point). The demand is the solution of the strictly convex QP

    max b.x - 0.5 x'Qx  over  {x >= 0, p.x <= B},

computed exactly: for a budget multiplier lambda >= 0 the box QP max (b - lambda p).x - 0.5 x'Qx
over x >= 0 is a linear complementarity problem with a positive definite matrix, solved by block
principal pivoting (Murty's single pivots as the finite fallback); the spending p.x(lambda) is
piecewise linear and non-increasing in lambda, and lambda is found exactly on its final piece by a
safeguarded Newton step within a bracket. The answer is the KKT point of a linear solve on the
final support, so it is exact up to rounding.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from solvopt.core.errors import ModelError

from .arrays import FloatArray, real_array
from .utilities import UtilityForm


def box_qp(Q: FloatArray, c: FloatArray, start: Any = None) -> FloatArray:
    """argmin 0.5 x'Qx - c.x over x >= 0 for symmetric positive definite Q (m, m): the LCP
    w = Qx - c >= 0, x >= 0, x.w = 0, by block principal pivoting from the support ``start``
    (boolean mask; default: where c > 0), switching to Murty's least-index rule (finite for
    P-matrices) when the number of infeasibilities stops falling."""
    m = c.size
    S = np.asarray(c > 0 if start is None else start, dtype=bool).copy()
    best, stalls = m + 1, 0
    for _ in range(50 * (m + 1) + 10 * m * m):
        x = np.zeros(m)
        if S.any():
            x[S] = np.linalg.solve(Q[np.ix_(S, S)], c[S])
        w = Q @ x - c
        tol = 1e-13 * (1.0 + np.abs(c).max())
        bad = (S & (x < -tol)) | (~S & (w < -tol))
        if not bad.any():
            return np.maximum(x, 0.0)
        count = int(bad.sum())
        if count < best:
            best, stalls = count, 0
            S ^= bad
        else:
            stalls += 1
            if stalls <= 3:
                S ^= bad
            else:                                   # Murty: flip the largest infeasible index
                S[np.flatnonzero(bad)[-1]] ^= True
    raise ModelError("the quadratic utility's demand did not converge (is Q positive definite?)")


def budget_qp(Q: FloatArray, b: FloatArray, p: FloatArray, budget: float) -> tuple[FloatArray, float]:
    """(x, lambda): the maximiser of b.x - 0.5 x'Qx over {x >= 0, p.x <= budget} (p >= 0, budget >= 0)
    and the budget's KKT multiplier (0 where the consumer is satiated: its bliss point is affordable)."""
    x = box_qp(Q, b)
    if p @ x <= budget:
        return x, 0.0
    if budget <= 0:
        return np.zeros_like(b), float(np.max(np.where(p > 0, b / np.where(p > 0, p, 1.0), 0.0), initial=0.0))
    lo, hi = 0.0, np.inf                            # p.x(lo) > budget >= p.x(hi)
    support, xl, lam = x > 0, x, 0.0
    for _ in range(500):
        guess: float | None = None
        S = support
        if S.any():
            QS = Q[np.ix_(S, S)]
            qb, qp = np.linalg.solve(QS, b[S]), np.linalg.solve(QS, p[S])
            slope = p[S] @ qp
            if slope > 0:
                guess = float((p[S] @ qb - budget) / slope)   # p.x = budget on this piece (a Newton step)
        if guess is None or not lo < guess < hi:
            guess = 0.5 * (lo + hi) if np.isfinite(hi) else 2.0 * max(lo, 1e-300) + 1.0
        lam = float(guess)
        xl = box_qp(Q, b - lam * p, S)
        spend = p @ xl
        if abs(spend - budget) <= 1e-14 * max(budget, 1.0) or (np.isfinite(hi) and hi - lo <= 1e-15 * hi):
            return _kkt(Q, b, p, budget, xl > 0, xl, lam)
        if spend > budget:
            lo = lam
        else:
            hi = lam
        support = xl > 0
        if lo > 1e300:
            raise ModelError("the quadratic utility's demand has no budget multiplier (prices all zero?)")
    return _kkt(Q, b, p, budget, support, xl, lam)


def _kkt(Q: FloatArray, b: FloatArray, p: FloatArray, budget: float, S: npt.NDArray[np.bool_], x: FloatArray,
         lam: float) -> tuple[FloatArray, float]:
    """The exact KKT point on support S with the budget binding: [Q_SS p_S; p_S' 0] [x_S; lam] = [b_S; B]
    (kept only when it is valid: x_S >= 0, lam >= 0; else the bracketed point)."""
    k = int(S.sum())
    if k == 0:
        return x, lam
    K = np.zeros((k + 1, k + 1))
    K[:k, :k] = Q[np.ix_(S, S)]
    K[:k, k] = p[S]
    K[k, :k] = p[S]
    try:
        sol = np.linalg.solve(K, np.append(b[S], budget))
    except np.linalg.LinAlgError:
        return x, lam
    if np.all(sol[:k] >= 0) and sol[k] >= 0:
        out = np.zeros_like(b)
        out[S] = sol[:k]
        return out, float(sol[k])
    return x, lam


class Quadratic(UtilityForm):
    """u_k(x) = b_k . x - 0.5 x'Q_k x: ``matrices`` Q (n, m, m) symmetric positive definite, ``linear``
    b (n, m). Concave, strictly; satiates at its bliss point; not homogeneous. ``weights`` is b (the
    marginal utilities at 0)."""

    kind = "quadratic"
    homogeneous = False

    def __init__(self, matrices: npt.ArrayLike, linear: npt.ArrayLike):
        Q = real_array(matrices, "quadratic utility matrices")
        b = real_array(linear, "quadratic utility linear terms")
        if b.ndim != 2 or Q.shape != b.shape + (b.shape[1],):
            raise ModelError(f"a quadratic utility takes matrices Q (consumers, goods, goods) and linear terms b "
                             f"(consumers, goods); got Q {Q.shape} and b {b.shape}")
        if not (np.all(np.isfinite(Q)) and np.all(np.isfinite(b))):
            raise ModelError("quadratic utility parameters contain NaN or infinite values")
        if not np.allclose(Q, np.swapaxes(Q, 1, 2), rtol=1e-12, atol=1e-12 * max(1.0, float(np.abs(Q).max()))):
            raise ModelError("quadratic utility matrices must be symmetric")
        for k in range(Q.shape[0]):
            try:
                np.linalg.cholesky(Q[k])
            except np.linalg.LinAlgError:
                raise ModelError(f"quadratic utility matrix of consumer {k} is not positive definite") from None
        self.matrices: FloatArray = 0.5 * (Q + np.swapaxes(Q, 1, 2))
        self.weights = b

    def value(self, x: npt.ArrayLike) -> Any:
        x = np.asarray(x, dtype=float)
        return np.sum(self.weights * x, axis=-1) - 0.5 * np.einsum("...i,...ij,...j->...", x, self.matrices, x)

    def gradient(self, x: npt.ArrayLike) -> FloatArray:
        x = np.asarray(x, dtype=float)
        g: FloatArray = self.weights - np.einsum("...ij,...j->...i", self.matrices, x)
        return g

    def gain(self, x: npt.ArrayLike, d: npt.ArrayLike) -> FloatArray:
        """u(x + d) - u(x) per consumer without cancellation: grad u(x) . d - 0.5 d'Qd."""
        d = np.asarray(d, dtype=float)
        out: FloatArray = np.sum(self.gradient(x) * d, axis=-1) - 0.5 * np.einsum("...i,...ij,...j->...", d,
                                                                                  self.matrices, d)
        return out

    def demand_multipliers(self, p: npt.ArrayLike, budget: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
        """(x (n, m), lambda (n,)): every consumer's exact demand at prices p >= 0 (m,) and budgets (n,),
        and its budget multiplier (its marginal utility of money; 0 when satiated)."""
        p = np.asarray(p, dtype=float)
        if p.shape != (self.goods,) or np.any(p < 0) or not np.all(np.isfinite(p)):
            raise ModelError("a quadratic utility's demand needs finite prices p >= 0, one per good")
        budget = np.broadcast_to(np.asarray(budget, dtype=float), (self.shape[0],))
        x = np.zeros(self.shape)
        lam = np.zeros(self.shape[0])
        for k in range(self.shape[0]):
            x[k], lam[k] = budget_qp(self.matrices[k], self.weights[k], p, max(float(budget[k]), 0.0))
        return x, lam

    def demand(self, p: npt.ArrayLike, budget: npt.ArrayLike) -> FloatArray:
        return self.demand_multipliers(p, budget)[0]

    def params(self) -> dict[str, Any]:
        return {"Q": self.matrices, "b": self.weights}
