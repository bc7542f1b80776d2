"""The certified gap of ``approx`` (its default dual certificate): time and tightness.

Uniform points in [0, 1]^d, n = m, uniform masses, seed 0 per size. For each case one run of
``approx`` (default options): its wall time, the certificate's share (``stats["dual_time"]``),
pricing rounds, the reported gap 1 - bound / W_p(plan) and, up to ``--exact-max``, the true gap
1 - W_p(exact) / W_p(plan) with W_p(exact) from ``sparse-exact`` (certified optimal). One run a
case on a shared machine: the load (1-minute average) is recorded beside each row.

    nice python benchmarks/transport_certificate.py                        # n = 10^4 (d = 2, 3; p = 1, 2)
    nice python benchmarks/transport_certificate.py --sizes 100000 --dims 2 --merge
    python benchmarks/transport_certificate.py --sizes 500 --no-write      # a smoke run
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def run_case(n: int, d: int, p: float, exact_max: int) -> dict:
    from solvopt.dsl import Transport
    rng = np.random.default_rng([0, n, d])
    model = Transport(rng.random((n, d)), rng.random((n, d)), p=p)
    t0 = time.perf_counter()
    r = model.solve("approx")
    wall = time.perf_counter() - t0
    row = {"n": n, "d": d, "p": p, "time": wall, "certificate_time": r.stats.get("dual_time"),
           "rounds": r.stats.get("dual_rounds"), "objective": r.objective, "bound": r.bound,
           "reported_gap": 1 - r.bound / r.objective, "load": os.getloadavg()[0]}
    if n <= exact_max:
        t0 = time.perf_counter()
        exact = model.solve("sparse-exact")
        row.update(exact=exact.objective, exact_time=time.perf_counter() - t0,
                   true_gap=1 - exact.objective / r.objective, exact_status=str(exact.termination))
    return row


def markdown(rows: list[dict], notes: list[str]) -> str:
    out = ["# approx: the certified gap (default dual certificate)", "",
           "Written by `benchmarks/transport_certificate.py`; uniform points, n = m, one run a case.", "",
           "| n | d | p | approx (s) | certificate (s) | rounds | reported gap | true gap | load |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["n"], r["d"], r["p"])):
        true = f"{100 * r['true_gap']:.3f}%" if "true_gap" in r else ""
        out.append(f"| {r['n']:,} | {r['d']} | {r['p']:g} | {r['time']:.1f} | {r['certificate_time'] or 0:.1f} | "
                   f"{r['rounds']} | {100 * r['reported_gap']:.3f}% | {true} | {r['load']:.1f} |")
    out += ["", "reported gap = 1 - bound / W_p(plan); true gap = 1 - W_p(exact) / W_p(plan) (sparse-exact)."]
    if notes:
        out += ["", "## Notes", ""] + [f"- {note}" for note in notes]
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", type=int, default=[10000])
    ap.add_argument("--dims", nargs="+", type=int, default=[2, 3])
    ap.add_argument("--ps", nargs="+", type=float, default=[1.0, 2.0])
    ap.add_argument("--exact-max", type=int, default=10000, help="largest n for the true gap (sparse-exact)")
    ap.add_argument("--merge", action="store_true", help="keep the stored rows of other cases")
    ap.add_argument("--note", action="append", default=[], help="a note kept in the results")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--output", type=Path, default=RESULTS / "transport_certificate")
    args = ap.parse_args(argv)
    stored = json.loads(args.output.with_suffix(".json").read_text()) if args.output.with_suffix(".json").exists() \
        else {"rows": [], "meta": {"notes": []}}
    rows = []
    for n in args.sizes:
        for d in args.dims:
            for p in args.ps:
                row = run_case(n, d, p, args.exact_max)
                print(json.dumps(row), flush=True)
                rows.append(row)
    if args.no_write:
        return
    keys = {(r["n"], r["d"], r["p"]) for r in rows}
    if args.merge:
        rows += [r for r in stored["rows"] if (r["n"], r["d"], r["p"]) not in keys]
    notes = stored["meta"].get("notes", []) + args.note
    meta = {"notes": notes, "written": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"}
    args.output.with_suffix(".json").write_text(json.dumps({"rows": rows, "meta": meta}, indent=1) + "\n")
    args.output.with_suffix(".md").write_text(markdown(rows, notes))


if __name__ == "__main__":
    main()
