"""The GNEP library's economies with production (A.10a-e) and its nonconcave problem A.2.

- A.10a-e by ``production-root`` (the default method of :class:`~solvopt.dsl.ProductionEconomy`):
  median wall time of three runs, termination, certified exploitability relative to the money
  scale, free goods and satiated consumers at the equilibrium, and the largest regret scipy's
  best responses find at our point (SLSQP for every consumer and firm, HiGHS for the price player).
- nashopt (KKT root finding, JAX) beside them where it can state them: its constraints are shared
  by every player, so an economy's budgets p.x_k <= p.e_k become constraints of the price player
  too. It runs on that restatement of A.10a (the smallest) and its point is certified by our
  exact exploitability on the true economy. It cannot state A.2 (S <= 1 binds players 2-10 only,
  S >= 0.99 players 5 and 6 only) without changing it, and A.2's utilities are not concave, which
  KKT conditions do not see: no row there.
- A.2 by ``scalar-global`` (the default method of :class:`~solvopt.dsl.ScalarGame`) from the
  bounds' midpoints and from the two published points: wall time, certified relative
  exploitability, the point; the same from the midpoints on the shipped file
  (``instances/games/gnep/fk_a2.json``, enclosures by interval arithmetic on its expression trees
  instead of the hand-derived ones); and the published points' own certificate (their violation of
  the bounds).

    python benchmarks/games_production.py [--no-nashopt]

Writes ``benchmarks/results/games_production.json`` and ``.md`` (date, load, CPU count in them).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import sys
import time
from datetime import datetime, timezone

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))

from solvopt.games.gnep_library_extra import PUBLISHED, PUBLISHED_SECOND, a2_game
from solvopt.games.instance import model_from_instance
from solvopt.games.production import money_scale, production_exploitability
from solvopt.games.production_library import PROBLEMS
from solvopt.games.scalar_equilibrium import scalar_exploitability
from solvopt.io import read_instance

RESULTS = pathlib.Path(__file__).resolve().parent / "results"


def scipy_regret(econ, x, y, p):
    """The largest relative regret scipy finds at (x, y, p): consumers and firms by SLSQP, prices by HiGHS."""
    from scipy.optimize import linprog, minimize
    from test_games_production_library import consumer_utility, slsqp_max
    u, budgets = econ.utility, econ.budgets(p, y)
    n, F, m = econ.shape
    worst = 0.0
    for k in range(n):
        f, g = consumer_utility(u, k)
        best = slsqp_max(f, g, (x[k], np.zeros(m)), p, budgets[k])
        worst = max(worst, (best - f(x[k])) / (1 + abs(f(x[k]))))
    for f_, r in enumerate(econ.radii):
        res = minimize(lambda v: -p @ v, np.full(m, 0.1), jac=lambda v: -p, method="SLSQP", bounds=[(0, None)] * m,
                       constraints=[{"type": "ineq", "fun": lambda v, r=r: r * r - v @ v, "jac": lambda v: -2 * v}],
                       options={"ftol": 1e-15})
        worst = max(worst, (-res.fun - p @ y[f_]) / money_scale(econ, p))
    z = x.sum(0) - y.sum(0) - econ.endowments.sum(0)
    lp = linprog(-z, A_eq=np.ones((1, m)), b_eq=[1.0], bounds=[(0, None)] * m, method="highs")
    return max(worst, (-lp.fun - p @ z) / money_scale(econ, p))


def economy_rows():
    rows = []
    for name, make in PROBLEMS.items():
        econ = make()
        walls = []
        for _ in range(3):
            start = time.perf_counter()
            result = econ.solve()
            walls.append(time.perf_counter() - start)
        x, y, p = (result.solution[k] for k in ("allocation", "production", "prices"))
        lam = econ.utility.demand_multipliers(p, econ.budgets(p, y))[1] if econ.utility.kind == "quadratic" else None
        row = {"problem": name, "shape": list(econ.shape), "utility": econ.utility.kind, "method": result.method,
               "termination": str(result.termination), "wall_s": float(np.median(walls)),
               "relative_exploitability": result.objective / money_scale(econ, p),
               "free_goods": int(np.sum(p == 0)), "satiated": None if lam is None else int(np.sum(lam == 0)),
               "scipy_regret": scipy_regret(econ, x, y, p), "prices": p.tolist()}
        print(f"{name}: {row['termination']} {row['relative_exploitability']:.1e} {row['wall_s']:.3f}s "
              f"scipy {row['scipy_regret']:.1e}", flush=True)
        rows.append(row)
    return rows


def nashopt_row(name="A.10a"):
    """nashopt on the restatement with budgets shared by every player; its point certified on the economy."""
    try:
        import jax
        import jax.numpy as jnp
        from nashopt import GNEP
    except Exception as exc:
        print(f"nashopt not available ({type(exc).__name__}: {exc}); skipped", flush=True)
        return None
    jax.config.update("jax_enable_x64", True)
    econ = PROBLEMS[name]()
    n, F, m = econ.shape
    u = econ.utility
    E, R = jnp.asarray(econ.endowments), jnp.asarray(econ.radii)

    def split(x):
        return x[:F * m].reshape(F, m), x[F * m:(F + n) * m].reshape(n, m), x[(F + n) * m:]

    costs = [(lambda x, f=f: -(split(x)[2] @ split(x)[0][f])) for f in range(F)]
    for k in range(n):
        Q, b = jnp.asarray(u.matrices[k]), jnp.asarray(u.weights[k])
        costs.append(lambda x, k=k, Q=Q, b=b: -(b @ split(x)[1][k] - 0.5 * split(x)[1][k] @ Q @ split(x)[1][k]))
    costs.append(lambda x: -(split(x)[2] @ (split(x)[1].sum(0) - split(x)[0].sum(0) - E.sum(0))))

    def g(x):
        y, xc, p = split(x)
        return jnp.concatenate([jnp.sum(y * y, axis=1) - R ** 2, xc @ p - E @ p])

    N = (F + n + 1) * m
    Aeq = np.zeros((1, N))
    Aeq[0, (F + n) * m:] = 1
    x0 = np.concatenate([np.tile(np.full(m, 1 / m), F), econ.endowments.ravel(), np.full(m, 1 / m)])
    walls = []
    for _ in range(2):                     # the second call: JAX's compilation cached
        start = time.perf_counter()
        sol = GNEP([m] * (F + n + 1), costs, g=g, ng=F + n, lb=np.zeros(N), ub=np.full(N, np.inf), Aeq=Aeq,
                   beq=np.ones(1)).solve(x0=x0, verbose=0)
        walls.append(time.perf_counter() - start)
    x = np.asarray(sol.x, dtype=float)
    y, xc, p = x[:F * m].reshape(F, m), x[F * m:(F + n) * m].reshape(n, m), x[(F + n) * m:]
    pc = np.clip(p, 0, None)
    pc = pc / pc.sum() if pc.sum() > 0 else np.full(m, 1 / m)
    e = production_exploitability(econ, np.clip(xc, 0, None), np.clip(y, 0, None), pc)
    from importlib.metadata import version
    row = {"problem": name, "method": f"nashopt {version('nashopt')} (budgets shared by every player)",
           "wall_s": walls[-1], "first_call_s": walls[0], "relative_exploitability": e.value / money_scale(econ, pc),
           "violation": float(np.max(np.maximum(-x, 0)) + e.violation), "prices": p.tolist()}
    print(f"{name} nashopt: {row['relative_exploitability']:.1e} violation {row['violation']:.1e} "
          f"{row['wall_s']:.2f}s", flush=True)
    return row


def a2_rows():
    game = a2_game()
    rows = []
    starts = (("bounds' midpoints", None), ("published point", PUBLISHED), ("second published point", PUBLISHED_SECOND))
    # the hand-derived enclosures, then the shipped file's (interval arithmetic on its expression trees)
    shipped = pathlib.Path(__file__).resolve().parents[1] / "instances" / "games" / "gnep" / "fk_a2.json"
    runs = [(game, "", label, start) for label, start in starts]
    runs.append((model_from_instance(read_instance(str(shipped))), " (fk_a2.json)", starts[0][0], None))
    for model, source, label, start in runs:
        t = time.perf_counter()
        result = model.solve() if start is None else model.solve(start=start)
        wall = time.perf_counter() - t
        x = result.solution["actions"]
        rows.append({"problem": "A.2", "method": result.method + source, "start": label,
                     "termination": str(result.termination), "wall_s": wall,
                     "relative_exploitability": result.objective, "sweeps": result.stats["iterations"],
                     "actions": x.tolist()})
        print(f"A.2 from {label}: {result.termination} {result.objective:.1e} {wall:.3f}s x5 {x[4]:.6f} x6 {x[5]:.6f}",
              flush=True)
    for label, point in (("published point", PUBLISHED), ("second published point", PUBLISHED_SECOND)):
        e = scalar_exploitability(game, point)
        rows.append({"problem": "A.2", "method": "certificate only", "start": label, "termination": "-",
                     "wall_s": None, "relative_exploitability": e.value, "violation": e.violation,
                     "actions": point.tolist()})
    return rows


def markdown(data) -> str:
    lines = [f"# The GNEP library's A.10a-e and A.2 ({data['date']}, {data['machine']})", "",
             "| problem | consumers x firms x goods | utility | method | termination | wall s | certified rel. "
             "exploitability | free goods | satiated | scipy regret |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in data["economies"]:
        lines.append(f"| {r['problem']} | {' x '.join(map(str, r['shape']))} | {r['utility']} | {r['method']} | "
                     f"{r['termination']} | {r['wall_s']:.3f} | {r['relative_exploitability']:.1e} | "
                     f"{r['free_goods']} | {'-' if r['satiated'] is None else r['satiated']} | "
                     f"{r['scipy_regret']:.1e} |")
    if data.get("nashopt"):
        r = data["nashopt"]
        lines.append(f"| {r['problem']} | | | {r['method']} | - | {r['wall_s']:.2f} (first call "
                     f"{r['first_call_s']:.1f}) | {r['relative_exploitability']:.1e} "
                     f"(violation {r['violation']:.1e}) | | | |")
    lines += ["", "| A.2 | start | termination | wall s | certified rel. exploitability | x5, x6 |",
              "| --- | --- | --- | --- | --- | --- |"]
    for r in data["a2"]:
        wall = "-" if r["wall_s"] is None else f"{r['wall_s']:.3f}"
        extra = f" (violation {r['violation']:.1e})" if "violation" in r else ""
        lines.append(f"| {r['method']} | {r['start']} | {r['termination']} | {wall} | "
                     f"{r['relative_exploitability']:.1e}{extra} | {r['actions'][4]:.6f}, {r['actions'][5]:.6f} |")
    lines += ["", "Exploitability: economies in money over the money scale (every consumer's, firm's and the price "
              "player's gain); A.2 per player relative to its payoff's range on its interval. The published A.2 points "
              "are outside the bounds (x1 below 0.3, several players below 0.01): not certified. nashopt states shared "
              "constraints only; on A.10a its budgets bind the price player too, and its point is certified on the "
              "true economy."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-nashopt", action="store_true")
    args = parser.parse_args(argv)
    data = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}",
            "economies": economy_rows(), "nashopt": None if args.no_nashopt else nashopt_row(), "a2": a2_rows()}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "games_production.json").write_text(json.dumps(data, indent=1) + "\n")
    (RESULTS / "games_production.md").write_text(markdown(data))
    print(markdown(data))


if __name__ == "__main__":
    main()
