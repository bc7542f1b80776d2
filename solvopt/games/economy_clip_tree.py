"""Endowment floors and caps in a finite-horizon economy on a stochastic chain.

The profile lives on the history lattice (:mod:`solvopt.games.economy_lattice`): classes k of histories
with the same period, world state and holdings carried in by every consumer, each with its prices p_k,
asset price q_k, consumption and holdings. With floors and caps consumer i's goods endowment at a class
of period t >= 1 is clip(e(w) + b(w) y, floor, cap) goodwise (y her own holding carried in, b(w) the
bundle one unit pays in world state w), so her cash f_k(y) = p_k . clip(e(w) + b(w) y, floor, cap) is
piecewise linear and nondecreasing in y (flat below the floor and above the cap); at period 0 it is
p_k . e(w), nothing carried and nothing clipped.

**The certificate is a dynamic program, solved exactly at degree 1.** With utilities homogeneous of degree 1, the
best bundle for wealth W at class k is worth beta_k W (beta the bang per buck), so against the profile
her best value from class k carrying y is

    V_k(y) = max over y' in [lo, hi] with W = f_k(y) - q_k y' >= 0 of  A_k W + sum_j P(j | k) V_j(y'),

A_k = gamma^t beta_k, j the children of k (their world states' transition probabilities), and no
children in the last period. Write C_k(y') = sum_j P(j | k) V_j(y') and H_k(y') = C_k(y') - A_k q_k y'.
Wealth W >= 0 means y' <= z_k(y) = min(hi, f_k(y) / q_k) (hi where q_k = 0; f_k >= 0 >= lo, so every y
is feasible), hence

    V_k(y) = A_k f_k(y) + G_k(z_k(y)),   G_k(z) = max over y' in [lo, z] of H_k(y').

If every V_j is continuous and piecewise linear on [lo, hi], so are C_k and H_k; G_k, the running
maximum of H_k from lo, is too (its kinks: H_k's, and where H_k rises through its earlier maximum);
z_k is piecewise linear and nondecreasing, so V_k is piecewise linear with kinks at f_k's breakpoints,
where f_k / q_k reaches hi, and the preimages of G_k's kinks under z_k. Each V_k is computed **exactly**
on those breakpoints, backward over the lattice; the best value over every policy is sum over the
period-0 classes of rho_k V_k(0). Breakpoints on which a function is linear to rounding are dropped;
the largest amount by which that lowers the function anywhere is added back as a constant (a
*slack*, reported), so the functions stay above the exact ones and the value stays a bound.

**Why the whole history does not help.** A consumer's policy may depend on everything she observes:
the world-state history and her own past holdings (the others' holdings and the prices are functions
of the world-state history too, as the lattice's class is). What her choices at and after class k can
earn depends on the past only through the class (which fixes every price, asset price and transition
probability from then on) and her own holding carried in (which fixes her cash there): the problem
from (k, y) is the same whatever history led there. So a history-dependent policy is worth at most
V_k(y) from every (k, y) it reaches (backward induction over the finite tree of histories), and the
dynamic program's value is the best over every policy the model allows, not only over policies of
(class, holding).

The dynamic program's greedy policy (at class k with y: the y' in [lo, z_k(y)] where H_k is largest)
is followed forward over the lattice and evaluated under the true clipped dynamics: a concrete
deviation whose value is the certificate's lower bound (where it carries too many different holdings
into a class, the holdings it buys there are rounded down to a grid: buying less only raises the
wealth, so the deviation stays feasible). It meets the bound to rounding when nothing was rounded.

**Degree h < 1** (:func:`grid_bounds`). The same dynamic program holds with A_k W^h (A_k = gamma^t
beta_k^h) in place of A_k W (the best bundle for wealth W is worth (beta_k W)^h), and the same argument
makes it exact over every policy, but its value functions are not piecewise linear. It is bounded on a
grid of holdings: V_k is nondecreasing in the carried holding (more cash, more choice), so a step
function that is >= V_k at the grid points and constant up to each of them from the left is >= V_k
everywhere, and bounding every purchase in a grid cell by the cash left at the cell's left end and the
continuation at its right end keeps that true backward over the lattice. The lower bound is the best
policy whose holdings lie on the grid, evaluated exactly; the gap between the two is the discretisation's
whole error, and both are reported.

**The construction** (:func:`tree_equilibrium`) carries :func:`solvopt.games.economy_clip.clip_equilibrium`
over to the lattice, with the same candidates (:func:`solvopt.games.economy_clip.candidate_schedule`):
the asset at a level times its cap in every period but the last (0 there); holdings the same in every
class of a period (so the classes of a period are its world states): at first the saturating holding
(beyond which no next world state's payout adds anything), then each consumer's best response's expected
holding in the period (capped at the saturating holding); the balanced variant, where one consumer (the
one whose long position is worth least to her, or each in turn once a balanced candidate leads) holds the
others' total short; each class's goods cleared as a Fisher market on the clipped supply
(:func:`solvopt.games.economy_clip.clear_period`). The best certified profile is returned.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .economy_clip import (
    AUTO,
    breakpoints,
    candidate_schedule,
    class_long_values,
    clear_period,
    clipped,
    hold_the_rest,
    saturating_holdings,
)
from .economy_lattice import grow

TREE_GUARANTEE = ("objective is a certified upper bound on the exploitability of the returned profile over the "
                  "horizon's periods and every deviation the model allows under the clipped endowments: each "
                  "consumer's holdings and bundles as any function of the world-state history and her own past "
                  "holdings (a dynamic program over the history lattice's classes and her carried holding: exact on "
                  "piecewise-linear values at degree 1, bounded on a grid of holdings by monotonicity at degree "
                  "h < 1; in money at period 0's prices), the auctioneer's prices on their feasible set (closed "
                  "form); 0 only at an equilibrium")
PRUNE = 1e-13               # a breakpoint on which the function is linear to this (relative) is dropped
MAX_POINTS = 4000           # breakpoints a value function keeps (coarsened upwards beyond, slack reported)
MAX_HELD = 256              # holdings carried into a class beyond which the forward evaluation rounds the
                            # holdings it buys there down to a grid
HELD_GRID = 1 << 16         # that grid's cells over the holding's box


def _no_check() -> None:
    """The default stop check outside a solve: never stop."""


# --- piecewise-linear functions on [lo, hi] ------------------------------------------------------------
@dataclass
class PL:
    """A continuous piecewise-linear function by its breakpoints xs (sorted, from lo to hi) and values."""

    xs: np.ndarray
    vs: np.ndarray

    def __call__(self, y) -> np.ndarray:
        return np.interp(y, self.xs, self.vs)


def _prune(f: PL, tol) -> tuple[PL, float]:
    """(g, lift): g on a subset of f's breakpoints (those where f is not linear within ``tol``), and the
    largest amount by which g lies below f (g + lift >= f everywhere)."""
    xs, vs = f.xs, f.vs
    if len(xs) <= 2:
        return f, 0.0
    keep = [0]
    for i in range(1, len(xs) - 1):
        a = keep[-1]
        chord = vs[a] + (vs[i + 1] - vs[a]) * (xs[i] - xs[a]) / (xs[i + 1] - xs[a])
        if abs(vs[i] - chord) > tol:
            keep.append(i)
    keep.append(len(xs) - 1)
    if len(keep) == len(xs):
        return f, 0.0
    g = PL(xs[keep], vs[keep])
    return g, max(0.0, float(np.max(vs - g(xs))))


def _tidy(f: PL) -> tuple[PL, float]:
    """f without its linear breakpoints (relative PRUNE), coarsened to at most MAX_POINTS; the lift."""
    scale = max(float(np.max(np.abs(f.vs))), 1e-300)
    g, lift = _prune(f, PRUNE * scale)
    tol = PRUNE * scale
    while len(g.xs) > MAX_POINTS:
        tol *= 10
        g, extra = _prune(g, tol)
        lift += extra
    return g, lift


def _running_max(h: PL) -> PL:
    """G(z) = max over [xs[0], z] of h."""
    xs, vs = h.xs, h.vs
    ox, ov = [xs[0]], [vs[0]]
    m = vs[0]
    for i in range(1, len(xs)):
        v0, v1 = vs[i - 1], vs[i]
        if v1 > m:
            if v0 < m:                         # h rises through the running maximum inside the segment
                x = xs[i - 1] + (m - v0) / (v1 - v0) * (xs[i] - xs[i - 1])
                if ox[-1] < x < xs[i]:
                    ox.append(x)
                    ov.append(m)
            m = v1
        ox.append(xs[i])
        ov.append(m)
    return PL(np.array(ox), np.array(ov))


def _argmax_below(h: PL):
    """For z (array): the y' in [xs[0], z] where h is largest, by prefix maxima over h's breakpoints."""
    pm = np.zeros(len(h.xs), dtype=int)
    for i in range(1, len(h.xs)):
        pm[i] = i if h.vs[i] > h.vs[pm[i - 1]] else pm[i - 1]

    def best(z):
        z = np.asarray(z, dtype=float)
        idx = np.clip(np.searchsorted(h.xs, z, side="right") - 1, 0, len(h.xs) - 1)
        at = h.xs[pm[idx]]
        return np.where(h(z) >= h.vs[pm[idx]], z, at)
    return best


@dataclass
class ClassCash:
    """One class and consumer: f(y) = p . clip(e + b y, floor, cap) (period t >= 1) or p . e (period 0)."""

    p: np.ndarray
    e: np.ndarray
    b: np.ndarray
    floor: np.ndarray | None
    cap: np.ndarray | None
    start: bool

    def __call__(self, y) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        if self.start:
            return np.full(y.shape, float(self.p @ self.e))
        return clipped(self.e, self.b, self.floor, self.cap, y) @ self.p

    def kinks(self, lo, hi) -> np.ndarray:
        if self.start:
            return np.array([lo, hi])
        return breakpoints(self.e, self.b, self.floor, self.cap, lo, hi)


def _compose(A, cash: ClassCash, q, G: PL, lo, hi) -> PL:
    """V(y) = A f(y) + G(min(hi, f(y) / q)) on [lo, hi] (module docstring), exact on its breakpoints."""
    ys = cash.kinks(lo, hi)
    fs = cash(ys)
    pts = [ys]
    if q > 0:
        raw = fs / q
        for a in range(len(ys) - 1):            # where f / q crosses hi, and preimages of G's kinks
            z0, z1 = raw[a], raw[a + 1]
            if z1 == z0:
                continue
            targets = G.xs[(G.xs > min(z0, z1)) & (G.xs < max(z0, z1))]
            if min(z0, z1) < hi < max(z0, z1):
                targets = np.append(targets, hi)
            if len(targets):
                pts.append(ys[a] + (targets - z0) / (z1 - z0) * (ys[a + 1] - ys[a]))
    xs = np.unique(np.clip(np.concatenate(pts), lo, hi))
    fx = cash(xs)
    z = np.minimum(hi, fx / q) if q > 0 else np.full(len(xs), hi)
    return PL(xs, A * fx + G(z))


def _weighted_sum(funcs, weights, lo, hi) -> PL:
    """sum_j w_j V_j on the union of their breakpoints."""
    if not funcs:
        return PL(np.array([lo, hi]), np.zeros(2))
    xs = np.unique(np.concatenate([f.xs for f in funcs]))
    return PL(xs, sum(w * f(xs) for f, w in zip(funcs, weights)))


# --- the certificate -----------------------------------------------------------------------------------
def class_supplies(econ, lat) -> np.ndarray:
    """(K, N, M) each consumer's goods endowment at each class: clipped after the payouts of what she
    carries in (period t >= 1), as given at period 0."""
    E = econ.endowments[lat.world].astype(float).copy()
    later = lat.period >= 1
    if econ.endowment_floor is None:
        E[later] += lat.carried[later][:, :, None] * econ.asset_bundles[lat.world[later], 0][:, None, :]
        return E
    for k in np.flatnonzero(later):
        E[k] = clipped(E[k], econ.asset_bundles[lat.world[k], 0], econ.endowment_floor, econ.endowment_cap,
                       lat.carried[k])
    return E


@dataclass
class TreeBounds:
    """Per consumer: the profile's value, the dynamic program's bound (with its slack) and the
    greedy deviation's value (utility units), the regrets in money, and per class the greedy
    deviation's expected holding (K, N) (weighted by reach probability)."""

    value: np.ndarray
    upper: np.ndarray
    lower: np.ndarray
    slack: np.ndarray
    regret: np.ndarray
    regret_lower: np.ndarray
    held: np.ndarray
    rounded: bool


def tree_bounds(econ, lat, prof, check=_no_check) -> TreeBounds:
    """The exact dynamic program (module docstring) for every consumer against the profile on ``lat``,
    and its greedy policy evaluated forward."""
    from .economy import bang_per_buck
    if econ.degree != 1.0:
        return grid_bounds(econ, lat, prof, check)
    N, K = econ.n_consumers, len(lat.period)
    p, q = prof.prices, prof.asset_prices[:, 0].astype(float)
    beta = bang_per_buck(econ, p)
    A = econ.discount ** lat.period[:, None] * beta                       # (K, N)
    rho = lat.prob
    u = econ.utility.value(prof.consumption)
    lo, hi = -float(econ.borrowing_limit[0]), float(econ.holding_limit[0])
    E = econ.endowments[lat.world]
    bund = econ.asset_bundles[lat.world, 0]
    children: list[list] = [[] for _ in range(K)]
    for e_ in range(len(lat.parent)):
        children[lat.parent[e_]].append((lat.child[e_], lat.weight[e_]))
    order = np.argsort(-lat.period, kind="stable")
    value = np.array([float(np.sum(rho * econ.discount ** lat.period * u[:, i])) for i in range(N)])
    upper, lower, slack = np.zeros(N), np.zeros(N), np.zeros(N)
    held = np.zeros((K, N))
    rounded = False
    starts = np.flatnonzero(lat.period == 0)
    for i in range(N):
        V: list = [None] * K
        H: list = [None] * K
        lift = np.zeros(K)                      # slack carried by V_k (added to it)
        cash = [ClassCash(p[k], E[k, i], bund[k], econ.endowment_floor, econ.endowment_cap, lat.period[k] == 0)
                for k in range(K)]
        for k in order:
            check()
            kids = children[k]
            C = _weighted_sum([V[j] for j, _ in kids], [w for _, w in kids], lo, hi)
            carried = float(sum(w * lift[j] for j, w in kids))
            H[k] = PL(C.xs, C.vs - A[k, i] * q[k] * C.xs)
            G = _running_max(H[k])
            Vk = _compose(A[k, i], cash[k], q[k], G, lo, hi)
            V[k], extra = _tidy(Vk)
            lift[k] = carried + extra
        upper[i] = float(sum(rho[k] * (V[k](0.0) + lift[k]) for k in starts))
        slack[i] = float(sum(rho[k] * lift[k] for k in starts))
        # the greedy policy forward: per class, holdings carried in with their probability mass
        mass: list = [None] * K
        for k in starts:
            mass[k] = (np.zeros(1), np.array([rho[k]]))
        for k in np.argsort(lat.period, kind="stable"):
            check()
            if mass[k] is None:
                continue
            y, m = mass[k]
            f = cash[k](y)
            z = np.minimum(hi, f / q[k]) if q[k] > 0 else np.full(len(y), hi)
            y2 = _argmax_below(H[k])(z)
            if len(y) > MAX_HELD:               # buy a little less (more wealth, still feasible): on a grid
                rounded = True
                cell = (hi - lo) / HELD_GRID
                y2 = np.maximum(lo, np.minimum(y2, lo + np.floor((y2 - lo) / cell) * cell))
            W = np.maximum(f - q[k] * y2, 0.0)
            lower[i] += float(m @ (A[k, i] * W))
            held[k, i] = float(m @ y2)
            for j, w in children[k]:
                ys, ms = y2, m * w
                if mass[j] is not None:
                    ys, ms = np.concatenate([mass[j][0], ys]), np.concatenate([mass[j][1], ms])
                ys, inv = np.unique(ys, return_inverse=True)
                mass[j] = (ys, np.bincount(inv.ravel(), weights=ms))
    lower = np.maximum(lower, value)
    upper = np.maximum(upper, lower)
    b0 = rho[starts] @ beta[starts] / rho[starts].sum()
    held = held / np.maximum(rho, 1e-300)[:, None]
    return TreeBounds(value, upper, lower, slack, (upper - value) / b0, (lower - value) / b0, held, rounded)


# --- degree h < 1: a grid with a proven bound --------------------------------------------------------
GRID_COARSE = 101           # grid points spread over the holding's box
GRID_FINE = 301             # grid points over the holdings where some cash bends (floors and caps reached)


def holding_grid(econ, lat) -> np.ndarray:
    """The grid of :func:`grid_bounds`: lo, 0, hi, GRID_COARSE points over [lo, hi] and GRID_FINE over the
    range of holdings where some consumer's cash bends in some class (from its least to its largest kink
    inside the box)."""
    lo, hi = -float(econ.borrowing_limit[0]), float(econ.holding_limit[0])
    kinks = []
    for w in np.unique(lat.world[lat.period >= 1]):
        b = econ.asset_bundles[w, 0]
        for e in econ.endowments[w]:
            kinks.append(breakpoints(e, b, econ.endowment_floor, econ.endowment_cap, lo, hi))
    parts: list[np.ndarray] = [np.linspace(lo, hi, GRID_COARSE), np.array([0.0, lo, hi])]
    if kinks:
        ks = np.concatenate(kinks)
        inner = ks[(ks > lo) & (ks < hi)]
        if len(inner):
            parts.append(np.linspace(inner.min(), inner.max(), GRID_FINE))
    return np.unique(np.clip(np.concatenate(parts), lo, hi))


def grid_bounds(econ, lat, prof, check=_no_check) -> TreeBounds:
    """Degree h < 1: the dynamic program of the module docstring with A_k W^h (A_k = gamma^t beta_k^h) in
    place of A_k W, bounded on a grid g_0 = lo < ... < g_n = hi (:func:`holding_grid`). V_k is nondecreasing
    in the carried holding (more cash, more choice), so V_k(y) <= U_k(g) for the grid point g >= y next to
    y once U_k >= V_k on the grid; and with C the children's such step functions,

        U_k(g_a) = max( A_k (f_k(g_a) - q_k lo)^h + C(lo),  max over the cells (g_{b-1}, g_b] the budget
                        reaches of A_k (f_k(g_a) - q_k g_{b-1})^h + C(g_b) )

    bounds every y' in the cell from above (the first term falls and C rises in y'), so U_k >= V_k on the
    grid by induction: the bound is sum over the start classes of rho_k U_k(0). The lower bound is the best
    policy whose holdings lie on the grid, exactly (its holdings, carried, stay on the grid), and ``held``
    its expected holdings per class. The gap between the two is the discretisation's only error."""
    from .economy import bang_per_buck
    from .economy_path import money_regret
    h = float(econ.degree)
    N, K = econ.n_consumers, len(lat.period)
    p, q = prof.prices, prof.asset_prices[:, 0].astype(float)
    beta = bang_per_buck(econ, p)
    A = econ.discount ** lat.period[:, None] * beta ** h                  # (K, N)
    rho = lat.prob
    u = econ.utility.value(prof.consumption) ** h
    g = holding_grid(econ, lat)
    n = len(g)
    zero = int(np.flatnonzero(g == 0.0)[0])
    E = econ.endowments[lat.world]
    bund = econ.asset_bundles[lat.world, 0]
    children: list[list] = [[] for _ in range(K)]
    for e_ in range(len(lat.parent)):
        children[lat.parent[e_]].append((lat.child[e_], lat.weight[e_]))
    U: dict = {}                        # per class (N, n); a period's are dropped once its parents are done
    L: dict = {}
    choice = np.zeros((K, N, n), dtype=np.int32)
    for k in np.argsort(-lat.period, kind="stable"):
        check()
        for j in [j for j in U if lat.period[j] > lat.period[k] + 1]:
            del U[j], L[j]
        CU, CL = np.zeros((N, n)), np.zeros((N, n))
        for j, w in children[k]:
            CU += w * U[j]
            CL += w * L[j]
        U[k], L[k] = np.empty((N, n)), np.empty((N, n))
        if lat.period[k] == 0:
            F = np.repeat((E[k] @ p[k])[:, None], n, axis=1)
        else:
            F = np.clip(E[k][:, None, :] + g[None, :, None] * bund[k][None, None, :], econ.endowment_floor,
                        econ.endowment_cap) @ p[k]                         # (N, n)
        for i in range(N):
            if q[k] <= 0:
                U[k][i] = A[k, i] * F[i] ** h + CU[i, -1]
                L[k][i] = A[k, i] * F[i] ** h + CL[i, -1]
                choice[k, i] = n - 1
                continue
            rows, inv = np.unique(F[i], return_inverse=True)           # cash is flat over much of the box
            X = rows[:, None] - q[k] * g[None, :]                          # wealth for each purchase
            P = A[k, i] * np.maximum(X, 0.0) ** h
            up = np.where(X[:, :-1] > 0, P[:, :-1] + CU[i, None, 1:], -np.inf).max(axis=1)
            up = np.maximum(up, P[:, 0] + CU[i, 0])
            low = np.where(X >= 0, P + CL[i, None, :], -np.inf)
            arg = low.argmax(axis=1)
            U[k][i] = up[inv.ravel()]
            L[k][i] = low[np.arange(len(rows)), arg][inv.ravel()]
            choice[k, i] = arg[inv.ravel()]
    starts = np.flatnonzero(lat.period == 0)
    value = (rho * econ.discount ** lat.period) @ u
    upper = sum(rho[k] * U[k][:, zero] for k in starts)
    lower = np.maximum(sum(rho[k] * L[k][:, zero] for k in starts), value)
    upper = np.maximum(upper, lower)
    # the grid policy's expected holdings per class (mass over grid points, carried forward)
    mass: dict = {int(k): np.zeros((N, n)) for k in starts}
    for k in starts:
        mass[k][:, zero] = rho[k]
    held = np.zeros((K, N))
    cols = np.repeat(np.arange(N)[:, None], n, axis=1)
    for k in np.argsort(lat.period, kind="stable"):
        check()
        bought = np.zeros((N, n))
        np.add.at(bought, (cols, choice[k]), mass.pop(k, np.zeros((N, n))))
        held[k] = bought @ g / max(rho[k], 1e-300)
        for j, w in children[k]:
            mass[j] = mass.get(j, 0.0) + w * bought
    u0 = rho[starts] @ u[starts] / rho[starts].sum()
    b0 = rho[starts] @ beta[starts] / rho[starts].sum()
    return TreeBounds(value, upper, lower, np.zeros(N), money_regret(u0, upper - value, b0, h),
                      money_regret(u0, lower - value, b0, h), held, False)


def tree_certificate(econ, lat, prof, check=_no_check):
    """Metrics and :class:`Exploitability` of a profile on the lattice with clipped endowments: the
    consumers' exact dynamic programs (:func:`tree_bounds`) and the auctioneer's regret per class
    (closed form on the clipped supply), in money; keys as :func:`solvopt.games.economy_clip.clip_metrics`'.
    Returns (metrics, Exploitability, TreeBounds)."""
    from .economy import box_violation
    from .exploitability import Exploitability
    bnd = tree_bounds(econ, lat, prof, check)
    p, q = prof.prices, prof.asset_prices[:, 0].astype(float)
    Y = prof.portfolio[:, :, 0]
    E = class_supplies(econ, lat)
    S = E.sum(axis=1)
    z = prof.consumption.sum(axis=1) - S
    Ys = Y.sum(axis=1)
    gap = econ.price_sum * z.max(axis=1) + econ.asset_price_max * np.maximum(Ys, 0.0) - (np.einsum("km,km->k", p, z)
                                                                                          + q * Ys)
    weight = lat.prob * econ.discount ** lat.period
    auctioneer = float(weight @ np.maximum(gap, 0.0))
    W = np.einsum("km,knm->kn", p, E) - q[:, None] * Y
    spend = np.einsum("km,knm->kn", p, prof.consumption)
    scale = np.maximum(1.0, np.einsum("km,knm->kn", p, E))
    violation = float(np.max(np.maximum(np.maximum(spend - W, -W), 0.0) / scale))
    box = box_violation(econ, p, q, prof.portfolio)
    value = float(bnd.regret.sum() + auctioneer)
    lower = float(bnd.regret_lower.sum() + auctioneer)
    per_player = np.append(bnd.regret, auctioneer)
    ev = float(weight @ np.einsum("km,km->k", p, S))          # the clipped supply's value, as on a path
    m = {"exploitability": value, "exploitability_lower": lower, "per_player": per_player,
         "consumer_regret": float(bnd.regret.sum()), "auctioneer_regret": auctioneer,
         "budget_violation": violation, "box_violation": box, "excess_demand": float(np.max(np.maximum(z, 0.0) / S)),
         "horizon_endowment_value": ev, "horizon_relative_exploitability": value / ev,
         "classes": int(len(lat.period)), "certificate_slack": float(bnd.slack.sum()),
         "deviation_rounded": bnd.rounded,
         "deviation_bounds": [("clip tree dynamic program" if econ.degree == 1.0 else "clip tree grid bound")]
                              * econ.n_consumers}
    return m, Exploitability(value, lower, per_player, violation=max(violation, box)), bnd


# --- a profile -----------------------------------------------------------------------------------------
def _reach(econ) -> np.ndarray:
    """(T, W) the probability of each world state in each period."""
    d = np.zeros((econ.horizon, econ.n_world))
    d[0] = econ.initial
    for t in range(1, econ.horizon):
        d[t] = d[t - 1] @ econ.transitions
    return d


def saturation(econ) -> np.ndarray:
    """(T,) the holding beyond which a period's payout adds nothing in any world state the next period
    may bring (every good paid at its cap there); hi in the last period, whose holding pays nothing."""
    d = _reach(econ)
    return saturating_holdings(econ, [np.flatnonzero(d[t + 1] > 0) for t in range(econ.horizon - 1)])


def _balance(econ, classes, Y, lo, short=AUTO) -> int:
    """In place: consumer ``short`` (AUTO: the one whose long holdings in ``Y`` (T, N) are worth least to her;
    ``classes``: period, world, prob, prices) holds the others' total short instead (within her borrowing and
    holding limits). Returns her index."""
    if short == AUTO:
        period, world, prob, prices = classes
        short = int(np.argmin(class_long_values(econ, period, world, prob, prices, Y)))
    return hold_the_rest(econ, Y, short, len(Y) - 1, lo)


def tree_equilibrium(econ, rounds=8, tolerance=1e-9, *, record=None, check=_no_check, note=None):
    """A profile of the stochastic finite-horizon economy ``econ`` with endowment floors and caps (degree
    1, one asset paying a bundle), certified by :func:`tree_certificate` (module docstring). Candidates
    (:func:`solvopt.games.economy_clip.candidate_schedule`): the asset at a level times its cap in every
    period but the last (0 there), plain or balanced; per candidate up to ``rounds`` rounds after the
    first, stopping when the certified exploitability stops falling. Returns the best (lattice, profile,
    metrics); hooks as :func:`solvopt.games.economy_horizon.forward_equilibrium`'s (``record`` gets
    (lattice, profile))."""
    from solvopt.core.threads import one_blas_thread
    if econ.n_assets != 1 or econ.asset_bundles is None:
        raise NotImplementedError("tree_equilibrium: one asset paying a bundle of goods only")
    T, N, M = econ.horizon, econ.n_consumers, econ.n_goods
    lo, hi = -float(econ.borrowing_limit[0]), float(econ.holding_limit[0])
    sat = saturation(econ)
    d = _reach(econ)
    ws = np.nonzero(d > 0)
    uniform = (ws[0], ws[1], d[ws], np.full((len(ws[0]), M), econ.price_sum / M))
    best = None
    k = 0
    cache: dict = {}

    def leading():
        return None if best is None else (best[2]["asset_price_level"], best[2]["short_consumer"])

    with one_blas_thread():
        for level, rule in candidate_schedule(N, leading):
            q = np.full(T, level * econ.asset_price_max)
            q[T - 1] = 0.0
            Y = np.zeros((T, N))
            Y[:T - 1] = np.clip(sat[:T - 1, None], lo, hi)
            short = None if rule is None else _balance(econ, uniform, Y, lo, rule)
            last = np.inf
            for r in range(rounds + 1):
                check()
                if note is not None:
                    note(f"markov-horizon: asset price {q[0]:.3g}, "
                         f"{'best' if short is None else f'consumer {short} short'} holdings, round {r} "
                         "(floors and caps, lattice)")

                def solve_class(t, w, carried, Y=Y, q=q):
                    key = (t == 0, w, carried.tobytes(), Y[t].tobytes(), float(q[t]))
                    if key not in cache:
                        E = econ.endowments[w].astype(float)
                        if t > 0:
                            E = clipped(E, econ.asset_bundles[w, 0], econ.endowment_floor, econ.endowment_cap,
                                        carried)
                        cache[key] = clear_period(econ, E, Y[t], float(q[t]), check)
                    p, x = cache[key]
                    return p, float(q[t]), Y[t].copy(), x

                lat, prof = grow(econ, solve_class, check)
                m, expl, bnd = tree_certificate(econ, lat, prof, check)
                m.update(rounds=k, asset_price_level=float(level), balanced=short is not None,
                         short_consumer=short)
                if expl.certified and (best is None or expl.value < best[2]["exploitability"]):
                    best = (lat, prof, m)
                stop = record is not None and record(k, (lat, prof), m, expl)
                k += 1
                if stop or m["horizon_relative_exploitability"] <= tolerance:
                    return best
                if expl.value >= last:
                    break
                last = expl.value
                # the best responses' expected holding in each period, capped at the saturating one
                Y = np.zeros((T, N))
                for t in range(T - 1):
                    at = lat.period == t
                    Y[t] = lat.prob[at] @ bnd.held[at] / lat.prob[at].sum()
                Y[:T - 1] = np.clip(Y[:T - 1], lo, np.maximum(sat[:T - 1, None], lo))
                if rule is not None:
                    short = _balance(econ, (lat.period, lat.world, lat.prob, prof.prices), Y, lo, rule)
    return best
