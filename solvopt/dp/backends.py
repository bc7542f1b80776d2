"""The engine's kernel backends and the three methods (numpy, numba, cuda) that run on them.

A :class:`Backend` is a kernel with the shared signature (see :mod:`solvopt.dp.kernels_numpy`)
plus how to move arrays to and from its device. The method mixins (:class:`NumpyMethod`,
:class:`NumbaMethod`, :class:`CudaMethod`) declare a method's name, its typed options, the
common options it honours and how it builds its backend; family ``dp`` and family ``irp``
combine them with their own solver base class, so both families offer the same methods with
the same options without repeating them. ``device="auto"`` picks ``cuda`` when CuPy sees a
device (``uses_cuda``), else the family default ``numba`` (the registry's choice). The kernel
modules are named once, in :data:`KERNELS`.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from solvopt.core.backend import CUDA_INSTALL_HINT, Kernels
from solvopt.core.errors import ModelError
from solvopt.core.options import Option, SolveOptions
from solvopt.core.registry import Solver

from .engine import ENGINE_OPTIONS

# the min-plus forward pass, three times with one signature (see solvopt.dp.kernels_numpy)
KERNELS = Kernels(numpy="solvopt.dp.kernels_numpy", numba="solvopt.dp.kernels_numba", cuda="solvopt.gpu.dp")
kernels_numba = KERNELS.load("numba")      # Numba imported here, so Solver.run times only its JIT compiles
CPU_SCHEDULES = kernels_numba.SCHEDULES
GPU_SCHEDULES = KERNELS.load("cuda").SCHEDULES   # the launcher; CuPy itself is imported only by a cuda run


@dataclass
class Backend:
    """A kernel with the shared signature plus how to move arrays to and from its device.

    ``options`` are the keyword options of every kernel call; ``prepare(chunk_size, compiled)``,
    called once per solve, may fix them (the Numba schedule, so that the back-tracking re-run
    uses the kernel compiled for the main pass).
    """

    name: str
    device: str
    forward: Callable
    to_device: Callable = np.asarray
    to_host: Callable = np.asarray
    empty: Callable = np.empty
    synchronize: Callable = lambda: None
    options: dict = field(default_factory=dict)
    prepare: Callable | None = None


def _check_cpu(method: str, options: SolveOptions) -> None:
    if options.device == "gpu":
        raise ModelError(f"method {method!r} runs on the CPU; use method 'cuda' (or no method) with device='gpu'")


def numpy_backend(options: SolveOptions) -> Backend:
    _check_cpu("numpy", options)
    return Backend("numpy", "cpu", KERNELS.load("numpy").forward)


def numba_backend(options: SolveOptions) -> Backend:
    _check_cpu("numba", options)
    backend = Backend("numba", "cpu", kernels_numba.forward,
                      options={"schedule": options.extra["schedule"], "threads": options.threads})

    def prepare(chunk_size: int, compiled) -> None:
        """Resolve the ``auto`` schedule once per solve, from the chunk size."""
        if backend.options["schedule"] == "auto":  # reads backend.options, not the solve options (a log
            # callable there may not pickle when the chunks run on dask workers)
            threads = kernels_numba.effective_threads(backend.options["threads"], compiled.model.n_transitions,
                                                      chunk_size)
            backend.options["schedule"] = kernels_numba.choose_schedule(
                chunk_size, compiled.max_states, compiled.dtype.itemsize, threads)
    backend.prepare = prepare
    return backend


def cuda_backend(options: SolveOptions) -> Backend:
    if options.device == "cpu":
        raise ModelError("method 'cuda' runs on the GPU; use 'numba' (or no method) with device='cpu'")
    import cupy as cp
    return Backend("cuda", "gpu", KERNELS.load("cuda").forward, to_device=cp.asarray, to_host=cp.asnumpy,
                   empty=cp.empty, synchronize=lambda: cp.cuda.Device().synchronize(),
                   options={"schedule": options.extra["schedule"]})


class EngineSolver(Solver):
    """A solver on the engine: a method mixin below supplies its backend, the family base (dp, irp) its
    compile and solve. The mixins derive from it so that their class attributes share Solver's types."""

    @staticmethod
    def make_backend(options: SolveOptions) -> Backend:  # pragma: no cover - abstract
        raise NotImplementedError


class NumpyMethod(EngineSolver):
    """The NumPy reference kernel (the test oracle)."""

    name = "numpy"
    options = ENGINE_OPTIONS
    honours = frozenset({"device"})
    backend_packages = ("numpy",)
    make_backend = staticmethod(numpy_backend)


class NumbaMethod(EngineSolver):
    """The Numba parallel CPU kernel (the default without a GPU)."""

    name = "numba"
    default = True
    options = ENGINE_OPTIONS + (Option("schedule", str, "auto", "Numba schedule: blocks (prange over scenario "
                                       "blocks), targets (prange over target states) or auto", CPU_SCHEDULES),)
    honours = frozenset({"device", "threads"})
    requires_modules = ("numba",)
    install_hint = "pip install numba"
    backend_packages = ("numba",)
    make_backend = staticmethod(numba_backend)


class CudaMethod(EngineSolver):
    """The CUDA kernel through CuPy (picked by device='auto' when CuPy sees a device)."""

    name = "cuda"
    uses_cuda = True
    options = ENGINE_OPTIONS + (Option("schedule", str, "auto", "CUDA schedule: scenarios (a thread per target x "
                                       "scenario), warp (a warp per target x scenario) or auto", GPU_SCHEDULES),)
    honours = frozenset({"device"})
    install_hint = CUDA_INSTALL_HINT
    backend_packages = ("cupy-cuda12x",)
    make_backend = staticmethod(cuda_backend)
