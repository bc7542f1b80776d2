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
to the holding limit) and certifies it on the expanded economy.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq, minimize

from solvopt.core.errors import ModelError

from . import economy as ec

PRICE_FLOOR = 1e-12        # free goods get this price (demands and the certificate need positive prices)


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
        raise ModelError("time_expanded needs a deterministic chain (one start, one successor per world state)")
    w = [int(np.argmax(econ.initial))]
    for _ in range(1, econ.horizon):
        w.append(int(np.argmax(econ.transitions[w[-1]])))
    return np.array(w)


def time_expanded(econ) -> Expanded:
    """The economy with horizon T on a deterministic chain as an infinite-horizon economy on its
    periods plus a terminal world state (module docstring). Only what the economy methods take
    otherwise: degree 1, no endowment floors or caps, no endowment shocks."""
    from solvopt.dsl.markov_games import MarkovExchangeEconomy
    if econ.degree != 1.0 or econ.endowment_floor is not None or econ.n_shocks > 1:
        raise ModelError("time_expanded takes degree-1 utilities without endowment floors, caps or shocks")
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
                                asset_price_max=econ.asset_price_max, price_sum=econ.price_sum)
    return Expanded(out, w, T)


def _fisher_prices(utility, budgets, supply) -> np.ndarray:
    """Equilibrium prices of a Fisher market (budgets, supply > 0): closed form for Cobb-Douglas, the
    Eisenberg-Gale dual min_{p >= 0} p . supply - sum_i b_i log(p . a_i) for Leontief."""
    a = utility.weights
    if utility.kind == "cobb_douglas":
        share = a / a.sum(axis=1, keepdims=True)
        return (share * budgets[:, None]).sum(axis=0) / supply
    if utility.kind != "leontief":
        raise NotImplementedError(f"forward_equilibrium: no Fisher market solver for {utility.kind} utilities")
    act = budgets > 0
    if not act.any():
        return np.zeros(len(supply))

    def dual(p):
        pa = a[act] @ p
        return p @ supply - budgets[act] @ np.log(pa), supply - (budgets[act] / pa) @ a[act]

    start = np.full(len(supply), budgets.sum() / supply.sum())
    res = minimize(dual, start, jac=True, method="L-BFGS-B", bounds=[(0.0, None)] * len(supply),
                   options={"maxiter": 20000, "gtol": 1e-13, "ftol": 1e-16, "maxcor": 30})
    p = np.maximum(res.x, 0.0)
    return p * (budgets.sum() / (p @ supply))          # Walras' law fixes the scale


def _period(econ, e, bundle, carried, q):
    """Period prices, holdings and consumption: every consumer buys the asset at q with what it has,
    up to the holding limit (none when q = 0: nothing is paid after the last period), and spends the
    rest; the goods left after the auctioneer takes q Y / price_sum of each (its zero regret at the
    cap) clear as a Fisher market. The budgets depend on the prices only through R = p . bundle
    (endowments uniform over goods), so the prices are a root in R."""
    total, h, N = econ.price_sum, econ.holding_limit[0], econ.n_consumers
    c = e[:, 0] * total                                  # p . e_i at any prices on the simplex
    supply = e.sum(axis=0) + carried.sum() * bundle

    def parts(R):
        cash = c + R * carried
        y = np.minimum(h, cash / q) if q > 0 else np.zeros(N)
        budgets = cash - q * y
        left = supply - q * y.sum() / total
        p = None if left.min() <= 0 else _fisher_prices(econ.utility, budgets, left)
        return p, y, budgets

    def gap(R):
        p = parts(R)[0]
        return (np.inf if p is None else p.sum()) - total

    lo_R, hi_R = total * bundle.min(), total * bundle.max()
    if hi_R == 0:                                        # the terminal state: nothing is paid
        p, y, budgets = parts(0.0)
    elif gap(lo_R) <= -total * (1 - 1e-12):
        # nobody has money left at the lowest return: the scarcest good carries the whole price
        _, y, budgets = parts(lo_R)
        p = np.zeros_like(bundle)
        p[np.argmin(bundle)] = total
    else:
        p, y, budgets = parts(brentq(gap, lo_R, hi_R, xtol=1e-15, rtol=1e-15))
    p = np.maximum(total * p / p.sum(), PRICE_FLOOR)
    p = total * p / p.sum()
    x = econ.utility.demand(p[None], budgets).reshape(N, -1)
    return p, y, x


def forward_equilibrium(econ):
    """A profile of the finite-horizon economy ``econ`` built period by period (:func:`_period`;
    the start: prices uniform, everyone buys the asset with its endowment's value), certified on
    the expanded economy. Returns (expanded, profile, metrics); metrics are the certificate's
    (:func:`solvopt.games.economy.metrics`) plus ``horizon_endowment_value`` (sum over the T periods
    of gamma^t p_t . E_t) and ``horizon_relative_exploitability`` (the exploitability divided by it).
    Economies of the paper's kind only: one asset, the asset price at the cap in every period but the
    last; endowments uniform over goods after the start (otherwise NotImplementedError)."""
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
    for t in range(1, T + 1):                           # the periods, then the terminal state
        q = cap if t < T - 1 else 0.0
        p, y, xt = _period(big, E[t], big.asset_bundles[t, 0], holdings[-1], q)
        prices.append(p)
        holdings.append(y)
        consumption.append(xt)
        asset_prices.append(q)
    chain = ec.pair_chain(big)
    profile = ec.Profile(np.array(prices)[chain.world], np.array(asset_prices)[chain.world][:, None],
                         np.array(consumption)[chain.world], np.array(holdings)[:, :, None])
    metrics = ec.metrics(big, chain, profile)
    value = float(sum(big.discount ** t * prices[t] @ E[t].sum(axis=0) for t in range(T)))
    metrics["horizon_endowment_value"] = value
    metrics["horizon_relative_exploitability"] = metrics["exploitability"] / value
    return x, profile, metrics
