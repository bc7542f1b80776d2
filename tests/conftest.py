"""Shared fixtures: the kernel backends, the shared instance folder (skip cleanly when absent) and
the gpu marker."""
from __future__ import annotations

from pathlib import Path

import pytest
from helpers import SAMPLES, SHARED_INSTANCES


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
