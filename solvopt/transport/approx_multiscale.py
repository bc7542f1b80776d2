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
the trees grow). Masses that are not integer multiples of one unit (drawn at random, say) are
rounded down to multiples of one, 2^k units a side (:mod:`solvopt.transport.mass_units`), and
that problem is solved so, its coarser levels by cost scaling from :data:`ROUNDED_SCALING_FROM`
points; the leftovers (a share of about (n + m) 2^-k of the mass) are sent by the north-west
corner rule along a Z curve, so the plan has the true marginals, and the last round's potentials
are certified again with the true masses (a bound for the rounded problem is none for them; a
stop before that step leaves no bound). The points are first put in Z order (Morton codes of a grid), so that points
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

from .dual import bound_and_partners
from .mass_units import Rounded, restored_plan, rounded_masses, total_bits
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
# Masses rounded to multiples of one unit (mass_units): the coarser levels from this many points
# (n + m) are solved by warm cost scaling too (n = 10^5, d = 2, p = 2, masses drawn from [0.1, 1.1]:
# its 49,000-point level took 3.5 s so, 5.4 s by the simplex, whose pivots cost more on such masses
# than on uniform ones).
ROUNDED_SCALING_FROM = 20_000


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
    """:func:`solve_multiscale` on ``model`` as it is (its points in Z order). Masses that are not
    integer multiples of one unit, where warm cost scaling would take the levels: the problem
    with the masses rounded down to multiples of one (:mod:`solvopt.transport.mass_units`) is
    solved instead, its plan completed by the leftovers and its potentials certified with the true
    masses."""
    from .sparse_exact import NEIGHBOURS, best_bound, price, scaling_resolution, start_pairs
    start = time.perf_counter()

    def stop() -> bool:        # polled in the flow and between c-transform chunks: a heartbeat, and the stops
        progress(f"approx (multiscale): {time.perf_counter() - start:.0f}s")
        return stop_reason(deadline) is not None
    stats["graph"] = "multiscale"
    rounded = rounded_problem(model, scaling_from) if engine == "scaling" else None
    if rounded is not None:         # its coarser levels by cost scaling from fewer points than uniform ones'
        scaling_from = min(scaling_from, ROUNDED_SCALING_FROM)
    work = model if rounded is None else type(model)(model.x, model.y, a=rounded.alpha, b=rounded.beta,
                                                     p=model.p, metric=model.metric)
    if rounded is not None:
        stats.update(mass_unit=rounded.unit, mass_units=float(2**rounded.bits))
    try:
        begun = start_pairs(work, NEIGHBOURS, engine="scaling" if engine == "scaling" else "simplex", stop=stop,
                            stats=stats, scaling_from=scaling_from)
    except Stopped:
        return stopped_result(model, stop_reason(deadline), stats)
    stats["start_time"] = time.perf_counter() - start
    progress(f"approx (multiscale): {len(stats.get('levels', []))} coarse levels, {len(begun.keys):,} candidate "
             f"pairs ({stats['start_time']:.1f}s)", force=True)
    fine = begun.engine if engine == "scaling" else engine      # (the level's, decided in start_pairs)
    scaled = engine == "scaling" and fine == "costscaling"
    resolution = scaling_resolution(work, begun.plan) if scaled else None
    stats.update(engine=fine, resolution=resolution)
    held: list = []
    plan, bound, more, stopped = price(work, begun.keys, engine=fine, stop=stop, progress=progress,
                                       start=begun.tree if fine == "simplex" else None, max_rounds=ROUNDS,
                                       ratio=TARGET, label="approx (multiscale)",
                                       warm=begun.potentials if scaled else None,
                                       resolution=resolution, potentials=held)
    stats.update(more)
    if rounded is None:
        bound = best_bound(bound, begun.bound)
        if plan is None:         # stopped in the first fine round: the coarse optimum refined, if any
            return stopped_result(model, stop_reason(deadline), stats, bound=bound, plan=begun.plan)
        return transport_result(model, plan, guarantee=None, bound=bound,
                                stopped=stop_reason(deadline) if stopped else None, stats=stats)
    # the rounded problem's bounds are not bounds for the true masses: the last potentials, certified
    # again with them (unless a stop came: nothing then runs unwatched), and the plan completed
    t0 = time.perf_counter()
    if plan is None:
        if begun.plan is None:
            return stopped_result(model, stop_reason(deadline), stats)
        plan, u, unit = begun.plan, None, None
    else:
        u, unit = (held[0], held[1]) if held else (None, None)
    plan, left = restored_plan(model, rounded, plan)
    stats.update(leftover_mass=left / model.mass, repair_time=time.perf_counter() - t0)
    bound = None
    stopped = stopped or stop_reason(deadline) is not None
    if not stopped and u is not None:
        t0 = time.perf_counter()
        try:
            out = bound_and_partners(model, u, unit, stop)
        except Stopped:
            out, stopped = None, True
        bound = None if out is None else out[0]
        stats["certificate_time"] = time.perf_counter() - t0
    return transport_result(model, plan, guarantee=None, bound=bound,
                            stopped=stop_reason(deadline) if stopped else None, stats=stats)


def rounded_problem(model, scaling_from: int) -> Rounded | None:
    """The masses of ``model`` rounded to multiples of one unit (:func:`solvopt.transport.mass_units.rounded_masses`)
    where its points' level (``scaling_from`` points or more) would be solved by warm cost scaling
    but for its masses (not integer multiples of one unit that fits the kernel); None where they
    are (uniform masses: as before), or the level is smaller (the simplex takes real masses)."""
    from .sparse_exact import COARSEST, POINTS_PER_CELL, level_engine
    points = model.n + model.m
    if points < scaling_from or level_engine(model, "scaling", scaling_from) == "costscaling":
        return None
    levels, size, least = 0, float(points), min(scaling_from, ROUNDED_SCALING_FROM)
    while size > COARSEST:              # the coarser levels also solved by cost scaling
        size /= POINTS_PER_CELL
        if size < least:
            break
        levels += 1
    bits = total_bits(model.a, model.b, levels)
    return None if bits is None else rounded_masses(model.a, model.b, bits)


__all__ = ["FINE_ENGINE", "FINE_ENGINES", "ROUNDED_SCALING_FROM", "ROUNDS", "TARGET", "rounded_problem",
           "solve_multiscale"]
