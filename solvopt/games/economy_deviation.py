"""A consumer's best response in a Markov exchange economy over every deviation the model allows.

Against a profile's prices p(s), q(s) (s the pair state of :func:`solvopt.games.economy.pair_chain`)
a consumer faces a Markov decision process whose state is (s, x): the pair state and the holdings
x it carried into it. With a degree-1 homogeneous utility the best bundle for wealth W is worth
beta(s) W, so at (s, x) the consumer chooses its new holdings y in the box [-b, h] with
W = c(s) + R(w_s).x - q(s).y >= 0 and earns beta(s) W (c(s) = p(s).e(w_s); x = 0 at a start
state). A deviation may depend on everything the consumer observes: the whole world-state
history and its own past holdings. Because the chain is exogenous and the prices depend on s
alone, V*(s, x) is the best value over all of them, and from mu the best response is worth
sum over start states of mu(s) V*(s, 0). Two certified upper bounds on it:

- **Lagrangian** (any number of assets). For multipliers lam(s) >= 0 on the wealth constraints,
  L(s, x) = (beta + lam)(s) R(w_s).x + Psi(s), Psi = (I - gamma P)^-1 [(beta + lam) c +
  max over the box of A_lam(s).y], A_lam(s) = -(beta + lam)(s) q(s) + gamma sum_s' P(s, s')
  (beta + lam)(s') R(w_s'), satisfies T L <= L for the Bellman operator T of the MDP above (drop
  the wealth constraint after adding lam W >= 0), so V* <= L. Its value from mu is an LP in lam
  (HiGHS); lam = 0 is exact when the pair-state holdings it picks never overspend.
- **Dynamic program** (one asset). V*(s, .) is concave and piecewise linear in the carried
  holding x (the MDP's reward and constraint are linear in (x, y)). Starting from U_0 = L, the
  iterates U_{n+1} = T U_n are computed exactly on concave piecewise-linear functions of x (the
  kinks of T U(s, .) are the successors' kinks mapped through x = (q kappa - c) / R, plus the
  domain's ends); kinks that rounding left convex are removed by the chord and near-redundant
  ones by extending the neighbouring pieces, both of which only raise the function. T is
  monotone and U_0 >= V*, so every U_n >= V*: each iterate's value from mu is a certified
  bound, and they decrease to V* at the rate gamma. The McQueen-Porteus bound of each step
  (:meth:`OneAssetDP.solve`) runs ahead of them.

Lower bounds are values of concrete deviations: the holdings y(s) of the pair state (an LP with
a wealth row for every transition of the pair chain, or the relaxation's holdings scaled until
affordable), the dynamic program's greedy policy, and the profile itself.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from solvopt.core.errors import SolverError

from .projection import check_stop, run_highs

DP_MAX_ITERATIONS = 2000     # Bellman steps of the one-asset dynamic program per consumer
DP_TIME_LIMIT = 2.0          # seconds per consumer; the bound of the last step is kept (valid at any step)
DP_TIME_BUDGET = 4.0         # seconds for all consumers of one certificate (each gets at least 0.05 s)
DP_MAX_KINKS = 400           # kinks per state after simplification (more raise the merge tolerance)
EXACT_RTOL = 1e-13           # upper - lower below this x the consumer's scale: the best response is settled
REL_PRECISION = 1e-4         # the dynamic program stops once its bound is this close to the regret's value

GUARANTEE = ("objective is a certified upper bound on the exploitability of the returned profile over every "
             "deviation the model allows: each consumer's holdings and bundles may depend on the whole world-state "
             "history and on its own past holdings (bounded by a dynamic program over (pair state, own holding) "
             "with one asset, by a Lagrangian bound with several), the auctioneer's prices on their feasible set "
             "(closed form); 0 only at an equilibrium")


@dataclass
class DeviationBounds:
    """Per consumer: ``upper`` >= the best value of any deviation >= ``lower`` (a concrete one's value);
    ``how`` names the bound that set ``upper``: 'closed form', 'lagrangian' or 'dynamic program'."""

    upper: np.ndarray
    lower: np.ndarray
    how: list = field(default_factory=list)
    dp_iterations: int = 0
    seconds: float = 0.0


def highs_model(cost, A, row_lo, row_hi, lb, ub, integrality=None):
    """A Highs instance holding min cost.x s.t. row_lo <= A x <= row_hi, lb <= x <= ub (``integrality``: 1 for
    the integer columns), passed column-wise in one call."""
    import highspy
    from scipy import sparse

    from solvopt.dsl.highs_export import colwise_matrix, new_highs
    M = colwise_matrix(sparse.csc_matrix(A))
    m, n = M.shape
    h = new_highs()
    h.passModel(n, m, int(M.nnz), int(highspy.MatrixFormat.kColwise), int(highspy.ObjSense.kMinimize), 0.0,
                np.ascontiguousarray(cost, dtype=float), np.ascontiguousarray(lb, dtype=float),
                np.ascontiguousarray(ub, dtype=float), np.ascontiguousarray(row_lo, dtype=float),
                np.ascontiguousarray(row_hi, dtype=float), M.indptr.astype(np.int32), M.indices.astype(np.int32),
                np.ascontiguousarray(M.data, dtype=float),
                np.zeros(n, dtype=np.int32) if integrality is None else np.asarray(integrality, dtype=np.int32))
    return h


def highs_lp(cost, A_ub, b_ub, lb, ub):
    """min cost.x s.t. A_ub x <= b_ub, lb <= x <= ub by HiGHS, with the running solve's time left and
    Ctrl-C (:class:`~solvopt.games.projection.Stopped` when either cuts it short): (x, row duals, in
    linprog's sign: <= 0 on binding rows), or None when HiGHS does not prove an optimum."""
    import highspy
    check_stop()
    h = highs_model(cost, A_ub, np.full(len(b_ub), -np.inf), b_ub, lb, ub)
    if run_highs(h) != highspy.HighsModelStatus.kOptimal:
        return None
    sol = h.getSolution()
    return np.asarray(sol.col_value, dtype=float), np.asarray(sol.row_dual, dtype=float)


def _edges(chain):
    """(from, to) pair-state transitions with positive probability, from reachable states."""
    a, b = np.nonzero(chain.P > 0)
    keep = chain.occupancy[a] > 0
    return a[keep], b[keep]


def money_returns(econ, chain, prices) -> np.ndarray:
    """(S, K) the money one unit of each asset bought before s pays at s (bundles valued at p(s))."""
    if hasattr(econ, "returns_at"):
        return econ.returns_at(chain.world, prices)
    return econ.asset_returns[chain.world]


def check_supported(econ) -> None:
    """SolverError for model options under which these bounds do not hold: utilities homogeneous of
    a degree other than 1 (the value is then not linear in wealth), endowment floors or caps (not
    linear in the holdings), a finite horizon (values depend on the time left)."""
    degree = getattr(econ, "degree", 1.0)
    if degree != 1.0 or getattr(econ, "endowment_floor", None) is not None \
            or getattr(econ, "endowment_cap", None) is not None or getattr(econ, "horizon", None) is not None:
        raise SolverError("the economy's certificate covers utilities homogeneous of degree 1, no endowment floors "
                          "or caps and an infinite horizon; this economy uses another option")


def deviation_bounds(econ, chain, prices, asset_prices, beta, profile_values=None) -> DeviationBounds:
    """Certified bounds on each consumer's best value from mu over every deviation (module docstring).

    ``profile_values`` (N,), the consumers' values at the profile when the profile is
    budget-feasible, serve as lower bounds (the profile is one of the deviations)."""
    check_supported(econ)
    t0 = time.perf_counter()
    N, K = econ.n_consumers, econ.n_assets
    d, P, gamma = chain.occupancy, chain.P, econ.discount
    c = np.einsum("sm,snm->sn", prices, econ.endowments[chain.world])              # (S, N)
    base = np.einsum("s,sn,sn->n", d, beta, c)
    if K == 0:
        return DeviationBounds(base, base.copy(), ["closed form"] * N, 0, time.perf_counter() - t0)
    q = np.asarray(asset_prices, dtype=float)                                         # (S, K)
    start = chain.prev < 0
    R = np.where(start[:, None], 0.0, money_returns(econ, chain, prices))             # (S, K) paid on arrival
    lo, hi = -econ.borrowing_limit, econ.holding_limit
    upper, lower, how = np.empty(N), np.full(N, -np.inf), [""] * N
    if profile_values is not None:
        lower = np.maximum(lower, profile_values)
    # lam = 0: the pair-state holdings that maximise A_0(s).y over the box
    A0 = -beta[:, :, None] * q[:, None, :] + gamma * np.einsum("st,tn,tk->snk", P, beta, R)   # (S, N, K)
    y0 = _box_argmax(A0, lo, hi)
    upper0 = base + np.einsum("s,snk->n", d, np.maximum(A0 * hi, A0 * lo))
    a, b = _edges(chain)
    starts = np.flatnonzero(start & (d > 0))
    tol = 1e-12 * np.maximum(1.0, np.abs(c))
    ok = np.all(c[b] + np.einsum("ek,enk->en", R[b], y0[a]) - np.einsum("ek,enk->en", q[b], y0[b]) >= -tol[b], axis=0)
    ok &= np.all(c[starts] - np.einsum("ek,enk->en", q[starts], y0[starts]) >= -tol[starts], axis=0)
    dp_iterations = 0
    rest = np.flatnonzero(~ok)
    lams, ubs = _lagrangian(chain, gamma, beta[:, rest], c[:, rest], q, R, lo, hi)
    lams, ubs = dict(zip(rest, lams)), dict(zip(rest, ubs))
    for i in range(N):
        if ok[i]:                     # the relaxation's optimum is a feasible deviation: exact
            upper[i], lower[i], how[i] = upper0[i], max(lower[i], upper0[i]), "closed form"
            continue
        lam = lams[i]
        upper[i], how[i] = min(ubs[i], upper0[i]), "lagrangian"
        # concrete deviations: the relaxation's pair-state holdings, scaled towards 0 until affordable
        for y in (y0[:, i], _box_argmax(_lagrangian_slopes(chain, gamma, beta[:, i], q, R, lam), lo, hi)):
            y = _affordable(y, a, b, starts, c[:, i], q, R)
            lower[i] = max(lower[i], float(d @ (beta[:, i] * c[:, i]) + np.sum(d[:, None] * A0[:, i] * y)))
        if profile_values is None or K == 1:     # the best pair-state holdings (one asset: few states, cheap)
            lower[i] = max(lower[i], _pair_state_lp(chain, a, b, starts, beta[:, i], c[:, i], q, R, lo, hi,
                                                    A0[:, i]))
        scale = max(1.0, abs(upper[i]))
        if K == 1 and np.all(q >= 0) and upper[i] - lower[i] > EXACT_RTOL * scale:   # (q < 0: prices off their set)
            dp = OneAssetDP(chain, gamma, beta[:, i], c[:, i], q[:, 0], R[:, 0], lo[0], hi[0])
            reference = lower[i] if profile_values is None else profile_values[i]
            seconds = min(DP_TIME_LIMIT, max(0.05, DP_TIME_BUDGET - (time.perf_counter() - t0)))
            bound, low, its = dp.solve(lam, lower[i], EXACT_RTOL * scale, reference, seconds)
            dp_iterations += its
            lower[i] = max(lower[i], low)
            if bound < upper[i]:
                upper[i], how[i] = bound, "dynamic program"
    return DeviationBounds(upper, lower, how, dp_iterations, time.perf_counter() - t0)


# --- the Lagrangian bound ------------------------------------------------------------------------
def _lagrangian(chain, gamma, beta, c, q, R, lo, hi):
    """Multipliers lam >= 0 that make mu . Psi small, and that bound (module docstring), for the
    consumers whose beta, c are the columns of (S, n) arrays. By LP duality min over lam of mu . Psi
    is the LP over pair-state holdings y(s) whose wealth is >= 0 only on average over the paths
    into s: sum_t gamma^t E[W_t 1{s_t = s}] = d(s) c(s) + gamma R(s) . sum_a d(a) P(a, s) y(a) -
    d(s) q(s) . y(s) >= 0. Its matrix is the same for every consumer: one HiGHS call solves them
    all (block diagonal); the row multipliers are lam, and each bound is re-evaluated from the
    clipped multipliers, so it does not trust the solver. Returns (lam (n, S), bounds (n,))."""
    from scipy import sparse
    S, K = q.shape
    n = beta.shape[1]
    if n == 0:
        return np.zeros((0, S)), np.zeros(0)
    d, P = chain.occupancy, chain.P
    inflow = sparse.csr_matrix(gamma * P.T * d[None, :])                    # (s, a): gamma d(a) P(a, s)
    one = sparse.hstack([-(sparse.diags(R[:, k]) @ inflow) + sparse.diags(d * q[:, k]) for k in range(K)])
    A_ub = sparse.block_diag([one] * n, format="csc")                      # columns (i, k, s)
    cost = np.concatenate([-(d[:, None] * _lagrangian_slopes(chain, gamma, beta[:, i], q, R, np.zeros(S))).T.ravel()
                           for i in range(n)])
    lb, ub = np.tile(np.repeat(lo, S), n), np.tile(np.repeat(hi, S), n)
    res = highs_lp(cost, A_ub, (d[:, None] * c).T.ravel(), lb, ub)
    lam = np.zeros((n, S)) if res is None else np.maximum(-res[1], 0.0).reshape(n, S)
    return lam, np.array([lagrangian_value(chain, gamma, beta[:, i], c[:, i], q, R, lo, hi, lam[i])
                          for i in range(n)])


def _box_argmax(A, lo, hi):
    return np.where(A > 0, hi, np.where(A < 0, lo, 0.0))


def lagrangian_value(chain, gamma, beta, c, q, R, lo, hi, lam):
    """mu . Psi at multipliers lam >= 0: a certified upper bound on the best response's value."""
    A = _lagrangian_slopes(chain, gamma, beta, q, R, lam)
    return float(chain.occupancy @ ((beta + lam) * c + np.maximum(A * hi, A * lo).sum(axis=1)))


def _lagrangian_slopes(chain, gamma, beta, q, R, lam):
    bl = beta + lam
    return -bl[:, None] * q + gamma * (chain.P @ (bl[:, None] * R))


def lagrangian_function(chain, gamma, beta, c, q, R, lo, hi, lam):
    """(slope (S, K), Psi (S,)): L(s, x) = slope(s).x + Psi(s) >= V*(s, x)."""
    A = _lagrangian_slopes(chain, gamma, beta, q, R, lam)
    f = (beta + lam) * c + np.maximum(A * hi, A * lo).sum(axis=1)
    Psi = np.linalg.solve(np.eye(len(f)) - gamma * chain.P, f)
    return (beta + lam)[:, None] * R, Psi


# --- a concrete deviation: holdings of the pair state -----------------------------------------
def _pair_state_lp(chain, a, b, starts, beta, c, q, R, lo, hi, A0):
    """The best holdings y(s) that depend on the pair state, affordable after every transition:
    max sum_s d(s) (beta c + A0(s).y(s)) s.t. c(t) + R(t).y(s) - q(t).y(t) >= 0 for each edge s -> t
    and c(t) - q(t).y(t) >= 0 at the start states. Returns its value (-inf if HiGHS fails)."""
    from scipy import sparse
    S, K = q.shape
    d = chain.occupancy
    E, n = len(a), len(starts)
    cols_k = np.arange(K)
    A_e = sparse.csr_matrix((np.concatenate([-R[b].ravel(), q[b].ravel()]),
                             (np.tile(np.repeat(np.arange(E), K), 2),
                              np.concatenate([(a[:, None] * K + cols_k).ravel(), (b[:, None] * K + cols_k).ravel()]))),
                            shape=(E, S * K))
    A_s = sparse.csr_matrix((q[starts].ravel(), (np.repeat(np.arange(n), K), (starts[:, None] * K + cols_k).ravel())),
                            shape=(n, S * K))
    A_ub = sparse.vstack([A_e, A_s]).tocsc()
    b_ub = np.concatenate([c[b], c[starts]])
    g = (d[:, None] * A0).ravel()
    res = highs_lp(-g, A_ub, b_ub, np.tile(lo, S), np.tile(hi, S))
    if res is None:
        return -np.inf
    y = np.clip(res[0], np.tile(lo, S), np.tile(hi, S)).reshape(S, K)
    wealth_e = c[b] + np.einsum("ek,ek->e", R[b], y[a]) - np.einsum("ek,ek->e", q[b], y[b])
    wealth_s = c[starts] - np.einsum("ek,ek->e", q[starts], y[starts])
    if np.any(wealth_e < 0) or np.any(wealth_s < 0):   # pull the holdings towards 0 until affordable
        y = _affordable(y, a, b, starts, c, q, R)
    return float(d @ (beta * c) + np.sum(d[:, None] * A0 * y))


def _affordable(y, a, b, starts, c, q, R):
    """y scaled by the largest t in [0, 1] with every edge's and start's wealth >= 0 (t = 0 is)."""
    we = np.einsum("ek,ek->e", R[b], y[a]) - np.einsum("ek,ek->e", q[b], y[b])
    ws = -np.einsum("ek,ek->e", q[starts], y[starts])
    slope, const = np.concatenate([we, ws]), np.concatenate([c[b], c[starts]])
    neg = slope < 0
    t = 1.0 if not np.any(neg) else float(min(1.0, np.min(const[neg] / -slope[neg])))
    return y * max(0.0, t) * (1 - 1e-15)


# --- the one-asset dynamic program ----------------------------------------------------------------
class OneAssetDP:
    """Exact Bellman steps on concave piecewise-linear V(s, .) of the carried holding (module docstring).

    A function is (xs, vs): kinks xs (sorted, the domain's ends first and last) and values; linear
    between, -inf outside [xs[0], xs[-1]]; None when its domain is empty."""

    def __init__(self, chain, gamma, beta, c, q, R, lo, hi):
        self.chain, self.gamma = chain, gamma
        self.beta, self.c, self.q, self.R = beta, c, q, R
        self.lo, self.hi = float(lo), float(hi)
        S = len(c)
        self.succ = [np.flatnonzero(chain.P[s] > 0) for s in range(S)]
        self.prob = [chain.P[s, self.succ[s]] for s in range(S)]
        self.starts = np.flatnonzero(chain.initial > 0)
        self.scale = max(1.0, float(np.max(np.abs(beta * c))) / (1 - gamma))
        self.policy = [None] * S

    def greedy_value(self):
        """The best of :meth:`greedy_walk` exact and with wealth-bound holdings rounded down to a
        grid (affordable all the same; the walk then reaches finitely many holdings)."""
        value = self.greedy_walk(max_nodes=1500)
        if value == -np.inf:
            value = self.greedy_walk(snap=1e-5 * (self.hi - self.lo), max_nodes=6000)
        return value

    def greedy_walk(self, snap=None, max_nodes=4000):
        """The value from mu of the greedy policy of the last Bellman step, y = min(y*(s), u(s, x))
        (a concrete deviation; its holdings from (start, 0) are followed exactly and its value solved
        on the states it reaches), or -inf when it reaches more than ``max_nodes`` (s, x) or a
        state it cannot afford."""
        from scipy import sparse
        from scipy.sparse.linalg import spsolve
        nodes, index, reward, rows, cols, vals = [], {}, {}, [], [], []
        todo = []
        for s in self.starts:
            index[(int(s), 0.0)] = len(nodes)
            nodes.append((int(s), 0.0))
            todo.append(len(nodes) - 1)
        while todo:
            k = todo.pop()
            s, x = nodes[k]
            if self.policy[s] is None:
                return -np.inf
            gl, ystar = self.policy[s]
            wealth_all = self.c[s] + self.R[s] * x
            y = ystar if self.q[s] <= 0 else min(ystar, wealth_all / self.q[s])
            if snap is not None and y < ystar:       # wealth-bound: a grid point below, still affordable
                y = self.lo + np.floor((y - self.lo) / snap) * snap
            y = max(y, self.lo)
            wealth = wealth_all - self.q[s] * y
            if wealth < 0 or y < gl - 1e-12:
                return -np.inf
            reward[k] = self.beta[s] * wealth
            for t, pr in zip(self.succ[s], self.prob[s]):
                key = (int(t), float(y))
                j = index.get(key)
                if j is None:
                    if len(nodes) >= max_nodes:
                        return -np.inf
                    j = index[key] = len(nodes)
                    nodes.append(key)
                    todo.append(j)
                rows.append(k)
                cols.append(j)
                vals.append(pr)
        n = len(nodes)
        Pm = sparse.csr_matrix((vals, (rows, cols)), shape=(n, n))
        v = spsolve((sparse.identity(n, format="csr") - self.gamma * Pm).tocsc(),
                    np.array([reward[k] for k in range(n)]))
        return float(sum(self.chain.initial[s] * v[index[(int(s), 0.0)]] for s in self.starts))

    def value_from_mu(self, U) -> float:
        total = 0.0
        for s in self.starts:
            v = _evaluate(U[s], 0.0)
            total += self.chain.initial[s] * v
        return float(total)

    def solve(self, lam, lower, atol, reference, seconds=DP_TIME_LIMIT):
        """(certified upper bound, best lower bound, Bellman steps) on the value from mu.

        Two bounds per step: U_{n+1}(mu) itself, and the McQueen-Porteus bound. With delta(s) =
        sup over x of U_{n+1}(s, x) - U_n(s, x) (exact: both are piecewise linear), T U_n <=
        U_n + delta and T(U + f) = T U + gamma P f for f depending on s only give T^{k+1} U_n -
        T^k U_n <= (gamma P)^k delta, so V* <= U_{n+1} + gamma P (I - gamma P)^-1 delta and from
        mu V*(mu) <= U_{n+1}(mu) + (d - mu) . delta (delta is mostly negative: the bound runs
        ahead of the iterates). Steps run until the bound is within the target of the lower
        bound, or the step and time caps; the target is ``atol`` or REL_PRECISION of the regret
        bound - ``reference``, whichever is larger. Every bound is valid, so stopping early only
        loosens it."""
        chain, gamma = self.chain, self.gamma
        slope, Psi = lagrangian_function(chain, gamma, self.beta, self.c, self.q[:, None], self.R[:, None],
                                         np.array([self.lo]), np.array([self.hi]), lam)
        xs = np.array([self.lo, self.hi])
        U = [(xs, slope[s, 0] * xs + Psi[s]) for s in range(len(Psi))]
        best = self.value_from_mu(U)
        weight = np.maximum(chain.occupancy - chain.initial, 0.0)       # mu gamma P (I - gamma P)^-1
        t0, n = time.perf_counter(), 0
        while n < DP_MAX_ITERATIONS and time.perf_counter() - t0 < seconds:
            target = max(atol, REL_PRECISION * (best - reference))
            if best - lower <= target:
                break
            check_stop()
            n += 1
            eps = max(1e-15 * self.scale, 0.01 * (1 - gamma) * target)   # raises U by <= target / 100 in all
            new = [self.bellman(U, s, eps) for s in range(len(U))]
            val = self.value_from_mu(new)
            delta = np.array([_sup_difference(f, g) for f, g in zip(new, U)])
            used = weight > 0
            if np.all(np.isfinite(delta[used])):
                val = min(val, val + float(weight[used] @ delta[used]))
            if n > 2 and best - val <= (1 - gamma) * target:   # the bound has settled: the rest is in the lower one
                best = min(best, val)
                break
            best = min(best, val)
            U = new
            if n % 20 == 0:
                lower = max(lower, self.greedy_value())
        if n:
            lower = max(lower, self.greedy_value())
        return best, lower, n

    def bellman(self, U, s, eps):
        """(T U)(s, .) as a concave piecewise-linear function (exact up to rounding, then raised):
        the compiled step (:func:`_nb_bellman`), the same as :meth:`bellman_reference`."""
        parts = [U[t] for t in self.succ[s]]
        if any(p is None for p in parts):
            self.policy[s] = None
            return None
        sx = np.concatenate([p[0] for p in parts])
        sv = np.concatenate([p[1] for p in parts])
        soff = np.concatenate([[0], np.cumsum([len(p[0]) for p in parts])])
        ok, xs, vs, gl, ystar = _nb_bellman(sx, sv, soff, self.prob[s], float(self.beta[s]), float(self.c[s]),
                                           float(self.q[s]), float(self.R[s]), self.lo, self.hi, self.gamma,
                                           float(eps), DP_MAX_KINKS)
        self.policy[s] = (gl, ystar) if ok else None
        return (xs, vs) if ok else None

    def bellman_reference(self, U, s, eps):
        """(T U)(s, .) in NumPy: the reference the compiled step is tested against."""
        succ, prob = self.succ[s], self.prob[s]
        parts = [U[t] for t in succ]
        if any(p is None for p in parts):
            return None
        gl = max(p[0][0] for p in parts)
        gr = min(p[0][-1] for p in parts)
        if gl > gr:
            return None
        pts = np.unique(np.concatenate([p[0] for p in parts] + [[gl, gr]]))
        pts = pts[(pts >= gl) & (pts <= gr)]
        beta, c, q, R, gamma = self.beta[s], self.c[s], self.q[s], self.R[s], self.gamma
        G = -beta * q * pts + gamma * sum(pr * np.interp(pts, xs, vs) for pr, (xs, vs) in zip(prob, parts))
        lo, hi = self.lo, self.hi
        self.policy[s] = (gl, float(pts[int(np.argmax(G))]))      # the feasible y range's left end, the best y
        if q <= 0:      # the holdings cost nothing: any y; the wealth c + R x must be >= 0
            top = float(G.max())
            dom = _half_line(R, -c, lo, hi)
            if dom is None:
                return None
            xs = np.array(dom)
            return _tidy(xs, beta * (c + R * xs) + top, eps)
        # y <= u(x) = (c + R x) / q; feasible iff u(x) >= gl
        if R == 0:
            u = c / q
            if u < gl:
                return None
            v = beta * c + _prefix_value(pts, G, u)
            return (np.array([lo, hi]), np.array([v, v]))
        dom = _half_line(R, q * gl - c, lo, hi)
        if dom is None:
            return None
        xs = (q * pts - c) / R
        xs = np.unique(np.concatenate([xs[(xs > dom[0]) & (xs < dom[1])], dom]))
        u = (c + R * xs) / q
        vals = beta * (c + R * xs) + _prefix_value(pts, G, u)
        return _tidy(xs, vals, eps)


def _sup_difference(f, g) -> float:
    """sup over x of f(x) - g(x) for piecewise-linear (xs, vs) functions (-inf outside their
    domains): -inf when f is nowhere finite, +inf when f is finite where g is not."""
    if f is None:
        return -np.inf
    if g is None:
        return np.inf
    fx, fv = f
    gx, gv = g
    if fx[0] < gx[0] - 1e-15 * max(1.0, abs(gx[0])) or fx[-1] > gx[-1] + 1e-15 * max(1.0, abs(gx[-1])):
        return np.inf
    pts = np.concatenate([fx, gx[(gx > fx[0]) & (gx < fx[-1])]])
    return float(np.max(np.interp(pts, fx, fv) - np.interp(pts, gx, gv)))


def _half_line(R, rhs, lo, hi):
    """[lo, hi] intersected with {x : R x >= rhs} as (a, b), or None when empty."""
    if R > 0:
        a, b = max(lo, rhs / R), hi
    elif R < 0:
        a, b = lo, min(hi, rhs / R)
    else:
        a, b = (lo, hi) if rhs <= 0 else (1.0, 0.0)
    return (a, b) if a <= b else None


def _prefix_value(pts, G, u):
    """max over y in [pts[0], min(u, pts[-1])] of the piecewise-linear G(pts) (u >= pts[0])."""
    u = np.minimum(np.asarray(u, dtype=float), pts[-1])
    run = np.maximum.accumulate(G)
    k = np.searchsorted(pts, u, side="right") - 1          # last kink <= u
    k = np.clip(k, 0, len(pts) - 1)
    return np.maximum(run[k], np.interp(u, pts, G))


def _evaluate(f, x):
    if f is None:
        return -np.inf
    xs, vs = f
    if x < xs[0] - 1e-15 or x > xs[-1] + 1e-15:
        return -np.inf
    return float(np.interp(x, xs, vs))


def _tidy(xs, vs, eps):
    """The concave piecewise-linear function through (xs, vs), raised where needed: kinks that
    rounding left convex are removed (the chord of the neighbours lies above), then pieces whose
    removal raises the function by at most eps (or the tolerance that keeps DP_MAX_KINKS) are
    dropped by extending their neighbours."""
    if len(xs) > 2:          # kinks closer than rounding: one of each group, the domain's ends stay
        keep = np.concatenate([[True], np.diff(xs) > 1e-14 * max(1.0, abs(xs[-1] - xs[0]))])
        last = np.flatnonzero(keep)[-1]
        if last != len(xs) - 1:
            if last > 0:
                keep[last] = False
            keep[-1] = True
        xs, vs = xs[keep], vs[keep]
    while len(xs) > 2:       # convex kinks from rounding
        sl = np.diff(vs) / np.diff(xs)
        bad = np.flatnonzero(sl[1:] > sl[:-1]) + 1
        if len(bad) == 0:
            break
        bad = bad[np.concatenate([[True], np.diff(bad) > 1])]     # no two neighbours at once
        mask = np.ones(len(xs), bool)
        mask[bad] = False
        xs, vs = xs[mask], vs[mask]
    tol, passes = eps, 0
    while len(xs) > 3:
        xs2, vs2 = _drop_pieces(xs, vs, tol)
        passes += 1
        if len(xs2) == len(xs) or passes >= (1 if len(xs2) <= 64 else 3):
            if len(xs2) <= DP_MAX_KINKS:
                return xs2, vs2
            tol *= 4
        xs, vs = xs2, vs2
    return xs, vs


def _drop_pieces(xs, vs, tol):
    """Drop the inner pieces (xs[k], xs[k+1]) whose removal raises the function by <= tol: the
    neighbouring pieces' lines extended to their crossing. No two neighbouring pieces at once."""
    sl = np.diff(vs) / np.diff(xs)                       # piece k: slope sl[k] through (xs[k], vs[k])
    k = np.arange(1, len(sl) - 1)
    m1, m2 = sl[k - 1], sl[k + 1]
    # crossing of line k-1 (through xs[k], vs[k]) and line k+1 (through xs[k+1], vs[k+1])
    denom = m1 - m2
    with np.errstate(divide="ignore", invalid="ignore"):
        xc = (vs[k + 1] - vs[k] + m1 * xs[k] - m2 * xs[k + 1]) / denom
        vc = vs[k] + m1 * (xc - xs[k])
        rise = vc - (vs[k] + sl[k] * (xc - xs[k]))
    inside = (denom > 0) & (xc >= xs[k]) & (xc <= xs[k + 1])
    can = np.flatnonzero(inside & (rise <= tol))
    if len(can) == 0:
        return xs, vs
    # in each run of consecutive candidates, every other one (no two neighbouring pieces)
    run_start = np.concatenate([[True], np.diff(can) > 1])
    first = np.maximum.accumulate(np.where(run_start, np.arange(len(can)), 0))
    chosen = can[(np.arange(len(can)) - first) % 2 == 0]
    kk = k[chosen]
    mask = np.ones(len(xs), bool)
    mask[kk] = False
    mask[kk + 1] = False
    nx = np.concatenate([xs[mask], xc[chosen]])
    nv = np.concatenate([vs[mask], vc[chosen]])
    order = np.argsort(nx, kind="stable")
    return nx[order], nv[order]


# --- the same Bellman step compiled (Numba): the program's inner loop ----------------------------
from numba import njit  # noqa: E402  (a core dependency; compiled on first use, cached)


@njit(cache=True)
def _nb_half_line(R, rhs, lo, hi):
    if R > 0:
        a, b = max(lo, rhs / R), hi
    elif R < 0:
        a, b = lo, min(hi, rhs / R)
    else:
        if rhs <= 0:
            a, b = lo, hi
        else:
            a, b = 1.0, 0.0
    return a <= b, a, b


@njit(cache=True)
def _nb_prefix_value(pts, G, u):
    run = np.empty_like(G)
    run[0] = G[0]
    for j in range(1, len(G)):
        run[j] = max(run[j - 1], G[j])
    out = np.empty(len(u))
    for j in range(len(u)):
        uj = min(u[j], pts[-1])
        k = np.searchsorted(pts, uj, side="right") - 1
        k = min(max(k, 0), len(pts) - 1)
        out[j] = max(run[k], np.interp(uj, pts, G))
    return out


@njit(cache=True)
def _nb_drop_pieces(xs, vs, tol):
    n = len(xs)
    sl = (vs[1:] - vs[:-1]) / (xs[1:] - xs[:-1])
    chosen = np.zeros(n, np.bool_)
    xc = np.zeros(n)
    vc = np.zeros(n)
    count = 0
    for k in range(1, len(sl) - 1):
        if chosen[k - 1]:
            continue
        m1, m2 = sl[k - 1], sl[k + 1]
        denom = m1 - m2
        if not denom > 0:
            continue
        x = (vs[k + 1] - vs[k] + m1 * xs[k] - m2 * xs[k + 1]) / denom
        if not (x >= xs[k] and x <= xs[k + 1]):
            continue
        v = vs[k] + m1 * (x - xs[k])
        if v - (vs[k] + sl[k] * (x - xs[k])) <= tol:
            chosen[k] = True
            xc[k], vc[k] = x, v
            count += 1
    if count == 0:
        return xs, vs
    ox = np.empty(n - count)
    ov = np.empty(n - count)
    j = i = 0
    while j < n:
        if chosen[j]:
            ox[i], ov[i] = xc[j], vc[j]
            j += 2
        else:
            ox[i], ov[i] = xs[j], vs[j]
            j += 1
        i += 1
    return ox, ov


@njit(cache=True)
def _nb_tidy(xs, vs, eps, max_kinks):
    n = len(xs)
    if n > 2:
        thr = 1e-14 * max(1.0, abs(xs[-1] - xs[0]))
        keep = np.ones(n, np.bool_)
        for j in range(1, n):
            keep[j] = xs[j] - xs[j - 1] > thr
        last = n - 1
        while not keep[last]:
            last -= 1
        if last != n - 1:
            if last > 0:
                keep[last] = False
            keep[n - 1] = True
        xs, vs = xs[keep], vs[keep]
    while len(xs) > 2:
        n = len(xs)
        sl = (vs[1:] - vs[:-1]) / (xs[1:] - xs[:-1])
        keep = np.ones(n, np.bool_)
        prev_bad = -10
        removed = 0
        for j in range(1, n - 1):
            if sl[j] > sl[j - 1]:
                if j - prev_bad > 1:
                    keep[j] = False
                    removed += 1
                prev_bad = j
        if removed == 0:
            break
        xs, vs = xs[keep], vs[keep]
    tol, passes = eps, 0
    while len(xs) > 3:
        xs2, vs2 = _nb_drop_pieces(xs, vs, tol)
        passes += 1
        if len(xs2) == len(xs) or passes >= (1 if len(xs2) <= 64 else 3):
            if len(xs2) <= max_kinks:
                return xs2, vs2
            tol *= 4
        xs, vs = xs2, vs2
    return xs, vs


@njit(cache=True)
def _nb_bellman(sx, sv, soff, prob, beta, c, q, R, lo, hi, gamma, eps, max_kinks):
    """(ok, xs, vs, gl, y*) of (T U)(s, .) from the successors' functions, concatenated in
    (sx, sv) with offsets soff: the same step as :meth:`OneAssetDP.bellman_reference`."""
    empty = np.empty(0)
    m = len(prob)
    gl, gr = -np.inf, np.inf
    for k in range(m):
        gl = max(gl, sx[soff[k]])
        gr = min(gr, sx[soff[k + 1] - 1])
    if gl > gr:
        return False, empty, empty, 0.0, 0.0
    tmp = np.empty(len(sx) + 2)
    t = 0
    for j in range(len(sx)):
        if sx[j] >= gl and sx[j] <= gr:
            tmp[t] = sx[j]
            t += 1
    tmp[t] = gl
    tmp[t + 1] = gr
    pts = np.unique(tmp[:t + 2])
    G = -beta * q * pts
    for k in range(m):
        G += gamma * prob[k] * np.interp(pts, sx[soff[k]:soff[k + 1]], sv[soff[k]:soff[k + 1]])
    ystar = pts[np.argmax(G)]
    if q <= 0:
        ok, a, b = _nb_half_line(R, -c, lo, hi)
        if not ok:
            return False, empty, empty, gl, ystar
        xs = np.array([a, b])
        xs2, vs2 = _nb_tidy(xs, beta * (c + R * xs) + G.max(), eps, max_kinks)
        return True, xs2, vs2, gl, ystar
    if R == 0:
        u = c / q
        if u < gl:
            return False, empty, empty, gl, ystar
        v = beta * c + _nb_prefix_value(pts, G, np.array([u]))[0]
        return True, np.array([lo, hi]), np.array([v, v]), gl, ystar
    ok, a, b = _nb_half_line(R, q * gl - c, lo, hi)
    if not ok:
        return False, empty, empty, gl, ystar
    cand = (q * pts - c) / R
    tmp = np.empty(len(cand) + 2)
    t = 0
    for j in range(len(cand)):
        if cand[j] > a and cand[j] < b:
            tmp[t] = cand[j]
            t += 1
    tmp[t] = a
    tmp[t + 1] = b
    xs = np.unique(tmp[:t + 2])
    u = (c + R * xs) / q
    vals = beta * (c + R * xs) + _nb_prefix_value(pts, G, u)
    xs2, vs2 = _nb_tidy(xs, vals, eps, max_kinks)
    return True, xs2, vs2, gl, ystar
