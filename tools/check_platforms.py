#!/usr/bin/env python3
"""Check that solvopt's core and the chosen extras install from wheels on each supported platform.

For every target (Linux x86_64 and aarch64, macOS arm64 and x86_64, Windows amd64) and Python
version, the requirements of ``setup.cfg`` (``install_requires`` plus the extras asked for) are
filtered by their environment markers evaluated *for that target* (pip's ``--platform`` does not
change how pip evaluates markers, so this script does it), then resolved by

    pip install --isolated --dry-run --ignore-installed --only-binary=:all:
                --platform TAG ... --python-version X.Y --implementation cp --target TMP REQS

against PyPI: every requirement and its dependencies must have a wheel for the target (pip fetches
the wheels to read their metadata; nothing is installed). Markers inside the dependencies are still
evaluated by pip for the machine that runs the check; that only matters for platform-only
dependencies, which are small pure-Python packages (colorama on Windows, ...).

Usage:
    python tools/check_platforms.py                         # core + test extra, Python 3.11, all targets
    python tools/check_platforms.py --extras test gpu --python 3.10 3.12 --targets macos-arm64
Exit code 0 when every target resolves, 1 otherwise (the failing targets and pip's last lines).
Needs network access to PyPI (https://pypi.org) only.
"""
from __future__ import annotations

import argparse
import configparser
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# target name -> (marker environment, pip --platform tags)
TARGETS = {
    "linux-x86_64": ({"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
                      "os_name": "posix"},
                     ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64",
                      "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]),
    "linux-aarch64": ({"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "aarch64",
                       "os_name": "posix"},
                      ["manylinux_2_28_aarch64", "manylinux_2_27_aarch64", "manylinux_2_17_aarch64",
                       "manylinux2014_aarch64"]),
    "macos-arm64": ({"sys_platform": "darwin", "platform_system": "Darwin", "platform_machine": "arm64",
                     "os_name": "posix"},
                    ["macosx_14_0_arm64"]),
    "macos-x86_64": ({"sys_platform": "darwin", "platform_system": "Darwin", "platform_machine": "x86_64",
                      "os_name": "posix"},
                     ["macosx_13_0_x86_64"]),
    "windows-amd64": ({"sys_platform": "win32", "platform_system": "Windows", "platform_machine": "AMD64",
                       "os_name": "nt"},
                      ["win_amd64"]),
}
SUPPORTED = ["linux-x86_64", "linux-aarch64", "macos-arm64", "windows-amd64"]


def requirements(extras: list[str], cfg_path: Path = REPO / "setup.cfg") -> list[str]:
    """``install_requires`` plus the extras' requirements, as written in setup.cfg."""
    cfg = configparser.ConfigParser()
    cfg.read(cfg_path)
    lines = cfg["options"]["install_requires"].strip().splitlines()
    known = cfg["options.extras_require"]
    for extra in extras:
        if extra not in known:
            raise SystemExit(f"check_platforms: no extra {extra!r} in setup.cfg (have: {', '.join(known)})")
        lines += known[extra].strip().splitlines()
    out: list[str] = []
    for line in (ln.strip() for ln in lines):
        if line and line not in out:
            out.append(line)
    return out


def for_target(reqs: list[str], target: str, python: str) -> list[str]:
    """The requirements whose markers hold on ``target`` under Python ``python``, markers removed."""
    from packaging.requirements import Requirement
    env = dict(TARGETS[target][0], python_version=python, python_full_version=python + ".0",
               implementation_name="cpython", platform_python_implementation="CPython")
    kept = []
    for line in reqs:
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate(env):
            req.marker = None
            kept.append(str(req))
    return kept


def check(target: str, python: str, reqs: list[str], timeout: float = 900) -> tuple[bool, str]:
    """Resolve ``reqs`` for the target from wheels only; (ok, pip's last lines)."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "install", "--isolated", "--dry-run", "--ignore-installed",
               "--disable-pip-version-check", "--only-binary=:all:", "--python-version", python,
               "--implementation", "cp", "--target", tmp]
        for tag in TARGETS[target][1]:
            cmd += ["--platform", tag]
        proc = subprocess.run(cmd + for_target(reqs, target, python), capture_output=True, text=True,
                              timeout=timeout)
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip() and "notice" not in ln]
    return proc.returncode == 0, "\n".join(lines[-4:])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--extras", nargs="*", default=["test"], help="extras to include (default: test)")
    ap.add_argument("--python", nargs="*", default=["3.11"], help="Python versions (default: 3.11)")
    ap.add_argument("--targets", nargs="*", default=SUPPORTED, choices=sorted(TARGETS),
                    help=f"targets (default: {' '.join(SUPPORTED)})")
    args = ap.parse_args(argv)
    reqs = requirements(args.extras)
    failed = []
    for python in args.python:
        for target in args.targets:
            ok, tail = check(target, python, reqs)
            what = f"{target} / Python {python} / core + {'+'.join(args.extras) or 'no extras'}"
            print(f"{'ok  ' if ok else 'FAIL'} {what}", flush=True)
            if not ok:
                failed.append(what)
                print("     " + tail.replace("\n", "\n     "), flush=True)
    if failed:
        print(f"check_platforms: {len(failed)} target(s) do not resolve from wheels", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
