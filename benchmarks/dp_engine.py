"""Min-plus DP engine: NumPy reference vs Numba (1 and 2 threads) vs CuPy (when a GPU is present).

Cases (all in one process, medians of repeats, reported as ns per inner transition = time /
(allowed slots x scenarios), and as the ratio NumPy / kernel):

- ``dag-shared``: a random dense layered DAG (S states, L layers) whose costs are shared by
  every scenario; scenarios differ by their initial values. Compute-bound.
- ``dag-sampled``: the same DAG with per-scenario costs drawn by a sampler (normal costs).
  The kernel streams 8 bytes of cost per transition: memory-bound.
- ``irp <instance>``: the inventory reinsertion DP of customer 1 of Archetti instances, Poisson
  demand (variant layers: per scenario one demand index per day, sources and costs gathered
  from a (K x (U+1)) table per day).

``kernel`` times the kernel alone on prebuilt tensors (one chunk of at most ``--kernel-cap``
scenarios); ``e2e`` times ``model.solve`` (sampling, chunking, aggregates, 16 back-tracked paths).

    python benchmarks/dp_engine.py            # full run, writes benchmarks/results/dp_engine.{md,json}
    python benchmarks/dp_engine.py --quick    # small sizes, a smoke run (writes nothing)
    python benchmarks/dp_engine.py --scenarios 1000 10000 --output /tmp/dp   # a subset, written elsewhere
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numba
import numpy as np
from public_instances import public_instances

from solvopt.core.backend import gpu_available
from solvopt.dp import kernels_numba, kernels_numpy
from solvopt.dp.compiled import CompiledDP
from solvopt.dsl import LayeredDP, Transitions
from solvopt.io import read_instance
from solvopt.irp.instance import model_from_instance
from solvopt.irp.reinsertion import compile_inventory

RESULTS = Path(__file__).resolve().parent / "results"
IRP = public_instances("irp")


# --- the cases ---------------------------------------------------------------------------------------
def dag_shared(S: int, L: int, W: int, seed: int = 0) -> LayeredDP:
    rng = np.random.default_rng(seed)
    return LayeredDP([S] * (L + 1), [rng.normal(size=(S, S)) for _ in range(L)], initial=rng.normal(size=(W, S)))


def dag_sampled(S: int, L: int, W: int) -> LayeredDP:
    structure = [Transitions(mask=np.ones((S, S), bool)) for _ in range(L)]

    def sampler(rng, count):
        return [rng.normal(size=(count, S, S)) for _ in range(L)]
    return LayeredDP([S] * (L + 1), structure, scenarios=W, sampler=sampler)


def irp_model(name: str, W: int):
    return model_from_instance(read_instance(IRP / f"{name}.dat"), 1, scenarios=W)


# --- timing ----------------------------------------------------------------------------------------------
def median_time(fn, repeats: int, warm_up: bool = True) -> float:
    if warm_up:
        fn()                                   # JIT compilation / loading, caches
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def kernel_runners(compiled: CompiledDP, count: int) -> dict:
    """name -> zero-argument callable running one kernel on the same chunk tensors."""
    t = compiled.chunk(0, count, 0)
    args = (t.initial, compiled.ptr, t.src, t.cost, t.choice, compiled.n_states, compiled.sentinel)
    no_slots = np.empty((0, 0, 0), compiled.slot_index_dtype)

    def cpu(forward, threads=None, **kw):
        out = np.empty((compiled.max_states, count), compiled.dtype)

        def run():
            if threads:
                numba.set_num_threads(threads)
            forward(*args, out, no_slots, **kw)
        return run
    runners = {"numpy": cpu(kernels_numpy.forward), "numba-1t": cpu(kernels_numba.forward, 1),
               "numba-2t": cpu(kernels_numba.forward, min(2, numba.config.NUMBA_NUM_THREADS))}
    if gpu_available():
        import cupy as cp

        from solvopt.gpu import dp as gpu_dp
        dev = [cp.asarray(a) for a in args[:6]]
        out_d = cp.empty((compiled.max_states, count), compiled.dtype)
        slots_d = cp.empty((0, 0, 0), compiled.slot_index_dtype)

        def gpu():
            gpu_dp.forward(*dev, compiled.sentinel, out_d, slots_d)
            cp.cuda.Device().synchronize()
        runners["cuda"] = gpu
    return runners


def e2e_runners(model) -> dict:
    def solve(method, threads=None):
        extra = {} if threads is None else {"threads": threads}     # numpy and cuda do not take threads
        return lambda: model.solve(method, seed=0, **extra)
    runners = {"numpy": solve("numpy"), "numba-1t": solve("numba", 1),
               "numba-2t": solve("numba", min(2, numba.config.NUMBA_NUM_THREADS))}
    if gpu_available():
        runners["cuda"] = solve("cuda")
    return runners


def measure(case: str, W: int, mode: str, runners: dict, transitions: int, repeats: int) -> dict:
    """Median ns per transition of each runner; big runs (> 10^5 scenarios) run once, without a
    warm-up of their own (the smaller sizes before them compiled the kernels already)."""
    row = {"case": case, "scenarios": W, "mode": mode, "transitions": transitions, "ns_per_transition": {},
           "repeats": repeats}
    for name, fn in runners.items():
        row["ns_per_transition"][name] = 1e9 * median_time(fn, repeats, warm_up=W <= 100_000) / transitions
        print(f"  {case:<22} W={W:<8} {mode:<6} {name:<9} {row['ns_per_transition'][name]:9.3f} ns/transition",
              file=sys.stderr, flush=True)
    ref = row["ns_per_transition"]["numpy"]
    row["speedup_vs_numpy"] = {k: ref / v for k, v in row["ns_per_transition"].items() if k != "numpy"}
    return row


def run(args) -> list[dict]:
    rows = []
    kernel_repeats = max(args.repeats, 5)          # kernel-only runs are short: more repeats
    for W in args.scenarios:
        repeats = args.repeats if W <= 100_000 else 1
        cases = [("dag-shared", dag_shared(args.states, args.layers, W))]
        if W <= args.sampled_max:
            cases.append(("dag-sampled", dag_sampled(args.states, args.layers, W)))
        for case, model in cases:
            label = f"{case} S={args.states} L={args.layers}"
            compiled = CompiledDP(model)
            count = min(W, args.kernel_cap) if compiled.per_scenario_cost else W
            if count == W or W <= args.kernel_cap * 10:    # the capped chunk is measured once
                rows.append(measure(label, count, "kernel", kernel_runners(compiled, count),
                                    model.n_transitions * count, kernel_repeats if W <= 100_000 else 1))
            rows.append(measure(label, W, "e2e", e2e_runners(model), model.n_transitions * W, repeats))
    for i, name in enumerate(args.irp):
        for W in args.irp_scenarios + (args.irp_big if i == 0 else []):
            repeats = args.repeats if W <= 100_000 else 1
            model = irp_model(name, W)
            compiled = compile_inventory(model)
            label = f"irp {name} U={model.max_level} T={model.horizon}"
            count = min(W, args.kernel_cap)
            if count == W or W <= args.kernel_cap * 10:
                rows.append(measure(label, count, "kernel", kernel_runners(compiled.dp, count),
                                    compiled.dp.model.n_transitions * count, kernel_repeats))
            rows.append(measure(label, W, "e2e", e2e_runners(model), compiled.dp.model.n_transitions * W, repeats))
    return rows


def markdown(rows: list[dict], meta: dict) -> str:
    backends = [b for b in ("numpy", "numba-1t", "numba-2t", "cuda") if any(b in r["ns_per_transition"] for r in rows)]
    lines = [f"# DP engine: NumPy reference vs Numba{' vs CuPy' if 'cuda' in backends else ''}", "",
             f"{meta['date']} — {meta['machine']}; command: `{meta['command']}`", "",
             "ns per inner transition (allowed slot x scenario), medians of repeats (one run above 10^5 "
             "scenarios); `x` columns: NumPy time / kernel time. `kernel`: the kernel alone on one chunk "
             "(at most --kernel-cap scenarios when costs vary by scenario); `e2e`: `model.solve` (sampling, "
             "chunks, aggregates, 16 back-tracked paths). The 2 cores are shared with other jobs (see the load "
             "average): 2-thread runs suffer most from that, and single rows can be off by 2x.", "",
             "| case | scenarios | mode | " + " | ".join(f"{b} ns" for b in backends) + " | "
             + " | ".join(f"{b} x" for b in backends if b != "numpy") + " |",
             "|" + " --- |" * (3 + 2 * len(backends) - 1)]
    for r in rows:
        ns = [f"{r['ns_per_transition'][b]:.3f}" if b in r["ns_per_transition"] else "-" for b in backends]
        sp = [f"{r['speedup_vs_numpy'][b]:.1f}" if b in r["speedup_vs_numpy"] else "-"
              for b in backends if b != "numpy"]
        lines.append(f"| {r['case']} | {r['scenarios']} | {r['mode']} | " + " | ".join(ns + sp) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes; print the table, write nothing")
    p.add_argument("--states", type=int, default=16)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--scenarios", type=int, nargs="+", default=[10**3, 10**4, 10**5, 10**6])
    p.add_argument("--irp", nargs="*", default=["abs1n5_1", "abs1n100_2", "abs10n200_2"])
    p.add_argument("--irp-scenarios", type=int, nargs="+", default=[10**3, 10**4, 10**5])
    p.add_argument("--irp-big", type=int, nargs="*", default=[10**6], help="extra sizes for the first IRP instance")
    p.add_argument("--sampled-max", type=int, default=10**5,
                   help="largest W of dag-sampled (its end-to-end time is the random number generator's)")
    p.add_argument("--kernel-cap", type=int, default=1 << 14, help="most scenarios of a kernel-only chunk")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--output", default=str(RESULTS / "dp_engine"),
                   help="where to write the .md and .json results (without the extension)")
    args = p.parse_args(argv)
    if args.quick:
        args.scenarios, args.irp, args.irp_scenarios, args.irp_big = [1000, 10000], ["abs1n5_1"], [1000], []
        args.repeats = 2
    if not IRP.is_dir():
        args.irp = []
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
                       f"load average {os.getloadavg()[0]:.1f} at start, numba {numba.__version__}, "
                       f"numpy {np.__version__}, GPU: {'yes' if gpu_available() else 'none'}",
            "command": " ".join(["python benchmarks/dp_engine.py", *(sys.argv[1:] if argv is None else argv)])}
    rows = run(args)
    meta["machine"] += f"; load average {os.getloadavg()[0]:.1f} at the end"
    table = markdown(rows, meta)
    print(table)
    if not args.quick:
        out = Path(args.output)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.with_suffix(".md").write_text(table)
        out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
        from plots import figure, time_vs_scenarios  # benchmarks/plots.py: the figure from the JSON just written
        figure(time_vs_scenarios, out.with_suffix(".json"), out.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
