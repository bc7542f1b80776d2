"""Exact W_p beyond the dense matrix: method ``sparse-exact`` against POT's ``ot.emd`` (and ``exact``).

Uniform points in the unit square / cube, n = m, uniform masses (or random ones), p = 1 and 2 (euclidean). Every
measurement runs in a fresh Python process (its peak RSS is that run's own): time of the solve
(for ``ot.emd`` including the n x m cost matrix, which it needs), W_p, the certified bound of
sparse-exact and its status. Medians over ``--repeats`` runs, each on its own seed.

    python benchmarks/transport_exact_scale.py --sizes 2000 5000 10000 --methods sparse-exact pot exact
    python benchmarks/transport_exact_scale.py --sizes 30000 100000 --methods sparse-exact --repeats 1
    python benchmarks/transport_exact_scale.py --sizes 1000 2000 --masses random --methods sparse-exact exact

Writes a markdown table to stdout (and to ``--out`` when given).

``--inprocess`` compares the default method (``auto``) and ``sparse-exact`` (or the methods of
``--inprocess-methods``) with ``ot.emd`` in one process, after a warm-up solve (imports and compiled
kernels loaded), on uniform, random-mass and tie-heavy pixel-colour clouds and on the real colours
of two images (``--kinds`` picks some); it reports the medians over seeds of the process's CPU time
(steadier than wall-clock time on a loaded machine; ot.emd runs on one thread) and the ratio
ours / ot.emd:

    python benchmarks/transport_exact_scale.py --inprocess --sizes 500 1000 2000 3000
    python benchmarks/transport_exact_scale.py --inprocess --sizes 5000 --kinds images --inprocess-methods exact
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time


def one(method: str, n: int, dim: int, p: float, seed: int, masses: str = "uniform") -> dict:
    """One measurement in this process (called in a child)."""
    import resource

    import numpy as np
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(size=(n, dim)), rng.uniform(size=(n, dim))
    a = b = np.full(n, 1.0 / n)
    if masses == "random":               # not an assignment: exact solves a min-cost flow
        a, b = rng.uniform(0.5, 1.5, n), rng.uniform(0.5, 1.5, n)
        a, b = a / a.sum(), b / b.sum()
    out = {"method": method, "n": n, "dim": dim, "p": p, "seed": seed, "masses": masses}
    if method == "pot":
        import ot
        t0 = time.perf_counter()
        cost = ot.dist(x, y, metric="euclidean") ** p
        plan = ot.emd(a, b, cost, numItermax=10**12)
        out["time"] = time.perf_counter() - t0
        out["value"] = float(np.sum(plan * cost)) ** (1.0 / p)
    else:
        from solvopt.dsl import Transport
        model = Transport(x, y, a=a, b=b, p=p)
        t0 = time.perf_counter()
        r = model.solve(method=method)
        out["time"] = time.perf_counter() - t0
        out.update(value=r.objective, bound=r.bound, status=str(r.termination.value),
                   rounds=r.stats.get("rounds"), candidates=r.stats.get("candidates"))
    out["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def cloud(kind: str, n: int, dim: int, seed: int):
    """(x, y, a, b): uniform points with uniform or random masses, a pixel-colour-like cloud
    (integer colours in 0..15 per channel: many repeated points and tied distances), or the real
    pixel colours of two different images ("images": scikit-learn's sample images china.jpg and
    flower.jpg, n pixels drawn from each, as ``benchmarks/transport.py`` draws them)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    if kind == "images":
        sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
        from transport import points
        x, y = points("pixels", n, seed)
        return x, y, np.full(n, 1.0 / n), np.full(n, 1.0 / n)
    if kind == "pixels":
        x, y = rng.integers(0, 16, (n, dim)).astype(float), rng.integers(0, 16, (n, dim)).astype(float)
    else:
        x, y = rng.uniform(size=(n, dim)), rng.uniform(size=(n, dim))
    a = b = np.full(n, 1.0 / n)
    if kind == "random":
        a, b = rng.uniform(0.5, 1.5, n), rng.uniform(0.5, 1.5, n)
        a, b = a / a.sum(), b / b.sum()
    return x, y, a, b


CASES = [("uniform", 2, 1.0), ("uniform", 2, 2.0), ("uniform", 3, 1.0), ("uniform", 3, 2.0),
         ("random", 2, 1.0), ("random", 2, 2.0), ("pixels", 3, 1.0), ("pixels", 3, 2.0),
         ("images", 3, 1.0), ("images", 3, 2.0)]


def in_process(sizes, repeats: int, methods=("auto", "sparse-exact"), kinds=None) -> str:
    """Ours against ot.emd in this process (see the module docstring): one markdown table."""
    import numpy as np
    import ot

    from solvopt.dsl import Transport
    cases = [c for c in CASES if kinds is None or c[0] in kinds]
    clock = time.process_time        # CPU seconds of the process (all its threads): steadier than
                                     # wall-clock time on a shared, loaded machine
    for kind, dim, p in cases:              # warm-up: imports and compiled kernels
        x, y, a, b = cloud(kind, 60, dim, 99)
        for method in methods:
            Transport(x, y, a=a, b=b, p=p).solve(method)
    head = ("| n | masses | d | p | ot.emd (s) | " + " | ".join(f"{m} (s) | {m} / ot.emd" for m in methods)
            + " | auto ran | statuses |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for n in sizes:
        for kind, dim, p in cases:
            times: dict = {"pot": []}
            ran, statuses = set(), set()
            for seed in range(repeats):
                x, y, a, b = cloud(kind, n, dim, seed)
                t0 = clock()
                cost = ot.dist(x, y, metric="euclidean") ** p
                plan = ot.emd(a, b, cost, numItermax=10**12)
                times["pot"].append(clock() - t0)
                reference = float(np.sum(plan * cost)) ** (1.0 / p)
                del cost, plan
                for method in methods:
                    model = Transport(x, y, a=a, b=b, p=p)
                    t0 = clock()
                    r = model.solve(method)
                    times.setdefault(method, []).append(clock() - t0)
                    statuses.add(r.termination.value)
                    if abs(r.objective - reference) > 1e-6 * reference:
                        statuses.add(f"{method} differs from ot.emd: {r.objective!r} vs {reference!r}")
                    if method == "auto":
                        ran.add(f"{r.stats['auto_method']} ({r.stats.get('engine', '')})")
            pot = statistics.median(times["pot"])
            cells = " | ".join(f"{statistics.median(times[m]):.3f} | {statistics.median(times[m]) / pot:.2f}"
                               for m in methods)
            lines.append(f"| {n} | {kind} | {dim} | {p:g} | {pot:.3f} | {cells} | {', '.join(sorted(ran))} | "
                         f"{', '.join(sorted(statuses))} |")
            print(lines[-1], file=sys.stderr, flush=True)
    return "\n".join(lines)


def run_child(method, n, dim, p, seed, timeout, masses="uniform"):
    cmd = [sys.executable, __file__, "--one", method, str(n), str(dim), str(p), str(seed), masses]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"method": method, "n": n, "dim": dim, "p": p, "seed": seed, "error": f"over {timeout} s"}
    if done.returncode != 0:
        return {"method": method, "n": n, "dim": dim, "p": p, "seed": seed, "error": done.stderr.strip()[-200:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[2000, 5000, 10000])
    ap.add_argument("--dims", type=int, nargs="+", default=[2, 3])
    ap.add_argument("--ps", type=float, nargs="+", default=[1.0, 2.0])
    ap.add_argument("--methods", nargs="+", default=["sparse-exact", "pot"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--masses", choices=("uniform", "random"), default="uniform",
                    help="uniform 1/n (exact: an assignment) or random in [0.5, 1.5], normalised (a flow)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per run")
    ap.add_argument("--out", help="write the markdown table here too")
    ap.add_argument("--inprocess", action="store_true",
                    help="auto and sparse-exact against ot.emd in this process (uniform, random, pixel clouds)")
    ap.add_argument("--inprocess-methods", nargs="+", default=["auto", "sparse-exact"],
                    help="the methods --inprocess compares with ot.emd")
    ap.add_argument("--kinds", nargs="+", choices=sorted({c[0] for c in CASES}),
                    help="--inprocess: only these clouds (default: all)")
    ap.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.inprocess:
        table = in_process(args.sizes, args.repeats, tuple(args.inprocess_methods), args.kinds)
        print(table)
        if args.out:
            with open(args.out, "w") as fh:
                fh.write(table + "\n")
        return
    if args.one:
        method, n, dim, p, seed, *masses = args.one
        print(json.dumps(one(method, int(n), int(dim), float(p), int(seed), *masses)))
        return
    lines = ["| n | d | p | method | time (s), median | runs | W_p | bound (sparse-exact) | status | peak RSS (MiB) "
             "| time / sparse-exact |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for n in args.sizes:
        for dim in args.dims:
            for p in args.ps:
                rows = {}
                for method in args.methods:
                    runs = [run_child(method, n, dim, p, seed, args.timeout, args.masses)
                            for seed in range(args.repeats)]
                    for r in runs:
                        print(json.dumps(r), file=sys.stderr, flush=True)
                    ok = [r for r in runs if "error" not in r]
                    rows[method] = (ok, runs)
                base = rows.get("sparse-exact", ([], []))[0]
                base_t = statistics.median(r["time"] for r in base) if base else None
                for method, (ok, runs) in rows.items():
                    if not ok:
                        error = runs[0].get("error", "-")
                        lines.append(f"| {n} | {dim} | {p:g} | {method} | {error} | 0 | | | | | |")
                        continue
                    t = statistics.median(r["time"] for r in ok)
                    first = ok[0]
                    ratio = f"{t / base_t:.2f}" if base_t else ""
                    bound = f"{first['bound']:.9g}" if first.get("bound") is not None else ""
                    peak = max(r["peak_mib"] for r in ok)
                    lines.append(f"| {n} | {dim} | {p:g} | {method} | {t:.2f} | {len(ok)} | {first['value']:.9g} | "
                                 f"{bound} | {first.get('status', '')} | {peak:.0f} | {ratio} |")
                print(lines[-1], flush=True)
    table = f"masses: {args.masses}\n\n" + "\n".join(lines)
    print(table)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(table + "\n")


if __name__ == "__main__":
    main()
