"""A consumer's best response over her whole path in a finite-horizon economy on a deterministic chain.

With the chain deterministic and prices fixed, every deviation of consumer i is a path of holdings
y_0..y_{T-1} (boxes [-b, h]) and bundles; the best bundle for wealth W_t at prices p_t is worth
(beta_t W_t)^h with utilities of degree h in (0, 1) (beta_t the degree-1 bang per buck), and
W_t = c_t + R_t . y_{t-1} - q_t . y_t (c_t = p_t . e_t, R_t the money the assets pay at t, none at
t = 0). The best response is the concave program

    max sum_t a_t W_t(y)^h   over   y in the boxes, W_t(y) >= 0,     a_t = gamma^t beta_t^h,

over T K unknowns. A barrier Newton method gives a feasible path (its value: the lower bound); the
Lagrangian dual of W_t = c_t + (B y)_t gives the upper bound for any multipliers lam > 0,

    L(lam) = sum_t (1 - h) a_t (a_t h / lam_t)^(h / (1 - h)) + lam . c + max over the boxes of (B' lam) . y,

started at the primal's marginal utilities of money (lam_t = a_t h W_t^(h-1), exact at the optimum)
and lowered by L-BFGS on log lam. Weak duality makes every L(lam) a certified bound; strong duality
(concave, linear constraints, a strictly feasible point) makes the gap close.

Regrets are in money: the amount that, at period 0's bang per buck, buys the degree-1 utility that
raises the profile's period-0 utility by the deviation's gain, ((u_0 + gain)^(1/h) - u_0^(1/h)) /
beta_0 (u_0 the profile's period-0 utility). It is gain / beta_0 at h = 1, scales with prices like
money and does not change when a utility is multiplied by a constant, so divided by the periods'
endowment value it is scale-free.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvopt.core.errors import ModelError

from .projection import check_stop

PATH_GUARANTEE = ("objective is a certified upper bound on the exploitability of the returned profile over the "
                  "horizon's periods and every deviation the model allows: each consumer's whole path of holdings and "
                  "bundles (a Lagrangian dual bound on her concave path program, in money at period 0's prices), the "
                  "auctioneer's prices on their feasible set (closed form); 0 only at an equilibrium")
NEWTON_STEPS = 200          # Newton steps per barrier weight
BARRIER_FACTOR = 0.1        # the barrier weight shrinks by this per stage
BARRIER_END = 1e-15         # last barrier weight, relative to the value's scale


@dataclass
class PathBounds:
    """Per consumer: the profile's value, a feasible deviation's value (``lower``), a certified bound
    on every deviation's (``upper``), all in utility units; ``regret`` the certified regret in money,
    ``regret_lower`` the found deviation's gain in money, ``holdings`` (N, T, K) that deviation's path."""

    value: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    regret: np.ndarray
    regret_lower: np.ndarray
    holdings: np.ndarray


def path_matrix(q, R) -> np.ndarray:
    """B (T, T K): W = c + B y with y = holdings (T, K) flattened by period: -q_t on y_t, +R_t on y_{t-1}."""
    T, K = q.shape
    B = np.zeros((T, T * K))
    for t in range(T):
        B[t, t * K:(t + 1) * K] = -q[t]
        if t:
            B[t, (t - 1) * K:t * K] = R[t]
    return B


def dual_bound(a, c, B, lo, hi, h, lam, gradient=False):
    """L(lam) (module docstring): >= the best path's value for any lam > 0 (+inf when a box is unbounded
    where the slope is not 0). With ``gradient`` also dL/dlam = c - W*(lam) + B d, d_k the box's end
    where the slope s_k has a sign (0 where s_k = 0: a subgradient at the kink)."""
    lam = np.asarray(lam, dtype=float)
    if np.any(lam <= 0):
        return (np.inf, np.zeros_like(lam)) if gradient else np.inf
    with np.errstate(over="ignore", divide="ignore"):
        Wstar = np.where(a > 0, (a * h / lam) ** (1 / (1 - h)), 0.0)
        own = np.sum((1 - h) * a * Wstar ** h)
    s = B.T @ lam
    box = np.where(s > 0, s * hi, np.where(s < 0, s * lo, 0.0))
    value = float(own + lam @ c + box.sum()) if np.all(np.isfinite(box)) else np.inf
    if not gradient:
        return value
    with np.errstate(invalid="ignore"):
        end = np.where(s > 0, hi, np.where(s < 0, lo, 0.0))
    return value, c - Wstar + B @ end


def _value(a, W, h) -> float:
    return float(a @ np.maximum(W, 0.0) ** h)


def _interior_start(c, B, lo, hi):
    """A path with every holding strictly inside its box and every wealth > 0 (an LP), or None."""
    from .economy_deviation import highs_lp
    n = B.shape[1]
    finite = np.isfinite(lo) & np.isfinite(hi)
    mid = np.where(finite, (lo + hi) / 2, np.clip(0.0, lo, hi))
    if np.all(c + B @ mid > 0) and np.all((mid > lo) & (mid < hi)):
        return mid
    # max s: W >= s, lo + s <= y <= hi - s (s <= 1 keeps it bounded)
    scale = max(1.0, float(np.max(np.abs(c))))
    A = np.vstack([np.hstack([-B, np.ones((len(c), 1)) * scale]),
                   np.hstack([-np.eye(n), np.ones((n, 1))]), np.hstack([np.eye(n), np.ones((n, 1))])])
    b = np.concatenate([c, np.where(np.isfinite(lo), -lo, 1e300), np.where(np.isfinite(hi), hi, 1e300)])
    cost = np.zeros(n + 1)
    cost[-1] = -1.0
    res = highs_lp(cost, A, b, np.append(np.full(n, -np.inf), -np.inf), np.append(np.full(n, np.inf), 1.0))
    if res is None or res[0][-1] <= 0:
        return None
    return res[0][:n]


def best_path(a, c, B, lo, hi, h, y0=None):
    """(y, value, upper): a feasible path by barrier Newton, its value, and the certified dual bound."""
    n = B.shape[1]
    y = _interior_start(c, B, lo, hi) if y0 is None else y0
    if y is None:
        raise ModelError("a consumer has no path of holdings with positive wealth in every period")
    scale = max(_value(a, c + B @ y, h), 1e-300)
    fin_lo, fin_hi = np.isfinite(lo), np.isfinite(hi)

    def parts(y, mu):
        W = c + B @ y
        if np.any(W <= 0) or np.any(y[fin_lo] <= lo[fin_lo]) or np.any(y[fin_hi] >= hi[fin_hi]):
            return -np.inf, None, None
        dl, du = y - lo, hi - y
        F = (_value(a, W, h) + mu * (np.sum(np.log(W)) + np.sum(np.log(dl[fin_lo])) + np.sum(np.log(du[fin_hi]))))
        gW = a * h * W ** (h - 1) + mu / W
        hW = a * h * (h - 1) * W ** (h - 2) - mu / W ** 2
        g = B.T @ gW + mu * (np.where(fin_lo, 1 / dl, 0.0) - np.where(fin_hi, 1 / du, 0.0))
        H = (B.T * hW) @ B - mu * np.diag(np.where(fin_lo, 1 / dl ** 2, 0.0) + np.where(fin_hi, 1 / du ** 2, 0.0))
        return F, g, H

    y = barrier_ascent(parts, y, scale / max(n, 1), BARRIER_END * scale, NEWTON_STEPS, 1e-15 * scale)
    W = c + B @ y
    value = _value(a, W, h)
    upper = _lowest_dual(a, c, B, lo, hi, h, np.where(a > 0, a * h * W ** (h - 1), 1e-300 + 0 * W))
    return y, value, max(upper, value)


def barrier_ascent(parts, v, mu, mu_end, steps, tolerance, on_stage=None, count=1):
    """Maximise a concave function with log barriers by damped Newton, the barrier weight mu falling
    by ``BARRIER_FACTOR`` per stage until ``mu * count <= mu_end`` (``count``: the barriers' number,
    where the end is set for their total weight). ``parts(v, mu)`` gives (F, gradient, Hessian)
    of the barrier objective, F = -inf outside the domain; a stage ends after ``steps`` steps, when
    the Newton decrement is at most ``tolerance`` or no step of at least 1e-20 gains (Armijo, 1/4).
    ``on_stage(v, mu)`` runs after every stage. The time limit and Ctrl-C are checked every stage."""
    while True:
        check_stop()
        for _ in range(steps):
            F, g, H = parts(v, mu)
            try:
                step = np.linalg.solve(H, -g)
            except np.linalg.LinAlgError:
                step = np.linalg.lstsq(H, -g, rcond=None)[0]
            decrement = g @ step            # > 0: H is negative definite
            if not np.isfinite(decrement) or decrement <= tolerance:
                break
            t = 1.0
            while t > 1e-20 and parts(v + t * step, mu)[0] < F + 0.25 * t * decrement:
                t *= 0.5
            if t <= 1e-20:
                break
            v = v + t * step
        if on_stage is not None:
            on_stage(v, mu)
        if mu * count <= mu_end:
            return v
        mu *= BARRIER_FACTOR


def _lowest_dual(a, c, B, lo, hi, h, lam0) -> float:
    """The least L(lam) found from lam0 by L-BFGS on log lam with L's (sub)gradient (every value tried is a
    valid bound)."""
    from scipy.optimize import minimize
    best = [dual_bound(a, c, B, lo, hi, h, lam0)]

    def f(z):
        lam = np.exp(z)
        v, g = dual_bound(a, c, B, lo, hi, h, lam, gradient=True)
        best[0] = min(best[0], v)
        if not np.isfinite(v) or not np.all(np.isfinite(g)):
            return 1e300, np.zeros_like(z)
        return v, g * lam                       # the chain rule through lam = exp(z)

    z0 = np.log(lam0)
    minimize(f, z0, jac=True, method="L-BFGS-B", options={"maxiter": 200})
    return best[0]


def path_inputs(econ, worlds, prices, asset_prices):
    """(c (T, N), q (T, K), R (T, K), beta (T, N)) along the path of world states ``worlds``."""
    from .economy import bang_per_buck
    c = np.einsum("tm,tnm->tn", prices, econ.endowments[worlds])
    R = econ.returns_at(worlds, prices).astype(float)
    R[0] = 0.0                                   # nothing is carried into the start
    return c, np.asarray(asset_prices, dtype=float), R, bang_per_buck(econ, prices)


def path_bounds(econ, worlds, prices, asset_prices, consumption) -> PathBounds:
    """Certified bounds on each consumer's best path against the profile's prices (module docstring).

    ``worlds`` (T,) the path's world states, ``prices`` (T, M), ``asset_prices`` (T, K),
    ``consumption`` (T, N, M)."""
    h = float(econ.degree)
    if not 0 < h < 1:
        raise ModelError("path_bounds takes utilities of degree h in (0, 1); degree 1 has "
                         "solvopt.games.economy_deviation")
    T, N = len(worlds), econ.n_consumers
    c, q, R, beta = path_inputs(econ, worlds, prices, asset_prices)
    weights = econ.discount ** np.arange(T)
    u = econ.utility.value(consumption) ** h                       # (T, N) period utilities
    value = weights @ u
    B = path_matrix(q, R)
    lo = np.tile(-np.asarray(econ.borrowing_limit, dtype=float), T)
    hi = np.tile(np.asarray(econ.holding_limit, dtype=float), T)
    lower, upper = np.empty(N), np.empty(N)
    paths = np.empty((N, T, q.shape[1]))
    for i in range(N):
        a = weights * beta[:, i] ** h
        y, lower[i], upper[i] = best_path(a, c[:, i], B, lo, hi, h)
        paths[i] = y.reshape(T, -1)
    lower = np.maximum(lower, value)

    return PathBounds(value, lower, upper, money_regret(u[0], upper - value, beta[0], h),
                      money_regret(u[0], lower - value, beta[0], h), paths)


def money_regret(u0, gain, beta0, h):
    """The money at period 0 that buys a utility gain (module docstring): ((u0 + gain)^(1/h) - u0^(1/h)) /
    beta0, u0 the profile's period-0 utility (of degree h), beta0 period 0's degree-1 bang per buck."""
    return ((u0 + np.maximum(gain, 0.0)) ** (1 / h) - u0 ** (1 / h)) / beta0
