"""The stochastic split on the command line: routed flags, and Ctrl-C returning the estimate so far."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from helpers import REPO

from solvopt.cli import main as cli_main

VRP = REPO / "instances" / "cvrp" / "X-n101-k25.vrp"


def test_chunk_goes_to_the_solver_and_the_estimate_to_the_json(capsys):
    assert cli_main(["solve", str(VRP), "--scenarios", "5000", "--chunk", "1000", "--seed", "3", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["options"]["chunk"] == 1000 and record["stats"]["chunks"] == 5
    assert record["termination"] == "feasible_within_gap" and record["bound"] is None
    lo, hi = record["solution"]["ci95"]
    assert lo < record["objective"] < hi and record["solution"]["scenarios"] == 5000


@pytest.mark.slow
def test_sigint_prints_the_estimate_over_the_scenarios_done(tmp_path):
    """SIGINT once the chunk loop has begun: the JSON line carries the estimate, exit 130."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "solvopt.cli", "solve", str(VRP), "--scenarios", "100000000",
                             "--chunk", "100000", "--progress", "--json", "--out", str(tmp_path / "out")],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen = []
        for line in proc.stderr:                       # the first progress line: the chunk loop begins
            seen.append(line)
            if "scenarios" in line:
                break
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, "".join(seen) + err
    record = json.loads(out.strip().splitlines()[-1])
    assert record["termination"] == "interrupted" and record["solution_status"] == "feasible"
    done = record["solution"]["scenarios"]
    # a stop is seen between the pieces a chunk runs in, so ``done`` need not be whole chunks
    assert 0 < done < 10**8 and record["objective"] is not None
    assert f"after {done:,} of 100,000,000 scenarios" in record["message"]
    assert (tmp_path / "out" / "X-n101-k25.json").exists() and "Traceback" not in err
