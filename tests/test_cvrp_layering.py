"""Dependencies of the cvrp family point one way: core <- dsl (models) <- gpu launcher <- cvrp solvers."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at any level (absolute names; relative ones as '.name')."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            found.add("." * node.level + (node.module or ""))
    return found


@pytest.mark.parametrize("path, allowed", [
    ("dsl/split.py", ("__future__", "math", "numbers", "dataclasses", "typing", "numpy", "solvopt.core.", ".arrays",
                      ".family")),
    ("gpu/cvrp.py", ("__future__", "numpy", "cupy", "solvopt.core.", ".harness")),
])
def test_a_module_imports_only_what_is_below_it(path, allowed):
    for name in imported_modules(REPO / path):
        assert name in allowed or name.startswith(tuple(a for a in allowed if a.endswith("."))), (path, name)


def test_models_and_gpu_launcher_load_neither_numba_nor_the_family():
    code = ("import sys, solvopt.dsl.split, solvopt.gpu.cvrp, solvopt.cvrp.family\n"
            "bad = [m for m in sys.modules if m == 'numba' or m.startswith(('solvopt.cvrp.', 'solvopt.dp'))\n"
            "       and m != 'solvopt.cvrp.family']\n"
            "print(bad)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_the_split_modules_left_solvopt_dp():
    assert not list((REPO / "solvopt" / "dp").glob("split*.py"))
