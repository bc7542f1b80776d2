"""k-HC2 k-plane heuristic (``solvopt.khc.heuristics.kplane``) on large planted instances.

Each instance draws k random hyperplanes through the origin shifted by 0, 1, ..., k-1 along
their normals, m standard-normal points projected onto a random one of them, plus Gaussian
noise of standard deviation ``sigma``. The planted assignment's cost is a reference (the optimum
is at most that). Reported: median wall time of ``--repeats`` runs (default options: 10
restarts), the objective over the planted cost, and the time per point; side by side with and
without the projection-pursuit start (``pursuit=False``: the heuristic before the latest
step), in one process. The n = 50, k = 10 rows are repeated over ``--seeds`` generator seeds.

The machine is shared (2 cores): compare ratios, not absolute times. OpenBLAS is pinned to
one thread (its threads spin on tiny eigenproblems on a loaded machine).

    python benchmarks/khc_heuristic.py              # writes benchmarks/results/khc_heuristic.{md,json,png}
    python benchmarks/khc_heuristic.py --quick      # the smaller sizes only
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import datetime
import json
import statistics
import time
from pathlib import Path

import numpy as np

from solvopt.khc.geometry import assignment_cost
from solvopt.khc.heuristics import kplane
from solvopt.khc.samples import planted

RESULTS = Path(__file__).resolve().parent / "results"
SIZES = [(1_000, 3, 3), (10_000, 10, 3), (100_000, 3, 5), (100_000, 20, 3), (100_000, 50, 3), (10_000, 20, 6),
         (50_000, 30, 8), (10_000, 50, 10), (100_000, 50, 10)]
QUICK = SIZES[:3]
HARD = {(10_000, 50, 10), (100_000, 50, 10)}   # run over --seeds generator seeds


def run(points: np.ndarray, k: int, reference: float, repeats: int, pursuit) -> tuple[float, float]:
    """(median seconds, median objective / planted cost) over ``repeats`` kplane seeds."""
    times, ratios = [], []
    for r in range(repeats):
        start = time.perf_counter()
        _, cost = kplane(points, k, seed=r, pursuit=pursuit)
        times.append(time.perf_counter() - start)
        ratios.append(cost / reference)
    return statistics.median(times), statistics.median(ratios)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sigma", type=float, default=0.01)
    parser.add_argument("--seeds", type=int, default=5, help="generator seeds for the n = 50, k = 10 rows")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--plot-only", action="store_true", help="redraw the plot from the recorded JSON")
    args = parser.parse_args()
    if args.plot_only:
        plot(json.loads((RESULTS / "khc_heuristic.json").read_text()), RESULTS / "khc_heuristic.png")
        return
    rows = []
    kplane(np.random.default_rng(0).normal(size=(50, 2)), 2)  # warm-up
    for m, n, k in QUICK if args.quick else SIZES:
        seeds = [m + n + k + s for s in range(args.seeds if (m, n, k) in HARD else 1)]
        for seed in seeds:
            points, truth = planted(m, n, k, args.sigma, seed=seed)
            reference = assignment_cost(points, truth, k)
            with_t, with_r = run(points, k, reference, args.repeats, "auto")
            without_t, without_r = run(points, k, reference, args.repeats, False)
            rows.append((m, n, k, seed, with_t, with_r, 1e6 * with_t / m, without_t, without_r))
            print(f"m={m} n={n} k={k} seed={seed}: {with_t:.2f} s, objective / planted = {with_r:.4f}; "
                  f"without the pursuit start {without_t:.2f} s, {without_r:.4f}", flush=True)
    lines = [
        "# k-HC2 k-plane heuristic on planted instances",
        "",
        f"Generated {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC} by "
        f"`python benchmarks/khc_heuristic.py --repeats {args.repeats} --sigma {args.sigma:g} --seeds {args.seeds}"
        f"{' --quick' if args.quick else ''}` on a shared 2-core machine (load average at the end: "
        f"{os.getloadavg()[0]:.1f}). Default options (10 restarts; above 2 x max(4000, 20 k n) points the "
        "restarts run on a subsample and the best start is refined on all points; the pursuit start from "
        "n = 5 on, its planes searched on a sample of max(20000, 40 n k) points). Objective / planted < 1 "
        "is possible (the planted assignment is not optimal under noise); > 1 is a local optimum. "
        "Medians over the kplane seeds 0..repeats-1; both columns in one process.",
        "",
        "| m | n | k | generator seed | median time s | objective / planted cost | us per point "
        "| without pursuit: time s | without pursuit: objective / planted |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [f"| {m} | {n} | {k} | {seed} | {t:.2f} | {ratio:.4f} | {per:.1f} | {t0:.2f} | {r0:.4f} |"
              for m, n, k, seed, t, ratio, per, t0, r0 in rows]
    lines += ["", "![objective over the planted cost, with and without the pursuit start](khc_heuristic.png)"]
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "khc_heuristic.md"
    out.write_text("\n".join(lines) + "\n")
    keys = ("m", "n", "k", "seed", "time", "ratio", "us_per_point", "time_without", "ratio_without")
    records = [dict(zip(keys, row)) for row in rows]
    (RESULTS / "khc_heuristic.json").write_text(json.dumps(records, indent=1))
    plot(records, RESULTS / "khc_heuristic.png")
    print(f"wrote {out}")


def plot(records: list[dict], path: Path) -> None:
    """Objective / planted cost per instance (log scale), with and without the pursuit start."""
    from plots import pyplot_or_none
    plt = pyplot_or_none()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(10, 4.5))
    x = np.arange(len(records))
    ax.scatter(x, [r["ratio_without"] for r in records], marker="x", color="tab:orange", label="seeded restarts only")
    ax.scatter(x, [r["ratio"] for r in records], marker="o", color="tab:blue",
               label="with the projection-pursuit start")
    ax.axhline(1.01, color="gray", lw=0.8, ls="--", label="1% above the planted cost")
    ax.set_yscale("log")
    ax.set_xticks(x, [f"m={r['m']:.0e}, n={r['n']}, k={r['k']}" for r in records], fontsize=7, rotation=60,
                  ha="right")
    ax.set_ylabel("objective / planted cost")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
