"""The Markov exchange economy as a Markov pseudo-game: states, exact best responses, metrics, a solver.

**States.** Assets bought in world state w pay R(w') in the next world state w', so a consumer's
budget depends on the world state it came from. The Markov state is therefore the pair
s = (previous world state v, world state w), plus one start state (-, w) per world state (no
holdings yet); it moves (v, w) -> (w, w') with probability T(w, w'). Prices p(s), q(s) and
consumption x_i(s) depend on s; the portfolio y_i(w) bought now depends on the current world
state w (it is what the next state's budget sees, so the pair chain stays Markov). The chain is
exogenous — no action moves it — so the discounted occupancy d(s) from mu is fixed.

**Players.** Consumer i at s: budget p(s).x_i + q(s).y_i(w) <= p(s).e_i(w) + R(w).y_i(v) =: W_i(s),
-b <= y <= holding limit; reward u_i(x_i). The auctioneer: p(s) on the simplex scaled to
``price_sum``, q(s) in [0, asset_price_max]; reward p.z(s) + q.Y(w), z the goods' excess demand,
Y the assets' (zero net supply). A recursive Radner equilibrium (RRE) is a GMPE of this game.

**Exact best responses.** With u_i homogeneous of degree 1 the best bundle for wealth W is worth
beta_i(s) W, beta_i(s) = max{u_i(x) : p(s).x <= 1} (closed form, :mod:`solvopt.dsl.utilities`).
A consumer's best response is then an LP in its portfolio: max sum_s d(s) beta_i(s) W_i(s; y)
subject to W_i(s; y) >= 0 and the limits (HiGHS; no portfolio: a closed form). The auctioneer's
best response is closed form per state: price_sum * max_j z_j + asset_price_max * sum_k Y_k^+.
Exploitability = sum over consumers and the auctioneer of (best-response value - value), from mu.
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
    T, W = econ.transitions, econ.n_world
    pairs = [(-1, w) for w in range(W)] + [(v, w) for v in range(W) for w in range(W) if T[v, w] > 0]
    index = {pair: k for k, pair in enumerate(pairs)}
    S = len(pairs)
    P = np.zeros((S, S))
    for k, (_, w) in enumerate(pairs):
        for w2 in np.flatnonzero(T[w] > 0):
            P[k, index[(w, int(w2))]] = T[w, w2]
    mu = np.zeros(S)
    mu[:W] = econ.initial
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
        R = econ.asset_returns[chain.world]                               # (S, K)
        carried = np.where((chain.prev >= 0)[:, None, None], portfolio[np.maximum(chain.prev, 0)], 0.0)
        out = out + np.einsum("sk,snk->sn", R, carried) - np.einsum("sk,snk->sn", asset_prices,
                                                                    portfolio[chain.world])
    return out


def bang_per_buck(econ, prices) -> np.ndarray:
    """(S, N): beta_i(s) = the most utility one unit of money buys at prices p(s)."""
    return econ.utility.indirect(prices[:, None, :], 1.0)


def portfolio_matrix(econ, chain: PairChain, asset_prices) -> np.ndarray:
    """G (S, W*K): wealth W_i(s) = c_i(s) + G(s) . y_i, the same for every consumer:
    -q_k(s) on the holding bought at s (world w_s), +R_k(w_s) on the one carried from prev_s."""
    W, K, S = econ.n_world, econ.n_assets, len(chain.world)
    G = np.zeros((S, W, K))
    G[np.arange(S), chain.world] -= asset_prices
    after = np.flatnonzero(chain.prev >= 0)
    G[after, chain.prev[after]] += econ.asset_returns[chain.world[after]]
    return G.reshape(S, W * K)


def endowment_values(econ, chain, prices) -> np.ndarray:
    """(S, N): c_i(s) = p(s) . e_i(w_s)."""
    return np.einsum("sm,snm->sn", prices, econ.endowments[chain.world])


def consumer_best_value(econ, chain, prices, asset_prices, beta):
    """(N,) certified upper bounds on the best-response values from mu, (N,) the values of the
    best portfolios found (lower bounds), and (W, N, K) those portfolios.

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
    G = portfolio_matrix(econ, chain, asset_prices)
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
    """(S, M) goods' excess demand z(s) and (W, K) assets' Y(w)."""
    z = profile.consumption.sum(axis=1) - econ.endowments[chain.world].sum(axis=1)
    return z, profile.portfolio.sum(axis=1)


def metrics(econ, chain: PairChain, profile: Profile) -> dict:
    """Certified exploitability (exact best responses) and the market metrics of a profile."""
    p, q, x, y = profile.prices, profile.asset_prices, profile.consumption, profile.portfolio
    d = chain.occupancy
    beta = bang_per_buck(econ, p)
    Wlth = wealth(econ, chain, p, q, y)
    spend = np.einsum("sm,snm->sn", p, x)
    # overspending relative to what the endowment is worth (not to the wealth, which can be 0)
    scale = np.maximum(1.0, endowment_values(econ, chain, p))
    budget_violation = float(np.max(np.maximum(spend - Wlth, 0.0) / scale))
    u = econ.utility.value(x)                                                # (S, N)
    values = d @ u
    best, best_lower, _ = consumer_best_value(econ, chain, p, q, beta)
    consumer_regret = np.maximum(best - values, 0.0)
    z, Y = excess_demand(econ, chain, profile)
    Ys = Y[chain.world]
    br = econ.price_sum * z.max(axis=1) + econ.asset_price_max * np.maximum(Ys, 0.0).sum(axis=1)
    current = np.einsum("sm,sm->s", p, z) + np.einsum("sk,sk->s", q, Ys)
    auctioneer_regret = float(d @ np.maximum(br - current, 0.0))
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
        "bellman_error": bellman,
        "portfolio_foc": _portfolio_foc(econ, chain, p, q, y, beta),
    }


def _portfolio_foc(econ, chain, p, q, y, beta) -> float:
    """max over consumers of |clip(y + g / |g|_max) - y|: the projected portfolio gradient on the
    holdings box (0 at a box-interior or box-corner optimum)."""
    if econ.n_assets == 0:
        return 0.0
    W, N, K = y.shape
    g = portfolio_matrix(econ, chain, q).T @ (chain.occupancy[:, None] * beta)      # (W*K, N)
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
                          violation=m["budget_violation"])
    return m, expl


def tatonnement(econ, run, *, step=0.5, asset_step=1.0, asset_every=10, asset_decay=1.0, check_every=25):
    """Multiplicative tatonnement on goods prices per state with exact demands (Cobb-Douglas,
    Leontief, CES), proportional response for linear utilities (spending shares follow the utility
    each good brings; prices clear the goods markets); every ``asset_every`` steps the asset markets
    are cleared at the current goods prices (:func:`clear_assets`, damped by ``asset_step``). Every ``check_every`` steps the profile is certified and handed to ``run``
    (:class:`~solvopt.games.tracking.EquilibriumRun`, which keeps the best and says when to stop).
    Returns the metrics of every certified profile, keyed by iteration."""
    chain = pair_chain(econ)
    prof = initial_profile(econ, chain)
    p, q, y = prof.prices, prof.asset_prices, prof.portfolio
    supply = econ.endowments[chain.world].sum(axis=1)                    # (S, M)
    shares = None
    if econ.utility.kind == "linear":     # spending shares of proportional response, from even spending
        shares = np.broadcast_to(econ.utility.weights > 0, prof.consumption.shape).astype(float)
        shares /= shares.sum(axis=-1, keepdims=True)
    m, expl = certificate(econ, chain, prof)
    history = {0: m}
    if run.record(0, prof, expl):
        return history
    it = 0
    while True:
        it += 1
        if shares is not None:                          # proportional response (linear utilities)
            Wl = np.maximum(wealth(econ, chain, p, q, y), 0.0)
            p = np.einsum("snm,sn->sm", shares, Wl) / supply
            p = np.maximum(p, 1e-12 * econ.price_sum / econ.n_goods)
            p *= econ.price_sum / p.sum(axis=1, keepdims=True)
            gain = econ.utility.weights[None] * shares / p[:, None, :]
            shares = gain / np.maximum(gain.sum(axis=-1, keepdims=True), 1e-300)
        else:                                           # multiplicative tatonnement
            x = demand(econ, chain, p, q, y)
            z = x.sum(axis=1) / supply - 1.0
            p = p * np.exp(step * np.clip(z, -1.0, 1.0))
            p *= econ.price_sum / p.sum(axis=1, keepdims=True)
        if econ.n_assets and it % asset_every == 0:   # damping asset_step / (1 + clearings)^asset_decay
            q, y = clear_assets(econ, chain, p, y, asset_step / (1.0 + it // asset_every) ** asset_decay)
        last = it % check_every == 0
        if last or run.should_stop(it):
            held = affordable(econ, chain, p, q, y)     # the certified profile is budget-feasible
            prof = Profile(p.copy(), q.copy(), _consumption(econ, chain, p, q, held, shares), held)
            m, expl = certificate(econ, chain, prof)
            history[it] = m
            if run.record(it, prof, expl) or not last or run.should_stop(it):
                return history


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
    np.add.at(B, chain.prev[after], wd[after][:, :, None] * econ.asset_returns[chain.world[after]][:, None, :])
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
    G = portfolio_matrix(econ, chain, q)
    c = endowment_values(econ, chain, p)                                  # (S, N)
    W, N, K = y.shape
    flat = y.transpose(0, 2, 1).reshape(W * K, N)
    spend = G @ flat                                                      # (S, N): wealth = c + spend
    with np.errstate(divide="ignore", invalid="ignore"):
        room = np.where(spend < 0, c / -spend, np.inf)
    t = np.clip(room.min(axis=0), 0.0, 1.0)
    return y * t[None, :, None]


def random_economy(consumers, goods, assets, world_states, utility="cobb_douglas", stochastic=True,
                   discount=0.9, seed=0, **model_options):
    """A random economy of the paper's kind (types and endowments uniform, returns uniform);
    ``model_options`` go to :class:`~solvopt.dsl.markov_games.MarkovExchangeEconomy`."""
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
    return MarkovExchangeEconomy((utility, weights), endow, T, discount, asset_returns=R, **model_options)
