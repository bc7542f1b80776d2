"""Endowment floors and caps in a finite-horizon economy on a deterministic chain.

With floors and caps each consumer's goods endowment at period t >= 1 is clip(e_t + b_t y_{t-1}, floor,
cap) goodwise (b_t the bundle one unit of the asset pays at t, y_{t-1} the holding carried in), so her
cash f_t(y) = p_t . clip(e_t + b_t y, floor, cap) is piecewise linear and nondecreasing in the holding
but not concave (flat below the floor, flat above the cap), and her best path

    max sum_t a_t W_t^h,   W_t = f_t(y_{t-1}) - q_t y_t >= 0,   y in its box,   a_t = gamma^t beta_t^h,

is not a concave program. Its **concave relaxation** replaces f_t on the holding's interval by its
concave envelope g_t = min_k (alpha_k + gamma_k y) (the upper hull of f_t's breakpoints) >= f_t: a
larger feasible set and a larger objective, so the relaxed optimum bounds the best path from above.
The Lagrangian dual of the relaxation, one multiplier lam_r >= 0 per envelope row,

    L(lam) = sum_t own_t(Lam_t) + lam . alpha + sum_t max over the box of s_t y_t,

    own_t = (1 - h) a_t (a_t h / Lam_t)^(h / (1 - h))  (h < 1),   0 if Lam_t >= a_t else +inf  (h = 1),

(Lam_t the sum of period t's multipliers, s_t = sum of period t+1's lam_r gamma_r - q_t Lam_t) is a
certified upper bound for any lam; a barrier Newton method on the relaxation gives the multipliers.
A **spatial branch and bound** tightens it: a node restricts each holding to an interval, on which the
envelope is recomputed; the node whose bound is highest is split at a convex kink of f near its
relaxed holding, so that intervals become pieces on which f is concave (the relaxation is then
exact). Every node's relaxed path, repaired forward under the true clipped dynamics (buying less
where the wealth would be negative), is a feasible deviation: the lower bound. The bound reported is
the highest bound of the nodes left open, so a stop (node limit, time) only loosens it.
"""
from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass

import numpy as np

from solvopt.core.errors import ModelError

from .economy_path import barrier_ascent
from .projection import check_stop

CLIP_GUARANTEE = ("objective is a certified upper bound on the exploitability of the returned profile over the "
                  "horizon's periods and every deviation the model allows under the clipped endowments: each "
                  "consumer's whole path of holdings and bundles (the Lagrangian dual of the concave envelope "
                  "relaxation of her clipped cash, tightened by branch and bound, in money at period 0's prices), "
                  "the auctioneer's prices on their feasible set (closed form); 0 only at an equilibrium")
NODE_LIMIT = 200            # branch-and-bound nodes per consumer
NEWTON_STEPS = 100          # Newton steps per barrier weight
BARRIER_END = 1e-14         # last barrier weight times the constraints' count, relative to the value's scale
REL_GAP = 1e-10             # branch and bound stops when bound - lower is at most this relative to the value


# --- the clipped cash and its concave envelope -------------------------------------------------------
def clipped(e, b, floor, cap, y) -> np.ndarray:
    """(..., M) the goods endowment clip(e + b y, floor, cap) for holdings y (any shape)."""
    return np.clip(e + np.multiply.outer(np.asarray(y, dtype=float), b), floor, cap)


def breakpoints(e, b, floor, cap, lo, hi) -> np.ndarray:
    """Sorted holdings in [lo, hi] where f may bend: lo, hi and where a good reaches its floor or cap."""
    paid = b > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        ks = np.concatenate([(floor - e)[paid] / b[paid], (cap - e)[paid] / b[paid]])
    ks = ks[np.isfinite(ks) & (ks > lo) & (ks < hi)]
    return np.unique(np.concatenate([[lo, hi], ks]))


def envelope(p, e, b, floor, cap, lo, hi) -> tuple[np.ndarray, np.ndarray]:
    """(alpha, gamma): the concave envelope of f(y) = p . clip(e + b y, floor, cap) on [lo, hi] as
    min_k alpha_k + gamma_k y (one row per segment of the upper hull of f's breakpoints)."""
    ys = breakpoints(e, b, floor, cap, lo, hi)
    fs = clipped(e, b, floor, cap, ys) @ p
    if len(ys) == 1:
        return np.array([fs[0]]), np.array([0.0])
    hull = [0]
    for k in range(1, len(ys)):                        # monotone chain, upper hull
        while len(hull) >= 2:
            i, j = hull[-2], hull[-1]
            if (fs[j] - fs[i]) * (ys[k] - ys[i]) <= (fs[k] - fs[i]) * (ys[j] - ys[i]):
                hull.pop()
            else:
                break
        hull.append(k)
    left, right = np.array(hull[:-1]), np.array(hull[1:])
    gamma = (fs[right] - fs[left]) / (ys[right] - ys[left])
    return fs[left] - gamma * ys[left], gamma


def convex_kinks(p, e, b, floor, cap, lo, hi) -> np.ndarray:
    """Holdings strictly inside (lo, hi) where f's slope rises: the kinks that make f non-concave."""
    ys = breakpoints(e, b, floor, cap, lo, hi)
    if len(ys) < 3:
        return np.empty(0)
    fs = clipped(e, b, floor, cap, ys) @ p
    slope = np.diff(fs) / np.diff(ys)
    rise = slope[1:] > slope[:-1] + 1e-12 * max(1.0, float(np.abs(slope).max()))
    return ys[1:-1][rise]


# --- one consumer's clipped path -----------------------------------------------------------------------
@dataclass
class ClipPath:
    """Consumer i's path data: weights a (T,), degree h, start cash c0, per period t >= 1 prices p (T, M),
    endowment e (T, M) before payouts, bundle b (T, M), floor and cap (M,), asset prices q (T,), box."""

    a: np.ndarray
    h: float
    c0: float
    p: np.ndarray
    e: np.ndarray
    b: np.ndarray
    floor: np.ndarray
    cap: np.ndarray
    q: np.ndarray
    lo: float
    hi: float

    @property
    def T(self) -> int:
        return len(self.a)

    def cash(self, t, y) -> np.ndarray:
        """f_t(y): the money the clipped endowment of period t >= 1 is worth with holding y carried in."""
        return clipped(self.e[t], self.b[t], self.floor, self.cap, y) @ self.p[t]

    def wealth(self, y) -> np.ndarray:
        """(T,) W_t under the true clipped dynamics along holdings y (T,)."""
        W = np.empty(self.T)
        W[0] = self.c0 - self.q[0] * y[0]
        for t in range(1, self.T):
            W[t] = self.cash(t, y[t - 1]) - self.q[t] * y[t]
        return W

    def value(self, y) -> float:
        """The path's value sum_t a_t W_t^h (-inf when a wealth is negative beyond rounding)."""
        W = self.wealth(y)
        if np.any(W < -1e-12 * max(1.0, abs(self.c0))):
            return -np.inf
        return float(self.a @ np.maximum(W, 0.0) ** self.h)

    def repaired(self, y) -> np.ndarray:
        """y made feasible forward under the true dynamics: where W_t < 0, buy only what the cash pays."""
        y = np.clip(np.array(y, dtype=float), self.lo, self.hi)
        for t in range(self.T):
            cash = self.c0 if t == 0 else float(self.cash(t, y[t - 1]))
            if cash - self.q[t] * y[t] < 0 and self.q[t] > 0:
                y[t] = max(self.lo, cash / self.q[t])
        return y

    def rows(self, l, u):
        """The relaxation's rows on the holding intervals [l, u]: (period, alpha, gamma) with W_t <= alpha +
        gamma y_{t-1} - q_t y_t (period 0: W_0 <= c0 - q_0 y_0)."""
        period, alpha, gamma = [0], [self.c0], [0.0]
        for t in range(1, self.T):
            al, ga = envelope(self.p[t], self.e[t], self.b[t], self.floor, self.cap, l[t - 1], u[t - 1])
            period += [t] * len(al)
            alpha += list(al)
            gamma += list(ga)
        return np.array(period), np.array(alpha), np.array(gamma)


def dual_bound(path, rows, l, u, lam, gradient=False):
    """L(lam) (module docstring): an upper bound on the relaxation on [l, u] for any lam >= 0. With
    ``gradient`` (degree h < 1) also dL/dlam, a subgradient where a box term has its kink (s_t = 0)."""
    period, alpha, gamma = rows
    T, h, a = path.T, path.h, path.a
    Lam = np.bincount(period, weights=lam, minlength=T)
    if h < 1:
        with np.errstate(divide="ignore", over="ignore"):
            ratio = np.where(a > 0, a * h / Lam, 0.0)
            own = (1 - h) * a * ratio ** (h / (1 - h))
    else:
        own = np.where(Lam >= a, 0.0, np.inf)
    nxt = np.bincount(period, weights=lam * gamma, minlength=T + 1)[1:T + 1]      # period t+1's rows, on y_t
    s = nxt - path.q * Lam
    box = np.where(s > 0, s * u, s * l)
    total = float(own.sum() + lam @ alpha + box.sum())
    total = total if np.isfinite(total) else np.inf
    if not gradient:
        return total
    # d own_t / d Lam_t = -(a_t h / Lam_t)^(1/(1-h)); d box_t / d s_t = u_t or l_t
    with np.errstate(over="ignore"):
        d_own = -(ratio ** (1 / (1 - h)))
    d_box = np.where(s > 0, u, l)
    g = d_own[period] + alpha - path.q[period] * d_box[period]
    prev = period >= 1
    g[prev] += gamma[prev] * d_box[period[prev] - 1]
    return total, g


def _interior(path, rows, l, u):
    """(y, W) strictly inside the relaxation on [l, u] (an LP: the largest common margin), else that
    margin (<= 1e-12; 0 when HiGHS proves nothing)."""
    from .economy_deviation import highs_lp
    period, alpha, gamma = rows
    T, R = path.T, len(alpha)
    scale = max(1.0, float(np.abs(alpha).max()))
    n = 2 * T + 1                                     # y, W, margin
    A = np.zeros((R + 3 * T, n))
    r = np.arange(R)
    A[r, T + period] = 1.0
    prev = period >= 1
    A[r[prev], period[prev] - 1] = -gamma[prev]
    A[r, period] += path.q[period]
    A[r, -1] = scale
    t = np.arange(T)
    A[R + t, T + t] = -1.0
    A[R + t, -1] = scale
    width = (u - l) / 4
    A[R + T + t, t] = -1.0
    A[R + T + t, -1] = width
    A[R + 2 * T + t, t] = 1.0
    A[R + 2 * T + t, -1] = width
    b = np.concatenate([alpha, np.zeros(T), -l, u])
    cost = np.zeros(n)
    cost[-1] = -1.0
    res = highs_lp(cost, A, b, np.full(n, -np.inf), np.append(np.full(n - 1, np.inf), 1.0))
    if res is None:         # the LP is always feasible and bounded: HiGHS failed, which proves nothing
        return 0.0          # about the node, so it is kept (no interior known: plain multipliers)
    x = res[0]
    return (x[:T], x[T:2 * T]) if x[-1] > 1e-12 else x[-1]


def relax(path, l, u):
    """The relaxation on [l, u] by barrier Newton: (y, multipliers, rows, bound), or None when the node
    has no path with non-negative wealth (the LP's margin is negative)."""
    rows = path.rows(l, u)
    period, alpha, gamma = rows
    T, h, a = path.T, path.h, path.a
    start = _interior(path, rows, l, u)
    if start is None or not isinstance(start, tuple):
        if start is not None and start < -1e-9:
            return None
        # no interior: any multipliers give a bound (here the plain ones), no path
        lam = a[period] / np.bincount(period, minlength=T)[period] * (1 + 1e-12)
        return None if start is None else (None, lam, rows, dual_bound(path, rows, l, u, lam))
    y, W = start
    R = len(alpha)
    G = np.zeros((R, 2 * T))                           # slack_r = alpha_r - G_r . (y, W)
    r = np.arange(R)
    G[r, T + period] = 1.0
    prev = period >= 1
    G[r[prev], period[prev] - 1] = -gamma[prev]
    G[r, period] += path.q[period]
    v = np.concatenate([y, W])
    scale = max(float(a @ np.maximum(W, 1e-300) ** h), 1e-300)
    m = R + 3 * T

    def parts(v, mu):
        y, W = v[:T], v[T:]
        s = alpha - G @ v
        dl, du = y - l, u - y
        if np.any(s <= 0) or np.any(W <= 0) or np.any(dl <= 0) or np.any(du <= 0):
            return -np.inf, None, None
        F = a @ W ** h + mu * (np.log(s).sum() + np.log(W).sum() + np.log(dl).sum() + np.log(du).sum())
        g = -G.T @ (mu / s)
        g[:T] += mu / dl - mu / du
        g[T:] += a * h * W ** (h - 1) + mu / W
        H = -(G.T * (mu / s ** 2)) @ G
        H[np.arange(T), np.arange(T)] -= mu / dl ** 2 + mu / du ** 2
        H[T + np.arange(T), T + np.arange(T)] += a * h * (h - 1) * W ** (h - 2) - mu / W ** 2
        return F, g, H

    best = [np.inf, None]

    def keep_bound(v, mu):              # every stage's multipliers give a bound: keep the least
        if h < 1:
            lam = mu / (alpha - G @ v)
            bound = dual_bound(path, rows, l, u, lam)
            if bound < best[0]:
                best[:] = [bound, lam]

    v = barrier_ascent(parts, v, scale / m, BARRIER_END * scale, NEWTON_STEPS, 1e-16 * scale, keep_bound, count=m)
    lam = _lp_multipliers(path, rows, l, u) if h == 1 else _lowest(path, rows, l, u, best[1])
    return v[:T], lam, rows, dual_bound(path, rows, l, u, lam)


def _lp_multipliers(path, rows, l, u):
    """Degree 1: the multipliers minimising L (an LP: min lam . alpha + sum_t max(u_t s_t, l_t s_t) with
    Lam_t >= a_t), lifted where rounding left some Lam_t below a_t; every lam >= 0 is valid."""
    from .economy_deviation import highs_lp
    period, alpha, gamma = rows
    T, R = path.T, len(alpha)
    # variables lam (R), box terms v (T): v_t >= u_t s_t, v_t >= l_t s_t, s_t = nxt_t - q_t Lam_t
    S = np.zeros((T, R))
    prev = period >= 1
    S[period[prev] - 1, np.flatnonzero(prev)] = gamma[prev]
    S[period, np.arange(R)] -= path.q[period]
    C = np.zeros((T, R))
    C[period, np.arange(R)] = 1.0
    A = np.vstack([np.hstack([u[:, None] * S, -np.eye(T)]), np.hstack([l[:, None] * S, -np.eye(T)]),
                   np.hstack([-C, np.zeros((T, T))])])
    b = np.concatenate([np.zeros(2 * T), -path.a])
    res = highs_lp(np.concatenate([alpha, np.ones(T)]), A, b, np.append(np.zeros(R), np.full(T, -np.inf)),
                   np.full(R + T, np.inf))
    lam = np.maximum(res[0][:R], 0.0) if res is not None else path.a[period] * 1.0
    Lam = np.bincount(period, weights=lam, minlength=T)
    lift = np.where(Lam < path.a, path.a / np.maximum(Lam, 1e-300), 1.0)
    lam = lam * np.nextafter(lift, np.inf)[period]
    Lam = np.bincount(period, weights=lam, minlength=T)
    short = Lam < path.a
    if np.any(short):
        first = np.searchsorted(period, np.flatnonzero(short))
        lam[first] += path.a[short] - Lam[short] + 4 * np.spacing(path.a[short])
    return lam


def _lowest(path, rows, l, u, lam0):
    """Degree h < 1: the least L(lam) found from lam0 by L-BFGS on log lam with L's (sub)gradient (every value
    is a valid bound, so the kinks of the box terms cost tightness at most, never validity)."""
    from scipy.optimize import minimize
    best = [dual_bound(path, rows, l, u, lam0), lam0]

    def f(z):
        lam = np.exp(z)
        v, g = dual_bound(path, rows, l, u, lam, gradient=True)
        if v < best[0]:
            best[:] = [v, lam]
        if not np.isfinite(v) or not np.all(np.isfinite(g)):
            return 1e300, np.zeros_like(z)
        return v, g * lam                       # the chain rule through lam = exp(z)

    minimize(f, np.log(np.maximum(lam0, 1e-300)), jac=True, method="L-BFGS-B", options={"maxiter": 300})
    return best[1]


def best_clipped_path(path, incumbent=None, node_limit=NODE_LIMIT):
    """(y, lower, upper, nodes): a feasible path under the true dynamics, its value, and a certified upper
    bound on every path's value, by branch and bound over the relaxation (module docstring).
    ``incumbent``: a feasible path to start the lower bound from (the profile's own holdings)."""
    T = path.T
    best_y, lower = None, -np.inf
    if incumbent is not None:
        best_y, lower = np.asarray(incumbent, dtype=float), path.value(incumbent)

    def consider(y):
        nonlocal best_y, lower
        if y is None:
            return
        y = path.repaired(y)
        v = path.value(y)
        if v > lower:
            best_y, lower = y, v

    tick = itertools.count()
    l0, u0 = np.full(T, path.lo), np.full(T, path.hi)
    root = relax(path, l0, u0)
    if root is None:
        raise ModelError("a consumer has no path of holdings with non-negative wealth in every period")
    consider(root[0])
    heap = [(-root[3], next(tick), l0, u0, root)]
    nodes = 1
    while heap:
        check_stop()
        top = -heap[0][0]
        if top - lower <= REL_GAP * max(abs(lower), abs(top), 1e-300) or nodes >= node_limit:
            break
        _, _, l, u, (y, lam, rows, bound) = heapq.heappop(heap)
        if y is None:
            heap.append((-bound, next(tick), l, u, (y, lam, rows, bound)))
            heapq.heapify(heap)
            break
        # the holding whose relaxation gap (weighted by the next period's multipliers) is largest
        period = rows[0]
        Lam = np.bincount(period, weights=lam, minlength=T)
        gaps = np.zeros(max(T - 1, 1))            # the last holding pays nothing: no gap there
        for t in range(T - 1):
            al, ga = envelope(path.p[t + 1], path.e[t + 1], path.b[t + 1], path.floor, path.cap, l[t], u[t])
            gaps[t] = Lam[t + 1] * (np.min(al + ga * y[t]) - path.cash(t + 1, y[t]))
        t = int(np.argmax(gaps))
        kinks = (convex_kinks(path.p[t + 1], path.e[t + 1], path.b[t + 1], path.floor, path.cap, l[t], u[t])
                 if T > 1 and gaps[t] > 1e-13 * max(abs(bound), 1e-300) else np.empty(0))
        if len(kinks) == 0:
            heapq.heappush(heap, (-bound, next(tick), l, u, (y, lam, rows, bound)))
            break                                       # the relaxation is exact at the highest node
        k = kinks[np.argmin(np.abs(kinks - y[t]))]
        for lo_t, hi_t in ((l[t], k), (k, u[t])):
            cl, cu = l.copy(), u.copy()
            cl[t], cu[t] = lo_t, hi_t
            child = relax(path, cl, cu)
            nodes += 1
            if child is None:
                continue
            consider(child[0])
            if child[3] > lower:
                heapq.heappush(heap, (-child[3], next(tick), cl, cu, child))
    upper = max([-heap[0][0]] if heap else [lower])
    return best_y, lower, max(upper, lower), nodes


# --- the certificate of a profile ------------------------------------------------------------------------
def clip_bounds(econ, worlds, prices, asset_prices, consumption, holdings, node_limit=NODE_LIMIT):
    """Certified bounds on each consumer's best path against the profile (T periods along ``worlds``):
    a :class:`solvopt.games.economy_path.PathBounds` (values in utility units, regrets in money at
    period 0's bang per buck). ``prices`` (T, M), ``asset_prices`` (T,), ``consumption`` (T, N, M),
    ``holdings`` (T, N) the profile's own (the incumbent of the lower bound)."""
    from .economy import bang_per_buck
    from .economy_path import PathBounds, money_regret
    h = float(econ.degree)
    T, N = len(worlds), econ.n_consumers
    beta = bang_per_buck(econ, prices)
    weights = econ.discount ** np.arange(T)
    u = econ.utility.value(consumption) ** h
    value = weights @ u
    E = econ.endowments[worlds]
    b = econ.asset_bundles[worlds, 0]
    lower, upper = np.empty(N), np.empty(N)
    paths = np.empty((N, T, 1))
    for i in range(N):
        path = ClipPath(weights * beta[:, i] ** h, h, float(prices[0] @ E[0, i]), prices, E[:, i], b,
                        econ.endowment_floor, econ.endowment_cap, np.asarray(asset_prices, dtype=float),
                        -float(econ.borrowing_limit[0]), float(econ.holding_limit[0]))
        own = holdings[:, i] if np.isfinite(path.value(holdings[:, i])) else None
        y, lower[i], upper[i], _ = best_clipped_path(path, own, node_limit)
        paths[i, :, 0] = y
    lower = np.maximum(lower, value)
    upper = np.maximum(upper, lower)
    return PathBounds(value, lower, upper, money_regret(u[0], upper - value, beta[0], h),
                      money_regret(u[0], lower - value, beta[0], h), paths)


def supplies(econ, worlds, holdings) -> np.ndarray:
    """(T, N, M) each consumer's clipped goods endowment per period along ``worlds`` (period 0 as given)."""
    E = econ.endowments[worlds].astype(float).copy()
    b = econ.asset_bundles[worlds, 0]
    for t in range(1, len(worlds)):
        E[t] = clipped(E[t], b[t], econ.endowment_floor, econ.endowment_cap, holdings[t - 1])
    return E


def clip_metrics(econ, worlds, prices, asset_prices, consumption, holdings, node_limit=NODE_LIMIT):
    """The certificate of a profile over the T periods with clipped endowments: the consumers' path
    bounds (:func:`clip_bounds`), the auctioneer's regret per period (closed form on the clipped
    supply), in money. Returns (metrics, Exploitability, deviation holdings (N, T, 1))."""
    from .economy import box_violation
    from .exploitability import Exploitability
    T = len(worlds)
    bnd = clip_bounds(econ, worlds, prices, asset_prices, consumption, holdings, node_limit)
    E = supplies(econ, worlds, holdings)
    S = E.sum(axis=1)
    z = consumption.sum(axis=1) - S
    Y = holdings.sum(axis=1)
    q = np.asarray(asset_prices, dtype=float)
    gap = (econ.price_sum * z.max(axis=1) + econ.asset_price_max * np.maximum(Y, 0.0)
           - (np.einsum("tm,tm->t", prices, z) + q * Y))
    d = econ.discount ** np.arange(T)
    auctioneer = float(d @ np.maximum(gap, 0.0))
    W = np.einsum("tm,tnm->tn", prices, E) - q[:, None] * holdings
    spend = np.einsum("tm,tnm->tn", prices, consumption)
    scale = np.maximum(1.0, np.einsum("tm,tnm->tn", prices, E))
    violation = float(np.max(np.maximum(np.maximum(spend - W, -W), 0.0) / scale))
    box = box_violation(econ, prices, q, holdings)
    value = float(bnd.regret.sum() + auctioneer)
    lower = float(bnd.regret_lower.sum() + auctioneer)
    per_player = np.append(bnd.regret, auctioneer)
    ev = float(d @ np.einsum("tm,tm->t", prices, S))
    m = {"exploitability": value, "exploitability_lower": lower, "per_player": per_player,
         "consumer_regret": float(bnd.regret.sum()), "auctioneer_regret": auctioneer,
         "budget_violation": violation, "box_violation": box, "excess_demand": float(np.max(np.maximum(z, 0.0) / S)),
         "horizon_endowment_value": ev, "horizon_relative_exploitability": value / ev,
         "deviation_bounds": ["clip envelope branch and bound"] * econ.n_consumers}
    return m, Exploitability(value, lower, per_player, violation=max(violation, box)), bnd.holdings


# --- a profile ---------------------------------------------------------------------------------------------
ASSET_PRICE_LEVELS = (0.0, 0.03, 0.06, 0.1)  # the asset's price in every period but the last, times its cap
LEVEL_RESOLUTION = 0.004    # the adaptive search on the level stops at a bracket this wide (times the cap)
SEARCH_PASSES = 8           # adaptive passes (every consumer short, then the level) at most
SEARCH_PASS_WIDTH = 0.01    # a later pass bisects the level within this of the leader's (times the cap)
AUTO = -1                   # the balanced variant's short consumer: the one whose long holdings are worth least


def candidate_schedule(n_consumers, best):
    """The construction's candidates (asset price level, short consumer): the grid ASSET_PRICE_LEVELS, each
    plain (short None) and balanced (AUTO); then passes that adapt to ``best()`` (the level and short
    consumer of the best certified candidate so far, the short as an index or None; None before any): every
    other consumer as the short one at the leading level where a balanced candidate leads, then a bisection
    of the level (first between its grid neighbours, later within SEARCH_PASS_WIDTH of it) until the bracket
    is LEVEL_RESOLUTION wide. The passes end when one leaves the leader unchanged (at most SEARCH_PASSES).
    Used by the constructions on a path and on the history lattice, so that the time a run is given goes to
    a finer search rather than an early stop."""
    for level in ASSET_PRICE_LEVELS:
        yield level, None
        yield level, AUTO
    if best() is None:                      # nothing certified: nothing to adapt to
        return
    grid = sorted(ASSET_PRICE_LEVELS)
    i = grid.index(best()[0])
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    for _ in range(SEARCH_PASSES):
        start = best()
        level, short = start
        if short is not None:
            for k in range(n_consumers):
                if k != short:
                    yield level, k
        yield from _bisection(lo, hi, best)
        if best() == start:
            return
        level = best()[0]
        lo, hi = max(level - SEARCH_PASS_WIDTH, 0.0), min(level + SEARCH_PASS_WIDTH, 1.0)


def _bisection(lo, hi, best):
    """Candidates that bisect the asset price level in [lo, hi] around the leader's (``best()``), with the
    leader's short consumer, until the bracket is LEVEL_RESOLUTION wide."""
    level, short = best()
    while hi - lo > LEVEL_RESOLUTION:
        for trial in (0.5 * (lo + level), 0.5 * (level + hi)):
            if lo < trial < hi and trial != level:
                yield trial, short
        new, short = best()
        if new == level:                    # neither midpoint won: the bracket shrinks to them
            lo, hi = 0.5 * (lo + level), 0.5 * (level + hi)
        else:
            lo, hi = (lo, level) if new < level else (level, hi)
            level = new


def _no_check() -> None:
    """The default stop check outside a solve: never stop."""


def floorless(econ):
    """The same economy without floors and caps (its time expansion; the clip is applied here)."""
    import copy
    out = copy.copy(econ)
    out.endowment_floor = out.endowment_cap = None
    return out


def saturation(econ, worlds) -> np.ndarray:
    """(T,) the holding beyond which a period's payout adds nothing (every good at its cap next period);
    hi for the last period, whose holding pays nothing."""
    return saturating_holdings(econ, [[int(w)] for w in worlds[1:]])


def saturating_holdings(econ, nexts) -> np.ndarray:
    """(T,) for each period t < T - 1 the holding beyond which the payout adds nothing in any of the world
    states ``nexts[t]`` the next period may bring (every good paid at its cap there); hi in the last."""
    hi = float(econ.holding_limit[0])
    out = np.full(len(nexts) + 1, hi)
    for t, ws in enumerate(nexts):
        needs = []
        for w in ws:
            b = econ.asset_bundles[w, 0]
            paid = b > 0
            if paid.any():
                needs.append(float(((econ.endowment_cap[paid] - econ.endowments[w][:, paid]) / b[paid]).max()))
        if needs:
            out[t] = min(hi, max(0.0, max(needs)))
    return out


def long_values(econ, worlds, prices, holdings) -> np.ndarray:
    """(N,) what each consumer's positive holdings pay her over the periods, in money at period 0's
    bang per buck (the goods the payouts add to her clipped endowment, at the period's prices)."""
    T = len(worlds)
    return class_long_values(econ, np.arange(T), np.asarray(worlds), np.ones(T), prices, holdings)


def class_long_values(econ, period, world, prob, prices, holdings) -> np.ndarray:
    """:func:`long_values` over classes of histories (their period, world state, reach probability and
    prices (K, M)) with holdings per period (T, N); period 0's bang per buck averaged over its classes."""
    from .economy import bang_per_buck
    beta = bang_per_buck(econ, prices)
    start = period == 0
    b0 = prob[start] @ beta[start] / prob[start].sum()
    gain = np.zeros(econ.n_consumers)
    for k in np.flatnonzero(period >= 1):
        E, b = econ.endowments[world[k]], econ.asset_bundles[world[k], 0]
        held = np.maximum(holdings[period[k] - 1], 0.0)
        paid = np.clip(E + held[:, None] * b, econ.endowment_floor, econ.endowment_cap)
        now = np.clip(E, econ.endowment_floor, econ.endowment_cap)
        gain += prob[k] * econ.discount ** period[k] * beta[k] / b0 * ((paid - now) @ prices[k])
    return gain


PERIOD_STEPS = 200          # damped fixed-point steps of one period's prices


def clear_period(econ, e, y, q, check=_no_check):
    """Prices and consumption of one period with clipped endowments ``e`` (N, M) and the holdings ``y``
    bought at ``q``: the budgets p . e_i - q y_i (0 where negative) clear the goods left after the
    auctioneer's share as a Fisher market; the budgets follow the prices, so the prices are a fixed
    point, iterated with damping (halved whenever the step grows). Where it does not settle the last
    iterate is returned: its consumption is affordable, and the certificate reports the excess demand."""
    from solvopt.core.errors import SolverError

    from .economy_horizon import PRICE_FLOOR, _fisher_prices
    total, N = econ.price_sum, econ.n_consumers
    left = e.sum(axis=0) - q * y.sum() / total
    if left.min() <= 0:
        raise SolverError("markov-horizon: the auctioneer's share of the asset's price exceeds a good's supply")
    p = np.full(e.shape[1], total / e.shape[1])
    theta, last = 1.0, np.inf
    for _ in range(PERIOD_STEPS):
        check()
        new = _fisher_prices(econ.utility, np.maximum(e @ p - q * y, 0.0), left, check)
        new = total * new / new.sum()
        move = float(np.max(np.abs(new - p)))
        if move <= 1e-13 * total:
            p = new
            break
        if move > last:
            theta = max(theta / 2, 1e-3)
        last = move
        p = (1 - theta) * p + theta * new
    p = np.maximum(p, PRICE_FLOOR * total)
    p = total * p / p.sum()
    return p, econ.utility.demand(p[None], np.maximum(e @ p - q * y, 0.0)).reshape(N, -1)


def _balance(econ, worlds, prices, Y, lo, short=AUTO) -> int:
    """In place: consumer ``short`` (AUTO: the one whose long holdings in ``Y`` (T + 1, N) are worth least to
    her) holds the others' total short instead, so that the asset market clears (within her borrowing and
    holding limits: the rest is left to the auctioneer). Returns her index."""
    T = len(worlds)
    if short == AUTO:
        short = int(np.argmin(long_values(econ, worlds, prices, Y[:T])))
    return hold_the_rest(econ, Y, short, T, lo)


def hold_the_rest(econ, Y, short, rows, lo) -> int:
    """In place: consumer ``short`` holds, in the first ``rows`` rows of ``Y`` (periods x consumers), minus
    the others' total, clipped to her box [lo, holding_limit] (the rest is the auctioneer's), and 0 after.
    Returns ``short``."""
    Y[:, short] = 0.0
    Y[:rows, short] = np.clip(-Y[:rows].sum(axis=1), lo, float(econ.holding_limit[0]))
    return short


def clip_equilibrium(econ, rounds=8, tolerance=1e-9, *, record=None, check=_no_check, note=None):
    """A profile of the finite-horizon economy ``econ`` with endowment floors and caps, certified by
    :func:`clip_metrics`. Candidates (:func:`candidate_schedule`): the asset at a level times its cap in
    every period but the last (0 there), and holdings at the saturating holding (more pays nothing; the free
    long position at price 0), then in rounds each consumer's best path against the last round's prices,
    capped at the saturating holding; "balanced", one consumer (the one whose long holdings are worth least
    to her, or each in turn once a balanced candidate leads) instead holds the others' total short, so that
    the asset's market clears (her regret replaces the auctioneer's on a positive net holding). Each period's goods
    clear as a Fisher market on the clipped supply after the auctioneer's share. A candidate's rounds stop
    when its certified exploitability stops falling (at most ``rounds``); the best certified profile is
    kept. Same hooks and return as :func:`solvopt.games.economy_horizon.degree_equilibrium`."""
    from . import economy as ec
    from .economy_horizon import time_expanded
    x = time_expanded(floorless(econ))
    big, T, worlds = x.economy, x.horizon, x.worlds
    if big.n_assets != 1 or big.asset_bundles is None:
        raise NotImplementedError("clip_equilibrium: one asset paying a bundle of goods only")
    N, M = big.n_consumers, big.n_goods
    chain = ec.pair_chain(big)
    lo = -float(econ.borrowing_limit[0])
    sat = saturation(econ, worlds)
    best, k = None, 0
    zeros_n = np.zeros(N)
    def leading():
        return None if best is None else (best[1]["asset_price_level"], best[1]["short_consumer"])

    for level, rule in candidate_schedule(N, leading):
        q = np.full(T + 1, level * big.asset_price_max)
        q[T - 1:] = 0.0
        # the first round: everyone at the saturating holding (the free long position at q = 0)
        Y = np.zeros((T + 1, N))
        Y[:T - 1] = np.clip(sat[:T - 1, None], lo, float(econ.holding_limit[0]))
        short = None if rule is None else _balance(econ, worlds, np.full((T, M), big.price_sum / M), Y, lo, rule)
        last = np.inf
        for r in range(rounds + 1):
            check()
            if note is not None:
                note(f"markov-horizon: asset price {q[0]:.3g}, "
                     f"{'best' if short is None else f'consumer {short} short'} holdings, round {r} (floors and caps)")
            E = np.concatenate([supplies(econ, worlds, Y[:T]), big.endowments[T][None]])
            prices, consumption = np.empty((T + 1, M)), np.empty((T + 1, N, M))
            for t in range(T + 1):
                prices[t], consumption[t] = clear_period(big, E[t], Y[t], q[t], check)
            prof = ec.Profile(prices[chain.world], q[chain.world][:, None], consumption[chain.world],
                              Y[:, :, None])
            m, expl, paths = clip_metrics(econ, worlds, prices[:T], q[:T], consumption[:T], Y[:T])
            m.update(rounds=k, asset_price_level=float(level), balanced=short is not None, short_consumer=short)
            if best is None or expl.value < best[1]["exploitability"]:
                best = (prof, m)
            stop = record is not None and record(k, prof, m, expl)
            k += 1
            if stop or m["horizon_relative_exploitability"] <= tolerance:
                return x, best[0], best[1]
            if expl.value >= last:
                break
            last = expl.value
            Y = np.vstack([np.clip(paths[:, :, 0].T, lo, sat[:, None]), zeros_n[None]])
            if rule is not None:
                short = _balance(econ, worlds, prices[:T], Y, lo, rule)
    return x, best[0], best[1]
