"""W_inf at scale: the exact ``bottleneck`` method up to n = 10^5 and the grid approximation
(:func:`solvopt.transport.bottleneck_grid.grid_bottleneck`) up to n = 10^6.

Uniform points in the unit square / cube, n = m, uniform masses (``uniform``, seed 1) or masses
uniform in [0.5, 1.5], the targets' rescaled to the sources' total (``random``, seed 0). Every
measurement runs in a fresh Python process after a warm-up solve on 200 points (compiled kernels
loaded): wall and CPU time of the solve, its peak RSS, W_inf (the plan's), the certified lower
bound, the status; for the grid also its cell side, additive error 2h and, where the exact value
is known from the same run (``--with-exact``), the realized error.

    python benchmarks/transport_bottleneck.py --exact 10000 30000 100000
    python benchmarks/transport_bottleneck.py --grid 1000000 --per-cell 8 2
    python benchmarks/transport_bottleneck.py --grid 100000 --per-cell 2 --with-exact

Writes a markdown table to stdout and appends it to ``--out`` (default
benchmarks/results/transport_bottleneck.md) with the command, date, CPU and load average.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time


def cloud(n: int, dim: int, masses: str):
    import numpy as np
    rng = np.random.default_rng(1 if masses == "uniform" else 0)
    x, y = rng.random((n, dim)), rng.random((n, dim))
    if masses == "uniform":
        return x, y, None, None
    a, b = rng.uniform(0.5, 1.5, n), rng.uniform(0.5, 1.5, n)
    return x, y, a, b * a.sum() / b.sum()


def one(method: str, n: int, dim: int, masses: str, per_cell: float, with_exact: bool) -> dict:
    """One measurement in this process (called in a child)."""
    import resource

    from solvopt.dsl.transport import Transport
    from solvopt.transport.bottleneck_grid import grid_bottleneck

    def solve(model):
        return model.solve("bottleneck") if method == "exact" else grid_bottleneck(model, per_cell=per_cell)
    solve(Transport(*cloud(200, dim, masses)[:2], p="inf"))        # warm-up: kernels loaded
    x, y, a, b = cloud(n, dim, masses)
    model = Transport(x, y, a=a, b=b, p="inf")
    wall, cpu = time.perf_counter(), time.process_time()
    r = solve(model)
    out = {"method": method, "n": n, "dim": dim, "masses": masses, "wall": time.perf_counter() - wall,
           "cpu": time.process_time() - cpu, "value": r.objective, "bound": r.bound,
           "status": r.termination.value, "rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}
    if method == "grid":
        out.update(per_cell=per_cell, delta=r.stats["delta"], additive=float(r.stats["additive_error"]),
                   tests=r.stats["tests"], arcs=r.stats.get("upper_arcs"), factor=r.stats.get("factor"))
        if with_exact:
            out["exact"] = model.solve("bottleneck").objective
    else:
        out.update(tests=r.stats["iterations"], pairs=r.stats["pairs"], rounds=r.stats["radius_rounds"])
    return out


def run_child(*args) -> dict:
    cmd = [sys.executable, __file__, "--child", *map(str, args)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"rc {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--exact", type=int, nargs="*", default=[], help="sizes n for the exact method")
    parser.add_argument("--grid", type=int, nargs="*", default=[], help="sizes n for the grid approximation")
    parser.add_argument("--dims", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--masses", nargs="+", default=["uniform", "random"], choices=["uniform", "random"])
    parser.add_argument("--per-cell", type=float, nargs="+", default=[8.0])
    parser.add_argument("--with-exact", action="store_true", help="grid: also the exact W_inf (small n only)")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "transport_bottleneck.md"))
    parser.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        method, n, dim, masses, per_cell, with_exact = args.child
        print(json.dumps(one(method, int(n), int(dim), masses, float(per_cell), with_exact == "True")))
        return
    lines = [f"`python benchmarks/transport_bottleneck.py {' '.join(sys.argv[1:])}` — "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.processor() or platform.machine()}, "
             f"{os.cpu_count()} cores, load before {os.getloadavg()[0]:.1f}", ""]
    if args.exact:
        lines += ["| n | d | masses | W_inf | bound | status | radius rounds | pairs held | tests | wall s | CPU s | "
                  "peak GiB |", "|" + " --- |" * 12]
        for n in args.exact:
            for dim in args.dims:
                for masses in args.masses:
                    r = run_child("exact", n, dim, masses, 0, False)
                    if "error" in r:
                        lines.append(f"| {n} | {dim} | {masses} | error: {r['error']} |")
                    else:
                        lines.append(f"| {n} | {dim} | {masses} | {r['value']:.6g} | {r['bound']:.6g} | "
                                     f"{r['status']} | {r['rounds']} | {r['pairs']:,} | {r['tests']} | "
                                     f"{r['wall']:.1f} | {r['cpu']:.1f} | {r['rss_gib']:.2f} |")
                    print(lines[-1], flush=True)
        lines.append("")
    if args.grid:
        head = "| n | d | masses | per cell | delta | 2h | W_inf <= | bound | factor | "
        head += "exact | " if args.with_exact else ""
        head += "cell pairs | tests | wall s | CPU s | peak GiB |"
        lines += [head, "|" + " --- |" * (head.count("|") - 1)]
        for n in args.grid:
            for dim in args.dims:
                for masses in args.masses:
                    for per_cell in args.per_cell:
                        r = run_child("grid", n, dim, masses, per_cell, args.with_exact)
                        if "error" in r:
                            lines.append(f"| {n} | {dim} | {masses} | {per_cell:g} | error: {r['error']} |")
                            print(lines[-1], flush=True)
                            continue
                        row = (f"| {n} | {dim} | {masses} | {per_cell:g} | {r['delta']:.4g} | {r['additive']:.4g} | "
                               f"{r['value']:.5g} | {r['bound']:.5g} | {r['factor'] or float('nan'):.3f} | ")
                        row += f"{r['exact']:.5g} | " if args.with_exact else ""
                        row += (f"{r['arcs']:,} | {r['tests']} | {r['wall']:.1f} | {r['cpu']:.1f} | "
                                f"{r['rss_gib']:.2f} |")
                        lines.append(row)
                        print(row, flush=True)
        lines.append("")
    lines.append(f"load after {os.getloadavg()[0]:.1f}")
    lines.append("")
    if not os.path.exists(args.out):
        lines.insert(0, "# W_inf at scale: exact `bottleneck` and the grid approximation\n\n"
                        "Written by benchmarks/transport_bottleneck.py (see its docstring); each run appends.\n")
    with open(args.out, "a") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
