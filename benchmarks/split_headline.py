"""The issue's headline figure: 10^6 Poisson scenarios of stochastic split on X-n101-k25, end to end.

Times ``StochasticSplit.solve`` (fused sampling + DP + SAA statistics, through the chunk protocol)
through the public API, after one warm-up call (Numba cache), as the median of repeats; records
the load average and the process CPU time (all threads) so a busy machine can be recognised:
on a shared machine the wall time grows with the other jobs, the CPU time much less. Writes
results/split_headline.md.

    python benchmarks/split_headline.py [--scenarios 1000000] [--repeats 7]
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import time
from pathlib import Path

from solvopt.dsl import StochasticSplit
from solvopt.io import read_instance

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenarios", type=int, default=1_000_000)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--instance", default=str(ROOT / "instances" / "cvrp" / "X-n101-k25.vrp"))
    args = p.parse_args()
    model = StochasticSplit.from_instance(read_instance(args.instance), scenarios=args.scenarios)
    model.solve(seed=0)  # warm-up: loads the Numba cache
    load_before = os.getloadavg()[0]
    times, cpu, result = [], [], None
    for rep in range(args.repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        result = model.solve(seed=rep + 1)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    load_after = os.getloadavg()[0]
    med = statistics.median(times)
    text = (f"# Stochastic split headline ({datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC)\n\n"
            f"`python benchmarks/split_headline.py --scenarios {args.scenarios} --repeats {args.repeats}` on "
            f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, load average {load_before:.2f} "
            f"before / {load_after:.2f} after.\n\n"
            f"| instance | scenarios | median end-to-end s | min s | median CPU s (all threads) | us / scenario "
            f"| SAA mean | std error | termination |\n"
            f"| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n"
            f"| {Path(args.instance).stem} | {args.scenarios:.0e} | {med:.3f} | {min(times):.3f} | "
            f"{statistics.median(cpu):.3f} | {1e6 * med / args.scenarios:.3f} | {result.objective:.3f} | "
            f"{result.solution.get('std_error', float('nan')):.3f} | {result.termination.value} |\n")
    print(text)
    out = ROOT / "benchmarks" / "results" / "split_headline.md"
    out.write_text(text)


if __name__ == "__main__":
    main()
