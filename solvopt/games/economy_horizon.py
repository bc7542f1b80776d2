"""Finite-horizon Markov exchange economies on a deterministic chain.

With a deterministic chain from a given start, a policy of any kind is a sequence: period t's prices,
consumption and holdings. :func:`time_expanded` writes such an economy with horizon T as an ordinary
infinite-horizon one whose world states are the periods, followed by a terminal world state (the
last period's endowments, assets paying nothing there). Its pair states are the periods, so the
stationary profiles of the expanded economy are exactly the finite-horizon policies, and its
certificate (:mod:`solvopt.games.economy_deviation`, every deviation) bounds the finite-horizon
exploitability from above: what happens after the horizon cannot depend on anything earlier (nothing
is paid there), so it only adds the terminal state's own regrets, which are >= 0.

:func:`forward_equilibrium` builds a profile period by period for economies of the paper's kind
(one asset whose return is worth more than the price cap, so every consumer invests what it has up
to the holding limit) and certifies it on the expanded economy; :func:`check_supported` says which
economies it takes (the method ``markov-horizon`` runs it, :mod:`solvopt.games.markov_solvers`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq, minimize

from solvopt.core.errors import ModelError

from . import economy as ec

PRICE_FLOOR = 1e-13        # free goods get this fraction of the price sum (demands and the certificate need
                           # positive prices)
MONEY_UNIT = 10.0          # the indifferent period measures spending in units of price_sum / MONEY_UNIT


def _no_check() -> None:
    """The default stop check of :func:`forward_equilibrium` outside a solve: never stop."""


def is_stochastic(econ) -> bool:
    """True when the chain from the start is not a single path (several starts or successors)."""
    single = lambda v: np.count_nonzero(np.asarray(v) > 0) == 1                # noqa: E731
    return not (single(econ.initial) and all(single(row) for row in econ.transitions))


def check_supported(econ) -> None:
    """A one-line ModelError naming what :func:`forward_equilibrium` cannot take in ``econ``: it needs
    a finite horizon on a deterministic chain, Cobb-Douglas or Leontief utilities (any degree), one asset
    paying a bundle of goods, no endowment shocks, and without endowment floors and caps endowments uniform
    over goods (each consumer the same amount of every good) in every period after the start (floors and
    caps: :mod:`solvopt.games.economy_clip`); a stochastic chain: :mod:`solvopt.games.economy_lattice` (with
    floors and caps: :mod:`solvopt.games.economy_clip_tree`)."""
    missing = []
    if econ.horizon is None:
        missing.append("a finite horizon (the economy has none: use markov-newton or markov-tatonnement)")
    if econ.utility.kind not in ("cobb_douglas", "leontief"):
        missing.append(f"Cobb-Douglas or Leontief utilities (got {econ.utility.kind})")
    if econ.n_shocks > 1:
        missing.append("no endowment shocks")
    if econ.n_assets != 1 or econ.asset_bundles is None:
        missing.append(f"one asset paying a bundle of goods (got {econ.n_assets} asset(s)"
                       + (", paying money)" if econ.asset_bundles is None and econ.n_assets else ")"))
    # a stochastic chain: the history lattice (with floors and caps, economy_clip_tree), which takes all that
    stochastic = not missing and econ.horizon is not None and is_stochastic(econ)
    if not missing and econ.horizon is not None and econ.endowment_floor is None and not stochastic:
        w = _path(econ)
        E = econ.endowments[w[1:]]
        if not np.allclose(E, E[:, :, :1]):
            missing.append("endowments uniform over goods in every period after the start")
    if missing:
        raise ModelError("method 'markov-horizon' needs " + "; ".join(missing))


@dataclass
class Expanded:
    """An economy with a horizon written on its periods (module docstring)."""

    economy: object            # the infinite-horizon MarkovExchangeEconomy on periods 0..T-1, then the terminal
    worlds: np.ndarray         # (T,) the original world state of each period
    horizon: int


def _path(econ) -> np.ndarray:
    """(T,) the world states of a deterministic chain from its start; a ModelError otherwise."""
    if econ.horizon is None:
        raise ModelError("time_expanded needs an economy with a horizon")
    unit = lambda v: np.isclose(v.max(), 1.0) and np.count_nonzero(v > 0) == 1      # noqa: E731
    if not unit(econ.initial) or not all(unit(row) for row in econ.transitions):
        raise ModelError("a finite horizon is solved on a deterministic chain only (one start, one successor per "
                         "world state); this chain is stochastic")
    w = [int(np.argmax(econ.initial))]
    for _ in range(1, econ.horizon):
        w.append(int(np.argmax(econ.transitions[w[-1]])))
    return np.array(w)


def time_expanded(econ) -> Expanded:
    """The economy with horizon T on a deterministic chain as an infinite-horizon economy on its
    periods plus a terminal world state (module docstring), of the same degree. No endowment floors,
    caps or shocks."""
    from solvopt.dsl.markov_games import MarkovExchangeEconomy
    if econ.endowment_floor is not None or econ.n_shocks > 1:
        raise ModelError("time_expanded takes economies without endowment floors, caps or shocks")
    w = _path(econ)
    T = len(w)
    endowments = np.concatenate([econ.endowments[w], econ.endowments[w[-1]][None]])
    if econ.asset_bundles is not None:
        returns = np.concatenate([econ.asset_bundles[w], np.zeros_like(econ.asset_bundles[:1])])
    else:
        money = econ.returns_at(np.arange(econ.n_world), None)
        returns = np.concatenate([money[w], np.zeros_like(money[:1])])
    P = np.zeros((T + 1, T + 1))
    P[np.arange(T), np.arange(1, T + 1)] = 1.0
    P[T, T] = 1.0
    start = np.zeros(T + 1)
    start[0] = 1.0
    out = MarkovExchangeEconomy(econ.utility, endowments, P, econ.discount, initial=start, asset_returns=returns,
                                borrowing_limit=econ.borrowing_limit, holding_limit=econ.holding_limit,
                                asset_price_max=econ.asset_price_max, price_sum=econ.price_sum,
                                degree=None if econ.degree == 1.0 else econ.degree)
    return Expanded(out, w, T)


def _fisher_prices(utility, budgets, supply, check=_no_check) -> np.ndarray:
    """Equilibrium prices of a Fisher market (budgets, supply > 0): closed form for Cobb-Douglas, the
    Eisenberg-Gale dual min_{p >= 0} p . supply - sum_i b_i log(p . a_i) for Leontief (``check`` is
    called at every evaluation: it raises to stop)."""
    a = utility.weights
    if utility.kind == "cobb_douglas":
        share = a / a.sum(axis=1, keepdims=True)
        return (share * budgets[:, None]).sum(axis=0) / supply
    if utility.kind != "leontief":
        raise NotImplementedError(f"forward_equilibrium: no Fisher market solver for {utility.kind} utilities")
    act = budgets > 0
    if not act.any():
        return np.zeros(len(supply))
    money = budgets.sum()              # prices are linear in the budgets: solve in units of their sum
    budgets = budgets / money

    def dual(p):
        check()
        pa = a[act] @ p
        return p @ supply - budgets[act] @ np.log(pa), supply - (budgets[act] / pa) @ a[act]

    start = np.full(len(supply), budgets.sum() / supply.sum())
    res = minimize(dual, start, jac=True, method="L-BFGS-B", bounds=[(0.0, None)] * len(supply),
                   options={"maxiter": 20000, "gtol": 1e-13, "ftol": 1e-16, "maxcor": 30})
    p = np.maximum(res.x, 0.0)
    return p * (money / (p @ supply))                  # Walras' law fixes the scale


def _period(econ, e, bundle, carried, q, corner=None, check=_no_check):
    """Period prices, holdings and consumption: every consumer buys the asset at q with what it has,
    up to the holding limit (none when q = 0: nothing is paid after the last period), and spends the
    rest; the goods left after the auctioneer takes q Y / price_sum of each (its zero regret at the
    cap) clear as a Fisher market. The budgets depend on the prices only through R = p . bundle
    (endowments uniform over goods), so the prices are a root in R. When nobody has money left at
    the lowest return, the whole price goes to the scarcest good and ``corner`` (a list) is told."""
    total, h, N = econ.price_sum, econ.holding_limit[0], econ.n_consumers
    c = e[:, 0] * total                                  # p . e_i at any prices on the simplex
    supply = e.sum(axis=0) + carried.sum() * bundle

    def parts(R):
        cash = c + R * carried
        y = np.minimum(h, cash / q) if q > 0 else np.zeros(N)
        budgets = cash - q * y
        left = supply - q * y.sum() / total
        p = None if left.min() <= 0 else _fisher_prices(econ.utility, budgets, left, check)
        return p, y, budgets

    seen: dict[float, float] = {}

    def gap(R):
        if R not in seen:
            p = parts(R)[0]
            seen[R] = (np.inf if p is None else p.sum()) - total
        return seen[R]

    lo_R, hi_R = total * bundle.min(), total * bundle.max()
    if hi_R == 0:                                        # the terminal state: nothing is paid
        p, y, budgets = parts(0.0)
    elif gap(lo_R) <= -total * (1 - 1e-12):
        # nobody has money left at the lowest return: the scarcest good carries the whole price
        if corner is not None:
            corner.append(True)
        _, y, budgets = parts(lo_R)
        p = np.zeros_like(bundle)
        p[np.argmin(bundle)] = total
    elif 0 <= gap(lo_R) < np.inf or gap(hi_R) <= 0:     # a root at an end (to rounding)
        p, y, budgets = parts(hi_R if gap(hi_R) <= 0 else lo_R)
    elif gap(lo_R) < 0:
        p, y, budgets = parts(brentq(gap, lo_R, hi_R, xtol=1e-16 * total, rtol=1e-15))
    else:
        raise NotImplementedError("forward_equilibrium: no goods prices clear a period with the asset at its cap "
                                  "(the goods left after the auctioneer's share cannot pay what the consumers hold)")
    p = np.maximum(total * p / p.sum(), PRICE_FLOOR * total)
    p = total * p / p.sum()
    x = econ.utility.demand(p[None], budgets).reshape(N, -1)
    return p, y, x


def _indifferent_period(econ, e, bundle, carried, q, kappa, check=_no_check, method="lm", warm=None):
    """Period prices and holdings where consumers may be indifferent between the asset and
    consumption: unknowns log p and the money W_i each spends, with Fischer-Burmeister
    FB(W_i, log kappa_i - log beta_i(p)) = 0 (spend only where money buys at least kappa_i, the
    value of investing it) and the goods left after the auctioneer's share cleared. Solved by
    Levenberg-Marquardt along a continuation from kappa x 1000 (everyone invests; the scarcest good
    carries the price) down to kappa; spending is measured in units of price_sum / MONEY_UNIT (the
    same steps in any money unit; ``method``: least_squares' method; ``warm``: a solution (prices,
    spending) to start from at kappa itself, no continuation). Returns prices, holdings, consumption
    and the residual."""
    from scipy.optimize import least_squares
    total, N, M = econ.price_sum, econ.n_consumers, econ.n_goods
    supply = e.sum(axis=0) + carried.sum() * bundle
    rate = ec.money_rates(econ)

    unit = total / MONEY_UNIT

    def parts(z):
        p = np.exp(np.clip(z[:M], -300, 300) + np.log(unit))
        return p, z[M:] * unit, e @ p + (p @ bundle) * carried

    def residual(z, target):
        check()
        p, W, cash = parts(z)
        g = np.log(target) - np.log(econ.utility.indirect(p[None], 1.0).reshape(-1) / rate)
        fb = W / unit + g - np.sqrt((W / unit) ** 2 + g ** 2)
        demand = econ.utility.demand(p[None], np.maximum(W, 0.0)).reshape(N, M).sum(axis=0)
        left = supply - (cash - W).sum() / total       # the auctioneer's share: q Y / price_sum of each
        return np.concatenate([(demand - left) / supply, fb, [(p.sum() - total) / total]])

    start = np.full(M, 1e-2 * total / M)
    start[np.argmin(bundle)] = total - start.sum() + start[0]
    z = np.concatenate([np.log(start / unit), np.zeros(N)])
    scales = np.append(np.geomspace(1e3, 1.0, 40), 1.0)
    if warm is not None:
        z, scales = np.concatenate([np.log(warm[0] / unit), warm[1] / unit]), [1.0]
    for scale in scales:
        res = least_squares(residual, z, args=(scale * kappa,), method=method, xtol=1e-15, ftol=1e-15, gtol=1e-15,
                            max_nfev=5000)
        z = res.x
    p, W, cash = parts(z)
    p = total * p / p.sum()
    W = np.maximum(W, 0.0)
    return p, (cash - W) / q, econ.utility.demand(p[None], W).reshape(N, M), float(np.abs(res.fun).max())


def _investing_values(econ, chain, prof, T):
    """(T-1, N) kappa_t: the money value at t of a unit invested at t, gamma R_{t+1} mu_{t+1} / q_t,
    with mu_t the value of money at t along the profile: beta_t where the consumer spends, the larger
    of beta_t and kappa_t where it invests all it has; mu_{T-1} = beta_{T-1} (money values in the
    certificate's unit)."""
    p, q = prof.prices[:T], prof.asset_prices[:T, 0]
    beta = ec.bang_per_buck(econ, p) / ec.money_rates(econ)
    R = np.einsum("tm,tm->t", p, econ.asset_bundles[:T, 0])
    W = ec.wealth(econ, chain, prof.prices, prof.asset_prices, prof.portfolio)[:T]
    mu = beta[T - 1]
    kappa = np.zeros((T - 1, econ.n_consumers))
    for t in range(T - 2, -1, -1):
        kappa[t] = econ.discount * R[t + 1] * mu / q[t]
        spends = W[t] > 1e-9 * np.maximum(econ.price_sum / MONEY_UNIT, np.abs(W[t]))
        mu = np.where(spends, beta[t], np.maximum(beta[t], kappa[t]))
    return kappa


def horizon_endowment_value(econ, prices, T) -> float:
    """sum over the T periods of gamma^t p_t . E_t (the expanded economy ``econ``, prices (T, M)):
    the money frame of the finite-horizon economy's status."""
    E = econ.endowments[:T].sum(axis=1)
    return float(np.sum(econ.discount ** np.arange(T) * np.einsum("tm,tm->t", prices[:T], E)))


def forward_equilibrium(econ, rounds=8, tolerance=1e-9, *, record=None, check=_no_check, note=None):
    """A profile of the finite-horizon economy ``econ`` built period by period (:func:`_period`;
    the start: prices uniform, everyone buys the asset with its endowment's value), certified on
    the expanded economy. Where a period leaves nobody money to spend at the lowest return (the
    whole price on the scarcest good: an equilibrium for Leontief consumers, not for Cobb-Douglas
    ones, who would buy the nearly free goods), up to ``rounds`` rounds re-solve the first such
    period with consumers indifferent at the value of investing (:func:`_indifferent_period`,
    values from the last round's profile) and rebuild the periods after it; the best certified
    profile is kept, and the rounds stop once its relative exploitability is at most ``tolerance``.
    Returns (expanded, profile, metrics); metrics are the certificate's
    (:func:`solvopt.games.economy.metrics`) plus ``horizon_endowment_value`` (sum over the T periods
    of gamma^t p_t . E_t), ``horizon_relative_exploitability`` (the exploitability divided by it)
    and ``rounds``. Economies of the paper's kind only: one asset paying a bundle, the asset price at
    the cap in every period but the last; endowments uniform over goods after the start (otherwise
    NotImplementedError). Hooks for a solve: ``record(round, profile, metrics, exploitability)``
    after each certificate (True: stop the rounds), ``check()`` in every inner loop (raises to
    stop), ``note(message)`` for progress lines."""
    x = time_expanded(econ)
    big = x.economy
    if big.n_assets != 1 or big.asset_bundles is None:
        raise NotImplementedError("forward_equilibrium: one asset paying a bundle of goods only")
    T, N, M = x.horizon, big.n_consumers, big.n_goods
    E = big.endowments
    if not np.allclose(E[1:], E[1:, :, :1]):
        raise NotImplementedError("forward_equilibrium: endowments uniform over goods after the start only")
    cap, total = big.asset_price_max, big.price_sum
    prices, holdings, consumption, asset_prices = [], [], [], []
    p0 = np.full(M, total / M)
    cash = E[0] @ p0
    y = np.clip(cash / cap, -big.borrowing_limit[0], big.holding_limit[0])
    prices.append(p0)
    holdings.append(y)
    consumption.append(big.utility.demand(p0[None], cash - cap * y).reshape(N, M))
    asset_prices.append(cap)
    corners = []
    for t in range(1, T + 1):                           # the periods, then the terminal state
        check()
        if note is not None:
            note(f"markov-horizon: period {t} of {T}")
        q = cap if t < T - 1 else 0.0
        corner: list[bool] = []
        p, y, xt = _period(big, E[t], big.asset_bundles[t, 0], holdings[-1], q, corner, check)
        if corner:
            corners.append(t)
        prices.append(p)
        holdings.append(y)
        consumption.append(xt)
        asset_prices.append(q)
    chain = ec.pair_chain(big)

    def certified(k):
        prof = ec.Profile(np.array(prices)[chain.world], np.array(asset_prices)[chain.world][:, None],
                          np.array(consumption)[chain.world], np.array(holdings)[:, :, None])
        m, expl = ec.certificate(big, chain, prof)
        m["horizon_endowment_value"] = horizon_endowment_value(big, np.array(prices), T)
        m["horizon_relative_exploitability"] = m["exploitability"] / m["horizon_endowment_value"]
        m["rounds"] = k
        stop = record is not None and record(k, prof, m, expl)
        return prof, m, stop

    profile, metrics, stop = certified(0)
    latest = profile
    # Cobb-Douglas consumers do not leave the other goods almost free: where the corner was taken,
    # re-solve with consumers indifferent at the value of investing, from the profile's money values
    lo, hi = -big.borrowing_limit[0], big.holding_limit[0]
    for k in range(rounds if corners and big.utility.kind != "leontief" else 0):
        if stop or metrics["horizon_relative_exploitability"] <= tolerance:
            break
        if note is not None:
            note(f"markov-horizon: round {k + 1} of {rounds}, period {corners[0]} with indifferent consumers")
        kappa = _investing_values(big, chain, latest, T)
        first = corners[0]
        p, y, xt, res = _indifferent_period(big, E[first], big.asset_bundles[first, 0], holdings[first - 1],
                                            asset_prices[first], kappa[first], check)
        if res > 1e-8 or np.any(y < lo - 1e-9) or np.any(y > hi + 1e-9):
            break
        prices[first], holdings[first], consumption[first] = p, y, xt
        for t in range(first + 1, T + 1):
            check()
            prices[t], holdings[t], consumption[t] = _period(big, E[t], big.asset_bundles[t, 0], holdings[t - 1],
                                                             asset_prices[t], check=check)
        latest, m, stop = certified(k + 1)
        if m["exploitability"] < metrics["exploitability"]:
            profile, metrics = latest, m
    return x, profile, metrics


# --- utilities of degree h < 1: holdings from the consumers' best paths -----------------------------
PERIOD_STEPS = 500          # fixed-point steps of one period's prices


def _clear_period(econ, e, bundle, carried, y, q, check=_no_check):
    """Prices and consumption of one period with the holdings ``y`` bought at ``q`` and ``carried``
    from the last: the budgets p . e_i + (p . bundle) carried_i - q y_i (0 where negative: the
    certificate reports the overspending) clear the goods left after the auctioneer's share as a
    Fisher market; the budgets depend on the prices, so the prices are a fixed point, iterated."""
    from solvopt.core.errors import SolverError
    total, N = econ.price_sum, econ.n_consumers
    supply = e.sum(axis=0) + carried.sum() * bundle
    left = supply - q * y.sum() / total
    if left.min() <= 0:
        raise SolverError("markov-horizon: the auctioneer's share of the asset's price exceeds a good's supply")
    p = np.full(len(supply), total / len(supply))
    for _ in range(PERIOD_STEPS):
        check()
        budgets = np.maximum(e @ p + (p @ bundle) * carried - q * y, 0.0)
        new = _fisher_prices(econ.utility, budgets, left, check)
        new = total * new / new.sum()
        done = np.max(np.abs(new - p)) <= 1e-15 * total
        p = new
        if done:
            break
    else:
        raise SolverError("markov-horizon: a period's prices did not settle (the budgets' fixed point)")
    p = np.maximum(p, PRICE_FLOOR * total)
    p = total * p / p.sum()
    budgets = np.maximum(e @ p + (p @ bundle) * carried - q * y, 0.0)
    return p, econ.utility.demand(p[None], budgets).reshape(N, -1)


def degree_metrics(x, prof):
    """The certificate of a profile of the expanded economy ``x`` with utilities of degree h < 1 over
    the T periods: each consumer's best path (:mod:`solvopt.games.economy_path`, exact duality), the
    auctioneer's regret per period (closed form), in money; keys as :func:`forward_equilibrium`'s."""
    from .economy_path import path_bounds
    from .exploitability import Exploitability
    big, T = x.economy, x.horizon
    chain = ec.pair_chain(big)
    periods = np.flatnonzero(chain.world < T)
    order = periods[np.argsort(chain.world[periods])]
    b = path_bounds(big, np.arange(T), prof.prices[order], prof.asset_prices[order], prof.consumption[order])
    gap, z, _ = ec.auctioneer_gaps(big, chain, prof)
    d = chain.occupancy
    auctioneer = float(d[periods] @ np.maximum(gap[periods], 0.0))
    W = ec.wealth(big, chain, prof.prices, prof.asset_prices, prof.portfolio)[order]
    scale = np.maximum(1.0, ec.endowment_values(big, chain, prof.prices)[order])
    spend = np.einsum("tm,tnm->tn", prof.prices[order], prof.consumption[order])
    violation = float(np.max(np.maximum(np.maximum(spend - W, -W), 0.0) / scale))
    box = ec.box_violation(big, prof.prices, prof.asset_prices, prof.portfolio)
    value = float(b.regret.sum() + auctioneer)
    lower = float(b.regret_lower.sum() + auctioneer)
    per_player = np.append(b.regret, auctioneer)
    ev = horizon_endowment_value(big, prof.prices[order], T)
    supply = big.endowments[chain.world].sum(axis=1)
    m = {"exploitability": value, "exploitability_lower": lower, "per_player": per_player,
         "consumer_regret": float(b.regret.sum()), "auctioneer_regret": auctioneer,
         "budget_violation": violation, "box_violation": box,
         "excess_demand": float(np.max(np.maximum(z[periods], 0.0) / supply[periods])),
         "horizon_endowment_value": ev, "horizon_relative_exploitability": value / ev,
         "deviation_bounds": ["path duality"] * big.n_consumers}
    return m, Exploitability(value, lower, per_player, violation=max(violation, box)), b.holdings


def degree_equilibrium(econ, rounds=30, tolerance=1e-9, *, record=None, check=_no_check, note=None):
    """A profile of the finite-horizon economy ``econ`` with utilities of degree h < 1: the asset at its
    cap in every period but the last (0 there), holdings from each consumer's best path against the
    last round's prices (none at first), each period's prices clearing the goods as a Fisher market
    with wealth effects (:func:`_clear_period`); a round whose certified exploitability does not fall
    halves the step towards the best paths. Up to ``rounds`` rounds, stopping once the relative
    exploitability is at most ``tolerance``; same hooks and return as :func:`forward_equilibrium`."""
    x = time_expanded(econ)
    big, T = x.economy, x.horizon
    if big.n_assets != 1 or big.asset_bundles is None:
        raise NotImplementedError("degree_equilibrium: one asset paying a bundle of goods only")
    N, M = big.n_consumers, big.n_goods
    chain = ec.pair_chain(big)
    q = np.full(T + 1, big.asset_price_max)
    q[T - 1:] = 0.0
    Y = np.zeros((T + 1, N))
    best = None
    step, last = 1.0, np.inf
    for k in range(rounds + 1):
        check()
        if note is not None:
            note(f"markov-horizon: round {k} of {rounds} (degree {big.degree:.6g})")
        prices, consumption = np.empty((T + 1, M)), np.empty((T + 1, N, M))
        for t in range(T + 1):
            carried = Y[t - 1] if t else np.zeros(N)
            prices[t], consumption[t] = _clear_period(big, big.endowments[t], big.asset_bundles[t, 0], carried, Y[t],
                                                      q[t], check)
        prof = ec.Profile(prices[chain.world], q[chain.world][:, None], consumption[chain.world], Y[:, :, None])
        m, expl, paths = degree_metrics(x, prof)
        m["rounds"] = k
        if best is None or expl.value < best[1]["exploitability"]:
            best = (prof, m)
        stop = record is not None and record(k, prof, m, expl)
        if stop or m["horizon_relative_exploitability"] <= tolerance:
            break
        if expl.value >= last:
            step /= 2
        last = expl.value
        target = np.vstack([paths[:, :, 0].T, np.zeros((1, N))])
        Y = Y + step * (target - Y)
    return x, best[0], best[1]
