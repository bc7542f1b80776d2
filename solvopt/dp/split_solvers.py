"""Registered solvers of the family ``cvrp`` (the split models of :mod:`solvopt.dsl.split`).

- ``split`` (default): deterministic split by Vidal's O(n) split (Bellman layers for a
  limited fleet or soft capacity); stochastic split by the Numba kernels (SIMD blocks of
  scenarios, sampling fused into the kernel).
- ``split-numpy``: the NumPy references (Bellman split; stochastic oracle, NumPy sampler).
- ``split-cuda``: the stochastic split on a GPU (``gpu/split.cu``); the deterministic split,
  a single O(n) pass, stays on the CPU.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from solvopt.core.errors import ModelError
from solvopt.core.options import SolveOptions
from solvopt.core.progress import Progress
from solvopt.core.registry import Availability, Solver, module_installed, register
from solvopt.core.result import Result, SolutionStatus, Termination

from .split import TourGeometry, bellman_split, vidal_split
from .split_random import PoissonTables, poisson_tables
from .split_stochastic import SAAEstimate, ScenarioSplit, run_chunks

GUARANTEE_DET = "optimal split of the given giant tour"
GUARANTEE_SAA = ("each scenario's split is optimal; objective = sample mean over the feasible scenarios, "
                 "ci95 = mean +- 1.96 standard errors")


@dataclass
class CompiledSplit:
    """Deterministic split: the tour geometry and its loads, capacity, fleet, penalty."""

    geom: TourGeometry
    tour_loads: np.ndarray
    capacity: float
    fleet: int | None
    penalty: float | None


@dataclass
class CompiledStochasticSplit:
    """Stochastic split: the kernel problem plus the demand source (tables or a matrix)."""

    problem: ScenarioSplit
    scenarios: int
    chunk: int
    tables: PoissonTables | None
    demands: np.ndarray | None
    reference: float          # deterministic split at the mean demands (also the statistics' shift)


def compile_split(model):
    """The compiled form of a Split or StochasticSplit model (compile once, solve many)."""
    from solvopt.dsl.split import Split, StochasticSplit
    if isinstance(model, (CompiledSplit, CompiledStochasticSplit)):
        return model
    geom = model.geometry()
    if isinstance(model, Split):
        return CompiledSplit(geom, model.tour_loads(), model.capacity, model.fleet, model.penalty)
    if isinstance(model, StochasticSplit):
        problem = ScenarioSplit(geom, model.int_capacity, model.policy, model.penalty or 0.0)
        tables = poisson_tables(model.demands[1:]) if model.demand_matrix is None else None
        if tables is not None and tables.max_demand * geom.n >= 2 ** 31:
            raise ModelError("Poisson demands this large overflow the 32-bit route loads of the kernels")
        ref = bellman_split(geom, model.means[model.tour - 1], model.capacity)
        return CompiledStochasticSplit(problem, model.scenarios, model.chunk, tables, model.demand_matrix,
                                       ref.objective if ref.feasible else 0.0)
    raise ModelError(f"the cvrp methods solve Split or StochasticSplit models, got {type(model).__name__}")


def deterministic_result(compiled: CompiledSplit, fast: bool) -> Result:
    """Split the tour (Vidal's O(n) when ``fast`` and it applies, else Bellman) into a Result."""
    use_vidal = fast and compiled.fleet is None and compiled.penalty is None
    if use_vidal:
        sol = vidal_split(compiled.geom, compiled.tour_loads, compiled.capacity)
    else:
        sol = bellman_split(compiled.geom, compiled.tour_loads, compiled.capacity, compiled.fleet, compiled.penalty)
    stats = {"backend": "numpy", "algorithm": "vidal O(n)" if use_vidal else "bellman", "customers": compiled.geom.n}
    if not sol.feasible:
        return Result(Termination.INFEASIBLE, message=sol.message, stats=stats)
    solution = {"tour": compiled.geom.tour, "routes": sol.routes, "loads": sol.loads, "costs": sol.costs,
                "num_routes": len(sol.routes)}
    if compiled.penalty is not None:
        solution["penalties"] = sol.penalties
    return Result(Termination.OPTIMAL, SolutionStatus.OPTIMAL, objective=sol.objective, bound=sol.objective,
                  gap=0.0, solution=solution, stats=stats, guarantee=GUARANTEE_DET)


def stochastic_result(compiled: CompiledStochasticSplit, est: SAAEstimate, stopped: bool, stats: dict) -> Result:
    """The SAA estimate as a Result (time-limited runs keep the estimate over the scenarios done)."""
    summary = est.summary()
    summary["tour"] = compiled.problem.geom.tour
    summary["policy"] = compiled.problem.policy
    summary["deterministic_objective"] = compiled.reference
    stats = dict(stats, scenarios_requested=compiled.scenarios, chunks=est.chunks)
    if est.feasible == 0:
        term = Termination.TIME_LIMIT if stopped else Termination.INFEASIBLE
        msg = (f"all {est.scenarios} scenarios evaluated are infeasible: a customer's demand exceeds the capacity "
               f"{compiled.problem.capacity} (use policy 'penalty' to serve such customers alone)")
        return Result(term, message=msg, solution=summary, stats=stats)
    msg = ""
    if est.infeasible:
        msg = (f"{est.infeasible} of {est.scenarios} scenarios ({100 * summary['infeasible_share']:.3g}%) are "
               "infeasible (a customer's demand exceeds the capacity) and excluded from the mean")
    if stopped:
        msg = f"time limit after {est.scenarios} of {compiled.scenarios} scenarios. " + msg
        return Result(Termination.TIME_LIMIT, SolutionStatus.FEASIBLE, objective=est.mean, solution=summary,
                      stats=stats, guarantee=GUARANTEE_SAA, message=msg.strip())
    return Result(Termination.OPTIMAL, SolutionStatus.OPTIMAL, objective=est.mean, bound=est.mean, gap=0.0,
                  solution=summary, stats=stats, guarantee=GUARANTEE_SAA, message=msg)


def _deadline(options: SolveOptions) -> float | None:
    return None if options.time_limit is None else time.perf_counter() + options.time_limit


def _progress(options: SolveOptions) -> Progress:
    return Progress(options.progress, log=options.log)


class _SplitSolver(Solver):
    family = "cvrp"
    capabilities = ("split", "limited fleet", "soft capacity", "stochastic demands", "poisson sampling",
                    "demand matrix", "chunking")
    extra_options = {"keep_costs": False}
    backend = "numba"

    @classmethod
    def compile(cls, model):
        return compile_split(model)

    def solve(self, compiled, options: SolveOptions) -> Result:
        compiled = self.compile(compiled)
        self.check_device(options)
        if isinstance(compiled, CompiledSplit):
            return deterministic_result(compiled, fast=self.backend != "numpy")
        start = time.perf_counter()
        est, stopped, stats = self.run_stochastic(compiled, options)
        wall = time.perf_counter() - start
        stats.update(wall_time=wall, ns_per_scenario=1e9 * wall / max(est.scenarios, 1))
        return stochastic_result(compiled, est, stopped, stats)

    def check_device(self, options: SolveOptions) -> None:
        if options.device == "gpu":
            raise ModelError(f"method {self.name!r} runs on the CPU; use method 'split-cuda' for the GPU")

    def run_stochastic(self, compiled: CompiledStochasticSplit, options: SolveOptions):
        import numba
        previous = numba.get_num_threads()
        if options.threads is not None:
            numba.set_num_threads(min(options.threads, numba.config.NUMBA_NUM_THREADS))
        try:
            threads = numba.get_num_threads()
            est, stopped = run_chunks(compiled.problem, scenarios=compiled.scenarios, demands=compiled.demands,
                                      tables=compiled.tables, seed=options.seed, chunk=compiled.chunk,
                                      backend=self.backend, shift=compiled.reference,
                                      keep_costs=bool(options.extra.get("keep_costs")),
                                      progress=_progress(options), deadline=_deadline(options))
        finally:
            numba.set_num_threads(previous)
        return est, stopped, {"backend": self.backend, "device": "cpu", "threads": threads,
                              "sampler": "matrix" if compiled.demands is not None else "philox4x32-10 poisson inversion"}


@register
class SplitNumba(_SplitSolver):
    name = "split"
    default = True
    description = "CVRP split: Vidal O(n) / Bellman; stochastic split with fused-sampling Numba SIMD kernels"


@register
class SplitNumpy(_SplitSolver):
    name = "split-numpy"
    backend = "numpy"
    description = "CVRP split, NumPy references (Bellman split, stochastic oracle) - the test oracle"


@register
class SplitCuda(_SplitSolver):
    name = "split-cuda"
    backend = "cuda"
    description = "stochastic CVRP split on a GPU (gpu/split.cu, fused Philox sampling); needs CuPy + a device"
    install_hint = "pip install 'solvopt[gpu]' on a machine with an NVIDIA GPU"

    @classmethod
    def available(cls) -> Availability:
        if not module_installed("cupy"):
            return Availability.NOT_INSTALLED
        from solvopt.core.backend import gpu_available
        return Availability.AVAILABLE if gpu_available() else Availability.NO_DEVICE

    def check_device(self, options: SolveOptions) -> None:
        if options.device == "cpu":
            raise ModelError("method 'split-cuda' runs on the GPU; use method 'split' with device='cpu'")

    def run_stochastic(self, compiled: CompiledStochasticSplit, options: SolveOptions):
        from solvopt.gpu import split as gpu_split
        est, stopped, device = gpu_split.run_chunks(compiled, seed=options.seed, progress=_progress(options),
                                                    deadline=_deadline(options),
                                                    keep_costs=bool(options.extra.get("keep_costs")))
        return est, stopped, {"backend": "cuda", "device": device,
                              "sampler": "matrix" if compiled.demands is not None else "philox4x32-10 poisson inversion"}
