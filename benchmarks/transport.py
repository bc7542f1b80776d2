"""W_p optimal transport: our ``approx`` against the exact anchors, side by side in one process.

Cases: uniform points in the unit cube [0, 1]^d, d in {2, 3}, uniform masses, n = m; and the
real-data case ``pixels``: the RGB colours (scaled to [0, 1]^3) of n pixels drawn from each of
the two scikit-learn sample images (china.jpg -> flower.jpg). For each case, size and p:

- ``ours``: ``Transport(x, y, p=p).solve("approx", certificate="factor")`` (model construction
  included; the factor bound only, the work the recorded results measured: the default dual
  certificate prices the real gap at extra cost, measured in docs/transport.md). Every case here
  is an assignment problem (n = m, uniform masses), so for finite p this is the auction on the full
  matrix, whose certified bound comes with it, up to 1500 x 1500 pairs (2000 x 2000 on the pixel
  clouds, whose distances tie), and beyond the two-hop graph;
- ``emd``: POT's ``ot.emd`` on the dense cost matrix d^p with ``numItermax`` = 10^9 (its default
  of 10^5 stops early: the result code is recorded), cost matrix build included (p < inf);
- ``lsa``: ``scipy.optimize.linear_sum_assignment`` on the same matrix (n = m, uniform masses:
  an optimal assignment is an optimal plan), cost matrix build included (p < inf);
- ``bottleneck``: the package's exact W_inf (``Transport(...).solve("bottleneck")``, p = inf);
- ``geomloss``: GeomLoss's debiased Sinkhorn divergence S_eps (``SamplesLoss("sinkhorn", p=p,
  blur=..., scaling=0.9, backend="multiscale")``, float64 on the CPU; p in {1, 2}), what a user
  would try at 10^4 - 10^5 points. It is not W_p: GeomLoss's cost is |x - y|^p / p and eps = blur^p,
  so (p S_eps)^(1/p) is its estimate of W_p, biased by the blur and not certified; it is set beside
  the exact optimum where ``emd`` ran, and beside ours' certified interval [bound, objective]
  everywhere. Not in the ``bench`` extra (pykeops has no wheels, torch from PyPI pulls CUDA); install:
  ``pip install geomloss pykeops`` and a CPU torch (``pip install torch
  --index-url https://download.pytorch.org/whl/cpu``); the multiscale backend needs pykeops, which
  compiles its kernels with g++ at first use (once per dimension and p; ``warm_up`` does it outside
  the timings), and d <= 3;
- ``floor``: one pass computing all n^2 distances (a 2-thread Numba loop keeping each row's
  minimum; the fastest of 5 passes at n <= 10^4): the time any method that looks at every
  distance needs at least.

Measured: wall time (median of ``--repeats`` at n <= 1000, one run above), the approximation
ratio W_p(ours) / W_p(exact) (exact = ot.emd, checked against linear_sum_assignment; for p = inf
the bottleneck solver), ours' certified gap objective / bound, and peak memory (resident set
size sampled every 5 ms during the call, above the size before it). Exact anchors run up to
``--exact-max`` (emd, lsa) and ``--bottleneck-max``; ours runs at every size.

    python benchmarks/transport.py --quick            # d = 2, n in {500, 1000}: a smoke run (writes nothing)
    nice python benchmarks/transport.py               # the full run: writes benchmarks/results/transport.{md,json,png}
    nice python benchmarks/transport.py --cases uniform2 --ps 1 2 --merge   # a part, merged into the results
    nice python benchmarks/transport.py --cases uniform2 --sizes 1000 10000 --ps 1 2 --methods geomloss --merge
    python benchmarks/transport.py --redraw            # the .md and .png again from the recorded .json
    python benchmarks/transport.py --redraw --note "n = 10^6: ..."   # a note, kept through every later write

Hand-written text belongs in the notes (``meta.notes`` in the .json, added with ``--note``): every
write (a full run, ``--merge``, ``--redraw``) carries them into the new .json and .md. The .md is
generated: a write stops before measuring when the .md on disk is not the one last written (its
hash is recorded in the .json), so text typed into it is never overwritten unseen (copy it into a
note, delete the .md, write again).
"""
from __future__ import annotations

import argparse
import ctypes
import datetime
import gc
import hashlib
import json
import math
import os
import platform
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
CASES = ("uniform2", "uniform3", "pixels")
FULL_SIZES = (1000, 2000, 5000, 10000, 50000, 100000)
QUICK_SIZES = (500, 1000)
METHODS = ("ours", "emd", "lsa", "bottleneck", "geomloss", "floor")
GEOMLOSS = {"blur": 1e-3, "scaling": 0.9, "backend": "multiscale"}   # set from the command line
FLOOR_REPEATS = 5          # the floor is the fastest of this many passes (n <= 10^4; one pass above)


# --- instances ----------------------------------------------------------------------------------
def points(case: str, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Sources and targets (n x d each) of one case."""
    rng = np.random.default_rng([seed, n])
    if case.startswith("uniform"):
        d = int(case[len("uniform"):])
        return rng.uniform(size=(n, d)), rng.uniform(size=(n, d))
    if case == "pixels":
        src, dst = sample_image_colours()
        return (src[rng.choice(len(src), n, replace=False)], dst[rng.choice(len(dst), n, replace=False)])
    raise ValueError(f"unknown case {case!r}")


_IMAGES: list = []


def sample_image_colours() -> tuple[np.ndarray, np.ndarray]:
    """The RGB colours of every pixel of china.jpg and flower.jpg, in [0, 1]^3 (float64)."""
    if not _IMAGES:
        from sklearn.datasets import load_sample_images
        images = load_sample_images().images
        _IMAGES.extend(img.reshape(-1, 3).astype(np.float64) / 255.0 for img in images)
    return _IMAGES[0], _IMAGES[1]


def cost_matrix(x, y, p):
    from scipy.spatial.distance import cdist
    C = cdist(x, y)
    if p != 1:
        np.power(C, p, out=C)
    return C


# --- measuring ----------------------------------------------------------------------------------
def _trim():
    """Return freed heap memory to the system so the next call's peak starts from a clean base."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass


def measure(fn):
    """(seconds, peak resident-set growth in MiB, fn's value): RSS sampled every 5 ms in a thread."""
    import psutil
    _trim()
    proc = psutil.Process()
    base = proc.memory_info().rss
    peak = [base]
    done = threading.Event()

    def sample():
        while not done.wait(0.005):
            peak[0] = max(peak[0], proc.memory_info().rss)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    cpu0 = sum(proc.cpu_times()[:4])          # with waited-for children (OR-Tools runs in a forked one)
    t0 = time.perf_counter()
    try:
        value = fn()
    finally:
        elapsed = time.perf_counter() - t0
        done.set()
        sampler.join()
    peak[0] = max(peak[0], proc.memory_info().rss)
    if isinstance(value, dict):
        value["cpu_seconds"] = sum(proc.cpu_times()[:4]) - cpu0   # all threads: less load-dependent than wall time
    return elapsed, (peak[0] - base) / 2**20, value


def run_ours(x, y, p):
    from solvopt.dsl import Transport
    r = Transport(x, y, p=p).solve("approx", certificate="factor")
    keep = ("engine", "graph", "centres", "hubs", "levels", "arcs", "bunch_arcs", "direct_arcs", "graph_time",
            "flow_time", "improve_time", "threshold")
    return {"objective": float(r.objective), "bound": None if r.bound is None else float(r.bound),
            "termination": str(r.termination), "guarantee": r.guarantee,
            "factor": r.stats.get("factor"), "nnz": int(r.solution["plan"].nnz),
            **{k: r.stats[k] for k in keep if k in r.stats}}


def run_emd(x, y, p):
    import ot
    n, m = len(x), len(y)
    C = cost_matrix(x, y, p)
    G, log = ot.emd(np.full(n, 1.0 / n), np.full(m, 1.0 / m), C, numItermax=10**9, log=True)
    return {"cost_p": float(log["cost"]), "objective": float(log["cost"]) ** (1.0 / p),
            "result_code": int(log["result_code"]), "warning": log.get("warning")}


def run_lsa(x, y, p):
    from scipy.optimize import linear_sum_assignment
    C = cost_matrix(x, y, p)
    rows, cols = linear_sum_assignment(C)
    cost_p = float(C[rows, cols].sum()) / len(x)
    return {"cost_p": cost_p, "objective": cost_p ** (1.0 / p)}


def run_bottleneck(x, y, p):
    from solvopt.dsl import Transport
    r = Transport(x, y, p=math.inf).solve("bottleneck")
    return {"objective": float(r.objective), "termination": str(r.termination)}


def run_geomloss(x, y, p):
    """GeomLoss's debiased Sinkhorn divergence and the W_p estimate it implies (see the docstring)."""
    import torch
    from geomloss import SamplesLoss
    blur, scaling, backend = GEOMLOSS["blur"], GEOMLOSS["scaling"], GEOMLOSS["backend"]
    loss = SamplesLoss("sinkhorn", p=int(p), blur=blur, scaling=scaling, backend=backend)
    value = float(loss(torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(np.ascontiguousarray(y))))
    return {"divergence": value, "objective": (p * max(value, 0.0)) ** (1.0 / p), "blur": blur,
            "epsilon": blur ** p, "scaling": scaling, "backend": backend, "dtype": "float64",
            "torch_threads": torch.get_num_threads()}


def _floor_kernel():
    import numba

    @numba.njit(parallel=True, cache=True)
    def row_minima(x, y):
        n, m, d = x.shape[0], y.shape[0], x.shape[1]
        out = np.empty(n)
        for i in numba.prange(n):
            best = np.inf
            for j in range(m):
                s = 0.0
                for k in range(d):
                    t = x[i, k] - y[j, k]
                    s += t * t
                if s < best:
                    best = s
            out[i] = math.sqrt(best)
        return out
    return row_minima


_FLOOR = []


def run_floor(x, y, p):
    if not _FLOOR:
        _FLOOR.append(_floor_kernel())
    return {"min_distance": float(_FLOOR[0](x, y).min())}


RUNNERS = {"ours": run_ours, "emd": run_emd, "lsa": run_lsa, "bottleneck": run_bottleneck,
           "geomloss": run_geomloss, "floor": run_floor}


_FLOOR_DONE: dict = {}   # (case, n) -> the floor's measurement (it does not depend on p)


def applies(method, n, p, args):
    if method not in args.methods:
        return False
    if method in ("emd", "lsa"):
        return not math.isinf(p) and n <= (args.exact_max if method == "emd" else args.lsa_max or args.exact_max)
    if method == "bottleneck":
        return math.isinf(p) and n <= args.bottleneck_max
    if method == "geomloss":
        return p in (1.0, 2.0) and n <= args.geomloss_max
    return True


def warm_up(methods, cases=("uniform2",), ps=(1.0, 2.0)):
    """JIT compilation and imports outside the timings (GeomLoss: KeOps kernels per dimension and p)."""
    x, y = points("uniform2", 60, seed=99)
    for p in (1.0, 2.0, math.inf):
        for method in methods:
            if method != "geomloss" and (method not in ("emd", "lsa") or not math.isinf(p)):
                RUNNERS[method](x, y, p)
        if "ours" in methods:          # n = m runs the auction on the matrix; n != m loads the sparse graph's kernels
            RUNNERS["ours"](x, y[:-1], p)
    if "geomloss" in methods:
        for case in cases:
            x, y = points(case, 1000, seed=99)
            for p in set(ps) & {1.0, 2.0}:
                run_geomloss(x, y, p)


def bench_row(case, n, p, args, log):
    x, y = points(case, n)
    repeats = args.repeats if n <= 1000 else 1
    row = {"case": case, "d": x.shape[1], "n": n, "p": "inf" if math.isinf(p) else p, "repeats": repeats}
    methods = [m for m in METHODS if applies(m, n, p, args) and m != "floor"]
    times = {m: [] for m in methods}
    for _ in range(repeats):
        for method in methods:                # the methods take turns within each repeat
            elapsed, peak_mib, value = measure(lambda: RUNNERS[method](x, y, p))
            times[method].append(elapsed)
            row.setdefault(method, {}).update(value)
            row[method]["peak_mib"] = max(row[method].get("peak_mib", 0.0), peak_mib)
    for method in methods:
        row[method]["seconds"] = statistics.median(times[method])
    if applies("floor", n, p, args):
        if (case, n) not in _FLOOR_DONE:      # the same pass for every p: timed once per instance
            _FLOOR_DONE[(case, n)] = floor_row(x, y)
        row["floor"] = _FLOOR_DONE[(case, n)]
    derive(row)
    log(format_line(row))
    return row


def floor_row(x, y):
    """The floor's time: the fastest of FLOOR_REPEATS passes (a lower bound; the machine is shared)."""
    runs = [measure(lambda: run_floor(x, y, 1.0)) for _ in range(FLOOR_REPEATS if len(x) <= 10000 else 1)]
    return {**runs[0][2], "seconds": min(r[0] for r in runs), "peak_mib": max(r[1] for r in runs),
            "repeats": len(runs)}


def derive(row):
    """The ratios of a row from its methods' measurements."""
    exact = row.get("bottleneck" if row["p"] == "inf" else "emd")
    row.pop("ratio", None)
    if exact and "ours" in row:
        row["ratio"] = row["ours"]["objective"] / exact["objective"]
    if "emd" in row and "lsa" in row:
        row["emd_vs_lsa"] = abs(row["emd"]["cost_p"] - row["lsa"]["cost_p"]) / row["lsa"]["cost_p"]
    bound = row.get("ours", {}).get("bound")
    row["ours_gap"] = row["ours"]["objective"] / bound if bound else None
    if "geomloss" in row:
        est = row["geomloss"]["objective"]
        row["geomloss_ratio"] = est / exact["objective"] if exact else None
        if "ours" in row:
            row["geomloss_vs_ours"] = est / row["ours"]["objective"]


def merge_rows(old_rows, new_rows):
    """The recorded rows updated by a new run, method by method (a part may re-measure one method)."""
    by_key = {(r["case"], str(r["p"]), r["n"]): r for r in old_rows}
    for r in new_rows:
        key = (r["case"], str(r["p"]), r["n"])
        if key in by_key:
            by_key[key].update({k: v for k, v in r.items() if k in METHODS})
            derive(by_key[key])
        else:
            by_key[key] = r
    return list(by_key.values())


def format_line(row):
    parts = [f"{row['case']} n={row['n']} p={row['p']}:"]
    for m in METHODS:
        if m in row:
            parts.append(f"{m} {row[m]['seconds']:.3f}s/{row[m]['peak_mib']:.0f}MiB")
    if "ratio" in row:
        parts.append(f"ratio {row['ratio']:.4f}")
    if row.get("ours_gap"):
        parts.append(f"obj/bound {row['ours_gap']:.3f}")
    return " ".join(parts)


# --- reporting ----------------------------------------------------------------------------------
def _fmt(v, digits=3):
    return "-" if v is None else f"{v:.{digits}f}"


def _secs(row, m):
    return row[m]["seconds"] if m in row else None


def _ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def markdown(rows, meta):
    lines = [f"# W_p optimal transport: approx vs exact anchors ({meta['date']})", "",
             f"Machine: {meta['machine']}. Code measured: {meta.get('code', 'unknown')}. "
             f"Commands: `{meta['command']}`.", "",
             "Side by side in one process; times are medians of " f"{meta['repeats']} runs at n <= 1000 and "
             "single runs above (the methods take turns within each repeat). ours = "
             "`Transport(x, y, p=p).solve('approx')`; emd = `ot.emd` (numItermax 10^9) and lsa = "
             "`linear_sum_assignment`, both including the dense cost matrix; bottleneck = the exact W_inf "
             "solver; floor = one 2-thread pass over all n^2 distances (the fastest of 5 at n <= 10^4). "
             "ratio = W_p(ours) / W_p(exact) "
             "(exact: emd for p < inf, checked against lsa; bottleneck for p = inf); obj/bound = ours' "
             "objective over its certified lower bound (an upper bound on the true ratio, available at every "
             "size); factor = the factor ours states as proven (3, or a hair above with rounded flow costs, on the "
             "sparse graph; on the rows the auction on the full matrix solves, n = m up to 1500, 2000 for the "
             "pixel clouds, its plan's W_p over its certified bound); "
             "peak = resident memory above the level before the call (MiB). '-' = not run at that size.",
             "",
             "| case | d | p | n | ours (s) | emd (s) | lsa (s) | bottleneck (s) | floor (s) | emd / ours "
             "| lsa / ours | bottleneck / ours | ours / floor | ratio | obj / bound | factor | ours peak | emd peak "
             "| lsa peak | bottleneck peak |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
             "| ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in sorted(rows, key=lambda r: (CASES.index(r["case"]), str(r["p"]), r["n"])):
        ours = _secs(r, "ours")
        peaks = [_fmt(r[m]["peak_mib"], 0) if m in r else "-" for m in ("ours", "emd", "lsa", "bottleneck")]
        lines.append("| " + " | ".join([
            r["case"], str(r["d"]), str(r["p"]), f"{r['n']:,}",
            *(_fmt(_secs(r, m)) for m in ("ours", "emd", "lsa", "bottleneck", "floor")),
            *(_fmt(_ratio(_secs(r, m), ours), 1) for m in ("emd", "lsa", "bottleneck")),
            _fmt(_ratio(ours, _secs(r, "floor")), 2),
            _fmt(r.get("ratio"), 4), _fmt(r.get("ours_gap"), 3),
            _fmt(r["ours"].get("factor") if "ours" in r else None, 3), *peaks]) + " |")
    notes = meta.get("notes", [])   # measurements that did not finish, so no row holds them
    lines += geomloss_lines(rows) + ([""] + [f"- {note}" for note in notes] if notes else [])
    lines += ["", "## Goals, row by row", ""] + goal_lines(rows)
    codes = sorted({r["emd"]["result_code"] for r in rows if "emd" in r})
    worst = max((r["emd_vs_lsa"] for r in rows if "emd_vs_lsa" in r), default=None)
    lines += ["", f"ot.emd result codes: {codes} (1 = optimal). Largest relative difference between the "
                  f"emd and lsa optima: {_fmt(worst, 12) if worst is not None else '-'}.", "",
              "![time against n](transport.png)", "", "![W_p ratio against n](transport_ratio.png)", "",
              "![time against n at scale, with n log n and n^2 guides](transport_scaling.png)", ""]
    return "\n".join(lines)


def geomloss_lines(rows):
    """GeomLoss beside ours: time, its W_p estimate against the exact optimum and ours' certified interval."""
    sel = [r for r in rows if "geomloss" in r]
    if not sel:
        return []
    out = ["", "## GeomLoss beside ours", "",
           "GeomLoss = `SamplesLoss('sinkhorn', p=p, blur=blur, scaling=0.9, backend=...)` on float64 CPU "
           "tensors: the debiased Sinkhorn divergence S_eps with cost |x - y|^p / p and eps = blur^p. It is not "
           "W_p and carries no certificate; (p S_eps)^(1/p) is read as its estimate of W_p. It is compared with "
           "the exact W_p (ot.emd) where that ran, and with ours' certified interval: the true W_p lies in "
           "[bound, objective] of ours. 'in' = the estimate lies inside that interval; est / ours < 1 by more "
           "than ours' measured ratio means the blur biases the estimate low (at p = 1, eps = blur itself, so the "
           "same blur smooths more than at p = 2).", "",
           "| case | d | p | n | backend | blur | GeomLoss (s) | ours (s) | GeomLoss / ours (time) | W_p est "
           "| exact W_p | est / exact | ours [bound, objective] | est / ours | in |",
           "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- |"]
    for r in sorted(sel, key=lambda r: (CASES.index(r["case"]), str(r["p"]), r["n"])):
        g, ours = r["geomloss"], r.get("ours")
        exact = r.get("emd")
        interval = f"[{ours['bound']:.6f}, {ours['objective']:.6f}]" if ours and ours.get("bound") else "-"
        inside = "-" if interval == "-" else ("yes" if ours["bound"] <= g["objective"] <= ours["objective"]
                                              else "no")
        out.append("| " + " | ".join([
            r["case"], str(r["d"]), str(r["p"]), f"{r['n']:,}", g["backend"], f"{g['blur']:g}",
            _fmt(g["seconds"]), _fmt(_secs(r, "ours")), _fmt(_ratio(g["seconds"], _secs(r, "ours")), 1),
            f"{g['objective']:.6f}", f"{exact['objective']:.6f}" if exact else "-",
            _fmt(r.get("geomloss_ratio"), 4), interval, _fmt(r.get("geomloss_vs_ours"), 4), inside]) + " |")
    low = [r["geomloss_ratio"] for r in sel if r.get("geomloss_ratio") is not None]
    if low:
        out += ["", f"GeomLoss's estimate over the exact W_p: {min(low):.4f} to {max(low):.4f} "
                    f"({len(low)} rows with an exact optimum): a value with no bound, below the optimum here."
                if max(low) < 1 else
                f"GeomLoss's estimate over the exact W_p: {min(low):.4f} to {max(low):.4f} ({len(low)} rows)."]
    return out


def _p(row):
    return "inf" if row["p"] == "inf" else f"{row['p']:g}"


def goal_lines(rows):
    """Each recorded row that a size goal speaks of, against that goal (met or not)."""
    out = []
    for r in sorted(rows, key=lambda r: (CASES.index(r["case"]), str(r["p"]), r["n"])):
        ours = _secs(r, "ours")
        if r["n"] == 10000 and r["p"] in (1.0, 2.0) and "emd" in r and "ratio" in r:
            speed, ratio = _secs(r, "emd") / ours, r["ratio"]
            ok = speed >= 10 and ratio <= 1.10
            out.append(f"- {r['case']}, p = {_p(r)}, n = 10^4: {speed:.1f}x faster than ot.emd (goal >= 10x), "
                       f"ratio {ratio:.4f} (goal <= 1.10): {'met' if ok else 'NOT met'}")
        if r["case"] == "pixels" and r["n"] in (1000, 2000) and r["p"] in (1.0, 2.0) and "emd" in r and ours:
            speed = _secs(r, "emd") / ours
            out.append(f"- pixels, p = {_p(r)}, n = {r['n']}: {speed:.1f}x faster than ot.emd (goal >= 5x): "
                       f"{'met' if speed >= 5 else 'NOT met'}")
        if r["n"] == 2000 and r["p"] == "inf" and "bottleneck" in r and "ratio" in r:
            speed, ratio = _secs(r, "bottleneck") / ours, r["ratio"]
            ok = speed >= 20 and ratio <= 2
            out.append(f"- {r['case']}, p = inf, n = 2000: {speed:.1f}x faster than the exact bottleneck "
                       "(goal >= 20x), "
                       f"ratio {ratio:.4f} (goal <= 2): {'met' if ok else 'NOT met'}"
                       + ("" if ok else " (the exact bottleneck on spatial trees, which auto runs for p = inf, is "
                                        "now faster than approx: see transport_bottleneck.md)"))
        if r["n"] == 100000 and ours is not None:
            peak = r["ours"]["peak_mib"]
            cpu = r["ours"].get("cpu_seconds")
            ok = ours < 300 and peak <= 4096
            out.append(f"- {r['case']}, p = {_p(r)}, n = 10^5: {ours:.0f} s wall"
                       + (f" ({cpu:.0f} s CPU)" if cpu is not None else "")
                       + f" (goal < 300 s), peak +{peak:.0f} MiB (goal <= 4096 MiB): {'met' if ok else 'NOT met'}"
                       " (wall time on a shared, loaded machine); the later goal of 10 s: "
                       + ("met" if ours <= 10 else "NOT met"))
    return out or ["- no row at the goals' sizes recorded"]


def plot(rows, path):
    """The figures, drawn by plots.py from the JSON just written beside ``path``."""
    from plots import figure, transport_ratio, transport_scaling, transport_time
    json_path = Path(path).with_suffix(".json")
    figure(transport_time, json_path, path)
    figure(transport_ratio, json_path, Path(path).with_name(Path(path).stem + "_ratio.png"))
    figure(transport_scaling, json_path, Path(path).with_name(Path(path).stem + "_scaling.png"))


def carried_notes(old_meta, new_notes):
    """The recorded notes, then the new ones not already there: a write never drops hand-written text."""
    notes = list((old_meta or {}).get("notes", []))
    return notes + [note for note in new_notes if note not in notes]


def md_hash(text):
    return hashlib.sha256(text.encode()).hexdigest()


def check_md_untouched(output, old_meta):
    """Stop (before measuring) when the .md on disk differs from the one last written: edited by hand."""
    md = output.with_suffix(".md")
    recorded = (old_meta or {}).get("md_sha256")
    if recorded and md.exists() and md_hash(md.read_text()) != recorded:
        raise SystemExit(f"{md} was edited by hand since it was last written: copy that text into a note "
                         "(--note, or meta.notes in the .json), delete the .md (it is generated) and write again "
                         "(e.g. --redraw)")


def write_results(output, rows, meta):
    """The .json and .md (the .md's hash recorded in the .json, so a later write sees hand edits)."""
    text = markdown(rows, meta)
    meta["md_sha256"] = md_hash(text)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    output.with_suffix(".md").write_text(text)


def code_version():
    """The commit measured, and the transport files that differed from it (others edit the tree)."""
    import subprocess
    root = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root,
                              capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "solvopt/transport", "dsl/transport.py"],
                               cwd=root, capture_output=True, text=True).stdout.split("\n")
    except OSError:
        return "unknown"
    changed = [ln[3:] for ln in dirty if ln.strip()]
    return head + (f" (uncommitted changes in {', '.join(changed)})" if changed else "")


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next(ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    import numba
    import scipy
    versions = f"numpy {np.__version__}, scipy {scipy.__version__}, numba {numba.__version__}"
    try:
        import ot
        versions += f", POT {ot.__version__}"
    except ImportError:
        pass
    try:
        import geomloss
        import pykeops
        import torch
        versions += f", GeomLoss {geomloss.__version__}, torch {torch.__version__}, pykeops {pykeops.__version__}"
    except ImportError:
        pass
    return f"{cpu}, {os.cpu_count()} cores (shared), Python {platform.python_version()}, {versions}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="d = 2, n in {500, 1000}: a smoke run that writes nothing")
    ap.add_argument("--cases", nargs="+", choices=CASES, default=None)
    ap.add_argument("--sizes", nargs="+", type=int, default=None)
    ap.add_argument("--ps", nargs="+", type=float, default=None, help="p values (inf allowed)")
    ap.add_argument("--methods", nargs="+", choices=METHODS, default=None,
                    help="default: all (geomloss only where GeomLoss is installed)")
    ap.add_argument("--exact-max", type=int, default=10000, help="largest n for emd and lsa")
    ap.add_argument("--lsa-max", type=int, default=None, help="largest n for lsa (default: --exact-max)")
    ap.add_argument("--bottleneck-max", type=int, default=2000, help="largest n for the exact bottleneck")
    ap.add_argument("--geomloss-max", type=int, default=100000, help="largest n for GeomLoss")
    ap.add_argument("--geomloss-blur", type=float, default=GEOMLOSS["blur"], help="GeomLoss's blur (eps = blur^p)")
    ap.add_argument("--geomloss-backend", default=GEOMLOSS["backend"], choices=("multiscale", "online", "tensorized"))
    ap.add_argument("--repeats", type=int, default=3, help="repeats at n <= 1000")
    ap.add_argument("--code", default=None,
                    help="what code is measured, when not this checkout (e.g. a snapshot of a commit)")
    ap.add_argument("--merge", action="store_true",
                    help="merge into the recorded results (method by method) instead of replacing them")
    ap.add_argument("--output", type=Path, default=RESULTS / "transport", help="results path without extension")
    ap.add_argument("--redraw", action="store_true",
                    help="rewrite the .md and .png from the recorded .json (runs nothing)")
    ap.add_argument("--note", action="append", default=[],
                    help="a note for the results (a measurement no row holds); kept by every later write")
    args = ap.parse_args(argv)
    if args.methods is None:
        import importlib.util
        args.methods = [m for m in METHODS if m != "geomloss" or importlib.util.find_spec("geomloss")]
    path_json = args.output.with_suffix(".json")
    old = json.loads(path_json.read_text()) if path_json.exists() else None
    old_meta = old.get("meta") if old else None
    if not args.quick:
        check_md_untouched(args.output, old_meta)
    if args.redraw:
        meta = {**old_meta, "notes": carried_notes(old_meta, args.note)}
        write_results(args.output, old["rows"], meta)
        plot(old["rows"], args.output.with_suffix(".png"))
        return
    if args.quick:
        args.cases = args.cases or ["uniform2", "pixels"]
        args.sizes = args.sizes or list(QUICK_SIZES)
        args.ps = args.ps or [1.0, 2.0, math.inf]
    args.cases = args.cases or list(CASES)
    args.sizes = args.sizes or list(FULL_SIZES)
    args.ps = args.ps or [1.0, 2.0, math.inf]
    load_start = os.getloadavg()[0]
    version = args.code or code_version()
    GEOMLOSS.update(blur=args.geomloss_blur, backend=args.geomloss_backend)
    warm_up(args.methods, args.cases, args.ps)
    rows = []
    for case in args.cases:
        for p in args.ps:
            for n in args.sizes:
                rows.append(bench_row(case, n, p, args, lambda s: print(s, flush=True)))
    if args.quick:
        print(markdown(rows, {"date": "quick run", "machine": machine(), "command": "--quick",
                              "repeats": args.repeats}))
        return
    if args.merge and old:
        rows = merge_rows(old["rows"], rows)
        runs = old_meta.get("runs", []) if old_meta else []
    else:
        runs = []
    runs.append({"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                 "code": version,
                 "command": "python benchmarks/transport.py " + " ".join(argv if argv is not None else sys.argv[1:]),
                 "load_start": load_start, "load_end": os.getloadavg()[0]})
    meta = {"date": runs[-1]["date"][:10], "machine": machine() + "; load averages (start, end) per run: "
            + ", ".join(f"({r['load_start']:.1f}, {r['load_end']:.1f})" for r in runs),
            "command": "; ".join(r["command"] for r in runs), "repeats": args.repeats, "runs": runs,
            "code": "; ".join(sorted({r.get("code", "unknown") for r in runs})),
            "notes": carried_notes(old_meta, args.note)}
    write_results(args.output, rows, meta)
    plot(rows, args.output.with_suffix(".png"))
    print(f"wrote {args.output}.{{json,md,png}}")


if __name__ == "__main__":
    main()
