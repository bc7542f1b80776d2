"""Equilibria of Arrow-Debreu economies with production (:class:`~solvopt.dsl.ProductionEconomy`).

``production-root`` reduces the pseudo-game to its prices. At prices p every other player's best
response is exact and single-valued: firm f supplies y_f = r_f p / ||p|| (the maximiser of p.y over
the ball {||y|| <= r_f}, non-negative since p is), consumer k demands its utility's closed-form
demand at its budget p.e_k + sum_f theta_kf p.y_f (water filling for shifted logs). The price
player's best responses are the vertices of the simplex with the largest excess demand z_j, so the
prices are a best response exactly when every priced good has the same excess demand; all goods are
priced (demand for a free good is unbounded: the method takes log, Cobb-Douglas and CES utilities
with 0 < rho < 1), so the m - 1 equations z_j(p) = p.z(p), j < m, over the interior of the simplex
(p = softmax(s, 0); each z_j in units of the good's total endowment) determine the equilibrium. They
are solved by Powell's hybrid method from two starts (uniform prices, the consumers' marginal
utilities at their endowments); where it stalls (a singular Jacobian: goods that nobody buys at
these prices, or prices free over an interval), by Levenberg-Marquardt and then damped tatonnement
steps, and again. An economy without an equilibrium (a Cobb-Douglas consumer alone with a good it
does not own) ends at the iteration limit with its best certified point. The returned point is
certified by :func:`production_exploitability`: each player's exact best response value minus its
payoff, in money (a consumer's utility gain divided by its marginal utility of money), and the
status is settled on it over the economy's money scale (the endowments' value plus the firms'
maximal profit at the start), so neither the utilities' units nor the goods' units change it.
"""
from __future__ import annotations

import numpy as np

from solvopt.core.errors import ModelError
from solvopt.core.options import Option
from solvopt.core.registry import Solver, register

from .exploitability import Exploitability
from .static import positive_number
from .tracking import COMMON_HONOURS, EquilibriumRun


def money_per_utility(utility, p, demand):
    """Each consumer's marginal utility of money lambda at its demand (n, m) at prices p > 0: the
    budget's KKT multiplier max_j du/dx_j / p_j over the goods it values, which is V'(B), the
    derivative of its indirect utility in the budget (envelope theorem; exact for the closed-form
    demands: log water filling, Cobb-Douglas, CES). Leontief's V(B) = B / (c.p) is linear: 1 / (c.p)."""
    if utility.kind == "leontief":     # a kink: the gradient there is one supergradient of several
        return 1.0 / np.sum(utility.weights * p, axis=-1)
    with np.errstate(all="ignore"):
        ratio = np.where(utility.weights > 0, utility.gradient(demand) / p, 0.0)
    return np.max(ratio, axis=-1)


def production_exploitability(model, x, y, p) -> Exploitability:
    """Exact exploitability of (x (n, m), y (F, m), p (m,)) in ``model``: per player (consumers, firms,
    the price player) its best response's payoff minus its own, in money, from closed forms; points
    outside a player's feasible set count in ``violation`` (relative to the economy's money scale and
    its total endowment plus capacity).

    Firms' gains r||p|| - p.y and the price player's max z - p.z are money (prices on the simplex).
    A consumer's utility gain V(B) - u(x) is divided by lambda = V'(B), its marginal utility of money
    at its best response: V is concave in the budget, so V(B - m) <= V(B) - lambda m, and the money m
    the consumer would pay to move from x to its best response (V(B - m) = u(x), the compensating
    variation) is at most (V(B) - u(x)) / lambda: a certified upper bound, in money whatever the
    utilities' units."""
    x, y, p = (np.asarray(a, dtype=float) for a in (x, y, p))
    n, F, m = model.shape
    if x.shape != (n, m) or y.shape != (F, m) or p.shape != (m,):
        raise ModelError(f"a point of this economy is x {(n, m)}, y {(F, m)}, p {(m,)}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y)) and np.all(np.isfinite(p))):
        raise ModelError("allocations, outputs and prices must be finite")
    budgets = model.budgets(p, y)
    norm = float(np.linalg.norm(p))
    # relative: money over the money scale, goods over the total endowment plus capacity
    money = money_scale(model, np.abs(p))
    goods = float(model.endowments.sum() + model.radii.sum())
    violation = max(float(np.max(x @ p - budgets, initial=0.0)) / money,
                    float(max(np.max(-x, initial=0.0), np.max(-y, initial=0.0),
                              np.max(np.linalg.norm(y, axis=1) - model.radii, initial=0.0))) / goods,
                    float(np.max(-p, initial=0.0)), abs(float(p.sum()) - 1.0))
    u = model.utility
    if u.kind == "quadratic" and np.all(p >= 0) and np.any(p > 0) and np.all(budgets >= 0):
        consumers = satiable_money_gains(u, x, p, budgets)
    elif np.all(p > 0) and np.all(budgets >= 0):
        best = u.demand(p, budgets)
        gain = u.value(best) - u.value(x)
        lam = money_per_utility(u, p, best)
        with np.errstate(all="ignore"):    # gain <= 0 needs no division (a zero budget: lambda = inf)
            consumers = np.where(gain > 0, gain / lam, gain)
        consumers = np.where(np.isnan(consumers), np.inf, consumers)
    else:
        consumers = np.full(n, np.inf)
    firms = model.radii * norm - y @ p
    z = x.sum(axis=0) - y.sum(axis=0) - model.endowments.sum(axis=0)
    price = float(np.max(z)) - float(p @ z)
    per = np.maximum(np.concatenate([consumers, firms, [price]]), 0.0)
    total = float(per.sum())
    return Exploitability(total, total, per, [], violation)


def satiable_money_gains(u, x, p, budgets):
    """Per consumer of a quadratic (satiable) utility ``u``, an upper bound on e(p, V) - e(p, u(x)): what
    its best response's utility V costs at prices p beyond the cheapest bundle as good as its own x
    (e the expenditure function; the compensating variation when the budget binds).

    With the exact best response x* and its budget multiplier lambda > 0, e is convex in the utility
    with slope 1 / lambda at V, so the bound is the utility gain G = u(x*) - u(x) over lambda (as for
    the other forms). A satiated consumer (lambda = 0: its bliss point is affordable) has e(V) <=
    p.x*, and for every l > 0 weak duality gives e(u(x)) >= p.x_l + (u(x) - u(x_l)) / l with x_l the
    maximiser of u - l p.x over x >= 0; the bound p.(x* - x_l) + (u(x_l) - u(x)) / l is taken at the
    best of a few l around sqrt(2 G / p'Q^-1 p). Utility differences are computed from the bundles'
    difference (no cancellation)."""
    from solvopt.dsl.quadratic_utility import box_qp
    best, lam = u.demand_multipliers(p, budgets)
    gain = u.gain(x, best - x)
    out = np.zeros(len(budgets))
    for k in range(len(budgets)):
        if gain[k] <= 0:
            out[k] = gain[k]
        elif lam[k] > 0:
            out[k] = gain[k] / lam[k]
        else:
            Q, b = u.matrices[k], u.weights[k]
            curv = float(p @ np.linalg.solve(Q, p))
            centre = np.sqrt(2.0 * gain[k] / curv) if curv > 0 else 1.0
            bound = np.inf
            for scale in (0.25, 0.5, 1.0, 2.0, 4.0):
                level = centre * scale
                xl = box_qp(Q, b - level * p, best[k] > 0)
                d = xl - x[k]
                up = float(d @ (b - Q @ x[k]) - 0.5 * d @ Q @ d)          # u(x_l) - u(x)
                bound = min(bound, float(p @ (best[k] - xl)) + up / level)
            out[k] = max(bound, 0.0)
    return out


def money_scale(model, p) -> float:
    """The economy's money scale at prices p: the endowments' total value plus the firms' maximal
    total profit (linear in the goods' units, invariant in the utilities')."""
    return float(model.endowments.sum(axis=0) @ p) + float(model.radii.sum()) * float(np.linalg.norm(p))


def best_responses(model, p):
    """(x, y, z): the consumers' demands and firms' supplies at prices p, and the excess demand z."""
    y = model.supply(p)
    x = model.utility.demand(p, model.budgets(p, y))
    z = x.sum(axis=0) - y.sum(axis=0) - model.endowments.sum(axis=0)
    return x, y, z


def _prices(s):
    """Prices on the simplex's interior from free coordinates s (softmax(s, 0); no price underflows to 0)."""
    t = np.append(s, 0.0)
    t = np.maximum(t - t.max(), -600.0)
    w = np.exp(t)
    return w / w.sum()


@register
class ProductionRoot(Solver):
    name = "production-root"
    description = ("exact best responses of consumers and firms, a root solve of the price player's "
                   "condition (Arrow-Debreu economies with production)")
    family = "games"
    honours = COMMON_HONOURS
    options = (Option("tolerance", positive_number, 1e-9,
                      "stop when the certified exploitability / money scale is at most this"),)

    @classmethod
    def compile(cls, model):
        from solvopt.dsl.production import ProductionEconomy
        if not isinstance(model, ProductionEconomy):
            raise ModelError(f"method {cls.name!r} solves economies with production; got {type(model).__name__}")
        u = model.utility
        if u.kind == "quadratic":      # satiable consumers: goods may be free (the complementarity path)
            return model
        if u.kind not in ("log", "cobb_douglas", "ces") or (u.kind == "ces" and not 0 < u.rho < 1):
            raise ModelError(f"method {cls.name!r} needs utilities whose demand for a free good is unbounded "
                             "(log, Cobb-Douglas, CES with 0 < rho < 1), so that every good is priced")
        unvalued = np.flatnonzero(u.weights.max(axis=0) <= 0)
        if unvalued.size:
            raise ModelError(f"no consumer values good {int(unvalued[0])}: it would be free and in excess supply")
        return model

    def solve(self, model, options):
        from scipy.optimize import least_squares, root
        run = EquilibriumRun(options, options.extra["tolerance"])
        m = model.shape[2]
        # each good's excess demand in units of its total endowment plus a share of the firms' capacity
        unit = model.endowments.sum(axis=0) + float(model.radii.sum()) / np.sqrt(m)
        unit = np.maximum(unit, 1e-3 * float(unit.max()))

        def excess(s):
            with np.errstate(all="ignore"):
                _, _, z = best_responses(model, _prices(s))
            return np.nan_to_num(z / unit, nan=1e10, posinf=1e10, neginf=-1e10)

        def equations(s):
            p = _prices(s)
            with np.errstate(all="ignore"):
                _, _, z = best_responses(model, p)
                f = ((z - p @ z) / unit)[:-1]
            return np.nan_to_num(f, nan=1e10, posinf=1e10, neginf=-1e10)

        def certify(it, s) -> bool:
            p = _prices(s)
            with np.errstate(all="ignore"):
                x, y, _ = best_responses(model, p)
            if not np.all(np.isfinite(x)):
                return False
            e = production_exploitability(model, x, y, p)
            if it == 0:       # the money scale at the first prices (every gain is in money)
                run.rescale(money_scale(model, p))
            return run.record(it, (x, y, p), e)

        def tatonnement(s, steps):
            """Multiplicative price steps on the excess demand over its price-weighted mean: they cross the
            flat regions (goods nobody buys at these prices) where a root method's Jacobian vanishes."""
            eta = 0.5
            r = excess(s)
            for _ in range(steps):
                p = _prices(s)
                g = np.clip(r - p @ r, -1.0, 1.0)
                trial = s + eta * (g[:-1] - g[-1])
                r_new = excess(trial)
                if np.linalg.norm(r_new - _prices(trial) @ r_new) <= np.linalg.norm(r - p @ r) or eta < 1e-3:
                    s, r = trial, r_new
                    eta = min(1.0, eta * 1.2)
                else:
                    eta *= 0.5
            return s

        limit = options.iteration_limit
        if model.utility.kind == "quadratic":
            return self._solve_satiable(model, options, run)
        with run.guard():
            s = np.zeros(m - 1)
            it = 0
            if not certify(0, s) and m > 1:
                # a second start: the consumers' marginal utilities at their endowments (each normalised),
                # summed: the no-trade prices of an economy without production
                with np.errstate(divide="ignore", invalid="ignore"):
                    g = model.utility.gradient(model.endowments)
                    g = np.nan_to_num(g / np.max(np.where(np.isfinite(g), g, 0.0), axis=1, keepdims=True),
                                      nan=1.0, posinf=1.0).sum(axis=0)
                if np.all(g > 0) and np.all(np.isfinite(g)):
                    marginal = np.log(g[:-1] / g[-1])
                    if np.linalg.norm(equations(marginal)) < np.linalg.norm(equations(s)):
                        s = marginal
                # Powell's hybrid method; when it stalls, tatonnement from its point, then again
                for attempt in range(1, 9):
                    if run.should_stop(it) or (limit is not None and it >= limit):
                        break
                    sol = root(equations, s, method="hybr", options={"xtol": 1e-15, "maxfev": 200 * m})
                    it = attempt
                    if np.all(np.isfinite(sol.x)) and certify(it, sol.x):
                        break
                    if np.all(np.isfinite(sol.x)) and np.linalg.norm(equations(sol.x)) < np.linalg.norm(equations(s)):
                        s = sol.x
                    # Levenberg-Marquardt: damped steps where the Jacobian is singular (goods whose price
                    # is free over an interval: nobody buys them and nobody owns them)
                    lm = least_squares(equations, s, method="lm", xtol=1e-15, ftol=1e-15, gtol=1e-15,
                                       max_nfev=400 * m)
                    if np.all(np.isfinite(lm.x)) and certify(it, lm.x):
                        break
                    if np.all(np.isfinite(lm.x)) and np.linalg.norm(lm.fun) < np.linalg.norm(equations(s)):
                        s = lm.x
                    s = tatonnement(s, 50 * attempt * attempt)
        if run.best_point is None:
            return run.result({}, equilibrium="GNE")
        x, y, p = run.best_point
        return run.result({"allocation": x, "production": y, "prices": p}, equilibrium="GNE")

    @staticmethod
    def _solve_satiable(model, options, run):
        """Quadratic (satiable) consumers: the price player's complementarity problem
        (:mod:`solvopt.games.production_complementarity`) from uniform prices, then from the consumers'
        normalised marginal utilities at their endowments, then from random points of the simplex."""
        from .production_complementarity import solve_complementarity
        m = model.shape[2]
        limit = options.iteration_limit

        def certify(it, p) -> bool:
            y = model.supply(p)
            x = model.utility.demand(p, model.budgets(p, y))
            if it <= 1 and run.best_point is None:
                run.rescale(money_scale(model, p))
            return run.record(it, (x, y, p), production_exploitability(model, x, y, p))

        def starts():
            yield np.full(m, 1.0 / m)
            g = np.maximum(model.utility.gradient(model.endowments), 0.0)
            g = (g / np.maximum(g.max(axis=1, keepdims=True), 1e-300)).sum(axis=0)
            if g.sum() > 0:
                yield g / g.sum()
            rng = np.random.default_rng(0 if options.seed is None else options.seed)
            for _ in range(6):
                yield rng.dirichlet(np.ones(m))

        with run.guard():
            if not certify(0, np.full(m, 1.0 / m)):
                solve_complementarity(model, certify, starts(), lambda it: run.should_stop(it)
                                      or (limit is not None and it >= limit))
        if run.best_point is None:
            return run.result({}, equilibrium="GNE")
        x, y, p = run.best_point
        return run.result({"allocation": x, "production": y, "prices": p}, equilibrium="GNE")
