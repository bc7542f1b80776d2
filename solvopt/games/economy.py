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
response with periodic asset clearing. :func:`newton` (method ``markov-newton``): Newton's method
on the equilibrium equations with logit-smoothed portfolios (:class:`SmoothedEquations`, exact
Jacobian), continued towards sharp portfolios. Both certify their iterates with :func:`metrics`.
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
    from scipy.optimize import linprog
    res = linprog(-g, A_ub=-G, b_ub=c, bounds=list(zip(lb, ub)), method="highs")
    if res.status != 0:
        raise SolverError(f"the portfolio best response of consumer {i} failed: {res.message}")
    y = np.clip(res.x, lb, ub)
    lam = np.maximum(-res.ineqlin.marginals, 0.0)
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
    z, Y = excess_demand(econ, chain, profile)
    Ys = Y[chain.world]
    br = econ.price_sum * z.max(axis=1) + econ.asset_price_max * np.maximum(Ys, 0.0).sum(axis=1)
    current = np.einsum("sm,sm->s", p, z) + np.einsum("sk,sk->s", q, Ys)
    # >= 0 in every state when the prices are feasible (on the simplex, q in [0, asset_price_max]);
    # a negative one means they are not: counted 0 in the bound, reported, and price_violation flags it
    auctioneer_regret = float(d @ np.maximum(br - current, 0.0))
    auctioneer_signed = float(d @ (br - current))
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
                          violation=max(m["budget_violation"], m["price_violation"]))
    return m, expl


def tatonnement(econ, run, *, step=0.5, asset_step=1.0, asset_every=10, asset_decay=1.0, check_every=25,
                start_iteration=0):
    """Multiplicative tatonnement on goods prices per state with exact demands (Cobb-Douglas,
    Leontief, CES), proportional response for linear utilities (spending shares follow the utility
    each good brings; prices clear the goods markets); every ``asset_every`` steps the asset markets
    are cleared at the current goods prices (:func:`clear_assets`, damped by ``asset_step``). Every ``check_every`` steps the profile is certified and handed to ``run``
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


# --- the Newton method: logit portfolios, goods complementarity, continuation in the smoothing ----
def substitution_elasticity(utility) -> float | None:
    """sigma of a smooth homogeneous form (Cobb-Douglas 1, Leontief 0, CES 1/(1 - rho)); None for
    linear utilities, whose demand is set-valued (no Jacobian)."""
    if utility.kind == "ces":
        return 1.0 / (1.0 - utility.rho)
    return {"cobb_douglas": 1.0, "leontief": 0.0}.get(utility.kind)


def _fischer_burmeister(a, b):
    """phi(a, b) = a + b - |(a, b)| (zero iff a, b >= 0 and ab = 0) and its partials."""
    r = np.sqrt(a * a + b * b)
    safe = np.where(r > 0, r, 1.0)
    return a + b - r, np.where(r > 0, 1.0 - a / safe, 1.0 - 1.0 / np.sqrt(2)), \
        np.where(r > 0, 1.0 - b / safe, 1.0 - 1.0 / np.sqrt(2))


class SmoothedEquations:
    """The equilibrium conditions with logit portfolios, as a square system F(v) = 0 with its exact
    Jacobian, for Newton's method.

    Unknowns v = (goods prices p(s); log asset prices eta(w), q = exp(eta); wealth multipliers
    mu_i(s) for the consumer-states in ``risk``). Money in state s is worth omega_i(s) = d(s)
    beta_i(s) (1 + mu_i(s)) to consumer i — mu_i(s) > 0 where its wealth constraint W_i(s) >= 0
    binds — so its reservation price for asset k bought in world w is r = B_ik(w) / A_i(w)
    (:func:`reservation_prices` with omega), and its holding is the logit
    y = lo + (hi - lo) sigmoid((log r - eta) / tau): the exact portfolio best response (all in
    above the price, all out below) as tau -> 0. Equations, each O(1): per state and good the
    Fischer-Burmeister function of (p_j / mean price, excess supply / supply) — zero iff p_j >= 0,
    z_j <= 0 and p_j z_j = 0, so free goods are allowed — except one good per state (``anchor``)
    whose equation is replaced by the normalisation sum_j p_j = price_sum (Walras' law makes it
    redundant once the asset markets clear); per asset market the net holding / N; per risky
    consumer-state the Fischer-Burmeister function of (mu, W / endowment value).
    Demands and indirect utilities are closed forms; the Jacobian follows Roy's identity
    (d log beta / dp = -x(p, 1)) and the CES demand derivative (Cobb-Douglas and Leontief are its
    sigma = 1 and 0)."""

    def __init__(self, econ, chain: PairChain):
        self.econ, self.chain = econ, chain
        W, N, M, K = econ.n_world, econ.n_consumers, econ.n_goods, econ.n_assets
        S = len(chain.world)
        self.shape = (S, M, W, K, N)
        self.sigma = substitution_elasticity(econ.utility)
        self.utility, self.smoothing = econ.utility, None
        if self.sigma is None:
            if econ.utility.kind != "linear":
                raise SolverError(f"the Newton method needs a smooth demand; {econ.utility.kind} utilities have none")
            self.smoothing = float("nan")          # linear: CES of elasticity LINEAR_SMOOTHING / tau (see at)
        self.on_world = (chain.world[None, :] == np.arange(W)[:, None]).astype(float)     # (W, S)
        self.on_prev = (chain.prev[None, :] == np.arange(W)[:, None]).astype(float)       # (W, S)
        # bundle assets: returns p(s) . b(s) set with the prices in holdings(); money: fixed
        self.bundles = None if econ.asset_bundles is None else econ.payouts_at(chain.world)    # (S, K, M)
        self.returns = None if self.bundles is not None else econ.asset_returns[chain.world]  # (S, K)
        self.endow = econ.endowments[chain.world]                                          # (S, N, M)
        self.supply = self.endow.sum(axis=1)                                               # (S, M)
        self.lo, self.hi = -econ.borrowing_limit, econ.holding_limit
        self.mean_price = econ.price_sum / M
        self.wealth_scale = np.maximum(self.mean_price * self.endow.sum(axis=2), 1e-12)    # (S, N)
        self.n_prices = S * M
        self.level = False        # True: per state a level t(s) of the largest excess demand (see evaluate)
        self.anchor = np.zeros(S, dtype=int)
        self.risk = np.zeros((S, N), dtype=bool)
        self.free = self.fixed = None

    def at(self, tau):
        """Set the demand form for smoothing ``tau``: the model's own, or for linear utilities the
        CES form of elasticity LINEAR_SMOOTHING / tau (:class:`SmoothedLinear`), linear as tau -> 0."""
        if self.smoothing is not None and self.smoothing != tau:
            self.utility = SmoothedLinear(self.econ.utility.weights, max(2.0, LINEAR_SMOOTHING / tau))
            self.sigma, self.smoothing = self.utility.sigma, tau

    def on_simplex(self, prices):
        """Flat goods prices (S * M,) put back on the scaled simplex of every state (sum price_sum)."""
        S, M = self.shape[:2]
        return project_prices(self.econ, prices.reshape(S, M)).ravel()

    @property
    def n_market(self) -> int:
        """Where the wealth multipliers start in v: after p, eta and (with ``level``) t."""
        S, M, W, K, _ = self.shape
        return S * M + W * K + (S if self.level else 0)

    def levels(self, v):
        """(S,) the levels t(s) of v (0 without ``level``)."""
        S, M, W, K, _ = self.shape
        return v[S * M + W * K:self.n_market] if self.level else np.zeros(S)

    @property
    def n(self) -> int:
        return self.n_market + int(self.risk.sum()) + (0 if self.free is None else int(self.free.sum()))

    def split(self, v):
        """(p, eta, mu, y): y only in the exact mode (its free entries from v, the rest at ``fixed``)."""
        S, M, W, K, N = self.shape
        mu = np.zeros((S, N))
        n_risk = int(self.risk.sum())
        mu[self.risk] = v[self.n_market:self.n_market + n_risk]
        y = None
        if self.free is not None:
            y = self.fixed.copy()
            y[self.free] = v[self.n_market + n_risk:]
        return v[:self.n_prices].reshape(S, M), v[self.n_prices:self.n_prices + W * K].reshape(W, K), mu, y

    def exact(self, free, fixed):
        """Switch to the exact (tau = 0) equations: holdings ``free`` (W, N, K) are unknowns whose
        reservation price must equal the asset price, the others stay at ``fixed``; None: back to
        the smoothed ones."""
        self.free, self.fixed = free, fixed

    def holdings(self, p, eta, mu, tau, y=None):
        """(y, dy, margin, base, omega, A, B): the logit holdings (W, N, K) (or the given exact
        ones, dy = 0), their slope in the log reservation-price margin log B - log A - eta, and
        the money weights they come from."""
        from scipy.special import expit
        self.at(tau)
        if self.bundles is not None:
            self.returns = np.einsum("skm,sm->sk", self.bundles, p)
        base = self.chain.occupancy[:, None] * self.utility.indirect(p[:, None, :], 1.0)           # (S, N)
        omega = base * (1.0 + mu)
        A = self.on_world @ omega                                                                 # (W, N)
        B = np.maximum(np.einsum("ws,sn,sk->wnk", self.on_prev, omega, self.returns), 1e-300)   # (W, N, K)
        margin = np.log(B) - np.log(A)[..., None] - eta[:, None, :]
        if y is not None:
            return y, np.zeros_like(y), margin, base, omega, A, B
        sig = expit(margin / tau)
        return (self.lo + (self.hi - self.lo) * sig, (self.hi - self.lo) * sig * (1 - sig) / tau, margin, base,
                omega, A, B)

    def wealth_map(self, eta):
        """U (S, K, W): W_i(s) = p(s).e_i(s) + sum_wk U[s, k, w] y_ik(w)."""
        q = np.exp(eta)[self.chain.world]                                                       # (S, K)
        return self.returns[:, :, None] * self.on_prev.T[:, None, :] - q[:, :, None] * self.on_world.T[:, None, :]

    def wealth(self, p, U, y):
        """(S, N): W_i(s) = p(s).e_i(s) + sum_wk U[s, k, w] y_ik(w), U from :meth:`wealth_map`."""
        return np.einsum("sm,snm->sn", p, self.endow) + np.einsum("skw,wnk->sn", U, y)

    def evaluate(self, v, tau, jacobian=True):
        """F(v) and (if asked) its Jacobian."""
        econ = self.econ
        S, M, W, K, N = self.shape
        p, eta, mu, y_exact = self.split(v)
        y, dy, margin, base, omega, A, B = self.holdings(p, eta, mu, tau, y_exact)
        U = self.wealth_map(eta)
        wealth = self.wealth(p, U, y)
        pos = wealth > 0
        x1 = self.utility.demand(p[:, None, :], np.ones((S, N)))                                # (S, N, M)
        z = np.einsum("sn,snm->sm", np.where(pos, wealth, 0.0), x1) - self.supply
        pay = None
        if self.bundles is not None:      # bundle payouts join the supply: Y(prev) . b (Y != 0 at a capped price)
            pay = self.on_prev.T[:, :, None, None] * self.bundles[:, None, :, :]                    # (S, W, K, M)
            z = z - np.einsum("swkj,wk->sj", pay, y.sum(axis=1), optimize=True)
        level = self.levels(v)
        goods, da, db = _fischer_burmeister(p / self.mean_price, (level[:, None] - z) / self.supply)
        norm = p.sum(axis=1) / econ.price_sum - 1.0
        if not self.level:        # Walras' law: one good's equation per state is the normalisation
            goods[np.arange(S), self.anchor] = norm
        # asset markets: Y = 0 while q < asset_price_max, Y >= 0 at the cap (the auctioneer's best response)
        qa = np.exp(eta)
        assets, ca, cb = _fischer_burmeister(CAP_SCALE * (1.0 - qa / econ.asset_price_max), y.sum(axis=1) / N)
        risky, rmu, rw = _fischer_burmeister(mu[self.risk], wealth[self.risk] / self.wealth_scale[self.risk])
        free = self.free
        F = np.concatenate([goods.ravel(), assets.ravel()] + ([norm] if self.level else []) + [risky]
                           + ([] if free is None else [margin[free]]))
        if not jacobian:
            return F, None
        # the margin against omega_i(s): Tm[w, i, k, s]; the holdings: T; omega against p_j(s) (Roy), mu_i(s)
        Tm = (self.on_prev[:, None, None, :] * self.returns.T[None, None, :, :] / B[..., None]
              - self.on_world[:, None, None, :] / A[:, :, None, None])
        T = dy[..., None] * Tm
        Yp = -np.einsum("wiks,si,sij->wiksj", T, omega, x1, optimize=True)                                     # (W, N, K, S, M)
        if self.bundles is not None:      # the returns p(s) . b(s) in B move with p(s) too
            direct = np.einsum("ws,si,skj,wik->wiksj", self.on_prev, omega, self.bundles, 1.0 / B, optimize=True)
            Yp += dy[..., None, None] * direct
        Ymu = T * base.T[None, :, None, :]                                                      # (W, N, K, S)
        Ye = -dy                                                                                 # (W, N, K) own (w, k)
        # wealth W[s, i] against the unknowns
        Wp = np.einsum("skw,wiktj->sitj", U, Yp, optimize=True)                                                 # (S, N, S, M)
        Wp[np.arange(S), :, np.arange(S), :] += self.endow
        if self.bundles is not None:      # the payouts carried into s, valued at p(s)
            Wp[np.arange(S), :, np.arange(S), :] += np.einsum("ws,skj,wik->sij", self.on_prev, self.bundles, y,
                                                              optimize=True)
        We = np.einsum("skw,wik->siwk", U, Ye, optimize=True)
        q = np.exp(eta)
        We -= np.einsum("ws,wk,wik->siwk", self.on_world, q, y, optimize=True)
        Wmu = np.einsum("skw,wikt->sit", U, Ymu, optimize=True)                                                 # (S, N, S)
        # excess demand z[s, j]
        gx = np.where(pos, 1.0, 0.0)[..., None] * x1                                            # (S, N, M)
        Zp = np.einsum("sij,sitl->sjtl", gx, Wp, optimize=True)
        spend = np.where(pos, wealth, 0.0)
        own = -self.sigma * np.einsum("si,sij->sj", spend, x1, optimize=True) / p                              # diagonal part
        cross = (self.sigma - 1.0) * np.einsum("si,sij,sil->sjl", spend, x1, x1, optimize=True)
        cross[:, np.arange(M), np.arange(M)] += own
        Zp[np.arange(S), :, np.arange(S), :] += cross
        Ze = np.einsum("sij,siwk->sjwk", gx, We, optimize=True)
        Zmu = np.einsum("sij,sit->sjti", gx, Wmu, optimize=True)                                               # (S, M, S, N)
        if pay is not None:
            Zp -= np.einsum("swkj,wktl->sjtl", pay, Yp.sum(axis=1), optimize=True)
            Ze -= np.einsum("swkj,wk->sjwk", pay, Ye.sum(axis=1), optimize=True)
            Zmu -= np.einsum("swkj,wikt->sjti", pay, Ymu, optimize=True)
        # goods rows
        scale_b = -db / self.supply                                                              # (S, M)
        Gp = scale_b[..., None, None] * Zp
        Gp[np.arange(S), :, np.arange(S), :] += np.einsum("sj,jl->sjl", da / self.mean_price, np.eye(M), optimize=True)
        Ge = scale_b[..., None, None] * Ze
        Gmu = scale_b[..., None, None] * Zmu
        if not self.level:
            Gp[np.arange(S), self.anchor] = 0.0
            Gp[np.arange(S), self.anchor, np.arange(S), :] = 1.0 / econ.price_sum
            Ge[np.arange(S), self.anchor] = 0.0
            Gmu[np.arange(S), self.anchor] = 0.0
        # asset rows
        Ap = cb[..., None, None] * Yp.sum(axis=1) / N                                           # (W, K, S, M)
        Ae = np.zeros((W, K, W, K))
        Ae[np.arange(W)[:, None], np.arange(K)[None, :], np.arange(W)[:, None], np.arange(K)[None, :]] = \
            cb * Ye.sum(axis=1) / N - ca * CAP_SCALE * qa / econ.asset_price_max
        Amu = cb[..., None, None] * Ymu.transpose(0, 2, 3, 1) / N                               # (W, K, S, N)
        # wealth-constraint rows (risky consumer-states)
        si, ii = np.nonzero(self.risk)
        wb = rw / self.wealth_scale[self.risk]
        Rp = wb[:, None, None] * Wp[si, ii]
        Re = wb[:, None, None] * We[si, ii]
        Rmu = wb[:, None] * Wmu[si, ii][:, si] * (ii[None, :] == ii[:, None])
        Rmu[np.arange(len(si)), np.arange(len(si))] += rmu
        nP, nE = S * M, W * K
        rows = [[Gp.reshape(nP, nP), Ge.reshape(nP, nE), Gmu.reshape(nP, S * N)[:, self.risk.ravel()]],
                [Ap.reshape(nE, nP), Ae.reshape(nE, nE), Amu.reshape(nE, S * N)[:, self.risk.ravel()]],
                [Rp.reshape(len(si), nP), Re.reshape(len(si), nE), Rmu]]
        if free is not None:     # the free holdings' columns and their margin rows
            wf, if_, kf = np.nonzero(free)
            Uf = U[:, kf, wf]                                                                   # (S, F)
            Zy = gx[:, if_, :].transpose(0, 2, 1) * Uf[:, None, :]                              # (S, M, F)
            if pay is not None:
                Zy = Zy - pay[:, wf, kf, :].transpose(0, 2, 1)
            Gy = scale_b[..., None] * Zy
            if not self.level:
                Gy[np.arange(S), self.anchor] = 0.0
            Ay = np.zeros((W, K, len(wf)))
            Ay[wf, kf, np.arange(len(wf))] = cb[wf, kf] / N
            Ry = wb[:, None] * Uf[si] * (ii[:, None] == if_[None, :])
            Mp = -np.einsum("fs,sf,sfj->fsj", Tm[wf, if_, kf], omega[:, if_], x1[:, if_, :], optimize=True)
            if self.bundles is not None:
                Mp += direct[wf, if_, kf]
            Me = np.zeros((len(wf), W, K))
            Me[np.arange(len(wf)), wf, kf] = -1.0
            Mmu = (Tm[wf, if_, kf] * base[:, if_].T)[:, si] * (if_[:, None] == ii[None, :])
            for row, block in zip(rows, (Gy.reshape(nP, -1), Ay.reshape(nE, -1), Ry)):
                row.append(block)
            rows.append([Mp.reshape(len(wf), nP), Me.reshape(len(wf), nE), Mmu, np.zeros((len(wf), len(wf)))])
        if self.level:           # the levels' column (after eta) and the normalisation rows (after the assets')
            Gt = np.zeros((S, M, S))
            Gt[np.arange(S), :, np.arange(S)] = db / self.supply
            for row, block in zip(rows, [Gt.reshape(nP, S)] + [np.zeros((len(r[0]), S)) for r in rows[1:]]):
                row.insert(2, block)
            Np = np.zeros((S, S, M))
            Np[np.arange(S), np.arange(S), :] = 1.0 / econ.price_sum
            rows.insert(2, [Np.reshape(S, nP)] + [np.zeros((S, block.shape[1])) for block in rows[0][1:]])
        return F, np.block(rows)

    def profile(self, v, tau) -> Profile:
        """The profile the unknowns stand for, with affordable holdings (for certification)."""
        econ, chain = self.econ, self.chain
        p, eta, mu, y_exact = self.split(v)
        y = self.holdings(p, eta, mu, tau, y_exact)[0]
        p = self.on_simplex(p.ravel()).reshape(p.shape)
        q = np.minimum(np.exp(eta), econ.asset_price_max)[chain.world]
        held = affordable(econ, chain, p, q, y)
        self.at(tau)        # the consumption the equations clear (smoothed for linear utilities)
        spend = np.maximum(wealth(econ, chain, p, q, held), 0.0)
        return Profile(p.copy(), q, self.utility.demand(p[:, None, :], spend), held)


CAP_SCALE = 100.0    # the asset equation FB(CAP_SCALE (1 - q / cap), Y / N): ~ Y / N away from the cap
LINEAR_SMOOTHING = 0.5      # linear utilities: CES elasticity LINEAR_SMOOTHING / tau in the equations


class SmoothedLinear:
    """Linear utilities v.x seen as CES of elasticity ``sigma`` (rho = 1 - 1/sigma): demand and
    indirect utility by log-sum-exp, stable for large sigma. Used inside the equations only; the
    certificate values the bundles with the linear utility itself."""

    kind = "ces"

    def __init__(self, values, sigma):
        self.weights, self.sigma = values, float(sigma)

    def _logs(self, p):
        from scipy.special import logsumexp
        with np.errstate(divide="ignore"):
            a = self.sigma * (np.log(self.weights) - np.log(p))              # log v^s p^-s
        return a, logsumexp(a + np.log(p), axis=-1, keepdims=True)           # log sum_j v^s p^(1-s)

    def demand(self, p, budget):
        a, total = self._logs(p)
        return np.exp(a - total) * np.asarray(budget, dtype=float)[..., None]

    def indirect(self, p, budget):
        _, total = self._logs(p)
        return np.exp(total[..., 0] / (self.sigma - 1.0)) * budget


def newton(econ, run, *, tau_start=0.1, tau_end=1e-6, tau_factor=0.25, newton_steps=8, warm_steps=500,
           polish_below=0.03, check=None, start_iteration=0, level=None):
    """Newton's method on :class:`SmoothedEquations`, continued from smooth (``tau_start``) to sharp
    (``tau_end``) portfolios. Each stage divides tau by up to ``tau_factor``; a stage whose Newton
    corrector does not converge within ``newton_steps`` is retried from the last converged point
    with a smaller reduction. Consumer-states whose wealth comes near 0 get a multiplier (and
    their wealth constraint an equation) from then on. Below ``polish_below`` each converged stage
    is polished: Newton on the exact (tau = 0) equations with the holdings the logit leaves
    interior as unknowns (:meth:`_Newton.polish`). Every Newton iterate is certified (exact best
    responses) and handed to ``run``. Returns the metrics of every certified profile, keyed by
    iteration (counted from ``start_iteration``)."""
    chain = pair_chain(econ)
    eq = SmoothedEquations(econ, chain)
    S, M, W, K, N = eq.shape
    p0 = np.full((S, M), econ.price_sum / M)
    for _ in range(warm_steps):             # goods prices of the economy without asset trade
        p0 = tatonnement_step(econ, chain, p0, np.zeros((S, K)), np.zeros((W, N, K)), eq.supply, 0.5)
    log_reservation = eq.holdings(p0, np.zeros((W, K)), np.zeros((S, N)), 1.0)[2]   # the margins at eta = 0
    eta0 = np.minimum(np.median(log_reservation, axis=1), np.log(econ.asset_price_max))   # median log reservation
    if level is None:        # the cap can bind: someone values the asset at over half of it at the start
        level = bool(log_reservation.size) and bool(np.max(log_reservation) > np.log(0.5 * econ.asset_price_max))
    eq.level = level                                                                       # price, at most the cap
    v = np.concatenate([p0.ravel(), eta0.ravel()] + ([np.zeros(S)] if level else []))
    solver = _Newton(eq, run, check, start_iteration)
    good, tau_good, log_cut = None, None, -np.log(tau_factor)
    tau = tau_start
    if solver.certify(v, tau, eq.evaluate(v, tau, jacobian=False)[0], 0.0):     # the starting point
        return solver.history
    while True:
        v, state = solver.correct(v, tau, newton_steps if good is not None else 6 * newton_steps)
        if state == "stop":
            return solver.history
        if state == "converged":
            before = None if good is None else (good, tau_good, risk_good)
            good, tau_good, risk_good = v.copy(), tau, eq.risk.copy()
            if tau <= polish_below and solver.polish(v, tau, newton_steps):
                return solver.history
            if tau <= tau_end:
                return solver.history
            log_cut = min(1.5 * log_cut, -np.log(tau_factor))
        elif good is None or log_cut < 1e-2:
            return solver.history
        else:
            v, eq.risk = good.copy(), risk_good.copy()       # back to the last converged point
            log_cut /= 3
        tau = max(tau_good * np.exp(-log_cut), tau_end)
        v = _extrapolate(eq, v, tau, good, tau_good, before)


def _extrapolate(eq, v, tau, good, tau_good, before):
    """The start of the stage at ``tau``: the secant through the last two converged points (in log
    tau) when it fits the new equations better than the last point itself (v)."""
    if before is None or not np.array_equal(before[2], eq.risk) or not np.array_equal(v, good):
        return v
    v_before, tau_before, _ = before
    ahead = good + (good - v_before) * (np.log(tau_good / tau) / np.log(tau_before / tau_good))
    ahead[:eq.n_prices] = np.maximum(ahead[:eq.n_prices], 1e-14 * eq.mean_price)
    ahead[eq.n_market:] = np.maximum(ahead[eq.n_market:], 0.0)
    f_ahead, f_here = (eq.evaluate(x, tau, jacobian=False)[0] for x in (ahead, v))
    return ahead if np.all(np.isfinite(f_ahead)) and f_ahead @ f_ahead < f_here @ f_here else v


class _Newton:
    """Newton iterations on :class:`SmoothedEquations` with certification of every iterate."""

    def __init__(self, eq: SmoothedEquations, run, check=None, start_iteration=0):
        self.eq, self.run, self.check = eq, run, check
        self.history, self.it = {}, start_iteration
        self.floor = 1e-14 * eq.mean_price

    def correct(self, v, tau, steps):
        """Up to ``steps`` damped Newton steps at ``tau``: (v, 'converged' | 'stop' | 'stalled' | 'steps')."""
        eq = self.eq
        for _ in range(steps):
            eq.anchor = np.argmax(eq.split(v)[0], axis=1)
            f, J = eq.evaluate(v, tau)
            if not (np.all(np.isfinite(f)) and np.all(np.isfinite(J))):
                return v, "stalled"
            merit = f @ f
            if merit < 1e-18:
                return v, "converged"
            step = _newton_step(J, f)
            if step is None:
                return v, "stalled"
            t = 1.0
            for _ in range(30 if eq.free is None else 6):     # a polish that needs tiny steps has the wrong active set
                trial = v + t * step
                trial[:eq.n_prices] = eq.on_simplex(np.maximum(trial[:eq.n_prices], self.floor))
                mus = slice(eq.n_market, eq.n_market + int(eq.risk.sum()))
                trial[mus] = np.maximum(trial[mus], 0.0)
                ft = eq.evaluate(trial, tau, jacobian=False)[0]
                if ft @ ft < (1 - 1e-4 * t) * merit:
                    break
                t *= 0.5
            else:
                return v, "stalled"
            v = trial if eq.free is not None else _watch_wealth(eq, trial, tau)
            if self.certify(v, tau, ft, t):
                return v, "stop"
        f = eq.evaluate(v, tau, jacobian=False)[0]
        return v, ("converged" if f @ f < 1e-12 else "steps")    # near enough: Newton is on its way

    def certify(self, v, tau, f, t) -> bool:
        """Certify the profile of v and hand it to the run; True when the run says stop."""
        eq = self.eq
        self.it += 1
        prof = eq.profile(v, tau)
        m, expl = checked_certificate(eq.econ, eq.chain, prof)
        m.update(tau=0.0 if eq.free is not None else tau, residual=float(np.sqrt(f @ f)), risky=int(eq.risk.sum()),
                 step=t)
        self.history[self.it] = m
        if self.check is not None:
            self.check(self.it, m)
        return self.run.record(self.it, prof, expl) or self.run.should_stop(self.it)

    def polish(self, v, tau, steps, rounds=3) -> bool:
        """Newton on the exact equations from the smoothed solution v: holdings whose logit is
        interior become unknowns with margin 0, the others sit at the bound their margin points
        to; after each solve the active set is corrected (free holdings past a bound are fixed
        there, fixed ones whose margin points the other way are freed). True when the run says
        stop. Leaves ``eq`` in the smoothed mode."""
        eq = self.eq
        p, eta, mu, _ = eq.split(v)
        y, _, margin, *_ = eq.holdings(p, eta, mu, tau)
        free = np.abs(margin) < tau
        if free.size == 0 or free.mean() > POLISH_FREE:   # no assets; or nearly everyone indifferent (near-singular)
            return False
        fixed = np.where(margin > 0, eq.hi, eq.lo) * np.ones_like(y)
        try:
            for _ in range(rounds):
                eq.exact(free, fixed)
                w, state = self.correct(np.concatenate([v, y[free]]), tau, steps)
                if state == "stop":
                    return True
                if state != "converged":
                    return False
                _, _, _, y = eq.split(w)
                margin = eq.holdings(*eq.split(w)[:3], tau, y)[2]
                lo, hi = np.broadcast_to(eq.lo, y.shape), np.broadcast_to(eq.hi, y.shape)
                out = free & ((y < lo) | (y > hi))
                wrong = ~free & (((fixed == hi) & (margin < 0)) | ((fixed == lo) & (margin > 0)))
                if not (out.any() or wrong.any()):
                    return False
                fixed = np.where(out, np.clip(y, lo, hi), np.where(wrong, y, fixed))
                free = (free & ~out) | wrong
                y = np.clip(y, lo, hi)
                v = w[:len(v)]
            return False
        finally:
            eq.exact(None, None)


def _newton_step(J, f):
    """Solve J step = -f; the least-norm least-squares step where J is (numerically) singular (the
    exact equations of interchangeable assets, e.g. assets that all pay in the same next state)."""
    try:
        step = np.linalg.solve(J, -f)
        if np.all(np.isfinite(step)) and np.linalg.norm(J @ step + f) <= 1e-6 * np.linalg.norm(f):
            return step
    except np.linalg.LinAlgError:
        pass
    try:
        step = np.linalg.lstsq(J, -f, rcond=1e-12)[0]
    except np.linalg.LinAlgError:     # the SVD did not converge: no step (the stage counts as stalled)
        return None
    return step if np.all(np.isfinite(step)) else None


POLISH_FREE = 0.5       # polish only when at most this fraction of the holdings is left interior
RISKY_WEALTH = 0.05     # a consumer-state gets a wealth multiplier once its wealth is below this x its endowment value


def _watch_wealth(eq: SmoothedEquations, v, tau):
    """v with the consumer-states whose wealth came near 0 added to ``eq.risk`` (multiplier 0), and
    those with multiplier 0 whose wealth is far from 0 again taken out."""
    p, eta, mu, _ = eq.split(v)
    y = eq.holdings(p, eta, mu, tau)[0]
    wealth = eq.wealth(p, eq.wealth_map(eta), y)
    near = wealth < RISKY_WEALTH * eq.wealth_scale
    risk = (eq.risk | near) & ~(~near & (mu <= 0) & (wealth > 4 * RISKY_WEALTH * eq.wealth_scale))   # far again: off
    if np.array_equal(risk, eq.risk):
        return v
    eq.risk = risk
    return np.concatenate([v[:eq.n_market], mu[eq.risk]])




# --- prices on the simplex, unreachable world states, continuation until the time limit -----------
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


class _LiftedRun:
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


RESTART_TAUS = (1.0, 0.01, 0.3, 0.003)    # markov-newton's restarts (first smoothing), then tatonnement


def solve(econ, run, method, **params) -> dict:
    """Run ``method`` ("markov-newton" or "markov-tatonnement") on the economy until the run stops
    (tolerance, time or iteration limit, interrupt): world states the chain never reaches are left
    out and given consistent prices (:func:`lift_profile`); when markov-newton's continuation ends
    before the tolerance it restarts with another first smoothing (RESTART_TAUS), and after those
    falls back to tatonnement until the time limit (without a time limit the run then ends, with
    the best certified profile and ITERATION_LIMIT). Returns the full economy's metrics keyed by
    iteration."""
    keep = reachable_worlds(econ)
    target, lifted = econ, None
    if not keep.all():
        worlds = np.flatnonzero(keep)
        target = econ.restricted(worlds)
        run = lifted = _LiftedRun(run, econ, target, worlds)
    history = {}

    def finished(it) -> bool:
        return (run.best is not None and run.best_score <= run.tolerance) or run.should_stop(it)

    if method == "markov-tatonnement":
        history.update(tatonnement(target, run, **params))
    else:
        first = params.pop("tau_start")
        for tau in [first] + [t for t in RESTART_TAUS if t != first]:
            history.update(newton(target, run, tau_start=tau, start_iteration=max(history, default=0), **params))
            if finished(max(history)):
                break
        else:
            if run.deadline is not None:
                history.update(tatonnement(target, run, start_iteration=max(history) + 1))
    return history if lifted is None else lifted.history
