"""An MPS / LP file's model: its standard form, solved by the ``lp`` family's methods."""
from __future__ import annotations

from solvopt.core.result import Result

from . import solve_standard_form


class FileModel:
    """The model read from an MPS / LP file (already in standard form)."""

    family = "lp"

    def __init__(self, standard_form):
        self.standard_form = standard_form

    def compile(self, method: str | None = None):
        return self.standard_form

    def solve(self, method: str | None = None, **options) -> Result:
        return solve_standard_form(self.standard_form, method=method, **options)


def model_from_instance(instance) -> FileModel:
    return FileModel(instance.data["standard_form"])
