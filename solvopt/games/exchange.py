"""Linear Arrow-Debreu (exchange) markets: exact equilibria, certified, or a proof that none exists.

Consumers i own endowments e_i (goods j), earn p . e_i at prices p and spend it on their
maximum bang-per-buck goods (linear utilities v_ij). Prices are normalised to p . s = 1 (s: the
total endowments), so the certified exploitability is already relative to the total value.

Method ``linear-exchange`` (the Arrow-Debreu default for linear utilities):

1. approximate phase — proportional response dynamics for exchange markets (Branzei, Devanur,
   Rabani): each consumer bids its current income p . e_i on the goods in proportion to the
   utility each brought last round, b_ij <- (p . e_i) v_ij x_ij / u_i(x_i), then
   p_j = sum_i b_ij / s_j and x_ij = b_ij / p_j (total money stays 1); the certified point
   spends exactly the incomes at its prices;
2. exact polish from the iterate's prices (:func:`solvopt.games.polish.exchange_equilibrium`):
   the support forest of the Fisher market at the current incomes, priced exactly for the
   exchange market (the components' scales from a small LP: money balance between components,
   no preferred good elsewhere, nonnegative spending), an LP for the spending. Tried at
   iteration POLISH_FROM and then at doubling intervals, before the iterate itself is certified
   (an iterate within the tolerance is still approximate), kept when certified. When no polish
   succeeds the best iterate is returned with its certified exploitability and a limit status.

Existence: an equilibrium exists when the economy graph (i -> k when i likes a good k owns) is
strongly connected (Gale). :func:`no_equilibrium_reason` proves non-existence in the classical
obstruction — a set of consumers that likes only goods no outsider owns, yet owns a good none of
them likes: all their income is spent on their own goods, so that good would have to be free —
and ``compile`` raises it as a ModelError. Otherwise, without strong connectivity, existence is
not guaranteed; ``stats['equilibrium_exists']`` says which case holds.
"""
from __future__ import annotations

import numpy as np

from solvopt.core.errors import ModelError
from solvopt.core.registry import register
from solvopt.core.result import Termination

from .markets import MARKET_TOLERANCE, MarketSolver, out_of_time
from .static import CHECK_EVERY

POLISH_FROM = 100        # first polish; then at doubling intervals
ITERATION_CAP = 200000   # proportional response without a user limit stops here (ITERATION_LIMIT)


def economy_graph(v, e):
    """The bipartite digraph consumer -> good it likes -> consumer owning it (nodes: consumers, then goods)."""
    import scipy.sparse as sp
    n, m = v.shape
    likes = sp.coo_matrix(v > 0)
    owns = sp.coo_matrix(e.T > 0)
    return sp.coo_matrix((np.ones(likes.nnz + owns.nnz),
                          (np.concatenate([likes.row, n + owns.row]), np.concatenate([n + likes.col, owns.col]))),
                         shape=(n + m, n + m)).tocsr()


def strongly_connected(v, e) -> bool:
    """True when every consumer reaches every other through liked goods and their owners (existence holds)."""
    from scipy.sparse.csgraph import connected_components
    return connected_components(economy_graph(v, e), directed=True, connection="strong")[0] == 1


def no_equilibrium_reason(v, e) -> str | None:
    """A proof that the linear exchange market has no equilibrium with positive prices, or None.

    Goods nobody likes would be free. Otherwise, for each consumer b, the consumers R(b) it
    reaches in the economy graph like only goods owned inside R(b); if b owns a good none of
    R(b) likes, R(b)'s income exceeds the value of everything it may buy unless that good is free.
    """
    from scipy.sparse.csgraph import breadth_first_order, connected_components
    n, m = v.shape
    unwanted = np.flatnonzero(~np.any(v > 0, axis=0))
    if len(unwanted):
        return f"good {int(unwanted[0])} is liked by no consumer: its price would be 0 (remove it)"
    graph = economy_graph(v, e)
    ncomp, scc = connected_components(graph, directed=True, connection="strong")
    if ncomp == 1:
        return None
    for b in np.unique(scc[:n], return_index=True)[1]:             # one consumer per strong component: same R(b)
        reach = breadth_first_order(graph, int(b), directed=True, return_predecessors=False)
        consumers, liked = reach[reach < n], reach[reach >= n] - n
        free = np.setdiff1d(np.flatnonzero(e[consumers].sum(axis=0) > 0), liked)
        if len(free):
            owner = int(consumers[np.argmax(e[consumers, free[0]] > 0)])
            names = ", ".join(str(int(c)) for c in np.sort(consumers)[:5]) + (", ..." if len(consumers) > 5 else "")
            return (f"no equilibrium: consumers {{{names}}} like only goods no other consumer owns, yet consumer "
                    f"{owner} owns good {int(free[0])}, which none of them likes (it would have to be free)")
    return None


class _Edges:
    """The liked edges (v_ij > 0) of a market as a flat list (sparse markets) or the whole n x m array.

    Proportional response only ever bids on liked edges, so a sparse market costs O(edges) per
    round; a dense one keeps contiguous 2-D arrays (a gather per edge costs more than a zero).
    """

    def __init__(self, v):
        self.n, self.m = v.shape
        self.flat = np.count_nonzero(v) < DENSE_FROM * v.size
        if self.flat:
            self.rows, self.cols = np.nonzero(v > 0)
            self.value = v[self.rows, self.cols]
        else:
            self.value = v

    def col_sums(self, a):
        return np.bincount(self.cols, weights=a, minlength=self.m) if self.flat else a.sum(axis=0)

    def row_sums(self, a):
        return np.bincount(self.rows, weights=a, minlength=self.n) if self.flat else a.sum(axis=1)

    def of_row(self, a):
        return a[self.rows] if self.flat else a[:, None]

    def of_col(self, a):
        return a[self.cols] if self.flat else a[None, :]

    def dense(self, a):
        if not self.flat:
            return a
        out = np.zeros((self.n, self.m))
        out[self.rows, self.cols] = a
        return out


DENSE_FROM = 0.25   # liked edges / (n m) from which proportional response works on dense arrays


def exchange_proportional_response(v, e, s):
    """Endless proportional-response iterates (it, x, p) of a linear exchange market, p . s = 1.

    The bids spend last round's incomes; the yielded allocation is rescaled to spend exactly the
    incomes at the current prices (a point of the pseudo-game), so the market need not clear.
    ``x`` is a callable that builds the dense allocation (needed at the checks only).
    """
    g = _Edges(v)
    p = np.full(len(s), 1.0 / s.sum())
    b = g.of_row(e @ p) * g.value / g.of_row(g.row_sums(g.value))
    it = 0
    while True:
        p = g.col_sums(b) / s
        x = b / g.of_col(p)
        income = e @ p
        spent = income / g.row_sums(b)
        yield it, (lambda x=x, spent=spent: g.dense(x * g.of_row(spent))), p
        it += 1
        w = g.value * x
        b = g.of_row(income) * w / g.of_row(g.row_sums(w))


@register
class LinearExchange(MarketSolver):
    name = "linear-exchange"
    description = ("linear Arrow-Debreu markets: exchange proportional response + exact polish "
                   "(support forest, component scales by LP); proves non-existence in Gale's obstruction")
    kinds = ("linear",)
    arrow_debreu = True
    options = (MARKET_TOLERANCE, CHECK_EVERY)

    @classmethod
    def compile(cls, model):
        from solvopt.dsl.games import ArrowDebreuMarket
        if not isinstance(model, ArrowDebreuMarket):
            raise ModelError(f"method {cls.name!r} solves Arrow-Debreu (exchange) markets; got {type(model).__name__} "
                             "(linear Fisher markets: eisenberg-gale)")
        model = super().compile(model)
        reason = no_equilibrium_reason(model.utility.weights, model.endowments)
        if reason is not None:
            raise ModelError(reason)
        return model

    def solve(self, model, options):
        result = super().solve(model, options)
        result.stats["equilibrium_exists"] = ("guaranteed (strongly connected economy graph)"
                                              if strongly_connected(model.utility.weights, model.endowments)
                                              else "not guaranteed (economy graph not strongly connected)")
        return result

    def run_loop(self, model, run, options):
        from .polish import exchange_equilibrium
        v, e, s = model.utility.weights, model.endowments, model.supplies
        every = max(1, options.extra["check_every"])
        next_polish = min(POLISH_FROM, sum(v.shape) // 4)               # tiny markets: polish at once
        for it, x, p in exchange_proportional_response(v, e, s):
            stop = run.should_stop(it)
            if it % every == 0 or stop:
                if it >= next_polish:                                  # exact first: an iterate within the
                    next_polish = 2 * max(it, 1)                       # tolerance is still only approximate
                    exact = exchange_equilibrium(v, s, e, p, out_of_time(run))
                    if exact is not None and self.certify(run, model, it, *exact):
                        return
                if self.certify(run, model, it, x(), p):
                    return
            if stop:
                return
            if it >= ITERATION_CAP:
                run.stopped = Termination.ITERATION_LIMIT
                return
