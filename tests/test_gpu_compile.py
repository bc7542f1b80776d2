"""Every packaged CUDA source compiles to PTX for compute_90 with NVRTC, with no GPU needed."""
from __future__ import annotations

import pytest

from solvopt.core.errors import SolverError
from solvopt.gpu import harness

SOURCES = harness.cuda_sources()


def _need_nvrtc():
    if not harness.nvrtc_available():
        pytest.skip("nvidia-cuda-nvrtc-cu12 is not installed")


@pytest.mark.parametrize("path", SOURCES, ids=[p.name for p in SOURCES])
def test_cuda_source_compiles_to_ptx(path):
    _need_nvrtc()
    ptx = harness.compile_to_ptx(path.read_text(), path.name, arch="compute_90")
    assert ".target sm_90" in ptx and ".entry" in ptx


def test_nvrtc_reports_compile_errors():
    _need_nvrtc()
    with pytest.raises(SolverError, match="expected a declaration"):
        harness.compile_to_ptx("this is not cuda", "bad.cu")


@pytest.mark.gpu
def test_load_module_on_device():
    import cupy
    for path in SOURCES:
        module = harness.load_module(path.name)
        assert module is not None
    assert cupy.cuda.runtime.getDeviceCount() > 0
