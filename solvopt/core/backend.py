"""The array-backend switch: CuPy when a CUDA device is present, else NumPy (and Numba kernels).

``device="auto"`` picks the GPU when CuPy sees one; ``"gpu"`` insists (and says what to
install); ``"cpu"`` never touches CuPy.
"""
from __future__ import annotations

import functools

import numpy as np

from .errors import BackendUnavailable, ModelError


@functools.lru_cache(maxsize=1)
def cupy_device_count() -> int:
    """Number of CUDA devices CuPy can use (0 when CuPy is missing or sees no driver)."""
    try:
        import cupy  # noqa: F401
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:
        return 0


def gpu_available() -> bool:
    return cupy_device_count() > 0


def resolve_device(device: str = "auto") -> str:
    """Map ``auto|cpu|gpu`` to the concrete ``cpu`` or ``gpu``."""
    if device == "cpu":
        return "cpu"
    if device == "gpu":
        if not gpu_available():
            raise BackendUnavailable(
                "device='gpu' needs CuPy and a CUDA device: pip install 'solvopt[gpu]' on a machine with an NVIDIA GPU")
        return "gpu"
    if device == "auto":
        return "gpu" if gpu_available() else "cpu"
    raise ModelError(f"device must be auto, cpu or gpu, got {device!r}")


def array_module(device: str = "auto"):
    """numpy or cupy, for the resolved device."""
    if resolve_device(device) == "gpu":
        import cupy
        return cupy
    return np


def to_numpy(x):
    """Bring an array (NumPy or CuPy) to host memory as a NumPy array."""
    if hasattr(x, "get") and type(x).__module__.startswith("cupy"):
        return x.get()
    return np.asarray(x)
