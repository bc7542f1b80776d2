"""Deterministic split of a giant tour into capacity-feasible routes (Prins' split).

A giant tour ``sigma`` (customers 1..N-1 in some order) is cut into consecutive segments; each
segment is one route ``0 -> sigma_{p+1} -> ... -> sigma_i -> 0``. The split finds the cuts of
least total distance:

    J(0) = 0,   J(i) = min_{p < i, load(p+1..i) <= Q}  J(p) + cost(p+1, i).

Everything along the tour is folded into two arrays (see :class:`solvopt.dsl.split.TourGeometry`):
``cost(p+1, i) = entry[p] + exit[i]``, so ``J(i) = exit[i] + min_p (J(p) + entry[p])``. That
form is what every kernel (NumPy, Numba, CUDA, deterministic and stochastic) evaluates.

Three algorithms live here:

- :func:`bellman_split`: the Bellman recursion, vectorised over the predecessors of each
  customer and bounded by capacity (predecessor window from the prefix loads, O(n B)); it
  also does the limited fleet (one value layer per route count: a layered min-plus DP) and
  the soft-capacity variant (penalty ``lam * max(0, load - Q)``, no capacity mask, O(n^2)).
- :func:`vidal_split`: Vidal's O(n) split (monotone deque of dominating predecessors;
  T. Vidal, "Split algorithm in O(n) for the capacitated vehicle routing problem",
  Computers & OR 2016), for the unlimited fleet with hard capacity: the CPU reference.
- :func:`brute_force_split`: all 2^(n-1) cut sets, for tests on tiny tours.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from solvopt.core.errors import ModelError
from solvopt.dsl.split import TourGeometry


@dataclass
class SplitSolution:
    """Optimal cuts of one tour: routes (customer ids), their loads and distances, the objective."""

    objective: float
    routes: list[list[int]]
    loads: list[float]
    costs: list[float]
    penalties: list[float]
    feasible: bool = True
    message: str = ""


def _infeasible(message: str) -> SplitSolution:
    return SplitSolution(objective=float("inf"), routes=[], loads=[], costs=[], penalties=[],
                         feasible=False, message=message)


def _check_capacity(tour_loads: np.ndarray, tour: np.ndarray, capacity: float) -> str:
    over = np.nonzero(tour_loads > capacity)[0]
    if over.size:
        c = int(tour[over[0]])
        return (f"customer {c} has demand {tour_loads[over[0]]:g} > capacity {capacity:g}: no feasible route "
                f"serves it ({over.size} such customers)")
    return ""


def min_routes(tour_loads: np.ndarray, capacity: float) -> int:
    """Fewest routes any split of this tour needs (greedy filling is optimal for a fixed order)."""
    count, load = 0, None
    for q in tour_loads:
        if load is None or load + q > capacity:
            count, load = count + 1, q
        else:
            load += q
    return count


def _solution_from_cuts(geom: TourGeometry, tour_loads: np.ndarray, cuts: list[int], capacity: float,
                        penalty: float | None) -> SplitSolution:
    """Routes, loads, costs and objective for the cut positions 0 = c_0 < c_1 < ... < c_r = n."""
    routes, loads, costs, pens = [], [], [], []
    for p, i in zip(cuts[:-1], cuts[1:]):
        routes.append([int(c) for c in geom.tour[p:i]])
        load = float(tour_loads[p:i].sum())
        loads.append(load)
        costs.append(geom.route_cost(p + 1, i))
        pens.append(0.0 if penalty is None else penalty * max(0.0, load - capacity))
    return SplitSolution(objective=float(sum(costs) + sum(pens)), routes=routes, loads=loads, costs=costs,
                         penalties=pens)


def bellman_split(geom: TourGeometry, tour_loads: np.ndarray, capacity: float, fleet: int | None = None,
                  penalty: float | None = None) -> SplitSolution:
    """Optimal split by the Bellman recursion (limited fleet: layered; ``penalty``: soft capacity).

    ``tour_loads[k]`` is the demand at tour position k+1. With ``penalty=None`` routes must
    carry at most ``capacity``; with a penalty ``lam`` every route pays ``lam * max(0, load - Q)``
    instead. With ``fleet=K`` at most K routes are used: J_k(i) = min_p J_{k-1}(p) + cost(p+1, i).
    """
    n = geom.n
    tour_loads = np.asarray(tour_loads, dtype=float)
    if penalty is None:
        msg = _check_capacity(tour_loads, geom.tour, capacity)
        if msg:
            return _infeasible(msg)
        if fleet is not None and min_routes(tour_loads, capacity) > fleet:
            return _infeasible(f"this tour needs at least {min_routes(tour_loads, capacity)} routes "
                               f"but the fleet has {fleet} vehicles")
    prefix = np.zeros(n + 1)
    prefix[1:] = np.cumsum(tour_loads)
    # value[k, i]: best cost of tour positions 1..i; k = route count (fleet) or one layer (k = 0)
    layers = 1 if fleet is None else min(fleet, n) + 1
    value = np.full((layers, n + 1), np.inf)
    pred = np.full((layers, n + 1), -1, dtype=np.int64)
    value[0, 0] = 0.0
    for i in range(1, n + 1):
        # predecessors p in [first, i): route p+1..i respects capacity (every p with soft capacity)
        first = 0 if penalty is not None else int(np.searchsorted(prefix, prefix[i] - capacity, side="left"))
        extra = geom.entry[first:i] + geom.exit[i]
        if penalty is not None:
            extra = extra + penalty * np.maximum(0.0, prefix[i] - prefix[first:i] - capacity)
        if fleet is None:       # J(i) = min_p J(p) + cost(p+1, i)
            cand = value[0, first:i] + extra
            best = int(np.argmin(cand))
            value[0, i], pred[0, i] = cand[best], first + best
        else:                   # layer k from layer k-1: J_k(i) = min_p J_{k-1}(p) + cost(p+1, i)
            cand = value[:-1, first:i] + extra[None, :]
            best = np.argmin(cand, axis=1)
            value[1:, i] = cand[np.arange(layers - 1), best]
            pred[1:, i] = first + best
    k = 0 if fleet is None else int(np.argmin(value[1:, n])) + 1
    if not np.isfinite(value[k, n]):
        return _infeasible(f"no split of this tour into at most {fleet} routes")
    cuts, i = [n], n
    while i > 0:
        i = int(pred[k, i])
        k = k if fleet is None else k - 1
        cuts.append(i)
    cuts.reverse()
    return _solution_from_cuts(geom, tour_loads, cuts, capacity, penalty)


def vidal_split(geom: TourGeometry, tour_loads: np.ndarray, capacity: float) -> SplitSolution:
    """Vidal's O(n) split for an unlimited fleet with hard capacity (monotone deque).

    The value of predecessor p for every later i is ``J(p) + entry[p]`` (plus ``exit[i]``, the
    same for all p), so p is dominated by a later p' with a value no larger: p' stays feasible
    at least as long. The deque keeps the non-dominated predecessors, oldest (best) in front;
    the front leaves once the route from it to i exceeds the capacity.
    """
    n = geom.n
    tour_loads = np.asarray(tour_loads, dtype=float)
    msg = _check_capacity(tour_loads, geom.tour, capacity)
    if msg:
        return _infeasible(msg)
    prefix = np.zeros(n + 1)
    prefix[1:] = np.cumsum(tour_loads)
    entry, exit_ = geom.entry.tolist(), geom.exit.tolist()
    pref = prefix.tolist()
    value = [0.0] * n                 # value[p] = J(p) + entry[p]
    pred = [0] * (n + 1)
    value[0] = entry[0]
    deque = [0] * (n + 1)
    head, tail = 0, 1                 # deque[head:tail]
    for i in range(1, n + 1):
        while pref[i] - pref[deque[head]] > capacity:
            head += 1
        p = deque[head]
        j = exit_[i] + value[p]
        pred[i] = p
        if i < n:
            value[i] = j + entry[i]
            while tail > head and value[deque[tail - 1]] >= value[i]:
                tail -= 1
            deque[tail] = i
            tail += 1
    cuts = [n]
    i = n
    while i > 0:
        i = pred[i]
        cuts.append(i)
    cuts.reverse()
    return _solution_from_cuts(geom, tour_loads, cuts, capacity, None)


def brute_force_split(geom: TourGeometry, tour_loads: np.ndarray, capacity: float, fleet: int | None = None,
                      penalty: float | None = None) -> SplitSolution:
    """Try every set of cut positions (2^(n-1) of them): the test oracle for tiny tours."""
    n = geom.n
    if n > 16:
        raise ModelError(f"brute-force split is for tiny tours (n <= 16), got n = {n}")
    tour_loads = np.asarray(tour_loads, dtype=float)
    best: SplitSolution | None = None
    for r in range(n):
        for inner in itertools.combinations(range(1, n), r):
            cuts = [0, *inner, n]
            if fleet is not None and len(cuts) - 1 > fleet:
                continue
            loads = [tour_loads[p:i].sum() for p, i in zip(cuts[:-1], cuts[1:])]
            if penalty is None and max(loads) > capacity:
                continue
            sol = _solution_from_cuts(geom, tour_loads, cuts, capacity, penalty)
            if best is None or sol.objective < best.objective:
                best = sol
    return best if best is not None else _infeasible("no feasible set of cuts")
