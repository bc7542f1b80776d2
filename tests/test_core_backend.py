"""The one kernel selector (solvopt.core.backend): "auto" resolution, each family's kernel modules
named once, and the CUDA availability check every ``uses_cuda`` method inherits."""
from __future__ import annotations

import pytest

from solvopt.core import backend as core_backend
from solvopt.core.backend import KERNEL_BACKENDS, Kernels, cuda_missing, select_kernels
from solvopt.core.errors import BackendUnavailable, ModelError
from solvopt.core.registry import Availability, Solver
from solvopt.cvrp.stochastic import KERNELS as CVRP_KERNELS
from solvopt.dp.backends import KERNELS as DP_KERNELS
from solvopt.transport.graph import KERNELS as TRANSPORT_KERNELS


def machine(monkeypatch, *, cupy: bool, device: bool, numba: bool = True) -> None:
    """Pretend this machine has (or lacks) CuPy, a device it sees, and Numba."""
    installed = {"cupy": cupy, "numba": numba}
    monkeypatch.setattr(core_backend, "_installed", lambda name: installed[name])
    monkeypatch.setattr(core_backend, "gpu_available", lambda: device)


@pytest.mark.parametrize("cupy, device, numba, expected", [
    (True, True, True, "cuda"), (True, False, True, "numba"), (False, False, True, "numba"),
    (True, False, False, "numpy"), (True, True, False, "cuda"),
])
def test_auto_picks_cuda_then_numba_then_numpy(monkeypatch, cupy, device, numba, expected):
    machine(monkeypatch, cupy=cupy, device=device, numba=numba)
    assert select_kernels("auto") == expected
    assert select_kernels("auto", ("numpy", "numba")) == ("numba" if numba else "numpy")
    assert select_kernels("auto", ("numpy",)) == "numpy"


def test_auto_with_nothing_that_runs_here_says_what_to_install(monkeypatch):
    machine(monkeypatch, cupy=False, device=False, numba=False)
    with pytest.raises(BackendUnavailable, match="pip install"):
        select_kernels("auto", ("numba", "cuda"))


def test_a_named_backend_is_kept_and_an_unknown_one_refused(monkeypatch):
    machine(monkeypatch, cupy=False, device=False)
    assert [select_kernels(name) for name in KERNEL_BACKENDS] == list(KERNEL_BACKENDS)
    with pytest.raises(ModelError, match="unknown kernel backend 'cuda'"):
        select_kernels("cuda", ("numpy", "numba"))
    with pytest.raises(ModelError, match="numpy | numba | cuda | auto"):
        select_kernels("gpu")


def test_kernels_name_each_module_once_and_load_it():
    with pytest.raises(ValueError, match="kernel backends are"):
        Kernels(numpy="numpy", opencl="numpy")
    with pytest.raises(ValueError, match="got none"):
        Kernels()
    k = Kernels(numba="solvopt.transport.kernels_numba", numpy="solvopt.transport.kernels_numpy")
    assert k.names == ("numpy", "numba")                     # in the order of KERNEL_BACKENDS
    assert k.load("numpy").__name__ == "solvopt.transport.kernels_numpy"
    assert "Kernels(numpy=" in repr(k)


@pytest.mark.parametrize("kernels, function", [(CVRP_KERNELS, "scenario_costs"), (DP_KERNELS, "forward"),
                                               (TRANSPORT_KERNELS, "nearest")])
def test_every_family_offers_the_same_function_on_every_backend(kernels, function):
    """The launchers import CuPy only when they run, so each module loads on any machine."""
    assert kernels.names == KERNEL_BACKENDS
    for name in kernels.names:
        assert callable(getattr(kernels.load(name), function))


class _CudaMethod(Solver):
    family = "none"
    name = "cuda-method"
    uses_cuda = True


class _CpuMethod(Solver):
    family = "none"
    name = "cpu-method"


@pytest.mark.parametrize("cupy, device, expected", [
    (False, False, Availability.NOT_INSTALLED), (True, False, Availability.NO_DEVICE),
    (True, True, Availability.AVAILABLE),
])
def test_uses_cuda_implies_the_cuda_check(monkeypatch, cupy, device, expected):
    machine(monkeypatch, cupy=cupy, device=device)
    assert cuda_missing() == (None if expected is Availability.AVAILABLE else expected.value)
    assert _CudaMethod.available() is expected
    assert _CpuMethod.available() is Availability.AVAILABLE
