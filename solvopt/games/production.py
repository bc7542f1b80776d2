"""Equilibria of Arrow-Debreu economies with production (:class:`~solvopt.dsl.ProductionEconomy`).

``production-root`` reduces the pseudo-game to its prices. At prices p every other player's best
response is exact and single-valued: firm f supplies y_f = r_f p / ||p|| (the maximiser of p.y over
the ball {||y|| <= r_f}, non-negative since p is), consumer k demands its utility's closed-form
demand at its budget p.e_k + sum_f theta_kf p.y_f (water filling for shifted logs). The price
player's best responses are the vertices of the simplex with the largest excess demand z_j, so the
prices are a best response exactly when every priced good has the same excess demand; all goods are
priced (demand for a free good is unbounded), so the m - 1 equations z_j(p) = z_m(p) over the
interior of the simplex (p = softmax(s, 0)) determine the equilibrium, found by Powell's hybrid
root method. The returned point is certified by :func:`production_exploitability`: each player's
exact best response value minus its payoff, in its own payoff units (utility for consumers, money
for firms and the price player).
"""
from __future__ import annotations

import numpy as np

from solvopt.core.errors import ModelError
from solvopt.core.options import Option
from solvopt.core.registry import Solver, register

from .exploitability import Exploitability
from .static import positive_number
from .tracking import COMMON_HONOURS, EquilibriumRun


def production_exploitability(model, x, y, p) -> Exploitability:
    """Exact exploitability of (x (n, m), y (F, m), p (m,)) in ``model``: per player (consumers, firms,
    the price player) its best response's payoff minus its own, from closed forms; points outside a
    player's feasible set count in ``violation`` (absolute)."""
    x, y, p = (np.asarray(a, dtype=float) for a in (x, y, p))
    n, F, m = model.shape
    if x.shape != (n, m) or y.shape != (F, m) or p.shape != (m,):
        raise ModelError(f"a point of this economy is x {(n, m)}, y {(F, m)}, p {(m,)}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y)) and np.all(np.isfinite(p))):
        raise ModelError("allocations, outputs and prices must be finite")
    budgets = model.budgets(p, y)
    norm = float(np.linalg.norm(p))
    violation = max(float(np.max(x @ p - budgets, initial=0.0)), float(np.max(-x, initial=0.0)),
                    float(np.max(-y, initial=0.0)), float(np.max(-p, initial=0.0)), abs(float(p.sum()) - 1.0),
                    float(np.max(np.linalg.norm(y, axis=1) - model.radii, initial=0.0)))
    if np.all(p > 0) and np.all(budgets >= 0):
        consumers = model.utility.indirect(p, budgets) - model.utility.value(x)
    else:
        consumers = np.full(n, np.inf)
    firms = model.radii * norm - y @ p
    z = x.sum(axis=0) - y.sum(axis=0) - model.endowments.sum(axis=0)
    price = float(np.max(z)) - float(p @ z)
    per = np.maximum(np.concatenate([consumers, firms, [price]]), 0.0)
    total = float(per.sum())
    return Exploitability(total, total, per, [], violation)


def best_responses(model, p):
    """(x, y, z): the consumers' demands and firms' supplies at prices p, and the excess demand z."""
    y = model.supply(p)
    x = model.utility.demand(p, model.budgets(p, y))
    z = x.sum(axis=0) - y.sum(axis=0) - model.endowments.sum(axis=0)
    return x, y, z


def _prices(s):
    t = np.append(s, 0.0)
    w = np.exp(t - t.max())
    return w / w.sum()


@register
class ProductionRoot(Solver):
    name = "production-root"
    description = ("exact best responses of consumers and firms, a root solve of the price player's "
                   "condition (Arrow-Debreu economies with production)")
    family = "games"
    honours = COMMON_HONOURS
    options = (Option("tolerance", positive_number, 1e-9,
                      "stop when the certified exploitability / payoff scale is at most this"),)

    @classmethod
    def compile(cls, model):
        from solvopt.dsl.production import ProductionEconomy
        if not isinstance(model, ProductionEconomy):
            raise ModelError(f"method {cls.name!r} solves economies with production; got {type(model).__name__}")
        return model

    def solve(self, model, options):
        from scipy.optimize import root
        run = EquilibriumRun(options, options.extra["tolerance"])
        m = model.shape[2]
        unit = float(model.endowments.sum(axis=0).mean()) + float(model.radii.sum()) / np.sqrt(m) + 1.0

        def equations(s):
            _, _, z = best_responses(model, _prices(s))
            return (z[:-1] - z[-1]) / unit

        def certify(it, s) -> bool:
            p = _prices(s)
            x, y, _ = best_responses(model, p)
            e = production_exploitability(model, x, y, p)
            if it == 0:       # the payoff scale: the largest payoff at the first point (at least 1)
                payoffs = np.concatenate([np.abs(model.utility.value(x)), model.radii * np.linalg.norm(p)])
                run.rescale(max(1.0, float(np.max(payoffs))))
            return run.record(it, (x, y, p), e)

        limit = options.iteration_limit
        with run.guard():
            s = np.zeros(m - 1)
            if not certify(0, s):
                it = 0
                # Powell's hybrid method from the uniform prices; restarts from a damped tatonnement step
                # when it stalls (a root exists: the price player's best-response map has a fixed point)
                for attempt in range(1, 6):
                    if run.should_stop(it) or (limit is not None and it >= limit):
                        break
                    sol = root(equations, s, method="hybr", options={"xtol": 1e-15, "maxfev": 200 * m})
                    it = attempt
                    if certify(it, sol.x):
                        break
                    s = sol.x if np.all(np.isfinite(sol.x)) else s
                    p = _prices(s)
                    _, _, z = best_responses(model, p)
                    s = np.log(p[:-1] / p[-1]) + 0.5 * np.clip((z[:-1] - z[-1]) / unit, -5, 5)
        if run.best_point is None:
            return run.result({})
        x, y, p = run.best_point
        return run.result({"allocation": x, "production": y, "prices": p})
