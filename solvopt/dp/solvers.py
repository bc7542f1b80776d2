"""Registered solvers of family ``"dp"`` (a ``LayeredDP``): ``numpy`` (the reference),
``numba`` (CPU, parallel; the default) and ``cuda`` (CuPy on a GPU).

There is no ``auto`` method: with no method given, the registry picks ``cuda`` when CuPy sees
a device and ``device`` is ``auto`` or ``gpu``, else ``numba`` (see
:func:`solvopt.core.registry.get_solver`).
"""
from __future__ import annotations

import time

from solvopt.core.options import SolveOptions
from solvopt.core.registry import register
from solvopt.core.result import Result

from . import engine
from .backends import CudaMethod, EngineSolver, NumbaMethod, NumpyMethod
from .compiled import CompiledDP


class _DPSolver(EngineSolver):
    family = "dp"
    capabilities = ("dense", "masked", "sparse", "per-scenario costs", "variant layers", "sampled scenarios",
                    "chunking")

    @classmethod
    def compile(cls, model) -> CompiledDP:
        if isinstance(model, CompiledDP):
            return model
        start = time.perf_counter()
        compiled = CompiledDP(model)
        compiled.build_time = time.perf_counter() - start
        return compiled

    def solve(self, compiled, options: SolveOptions) -> Result:
        return engine.solve(self.compile(compiled), self.make_backend(options), options)


@register
class DPNumpy(NumpyMethod, _DPSolver):
    description = "min-plus DP, NumPy reference kernel (the test oracle)"


@register
class DPNumba(NumbaMethod, _DPSolver):
    description = "min-plus DP, Numba parallel CPU kernel (prange over scenario blocks or target states)"


@register
class DPCuda(CudaMethod, _DPSolver):
    description = "min-plus DP, CUDA kernel through CuPy (thread per target x scenario, warp min over predecessors)"
