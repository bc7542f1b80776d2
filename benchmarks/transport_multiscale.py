"""``approx`` by graph, side by side in one process: multiscale pricing, the grid hierarchy, two-hop.

Uniform points in [0, 1]^d, n = m, uniform masses (``--masses random``: drawn uniformly from
[0.1, 1.1], the targets' scaled to the sources' total), seed 0. For each case, after one warm-up
solve per graph at n = 2000, one run of ``approx`` with each graph: CPU seconds
(``time.process_time`` plus the CPU of child processes, where OR-Tools solves), wall seconds, the
ratio W_p(plan) / certified bound, and the multiscale levels and rounds. One run a case on a
shared machine: the load (1-minute average) is recorded beside each row.

    nice python benchmarks/transport_multiscale.py                         # n = 10^4 (d = 2, 3; p = 1, 2)
    nice python benchmarks/transport_multiscale.py --sizes 100000 --dims 2 --ps 2 --merge
    python benchmarks/transport_multiscale.py --sizes 1000000 --graphs multiscale --merge   # one process a size
    python benchmarks/transport_multiscale.py --sizes 3000 --no-write      # a smoke run
    nice python benchmarks/transport_multiscale.py --sizes 100000 --graphs multiscale --masses uniform random --merge
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
# "multiscale-simplex": the multiscale graph with every level's flows by the exact network simplex
# (engine="simplex", the default before warm cost scaling), for a side-by-side
GRAPHS = ("multiscale", "multiscale-simplex", "grid", "two-hop")
OPTIONS = {"multiscale-simplex": {"graph": "multiscale", "engine": "simplex"}}


def cpu() -> float:
    """CPU seconds of this process and its finished children (OR-Tools' forked solves)."""
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + child.ru_utime + child.ru_stime


def masses_of(kind: str, n: int, rng) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(a, b): None for uniform masses, else drawn uniformly from [0.1, 1.1] (b scaled to a's total)."""
    if kind == "uniform":
        return None, None
    a, b = rng.uniform(0.1, 1.1, n), rng.uniform(0.1, 1.1, n)
    return a, b * (a.sum() / b.sum())


def run_case(n: int, d: int, p: float, graphs, masses: str = "uniform") -> list[dict]:
    from solvopt.dsl import Transport
    rng = np.random.default_rng(0)
    warm = Transport(rng.random((2000, d)), rng.random((2000, d)), *masses_of(masses, 2000, rng), p=p)
    for graph in graphs:
        warm.solve("approx", **OPTIONS.get(graph, {"graph": graph}))
        if graph == "multiscale":       # its large levels' kernel too (warm cost scaling on every level)
            warm.solve("approx", graph="multiscale", engine="costscaling")
    x, y = rng.random((n, d)), rng.random((n, d))
    model = Transport(x, y, *masses_of(masses, n, rng), p=p)
    rows = []
    for graph in graphs:
        t0, c0 = time.perf_counter(), cpu()
        r = model.solve("approx", **OPTIONS.get(graph, {"graph": graph}))
        row = {"n": n, "d": d, "p": p, "graph": graph, "masses": masses,
               "wall": time.perf_counter() - t0, "cpu": cpu() - c0,
               "objective": r.objective, "bound": r.bound, "ratio": r.objective / r.bound,
               "termination": r.termination.value, "load": os.getloadavg()[0],
               "peak_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
        levels = r.stats.get("levels")
        if isinstance(levels, list):
            row.update(levels=[[lv["n"], lv["rounds"], round(lv["time"], 2)] for lv in levels],
                       rounds=r.stats.get("rounds"), candidates=r.stats.get("candidates"),
                       start_time=r.stats.get("start_time"), flow_time=r.stats.get("flow_time"),
                       mass_units=r.stats.get("mass_units"))
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def markdown(rows: list[dict]) -> str:
    lines = ["# `approx` by graph (uniform points, one process, one run a case)", "",
             "Masses: uniform, or random (drawn uniformly from [0.1, 1.1], `--masses random`; the multiscale "
             "graph then rounds them to multiples of one unit for warm cost scaling and sends the leftovers "
             "back). Rows before the masses column was added are uniform. The rows of both kinds side by side: "
             "`nice python benchmarks/transport_multiscale.py --sizes 100000 --graphs multiscale --masses uniform "
             "random --merge`, and `--sizes 1000000 --dims 2 --ps 2 --graphs multiscale --masses random --merge`.",
             "",
             "Command: `nice python benchmarks/transport_multiscale.py` (see its docstring). CPU seconds "
             "include OR-Tools' child processes; ratio = W_p(plan) / certified bound. multiscale-simplex: the "
             "multiscale graph with every level's flows by the exact network simplex (`engine='simplex'`). "
             "Peak: the process's peak resident set so far (GiB; a row run after a larger one shows that one's). "
             "Rows are in the order run (`--merge` appends): where a case appears twice, the later date is the "
             "newer code.",
             "",
             "| n | d | p | masses | graph | CPU (s) | wall (s) | ratio | multiscale levels (n, rounds, s) / rounds "
             "| peak (GiB) | load | date |",
             "| ---: | ---: | ---: | --- | --- | ---: | ---: | ---: | --- | ---: | ---: | --- |"]
    for r in rows:
        extra = f"{r['levels']} / {r['rounds']}" if "levels" in r else ""
        peak = f"{r['peak_gib']:.2f}" if "peak_gib" in r else "-"
        lines.append(f"| {r['n']} | {r['d']} | {r['p']:g} | {r.get('masses', 'uniform')} | {r['graph']} | "
                     f"{r['cpu']:.2f} | {r['wall']:.2f} | "
                     f"{r['ratio']:.4f} | {extra} | {peak} | {r['load']:.1f} | {r.get('date', '-')} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--dims", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--ps", type=float, nargs="+", default=[1.0, 2.0])
    parser.add_argument("--graphs", nargs="+", default=list(GRAPHS), choices=GRAPHS)
    parser.add_argument("--masses", nargs="+", default=["uniform"], choices=("uniform", "random"),
                        help="uniform masses, or drawn uniformly from [0.1, 1.1] (each kind run in turn)")
    parser.add_argument("--merge", action="store_true", help="add to the stored rows instead of replacing them")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    rows = [row for n in args.sizes for d in args.dims for p in args.ps for masses in args.masses
            for row in run_case(n, d, p, args.graphs, masses)]
    if args.no_write:
        return
    path = RESULTS / "transport_multiscale.json"
    if args.merge and path.exists():
        rows = json.loads(path.read_text()) + rows
    path.write_text(json.dumps(rows, indent=1) + "\n")
    (RESULTS / "transport_multiscale.md").write_text(markdown(rows))


if __name__ == "__main__":
    main()
