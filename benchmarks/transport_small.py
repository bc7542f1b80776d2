"""Small exact solves, call for call against POT in one process: ``wasserstein(x, y, p)``
(methods ``exact`` and ``auto``) against ``ot.emd2`` and ``ot.emd`` on ``cdist(x, y) ** p``, and
``emd2(a, b, M)`` against ``ot.emd2(a, b, M)`` and ``emd(a, b, M)`` (the plan) against ``ot.emd(a, b, M)`` on
the same ready cost matrix (like for like).

Points (``--cases``) uniform in the unit square (``uniform2``, the default) or cube (``uniform3``), or
the colours of n pixels drawn from each of scikit-learn's two sample images (``pixels``, as in
``benchmarks/transport.py``: many repeated points and tied distances); n = m, masses uniform or
random (``--masses``). For
each case: 20 warm-up calls of each, then ``--calls`` rounds, each timing one call of every
contender in turn (so a change of load hits all of them alike); the median CPU time
(``time.process_time``) per call and the ratios ours / POT. Ours includes building and checking
the model, the solve, the certified bound, the plan's checks and the Result; POT's the cost
matrix (except in the ``emd2(M)`` and ``emd(M)`` columns, where both get M)::

    nice python benchmarks/transport_small.py --sizes 20 50 100 200 --p 1 2 --masses uniform random --calls 300
    nice python benchmarks/transport_small.py --cases uniform3 pixels --masses uniform --calls 300

Results: ``benchmarks/results/transport_small.md``.
"""
from __future__ import annotations

import argparse
import statistics
import time


def medians_ms(contenders: dict, calls: int) -> dict:
    """Median CPU time per call (ms) of each contender, timed round-robin."""
    for fn in contenders.values():
        for _ in range(20):
            fn()
    times: dict = {name: [] for name in contenders}
    clock = time.process_time
    for _ in range(calls):
        for name, fn in contenders.items():
            t0 = clock()
            fn()
            times[name].append(clock() - t0)
    return {name: statistics.median(v) * 1e3 for name, v in times.items()}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[20, 50, 100, 200])
    ap.add_argument("--p", type=float, nargs="+", default=[1.0, 2.0])
    ap.add_argument("--masses", nargs="+", choices=["uniform", "random"], default=["uniform", "random"])
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--cases", nargs="+", choices=["uniform2", "uniform3", "pixels"], default=["uniform2"])
    args = ap.parse_args(argv)
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import numpy as np
    from scipy.spatial.distance import cdist
    from transport import points

    from solvopt.transport.api import emd, emd2, wasserstein
    from solvopt.transport.exact import import_pot
    ot = import_pot()
    print("| case | n | masses | p | ot.emd2 + cdist (ms) | ot.emd + cdist (ms) | exact (ms) | exact / ot.emd2 | "
          "exact / ot.emd | auto / ot.emd2 | ot.emd2(M) (ms) | emd2(M) (ms) | emd2(M) / ot.emd2(M) | "
          "ot.emd(M) (ms) | emd(M) (ms) | emd(M) / ot.emd(M) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for case, n, masses, p in ((c, n, w, p) for c in args.cases for n in args.sizes for w in args.masses
                       for p in args.p):
        rng = np.random.default_rng(0)
        x, y = points(case, n) if case != "uniform2" else (rng.random((n, 2)), rng.random((n, 2)))
        if masses == "uniform":
            a = b = np.full(n, 1.0 / n)
        else:
            a, b = rng.random(n) + 0.1, rng.random(n) + 0.1
            a, b = a / a.sum(), b / b.sum()
        M = cdist(x, y) ** p
        t = medians_ms({
            "pot2": lambda: ot.emd2(a, b, cdist(x, y) ** p),
            "pot": lambda: ot.emd(a, b, cdist(x, y) ** p),
            "exact": lambda: wasserstein(x, y, p, a, b, method="exact"),
            "auto": lambda: wasserstein(x, y, p, a, b),
            "potM": lambda: ot.emd2(a, b, M),
            "oursM": lambda: emd2(a, b, M),
            "potP": lambda: ot.emd(a, b, M),
            "oursP": lambda: emd(a, b, M),
        }, args.calls)
        print(f"| {case} | {n} | {masses} | {p:g} | {t['pot2']:.3f} | {t['pot']:.3f} | {t['exact']:.3f} | "
              f"{t['exact'] / t['pot2']:.2f} | {t['exact'] / t['pot']:.2f} | {t['auto'] / t['pot2']:.2f} | "
              f"{t['potM']:.3f} | {t['oursM']:.3f} | {t['oursM'] / t['potM']:.2f} | "
              f"{t['potP']:.3f} | {t['oursP']:.3f} | {t['oursP'] / t['potP']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
