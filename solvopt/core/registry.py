"""The solver registry: ``(family, method name) -> Solver class``.

Each solver declares what it accepts (``capabilities``), whether it can run here
(``available()``), its extra options, and whether it is its family's default. Families
register their solvers with :func:`register` in their own modules; the registry imports
those modules on first use, so ``solvopt methods`` always sees every family.
"""
from __future__ import annotations

import enum
import importlib
import importlib.util
import time
from typing import Any, ClassVar

from .errors import BackendUnavailable, ModelError
from .options import SolveOptions, parse_options
from .result import Result

# Modules that register solvers when imported. A family adds its module here.
PROVIDER_MODULES = (
    "solvopt.dsl.backends",
    "solvopt.dp.solvers",
    "solvopt.dp.split_solvers",
    "solvopt.khc.solvers",
    "solvopt.khc.sbb",
)


class Availability(str, enum.Enum):
    AVAILABLE = "available"
    NOT_INSTALLED = "not installed"
    NO_DEVICE = "no device"


def module_installed(name: str) -> bool:
    """True when ``import name`` would find the module (without importing it)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


class Solver:
    """Base class of every registered solver.

    Subclasses set ``family``, ``name``, ``description``, optionally ``capabilities``,
    ``extra_options`` (name -> default), ``default``, ``requires_modules`` and ``install_hint``, and implement
    :meth:`solve` on the family's compiled form.
    """

    family: ClassVar[str]
    name: ClassVar[str]
    description: ClassVar[str] = ""
    capabilities: ClassVar[tuple[str, ...]] = ()
    extra_options: ClassVar[dict[str, Any]] = {}
    default: ClassVar[bool] = False
    install_hint: ClassVar[str] = ""
    requires_modules: ClassVar[tuple[str, ...]] = ()  # optional packages the method imports

    @classmethod
    def available(cls) -> Availability:
        """NOT_INSTALLED when a module in ``requires_modules`` is missing (override for devices)."""
        if all(module_installed(m) for m in cls.requires_modules):
            return Availability.AVAILABLE
        return Availability.NOT_INSTALLED

    @classmethod
    def compile(cls, model: Any) -> Any:
        """The method's compiled form of a family model (default: the model itself).

        Separate from solving so a pipeline can compile once and re-solve.
        """
        return model

    def solve(self, compiled: Any, options: SolveOptions) -> Result:  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def run(cls, compiled: Any, **kwargs) -> Result:
        """Parse options (unknown ones are an error), solve, and stamp family, method and time."""
        options = parse_options(kwargs, cls.extra_options, where=f"{cls.family}/{cls.name}")
        status = cls.available()
        if status is not Availability.AVAILABLE:
            raise BackendUnavailable(f"method {cls.name!r} is unavailable ({status.value}): {cls.install_hint}")
        start = time.perf_counter()
        result = cls().solve(compiled, options)
        result.family = result.family or cls.family
        result.method = result.method or cls.name
        result.stats.setdefault("wall_time", time.perf_counter() - start)
        return result


_REGISTRY: dict[tuple[str, str], type[Solver]] = {}
_loaded = False


def register(cls: type[Solver]) -> type[Solver]:
    """Class decorator: add a solver to the registry (a duplicate name is a bug)."""
    key = (cls.family, cls.name)
    if key in _REGISTRY and _REGISTRY[key] is not cls:
        raise RuntimeError(f"solver {key} registered twice")
    _REGISTRY[key] = cls
    return cls


def _load_providers() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for mod in PROVIDER_MODULES:
        if module_installed(mod):
            importlib.import_module(mod)


def solvers(family: str | None = None) -> list[type[Solver]]:
    """All registered solvers (of one family), sorted by family then name."""
    _load_providers()
    return sorted((c for (f, _), c in _REGISTRY.items() if family is None or f == family),
                  key=lambda c: (c.family, c.name))


def families() -> list[str]:
    return sorted({c.family for c in solvers()})


def get_solver(family: str, method: str | None = None) -> type[Solver]:
    """The solver class for ``method`` (the family's default when None).

    Unknown names raise ModelError listing the valid ones; the default falls back to the first
    available solver when the declared default cannot run here.
    """
    candidates = solvers(family)
    if not candidates:
        raise ModelError(f"no solvers registered for family {family!r}")
    if method is None:
        defaults = [c for c in candidates if c.default and c.available() is Availability.AVAILABLE]
        usable = defaults or [c for c in candidates if c.available() is Availability.AVAILABLE]
        if not usable:
            raise BackendUnavailable(f"no available solver for family {family!r}")
        return usable[0]
    for c in candidates:
        if c.name == method:
            return c
    raise ModelError(f"unknown method {method!r} for {family}; available: {', '.join(c.name for c in candidates)}")


def solve(family: str, compiled: Any, method: str | None = None, **kwargs) -> Result:
    """Solve a family's compiled form with the chosen (or default) method."""
    return get_solver(family, method).run(compiled, **kwargs)
