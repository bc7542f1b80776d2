"""Warm workers: one Numba cache for the client and every worker, filled once.

A kernel compiled by one process is written to Numba's on-disk cache (``$NUMBA_CACHE_DIR``, see
:mod:`solvopt`) and loaded, not compiled, by every later process that looks there. A
LocalCluster's workers inherit the client's environment, so they already look in the client's
folder; workers started elsewhere (``dask worker`` on other machines) look in their own user's.
:func:`share_cache` points every worker of a client (those running now and those that join
later) at one folder, and :func:`warm_batch` runs :func:`solvopt.warmup.warmup` once, in the
client process, for the families a batch needs, so the workers load the kernels instead of each
compiling them.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

PLUGIN_NAME = "solvopt-numba-cache"


class NumbaCachePlugin:
    """A dask worker plugin that sets ``NUMBA_CACHE_DIR`` (and ``SOLVOPT_CACHE_DIR``) on the worker.

    Set before the worker imports a solvopt kernel module (a kernel chooses its cache folder when
    its module is imported): workers that already ran a solvopt task keep their folder until
    restarted.
    """

    name = PLUGIN_NAME
    idempotent = True

    def __init__(self, numba_dir: str, solvopt_dir: str | None = None):
        self.numba_dir = numba_dir
        self.solvopt_dir = solvopt_dir

    def setup(self, worker=None):
        os.environ["NUMBA_CACHE_DIR"] = self.numba_dir
        if self.solvopt_dir:
            os.environ["SOLVOPT_CACHE_DIR"] = self.solvopt_dir
        import sys
        config = sys.modules.get("numba.core.config")
        if config is not None:  # Numba already imported on the worker: make it read the folder again
            config.reload_config()

    def teardown(self, worker=None):
        return None

    def transition(self, key, start, finish, **kwargs):
        return None


def _worker_plugin(numba_dir: str, solvopt_dir: str | None):
    from distributed.diagnostics.plugin import WorkerPlugin

    class _Plugin(NumbaCachePlugin, WorkerPlugin):
        pass

    return _Plugin(numba_dir, solvopt_dir)


def share_cache(client, folder: str | os.PathLike | None = None) -> str:
    """Point every worker of ``client`` at one Numba cache folder; returns the folder.

    ``folder``: the Numba cache folder (default: the client process's own, ``$NUMBA_CACHE_DIR``
    as :mod:`solvopt` sets it). Workers on other machines need it on a shared file system (the
    same path everywhere). Workers that join later get it too (a dask worker plugin).
    """
    from solvopt import CACHE_ENV, numba_cache_dir
    numba_dir = os.path.abspath(os.fspath(folder)) if folder is not None else numba_cache_dir()
    plugin = _worker_plugin(numba_dir, os.environ.get(CACHE_ENV) if folder is None else None)
    client.register_plugin(plugin, name=PLUGIN_NAME)
    return numba_dir


def worker_cache_dirs(client) -> dict[str, str]:
    """Each worker's Numba cache folder, by worker address (what :func:`share_cache` set, or its own)."""
    def where() -> str:
        import solvopt
        return solvopt.numba_cache_dir()
    return client.run(where)


def _family_of_model(model) -> str | None:
    """The family whose descriptor lists the model's class (or a base class) among its ``models``."""
    from solvopt.core.family import families
    names = {f"{cls.__module__}:{cls.__qualname__}" for cls in type(model).__mro__}
    return next((f.name for f in families() if names & set(f.models)), None)


def families_of(items: Iterable[Any]) -> list[str]:
    """The families of a batch's inputs, in first-seen order: a model's (or Instance's) ``family``
    (else the family that lists the model's class), a file's by its detected format; an input
    whose family cannot be told (a missing file) is skipped."""
    out: list[str] = []
    for item in items:
        family = getattr(item, "family", None)
        if not isinstance(family, str) and hasattr(item, "solve"):
            family = _family_of_model(item)
        if not isinstance(family, str) and isinstance(item, (str, os.PathLike)):
            try:
                from solvopt.io.base import detect_format
                family = detect_format(os.fspath(item)).family
            except Exception:
                family = None
        if isinstance(family, str) and family and family not in out:
            out.append(family)
    return out


def warm_batch(items: Iterable[Any] | None = None, families: list[str] | None = None, progress=None) -> dict:
    """Compile, in this process, the kernels of ``families`` (default: those of the batch's ``items``)
    into the shared cache; returns :func:`solvopt.warmup.warmup`'s report (empty when there is nothing to warm)."""
    from solvopt.warmup import warmup
    names = list(families) if families is not None else families_of(items or [])
    return warmup(names, progress=progress) if names else {}
