"""Compile every Numba kernel of the chosen families into the user's cache, once.

A kernel is compiled the first time it is called with a new signature, in every new process,
unless Numba's on-disk cache (``$NUMBA_CACHE_DIR``, see :mod:`solvopt`) already holds it: a
batch of dask workers started cold would each compile the same kernels. :func:`warmup` fills
the cache ahead of time, with no list of kernels to keep up to date: it solves, for every
family (through its descriptor), each of the family's registered scale cases at factor 1 with
every method the case lists: the small instances the spine's scale test already solves with
every method, so every kernel those methods use is called with the argument types of a real
solve. ``solvopt warmup`` on the command line does the same.

A kernel whose compiled form depends on the data's shape class (not only on dtypes) needs one
case per class; where a family's scale cases cover one class only, :data:`EXTRA_CASES` adds
the others (k-HC: the search kernel is specialised for n <= 2 and n >= 3 points' dimension and
for the static and dynamic branching orders, each a separate compile; the dp kernels take
float32 as well as float64 costs; the stochastic split samples its scenarios with kernels of
its own; the games' sampled rollouts run only under ``evaluation="sampled"``). A kernel no
small solve reaches (the games' one-asset deviation dynamic program runs only where a
certificate's cheaper bounds leave a gap) is called directly by :data:`EXTRA_CALLS`.
"""
from __future__ import annotations

import time
from collections.abc import Callable

from solvopt.core.jit_clock import compile_timer


def _khc_extra_cases() -> list:
    """k-HC bnb in every specialisation of its search kernel: dimensions 2, 3 (closed-form
    eigenvalues) and 4 (Jacobi), every branching order, with and without the charge bound."""
    import numpy as np

    from solvopt.core.scaling import ScaleCase, invariant
    from solvopt.khc.bnb import ORDERS

    def build(n: int):
        def make(factor: float):
            from solvopt.dsl import HyperplaneClustering
            return HyperplaneClustering(np.random.default_rng(n).uniform(0.0, 10.0, (12, n)) * factor, 2)
        return make

    cases = []
    for n in (2, 3, 4):
        for order in ORDERS:
            cases.append(ScaleCase(f"points-12x{n}-{order}", build(n), invariant, ("bnb",), {"order": order}))
        cases.append(ScaleCase(f"points-12x{n}-charged", build(n), invariant, ("bnb",),
                               {"order": "farthest", "charge_bound": True}))
    return cases


def _dp_extra_cases() -> list:
    """The min-plus kernels in float32 too (``LayeredDP(..., dtype=np.float32)``), both final rules."""
    import numpy as np

    from solvopt.core.scaling import ScaleCase, linear

    def build(final: str):
        def make(factor: float):
            from solvopt.dsl import LayeredDP
            rng = np.random.default_rng(5)
            states = [3, 4, 2]
            layers = [rng.uniform(0.0, 5.0, (4, a, b)) * factor for a, b in zip(states[:-1], states[1:])]
            return LayeredDP(states, layers, final=final, dtype=np.float32)
        return make

    return [ScaleCase(f"layers-float32-{final}", build(final), linear, ("numba",))
            for final in ("per_scenario", "shared")]


def _cvrp_extra_cases() -> list:
    """The stochastic split on sampled (Poisson) scenarios, not only given ones: the sampler and
    the fused cost kernels, with the infeasible and the penalty policy."""
    import numpy as np

    from solvopt.core.scaling import ScaleCase, linear

    def build(penalty):
        def make(factor: float):
            from solvopt.dsl import StochasticSplit
            rng = np.random.default_rng(9)
            xy = rng.uniform(0.0, 100.0, (10, 2))
            dist = np.sqrt(((xy[:, None] - xy[None]) ** 2).sum(-1)) * factor
            demands = np.concatenate([[0.0], rng.integers(1, 8, 9).astype(float)])
            return StochasticSplit(dist, demands, 12.5, scenarios=512, penalty=penalty)
        return make

    return [ScaleCase(f"sampled-{name}", build(penalty), linear, ("split",))
            for name, penalty in (("infeasible", None), ("penalty", 5.0))]


def _games_extra_cases() -> list:
    """``affine-gda`` with sampled evaluation: the rollout kernels (:mod:`solvopt.games.parametric_kernels`),
    which the exact (Lyapunov) evaluation of the scale case never calls."""
    from solvopt.core.scaling import ScaleCase, linear
    from solvopt.games.scaling import lq_game

    options = {"evaluation": "sampled", "samples": 8, "horizon": 6, "iteration_limit": 2, "check_every": 1}
    return [ScaleCase("linear-quadratic-sampled", lq_game, linear, ("affine-gda",), options)]


def _games_one_asset_dp() -> None:
    """Bellman steps of the one-asset deviation dynamic program (:class:`OneAssetDP`, its compiled
    step), as the economies' certificate runs them, on a random one-asset economy with wide limits."""
    import numpy as np

    from solvopt.games import economy as ec
    from solvopt.games.economy_deviation import OneAssetDP, lagrangian_function

    econ = ec.random_economy(3, 2, 1, 2, "cobb_douglas", stochastic=True, seed=1,
                             holding_limit=10.0, borrowing_limit=10.0)
    chain = ec.pair_chain(econ)
    rng = np.random.default_rng(1)
    p = rng.uniform(0.2, 1.0, (len(chain.world), 2))
    p *= econ.price_sum / p.sum(axis=1, keepdims=True)
    q = rng.uniform(0.3, 1.6, (len(chain.world), 1))
    beta = ec.bang_per_buck(econ, p)
    c = np.einsum("sm,snm->sn", p, econ.endowments[chain.world])
    R = np.where(chain.prev[:, None] < 0, 0.0, econ.asset_returns[chain.world])
    lo, hi = -econ.borrowing_limit, econ.holding_limit
    dp = OneAssetDP(chain, econ.discount, beta[:, 0], c[:, 0], q[:, 0], R[:, 0], lo[0], hi[0])
    slope, psi = lagrangian_function(chain, econ.discount, beta[:, 0], c[:, 0], q, R, lo, hi, np.zeros(len(c)))
    ends = np.array([lo[0], hi[0]])
    U = [(ends, slope[s, 0] * ends + psi[s]) for s in range(len(c))]
    for _ in range(3):
        U = [dp.bellman(U, s, 1e-12) for s in range(len(U))]
        if any(u is None for u in U):
            break


# family -> a callable giving more cases (ScaleCase: build(1.0) is solved with each method and options)
EXTRA_CASES: dict[str, Callable[[], list]] = {"khc": _khc_extra_cases, "dp": _dp_extra_cases,
                                                "cvrp": _cvrp_extra_cases, "games": _games_extra_cases}
# family -> {name: a call of kernels no small solve reaches}
EXTRA_CALLS: dict[str, dict[str, Callable[[], None]]] = {"games": {"one-asset-deviation-dp": _games_one_asset_dp}}


def _cases(family) -> list:
    from solvopt.core.family import load_object
    cases = list(load_object(family.scale_cases)()) if family.scale_cases else []
    extra = EXTRA_CASES.get(family.name)
    if extra is not None:
        cases += list(extra())
    return cases


def _solvopt_dispatchers() -> dict[str, object]:
    """Every Numba dispatcher defined at the top level of an imported solvopt module, by name."""
    import sys
    numba = sys.modules.get("numba")
    if numba is None:
        return {}
    from numba.core.dispatcher import Dispatcher
    out: dict[str, object] = {}
    for modname, module in list(sys.modules.items()):
        if module is None or not (modname == "solvopt" or modname.startswith("solvopt.")):
            continue
        for attr, value in list(vars(module).items()):
            if isinstance(value, Dispatcher) and getattr(value, "__module__", modname) == modname:
                out[f"{modname}.{attr}"] = value
    return out


def _cache_counts(dispatcher) -> tuple[int, int]:
    stats = dispatcher.stats
    return sum(stats.cache_hits.values()), sum(stats.cache_misses.values())


def warmup(families: list[str] | None = None, progress: Callable[[str], None] | None = None) -> dict:
    """Compile the Numba kernels of ``families`` (default: every installed family) into the cache.

    Returns ``{family: {...}}`` with, per family: ``seconds`` (wall time of its warm-up solves),
    ``compile_time`` (of which compiling; 0.0 when everything came from the cache), ``cached``
    (True when nothing had to be compiled), ``solves`` (``"case/method"`` -> ``{"seconds",
    "compile_time", "termination"}``; a direct kernel call of :data:`EXTRA_CALLS` by its name, with
    termination None; ``{"error": message}`` for one that failed, which does not stop the others),
    ``kernels`` (each jitted function of the family's modules first used here -> ``{"compiled":
    signatures compiled now, "from_cache": signatures loaded}``) and, for a family without scale
    cases, ``skipped`` (why). ``progress`` gets one line per family.
    An unknown family name is a :class:`~solvopt.core.errors.ModelError` listing the known ones.
    """
    from solvopt.core.errors import ModelError
    from solvopt.core.family import families as all_families

    known = {f.name: f for f in all_families()}
    names = list(known) if not families else list(families)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ModelError(f"unknown family {unknown[0]!r}; known: {', '.join(sorted(known))}")

    report: dict = {}
    for name in names:
        family = known[name]
        entry: dict = {"seconds": 0.0, "compile_time": 0.0, "cached": True, "solves": {}, "kernels": {}}
        report[name] = entry
        cases = _cases(family)
        calls = EXTRA_CALLS.get(name, {})
        if not cases and not calls:
            entry["skipped"] = "the family registers no scale cases"
            if progress:
                progress(f"{name}: skipped ({entry['skipped']})")
            continue
        before = {k: _cache_counts(d) for k, d in _solvopt_dispatchers().items()}
        started = time.perf_counter()
        with compile_timer() as family_jit:
            for case in cases:
                for method in case.methods:
                    key = f"{case.name}/{method}"
                    t0 = time.perf_counter()
                    with compile_timer() as jit:
                        try:
                            result = case.build(1.0).solve(method=method, **case.options)
                        except Exception as exc:
                            entry["solves"][key] = {"error": f"{type(exc).__name__}: {exc}"}
                            continue
                    entry["solves"][key] = {"seconds": time.perf_counter() - t0,
                                            "compile_time": jit.seconds or 0.0,
                                            "termination": result.termination.value}
            for key, call in calls.items():
                t0 = time.perf_counter()
                with compile_timer() as jit:
                    try:
                        call()
                    except Exception as exc:
                        entry["solves"][key] = {"error": f"{type(exc).__name__}: {exc}"}
                        continue
                entry["solves"][key] = {"seconds": time.perf_counter() - t0, "compile_time": jit.seconds or 0.0,
                                        "termination": None}
        entry["seconds"] = time.perf_counter() - started
        entry["compile_time"] = family_jit.seconds or 0.0
        for kname, dispatcher in _solvopt_dispatchers().items():
            hits, misses = _cache_counts(dispatcher)
            hits0, misses0 = before.get(kname, (0, 0))
            if hits > hits0 or misses > misses0:
                entry["kernels"][kname] = {"compiled": misses - misses0, "from_cache": hits - hits0}
        entry["cached"] = entry["compile_time"] == 0.0 and not any(k["compiled"] for k in entry["kernels"].values())
        if progress:
            state = "already cached" if entry["cached"] else f"compiled in {entry['compile_time']:.1f} s"
            errors = sum("error" in s for s in entry["solves"].values())
            failed = f", {errors} solve(s) failed" if errors else ""
            progress(f"{name}: {len(entry['kernels'])} kernel(s), {state} "
                     f"({len(entry['solves'])} solve(s), {entry['seconds']:.1f} s{failed})")
    return report
