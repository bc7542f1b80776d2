"""An engine-neutral task map: independent tasks in this process or on a dask.distributed cluster.

:func:`map_tasks` runs ``fn(item)`` for every item and yields ``(index, result)`` pairs **in
completion order**. Where the tasks run:

- ``client`` given (a ``distributed.Client``, or one set with :func:`use_client`): on its workers,
  one dask task per item (``client.map(fn, items, pure=False)``);
- no client and ``workers`` None or 1: here, one item after the other (no extra needed);
- ``workers=N`` (N > 1) and no client: a ``LocalCluster`` of N worker processes with one thread
  each is started for the run and closed after it (needs the ``dist`` extra, dask[distributed]).

The core never imports dask at module level: only the code paths that use a cluster import it.

Stopping: between completions the map checks Ctrl-C (the stop request of
:mod:`solvopt.core.interrupt`) and ``deadline`` (a ``time.perf_counter()`` value); when either
fires it stops yielding, cancels the tasks not finished, and records why in ``.stopped``
(INTERRUPTED or TIME_LIMIT; None when every task finished). What was yielded is what finished;
the first task to finish is always waited for (so a run has an answer, as in the chunk driver).

Faults: a task that raises becomes a :class:`TaskError` (its index and a one-line message),
raised from the iterator, or yielded in place of the result with ``return_exceptions=True``.
A dask worker that dies mid-run loses nothing: the scheduler reruns its tasks on the other
workers. A task that has been on ``distributed.scheduler.allowed-failures`` + 1 dying workers
(default 3) is declared lost (``KilledWorker``) and comes back as a TaskError like any other.
"""
from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from .errors import BackendUnavailable, ModelError, SolvoptError
from .interrupt import stop_reason
from .result import Termination

if TYPE_CHECKING:
    from .progress import Progress

# one finished task: (index, its result or the failure's message, whether it failed)
_Run = Generator[tuple[int, Any, bool], None, None]

POLL_SECONDS = 0.05      # how often a cluster run checks Ctrl-C and the deadline while it waits
_current_client: list[Any] = []  # the stack of clients set by use_client (innermost last)


class TaskError(SolvoptError):
    """Task ``index`` raised; ``message`` is ``"ExceptionType: text"`` (first line)."""

    def __init__(self, index: int, message: str):
        self.index, self.message = int(index), message
        super().__init__(f"task {index}: {message}")

    def __reduce__(self) -> tuple[type[TaskError], tuple[int, str]]:
        # survives pickling (a task result travelling between processes)
        return (TaskError, (self.index, self.message))


def exception_message(exc: BaseException) -> str:
    """``"ExceptionType: first line of the message"``: how a failed task is reported."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


@contextlib.contextmanager
def use_client(client: Any) -> Iterator[Any]:
    """Within the block, task maps and chunk runs given no client use ``client`` (None: this process)."""
    _current_client.append(client)
    try:
        yield client
    finally:
        _current_client.pop()


def current_client() -> Any:
    """The client set by the innermost :func:`use_client`, or None."""
    return _current_client[-1] if _current_client else None


def require_distributed() -> Any:
    """Import ``distributed`` or raise BackendUnavailable naming the ``dist`` extra."""
    try:
        import distributed
    except ImportError as exc:
        raise BackendUnavailable("running on several workers needs dask.distributed: "
                                 "pip install 'solvopt[dist]'") from exc
    return distributed


def local_client(workers: int, **cluster_options: Any) -> Any:
    """A ``Client`` on a new ``LocalCluster`` of ``workers`` processes, one thread each.

    One thread each includes Numba's parallel kernels (``NUMBA_NUM_THREADS=1`` in the workers).
    ``cluster_options`` go to ``LocalCluster`` (e.g. ``memory_limit``); the dashboard is off by
    default (no port to find on a shared machine). Use it in a ``with`` block, or call
    ``client.close()``: closing the client shuts its cluster down.
    """
    distributed = require_distributed()
    # silence_logs: a task's error comes back as its result; the cluster's own log lines (e.g. a
    # worker's heartbeat traceback when the batch is stopped and the scheduler closes first) would
    # only put tracebacks on the CLI's stderr
    options = dict(n_workers=int(workers), threads_per_worker=1, processes=True, dashboard_address=None,
                   env={"NUMBA_NUM_THREADS": "1"}, silence_logs=logging.CRITICAL)
    options.update(cluster_options)
    return distributed.Client(**options)


class TaskMap:
    """The iterator :func:`map_tasks` returns: ``(index, result)`` pairs in completion order.

    After it is exhausted (or closed): ``done`` tasks finished, ``total`` tasks asked for,
    ``stopped`` = why it ended early (Termination.INTERRUPTED / TIME_LIMIT) or None.
    """

    def __init__(self, fn: Callable[[Any], Any], items: Sequence[Any], client: Any, workers: int | None,
                 deadline: float | None, progress: Progress | None, return_exceptions: bool, what: str):
        self.total, self.done = len(items), 0
        self.stopped: Termination | None = None
        self.wall_time = 0.0
        self._args = (fn, items, client, workers, deadline, progress, return_exceptions, what)
        self._gen = self._run()

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        return self

    def __next__(self) -> tuple[int, Any]:
        return next(self._gen)

    def close(self) -> None:
        """Stop early: cancel what has not finished (and close a cluster started for this map)."""
        self._gen.close()

    def _run(self) -> Generator[tuple[int, Any], None, None]:
        fn, items, client, workers, deadline, progress, return_exceptions, what = self._args
        start = time.perf_counter()
        runs: _Run | None = None
        try:
            if client is not None:
                runs = self._cluster(client, fn, items, deadline)
            elif workers is None or workers <= 1:
                runs = self._here(fn, items, deadline)
            else:
                runs = self._own_cluster(int(workers), fn, items, deadline)
            for index, value, failed in runs:
                self.done += 1
                if progress is not None:
                    progress.rate(self.done, self.total, what, elapsed=time.perf_counter() - start,
                                  force=self.done == self.total)
                if failed:
                    value = TaskError(index, value)
                    if not return_exceptions:
                        raise value
                yield index, value
        finally:
            if runs is not None:
                runs.close()  # cancels what has not finished (a raise or an early close lands here too)
            self.wall_time = time.perf_counter() - start

    def _stop_now(self, deadline: float | None) -> bool:
        self.stopped = stop_reason(deadline)
        return self.stopped is not None

    def _here(self, fn: Callable[[Any], Any], items: Sequence[Any], deadline: float | None) -> _Run:
        for index, item in enumerate(items):
            if index > 0 and self._stop_now(deadline):
                return
            try:
                value = fn(item)
            except Exception as exc:
                yield index, exception_message(exc), True
                continue
            yield index, value, False

    def _own_cluster(self, workers: int, fn: Callable[[Any], Any], items: Sequence[Any],
                     deadline: float | None) -> _Run:
        with local_client(workers) as client:
            yield from self._cluster(client, fn, items, deadline)

    def _cluster(self, client: Any, fn: Callable[[Any], Any], items: Sequence[Any],
                 deadline: float | None) -> _Run:
        distributed = require_distributed()
        futures = client.map(fn, items, pure=False)
        index_of = {f.key: i for i, f in enumerate(futures)}
        finished = distributed.as_completed(futures)
        pending = set(futures)
        try:
            while pending:
                batch = finished.next_batch(block=False) if finished.has_ready() else []
                for future in batch:  # what has finished is delivered before any stop
                    if future.status not in ("finished", "error", "cancelled"):
                        # its result was lost with a killed worker after it finished: the scheduler
                        # recomputes it, and it is delivered when it finishes again
                        finished.add(future)
                        continue
                    pending.discard(future)
                    index = index_of[future.key]
                    if future.status == "finished":
                        yield index, future.result(), False
                    else:  # "error" (the task raised, or KilledWorker) or "cancelled"
                        exc = future.exception() if future.status == "error" else None
                        yield index, exception_message(exc) if exc is not None else f"task {future.status}", True
                    future.release()
                if pending and self.done and self._stop_now(deadline):  # as here: the first task finishes
                    return
                if not batch:
                    time.sleep(POLL_SECONDS)
        finally:
            if pending:
                client.cancel(list(pending))


def map_tasks(fn: Callable[[Any], Any], items: Iterable[Any], *, client: Any = None, workers: int | None = None,
              deadline: float | None = None, progress: Progress | None = None, return_exceptions: bool = False,
              what: str = "tasks") -> TaskMap:
    """Run ``fn(item)`` for every item; iterate over ``(index, result)`` in completion order.

    ``client``: a ``distributed.Client`` (default: the one set by :func:`use_client`, if any);
    ``workers``: without a client, N > 1 starts a LocalCluster of N processes for this map.
    ``fn`` and the items must pickle when a cluster runs them. ``deadline``: a
    ``time.perf_counter()`` value; ``progress``: a :class:`~solvopt.core.progress.Progress`.
    A task's exception raises :class:`TaskError` from the iterator (the other tasks are
    cancelled), or with ``return_exceptions=True`` is yielded as the TaskError.
    """
    if client is not None and workers is not None:
        raise ModelError("give a client or a number of workers, not both")
    if workers is not None and not (isinstance(workers, int) and workers >= 1):
        raise ModelError(f"workers must be a positive integer, got {workers!r}")
    if client is None and workers is None:
        client = current_client()
    return TaskMap(fn, list(items), client, workers, deadline, progress, return_exceptions, what)


__all__ = ["TaskError", "TaskMap", "map_tasks", "use_client", "current_client", "local_client",
           "require_distributed", "exception_message"]
