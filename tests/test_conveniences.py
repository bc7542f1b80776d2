"""What users expect of a Python package: ``python -m solvopt``, a ``solvopt`` logger carrying the
progress lines (stderr unchanged by default), and ``py.typed`` in the wheel."""
from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
import zipfile

import pytest
from helpers import REPO

import solvopt
from solvopt.core.progress import Progress


def _env():
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def test_python_dash_m_solvopt_is_the_cli(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "solvopt", "--version"], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, env=_env())
    assert proc.returncode == 0 and proc.stdout.strip() == f"solvopt {solvopt.__version__}"
    bad = subprocess.run([sys.executable, "-m", "solvopt", "solve", str(tmp_path / "missing.dat")],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path, env=_env())
    assert bad.returncode != 0 and bad.stdout == "" and len(bad.stderr.strip().splitlines()) == 1


def test_progress_lines_go_to_the_solvopt_logger(caplog):
    stream = io.StringIO()
    with caplog.at_level(logging.INFO, logger="solvopt"):
        p = Progress(enabled=False, stream=stream, interval=0.0)
        p("nodes 10", force=True)
        p.rate(5, 10, "scenarios", elapsed=1.0, force=True)
    assert stream.getvalue() == ""  # not printed: progress is off
    lines = [r.getMessage() for r in caplog.records if r.name == "solvopt.progress"]
    assert len(lines) == 2 and lines[0].endswith("nodes 10") and "5/10 scenarios" in lines[1]
    assert all(r.levelno == logging.INFO for r in caplog.records if r.name == "solvopt.progress")


def test_printed_progress_is_unchanged_and_logged_once(caplog):
    stream = io.StringIO()
    with caplog.at_level(logging.INFO, logger="solvopt"):
        Progress(enabled=True, stream=stream)("bound 3.5", force=True)
    printed = stream.getvalue().splitlines()
    assert len(printed) == 1 and printed[0].endswith("] bound 3.5")
    assert [r.getMessage() for r in caplog.records if r.name == "solvopt.progress"] == printed


def test_nothing_reaches_stderr_by_default():
    """Without logging configured, the logger adds nothing (NullHandler, not logging's last resort)."""
    code = ("import sys; from solvopt.core.progress import Progress; "
            "Progress(enabled=False)('hidden line', force=True); "
            "import logging; logging.getLogger('solvopt').warning('a warning')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO,
                          env=_env())
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""


def test_py_typed_ships_in_the_wheel(tmp_path):
    pytest.importorskip("wheel")
    assert (REPO / "solvopt" / "py.typed").is_file()
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "--no-build-isolation",
                           "-q", "-w", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (wheel,) = tmp_path.glob("solvopt-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "solvopt/py.typed" in names and "solvopt/__main__.py" in names
    assert any(n.endswith(f"solvopt-{solvopt.__version__}.dist-info/METADATA") for n in names)
    info = f"solvopt-{solvopt.__version__}.dist-info"
    assert {f"{info}/LICENSE", f"{info}/licenses/LICENSE"} & names   # newer setuptools: licenses/ (PEP 639)
