"""Registered solvers of family ``"irp"`` (an ``InventoryReinsertion``): the reinsertion DP on
the min-plus engine with the engine's three kernels -- ``numpy`` (the reference), ``numba`` (the
default on a CPU) and ``cuda`` (picked by ``device="auto"`` when CuPy sees a device) -- and the
engine's options. Compile: :func:`solvopt.irp.reinsertion.compile_inventory`; the result is
decoded from the model itself (decision, plans, customer, penalties).
"""
from __future__ import annotations

from solvopt.core.options import SolveOptions
from solvopt.core.registry import register
from solvopt.core.result import Result
from solvopt.dp import engine
from solvopt.dp.backends import CudaMethod, EngineSolver, NumbaMethod, NumpyMethod

from .reinsertion import CompiledInventory, compile_inventory, decode


class _InventorySolver(EngineSolver):
    family = "irp"
    capabilities = ("order-up-to reinsertion", "Poisson or given demand scenarios", "chunking")

    @classmethod
    def compile(cls, model) -> CompiledInventory:
        return compile_inventory(model)

    def solve(self, compiled, options: SolveOptions) -> Result:
        compiled = self.compile(compiled)
        return decode(compiled, engine.solve(compiled.dp, self.make_backend(options), options))


@register
class InventoryNumpy(NumpyMethod, _InventorySolver):
    description = "inventory reinsertion DP on the engine's NumPy reference kernel"


@register
class InventoryNumba(NumbaMethod, _InventorySolver):
    description = "inventory reinsertion DP on the engine's Numba CPU kernel"


@register
class InventoryCuda(CudaMethod, _InventorySolver):
    description = "inventory reinsertion DP on the engine's CUDA kernel"
