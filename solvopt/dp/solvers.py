"""Registered solvers of the min-plus DP families.

Family ``"dp"`` (a ``LayeredDP``): ``numpy`` (the reference), ``numba`` (CPU, parallel),
``cuda`` (CuPy on a GPU), ``auto`` (the default: cuda when ``device`` resolves to the GPU,
else numba). Family ``"irp"`` (an ``InventoryReinsertion``): the same four methods, run on
the engine through :mod:`solvopt.dp.inventory`.
"""
from __future__ import annotations

from solvopt.core.backend import resolve_device
from solvopt.core.errors import ModelError
from solvopt.core.options import SolveOptions
from solvopt.core.registry import Availability, Solver, module_installed, register
from solvopt.core.result import Result

from . import engine
from .compiled import CompiledDP


def numpy_backend(options: SolveOptions) -> engine.Backend:
    from . import kernels_numpy
    return engine.Backend("numpy", "cpu", kernels_numpy.forward)


def numba_backend(options: SolveOptions) -> engine.Backend:
    from . import kernels_numba
    if options.extra.get("schedule", "auto") not in ("auto", "blocks", "targets"):
        raise ModelError(f"schedule must be auto, blocks or targets, got {options.extra['schedule']!r}")
    return engine.Backend("numba", "cpu", kernels_numba.forward,
                          options={"schedule": options.extra.get("schedule", "auto"), "threads": options.threads})


def cuda_backend(options: SolveOptions) -> engine.Backend:
    from solvopt.gpu import minplus
    return minplus.backend()


def _cuda_availability() -> Availability:
    if not module_installed("cupy"):
        return Availability.NOT_INSTALLED
    from solvopt.core.backend import gpu_available
    return Availability.AVAILABLE if gpu_available() else Availability.NO_DEVICE


def pick_backend(method: str, options: SolveOptions) -> engine.Backend:
    """The kernel backend for a method name, checking the ``device`` option against it."""
    if method == "auto":
        method = "cuda" if resolve_device(options.device) == "gpu" else "numba"
    elif method in ("numpy", "numba") and options.device == "gpu":
        raise ModelError(f"method {method!r} runs on the CPU; use method 'cuda' or 'auto' with device='gpu'")
    elif method == "cuda" and options.device == "cpu":
        raise ModelError("method 'cuda' runs on the GPU; use 'numba' or 'auto' with device='cpu'")
    return {"numpy": numpy_backend, "numba": numba_backend, "cuda": cuda_backend}[method](options)


class _DPSolver(Solver):
    family = "dp"
    method = "auto"
    capabilities = ("dense", "masked", "sparse", "per-scenario costs", "variant layers", "sampled scenarios",
                    "chunking")
    extra_options = dict(engine.DP_OPTIONS)

    @classmethod
    def compile(cls, model) -> CompiledDP:
        return model if isinstance(model, CompiledDP) else CompiledDP(model)

    def solve(self, compiled, options: SolveOptions) -> Result:
        return engine.solve(self.compile(compiled), pick_backend(self.method, options), options)


@register
class DPNumpy(_DPSolver):
    name = method = "numpy"
    description = "min-plus DP, NumPy reference kernel (the test oracle)"


@register
class DPNumba(_DPSolver):
    name = method = "numba"
    description = "min-plus DP, Numba parallel CPU kernel (prange over scenario blocks or target states)"
    extra_options = {**engine.DP_OPTIONS, "schedule": "auto"}  # auto | blocks | targets


@register
class DPCuda(_DPSolver):
    name = method = "cuda"
    description = "min-plus DP, CUDA kernel through CuPy (thread per target x scenario, warp min over predecessors)"
    install_hint = "pip install 'solvopt[gpu]' on a machine with an NVIDIA GPU"

    @classmethod
    def available(cls) -> Availability:
        return _cuda_availability()


@register
class DPAuto(_DPSolver):
    name = method = "auto"
    default = True
    description = "min-plus DP on the GPU when CuPy sees one (device=auto|gpu), else the Numba CPU kernel"
    extra_options = {**engine.DP_OPTIONS, "schedule": "auto"}  # the Numba schedule, when on the CPU


# --- family "irp": the inventory reinsertion DP on the same engine ------------------------------------
class _InventorySolver(Solver):
    family = "irp"
    method = "auto"
    capabilities = ("order-up-to reinsertion", "Poisson or given demand scenarios", "chunking")
    extra_options = dict(engine.DP_OPTIONS)

    @classmethod
    def compile(cls, model):
        from .inventory import compile_inventory
        return compile_inventory(model)

    def solve(self, compiled, options: SolveOptions) -> Result:
        from .inventory import decode
        compiled = self.compile(compiled)
        return decode(compiled, engine.solve(compiled.dp, pick_backend(self.method, options), options))


@register
class InventoryNumpy(_InventorySolver):
    name = method = "numpy"
    description = "inventory reinsertion DP on the engine's NumPy reference kernel"


@register
class InventoryNumba(_InventorySolver):
    name = method = "numba"
    description = "inventory reinsertion DP on the engine's Numba CPU kernel"
    extra_options = {**engine.DP_OPTIONS, "schedule": "auto"}


@register
class InventoryCuda(_InventorySolver):
    name = method = "cuda"
    description = "inventory reinsertion DP on the engine's CUDA kernel"
    install_hint = DPCuda.install_hint

    @classmethod
    def available(cls) -> Availability:
        return _cuda_availability()


@register
class InventoryAuto(_InventorySolver):
    name = method = "auto"
    default = True
    description = "inventory reinsertion DP: CUDA when a GPU is seen, else Numba"
    extra_options = {**engine.DP_OPTIONS, "schedule": "auto"}
