"""One command for a machine with a CUDA device: GPU tests, GPU figures, results with versions.

It runs every GPU test, measures the GPU against our best CPU kernel in the same run, and writes the
results with the date, the device, the driver and CUDA versions.

Phases, each with a budget and a timeout (the whole run fits in 8 minutes; ``--quick`` in about 4):

- ``setup``: solvopt from this checkout (no install needed); CuPy, else ``pip install -e
  ".[gpu,test]"`` (fails fast with one line, and the device parts are skipped); the wheels carried
  in ``build/gpu_stage/whl`` (dask, distributed and their missing dependencies) when dask is missing;
- ``device``: device name, compute capability, SMs, memory; CUDA driver and runtime versions (CuPy's
  runtime/driver APIs), NVRTC, and ``nvidia-smi``'s driver version;
- ``tests``: ``python -m pytest -m gpu`` on every test file holding GPU-marked tests (each kernel
  against the NumPy reference on the same inputs; ``tests/test_gpu_kernels.py`` adds the edge cases
  and a Dask run with a CUDA worker);
- ``measure`` (a child process with a timeout; each item has its own budget, a size whose predicted
  time exceeds what is left is skipped or, for a CPU baseline, extrapolated and marked so):
  stochastic split of X-n101-k25 at 10^6 scenarios (module load reported apart; end to end through
  the public API, and the kernel's device time from CUDA events), 10^7 and 10^8 in one call chunked
  on the device, X-n1001-k43 at 10^6; the min-plus engine on the IRP files; the transport kernels at
  n = 10^5 and 10^6; each against the Numba CPU kernel (all cores) in the same run; CPU and GPU
  per-scenario costs / values / distances compared bit for bit; a roofline line per kernel;
- ``cli``: the same split and one IRP file through ``python -m solvopt.cli`` (process wall time);
- ``write``: ``benchmarks/results/gpu.md``, ``gpu.json`` and ``gpu.png`` (time against scenarios,
  log-log, CPU and GPU); with ``--copy-to DIR`` also there, with the logs.

Without a CUDA device the device phases are skipped with one line saying so and nothing is written
to the results (no GPU figure is ever written that was not measured on a device).

    python benchmarks/gpu_run.py --dry-run          # the plan: phases, budgets, sizes; runs nothing
    python benchmarks/gpu_run.py --stage            # here, with PyPI: build/gpu_stage for the device
    bash benchmarks/gpu_run.sh --copy-to "$OUT"     # on the device machine (``--quick``: a subset)
    python benchmarks/gpu_run.py --cpu-only --quick # the CPU halves of the measurements, writes nothing
    bash benchmarks/gpu_run.sh --no-tests --items split-101 split-big   # a targeted rerun

A rerun writes gpu.* from that run alone: keep the first run's files (``--out`` elsewhere).
"""
from __future__ import annotations

import argparse
import datetime
import glob
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
STAGE = ROOT / "build" / "gpu_stage"
WORK = ROOT / "build" / "gpu_run"
WHEEL_SITE = Path("/tmp/solvopt-gpu-site")

# Roofline ceilings. Bandwidth: the H200 datasheet (HBM3e); a device-to-device copy moved about 4.3
# TB/s on this kind of machine. Arithmetic: SMs x lanes per SM per clock x clock, with Hopper's 64
# FP64 and 64 INT32 lanes per SM (an FMA counted as 2 FP64 operations, no tensor cores), the SM
# count read from the device and the boost clock below unless the device reports its own.
H200_BANDWIDTH = 4.8e12          # bytes/s
H200_SMS = 132
H200_CLOCK_HZ = 1.98e9
FP64_LANES, INT32_LANES = 64, 64

PHASES_FULL = {"setup": 20, "device": 20, "tests": 130, "measure": 240, "cli": 35, "write": 10}
PHASES_QUICK = {"setup": 20, "device": 20, "tests": 70, "measure": 110, "cli": 25, "write": 10}
TOTAL_FULL, TOTAL_QUICK = 470, 260
QUICK_TEST_FILES = ("tests/test_gpu_compile.py", "tests/test_gpu_kernels.py")
STAGE_WHEELS = ("partd>=1.4", "locket>=1.0", "tblib>=1.6,!=3.2.0,!=3.2.1", "tornado>=6.2", "zict>=3.0")


def say(*parts) -> None:
    print(*parts, flush=True)


# --- instances ----------------------------------------------------------------------------------------
def instance_dirs(extra: str | None = None) -> list[Path]:
    """Where instances are looked for, in order: --instances, $SOLVOPT_INSTANCES, the staged copy,
    the repository's samples, a shared/ folder inside the checkout, then ../shared beside it."""
    dirs = [extra, os.environ.get("SOLVOPT_INSTANCES"), STAGE / "instances", ROOT / "instances",
            ROOT / "shared" / "instances", ROOT.parent / "shared" / "instances"]
    return [Path(d) for d in dirs if d and Path(d).is_dir()]


def find_instance(family: str, name: str, extra: str | None = None) -> Path | None:
    for d in instance_dirs(extra):
        p = d / family / name
        if p.is_file():
            return p
    return None


def irp_files(extra: str | None = None) -> list[Path]:
    """Every IRP file found (first location wins per name), smallest first."""
    found: dict[str, Path] = {}
    for d in instance_dirs(extra):
        for p in sorted((d / "irp").glob("*.dat")):
            found.setdefault(p.name, p)
    return sorted(found.values(), key=lambda p: (p.stat().st_size, p.name))


# --- the plan -------------------------------------------------------------------------------------------
def measure_plan(quick: bool) -> list[dict]:
    """The measurement items in run order: what each measures, its sizes and its budget (s)."""
    if quick:
        return [
            {"id": "split-101", "budget": 30, "what": "X-n101-k25 at 10^6 scenarios: module load apart, first call, "
             "end to end (public API, 3 repeats) and kernel device time (CUDA events), CPU Numba all cores (1 repeat)"},
            {"id": "split-big", "budget": 20, "what": "X-n101-k25 at 10^7 in one call (chunks of 2^20 on the device); "
             "CPU measured when its predicted time fits, else extrapolated from 10^6 and marked so"},
            {"id": "split-same", "budget": 10, "what": "bit-identical per-scenario costs, CPU vs GPU: X-n101-k25 10^5 "
             "(infeasible and penalty policies), X-n1001-k43 10^4"},
            {"id": "split-1001", "budget": 15, "what": "X-n1001-k43 at 10^6 on the GPU (1 repeat); CPU at 10^4, "
             "10^6 extrapolated"},
            {"id": "irp", "budget": 20, "what": "min-plus engine on the two smallest IRP files at W = 10^4: end to end "
             "and kernel only, CPU and GPU, scenario values bit for bit"},
            {"id": "transport", "budget": 15, "what": "transport kernels at n = 10^5 (nearest centre, bunch counts "
             "and fill, hub distances, pair distances), CPU and GPU, outputs bit for bit"},
        ]
    return [
        {"id": "split-101", "budget": 40, "what": "X-n101-k25 at 10^6 scenarios: module load apart, first call, "
         "end to end (public API, 5 repeats) and kernel device time (CUDA events, 5 repeats), CPU Numba all cores "
         "(3 repeats)"},
        {"id": "split-big", "budget": 70, "what": "X-n101-k25 at 10^7 (chunks of 2^20 and of 2^23) and 10^8 in one "
         "call, chunked on the device; CPU measured when its predicted time fits, else extrapolated and marked so"},
        {"id": "split-same", "budget": 15, "what": "bit-identical per-scenario costs, CPU vs GPU: X-n101-k25 10^6 "
         "and 10^5 under the penalty policy, X-n1001-k43 10^5"},
        {"id": "split-1001", "budget": 30, "what": "X-n1001-k43 at 10^6 (2 repeats, scenario-splits per second) "
         "and its kernel device time; CPU at 10^5, at 10^6 when it fits, else extrapolated"},
        {"id": "irp", "budget": 40, "what": "min-plus engine on every IRP file found at W = 10^5, the largest also at "
         "10^6: end to end (public API) and kernel only, CPU and GPU, scenario values bit for bit"},
        {"id": "transport", "budget": 45, "what": "transport kernels at n = 10^5 and 10^6 (nearest of sqrt(n) "
         "centres, bunch counts and fill over n x n pairs, sqrt(n) x n hub distances, n pair distances), CPU and "
         "GPU, outputs bit for bit; through the approximation's Distances at 10^5"},
    ]


def gpu_test_files(quick: bool) -> list[str]:
    if quick:
        return [f for f in QUICK_TEST_FILES if (ROOT / f).is_file()]
    files = []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if "mark.gpu" in text:
            files.append(path.relative_to(ROOT).as_posix())
    return files


# --- child processes ----------------------------------------------------------------------------------------
def child_env() -> dict:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    paths = [str(ROOT)] + ([str(WHEEL_SITE)] if WHEEL_SITE.is_dir() else [])
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def run_child(cmd: list[str], timeout: float, log: Path | None = None) -> tuple[str, int | None, str]:
    """(status ok|failed|timeout, exit code, output); the output is echoed, indented, as it comes, and
    what came before a timeout is kept (the child's process group is killed then)."""
    import select
    chunks: list[bytes] = []
    timed_out = False
    at_line_start = True
    with subprocess.Popen(cmd, cwd=ROOT, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          start_new_session=True) as proc:
        fd = proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            text = chunk.decode(errors="replace")
            for piece in text.splitlines(keepends=True):
                sys.stdout.write(("    " if at_line_start else "") + piece)
                at_line_start = piece.endswith("\n")
            sys.stdout.flush()
        if timed_out:
            try:
                os.killpg(proc.pid, 9)
            except ProcessLookupError:
                pass
        proc.wait()
    if not at_line_start:
        print(flush=True)
    out = b"".join(chunks).decode(errors="replace")
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(out)
    if timed_out:
        return "timeout", None, out
    return ("ok" if proc.returncode == 0 else "failed"), proc.returncode, out


def read_partial(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            pass            # a line cut by a timeout
    return out


# --- phase: setup (in this process) ------------------------------------------------------------------------
def phase_setup(args, record: dict) -> bool:
    """True when CuPy imports (the device phases may run)."""
    notes = record["setup"] = {}
    for name in ("numpy", "numba"):
        try:
            __import__(name)
        except ImportError:
            say(f"setup: {name} is missing: cannot run (pip install -e . first)")
            raise SystemExit(2) from None
    sys.path.insert(0, str(ROOT))
    import solvopt  # noqa: F401  the checkout's package (maps solvopt.dsl / solvopt.gpu to dsl/ and gpu/)
    wheels = sorted(glob.glob(str(STAGE / "whl" / "*.whl")))
    if wheels and not _importable("distributed"):
        status, code, out = run_child([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                                       "--no-compile", "--upgrade", "--target", str(WHEEL_SITE), *wheels], 60)
        notes["wheels"] = f"{len(wheels)} carried wheels -> {WHEEL_SITE}: {status}"
        if status == "ok":
            sys.path.insert(0, str(WHEEL_SITE))
        say(f"setup: {notes['wheels']}")
    if _importable("cupy"):
        import importlib.metadata as md
        dists = [d for d in ("cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x", "cupy") if _has_dist(md, d)]
        notes["cupy"] = f"CuPy already installed ({', '.join(dists) or 'cupy'}): the gpu extra's install is skipped"
        say(f"setup: {notes['cupy']}")
        return True
    if args.no_install or args.dry_run or args.cpu_only:
        notes["cupy"] = ("CuPy not installed (install not tried: "
                         + ("--cpu-only" if args.cpu_only else "--no-install") + ")")
        say(f"setup: {notes['cupy']}")
        return False
    if not nvidia_driver_visible():
        notes["cupy"] = "CuPy not installed; no NVIDIA driver here (no nvidia-smi, no /dev/nvidia0): install not tried"
        say(f"setup: {notes['cupy']}")
        return False
    say('setup: CuPy missing: pip install -e ".[gpu,test]" (fails fast without a package index)')
    status, code, out = run_child([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                                   "--retries", "0", "--timeout", "10", "-e", ".[gpu,test]"], 120)
    ok = status == "ok" and _importable("cupy")
    last = (out.strip().splitlines() or [""])[-1][:200]
    notes["cupy"] = "gpu extra installed" if ok else f"cannot install the gpu extra ({status}): {last}"
    say(f"setup: {notes['cupy']}")
    return ok


def nvidia_driver_visible() -> bool:
    return shutil.which("nvidia-smi") is not None or os.path.exists("/dev/nvidia0")


def _importable(name: str) -> bool:
    try:
        __import__(name)
        return True
    except Exception:
        return False


def _has_dist(md, name: str) -> bool:
    try:
        md.version(name)
        return True
    except md.PackageNotFoundError:
        return False


# --- phase: device (child) ------------------------------------------------------------------------------------
def child_device(partial: Path) -> None:
    info: dict = {"kind": "device", "count": 0}
    try:
        import cupy as cp
        info["cupy"] = cp.__version__
        info["count"] = int(cp.cuda.runtime.getDeviceCount())
        info["cuda_runtime"] = _cuda_version(cp.cuda.runtime.runtimeGetVersion())
        info["cuda_driver_api"] = _cuda_version(cp.cuda.runtime.driverGetVersion())
        try:
            info["nvrtc"] = ".".join(map(str, cp.cuda.nvrtc.getVersion()))
        except Exception as exc:
            info["nvrtc"] = f"unknown ({type(exc).__name__})"
        if info["count"]:
            props = cp.cuda.runtime.getDeviceProperties(0)
            name = props["name"]
            info["name"] = name.decode() if isinstance(name, bytes) else str(name)
            info["cc"] = f"{props['major']}.{props['minor']}"
            info["sms"] = int(props["multiProcessorCount"])
            info["memory_gib"] = round(props["totalGlobalMem"] / 2**30, 1)
            info["l2_mib"] = round(props.get("l2CacheSize", 0) / 2**20, 1)
            if props.get("clockRate"):
                info["clock_ghz"] = props["clockRate"] / 1e6
    except Exception as exc:
        info["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            q = subprocess.run([smi, "--query-gpu=name,driver_version,memory.total,clocks.max.sm",
                                "--format=csv,noheader"], capture_output=True, text=True, timeout=15)
            info["nvidia_smi"] = q.stdout.strip().splitlines()[0] if q.stdout.strip() else q.stderr.strip()[:200]
            if q.stdout.strip():
                info["driver"] = q.stdout.split(",")[1].strip()
            head = subprocess.run([smi], capture_output=True, text=True, timeout=15).stdout
            m = re.search(r"CUDA Version:\s*([\d.]+)", head)
            if m:
                info["smi_cuda"] = m.group(1)
        except Exception as exc:
            info["nvidia_smi"] = f"failed: {type(exc).__name__}"
    else:
        info["nvidia_smi"] = "not found"
    with open(partial, "a") as f:
        f.write(json.dumps(info) + "\n")
    say(json.dumps(info))


def _cuda_version(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"


# --- phase: measure (child) -------------------------------------------------------------------------------------
class Sink:
    """Appends one JSON line per result to the partial file (what a timeout leaves is kept)."""

    def __init__(self, path: Path):
        self.path = path

    def __call__(self, kind: str, **rec) -> None:
        rec["kind"] = kind
        with open(self.path, "a") as f:
            f.write(json.dumps(rec, default=float) + "\n")
        if kind == "row":
            flag = "" if rec.get("measured", True) else "  [extrapolated, not measured]"
            say(f"  {rec['case']:<28} {rec['size']:>11,} {rec['backend']:<4} {rec['what']:<10} "
                f"{rec['seconds']:10.4f} s{flag}")
        elif kind == "same":
            say(f"  same {rec['case']:<28} {rec['what']:<24} n={rec['n']:,}: "
                f"{'bit-identical' if rec['equal'] else 'DIFFERENT'}"
                + ("" if rec['equal'] else f" ({rec['detail']})"))
        elif kind in ("skip", "note"):
            say(f"  {kind}: {rec['text']}")


class ItemBudget:
    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()

    def fits(self, predicted: float, margin: float = 1.0) -> bool:
        return predicted + margin <= self.left()


def _sync():
    import cupy as cp
    cp.cuda.Device().synchronize()


def wall(fn, gpu: bool = False):
    t0 = time.perf_counter()
    out = fn()
    if gpu:
        _sync()
    return time.perf_counter() - t0, out


def event_time(fn) -> float:
    """Device time of what fn launches, from CUDA events on the current stream (seconds)."""
    import cupy as cp
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    fn()
    stop.record()
    stop.synchronize()
    return cp.cuda.get_elapsed_time(start, stop) / 1e3


def repeat(fn, n: int, gpu: bool = False, budget: ItemBudget | None = None) -> list[float]:
    times = []
    for i in range(n):
        t, _ = wall(fn, gpu)
        times.append(t)
        if budget is not None and budget.left() < 2 * t and i >= 0:
            break
    return times


def _row(sink, case, size, backend, what, times, measured=True, note="", unit="scenarios", **extra):
    times = [float(t) for t in (times if isinstance(times, (list, tuple)) else [times])]
    sink("row", group=extra.pop("group", case.split()[0]), case=case, size=int(size), unit=unit, backend=backend,
         what=what, seconds=statistics.median(times), times=times, measured=measured, note=note, **extra)
    return statistics.median(times)


def peaks(device: dict) -> dict:
    sms = int(device.get("sms") or H200_SMS)
    clock = float(device.get("clock_ghz") or H200_CLOCK_HZ / 1e9) * 1e9
    return {"bandwidth": H200_BANDWIDTH, "fp64": sms * FP64_LANES * 2 * clock, "int32": sms * INT32_LANES * clock,
            "sms": sms, "clock_ghz": clock / 1e9}


def roofline(sink, pk: dict, kernel: str, case: str, size: int, seconds: float, bytes_: float, ops: dict,
             note: str) -> None:
    """One line: achieved bandwidth and operation rates against the ceilings, and what bounds it."""
    t_bytes = bytes_ / pk["bandwidth"]
    t_ops = {k: v / pk[k] for k, v in ops.items() if v}
    floor = max([t_bytes, *t_ops.values()])
    bound = "memory" if floor == t_bytes else max(t_ops, key=t_ops.get)
    sink("roofline", kernel=kernel, case=case, size=int(size), seconds=seconds, bytes=bytes_, ops=ops,
         gbs=bytes_ / seconds / 1e9, bandwidth_share=t_bytes / seconds,
         op_rates={k: v / seconds for k, v in ops.items()}, op_shares={k: t / seconds for k, t in t_ops.items()},
         bound=bound, roofline_share=floor / seconds, note=note)
    say(f"  roofline {kernel:<16} {case:<22} {bytes_ / seconds / 1e9:9.1f} GB/s ({100 * t_bytes / seconds:5.1f}% of "
        f"{pk['bandwidth'] / 1e12:.1f} TB/s); " + ", ".join(f"{k} {100 * t / seconds:5.1f}%" for k, t in t_ops.items())
        + f"; bound by {bound}, at {100 * floor / seconds:.1f}% of its roofline")


# --- split ----------------------------------------------------------------------------------------------------
def split_parts(path: Path, scenarios: int, **kw):
    from solvopt.cvrp.solvers import compile_split
    from solvopt.dsl import StochasticSplit
    from solvopt.io import read_instance
    model = StochasticSplit.from_instance(read_instance(path), scenarios=scenarios, **kw)
    return model, compile_split(model)


def split_kernel_call(compiled, count: int, seed: int, on_gpu: bool):
    """A zero-argument call of the fused kernel over scenarios 0..count-1 (arrays prepared once)."""
    import numpy as np

    from solvopt.cvrp.sampling import philox_key
    from solvopt.cvrp.stochastic import NO_MATRIX
    tour0, entry, exit_, cap, lam, pen = compiled.problem_arrays
    tables = compiled.table_arrays
    key = philox_key(seed)
    if on_gpu:
        import cupy as cp

        from solvopt.gpu.cvrp import scenario_costs
        dev = cp.asarray
        out = cp.empty(count, dtype=cp.float64)
        args = (0, dev(NO_MATRIX), key, *(dev(a) for a in tables), dev(tour0), dev(entry), dev(exit_), cap, lam, pen,
                out)
    else:
        from solvopt.cvrp.kernels_numba import scenario_costs
        out = np.empty(count)
        args = (0, NO_MATRIX, key, *tables, tour0, entry, exit_, cap, lam, pen, out)
    return lambda: scenario_costs(*args)


def split_traffic(compiled, sample: int = 2000) -> dict:
    """Per scenario: the inner (p, i) steps the kernel reads (the break check included), from a host
    sample of the same demand stream; the bytes and operations the roofline line charges."""
    import numpy as np

    from solvopt.cvrp.sampling import sample_demands_numpy
    d = sample_demands_numpy(compiled.tables, 0, 0, sample)
    tour0 = compiled.geom.tour0
    n, cap = len(tour0), compiled.capacity
    loads = np.concatenate([np.zeros((sample, 1), np.int64), np.cumsum(d[:, tour0], axis=1)], axis=1)
    i = np.arange(1, n + 1)
    steps = 0
    for row in loads:
        first = np.searchsorted(row, row[1:] - cap, side="left")        # first p with prefix[p] >= load_i - Q
        inner = np.maximum(0, (i - 1) - first)                            # p in [first, i-2]
        steps += int(inner.sum() + np.count_nonzero((first > 0) & (inner < i - 1)))
    per = steps / sample
    # scratch in DRAM: prefix (4 B) + value (8 B) written per customer, read per inner step; 8 B out
    bytes_ = (n + 1) * 12 + per * 12 + 8
    # Philox4x32-10 per customer: 10 rounds x (2 mul.hi + 2 mul.lo + 4 xor + 2 key adds) = 100, + ~10 for the
    # conversion and the guided inversion; FP64: one fmin per inner step, a multiply and 3 adds per customer
    return {"inner_steps": per, "bytes": bytes_, "int32": 110 * n, "fp64": per + 4 * n, "n": n}


def item_split_101(args, sink, budget, gpu, pk, inst):
    S = 10**6
    model, compiled = split_parts(inst["X-n101-k25"], S)
    small, _ = split_parts(inst["X-n101-k25"], 1000)
    t, _ = wall(lambda: small.solve(method="split", device="cpu", seed=0))
    sink("note", text=f"CPU first call (Numba compile or cache load) {t:.2f} s, Numba threads "
                      f"{__import__('numba').get_num_threads()}")
    reps_gpu, reps_cpu = (3, 1) if args.quick else (5, 3)
    case = "split X-n101-k25"
    if gpu:
        from solvopt.gpu.harness import load_module
        t, _ = wall(lambda: [load_module("cvrp.cu").get_function(k) for k in ("split_fused", "split_matrix")], True)
        _row(sink, case, S, "gpu", "load", t, note="one-time module load (NVRTC compile or CuPy's disk cache), "
             "reported apart from every other GPU time")
        t, _ = wall(lambda: model.solve(method="split-cuda", seed=0), True)
        _row(sink, case, S, "gpu", "first call", t, note="first solve after the module load (allocations)")
        times = repeat(lambda: model.solve(method="split-cuda", seed=1), reps_gpu, True, budget)
        _row(sink, case, S, "gpu", "e2e", times, note="StochasticSplit.solve(method='split-cuda'), warm")
        call = split_kernel_call(compiled, S, 1, True)
        call()
        dev = [event_time(call) for _ in range(reps_gpu)]
        _row(sink, case, S, "gpu", "kernel", dev, note="split_fused device time (CUDA events)")
        tr = split_traffic(compiled)
        roofline(sink, pk, "split_fused", "X-n101-k25", S, statistics.median(dev), tr["bytes"] * S,
                 {"int32": tr["int32"] * S, "fp64": tr["fp64"] * S},
                 f"{tr['inner_steps']:.0f} inner steps per scenario; per-thread scratch in DRAM")
    times = repeat(lambda: model.solve(method="split", device="cpu", seed=1), reps_cpu, False, budget)
    _row(sink, case, S, "cpu", "e2e", times, note="StochasticSplit.solve(method='split'), Numba, all threads")
    call = split_kernel_call(compiled, S, 1, False)
    call()
    _row(sink, case, S, "cpu", "kernel", repeat(call, reps_cpu, False, budget), note="Numba fused kernel, all threads")


def item_split_big(args, sink, budget, gpu, pk, inst, rows):
    case = "split X-n101-k25"
    cpu = {r["size"]: r["seconds"] for r in rows if r.get("case") == case and r["backend"] == "cpu"
           and r["what"] == "e2e" and r.get("measured", True)}
    gpu_t = {r["size"]: r["seconds"] for r in rows if r.get("case") == case and r["backend"] == "gpu"
             and r["what"] == "e2e"}
    sizes = [10**7] if args.quick else [10**7, 10**8]
    for S in sizes:
        model, _ = split_parts(inst["X-n101-k25"], S)
        if gpu:
            prev = max((s for s in gpu_t if s < S), default=None)
            predicted = gpu_t[prev] * S / prev if prev else 0.0
            if not budget.fits(predicted):
                sink("skip", text=f"GPU {S:.0e}: predicted {predicted:.1f} s, {budget.left():.1f} s left")
            else:
                chunks = [None] if (args.quick or S > 10**7) else [None, 1 << 23]
                for chunk in chunks:
                    t, r = wall(lambda: model.solve(method="split-cuda", seed=1, chunk=chunk), True)
                    label = "e2e" if chunk is None else "e2e 2^23"
                    _row(sink, case, S, "gpu", label, t, note=f"one call, {r.stats['chunks']} chunks of "
                         f"{r.stats['chunk']:,} on the device")
                    gpu_t.setdefault(S, t)
        prev = max((s for s in cpu if s < S), default=None)
        if prev is None:
            continue
        predicted = cpu[prev] * S / prev
        reserve = 0.0 if S == sizes[-1] else 10.0
        if budget.fits(predicted + reserve) and not (args.quick and S > 10**7):
            t, _ = wall(lambda: model.solve(method="split", device="cpu", seed=1))
            cpu[S] = t
            _row(sink, case, S, "cpu", "e2e", t, note="one call, Numba, all threads")
        else:
            _row(sink, case, S, "cpu", "e2e", predicted, measured=False,
                 note=f"extrapolated linearly from {prev:.0e} (predicted {predicted:.0f} s did not fit the budget)")


def item_split_same(args, sink, budget, gpu, pk, inst):
    import numpy as np
    if not gpu:
        sink("skip", text="bit-identical CPU/GPU costs: no device")
        return
    cases = [("X-n101-k25", 10**5 if args.quick else 10**6, {}),
             ("X-n101-k25", 10**5, {"policy": "penalty", "penalty": 2.0})]
    if "X-n1001-k43" in inst:
        cases.append(("X-n1001-k43", 10**4 if args.quick else 10**5, {}))
    for name, S, kw in cases:
        if budget.left() < 3:
            sink("skip", text=f"bit-identical {name} {S:.0e}: out of budget")
            continue
        model, _ = split_parts(inst[name], S, **kw)
        g = model.solve(method="split-cuda", seed=7, keep_costs=True)
        c = model.solve(method="split", device="cpu", seed=7, keep_costs=True)
        a, b = g.solution["scenario_costs"], c.solution["scenario_costs"]
        equal = bool(a.shape == b.shape and np.array_equal(a, b))
        diff = np.abs(np.where(np.isfinite(a) & np.isfinite(b), a - b, 0.0)).max() if a.shape == b.shape else np.nan
        detail = (f"{int(np.count_nonzero(a != b))} costs differ, max |diff| {diff:.3g}; "
                  f"objective {g.objective!r} vs {c.objective!r}")
        sink("same", case=f"split {name}", what="per-scenario costs" + (" (penalty)" if kw else ""), n=S,
             equal=equal, detail=detail, objective_rel=abs(g.objective - c.objective) / max(abs(c.objective), 1e-300))


def item_split_1001(args, sink, budget, gpu, pk, inst):
    if "X-n1001-k43" not in inst:
        sink("skip", text="X-n1001-k43 not found (looked in: " + ", ".join(map(str, instance_dirs(args.instances)))
             + "); python benchmarks/gpu_run.py --stage copies it into build/gpu_stage")
        return
    S = 10**6
    case = "split X-n1001-k43"
    model, compiled = split_parts(inst["X-n1001-k43"], S)
    if gpu:
        warm, _ = split_parts(inst["X-n1001-k43"], 10**4)
        warm.solve(method="split-cuda", seed=0)
        t_small, _ = wall(lambda: warm.solve(method="split-cuda", seed=2), True)
        predicted = t_small * S / 10**4
        if not budget.fits(predicted + 5):
            sink("skip", text=f"GPU X-n1001-k43 10^6: predicted {predicted:.1f} s from 10^4, "
                              f"{budget.left():.0f} s left; 10^5 instead")
            S_gpu, gmodel = 10**5, split_parts(inst["X-n1001-k43"], 10**5)[0]
        else:
            S_gpu, gmodel = S, model
        times = repeat(lambda: gmodel.solve(method="split-cuda", seed=1), 1 if args.quick else 2, True, budget)
        t = _row(sink, case, S_gpu, "gpu", "e2e", times, note=f"{S_gpu / min(times):.3g} scenario-splits per second")
        if not args.quick and S_gpu == S and budget.fits(t):
            call = split_kernel_call(compiled, S, 1, True)
            dev = event_time(call)
            _row(sink, case, S, "gpu", "kernel", dev, note="split_fused device time (CUDA events)")
            tr = split_traffic(compiled, 300)
            roofline(sink, pk, "split_fused", "X-n1001-k43", S, dev, tr["bytes"] * S,
                     {"int32": tr["int32"] * S, "fp64": tr["fp64"] * S},
                     f"{tr['inner_steps']:.0f} inner steps per scenario; per-thread scratch in DRAM")
    base = 10**4 if args.quick else 10**5
    small, _ = split_parts(inst["X-n1001-k43"], base)
    small.solve(method="split", device="cpu", seed=0) if args.quick else None
    t, _ = wall(lambda: small.solve(method="split", device="cpu", seed=1))
    _row(sink, case, base, "cpu", "e2e", t, note="Numba, all threads")
    predicted = t * S / base
    if not args.quick and budget.fits(predicted):
        t, _ = wall(lambda: model.solve(method="split", device="cpu", seed=1))
        _row(sink, case, S, "cpu", "e2e", t, note="Numba, all threads")
    else:
        _row(sink, case, S, "cpu", "e2e", predicted, measured=False,
             note=f"extrapolated linearly from {base:.0e} (predicted {predicted:.0f} s did not fit the budget)")


# --- IRP on the min-plus engine -------------------------------------------------------------------------------
def item_irp(args, sink, budget, gpu, pk, inst):
    import numpy as np

    from solvopt.io import read_instance
    from solvopt.irp.instance import model_from_instance
    from solvopt.irp.reinsertion import compile_inventory
    files = irp_files(args.instances)
    if not files:
        sink("skip", text="no IRP files found")
        return
    files = files[:2] if args.quick else files
    W0 = 10**4 if args.quick else 10**5
    for k, path in enumerate(files):
        sizes = [W0] + ([10**6] if (not args.quick and k == len(files) - 1) else [])
        for W in sizes:
            if budget.left() < 4:
                sink("skip", text=f"IRP {path.stem} W={W:.0e}: out of budget")
                continue
            case = f"irp {path.stem}"
            model = model_from_instance(read_instance(path), 1, scenarios=W)
            small = model_from_instance(read_instance(path), 1, scenarios=1000)
            keep = {"keep_values": W} if W <= 10**5 else {}
            times = {}
            for backend, method in (("gpu", "cuda"), ("cpu", "numba")):
                if backend == "gpu" and not gpu:
                    continue
                small.solve(method, seed=0)                         # compile / load, allocations
                t_small, _ = wall(lambda: small.solve(method, seed=1), backend == "gpu")
                predicted = t_small * W / 1000
                if not budget.fits(predicted + 2):
                    sink("skip", text=f"IRP {path.stem} W={W:.0e} on the {backend.upper()}: "
                                      f"predicted {predicted:.1f} s from W=1000, {budget.left():.0f} s left")
                    continue
                t, r = wall(lambda: model.solve(method, seed=3, **keep), backend == "gpu")
                times[backend] = r
                _row(sink, case, W, backend, "e2e", t, group="irp",
                     note=f"InventoryReinsertion.solve('{method}'); kernel_time {r.stats.get('kernel_time', 0):.4f} s")
            if "gpu" in times and "cpu" in times and keep:
                a = times["gpu"].solution["scenario_values"]
                b = times["cpu"].solution["scenario_values"]
                sink("same", case=case, what="scenario values", n=W, equal=bool(np.array_equal(a, b)),
                     detail=f"max |diff| {np.nanmax(np.abs(np.where(np.isfinite(a) & np.isfinite(b), a - b, 0))):.3g}")
            kernel_s = sum(r.stats.get("kernel_time", 0.0) for r in times.values())
            if W == W0 and budget.fits(2 * kernel_s + 2):
                irp_kernels(sink, pk, gpu, case, compile_inventory(model).dp, W)
            elif W == W0:
                sink("skip", text=f"IRP {path.stem} kernel only: predicted {2 * kernel_s:.1f} s, "
                                  f"{budget.left():.0f} s left")


def irp_kernels(sink, pk, gpu, case, compiled, count):
    """Kernel only on one chunk of ``count`` scenarios: Numba forward vs the CUDA forward (events)."""
    import numpy as np

    from solvopt.dp import kernels_numba
    t = compiled.chunk(0, count, 0)
    args = (t.initial, compiled.ptr, t.src, t.cost, t.choice, compiled.n_states, compiled.sentinel)
    no_slots = np.empty((0, 0, 0), compiled.slot_index_dtype)
    out = np.empty((compiled.max_states, count), compiled.dtype)
    kernels_numba.forward(*args, out, no_slots)
    cpu_t, _ = wall(lambda: kernels_numba.forward(*args, out, no_slots))
    _row(sink, case, count, "cpu", "kernel", cpu_t, group="irp", note="Numba forward, all threads")
    if not gpu:
        return
    import cupy as cp

    from solvopt.gpu import dp as gpu_dp
    dev = [cp.asarray(a) for a in args[:6]]
    out_d = cp.empty((compiled.max_states, count), compiled.dtype)
    slots_d = cp.empty((0, 0, 0), compiled.slot_index_dtype)
    call = lambda: gpu_dp.forward(*dev, compiled.sentinel, out_d, slots_d)   # noqa: E731
    call()
    dev_t = statistics.median(event_time(call) for _ in range(3))
    _row(sink, case, count, "gpu", "kernel", dev_t, group="irp", note="minplus forward device time (CUDA events)")
    sink("same", case=case, what="kernel values (one chunk)", n=count,
         equal=bool(np.array_equal(cp.asnumpy(out_d), out)), detail="Numba forward vs CUDA forward")
    transitions = compiled.model.n_transitions * count
    item = np.dtype(compiled.dtype).itemsize
    layer_values = sum(int(a) + int(b) for a, b in zip(compiled.n_states[:-1], compiled.n_states[1:])) * count * item
    tensors = sum(int(a.nbytes) for a in (t.src, t.cost, t.choice, t.initial))
    roofline(sink, pk, "minplus", case.replace("irp ", ""), count, dev_t, layer_values + tensors,
             {"fp64" if item == 8 else "fp32": 2 * transitions},
             f"{transitions / dev_t / 1e9:.1f} G transitions/s; bytes: each layer's values read and written once "
             "plus the chunk's tensors (a lower bound)")


# --- transport kernels ------------------------------------------------------------------------------------------
TRANSPORT_KERNELS = ("nearest", "bunch_counts", "bunch_fill", "distances", "pairs")
EXPONENT = {"nearest": 1.5, "bunch_counts": 2.0, "bunch_fill": 2.0, "distances": 1.5, "pairs": 1.0}
NEEDS = {"bunch_counts": "nearest", "bunch_fill": "bunch_counts"}
OUTPUTS = {"nearest": ("index", "dist"), "bunch_counts": ("counts",), "bunch_fill": ("cols", "bdist"),
           "distances": ("hub",), "pairs": ("pairs",)}
PROBE = 10**4


class TransportCase:
    """Uniform points in the unit square, n sources and n targets, k = round(sqrt(n)) centres drawn from
    the targets, radii = the distance to the nearest centre (the approximation's construction)."""

    def __init__(self, n: int, xp):
        import numpy as np
        rng = np.random.default_rng(n)
        self.n, self.d, self.k, self.xp = n, 2, int(round(math.sqrt(n))), xp
        x, y = rng.random((n, self.d)), rng.random((n, self.d))
        self.centres = np.sort(rng.choice(n, self.k, replace=False))
        yc = np.ascontiguousarray(y[self.centres])
        pi, pj = rng.integers(0, n, n), rng.integers(0, n, n)
        self.x, self.y, self.yc, self.pi, self.pj = (xp.asarray(a) for a in (x, y, yc, pi, pj))
        self.host_x, self.host_y = x, y
        self.out: dict = {}
        self.done: set = set()

    def prepare(self, name: str) -> None:
        xp, o, n = self.xp, self.out, self.n
        if name == "nearest":
            o["index"], o["dist"] = xp.empty(n, xp.int64), xp.empty(n)
        elif name == "bunch_counts":
            o["counts"] = xp.empty(n, xp.int64)
        elif name == "bunch_fill":
            o["indptr"] = xp.concatenate((xp.zeros(1, xp.int64), xp.cumsum(o["counts"])))
            total = int(o["indptr"][-1])
            o["cols"], o["bdist"] = xp.empty(total, xp.int64), xp.empty(total)
        elif name == "distances":
            o["hub"] = xp.empty((self.k, n))
        else:
            o["pairs"] = xp.empty(n)

    def run(self, k, name: str) -> None:
        o = self.out
        if name == "nearest":
            k.nearest(self.x, self.yc, 0, o["index"], o["dist"])
        elif name == "bunch_counts":
            k.bunch_counts(self.x, self.y, o["dist"], 0, o["counts"])
        elif name == "bunch_fill":
            k.bunch_fill(self.x, self.y, o["dist"], 0, o["indptr"], o["cols"], o["bdist"])
        elif name == "distances":
            k.distances(self.yc, self.y, 0, o["hub"])
        else:
            k.pair_distances(self.x, self.y, self.pi, self.pj, 0, o["pairs"])

    def ready(self, name: str) -> bool:
        return NEEDS.get(name) is None or NEEDS[name] in self.done


def item_transport(args, sink, budget, gpu, pk, inst):
    import numpy as np

    from solvopt.transport.graph import kernel_module
    cpu_k = kernel_module("numba")
    sizes = [10**5] if args.quick else [10**5, 10**6]
    warm = TransportCase(100, np)                       # Numba compile / cache load
    probe = TransportCase(PROBE, np)
    probe_t = {}
    for name in TRANSPORT_KERNELS:
        warm.prepare(name)
        warm.run(cpu_k, name)
        warm.done.add(name)
        probe.prepare(name)
        probe_t[name], _ = wall(lambda: probe.run(cpu_k, name))
        probe.done.add(name)
    gpu_t: dict = {}
    if gpu:
        import cupy as cp

        from solvopt.gpu import transport as gpu_k
        g = TransportCase(100, cp)
        for name in TRANSPORT_KERNELS:                  # module load, first launches
            g.prepare(name)
            g.run(gpu_k, name)
            g.done.add(name)
        _sync()
        g = TransportCase(PROBE, cp)                    # the first size's predictions
        for name in TRANSPORT_KERNELS:
            g.prepare(name)
            gpu_t[name] = (PROBE, event_time(lambda: g.run(gpu_k, name)))
            g.done.add(name)
    for n in sizes:
        c = TransportCase(n, np)
        g = TransportCase(n, cp) if gpu else None
        for name in TRANSPORT_KERNELS:
            case = f"transport {name}"
            if g is not None:
                prev = gpu_t.get(name)
                predicted = prev[1] * (n / prev[0]) ** EXPONENT[name] if prev else 0.0
                if not g.ready(name) or not budget.fits(predicted):
                    sink("skip", text=f"GPU {name} n={n:.0e}: predicted {predicted:.1f} s, {budget.left():.1f} s left")
                else:
                    g.prepare(name)
                    t = event_time(lambda: g.run(gpu_k, name))
                    g.done.add(name)
                    gpu_t[name] = (n, t)
                    _row(sink, case, n, "gpu", "kernel", t, unit="points", group="transport",
                         note="device-resident arrays, CUDA events")
                    transport_roofline(sink, pk, name, n, g.k, g.d, t,
                                       int(g.out["cols"].shape[0]) if name == "bunch_fill" else 0)
            predicted = probe_t[name] * (n / PROBE) ** EXPONENT[name]
            if c.ready(name) and budget.fits(predicted + 2):
                c.prepare(name)
                t, _ = wall(lambda: c.run(cpu_k, name))
                c.done.add(name)
                _row(sink, case, n, "cpu", "kernel", t, unit="points", group="transport", note="Numba, all threads")
            else:
                _row(sink, case, n, "cpu", "kernel", predicted, measured=False, unit="points", group="transport",
                     note=f"extrapolated from n = {PROBE:.0e} as n^{EXPONENT[name]:g} (predicted {predicted:.0f} s "
                          "did not fit the budget)")
            if g is not None and name in g.done and name in c.done:
                for key in OUTPUTS[name]:
                    a, b = g.out[key], c.out[key]
                    what = f"{name} {key}"
                    if a.size > 1 << 24:                 # a slice of the largest outputs (host memory and time)
                        a, b, what = a.ravel()[: 1 << 24], b.ravel()[: 1 << 24], what + " (first 2^24 entries)"
                    a = cp.asnumpy(a)
                    sink("same", case="transport kernels", what=what, n=n,
                         equal=bool(a.shape == b.shape and np.array_equal(a, b)),
                         detail=f"{int(np.count_nonzero(a != b)) if a.shape == b.shape else 'shapes differ'} "
                                "entries differ")
        if n == sizes[0]:
            predicted = sum(probe_t[k] * (n / PROBE) ** EXPONENT[k] for k in ("nearest", "bunch_counts",
                                                                                  "bunch_fill", "distances"))
            if budget.fits(predicted + 2):
                transport_api(sink, gpu, c.host_x, c.host_y, c.centres, n)
            else:
                sink("skip", text=f"Distances at n={n:.0e}: the CPU side is predicted at {predicted:.0f} s, "
                                  f"{budget.left():.0f} s left")
        c = g = None                # drop this size's CPU and GPU arrays before the next size allocates


def transport_roofline(sink, pk, name, n, k, d, seconds, nnz):
    evals = {"nearest": n * k, "bunch_counts": n * n, "bunch_fill": n * n, "distances": k * n, "pairs": n}[name]
    ops = evals * (3 * d + 2)          # per axis a subtract, a multiply, an add; the square root and the compare
    b = {"nearest": n * (d * 8 + 16) + k * d * 8, "bunch_counts": n * (d * 8 + 16) + n * d * 8,
         "bunch_fill": n * (d * 8 + 24) + n * d * 8 + nnz * 16, "distances": k * n * 8 + (k + n) * d * 8,
         "pairs": n * (16 + 2 * d * 8 + 8)}[name]
    roofline(sink, pk, f"tr_{name}", f"uniform d={d}", n, seconds, b, {"fp64": ops},
             f"{evals:.3g} distance evaluations ({3 * d + 2} FP64 operations each, the square root as one)")


def transport_api(sink, gpu, x, y, centres, n):
    """The approximation's Distances (host arrays in and out) on both kernel sets, as the solver calls them."""
    from solvopt.dsl import Transport
    from solvopt.transport.graph import Distances
    model = Transport(x, y, p=2)
    for backend, kernels in (("gpu", "cuda"), ("cpu", "numba")):
        if backend == "gpu" and not gpu:
            continue
        dist = Distances(model, kernels=kernels)

        def run():
            _, r = dist.nearest_centre(centres)
            dist.bunches(r)
            dist.hub_distances(centres, None)
        t, _ = wall(run, backend == "gpu")
        _row(sink, "transport Distances", n, backend, "api", t, unit="points", group="transport",
             note="nearest_centre + bunches + hub_distances, host arrays (copies included)")


ITEMS = {"split-101": item_split_101, "split-big": item_split_big, "split-same": item_split_same,
         "split-1001": item_split_1001, "irp": item_irp, "transport": item_transport}


def child_measure(args, partial: Path) -> None:
    sink = Sink(partial)
    device = next((r for r in read_partial(partial) if r.get("kind") == "device"), {})
    gpu = not args.cpu_only
    if gpu:
        from solvopt.core.backend import gpu_available
        gpu = gpu_available()
        if not gpu:
            say("measure: no CUDA device visible to CuPy: GPU halves skipped")
    pk = peaks(device)
    inst = {}
    for name in ("X-n101-k25", "X-n1001-k43"):
        p = find_instance("cvrp", f"{name}.vrp", args.instances)
        if p is not None:
            inst[name] = p
    if "X-n101-k25" not in inst:
        sink("skip", text="X-n101-k25 not found: the split items are skipped")
    sink("note", text="instances: " + ", ".join(f"{k} <- {v}" for k, v in inst.items()))
    for item in measure_plan(args.quick):
        if args.items and item["id"] not in args.items:
            continue
        if item["id"].startswith("split") and "X-n101-k25" not in inst:
            continue
        say(f"measure: {item['id']} (budget {item['budget']} s): {item['what']}")
        budget = ItemBudget(item["budget"])
        t0 = time.monotonic()
        fn = ITEMS[item["id"]]
        try:
            if item["id"] == "split-big":
                fn(args, sink, budget, gpu, pk, inst, [r for r in read_partial(partial) if r.get("kind") == "row"])
            else:
                fn(args, sink, budget, gpu, pk, inst)
            status = "ok"
        except Exception as exc:
            import traceback
            traceback.print_exc()
            status = f"failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        spent = time.monotonic() - t0
        sink("item", id=item["id"], status=status, seconds=spent, budget=item["budget"])
        say(f"measure: {item['id']} {status} in {spent:.1f} s (budget {item['budget']} s)")


# --- phase: cli (in this process, children with timeouts) --------------------------------------------------------
def phase_cli(args, partial: Path, budget_s: float) -> None:
    sink = Sink(partial)
    end = time.monotonic() + budget_s
    runs = []
    split = find_instance("cvrp", "X-n101-k25.vrp", args.instances)
    S = 10**5 if args.quick else 10**6
    if split is not None:
        base = ["-m", "solvopt.cli", "solve", str(split), "--scenarios", str(S), "--seed", "1", "--json"]
        runs += [("cli split X-n101-k25", S, "gpu", base + ["-m", "split-cuda"]),
                 ("cli split X-n101-k25", S, "cpu", base + ["-m", "split", "--device", "cpu"])]
    irp = irp_files(args.instances)
    if irp:
        W = 10**4 if args.quick else 10**5
        base = ["-m", "solvopt.cli", "solve", str(irp[-1]), "--scenarios", str(W), "--seed", "1", "--json"]
        runs += [(f"cli irp {irp[-1].stem}", W, "gpu", base + ["-m", "cuda"]),
                 (f"cli irp {irp[-1].stem}", W, "cpu", base + ["-m", "numba"])]
    objectives: dict = {}
    for case, size, backend, cmd in runs:
        left = end - time.monotonic()
        if left < 5:
            sink("skip", text=f"{case} {backend}: out of the cli budget")
            continue
        t0 = time.perf_counter()
        try:
            p = subprocess.run([sys.executable, *cmd], cwd=ROOT, env=child_env(), capture_output=True, text=True,
                               timeout=left)
        except subprocess.TimeoutExpired:
            sink("skip", text=f"{case} {backend}: timed out after {left:.0f} s")
            continue
        t = time.perf_counter() - t0
        if p.returncode != 0:
            sink("note", text=f"{case} {backend}: exit {p.returncode}: {(p.stderr or p.stdout).strip()[-300:]}")
            continue
        try:
            res = json.loads(p.stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            res = {}
        stats = res.get("stats", {})
        objectives.setdefault(case, {})[backend] = res.get("objective")
        _row(sink, case, size, backend, "cli", t, group="cli",
             note=f"process wall time (start, imports, module load); the solve's own wall_time "
                  f"{stats.get('wall_time', float('nan')):.3f} s, backend {stats.get('backend')}")
    for case, obj in objectives.items():
        if len(obj) == 2 and None not in obj.values():
            rel = abs(obj["gpu"] - obj["cpu"]) / max(abs(obj["cpu"]), 1e-300)
            sink("note", text=f"{case}: objectives {obj['gpu']!r} (GPU) and {obj['cpu']!r} (CPU), relative "
                              f"difference {rel:.2g} (the chunk means are reduced on the device: equal to rounding)")


# --- phase: write ---------------------------------------------------------------------------------------------------
def size_text(n: int) -> str:
    """10^6 for a power of ten, else the number with thousands separators."""
    k = round(math.log10(n)) if n > 0 else 0
    return f"10^{k}" if n == 10**k and k >= 3 else f"{n:,}"


def ratios(rows: list[dict]) -> list[dict]:
    """CPU / GPU per (case, size, what) where both exist; kernel rows pair GPU events with CPU wall."""
    out = []
    by = {}
    for r in rows:
        by.setdefault((r["case"], r["size"], r["what"]), {})[r["backend"]] = r
    for (case, size, what), pair in by.items():
        if "cpu" in pair and "gpu" in pair:
            c, g = pair["cpu"], pair["gpu"]
            out.append({"case": case, "size": size, "what": what, "cpu_s": c["seconds"], "gpu_s": g["seconds"],
                        "ratio": c["seconds"] / g["seconds"] if g["seconds"] > 0 else None,
                        "cpu_measured": c.get("measured", True), "gpu_measured": g.get("measured", True)})
    return out


def markdown(record: dict) -> str:
    m, dev = record["meta"], record["device"]
    L = [f"# GPU run ({m['date']})", "",
         f"`{m['command']}` ({m['mode']} mode). Device: **{dev.get('name', '?')}** (compute capability "
         f"{dev.get('cc', '?')}, {dev.get('sms', '?')} SMs, {dev.get('memory_gib', '?')} GiB); driver "
         f"{dev.get('driver', '?')} (nvidia-smi: {dev.get('nvidia_smi', '?')}; CUDA {dev.get('smi_cuda', '?')}); "
         f"CUDA driver API {dev.get('cuda_driver_api', '?')}, runtime {dev.get('cuda_runtime', '?')}, NVRTC "
         f"{dev.get('nvrtc', '?')}, CuPy {dev.get('cupy', '?')}. Host: {m['host']}.", "",
         "Every GPU time is the median of its repeats; *kernel* rows on the GPU are device time from CUDA "
         "events, on the CPU wall time of the Numba kernel (all threads); *e2e* rows time the public API "
         "(`solve`), *cli* rows the whole `python -m solvopt.cli` process. The one-time module load is the "
         "*load* row, excluded from every other time. Rows marked *extrapolated* were not measured: their "
         "predicted time did not fit the run's budget.", "",
         "## Phases", "", "| phase | status | seconds | budget s | note |", "| --- | --- | ---: | ---: | --- |"]
    for name, p in record["phases"].items():
        L.append(f"| {name} | {p['status']} | {p.get('seconds', 0):.1f} | {p.get('budget', 0):.0f} "
                 f"| {p.get('note', '')} |")
    t = record.get("tests", {})
    L += ["", "## GPU tests", "", f"`{t.get('command', '')}`: **{t.get('summary', 'not run')}**"]
    for line in t.get("failures", []):
        L.append(f"- `{line}`")
    L += ["", "## CPU against GPU", "", "| case | size | what | CPU s | GPU s | CPU / GPU |",
          "| --- | ---: | --- | ---: | ---: | ---: |"]
    for r in record["ratios"]:
        mark = "" if r["cpu_measured"] else " (extrapolated)"
        L.append(f"| {r['case']} | {size_text(r['size'])} | {r['what']} | {r['cpu_s']:.4g}{mark} | {r['gpu_s']:.4g} | "
                 f"{r['ratio']:.1f}x{mark} |")
    L += ["", "## Bit-identical CPU and GPU results", "", "| case | what | n | identical | detail |",
          "| --- | --- | ---: | --- | --- |"]
    for s in record["same"]:
        L.append(f"| {s['case']} | {s['what']} | {size_text(s['n'])} | {'yes' if s['equal'] else '**no**'} "
                 f"| {s['detail']} |")
    pk = record["peaks"]
    L += ["", "## Roofline", "",
          f"Ceilings used: memory {pk['bandwidth'] / 1e12:.1f} TB/s (H200 datasheet, HBM3e); FP64 "
          f"{pk['fp64'] / 1e12:.1f} TFLOP/s = {pk['sms']} SMs x {FP64_LANES} lanes x 2 (FMA) x "
          f"{pk['clock_ghz']:.2f} GHz, "
          f"no tensor cores; INT32 {pk['int32'] / 1e12:.1f} Tops/s = {pk['sms']} x {INT32_LANES} x "
          f"{pk['clock_ghz']:.2f} GHz. Bytes and operations are counted from the kernel's code (see the note); "
          "*share* = the time the ceiling would allow / the measured time.", "",
          "| kernel | case | size | device s | GB/s | bandwidth share | operation shares | bound "
          "| at % of roofline | note |",
          "| --- | --- | ---: | ---: | ---: | ---: | --- | --- | ---: | --- |"]
    for r in record["roofline"]:
        shares = ", ".join(f"{k} {100 * v:.1f}%" for k, v in r["op_shares"].items())
        L.append(f"| {r['kernel']} | {r['case']} | {size_text(r['size'])} | {r['seconds']:.4g} | {r['gbs']:.0f} | "
                 f"{100 * r['bandwidth_share']:.1f}% | {shares} | {r['bound']} | {100 * r['roofline_share']:.1f} | "
                 f"{r['note']} |")
    L += ["", "## Every row", "", "| case | size | backend | what | seconds | repeats | measured | note |",
          "| --- | ---: | --- | --- | ---: | ---: | --- | --- |"]
    for r in record["rows"]:
        L.append(f"| {r['case']} | {size_text(r['size'])} | {r['backend']} | {r['what']} | {r['seconds']:.4g} | "
                 f"{len(r['times'])} | {'yes' if r.get('measured', True) else 'extrapolated'} | {r['note']} |")
    if record["notes"]:
        L += ["", "## Notes and skipped parts", ""] + [f"- {n}" for n in record["notes"]]
    L += ["", "![time against scenarios, CPU and GPU](gpu.png)", ""]
    return "\n".join(L)


def plot(record: dict, path: Path) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        say("write: matplotlib missing: no gpu.png")
        return False
    lines: dict = {}
    for r in record["rows"]:
        if r["what"] in ("e2e", "e2e 2^23") and r["unit"] == "scenarios":
            lines.setdefault((r["case"], r["backend"]), []).append(r)
    if not lines:
        return False
    fig, ax = plt.subplots(figsize=(7.5, 5))
    colours = {case: f"C{i % 10}" for i, case in enumerate(sorted({case for case, _ in lines}))}
    for (case, backend), rs in sorted(lines.items()):
        rs = sorted(rs, key=lambda r: r["size"])
        best = {}
        for r in rs:
            if r["size"] not in best or r["seconds"] < best[r["size"]]["seconds"]:
                best[r["size"]] = r
        rs = [best[s] for s in sorted(best)]
        xs, ys = [r["size"] for r in rs], [r["seconds"] for r in rs]
        style = "-" if backend == "gpu" else "--"
        (line,) = ax.plot(xs, ys, style, marker="o" if backend == "gpu" else "s", color=colours[case],
                          label=f"{case}, {backend.upper()}")
        ex = [r for r in rs if not r.get("measured", True)]
        if ex:
            ax.plot([r["size"] for r in ex], [r["seconds"] for r in ex], "o", mfc="white", mec=line.get_color(),
                    ms=9, label=f"{case}, {backend.upper()} extrapolated")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("scenarios")
    ax.set_ylabel("seconds (end to end, median)")
    ax.set_title(f"CPU (Numba, all threads) and GPU ({record['device'].get('name', '?')})", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def assemble(args, record: dict, partial: Path) -> None:
    items = read_partial(partial)
    record["device"] = next((r for r in items if r.get("kind") == "device"), record.get("device", {}))
    record["rows"] = [r for r in items if r.get("kind") == "row"]
    record["same"] = [r for r in items if r.get("kind") == "same"]
    record["roofline"] = [r for r in items if r.get("kind") == "roofline"]
    record["items"] = [r for r in items if r.get("kind") == "item"]
    record["notes"] = [r["text"] for r in items if r.get("kind") in ("note", "skip")]
    record["notes"] += [f"measure item {i['id']}: {i['status']}" for i in record["items"] if i["status"] != "ok"]
    reported = {i["id"] for i in record["items"]}
    if record["rows"] or reported:
        record["notes"] += [f"measure item {item['id']}: not finished (the measure phase ended first)"
                            for item in measure_plan(record["meta"].get("mode") == "quick")
                            if item["id"] not in reported]
    record["ratios"] = ratios(record["rows"])
    record["peaks"] = peaks(record["device"])


# --- stage (here, with PyPI) ------------------------------------------------------------------------------------
def stage() -> int:
    """Copy the instances the run needs and download the Python 3.12 wheels the device lacks into
    build/gpu_stage (ignored by git), then print the device call that carries it."""
    import importlib.metadata as md
    (STAGE / "instances" / "cvrp").mkdir(parents=True, exist_ok=True)
    (STAGE / "instances" / "irp").mkdir(parents=True, exist_ok=True)
    for name in ("X-n101-k25.vrp", "X-n1001-k43.vrp"):
        src = next((d / "cvrp" / name for d in instance_dirs() if d != STAGE / "instances"
                    and (d / "cvrp" / name).is_file()), None)
        if src is None:
            say(f"stage: {name} not found")
        else:
            shutil.copy2(src, STAGE / "instances" / "cvrp" / name)
    for p in irp_files():
        if p.parent != STAGE / "instances" / "irp":
            shutil.copy2(p, STAGE / "instances" / "irp" / p.name)
    whl = STAGE / "whl"
    whl.mkdir(exist_ok=True)
    pins = []
    for name in ("dask", "distributed"):
        try:
            pins.append(f"{name}=={md.version(name)}")
        except md.PackageNotFoundError:
            pins.append(name)
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version",
           "3.12", "--implementation", "cp", "-d", str(whl)]
    for plat in ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64"):
        cmd += ["--platform", plat]
    p = subprocess.run(cmd + pins + list(STAGE_WHEELS), capture_output=True, text=True)
    if p.returncode != 0:
        say(f"stage: pip download failed: {p.stderr.strip()[-400:]}")
        return 1
    size = sum(f.stat().st_size for f in STAGE.rglob("*") if f.is_file())
    say(f"stage: {STAGE.relative_to(ROOT)}: {sum(1 for _ in STAGE.rglob('*') if _.is_file())} files, "
        f"{size / 2**20:.1f} MiB")
    for f in sorted(STAGE.rglob("*")):
        if f.is_file():
            say(f"  {f.relative_to(STAGE)}")
    say("device call: run(carry=['build/gpu_stage'], timeout_s=560, command='bash benchmarks/gpu_run.sh "
        "--copy-to $OUT')")
    return 0


# --- the driver -----------------------------------------------------------------------------------------------------
def dry_run(args, phases: dict, total: float) -> None:
    say(f"dry run ({'quick' if args.quick else 'full'} mode): nothing runs, nothing is written")
    say(f"  total budget {total:.0f} s; phases (budget = timeout, s): "
        + ", ".join(f"{k} {v}" for k, v in phases.items()))
    say("  CuPy: " + ("importable" if _importable("cupy") else "not installed; setup would " + (
        "try: pip install -e \".[gpu,test]\"" if nvidia_driver_visible() else "not install it: no NVIDIA driver here")))
    for name in ("X-n101-k25.vrp", "X-n1001-k43.vrp"):
        p = find_instance("cvrp", name, args.instances)
        say(f"  instance {name}: {p if p else 'NOT FOUND (its items are skipped with a line)'}")
    say(f"  IRP files: {', '.join(p.name for p in irp_files(args.instances)) or 'none'}")
    files = gpu_test_files(args.quick)
    say(f"  tests: python -m pytest -q -m gpu {' '.join(files)}")
    for item in measure_plan(args.quick):
        say(f"  measure {item['id']:<11} budget {item['budget']:>3} s: {item['what']}")
    say("  cli: python -m solvopt.cli solve X-n101-k25.vrp --scenarios "
        f"{10**5 if args.quick else 10**6} (-m split-cuda | -m split --device cpu); the largest IRP file at "
        f"{10**4 if args.quick else 10**5} scenarios (-m cuda | -m numba)")
    say(f"  write: {Path(args.out) / 'gpu.md'}, gpu.json, gpu.png (only with a device)"
        + (f"; copies and logs to {args.copy_to}" if args.copy_to else ""))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true",
                   help="a subset: smaller sizes, fewer repeats, the new GPU tests only")
    p.add_argument("--dry-run", action="store_true", help="print the plan (phases, budgets, sizes) and exit")
    p.add_argument("--stage", action="store_true", help="prepare build/gpu_stage (instances, wheels) and exit")
    p.add_argument("--cpu-only", action="store_true",
                   help="run the measurements' CPU halves only (no device needed); writes nothing")
    p.add_argument("--no-install", action="store_true", help="never pip install the gpu extra")
    p.add_argument("--out", default=str(RESULTS), help="where gpu.md, gpu.json and gpu.png go")
    p.add_argument("--copy-to", default=None, help="also copy the results and logs there (e.g. $OUT)")
    p.add_argument("--instances", default=None, help="an extra instance folder (cvrp/, irp/ inside)")
    p.add_argument("--budget", type=float, default=None, help="total seconds (default 470, quick 260)")
    p.add_argument("--items", nargs="*", default=None, help="only these measurement items")
    p.add_argument("--work", default=str(WORK), help="scratch folder: the partial results and the logs")
    p.add_argument("--no-tests", action="store_true", help="skip the GPU tests (a rerun of the measurements)")
    p.add_argument("--no-cli", action="store_true", help="skip the command-line runs")
    p.add_argument("--phase", default=None, help=argparse.SUPPRESS)      # internal: a child phase
    p.add_argument("--partial", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.phase:
        sys.path.insert(0, str(ROOT))
        partial = Path(args.partial)
        {"device": lambda: child_device(partial), "measure": lambda: child_measure(args, partial)}[args.phase]()
        return 0
    if args.stage:
        return stage()
    phases = dict(PHASES_QUICK if args.quick else PHASES_FULL)
    total = args.budget or (TOTAL_QUICK if args.quick else TOTAL_FULL)
    if args.dry_run:
        dry_run(args, phases, total)
        return 0
    start = time.monotonic()
    deadline = start + total
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    partial = work / "partial.jsonl"
    partial.unlink(missing_ok=True)
    record: dict = {"meta": {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "mode": "quick" if args.quick else "full",
        "command": " ".join(["python benchmarks/gpu_run.py", *(sys.argv[1:] if argv is None else argv)]),
        "host": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
                f"{platform.python_version()}"}, "phases": {}, "tests": {}}

    def phase(name: str, fn, note_if_skipped: str | None = None):
        budget = min(phases[name], max(0.0, deadline - time.monotonic() - (phases["write"] if name != "write" else 0)))
        if note_if_skipped is not None:
            record["phases"][name] = {"status": "skipped", "budget": phases[name], "note": note_if_skipped}
            say(f"== {name}: skipped: {note_if_skipped}")
            return None
        say(f"== {name} (budget {budget:.0f} s)")
        t0 = time.monotonic()
        status, note = fn(budget)
        record["phases"][name] = {"status": status, "seconds": time.monotonic() - t0, "budget": phases[name],
                                  "note": note}
        return status

    have_cupy = [False]

    def setup(budget):
        have_cupy[0] = phase_setup(args, record)
        return "ok", "; ".join(record["setup"].values())
    phase("setup", setup)

    device: dict = {}

    def dev(budget):
        status, code, out = run_child([sys.executable, __file__, "--phase", "device", "--partial", str(partial)],
                                      budget)
        device.update(next((r for r in read_partial(partial) if r.get("kind") == "device"), {}))
        return status, device.get("name") or device.get("error", "no device")
    if args.cpu_only:
        phase("device", dev, "--cpu-only")
    else:
        phase("device", dev, None if have_cupy[0] else "CuPy is not installed")
    has_device = bool(device.get("count"))
    if not has_device and not args.cpu_only:
        say("no CUDA device visible to CuPy"
            + (f" ({device['error']})" if device.get("error") else "")
            + ": the device parts (GPU tests run only to show they skip; measurements; CLI on the GPU) are "
              "skipped, and nothing is written to " + str(Path(args.out) / "gpu.*"))

    def tests(budget):
        files = gpu_test_files(args.quick)
        cmd = [sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-rfEs", "-p", "no:cacheprovider", *files]
        record["tests"]["command"] = "python -m pytest -q -m gpu " + " ".join(files)
        status, code, out = run_child(cmd, budget, work / "gpu_tests.log")
        summary = next((ln.strip("= ").strip() for ln in reversed(out.splitlines())
                        if re.search(r"\d+ (passed|failed|skipped|deselected|error)", ln)), "no summary line")
        record["tests"].update(summary=summary if status != "timeout" else f"timed out after {budget:.0f} s "
                               f"(last: {summary})", exit=code,
                               failures=[ln for ln in out.splitlines() if ln.startswith(("FAILED", "ERROR"))][:40])
        # pytest exit 5 = no test collected; 0 = all passed (or skipped)
        return ("ok" if code in (0, 5) else status if status == "timeout" else "failed"), record["tests"]["summary"]
    if args.cpu_only or args.no_tests:
        phase("tests", tests, "--cpu-only" if args.cpu_only else "--no-tests")
    else:
        phase("tests", tests)

    def measure(budget):
        cmd = [sys.executable, __file__, "--phase", "measure", "--partial", str(partial)]
        cmd += ["--quick"] if args.quick else []
        cmd += ["--cpu-only"] if args.cpu_only else []
        cmd += ["--instances", args.instances] if args.instances else []
        cmd += ["--items", *args.items] if args.items else []
        status, code, out = run_child(cmd, budget, work / "gpu_measure.log")
        return status, f"exit {code}" if status != "timeout" else "timed out: what was measured before is kept"
    if has_device or args.cpu_only:
        phase("measure", measure)
    else:
        phase("measure", measure, "no CUDA device")

    def cli(budget):
        phase_cli(args, partial, budget)
        return "ok", ""
    if has_device and not args.no_cli:
        phase("cli", cli)
    else:
        phase("cli", cli, "--no-cli" if args.no_cli else "no CUDA device")

    assemble(args, record, partial)
    record["meta"]["seconds"] = time.monotonic() - start
    if not has_device:
        say(f"== write: skipped: no CUDA device, no GPU results written (ran {record['meta']['seconds']:.0f} s)")
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    text = markdown(record)
    (out / "gpu.json").write_text(json.dumps(record, indent=1, default=str))
    (out / "gpu.md").write_text(text)
    drew = plot(record, out / "gpu.png")
    say(text)
    written = ["gpu.json", "gpu.md"] + (["gpu.png"] if drew else [])
    say(f"== write: {', '.join(str(out / w) for w in written)} (total {record['meta']['seconds']:.0f} s)")
    if args.copy_to:
        dest = Path(args.copy_to)
        dest.mkdir(parents=True, exist_ok=True)
        for w in written:
            shutil.copy2(out / w, dest / w)
        for log in ("gpu_tests.log", "gpu_measure.log"):
            if (work / log).is_file():
                shutil.copy2(work / log, dest / log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
