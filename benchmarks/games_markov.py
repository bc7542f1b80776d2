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
       [--rerun-small] [--paper [--method M]] [--paper-horizon] [--paper-horizon-metrics]
       [--paper-horizon-floors-stochastic] [--paper-least] [--paper-data]
Writes benchmarks/results/games_markov.{md,json,png}.
"""
from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import platform
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
GOAL = 1e-4      # the goal, relative to the total endowment value
DEEP = 1e-8      # each 10 x 10 run goes on towards this to show the curve past the goal
DEEP_LARGE = 1e-6   # each 20 x 20 run towards this (100 x past the goal), to keep the run short
SMOOTH = ("cobb_douglas", "leontief")     # the utilities markov-newton takes
CERTIFICATE = "every deviation, money"     # what the exploitability of a row bounds, and in which unit
OLD = ("measured 2026-12-03 with the earlier certificate (stationary deviations only; utilities and money "
       "added): not comparable with the other rows")
ANCHOR = ("anchor (paper's public code, 2000 epochs of Adam, neural best responses): logged exploitability "
          "estimates e.g. -2.48 (Cobb-Douglas, deterministic) and -36 (Leontief, stochastic) — negative, so not "
          "bounds; excess demand between about 0.9 and 44")


def run_case(consumers, goods, assets, states, utility, stochastic, time_limit, method, deep=DEEP, seed=0):
    from solvopt.games.economy import random_economy
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
        "asset_excess_demand": m["asset_excess_demand"], "excess_demand_msq": m.get("excess_demand_msq"),
        "bellman_error": m["bellman_error"],
        "portfolio_foc": m["portfolio_foc"], "budget_violation": m["budget_violation"],
        "time_limit": time_limit, "history": hist,     # the final metrics are above; their histories stay in Result
        "certificate": CERTIFICATE,
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
        old = "" if r.get("certificate") == CERTIFICATE else " (old)"
        out.append(f"| {r['size']}{old} | {r['utility']} | {r['transitions']} | {r['method']} | {r['termination']} "
                   f"| {goal} | "
                   f"{r['exploitability']:.3g} ({r['relative_exploitability']:.2g}) | "
                   f"{r['excess_demand_rel']:.2g} / {r['excess_demand_abs']:.2g} | {r['asset_excess_demand']:.1g} | "
                   f"{r['bellman_error']:.1g} | {r['iterations']} |")
    reached = sum(r["time_to_goal"] is not None for r in rows)
    out += ["", f"{reached} of {len(rows)} runs reached the goal within the time limit."]
    if any(r.get("certificate") != CERTIFICATE for r in rows):
        out += [f"Rows marked (old): {OLD}. The other rows bound the consumers' regret over every deviation "
                "(holdings that depend on the whole history and on the consumer's own holdings), in money."]
    if meta.get("rerun"):
        out += [f"Re-run by `--rerun-small`: {meta['rerun']}."]
    out += [f"Appended later by `--add-large`: {a}." for a in meta.get("appended", [])] + [""]
    pairs = [(a, b) for a in rows for b in rows
             if a["method"] == "markov-newton" and b["method"] == "markov-tatonnement"
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
    from solvopt.games.economy import random_economy
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
    lines = ["# Markov exchange economies: excess demand by the anchor's formula — "
             + datetime.date.today().isoformat(),
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
                     f"{r['relative_exploitability']:.2g} | {r['excess_demand_msq']:.2g} | "
                     f"{r['excess_demand_abs']:.2g} |")
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


# --- the paper's four economies (instances/games/markov_paper_*.json) ------------------------------
INSTANCES = Path(__file__).resolve().parent.parent / "instances" / "games"
PAPER_REPO = "Sadie-Zhao/Generalized-Markov-Games"
PAPER = {   # name: (notebook, economy cell, final-experiment cell, utility, stochastic)
    "markov_paper_cd_deterministic": ("Final MarkovEconomy(cd).ipynb", 32, 44, "cobb_douglas", False),
    "markov_paper_cd_stochastic": ("Final MarkovEconomy(cd).ipynb", 54, 66, "cobb_douglas", True),
    "markov_paper_leontief_deterministic": ("Final MarkovEconomy(leontief).ipynb", 31, 43, "leontief", False),
    "markov_paper_leontief_stochastic": ("Final MarkovEconomy(leontief).ipynb", 53, 65, "leontief", True),
}
SHOCK_DRAWS = 2        # the stochastic economies' per-period endowment draws kept (equally likely)
# the last figures each final-experiment cell logs (GAP: exploitability minimisation, NPM: neural projection
# method; 'exploitability' is the cumulative-regret estimate from a trained best-response network)
LOGGED = {
    "markov_paper_cd_deterministic": {
        "GAP": {"exploitability": -2.4812891483306885, "excess_demand": 10.327862739562988,
                "consumer_first_order_violation": 1.7605363130569458, "total_first_order_violation": 12.088398933410645,
                "bellman_error": 0.0007359097944572568},
        "NPM": {"exploitability": 507.32684326171875, "excess_demand": 5.21438455581665,
                "consumer_first_order_violation": 1.2483229637145996, "bellman_error": 0.0012399392435327172}},
    "markov_paper_cd_stochastic": {
        "GAP": {"exploitability": 2.836162805557251, "excess_demand": 43.650882720947266,
                "consumer_first_order_violation": 0.5398958325386047, "total_first_order_violation": 44.19077682495117,
                "bellman_error": 0.0006321626715362072},
        "NPM": {"exploitability": 243.83197021484375, "excess_demand": 5.283290386199951,
                "consumer_first_order_violation": 0.9429396986961365, "bellman_error": 0.000796758511569351}},
    "markov_paper_leontief_deterministic": {
        "GAP": {"exploitability": -9.988540649414062, "excess_demand": 0.9499001502990723,
                "consumer_first_order_violation": 0.010130609385669231,
                "total_first_order_violation": 0.960030734539032,
                "bellman_error": 0.7272742986679077},
        "NPM": {"exploitability": 133.3982696533203, "excess_demand": 16.50540542602539,
                "consumer_first_order_violation": 0.018869837746024132, "bellman_error": 1.9298999309539795}},
    "markov_paper_leontief_stochastic": {
        "GAP": {"exploitability": -36.157066345214844, "excess_demand": 0.8950519561767578,
                "consumer_first_order_violation": 2.4855870606188546e-07,
                "total_first_order_violation": 0.8950521945953369,
                "bellman_error": 1.6434397245856935e-11},
        "NPM": {"exploitability": 716.1488647460938, "excess_demand": 13.386407852172852,
                "consumer_first_order_violation": 0.006814643274992704, "bellman_error": 9.72573184967041}},
}


def paper_data(out_dir=INSTANCES):
    """Write instances/games/markov_paper_*.json from the notebooks' seeds. Needs JAX 0.4.x (the
    notebooks' threefry keys; not a dependency of solvopt): run this file with --paper-data under
    a Python that has it. The mapping from the notebooks' economy to the model is in each file's
    "source" field."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    seed, n, m, k, w = 42, 10, 10, 1, 5
    lo, hi = 0.1 / n, 1.0 / n                                     # consumer_endow_range
    key = jax.random.PRNGKey(seed)
    bundles = np.asarray(jax.random.uniform(key, (w, k, m), minval=0.5, maxval=1.1), dtype=float)
    init_key, sub_key = jax.random.split(jax.random.PRNGKey(seed))
    start = jax.random.uniform(init_key, (n, m), minval=lo, maxval=hi)
    start = np.asarray(start / jnp.sum(start, axis=0, keepdims=True), dtype=float)
    income = np.full((n, m), 0.2 / (n * m))
    draw_keys = jax.random.split(jax.random.PRNGKey(seed + 1), SHOCK_DRAWS)
    draws = [np.clip(income + np.asarray(jax.random.uniform(dk, (n, m), minval=lo, maxval=hi), dtype=float), lo, hi)
             for dk in draw_keys]
    for name, (notebook, cell, final, utility, stochastic) in PAPER.items():
        if utility == "cobb_douglas":
            valuation = jax.random.dirichlet(init_key, jnp.ones(m), (n,))
            exponents = np.asarray(valuation / jnp.sum(valuation), dtype=float)    # the notebook's normalisation
            form, degree = {"kind": "cobb_douglas", "exponents": exponents.tolist()}, 0.1
        else:
            valuation = jax.random.uniform(sub_key, (n, m), minval=1.0, maxval=5.0)
            form, degree = {"kind": "leontief", "requirements": np.asarray(valuation, dtype=float).tolist()}, 1.0
        # world state 0: the start (the notebook's initial state, world 0 with its own endowment);
        # then the notebook's world states (deterministic: 1..5 = worlds 0..4, only world 0 reached),
        # or (world, draw) pairs 1 + w * SHOCK_DRAWS + z (stochastic)
        if stochastic:
            later = [(wi, z) for wi in range(w) for z in range(SHOCK_DRAWS)]
            endow = [start] + [draws[z] for _, z in later]
            returns = [np.zeros((k, m))] + [bundles[wi] for wi, _ in later]
            row = np.array([0.0] + [1.0 / len(later)] * len(later))
        else:
            later = list(range(w))
            endow = [start] + [np.full((n, m), lo)] * w
            returns = [np.zeros((k, m))] + [bundles[wi] for wi in later]
            row = np.array([0.0, 1.0] + [0.0] * (w - 1))
        W = len(endow)
        transitions = np.tile(row, (W, 1))
        data = {
            "kind": "markov_exchange_economy", "name": name,
            "description": (f"The {'stochastic' if stochastic else 'deterministic'} {utility.replace('_', '-')} "
                            "Markov exchange economy of Goktas, Zhao, Chen and Greenwald (ICLR 2026): 10 consumers, "
                            "10 goods, 1 asset paying a bundle of goods, 5 world states, discount 0.9, goods prices "
                            "summing to 10, asset price at most 1, holdings in [-10, 10], endowments clipped to "
                            "[0.01, 0.1] after payouts, 30 periods" + (", Cobb-Douglas of degree 0.1" if degree != 1
                                                                       else "")),
            "source": {
                "repository": PAPER_REPO, "notebook": notebook,
                "cells": [f"cell {cell}: the economy (parameters, transition_function, init_state_function)",
                          f"cell {final}: the final experiment (GAP and NPM training, logged metrics)"],
                "generated_by": "benchmarks/games_markov.py --paper-data (JAX 0.4.30, threefry keys from "
                                f"PRNGKey({seed}) exactly as the cells draw them)",
                "mapping": [
                    "world state 0 is the start: the notebook's initial state (world 0, endowments "
                    "uniform(key, (10, 10), 0.01, 0.1) normalised to sum to 1 per good); it is never re-entered",
                    ("world states 1 + 2w + z are (notebook world w, endowment draw z): the notebook redraws "
                     "every endowment each period as clip(0.002 + uniform(0.01, 0.1), 0.01, 0.1) and the world "
                     f"uniformly; here {SHOCK_DRAWS} equally likely draws, uniform(k) for k in "
                     f"split(PRNGKey({seed + 1}), {SHOCK_DRAWS})") if stochastic else
                    ("world states 1..5 are the notebook's worlds 0..4; its transition always goes to world 0, "
                     "so world states 2..5 are never reached; every later period's endowment is 0.01 per good"),
                    "asset_returns: the bundle uniform(PRNGKey(42), (5, 1, 10), 0.5, 1.1) of world w, added to "
                    "the holder's endowment (the notebook's portfolio @ asset_return[next world])",
                    "endowment_floor / endowment_cap: the notebook's clip to consumer_endow_range after payouts",
                    "horizon: the notebook's num_episodes = 30 (its values are 30-period discounted sums)",
                    ("utility: prod x^(a / sum of all a), a = dirichlet(key, ones(10), (10,)): each consumer's "
                     "exponents sum to 0.1 (degree 0.1)") if degree != 1 else
                    "utility: min_j x_j / a_j, a = uniform(subkey, (10, 10), 1, 5)",
                    "asset prices: the notebook's range is [1e-4, 1]; here [0, 1]",
                ],
                "logged": LOGGED[name],
            },
            "utility": form, "degree": degree,
            "endowments": np.asarray(endow).tolist(), "transitions": transitions.tolist(),
            "discount": 0.9, "initial": [1.0] + [0.0] * (W - 1),
            "asset_returns": np.asarray(returns).tolist(),
            "borrowing_limit": 10.0, "holding_limit": 10.0, "asset_price_max": 1.0, "price_sum": 10.0,
            "endowment_floor": lo, "endowment_cap": hi, "horizon": 30,
        }
        (Path(out_dir) / f"{name}.json").write_text(json.dumps(data, indent=1) + "\n")
        print("wrote", Path(out_dir) / f"{name}.json")
        # the variants markov-horizon takes
        for variant in [horizon_variant(data)] + ([degree_variant(data)] if data["degree"] != 1.0 else []):
            (Path(out_dir) / f"{variant['name']}.json").write_text(json.dumps(variant, indent=1) + "\n")
            print("wrote", Path(out_dir) / f"{variant['name']}.json")


def horizon_variant(data) -> dict:
    """A deterministic paper economy as markov-horizon takes it: its 30 periods, degree 1 (Cobb-Douglas
    exponents scaled to sum to 1), no endowment floor or cap; the rest and the source as stated."""
    import numpy as np
    out = dict(data, name=data["name"] + "_horizon", degree=1.0, endowment_floor=None, endowment_cap=None)
    if data["utility"]["kind"] == "cobb_douglas":
        a = np.asarray(data["utility"]["exponents"])
        out["utility"] = {"kind": "cobb_douglas", "exponents": (a / a.sum(axis=1, keepdims=True)).tolist()}
    out["description"] = (data["description"].split(", endowments clipped")[0] + ", 30 periods; as the method "
                          "markov-horizon takes it: degree 1, no endowment floor or cap")
    source = dict(data["source"])
    source["generated_by"] = source["generated_by"] + f", then the variant of {data['name']}.json"
    source["mapping"] = [m for m in source["mapping"] if not m.startswith(("endowment_floor", "utility"))] + [
        "utility: " + ("the stated exponents scaled to sum to 1 per consumer (degree 1; the notebook's are 0.1)"
                       if data["utility"]["kind"] == "cobb_douglas" else "as stated (Leontief, degree 1)"),
        "no endowment floor or cap (the notebook clips endowments to [0.01, 0.1] after payouts)"]
    out["source"] = source
    return {k: v for k, v in out.items() if v is not None}


def degree_variant(data) -> dict:
    """A deterministic paper economy with its 30 periods and its stated degree (Cobb-Douglas exponents
    as the notebook draws them, summing to 0.1), no endowment floor or cap: what markov-horizon takes
    closest to the notebook."""
    out = dict(data, name=data["name"] + "_horizon_degree", endowment_floor=None, endowment_cap=None)
    out["description"] = (data["description"].split(", endowments clipped")[0] + f", 30 periods; utilities of "
                          f"degree {data['degree']:g} as stated; no endowment floor or cap")
    source = dict(data["source"])
    source["generated_by"] = source["generated_by"] + f", then the degree variant of {data['name']}.json"
    source["mapping"] = [m for m in source["mapping"] if not m.startswith("endowment_floor")] + [
        f"degree: {data['degree']:g} as stated" + (" in cell 32" if "deterministic" in data["name"] else "")
        + " (the exponents' sum)",
        "no endowment floor or cap (the notebook clips endowments to [0.01, 0.1] after payouts)"]
    out["source"] = source
    return {k: v for k, v in out.items() if v is not None}


RELAXED = ("degree", "endowment_floor", "endowment_cap", "horizon")   # what the methods do not take


def paper_economy(name, relaxed=False):
    """The paper's economy ``name`` from instances/games, or (``relaxed``) the variant the methods
    take: degree 1 (Cobb-Douglas exponents scaled to sum to 1), no endowment floor or cap, an
    infinite horizon; the rest (bundle assets, asset price cap 1, holdings in [-10, 10], the start
    and world states) as stated."""
    import numpy as np

    from solvopt.dsl.markov_games import MarkovExchangeEconomy
    data = json.loads((INSTANCES / f"{name}.json").read_text())
    if not relaxed:
        return MarkovExchangeEconomy.from_dict(data), data
    data = dict(data)
    if data["utility"]["kind"] == "cobb_douglas":
        a = np.asarray(data["utility"]["exponents"])
        data["utility"] = {"kind": "cobb_douglas", "exponents": (a / a.sum(axis=1, keepdims=True)).tolist()}
    return MarkovExchangeEconomy.from_dict(data, drop=RELAXED), data


def paper_metrics(econ, result) -> dict:
    """The notebooks' metrics on our answer, at the start state (where the notebooks evaluate them)
    and where said averaged with the occupancy: cumulative regret (our certified exploitability
    from the start: the quantity the notebooks estimate), excess demand (mean_j z_j^2 + mean_k
    Y_k^2), the consumers' first-order violation of consumption (mean over i, j of (du_i/dx_ij -
    lambda_i p_j)^2, lambda_i = u_i / W_i the marginal utility of money of a degree-1 utility; for
    Leontief the least over the binding goods' supergradients: :func:`consumption_foc`), and the
    Bellman error (ours: the largest one-step residual beta W - u; the notebooks' mean square of
    state value - action value by rollouts is 0 for exactly evaluated tabular values)."""
    import numpy as np

    from solvopt.games import economy as ec
    chain = ec.pair_chain(econ)
    sol, m = result.solution, result.stats["metrics"]
    prof = ec.Profile(*(sol[k] for k in ("prices", "asset_prices", "consumption", "portfolio")))
    z, Y = ec.excess_demand(econ, chain, prof)
    start = int(np.argmax(chain.initial))
    Ys = Y[chain.world]
    msq = np.mean(z ** 2, axis=1) + (np.mean(Ys ** 2, axis=1) if Ys.shape[1] else 0.0)
    x, p = prof.consumption, prof.prices
    u = econ.utility.value(x)
    W = np.maximum(ec.wealth(econ, chain, p, prof.asset_prices, prof.portfolio), 1e-300)
    fov = consumption_foc(econ, x, p, W).mean(axis=1)
    # the consumers' regret over stationary deviations only (holdings that depend on the current world
    # state: the methods' own policy class), beside the certified one over every deviation
    # (in money, as the certificate: utilities divided by ec.money_rates)
    rate = ec.money_rates(econ)
    up, _, _ = ec.consumer_best_value(econ, chain, p, prof.asset_prices, ec.bang_per_buck(econ, p) / rate)
    stationary = float(np.maximum(up - chain.occupancy @ (u / rate), 0.0).sum())
    return {"stationary_consumer_regret": stationary, "cumulative_regret": result.objective,
            "relative_exploitability": m["relative_exploitability"],
            "excess_demand_start": float(msq[start]),
            "excess_demand_avg": float(chain.occupancy @ msq / chain.occupancy.sum()),
            "consumer_foc_start": float(fov[start]), "portfolio_foc": m["portfolio_foc"],
            "bellman_error": m["bellman_error"],
            "endowment_value": m["endowment_value"]}


def consumption_foc(econ, x, p, W):
    """(S, N) mean over goods of (dU_i/dx_ij - lambda_i p_j)^2 for U_i = u_i^h (h the economy's degree):
    lambda_i = h U_i / W_i is the marginal utility of money at the best bundle for W_i (Euler's theorem).
    For Leontief, u is not differentiable where several goods bind: the least violation over its
    supergradients g (g_j = theta_j / a_j on the binding goods, theta in the simplex), 0 at the exact demand."""
    import numpy as np
    h = float(getattr(econ, "degree", 1.0))
    u = econ.utility.value(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = h * np.where(u > 0, u ** (h - 1.0), np.inf if h < 1 else 1.0)     # dU/du
        c = (u / W)[..., None] * p[:, None, :]              # lambda_i p / (dU/du): what du/dx should be
    if econ.utility.kind != "leontief":
        return np.mean((slope[..., None] * (econ.utility.gradient(x) - c)) ** 2, axis=-1)
    a = np.broadcast_to(econ.utility.weights[None], x.shape)
    ratio = x / a
    binding = np.isclose(ratio, ratio.min(axis=-1, keepdims=True), rtol=1e-9)
    # least sum_B (g_j - c_j)^2 over sum_B a_j g_j = 1, g >= 0: g_j = max(c_j - nu a_j, 0), nu by bisection
    big = np.where(binding, c / a, np.inf).min(axis=-1) - 1.0 / np.where(binding, a * a, 0.0).sum(axis=-1)
    lo, hi = big, np.where(binding, c / a, -np.inf).max(axis=-1)
    for _ in range(200):
        nu = 0.5 * (lo + hi)
        more = np.where(binding, a * np.maximum(c - nu[..., None] * a, 0.0), 0.0).sum(axis=-1) > 1.0
        lo, hi = np.where(more, nu, lo), np.where(more, hi, nu)
    g = np.where(binding, np.maximum(c - (0.5 * (lo + hi))[..., None] * a, 0.0), 0.0)
    return np.mean((slope[..., None] * (g - c)) ** 2, axis=-1)


HORIZON_PAPER = {   # the as-stated-degree horizon files without floors: the notebook economy each comes from
    "markov_paper_cd_deterministic_horizon_degree": "markov_paper_cd_deterministic",
    "markov_paper_leontief_deterministic_horizon": "markov_paper_leontief_deterministic",
    "markov_paper_cd_stochastic_horizon_degree": "markov_paper_cd_stochastic",
    "markov_paper_leontief_stochastic_horizon": "markov_paper_leontief_stochastic",
}


def horizon_paper_metrics(econ, result) -> dict:
    """The notebooks' metrics on a ``markov-horizon`` answer (rows per period, or per class of histories
    with ``periods``, ``probabilities``, ``edges``): at the start and averaged over the rows with their
    reach probabilities (so over the T periods, each period's classes adding up to 1). Excess demand
    mean_j z_j^2 + mean_k Y_k^2 (z: consumption minus endowments and what the carried holdings pay; Y:
    holdings, in zero net supply); the consumption first-order violation of :func:`consumption_foc` over
    the consumers with wealth to spend (W > 1e-9 x the endowment value: the others invest all they have
    and buy nothing, a corner where it does not apply; counted); the Bellman error of the exact values
    V_i(k) = U_i(x_ik) + gamma sum_children P V_i(child) (utilities U = u^h, as the notebooks'): at the
    start the mean over consumers of (V_i(start) - sum_k rho_k gamma^t_k U_ik)^2, the recursion against
    the expected discounted utility summed over the rows."""
    import numpy as np
    s = result.solution
    p, q = np.asarray(s["prices"], float), np.asarray(s["asset_prices"], float)
    x, y = np.asarray(s["consumption"], float), np.asarray(s["portfolio"], float)
    K, N = x.shape[:2]
    if "edges" in s:
        period, world = np.asarray(s["periods"]), np.asarray(s["worlds"])
        prob = np.asarray(s["probabilities"], float)
        edges = np.asarray(s["edges"], dtype=int).reshape(-1, 2)
    else:
        period, world, prob = np.arange(K), np.asarray(s["worlds"]), np.ones(K)
        edges = np.stack([np.arange(K - 1), np.arange(1, K)], axis=1)
    parent, child = edges[:, 0], edges[:, 1]
    weight = np.asarray(econ.transitions, float)[world[parent], world[child]]
    carried = np.zeros_like(y)
    carried[child] = y[parent]          # a class's parents all carry the same holdings into it
    e = econ.endowments[world]                                          # (K, N, M)
    R = econ.returns_at(world, p)                                       # (K, A) money returns at p
    W = (np.einsum("km,knm->kn", p, e) + np.einsum("ka,kna->kn", R, carried)
         - np.einsum("ka,kna->kn", q, y))
    z = x.sum(axis=1) - e.sum(axis=1)
    if econ.asset_bundles is not None:
        z -= np.einsum("ka,kam->km", carried.sum(axis=1), econ.asset_bundles[world])
    Y = y.sum(axis=1)
    goods, assets = np.mean(z ** 2, axis=1), np.mean(Y ** 2, axis=1)
    spends = W > 1e-9 * np.maximum(np.einsum("km,knm->kn", p, e).sum(axis=1, keepdims=True), 1e-300)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        fov = consumption_foc(econ, x, p, np.where(spends, W, 1.0))
    fov_k = np.array([fov[k][spends[k]].mean() if spends[k].any() else np.nan for k in range(K)])
    h = float(econ.degree)
    U = econ.utility.value(x) ** h                                      # (K, N)
    V = U.copy()
    for t in range(int(period.max()) - 1, -1, -1):                      # backward over the periods
        at = np.flatnonzero(period[parent] == t)
        np.add.at(V, parent[at], econ.discount * weight[at, None] * V[child[at]])
    start = int(np.flatnonzero(period == 0)[0])
    forward = np.einsum("k,kn->n", prob * econ.discount ** period, U)
    mean = lambda v, ok=slice(None): float(prob[ok] @ v[ok] / prob[ok].sum())   # noqa: E731
    ok = ~np.isnan(fov_k)
    return {"cumulative_regret": float(result.objective),
            "excess_demand_start": float(goods[start] + assets[start]),
            "excess_demand_goods_start": float(goods[start]), "excess_demand_asset_start": float(assets[start]),
            "excess_demand_avg": mean(goods + assets), "excess_demand_goods_avg": mean(goods),
            "consumer_foc_start": float(fov_k[start]), "consumer_foc_avg": mean(fov_k, ok),
            "corner_consumers": float(prob @ (~spends).sum(axis=1)),
            "bellman_error": float(np.mean((V[start] - forward) ** 2)),
            "value_start": float(np.mean(V[start])), "rows": K}


def paper_table(time_limit, method=None):
    """The four economies: each as stated (the stationary method's refusal: the default for the stated files is
    markov-horizon, whose results are on games_markov_paper_horizon.md) and relaxed (solved, its default method)."""
    from solvopt.core.errors import ModelError
    rows = []
    for name in PAPER:
        econ, data = paper_economy(name)
        relaxed, _ = paper_economy(name, relaxed=True)
        try:
            econ.solve(iteration_limit=1, method=method or relaxed.default_method)
            refused = None
        except ModelError as exc:
            refused = str(exc)
        result = relaxed.solve(tolerance=GOAL, time_limit=time_limit, **({} if method is None else {"method": method}))
        hist = [(float(t), float(v)) for _, t, v, *rest in result.stats["history"]]
        scale = result.stats["metrics"]["endowment_value"]
        reached = next((t for t, v in hist if v / scale <= GOAL), None)
        row = {"name": name, "method": method or relaxed.default_method, "refused_as_stated": refused,
               "termination": result.termination.value, "seconds": result.stats["wall_time"],
               "iterations": result.stats["iterations"], "time_to_goal": reached,
               "consumer_regret": result.stats["metrics"]["consumer_regret"],
               "auctioneer_regret": result.stats["metrics"]["auctioneer_regret"],
               "ours": paper_metrics(relaxed, result), "logged": data["source"]["logged"],
               "history": [(t, v / scale) for t, v in hist]}
        rows.append(row)
        print(f"{name} {row['method']}: {row['termination']} relative {row['ours']['relative_exploitability']:.3e} "
              f"in {row['seconds']:.1f}s", flush=True)
    return rows


def paper_markdown(meta, rows) -> str:
    out = [f"# The paper's four Markov exchange economies — {meta['date']}", "",
           f"Machine: {meta['machine']}, {meta['cores']} cores (shared; load average {meta['load']} at the start), "
           f"Python {meta['python']}, time limit {meta['time_limit']} s per economy, the default method.", "",
           "Instances: `instances/games/markov_paper_*.json` (generated from the notebooks' seeds; the mapping is "
           "in each file's `source`). As stated (endowment floors and caps after payouts, a 30-period horizon, "
           "and for Cobb-Douglas utilities of degree 0.1) they are solved by their default method, markov-horizon: "
           "see games_markov_paper_horizon.md. The stationary methods refuse them with a one-line ModelError. "
           "What is solved here is the relaxation the stationary methods take: degree 1 "
           "(Cobb-Douglas exponents scaled to sum to 1), no floor or cap, an infinite horizon, everything else "
           "as stated (bundle assets, asset price at most 1, holdings in [-10, 10]). Its exploitability is "
           "certified over every deviation (the certificate of docs/markov_games.md), in money (each consumer's "
           "utility divided by what one unit of money buys it at uniform prices), as are the regrets below.", "",
           "| economy | method | status | time to 1e-4 (s) | certified exploitability / endowment value | "
           "consumer / auctioneer regret | consumer regret over stationary deviations |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        o = r["ours"]
        goal = _seconds(r["time_to_goal"]) if r["time_to_goal"] is not None else f"not within {meta['time_limit']:g}"
        out.append(f"| {r['name'][13:]} | {r['method']} | {r['termination']} | {goal} | "
                   f"{o['relative_exploitability']:.3g} | {r['consumer_regret']:.3g} / {r['auctioneer_regret']:.3g} | "
                   f"{o['stationary_consumer_regret']:.3g} |")
    out += ["", "The last column bounds the consumers' regret over deviations of the methods' own policy class "
            "(holdings that depend on the current world state only). Where it is far below the certified regret, "
            "the gap is what history-dependent deviations gain (with an asset worth about 8 a period against a "
            "price of at most 1, a consumer does better by growing its holding as its wealth grows than by any "
            "stationary holding). On the deterministic chains (start, then world state 1 for ever) no profile of "
            "the methods' class (holdings that depend on the current world state) has exploitability 0: a proof in "
            "docs/markov_games.md, its data facts checked by tests/test_games_economy_paper.py; how close such a "
            "profile can come is not computed. With their 30-period horizon, degree 1 and no floors or caps, both "
            "deterministic economies have "
            "profiles certified within the goal, 3.3e-8 (Leontief) and 3.2e-8 (Cobb-Douglas), by the method "
            "markov-horizon, of the endowment value "
            "(`python benchmarks/games_markov.py --paper-horizon`: games_markov_paper_horizon.md)."]
    out += ["", "The notebooks' metrics on our answers (relaxed economies; at the start state, where the notebooks "
            "evaluate them) beside the last figures the notebooks log (GAP: exploitability minimisation, NPM: "
            "neural projection; their 'cumulative regret' is an estimate, negative in places, of the quantity we "
            "certify; their Cobb-Douglas utilities have degree 0.1, ours 1, so utility-valued figures are not on "
            "one scale):", "",
            "| economy | source | cumulative regret | excess demand | consumer first-order violation | Bellman error |",
            "|---|---|---|---|---|---|"]
    for r in rows:
        o = r["ours"]
        out.append(f"| {r['name'][13:]} | ours (certified) | {o['cumulative_regret']:.3g} "
                   f"| {o['excess_demand_start']:.3g} "
                   f"(avg {o['excess_demand_avg']:.3g}) | {o['consumer_foc_start']:.3g} | {o['bellman_error']:.2g} |")
        for method, logged in r["logged"].items():
            out.append(f"| | notebook {method} | {logged['exploitability']:.3g} | {logged['excess_demand']:.3g} | "
                       f"{logged['consumer_first_order_violation']:.3g} | {logged['bellman_error']:.2g} |")
    refused = {r["refused_as_stated"] for r in rows if r["refused_as_stated"]}
    if refused:
        out += ["", "As stated, the stationary method answers: " + "; ".join(sorted(refused)) + "."]
    return "\n".join(out) + "\n"


def paper_run(time_limit, method=None):
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    rows = paper_table(time_limit, method)
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "python": platform.python_version(), "machine": platform.processor() or platform.machine(),
            "cores": os.cpu_count(), "load": None if load is None else round(load, 2), "time_limit": time_limit}
    text = paper_markdown(meta, rows)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "games_markov_paper.md").write_text(text)
    (RESULTS / "games_markov_paper.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))


def paper_horizon():
    """The paper's deterministic economies with their 30 periods (degree 1, no floor or cap:
    instances/games/markov_paper_*_deterministic_horizon.json) by the method markov-horizon, certified
    on the time-expanded economy: the default tolerance, and 1e-9 (Cobb-Douglas: also no rounds)."""
    from solvopt.dsl.markov_games import MarkovExchangeEconomy
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    rows = []
    for name in ("markov_paper_cd_deterministic", "markov_paper_leontief_deterministic",
                 "markov_paper_cd_deterministic_degree"):
        stem = name.replace("_degree", "_horizon_degree") if name.endswith("_degree") else name + "_horizon"
        econ = MarkovExchangeEconomy.from_dict(json.loads((INSTANCES / f"{stem}.json").read_text()))
        runs = [{}, {"tolerance": 1e-9}] + ([{"rounds": 0}] if econ.utility.kind == "cobb_douglas" else [])
        for options in runs:
            r = econ.solve(method="markov-horizon", **options)
            m = r.stats["metrics"]
            Y = r.solution["portfolio"][:, :, 0].sum(axis=1)
            said = ", ".join(f"{k} {v:g}" for k, v in options.items()) or "defaults"
            rows.append(f"| {name[13:]} | {said} | {r.termination.value} | {m['rounds']} | "
                        f"{r.stats['wall_time']:.1f} | {m['exploitability']:.3g} | "
                        f"{m['horizon_relative_exploitability']:.2g} | {m['consumer_regret']:.3g} / "
                        f"{m['auctioneer_regret']:.3g} | {Y[0]:.4g}, {Y[1]:.4g}, {Y[2]:.4g} |")
            print(rows[-1], flush=True)
    floors = floors_rows()
    stochastic = stochastic_rows()
    text = "\n".join([
        f"# The paper's deterministic economies with their horizon — {date}", "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared; load average "
        f"{load:.2f} at the start), Python {platform.python_version()}, OMP_NUM_THREADS="
        f"{os.environ.get('OMP_NUM_THREADS', 'unset')} (on a loaded machine, threaded BLAS on these small "
        "problems can be ten times slower). Command: `python benchmarks/games_markov.py --paper-horizon`.", "",
        "Economies: `instances/games/markov_paper_{cd,leontief}_deterministic_horizon.json`: the stated ones with "
        "their 30 periods, degree 1 (Cobb-Douglas exponents scaled to sum to 1) and no endowment floor or cap; "
        "`markov_paper_cd_deterministic_horizon_degree.json` (cd_deterministic_degree): the Cobb-Douglas one "
        "at its stated degree 0.1, 30 periods, no floor or cap (holdings from the consumers' best paths, "
        "certified by path duality). "
        "Method: `markov-horizon` (the default for an economy with a horizon; asset at the cap, every consumer "
        "buying up to the holding limit or indifferent, each period's goods a Fisher market), certified over "
        "every deviation on the time-expanded economy (periods as world states, then a terminal state where "
        "nothing is paid), in money; relative to the endowment value of the 30 periods; the default tolerance "
        "is 1e-4 of it.", "",
        "| economy | options | termination | rounds | seconds | certified exploitability | relative | "
        "consumer / auctioneer regret | asset held in periods 0, 1, 2 |",
        "|---|---|---|---|---|---|---|---|---|", *rows, "",
        "Cobb-Douglas: in the second period nobody can afford the limit; the first construction puts the whole "
        "price on the scarcest good, which Cobb-Douglas consumers do not accept (rounds 0), and the rounds "
        "re-solve that period with consumers indifferent between the asset and consumption (docs/markov_games.md, "
        "'A finite horizon'). Leontief consumers accept the first construction (no rounds).", "",
        "With the stated endowment floors and caps ([0.01, 0.1] goodwise after payouts; "
        "`markov_paper_*_deterministic_horizon*_floors.json`), certified by the concave-envelope relaxation "
        "of the clipped cash with branch and bound (docs/markov_games.md, 'Endowment floors and caps over a "
        "finite horizon'); the lower bound is the best deviation found under the true clipped dynamics; time "
        "limit 120 s (the goal's). "
        "Short sales below the floor cost nothing there, and every profile tried keeps a regret:", "",
        "| economy | termination | certificates | seconds | certified exploitability | lower bound | relative | "
        "consumer / auctioneer regret | asset price, balanced | asset held by each consumer in period 1 |",
        "|---|---|---|---|---|---|---|---|---|---|", *floors, "",
        "The stochastic economies with their 30 periods (`markov_paper_{cd,leontief}_stochastic_horizon.json`: "
        "degree 1, no floor or cap; `markov_paper_cd_stochastic_horizon_degree.json` (cd_stochastic_degree): "
        "Cobb-Douglas at its stated degree 0.1, no floor or cap, holdings moved towards the consumers' best "
        "responses over the lattice; world state 0 the start, then 10 world states drawn uniformly every period), "
        "by the same method on the history lattice: classes of histories with the same period, world state and "
        "carried holdings; certified over every history-dependent deviation by Lagrangian duality with one "
        "multiplier per class (docs/markov_games.md, 'Stochastic chains: the history lattice'), in money, "
        "relative to the expected endowment value of the 30 periods:", "",
        "| economy | options | termination | rounds | classes | seconds | certified exploitability | relative | "
        "consumer / auctioneer regret | expected asset held in periods 0, 1, 2 |",
        "|---|---|---|---|---|---|---|---|---|---|", *stochastic])
    print(text)
    (RESULTS / "games_markov_paper_horizon.md").write_text(text + "\n")
    stochastic_floors_section()
    least_section()
    paper_horizon_metrics()


METRICS_HEADING = "## The notebooks' metrics on the horizon answers"


def paper_horizon_metrics() -> str:
    """The notebooks' metrics (:func:`horizon_paper_metrics`) on markov-horizon's answers (default options)
    to the four as-stated-degree horizon economies without floors, beside the figures the notebooks log:
    a markdown section that replaces its earlier version in games_markov_paper_horizon.md."""
    from solvopt.dsl.markov_games import MarkovExchangeEconomy
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    rows = []
    for stem in HORIZON_PAPER:
        data = json.loads((INSTANCES / f"{stem}.json").read_text())
        econ = MarkovExchangeEconomy.from_dict(data)
        r = econ.solve(method="markov-horizon", time_limit=600)
        o = horizon_paper_metrics(econ, r)
        label = stem[13:].replace("_horizon", "")
        foc = o["consumer_foc_start"]
        foc = f"{foc:.2g}" if foc == foc else "none spends"          # nan: nobody spends at the start
        rows.append(f"| {label} | ours ({r.termination.value}, {r.stats['wall_time']:.1f} s) | "
                    f"{o['cumulative_regret']:.3g} | {o['excess_demand_start']:.4g} = "
                    f"{o['excess_demand_goods_start']:.2g} + {o['excess_demand_asset_start']:.4g} | "
                    f"{o['excess_demand_avg']:.4g} (goods {o['excess_demand_goods_avg']:.3g}) | {foc} | "
                    f"{o['consumer_foc_avg']:.2g} ({o['corner_consumers']:.3g}) | {o['bellman_error']:.2g} |")
        print(rows[-1], flush=True)
        for method, logged in data["source"]["logged"].items():
            rows.append(f"| | notebook {method} | {logged['exploitability']:.3g} | {logged['excess_demand']:.3g} | | "
                        f"{logged['consumer_first_order_violation']:.3g} | | {logged['bellman_error']:.2g} |")
    text = "\n".join([
        METRICS_HEADING, "",
        f"{date}, load average {load:.2f} at the start, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}. "
        "Command: `python benchmarks/games_markov.py --paper-horizon-metrics` (also run by `--paper-horizon`). "
        "The answers of `markov-horizon` (default options) to the economies with their 30 periods at their stated "
        "degree and without floors or caps (`markov_paper_cd_deterministic_horizon_degree.json`, Cobb-Douglas "
        "of degree 0.1; `markov_paper_leontief_deterministic_horizon.json`; "
        "`markov_paper_cd_stochastic_horizon_degree.json`; `markov_paper_leontief_stochastic_horizon.json`), "
        "with the notebooks' metrics computed on them, beside the last figures the notebooks log (GAP: "
        "exploitability minimisation, NPM: neural projection method; cells named in each file's `source`). "
        "The notebooks' figures are estimates on sampled states from trained networks (their cumulative "
        "regret from a trained best-response network, negative in places), not bounds; their economies also "
        "clip endowments to [0.01, 0.1] after payouts, which these files leave out. How ours are computed: "
        "'start' is period 0 (where the notebooks evaluate them); 'avg' averages over the 30 periods "
        "(stochastic: over the classes of histories with their reach probabilities, each period's adding up "
        "to 1).", "",
        "- cumulative regret: our certified exploitability over every deviation from the start (in money, "
        "the result's objective): an upper bound on the quantity the notebooks estimate;",
        "- excess demand: mean_j z_j^2 + mean_k Y_k^2, z the goods' consumption minus the endowments and "
        "what the carried holdings pay, Y the asset's holdings (zero net supply), shown as goods + asset. "
        "The asset trades at its cap (1) with excess demand, as the auctioneer's capped best response allows "
        "(the consumers hold 7.3 to 10 units in all after period 0, the limit 100 from period 2), so the asset "
        "term Y^2 dominates: 53 to 100 at the start, 1e4 from period 2 to the next-to-last (0 in the last, "
        "where the asset is worth nothing). The goods term counts excess supply "
        "too (what the payouts of 100 units bring beyond what consumers buy);",
        "- consumer first-order violation: mean over consumers and goods of (dU_i/dx_ij - lambda_i p_j)^2, "
        "U_i = u_i^h of degree h, lambda_i = h U_i / W_i the marginal utility of money (for Leontief the "
        "least over the supergradients of the binding goods), over the consumers with wealth to spend "
        "(W_i > 1e-9 x the period's endowment value); in brackets the expected number of "
        "consumer-periods left out, over the 30 periods: consumers that invest all they have and buy "
        "nothing, a corner where the condition does not apply (the value of investing is in the regret);",
        "- Bellman error: values are exact on the periods or classes, V_i(k) = U_i(x_ik) + gamma sum P "
        "V_i(child) by backward recursion (utilities U = u^h, as the notebooks'), so the residual of that "
        "equation is 0; we report the mean over consumers of (V_i(start) - sum_k rho_k gamma^t_k U_ik)^2, the "
        "recursion against the expected discounted utility summed over all rows: rounding only. The "
        "notebooks' is a trained value network's mean-square residual.", "",
        "| economy | source | cumulative regret | excess demand, start | excess demand, avg | "
        "consumer first-order violation, start | same, avg (left out) | Bellman error |",
        "|---|---|---|---|---|---|---|---|", *rows])
    path = RESULTS / "games_markov_paper_horizon.md"
    old = path.read_text() if path.exists() else ""
    kept = old.split(METRICS_HEADING)[0].rstrip("\n")
    path.write_text((kept + "\n\n" if kept else "") + text + "\n")
    print(text)
    return text


def stochastic_rows(stems=("cd_stochastic_horizon", "leontief_stochastic_horizon",
                             "cd_stochastic_horizon_degree")) -> list:
    """markov-horizon on the stochastic paper economies with their 30 periods (degree 1, and Cobb-Douglas
    at its stated 0.1; no floor or cap), default options: one markdown row each."""
    import numpy as np

    rows = []
    for stem in stems:
        econ = _paper_economy(stem)
        r = econ.solve(method="markov-horizon", time_limit=600)
        m, s = r.stats["metrics"], r.solution
        Y = r.solution["portfolio"][:, :, 0].sum(axis=1)
        periods, prob = np.array(s["periods"]), np.array(s["probabilities"])
        held = ", ".join(f"{prob[periods == t] @ Y[periods == t]:.4g}" for t in range(3))
        rows.append(f"| {stem.replace('_horizon', '')} | defaults | {r.termination.value} | {m['rounds']} | "
                    f"{m['classes']} | {r.stats['wall_time']:.1f} | {m['exploitability']:.3g} | "
                    f"{m['horizon_relative_exploitability']:.2g} | {m['consumer_regret']:.3g} / "
                    f"{m['auctioneer_regret']:.3g} | {held} |")
        print(rows[-1], flush=True)
    return rows


GOAL_SECONDS = 120.0        # the time limit of the runs with floors and caps: the goal's
STOCHASTIC_FLOORS_HEADING = "## Stochastic chains with floors and caps"
STOCHASTIC_FLOORS = ("leontief_stochastic", "cd_stochastic_horizon_floors", "cd_stochastic")


def stochastic_floors_section() -> str:
    """markov-horizon on the stochastic paper economies with their endowment floors and caps (30 periods):
    Leontief as stated, Cobb-Douglas at degree 1, and the stated Cobb-Douglas one (degree 0.1):
    a markdown section placed before the notebooks' metrics in games_markov_paper_horizon.md (replacing its
    earlier version)."""
    from solvopt.core.errors import SolvoptError
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    rows = []
    for stem in STOCHASTIC_FLOORS:
        econ = _paper_economy(stem)
        label = f"{stem.replace('_horizon', '')} (degree {econ.degree:g})"
        try:
            r = econ.solve(method="markov-horizon", time_limit=GOAL_SECONDS)
        except SolvoptError as err:
            rows.append(f"| {label} | refused: {err} | | | | | | | | |")
            print(rows[-1], flush=True)
            continue
        m = r.stats["metrics"]
        rows.append(f"| {label} | {r.termination.value} | {len(r.stats['metric_history'])} | {m['classes']} | "
                    f"{r.stats['wall_time']:.1f} | {m['exploitability']:.4g} | {m['exploitability_lower']:.4g} | "
                    f"{m['horizon_relative_exploitability']:.3g} | {m['consumer_regret']:.3g} / "
                    f"{m['auctioneer_regret']:.3g} | {m['asset_price_level']:g} x cap, "
                    f"{'yes' if m['balanced'] else 'no'} |")
        print(rows[-1], flush=True)
    return _place_section(STOCHASTIC_FLOORS_HEADING, [
        f"{date}, load average {load:.2f} at the start, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}. "
        "Command: `python benchmarks/games_markov.py --paper-horizon-floors-stochastic` (also run by "
        "`--paper-horizon`). The stochastic economies with their 30 periods and the stated endowment floors and "
        "caps ([0.01, 0.1] goodwise after payouts): `markov_paper_leontief_stochastic.json` as stated, "
        "`markov_paper_cd_stochastic_horizon_floors.json` (Cobb-Douglas at degree 1), and "
        "`markov_paper_cd_stochastic.json` as stated (degree 0.1). Method `markov-horizon` (time limit 120 s, "
        "the goal's), "
        "the profile built on the history lattice as on a path (the asset at 0, 0.03, 0.06 and 0.1 times its cap, "
        "then the adaptive search on the short consumer and the level, "
        "holdings the same in every class of a period, the balanced variant, each class's goods a Fisher market "
        "on the clipped supply), certified by a dynamic program over the lattice's classes and each consumer's "
        "carried holding, over every deviation that depends on the world-state history and her own holdings "
        "(docs/markov_games.md, 'Floors and caps on a stochastic chain'): at degree 1 exact on piecewise-linear "
        "values, the lower bound its greedy deviation under the true clipped dynamics; at degree 0.1 bounded "
        "on a grid of holdings, the lower bound the best policy on that grid. Relative: to the expected value "
        "of the clipped supply over the 30 periods at the profile's prices, as on a path."],
        ["economy", "termination", "certificates", "classes", "seconds", "certified exploitability", "lower bound",
         "relative", "consumer / auctioneer regret", "asset price, balanced"], rows)


def _paper_economy(stem: str):
    """The paper's economy instances/games/markov_paper_{stem}.json as a MarkovExchangeEconomy."""
    from solvopt.dsl.markov_games import MarkovExchangeEconomy
    return MarkovExchangeEconomy.from_dict(json.loads((INSTANCES / f"markov_paper_{stem}.json").read_text()))


def _place_section(heading: str, intro: list, columns: list, rows: list) -> str:
    """A section of games_markov_paper_horizon.md (its heading, the ``intro`` strings as one paragraph, a
    table of ``columns`` and ``rows``), put before the notebooks' metrics in place of its earlier version;
    printed and returned."""
    text = "\n".join([heading, "", "".join(intro), "", "| " + " | ".join(columns) + " |",
                      "|" + "---|" * len(columns), *rows])
    path = RESULTS / "games_markov_paper_horizon.md"
    old = path.read_text() if path.exists() else ""
    head, sep, tail = old.partition(METRICS_HEADING)
    before, _, after = head.partition(heading)
    rest = after.partition("\n## ")
    head = (before.rstrip("\n") + ("\n\n## " + rest[2] if rest[1] else "")).rstrip("\n")
    path.write_text((head + "\n\n" if head else "") + text + "\n" + ("\n" + sep + tail if sep else ""))
    print(text)
    return text


LEAST_HEADING = "## The least exploitability of any profile"
LEAST_ECONOMIES = ("leontief_deterministic", "leontief_stochastic", "cd_deterministic",
                   "cd_deterministic_horizon_floors", "cd_stochastic")


def least_section() -> str:
    """The proven lower bound on every profile's exploitability (solvopt.games.economy_clip_lower) for the
    paper's economies with floors and caps, or why the argument does not cover one: a section of
    games_markov_paper_horizon.md."""
    from solvopt.core.errors import ModelError
    from solvopt.games.economy_clip_lower import least_exploitability
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    rows = []
    for stem in LEAST_ECONOMIES:
        econ = _paper_economy(stem)
        label = f"{stem.replace('_horizon', '')} (degree {econ.degree:g})"
        start = time.perf_counter()
        try:
            least = least_exploitability(econ)
        except ModelError as err:
            rows.append(f"| {label} | not covered: {str(err).split(': ', 1)[-1]} | | | | | |")
        else:
            rows.append(f"| {label} | {least.value:.4g} | {least.relative:.3g} | {least.theta:.4g} | "
                        f"{least.first_long} | {least.period_minimum:.4g} | {time.perf_counter() - start:.1f} |")
        print(rows[-1], flush=True)
    return _place_section(LEAST_HEADING, [
        f"{date}. Command: `python benchmarks/games_markov.py --paper-least` (also run by `--paper-horizon`). "
        "A certified lower bound on the exploitability of every budget-feasible profile, in money at period 0's "
        "bang per buck as the certificates above, for the paper's economies with their endowment floors and "
        "caps (docs/markov_games.md, 'No profile reaches the tolerance'); relative: to the largest endowment "
        "value any profile can have over the 30 periods. Where it exceeds 1e-4, no method can reach the goal "
        "of 1e-4 of the endowment value on that economy. Theta: the asset price above which a long consumer "
        "is case C's; worst tau: the first such period for which the bound is least (the horizon, 30: no "
        "such period); least per period: case N's least value of one period before discounting."],
        ["economy", "least exploitability", "relative", "theta", "worst tau", "least per period", "seconds"], rows)


def floors_rows() -> list:
    """markov-horizon on the deterministic paper economies with their floors and caps (30 periods;
    Cobb-Douglas at degree 1 and at its stated 0.1, Leontief): one markdown row each."""
    rows = []
    for stem in ("cd_deterministic_horizon_floors", "leontief_deterministic_horizon_floors",
                 "cd_deterministic_horizon_degree_floors"):
        econ = _paper_economy(stem)
        r = econ.solve(method="markov-horizon", time_limit=GOAL_SECONDS)
        m = r.stats["metrics"]
        held = ", ".join(f"{v:.3g}" for v in r.solution["portfolio"][1, :, 0])
        rows.append(f"| {stem.replace('_horizon', '')} | {r.termination.value} | {len(r.stats['metric_history'])} | "
                    f"{r.stats['wall_time']:.1f} | {m['exploitability']:.4g} | {m['exploitability_lower']:.4g} | "
                    f"{m['horizon_relative_exploitability']:.3g} | {m['consumer_regret']:.3g} / "
                    f"{m['auctioneer_regret']:.3g} | {m['asset_price_level']:g} x cap, "
                    f"{'yes' if m['balanced'] else 'no'} | {held} |")
        print(rows[-1], flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--large", action="store_true", help="also the 20 x 20 x 5 x 10 economies")
    ap.add_argument("--large-time-limit", type=float, default=300.0)
    ap.add_argument("--replot", action="store_true",
                    help="only rewrite the table and figure from the recorded JSON (with --paper: its table)")
    ap.add_argument("--anchor", action="store_true", help="only the anchor-formula table (games_markov_anchor.*)")
    ap.add_argument("--quick", action="store_true", help="Cobb-Douglas only, 10 s (a smoke run; results not written)")
    ap.add_argument("--add-large", nargs=2, metavar=("METHOD", "UTILITY"),
                    help="append the 20x20 rows of METHOD on UTILITY (both chains) to the recorded results")
    ap.add_argument("--rerun-small", action="store_true",
                    help="re-run the 10x10 rows of the recorded results with the current certificate, keep the rest")
    ap.add_argument("--paper-data", action="store_true",
                    help="write instances/games/markov_paper_*.json from the notebooks' seeds (needs JAX 0.4.x)")
    ap.add_argument("--paper", action="store_true",
                    help="the paper's four economies (instances/games/markov_paper_*.json): games_markov_paper.*")
    ap.add_argument("--method", default=None, help="with --paper: this method instead of the default")
    ap.add_argument("--paper-horizon", action="store_true",
                    help="the paper's deterministic economies with their horizon: games_markov_paper_horizon.md")
    ap.add_argument("--paper-horizon-metrics", action="store_true",
                    help="only the notebooks' metrics on the horizon answers (its section of that page)")
    ap.add_argument("--paper-least", action="store_true",
                    help="only the proven least exploitability of the economies with floors (a section of that page)")
    ap.add_argument("--paper-horizon-floors-stochastic", action="store_true",
                    help="only the stochastic economies with floors and caps (their section of that page)")
    args = ap.parse_args(argv)
    if args.paper and args.replot:
        recorded = json.loads((RESULTS / "games_markov_paper.json").read_text())
        (RESULTS / "games_markov_paper.md").write_text(paper_markdown(recorded["meta"], recorded["rows"]))
        return
    if args.paper:
        paper_run(args.time_limit if args.time_limit != 30.0 else 120.0, args.method)
        return
    if args.paper_data:
        paper_data()
        return
    if args.paper_horizon_metrics:
        paper_horizon_metrics()
        return
    if args.paper_horizon_floors_stochastic:
        stochastic_floors_section()
        return
    if args.paper_least:
        least_section()
        return
    if args.paper_horizon:
        paper_horizon()
        return
    if args.replot:
        recorded = json.loads((RESULTS / "games_markov.json").read_text())
        write(recorded["meta"], recorded["rows"])
        return
    if args.rerun_small:
        rerun_small(args.time_limit)
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


def rerun_small(time_limit):
    """Re-run the recorded 10x10 rows (same economies, methods, limit) and replace them in the record."""
    recorded = json.loads((RESULTS / "games_markov.json").read_text())
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    rows = []
    for row in recorded["rows"]:
        if row["size"] == "10x10x1x5":
            row = run_case(10, 10, 1, 5, row["utility"], row["transitions"] == "stochastic", time_limit,
                           row["method"])
            print(f"{row['size']} {row['utility']} {row['transitions']} {row['method']}: {row['termination']} "
                  f"rel {row['relative_exploitability']:.2e}, goal at {_seconds(row['time_to_goal'])}", flush=True)
        rows.append(row)
    recorded["meta"]["rerun"] = (f"the 10x10 rows, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} "
                                 f"UTC, {time_limit:g} s each, load average {load:.2f} at the start")
    write(recorded["meta"], rows)


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
