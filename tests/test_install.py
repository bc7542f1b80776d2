"""The install path: Numba's cache never lands in the package folder, and a checkout imports as the
installed package would (solvopt.dsl / solvopt.gpu from ../dsl and ../gpu). The full path (wheel in
a fresh venv, the editable install over it, commands from another folder) is run by .ci/run."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

import solvopt

# Drop setuptools' editable finder, so that only the package's own mapping can find solvopt.dsl.
NO_EDITABLE = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path "
               "if not type(f).__module__.startswith('__editable__')]; ")


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "SOLVOPT_CACHE_DIR", "PYTHONPATH")}
    env.update(extra)
    return env


def _run(code: str, cwd: Path, env: dict) -> str:
    proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def _copy_checkout(dest: Path) -> Path:
    """The checkout's layout (setup.cfg, solvopt/, dsl/, gpu/) without any cache files."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc")
    for name in ("solvopt", "dsl", "gpu"):
        shutil.copytree(REPO / name, dest / name, ignore=ignore)
    shutil.copy(REPO / "setup.cfg", dest / "setup.cfg")
    return dest


@pytest.mark.parametrize("environ, expected", [
    ({"HOME": "/h"}, "/h/.cache/solvopt/numba"),
    ({"HOME": "/h", "XDG_CACHE_HOME": "/x"}, "/x/solvopt/numba"),
    ({"HOME": "/h", "XDG_CACHE_HOME": "/x", "SOLVOPT_CACHE_DIR": "/s"}, "/s/numba"),
    ({"HOME": "/h", "SOLVOPT_CACHE_DIR": "/s", "NUMBA_CACHE_DIR": "/n"}, "/n"),
])
def test_numba_cache_dir_rule(environ, expected, monkeypatch):
    monkeypatch.setenv("HOME", environ["HOME"])  # expanduser("~") reads HOME
    assert solvopt.numba_cache_dir(environ) == expected


def test_a_solve_writes_no_numba_cache_into_the_package_folder(tmp_path):
    repo = _copy_checkout(tmp_path / "repo")
    cache = tmp_path / "cache"
    out = _run(NO_EDITABLE + "import numpy as np, solvopt, solvopt.dsl; "
               "from solvopt.dsl import HyperplaneClustering; "
               "P = np.array([[0, 0], [1, 1], [2, 2.1], [0, 1], [1, 3], [2, 5.]]); "
               "r = HyperplaneClustering(P, 2).solve('brute-force'); "
               "print(solvopt.__file__, solvopt.dsl.__file__, r.termination)",
               cwd=repo, env=_env(SOLVOPT_CACHE_DIR=str(cache)))
    package, dsl, termination = out.split()
    assert Path(package) == repo / "solvopt" / "__init__.py" and Path(dsl) == repo / "dsl" / "__init__.py"
    assert termination == "optimal"
    written = sorted(p.name for p in cache.rglob("*") if p.suffix in (".nbi", ".nbc"))
    assert written, "Numba cached nothing in SOLVOPT_CACHE_DIR/numba"
    assert all(p.parent.parent == cache / "numba" for p in cache.rglob("*.nbi"))
    leaked = [str(p) for p in repo.rglob("*") if p.suffix in (".nbi", ".nbc")]
    assert not leaked, leaked


def test_an_existing_numba_cache_dir_is_respected_and_a_late_import_still_moves_the_cache(tmp_path):
    out = _run("import os, solvopt, numba.core.config as c; print(os.environ['NUMBA_CACHE_DIR'], c.CACHE_DIR)",
               cwd=tmp_path, env=_env(NUMBA_CACHE_DIR=str(tmp_path / "mine"), SOLVOPT_CACHE_DIR="/nowhere"))
    assert out.split() == [str(tmp_path / "mine")] * 2
    # Numba imported before solvopt: its config is reloaded
    out = _run("import numba.core.config as c; import solvopt; print(c.CACHE_DIR)",
               cwd=tmp_path, env=_env(SOLVOPT_CACHE_DIR=str(tmp_path / "s")))
    assert out.strip() == str(tmp_path / "s" / "numba")


def test_import_solvopt_does_not_import_numba(tmp_path):
    out = _run("import sys, solvopt, solvopt.dsl; print('numba' in sys.modules)", cwd=REPO, env=_env())
    assert out.strip() == "False"


def test_checkout_maps_dsl_and_gpu_from_the_repository_root_without_any_install():
    out = _run(NO_EDITABLE + "import solvopt.dsl, solvopt.gpu, solvopt.dsl.backends; "
               "print(solvopt.dsl.__file__, solvopt.gpu.__file__, solvopt.dsl.backends.__file__)",
               cwd=REPO, env=_env())
    assert [Path(p) for p in out.split()] == [REPO / "dsl" / "__init__.py", REPO / "gpu" / "__init__.py",
                                              REPO / "dsl" / "backends" / "__init__.py"]


def test_checkout_finder_maps_only_dsl_and_gpu(tmp_path):
    repo = _copy_checkout(tmp_path / "repo")
    (repo / "instances").mkdir()
    (repo / "instances" / "__init__.py").write_text("")
    out = _run(NO_EDITABLE + "import importlib.util, solvopt; "
               "print(importlib.util.find_spec('solvopt.instances'), importlib.util.find_spec('solvopt.dsl') is None)",
               cwd=repo, env=_env())
    assert out.split() == ["None", "False"]


def test_installed_layout_installs_no_finder(tmp_path):
    site = tmp_path / "site"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc")
    shutil.copytree(REPO / "solvopt", site / "solvopt", ignore=ignore)
    shutil.copytree(REPO / "dsl", site / "solvopt" / "dsl", ignore=ignore)
    shutil.copytree(REPO / "gpu", site / "solvopt" / "gpu", ignore=ignore)
    out = _run(NO_EDITABLE + "import sys, solvopt, solvopt.dsl; "
               "print(any(type(f).__name__ == '_CheckoutFinder' for f in sys.meta_path), solvopt.dsl.__file__)",
               cwd=site, env=_env())
    found, dsl = out.split()
    assert found == "False" and Path(dsl) == site / "solvopt" / "dsl" / "__init__.py"
