"""The cvrp family's model and GPU launcher load neither Numba nor the family's solvers.

Which packages a module may import at all (core <- dsl, gpu <- families) is checked for every
module by tests/test_layering.py.
"""
from __future__ import annotations

import subprocess
import sys

from helpers import REPO


def test_models_and_gpu_launcher_load_neither_numba_nor_the_family():
    code = ("import sys, solvopt.dsl.split, solvopt.gpu.cvrp, solvopt.cvrp.family\n"
            "bad = [m for m in sys.modules if m == 'numba' or m.startswith(('solvopt.cvrp.', 'solvopt.dp'))\n"
            "       and m != 'solvopt.cvrp.family']\n"
            "print(bad)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_the_split_modules_left_solvopt_dp():
    assert not list((REPO / "solvopt" / "dp").glob("split*.py"))
