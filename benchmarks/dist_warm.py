"""Cold against warm batches on dask: what a shared, pre-filled Numba cache saves the workers.

A batch of 20 small k-HC instance files (written here from a seed: sr-style .dat files, m = 10
to 16 points in 2 or 3 dimensions, k = 2), solved with the default exact method (bnb) as one
task per file, ``solvopt.solve_list(paths, client)``, on a fresh LocalCluster of 2 one-thread
workers. Every configuration runs in its own interpreter with its own empty Numba cache folder
(``NUMBA_CACHE_DIR``), so nothing is shared between them but the files:

- **cold**: empty cache; each worker compiles the kernels it needs (the first batch), then the
  same batch again on the same workers (**warm workers**: kernels already in memory);
- **warm=True**: empty cache; ``solve_list(..., warm=True)`` first compiles the k-HC kernels
  once in the client process (``solvopt.warmup``, all of the family's scale cases: more
  kernels than this batch needs) and the workers load them from the shared cache;
- **after `solvopt warmup`**: the cache filled beforehand by ``warmup(["khc"])`` in another
  process (what a user runs once after installing); a fresh cluster's workers (new processes)
  load the kernels from it. This is the cold batch a user meets from the second day on.

Times are wall seconds of the batch alone (the cluster's start is listed apart); the objectives
are checked equal across configurations. The machine's load average is recorded: it is a
2-core machine shared with other jobs.

    nice python benchmarks/dist_warm.py            # writes benchmarks/results/dist_warm.md
"""
from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"
FILES = 20
SEED = 11

_CHILD = r"""
import json, sys, time
if __name__ == "__main__":
    import solvopt
    from solvopt.dist import local_client
    mode, paths = sys.argv[1], json.loads(sys.argv[2])
    t = time.perf_counter()
    client = local_client(2)
    client.wait_for_workers(2)
    started = time.perf_counter() - t
    t = time.perf_counter()
    first = solvopt.solve_list(paths, client, warm=(mode == "warm-flag"))
    batch1 = time.perf_counter() - t
    t = time.perf_counter()
    second = solvopt.solve_list(paths, client)
    batch2 = time.perf_counter() - t
    client.close()
    out = {"start": started, "batch1": batch1, "batch2": batch2,
           "compile1": sum(r.stats.get("compile_time") or 0.0 for r in first),
           "compile2": sum(r.stats.get("compile_time") or 0.0 for r in second),
           "terminations": sorted({r.termination.value for r in first + second}),
           "objectives": [r.objective for r in first], "objectives2": [r.objective for r in second]}
    print(json.dumps(out))
"""

_WARMUP = r"""
import json, time
from solvopt.warmup import warmup
t = time.perf_counter()
report = warmup(["khc"])
print(json.dumps({"seconds": time.perf_counter() - t, "compile_time": report["khc"]["compile_time"]}))
"""


def write_instances(folder: Path) -> list[str]:
    rng = np.random.default_rng(SEED)
    paths = []
    for i in range(FILES):
        m, n, k = int(rng.integers(10, 17)), int(rng.integers(2, 4)), 2
        points = np.round(rng.uniform(0.0, 10.0, size=(m, n)), 1)
        lines = [f"set M := {' '.join(map(str, range(1, m + 1)))} ;",
                 f"set N := {' '.join(map(str, range(1, n + 1)))} ;",
                 f"set K := {' '.join(map(str, range(1, k + 1)))} ;", "param a : ",
                 " " + " ".join(map(str, range(1, n + 1))) + ":="]
        lines += [f"{r + 1}  " + " ".join(f"{v:g}" for v in row) for r, row in enumerate(points)]
        lines.append(";")
        path = folder / f"batch_{i:02d}_{m}_{n}_{k}.dat"
        path.write_text("\n".join(lines) + "\n")
        paths.append(str(path))
    return paths


def run(code: str, cache: Path, *args: str) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    env.pop("SOLVOPT_CACHE_DIR", None)
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="dist_warm_") as tmp:
        tmp = Path(tmp)
        paths = json.dumps(write_instances(tmp))
        cold = run(_CHILD, tmp / "cache-cold", "plain", paths)
        flag = run(_CHILD, tmp / "cache-flag", "warm-flag", paths)
        prewarm = run(_WARMUP, tmp / "cache-pre")
        pre = run(_CHILD, tmp / "cache-pre", "plain", paths)
    load1 = os.getloadavg()
    same = cold["objectives"] == flag["objectives"] == pre["objectives"] == cold["objectives2"]
    warm = cold["batch2"]
    rows = [("cold: empty cache, each worker compiles", cold["batch1"], cold["compile1"], cold["start"]),
            ("warm workers: the same cluster, second batch", cold["batch2"], cold["compile2"], None),
            ("warm=True: empty cache, client warms khc first", flag["batch1"], flag["compile1"], flag["start"]),
            ("after `solvopt warmup`: fresh cluster, filled cache", pre["batch1"], pre["compile1"], pre["start"]),
            ("after `solvopt warmup`: second batch", pre["batch2"], pre["compile2"], None)]
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = ["# Cold against warm batches on dask", "",
           f"`nice python benchmarks/dist_warm.py`, {stamp}: {FILES} k-HC files (bnb), LocalCluster of 2 one-thread "
           f"workers, each configuration in its own interpreter and empty Numba cache. Load average "
           f"{load0[0]:.1f} before, {load1[0]:.1f} after (2 cores, shared).", "",
           "| configuration | batch wall s | x warm | workers' compile s (sum) | cluster start s |",
           "|---|---:|---:|---:|---:|"]
    for name, wall, comp, start in rows:
        shown = "" if start is None else f"{start:.1f}"
        out.append(f"| {name} | {wall:.2f} | {wall / warm:.1f} | {comp:.2f} | {shown} |")
    out += ["", f"`warmup(['khc'])` beforehand (not in the batch): {prewarm['seconds']:.1f} s, of which "
            f"{prewarm['compile_time']:.1f} s compiling.",
            f"Objectives identical in every configuration: {same}; terminations: "
            f"{sorted(set(cold['terminations'] + flag['terminations'] + pre['terminations']))}.", "",
            "Reading: a fresh cluster on a filled cache (what every batch meets once `solvopt warmup` has run) "
            "costs the workers' start-up (importing solvopt and Numba, loading the kernels from the cache) "
            "over the warm batch; the cold batch's extra time is compilation, done by each worker for the "
            "kernels its inputs need. `warm=True` on an empty cache compiles every k-HC kernel variant "
            "(dimensions 2 to 4, every branching order) once, serially in the client, where the cold batch "
            "compiles only what its inputs need, on both workers at once: on 2 workers it costs wall time; "
            "it saves CPU time when many workers would each compile the same kernels.", ""]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "dist_warm.md").write_text("\n".join(out))
    print("\n".join(out))


if __name__ == "__main__":
    main()
