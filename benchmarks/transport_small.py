"""Small exact solves, call for call: ``wasserstein(x, y, p)`` (methods ``exact`` and ``auto``)
against ``ot.emd2(a, b, cdist(x, y) ** p)`` (POT with its cost matrix: like for like).

Uniform points in the unit square, n = m, uniform masses. For each n: 20 warm-up calls of each,
then the median CPU time (``time.process_time``) of ``--calls`` calls, and the ratio ours / POT:

    nice python benchmarks/transport_small.py --sizes 50 100 200 --calls 200
"""
from __future__ import annotations

import argparse
import statistics
import time


def median_ms(fn, calls: int) -> float:
    for _ in range(20):
        fn()
    times = []
    for _ in range(calls):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return statistics.median(times) * 1e3


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[50, 100, 200])
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--p", type=float, default=2.0)
    args = ap.parse_args(argv)
    import numpy as np
    import ot
    from scipy.spatial.distance import cdist

    from solvopt.transport.api import wasserstein
    p = args.p
    print("| n | p | ot.emd2 + cdist (ms) | exact (ms) | exact / POT | auto (ms) | auto / POT |")
    print("|---|---|---|---|---|---|---|")
    for n in args.sizes:
        rng = np.random.default_rng(0)
        x, y = rng.random((n, 2)), rng.random((n, 2))
        a = np.full(n, 1.0 / n)
        pot = median_ms(lambda: ot.emd2(a, a, cdist(x, y) ** p), args.calls)
        exact = median_ms(lambda: wasserstein(x, y, p, method="exact"), args.calls)
        auto = median_ms(lambda: wasserstein(x, y, p), args.calls)
        print(f"| {n} | {p:g} | {pot:.3f} | {exact:.3f} | {exact / pot:.2f} | {auto:.3f} | {auto / pot:.2f} |",
              flush=True)


if __name__ == "__main__":
    main()
