"""Where ``auto`` hands finite-p point clouds from ``exact`` to ``sparse-exact``: the two side by side.

For n = m points, uniform clouds in [0, 1]^2 and [0, 1]^3 and the RGB colours of n pixels of two
photos (scikit-learn's sample images), p = 1 and 2, each method solves the same points in one
process, taking turns; recorded: the median CPU time (``time.process_time``) of ``repeats`` solves
and its ratio exact / sparse-exact (above 1: sparse-exact is faster). Every solve must end OPTIMAL.
The crossover sets ``solvopt.transport.auto.DENSE_PAIRS``.

    nice python benchmarks/transport_dense_limit.py      # n = 3000, 4000, 5000; a few minutes
"""
from __future__ import annotations

import argparse
import datetime
import os
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results" / "transport_dense_limit.md"


def clouds(kind: str, n: int, d: int):
    rng = np.random.default_rng([n, d])
    if kind == "colours":
        from sklearn.datasets import load_sample_images
        china, flower = (img.reshape(-1, 3).astype(np.float64) / 255.0 for img in load_sample_images().images)
        return china[rng.choice(len(china), n, replace=False)], flower[rng.choice(len(flower), n, replace=False)]
    return rng.random((n, d)), rng.random((n, d))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[3000, 4000, 5000])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    from solvopt.dsl import Transport
    warm = clouds("uniform", 300, 2)
    for method in ("exact", "sparse-exact"):                 # kernels compiled before any timing
        Transport(*warm, p=2).solve(method)
    rows = ["| n | points | d | p | exact CPU (s) | sparse-exact CPU (s) | exact / sparse-exact |",
            "| ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
    print("\n".join(rows), flush=True)
    load = [os.getloadavg()[0]]
    for n in args.sizes:
        for kind, d in (("uniform", 2), ("uniform", 3), ("colours", 3)):
            x, y = clouds(kind, n, d)
            for p in (1, 2):
                times: dict[str, list[float]] = {"exact": [], "sparse-exact": []}
                for _ in range(args.repeats):
                    for method in times:
                        start = time.process_time()
                        result = Transport(x, y, p=p).solve(method)
                        times[method].append(time.process_time() - start)
                        if result.termination.value != "optimal":
                            raise SystemExit(f"{method} ended {result.termination.value} at n = {n}, {kind}, p = {p}")
                e, s = float(np.median(times["exact"])), float(np.median(times["sparse-exact"]))
                rows.append(f"| {n} | {kind} | {d} | {p} | {e:.2f} | {s:.2f} | {e / s:.2f} |")
                print(rows[-1], flush=True)
    load.append(os.getloadavg()[0])
    if not args.no_write:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        RESULTS.write_text(
            "# `exact` against `sparse-exact` around `auto`'s dense limit\n\n"
            f"`nice python benchmarks/transport_dense_limit.py --sizes {' '.join(map(str, args.sizes))} "
            f"--repeats {args.repeats}`, recorded {stamp} on a shared 2-core machine (load average "
            f"{load[0]:.1f} at the start, {load[1]:.1f} at the end). Median CPU seconds of {args.repeats} solves "
            "each, taking turns in one process; every solve ended OPTIMAL.\n\n" + "\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
