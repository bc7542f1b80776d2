"""k-HC2 exact methods side by side: our SBB (each norm set), our assignment B&B, SCIP and Gurobi.

Every method solves the instances of the public k-HC set ($SOLVOPT_INSTANCES/khc) (the published semi-random set,
m <= 30, n <= 3, k <= 3) in one process, one after the other, with the same time limit and
thread count:

- ``sbb[2]``, ``sbb[2,inf]``, ``sbb[2,1]``, ``sbb[2,1,inf]``: our spatial branch-and-bound with
  each strengthening (the norm-set ablation); ``sbb-lp[2,inf]``: without the assignment bound
  (the LP relaxation alone, opt-in);
- ``bnb``: the exact assignment branch-and-bound;
- ``scip[2]``, ``scip[2,inf]``: SCIP (pyscipopt) on the very same MINLP built in the DSL;
- ``gurobi[2,inf]`` (and ``gurobi[2]``): Gurobi with NonConvex=2, when gurobipy is installed.

Table: instances solved (proved optimal at rel_gap 1e-6), shifted geometric mean time (shift 1 s,
unsolved runs count as the limit), median time ratio to the reference method on the instances
both solved, median final gap on the unsolved. Results: benchmarks/results/khc.md and .json
(written after every instance, so a stopped run keeps what it measured).

    python benchmarks/khc.py                                   # all 44, 300 s, default methods
    python benchmarks/khc.py --time-limit 20 --instances sr_1 sr_20 --methods sbb[2,inf] bnb scip[2,inf]
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import datetime
import json
import math
import platform
import statistics
import time
from pathlib import Path

from public_instances import public_instances

from solvopt.core.registry import Availability, get_solver
from solvopt.dsl.hyperplane import HyperplaneClustering
from solvopt.io import read_instance

RESULTS = Path(__file__).resolve().parent / "results"
INSTANCES = public_instances("khc")
SOLVED_GAP = 1e-6

# method label -> (registered method, options)
METHODS = {
    "sbb[2]": ("sbb", {"norms": "2"}),
    "sbb[2,inf]": ("sbb", {"norms": "2,inf"}),
    "sbb[2,1]": ("sbb", {"norms": "2,1"}),
    "sbb[2,1,inf]": ("sbb", {"norms": "2,1,inf"}),
    "sbb-lp[2,inf]": ("sbb", {"norms": "2,inf", "assignment_bound": False}),
    "bnb": ("bnb", {}),
    "scip[2]": ("scip", {"norms": "2"}),
    "scip[2,inf]": ("scip", {"norms": "2,inf"}),
    "gurobi[2]": ("gurobi", {"norms": "2"}),
    "gurobi[2,inf]": ("gurobi", {"norms": "2,inf"}),
}
DEFAULT_METHODS = ["sbb[2]", "sbb[2,inf]", "sbb[2,1]", "sbb[2,1,inf]", "bnb", "scip[2]", "scip[2,inf]",
                   "gurobi[2,inf]"]
REFERENCE = "sbb[2,inf]"


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def instance_paths(patterns: list[str] | None, max_m: int | None) -> list[Path]:
    paths = sorted(INSTANCES.glob("*.dat"), key=lambda p: [int(t) for t in p.stem.split("_")[1:]])
    if patterns:
        paths = [p for p in paths if any(pat in p.stem for pat in patterns)]
    if max_m is not None:
        paths = [p for p in paths if int(p.stem.split("_")[1]) <= max_m]
    return paths


def solved(row: dict) -> bool:
    """Proved optimal: the method says so (its own gap test at rel_gap 1e-6), or our gap <= 1e-6."""
    return row["termination"] == "optimal" or (row["gap"] is not None and row["gap"] <= SOLVED_GAP)


def run_one(model, label: str, time_limit: float, threads: int) -> dict:
    method, options = METHODS[label]
    solver = get_solver("khc", method)
    start = time.perf_counter()
    try:
        res = solver.run(solver.compile(model), time_limit=time_limit, threads=threads, **options)
    except Exception as exc:  # a failing backend is a result to report, not a crash of the run
        return {"method": label, "error": f"{type(exc).__name__}: {exc}", "time": time.perf_counter() - start,
                "gap": None, "objective": None, "bound": None, "termination": "error"}
    wall = time.perf_counter() - start
    return {"method": label, "termination": res.termination.value, "objective": res.objective, "bound": res.bound,
            "gap": res.gap, "time": wall, "nodes": res.stats.get("nodes")}


def shifted_geomean(times: list[float], shift: float = 1.0) -> float:
    return math.exp(statistics.fmean(math.log(t + shift) for t in times)) - shift


def fmt(x, digits: int = 4) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}g}"
    return str(x)


def summarise(rows: dict[str, dict[str, dict]], methods: list[str], time_limit: float) -> list[dict]:
    out = []
    names = list(rows)
    for label in methods:
        runs = [rows[n][label] for n in names if label in rows[n]]
        if not runs:
            continue
        solved_runs = [r for r in runs if solved(r)]
        times = [r["time"] if solved(r) else time_limit for r in runs]
        ratios = [rows[n][label]["time"] / rows[n][REFERENCE]["time"] for n in names
                  if label in rows[n] and REFERENCE in rows[n] and solved(rows[n][label]) and solved(rows[n][REFERENCE])
                  and rows[n][REFERENCE]["time"] > 0]
        open_gaps = [r["gap"] for r in runs if not solved(r) and r["gap"] is not None]
        out.append({"method": label, "runs": len(runs), "solved": len(solved_runs),
                    "sgm_time": shifted_geomean(times),
                    "median_ratio_to_ref": statistics.median(ratios) if ratios else None,
                    "common": len(ratios), "median_open_gap": statistics.median(open_gaps) if open_gaps else None,
                    "errors": sum(1 for r in runs if r.get("error"))})
    return out


def agreement(rows: dict[str, dict[str, dict]]) -> float:
    """Largest relative difference between the objectives of methods that proved optimality."""
    worst = 0.0
    for runs in rows.values():
        objs = [r["objective"] for r in runs.values() if solved(r) and r["objective"] is not None]
        if len(objs) > 1:
            worst = max(worst, (max(objs) - min(objs)) / max(abs(min(objs)), 1e-9))
    return worst


def write(rows, methods, args, finished: bool) -> None:
    RESULTS.mkdir(exist_ok=True)
    summary = summarise(rows, methods, args.time_limit)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    meta = {"date": now, "cpu": cpu_name(), "cores": os.cpu_count(), "time_limit": args.time_limit,
            "threads": args.threads, "big_m": args.big_m, "instances": len(rows), "methods": methods,
            "finished": finished, "command": "python benchmarks/khc.py " + " ".join(args.argv),
            "load_average": os.getloadavg()[0]}
    meta.update(getattr(args, "saved_meta", {}))     # --render keeps the run's own date, CPU and load
    now = meta["date"]
    (RESULTS / "khc.json").write_text(json.dumps({"meta": meta, "summary": summary, "runs": rows}, indent=1))
    lines = [
        "# k-HC2 exact methods: SBB (norm sets), assignment B&B, SCIP, Gurobi",
        "",
        f"Generated {now} by `{meta['command']}` on {meta['cpu']} ({meta['cores']} cores, shared with other "
        f"jobs; load average {meta['load_average']:.1f}). Time limit {args.time_limit:g} s per run, "
        f"threads={args.threads}, big-M: {args.big_m}. {len(rows)} instance(s)"
        + ("" if finished else " (run stopped before the end: partial)") + ".",
        "",
    ]
    total = len(list(INSTANCES.glob("*.dat")))
    if args.time_limit < 300 or len(rows) < total:
        lines += [f"**Short run, not the full benchmark:** {len(rows)} of the {total} instances with a "
                  f"{args.time_limit:g} s limit (the full run is all {total} instances at 300 s: "
                  "`python benchmarks/khc.py`). Unsolved here may be solved with the full limit.", ""]
    lines += [
        f"Solved = the method proved optimality (rel_gap 1e-6) or relative gap <= {SOLVED_GAP:g}. "
        "SGM = shifted geometric mean of the wall time (shift 1 s, unsolved "
        f"runs count as the limit). Ratio = median of time / time of `{REFERENCE}` on the instances both solved. "
        f"Largest objective disagreement between methods that proved optimality: {agreement(rows):.2g} (relative).",
        "",
        "| method | solved | SGM time s | median time ratio to ref (common) | median gap of unsolved | errors |",
        "|---|---|---|---|---|---|",
    ]
    for s in summary:
        lines.append(f"| {s['method']} | {s['solved']} / {s['runs']} | {s['sgm_time']:.3g} | "
                     f"{fmt(s['median_ratio_to_ref'], 3)} ({s['common']}) | {fmt(s['median_open_gap'], 3)} | "
                     f"{s['errors']} |")
    lines += ["", "## Per instance (time s / gap when unsolved)", "",
              "| instance | " + " | ".join(methods) + " |", "|---" * (len(methods) + 1) + "|"]
    for name, runs in rows.items():
        cells = []
        for label in methods:
            r = runs.get(label)
            if r is None:
                cells.append("")
            elif r.get("error"):
                cells.append("error")
            elif solved(r):
                cells.append(f"{r['time']:.2f}")
            else:
                cells.append(f"gap {fmt(r['gap'], 3)}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    errors = [(n, r["method"], r["error"]) for n, runs in rows.items() for r in runs.values() if r.get("error")]
    if errors:
        lines += ["", "Errors:", ""] + [f"- {n} {m}: {e}" for n, m, e in errors]
    (RESULTS / "khc.md").write_text("\n".join(lines) + "\n")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--time-limit", type=float, default=300.0, help="seconds per run (default 300)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--instances", nargs="*", help="substrings of instance names to keep (default: all 44)")
    parser.add_argument("--max-m", type=int, help="keep instances with at most this many points")
    parser.add_argument("--methods", nargs="*", choices=sorted(METHODS), default=None,
                        help=f"default: {' '.join(DEFAULT_METHODS)} (those installed)")
    parser.add_argument("--big-m", choices=("data", "paper"), default="data",
                        help="big-M of the MINLP: the data diameter (valid, tight) or the paper's sqrt(n)*100")
    parser.add_argument("--render", action="store_true", help="only rewrite khc.md from khc.json")
    args = parser.parse_args(argv)
    import sys
    args.argv = sys.argv[1:] if argv is None else list(argv)
    if args.render:
        saved = json.loads((RESULTS / "khc.json").read_text())
        meta = saved["meta"]
        args.time_limit, args.threads, args.big_m = meta["time_limit"], meta["threads"], meta["big_m"]
        args.argv = meta["command"].split()[2:]
        args.saved_meta = {key: meta[key] for key in ("date", "cpu", "cores", "load_average", "command")}
        write(saved["runs"], meta["methods"], args, meta["finished"])
        draw_profile()
        return
    methods = args.methods or [m for m in DEFAULT_METHODS
                               if get_solver("khc", METHODS[m][0]).available() is Availability.AVAILABLE]
    if REFERENCE not in methods:
        methods = [REFERENCE] + methods
    rows: dict[str, dict[str, dict]] = {}
    paths = instance_paths(args.instances, args.max_m)
    warm = HyperplaneClustering.from_instance(read_instance(INSTANCES / "sr_10_2_2_1022.dat"))
    for label in methods:     # JIT compilation, imports and licence checks outside the timings
        run_one(warm, label, 2.0, args.threads)
    for path in paths:
        inst = read_instance(path)
        big_m = None if args.big_m == "data" else math.sqrt(inst.data["points"].shape[1]) * 100
        model = HyperplaneClustering.from_instance(inst, big_m=big_m)
        rows[inst.name] = {}
        for label in methods:
            row = run_one(model, label, args.time_limit, args.threads)
            rows[inst.name][label] = row
            print(f"{inst.name:16s} {label:14s} {row['termination']:12s} obj={fmt(row['objective'], 8)} "
                  f"bound={fmt(row['bound'], 8)} time={row['time']:.2f}", flush=True)
        write(rows, methods, args, finished=False)
    write(rows, methods, args, finished=True)
    draw_profile()


def draw_profile() -> None:
    """The performance profile of khc.json (benchmarks/plots.py), after the last write."""
    from plots import figure, performance_profile
    figure(performance_profile, RESULTS / "khc.json", RESULTS / "khc_profile.png")


if __name__ == "__main__":
    main()
