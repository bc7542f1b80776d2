"""approx's graphs side by side: the two-hop graph against the multiscale pricing, time and certified gap.

For each case, size, p and kind of masses, ``Transport(x, y, a=a, b=b, p=p).solve("approx", graph=g)``
with g = "two-hop" and "multiscale" in turn, in one process (wall seconds of one solve each, after
a warm-up solve), and the reported gap 1 - bound / W_p(plan) of each (the default dual certificate).
With ``--truth`` the exact optimum (``ot.emd2`` on the dense matrix, where it fits) gives the true
gap 1 - W_p(exact) / W_p(plan) as well. Cases: uniform clouds in the unit square or cube
(``uniform2``, ``uniform3``), the colours of n pixels drawn from each of scikit-learn's two sample
images (``pixels``, as in ``benchmarks/transport.py``), and a 5-component Gaussian mixture against
a uniform target in d = 2 (``mixture``). Masses: uniform, or drawn uniformly in [0.1, 1.1]
(``random``; run for p = 1 on uniform2 and pixels). This is the measurement behind
``graph="auto"``'s choice of the multiscale pricing from 10^6 pairs::

    nice python benchmarks/transport_graphs.py --sizes 2000 5000 10000 30000
    nice python benchmarks/transport_graphs.py --sizes 5000 10000 --cases pixels mixture --truth

Writes a markdown table to stdout (results: ``benchmarks/results/transport_graphs.md``).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

CASES = ("uniform2", "uniform3", "pixels", "mixture")


def mixture(n: int, seed: int = 0):
    """Five Gaussian blobs (sd 0.05) against uniform points in the unit square."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(size=(5, 2))
    return centres[rng.integers(0, 5, n)] + 0.05 * rng.normal(size=(n, 2)), rng.uniform(size=(n, 2))


def clouds(case: str, n: int):
    if case == "mixture":
        return mixture(n)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from transport import points
    return points(case, n)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[2000, 5000, 10000])
    ap.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    ap.add_argument("--ps", type=float, nargs="+", default=[1.0, 2.0])
    ap.add_argument("--truth", action="store_true", help="the true gap from ot.emd2 (n <= 10^4)")
    args = ap.parse_args(argv)
    from solvopt.dsl.transport import Transport
    ot = None
    if args.truth:
        from solvopt.transport.exact import import_pot
        ot = import_pot()
    rng = np.random.default_rng(0)
    x, y = rng.random((300, 2)), rng.random((300, 2))
    for g in ("two-hop", "multiscale"):                 # warm-up: kernels loaded and compiled
        Transport(x, y[:299], p=1).solve("approx", graph=g)
    head = "| case | n | p | masses | two-hop (s) | gap | multiscale (s) | gap |"
    print(head + (" true gap: two-hop | multiscale |" if ot else ""))
    print("|" + "---|" * (head.count("|") - 1 + (2 if ot else 0)), flush=True)
    for n in args.sizes:
        for case in args.cases:
            x, y = clouds(case, n)
            for p in args.ps:
                for masses in ("uniform", "random"):
                    if masses == "random" and (p != 1.0 or case not in ("uniform2", "pixels")):
                        continue
                    a = b = None
                    if masses == "random":
                        draw = np.random.default_rng(1)
                        a, b = draw.uniform(0.1, 1.1, n), draw.uniform(0.1, 1.1, n)
                        b *= a.sum() / b.sum()
                    row, objectives = [case, n, f"{p:g}", masses], []
                    for g in ("two-hop", "multiscale"):
                        t0 = time.perf_counter()
                        r = Transport(x, y, a=a, b=b, p=p).solve("approx", graph=g)
                        row += [f"{time.perf_counter() - t0:.2f}", f"{100 * (1 - r.bound / r.objective):.2f}%"]
                        objectives.append(r.objective)
                    if ot is not None:
                        if n <= 10000:
                            M = ot.dist(x, y, metric="euclidean") ** p
                            wa = np.full(n, 1 / n) if a is None else a / a.sum()
                            wb = np.full(n, 1 / n) if b is None else b / b.sum()
                            mass = 1.0 if a is None else float(a.sum())
                            best = (mass * ot.emd2(wa, wb, M, numItermax=10**9)) ** (1 / p)
                            row += [f"{100 * (1 - best / o):.2f}%" for o in objectives]
                        else:
                            row += ["-", "-"]
                    print("| " + " | ".join(map(str, row)) + " |", flush=True)


if __name__ == "__main__":
    main()
