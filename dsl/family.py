"""Base class of the family models (HyperplaneClustering, LayeredDP, ...): the spine's front end.

A family model validates its data at construction; ``compile(method)`` hands it to the
chosen solver's compile step, ``solve(method, **options)`` compiles and solves.
"""
from __future__ import annotations

from typing import Any, ClassVar

from solvopt.core.registry import compile_and_run, get_solver
from solvopt.core.result import Result


class FamilyModel:
    family: ClassVar[str]

    def compile(self, method: str | None = None) -> Any:
        """The compiled form for ``method`` (the family default when None)."""
        return get_solver(self.family, method).compile(self)

    def solve(self, method: str | None = None, **options) -> Result:
        """Compile for ``method`` and solve; ``options`` are SolveOptions names or the method's extras."""
        return compile_and_run(get_solver(self.family, method, options.get("device")), self, **options)
