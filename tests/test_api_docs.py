"""The API reference builds offline from the docstrings (pdoc, tools/build_api.sh)."""
from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys

import pytest
from helpers import REPO


def _modules() -> list[str]:
    script = (REPO / "tools" / "build_api.sh").read_text(encoding="utf-8")
    block = re.search(r"MODULES=\((.*?)\)", script, re.S).group(1)
    return block.split()


def test_every_module_of_the_reference_imports():
    modules = _modules()
    assert {"solvopt", "solvopt.dsl", "solvopt.core", "solvopt.dist"} <= set(modules)
    from solvopt.core.family import families
    assert {f"solvopt.{f.name}" for f in families()} <= set(modules)
    for name in modules:
        importlib.import_module(name)


def test_pdoc_builds_a_couple_of_modules(tmp_path):
    pytest.importorskip("pdoc")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-m", "pdoc", "--docformat", "restructuredtext",
                           "solvopt.core.result", "solvopt.core.memory", "-o", str(tmp_path)],
                          capture_output=True, text=True, timeout=300, cwd=REPO, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = (tmp_path / "solvopt" / "core" / "result.html").read_text(encoding="utf-8")
    memory = (tmp_path / "solvopt" / "core" / "memory.html").read_text(encoding="utf-8")
    assert "Termination" in result and "SolutionStatus" in result
    assert "available_memory" in memory and "cgroup" in memory
    assert (tmp_path / "index.html").is_file()
