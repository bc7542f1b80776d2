"""The chunk protocol for scenario work, and the mergeable statistics every chunk returns.

Scenario work (the min-plus engine, the stochastic split, the inventory DP) is cut into
chunks. A chunk is a **pure function of (model, seed, chunk index)**: it regenerates its own
scenarios from the seed and its index (counter-based random numbers), so the same chunk gives
the same numbers in one process, on a GPU, or as a dask.distributed task on another machine.
Each chunk returns a :class:`ScenarioStats`; statistics merge exactly (Chan, Golub and
LeVeque's pairwise update), and :func:`run_chunks` merges them **in chunk-index order**, so
the estimate, its standard error and interval are the same to the last bit for any chunk
schedule that merges in that order (a distributed run does too: it merges results by index).

Interface for a family::

    plan = ChunkPlan(total=scenarios, size=chunk)          # which scenarios each chunk holds
    def chunk(index: int, start: int, stop: int) -> ScenarioStats: ...   # pure
    run = run_chunks(plan, chunk, deadline=..., progress=...)
    run.stats, run.done, run.stopped                        # merged stats, scenarios done, why stopped

The driver checks the deadline and Ctrl-C (:func:`solvopt.core.interrupt.stop_requested`)
between chunks, so a run stops within one chunk's time and returns what has merged.

**On a cluster** (``run_chunks(..., client=c)``, or inside :func:`solvopt.core.tasks.use_client`)
the chunk callable is sent once to every worker (``client.scatter(..., broadcast=True)``; it
must pickle, and build its scenarios on the worker from the seed and its index) and each chunk
index is one task. Results are merged **in chunk-index order** as the contiguous prefix
arrives, with the same sequence of pairwise merges as a run in one process, so the estimate,
its standard error and interval are bit-identical for 1, 2 or N workers (workers of one kind
of device: a CUDA worker reduces on the device, equal to a CPU's only to rounding). At a
deadline or Ctrl-C the tasks not finished are cancelled and every finished chunk is merged, in
index order; ``done`` states the scenarios that made the answer.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .errors import ModelError
from .interrupt import stop_reason
from .result import Termination
from .tasks import current_client, map_tasks

if TYPE_CHECKING:
    from .progress import Progress

# a chunk: (index, start, stop) -> its mergeable result
Chunk = Callable[[int, int, int], Any]

Z95 = 1.959963984540054          # the 0.975 quantile of the standard normal: one constant everywhere
DEFAULT_SAMPLE_LIMIT = 100_000   # scenarios kept (per row) for quantiles


@dataclass(frozen=True)
class ChunkPlan:
    """``total`` items (scenarios) cut into chunks of ``size`` (the last one may be shorter)."""

    total: int
    size: int

    def __post_init__(self) -> None:
        if not (isinstance(self.total, (int, np.integer)) and self.total >= 1):
            raise ModelError(f"the number of scenarios must be a positive integer, got {self.total!r}")
        if not (isinstance(self.size, (int, np.integer)) and self.size >= 1):
            raise ModelError(f"chunk must be a positive integer, got {self.size!r}")

    @property
    def count(self) -> int:
        return -(-int(self.total) // int(self.size))

    def bounds(self, index: int) -> tuple[int, int]:
        start = index * self.size
        return start, min(start + self.size, self.total)


class ScenarioStats:
    """Mergeable statistics of per-scenario values, one row per quantity (e.g. per final state).

    Per row: the number of finite values, their mean and sum of squared deviations (exact
    under merge), the count of infinite ("unreachable" / infeasible) values, and a bounded
    quantile sample: the values of the scenarios whose global index is a multiple of
    ``stride`` (scenarios are i.i.d., so this is a uniform sample; exact when stride is 1).
    """

    def __init__(self, rows: int = 1, stride: int = 1):
        self.rows = rows
        self.stride = max(1, int(stride))
        self.count = np.zeros(rows)
        self.mean = np.zeros(rows)
        self.m2 = np.zeros(rows)
        self.infinite = np.zeros(rows, np.int64)
        self._sample_index: list[npt.NDArray[np.int64]] = []
        self._sample_values: list[npt.NDArray[np.float64]] = []

    @staticmethod
    def stride_for(total: int, sample_limit: int = DEFAULT_SAMPLE_LIMIT) -> int:
        return max(1, math.ceil(total / max(1, sample_limit)))

    @classmethod
    def of(cls, values: npt.ArrayLike, start: int = 0, stride: int = 1,
           finite: npt.ArrayLike | None = None) -> ScenarioStats:
        """Statistics of a chunk: ``values`` (rows, n) or (n,) for scenarios start..start+n-1.

        ``finite`` marks the values that count (default: np.isfinite); the others count as
        infinite. Works on NumPy arrays; CuPy callers reduce on the device with
        :meth:`from_moments` instead.
        """
        vals = np.asarray(values, dtype=np.float64)
        if vals.ndim == 1:
            vals = vals[None, :]
        ok = np.asarray(np.isfinite(vals) if finite is None else finite, bool).reshape(vals.shape)
        n_finite = ok.sum(axis=1).astype(np.float64)
        safe = np.where(ok, vals, 0.0)
        mean = safe.sum(axis=1) / np.maximum(n_finite, 1)
        m2 = (np.where(ok, safe - mean[:, None], 0.0) ** 2).sum(axis=1)
        out = cls.from_moments(n_finite, mean, m2, vals.shape[1] - n_finite.astype(np.int64), stride)
        first = (-start) % out.stride
        if first < vals.shape[1]:
            idx = np.arange(start + first, start + vals.shape[1], out.stride, dtype=np.int64)
            picked = vals[:, first::out.stride]
            out.add_sample(idx, np.where(ok[:, first::out.stride], picked, np.inf))
        return out

    @classmethod
    def from_moments(cls, count: npt.ArrayLike, mean: npt.ArrayLike, m2: npt.ArrayLike, infinite: npt.ArrayLike,
                     stride: int = 1) -> ScenarioStats:
        """A chunk's statistics from per-row moments computed elsewhere (e.g. on a GPU)."""
        counts = np.atleast_1d(np.asarray(count, np.float64))
        out = cls(rows=counts.size, stride=stride)
        out.count = counts.copy()
        out.mean = np.atleast_1d(np.asarray(mean, np.float64)).copy()
        out.m2 = np.atleast_1d(np.asarray(m2, np.float64)).copy()
        out.infinite = np.atleast_1d(np.asarray(infinite, np.int64)).copy()
        return out

    def add_sample(self, index: npt.ArrayLike, values: npt.ArrayLike) -> None:
        """Attach quantile-sample values (rows, len(index)) computed elsewhere."""
        self._sample_index.append(np.asarray(index, np.int64))
        self._sample_values.append(np.asarray(values, np.float64).reshape(self.rows, -1))

    def merge(self, other: ScenarioStats) -> ScenarioStats:
        """Fold ``other`` into this one (Chan et al.'s pairwise update); returns self."""
        if other.rows != self.rows:
            raise ValueError(f"cannot merge statistics of {other.rows} rows into {self.rows}")
        if other.stride != self.stride:
            raise ValueError("cannot merge statistics sampled with different strides")
        total = self.count + other.count
        delta = other.mean - self.mean
        with np.errstate(invalid="ignore", divide="ignore"):
            weight = np.where(total > 0, other.count / np.maximum(total, 1), 0.0)
        self.m2 = self.m2 + other.m2 + delta ** 2 * self.count * weight
        self.mean = self.mean + delta * weight
        self.count = total
        self.infinite = self.infinite + other.infinite
        self._sample_index += other._sample_index
        self._sample_values += other._sample_values
        return self

    @property
    def scenarios(self) -> int:
        """Scenarios seen (finite or not), from row 0."""
        return int(self.count[0] + self.infinite[0]) if self.rows else 0

    def variance(self, row: int = 0) -> float:
        n = self.count[row]
        return float(self.m2[row] / (n - 1)) if n > 1 else 0.0

    def std_error(self, row: int = 0) -> float:
        n = self.count[row]
        return math.sqrt(self.variance(row) / n) if n > 0 else math.inf

    def interval(self, row: int = 0) -> tuple[float, float]:
        """The 95% normal confidence interval of the mean over the finite values."""
        mean, half = float(self.mean[row]), Z95 * self.std_error(row)
        return mean - half, mean + half

    def row_means(self) -> npt.NDArray[np.float64]:
        """Mean per row; +inf where some scenario's value is infinite."""
        return np.where(self.infinite > 0, np.inf, self.mean)

    def sample(self, row: int = 0) -> npt.NDArray[np.float64]:
        """The sampled values of one row in scenario order (+inf = infinite)."""
        if not self._sample_index:
            return np.zeros(0)
        index = np.concatenate(self._sample_index)
        values = np.concatenate([v[row] for v in self._sample_values])
        return values[np.argsort(index, kind="stable")]

    def summary(self, row: int = 0, levels: Sequence[float] = (0.05, 0.5, 0.95)) -> dict[str, Any]:
        """Mean, variance, standard error, 95% interval (finite values), quantiles from the sample
        (``{level: value}``, float levels: the keys ``Result`` and its JSON round trip use)."""
        n = int(self.count[row])
        out: dict[str, Any] = {"feasible_scenarios": n, "infinite_scenarios": int(self.infinite[row])}
        if n == 0:
            return out
        lo, hi = self.interval(row)
        out.update(mean=float(self.mean[row]), variance=self.variance(row), std_error=self.std_error(row),
                   ci95=[lo, hi])
        sample = self.sample(row)
        sample = sample[np.isfinite(sample)]
        if sample.size:
            out["quantiles"] = {float(q): float(v) for q, v in zip(levels, np.quantile(sample, levels))}
            out["quantile_sample"] = int(sample.size)
        return out


@dataclass
class ChunkRun:
    """What :func:`run_chunks` did: merged statistics, items done, and why it stopped (None = all done)."""

    stats: Any                     # the merged result (a ScenarioStats unless merge= says otherwise)
    done: int
    chunks: int
    stopped: Termination | None = None
    wall_time: float = 0.0
    extras: list[Any] = field(default_factory=list)


def run_chunks(plan: ChunkPlan, chunk: Chunk, *, deadline: float | None = None,
               progress: Progress | None = None, what: str = "scenarios",
               merge: Callable[[Any, Any], Any] | None = None, first: int = 0, client: Any = None) -> ChunkRun:
    """Run ``chunk(index, start, stop)`` for every chunk in index order and merge the results.

    ``merge(acc, part)`` folds a chunk's result into the accumulator (default: ``acc.merge(part)``).
    Stops early, returning what has merged, when ``deadline`` (a ``time.perf_counter()`` value)
    passes or a stop is requested (Ctrl-C); the first chunk always runs. ``progress`` (a
    :class:`~solvopt.core.progress.Progress`) gets a line with the rate and the ETA.
    ``client`` (default: the one set by :func:`solvopt.core.tasks.use_client`): run the chunks as
    tasks on its workers (see the module docstring); a chunk that raises raises
    :class:`~solvopt.core.tasks.TaskError` here.
    """
    fold: Callable[[Any, Any], Any] = merge or (lambda acc, part: acc.merge(part))
    client = client if client is not None else current_client()
    if client is not None and plan.count - first > 1:
        return _run_on_cluster(client, plan, chunk, deadline, progress, what, fold, first)
    start_time = time.perf_counter()
    acc: Any = None
    stopped: Termination | None = None
    done, ran = 0, 0
    for index in range(first, plan.count):
        lo, hi = plan.bounds(index)
        part = chunk(index, lo, hi)
        acc = part if acc is None else fold(acc, part)
        done += hi - lo
        ran += 1
        elapsed = time.perf_counter() - start_time
        if progress is not None:
            progress.rate(done, plan.total - plan.bounds(first)[0], what, elapsed=elapsed,
                          force=index == plan.count - 1)
        if index == plan.count - 1:
            break
        stopped = stop_reason(deadline)
        if stopped is not None:
            break
    return ChunkRun(stats=acc, done=done, chunks=ran, stopped=stopped, wall_time=time.perf_counter() - start_time)


def _call_chunk(task: tuple[Chunk, int, int, int]) -> Any:
    """A chunk task on a worker: ``(chunk, index, start, stop)``, the chunk already unpickled there."""
    chunk, index, lo, hi = task
    return chunk(index, lo, hi)


def _run_on_cluster(client: Any, plan: ChunkPlan, chunk: Chunk, deadline: float | None, progress: Progress | None,
                    what: str, merge: Callable[[Any, Any], Any], first: int) -> ChunkRun:
    """Chunks as tasks; merge the contiguous prefix in index order, the rest in index order at a stop."""
    start_time = time.perf_counter()
    shared = client.scatter(chunk, broadcast=True, hash=False)
    indices = range(first, plan.count)
    tasks = [(shared, index, *plan.bounds(index)) for index in indices]
    arrived: dict[int, Any] = {}
    acc: Any = None
    done, ran, next_index = 0, 0, first
    total = plan.total - plan.bounds(first)[0]
    finished = map_tasks(_call_chunk, tasks, client=client, deadline=deadline, what=what)
    try:
        for position, part in finished:
            index = first + position
            arrived[index] = part
            lo, hi = plan.bounds(index)
            done += hi - lo
            while next_index in arrived:  # the contiguous prefix: the same merges as in one process
                part = arrived.pop(next_index)
                acc = part if acc is None else merge(acc, part)
                next_index += 1
                ran += 1
            if progress is not None:
                progress.rate(done, total, what, elapsed=time.perf_counter() - start_time, force=done == total)
    finally:
        finished.close()
    for index in sorted(arrived):  # stopped early: chunks that finished past a gap count too
        acc = arrived[index] if acc is None else merge(acc, arrived[index])
        ran += 1
    return ChunkRun(stats=acc, done=done, chunks=ran, stopped=finished.stopped,
                    wall_time=time.perf_counter() - start_time)
