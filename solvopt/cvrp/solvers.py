"""Registered solvers of the family ``cvrp`` (the split models of :mod:`solvopt.dsl.split`).

- ``split``: deterministic split by Vidal's O(n) split (Bellman layers for a limited fleet or
  soft capacity); stochastic split by the Numba kernels (SIMD blocks of scenarios, sampling
  fused into the kernel). The default on a machine without a GPU.
- ``split-numpy``: the NumPy references (Bellman split; stochastic oracle, NumPy sampler).
- ``split-cuda``: the stochastic split on a GPU (``gpu/cvrp.cu``); the deterministic split, a
  single O(n) pass, stays on the CPU. Chosen by ``device="auto"`` when CuPy sees a device.

What the statuses mean:

- the **deterministic split** is exact: OPTIMAL with ``bound = objective`` (through
  :func:`solvopt.core.status.settle`), or INFEASIBLE with the reason;
- the **stochastic split** returns a sample-average estimate. Every scenario's split is optimal,
  but the objective (the sample mean over the feasible scenarios) estimates the expected cost
  without proving it, so nothing is certified: ``bound = None``, ``gap = None``, and the
  interval is in ``solution["ci95"]`` (with ``std_error`` and ``scenarios``). A run that
  evaluated every requested scenario terminates FEASIBLE_WITHIN_GAP with solution status
  FEASIBLE: it did all the work asked, and its answer is known within a stated (statistical)
  error, never OPTIMAL, which would claim a proof. A time limit or Ctrl-C returns the estimate
  over the chunks that merged (TIME_LIMIT / INTERRUPTED, the number of scenarios done in
  ``solution["scenarios"]`` and the message). ``Result.guarantee`` states this.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numba
import numpy as np

from solvopt.core.backend import CUDA_INSTALL_HINT
from solvopt.core.chunks import Z95, ChunkRun
from solvopt.core.errors import ModelError
from solvopt.core.options import Option, SolveOptions
from solvopt.core.progress import Progress
from solvopt.core.registry import Solver, register
from solvopt.core.result import Result, Termination
from solvopt.core.status import settle
from solvopt.dsl.split import MAX_LOAD, Split, StochasticSplit, TourGeometry

from .deterministic import bellman_split, vidal_split
from .sampling import poisson_tables
from .stochastic import DEFAULT_CHUNK, KERNELS, CompiledStochasticSplit, run_scenarios

OPTIMISED_DET = "split of the given tour"                      # what `optimal` is about: not the CVRP
OPTIMISED_SAA = "expected split cost of the given tour"
GUARANTEE_DET = ("split of the given tour: optimal among the ways to cut this giant tour into routes, "
                 "not a proven optimum of the CVRP (another tour may cost less)")
GUARANTEE_SAA = ("split of the given tour in each scenario: each scenario's split is optimal; the objective is "
                 "the sample mean over the feasible scenarios, an estimate of the expected split cost, not a proven "
                 "value: nothing is certified (bound = None); "
                 f"its 95% confidence interval is solution['ci95'] = mean +- {Z95:.4f} standard errors "
                 "(normal approximation)")
SAMPLER = "philox4x32-10 poisson inversion"


@dataclass
class CompiledSplit:
    """Deterministic split: the tour geometry and its loads, capacity, fleet, penalty."""

    geom: TourGeometry
    tour_loads: np.ndarray
    capacity: float
    fleet: int | None
    penalty: float | None


def compile_split(model):
    """The compiled form of a Split or StochasticSplit model (compile once, solve many)."""
    if isinstance(model, (CompiledSplit, CompiledStochasticSplit)):
        return model
    if isinstance(model, Split):
        return CompiledSplit(model.geometry(), model.tour_loads(), model.capacity, model.fleet, model.penalty)
    if isinstance(model, StochasticSplit):
        geom = model.geometry()
        tables = poisson_tables(model.demands[1:]) if model.demand_matrix is None else None
        if tables is not None and tables.max_demand * geom.n > MAX_LOAD:
            raise ModelError(f"Poisson demands this large (up to {tables.max_demand} per customer, {geom.n} customers) "
                             "overflow the 32-bit route loads of the kernels")
        ref = bellman_split(geom, model.means[model.tour - 1], model.capacity)
        return CompiledStochasticSplit(geom, model.int_capacity, model.policy, model.penalty or 0.0, model.scenarios,
                                       tables, model.demand_matrix, ref.objective if ref.feasible else None)
    raise ModelError(f"the cvrp methods solve Split or StochasticSplit models, got {type(model).__name__}")


def deterministic_result(compiled: CompiledSplit, fast: bool) -> Result:
    """Split the tour (Vidal's O(n) when ``fast`` and it applies, else Bellman): exact, so OPTIMAL."""
    use_vidal = fast and compiled.fleet is None and compiled.penalty is None
    if use_vidal:
        sol = vidal_split(compiled.geom, compiled.tour_loads, compiled.capacity)
    else:
        sol = bellman_split(compiled.geom, compiled.tour_loads, compiled.capacity, compiled.fleet, compiled.penalty)
    stats = {"backend": "numpy", "algorithm": "vidal O(n)" if use_vidal else "bellman", "customers": compiled.geom.n}
    if not sol.feasible:
        term, status, gap = settle(None, None, has_solution=False, stopped=Termination.INFEASIBLE)
        return Result(term, status, message=sol.message, stats=stats)
    solution = {"tour": compiled.geom.tour, "routes": sol.routes, "loads": sol.loads, "costs": sol.costs,
                "num_routes": len(sol.routes), "optimised": OPTIMISED_DET}
    if compiled.penalty is not None:
        solution["penalties"] = sol.penalties
    term, status, gap = settle(sol.objective, sol.objective, has_solution=True)
    return Result(term, status, objective=sol.objective, bound=sol.objective, gap=gap, solution=solution,
                  stats=stats, guarantee=GUARANTEE_DET)


def stochastic_result(compiled: CompiledStochasticSplit, run: ChunkRun, keep_costs: bool, stats: dict) -> Result:
    """The SAA estimate as a Result: objective = sample mean, bound None, interval in the solution."""
    st = run.stats
    feasible, infeasible = int(st.count[0]), int(st.infinite[0])
    done = feasible + infeasible
    summary = st.summary(0)
    solution = {"scenarios": done, "scenarios_requested": compiled.scenarios, "feasible_scenarios": feasible,
                "infeasible_scenarios": infeasible, "infeasible_share": infeasible / done if done else 0.0,
                "tour": compiled.geom.tour, "policy": compiled.policy,
                "deterministic_objective": compiled.reference, "optimised": OPTIMISED_SAA}
    if feasible:
        solution["mean"] = summary["mean"]
        if feasible >= 2:   # one value says nothing about the spread: no interval rather than a zero-width one
            solution.update(std_dev=math.sqrt(summary["variance"]), std_error=summary["std_error"],
                            ci95=summary["ci95"])
        else:
            solution.update(std_dev=None, std_error=None, ci95=None)
        if "quantiles" in summary:
            solution.update(quantiles=summary["quantiles"], quantile_sample=summary["quantile_sample"])
    if keep_costs:
        solution["scenario_costs"] = st.sample(0)
    stats = dict(stats, chunks=run.chunks, scenarios=done)
    notes = []
    if run.stopped is not None:
        why = "time limit" if run.stopped is Termination.TIME_LIMIT else "interrupted"
        notes.append(f"{why} after {done:,} of {compiled.scenarios:,} scenarios ({run.chunks} chunks): "
                     "the estimate is over the scenarios done")
    if feasible == 0:
        notes.append(f"all {done:,} scenarios evaluated are infeasible: a customer's demand exceeds the capacity "
                     f"{compiled.capacity} (use policy 'penalty' to serve such customers alone)")
        term, status, _ = settle(None, None, has_solution=False, stopped=run.stopped or Termination.INFEASIBLE)
        return Result(term, status, message="; ".join(notes), solution=solution, stats=stats)
    if infeasible:
        notes.append(f"{infeasible:,} of {done:,} scenarios ({100 * infeasible / done:.3g}%) are infeasible (a "
                     "customer's demand exceeds the capacity) and excluded from the mean")
    if feasible < 2:
        notes.append("one feasible scenario: no confidence interval")
    mean = summary["mean"]                          # = solution["mean"]: feasible > 0 here
    term, status, gap = settle(mean, None, has_solution=True, stopped=run.stopped)
    return Result(term, status, objective=mean, bound=None, gap=gap, solution=solution, stats=stats,
                  guarantee=GUARANTEE_SAA, message="; ".join(notes))


class _SplitSolver(Solver):
    family = "cvrp"
    capabilities = ("split", "limited fleet", "soft capacity", "stochastic demands", "poisson sampling",
                    "demand matrix", "chunking")
    options = (
        Option("chunk", int, None,
               f"stochastic split: scenarios per chunk (memory is O(chunk); default {DEFAULT_CHUNK})"),
        Option("keep_costs", bool, False, "stochastic split: every scenario's cost in solution['scenario_costs'] "
                                          "(inf = infeasible)"),
    )
    kernel = "numba"            # the scenario kernel backend
    on_gpu = False

    @classmethod
    def compile(cls, model):
        return compile_split(model)

    def solve(self, compiled, options: SolveOptions) -> Result:
        compiled = self.compile(compiled)
        self.check_device(options)
        if isinstance(compiled, CompiledSplit):
            for name in ("chunk", "keep_costs"):
                if options.extra.get(name):
                    raise ModelError(f"option {name!r} applies to the stochastic split (StochasticSplit, or "
                                     "--scenarios / --demand on the command line)")
            return deterministic_result(compiled, fast=self.kernel != "numpy")
        start = time.perf_counter()
        keep = bool(options.extra.get("keep_costs"))
        deadline = None if options.time_limit is None else start + options.time_limit
        run, stats = self.run_scenarios(compiled, options, keep, deadline)
        wall = time.perf_counter() - start
        stats.update(wall_time=wall, ns_per_scenario=1e9 * wall / max(run.done, 1),
                     chunk=min(options.extra.get("chunk") or DEFAULT_CHUNK, compiled.scenarios),
                     sampler="matrix" if compiled.demands is not None else SAMPLER)
        return stochastic_result(compiled, run, keep, stats)

    def check_device(self, options: SolveOptions) -> None:
        if options.device == "gpu":
            raise ModelError(f"method {self.name!r} runs on the CPU; use method 'split-cuda' (or device='auto') "
                             "for the GPU")

    def scenario_backend(self, options: SolveOptions) -> str:
        """The kernel backend the scenario chunks build on: this method's own kernel."""
        return self.kernel

    def run_scenarios(self, compiled, options: SolveOptions, keep: bool, deadline):
        backend = self.scenario_backend(options)
        run = run_scenarios(compiled, seed=options.seed, backend=backend, chunk=options.extra.get("chunk"),
                            keep_costs=keep, deadline=deadline, progress=Progress(options.progress, log=options.log))
        return run, {"backend": backend, "device": "cpu" if backend != "auto" else "per worker"}


@register
class SplitNumba(_SplitSolver):
    name = "split"
    default = True
    honours = frozenset({"threads", "device"})
    description = "CVRP split: Vidal O(n) / Bellman; stochastic split with fused-sampling Numba SIMD kernels"

    def scenario_backend(self, options: SolveOptions) -> str:
        """Numba here; under ``device="auto"`` with chunks on dask workers (``use_client``), each worker
        picks CUDA when it sees a GPU, else Numba (the same Philox demand stream on both)."""
        from solvopt.core.tasks import current_client
        return "auto" if options.device == "auto" and current_client() is not None else self.kernel

    def run_scenarios(self, compiled, options: SolveOptions, keep: bool, deadline):
        previous = numba.get_num_threads()
        if options.threads is not None:
            # NUMBA_NUM_THREADS is set at import from the environment: not in numba's stubs
            numba.set_num_threads(min(options.threads, numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]
        try:
            threads = numba.get_num_threads()
            run, stats = super().run_scenarios(compiled, options, keep, deadline)
        finally:
            numba.set_num_threads(previous)
        return run, dict(stats, threads=threads)


@register
class SplitNumpy(_SplitSolver):
    name = "split-numpy"
    kernel = "numpy"
    honours = frozenset({"device"})
    description = "CVRP split, NumPy references (Bellman split, stochastic oracle) - the test oracle"


@register
class SplitCuda(_SplitSolver):
    name = "split-cuda"
    kernel = "cuda"
    uses_cuda = True
    honours = frozenset({"device"})
    backend_packages = ("cupy-cuda12x",)
    description = "stochastic CVRP split on a GPU (gpu/cvrp.cu, fused Philox sampling); needs CuPy + a device"
    install_hint = CUDA_INSTALL_HINT

    def check_device(self, options: SolveOptions) -> None:
        if options.device == "cpu":
            raise ModelError("method 'split-cuda' runs on the GPU; use method 'split' (or device='cpu')")

    def run_scenarios(self, compiled, options: SolveOptions, keep: bool, deadline):
        run, stats = super().run_scenarios(compiled, options, keep, deadline)
        return run, dict(stats, device=KERNELS.load("cuda").device_name())
