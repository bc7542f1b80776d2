"""Base class of the family models (HyperplaneClustering, LayeredDP, ...): the spine's front end.

A family model validates its data at construction; ``compile(method)`` hands it to the
chosen solver's compile step, ``solve(method, **options)`` compiles and solves. With no method,
a model that names its own ``default_method`` (the games models: a Fisher market and a
pseudo-game want different methods) gets that one, with all of its options; otherwise the
family's declared default.
"""
from __future__ import annotations

from typing import Any, ClassVar

from solvopt.core.registry import Solver, compile_and_run, get_solver
from solvopt.core.result import Result


class FamilyModel:
    family: ClassVar[str]

    @property
    def default_method(self) -> str | None:
        """This model's own default method, when the family's does not fit it (a class attribute or a
        property in a subclass); None: the family's."""
        return None

    def solver(self, method: str | None = None, device: str | None = None) -> type[Solver]:
        """The solver class for ``method``: the model's own default, else the family's, when None."""
        return get_solver(self.family, method if method is not None else self.default_method, device)

    def compile(self, method: str | None = None) -> Any:
        """The compiled form for ``method`` (the model's or family's default when None)."""
        return self.solver(method).compile(self)

    def solve(self, method: str | None = None, **options: Any) -> Result:
        """Compile for ``method`` and solve; ``options`` are SolveOptions names or the method's extras."""
        return compile_and_run(self.solver(method, options.get("device")), self, **options)
