"""k-HC2 exact bnb at growing sizes (the first size goal): node counts and times, variant against variant.

Fixed instances (m, n, k, kind, seed): ``uniform`` points in [0, 10]^n, or ``planted``: points
uniform in [0, 10]^n projected onto k random hyperplanes (random normal, through a random point
of the box) plus Gaussian noise of standard deviation ``--sigma`` (default 0.1) in every
coordinate; ``noisy``: the same with noise 5 sigma. Every instance is solved by each variant of
:func:`solvopt.khc.bnb.solve_bnb` in one process, side by side (same incumbent: the heuristic runs
inside each solve with the same seed), so the node and time ratios between variants are what to
read; the machine is shared (2 cores, other engineers' jobs), absolute times are noisy.

Variants: ``plain`` (farthest order, no charge, no dolls: the search of the earlier bnb;
its first incumbent now adds the extra restarts), ``charge`` (plus the unassigned-point charge
of :mod:`solvopt.khc.bounds`), ``dynamic`` (the dynamic order, no dolls) and ``default`` (the
options' defaults, with suffix_bounds "auto": dolls after half the time limit); ``threads1`` and
``threads2``: the dynamic variant on 1 and on 2 threads (:mod:`solvopt.khc.parallel`); ``split1`` and
``split2``: the dynamic order with its split dolls (``suffix_bounds`` on: :func:`solvopt.khc.bnb.split_starts`,
the whole time limit) on 1 and on 2 threads; ``split2_third``: split2 with the first part a third
(the share before section 9 of the results, 30% since). Each run
records its wall time, its CPU time (all threads), the search's own wall time (after the first
incumbent) and the 1-minute load average when it started: on a shared machine a second thread
only helps while a core is free.

    python benchmarks/khc_bnb_scale.py --time-limit 60                    # default set
    python benchmarks/khc_bnb_scale.py --sizes 40,60 --variants plain,charge --time-limit 30
    python benchmarks/khc_bnb_scale.py --out benchmarks/results/khc_bnb_scale --time-limit 300
    python benchmarks/khc_bnb_scale.py --sizes 60 --variants threads1,threads2 --time-limit 30
    python benchmarks/khc_bnb_scale.py --sizes 100 --variants split2 --time-limit 300 --probe   # goal 1
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import datetime
import json
import platform
import time
from pathlib import Path

import numpy as np

from solvopt.khc import bnb
from solvopt.khc.bnb import solve_bnb

RESULTS = Path(__file__).resolve().parent / "results"
VARIANTS = {
    "plain": {"order": "farthest", "charge_bound": False, "suffix_bounds": False},   # the earlier bnb
    "charge": {"order": "farthest", "charge_bound": True, "suffix_bounds": False},
    "dynamic": {"order": "dynamic", "suffix_bounds": False},
    "default": {},
    "threads1": {"order": "dynamic", "suffix_bounds": False, "threads": 1},
    "threads2": {"order": "dynamic", "suffix_bounds": False, "threads": 2},
    "split1": {"order": "dynamic", "suffix_bounds": True, "threads": 1},
    "split2": {"order": "dynamic", "suffix_bounds": True, "threads": 2},
    "split2_third": {"order": "dynamic", "suffix_bounds": True, "threads": 2, "split_share": 1 / 3},  # before section 9
}


def planted_points(m: int, n: int, k: int, sigma: float, seed: int) -> np.ndarray:
    """m points near k random hyperplanes crossing the box [0, 10]^n, Gaussian noise sigma."""
    rng = np.random.default_rng(seed)
    normals = rng.normal(size=(k, n))
    normals /= np.linalg.norm(normals, axis=1)[:, None]
    anchors = rng.uniform(0.0, 10.0, size=(k, n))
    label = rng.integers(0, k, size=m)
    pts = rng.uniform(0.0, 10.0, size=(m, n))
    w = normals[label]
    pts -= np.einsum("mn,mn->m", pts - anchors[label], w)[:, None] * w
    return pts + sigma * rng.normal(size=(m, n))


def instance(m: int, n: int, k: int, kind: str, seed: int, sigma: float) -> np.ndarray:
    """``uniform``; ``planted`` (noise ``sigma``); ``noisy``: planted with noise 5 sigma."""
    if kind == "uniform":
        return np.random.default_rng(seed).uniform(0.0, 10.0, size=(m, n))
    return planted_points(m, n, k, sigma if kind == "planted" else 5 * sigma, seed)


def run(points: np.ndarray, k: int, options: dict, time_limit: float, restarts: int) -> dict:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    options = dict(options)
    share = options.pop("split_share", bnb.SPLIT_SHARE)  # a variant's own split share, else the default
    default_share, bnb.SPLIT_SHARE = bnb.SPLIT_SHARE, share
    start, cpu_start = time.perf_counter(), time.process_time()
    try:
        out = solve_bnb(points, k, time_limit=time_limit, restarts=restarts, **options)
    finally:
        bnb.SPLIT_SHARE = default_share
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    gap = (out.objective - out.bound) / max(abs(out.objective), 1e-12)
    return {"time": wall, "nodes": out.nodes, "objective": out.objective, "bound": out.bound, "gap": gap,
            "complete": out.complete, "cpu": cpu, "search_time": out.search_seconds, "threads": out.threads,
            "load": load}


def lp_at_assignment_nodes(m: int = 40, n: int = 3, k: int = 3, seed: int = 3) -> list[dict]:
    """sbb's node LP (every norm set) at bnb's assignment nodes against bnb's eigenvalue bound.

    The nodes are those on the path to bnb's optimum (farthest order), depth 10 to m: the first
    ``depth`` points fixed to their optimal clusters, the normal boxes sbb's root ones. Printed
    and returned; ``--part lp`` runs it."""
    from solvopt.core.options import SolveOptions
    from solvopt.dsl.hyperplane_data import parse_norms
    from solvopt.khc.bnb import branching_order
    from solvopt.khc.geometry import assignment_cost
    from solvopt.khc.sbb import SpatialBranchAndBound

    X = np.random.default_rng(seed).uniform(0.0, 10.0, size=(m, n))
    best = solve_bnb(X, k, threads=1, suffix_bounds=False)
    perm = branching_order(X, k, "farthest")
    rows = []
    for norms in ("2", "2,inf", "2,1,inf"):
        sbb = SpatialBranchAndBound(X, k, parse_norms(norms), SolveOptions(), symmetry_breaking=False)
        for depth in (10, m // 2, 3 * m // 4, m):
            node = sbb.root()
            sbb.tighten(node)
            fixed = perm[:depth]
            node.allowed[fixed, :] = False
            node.allowed[fixed, best.assignment[fixed]] = True
            lp = sbb.lp_bound(node, None)
            eigen = assignment_cost(X[fixed], best.assignment[fixed], k)  # the partial clusters' optimum
            rows.append({"norms": norms, "depth": depth, "lp": lp.value, "lp_status": lp.status, "eigen": eigen,
                         "optimum": best.objective})
            print(f"norms {norms:8s} depth {depth:3d}: LP {lp.status} {lp.value:.6g}, eigenvalue bound {eigen:.6g}, "
                  f"optimum {best.objective:.6g}", flush=True)
    return rows


def core_probe(seconds: float = 0.25) -> float:
    """How much faster 2 threads run a GIL-free loop than 1, now: 2.0 on two free cores, 1.0
    when the machine has one core's worth left for this process. Read next to the bnb ratios."""
    import threading

    from numba import njit

    @njit(nogil=True, cache=True)
    def spin(count):
        total = 0.0
        for i in range(count):
            total += (i % 7) * 0.5
        return total

    spin(10)
    count, took = 1 << 20, 0.0
    while took < seconds:  # size the loop to about ``seconds`` on one thread
        count *= 2
        start = time.perf_counter()
        spin(count)
        took = time.perf_counter() - start
    start = time.perf_counter()
    workers = [threading.Thread(target=spin, args=(count,)) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return 2.0 * took / (time.perf_counter() - start)


def stopped_runs(time_limit: float, restarts: int, sigma: float, m: int = 80) -> list[dict]:
    """The default bnb (suffix_bounds auto: dolls in the second half) stopped at ``time_limit``
    on 1 and on 2 threads, side by side: the bound each certifies (``--part stopped``)."""
    rows = []
    for kind in ("uniform", "noisy"):
        for seed in (1, 2):
            points = instance(m, 3, 3, kind, 1000 * seed + m, sigma)
            row = {"m": m, "n": 3, "k": 3, "kind": kind, "seed": seed, "runs": {}}
            for threads in (1, 2):
                r = run(points, 3, {"threads": threads}, time_limit, restarts)
                row["runs"][f"threads{threads}"] = r
                print(f"m={m} {kind:8s} seed {seed} threads {threads}: obj {r['objective']:.6g} bound {r['bound']:.4g} "
                      f"gap {100 * r['gap']:.3g}% cpu {r['cpu']:.1f}s load {r['load']:.2f} "
                      f"{'proven' if r['complete'] else 'stopped'}", flush=True)
            rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("variants", "lp", "stopped"), default="variants",
                        help="lp: sbb's node LP at bnb's assignment nodes (m = 40, n = 3, k = 3); stopped: the "
                             "default bnb at m = 80, n = 3, k = 3 on 1 and 2 threads, stopped at --time-limit")
    parser.add_argument("--sizes", default="40,50,60,80,100")
    parser.add_argument("--dims", default="2,3")
    parser.add_argument("--ks", default="2,3")
    parser.add_argument("--kinds", default="uniform,planted,noisy")
    parser.add_argument("--variants", default="plain,charge")
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--restarts", type=int, default=50)
    parser.add_argument("--sigma", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=1, help="runs per variant and instance, in alternating "
                                                                   "order; the median-time run is reported")
    parser.add_argument("--probe", action="store_true", help="measure the machine's parallel capacity before "
                                                             "each instance (core_probe)")
    parser.add_argument("--out", default=None, help="write OUT.md and OUT.json")
    args = parser.parse_args()
    if args.part == "lp":
        lp_at_assignment_nodes()
        return
    if args.part == "stopped":
        rows = stopped_runs(args.time_limit, args.restarts, args.sigma)
        if args.out:
            Path(args.out).with_suffix(".json").write_text(json.dumps({"time_limit": args.time_limit, "rows": rows},
                                                                      indent=1))
        return
    ints = lambda text: [int(x) for x in text.split(",")]  # noqa: E731
    variants = args.variants.split(",")
    # warm the kernels (compile) outside the timings
    warm = np.random.default_rng(0).uniform(0, 10, size=(12, 3))
    for name in variants:
        solve_bnb(warm, 2, restarts=1, **VARIANTS[name])
        solve_bnb(warm[:, :2], 2, restarts=1, **VARIANTS[name])
    rows = []
    for m in ints(args.sizes):
        for n in ints(args.dims):
            for k in ints(args.ks):
                for kind in args.kinds.split(","):
                    points = instance(m, n, k, kind, args.seed + m + 10 * n + 100 * k, args.sigma)
                    row = {"m": m, "n": n, "k": k, "kind": kind, "runs": {}, "repeats": {v: [] for v in variants}}
                    if args.probe:
                        row["core_probe"] = core_probe()
                    for rep in range(args.repeats):  # alternate the order: neither variant always goes first
                        for name in (variants if rep % 2 == 0 else variants[::-1]):
                            r = run(points, k, VARIANTS[name], args.time_limit, args.restarts)
                            row["repeats"][name].append(r)
                            print(f"m={m} n={n} k={k} {kind:8s} {name:13s} time {r['time']:7.2f}s search "
                                  f"{r['search_time']:7.2f}s cpu {r['cpu']:7.2f}s load {r['load']:.2f} nodes "
                                  f"{r['nodes']:>11d} obj {r['objective']:.6g} bound {r['bound']:.6g} "
                                  f"gap {100 * r['gap']:.3g}% {'proven' if r['complete'] else 'stopped'}", flush=True)
                    for name in variants:  # the run of median time stands for the variant
                        by_time = sorted(row["repeats"][name], key=lambda r: r["time"])
                        row["runs"][name] = by_time[(len(by_time) - 1) // 2]
                    if args.repeats == 1:
                        del row["repeats"]
                    if args.probe:
                        print(f"   core probe: 2 threads of a pure loop ran {row['core_probe']:.2f}x as fast as one",
                              flush=True)
                    rows.append(row)
    if args.out:
        write(Path(args.out), rows, variants, args)


def write(out: Path, rows: list, variants: list, args) -> None:
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": f"{platform.node()} ({os.cpu_count()} cores, shared), "
                       f"{platform.processor() or platform.machine()}",
            "time_limit": args.time_limit, "restarts": args.restarts, "sigma": args.sigma, "seed": args.seed}
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    compare = len(variants) > 1   # ratio columns only between two variants
    lines = [f"# k-HC2 bnb at growing sizes ({meta['date']})", "",
             f"Machine: {meta['machine']}. Time limit {args.time_limit:g} s per run, heuristic restarts "
             f"{args.restarts}, planted noise sigma {args.sigma:g}. Written by `python benchmarks/khc_bnb_scale.py`.",
             "", "| m | n | k | kind | " + " | ".join(f"{v}: time / nodes / gap" for v in variants)
             + (" | node ratio | time ratio |" if compare else " |"),
             "|" + "---|" * (4 + len(variants) + (2 if compare else 0))]
    for row in rows:
        cells = []
        for v in variants:
            r = row["runs"][v]
            mark = "" if r["complete"] else " (stopped)"
            cells.append(f"{r['time']:.2f} s / {r['nodes']} / {100 * r['gap']:.3g}%{mark}")
        a, b = row["runs"][variants[0]], row["runs"][variants[-1]]
        ratio_nodes = f"{a['nodes'] / max(b['nodes'], 1):.3g}" if a["complete"] and b["complete"] else "-"
        ratio_time = f"{a['time'] / max(b['time'], 1e-9):.3g}" if a["complete"] and b["complete"] else "-"
        lines.append(f"| {row['m']} | {row['n']} | {row['k']} | {row['kind']} | " + " | ".join(cells)
                     + (f" | {ratio_nodes} | {ratio_time} |" if compare else " |"))
    if compare:
        lines += ["", f"Ratios: {variants[0]} over {variants[-1]} (only where both proved optimality)."]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
