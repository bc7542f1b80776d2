"""k-HC2 at real sizes: certified gaps at m = 10^4 and 10^5, the heuristic at scale, and
exact bnb at m = 40..150 against the bnb of an earlier commit.

Parts (``--part``, default all):

* ``gap``: the ``partition-bound`` method (k-plane incumbent + the certified subset bound of
  :mod:`solvopt.khc.subset_bound`) on planted-with-noise and uniform point sets of 10^4 and
  10^5 points, one time limit each: objective, bound, gap, group size, groups proven, and the
  certified gap against time (``khc_scale.png``).
* ``heuristic``: :func:`~solvopt.khc.heuristics.kplane` on planted sets (m = 10^5 at n = 3 and
  n = 50, k = 10): time and objective over the planted assignment's cost.
* ``bnb``: the issue's table (m in {40, 60, 80, 100, 150}, n in {2, 3}, k in {2, 3, 4}, uniform
  and planted) for the working tree's bnb and the bnb of ``--before`` (loaded from git), one
  time limit each: solved count, median time, final gaps. ``--quick`` keeps m <= 80, k <= 3.

Planted sets: k random hyperplanes through the origin shifted by 0, 1, ..., k-1 along their
normals, standard-normal points projected onto a random one, Gaussian noise ``--sigma``
(:func:`solvopt.khc.samples.planted`). Uniform sets: the unit cube.

The machine is shared (2 cores, 8 engineers at once): absolute times are noisy; the before/after
comparison runs side by side in one process. OpenBLAS is pinned to one thread.

    python benchmarks/khc_scale.py --part gap --limit 300
    python benchmarks/khc_scale.py --part bnb --limit 20 --quick
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import datetime
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from solvopt.dsl import HyperplaneClustering
from solvopt.khc.geometry import assignment_cost
from solvopt.khc.heuristics import kplane
from solvopt.khc.samples import planted

RESULTS = Path(__file__).resolve().parent / "results"
GAP_RUNS = [(10_000, 2, 2, "planted"), (10_000, 3, 3, "planted"), (10_000, 2, 2, "uniform"), (10_000, 3, 3, "uniform"),
            (100_000, 2, 2, "planted"), (100_000, 3, 3, "planted"), (100_000, 2, 2, "uniform")]
HEURISTIC_RUNS = [(100_000, 3, 3), (100_000, 3, 5), (100_000, 50, 10)]


def points_of(m: int, n: int, k: int, kind: str, sigma: float, seed: int) -> np.ndarray:
    if kind == "planted":
        return planted(m, n, k, sigma, seed)[0]
    return np.random.default_rng(seed).uniform(0, 1, (m, n))


def machine() -> str:
    return f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}"


# --- certified gaps ----------------------------------------------------------------------------
def run_gap(limit: float, sigma: float, workers: int, quick: bool) -> list[dict]:
    rows = []
    for m, n, k, kind in GAP_RUNS[:4] if quick else GAP_RUNS:
        pts = points_of(m, n, k, kind, sigma, seed=m + n + k)
        r = HyperplaneClustering(pts, k).solve("partition-bound", time_limit=limit, workers=workers)
        row = {"m": m, "n": n, "k": k, "kind": kind, "objective": r.objective, "bound": r.bound, "gap": r.gap,
               "time": r.stats["wall_time"], "termination": r.termination.value,
               "group_size": r.stats.get("group_size"), "groups": r.stats.get("groups"),
               "groups_proven": r.stats.get("groups_proven"), "partitions": r.stats.get("partitions_solved"),
               "trace": [(s, (r.objective - b) / r.objective) for s, b in r.stats.get("bound_trace", [])]}
        if kind == "planted":
            row["planted_cost"] = assignment_cost(pts, planted(m, n, k, sigma, m + n + k)[1], k)
        rows.append(row)
        print(f"gap m={m} n={n} k={k} {kind}: gap {100 * r.gap:.2f}% in {row['time']:.0f} s "
              f"(groups of {row['group_size']}: {row['groups_proven']}/{row['groups']} proven, "
              f"{row['partitions']} partitions)", flush=True)
    return rows


# --- heuristic -------------------------------------------------------------------------------
def run_heuristic(sigma: float, repeats: int) -> list[dict]:
    kplane(np.random.default_rng(0).normal(size=(50, 2)), 2)
    rows = []
    for m, n, k in HEURISTIC_RUNS:
        pts, truth = planted(m, n, k, sigma, seed=m + n + k)
        reference = assignment_cost(pts, truth, k)
        times, costs = [], []
        for r in range(repeats):
            start = time.perf_counter()
            _, cost = kplane(pts, k, seed=r)
            times.append(time.perf_counter() - start)
            costs.append(cost / reference)
        rows.append({"m": m, "n": n, "k": k, "median_time": statistics.median(times),
                     "objective_over_planted": statistics.median(costs)})
        print(f"heuristic m={m} n={n} k={k}: {rows[-1]['median_time']:.2f} s, "
              f"objective / planted {rows[-1]['objective_over_planted']:.4f}", flush=True)
    return rows


# --- bnb before / after ----------------------------------------------------------------------
def bnb_of_commit(rev: str):
    """The solve_bnb of solvopt/khc/bnb.py at ``rev``, loaded as a module inside the package."""
    root = Path(__file__).resolve().parent.parent
    source = subprocess.run(["git", "show", f"{rev}:solvopt/khc/bnb.py"], cwd=root, check=True,
                            capture_output=True, text=True).stdout
    folder = Path(tempfile.mkdtemp(prefix="bnb_before_"))
    path = folder / "bnb_before.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("solvopt.khc.bnb_before", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.solve_bnb


def run_bnb(limit: float, before: str, quick: bool, sigma: float) -> list[dict]:
    from solvopt.khc.bnb import solve_bnb
    solvers = {"before": bnb_of_commit(before), "after": solve_bnb}
    sizes = [40, 60, 80] if quick else [40, 60, 80, 100, 150]
    ks = [2, 3] if quick else [2, 3, 4]
    rows = []
    for solve in solvers.values():   # compile / load both kernels before timing
        solve(np.random.default_rng(0).normal(size=(12, 2)), 2, restarts=1)
        solve(np.random.default_rng(0).normal(size=(12, 3)), 2, restarts=1)
    for kind in ("planted", "uniform"):
        for m in sizes:
            for n in (2, 3):
                for k in ks:
                    pts = points_of(m, n, k, kind, 10 * sigma, seed=1000 * m + 10 * n + k)
                    row = {"m": m, "n": n, "k": k, "kind": kind}
                    for name, solve in solvers.items():
                        start = time.perf_counter()
                        out = solve(pts, k, time_limit=limit)
                        seconds = time.perf_counter() - start
                        gap = (out.objective - out.bound) / max(out.objective, 1e-300)
                        row[name] = {"time": seconds, "solved": bool(out.complete), "objective": out.objective,
                                     "bound": out.bound, "gap": gap, "nodes": out.nodes}
                    rows.append(row)
                    print(f"bnb {kind} m={m} n={n} k={k}: " + ", ".join(
                        f"{name} {row[name]['time']:.1f} s gap {100 * row[name]['gap']:.1f}%" for name in solvers),
                        flush=True)
    return rows


# --- report ------------------------------------------------------------------------------------
def markdown(data: dict) -> str:
    lines = ["# k-HC2 at real sizes", "",
             f"Generated {data['date']} on a shared machine ({data['machine']}; 8 engineers working at once, "
             "so absolute times are inflated and noisy).", ""]
    if data.get("gap"):
        lines += [f"## Certified gaps: `partition-bound`, {data['limit']:g} s limit, workers={data['workers']}", "",
                  "Incumbent: k-plane (10 restarts). Bound: the best over stratified partitions of the sum of the "
                  "groups' bnb optima (or stopped bnb bounds), every group a spatially even sample; group size "
                  "calibrated to bnb's time. Gap = (objective - bound) / objective.", "",
                  "| m | n | k | data | objective | bound | gap | time s | group size | groups proven | partitions |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in data["gap"]:
            lines.append(f"| {r['m']} | {r['n']} | {r['k']} | {r['kind']} | {r['objective']:.6g} | {r['bound']:.6g} | "
                         f"{100 * r['gap']:.2f}% | {r['time']:.0f} | {r['group_size']} | "
                         f"{r['groups_proven']}/{r['groups']} | {r['partitions']} |")
        lines += ["", "![certified gap against time](khc_scale.png)", ""]
    if data.get("heuristic"):
        lines += ["## Heuristic (k-plane, 10 restarts) on planted sets", "",
                  f"Measured {data.get('heuristic_date', data['date'])} (default options: from n = 5 on with the "
                  "projection-pursuit start; `benchmarks/khc_heuristic.py` compares with and without it).", "",
                  "| m | n | k | median time s | objective / planted cost |", "|---|---|---|---|---|"]
        lines += [f"| {r['m']} | {r['n']} | {r['k']} | {r['median_time']:.2f} | {r['objective_over_planted']:.4f} |"
                  for r in data["heuristic"]]
        lines.append("")
    if data.get("bnb"):
        rows = data["bnb"]
        lines += [f"## Exact bnb: working tree against `{data['before']}`, {data['bnb_limit']:g} s limit, "
                  "one thread", "",
                  f"Measured {data.get('bnb_date', data['date'])}.", "",
                  "| data | m | n | k | before: time s / gap / nodes | after: time s / gap / nodes |",
                  "|---|---|---|---|---|---|"]
        for r in rows:
            cells = [f"{r[s]['time']:.1f} / {100 * r[s]['gap']:.1f}%{'' if r[s]['solved'] else ' (stopped)'} / "
                     f"{r[s].get('nodes', '-')}" for s in ("before", "after")]
            lines.append(f"| {r['kind']} | {r['m']} | {r['n']} | {r['k']} | {cells[0]} | {cells[1]} |")
        solved = {s: sum(r[s]["solved"] for r in rows) for s in ("before", "after")}
        both = [r for r in rows if r["before"]["solved"] and r["after"]["solved"]]
        ratio = statistics.median(r["after"]["time"] / r["before"]["time"] for r in both) if both else float("nan")
        slow = [r for r in both if r["before"]["time"] >= 1.0]
        slow_ratio = statistics.median(r["after"]["time"] / r["before"]["time"] for r in slow) if slow else float("nan")
        lines += ["", f"Solved: before {solved['before']} / {len(rows)}, after {solved['after']} / {len(rows)}; "
                      f"median time ratio after / before where both solved: {ratio:.2f} ({len(both)} instances), "
                      f"where before took 1 s or more: {slow_ratio:.2f} ({len(slow)} instances; the smaller ones "
                      "are mostly the heuristic's time).", ""]
    return "\n".join(lines) + "\n"


def plot(data: dict, path: Path) -> None:
    from plots import pyplot_or_none
    plt = pyplot_or_none()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for r in data["gap"]:
        if not r["trace"]:
            continue
        s, g = zip(*r["trace"])
        ax.step(s, [100 * max(x, 1e-4) for x in g], where="post",
                label=f"m={r['m']:.0e} n={r['n']} k={r['k']} {r['kind']}")
    ax.set_yscale("log")
    ax.set_xlabel("seconds")
    ax.set_ylabel("certified gap %")
    ax.set_title("partition-bound: certified gap against time")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("gap", "heuristic", "bnb", "all"), default="all")
    parser.add_argument("--limit", type=float, default=300.0, help="time limit of each certified-gap run")
    parser.add_argument("--bnb-limit", type=float, default=300.0, help="time limit of each bnb run")
    parser.add_argument("--before", default="c2a881f", help="git revision of the 'before' bnb")
    parser.add_argument("--workers", type=int, default=1, help="processes solving groups")
    parser.add_argument("--sigma", type=float, default=0.01)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    out = RESULTS / "khc_scale.json"
    data = json.loads(out.read_text()) if out.exists() else {}   # parts not rerun keep their numbers
    if args.part in ("gap", "all"):
        data["gap"] = run_gap(args.limit, args.sigma, args.workers, args.quick)
        data.update(limit=args.limit, workers=args.workers)
    if args.part in ("heuristic", "all"):
        data["heuristic"] = run_heuristic(args.sigma, args.repeats)
    if args.part in ("bnb", "all"):
        data["bnb"] = run_bnb(args.bnb_limit, args.before, args.quick, args.sigma)
        data.update(before=args.before, bnb_limit=args.bnb_limit)
    now = f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}"
    data[f"{args.part}_date"] = now   # a part rerun alone says when; the header keeps the full run's date
    if args.part == "all":
        data.update(date=now, machine=machine(), command="python benchmarks/khc_scale.py " + " ".join(sys.argv[1:]))
    RESULTS.mkdir(exist_ok=True)
    out.write_text(json.dumps(data, indent=1))
    (RESULTS / "khc_scale.md").write_text(markdown(data))
    print(f"wrote {out} and khc_scale.md")
    if data.get("gap"):
        plot(data, RESULTS / "khc_scale.png")


if __name__ == "__main__":
    main()
