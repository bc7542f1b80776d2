"""solvopt: optimization solvers with a declarative modeling DSL.

Families, one folder each (see docs/families.md): k-hyperplane clustering (``solvopt.khc``), the
CVRP split (``solvopt.cvrp``), min-plus dynamic programs over layered DAGs (``solvopt.dp``),
inventory reinsertion (``solvopt.irp``, on the dp engine), LP/MILP/QP models (``solvopt.lp``),
W_p optimal transport (``solvopt.transport``) and pseudo-games, markets and Markov games
(``solvopt.games``); their models are declared in ``solvopt.dsl``. Batches of instances and
scenario chunks run on dask.distributed through ``solvopt.dist`` (``solve_many``, ``solve_list``).

Two things happen on ``import solvopt``, before anything imports Numba:

- **Numba's cache goes to a per-user folder**, never into the installed package (files left there
  survive an uninstall and shadow a later install). Unless ``NUMBA_CACHE_DIR`` is already set, it
  is set for this process to ``$SOLVOPT_CACHE_DIR/numba`` when ``SOLVOPT_CACHE_DIR`` is set, else
  ``$XDG_CACHE_HOME/solvopt/numba`` (``~/.cache/solvopt/numba``; ``%LOCALAPPDATA%`` on Windows).
  Numba reads the variable for every cached function of the process (and child processes inherit
  it), so another Numba library used beside solvopt caches there too.
- **A source checkout imports as the installed package would**: the repository keeps ``dsl/`` and
  ``gpu/`` beside ``solvopt/`` (setup.cfg installs them as ``solvopt.dsl`` and ``solvopt.gpu``).
  When Python imports this folder from a checkout (e.g. run from the repository root, whose
  ``solvopt/`` comes first on ``sys.path``), a finder maps exactly those two names to the
  checkout's folders, so the checkout's own code is used whether or not (and however) it is
  installed.
"""
from __future__ import annotations

import logging
import os
import sys

__version__ = "0.1.0"

# The library's logger (progress lines and backends' logs, see solvopt.core.progress): silent
# unless the application configures logging.
logging.getLogger("solvopt").addHandler(logging.NullHandler())

CACHE_ENV = "SOLVOPT_CACHE_DIR"  # the folder solvopt caches into (Numba's cache is its numba/ subfolder)


def numba_cache_dir(environ=None) -> str:
    """The folder Numba caches compiled functions into, by the rule in this module's docstring."""
    environ = os.environ if environ is None else environ
    if environ.get("NUMBA_CACHE_DIR"):
        return environ["NUMBA_CACHE_DIR"]
    if environ.get(CACHE_ENV):
        base = environ[CACHE_ENV]
    else:
        root = environ.get("XDG_CACHE_HOME") or (environ.get("LOCALAPPDATA") if os.name == "nt" else None)
        base = os.path.join(root or os.path.join(os.path.expanduser("~"), ".cache"), "solvopt")
    return os.path.join(os.path.abspath(os.path.expanduser(base)), "numba")


def _set_numba_cache_dir() -> None:
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    os.environ["NUMBA_CACHE_DIR"] = numba_cache_dir()
    config = sys.modules.get("numba.core.config")
    if config is not None:  # Numba was imported first: make it read the variable again
        config.reload_config()


_set_numba_cache_dir()


# --- a source checkout: solvopt.dsl and solvopt.gpu live in ../dsl and ../gpu ---------------------------
_HERE = os.path.dirname(os.path.abspath(__file__))
_MAPPED = ("dsl", "gpu")


def _checkout_root() -> str | None:
    """The repository root when this package is imported from a checkout (not from an install)."""
    if all(os.path.isdir(os.path.join(_HERE, name)) for name in _MAPPED):
        return None  # installed layout: the subpackages are inside
    root = os.path.dirname(_HERE)
    try:
        with open(os.path.join(root, "setup.cfg"), encoding="utf-8") as fh:
            cfg = fh.read()
    except OSError:
        return None
    if "name = solvopt" not in cfg:
        return None
    if not all(os.path.isfile(os.path.join(root, name, "__init__.py")) for name in _MAPPED):
        return None
    return root


class _CheckoutFinder:
    """Finds ``solvopt.dsl`` and ``solvopt.gpu`` (only those) in a checkout's ``dsl/`` and ``gpu/``."""

    def __init__(self, root: str):
        self.root = root

    def find_spec(self, fullname, path=None, target=None):
        prefix, _, name = fullname.rpartition(".")
        if prefix != __name__ or name not in _MAPPED:
            return None
        import importlib.util
        folder = os.path.join(self.root, name)
        return importlib.util.spec_from_file_location(fullname, os.path.join(folder, "__init__.py"),
                                                      submodule_search_locations=[folder])

    def invalidate_caches(self):
        pass


def _install_checkout_finder() -> None:
    root = _checkout_root()
    if root is None:
        return
    for finder in sys.meta_path:
        if isinstance(finder, _CheckoutFinder) or type(finder).__name__ == "_CheckoutFinder":
            sys.meta_path.remove(finder)  # a finder of an earlier import of this package (reload)
            break
    sys.meta_path.insert(0, _CheckoutFinder(root))


_install_checkout_finder()

from .core import (  # noqa: E402
    BackendUnavailable,
    InstanceFormatError,
    ModelError,
    Result,
    SolutionStatus,
    SolveOptions,
    SolverError,
    SolvoptError,
    Termination,
)


def __getattr__(name):
    """``solvopt.solve_many`` / ``solvopt.solve_list``, loaded on first use (``import solvopt`` stays light)."""
    if name in ("solve_many", "solve_list"):
        from . import dist
        return getattr(dist, name)
    raise AttributeError(f"module 'solvopt' has no attribute {name!r}")


__all__ = ["BackendUnavailable", "InstanceFormatError", "ModelError", "Result", "SolutionStatus",
           "SolveOptions", "SolverError", "SolvoptError", "Termination", "__version__", "numba_cache_dir",
           "solve_list", "solve_many"]
