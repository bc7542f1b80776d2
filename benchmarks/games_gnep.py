"""The Facchinei-Kanzow GNEP library side by side: solvopt's default method against nashopt.

For each instance solvopt states (the twelve with shared or own rows, A.1, A.11-A.18 with
A.16a-d, whose default method computes the variational equilibrium; and the generalized Nash
problems proper A.3-A.5, A.7, A.8, with player-specific coupled rows, whose default method
gnep-kkt computes a GNE; A.6, A.9a, A.9b, whose players have convex nonlinear constraints, also
gnep-kkt; and A.2, whose costs are not convex in the own action, by scalar-global, certified global
best responses, its exploitability relative to each payoff's range; see
``solvopt.games.gnep_library``): our default method's wall time,
termination, certified exploitability and VE gap (VE problems only), the time at which the
certified exploitability first reached 1e-6,
the largest regret scipy's best responses find at our point (independent of our solvers), and
the distance to the appendix's published point; then nashopt (bemporad/nashopt, JAX: the KKT
system of the variational GNE by root finding), when installed, on the same costs and
constraints: its total time (problem built, JAX compilation, solve), its time without the JIT
compilation (its own ``stats.elapsed_time - stats.jax_jit_time``), and its point certified by
*our* exploitability and by scipy's regrets. Ratios: ours / nashopt's total and / nashopt without JIT.
Beside ours, the shipped file (``instances/games/gnep/``) as ``solvopt solve FILE`` takes it: read,
built by the family (expression trees where the library's model has callables), solved by the
default method from its default start. A last section lists A.10a-e (economies with production)
from ``benchmarks/results/games_production.json``, written by ``benchmarks/games_production.py``.
nashopt states shared constraints only: on the GNEPs proper it is run with every row (and every
nonlinear constraint, as a shared g(x) <= 0 evaluated from the problem's expression trees in JAX)
shared (its GNE mode, each player with its own multipliers) and its point is certified on the true
problem, so there it anchors the time, not the model.

    python benchmarks/games_gnep.py [--time-limit 60] [--only A.13 A.16a] [--no-nashopt]

For one core, pin the process (both solvers then run on it):
``OMP_NUM_THREADS=1 taskset -c 0 python benchmarks/games_gnep.py``.

Writes ``benchmarks/results/games_gnep.json`` and ``.md``. Single runs on whatever machine runs it
(the date, the load and the CPU count are in the files): times are indicative.
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

from solvopt.games.exploitability import static_exploitability, ve_gap
from solvopt.games.gnep_library import GENERAL, NAMES, NONCONCAVE, NONLINEAR, problem
from solvopt.games.scalar_equilibrium import scalar_exploitability

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
FILES = pathlib.Path(__file__).resolve().parents[1] / "instances" / "games" / "gnep"


def _distance(p, x):
    if p.published is None:
        return None
    return float(np.abs(np.asarray(x) - p.published).max())


def _time_to(history, level):
    for row in history or []:
        if row[2] is not None and row[2] <= level:
            return float(row[1])
    return None


def run_ours(p, time_limit):
    model = p.model()
    kw = {} if p.start is None else {"start": p.start}
    start = time.perf_counter()
    r = model.solve(time_limit=time_limit, **kw)
    wall = time.perf_counter() - start
    x = r.solution.get("actions")
    out = {"method": r.method, "termination": r.termination.value, "wall_s": wall,
           "exploitability": r.objective, "ve_gap": r.stats.get("ve_gap"),
           "payoff_scale": r.stats.get("payoff_scale"), "iterations": r.stats.get("iterations"),
           "time_to_1e-6_s": _time_to(r.stats.get("history"), 1e-6)}
    if x is not None:
        x = np.asarray(x, dtype=float)
        out.update(actions=x.tolist(), scipy_max_regret=float(p.scipy_regrets(x).max()),
                   published_distance=_distance(p, x))
    return out


def run_file(p, time_limit):
    """The shipped file as ``solvopt solve FILE`` takes it: read, built by the family, solved by the
    default method from its default start (expression trees where the library model has callables)."""
    from solvopt.core.family import get_family
    from solvopt.io import read_instance
    start = time.perf_counter()
    r = get_family("games").build_model(read_instance(str(FILES / f"{p.file_stem}.json"))).solve(
        time_limit=time_limit)
    wall = time.perf_counter() - start
    out = {"wall_s": wall, "method": r.method, "termination": r.termination.value, "exploitability": r.objective,
           "equilibrium": r.stats.get("equilibrium")}
    x = r.solution.get("actions")
    if x is not None:
        out["scipy_max_regret"] = float(p.scipy_regrets(np.asarray(x, dtype=float)).max())
    return out


def production_rows():
    """A.10a-e as benchmarks/games_production.py last recorded them (None when it has not run)."""
    path = RESULTS / "games_production.json"
    if not path.exists():
        return None
    return json.loads(path.read_text())


def _jax_expression(tree):
    """A JSON expression tree (solvopt.games.expressions) as a function of the joint action, in jax.numpy."""
    import jax.numpy as jnp
    if not isinstance(tree, dict):
        return lambda x: float(tree)
    if "var" in tree:
        return lambda x: x[tree["var"]]
    if "linear" in tree:
        w, b = jnp.asarray(tree["linear"]), float(tree.get("constant", 0.0))
        return lambda x: w @ x + b
    args = [_jax_expression(a) for a in tree["args"][:1 if tree["op"] == "pow" else None]]
    if tree["op"] == "add":
        return lambda x: sum(f(x) for f in args)
    if tree["op"] == "mul":
        def product(x):
            out = 1.0
            for f in args:
                out = out * f(x)
            return out
        return product
    if tree["op"] == "pow":
        return lambda x: args[0](x) ** float(tree["args"][1])
    return lambda x: jnp.log(args[0](x))


def run_nashopt(p):
    try:
        from importlib.metadata import version

        import jax
        import jax.numpy as jnp
        from nashopt import GNEP as NashGNEP
    except Exception as exc:
        return {"skipped": f"nashopt not available ({type(exc).__name__}: {exc})"}
    jax.config.update("jax_enable_x64", True)
    A = np.vstack([r.A for r in p.rows]) if p.rows else np.zeros((0, p.n))
    lo = np.concatenate([r.lo for r in p.rows]) if p.rows else np.zeros(0)
    hi = np.concatenate([r.hi for r in p.rows]) if p.rows else np.zeros(0)
    # nashopt states shared inequalities g(x) <= 0 only; a player's own rows involve only its own
    # variables, so as shared rows they leave every player's feasible set (and the VE) unchanged
    G = jnp.asarray(np.vstack([A[np.isfinite(hi)], -A[np.isfinite(lo)]]))
    h = jnp.asarray(np.concatenate([hi[np.isfinite(hi)], -lo[np.isfinite(lo)]]))
    curved = [(_jax_expression(c.expression), 1.0 if c.sense == "<=" else -1.0, c.rhs) for c in p.nonlinear]
    ng = int(G.shape[0]) + len(curved)

    def g(x):
        rows = G @ x - h
        if not curved:
            return rows
        return jnp.concatenate([rows, jnp.stack([s * (f(x) - r) for f, s, r in curved])])

    x0 = p.start if p.start is not None else np.clip(np.zeros(p.n), p.lb, p.ub)
    start = time.perf_counter()
    try:
        game = NashGNEP(list(p.sizes), list(p.costs), g=g if ng else None, ng=ng or None,
                        lb=p.lb, ub=p.ub, variational=bool(ng) and not p.coupled)
        sol = game.solve(x0=x0, verbose=0)
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}", "version": version("nashopt")}
    wall = time.perf_counter() - start
    x = np.clip(np.asarray(sol.x, dtype=float)[:p.n], p.lb, p.ub)
    model = p.model()
    if p.nonconcave:            # certified global best responses, relative to each payoff's range
        exploitability, gap = scalar_exploitability(model, x).value, None
    else:
        data = model.data()
        exploitability, gap = static_exploitability(data, x).value, None if p.coupled else ve_gap(data, x).value
    return {"version": version("nashopt"), "wall_s": wall, "jit_s": float(sol.stats.jax_jit_time),
            "solve_without_jit_s": float(sol.stats.elapsed_time - sol.stats.jax_jit_time),
            "exploitability": exploitability, "ve_gap": gap, "rows_shared": p.coupled,
            "scipy_max_regret": float(p.scipy_regrets(x).max()), "published_distance": _distance(p, x),
            "actions": x.tolist()}


def _fmt(v, spec=".2e"):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    return format(v, spec)


def markdown(meta, rows, production=None) -> str:
    lines = ["# Facchinei-Kanzow GNEP library: solvopt (default method) and nashopt", "",
             "Equilibrium computed: the VE where every coupled row is shared (A.1, A.11-A.18), a GNE on the "
             "generalized Nash problems proper (A.3-A.5, A.7, A.8: player-specific coupled rows; A.6, A.9a, A.9b: "
             "player-specific convex nonlinear constraints; method gnep-kkt), and a GNE with certified global best "
             "responses on A.2 (costs not convex in the own action; method scalar-global; its exploitability is "
             "relative to each payoff's range on its interval). nashopt states shared constraints "
             "only (linear and nonlinear): on those nine it solves the game with every constraint shared (its GNE "
             "mode: on A.9 each player then also faces the others' rate constraints, another game), and its point "
             "is certified on the true problem.", "",
             f"Run {meta['date']} on {meta['machine']} ({meta['cpus']} CPUs, {meta.get('usable_cpus', '?')} usable by "
             f"the run, load average {meta['load']}), "
             f"our time limit {meta['time_limit']} s per instance. Command: `{meta['command']}`.", "",
             "Ours: wall time, status, certified exploitability (an upper bound; absolute, in the problem's payoff "
             "units), VE gap, first time the certified exploitability was <= 1e-6, the largest regret scipy's "
             "best responses (SLSQP over the original constraints) find at our point, and the max-norm distance "
             "to the appendix's published point. nashopt: total time of one call (problem built, JAX compiled, "
             "solved), time without the JIT compilation, its point's exploitability by our certificate, scipy's "
             "regret there and its distance to the published point. ratio = our wall time / nashopt's. "
             "scipy's points are accepted within 1e-9 of the constraints, so where a constraint binds its regret "
             "may exceed our certified bound by up to the utility's slope times 1e-9 (A.16: slope about 28). "
             "file: the shipped instance file as `solvopt solve FILE` takes it (read and built from "
             "instances/games/gnep/, default method, default start; A.1, A.14 and A.16a-d state their costs "
             "as expression trees there, callables in the library's model): wall time and status.", "",
             "| problem | n | ours: time (s) | status | exploitability | VE gap | to 1e-6 (s) | scipy regret | "
             "dist. published | file (s) | file status | nashopt total (s) | w/o JIT (s) | nashopt exploit. | "
             "nashopt regret | nashopt dist. | ratio total | ratio w/o JIT |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
             "| --- |"]
    for row in rows:
        o, a, f = row["ours"], row.get("nashopt", {}), row.get("file", {})
        ok = "wall_s" in a
        lines.append("| " + " | ".join([
            row["problem"] + (f" ({row['concept']})" if row.get("concept", "VE") != "VE" else ""), str(row["n"]),
            _fmt(o["wall_s"], ".2f"), o["termination"], _fmt(o.get("exploitability")),
            _fmt(o.get("ve_gap")), _fmt(o.get("time_to_1e-6_s"), ".2f"), _fmt(o.get("scipy_max_regret")),
            _fmt(o.get("published_distance")),
            _fmt(f.get("wall_s"), ".2f"), f.get("termination", "-"),
            _fmt(a.get("wall_s"), ".2f") if ok else a.get("error", a.get("skipped", "-"))[:40],
            _fmt(a.get("solve_without_jit_s"), ".3f"), _fmt(a.get("exploitability")),
            _fmt(a.get("scipy_max_regret")), _fmt(a.get("published_distance")),
            _fmt(o["wall_s"] / a["wall_s"], ".2f") if ok else "-",
            _fmt(o["wall_s"] / a["solve_without_jit_s"], ".2f") if ok and a["solve_without_jit_s"] > 0 else "-",
        ]) + " |")
    lines += ["", "Observations (computed from the rows above):", ""]
    ours_ok = [r for r in rows
               if r["ours"].get("scipy_max_regret") is not None and r["ours"]["scipy_max_regret"] <= 1e-5]
    lines.append(f"- our point is a GNE by scipy's best responses (regret <= 1e-5) on {len(ours_ok)} of {len(rows)}; "
                 "status `optimal` on " + str(sum(r["ours"]["termination"] == "optimal" for r in rows)) + ".")
    fast = [r["problem"] for r in rows
            if r["ours"].get("time_to_1e-6_s") is not None and r["ours"]["time_to_1e-6_s"] <= 1.0]
    lines.append(f"- certified exploitability <= 1e-6 within 1 s on {len(fast)} of {len(rows)}: "
                 f"{', '.join(fast) or 'none'}.")
    timed = [r for r in rows if "wall_s" in r.get("nashopt", {})]
    faster = [r["problem"] for r in timed if r["ours"]["wall_s"] < r["nashopt"]["wall_s"]]
    lines.append(f"- our wall time below nashopt's total (JIT included) on {len(faster)} of {len(timed)}: "
                 f"{', '.join(faster) or 'none'}.")
    files = [r for r in rows if "wall_s" in r.get("file", {})]
    if files:
        good = [r["problem"] for r in files if r["file"]["termination"] == "optimal"
                and r["file"].get("scipy_max_regret", np.inf) <= 1e-5 and r["file"]["wall_s"] <= 1.0]
        lines.append(f"- the shipped file `optimal`, within 1 s and confirmed by scipy (regret <= 1e-5) on "
                     f"{len(good)} of {len(files)}; below nashopt's total on "
                     f"{sum(r['file']['wall_s'] < r['nashopt']['wall_s'] for r in files if r in timed)} of "
                     f"{sum(r in timed for r in files)}.")
    infeasible = [r["problem"] for r in timed if not np.isfinite(r["nashopt"]["exploitability"])]
    if infeasible:
        lines.append(f"- nashopt's point on {', '.join(infeasible)} violates the true problem's constraints (our "
                     "certificate: inf); scipy's regret there is 0 only because no deviation of a player is "
                     "feasible against the others' actions.")
    loose = [r["problem"] for r in timed if np.isfinite(r["nashopt"]["exploitability"])
             and r["nashopt"]["exploitability"] > 1e3 * r["nashopt"]["scipy_max_regret"] + 1e-6]
    if loose:
        lines.append(f"- at nashopt's point on {', '.join(loose)}, our certified exploitability is far above "
                     "the regret scipy finds (an upper bound, but a loose one: the certificate of library forms "
                     "and callables at points where the gradient vanishes exactly).")
    if production:
        lines += ["", f"## A.10a-e: economies with production ({production['date']}, {production['machine']})", "",
                  "`benchmarks/games_production.py` (results in `games_production.md`) runs them with "
                  "`production-root` (a GNE: each consumer's budget moves with the prices), our median wall time "
                  "of three runs; exploitability relative to the money scale; scipy: every consumer's and firm's "
                  "best response by SLSQP, the price player's by HiGHS. nashopt states constraints shared by every "
                  "player only, so the budgets become constraints of the price player too (another game): it runs "
                  "on that restatement of A.10a alone (the smallest), its point certified on the true economy; "
                  "A.10b-e: not run. nashopt's time: its second call (JAX's compilation cached), the first in "
                  "parentheses; ratio = ours / its second call.", "",
                  "| problem | consumers x firms x goods | ours: time (s) | status | rel. exploitability | "
                  "scipy regret | nashopt (s) | nashopt rel. exploit. | ratio |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        anchor = production.get("nashopt") or {}
        for e in production["economies"]:
            mine = anchor.get("problem") == e["problem"]
            lines.append("| " + " | ".join([
                e["problem"], " x ".join(str(v) for v in e["shape"]), _fmt(e["wall_s"], ".3f"), e["termination"],
                _fmt(e["relative_exploitability"], ".1e"), _fmt(e["scipy_regret"], ".1e"),
                f"{anchor['wall_s']:.2f} (first call {anchor['first_call_s']:.2f})" if mine else "not run",
                (_fmt(anchor["relative_exploitability"], ".1e") + f" (violation {anchor['violation']:.1e})")
                if mine else "-",
                _fmt(e["wall_s"] / anchor["wall_s"], ".3f") if mine else "-"]) + " |")
    lines += ["", "Notes from the library (`solvopt.games.gnep_library`):", ""]
    for row in rows:
        if row["notes"]:
            lines.append(f"- {row['problem']}: {row['notes']}")
    return "\n".join(lines) + "\n"


def _command(args) -> str:
    pin = len(os.sched_getaffinity(0)) == 1
    threads = os.environ.get("OMP_NUM_THREADS")
    return ((f"OMP_NUM_THREADS={threads} " if threads else "") + ("taskset -c 0 " if pin else "")
            + "python benchmarks/games_gnep.py"
            + (f" --time-limit {args.time_limit:g}" if args.time_limit != 60.0 else "")
            + (" --no-nashopt" if args.no_nashopt else ""))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--no-nashopt", action="store_true")
    ap.add_argument("--out", default=str(RESULTS / "games_gnep"))
    args = ap.parse_args(argv)
    names = args.only or NAMES + list(GENERAL) + list(NONLINEAR) + list(NONCONCAVE)
    rows = []
    for name in names:
        p = problem(name)
        ours = run_ours(p, args.time_limit)
        print(f"{name:6s} ours {ours['termination']:18s} {ours['wall_s']:7.2f}s exploitability "
              f"{_fmt(ours['exploitability'])} VE gap {_fmt(ours['ve_gap'])} scipy regret "
              f"{_fmt(ours.get('scipy_max_regret'))} dist {_fmt(ours.get('published_distance'))}", flush=True)
        row = {"problem": name, "n": p.n, "players": len(p.sizes), "concept": p.concept, "unique": p.unique,
               "published": None if p.published is None else p.published.tolist(), "notes": p.notes, "ours": ours,
               "file": run_file(p, args.time_limit)}
        print(f"{name:6s} file {row['file']['termination']:18s} {row['file']['wall_s']:7.2f}s", flush=True)
        if not args.no_nashopt:
            row["nashopt"] = anchor = run_nashopt(p)
            if "wall_s" in anchor:
                print(f"{name:6s} nashopt {anchor['wall_s']:.2f}s (without JIT {anchor['solve_without_jit_s']:.3f}s) "
                      f"exploitability {_fmt(anchor['exploitability'])} scipy regret "
                      f"{_fmt(anchor['scipy_max_regret'])} dist {_fmt(anchor['published_distance'])}", flush=True)
            else:
                print(f"{name:6s} nashopt {anchor}", flush=True)
        rows.append(row)
    meta = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "machine": platform.machine(),
            "cpus": os.cpu_count(), "usable_cpus": len(os.sched_getaffinity(0)),
            "load": " ".join(f"{v:.1f}" for v in os.getloadavg()),
            "time_limit": args.time_limit, "python": sys.version.split()[0],
            "command": _command(args)}
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    production = production_rows()
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows, "production": production}, indent=1)
                                        + "\n")
    out.with_suffix(".md").write_text(markdown(meta, rows, production))
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
