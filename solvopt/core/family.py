"""Family descriptors: a family declares itself once, and the spine finds it.

Each family folder (``solvopt/khc``, ``solvopt/cvrp``, ...) has a light module ``family.py``
that defines ``FAMILY = Family(...)``: its name, the modules that register its solvers and
readers, its model classes, its CLI parameters (and where each goes) and how an ``Instance``
becomes its model. The descriptor module imports nothing heavy; solver modules are imported
only when a solver of that family is asked for, inside a guard, so a family whose optional
dependency fails to import is listed as unavailable (with the reason) and breaks nothing else.

Descriptors are found through :data:`FAMILY_MODULES` (one line per built-in family) and the
``solvopt.families`` entry-point group (third-party families).
"""
from __future__ import annotations

import importlib
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from .errors import ModelError

# The one line a built-in family adds: the module holding its ``FAMILY`` descriptor.
FAMILY_MODULES = (
    "solvopt.lp.family",
    "solvopt.khc.family",
    "solvopt.cvrp.family",
    "solvopt.dp.family",
    "solvopt.irp.family",
    "solvopt.games.family",
    "solvopt.transport.family",
)
ENTRY_POINT_GROUP = "solvopt.families"

Target = Literal["model", "solver", "reader"]


@dataclass(frozen=True)
class Param:
    """A family parameter, given on the CLI as ``--name``.

    ``target`` says where the value goes: ``"model"`` (to the family's ``from_instance``),
    ``"solver"`` (a solve option of the methods that declare it) or ``"reader"`` (to the
    instance reader, e.g. ``--k`` for point files that do not state k).
    """

    name: str
    type: Callable[[str], Any] = str
    help: str = ""
    target: Target = "model"
    metavar: str | None = None
    default: Any = None          # the CLI's default when the flag is not given (None: the model's own)

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class Family:
    """Everything the spine needs to know about a family, declared in one place.

    - ``solver_modules``: modules that call :func:`solvopt.core.registry.register` on import;
    - ``reader_modules``: modules that register instance readers (``solvopt.io.register_reader``);
    - ``models``: ``"module:Class"`` of every model class of the family (a test holds it complete);
      how a batch tells the family of a model that has no ``family`` attribute (the DSL's ``Model``);
    - ``params``: its CLI parameters;
    - ``from_instance``: ``"module:function"``, ``f(instance, **model_params) -> model``;
      None for a family without instance files;
    - ``scale_cases`` / ``stop_cases``: ``"module:function"`` giving the family's cases for the
      spine's scale and stop property tests (see :mod:`solvopt.core.scaling`).
    """

    name: str
    description: str
    solver_modules: tuple[str, ...] = ()
    reader_modules: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    params: tuple[Param, ...] = ()
    from_instance: str | None = None
    scale_cases: str | None = None
    stop_cases: str | None = None
    module: str = ""                       # filled in by discovery: where the descriptor lives

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    def build_model(self, instance: Any, **model_params: Any) -> Any:
        """The family's model for an instance (through ``from_instance``)."""
        if self.from_instance is None:
            raise ModelError(f"family {self.name!r} does not read instance files")
        return load_object(self.from_instance)(instance, **model_params)


@dataclass
class FamilyState:
    """A discovered family and whether its solver modules imported."""

    descriptor: Family | None
    module: str
    error: str | None = None              # why the descriptor or its solvers could not be loaded
    solvers_loaded: bool = False
    load_errors: dict[str, str] = field(default_factory=dict)


_FAMILIES: dict[str, FamilyState] = {}
_BROKEN: list[FamilyState] = []
_discovered = False


def load_object(target: str) -> Any:
    """``"module:attr"`` -> the object."""
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def _reason(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()[-1]


def _entry_point_modules() -> list[str]:
    try:
        from importlib.metadata import entry_points
        return [ep.value.partition(":")[0] for ep in entry_points(group=ENTRY_POINT_GROUP)]
    except Exception:  # a broken distribution's metadata must not break discovery
        return []


def discover(extra_modules: tuple[str, ...] = ()) -> dict[str, FamilyState]:
    """Import every descriptor module (cheap) once; a failing one is recorded, not raised."""
    global _discovered
    if _discovered and not extra_modules:
        return _FAMILIES
    modules = list(extra_modules)
    if not _discovered:
        modules = list(FAMILY_MODULES) + _entry_point_modules() + modules
    _discovered = True
    for module in modules:
        try:
            descriptor = importlib.import_module(module).FAMILY
            if not isinstance(descriptor, Family):
                raise TypeError(f"{module}.FAMILY is not a solvopt.core.family.Family")
        except Exception as exc:
            _BROKEN.append(FamilyState(None, module, error=_reason(exc)))
            continue
        object.__setattr__(descriptor, "module", module)
        if descriptor.name in _FAMILIES and _FAMILIES[descriptor.name].module != module:
            _BROKEN.append(FamilyState(None, module, error=f"family {descriptor.name!r} is already declared by "
                                                           f"{_FAMILIES[descriptor.name].module}; ignored"))
            continue
        _FAMILIES.setdefault(descriptor.name, FamilyState(descriptor, module))
    return _FAMILIES


def families() -> list[Family]:
    """The descriptors of every family that could be discovered, by name."""
    return [s.descriptor for _, s in sorted(discover().items()) if s.descriptor is not None]


def broken_families() -> list[FamilyState]:
    """Descriptor modules that failed to import (listed by ``solvopt methods`` with the reason)."""
    discover()
    return list(_BROKEN)


def _known(name: str) -> tuple[FamilyState, Family]:
    """A discovered family's state and descriptor; the unknown-family error otherwise."""
    state = discover().get(name)
    if state is None or state.descriptor is None:
        known = ", ".join(sorted(discover())) or "none"
        raise ModelError(f"unknown family {name!r}; known families: {known}")
    return state, state.descriptor


def get_family(name: str) -> Family:
    return _known(name)[1]


def load_solvers(name: str) -> FamilyState:
    """Import a family's solver modules once, guarded; failures are kept as the reason."""
    state, descriptor = _known(name)
    if not state.solvers_loaded:
        state.solvers_loaded = True
        for module in descriptor.solver_modules:
            try:
                importlib.import_module(module)
            except Exception as exc:
                state.load_errors[module] = _reason(exc)
        if state.load_errors:
            state.error = "; ".join(f"{m}: {e}" for m, e in state.load_errors.items())
    return state


def load_readers() -> list[str]:
    """Import every family's reader modules, guarded; returns the failures as messages."""
    failures = []
    for state in discover().values():
        for module in state.descriptor.reader_modules if state.descriptor is not None else ():
            try:
                importlib.import_module(module)
            except Exception as exc:
                failures.append(f"{module}: {_reason(exc)}")
    return failures


def unavailable_reason(name: str) -> str | None:
    """Why a family's solvers (or some of them) could not be loaded, or None."""
    return load_solvers(name).error
