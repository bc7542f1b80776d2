"""Seconds spent compiling Numba functions, measured even when Numba is first imported mid-solve.

Numba announces every compilation (not a load from its cache) with a ``numba:compile`` event.
A listener for it can only be registered once Numba is imported; a family whose solver imports
its kernels inside ``solve`` (so ``import solvopt`` stays light) would otherwise compile
unseen. :func:`install` therefore registers one process-wide listener as soon as
``numba.core.event`` exists: at once when Numba is already imported, else from an import hook
that fires right after that module runs (nothing imports Numba early).

The listener adds up the outermost ``numba:compile`` intervals (a kernel that compiles its
callees nests their events inside its own) of every thread: solvers run kernels in helper
threads (an abandonable worker under a time limit), and Numba compiles under one global lock,
so a compile anywhere in the process delays the solve that waits on it. :class:`compile_timer`
reads the process's total around a block (concurrent solves in threads of one process each
count every compile made during their run)::

    with compile_timer() as jit:
        result = solve()
    jit.seconds   # None when Numba was never imported, else seconds compiling (0.0: all cached)
"""
from __future__ import annotations

import importlib.abc
import sys
import threading
import time
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any, Literal

_EVENT_MODULE = "numba.core.event"
_lock = threading.Lock()
_total = [0.0]                       # seconds compiling in this process (outermost intervals)
_local = threading.local()           # depth and start of the compile in progress on this thread
_installed = False                   # the listener is registered with Numba


def _on_start() -> None:
    depth = getattr(_local, "depth", 0)
    if depth == 0:
        _local.started = time.perf_counter()
    _local.depth = depth + 1


def _on_end() -> None:
    depth = getattr(_local, "depth", 0) - 1
    _local.depth = max(depth, 0)
    if depth == 0:
        elapsed = time.perf_counter() - _local.started
        with _lock:
            _total[0] += elapsed


def _register(event_module: Any) -> None:
    global _installed
    if _installed:
        return

    class _Listener(event_module.Listener):  # type: ignore[misc]  # numba's class, known at run time
        def on_start(self, event: object) -> None:
            _on_start()

        def on_end(self, event: object) -> None:
            _on_end()

    event_module.register("numba:compile", _Listener())
    _installed = True


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader of ``numba.core.event`` to register the listener."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname != _EVENT_MODULE or _installed:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        inner = spec.loader
        if inner is None or not hasattr(inner, "exec_module"):
            return spec
        loader = inner

        class _Loader(importlib.abc.Loader):
            def create_module(self, spec: ModuleSpec) -> ModuleType | None:
                return loader.create_module(spec)

            def exec_module(self, module: ModuleType) -> None:
                loader.exec_module(module)
                try:
                    _register(module)
                except Exception:
                    pass

        spec.loader = _Loader()
        return spec


_hook = _AfterImport()


def install() -> None:
    """Register the listener now if Numba is imported, else when it is (idempotent, imports nothing)."""
    if _installed:
        return
    module = sys.modules.get(_EVENT_MODULE)
    if module is not None:
        try:
            _register(module)
        except Exception:
            pass
        return
    if _hook not in sys.meta_path:
        sys.meta_path.insert(0, _hook)


def total() -> float | None:
    """Seconds this process spent compiling since the listener was installed; None before Numba is imported."""
    if not _installed:
        return None
    with _lock:
        return _total[0]


def numba_in_use() -> bool:
    return _installed


class compile_timer:
    """Seconds the process spends compiling Numba functions inside the block (``.seconds``).

    None when Numba was not imported by the end of the block (the block used none), else the
    outermost compile intervals, 0.0 when every kernel came from the cache or was compiled before.
    """

    seconds: float | None = None

    def __enter__(self) -> compile_timer:
        install()
        self._start = total()
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        end = total()
        if end is not None:
            self.seconds = end - (self._start or 0.0)
        return False
