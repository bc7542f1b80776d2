"""Finite-horizon Markov exchange economies on a stochastic chain: the history lattice.

With a stochastic chain a policy may depend on the whole history of world states. The construction
and the certificate work on *classes* of histories: two histories of the same length ending in the
same world state, into which every consumer carries the same holdings, face the same period (the
same endowments, payouts and budgets), so the profile gives them the same prices, consumption and
holdings. A class at period t, world state w and carried holdings Y moves to the class (t + 1, w',
holdings bought) with probability P(w'|w); :class:`Lattice` holds these classes, their reach
probabilities and the edges. Once every consumer is at the holding limit the classes of a period are
its world states, so the lattice stays small (the paper's stochastic economies: 1 + 10 + 100 + 10 per
later period).

**Certificate** (:func:`certificate`, any degree h in (0, 1]). Against the profile's prices, consumer
i's best response over every history-dependent policy is the concave program over the history tree

    max sum_n pi(n) gamma^t(n) (beta(n) W_n)^h,   W_n = c(n) + R(n) y_parent(n) - q(n) y_n >= 0,

holdings y_n in their box. Weak duality with the multiplier pi(n) Lambda_k on node n's wealth
definition, the same Lambda_k for every node of class k (a valid choice), collapses the dual function
onto the lattice: per class the consumption term sup_W (A W^h - Lambda W) in closed form (A =
gamma^t beta^h; at h = 1 it is 0 when Lambda >= A and +inf otherwise), Lambda_k c_k, and the holding
bought at class k with coefficient s_k = rho_k (-Lambda_k q_k + sum_{w'} P(w'|w) Lambda_k' R_k')
(k' the child class), maximised at a holding limit. So

    L(Lambda) = sum_k rho_k [(1 - h) A_k (A_k h / Lambda_k)^(h/(1-h)) + Lambda_k c_k] + sum_k max(s_k hi, s_k lo)

bounds every policy's value for any Lambda > 0 (rho_k: the probability of reaching class k). At
h = 1 it is an LP (HiGHS); at h < 1 it is lowered by L-BFGS on log Lambda from the profile's marginal
utilities of money. The consumer's own value under the profile is computed exactly on the lattice;
regret = bound - own value, in money as :mod:`solvopt.games.economy_path` measures it. The
auctioneer's regret per class is the closed form of the other certificates.

**Construction** (:func:`forward_equilibrium`; degree h < 1: :func:`_degree`, holdings moved towards the
consumers' best responses read off the certificate's dual, as on a deterministic chain). Degree 1: the
asset at its cap in every period but the last (0 there), period 0 at uniform prices, and in every class
each consumer buying the asset with all it has up to the holding limit; each class's goods left after
the auctioneer's share clear as a Fisher market whose budgets follow the prices (a fixed point). Where
nobody can reach the limit and nobody spends, the whole price goes to the scarcest good (a corner: an
equilibrium for Leontief consumers); Cobb-Douglas consumers get rounds that re-solve the corner classes
of the first corner period with consumers indifferent between the asset and consumption (as on a
deterministic chain), the money value of investing taken from the last round's profile, averaged over
the next world state.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvopt.core.errors import ModelError, SolverError

from . import economy as ec
from .economy_horizon import MONEY_UNIT, PRICE_FLOOR, _fisher_prices, _indifferent_period, _no_check

MAX_CLASSES = 20000         # classes a lattice may hold (holdings below the limit multiply them)
INDIFFERENT_METHODS = ("lm", "trf")   # least_squares' methods for an indifferent class, tried in turn
SMOOTHING = (1e-2, 1e-4, 1e-6, 1e-8, 1e-10, 1e-12)   # the dual's smoothing, relative
DUAL_STEPS = 500            # L-BFGS iterations of the dual at degree h < 1
GUARANTEE = ("objective is a certified upper bound on the exploitability of the returned profile over the "
             "horizon's periods and every deviation the model allows: each consumer's holdings and bundles as any "
             "function of the history of world states (a Lagrangian dual bound on her concave program over the "
             "history tree, multipliers shared by the histories of a class, in money at period 0's prices), the "
             "auctioneer's prices on their feasible set (closed form); 0 only at an equilibrium")


@dataclass
class Lattice:
    """Classes of histories (module docstring) and the edges between them."""

    period: np.ndarray         # (K,)
    world: np.ndarray          # (K,) world state
    prob: np.ndarray           # (K,) probability that the history reaches the class
    carried: np.ndarray        # (K, N) holdings carried into the class
    parent: np.ndarray         # (E,) edge from class ...
    child: np.ndarray          # (E,) ... to class
    weight: np.ndarray         # (E,) P(w'|w)


def grow(econ, solve_class, check=_no_check):
    """The lattice of ``econ`` (a horizon) and a profile on it: ``solve_class(t, w, carried)`` returns the
    class's (prices (M,), asset price, holdings (N,), consumption (N, M)); a class's children are keyed
    by their world state and the holdings it buys. Returns (lattice, ec.Profile with K rows)."""
    T, N = econ.horizon, econ.n_consumers
    P = np.asarray(econ.transitions, dtype=float)
    period, world, prob, carried, parent, child, weight = [], [], [], [], [], [], []
    rows: list = []

    def add(t, w, y, pr):
        period.append(t), world.append(w), prob.append(pr), carried.append(y)
        if len(period) > MAX_CLASSES:
            raise NotImplementedError(f"markov-horizon: more than {MAX_CLASSES} classes of histories (holdings "
                                      "below the limit make each history its own class)")
        return len(period) - 1

    layer = [add(0, int(w), np.zeros(N), float(econ.initial[w])) for w in np.flatnonzero(econ.initial > 0)]
    for t in range(T):
        for k in layer:
            check()
            rows.append(solve_class(t, world[k], carried[k]))
        if t == T - 1:
            break
        index: dict = {}
        for k in layer:
            y = rows[k][2]
            for w2 in np.flatnonzero(P[world[k]] > 0):
                key = (int(w2), y.tobytes())
                if key not in index:
                    index[key] = add(t + 1, int(w2), y.copy(), 0.0)
                j = index[key]
                prob[j] += prob[k] * P[world[k], w2]
                parent.append(k), child.append(j), weight.append(P[world[k], w2])
        layer = list(index.values())
    lat = Lattice(np.array(period), np.array(world), np.array(prob), np.array(carried), np.array(parent, dtype=int),
                  np.array(child, dtype=int), np.array(weight))
    prof = ec.Profile(np.array([r[0] for r in rows]), np.array([[r[1]] for r in rows], dtype=float),
                      np.array([r[3] for r in rows]), np.array([r[2] for r in rows])[:, :, None])
    return lat, prof


def solution(lat) -> dict:
    """The lattice in a result's solution: per class its period, world state and reach probability,
    and the edges [parent, child] (the rows of prices, consumption, ... are the classes)."""
    return {"periods": lat.period.tolist(), "worlds": lat.world.tolist(), "probabilities": lat.prob.tolist(),
            "edges": np.stack([lat.parent, lat.child], axis=1).tolist()}


def endowment_value(econ, lat, prices) -> float:
    """sum over classes of rho gamma^t p . E(w): the money frame of the status (prices (K, M))."""
    E = econ.endowments[lat.world].sum(axis=1)
    return float(np.sum(lat.prob * econ.discount ** lat.period * np.einsum("km,km->k", prices, E)))


def uniform_endowment_value(econ) -> float:
    """:func:`endowment_value` at uniform prices over the chain's periods (no lattice needed)."""
    E = econ.endowments.sum(axis=1) @ np.full(econ.n_goods, econ.price_sum / econ.n_goods)
    d = np.asarray(econ.initial, dtype=float)
    total = 0.0
    for t in range(econ.horizon):
        total += econ.discount ** t * float(d @ E)
        d = d @ econ.transitions
    return total


# --- the certificate -----------------------------------------------------------------------------
def _dual_matrix(lat, q, R):
    """G (K, K) sparse: s = G Lambda, s_k the coefficient of the holding bought at class k."""
    from scipy import sparse
    K = len(lat.period)
    rows = np.concatenate([np.arange(K), lat.parent])
    cols = np.concatenate([np.arange(K), lat.child])
    vals = np.concatenate([-lat.prob * q, lat.prob[lat.parent] * lat.weight * R[lat.child]])
    return sparse.csr_matrix((vals, (rows, cols)), shape=(K, K))


def _box(s, lo, hi):
    with np.errstate(invalid="ignore"):
        return np.where(s > 0, s * hi, np.where(s < 0, s * lo, 0.0))


def dual_value(rho, A, c, G, lo, hi, h, lam) -> float:
    """L(Lambda) (module docstring): >= every policy's value for any Lambda > 0 (Lambda >= A at h = 1)."""
    lam = np.asarray(lam, dtype=float)
    if np.any(lam <= 0) or (h == 1.0 and np.any(lam < A)):
        return np.inf
    if h < 1:
        with np.errstate(over="ignore", divide="ignore"):
            own = np.sum(rho * (1 - h) * A * np.where(A > 0, (A * h / lam) ** (h / (1 - h)), 0.0))
    else:
        own = 0.0
    box = _box(G @ lam, lo, hi)
    return float(own + rho @ (lam * c) + box.sum()) if np.all(np.isfinite(box)) else np.inf


def _lp_dual(rho, A, c, G, lo, hi):
    """The least L(Lambda) at h = 1: an LP in (Lambda, tau), tau_k >= the box term of s_k."""
    from scipy import sparse

    from .economy_deviation import highs_lp
    K = len(A)
    eye = sparse.identity(K, format="csr")
    blocks, rhs = [], []
    for bound in (hi, lo):              # tau >= s bound; an infinite bound: s on the side that keeps it finite
        if np.isfinite(bound):
            blocks.append(sparse.hstack([G * bound, -eye]))
        else:
            blocks.append(sparse.hstack([G * np.sign(bound), sparse.csr_matrix((K, K))]))
        rhs.append(np.zeros(K))
    res = highs_lp(np.concatenate([rho * c, np.ones(K)]), sparse.vstack(blocks).tocsr(), np.concatenate(rhs),
                   np.concatenate([A, np.full(K, -np.inf)]), np.full(2 * K, np.inf))
    if res is None:
        return np.inf
    return dual_value(rho, A, c, G, lo, hi, 1.0, np.maximum(res[0][:K], A))


def _lbfgs_dual(rho, A, c, G, lo, hi, h, lam0, check):
    """The least L(Lambda) found from lam0 by L-BFGS on log Lambda, on the box terms smoothed as
    lo s + (hi - lo) tau softplus(s / tau) (>= the exact term) with tau shrinking; every iterate's exact
    L is a valid bound and the least is kept."""
    from scipy.optimize import minimize
    best = [dual_value(rho, A, c, G, lo, hi, h, lam0), lam0]
    e = h / (1 - h)
    s_scale = max(float(np.max(np.abs(G @ lam0))), 1e-300)

    def f(z, tau):
        check()
        with np.errstate(over="ignore"):
            lam = np.exp(z)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            Wstar = np.where(A > 0, (A * h / lam) ** (1 / (1 - h)), 0.0)
            own = np.sum(rho * (1 - h) * A * np.where(A > 0, (A * h / lam) ** e, 0.0))
        s = G @ lam
        exact = own + rho @ (lam * c) + _box(s, lo, hi).sum()
        if not np.isfinite(exact):
            return 1e300, np.zeros_like(z)
        if exact < best[0]:
            best[0], best[1] = float(exact), lam
        x = s / tau
        v = own + rho @ (lam * c) + np.sum(lo * s + (hi - lo) * tau * np.logaddexp(0.0, x))
        slope = lo + (hi - lo) / (1 + np.exp(-np.clip(x, -700, 700)))
        g = rho * (c - Wstar) + G.T @ slope
        return float(v), g * lam

    z = np.log(lam0)
    for eps in SMOOTHING:
        z = minimize(f, z, args=(eps * s_scale,), jac=True, method="L-BFGS-B",
                     options={"maxiter": DUAL_STEPS, "ftol": 1e-16, "gtol": 1e-300, "maxcor": 30}).x
    return best[0], best[1]


def consumer_bounds(econ, lat, prof, check=_no_check, primal=None):
    """Per consumer: the profile's value and the certified bound on every policy's (utility units), and
    the regret in money (module docstring); (value, upper, regret). At h < 1 ``primal`` (a dict), when
    given, gets the dual's primal per class and consumer: "wealth" (A_k h / Lambda_k)^(1 / (1 - h)) and
    "slope" s_k / (rho_k Lambda_k q_k), the sign of the holding's coefficient (0 where q_k = 0)."""
    h = float(econ.degree)
    N = econ.n_consumers
    p, q = prof.prices, prof.asset_prices[:, 0]
    disc = econ.discount ** lat.period
    rho = lat.prob
    e = econ.endowments[lat.world]
    c = np.einsum("km,knm->kn", p, e)
    R = econ.returns_at(lat.world, p)[:, 0].astype(float)
    R[lat.period == 0] = 0.0
    beta = ec.bang_per_buck(econ, p)
    u = econ.utility.value(prof.consumption) ** h                         # (K, N)
    W = c + R[:, None] * lat.carried - q[:, None] * prof.portfolio[:, :, 0]
    G = _dual_matrix(lat, q, R)
    lo = -float(econ.borrowing_limit[0])
    hi = float(econ.holding_limit[0])
    value, upper = np.empty(N), np.empty(N)
    for i in range(N):
        check()
        A = disc * beta[:, i] ** h
        value[i] = float(np.sum(rho * disc * u[:, i]))
        if h == 1.0:
            upper[i] = _lp_dual(rho, A, c[:, i], G, lo, hi)
        else:
            scale = max(float(np.max(np.abs(W[:, i]))), 1e-300)
            lam0 = A * h * np.maximum(W[:, i], 1e-9 * scale) ** (h - 1)
            upper[i], lam = _lbfgs_dual(rho, A, c[:, i], G, lo, hi, h, lam0, check)
            if primal is not None:
                primal.setdefault("wealth", np.zeros((len(rho), N)))[:, i] = np.where(
                    A > 0, (A * h / lam) ** (1 / (1 - h)), 0.0)
                with np.errstate(divide="ignore", invalid="ignore"):
                    primal.setdefault("slope", np.zeros((len(rho), N)))[:, i] = np.where(
                        q > 0, (G @ lam) / (rho * lam * q), 0.0)
        upper[i] = max(upper[i], value[i])
    start = lat.period == 0
    u0 = rho[start] @ u[start] / rho[start].sum()
    b0 = rho[start] @ beta[start] / rho[start].sum()
    gain = np.maximum(upper - value, 0.0)
    regret = ((u0 + gain) ** (1 / h) - u0 ** (1 / h)) / b0
    return value, upper, regret


def certificate(econ, lat, prof, check=_no_check, primal=None):
    """Metrics and :class:`Exploitability` of a profile on the lattice (module docstring): keys as
    :func:`solvopt.games.economy_horizon.degree_metrics`'; ``primal`` as :func:`consumer_bounds`'."""
    from .certificate import Exploitability
    from .economy import box_violation
    value, upper, regret = consumer_bounds(econ, lat, prof, check, primal)
    p, q = prof.prices, prof.asset_prices[:, 0]
    Y = prof.portfolio[:, :, 0].sum(axis=1)
    z = (prof.consumption.sum(axis=1) - econ.endowments[lat.world].sum(axis=1)
         - lat.carried.sum(axis=1)[:, None] * econ.asset_bundles[lat.world, 0])
    gap = econ.price_sum * z.max(axis=1) + econ.asset_price_max * np.maximum(Y, 0.0) - (np.einsum("km,km->k", p, z)
                                                                                        + q * Y)
    weight = lat.prob * econ.discount ** lat.period
    auctioneer = float(weight @ np.maximum(gap, 0.0))
    e = econ.endowments[lat.world]
    R = econ.returns_at(lat.world, p)[:, 0]
    W = np.einsum("km,knm->kn", p, e) + R[:, None] * lat.carried - q[:, None] * prof.portfolio[:, :, 0]
    spend = np.einsum("km,knm->kn", p, prof.consumption)
    scale = np.maximum(1.0, np.einsum("km,knm->kn", p, e))
    violation = float(np.max(np.maximum(np.maximum(spend - W, -W), 0.0) / scale))
    box = box_violation(econ, p, q, prof.portfolio)
    supply = e.sum(axis=1) + lat.carried.sum(axis=1)[:, None] * econ.asset_bundles[lat.world, 0]
    total = float(regret.sum() + auctioneer)
    ev = endowment_value(econ, lat, p)
    per_player = np.append(regret, auctioneer)
    m = {"exploitability": total, "exploitability_lower": auctioneer, "per_player": per_player,
         "consumer_regret": float(regret.sum()), "auctioneer_regret": auctioneer, "budget_violation": violation,
         "box_violation": box, "excess_demand": float(np.max(np.maximum(z, 0.0) / supply)),
         "horizon_endowment_value": ev, "horizon_relative_exploitability": total / ev, "classes": int(len(lat.period)),
         "deviation_bounds": ["lattice duality"] * econ.n_consumers}
    return m, Exploitability(total, auctioneer, per_player, violation=max(violation, box))


# --- the construction (degree 1) -----------------------------------------------------------------
FIXED_POINT_STEPS = 100     # a few reach 1e-8 (the Eisenberg-Gale duals are not more accurate)


def _clear_class(econ, e, bundle, carried, y, q, check=_no_check):
    """Prices and consumption of a class with holdings ``y`` bought at ``q``: the budgets p . e_i +
    (p . bundle) carried_i - q y_i follow the prices, so the Fisher market on the goods left after the
    auctioneer's share is a fixed point, iterated, then polished by Levenberg-Marquardt on
    Fischer-Burmeister(p_j / price_sum, relative excess supply_j) and the prices' sum (the Eisenberg-Gale
    duals of the iterations are accurate to about 1e-9 only). SolverError when it does not settle."""
    from scipy.optimize import least_squares
    total, N = econ.price_sum, econ.n_consumers
    left = e.sum(axis=0) + carried.sum() * bundle - q * y.sum() / total
    if left.min() <= 0:
        raise SolverError("markov-horizon: the auctioneer's share of the asset's price exceeds a good's supply")

    def budgets(p):
        return np.maximum(e @ p + (p @ bundle) * carried - q * y, 0.0)

    p = np.full(len(left), total / len(left))
    for _ in range(FIXED_POINT_STEPS):
        check()
        new = _fisher_prices(econ.utility, budgets(p), left, check)
        new = total * new / new.sum()
        done = np.max(np.abs(new - p)) <= 1e-8 * total          # the polish does the rest
        p = new
        if done:
            break

    def residual(p):
        check()
        d = econ.utility.demand(np.maximum(p, 1e-300)[None], budgets(p)).reshape(N, -1).sum(axis=0)
        g, r = (left - d) / left, p / total
        return np.append(r + g - np.sqrt(r ** 2 + g ** 2), (p.sum() - total) / total)

    if np.abs(residual(p)).max() > 1e-13:
        p = least_squares(residual, p, method="lm", xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=2000).x
        if np.abs(residual(p)).max() > 1e-11:
            raise SolverError("markov-horizon: a class's prices did not settle (the budgets' fixed point)")
    p = np.maximum(total * p / p.sum(), PRICE_FLOOR * total)
    p = total * p / p.sum()
    return p, econ.utility.demand(p[None], budgets(p)).reshape(N, -1)


def _class_period(econ, e, bundle, carried, q, check=_no_check):
    """Prices, holdings, consumption of one class with the asset at q: every consumer buys it with all
    it has up to the holding limit (none at q = 0) and spends the rest, the goods left after the
    auctioneer's share clear as a Fisher market; returns (p, y, x, corner), corner True where nobody
    reaches the limit and the whole price is on the scarcest good (module docstring)."""
    N, total, h = econ.n_consumers, econ.price_sum, float(econ.holding_limit[0])
    supply = e.sum(axis=0) + carried.sum() * bundle

    def cash(p):
        return e @ p + (p @ bundle) * carried

    if q == 0:
        y = np.zeros(N)
        p, x = _clear_class(econ, e, bundle, carried, y, 0.0, check)
        return p, y, x, False
    full = np.full(N, h)
    if (supply - q * full.sum() / total).min() > 0:            # everyone at the limit
        try:
            p, x = _clear_class(econ, e, bundle, carried, full, q, check)
        except SolverError:
            p = None
        if p is not None and np.all(cash(p) >= q * h * (1 - 1e-12)):
            return p, full, x, False
    p = np.zeros(len(supply))                                   # nobody reaches the limit nor spends
    p[np.argmin(supply)] = total
    if np.all(cash(p) / q <= h):
        p = np.maximum(p, PRICE_FLOOR * total)
        p = total * p / p.sum()
        y = np.minimum(cash(p) / q, h)
        return p, y, econ.utility.demand(p[None], np.maximum(cash(p) - q * y, 0.0)).reshape(N, -1), True
    raise NotImplementedError("markov-horizon: a class where only some consumers reach the holding limit at the "
                              "asset's cap is not built yet")


def _investing_values(econ, lat, prof):
    """(K, N) kappa: the money value at a class of a unit invested there, gamma E[R' mu'] / q, with mu the
    value of money along the profile (beta where the consumer spends, the larger of beta and kappa where
    it invests all), in the certificate's unit; computed backward over the lattice."""
    p, q = prof.prices, prof.asset_prices[:, 0]
    beta = ec.bang_per_buck(econ, p) / ec.money_rates(econ)
    R = econ.returns_at(lat.world, p)[:, 0]
    W = (np.einsum("km,knm->kn", p, econ.endowments[lat.world]) + R[:, None] * lat.carried
         - q[:, None] * prof.portfolio[:, :, 0])
    spends = W > 1e-9 * np.maximum(econ.price_sum / MONEY_UNIT, np.abs(W))
    K, N = W.shape
    kappa, mu = np.zeros((K, N)), np.zeros((K, N))
    for t in range(int(lat.period.max()), -1, -1):
        at = np.flatnonzero(lat.period == t)
        edges = np.flatnonzero(lat.period[lat.parent] == t)
        flow = np.zeros((K, N))
        np.add.at(flow, lat.parent[edges], (lat.weight[edges] * R[lat.child[edges]])[:, None] * mu[lat.child[edges]])
        with np.errstate(divide="ignore", invalid="ignore"):
            kappa[at] = np.where(q[at, None] > 0, econ.discount * flow[at] / q[at, None], 0.0)
        mu[at] = np.where(spends[at], beta[at], np.maximum(beta[at], kappa[at]))
    return kappa


def forward_equilibrium(econ, rounds=8, tolerance=1e-9, *, record=None, check=_no_check, note=None):
    """A profile of the stochastic finite-horizon economy ``econ`` (degree 1, one asset paying a
    bundle) on its lattice, built class by class and certified (module docstring). Returns (lattice,
    profile, metrics); hooks and rounds as :func:`solvopt.games.economy_horizon.forward_equilibrium`
    (``record`` gets the pair (lattice, profile))."""
    from solvopt.core.threads import one_blas_thread
    with one_blas_thread():          # small systems: a threaded BLAS on a busy machine was 10-20x slower
        return (_forward if econ.degree == 1.0 else _degree)(econ, rounds, tolerance, record, check, note)


def _forward(econ, rounds, tolerance, record, check, note):
    """The body of :func:`forward_equilibrium`."""
    if econ.n_assets != 1 or econ.asset_bundles is None:
        raise NotImplementedError("forward_equilibrium: one asset paying a bundle of goods only")
    if econ.degree != 1.0:
        raise ModelError("markov-horizon builds stochastic economies of degree 1 only")
    T, N, M = econ.horizon, econ.n_consumers, econ.n_goods
    cap, total = econ.asset_price_max, econ.price_sum
    lo, hi = -float(econ.borrowing_limit[0]), float(econ.holding_limit[0])
    overrides: dict = {}
    corners: list = []

    def solve_class(t, w, carried):
        e = econ.endowments[w]
        if t == 0:
            p0 = np.full(M, total / M)
            cash = e @ p0
            y = np.clip(cash / cap, lo, hi)
            return p0, cap, y, econ.utility.demand(p0[None], cash - cap * y).reshape(N, M)
        q = cap if t < T - 1 else 0.0
        key = (t, w, carried.tobytes())
        if key in overrides:
            return overrides[key]
        p, y, x, corner = _class_period(econ, e, econ.asset_bundles[w, 0], carried, q, check)
        if corner:
            corners.append(key)
        return p, q, y, x

    def certified(k):
        if note is not None:
            note(f"markov-horizon: round {k}, building the lattice")
        lat, prof = grow(econ, solve_class, check)
        m, expl = certificate(econ, lat, prof, check)
        m["rounds"] = k
        stop = record is not None and record(k, (lat, prof), m, expl)
        return lat, prof, m, stop

    lat, prof, metrics, stop = certified(0)
    best = (lat, prof, metrics)
    latest = (lat, prof)
    for k in range(rounds if corners and econ.utility.kind != "leontief" else 0):
        if stop or metrics["horizon_relative_exploitability"] <= tolerance:
            break
        first = min(key[0] for key in corners)
        if note is not None:
            note(f"markov-horizon: round {k + 1} of {rounds}, period {first} with indifferent consumers")
        lat_l, prof_l = latest
        kappa = _investing_values(econ, lat_l, prof_l)
        ok, neighbour = True, None
        for key in sorted({c for c in corners if c[0] == first}):
            t, w, carried = key[0], key[1], np.frombuffer(key[2])
            j = np.flatnonzero((lat_l.period == t) & (lat_l.world == w)
                               & np.all(lat_l.carried == carried, axis=1))[0]
            q = prof_l.asset_prices[j, 0]
            spent = np.einsum("m,nm->n", prof_l.prices[j], prof_l.consumption[j])
            # from the last round's solution where there is one, or the class solved just before, else the
            # continuation; trust regions where Levenberg-Marquardt stalls
            tries = [("lm", (prof_l.prices[j], spent))] if key in overrides else []
            tries += [("lm", neighbour)] if neighbour is not None and not tries else []
            for method, warm in tries + [(m, None) for m in INDIFFERENT_METHODS]:
                p, y, x, res = _indifferent_period(econ, econ.endowments[w], econ.asset_bundles[w, 0], carried,
                                                   q, kappa[j], check, method, warm)
                if res <= 1e-8:
                    break
            if res > 1e-8 or np.any(y < lo - 1e-9) or np.any(y > hi + 1e-9):
                ok = False
                break
            overrides[key] = (p, q, np.clip(y, lo, hi), x)
            neighbour = (p, np.einsum("m,nm->n", p, x))
        if not ok:
            break
        corners.clear()
        lat, prof, m, stop = certified(k + 1)
        latest = (lat, prof)
        corners.extend(key for key in overrides if key[0] == first)
        if m["exploitability"] < best[2]["exploitability"]:
            best = (lat, prof, m)
        metrics = m
    return best


# --- the construction at degree h < 1 ------------------------------------------------------------
SLOPE_ZERO = 1e-6           # a holding's relative dual coefficient beyond this puts it at the box's end


def _best_holdings(econ, lat, prof, primal):
    """(K, N) each consumer's holdings in the dual's primal (:func:`consumer_bounds`): at the box's end
    where the holding's coefficient has a sign (beyond SLOPE_ZERO), else forward over the lattice
    y_k = (c_k + R_k y_parent - W_k) / q_k in the box (the parents' probability-weighted mean where a
    class has several; none where the asset costs nothing), W_k the primal's wealth."""
    wealth, slope = primal["wealth"], primal["slope"]
    p, q = prof.prices, prof.asset_prices[:, 0]
    c = np.einsum("km,knm->kn", p, econ.endowments[lat.world])
    R = econ.returns_at(lat.world, p)[:, 0]
    lo, hi = -float(econ.borrowing_limit[0]), float(econ.holding_limit[0])
    K, N = c.shape
    y, carried = np.zeros((K, N)), np.zeros((K, N))
    mass = np.zeros(K)
    for t in range(int(lat.period.max()) + 1):
        at = np.flatnonzero(lat.period == t)
        own = np.where(mass[at, None] > 0, carried[at] / np.maximum(mass[at, None], 1e-300), 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            y[at] = np.where(q[at, None] > 0, (c[at] + R[at, None] * own - wealth[at]) / q[at, None], 0.0)
        y[at] = np.clip(np.nan_to_num(y[at]), lo, hi)
        y[at] = np.where(slope[at] > SLOPE_ZERO, hi, np.where(slope[at] < -SLOPE_ZERO, lo, y[at]))
        edges = np.flatnonzero(lat.period[lat.parent] == t)
        w = lat.prob[lat.parent[edges]] * lat.weight[edges]
        np.add.at(carried, lat.child[edges], w[:, None] * y[lat.parent[edges]])
        np.add.at(mass, lat.child[edges], w)
    return y


def _degree(econ, rounds, tolerance, record, check, note):
    """A profile at degree h < 1 on the lattice, as :func:`solvopt.games.economy_horizon.degree_equilibrium`
    builds one on a path: the asset at its cap in every period but the last (0 there); each class's
    holdings none at first, then the best profile's moved by a step towards each consumer's best response
    against its prices (the certificate's dual primal, :func:`_best_holdings`), the step halved while the
    certified exploitability does not fall and doubled (up to 1) when it does; every class's goods
    cleared as a Fisher market with its budgets (:func:`_clear_class`). A new class takes the move of
    the best lattice's class of its period and world state whose carried holdings are nearest. Returns
    the best certified (lattice, profile, metrics); a lattice that grows past MAX_CLASSES or a class
    that does not clear ends the rounds."""
    if econ.n_assets != 1 or econ.asset_bundles is None:
        raise NotImplementedError("forward_equilibrium: one asset paying a bundle of goods only")
    T, N = econ.horizon, econ.n_consumers
    cap = econ.asset_price_max
    best, step = None, 1.0
    old = old_y = target = None

    def solve_class(t, w, carried):
        q = cap if t < T - 1 else 0.0
        if old is None or q == 0:
            y = np.zeros(N)
        else:
            same = np.flatnonzero((old.period == t) & (old.world == w))
            j = same[np.argmin(np.abs(old.carried[same] - carried).sum(axis=1))]
            y = old_y[j] + step * (target[j] - old_y[j])
        p, x = _clear_class(econ, econ.endowments[w], econ.asset_bundles[w, 0], carried, y, q, check)
        return p, q, y, x

    for k in range(rounds + 1):
        check()
        if note is not None:
            note(f"markov-horizon: round {k} of {rounds} (degree {econ.degree:.6g}, lattice)")
        try:
            lat, prof = grow(econ, solve_class, check)
        except (NotImplementedError, SolverError):
            if best is None:
                raise
            break                       # too many classes, or a class that does not clear: keep the best
        primal: dict = {}
        m, expl = certificate(econ, lat, prof, check, primal)
        m["rounds"] = k
        stop = record is not None and record(k, (lat, prof), m, expl)
        if stop or m["horizon_relative_exploitability"] <= tolerance:
            best = (lat, prof, m) if best is None or m["exploitability"] < best[2]["exploitability"] else best
            break
        if best is None or m["exploitability"] < best[2]["exploitability"]:
            best, step = (lat, prof, m), step if best is None else min(1.0, 2 * step)
            old, old_y, target = lat, prof.portfolio[:, :, 0], _best_holdings(econ, lat, prof, primal)
        else:
            step /= 2                   # a line search from the best profile towards its best responses
    return best
