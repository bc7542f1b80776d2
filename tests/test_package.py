"""Packaging: solvopt.dsl and solvopt.gpu import from the mapped folders; *.cu ship in the wheel."""
from __future__ import annotations

import importlib
import importlib.resources
import subprocess
import sys
import zipfile

import pytest
from helpers import REPO


def test_mapped_subpackages_import():
    dsl = importlib.import_module("solvopt.dsl")
    gpu = importlib.import_module("solvopt.gpu")
    assert dsl.__name__ == "solvopt.dsl" and gpu.__name__ == "solvopt.gpu"


def test_cuda_sources_found_through_importlib_resources():
    names = [p.name for p in importlib.resources.files("solvopt.gpu").iterdir() if p.name.endswith(".cu")]
    assert names, "no *.cu found in solvopt.gpu"
    from solvopt.gpu import cuda_sources, read_source
    assert sorted(p.name for p in cuda_sources()) == sorted(names)
    assert "__global__" in read_source(names[0])


def test_wheel_contains_every_package_and_cuda_source(tmp_path):
    pytest.importorskip("wheel")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "--no-build-isolation",
                           "-q", "-w", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (wheel,) = tmp_path.glob("solvopt-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for module in ("solvopt/__init__.py", "solvopt/core/result.py", "solvopt/dsl/__init__.py",
                   "solvopt/gpu/harness.py", "solvopt/cli.py"):
        assert module in names, module
    shipped_cu = {n.split("/")[-1] for n in names if n.startswith("solvopt/gpu/") and n.endswith(".cu")}
    assert shipped_cu == {p.name for p in (REPO / "gpu").glob("*.cu")}
    # every source folder that is a package must be in the wheel (catches a subpackage missing from setup.cfg)
    for init in list((REPO / "solvopt").rglob("__init__.py")) + list((REPO / "dsl").rglob("__init__.py")):
        rel = init.relative_to(REPO).as_posix()
        rel = rel if rel.startswith("solvopt/") else "solvopt/" + rel
        assert rel in names, f"{rel} missing from the wheel: add its package to setup.cfg"


def test_setup_cfg_lists_every_package_folder():
    """setup.cfg's `packages =` names exactly the package folders (solvopt/*, dsl/* as solvopt.dsl.*, gpu/)."""
    import configparser
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    listed = set(cfg["options"]["packages"].split())
    mapping = dict(line.split(" = ") for line in cfg["options"]["package_dir"].strip().splitlines())
    assert mapping == {"solvopt": "solvopt", "solvopt.dsl": "dsl", "solvopt.gpu": "gpu"}
    found = set()
    for package, folder in mapping.items():
        for init in (REPO / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO / folder).parts
            found.add(".".join((package, *rel)))
    assert listed == found, f"missing from setup.cfg: {sorted(found - listed)}; not a folder: {sorted(listed - found)}"
