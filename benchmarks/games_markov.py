"""Markov exchange economies at the paper's sizes: certified exploitability, excess demand and
Bellman error against wall time (methods ``markov-newton`` and ``markov-tatonnement``).

Economies (``solvopt.games.economy.random_economy``, seed 0): 10 consumers x 10 goods x 1 asset x
5 world states, deterministic (a cycle) and stochastic transitions, linear / Cobb-Douglas /
Leontief utilities, discount 0.9, goods prices on the simplex scaled to 10 (the anchor's scale),
holdings in [-1, 1]; with ``--large`` also 20 x 20 x 5 assets x 10 world states. Goal: certified
exploitability <= 1e-4 of the total endowment value within 5 minutes on this machine.

Methods: ``markov-newton`` (smooth demands: Cobb-Douglas, Leontief) and ``markov-tatonnement``
(the only one for linear utilities) side by side on the 10 x 10 economies, in one process; on the
20 x 20 ones each utility's best method only (Newton where it applies), to keep the run short.

The anchor (Goktas, Zhao, Chen, Greenwald, ICLR 2026; Sadie-Zhao/Generalized-Markov-Games at
6cce5eaf) trains neural policies and estimates exploitability with a trained best-response network
and Monte-Carlo rollouts; its logged numbers are estimates (some negative), not certificates, so
they are quoted, not re-run (JAX and haiku are not installed here).

Each 10 x 10 run continues past the goal towards 1e-8 until its time limit, each 20 x 20 run
towards 1e-6; the table reports the time at which the goal was first certified and the final
figures.

Usage: python benchmarks/games_markov.py [--time-limit 30] [--large [--large-time-limit 300]] [--quick]
Writes benchmarks/results/games_markov.{md,json,png}.
"""
from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import platform
from pathlib import Path


from solvopt.games.economy import random_economy

RESULTS = Path(__file__).resolve().parent / "results"
GOAL = 1e-4      # the goal, relative to the total endowment value
DEEP = 1e-8      # each 10 x 10 run goes on towards this to show the curve past the goal
DEEP_LARGE = 1e-6   # each 20 x 20 run towards this (100 x past the goal), to keep the run short
SMOOTH = ("cobb_douglas", "leontief")     # the utilities markov-newton takes
ANCHOR = ("anchor (paper's public code, 2000 epochs of Adam, neural best responses): logged exploitability "
          "estimates e.g. -2.48 (Cobb-Douglas, deterministic) and -36 (Leontief, stochastic) — negative, so not "
          "bounds; excess demand between about 0.9 and 44")


def run_case(consumers, goods, assets, states, utility, stochastic, time_limit, method, deep=DEEP, seed=0):
    econ = random_economy(consumers, goods, assets, states, utility, stochastic=stochastic, seed=seed)
    result = econ.solve(method=method, tolerance=deep, time_limit=time_limit)
    scale = result.stats["metrics"]["endowment_value"]
    hist = [(float(t), float(v) / scale) for _, t, v, *rest in result.stats["history"]]
    reached = next((t for t, v in hist if v <= GOAL), None)
    m = result.stats["metrics"]
    return {
        "size": f"{consumers}x{goods}x{assets}x{states}", "utility": utility, "method": method,
        "transitions": "stochastic" if stochastic else "deterministic",
        "termination": result.termination.value, "seconds": result.stats["wall_time"],
        "iterations": result.stats["iterations"], "time_to_goal": reached,
        "exploitability": result.objective, "relative_exploitability": result.objective / scale,
        "exploitability_lower": m["exploitability_lower"], "endowment_value": scale,
        "excess_demand_rel": m["excess_demand"], "excess_demand_abs": m["excess_demand_abs"],
        "asset_excess_demand": m["asset_excess_demand"], "excess_demand_msq": m.get("excess_demand_msq"), "bellman_error": m["bellman_error"],
        "portfolio_foc": m["portfolio_foc"], "budget_violation": m["budget_violation"],
        "time_limit": time_limit, "history": hist,     # the final metrics are above; their histories stay in Result
    }


def markdown(meta, rows) -> str:
    out = [f"# Markov exchange economies (markov-newton, markov-tatonnement) — {meta['date']}", "",
           f"Machine: {meta['machine']}, {meta['cores']} cores (shared; load average {meta['load']} at the start), "
           f"Python {meta['python']}. Time limit {meta['time_limit']} s per 10x10 economy (runs go on towards "
           f"{DEEP:g}), {meta['large_time_limit']} s per 20x20 one (towards {DEEP_LARGE:g}); goal: certified "
           f"exploitability <= {GOAL:g} x total endowment value (exact best responses: closed-form demands, HiGHS "
           "portfolio LPs bounded by their Lagrangian). The 20x20 runs ran under nice.", "",
           "| economy | utility | transitions | method | status | time to goal (s) | certified exploitability (rel.) | "
           "excess demand (rel. / abs.) | asset excess | Bellman error | iterations |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        goal = f"{r['time_to_goal']:.1f}" if r["time_to_goal"] is not None else f"not within {r['time_limit']:g}"
        out.append(f"| {r['size']} | {r['utility']} | {r['transitions']} | {r['method']} | {r['termination']} | {goal} | "
                   f"{r['exploitability']:.3g} ({r['relative_exploitability']:.2g}) | "
                   f"{r['excess_demand_rel']:.2g} / {r['excess_demand_abs']:.2g} | {r['asset_excess_demand']:.1g} | "
                   f"{r['bellman_error']:.1g} | {r['iterations']} |")
    reached = sum(r["time_to_goal"] is not None for r in rows)
    out += ["", f"{reached} of {len(rows)} runs reached the goal within the time limit."]
    out += [f"Appended later by `--add-large`: {a}." for a in meta.get("appended", [])] + [""]
    pairs = [(a, b) for a in rows for b in rows if a["method"] == "markov-newton" and b["method"] == "markov-tatonnement"
             and (a["size"], a["utility"], a["transitions"]) == (b["size"], b["utility"], b["transitions"])]
    if pairs:
        out += ["Side by side (same economy, same machine; the 10x10 pairs in one process): time to goal and final "
                "certified relative exploitability, markov-newton vs markov-tatonnement:", ""]
        out += [f"- {a['size']} {a['utility']} {a['transitions']}: "
                f"{_seconds(a['time_to_goal'])} vs {_seconds(b['time_to_goal'])}; "
                f"{a['relative_exploitability']:.2g} vs {b['relative_exploitability']:.2g}" for a, b in pairs]
        out.append("")
    out += [

            "Excess demand: the largest positive excess demand of a good, relative to its supply, and in goods "
            "units; goods in excess supply carry (near) zero prices, as equilibrium allows. Bellman error: the "
            "largest one-step residual beta_i(s) W_i(s) - u_i(x_i(s)) of consumption (holdings fixed). The "
            "exploitability is an upper bound; its lower bound is in the JSON.", "", ANCHOR + "."]
    return "\n".join(out) + "\n"


def _seconds(t):
    return "not reached" if t is None else f"{t:.1f} s"


def anchor_table(time_limit):
    """The anchor's excess-demand formula (mean square over goods + assets) at the goal, per economy."""
    rows = []
    for utility in ("linear", "cobb_douglas", "leontief"):
        for stochastic in (False, True):
            econ = random_economy(10, 10, 1, 5, utility, stochastic=stochastic, seed=0)
            result = econ.solve(method="markov-newton" if utility in SMOOTH else "markov-tatonnement",
                                tolerance=GOAL, time_limit=time_limit)
            m = result.stats["metrics"]
            rows.append({"utility": utility, "transitions": "stochastic" if stochastic else "deterministic",
                         "termination": result.termination.value, "seconds": result.stats["wall_time"],
                         "relative_exploitability": m["relative_exploitability"],
                         "excess_demand_msq": m["excess_demand_msq"], "excess_demand_abs": m["excess_demand_abs"]})
    lines = ["# Markov exchange economies: excess demand by the anchor's formula — " + datetime.date.today().isoformat(),
             "", "Each 10x10x1x5 economy solved to the goal (relative exploitability 1e-4; markov-newton for "
             "Cobb-Douglas and Leontief, markov-tatonnement for linear) and stopped there. The "
             "anchor's 'excess demand' (seller first-order violation) is mean_j z_j^2 + mean_k Y_k^2, averaged over "
             "sampled states; here over our states with the occupancy weights. " + ANCHOR + ". Our state space "
             "is tabular (pairs of world states) and endowments do not accumulate asset payouts, so the "
             "economies are of the same sizes and kind, not identical. The formula counts excess supply too: "
             "Leontief equilibria leave some goods in excess supply at prices near 0 (free goods), which is "
             "what its Leontief rows measure; the largest positive excess demand is the last column.", "",
             "| utility | transitions | status | seconds | relative exploitability | excess demand (anchor formula) | "
             "max excess demand (goods units) |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['utility']} | {r['transitions']} | {r['termination']} | {r['seconds']:.1f} | "
                     f"{r['relative_exploitability']:.2g} | {r['excess_demand_msq']:.2g} | {r['excess_demand_abs']:.2g} |")
    return rows, "\n".join(lines) + "\n"


def plot(rows, path):
    from plots import pyplot_or_none
    plt = pyplot_or_none()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    colours = {"linear": "tab:blue", "cobb_douglas": "tab:green", "leontief": "tab:red"}
    for r in rows:        # the best certified so far (what a stop returns): solid newton, dotted tatonnement
        t, v = zip(*[(max(t, 1e-2), max(v, 1e-16)) for t, v in r["history"]])
        best = list(itertools.accumulate(v, min))
        ax.step(t, best, where="post", color=colours[r["utility"]], lw=1.6 if r["size"].startswith("20x") else 0.8,
                ls="-" if r["method"] == "markov-newton" else ":", alpha=1.0 if r["transitions"][0] == "d" else 0.55,
                label=f"{r['size']} {r['utility']} {r['transitions'][:5]} {r['method'].split('-')[1]}")
    ax.axhline(GOAL, color="k", ls=":", lw=1)
    ax.set(xscale="log", yscale="log", xlabel="wall time (s)", ylabel="certified exploitability / endowment value",
           title="Markov exchange economies (thick: 20x20x5x10)")
    ax.legend(fontsize=5, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--large", action="store_true", help="also the 20 x 20 x 5 x 10 economies")
    ap.add_argument("--large-time-limit", type=float, default=300.0)
    ap.add_argument("--replot", action="store_true", help="only rewrite the table and figure from the recorded JSON")
    ap.add_argument("--anchor", action="store_true", help="only the anchor-formula table (games_markov_anchor.*)")
    ap.add_argument("--quick", action="store_true", help="Cobb-Douglas only, 10 s (a smoke run; results not written)")
    ap.add_argument("--add-large", nargs=2, metavar=("METHOD", "UTILITY"),
                    help="append the 20x20 rows of METHOD on UTILITY (both chains) to the recorded results")
    args = ap.parse_args(argv)
    if args.replot:
        recorded = json.loads((RESULTS / "games_markov.json").read_text())
        write(recorded["meta"], recorded["rows"])
        return
    if args.add_large:
        recorded = json.loads((RESULTS / "games_markov.json").read_text())
        method, utility = args.add_large
        for stochastic in (False, True):
            row = run_case(20, 20, 5, 10, utility, stochastic, args.large_time_limit, method, DEEP_LARGE)
            print(f"{row['size']} {utility} {row['transitions']} {method}: rel {row['relative_exploitability']:.2e}, "
                  f"goal at {_seconds(row['time_to_goal'])}", flush=True)
            recorded["rows"].append(row)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        recorded["meta"].setdefault("appended", []).append(
            f"{method} on the 20x20 {utility} economies, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} "
            f"UTC, load average {load:.2f} at the end")
        write(recorded["meta"], recorded["rows"])
        return
    if args.anchor:
        rows, text = anchor_table(args.time_limit)
        print(text)
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "games_markov_anchor.md").write_text(text)
        (RESULTS / "games_markov_anchor.json").write_text(json.dumps({"rows": rows}, indent=1))
        return
    utilities = ("cobb_douglas",) if args.quick else ("linear", "cobb_douglas", "leontief")
    limit = 10.0 if args.quick else args.time_limit
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    cases = [((10, 10, 1, 5), limit, DEEP, method) for method in ("markov-newton", "markov-tatonnement")]
    if args.large:
        cases.append(((20, 20, 5, 10), args.large_time_limit, DEEP_LARGE, None))
    rows = []
    for size, size_limit, deep, only in cases:
        for utility in utilities:
            method = only or ("markov-newton" if utility in SMOOTH else "markov-tatonnement")
            if method == "markov-newton" and utility not in SMOOTH:
                continue
            for stochastic in (False, True):
                row = run_case(*size, utility, stochastic, size_limit, method, deep)
                rows.append(row)
                print(f"{row['size']} {utility} {row['transitions']} {method}: {row['termination']} "
                      f"rel {row['relative_exploitability']:.2e} in {row['seconds']:.1f}s, goal at "
                      f"{_seconds(row['time_to_goal'])}", flush=True)
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "python": platform.python_version(), "machine": platform.processor() or platform.machine(),
            "cores": os.cpu_count(), "load": None if load is None else round(load, 2), "time_limit": limit,
            "large_time_limit": args.large_time_limit if args.large else None}
    if args.quick:
        print(markdown(meta, rows))
    else:
        write(meta, rows)


def write(meta, rows):
    """benchmarks/results/games_markov.{md,json,png} from the rows."""
    text = markdown(meta, rows)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "games_markov.md").write_text(text)
    (RESULTS / "games_markov.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    plot(rows, RESULTS / "games_markov.png")


if __name__ == "__main__":
    main()
