"""``approx`` with ``graph="multiscale"``: the multiscale start of ``sparse-exact`` and a few pricing
rounds, with an a-posteriori certified gap (no a-priori factor).

The points are binned into cells of about four, the coarse problem solved the same way
(recursively), its optimum refined to the points (the candidate pairs and a warm starting tree
for the network simplex, :mod:`solvopt.transport.multiscale`), and the transport problem solved
on the candidate pairs. Each such restricted solution is a feasible plan, and the double
c-transform of its potentials is a lower bound on W_p certified over *all* pairs
(:mod:`solvopt.transport.dual`). Pricing rounds (the c-transform's minimisers join the pairs)
continue until the bound is within :data:`TARGET` of the plan's W_p (a 1% gap), :data:`ROUNDS`
rounds were done or a round adds no pair (``stats["no_new_pairs"]``). On uniform clouds, with
the simplex's candidates, the first round is within about 4% and the second within about 0.1%;
the levels solved by warm cost scaling take a round's spread at the start, and their first round
usually ends within 1%.

The flows: by default (``engine="auto"``, masses that are integer multiples of one unit, such as
uniform ones) every level of at least :data:`solvopt.transport.sparse_exact.SCALING_FROM` points,
the points' own included, is solved by cost scaling from the coarser level's potentials to a
stated resolution (its W_p within 0.2%; :func:`solvopt.transport.flow.warm_cost_scaling`),
the smaller levels by the network simplex from the coarser optimum's tree; ``engine="simplex"``
solves every level exactly by the simplex (slower from about 10^5 points: its pivots cost more as
the trees grow). The points are first put in Z order (Morton codes of a grid), so that points
near in space are near in memory: the flows' memory reads then stay local (1.6x faster at 10^5).

Nothing is proven before the run ends: the gap is measured, not bounded in advance (unlike the
two-hop graph's factor 3 and the grid hierarchy's 4 |(1, ..., 1)|). The status is
FEASIBLE_WITHIN_GAP with that gap, OPTIMAL only when the bound meets the plan within the default
tolerance.
"""
from __future__ import annotations

import time

from solvopt.core.errors import ModelError
from solvopt.core.interrupt import stop_reason
from solvopt.core.result import Result

from .multiscale import spatial_order, unordered
from .quick import stopped_result
from .result import transport_result
from .sparse_exact import SCALING_FROM
from .stopping import Stopped

# Stop the pricing rounds once the bound is this share of the plan's W_p (a 1% gap) ...
TARGET = 0.99
# ... or after this many rounds.
ROUNDS = 8
# The flow engines of the rounds (they must give potentials); "auto" and "costscaling": warm cost
# scaling on the large levels (sparse_exact.level_engine's "scaling"), the simplex on the others.
FINE_ENGINES = ("auto", "simplex", "costscaling", "highs")
FINE_ENGINE = "scaling"


def solve_multiscale(model, deadline, progress, stats, engine: str = "auto") -> Result:
    """The Result of ``approx`` with the multiscale graph for ``model`` (points with a named metric,
    finite p; see :func:`solvopt.transport.sparse_exact.supported`). ``engine``: the min-cost flow
    engine of the rounds, one with potentials (auto and costscaling: :data:`FINE_ENGINE`; highs:
    the fine rounds by HiGHS, the coarse levels by the simplex)."""
    if engine not in FINE_ENGINES:
        raise ModelError(f"graph='multiscale' needs a flow engine with potentials ({', '.join(FINE_ENGINES)}), "
                         f"got {engine!r}")
    scaling_from = 0 if engine == "costscaling" else SCALING_FROM   # asked for: on every level
    engine = FINE_ENGINE if engine in ("auto", "costscaling") else engine
    ox, oy = spatial_order(model.x), spatial_order(model.y)
    ordered = type(model)(model.x[ox], model.y[oy], a=model.a[ox], b=model.b[oy], p=model.p, metric=model.metric)
    result = _solve_ordered(ordered, deadline, progress, stats, engine, scaling_from)
    plan = result.solution.get("plan") if isinstance(result.solution, dict) else None
    if plan is not None:
        result.solution["plan"] = unordered(plan, ox, oy)
    return result


def _solve_ordered(model, deadline, progress, stats, engine: str, scaling_from: int) -> Result:
    """:func:`solve_multiscale` on ``model`` as it is (its points in Z order)."""
    from .sparse_exact import NEIGHBOURS, best_bound, price, scaling_resolution, start_pairs
    start = time.perf_counter()

    def stop() -> bool:        # polled in the flow and between c-transform chunks: a heartbeat, and the stops
        progress(f"approx (multiscale): {time.perf_counter() - start:.0f}s")
        return stop_reason(deadline) is not None
    stats["graph"] = "multiscale"
    try:
        begun = start_pairs(model, NEIGHBOURS, engine="scaling" if engine == "scaling" else "simplex", stop=stop,
                            stats=stats, scaling_from=scaling_from)
    except Stopped:
        return stopped_result(model, stop_reason(deadline), stats)
    stats["start_time"] = time.perf_counter() - start
    progress(f"approx (multiscale): {len(stats.get('levels', []))} coarse levels, {len(begun.keys):,} candidate "
             f"pairs ({stats['start_time']:.1f}s)", force=True)
    fine = begun.engine if engine == "scaling" else engine      # (the level's, decided in start_pairs)
    scaled = engine == "scaling" and fine == "costscaling"
    resolution = scaling_resolution(model, begun.plan) if scaled else None
    stats.update(engine=fine, resolution=resolution)
    plan, bound, more, stopped = price(model, begun.keys, engine=fine, stop=stop, progress=progress,
                                       start=begun.tree if fine == "simplex" else None, max_rounds=ROUNDS,
                                       ratio=TARGET, label="approx (multiscale)",
                                       warm=begun.potentials if scaled else None,
                                       resolution=resolution)
    stats.update(more)
    bound = best_bound(bound, begun.bound)
    if plan is None:         # stopped in the first fine round: the coarse optimum refined, if any
        return stopped_result(model, stop_reason(deadline), stats, bound=bound, plan=begun.plan)
    return transport_result(model, plan, guarantee=None, bound=bound,
                            stopped=stop_reason(deadline) if stopped else None, stats=stats)


__all__ = ["FINE_ENGINE", "FINE_ENGINES", "ROUNDS", "TARGET", "solve_multiscale"]
