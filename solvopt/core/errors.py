"""The one error hierarchy of solvopt.

Every error a user can cause is a :class:`SolvoptError`; the CLI prints it as one line and
exits non-zero. Anything else escaping a solver is a bug and keeps its traceback.
"""
from __future__ import annotations

import os


class SolvoptError(Exception):
    """Base class of every error solvopt raises on purpose."""


class ModelError(SolvoptError, ValueError):
    """Bad model data: wrong shapes, NaN/inf, negative weights, k > m, unknown options, ..."""


class InstanceFormatError(SolvoptError, ValueError):
    """A malformed instance file. Names the file, the line (1-based) and what was expected."""

    def __init__(self, path: str | os.PathLike[str], line: int | None, message: str):
        self.path = str(path)
        self.line = line
        self.detail = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class BackendUnavailable(SolvoptError, RuntimeError):
    """A method needs something that is not installed or not present (says what to install)."""


class SolverError(SolvoptError, RuntimeError):
    """A backend solver failed in a way the model does not explain."""
