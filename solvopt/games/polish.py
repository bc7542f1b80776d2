"""Exact equilibria of linear markets (Fisher and Arrow-Debreu exchange) from approximate prices.

A linear market's equilibrium is combinatorial: every buyer spends only on its maximum
bang-per-buck (MBB) goods, v_ij / p_j = beta_i (the buyer's best bang per buck). Once a spanning
forest of the spending edges is known the prices follow exactly: along the forest
p_j = v_ij / beta_i fixes every price of a component up to one scale, and the scales come from
the money balance of the components.

**Fisher** (:func:`fisher_equilibrium`): a primal active-set method on the convex dual of the
Eisenberg-Gale program in log prices q and t_i = -log beta_i,

    min  sum_j s_j exp(q_j) - sum_i B_i t_i   s.t.  q_j - t_i >= log v_ij  (i likes j),

whose working set is a forest of tight MBB edges. On a forest the working-set minimiser is
closed-form (each component's goods cost its buyers' budgets), the constraints' multipliers are
the spending on the forest edges (unique on a forest), a blocking constraint always joins two
components (inside one, relative prices do not move), and a negative spending drops its edge.
Started from approximate prices (feasible once beta_i is the best bang per buck), it repairs the
support in a few pivots; the ratio test runs on the edges within 1% of tight, and edges
outside that turn out preferred join it and the method goes on. (The earlier polish built
the forest from the edges with the largest proportional-response bids at one guessed slack; at
200 x 200 and above near-ties always put an edge that is not tight at the equilibrium into it.)

**Exchange** (:func:`exchange_equilibrium`): incomes p . e_i depend on the prices. Take the
Fisher equilibrium's forest at the incomes of the current prices, then price that forest for the
exchange market: within a component the relative prices are fixed, and the component scales
solve a small LP — each component's goods earn its consumers' incomes (the Perron vectors of the
components' column-stochastic money-flow matrix: several when the components split into
self-sufficient groups, hence an LP rather than an eigen-solve), no consumer prefers another
component's good, the forest's spending is nonnegative. When that LP is feasible the forest's
prices are an exact equilibrium; otherwise the Fisher prices become the current prices and the
round repeats (a fixed-point iteration on the incomes).

Both end with an LP (HiGHS) that routes every income over the tight edges so each good's
revenue is p_j s_j. Whatever fails gives None: the caller keeps its approximate point, and
certifies every answer anyway.
"""
from __future__ import annotations

import copy
import functools

import numpy as np

CANDIDATE_SLACK = 1e-2       # the ratio test runs on edges within 1% of the buyer's best bang per buck
PIVOTS_PER_NODE = 4          # active-set steps per Fisher solve: this many per buyer and good (+ 100)
EXCHANGE_ROUNDS = 60         # Fisher solves per exchange polish
MAX_COMPONENTS = 500         # an exchange support split into more components is not worth the scale LP
TIGHT = 1e-10                # relative tolerance of "tight" (MBB), "preferred" and "negative spending"
ROUTE_TIGHT = 1e-12          # spending goes only on edges this close to the best bang per buck (utility lost:
                             # spend x beta x this, and beta is large where utilities are large)
DEGENERATE = 1e-9            # a scale LP margin this small: the scales sit on the boundary (binding rows made exact)


class LinearMarket:
    """A linear market (utilities v (n, m), supplies s; ``budgets`` (Fisher) or ``endowments`` (exchange))."""

    def __init__(self, v, supplies, budgets=None, endowments=None, stop=None):
        self.v, self.s = np.asarray(v, dtype=float), np.asarray(supplies, dtype=float)
        self.budgets, self.e = budgets, endowments
        self.stop = stop if stop is not None else (lambda: False)   # the caller's deadline / Ctrl-C: give up
        self.n, self.m = self.v.shape
        with np.errstate(divide="ignore"):
            self.logv = np.log(self.v)

    def with_budgets(self, budgets):
        """The Fisher market of the same buyers and goods with fixed ``budgets``."""
        fisher = copy.copy(self)
        fisher.budgets, fisher.e = budgets, None
        return fisher

    def income(self, p):
        return self.budgets if self.e is None else self.e @ p

    # --- a support forest: potentials, component money balance, spending ---------------------
    def components(self, forest):
        """(label, count): the connected components of the forest over buyers (0..n-1) and goods (n..n+m-1)."""
        label, ncomp, _, _, _ = forest_traversal(forest[0], forest[1], self.n, self.n + self.m)
        return label, ncomp

    def potentials(self, forest):
        """Log prices q_hat and t_hat = -log beta_hat tight on the forest (each component's root at 0), labels."""
        import scipy.sparse as sp
        from scipy.sparse.linalg import spsolve
        n, m = self.n, self.m
        buyer, good = forest
        nodes, k = n + m, len(buyer)
        label, ncomp = self.components(forest)
        roots = np.unique(label, return_index=True)[1]
        eq = sp.coo_matrix((np.concatenate([np.ones(k), -np.ones(k), np.ones(ncomp)]),
                            (np.concatenate([np.arange(k), np.arange(k), k + np.arange(ncomp)]),
                             np.concatenate([n + good, buyer, roots]))), shape=(nodes, nodes)).tocsc()
        logs = np.atleast_1d(spsolve(eq, np.concatenate([self.logv[buyer, good], np.zeros(ncomp)])))
        return logs[n:], logs[:n], label, ncomp

    def fisher_prices(self, forest):
        """The prices a forest fixes in the Fisher market, recomputed from log v (no drift from the pivots)."""
        q_hat, _, label, ncomp = self.potentials(forest)
        goods_label, buyer_label = label[self.n:], label[:self.n]
        value = np.bincount(goods_label, weights=np.exp(q_hat) * self.s, minlength=ncomp)
        money = np.bincount(buyer_label, weights=self.budgets, minlength=ncomp)
        return np.exp(q_hat) * np.divide(money, value, out=np.zeros(ncomp), where=value > 0)[goods_label]

    def tree_flows(self, forest, p, label):
        """The spending on each forest edge that balances every income and revenue (unique on a forest)."""
        return forest_flows(forest[0], forest[1], self.n, np.concatenate([self.income(p), p * self.s]), label)

    def route(self, p):
        """(x, p): every income routed over the tight edges by the LP, or None."""
        beta = np.max(self.v / p, axis=1)
        rows, cols = np.nonzero((self.v >= p * beta[:, None] * (1 - ROUTE_TIGHT)) & (self.v > 0))
        income = self.income(p)
        unit = len(income) / income.sum()          # the LP's tolerances are absolute: incomes of about 1
        flows = route_spending(rows, cols, income * unit, p * self.s * unit, self.n, self.m)
        if flows is None:
            return None
        flows /= unit
        x = np.zeros((self.n, self.m))
        x[rows, cols] = flows / p[cols]
        spent = x @ p                              # spend the incomes exactly: a buyer's shortfall costs utility
        x *= np.divide(income, spent, out=np.ones_like(spent), where=spent > 0)[:, None]   # at its bang per buck
        return x, p


def forest_flows(buyer, good, n, demand, label=None):
    """Flows on the forest edges (buyer_e, good_e) with every node's incident flows summing to its demand.

    Nodes are buyers 0..n-1 and goods n..; each forest component balanced (``label``, its
    components, is not needed: the traversal finds them). Leaves first: a node's remaining demand
    is the flow to its parent (breadth-first order from one root per component, then the order in
    reverse). :func:`forest_flows_reference` is the same by a sparse solve.
    """
    demand = np.asarray(demand, dtype=float)
    _, _, order, pred, pred_edge = forest_traversal(buyer, good, n, len(demand))
    return _kernels()[1](order, pred, pred_edge, demand, len(buyer))


def forest_traversal(buyer, good, n, nodes):
    """(label, count, order, pred, pred_edge) of the forest's edges (buyer_e, n + good_e) over ``nodes`` nodes:
    its components numbered from the lowest node (scipy's numbering), a breadth-first order from each
    component's lowest node, each node's parent (-1 at a root) and the edge to it. One Numba pass, no
    sparse matrix: the active-set polish calls it at every step."""
    return _kernels()[0](np.asarray(buyer, dtype=np.int64), np.asarray(good, dtype=np.int64) + n, nodes)


@functools.cache
def _kernels():
    """:func:`_traverse_loop` and :func:`_peel_loop` compiled by Numba (on first use: importing stays light)."""
    from numba import njit
    return njit(cache=True)(_traverse_loop), njit(cache=True)(_peel_loop)


def _traverse_loop(tail, head, nodes):
    """Breadth-first traversal of the undirected edges (tail_e, head_e): see :func:`forest_traversal`."""
    k = len(tail)
    start = np.zeros(nodes + 1, dtype=np.int64)
    for e in range(k):
        start[tail[e] + 1] += 1
        start[head[e] + 1] += 1
    for v in range(nodes):
        start[v + 1] += start[v]
    fill = start[:-1].copy()
    other = np.empty(2 * k, dtype=np.int64)
    edge = np.empty(2 * k, dtype=np.int64)
    for e in range(k):
        a, b = tail[e], head[e]
        other[fill[a]], edge[fill[a]] = b, e
        fill[a] += 1
        other[fill[b]], edge[fill[b]] = a, e
        fill[b] += 1
    label = np.full(nodes, -1, dtype=np.int64)
    order = np.empty(nodes, dtype=np.int64)
    pred = np.full(nodes, -1, dtype=np.int64)
    pred_edge = np.full(nodes, -1, dtype=np.int64)
    count, end = 0, 0
    for root in range(nodes):
        if label[root] >= 0:
            continue
        label[root] = count
        order[end] = root
        front = end
        end += 1
        while front < end:
            v = order[front]
            front += 1
            for j in range(start[v], start[v + 1]):
                w = other[j]
                if label[w] < 0:
                    label[w] = count
                    pred[w], pred_edge[w] = v, edge[j]
                    order[end] = w
                    end += 1
        count += 1
    return label, count, order, pred, pred_edge


def _peel_loop(order, pred, pred_edge, demand, k):
    """Reverse breadth-first order: the flow to a node's parent is what its subtree still needs."""
    left = demand.copy()
    flows = np.zeros(k)
    for idx in range(len(order) - 1, -1, -1):
        node = order[idx]
        parent = pred[node]
        if parent >= 0:
            flows[pred_edge[node]] = left[node]
            left[parent] -= left[node]
    return flows


def forest_flows_reference(buyer, good, n, demand, label):
    """:func:`forest_flows` by a sparse solve of the incidence system without one root per component."""
    import scipy.sparse as sp
    from scipy.sparse.linalg import spsolve
    k = len(buyer)
    if k == 0:
        return np.zeros(0)
    roots = np.unique(label, return_index=True)[1]
    keep = np.setdiff1d(np.arange(len(label)), roots)   # a component's last balance follows from the others
    incidence = sp.coo_matrix((np.ones(2 * k), (np.concatenate([buyer, n + good]), np.tile(np.arange(k), 2))),
                              shape=(len(label), k)).tocsr()[keep].tocsc()
    return np.atleast_1d(spsolve(incidence, np.asarray(demand, dtype=float)[keep]))


def fisher_equilibrium(v, supplies, budgets, prices, stop=None):
    """The exact equilibrium (x, p) of a linear Fisher market, from approximate ``prices``, or None.

    ``stop()``: True when the caller's time is up (checked every few pivots; then None).
    """
    market = LinearMarket(v, supplies, budgets=np.asarray(budgets, dtype=float), stop=stop)
    found = fisher_support(market, prices)
    return None if found is None else market.route(market.fisher_prices(found[0]))


def fisher_support(market, prices, forest=None):
    """Active-set method on the Eisenberg-Gale dual of a Fisher ``market``: (forest, exact prices), or None.

    ``forest``: a working set to start from, tight at ``prices`` (default: each buyer's best edge).
    """
    v, logv = market.v, market.logv
    n, m = v.shape
    q = np.log(np.maximum(np.asarray(prices, dtype=float), 1e-300))
    candidates = np.zeros((n, m), dtype=bool)
    pivots, limit = 0, PIVOTS_PER_NODE * (n + m) + 100
    while pivots < limit:
        log_bang = logv - q
        best = np.argmax(log_bang, axis=1)
        ratio = np.exp(log_bang - log_bang[np.arange(n), best][:, None])   # t_i = -log beta_i at the best: feasible
        keenest = np.argmax(ratio, axis=0)
        candidates |= (ratio >= 1 - CANDIDATE_SLACK) & (v > 0)
        candidates[keenest, np.arange(m)] |= v[keenest, np.arange(m)] > 0   # every good keeps its keenest buyer
        forest = (np.arange(n), best) if forest is None else _feasible(forest, best, log_bang)
        candidates[forest] = True
        rows, cols = np.nonzero(candidates)
        found, pivots = _active_set(market, forest, q, rows, cols, pivots, limit)
        if found is None:
            return None
        forest, q = found
        t = np.empty(n)
        t[forest[0]] = q[forest[1]] - logv[forest[0], forest[1]]       # every buyer keeps a forest edge
        violated = logv - q[None, :] + t[:, None] > np.log1p(TIGHT)     # log(bang / beta_i) > 0
        if not violated.any():
            return forest, np.exp(q)
        candidates |= violated                                         # preferred edges outside the candidates
    return None


def _feasible(forest, best, log_bang):
    """The forest with every buyer whose forest edges are not its best bang per buck moved to its best edge.

    The active-set method starts from a feasible point tight on its working set: a buyer's
    beta_i is its best bang per buck, so its forest edges must be best ones.
    """
    buyer, good = forest
    n = len(best)
    short = log_bang[buyer, good] < log_bang[buyer, best[buyer]] - np.log1p(TIGHT)
    moved = np.zeros(n, dtype=bool)
    moved[buyer[short]] = True
    keep = ~moved[buyer]
    return np.concatenate([buyer[keep], np.flatnonzero(moved)]), np.concatenate([good[keep], best[moved]])


def _active_set(market, forest, q, rows, cols, pivots, limit):
    """Primal active-set steps on the candidate edges (rows, cols) from log prices q tight on ``forest``.

    The point (q, t) stays tight on the forest, so it is its own potential: a step moves each
    component by one shift, toward the shift at which its goods cost its buyers' budgets.
    Returns ((forest, q) at the candidates' optimum or None, pivots used).
    """
    s, budgets, logv = market.s, market.budgets, market.logv
    n = market.n
    logv_e = logv[rows, cols]
    buyer, good = forest
    t = np.empty(n)
    t[buyer] = q[good] - logv[buyer, good]
    label, ncomp = market.components((buyer, good))      # kept up to date: merged on entering, redone on leaving
    while pivots < limit:
        pivots += 1
        if pivots % 32 == 0 and market.stop():
            return None, pivots
        goods_label, buyer_label = label[n:], label[:n]
        value = np.bincount(goods_label, weights=np.exp(q) * s, minlength=ncomp)
        money = np.bincount(buyer_label, weights=budgets, minlength=ncomp)
        if np.any(value[buyer_label] <= 0):
            return None, pivots                                        # a buyer without goods
        # the working-set minimiser: each component's goods cost its buyers' budgets; goods alone get cheaper
        balanced = np.divide(money, value, out=np.ones_like(value), where=(money > 0) & (value > 0))
        step = np.where(money > 0, np.log(balanced), -30.0)
        # ratio test: q_j - t_i >= log v_ij between components moves at rate step[C(j)] - step[C(i)]
        rate = step[goods_label[cols]] - step[buyer_label[rows]]
        moving = np.flatnonzero(rate < 0)
        alpha, enter = 1.0, -1
        if len(moving):
            r, c = rows[moving], cols[moving]
            ratios = np.maximum(q[c] - t[r] - logv_e[moving], 0.0) / -rate[moving]
            k = int(np.argmin(ratios))
            if ratios[k] < 1.0:
                alpha, enter = float(ratios[k]), int(moving[k])
        q = q + alpha * step[goods_label]
        t = t + alpha * step[buyer_label]
        if enter >= 0:                                                 # a blocking edge joins two components
            buyer, good = np.append(buyer, rows[enter]), np.append(good, cols[enter])
            label = np.where(label == label[rows[enter]], label[n + cols[enter]], label)
            continue
        flows = market.tree_flows((buyer, good), np.exp(q), label)
        worst = int(np.argmin(flows / budgets[buyer]))
        if flows[worst] < -TIGHT * budgets[buyer[worst]]:              # a negative multiplier leaves the working set
            buyer, good = np.delete(buyer, worst), np.delete(good, worst)
            label, ncomp = market.components((buyer, good))
            continue
        return ((buyer, good), q), pivots
    return None, pivots


def exchange_equilibrium(v, supplies, endowments, prices, stop=None):
    """The exact equilibrium (x, p) (p . supplies = 1) of a linear exchange market near ``prices``, or None."""
    market = LinearMarket(v, supplies, endowments=np.asarray(endowments, dtype=float), stop=stop)
    p = np.maximum(np.asarray(prices, dtype=float), 1e-300)
    p = p / (p @ market.s)
    forest = None
    for _ in range(EXCHANGE_ROUNDS):
        if market.stop():
            return None
        found = fisher_support(market.with_budgets(market.e @ p), p, forest)
        if found is None:
            return None
        forest, fisher_p = found
        exact = _exchange_prices(market, forest)
        if exact is not None:
            return market.route(exact)
        fisher_p = fisher_p / (fisher_p @ market.s)
        if np.max(np.abs(fisher_p / p - 1)) < 1e-15:
            return None                                   # a fixed point the forest does not price exactly
        p = fisher_p
    return None


def _exchange_prices(market, forest):
    """Exact exchange prices on a forest (p . s = 1) when it supports an equilibrium, else None."""
    n = market.n
    q_hat, t_hat, label, ncomp = market.potentials(forest)
    goods_label, buyer_label = label[n:], label[:n]
    if np.any(np.bincount(goods_label, minlength=ncomp) == 0) or ncomp > MAX_COMPONENTS:
        return None
    p_hat, beta_hat = np.exp(q_hat), np.exp(-t_hat)
    # the best bang per buck across components relative to the forest's: R[C, D] = max v_ij / (p_j beta_i)
    R = _group_max(market.v / (p_hat[None, :] * beta_hat[:, None]), buyer_label, goods_label, ncomp)
    if np.any(np.diag(R) > 1 + TIGHT):
        return None                                        # a buyer prefers a good of its own component
    scale = _exchange_scales(market, forest, label, p_hat, R)
    if scale is None:
        return None
    p = p_hat * scale[goods_label]
    if np.any(market.v > p * (beta_hat / scale[buyer_label])[:, None] * (1 + TIGHT)):
        return None                                        # some buyer prefers a good off the forest
    return p


def _group_max(matrix, row_label, col_label, k):
    """R[C, D] = max of matrix[i, j] >= 0 over rows i labelled C and columns j labelled D (0 where none)."""
    def along(a, label, axis):
        order = np.argsort(label, kind="stable")
        present, starts = np.unique(label[order], return_index=True)
        out = np.zeros((k, a.shape[1]) if axis == 0 else (a.shape[0], k))
        reduced = np.maximum.reduceat(np.take(a, order, axis=axis), starts, axis=axis)
        if axis == 0:
            out[present] = reduced
        else:
            out[:, present] = reduced
        return out
    return along(along(matrix, col_label, 1), row_label, 0)


def _exchange_scales(market, forest, label, p_hat, R):
    """Component scales sigma (an LP, HiGHS through scipy) making the forest an exchange equilibrium, or None.

    Prices p = p_hat sigma[C(j)], best bangs per buck beta_hat / sigma[C(i)]. In the unknowns
    y = value * sigma (each component's money; value_C = sum of p_hat_j s_j over its goods):
    each component's goods earn its consumers' incomes, P y = y with P[C, D] = (sum over consumers
    i in C and goods k in D of e_ik p_hat_k) / value_D (column-stochastic, so solutions always
    exist: the Perron vectors; several when the components split into self-sufficient groups,
    hence an LP and not an eigen-solve); sum y = 1; and with a common margin t, maximised: no
    consumer prefers another component's good (R[C, D] sigma_C + t / value_D <= sigma_D), the
    forest's spending (linear in y) is at least t, y >= t. A positive margin puts y inside the
    feasible set, so the balance made exact afterwards (least change) keeps every inequality.
    """
    import scipy.sparse as sp
    from scipy.optimize import linprog
    from scipy.sparse.linalg import spsolve
    n, m, e, s = market.n, market.m, market.e, market.s
    ncomp = R.shape[0]
    goods_label, buyer_label = label[n:], label[:n]
    goods_in = sp.csr_matrix((np.ones(m), (np.arange(m), goods_label)), shape=(m, ncomp))
    value = np.bincount(goods_label, weights=p_hat * s, minlength=ncomp)
    per_money = sp.diags(1.0 / value)
    income = sp.csr_matrix((e * p_hat) @ goods_in) @ per_money          # consumer incomes per unit y
    revenue = sp.diags(p_hat * s) @ goods_in @ per_money                # goods' revenues per unit y
    agents_in = sp.csr_matrix((np.ones(n), (np.arange(n), buyer_label)), shape=(n, ncomp))
    balance = np.vstack([(agents_in.T @ income).toarray() - np.eye(ncomp), np.ones((1, ncomp))])
    target = np.zeros(ncomp + 1)
    target[-1] = 1.0
    # forest spending = (incidence without the roots)^-1 (demand without the roots), per unit y
    buyer, good = forest
    k = len(buyer)
    roots = np.unique(label, return_index=True)[1]
    keep = np.setdiff1d(np.arange(n + m), roots)
    incidence = sp.coo_matrix((np.ones(2 * k), (np.concatenate([buyer, n + good]), np.tile(np.arange(k), 2))),
                              shape=(n + m, k)).tocsr()[keep].tocsc()
    demand = sp.vstack([income, revenue]).tocsr()[keep].toarray()
    spending = np.atleast_2d(spsolve(incidence, demand)).reshape(k, ncomp) if k else np.zeros((0, ncomp))
    C, D = np.nonzero((R > 0) & ~np.eye(ncomp, dtype=bool))
    prefer = sp.coo_matrix((np.concatenate([R[C, D] * value[D] / value[C], -np.ones(len(C))]),
                            (np.tile(np.arange(len(C)), 2), np.concatenate([C, D]))), shape=(len(C), ncomp))
    inequalities = sp.vstack([prefer, sp.csr_matrix(-spending), -sp.eye(ncomp)]).tocsr()   # rows . y + t <= 0
    A_ub = sp.hstack([inequalities, sp.csr_matrix(np.ones((inequalities.shape[0], 1)))]).tocsr()
    objective = np.zeros(ncomp + 1)
    objective[-1] = -1.0
    res = linprog(objective, A_ub=A_ub, b_ub=np.zeros(A_ub.shape[0]),
                  A_eq=np.hstack([balance, np.zeros((ncomp + 1, 1))]), b_eq=target,
                  bounds=[(0, None)] * ncomp + [(None, 1.0)], method="highs",
                  options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    if res.status != 0 or res.x[-1] < -DEGENERATE:
        return None                          # no feasible scales: not this forest
    y = res.x[:ncomp]
    exact, goal = balance, target
    if res.x[-1] <= DEGENERATE:              # feasible only on the boundary: make the binding rows exact too
        binding = inequalities @ y >= -DEGENERATE
        exact = np.vstack([balance, inequalities[binding].toarray()])
        goal = np.append(target, np.zeros(int(binding.sum())))
    y = y + np.linalg.lstsq(exact, goal - exact @ y, rcond=None)[0]          # least change
    if np.any(inequalities @ y > 1e-15) or np.max(np.abs(balance @ y - target)) > 1e-14:
        return None
    return y / value


def route_spending(rows, cols, income, revenue, n, m):
    """Spends b >= 0 on the edges with sum_j b_ij = income_i and sum_i b_ij = revenue_j (an LP), or None."""
    import highspy
    import scipy.sparse as sp

    from solvopt.dsl.highs_export import colwise_matrix, new_highs
    E = len(rows)
    A = colwise_matrix(sp.coo_matrix((np.ones(2 * E), (np.concatenate([rows, n + cols]), np.tile(np.arange(E), 2))),
                                     shape=(n + m, E)))
    target = np.concatenate([income, revenue])
    h = new_highs()
    h.passModel(E, n + m, int(A.nnz), int(highspy.MatrixFormat.kColwise), int(highspy.ObjSense.kMinimize), 0.0,
                np.zeros(E), np.zeros(E), np.full(E, np.inf), target, target, A.indptr.astype(np.int32),
                A.indices.astype(np.int32), np.ascontiguousarray(A.data), np.zeros(E, dtype=np.int32))
    h.setOptionValue("primal_feasibility_tolerance", 1e-10)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return np.maximum(np.asarray(h.getSolution().col_value), 0.0)
