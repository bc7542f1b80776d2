"""A certified lower bound on the exploitability of *every* profile of a floors-and-caps economy.

The certificates of :mod:`solvopt.games.economy_clip` bound one profile's exploitability from above and
below. This module bounds the least exploitability that any profile can have, so that a tolerance no
profile can reach is shown unreachable rather than left unmet. It covers finite-horizon economies on a
deterministic chain whose consumers' goods endowments sit at the floor in every period after the start
(a short position then costs nothing: the payout cannot push the endowment below the floor), with one
asset paying a bundle of goods, utilities of degree 1 whose bang per buck has a bounded range on the
price simplex (Leontief with positive requirements), and budget-feasible profiles: prices on their
feasible set, every consumer's spending within her wealth and her wealth >= 0.

**The money conversion.** A consumer's regret is in money at her period-0 bang per buck beta_0, and a
unit of money at period t is worth beta_t to her, so a change dW_t of her wealth at t is worth
gamma^t (beta_t / beta_0) dW_t. For Leontief utilities beta(p) = 1 / (c . p) lies in
[1 / (P max_j c_j), 1 / (P min_j c_j)] (P the price sum), so any two of her bang-per-buck values have a
ratio in [u_i, 1 / u_i], u_i = min_j c_ij / max_j c_ij. A deviation that only raises wealth therefore
gains at least u_i times its discounted wealth gains, in money.

**Notation.** B the short limit, H the holding limit, q_max the asset's price cap, phi = P min_j floor_j
(a lower bound on every consumer's cash after the start), L the largest payout in money,
P max_j (cap_j - floor_j), s the saturating holding (every good at its cap), d the largest holding that
saturates no good (and costs at most phi), b_min the smallest bundle entry, G_i = gamma u_i P b_min, and
beta_lo,i = 1 / (P max_j c_ij) the least bang per buck consumer i can have (her largest is beta_lo,i / u_i).

**Case C: some consumer i holds y_a > 0 at a period a >= 1 whose asset price q_a >= theta.** Her
deviation sells and shorts to -B at a, gaining q_a (B + y_a) >= B theta at a. The payout of y_a is lost
at a + 1; where her profile wealth there cannot absorb it (she invests more than phi), she also shorts at
a + 1 when q s > phi there (gaining q (B + y) - L > B phi / s - L > 0), or sells down to s (which keeps
the next payout, all goods at their cap), and so on; the chain ends at the first period that absorbs the
loss, with a wealth change >= -L. Anchored at beta_a, the ending loss is worth at most gamma L / u_i per
unit of beta_a, so her regret is at least gamma^a u_i (B theta - gamma L / u_i) (at least
gamma^(T-1) u_i B theta when a = T - 1, where nothing follows).

**Case N: no consumer is long at a period with q_t >= theta.** Each consumer's combined deviation takes,
in every period t in [1, T - 2], the best of four local moves, none of which lowers her wealth in any
other period: short to -B where she holds y <= 0 (gains q (B + y), nothing lost: the payout stays at
the floor), sell down to s where y > s (gains q (y - s)), buy up to d where y < d (costs q (d - y) at
t and pays at least P b_min (d - max(y, 0)) at t + 1), or, where y <= 0, s <= H and q s <= phi
(affordable from any cash), buy up to s (costs q (s - y) and takes every good from its floor to its cap at t + 1:
pays at least P min_j (cap_j - floor_j)). A move gaining A in money at t and paying B' >= 0
at t + 1 is worth gamma^t (beta_t A + gamma beta_t+1 B') / beta_0 in period 0's money. With beta_t+1 >=
beta_lo and x = beta_t / beta_lo in [1, 1 / u_i], the best move is worth at least
(beta_lo / beta_0) max(x A + gamma B') >= u_i max(x A + gamma B') (the max over the moves, at least 0,
and beta_0 <= beta_lo / u_i); she knows the profile's prices, so she takes the move best at her own x,
and the least over x of that max, in terms of qt = u_i x q in [u_i q, q], is

    h_i(q, y_i) = min over qt in [u_i q, q] of g_i(qt, y_i),

g_i(qt, y) the largest of 0, qt (B + y) (short), qt (y - s) (sell), G_i (d - max(y, 0)) - qt (d - y)
(buy up to d) and Gs_i - qt (s - y) (buy up to s; Gs_i = gamma u_i P min_j (cap_j - floor_j)). With the
auctioneer's regret at t, at least q_max max(Y, 0) - q Y (Y the net holding), a period contributes at least

    F(q, y) = sum_i h_i(q, y_i) + A(q, Y),

and the least of F over the period's asset price and holdings is computed by mixed-integer programs
(HiGHS) over a partition of [0, theta): one regime binary per consumer and holding piece, the terms
increasing in qt taken at u_i times the interval's left end and the decreasing ones at its right end, the
MIP's dual bound kept. Where q >= theta nobody is long, and the short moves with the auctioneer give at
least theta B sum_i u_i. So the exploitability is at least that least value times
sum_{t=1}^{T-2} gamma^t.

**Both cases along the horizon.** Let tau be the first period at which some consumer is long at an asset
price >= theta (T if there is none). Every period before tau is case N's, and the consumer long at tau
adds her chain, which starts after the local moves have ended; so the exploitability is at least
m sum_{t=1}^{min(tau-1, T-2)} gamma^t + c_tau (m case N's least value of a period, c_tau case C's credit at
tau, 0 at T), and the bound is the least of that over tau, maximised over theta. Divided by the largest
endowment value any profile can have (P times the most of any good, discounted over the periods) it
bounds every profile's relative exploitability from below.

``tests/test_games_economy_clip_lower.py`` checks each deviation under the true clipped dynamics against
the gain the argument claims, the MIPs against the period's function evaluated directly, and the whole
bound against certified profiles of small economies.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solvopt.core.errors import ModelError

SAFETY = 1e-6               # subtracted per consumer from every MIP dual bound (scaled units): above HiGHS tolerances
INTERVALS = 32              # first partition of [0, q_max] for the period bound
REFINE = 24                 # further bisections of the interval that holds the least bound


def _no_check() -> None:
    """The default stop check outside a solve: never stop."""


@dataclass(frozen=True)
class Constants:
    """The economy's numbers the argument uses (module docstring's notation), in its own units."""

    u: np.ndarray           # (N,) least ratio of two bang-per-buck values of each consumer
    G: np.ndarray           # (N,) gamma u_i P b_min: a unit bought at t pays at least this at t's bang per buck
    Gs: np.ndarray          # (N,) gamma u_i P min_j (cap_j - floor_j): what buying up to s from y <= 0 pays
    gamma: float
    T: int
    B: float                # short limit
    H: float                # holding limit
    q_max: float
    phi: float              # least cash after the start
    L: float                # largest payout in money
    s: float                # saturating holding
    d: float                # largest holding that saturates no good and costs at most phi


@dataclass
class LeastExploitability:
    """A certified lower bound on the exploitability of every budget-feasible profile (money at period
    0's bang per buck, as the certificate) and the pieces of the argument."""

    value: float
    relative: float                      # value / endowment_value_max: below every profile's relative value
    endowment_value_max: float           # the largest discounted endowment value of any profile
    theta: float
    first_long: int                      # the worst tau: the first period with a consumer long at q >= theta
    chain_credit: float                  # case C's least regret at that period, discounted to period 0
    period_minimum: float                # case N's least value of one period (before discounting)
    intervals: list = field(default_factory=list)   # [(q_lo, q_hi, bound)] of case N below theta


def constants(econ) -> Constants:
    """Check the argument's hypotheses on ``econ`` (a one-line ModelError naming the first that fails) and
    return its numbers."""
    from .economy_horizon import _path
    if econ.endowment_floor is None or econ.endowment_cap is None:
        raise ModelError("least_exploitability: the economy has no endowment floor and cap")
    if econ.horizon is None or econ.horizon < 3:
        raise ModelError("least_exploitability: needs a finite horizon of at least 3 periods")
    worlds = _path(econ)
    if float(econ.degree) != 1.0:
        raise ModelError(f"least_exploitability: utilities of degree 1 only (this economy: {econ.degree})")
    if getattr(econ.utility, "kind", None) != "leontief" or not np.all(econ.utility.weights > 0):
        raise ModelError("least_exploitability: needs Leontief utilities with positive requirements (a bounded "
                         "range of the bang per buck); Cobb-Douglas consumers' is unbounded")
    if econ.asset_bundles is None or econ.n_assets != 1:
        raise ModelError("least_exploitability: needs one asset paying a bundle of goods")
    floor = np.broadcast_to(np.asarray(econ.endowment_floor, dtype=float), (econ.n_goods,))
    cap = np.broadcast_to(np.asarray(econ.endowment_cap, dtype=float), (econ.n_goods,))
    later = econ.endowments[worlds[1:]]
    if not np.allclose(later, floor, rtol=0.0, atol=1e-12 * float(cap.max())):
        raise ModelError("least_exploitability: every endowment after the start must sit at the floor "
                         "(so that a short position costs nothing)")
    b = econ.asset_bundles[worlds[1:], 0]                      # (T-1, M) the bundles paid at periods 1..T-1
    if np.any(b < 0):
        raise ModelError("least_exploitability: needs an asset paying nonnegative bundles")
    c = econ.utility.weights
    P, room = float(econ.price_sum), cap - floor
    with np.errstate(divide="ignore"):
        reach = np.where(b > 0, room / b, np.inf)              # the holding at which each good reaches its cap
    s = float(np.max(np.where(np.isfinite(reach), reach, 0.0)))
    phi = P * float(floor.min())
    q_max = float(econ.asset_price_max)
    if not q_max > 0:
        raise ModelError("least_exploitability: needs an asset price cap > 0")
    d = float(min(reach.min(), phi / q_max, float(econ.holding_limit[0])))
    u = c.min(axis=1) / c.max(axis=1)
    gamma = float(econ.discount)
    return Constants(u=u, G=gamma * u * P * float(b.min()), Gs=gamma * u * P * float(room.min()), gamma=gamma,
                     T=int(econ.horizon),
                     B=float(econ.borrowing_limit[0]), H=float(econ.holding_limit[0]), q_max=q_max, phi=phi,
                     L=P * float(room.max()), s=s, d=d)


# --- case N: one period -----------------------------------------------------------------------------------
def auctioneer_gain(k: Constants, q: float, Y: float) -> float:
    """The auctioneer's least regret in a period with asset price q and net holding Y: q_max max(Y, 0) - q Y."""
    return float(k.q_max * max(Y, 0.0) - q * Y)


def can_saturate(k: Constants, q: float) -> bool:
    """Whether buying up to the saturating holding s is a move at asset price q: inside the holding limit and
    affordable from any cash after the start (q s <= phi)."""
    return k.s <= k.H and q * k.s <= k.phi


def local_moves(k: Constants, i: int, q: float, y: float) -> list:
    """Consumer i's local moves at asset price q from holding y (module docstring, case N), each
    (intercept, slope, target): worth intercept + slope qt in period 0's money (per unit of gamma^t, at
    beta_lo / beta_0 = u_i) when her bang per buck makes the price qt = u_i x q."""
    moves = []
    if y <= 0:
        moves.append((0.0, k.B + y, -k.B))                                      # short to -B
    if y > k.s:
        moves.append((0.0, y - k.s, k.s))                                       # sell down to s
    if y < k.d:
        moves.append((k.G[i] * (k.d - max(y, 0.0)), -(k.d - y), k.d))           # buy up to d
    if y <= 0 and can_saturate(k, q):
        moves.append((k.Gs[i], -(k.s - y), k.s))                                # buy up to s
    return moves


def least_gains(k: Constants, q: float, y) -> np.ndarray:
    """(N,) h_i(q, y_i) = min over qt in [u_i q, q] of g_i(qt, y_i): what consumer i's best local move is sure
    of in period 0's money (per unit of gamma^t) whatever her bang per buck. g_i is convex in qt (a largest
    of lines), so the least is at an end of the range or where two of its lines cross."""
    y = np.asarray(y, dtype=float)
    out = np.empty(len(y))
    for i, yi in enumerate(y):
        lines = [(0.0, 0.0)] + [(a, b) for a, b, _ in local_moves(k, i, q, yi)]      # keeping her holding: 0
        lo, hi = k.u[i] * q, q
        points = [lo, hi] + [(a2 - a1) / (b1 - b2) for (a1, b1) in lines for (a2, b2) in lines if b1 != b2]
        points = [t for t in points if lo <= t <= hi]
        out[i] = min(max(a + b * t for a, b in lines) for t in points)
    return out


def period_value(k: Constants, q: float, y) -> float:
    """F(q, y) = sum_i h_i(q, y_i) + the auctioneer's least regret: what one period of case N is sure of,
    per unit of gamma^t, in money at period 0's bang per buck."""
    y = np.asarray(y, dtype=float)
    return float(least_gains(k, q, y).sum() + auctioneer_gain(k, q, float(y.sum())))


def _scaled(k: Constants) -> tuple[Constants, float]:
    """The constants in units where the holdings' range and the asset's price cap are 1 (so the MIPs see
    numbers near 1 at any scale of the data) and the money unit that brings values back."""
    h = max(k.B, k.H)
    money = k.q_max * h
    return Constants(u=k.u, G=k.G / k.q_max, Gs=k.Gs / money, gamma=k.gamma, T=k.T, B=k.B / h, H=k.H / h, q_max=1.0,
                     phi=k.phi / money, L=k.L / money, s=k.s / h, d=k.d / h), money


def period_bound(k: Constants, q_lo: float, q_hi: float) -> float:
    """A certified lower bound on min F(q, y) over q in [q_lo, q_hi] and holdings in their box: a MIP with one
    regime binary per consumer and piece of g (short side, below d, up to s, beyond s), each term increasing
    in the consumer's price qt taken at u_i q_lo and each decreasing one at q_hi (qt ranges over
    [u_i q, q]); HiGHS's dual bound, less a safety margin."""
    ks, money = _scaled(k)
    lo_q, hi_q = q_lo / k.q_max, q_hi / k.q_max
    N = len(ks.u)
    pieces = [(-ks.B, 0.0), (0.0, ks.d), (ks.d, ks.s), (ks.s, ks.H)]
    pieces = [(max(a, -ks.B), min(b, ks.H)) for a, b in pieces]
    nv = N * 9 + 1                                   # per consumer 4 regime binaries, 4 holdings, a cost; A
    z = lambda i, r: 9 * i + r                       # noqa: E731
    yv = lambda i, r: 9 * i + 4 + r                  # noqa: E731
    cost = lambda i: 9 * i + 8                       # noqa: E731
    lo, hi = np.full(nv, -np.inf), np.full(nv, np.inf)
    integ, obj = np.zeros(nv), np.zeros(nv)
    rows, rl, ru = [], [], []

    def add(coef: dict, low=0.0, up=np.inf):
        row = np.zeros(nv)
        for j, v in coef.items():
            row[j] += v
        rows.append(row)
        rl.append(low)
        ru.append(up)

    for i in range(N):
        u, G = ks.u[i], ks.G[i]
        for r, (a, b) in enumerate(pieces):
            lo[z(i, r)], hi[z(i, r)], integ[z(i, r)] = 0.0, 0.0 if a > b else 1.0, 1
            add({yv(i, r): 1.0, z(i, r): -a})                       # y >= a z
            add({yv(i, r): 1.0, z(i, r): -b}, -np.inf, 0.0)         # y <= b z
        add({z(i, r): 1.0 for r in range(4)}, 1.0, 1.0)
        c = cost(i)
        lo[c], obj[c] = 0.0, 1.0
        add({c: 1.0, z(i, 0): -u * lo_q * ks.B, yv(i, 0): -u * lo_q})                 # short: q (B + y)
        add({c: 1.0, z(i, 0): -(G - hi_q) * ks.d, yv(i, 0): -hi_q})                  # buy: G d - q (d - y)
        add({c: 1.0, z(i, 1): -(G - hi_q) * ks.d, yv(i, 1): G - hi_q})               # buy: (G - q)(d - y)
        if can_saturate(k, q_hi):                                                     # saturate: Gs - q (s - y)
            add({c: 1.0, z(i, 0): -(ks.Gs[i] - hi_q * ks.s), yv(i, 0): -hi_q})
        add({c: 1.0, yv(i, 3): -u * lo_q, z(i, 3): u * lo_q * ks.s})                 # sell: q (y - s)
    a = nv - 1
    lo[a], obj[a] = 0.0, 1.0
    holdings = {yv(i, r): 1.0 for i in range(N) for r in range(4)}
    add({a: 1.0, **{j: lo_q for j in holdings}})                                     # A >= -q Y
    add({a: 1.0, **{j: -(1.0 - hi_q) for j in holdings}})                            # A >= (q_max - q) Y
    bound = _mip_dual_bound(obj, np.array(rows), np.array(rl), np.array(ru), lo, hi, integ)
    return money * max(bound - SAFETY * N, 0.0)


def _mip_dual_bound(cost, A, row_lo, row_hi, lo, hi, integrality) -> float:
    """min cost . x s.t. row_lo <= A x <= row_hi, lo <= x <= hi, integrality: HiGHS's MIP dual bound (a
    lower bound on the minimum), run within the solve's deadline and Ctrl-C
    (:func:`solvopt.games.projection.run_highs`: Stopped when either cuts it short)."""
    import highspy

    from .economy_deviation import highs_model
    from .projection import run_highs
    h = highs_model(cost, A, row_lo, row_hi, lo, hi, integrality)
    h.setOptionValue("mip_rel_gap", 1e-7)
    status = run_highs(h)
    bound = float(h.getInfo().mip_dual_bound)
    if status != highspy.HighsModelStatus.kOptimal or not np.isfinite(bound):
        raise ModelError("least_exploitability: HiGHS gave no bound on a period's MIP "
                         f"({h.modelStatusToString(status)})")
    return bound


# --- both cases -------------------------------------------------------------------------------------------
def chain_credits(k: Constants, theta: float) -> np.ndarray:
    """(T + 1,) entry tau in [1, T]: the least regret, discounted to period 0, of a consumer long at period tau
    at an asset price >= theta (case C; 0 at tau = T, no such period, and where the bracket
    B theta - gamma L / u_i of some consumer is not positive)."""
    out = np.zeros(k.T + 1)
    out[k.T - 1] = k.gamma ** (k.T - 1) * float(np.min(k.u)) * k.B * theta     # the last period: nothing follows
    bracket = k.u * k.B * theta - k.gamma * k.L
    if np.all(bracket > 0) and k.B * k.phi > k.L * k.s:
        out[1:k.T - 1] = k.gamma ** np.arange(1, k.T - 1) * float(np.min(bracket))
    return out


def combined(k: Constants, theta: float, per_period: float) -> tuple[float, int]:
    """The least over tau in [1, T] of per_period * sum_{t=1}^{min(tau-1, T-2)} gamma^t + chain_credits[tau]
    (tau the first period with a consumer long at an asset price >= theta: every period before it is case N's)
    and the tau where it is least."""
    sums = np.concatenate([[0.0], np.cumsum(k.gamma ** np.arange(1, k.T - 1))])   # sums[j] = sum_{t=1}^{j}
    taus = np.arange(1, k.T + 1)
    f = per_period * sums[np.minimum(taus - 1, k.T - 2)] + chain_credits(k, theta)[1:]
    worst = int(np.argmin(f))
    return float(f[worst]), worst + 1


def least_exploitability(econ, *, intervals=INTERVALS, refine=REFINE, check=_no_check) -> LeastExploitability:
    """A certified lower bound on the exploitability (in money at period 0's bang per buck, as the
    certificate's) of every budget-feasible profile of ``econ`` (module docstring), and the same divided by
    the largest endowment value a profile can have. ``intervals``: the first partition of the asset's price
    range; ``refine``: further bisections where the least bound lies; ``check``: the stop check, called
    between MIPs. A ModelError names the first hypothesis the economy does not meet."""
    k = constants(econ)
    cuts = list(np.linspace(0.0, k.q_max, int(intervals) + 1))
    bounds = {}
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        check()
        bounds[(lo, hi)] = period_bound(k, lo, hi)
    high = lambda theta: theta * k.B * float(k.u.sum())          # noqa: E731  (nobody long where q >= theta)

    def best():                                                  # (value, theta, per-period least, tau)
        out = (0.0, 0.0, 0.0, k.T)
        least = np.inf
        for lo, hi in sorted(bounds):
            least = min(least, bounds[(lo, hi)])
            m = min(least, high(hi))
            value, tau = combined(k, hi, m)
            if value > out[0]:
                out = (value, hi, m, tau)
        return out

    for _ in range(int(refine)):
        theta = best()[1]
        above = [hi for lo, hi in bounds if hi > theta]
        reach = min(above) if above else theta
        lo, hi = min((key for key in bounds if key[1] <= reach), key=lambda key: bounds[key])
        check()
        del bounds[(lo, hi)]
        mid = 0.5 * (lo + hi)
        bounds[(lo, mid)] = period_bound(k, lo, mid)
        bounds[(mid, hi)] = period_bound(k, mid, hi)
    value, theta, least, tau = best()
    from .economy_horizon import _path
    worlds = _path(econ)
    first = econ.endowments[worlds[0]].sum(axis=0).max()
    cap = float(np.max(econ.endowment_cap)) * econ.n_consumers
    ev = float(econ.price_sum * (first + cap * sum(k.gamma ** t for t in range(1, k.T))))
    below = [(lo, hi, b) for (lo, hi), b in sorted(bounds.items()) if hi <= theta]
    return LeastExploitability(value, value / ev, ev, theta, tau, float(chain_credits(k, theta)[tau]), least, below)


# --- the deviations the argument uses (for tests and for anyone checking it by hand) --------------------------
def chain_holdings(k: Constants, y, q, a: int) -> np.ndarray:
    """Case C's deviation for one consumer with profile holdings ``y`` (T,) against asset prices ``q`` (T,):
    short to -B at period a, then, while the lost payout cannot be absorbed (q_t y_t > phi), short again
    where q_t s > phi or sell down to s; the profile's holdings after."""
    y = np.asarray(y, dtype=float).copy()
    y[a] = -k.B
    for t in range(a + 1, len(y)):
        if q[t] * y[t] <= k.phi:
            break
        if q[t] * k.s <= k.phi:
            y[t] = k.s
            break
        y[t] = -k.B
    return y


def local_holdings(k: Constants, i: int, y, q, x=None) -> np.ndarray:
    """Case N's combined deviation for consumer i with profile holdings ``y`` (T,) against asset prices ``q``
    (T,): in every period t in [1, T - 2] the local move (:func:`local_moves`) worth most at her bang per buck
    there, ``x`` (T,) = beta_t / beta_lo (1 where None), where it is worth anything."""
    y = np.asarray(y, dtype=float)
    x = np.ones(len(y)) if x is None else np.asarray(x, dtype=float)
    out = y.copy()
    for t in range(1, len(y) - 1):
        qt = k.u[i] * x[t] * q[t]
        moves = local_moves(k, i, q[t], y[t])
        if moves:
            value, move = max((a + b * qt, target) for a, b, target in moves)
            if value > 0:
                out[t] = move
    return out
