"""Market equilibria of Fisher and Arrow-Debreu markets, certified by exact market exploitability.

A market is the pseudo-game of its buyers (each maximises utility over its budget set at prices
p) and an auctioneer (prices on {p >= 0, p.s = sum B} maximising the value of excess demand);
:func:`solvopt.games.exploitability.market_exploitability` evaluates it exactly from closed-form
indirect utilities. The ``tolerance`` of these methods is *relative* to the total budget.

- ``eisenberg-gale`` (default, Fisher, degree-1 homogeneous utilities): the equilibrium prices
  minimise the convex dual of the Eisenberg-Gale program f(p) = p.s + sum_i B_i log v_i(p, B_i)
  (v_i the indirect utility; its gradient is s - sum_i demand_i(p): excess supply). Cobb-Douglas:
  the closed form p_j = sum_i B_i a_ij / s_j. Smooth forms (CES, Leontief): L-BFGS-B on f with
  exact gradients, then prices rescaled onto p.s = sum B and allocations = demands, finished
  (L-BFGS-B stalls where f's rounding hides its progress) by multiplicative mirror-descent steps
  on the same dual, which are tatonnement. Linear (f is
  not smooth): proportional response — on the whole market for a warm-up, then only on its
  active edges (near-best bang per buck; certified on the whole market, edges that become
  preferred are brought in) — with an exact *polish* at each check: the spending graph's components
  fix the prices (v_ij / p_j equal for all of a buyer's spending edges, each component's prices
  summing to its budgets), an LP routes the budgets over those edges, and the answer is kept
  only when its certified exploitability beats the iterate's.
- ``proportional-response`` (Fisher; linear, CES with 0 < rho < 1, Cobb-Douglas): bids
  b_ij <- B_i v_ij x_ij^rho / sum_k v_ik x_ik^rho, prices p_j = sum_i b_ij / s_j, x_ij = b_ij / p_j
  (markets clear and budgets are spent exactly at every iterate).
- ``tatonnement`` (Fisher and Arrow-Debreu; forms with single-valued demand, so not linear):
  multiplicative price updates p_j <- p_j exp(eta z_j / s_j) from the excess demand of the
  buyers' exact demands, prices kept on p.s = sum B.
"""
from __future__ import annotations

import numpy as np

from solvopt.core.errors import ModelError
from solvopt.core.options import Option
from solvopt.core.registry import Solver, register

from .exploitability import market_exploitability
from .static import CHECK_EVERY, positive_number
from .tracking import COMMON_HONOURS, EquilibriumRun

MARKET_TOLERANCE = Option("tolerance", positive_number, 1e-9,
                          "stop when the certified exploitability / total budget is at most this")


def _budgets(model, p):
    """Budgets at prices p: B for a Fisher market, p . e_i for Arrow-Debreu."""
    e = getattr(model, "endowments", None)
    return model.budgets if e is None else e @ p


def _normalised(model, p):
    """Prices scaled onto the auctioneer's set {p.s = sum of budgets} (Arrow-Debreu: p.s = 1)."""
    if getattr(model, "endowments", None) is not None:
        return p / float(p @ model.supplies)
    return p * (float(model.budgets.sum()) / float(p @ model.supplies))


class _MarketSolver(Solver):
    family = "games"
    honours = COMMON_HONOURS
    kinds: tuple[str, ...] = ()
    arrow_debreu = False

    @classmethod
    def compile(cls, model):
        from solvopt.dsl.games import ArrowDebreuMarket, FisherMarket
        allowed = (FisherMarket, ArrowDebreuMarket) if cls.arrow_debreu else (FisherMarket,)
        if not isinstance(model, allowed):
            what = "Fisher and Arrow-Debreu markets" if cls.arrow_debreu else "Fisher markets"
            raise ModelError(f"method {cls.name!r} solves {what}; got {type(model).__name__}")
        if model.utility.kind not in cls.kinds:
            raise ModelError(f"method {cls.name!r} takes {', '.join(cls.kinds)} utilities, not {model.utility.kind}")
        return model

    def certify(self, run, model, it, x, p) -> bool:
        return run.record(it, (x, p), market_exploitability(model.utility, _budgets(model, p), model.supplies, x, p))

    def solve(self, model, options):
        total = float(model.budgets.sum()) if getattr(model, "endowments", None) is None else 1.0
        run = EquilibriumRun(options, options.extra["tolerance"], scale=total)
        self.run_loop(model, run, options)
        x, p = run.best_point if run.best_point is not None else (None, None)
        solution = {} if x is None else {"allocation": x, "prices": p}
        return run.result(solution)

    def loop(self, model, run, options, steps):
        """Certify the iterates of ``steps`` (yielding (it, x, p)) every ``check_every`` until a stop."""
        every = max(1, options.extra["check_every"])
        for it, x, p in steps:
            if (it % every == 0 or it == 0) and self.certify(run, model, it, x, p):
                return
            if run.should_stop(it):
                if it % every:
                    self.certify(run, model, it, x, p)
                return


def proportional_response(model, rho: float, b=None):
    """Endless PR iterates (it, x, p); rho = 1 linear, 0 < rho < 1 CES, rho = 0 Cobb-Douglas."""
    v, B, s = model.utility.weights, model.budgets, model.supplies
    if b is None:
        b = B[:, None] * v / v.sum(axis=1, keepdims=True)
    it = 0
    while True:
        p = b.sum(axis=0) / s
        x = np.divide(b, p, out=np.zeros_like(b), where=p > 0)
        yield it, x, p
        it += 1
        with np.errstate(divide="ignore", invalid="ignore"):
            w = v * x ** rho if rho != 1 else v * x
        total = w.sum(axis=1, keepdims=True)
        b = B[:, None] * w / np.where(total > 0, total, 1.0)


def _rho(utility) -> float:
    return {"linear": 1.0, "cobb_douglas": 0.0}.get(utility.kind, getattr(utility, "rho", None))


@register
class ProportionalResponse(_MarketSolver):
    name = "proportional-response"
    description = "proportional response dynamics (Fisher; linear, CES with 0 < rho < 1, Cobb-Douglas)"
    kinds = ("linear", "ces", "cobb_douglas")
    options = (MARKET_TOLERANCE, CHECK_EVERY)

    @classmethod
    def compile(cls, model):
        model = super().compile(model)
        if model.utility.kind == "ces" and not 0 < model.utility.rho < 1:
            raise ModelError("proportional response needs CES with 0 < rho < 1 (substitutes); use eisenberg-gale")
        return model

    def run_loop(self, model, run, options):
        self.loop(model, run, options, proportional_response(model, _rho(model.utility)))


@register
class Tatonnement(_MarketSolver):
    name = "tatonnement"
    description = "multiplicative tatonnement on exact demands (Fisher and Arrow-Debreu; not linear utilities)"
    kinds = ("cobb_douglas", "ces", "leontief", "log")
    arrow_debreu = True
    options = (MARKET_TOLERANCE, CHECK_EVERY, Option("step", positive_number, 0.5, "price step eta"))

    def run_loop(self, model, run, options):
        start = _normalised(model, np.ones(model.shape[1]))
        self.loop(model, run, options, tatonnement(model, start, options.extra["step"]))


def tatonnement(model, p, eta: float, first: int = 0):
    """Endless tatonnement iterates (it, demands, prices) from prices p."""
    it = first
    while True:
        x = model.utility.demand(p, _budgets(model, p))
        yield it, x, p
        it += 1
        z = (x.sum(axis=0) - model.supplies) / model.supplies
        p = _normalised(model, p * np.exp(eta * np.clip(z, -10, 10)))


@register
class EisenbergGale(_MarketSolver):
    name = "eisenberg-gale"
    description = "Eisenberg-Gale program (Fisher; homogeneous utilities): closed form, convex dual, or PR + exact polish"
    kinds = ("linear", "cobb_douglas", "ces", "leontief")
    options = (MARKET_TOLERANCE, CHECK_EVERY)

    @classmethod
    def compile(cls, model):
        model = super().compile(model)
        if not model.utility.homogeneous:
            raise ModelError("the Eisenberg-Gale program needs degree-1 homogeneous utilities "
                             "(Cobb-Douglas exponents summing to 1); use tatonnement")
        return model

    def run_loop(self, model, run, options):
        u, B, s = model.utility, model.budgets, model.supplies
        if u.kind == "cobb_douglas":
            p = (B[:, None] * u.weights).sum(axis=0) / s
            self.certify(run, model, 0, u.demand(p, B), p)
        elif u.kind == "linear":
            self._linear(model, run, options)
        else:
            self._dual(model, run, options)

    def _dual(self, model, run, options):
        """L-BFGS-B on the convex dual in the prices (exact gradients: minus the excess demand)."""
        from scipy.optimize import minimize
        u, B, s = model.utility, model.budgets, model.supplies

        def f(p):
            x = u.demand(p, B)
            return float(p @ s + B @ np.log(u.indirect(p, B))), s - x.sum(axis=0)

        count = [0]

        def stop(_):
            count[0] += 1
            if run.should_stop(count[0]):
                raise StopIteration

        p0 = _normalised(model, np.ones(len(s)))
        res = minimize(f, p0, jac=True, method="L-BFGS-B", bounds=[(1e-300, None)] * len(s), callback=stop,
                       options={"maxiter": 10 ** 6, "ftol": 0.0, "gtol": 1e-15, "maxcor": 30})
        p = _normalised(model, res.x)
        if self.certify(run, model, count[0], u.demand(p, B), p) or run.stopped is not None:
            return
        # L-BFGS-B stalls near machine precision of f: finish with mirror-descent steps on the same dual
        self.loop(model, run, options, tatonnement(model, p, 0.5, first=count[0] + 1))

    def _linear(self, model, run, options):
        """Proportional response: WARM_UP iterations on the whole market, then on its active edges only.

        Every check certifies on the whole market (so edges left out cannot hide a better
        response), brings in the edges some buyer now prefers, and tries the exact polish.
        """
        v, B, s = model.utility.weights, model.budgets, model.supplies
        n, m = v.shape
        every = max(1, options.extra["check_every"])
        for it, x, p in proportional_response(model, 1.0):
            if it % every == 0 and self._check(run, model, it, x, p):
                return
            if run.should_stop(it):
                self.certify(run, model, it, x, p)
                return
            if it >= WARM_UP:
                break
        bids = x * p
        bang = v / p
        keep = (bang >= ACTIVE * bang.max(axis=1, keepdims=True)) & (v > 0)
        keep[np.argmax(bids, axis=0), np.arange(m)] = True            # every good keeps its biggest buyer
        rows, cols = np.nonzero(keep)
        b = np.maximum(bids[rows, cols], 1e-12 * B[rows])
        sparse_every = max(every, 100)
        while True:
            it += 1
            p = np.bincount(cols, weights=b, minlength=m) / s
            w = v[rows, cols] * b / p[cols]
            b = B[rows] * w / np.bincount(rows, weights=w, minlength=n)[rows]
            stop = run.should_stop(it)
            if it % sparse_every == 0 or stop:
                p = np.bincount(cols, weights=b, minlength=m) / s
                x = np.zeros((n, m))
                x[rows, cols] = b / p[cols]
                if self._check(run, model, it, x, p) or stop:
                    return
                rows, cols, b = _admit_preferred(v, B, p, rows, cols, b)

    def _check(self, run, model, it, x, p) -> bool:
        """Certify (x, p), then (at geometrically thinning iterations) try the exact polish from its bids."""
        if self.certify(run, model, it, x, p):
            return True
        if it < getattr(self, "_next_polish", 0):
            return False
        self._next_polish = max(it + 1, int(1.25 * it))
        for slack in (1e-2, 1e-5):
            polished = polish_linear(model, x * p, slack)
            if polished is not None and self.certify(run, model, it, *polished):
                return True
        return False


WARM_UP = 50     # whole-market proportional-response iterations before the active-edge phase
ACTIVE = 0.98    # an edge is active when its bang per buck is within 2% of the buyer's best


def _admit_preferred(v, B, p, rows, cols, b):
    """Add the edges whose bang per buck beats the buyer's best active edge (with a tiny bid)."""
    n = v.shape[0]
    best = np.zeros(n)
    np.maximum.at(best, rows, v[rows, cols] / p[cols])
    new_r, new_c = np.nonzero(v / p > best[:, None] * (1 + 1e-9))
    if len(new_r) == 0:
        return rows, cols, b
    b = np.concatenate([b, 1e-6 * B[new_r]])
    rows, cols = np.concatenate([rows, new_r]), np.concatenate([cols, new_c])
    return rows, cols, B[rows] * b / np.bincount(rows, weights=b, minlength=n)[rows]


def polish_linear(model, bids, slack: float = 1e-3):
    """Exact equilibrium of a linear Fisher market from the support of approximate bids, or None.

    The support guess: edges with a bid above 1e-9 B_i whose bang per buck v_ij / p_j is within
    a factor (1 - slack) of the buyer's best at the bids' prices. On each connected component of
    that spending graph, its heaviest-spending spanning forest fixes the prices through
    p_j = v_ij / beta_i on its edges, scaled so each component's goods cost its buyers' budgets;
    the prices are kept when no buyer prefers another good, and an LP routes every budget over
    the tight edges (v_ij / p_j = beta_i).
    """
    import scipy.sparse as sp
    from scipy.sparse.csgraph import breadth_first_order, connected_components, minimum_spanning_tree
    v, B, s = model.utility.weights, model.budgets, model.supplies
    n, m = v.shape
    price = bids.sum(axis=0) / s
    bang = np.divide(v, price, out=np.zeros_like(v), where=price > 0)
    rows, cols = np.nonzero((bids > 1e-9 * B[:, None]) & (bang >= (1 - slack) * bang.max(axis=1, keepdims=True)))
    if len(rows) == 0 or np.any(v[rows, cols] <= 0):
        return None
    # the heaviest-spending spanning forest of the candidates fixes the prices (no cycle to contradict)
    heavy = sp.coo_matrix((1.0 / bids[rows, cols], (rows, n + cols)), shape=(n + m, n + m)).tocsr()
    forest = minimum_spanning_tree(heavy).tocoo()
    graph = (forest + forest.T).tocsr()
    ncomp, label = connected_components(graph, directed=False)
    # along the forest: log p_j = log v_ij + g_i from buyer i, g_i = log p_j - log v_ij from good j
    edge = {}
    for i, j in zip(forest.row.tolist(), forest.col.tolist()):
        b_, g_ = (i, j) if i < n else (j, i)
        edge[(b_, g_)] = float(np.log(v[b_, g_ - n]))
    sol = np.zeros(n + m)
    for c in range(ncomp):
        order, pred = breadth_first_order(graph, int(np.flatnonzero(label == c)[0]), directed=False)
        for node in order[1:].tolist():
            par = int(pred[node])
            sol[node] = sol[par] + edge[(par, node)] if node >= n else sol[par] - edge[(node, par)]
    logp, g = sol[n:], sol[:n]
    goods_label, buyer_label = label[n:], label[:n]
    if np.any(np.bincount(goods_label, minlength=ncomp) == 0):
        return None                                  # a buyer without goods
    value = np.bincount(goods_label, weights=np.exp(logp) * s, minlength=ncomp)
    budget = np.bincount(buyer_label, weights=B, minlength=ncomp)
    scale = budget / value
    p = np.exp(logp) * scale[goods_label]
    beta = np.exp(-g) / scale[buyer_label]          # bang per buck of each buyer
    if np.any(v > p * beta[:, None] * (1 + 1e-12)):
        return None                                  # some buyer prefers a good off the support
    rows, cols = np.nonzero((v >= p * beta[:, None] * (1 - 1e-10)) & (v > 0))   # every tight edge may carry spend
    flows = _route_budgets(rows, cols, B, p * s, n, m)
    if flows is None:
        return None
    x = np.zeros((n, m))
    x[rows, cols] = flows / p[cols]
    return x, p


def _route_budgets(rows, cols, B, revenue, n, m):
    """Spends b >= 0 on the edges with sum_j b_ij = B_i and sum_i b_ij = revenue_j (an LP), or None."""
    import highspy
    import scipy.sparse as sp
    from solvopt.dsl.highs_export import colwise_matrix, new_highs
    E = len(rows)
    A = colwise_matrix(sp.coo_matrix((np.ones(2 * E), (np.concatenate([rows, n + cols]), np.tile(np.arange(E), 2))),
                                     shape=(n + m, E)))
    target = np.concatenate([B, revenue])
    h = new_highs()
    h.passModel(E, n + m, int(A.nnz), int(highspy.MatrixFormat.kColwise), int(highspy.ObjSense.kMinimize), 0.0,
                np.zeros(E), np.zeros(E), np.full(E, np.inf), target, target, A.indptr.astype(np.int32),
                A.indices.astype(np.int32), np.ascontiguousarray(A.data), np.zeros(E, dtype=np.int32))
    h.setOptionValue("primal_feasibility_tolerance", 1e-10)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return np.maximum(np.asarray(h.getSolution().col_value), 0.0)
