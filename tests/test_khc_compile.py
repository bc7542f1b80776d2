"""k-HC bnb: what the first (cold-cache) solve compiles, and the kernels' own eigenvalue solver.

Issue 9 (the install): the README's first solve spent ~90% of its time compiling Numba kernels.
These tests pin the properties that keep it cheap, not timings: with a fresh Numba cache each
jitted k-HC dispatcher compiles at most one signature in a run (one canonical dtype / layout per
kernel), a static-order n = 2 run compiles neither the dynamic order's point picker nor the
n >= 3 eigenvalue code, and the solve reports its compile time within its wall time.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from solvopt.dsl import HyperplaneClustering
from solvopt.khc.bnb_kernel import _smallest_eigenvalue, _smallest_eigenvalue_work

ROOT = Path(__file__).resolve().parents[1]
SR10 = ROOT / "instances" / "khc" / "sr_10_2_2_1022.dat"

# Runs in a fresh interpreter with an empty NUMBA_CACHE_DIR: solves, then reports every jitted
# dispatcher of the k-HC modules with its compiled signatures, and the result's stats.
_PROBE = r"""
import json, sys
import numpy as np
import numba
from numba.core.registry import CPUDispatcher
import solvopt
from solvopt.dsl import HyperplaneClustering
from solvopt.io import read_instance
import solvopt.khc.bnb_kernel, solvopt.khc.brute_force, solvopt.khc.geometry, solvopt.khc.heuristics

spec = json.loads(sys.argv[1])
if "path" in spec:
    model = HyperplaneClustering.from_instance(read_instance(spec["path"]))
else:
    points = np.random.default_rng(spec["seed"]).uniform(0.0, 10.0, size=(spec["m"], spec["n"]))
    model = HyperplaneClustering(points, spec["k"])
result = model.solve("bnb", **spec.get("options", {}))
dispatchers = {}
for module in (solvopt.khc.bnb_kernel, solvopt.khc.brute_force, solvopt.khc.geometry, solvopt.khc.heuristics):
    for name, obj in vars(module).items():
        if isinstance(obj, CPUDispatcher):
            dispatchers[f"{module.__name__}.{name}"] = [str(sig) for sig in obj.signatures]
print(json.dumps({"stats": result.stats, "termination": result.termination.name, "objective": result.objective,
                  "dispatchers": dispatchers}))
"""


def _cold_solve(tmp_path, spec: dict) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba_cache"))
    proc = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(spec)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _assert_one_signature_each(out: dict) -> dict:
    compiled = {name: sigs for name, sigs in out["dispatchers"].items() if sigs}
    assert compiled, "the bnb run compiled no k-HC kernel at all"
    for name, sigs in out["dispatchers"].items():
        assert len(sigs) <= 1, f"{name} compiled {len(sigs)} specialisations: {sigs}"
    return compiled


def _assert_compile_time_reported(stats: dict) -> None:
    assert "compile_time" in stats and "wall_time" in stats
    # a fresh cache must compile the search kernel, and compiling is part of the solve's wall time
    assert 0.0 < stats["compile_time"] <= stats["wall_time"]


def test_readme_solve_compiles_each_kernel_once_and_reports_compile_time(tmp_path):
    out = _cold_solve(tmp_path, {"path": str(SR10)})
    compiled = _assert_one_signature_each(out)
    _assert_compile_time_reported(out["stats"])
    assert "solvopt.khc.bnb_kernel._search" in compiled
    # lazy compilation: the static order never compiles the dynamic order's point picker (inlined
    # into the kernel; its joint bound is the one function of its own it calls)
    assert "solvopt.khc.bnb_kernel._joint_increase" not in compiled
    # n = 2: the eigenvalue kernel is the closed-form specialisation (no Jacobi scratch)
    assert compiled["solvopt.khc.bnb_kernel._smallest_eigenvalue_work"][0].endswith("none)")
    assert out["termination"] == "OPTIMAL"
    assert out["objective"] == pytest.approx(0.267985283, rel=1e-8)


def test_dynamic_order_n3_run_compiles_each_kernel_once(tmp_path):
    out = _cold_solve(tmp_path, {"m": 11, "n": 3, "k": 2, "seed": 3, "options": {"order": "dynamic"}})
    compiled = _assert_one_signature_each(out)
    _assert_compile_time_reported(out["stats"])
    assert "solvopt.khc.bnb_kernel._joint_increase" in compiled
    assert not compiled["solvopt.khc.bnb_kernel._smallest_eigenvalue_work"][0].endswith("none)")


# --- the Jacobi eigenvalue solver that replaced LAPACK in the kernels -----------------------------
@pytest.mark.parametrize("n", [3, 4, 5, 6, 8])
def test_jacobi_smallest_eigenvalue_matches_numpy(n):
    rng = np.random.default_rng(100 + n)
    work = np.zeros((n, n))
    for trial in range(300):
        kind = trial % 6
        if kind == 0:  # a centred scatter of random points
            pts = rng.normal(size=(n + 3, n))
        elif kind == 1:  # points near a line: a spectrum spread over many scales
            pts = rng.normal(size=(n + 3, n))
            pts[:, 1:] *= 10.0 ** rng.uniform(-8, -2)
        elif kind == 2:  # (near-)multiple eigenvalues
            pts = np.vstack([np.eye(n), -np.eye(n)]) + 1e-9 * rng.normal(size=(2 * n, n))
        elif kind == 3:  # rank-deficient: fewer points than dimensions + 1
            pts = rng.normal(size=(n - 1, n))
        if kind <= 3:
            centred = pts - pts.mean(axis=0)
            S = centred.T @ centred
        elif kind == 4:  # a random PSD spectrum over 12 decades in a random basis
            q, _ = np.linalg.qr(rng.normal(size=(n, n)))
            S = (q * 10.0 ** rng.uniform(-12, 0, size=n)) @ q.T
            S = 0.5 * (S + S.T)
        else:  # symmetric indefinite, large entries
            B = rng.normal(size=(n, n)) * 1e6
            S = B + B.T
        expected = np.linalg.eigvalsh(S)[0]
        tol = 1e-12 * max(1.0, np.abs(S).max())
        S_before = S.copy()
        assert abs(_smallest_eigenvalue_work(S, n, work) - expected) <= tol
        assert abs(_smallest_eigenvalue(S, n) - expected) <= tol
        assert np.array_equal(S, S_before)  # the input is never changed


def test_jacobi_handles_diagonal_and_zero_matrices():
    for n in (3, 4, 7):
        work = np.zeros((n, n))
        assert _smallest_eigenvalue_work(np.zeros((n, n)), n, work) == 0.0
        diagonal = np.diag(np.arange(n, 0, -1, dtype=np.float64))
        assert _smallest_eigenvalue_work(diagonal, n, work) == pytest.approx(1.0, rel=1e-15)
        # an exactly double eigenvalue: for 3 x 3 the closed form hands over to Jacobi, exact here
        double = np.diag(np.r_[2.0, 2.0, 5.0, np.full(n - 3, 9.0)])
        assert _smallest_eigenvalue_work(double, n, work) == 2.0


@pytest.mark.parametrize("m,n,k,seed", [(14, 4, 2, 1), (12, 5, 2, 2), (12, 3, 3, 3)])
def test_bnb_with_jacobi_bounds_agrees_across_orders(m, n, k, seed):
    """n >= 3 runs bound with the Jacobi solver: static and dynamic orders reach one optimum,
    which no assignment found by the heuristic beats."""
    points = np.random.default_rng(seed).uniform(0.0, 10.0, size=(m, n))
    model = HyperplaneClustering(points, k)
    static = model.solve("bnb")
    dynamic = model.solve("bnb", order="dynamic")
    heuristic = model.solve("heuristic", restarts=20)
    assert static.stats["nodes"] > 0
    assert static.objective == pytest.approx(dynamic.objective, rel=1e-9, abs=1e-12)
    assert static.objective <= heuristic.objective * (1 + 1e-9) + 1e-12
    assert static.bound <= static.objective * (1 + 1e-9) + 1e-12
