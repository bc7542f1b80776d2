"""The solver registry: ``(family, method name) -> Solver class``.

Each solver declares what it accepts (``capabilities``), whether it can run here
(``available()``), its typed extra options (``options``), which common options beyond the
universal ones it honours (``honours``: rel_gap, abs_gap, threads, device, node_limit,
iteration_limit), and whether it is its family's default. Solvers register with
:func:`register` in their family's solver modules; the registry imports those modules lazily,
per family and guarded, through the family descriptors (:mod:`solvopt.core.family`).
"""
from __future__ import annotations

import enum
import functools
import importlib.util
import time
from typing import Any, ClassVar

from . import family as _family
from .backend import cuda_missing
from .errors import BackendUnavailable, ModelError
from .interrupt import catching_sigint
from .jit_clock import compile_timer
from .options import COMMON_OPTIONS, UNIVERSAL_OPTIONS, Option, SolveOptions, parse_options
from .result import Result, SolutionStatus, Termination


class Availability(str, enum.Enum):
    AVAILABLE = "available"
    NOT_INSTALLED = "not installed"
    NO_DEVICE = "no device"
    BROKEN = "import failed"


_FOUND: set[str] = set()     # modules found once: found again (find_spec costs 20-100 us a call)


def module_installed(name: str) -> bool:
    """True when ``import name`` would find the module (without importing it); a module found
    once is remembered, a missing one is looked for again (it may be installed meanwhile)."""
    if name in _FOUND:
        return True
    try:
        found = importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
    if found:
        _FOUND.add(name)
    return found


@functools.cache
def package_version(name: str) -> str | None:
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:
        return None


class Solver:
    """Base class of every registered solver.

    Subclasses set ``family``, ``name``, ``description``, optionally ``capabilities``,
    ``options`` (a tuple of :class:`~solvopt.core.options.Option`), ``honours``, ``default``,
    ``requires_modules``, ``backend_packages`` (distributions whose versions the result
    records) and ``install_hint``, and implement :meth:`solve` on the family's compiled form.
    """

    family: ClassVar[str]
    name: ClassVar[str]
    description: ClassVar[str] = ""
    capabilities: ClassVar[tuple[str, ...]] = ()
    options: ClassVar[tuple[Option, ...]] = ()
    honours: ClassVar[frozenset[str]] = frozenset()
    default: ClassVar[bool] = False
    install_hint: ClassVar[str] = ""
    requires_modules: ClassVar[tuple[str, ...]] = ()   # optional packages the method imports
    backend_packages: ClassVar[tuple[str, ...]] = ()   # distributions whose version a result records
    uses_cuda: ClassVar[bool] = False                  # preferred under device="auto" when a GPU is seen

    @classmethod
    def available(cls) -> Availability:
        """NOT_INSTALLED when a module in ``requires_modules`` is missing; for a method that
        ``uses_cuda``, also NOT_INSTALLED without CuPy and NO_DEVICE when CuPy sees no device."""
        if not all(module_installed(m) for m in cls.requires_modules):
            return Availability.NOT_INSTALLED
        missing = cuda_missing() if cls.uses_cuda else None
        return Availability.AVAILABLE if missing is None else Availability(missing)

    @classmethod
    def option(cls, name: str) -> Option | None:
        return next((o for o in cls.options if o.name == name), None)

    @classmethod
    def compile(cls, model: Any) -> Any:
        """The method's compiled form of a family model (default: the model itself).

        Separate from solving so a pipeline can compile once and re-solve.
        """
        return model

    def solve(self, compiled: Any, options: SolveOptions) -> Result:  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def check_honoured(cls, kwargs: dict[str, Any]) -> None:
        """An option the method does not act on is an error naming the methods that do."""
        for key, value in kwargs.items():
            if value is None:  # None is every option's "not set"
                continue
            if key == "device" and value in ("auto", "cpu") and not cls.uses_cuda:
                continue  # a CPU-only method runs on the CPU: only device="gpu" asks for what it cannot do
            if key in COMMON_OPTIONS and key not in UNIVERSAL_OPTIONS and key not in cls.honours:
                takers = [s.name for s in solvers(cls.family) if key in s.honours]
                where = f"; it applies to: {', '.join(takers)}" if takers else f"; no {cls.family} method takes it"
                raise ModelError(f"option {key!r} does not apply to method {cls.family}/{cls.name}{where}")

    @classmethod
    def parse(cls, kwargs: dict[str, Any]) -> SolveOptions:
        cls.check_honoured(kwargs)
        return parse_options(kwargs, cls.options, where=f"{cls.family}/{cls.name}")

    @classmethod
    def run(cls, compiled: Any, **kwargs: Any) -> Result:
        """Parse options, solve under the Ctrl-C guard, and stamp family, method, time, options, versions.

        A Ctrl-C stops the solve (solvers poll :func:`~solvopt.core.interrupt.stop_requested`)
        and returns the best so far with termination INTERRUPTED; no KeyboardInterrupt escapes.
        """
        options = cls.parse(kwargs)
        status = cls.available()
        if status is not Availability.AVAILABLE:
            raise BackendUnavailable(
                f"method {cls.family}/{cls.name} is unavailable ({status.value}): {cls.install_hint}")
        start = time.perf_counter()
        with catching_sigint(), compile_timer() as jit:
            try:
                result = cls().solve(compiled, options)
            except KeyboardInterrupt:
                result = interrupted_before_solving(cls.family, cls.name)
        result.family = result.family or cls.family
        result.method = result.method or cls.name
        result.stats.setdefault("wall_time", time.perf_counter() - start)
        # seconds spent compiling Numba kernels in this process during the solve (0: none, or all cached)
        result.stats.setdefault("compile_time", jit.seconds or 0.0)
        result.options = options.record()
        result.versions = cls.versions()
        return result

    @classmethod
    def versions(cls) -> dict[str, str | None]:
        from solvopt import __version__
        out: dict[str, str | None] = {"solvopt": __version__}
        for pkg in cls.backend_packages:
            out[pkg] = package_version(pkg)
        return out


_REGISTRY: dict[tuple[str, str], type[Solver]] = {}


def register(cls: type[Solver]) -> type[Solver]:
    """Class decorator: add a solver to the registry (a duplicate name is a bug)."""
    key = (cls.family, cls.name)
    if key in _REGISTRY and _REGISTRY[key] is not cls:
        raise RuntimeError(f"solver {key} registered twice")
    _REGISTRY[key] = cls
    return cls


def solvers(family: str | None = None) -> list[type[Solver]]:
    """All registered solvers (of one family), sorted by family then name; loads families lazily."""
    names = [family] if family is not None else [f.name for f in _family.families()]
    for name in names:
        if name in _family.discover():
            _family.load_solvers(name)
    return sorted((c for (f, _), c in _REGISTRY.items() if family is None or f == family),
                  key=lambda c: (c.family, c.name))


def get_solver(family: str, method: str | None = None, device: str | None = None) -> type[Solver]:
    """The solver class for ``method`` (the family's default when None).

    Unknown names raise ModelError listing the valid ones. With no method, ``device="auto"``
    (or None) prefers an available CUDA method when CuPy sees a device, ``"gpu"`` insists on
    one, ``"cpu"`` avoids them; otherwise the declared default, falling back to the first
    available solver when it cannot run here.
    """
    candidates = solvers(family)
    if not candidates:
        reason = _family.unavailable_reason(family) if family in _family.discover() else None
        if reason:
            raise BackendUnavailable(f"family {family!r} is unavailable: {reason}")
        _family.get_family(family)  # unknown family: raises with the known ones
        raise ModelError(f"no solvers registered for family {family!r}")
    if method is not None:
        for c in candidates:
            if c.name == method:
                return c
        raise ModelError(f"unknown method {method!r} for {family}; available: {', '.join(c.name for c in candidates)}")
    usable = [c for c in candidates if c.available() is Availability.AVAILABLE]
    if device in (None, "auto", "gpu"):
        cuda = [c for c in usable if c.uses_cuda]
        if cuda:
            return next((c for c in cuda if c.default), cuda[0])
        if device == "gpu" and any(c.uses_cuda for c in candidates):
            from .backend import resolve_device
            resolve_device("gpu")  # raises BackendUnavailable saying what to install
    if device == "cpu":
        usable = [c for c in usable if not c.uses_cuda]
    defaults = [c for c in usable if c.default]
    pick = defaults or usable
    if not pick:
        raise BackendUnavailable(f"no available solver for family {family!r}")
    return pick[0]


def compile_and_run(solver: type[Solver], model: Any, **options: Any) -> Result:
    """Compile ``model`` for ``solver`` and run it, all under the Ctrl-C guard.

    The compile time is part of the result's wall time and reported as ``stats["build_time"]``;
    a hard stop (second Ctrl-C) while compiling returns an INTERRUPTED result, never raises.
    """
    with catching_sigint():
        start = time.perf_counter()
        try:
            compiled = solver.compile(model)
        except KeyboardInterrupt:
            return interrupted_before_solving(solver.family, solver.name)
        built = time.perf_counter() - start
        result = solver.run(compiled, **options)
    result.stats.setdefault("build_time", built)
    result.stats["wall_time"] = result.stats.get("wall_time", 0.0) + built
    return result


def interrupted_before_solving(family: str, method: str) -> Result:
    """The result of a solve stopped hard (second Ctrl-C) before its solver held anything."""
    return Result(Termination.INTERRUPTED, SolutionStatus.NONE, family=family, method=method,
                  message="interrupted before the solver held a solution")


def solve(family: str, compiled: Any, method: str | None = None, **kwargs: Any) -> Result:
    """Solve a family's compiled form with the chosen (or default) method."""
    return get_solver(family, method, kwargs.get("device")).run(compiled, **kwargs)
