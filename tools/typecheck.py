#!/usr/bin/env python3
"""Run mypy over solvopt as it is installed: ``solvopt.dsl`` from dsl/, ``solvopt.gpu`` from gpu/.

setup.cfg maps the top-level folders dsl/ and gpu/ into the package (``package_dir``); mypy has no
such mapping and cannot follow setuptools' editable finder. This script builds the installed layout
as a tree of symbolic links (``build/typecheck/solvopt/`` -> every entry of solvopt/, plus ``dsl``
and ``gpu``), runs mypy there with the repository's configuration (pyproject.toml) and prints the
messages with the repository's paths. The tree's place is fixed so that mypy's cache (.mypy_cache
at the repository root) stays valid between runs.

Usage:
    python tools/typecheck.py                    # the whole package
    python tools/typecheck.py -p solvopt.core -p solvopt.dsl --follow-imports=silent
                                                 # the strict part only (what it imports is read, not reported)
    python tools/typecheck.py -p solvopt.dsl     # any mypy arguments instead of ``-p solvopt``
Exit code: mypy's. Needs symbolic links (Linux, macOS; on Windows, developer mode).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TREE = REPO / "build" / "typecheck"
MAPPED = {"dsl": REPO / "dsl", "gpu": REPO / "gpu"}  # as setup.cfg's package_dir


def build_tree() -> Path:
    """(Re)create the link tree ``TREE/solvopt`` and return its package folder."""
    pkg = TREE / "solvopt"
    pkg.mkdir(parents=True, exist_ok=True)
    wanted = {e.name: e for e in (REPO / "solvopt").iterdir() if e.name != "__pycache__"}
    clash = sorted(set(wanted) & set(MAPPED))
    if clash:
        raise SystemExit(f"typecheck: solvopt/{clash[0]} would hide the mapped package {clash[0]}/")
    wanted.update(MAPPED)
    for entry in pkg.iterdir():
        if not entry.is_symlink() or entry.name not in wanted or entry.resolve() != wanted[entry.name]:
            if entry.is_dir() and not entry.is_symlink():
                raise SystemExit(f"typecheck: unexpected folder {entry}; remove it")
            entry.unlink()
    for name, target in wanted.items():
        link = pkg / name
        if not link.is_symlink():
            link.symlink_to(target, target_is_directory=target.is_dir())
    return pkg


def repo_path(path: str) -> str:
    """The repository's path for a path mypy printed inside the tree."""
    parts = Path(path).parts
    if len(parts) >= 2 and parts[0] == "solvopt" and parts[1] in MAPPED:
        return str(Path(*parts[1:]))
    return path


def main(argv: list[str]) -> int:
    build_tree()
    args = argv or ["-p", "solvopt"]
    cmd = [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"),
           "--cache-dir", str(REPO / ".mypy_cache"), *args]
    env = dict(os.environ, MYPY_FORCE_COLOR="0")
    proc = subprocess.run(cmd, cwd=TREE, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, check=False)
    located = re.compile(r"^(solvopt/[^:]+)(:.*)$", re.DOTALL)
    for line in proc.stdout.splitlines(keepends=True):
        m = located.match(line)
        sys.stdout.write(repo_path(m.group(1)) + m.group(2) if m else line)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
