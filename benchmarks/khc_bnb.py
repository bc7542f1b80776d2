"""k-HC2 exact assignment branch-and-bound ("bnb") on the shared instances.

For each instance of the public k-HC set ($SOLVOPT_INSTANCES/khc) (m <= 30, n <= 3, k <= 3): bnb with a time
limit (median wall time of ``--repeats`` runs in one process), its termination, objective,
bound, gap and nodes; and, side by side,

- ``dolls``: the same search with the Russian-doll suffix bounds (option ``suffix_bounds``),
  with its own (shorter) time limit: what the dolls buy or cost, as a time ratio;
- ``dynamic``: the search with the dynamic branching order, same limit as ``dolls``;
- ``heuristic``: the k-plane heuristic (10 restarts) alone: its objective over the proven
  optimum.

The machine is shared (2 cores, other engineers' jobs): compare ratios, not absolute times.
OpenBLAS is pinned to one thread (tiny eigenproblems are much slower with its threads spinning
on a loaded machine).

    python benchmarks/khc_bnb.py --time-limit 300          # writes benchmarks/results/khc_bnb.md
    python benchmarks/khc_bnb.py --time-limit 300 --random # also five random instances, m = 40..60
    python benchmarks/khc_bnb.py --time-limit 60 --repeats 1 --dolls-limit 5
    python benchmarks/khc_bnb.py --time-limit 120 --random --dolls-limit 5 --out benchmarks/results/khc_bnb_check.md
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import datetime
import statistics
import time
from pathlib import Path

import numpy as np
from public_instances import public_instances

from solvopt.dsl import HyperplaneClustering
from solvopt.io import read_instance
from solvopt.khc.bnb import solve_bnb

RESULTS = Path(__file__).resolve().parent / "results"
REPEAT_BELOW = 5.0   # seconds: longer runs are not repeated
INSTANCES = public_instances("khc")


def fmt(x: float | None, digits: int = 10) -> str:
    return "-" if x is None else f"{x:.{digits}g}"


# Larger random instances (uniform in [0, 10]^n), beyond the shared set: (m, n, k, seed).
RANDOM = [(40, 3, 3, 1), (50, 2, 3, 2), (60, 3, 3, 3), (40, 2, 4, 4), (40, 3, 4, 5)]


def instances(instance_dir: Path, with_random: bool) -> list[tuple[str, HyperplaneClustering]]:
    paths = sorted(instance_dir.glob("*.dat"), key=lambda p: [int(t) for t in p.stem.split("_")[1:]])
    out = []
    for path in paths:
        inst = read_instance(path)
        out.append((inst.name, HyperplaneClustering.from_instance(inst)))
    if with_random:
        for m, n, k, seed in RANDOM:
            points = np.random.default_rng(seed).uniform(0.0, 10.0, size=(m, n))
            out.append((f"uniform_{m}_{n}_{k}_s{seed}", HyperplaneClustering(points, k)))
    return out


def run(models, time_limit: float, repeats: int, dolls_limit: float) -> list[dict]:
    rows = []
    # warm the Numba kernels (compilation or cache load) outside the timings
    HyperplaneClustering(np.random.default_rng(0).normal(size=(8, 2)), 2).solve("bnb")
    for name, model in models:
        times, result = [], None
        for _ in range(repeats):
            start = time.perf_counter()
            result = model.solve("bnb", time_limit=time_limit)
            times.append(time.perf_counter() - start)
            if times[-1] > REPEAT_BELOW:
                break
        assert result.bound <= result.objective
        start = time.perf_counter()
        dolls = solve_bnb(model.points, model.k, time_limit=dolls_limit, suffix_bounds=True)
        dolls_time = time.perf_counter() - start
        start = time.perf_counter()
        dynamic = solve_bnb(model.points, model.k, time_limit=dolls_limit, order="dynamic")
        dynamic_time = time.perf_counter() - start
        heuristic = model.solve("heuristic")
        row = {"name": name, "m": model.m, "n": model.n, "k": model.k,
               "termination": result.termination.value, "objective": result.objective, "bound": result.bound,
               "gap": result.gap, "nodes": result.stats["nodes"], "time": statistics.median(times),
               "dolls_solved": dolls.complete, "dolls_time": dolls_time, "dolls_nodes": dolls.nodes,
               "dynamic_solved": dynamic.complete, "dynamic_time": dynamic_time, "dynamic_nodes": dynamic.nodes,
               "heuristic_ratio": heuristic.objective / result.objective if result.objective > 0 else 1.0}
        rows.append(row)
        print(f"{row['name']:16s} {row['termination']:10s} obj={fmt(row['objective'])} gap={fmt(row['gap'], 3)} "
              f"nodes={row['nodes']} t={row['time']:.3f}s dolls={'solved' if dolls.complete else 'open'} "
              f"{dolls_time:.3f}s dynamic={'solved' if dynamic.complete else 'open'} {dynamic_time:.3f}s "
              f"({dynamic.nodes} nodes) heur/opt={row['heuristic_ratio']:.4f}", flush=True)
    return rows


def write_markdown(rows: list[dict], args) -> Path:
    solved = sum(r["termination"] == "optimal" for r in rows)
    dolls_solved = sum(r["dolls_solved"] for r in rows)
    both = [r for r in rows if r["dolls_solved"] and r["termination"] == "optimal"]
    ratios = [r["dolls_time"] / r["time"] for r in both]
    dyn_ratios = [r["dynamic_time"] / r["time"] for r in rows if r["dynamic_solved"] and r["termination"] == "optimal"]
    small = [r for r in rows if r["m"] <= 20]
    shared = [r for r in rows if r["name"].startswith("sr_")]
    lines = [
        "# k-HC2 exact assignment branch-and-bound (bnb)",
        "",
        f"Generated {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC} by "
        f"`python benchmarks/khc_bnb.py --time-limit {args.time_limit:g} --repeats {args.repeats} "
        f"{'--random ' if args.random else ''}"
        f"{'' if args.out == RESULTS / 'khc_bnb.md' else f'--out {args.out} '}"
        f"--dolls-limit {args.dolls_limit:g}` on a shared 2-core machine (load average at the end: "
        f"{os.getloadavg()[0]:.1f}).",
        "",
        f"- bnb proved optimality on **{solved} / {len(rows)}** instances within {args.time_limit:g} s "
        f"(shared instances: {sum(r['termination'] == 'optimal' for r in shared)} / {len(shared)}, max time "
        f"{max((r['time'] for r in shared), default=0):.3f} s; "
        f"m <= 20: {sum(r['termination'] == 'optimal' for r in small)}"
        f" / {len(small)}, max {max(r['time'] for r in small):.3f} s).",
        f"- with the Russian-doll suffix bounds (`dolls`, limit {args.dolls_limit:g} s): {dolls_solved} / {len(rows)}"
        f" solved; median time ratio dolls / bnb on the instances both solved: "
        f"{statistics.median(ratios):.3g}" if ratios else "- dolls solved none of the instances",
        f"- with the dynamic branching order (`order=\"dynamic\"`, limit {args.dolls_limit:g} s): "
        f"{sum(r['dynamic_solved'] for r in rows)} / {len(rows)} solved; median time ratio dynamic / bnb on the "
        f"instances both solved: {statistics.median(dyn_ratios):.3g}" if dyn_ratios else "- dynamic solved none",
        f"- heuristic (k-plane, 10 restarts) objective / optimum: median "
        f"{statistics.median(r['heuristic_ratio'] for r in rows):.4f}, "
        f"max {max(r['heuristic_ratio'] for r in rows):.4f}.",
        "",
        "Times are medians of the repeats (runs over 5 s are not repeated; wall clock, including the incumbent "
        "heuristic), in one process "
        "after warming the Numba kernels.",
        "",
        "| instance | m | n | k | termination | objective | bound | gap | nodes | time s | dolls | dolls s "
        "| dolls / bnb time | dynamic nodes | dynamic s | dynamic / bnb time | heuristic / opt |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ratio = f"{r['dolls_time'] / r['time']:.3g}" if r["dolls_solved"] else f">{r['dolls_time'] / r['time']:.3g}"
        dyn_ratio = (f"{r['dynamic_time'] / r['time']:.3g}" if r["dynamic_solved"]
                     else f">{r['dynamic_time'] / r['time']:.3g}")
        lines.append(f"| {r['name']} | {r['m']} | {r['n']} | {r['k']} | {r['termination']} | {fmt(r['objective'])} | "
                     f"{fmt(r['bound'])} | {fmt(r['gap'], 3)} | {r['nodes']} | {r['time']:.3f} | "
                     f"{'solved' if r['dolls_solved'] else 'open'} | {r['dolls_time']:.3f} | {ratio} | "
                     f"{r['dynamic_nodes']} | {r['dynamic_time']:.3f} | {dyn_ratio} | "
                     f"{r['heuristic_ratio']:.4f} |")
    out = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=300.0, help="seconds per bnb run")
    parser.add_argument("--repeats", type=int, default=3, help="repeats of bnb runs shorter than 5 s")
    parser.add_argument("--dolls-limit", type=float, default=20.0, help="seconds per run with suffix bounds")
    parser.add_argument("--instances", type=Path, default=INSTANCES)
    parser.add_argument("--random", action="store_true", help="also the larger random instances (m 40-60)")
    parser.add_argument("--out", type=Path, default=RESULTS / "khc_bnb.md",
                        help="markdown file to write (default: the recorded results, benchmarks/results/khc_bnb.md)")
    args = parser.parse_args()
    if not args.instances.is_dir():
        raise SystemExit(f"no instances at {args.instances}")
    rows = run(instances(args.instances, args.random), args.time_limit, args.repeats, args.dolls_limit)
    print(f"wrote {write_markdown(rows, args)}")


if __name__ == "__main__":
    main()
