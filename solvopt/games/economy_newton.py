"""Newton's method for Markov exchange economies (method ``markov-newton``).

The equilibrium conditions of :mod:`solvopt.games.economy` with logit-smoothed portfolios (and
CES-smoothed demands for linear utilities) as a square system with its exact Jacobian
(:class:`SmoothedEquations`), solved by damped Newton steps and continued in the smoothing towards
sharp portfolios (:func:`newton`); every iterate is certified with
:func:`solvopt.games.economy.checked_certificate`.
"""
from __future__ import annotations

import numpy as np

from solvopt.core.errors import SolverError

from .economy import (
    PairChain,
    Profile,
    affordable,
    checked_certificate,
    pair_chain,
    project_prices,
    tatonnement_step,
    wealth,
)


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
    (:func:`solvopt.games.economy.reservation_prices` with omega), and its holding is the logit
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
        Yp = -np.einsum("wiks,si,sij->wiksj", T, omega, x1, optimize=True)                      # (W, N, K, S, M)
        if self.bundles is not None:      # the returns p(s) . b(s) in B move with p(s) too
            direct = np.einsum("ws,si,skj,wik->wiksj", self.on_prev, omega, self.bundles, 1.0 / B, optimize=True)
            Yp += dy[..., None, None] * direct
        Ymu = T * base.T[None, :, None, :]                                                      # (W, N, K, S)
        Ye = -dy                                                                                 # (W, N, K) own (w, k)
        # wealth W[s, i] against the unknowns
        Wp = np.einsum("skw,wiktj->sitj", U, Yp, optimize=True)                                 # (S, N, S, M)
        Wp[np.arange(S), :, np.arange(S), :] += self.endow
        if self.bundles is not None:      # the payouts carried into s, valued at p(s)
            Wp[np.arange(S), :, np.arange(S), :] += np.einsum("ws,skj,wik->sij", self.on_prev, self.bundles, y,
                                                              optimize=True)
        We = np.einsum("skw,wik->siwk", U, Ye, optimize=True)
        q = np.exp(eta)
        We -= np.einsum("ws,wk,wik->siwk", self.on_world, q, y, optimize=True)
        Wmu = np.einsum("skw,wikt->sit", U, Ymu, optimize=True)                                 # (S, N, S)
        # excess demand z[s, j]
        gx = np.where(pos, 1.0, 0.0)[..., None] * x1                                            # (S, N, M)
        Zp = np.einsum("sij,sitl->sjtl", gx, Wp, optimize=True)
        spend = np.where(pos, wealth, 0.0)
        own = -self.sigma * np.einsum("si,sij->sj", spend, x1, optimize=True) / p              # diagonal part
        cross = (self.sigma - 1.0) * np.einsum("si,sij,sil->sjl", spend, x1, x1, optimize=True)
        cross[:, np.arange(M), np.arange(M)] += own
        Zp[np.arange(S), :, np.arange(S), :] += cross
        Ze = np.einsum("sij,siwk->sjwk", gx, We, optimize=True)
        Zmu = np.einsum("sij,sit->sjti", gx, Wmu, optimize=True)                                # (S, M, S, N)
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
    good, tau_good, risk_good, log_cut = None, None, None, -np.log(tau_factor)
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
        self.history: dict[int, dict] = {}        # iteration -> the certificate's measures
        self.it = start_iteration
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
                p, eta, mu, y = eq.split(w)
                margin = eq.holdings(p, eta, mu, tau, y)[2]
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
