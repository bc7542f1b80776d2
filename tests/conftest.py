"""Shared fixtures: the kernel backends, the shared instance folder (skip cleanly when absent) and
the gpu marker; how many pytest-xdist workers ``-n auto`` starts."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import SAMPLES, SHARED_INSTANCES

# Most workers `-n auto` starts. Each worker imports the solvers, compiles (or loads) its own Numba
# kernels and holds 1-2 GB by the end; the longest test files take a minute or more, so beyond this
# many workers the suite hardly gets shorter while memory and compile work keep growing.
MAX_AUTO_WORKERS = 8


@pytest.hookimpl(optionalhook=True)    # a hook of pytest-xdist: unknown where it is not installed
def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one worker per CPU this process may use (logical CPUs: xdist's own default counts
    physical cores, one worker on a two-vCPU runner), at most MAX_AUTO_WORKERS.
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still decides when set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None                       # xdist's own hook reads it
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(usable, MAX_AUTO_WORKERS))


def pytest_collection_modifyitems(config, items):
    from solvopt.core.backend import gpu_available
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device visible to CuPy")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


# Every kernel exists up to three times with one signature (solvopt.core.backend.Kernels). The cuda
# case carries the gpu marker: skipped where CuPy sees no device, deselected by -m "not gpu".
CUDA = pytest.param("cuda", marks=pytest.mark.gpu)


@pytest.fixture(scope="session", params=["numpy", "numba", CUDA])
def backend(request) -> str:
    """The kernel backend a test runs on: numpy (the reference), numba, cuda.

    A family's ``KERNELS.load(backend)`` is its kernel module on that backend."""
    return request.param


@pytest.fixture(scope="session", params=["numba", CUDA])
def twin(request) -> str:
    """A backend checked against the NumPy reference on the same inputs: numba, cuda."""
    return request.param


@pytest.fixture
def shared_instances() -> Path:
    """The public benchmark instances beside the checkout; skips the test when they are absent."""
    if not SHARED_INSTANCES.is_dir():
        pytest.skip(f"shared instances not found at {SHARED_INSTANCES}")
    return SHARED_INSTANCES


@pytest.fixture
def samples() -> Path:
    return SAMPLES
