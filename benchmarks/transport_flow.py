"""Min-cost flow engines on the sparse graphs the transport approximation builds, side by side.

For uniform points in [0, 1]^2 and for pixel colour clouds (n = m, uniform masses, p = 2) the two-hop graph of
``solvopt.transport.approx`` (or, ``--graph grid``, its grid hierarchy) is built once per size
(round(sqrt(n)) centres, seed 0), then each engine of :func:`solvopt.transport.flow.min_cost_flow`
solves the same arcs, costs and supplies, in interleaved rounds (engine order rotated each round):
``simplex`` (our Numba network simplex), ``auto`` (the default: the simplex with a pivot budget,
then OR-Tools), ``ortools`` (SimpleMinCostFlow, cost scaling), ``costscaling`` (our Numba cost
scaling), ``highs`` (the flow LP, dual simplex; up to ``--highs-max``), ``networkx`` (the
tiny-case reference; up to ``--networkx-max``). Recorded: the median wall time, its ratio to the
fastest engine, and the flow cost relative to the smallest (every engine must agree: they are
exact up to the integer-cost rounding they state).

    nice python benchmarks/transport_flow.py                  # writes benchmarks/results/transport_flow.{md,json}
    nice python benchmarks/transport_flow.py --graph grid --sizes 2000 10000 30000 --pixel-sizes --repeats 1
                                                              # writes benchmarks/results/transport_flow_grid.{md,json}
    python benchmarks/transport_flow.py --sizes 500 --pixel-sizes 500 --repeats 1 --no-write   # a smoke run
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
ENGINES = ("simplex", "ortools", "costscaling", "highs", "networkx")


def points(case: str, n: int):
    """Sources and targets: uniform in [0, 1]^2, or the RGB colours (in [0, 1]^3) of n pixels of each
    of scikit-learn's two sample images (china -> flower: clustered, many repeated colours)."""
    rng = np.random.default_rng([0, n])
    if case == "uniform":
        return rng.uniform(size=(n, 2)), rng.uniform(size=(n, 2))
    from sklearn.datasets import load_sample_images
    china, flower = (img.reshape(-1, 3) / 255.0 for img in load_sample_images().images)
    return china[rng.choice(len(china), n, replace=False)], flower[rng.choice(len(flower), n, replace=False)]


def two_hop(n: int, case: str = "uniform"):
    from solvopt.dsl import Transport
    from solvopt.transport.graph import Distances, build_two_hop, default_centres
    model = Transport(*points(case, n), p=2)
    graph = build_two_hop(Distances(model), default_centres(n, n), np.random.default_rng(0))
    tails, heads = graph.arc_ends()
    top = max(float(x.max()) for x in graph.arc_lengths() if x.size)
    return graph, tails, heads, graph.arc_costs(2.0, top), graph.supplies(model.a, model.b)


def grid(n: int, case: str = "uniform"):
    """The grid hierarchy's graph and flow data, as :func:`two_hop` gives the two-hop graph's."""
    from solvopt.dsl import Transport
    from solvopt.transport.hierarchy import build_grid
    model = Transport(*points(case, n), p=2)
    graph = build_grid(model, np.random.default_rng(0))
    tails, heads = graph.arc_ends()
    top = max(float(x.max()) for x in graph.effective_lengths(2.0) if x.size)
    return graph, tails, heads, graph.arc_costs(2.0, top), graph.supplies(model.a, model.b)


def engines_for(n: int, args) -> list[str]:
    import importlib.util
    out = ["simplex", "auto"]
    if importlib.util.find_spec("ortools") is not None:
        out.append("ortools")
    out.append("costscaling")
    if n <= args.highs_max:
        out.append("highs")
    if n <= args.networkx_max:
        out.append("networkx")
    return out


def measure(case: str, n: int, args) -> dict:
    from solvopt.transport.flow import min_cost_flow
    graph, tails, heads, costs, supplies = (grid if args.graph == "grid" else two_hop)(n, case)
    path_arcs = 3 if args.graph == "grid" else 2
    names = engines_for(n, args)
    times = {e: [] for e in names}
    cost = {}
    for rnd in range(args.repeats):
        order = names[rnd % len(names):] + names[:rnd % len(names)]
        for engine in order:
            start = time.perf_counter()
            sol = min_cost_flow(tails, heads, costs, supplies, n_nodes=graph.n_nodes, engine=engine,
                                path_arcs=path_arcs)
            times[engine].append(time.perf_counter() - start)
            cost[engine] = (sol.cost, sol.abs_error, sol.engine)
    best_cost = min(c for c, _, _ in cost.values())
    medians = {e: statistics.median(t) for e, t in times.items()}
    fastest = min(medians.values())
    return {"case": case, "n": n, "nodes": graph.n_nodes, "arcs": graph.n_arcs, "repeats": args.repeats,
            "engines": {e: {"median_s": medians[e], "times_s": times[e], "vs_fastest": medians[e] / fastest,
                            "cost": cost[e][0], "abs_error": cost[e][1], "cost_vs_best": cost[e][0] / best_cost,
                            "ran": cost[e][2]}
                        for e in names}}


def warm_up() -> None:
    """Compile / load every JIT kernel once, outside the timings."""
    from solvopt.transport.flow import min_cost_flow
    graph, tails, heads, costs, supplies = two_hop(50)
    for engine in ("simplex", "costscaling"):
        min_cost_flow(tails, heads, costs, supplies, n_nodes=graph.n_nodes, engine=engine)


def markdown(rows: list[dict], meta: dict) -> str:
    what = "grid hierarchy's graph" if meta.get("graph") == "grid" else "two-hop graph"
    lines = [f"# Min-cost flow engines on the transport {what}", "",
             f"{meta['date']}, {meta['machine']}, load average {meta.get('load', '?')}; n = m, p = 2"
             + ("" if meta.get("graph") == "grid" else ", round(sqrt(n)) centres") + "; cases: `uniform` "
             f"points in [0, 1]^2, `pixels` = RGB colours of n pixels of each scikit-learn sample image; "
             f"median of {meta['repeats']} interleaved runs per engine (the machine is shared: compare "
             f"ratios within a row, not across runs). `auto` is the default: the simplex with a budget of "
             f"25 pivots per node, then OR-Tools (column `ran`).", "",
             "| case | n | arcs | engine | ran | median s | x fastest | cost / best cost | stated abs error / cost |",
             "|---|---:|---:|---|---|---:|---:|---:|---:|"]
    for row in rows:
        for engine, r in sorted(row["engines"].items(), key=lambda kv: kv[1]["median_s"]):
            lines.append(f"| {row['case']} | {row['n']:,} | {row['arcs']:,} | {engine} | {r['ran']} | "
                         f"{r['median_s']:.3f} | {r['vs_fastest']:.2f} | {r['cost_vs_best']:.9f} | "
                         f"{r['abs_error'] / r['cost']:.1e} |")
    if meta.get("graph") == "grid":
        lines += ["", "Read the ratios within a size. On this graph `approx` hands the flow to OR-Tools under "
                  "`engine='auto'` (3x faster than the simplex at n = 10^5, docs/transport.md); our cost scaling "
                  "(`costscaling`) takes a warm start, but cold it is slower than both engines here."]
        return "\n".join(lines) + "\n"
    lines += ["", "Our simplex is the fastest exact engine on uniform points at every size measured (exact "
              "for the integer-rounded costs: the stated abs error bounds the rounding; no optional "
              "package needed); on the colour clouds, whose many ties make it stall, OR-Tools is faster, "
              "and `auto` hands over to it. HiGHS is kept for capacitated flows and general real supplies."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000, 5000, 10000])
    parser.add_argument("--pixel-sizes", type=int, nargs="*", default=[1000, 3000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--highs-max", type=int, default=2000)
    parser.add_argument("--networkx-max", type=int, default=500)
    parser.add_argument("--graph", choices=("two-hop", "grid"), default="two-hop")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    warm_up()
    rows = []
    for case, n in [("uniform", n) for n in args.sizes] + [("pixels", n) for n in args.pixel_sizes]:
        rows.append(measure(case, n, args))
        best = min(rows[-1]["engines"].items(), key=lambda kv: kv[1]["median_s"])
        print(f"{case} n={n}: " + ", ".join(f"{e} {r['median_s']:.3f}s" for e, r in rows[-1]["engines"].items())
              + f"  (fastest {best[0]})", flush=True)
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs (shared), Python {platform.python_version()}",
            "repeats": args.repeats, "graph": args.graph, "load": " ".join(f"{x:.1f}" for x in os.getloadavg())}
    if args.no_write:
        return
    RESULTS.mkdir(exist_ok=True)
    name = "transport_flow_grid" if args.graph == "grid" else "transport_flow"
    (RESULTS / f"{name}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    (RESULTS / f"{name}.md").write_text(markdown(rows, meta))
    print(markdown(rows, meta))


if __name__ == "__main__":
    main()
