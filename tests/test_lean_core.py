"""A lean core: Pyomo is an extra (`solvopt[pyomo]`), `import solvopt` / `import solvopt.dsl` load
neither Pyomo nor a solver, and the export without Pyomo raises one line naming the extra."""
from __future__ import annotations

import configparser
import os
import subprocess
import sys

import numpy as np
import pytest
from helpers import REPO

from solvopt.core.errors import BackendUnavailable


def _cfg():
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    return cfg


def _names(block: str) -> set[str]:
    import re
    return {re.split(r"[<>=!~;\[ ]", line.strip(), maxsplit=1)[0].lower() for line in block.strip().splitlines()}


def test_pyomo_is_an_extra_not_a_core_dependency():
    cfg = _cfg()
    assert "pyomo" not in _names(cfg["options"]["install_requires"])
    extras = cfg["options.extras_require"]
    assert _names(extras["pyomo"]) == {"pyomo"}
    assert "pyomo" in _names(extras["test"])


@pytest.mark.parametrize("module", ["solvopt", "solvopt.dsl"])
def test_import_loads_no_pyomo_and_no_solver(module):
    code = (f"import sys, {module}; "
            "heavy = [m for m in ('pyomo', 'pyscipopt', 'gurobipy', 'cupy', 'distributed', 'ot') if m in sys.modules]; "
            "print(','.join(heavy))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "", f"import {module} loaded {proc.stdout.strip()}"


def test_export_without_pyomo_names_the_extra(monkeypatch):
    from solvopt.dsl import Model
    m = Model()
    x = m.add_var(shape=2, lb=0, name="x")
    m.add(np.ones((1, 2)) @ x <= 1)
    m.maximize(np.ones(2) @ x)
    for name in [k for k in sys.modules if k == "pyomo" or k.startswith("pyomo.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyomo", None)  # import pyomo -> ImportError
    with pytest.raises(BackendUnavailable) as info:
        m.to_pyomo()
    message = str(info.value)
    assert "\n" not in message and "solvopt[pyomo]" in message
