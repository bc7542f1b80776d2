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
  preferred are brought in) — with an exact *polish* from POLISH_FROM iterations on, at doubling
  intervals: an active-set method on the Eisenberg-Gale dual whose working set is a forest of
  tight edges, started from the iterate's prices, gives the exact prices, and an LP routes the
  budgets over the tight edges (:mod:`solvopt.games.polish`); the answer is kept only when its
  certified exploitability beats the iterate's.
- ``proportional-response`` (Fisher; linear, CES with 0 < rho < 1, Cobb-Douglas): bids
  b_ij <- B_i v_ij x_ij^rho / sum_k v_ik x_ik^rho, prices p_j = sum_i b_ij / s_j, x_ij = b_ij / p_j
  (markets clear and budgets are spent exactly at every iterate).
- ``tatonnement`` (Fisher and Arrow-Debreu; forms with single-valued demand, so not linear):
  multiplicative price updates p_j <- p_j exp(eta z_j / s_j) from the excess demand of the
  buyers' exact demands, prices kept on p.s = sum B.
"""
from __future__ import annotations

import copy

import numpy as np

from solvopt.core.errors import ModelError
from solvopt.core.options import Option
from solvopt.core.registry import Solver, register

from .exploitability import Exploitability, market_exploitability
from .polish import fisher_equilibrium
from .static import CHECK_EVERY, positive_number
from .tracking import COMMON_HONOURS, EquilibriumRun

MARKET_TOLERANCE = Option("tolerance", positive_number, 1e-9,
                          "stop when the certified exploitability / total budget is at most this")


def out_of_time(run):
    """A callable that says when ``run``'s time limit has passed or Ctrl-C came (long polishes give up then)."""
    from solvopt.core.interrupt import stop_reason
    return lambda: stop_reason(run.deadline) is not None


def _budgets(model, p):
    """Budgets at prices p: B for a Fisher market, p . e_i for Arrow-Debreu."""
    e = getattr(model, "endowments", None)
    return model.budgets if e is None else e @ p


def _normalised(model, p):
    """Prices scaled onto the auctioneer's set {p.s = sum of budgets} (Arrow-Debreu: p.s = 1)."""
    if getattr(model, "endowments", None) is not None:
        return p / float(p @ model.supplies)
    return p * (float(model.budgets.sum()) / float(p @ model.supplies))


class MarketSolver(Solver):
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
        """Record (x, p) of the market in total-budget units with its exploitability in the user's money."""
        e = market_exploitability(model.utility, _budgets(model, p), model.supplies, x, p)
        unit = getattr(self, "_unit", 1.0)
        if unit != 1.0:
            e = Exploitability(e.value * unit, e.lower * unit, e.per_player * unit, e.responses, e.violation)
        return run.record(it, (x, p), e)

    def solve(self, model, options):
        fisher = getattr(model, "endowments", None) is None
        total = float(model.budgets.sum()) if fisher else 1.0
        run = EquilibriumRun(options, options.extra["tolerance"], scale=total)
        if fisher:
            # the market in money units of its total budget: budgets sum to 1, prices follow; every
            # inner test, step and polish sees the same numbers whatever the currency
            inner = copy.copy(model)
            inner.budgets = model.budgets / total
        else:
            inner = model
        self._unit = total
        with run.guard():
            self.run_loop(inner, run, options)
        x, p = run.best_point if run.best_point is not None else (None, None)
        solution = {} if x is None else {"allocation": x, "prices": p * total}
        result = run.result(solution)
        if total == 1.0 and result.objective is not None:    # Arrow-Debreu: p . s = 1 is the total value
            result.stats["relative_exploitability"] = result.objective
        return result

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
    fixed = {"linear": 1.0, "cobb_douglas": 0.0}
    return fixed[utility.kind] if utility.kind in fixed else utility.rho


@register
class ProportionalResponse(MarketSolver):
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
class Tatonnement(MarketSolver):
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
class EisenbergGale(MarketSolver):
    name = "eisenberg-gale"
    description = ("Eisenberg-Gale program (Fisher; homogeneous utilities): closed form, convex dual, "
                   "or PR + exact polish")
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
        self._next_polish = min(POLISH_FROM, (n + m) // 4)          # small markets: polish from the start
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
        """Certify (x, p), then (at doubling intervals) try the exact polish from its prices."""
        if self.certify(run, model, it, x, p):
            return True
        if it < self._next_polish:
            return False
        self._next_polish = 2 * it         # a polish costs O(n + m) pivots; PR iterations are cheap
        polished = polish_linear(model, p, out_of_time(run))
        return polished is not None and self.certify(run, model, it, *polished)


WARM_UP = 50     # whole-market proportional-response iterations before the active-edge phase
ACTIVE = 0.98    # an edge is active when its bang per buck is within 2% of the buyer's best
POLISH_FROM = 300  # first polish (from rough prices the active-set polish needs many more pivots)


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


def polish_linear(model, prices, stop=None):
    """The exact equilibrium of a linear Fisher market near ``prices`` (:mod:`solvopt.games.polish`), or None."""
    return fisher_equilibrium(model.utility.weights, model.supplies, model.budgets, prices, stop)
