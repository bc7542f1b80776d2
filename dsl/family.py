"""Base class of the family models (HyperplaneClustering, LayeredDP, ...): the spine's front end.

A family model validates its data at construction; ``compile(method)`` hands it to the
chosen solver's compile step, ``solve(method, **options)`` compiles and solves.
"""
from __future__ import annotations

import time
from typing import Any, ClassVar

from solvopt.core.registry import get_solver
from solvopt.core.result import Result


class FamilyModel:
    family: ClassVar[str]

    def compile(self, method: str | None = None) -> Any:
        """The compiled form for ``method`` (the family default when None)."""
        return get_solver(self.family, method).compile(self)

    def solve(self, method: str | None = None, **options) -> Result:
        """Compile for ``method`` and solve; ``options`` are SolveOptions names or the method's extras."""
        solver = get_solver(self.family, method, options.get("device"))
        start = time.perf_counter()
        compiled = solver.compile(self)
        built = time.perf_counter() - start
        result = solver.run(compiled, **options)
        # the time to compile the model is part of the solve's wall time, and said separately
        result.stats.setdefault("build_time", built)
        result.stats["wall_time"] = result.stats.get("wall_time", 0.0) + built
        return result
