"""``import solvopt.dsl`` loads the modelling layer only: no Numba, no HiGHS, no solver module.

The DSL is the declarative layer (core <- dsl <- family solvers <- cli): its models find their
solvers through the registry by family name when solved, never at import.
"""
from __future__ import annotations

import json
import subprocess
import sys

SOLVER_PACKAGES = ("solvopt.lp", "solvopt.khc", "solvopt.dp", "solvopt.cvrp", "solvopt.irp")
LIGHT = ("family",)   # a family folder's descriptor module imports only solvopt.core


def _modules_after(code: str) -> list[str]:
    probe = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _heavy(modules: list[str]) -> list[str]:
    bad = []
    for name in modules:
        top = name.split(".")[0]
        if top in ("numba", "highspy", "pyomo", "pyscipopt", "gurobipy", "cupy", "llvmlite"):
            bad.append(name)
        elif name.startswith(tuple(p + "." for p in SOLVER_PACKAGES)) and name.rsplit(".", 1)[1] not in LIGHT:
            bad.append(name)
        elif name.startswith("solvopt.dsl.backends") or name == "solvopt.gpu" or name.startswith("solvopt.gpu."):
            bad.append(name)
    return bad


def test_import_solvopt_dsl_loads_no_numba_and_no_solver():
    modules = _modules_after("import solvopt.dsl")
    assert "solvopt.dsl" in modules
    assert _heavy(modules) == []


def test_family_models_import_from_the_dsl_without_their_solvers():
    modules = _modules_after("from solvopt.dsl import (HyperplaneClustering, InventoryReinsertion, LayeredDP, Model, "
                             "Param, Split, StochasticSplit, Var)")
    assert _heavy(modules) == []


def test_building_and_compiling_a_model_loads_no_solver():
    modules = _modules_after("import numpy as np\nfrom solvopt.dsl import Model\nm = Model()\n"
                             "x = m.add_var(shape=(2, 3), name='x')\nm.add(x.sum(axis=0) <= 1)\n"
                             "m.maximize(np.ones(3) @ x.T @ np.ones(2))\nm.compile()")
    assert _heavy(modules) == []


def test_solving_finds_the_lp_family_through_the_registry():
    modules = _modules_after("from solvopt.dsl import Model\nm = Model()\nx = m.add_var(shape=2, ub=1, name='x')\n"
                             "m.maximize(x.sum())\nassert m.solve().objective == 2.0")
    assert "highspy" in modules    # loaded by the lp family's HiGHS method, at solve time
    assert "numba" not in modules
    assert json.dumps(modules)     # the probe ran
