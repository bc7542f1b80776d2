"""The test extra installs on Linux, macOS and Windows: environment markers keep the CUDA compile
checker (NVRTC, no macOS wheel) off macOS, and tools/check_platforms.py resolves the core and the
test extra from wheels for a target platform (network to PyPI; skipped without it)."""
from __future__ import annotations

import importlib.util
import os
import socket
from concurrent.futures import ThreadPoolExecutor

import pytest
from helpers import REPO

spec = importlib.util.spec_from_file_location("check_platforms", REPO / "tools" / "check_platforms.py")
check_platforms = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_platforms)


def _names(reqs):
    from packaging.requirements import Requirement
    return {Requirement(r).name for r in reqs}


@pytest.mark.parametrize("target, has_nvrtc", [("linux-x86_64", True), ("linux-aarch64", True),
                                               ("windows-amd64", True), ("macos-arm64", False),
                                               ("macos-x86_64", False)])
def test_markers_keep_nvrtc_off_macos(target, has_nvrtc):
    reqs = check_platforms.for_target(check_platforms.requirements(["test", "gpu"]), target, "3.11")
    names = _names(reqs)
    assert ("nvidia-cuda-nvrtc-cu12" in names) == has_nvrtc
    assert ("cupy-cuda12x" in names) == has_nvrtc
    assert {"numpy", "scipy", "numba", "highspy", "pytest", "hypothesis", "pyomo"} <= names
    assert not any(";" in r for r in reqs)  # markers removed once evaluated


def test_every_requirement_parses():
    from packaging.requirements import Requirement
    for extra in ("test", "gpu", "bench", "dist", "pyomo", "io"):
        for line in check_platforms.requirements([extra]):
            Requirement(line)


def test_unknown_extra_is_one_clear_error():
    with pytest.raises(SystemExit, match="no extra 'nope'"):
        check_platforms.requirements(["nope"])


def _pypi_reachable() -> bool:
    if os.environ.get("SOLVOPT_OFFLINE"):
        return False
    try:
        socket.create_connection(("pypi.org", 443), timeout=3).close()
        return True
    except OSError:
        return False


RESOLVED = ["macos-arm64", "windows-amd64"]


@pytest.fixture(scope="module")
def resolutions():
    """pip's resolution of the test extra for each target in RESOLVED, all started at once (pip
    mostly waits on PyPI): target -> a future of (ok, pip's last lines)."""
    if not _pypi_reachable():
        pytest.skip("PyPI is not reachable (or SOLVOPT_OFFLINE is set)")
    reqs = check_platforms.requirements(["test"])
    with ThreadPoolExecutor(len(RESOLVED)) as pool:
        yield {t: pool.submit(check_platforms.check, t, "3.11", reqs, 600) for t in RESOLVED}


@pytest.mark.slow
@pytest.mark.parametrize("target", RESOLVED)
def test_test_extra_resolves_from_wheels(target, resolutions):
    ok, tail = resolutions[target].result()
    assert ok, tail
