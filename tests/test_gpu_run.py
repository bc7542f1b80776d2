"""benchmarks/gpu_run.py on a machine without a device: the plan, the skip lines, nothing written;
its budgets fit the 8-minute box; what it writes from measured records says what was measured.

The device parts themselves run only on a machine with a CUDA device (see docs/dp.md, GPU runs).
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest
from helpers import REPO

SCRIPT = REPO / "benchmarks" / "gpu_run.py"
RESULTS = REPO / "benchmarks" / "results"


@pytest.fixture(scope="module")
def gpu_run():
    spec = importlib.util.spec_from_file_location("gpu_run", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(*args, timeout=120):
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


def results_state():
    return {p.name: p.stat().st_mtime_ns for p in RESULTS.glob("gpu.*")}


@pytest.mark.parametrize("quick", [False, True])
def test_the_dry_run_prints_the_plan_and_writes_nothing(tmp_path, gpu_run, quick):
    before = results_state()
    p = run("--dry-run", "--out", str(tmp_path / "res"), "--work", str(tmp_path / "work"),
            *(["--quick"] if quick else []))
    assert p.returncode == 0, p.stderr
    assert "nothing runs, nothing is written" in p.stdout
    for item in gpu_run.measure_plan(quick):
        assert f"measure {item['id']}" in p.stdout
    assert "python -m pytest -q -m gpu" in p.stdout and "tests/test_gpu_kernels.py" in p.stdout
    assert not (tmp_path / "res").exists() and not (tmp_path / "work").exists()
    assert results_state() == before


def test_without_a_device_the_device_parts_are_skipped_with_a_line(tmp_path):
    from solvopt.core.backend import gpu_available
    if gpu_available():
        pytest.skip("this machine has a CUDA device: the script would run the device parts")
    before = results_state()
    p = run("--quick", "--no-install", "--out", str(tmp_path / "res"), "--work", str(tmp_path / "work"),
            "--budget", "100")
    assert p.returncode == 0, p.stdout + p.stderr
    out = p.stdout
    assert "no CUDA device visible to CuPy" in out and "the device parts" in out
    assert "== measure: skipped: no CUDA device" in out and "== cli: skipped: no CUDA device" in out
    assert "== write: skipped: no CUDA device, no GPU results written" in out
    assert "pip install" not in out.replace('pip install -e ".[gpu,test]"', "")   # --no-install: nothing tried
    log = (tmp_path / "work" / "gpu_tests.log").read_text()          # the GPU tests ran and skipped cleanly
    assert "skipped" in log and " failed" not in log and " error" not in log
    assert not (tmp_path / "res").exists()
    assert results_state() == before


def test_the_budgets_fit_the_eight_minute_box(gpu_run):
    for quick, phases, total in ((False, gpu_run.PHASES_FULL, gpu_run.TOTAL_FULL),
                                 (True, gpu_run.PHASES_QUICK, gpu_run.TOTAL_QUICK)):
        assert sum(phases.values()) <= total <= 8 * 60
        assert sum(item["budget"] for item in gpu_run.measure_plan(quick)) <= phases["measure"]
    assert gpu_run.TOTAL_QUICK < gpu_run.TOTAL_FULL


def test_instances_are_looked_for_beside_and_inside_the_checkout(gpu_run, tmp_path):
    (tmp_path / "cvrp").mkdir()
    (tmp_path / "cvrp" / "X-n101-k25.vrp").write_text("NAME : copy\n")
    assert gpu_run.find_instance("cvrp", "X-n101-k25.vrp", str(tmp_path)) == tmp_path / "cvrp" / "X-n101-k25.vrp"
    assert gpu_run.find_instance("cvrp", "X-n101-k25.vrp") is not None          # the repository's sample
    assert gpu_run.find_instance("cvrp", "no-such.vrp", str(tmp_path)) is None
    assert [p.name for p in gpu_run.irp_files()][:1] and all(p.suffix == ".dat" for p in gpu_run.irp_files())


def test_the_report_marks_what_was_extrapolated_and_states_identity(gpu_run, tmp_path):
    """The writer on a recorded run: ratios pair CPU and GPU rows; an extrapolated CPU time is never
    shown as measured; bit-identity and the roofline come from their records."""
    partial = tmp_path / "partial.jsonl"
    sink = gpu_run.Sink(partial)
    with open(partial, "a") as f:
        f.write(json.dumps({"kind": "device", "count": 1, "name": "Test GPU", "sms": 100, "cc": "9.0"}) + "\n")
    row = gpu_run._row
    row(sink, "split X-n101-k25", 10**6, "gpu", "e2e", [0.010, 0.012, 0.011])
    row(sink, "split X-n101-k25", 10**6, "cpu", "e2e", [1.5])
    row(sink, "split X-n101-k25", 10**8, "gpu", "e2e", [0.9])
    row(sink, "split X-n101-k25", 10**8, "cpu", "e2e", 150.0, measured=False, note="extrapolated linearly")
    sink("same", case="split X-n101-k25", what="per-scenario costs", n=10**6, equal=True, detail="0 differ")
    pk = gpu_run.peaks({"sms": 100})
    assert pk["fp64"] == 100 * 64 * 2 * gpu_run.H200_CLOCK_HZ and pk["bandwidth"] == gpu_run.H200_BANDWIDTH
    gpu_run.roofline(sink, pk, "split_fused", "X-n101-k25", 10**6, 0.011, 2.4e9, {"int32": 1.1e10}, "test")
    record = {"meta": {"date": "today", "mode": "full", "command": "python benchmarks/gpu_run.py", "host": "test"},
              "phases": {"tests": {"status": "ok", "seconds": 1.0, "budget": 130, "note": "3 passed"}},
              "tests": {"command": "pytest -m gpu", "summary": "3 passed"}}
    gpu_run.assemble(None, record, partial)
    by_size = {r["size"]: r for r in record["ratios"]}
    assert by_size[10**6]["ratio"] == pytest.approx(1.5 / 0.011) and by_size[10**6]["cpu_measured"]
    assert not by_size[10**8]["cpu_measured"]
    text = gpu_run.markdown(record)
    assert "Test GPU" in text and "| split X-n101-k25 | 10^8 | e2e | 150 (extrapolated) |" in text
    assert "| split X-n101-k25 | per-scenario costs | 10^6 | yes |" in text
    assert "split_fused" in text and "bound" in text
    pytest.importorskip("matplotlib")
    assert gpu_run.plot(record, tmp_path / "gpu.png") and (tmp_path / "gpu.png").stat().st_size > 1000
