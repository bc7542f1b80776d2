"""The price player's complementarity problem of an economy with satiable (quadratic) consumers.

With utilities that satiate, a good may be in excess supply at the equilibrium and then free, so
the prices cannot all be positive (``production-root``'s reduction to the simplex's interior does
not apply). At prices p >= 0 every other player's best response is still exact: firm f supplies
r_f p / ||p||, consumer k demands its QP demand x_k(p) (:mod:`solvopt.dsl.quadratic_utility`). The
price player is at a best response exactly when p is a maximiser of p'.z(p) over the simplex, i.e.

    p >= 0,  t - z_j(p) >= 0,  p_j (t - z_j(p)) = 0  (every j),  sum p = 1,

with t = max z. These m + 1 equations, written with the Fischer-Burmeister function
phi(a, b) = a + b - sqrt(a^2 + b^2) (zero exactly when a >= 0, b >= 0, ab = 0), are solved by
Levenberg-Marquardt with their exact (generalized) Jacobian: dz/dp from each consumer's active set
(the KKT system on its support, differentiated in the prices and in its budget e_k.p plus its profit
shares) and from the firms' supply. Excess demands are measured in units of each good's total
endowment plus a share of the capacity.
"""
from __future__ import annotations

import numpy as np

from .projection import check_stop


def demand_jacobian(model, x, lam, p):
    """d z / d p (m, m) at prices p > 0 somewhere, the consumers' demands x (n, m) and multipliers lam:
    each consumer's KKT system on its support differentiated (a satiated consumer's demand is locally
    constant), minus the firms' supply derivative."""
    u = model.utility
    n, _, m = model.shape
    norm = float(np.linalg.norm(p))
    # d budget_k / d p = e_k + sum_f theta_kf r_f p / ||p||
    dbudget = model.endowments + np.outer(model.profit_shares @ model.radii, p / norm)
    J = np.zeros((m, m))
    for k in range(n):
        S = x[k] > 0
        s = int(S.sum())
        if s == 0 or lam[k] <= 0:
            continue
        K = np.zeros((s + 1, s + 1))
        K[:s, :s] = u.matrices[k][np.ix_(S, S)]
        K[:s, s] = p[S]
        K[s, :s] = p[S]
        # Q dx + dlam p_S + lam e_j(S) = 0;  p_S.dx + x_j = dB/dp_j
        rhs = np.zeros((s + 1, m))
        rhs[:s, np.flatnonzero(S)] = -lam[k] * np.eye(s)
        rhs[s] = dbudget[k] - x[k]
        try:
            J[S] += np.linalg.solve(K, rhs)[:s]
        except np.linalg.LinAlgError:
            continue
    J -= float(model.radii.sum()) * (np.eye(m) / norm - np.outer(p, p) / norm ** 3)
    return J


def _fischer(a, b):
    r = np.sqrt(a * a + b * b)
    return a + b - r, r


def solve_complementarity(model, certify, starts, stop):
    """Solve the price player's complementarity problem from each start (prices on the simplex) in turn;
    ``certify(iteration, p)`` records a candidate and says whether it is within the tolerance, ``stop``
    whether the run must end. Returns when a start certifies or all are tried."""
    from scipy.optimize import least_squares
    n, _, m = model.shape
    unit = model.endowments.sum(axis=0) + float(model.radii.sum()) / np.sqrt(m)
    unit = np.maximum(unit, 1e-3 * float(unit.max()))

    cache: dict = {}

    def state(v):
        """Prices (clipped to >= 0), demands, multipliers and excess demand at v = (p, t); the last one kept
        (least squares asks for the residual and the Jacobian at the same point)."""
        key = v.tobytes()
        if key in cache:
            return cache[key]
        check_stop()                     # a solve's deadline and Ctrl-C reach scipy's loop through here
        p = np.maximum(v[:m], 0.0)
        if p.sum() <= 0:
            p = np.full(m, 1.0 / m)
        y = model.supply(p)
        x, lam = model.utility.demand_multipliers(p, model.budgets(p, y))
        z = x.sum(axis=0) - y.sum(axis=0) - model.endowments.sum(axis=0)
        cache.clear()
        cache[key] = (p, x, lam, z)
        return p, x, lam, z

    def residual(v):
        _, _, _, z = state(v)
        f, _ = _fischer(v[:m], (v[m] - z) / unit)
        return np.append(f, v[:m].sum() - 1.0)

    def jacobian(v):
        p, x, lam, z = state(v)
        a, b = v[:m], (v[m] - z) / unit
        f, r = _fischer(a, b)
        safe = r > 1e-300
        da = np.where(safe, 1.0 - a / np.where(safe, r, 1.0), 1.0 - 1.0 / np.sqrt(2.0))
        db = np.where(safe, 1.0 - b / np.where(safe, r, 1.0), 1.0 - 1.0 / np.sqrt(2.0))
        dz = demand_jacobian(model, x, lam, p) * (v[:m] > 0)[None, :]   # clipped prices do not move z
        J = np.zeros((m + 1, m + 1))
        J[:m, :m] = np.diag(da) - db[:, None] * dz / unit[:, None]
        J[:m, m] = db / unit
        J[m, :m] = 1.0
        return J

    for it, p0 in enumerate(starts, start=1):
        if stop(it):
            return
        _, _, _, z0 = state(p0)
        v0 = np.append(p0, float(p0 @ z0))
        sol = least_squares(residual, v0, jac=jacobian, method="lm", xtol=1e-15, ftol=1e-15, gtol=1e-15,
                            max_nfev=200 * (m + 1))
        p = np.maximum(sol.x[:m], 0.0)
        if np.all(np.isfinite(p)) and p.sum() > 0 and certify(it, p / p.sum()):
            return
