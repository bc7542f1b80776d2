"""The Markov exchange economy as a Markov pseudo-game: states, exact best responses, metrics, solvers.

**States.** Assets bought in world state w pay R(w') in the next world state w', so a consumer's
budget depends on the world state it came from. The Markov state is therefore the pair
s = (previous world state v, world state w), plus one start state (-, w) per world state mu puts
weight on (no holdings yet); it moves (v, w) -> (w, w') with probability T(w, w'), and only the
pair states reachable from the start states are kept. Prices p(s), q(s) and
consumption x_i(s) depend on s; the portfolio y_i(w) bought now depends on the current world
state w (it is what the next state's budget sees, so the pair chain stays Markov). The chain is
exogenous — no action moves it — so the discounted occupancy d(s) from mu is fixed.

**Players.** Consumer i at s: budget p(s).x_i + q(s).y_i(w) <= p(s).e_i(w) + R(w).y_i(v) =: W_i(s),
-b <= y <= holding limit; reward u_i(x_i). The auctioneer: p(s) on the simplex scaled to
``price_sum``, q(s) in [0, asset_price_max]; reward p.z(s) + q.Y(w), z the goods' excess demand,
Y the assets' (zero net supply). A recursive Radner equilibrium (RRE) is a GMPE of this game.

**Exact best responses.** With u_i homogeneous of degree 1 the best bundle for wealth W is worth
beta_i(s) W, beta_i(s) = max{u_i(x) : p(s).x <= 1} (closed form, :mod:`solvopt.dsl.utilities`).
A consumer's best response over every deviation the model allows (holdings that depend on the
world-state history and on its own past holdings) is an MDP over (s, own holding), bounded by
:mod:`solvopt.games.economy_deviation` (closed form, Lagrangian bound, or a dynamic program with
one asset); :func:`consumer_best_value` is the LP over stationary holdings y(w) only. The auctioneer's
best response is closed form per state: price_sum * max_j z_j + asset_price_max * sum_k Y_k^+.
Exploitability = sum over consumers and the auctioneer of (best-response value - value), from mu,
in money: a consumer's utility is divided by :func:`money_rates` (its utility of one unit of money
at uniform prices), so the certificate does not depend on the utilities' units.

**Solvers.** :func:`tatonnement` (method ``markov-tatonnement``): price tatonnement / proportional
response with periodic asset clearing. Newton's method (``markov-newton``) is in
:mod:`solvopt.games.economy_newton`, and the driver that runs either (unreachable world states,
restarts, fallback) in :mod:`solvopt.games.economy_methods`. Both certify their iterates with
:func:`metrics` (:func:`checked_certificate`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvopt.core.errors import SolverError


@dataclass
class PairChain:
    """The Markov chain of states s = (previous world state, world state) (start states have prev -1)."""

    world: np.ndarray        # (S,) current world state of s
    prev: np.ndarray         # (S,) previous world state, -1 at a start state
    P: np.ndarray            # (S, S) transitions
    initial: np.ndarray      # (S,) mu on the start states
    occupancy: np.ndarray    # (S,) sum_t gamma^t Pr(s_t = s)


def pair_chain(econ) -> PairChain:
    """The pair states the chain can be in: the start states (-, w) of the world states mu puts
    weight on and the pairs reachable from them (a state that never occurs carries no budget: a
    start state of a world state mu leaves out would otherwise cap that world state's holdings by
    what is affordable with no holdings carried). Start states come first."""
    T, W = econ.transitions, econ.n_world
    pairs = [(-1, w) for w in range(W) if econ.initial[w] > 0]
    index = {pair: k for k, pair in enumerate(pairs)}
    k = 0
    while k < len(pairs):                                   # breadth first, in a fixed order
        w = pairs[k][1]
        for w2 in np.flatnonzero(T[w] > 0):
            if (w, int(w2)) not in index:
                index[(w, int(w2))] = len(pairs)
                pairs.append((w, int(w2)))
        k += 1
    S = len(pairs)
    P = np.zeros((S, S))
    for k, (_, w) in enumerate(pairs):
        for w2 in np.flatnonzero(T[w] > 0):
            P[k, index[(w, int(w2))]] = T[w, w2]
    mu = np.zeros(S)
    starts = [w for v, w in pairs if v < 0]
    mu[:len(starts)] = econ.initial[starts]
    d = np.linalg.solve((np.eye(S) - econ.discount * P).T, mu)
    return PairChain(np.array([w for _, w in pairs]), np.array([v for v, _ in pairs]), P, mu, d)


@dataclass
class Profile:
    """A joint stationary policy of the economy."""

    prices: np.ndarray          # (S, M) goods prices p(s)
    asset_prices: np.ndarray    # (S, K) q(s)
    consumption: np.ndarray     # (S, N, M) x_i(s)
    portfolio: np.ndarray       # (W, N, K) y_i(w)


def wealth(econ, chain: PairChain, prices, asset_prices, portfolio) -> np.ndarray:
    """(S, N): W_i(s) = p(s).e_i(w) + R(w).y_i(v) - q(s).y_i(w)."""
    e = econ.endowments[chain.world]                                     # (S, N, M)
    out = np.einsum("sm,snm->sn", prices, e)
    if econ.n_assets:
        R = econ.returns_at(chain.world, prices)                          # (S, K) (bundles valued at p(s))
        carried = np.where((chain.prev >= 0)[:, None, None], portfolio[np.maximum(chain.prev, 0)], 0.0)
        out = out + np.einsum("sk,snk->sn", R, carried) - np.einsum("sk,snk->sn", asset_prices,
                                                                    portfolio[chain.world])
    return out


def bang_per_buck(econ, prices) -> np.ndarray:
    """(S, N): beta_i(s) = the most utility one unit of money buys at prices p(s)."""
    return econ.utility.indirect(prices[:, None, :], 1.0)


def money_rates(econ) -> np.ndarray:
    """(N,): the utility one unit of money buys consumer i when every good costs price_sum / M.
    The certificate divides each consumer's utility by it, so regrets (and the exploitability)
    are in money: invariant when a consumer's utility is multiplied by any factor."""
    uniform = np.full((1, 1, econ.n_goods), econ.price_sum / econ.n_goods)
    rate = np.asarray(econ.utility.indirect(uniform, 1.0), dtype=float).reshape(-1)
    return np.where(np.isfinite(rate) & (rate > 0), rate, 1.0)


def portfolio_matrix(econ, chain: PairChain, asset_prices, prices=None) -> np.ndarray:
    """G (S, W*K): wealth W_i(s) = c_i(s) + G(s) . y_i, the same for every consumer:
    -q_k(s) on the holding bought at s (world w_s), +R_k(s) on the one carried from prev_s (R the
    money return; for assets paying bundles of goods their value at the goods ``prices``, needed then)."""
    W, K, S = econ.n_world, econ.n_assets, len(chain.world)
    G = np.zeros((S, W, K))
    G[np.arange(S), chain.world] -= asset_prices
    after = np.flatnonzero(chain.prev >= 0)
    if econ.asset_bundles is not None and prices is None:
        from solvopt.core.errors import ModelError
        raise ModelError("portfolio_matrix: assets paying bundles of goods need the goods prices")
    G[after, chain.prev[after]] += econ.returns_at(chain.world[after], None if prices is None else prices[after])
    return G.reshape(S, W * K)


def endowment_values(econ, chain, prices) -> np.ndarray:
    """(S, N): c_i(s) = p(s) . e_i(w_s)."""
    return np.einsum("sm,snm->sn", prices, econ.endowments[chain.world])


def consumer_best_value(econ, chain, prices, asset_prices, beta):
    """The best response within the *stationary* class only, holdings y_i(w) that depend on the
    current world state (the profiles' own class): (N,) certified upper bounds on its values from
    mu, (N,) the values of the best portfolios found (lower bounds), and (W, N, K) those portfolios.
    A deviation that conditions on the previous world state or on its own holdings can do better;
    the certificate (:func:`metrics`) bounds those with :mod:`solvopt.games.economy_deviation`.

    Consumer i maximises sum_s d(s) beta_i(s) W_i(s; y) = w_i.c_i + g_i.y over the holdings box
    subject to W_i(s; y) = c_i(s) + G(s).y >= 0. Any lam >= 0 gives the Lagrangian bound
    max <= w_i.c_i + lam.c_i + max over the box of (g_i + G'lam).y; lam = 0 is the box optimum,
    exact when its holdings keep every wealth >= 0. Otherwise HiGHS (through SciPy) solves the LP
    and its row multipliers give the bound — valid for any lam >= 0, so the bound does not trust
    the solver's optimality."""
    N, K, W = econ.n_consumers, econ.n_assets, econ.n_world
    c = endowment_values(econ, chain, prices)                              # (S, N)
    weight = chain.occupancy[:, None] * beta                               # (S, N)
    base = np.einsum("sn,sn->n", weight, c)
    if K == 0:
        return base, base.copy(), np.zeros((W, N, 0))
    G = portfolio_matrix(econ, chain, asset_prices, prices)
    g = G.T @ weight                                                       # (W*K, N)
    lb, ub = np.tile(-econ.borrowing_limit, W), np.tile(econ.holding_limit, W)
    y = np.where(g > 0, ub[:, None], np.where(g < 0, lb[:, None], np.clip(0.0, lb, ub)[:, None]))
    upper = base + np.einsum("kn,kn->n", g, y)
    lower = upper.copy()
    tol = 1e-12 * np.maximum(1.0, np.abs(c))
    for i in np.flatnonzero(np.any(G @ y + c < -tol, axis=0)):           # the box optimum overspends
        y[:, i], lower[i], upper[i] = _portfolio_lp(G, c[:, i], g[:, i], lb, ub, i)
        lower[i] += base[i]
        upper[i] += base[i]
    return upper, lower, y.T.reshape(N, W, K).transpose(1, 0, 2)


def _portfolio_lp(G, c, g, lb, ub, i):
    """max g.y over {lb <= y <= ub, c + G y >= 0} by HiGHS: (y, g.y, Lagrangian upper bound)."""
    from .economy_deviation import highs_lp
    res = highs_lp(-g, -G, c, lb, ub)
    if res is None:
        raise SolverError(f"the portfolio best response of consumer {i} failed (HiGHS proved no optimum)")
    y = np.clip(res[0], lb, ub)
    lam = np.maximum(-res[1], 0.0)
    reduced = g + G.T @ lam
    bound = lam @ c + np.where(reduced > 0, ub, lb) @ reduced
    feasible = np.all(G @ y + c >= -1e-9 * np.maximum(1.0, np.abs(c)))
    return y, (g @ y if feasible else -np.inf), bound


def excess_demand(econ, chain, profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """(S, M) goods' excess demand z(s) and (W, K) assets' Y(w). The goods supply at s = (v, w) is
    the endowments plus what bundle assets bought at v deliver: sum_i e_i(w) + Y(v) . B(w)."""
    z = profile.consumption.sum(axis=1) - econ.endowments[chain.world].sum(axis=1)
    Y = profile.portfolio.sum(axis=1)
    if econ.asset_bundles is not None:
        after = np.flatnonzero(chain.prev >= 0)
        z[after] -= np.einsum("sk,skm->sm", Y[chain.prev[after]], econ.asset_bundles[chain.world[after]])
    return z, Y


def auctioneer_gaps(econ, chain, profile: Profile):
    """((S,) the auctioneer's best value minus its current one per state (closed form: all the price on
    the most demanded good, the asset at its cap when demanded), and :func:`excess_demand`'s z, Y)."""
    z, Y = excess_demand(econ, chain, profile)
    Ys = Y[chain.world]
    br = econ.price_sum * z.max(axis=1) + econ.asset_price_max * np.maximum(Ys, 0.0).sum(axis=1)
    current = np.einsum("sm,sm->s", profile.prices, z) + np.einsum("sk,sk->s", profile.asset_prices, Ys)
    return br - current, z, Y


def metrics(econ, chain: PairChain, profile: Profile) -> dict:
    """Certified exploitability and the market metrics of a profile. Each consumer's regret is
    bounded over every deviation the model allows (holdings that depend on the whole world-state
    history and on its own past holdings: :mod:`solvopt.games.economy_deviation`)."""
    from .economy_deviation import deviation_bounds
    p, q, x, y = profile.prices, profile.asset_prices, profile.consumption, profile.portfolio
    d = chain.occupancy
    rate = money_rates(econ)                     # utility in money: the certificate is unit-free
    beta = bang_per_buck(econ, p) / rate
    Wlth = wealth(econ, chain, p, q, y)
    spend = np.einsum("sm,snm->sn", p, x)
    # overspending relative to what the endowment is worth (not to the wealth, which can be 0)
    scale = np.maximum(1.0, endowment_values(econ, chain, p))
    budget_violation = float(np.max(np.maximum(spend - Wlth, 0.0) / scale))
    u = econ.utility.value(x) / rate                                         # (S, N), in money
    values = d @ u
    feasible = budget_violation <= 1e-9 and np.all(Wlth >= -1e-9 * scale)
    bounds = deviation_bounds(econ, chain, p, q, beta, values if feasible else None)
    best, best_lower = bounds.upper, bounds.lower
    # a value above the bound only where the profile overspends (budget_violation says so): count 0
    consumer_regret = np.maximum(best - values, 0.0)
    price_violation = _price_violation(econ, p, q)
    holdings_off = holding_violation(econ, y)
    gap, z, Y = auctioneer_gaps(econ, chain, profile)
    Ys = Y[chain.world]
    # >= 0 in every state when the prices are feasible (on the simplex, q in [0, asset_price_max]);
    # a negative one means they are not: counted 0 in the bound, reported, and price_violation flags it
    auctioneer_regret = float(d @ np.maximum(gap, 0.0))
    auctioneer_signed = float(d @ gap)
    total = float(consumer_regret.sum() + auctioneer_regret)
    endowment_value = float(d @ np.einsum("sm,sm->s", p, econ.endowments[chain.world].sum(axis=1)))
    supply = econ.endowments[chain.world].sum(axis=1)
    # one-step Bellman residual of consumption with holdings fixed: beta W - u(x) >= 0 at each state
    bellman = float(np.max(np.abs(beta * np.maximum(Wlth, 0.0) - u)))
    lower = float(np.maximum(best_lower - values, 0.0).sum() + auctioneer_regret)
    return {
        "exploitability": total,
        "exploitability_lower": lower,
        "per_player": np.append(consumer_regret, auctioneer_regret),
        "relative_exploitability": total / endowment_value,
        "consumer_regret": float(consumer_regret.sum()),
        "auctioneer_regret": auctioneer_regret,
        "endowment_value": endowment_value,
        "excess_demand": float(np.max(np.maximum(z, 0.0) / supply)),           # relative to supply
        "excess_demand_abs": float(np.max(np.maximum(z, 0.0))),                 # in goods units
        # the anchor's "excess demand" formula (mean square over goods + over assets), averaged over
        # the states with the occupancy weights
        "excess_demand_msq": float(d @ (np.mean(z ** 2, axis=1) + (np.mean(Ys ** 2, axis=1) if Ys.shape[1] else 0.0))
                                   / d.sum()),
        "excess_supply_value": float(np.max(np.einsum("sm,sm->s", p, np.maximum(-z, 0.0)))),
        "asset_excess_demand": float(np.max(np.abs(Y), initial=0.0)),
        "budget_violation": budget_violation,
        "price_violation": price_violation,
        "holding_violation": holdings_off,
        "auctioneer_regret_signed": auctioneer_signed,
        "deviation_bounds": list(bounds.how),
        "certificate_dp_steps": bounds.dp_iterations,
        "bellman_error": bellman,
        "portfolio_foc": _portfolio_foc(econ, chain, p, q, y, beta),
    }


def _price_violation(econ, p, q) -> float:
    """How far the auctioneer's prices are from its feasible set: goods prices >= 0 summing to
    price_sum in every state, asset prices in [0, asset_price_max] (relative to those scales)."""
    off = np.abs(p.sum(axis=1) - econ.price_sum) / econ.price_sum
    neg = np.maximum(-p, 0.0).max(axis=1, initial=0.0) / econ.price_sum
    out = np.maximum(np.maximum(-q, q - econ.asset_price_max), 0.0).max(initial=0.0) / econ.asset_price_max
    return float(max(off.max(initial=0.0), neg.max(initial=0.0), out))


def holding_violation(econ, holdings) -> float:
    """How far holdings (..., K) lie outside the consumers' box [-borrowing_limit, holding_limit], relative
    to the box's width (0 inside): a profile beyond it is not one the model allows, whatever its budgets."""
    y = np.asarray(holdings, dtype=float)
    lo, hi = -np.asarray(econ.borrowing_limit, dtype=float), np.asarray(econ.holding_limit, dtype=float)
    out = np.maximum(np.maximum(lo - y, y - hi), 0.0) / np.maximum(hi - lo, np.finfo(float).tiny)
    return float(out.max(initial=0.0))


def box_violation(econ, p, q, holdings) -> float:
    """The larger of :func:`_price_violation` (prices off the auctioneer's set) and
    :func:`holding_violation`: what the horizon certificates add to their budget violation."""
    return max(_price_violation(econ, np.asarray(p, dtype=float), np.asarray(q, dtype=float)),
               holding_violation(econ, holdings))


def _portfolio_foc(econ, chain, p, q, y, beta) -> float:
    """max over consumers of |clip(y + g / |g|_max) - y|: the projected portfolio gradient on the
    holdings box (0 at a box-interior or box-corner optimum)."""
    if econ.n_assets == 0:
        return 0.0
    W, N, K = y.shape
    g = portfolio_matrix(econ, chain, q, p).T @ (chain.occupancy[:, None] * beta)   # (W*K, N)
    lb, ub = np.tile(-econ.borrowing_limit, W)[:, None], np.tile(econ.holding_limit, W)[:, None]
    yi = y.transpose(0, 2, 1).reshape(W * K, N)
    step = np.clip(yi + g / np.maximum(1.0, np.abs(g).max(axis=0)), lb, ub) - yi
    return float(np.abs(step).max())


# --- the solver: tatonnement on prices, exact demands, projected ascent on portfolios -------------
def initial_profile(econ, chain) -> Profile:
    S, M, K, W, N = len(chain.world), econ.n_goods, econ.n_assets, econ.n_world, econ.n_consumers
    p = np.full((S, M), econ.price_sum / M)
    q = np.full((S, K), 0.5 * econ.asset_price_max * 0.1)
    y = np.zeros((W, N, K))
    return Profile(p, q, demand(econ, chain, p, q, y), y)


def demand(econ, chain, p, q, y) -> np.ndarray:
    """(S, N, M) consumption: the exact demand at wealth W_i(s) (one maximiser for linear utilities)."""
    return econ.utility.demand(p[:, None, :], np.maximum(wealth(econ, chain, p, q, y), 0.0))


def _consumption(econ, chain, p, q, y, shares) -> np.ndarray:
    """The exact demand, or the bundles the spending shares of proportional response buy."""
    if shares is None:
        return demand(econ, chain, p, q, y)
    return shares * np.maximum(wealth(econ, chain, p, q, y), 0.0)[..., None] / p[:, None, :]


def certificate(econ, chain, profile: Profile):
    """The metrics of a profile and its :class:`~solvopt.games.exploitability.Exploitability`."""
    from .exploitability import Exploitability
    m = metrics(econ, chain, profile)
    expl = Exploitability(m["exploitability"], m["exploitability_lower"], m["per_player"],
                          violation=max(m["budget_violation"], m["price_violation"], m["holding_violation"]))
    return m, expl


def tatonnement(econ, run, *, step=0.5, asset_step=1.0, asset_every=10, asset_decay=1.0, check_every=25,
                start_iteration=0):
    """Multiplicative tatonnement on goods prices per state with exact demands (Cobb-Douglas,
    Leontief, CES), proportional response for linear utilities (spending shares follow the utility
    each good brings; prices clear the goods markets); every ``asset_every`` steps the asset markets
    are cleared at the current goods prices (:func:`clear_assets`, damped by ``asset_step``). Every
    ``check_every`` steps the profile is certified and handed to ``run``
    (:class:`~solvopt.games.tracking.EquilibriumRun`, which keeps the best and says when to stop).
    Returns the metrics of every certified profile, keyed by iteration (counted from
    ``start_iteration``, for a run that continues another method's)."""
    chain = pair_chain(econ)
    prof = initial_profile(econ, chain)
    p, q, y = prof.prices, prof.asset_prices, prof.portfolio
    supply = econ.endowments[chain.world].sum(axis=1)                    # (S, M)
    shares = None
    if econ.utility.kind == "linear":     # spending shares of proportional response, from even spending
        shares = np.broadcast_to(econ.utility.weights > 0, prof.consumption.shape).astype(float)
        shares /= shares.sum(axis=-1, keepdims=True)
    m, expl = checked_certificate(econ, chain, prof)
    it = start_iteration
    history = {it: m}
    if run.record(it, prof, expl):
        return history
    while True:
        it += 1
        if shares is not None:                          # proportional response (linear utilities)
            Wl = np.maximum(wealth(econ, chain, p, q, y), 0.0)
            p = np.einsum("snm,sn->sm", shares, Wl) / supply
            p = np.maximum(p, 1e-12 * econ.price_sum / econ.n_goods)
            p *= econ.price_sum / p.sum(axis=1, keepdims=True)
            gain = econ.utility.weights[None] * shares / p[:, None, :]
            shares = gain / np.maximum(gain.sum(axis=-1, keepdims=True), 1e-300)
        else:
            p = tatonnement_step(econ, chain, p, q, y, supply, step)
        if econ.n_assets and it % asset_every == 0:   # damping asset_step / (1 + clearings)^asset_decay
            q, y = clear_assets(econ, chain, p, y, asset_step / (1.0 + it // asset_every) ** asset_decay)
        last = (it - start_iteration) % check_every == 0
        if last or run.should_stop(it):
            held = affordable(econ, chain, p, q, y)     # the certified profile is budget-feasible
            prof = Profile(p.copy(), q.copy(), _consumption(econ, chain, p, q, held, shares), held)
            m, expl = checked_certificate(econ, chain, prof)
            history[it] = m
            if run.record(it, prof, expl) or not last or run.should_stop(it):
                return history


def tatonnement_step(econ, chain, p, q, y, supply, step):
    """One multiplicative tatonnement step on the goods prices of every state (exact demands)."""
    z = demand(econ, chain, p, q, y).sum(axis=1) / supply - 1.0
    p = p * np.exp(step * np.clip(z, -1.0, 1.0))
    return p * (econ.price_sum / p.sum(axis=1, keepdims=True))


def reservation_prices(econ, chain, p) -> np.ndarray:
    """(W, N, K): the asset price at which consumer i is indifferent to holding asset k bought in w.

    Consumer i's value is linear in its holding y_ik(w) with slope B_ik(w) - q A_i(w) when the asset
    price is q in every state with world w: A_i(w) = sum over states s at w of d(s) beta_i(s) (what a
    unit costs in utility), B_ik(w) = sum over states s after w of d(s) beta_i(s) R_k(w_s) (what it pays)."""
    wd = chain.occupancy[:, None] * bang_per_buck(econ, p)                 # (S, N)
    A = np.zeros((econ.n_world, econ.n_consumers))
    np.add.at(A, chain.world, wd)
    B = np.zeros((econ.n_world, econ.n_consumers, econ.n_assets))
    after = chain.prev >= 0
    np.add.at(B, chain.prev[after], wd[after][:, :, None] * econ.returns_at(chain.world[after], p[after])[:, None, :])
    return B / A[..., None]


def clear_assets(econ, chain, p, y, damping=1.0) -> tuple[np.ndarray, np.ndarray]:
    """Asset prices q (S, K) and holdings y (W, N, K) that clear every asset market at goods prices p.

    For each world state w and asset k, consumers sorted by reservation price: those above the
    marginal one hold the limit, those below are short the borrowing limit, and the marginal
    consumer (indifferent at q = its reservation price) holds the rest, so holdings sum to 0. The
    holdings move a fraction ``damping`` of the way there. (They may overspend somewhere while the
    prices move; the profiles that are certified hold :func:`affordable` holdings.)"""
    r = reservation_prices(econ, chain, p)
    W, N, K = y.shape
    target, q_world = np.empty_like(y), np.empty((W, K))
    for w in range(W):
        for k in range(K):
            lo, hi = -econ.borrowing_limit[k], econ.holding_limit[k]
            order = np.argsort(-r[w, :, k], kind="stable")
            for m in range(N):                     # m buyers at hi, N - 1 - m sellers at lo, one marginal
                rest = -(hi * m + lo * (N - 1 - m))
                if lo <= rest <= hi:
                    break
            holdings = np.full(N, lo)
            holdings[order[:m]] = hi
            holdings[order[m]] = np.clip(rest, lo, hi)
            target[w, :, k] = holdings
            q_world[w, k] = np.clip(r[w, order[m], k], 0.0, econ.asset_price_max)
    return q_world[chain.world], (1.0 - damping) * y + damping * target


def affordable(econ, chain, p, q, y) -> np.ndarray:
    """The holdings with each consumer who would overspend somewhere scaled towards 0 (y = 0 is
    affordable, wealth is affine in y) just enough that W_i(s) >= 0 at every state; the limits
    hold since they contain 0. Markets may then not clear: the certificate says by how much."""
    G = portfolio_matrix(econ, chain, q, p)
    c = endowment_values(econ, chain, p)                                  # (S, N)
    W, N, K = y.shape
    flat = y.transpose(0, 2, 1).reshape(W * K, N)
    spend = G @ flat                                                      # (S, N): wealth = c + spend
    with np.errstate(divide="ignore", invalid="ignore"):
        room = np.where(spend < 0, c / -spend, np.inf)
    t = np.clip(room.min(axis=0), 0.0, 1.0)
    return y * t[None, :, None]


def random_economy(consumers, goods, assets, world_states, utility="cobb_douglas", stochastic=True,
                   discount=0.9, seed=0, bundles=False, **model_options):
    """A random economy of the paper's kind (types and endowments uniform, returns uniform; with
    ``bundles`` the assets pay bundles of goods, uniform in [0.05, 0.15] per good, worth about 1 at
    uniform prices summing to 10); ``model_options`` go to
    :class:`~solvopt.dsl.markov_games.MarkovExchangeEconomy`."""
    from solvopt.dsl.markov_games import MarkovExchangeEconomy
    rng = np.random.default_rng(seed)
    weights = rng.uniform(0.1, 1.0, size=(consumers, goods))
    if utility == "cobb_douglas":
        weights /= weights.sum(axis=1, keepdims=True)
    endow = rng.uniform(0.1, 1.0, size=(world_states, consumers, goods))
    if stochastic:
        T = rng.uniform(0.0, 1.0, size=(world_states, world_states))
        T /= T.sum(axis=1, keepdims=True)
    else:
        T = np.roll(np.eye(world_states), 1, axis=1)
    R = rng.uniform(0.5, 1.5, size=(world_states, assets)) if assets else None
    if bundles and assets:
        R = rng.uniform(0.05, 0.15, size=(world_states, assets, goods))
    return MarkovExchangeEconomy((utility, weights), endow, T, discount, asset_returns=R, **model_options)


# --- prices on the simplex, unreachable world states -----------------------------------------------
PRICE_TOL = 1e-9     # certified goods prices sum to price_sum within this (relative)


def project_prices(econ, p) -> np.ndarray:
    """(S, M) goods prices put back on the simplex scaled to ``price_sum`` in every state: negative
    entries to 0, then each row scaled to the sum (a zero row becomes uniform)."""
    p = np.maximum(np.asarray(p, dtype=float), 0.0)
    total = p.sum(axis=1, keepdims=True)
    uniform = np.full_like(p, 1.0 / p.shape[1])
    return econ.price_sum * np.where(total > 0, p / np.where(total > 0, total, 1.0), uniform)


def check_prices(econ, p) -> None:
    """SolverError unless every state's goods prices are >= 0 and sum to price_sum (to PRICE_TOL)."""
    off = np.abs(p.sum(axis=1) - econ.price_sum)
    if np.any(p < 0) or np.any(off > PRICE_TOL * econ.price_sum):
        raise SolverError(f"goods prices left the simplex (sums off by up to {off.max():.3g}, smallest price "
                          f"{p.min():.3g}): the method must project them back before certifying")


def checked_certificate(econ, chain, profile: Profile):
    """:func:`certificate` of a profile whose goods prices are first checked to lie on the simplex."""
    check_prices(econ, profile.prices)
    return certificate(econ, chain, profile)


def reachable_worlds(econ) -> np.ndarray:
    """(W,) bool: the world states the chain can reach from the initial distribution."""
    reach = econ.initial > 0
    while True:
        grown = reach | np.any(econ.transitions[reach] > 0, axis=0)
        if np.array_equal(grown, reach):
            return reach
        reach = grown


def lift_profile(econ, chain, sub_chain, worlds, prof: Profile) -> Profile:
    """A profile of the economy restricted to ``worlds`` (indices of the full economy's world states)
    as one of the full economy: the states never reached get uniform goods prices, asset price 0,
    no holdings bought there and the exact demand at their wealth (they carry no weight in any
    value, and with asset price 0 nothing there constrains a deviation; the certificate is
    computed on the full economy all the same)."""
    S, M, K = len(chain.world), econ.n_goods, econ.n_assets
    index = {(int(v), int(w)): k for k, (v, w) in enumerate(zip(chain.prev, chain.world))}
    rows = np.array([index[(int(worlds[v]) if v >= 0 else -1, int(worlds[w]))]
                     for v, w in zip(sub_chain.prev, sub_chain.world)], dtype=int)
    p = np.full((S, M), econ.price_sum / M)
    q = np.zeros((S, K))
    y = np.zeros((econ.n_world, econ.n_consumers, K))
    p[rows], q[rows] = prof.prices, prof.asset_prices
    y[worlds] = prof.portfolio
    x = demand(econ, chain, p, q, y)
    x[rows] = prof.consumption
    return Profile(p, q, x, y)


class LiftedRun:
    """The run of an economy restricted to its reachable world states: each profile is lifted to the
    full economy (:func:`lift_profile`), certified there and handed to the real run."""

    def __init__(self, run, econ, sub, worlds):
        self.run, self.econ, self.worlds = run, econ, worlds
        self.chain, self.sub_chain = pair_chain(econ), pair_chain(sub)
        self.history = {}

    def record(self, iteration, prof, expl):
        full = lift_profile(self.econ, self.chain, self.sub_chain, self.worlds, prof)
        m, expl = checked_certificate(self.econ, self.chain, full)
        self.history[iteration] = m
        return self.run.record(iteration, full, expl)

    def should_stop(self, iteration):
        return self.run.should_stop(iteration)

    def __getattr__(self, name):          # deadline, tolerance, best, ... of the real run
        return getattr(self.run, name)
