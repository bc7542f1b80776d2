"""One BLAS thread for methods made of small dense solves, and the previous count restored after."""
from __future__ import annotations

import numpy as np  # noqa: F401 - loads the BLAS threadpoolctl reports
import pytest

from solvopt.core.threads import on_one_blas_thread, one_blas_thread

threadpoolctl = pytest.importorskip("threadpoolctl")


def _blas_threads() -> list[int]:
    return [pool["num_threads"] for pool in threadpoolctl.threadpool_info() if pool["user_api"] == "blas"]


def test_one_blas_thread_limits_and_restores():
    before = _blas_threads()
    if not before:
        pytest.skip("threadpoolctl sees no BLAS here")
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        outer = _blas_threads()
        with one_blas_thread():
            assert _blas_threads() == [1] * len(before)
        assert _blas_threads() == outer
        with one_blas_thread(False):
            assert _blas_threads() == outer


def test_the_decorator_runs_the_method_on_one_thread():
    if not _blas_threads():
        pytest.skip("threadpoolctl sees no BLAS here")

    class Method:
        @on_one_blas_thread
        def solve(self, model, options):
            """solve's own docstring"""
            return _blas_threads(), model, options

    threads, model, options = Method().solve("model", options="options")
    assert set(threads) == {1} and (model, options) == ("model", "options")
    assert Method.solve.__doc__ == "solve's own docstring"
