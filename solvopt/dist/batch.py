"""``solve_many``: a batch of instances or models solved as tasks, one Result each, in completion order.

Each input is solved where a task runs (this process, or a dask worker: see
:func:`solvopt.core.tasks.map_tasks`), exactly as ``model.solve(method, **options)`` would solve it
alone, so a batch's results equal the sequential ones. Nothing a single input does stops the
batch: an input that raises (bad data, a bug, a worker lost more often than
``distributed.scheduler.allowed-failures`` allows) comes back as a Result with termination
ERROR and the message, and the others complete. Ctrl-C (or a ``deadline``) ends the batch with
what has finished: the generator simply stops; the inputs not finished are cancelled.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Iterator
from typing import Any

from solvopt.core.errors import ModelError, SolvoptError
from solvopt.core.interrupt import catching_sigint
from solvopt.core.progress import Progress
from solvopt.core.result import Result, SolutionStatus, Termination
from solvopt.core.tasks import TaskError, exception_message, map_tasks


def input_name(item: Any, index: int) -> str:
    """How a batch input is named in its Result: an Instance's (or model's) name, a file's stem, else ``#index``."""
    if _with_params(item):
        item = item[0]
    if isinstance(item, (str, os.PathLike)):
        return os.path.splitext(os.path.basename(os.fspath(item)))[0]
    name = getattr(item, "name", None)
    return name if isinstance(name, str) and name else f"#{index}"


def error_result(message: str, **stats) -> Result:
    """The Result of an input that could not be solved: termination ERROR, no solution, the message."""
    return Result(Termination.ERROR, SolutionStatus.NONE, message=message, stats=dict(stats))


def _with_params(item: Any) -> bool:
    return isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], dict)


def model_of(item: Any, model_params: dict) -> tuple:
    """A batch input as ``(model, name or None)``: a file path is read, an Instance built by its family.

    ``(path or Instance, params)``: that input's own parameters, over ``model_params``; those its
    file's reader takes (a point file's ``k``) go to the reader, the rest (and those the family's
    model also takes) to the family's ``from_instance``.
    """
    own: dict = {}
    if _with_params(item):
        item, own = item
        model_params = {**model_params, **own}
    if hasattr(item, "solve"):
        if own:
            raise ModelError(f"a model input takes no parameters, got {', '.join(sorted(own))}")
        return item, None
    from solvopt.core.family import get_family
    from solvopt.io import Instance, detect_format, read_instance
    reader_params: set = set()
    if isinstance(item, Instance):
        instance = item
    else:
        reader_params = set(detect_format(os.fspath(item)).params)
        instance = read_instance(os.fspath(item), **{k: v for k, v in model_params.items() if k in reader_params})
    family = get_family(instance.family)

    def to_model(name: str) -> bool:
        param = family.param(name)
        return name not in reader_params or (param is not None and param.target == "model")
    return family.build_model(instance, **{k: v for k, v in model_params.items() if to_model(k)}), instance.name


def solve_one(item: Any, method: str | None = None, options: dict | None = None,
              model_params: dict | None = None) -> Result:
    """Solve one batch input (runs on a worker); every exception becomes an ERROR Result."""
    try:
        model, name = model_of(item, model_params or {})
        result = model.solve(method, **(options or {}))
    except SolvoptError as exc:
        return error_result(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
    except Exception as exc:
        return error_result(exception_message(exc))
    if name:
        result.stats["instance"] = name
    return result


def solve_many(items: Iterable, client=None, *, workers: int | None = None, method: str | None = None,
               model_params: dict | None = None, deadline: float | None = None, progress: bool | None = None,
               warm: bool | list[str] = False, **options) -> Iterator[Result]:
    """Solve every input; yield one Result per input **in completion order**.

    ``items``: models (anything with ``.solve``), :class:`~solvopt.io.Instance` objects or
    instance file paths (read and built by their family; ``model_params`` go to the family's
    ``from_instance``, and to the reader those it takes, such as a point file's ``k``), or
    ``(path or Instance, params)`` pairs giving one input its own parameters over ``model_params``.
    ``client``: a ``distributed.Client`` (default: the one set by
    :func:`solvopt.core.tasks.use_client`); ``workers=N``: a LocalCluster of N one-thread
    processes for this batch; neither: one after the other in this process. ``options`` go to
    every solve (``time_limit`` is per input). ``progress``: a line per finished input on
    stderr (default: when stderr is a terminal). Each Result's ``stats`` carry ``batch_index``
    (the input's position) and ``instance`` (its name). Ctrl-C (or ``request_stop()``) while the
    batch runs: the input being solved here returns its best (INTERRUPTED), the generator ends,
    the inputs not finished are cancelled.

    ``warm=True`` first compiles, in this process, the Numba kernels of the inputs' families into
    the Numba cache (:func:`solvopt.warmup.warmup`; a list names the families) and, with a
    ``client``, points its workers at that cache (:func:`solvopt.dist.cache.share_cache`), so
    the workers load the kernels instead of each compiling them.
    """
    items = list(items)
    if warm:
        from .cache import share_cache, warm_batch
        warm_batch(items, families=None if warm is True else list(warm))
        from solvopt.core.tasks import current_client
        target = client if client is not None else current_client()
        if target is not None:
            share_cache(target)
    task = functools.partial(solve_one, method=method, options=options, model_params=model_params)
    bar = Progress(progress)
    runs = map_tasks(task, items, client=client, workers=workers, deadline=deadline, progress=bar,
                     return_exceptions=True, what="instances")
    with catching_sigint():  # Ctrl-C ends the batch with what has finished (spine semantics)
        try:
            for index, result in runs:
                if isinstance(result, TaskError):  # lost outside the solve (e.g. KilledWorker)
                    result = error_result(result.message)
                result.stats["batch_index"] = index
                result.stats.setdefault("instance", input_name(items[index], index))
                yield result
        finally:
            runs.close()


def solve_list(items: Iterable, client=None, **kwargs) -> list[Result | None]:
    """:func:`solve_many` collected **in input order**; an input not finished (Ctrl-C, deadline) is None."""
    items = list(items)
    out: list[Result | None] = [None] * len(items)
    for result in solve_many(items, client, **kwargs):
        out[result.stats["batch_index"]] = result
    return out
