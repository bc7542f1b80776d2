"""Ctrl-C on the CLI: the running instance's best is printed, --out written, the rest skipped, exit 130."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import REPO


def _hard_khc(path: Path, seed: int) -> None:
    """100 uniform points in 3-D, k = 3: beyond what bnb proves in 300 s on two free cores (issue 12;
    60 such points now take 3 s there, less than the test's wait before Ctrl-C)."""
    pts = np.random.default_rng(seed).uniform(0, 10, (100, 3))
    path.write_text("x1,x2,x3\n" + "\n".join(",".join(f"{v:.6f}" for v in row) for row in pts) + "\n")


def interrupt_cli(args: list[str], after: float, cwd: Path) -> subprocess.CompletedProcess:
    """Run ``python -m solvopt.cli ARGS``, send SIGINT ``after`` seconds later, wait for it to exit."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "solvopt.cli", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(after)
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"the CLI did not stop within 60 s of SIGINT; stderr: {err[-2000:]}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.slow
def test_sigint_prints_the_best_writes_out_and_skips_the_rest(tmp_path):
    a, b, c = (tmp_path / f"{n}.csv" for n in "abc")
    for i, p in enumerate((a, b, c)):
        _hard_khc(p, i)
    out_dir = tmp_path / "out"
    # a warm-up run compiles (and caches) the Numba kernels, so the SIGINT lands inside the search
    proc = interrupt_cli(["solve", str(a), str(b), str(c), "--k", "3", "--method", "bnb", "--json",
                          "--out", str(out_dir)], after=4.0, cwd=tmp_path)
    assert proc.returncode == 130, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stdout
    record = lines[0]
    assert record["instance"] == "a" and record["termination"] == "interrupted"
    assert record["objective"] is not None and record["bound"] is not None
    assert record["solution_status"] == "feasible"
    assert (out_dir / "a.json").exists() and not (out_dir / "b.json").exists()
    assert "skipped 2 instance(s) not started" in proc.stderr and str(b) in proc.stderr and str(c) in proc.stderr
    assert "Traceback" not in proc.stderr
