"""The array-backend switch and the one kernel selector every family uses.

``device="auto"`` picks the GPU when CuPy sees one; ``"gpu"`` insists (and says what to
install); ``"cpu"`` never touches CuPy.

A family's kernels exist up to three times with one signature: the NumPy reference, a Numba
CPU kernel and a CUDA kernel (a CuPy launcher in ``solvopt.gpu``). The family names their
modules once in a :class:`Kernels`; :func:`select_kernels` turns ``"auto"`` into the fastest
backend that can run here, and :func:`cuda_missing` is the one CUDA availability check (the
registry applies it to every method declaring ``uses_cuda``).
"""
from __future__ import annotations

import functools
import importlib
import importlib.util
from collections.abc import Iterable
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from .errors import BackendUnavailable, ModelError

KERNEL_BACKENDS = ("numpy", "numba", "cuda")        # fastest last; "auto" tries cuda, then numba, then numpy
CUDA_INSTALL_HINT = "pip install 'solvopt[gpu]' on a machine with an NVIDIA GPU"


@functools.lru_cache(maxsize=1)
def cupy_device_count() -> int:
    """Number of CUDA devices CuPy can use (0 when CuPy is missing or sees no driver)."""
    try:
        import cupy
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:
        return 0


def gpu_available() -> bool:
    return cupy_device_count() > 0


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def cuda_missing() -> str | None:
    """Why CUDA kernels cannot run here: ``"not installed"`` (no CuPy) or ``"no device"`` (CuPy
    sees none); None when they can. The strings are the registry's ``Availability`` values."""
    if not _installed("cupy"):
        return "not installed"
    return None if gpu_available() else "no device"


def select_kernels(backend: str = "auto", offered: Iterable[str] = KERNEL_BACKENDS) -> str:
    """The kernel backend to run, among those a family ``offered``.

    ``"auto"``: ``cuda`` when offered and CuPy sees a device, else ``numba`` when offered and
    installed, else ``numpy``. A named backend is returned as it is (ModelError if not offered);
    whether it can run here is its method's availability, not this choice.
    """
    offered = tuple(offered)
    if backend == "auto":
        if "cuda" in offered and gpu_available():
            return "cuda"
        if "numba" in offered and _installed("numba"):
            return "numba"
        if "numpy" in offered:
            return "numpy"
        raise BackendUnavailable(f"none of the kernel backends {', '.join(offered)} can run here (numba: pip "
                                 f"install numba; cuda: {CUDA_INSTALL_HINT})")
    if backend not in offered:
        raise ModelError(f"unknown kernel backend {backend!r} ({' | '.join(offered)} | auto)")
    return backend


class Kernels:
    """A family's kernel modules, named once: ``Kernels(numpy="...", numba="...", cuda="...")``.

    Every module holds the same functions with the same signatures; :meth:`load` imports the one
    :func:`select_kernels` picks, only when asked (so Numba or a launcher loads on first use).
    """

    def __init__(self, **modules: str):
        unknown = set(modules) - set(KERNEL_BACKENDS)
        if unknown or not modules:
            raise ValueError(f"kernel backends are {', '.join(KERNEL_BACKENDS)}; got {', '.join(modules) or 'none'}")
        self.modules = {name: modules[name] for name in KERNEL_BACKENDS if name in modules}

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.modules)

    def select(self, backend: str = "auto") -> str:
        """The backend name ``backend`` resolves to (see :func:`select_kernels`)."""
        return select_kernels(backend, self.names)

    def load(self, backend: str = "auto") -> ModuleType:
        """The kernel module of ``backend`` (``"auto"`` resolved here)."""
        return importlib.import_module(self.modules[self.select(backend)])

    def __repr__(self) -> str:
        return f"Kernels({', '.join(f'{k}={v!r}' for k, v in self.modules.items())})"


def resolve_device(device: str = "auto") -> str:
    """Map ``auto|cpu|gpu`` to the concrete ``cpu`` or ``gpu``."""
    if device == "cpu":
        return "cpu"
    if device == "gpu":
        if not gpu_available():
            raise BackendUnavailable(f"device='gpu' needs CuPy and a CUDA device: {CUDA_INSTALL_HINT}")
        return "gpu"
    if device == "auto":
        return "gpu" if gpu_available() else "cpu"
    raise ModelError(f"device must be auto, cpu or gpu, got {device!r}")


def array_module(device: str = "auto") -> ModuleType:
    """numpy or cupy, for the resolved device."""
    if resolve_device(device) == "gpu":
        import cupy
        return cupy  # type: ignore[no-any-return]
    return np


def to_numpy(x: Any) -> npt.NDArray[Any]:
    """Bring an array (NumPy or CuPy) to host memory as a NumPy array."""
    if hasattr(x, "get") and type(x).__module__.startswith("cupy"):
        return x.get()  # type: ignore[no-any-return]
    return np.asarray(x)
