"""BLAS thread limits for methods whose linear algebra is many small dense solves.

A threaded BLAS spends more on waking and syncing its threads than a small system costs, and on a
busy machine its threads spin for cores other jobs hold: measured on a shared 2-core machine at
load 3.5, a 112-variable generalized Nash problem took 1.49 s against 0.29 s on one thread, and a
30-period Markov economy (10 x 10 Fisher markets) 7.0 s against 0.66 s. Methods built on such solves
run under :func:`one_blas_thread`; it needs ``threadpoolctl`` (installed with scikit-learn, or on its
own) and does nothing without it.
"""
from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def one_blas_thread(when: bool = True) -> contextlib.AbstractContextManager[Any]:
    """A context in which BLAS uses one thread (``when`` False, or no threadpoolctl: no change)."""
    if not when:
        return contextlib.nullcontext()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:                         # pragma: no cover - optional
        return contextlib.nullcontext()
    limits: contextlib.AbstractContextManager[Any] = threadpool_limits(1, user_api="blas")
    return limits


def on_one_blas_thread(solve: F) -> F:
    """Decorator: the method's ``solve(self, model, options)`` runs under :func:`one_blas_thread`."""
    @functools.wraps(solve)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        with one_blas_thread():
            return solve(*args, **kwargs)
    return wrapped  # type: ignore[return-value]
