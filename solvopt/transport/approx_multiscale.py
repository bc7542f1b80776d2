"""``approx`` with ``graph="multiscale"``: the multiscale start of ``sparse-exact`` and a few pricing
rounds, with an a-posteriori certified gap (no a-priori factor).

The points are binned into cells of about four, the coarse problem solved the same way
(recursively), its optimum refined to the points (the candidate pairs and a warm starting tree
for the network simplex, :mod:`solvopt.transport.multiscale`), and the transport problem solved
exactly on the candidate pairs. Each such restricted optimum is a feasible plan, and the double
c-transform of its potentials is a lower bound on W_p certified over *all* pairs
(:mod:`solvopt.transport.dual`). Pricing rounds (the c-transform's minimisers join the pairs)
continue until the bound is within :data:`TARGET` of the plan's W_p (a 1% gap) or
:data:`ROUNDS` rounds were done; on uniform clouds the first round is within about 4% and the
second within about 0.1%.

Nothing is proven before the run ends: the gap is measured, not bounded in advance (unlike the
two-hop graph's factor 3 and the grid hierarchy's 4 |(1, ..., 1)|). The status is
FEASIBLE_WITHIN_GAP with that gap, OPTIMAL only when the bound meets the plan within the default
tolerance.
"""
from __future__ import annotations

import time

from solvopt.core.errors import ModelError
from solvopt.core.interrupt import stop_reason

from .quick import stopped_result
from .result import transport_result
from .stopping import Stopped

# Stop the pricing rounds once the bound is this share of the plan's W_p (a 1% gap) ...
TARGET = 0.99
# ... or after this many rounds.
ROUNDS = 8
# The fine rounds' flow engines (they must give potentials) and the one "auto" picks.
FINE_ENGINES = ("auto", "simplex", "costscaling", "highs")
FINE_ENGINE = "simplex"


def solve_multiscale(model, deadline, progress, stats, engine: str = "auto") -> object:
    """The Result of ``approx`` with the multiscale graph for ``model`` (points with a named metric,
    finite p; see :func:`solvopt.transport.sparse_exact.supported`). ``engine``: the min-cost flow
    engine of the fine rounds, one with potentials (auto: :data:`FINE_ENGINE`); the coarse levels
    always run the warm-started network simplex."""
    from .sparse_exact import NEIGHBOURS, best_bound, price, start_pairs
    if engine not in FINE_ENGINES:
        raise ModelError(f"graph='multiscale' needs a flow engine with potentials ({', '.join(FINE_ENGINES)}), "
                         f"got {engine!r}")
    engine = FINE_ENGINE if engine == "auto" else engine
    start = time.perf_counter()

    def stop() -> bool:        # polled in the flow and between c-transform chunks: a heartbeat, and the stops
        progress(f"approx (multiscale): {time.perf_counter() - start:.0f}s")
        return stop_reason(deadline) is not None
    stats["graph"] = "multiscale"
    try:
        begun = start_pairs(model, NEIGHBOURS, engine="simplex", stop=stop, stats=stats)
    except Stopped:
        return stopped_result(model, stop_reason(deadline), stats)
    stats["start_time"] = time.perf_counter() - start
    progress(f"approx (multiscale): {len(stats.get('levels', []))} coarse levels, {len(begun.keys):,} candidate "
             f"pairs ({stats['start_time']:.1f}s)", force=True)
    stats["engine"] = engine
    plan, bound, more, stopped = price(model, begun.keys, engine=engine, stop=stop, progress=progress,
                                       start=begun.tree if engine == "simplex" else None, max_rounds=ROUNDS,
                                       ratio=TARGET,
                                       label="approx (multiscale)")
    stats.update(more)
    bound = best_bound(bound, begun.bound)
    if plan is None:         # stopped in the first fine round: the coarse optimum refined, if any
        return stopped_result(model, stop_reason(deadline), stats, bound=bound, plan=begun.plan)
    return transport_result(model, plan, guarantee=None, bound=bound,
                            stopped=stop_reason(deadline) if stopped else None, stats=stats)


__all__ = ["FINE_ENGINE", "FINE_ENGINES", "ROUNDS", "TARGET", "solve_multiscale"]
