"""Family models of the CVRP split (family ``cvrp``): :class:`Split` and :class:`StochasticSplit`.

Both take the depot-first data of a CVRP instance (distance matrix, demands, capacity) and a
giant tour, validate them at construction (``ModelError`` on anything malformed) and solve
with the registered ``cvrp`` methods (found through the registry by family name):
``split`` (Numba), ``split-numpy`` (reference), ``split-cuda`` (CuPy + a device; chosen by
default when CuPy sees one)::

    from solvopt.io import read_instance
    from solvopt.dsl import Split, StochasticSplit
    inst = read_instance("X-n101-k25.vrp")
    Split.from_instance(inst).solve().objective                  # deterministic split of the file order
    Split.from_routes(inst, [[1, 2, 3], [4, 5], ...]).solve()    # a route list (or a PyVRP Solution)
    StochasticSplit.from_instance(inst, scenarios=10**6).solve(seed=1).solution["ci95"]

This module also holds the pure data checks and the tour geometry that the solvers in
:mod:`solvopt.cvrp` share (:class:`TourGeometry`, :func:`tour_geometry`,
:func:`validate_tour`, :func:`validate_demand_matrix`, :data:`POLICIES`): it imports only
NumPy and :mod:`solvopt.core`.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from solvopt.core.errors import ModelError

from .arrays import FloatArray, real_array
from .family import FamilyModel

DEFAULT_SCENARIOS = 10_000
POLICIES = ("infeasible", "penalty")     # what a scenario with a customer over the capacity becomes
MAX_LOAD = 2 ** 31 - 1                   # the scenario kernels add loads in 32-bit integers
MAX_TOTAL_DISTANCE = 1e290               # far below the kernels' masking sentinel (1e300)

IdArray: TypeAlias = npt.NDArray[np.int64]


# --- tour geometry -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class TourGeometry:
    """The distances along one giant tour, in the form the split recursions use.

    ``tour``: (n,) customer ids (1..N-1). ``entry[p]`` (p = 0..n-1) is the cost of opening a
    route at tour position p+1 minus the distance already travelled along the tour up to it;
    ``exit[i]`` (i = 1..n, ``exit[0]`` unused) is the distance along the tour up to position
    i plus the way back to the depot. Route p+1..i costs ``entry[p] + exit[i]``, so the split
    recursion ``J(i) = min_p J(p) + cost(p+1, i)`` is ``J(i) = exit[i] + min_p (J(p) + entry[p])``.
    """

    tour: IdArray
    entry: FloatArray
    exit: FloatArray

    @property
    def n(self) -> int:
        return int(self.tour.shape[0])

    @property
    def tour0(self) -> IdArray:
        """The tour as 0-based customer indices (node id - 1): the demand columns in tour order."""
        return self.tour - 1

    def route_cost(self, first: int, last: int) -> float:
        """Distance of the route serving tour positions first..last (1-based, inclusive)."""
        return float(self.entry[first - 1] + self.exit[last])


def tour_geometry(distances: FloatArray, tour: npt.ArrayLike) -> TourGeometry:
    """Fold the distance matrix along ``tour`` into ``entry``/``exit`` (see :class:`TourGeometry`)."""
    ids = np.asarray(tour, dtype=np.int64)
    n = ids.shape[0]
    out = distances[0, ids]                          # depot -> sigma_i
    back = distances[ids, 0]                         # sigma_i -> depot
    steps = distances[ids[:-1], ids[1:]]             # sigma_k -> sigma_{k+1}
    along = np.zeros(n + 1)                          # along[i]: distance sigma_1 .. sigma_i
    along[2:] = np.cumsum(steps)
    entry = np.ascontiguousarray(out - along[1:])   # entry[p] for route starting at p+1
    exit_ = np.zeros(n + 1)
    exit_[1:] = along[1:] + back
    return TourGeometry(tour=ids, entry=entry, exit=exit_)


# --- data checks ---------------------------------------------------------------------------------------
def validate_tour(tour: Any, n_nodes: int) -> IdArray:
    """The tour as int64 ids; ModelError unless it is a permutation of the customers 1..n_nodes-1."""
    try:
        arr = np.asarray(tour)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"tour must be a 1-D sequence of customer ids ({exc})") from None
    if arr.ndim != 1:
        raise ModelError(f"tour must be a 1-D sequence of customer ids, got shape {arr.shape}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise ModelError("tour must contain integer customer ids (got non-integer or NaN values)")
    elif arr.dtype.kind not in "iu":
        raise ModelError(f"tour must contain integer customer ids, got dtype {arr.dtype}")
    ids = arr.astype(np.int64)
    expected = n_nodes - 1
    if ids.shape[0] != expected or not np.array_equal(np.sort(ids), np.arange(1, n_nodes)):
        bad = sorted(set(ids.tolist()) - set(range(1, n_nodes)))
        missing = sorted(set(range(1, n_nodes)) - set(ids.tolist()))
        detail = []
        if bad:
            detail.append(f"ids outside 1..{n_nodes - 1}: {bad[:5]}")
        if missing:
            detail.append(f"missing customers: {missing[:5]}")
        if not detail:
            detail.append("repeated customers")
        raise ModelError(f"tour must be a permutation of the customers 1..{n_nodes - 1} "
                         f"(length {expected}, got {ids.shape[0]}; {'; '.join(detail)})")
    return ids


def validate_demand_matrix(demands: Any, n_customers: int) -> npt.NDArray[np.int32]:
    """A user-given (S, n) scenario matrix as int32; ModelError on shape, NaN, negatives, non-integers."""
    try:
        arr = np.asarray(demands)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"demand scenarios must be an (S, {n_customers}) matrix of integers ({exc})") from None
    if arr.ndim != 2 or arr.shape[1] != n_customers or arr.shape[0] < 1:
        raise ModelError(f"demand scenarios must be an (S, {n_customers}) matrix (one column per customer, "
                         f"instance order), got shape {arr.shape}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise ModelError("demand scenarios contain NaN or inf")
        if not np.all(arr == np.round(arr)):
            raise ModelError("demand scenarios must be integers (the split kernels use integer loads)")
    elif arr.dtype.kind not in "iub":
        raise ModelError(f"demand scenarios must be numeric, got dtype {arr.dtype}")
    if np.any(arr < 0):
        raise ModelError("demand scenarios must be >= 0")
    if arr.size and float(arr.max()) * n_customers > MAX_LOAD:
        raise ModelError(f"demand scenarios too large: a route's load (up to {float(arr.max()):g} x {n_customers} "
                         f"customers) must stay below 2^31 for the kernels' 32-bit loads")
    return np.ascontiguousarray(arr, dtype=np.int32)


def _distances(distances: Any) -> FloatArray:
    d = real_array(distances, "distances")
    if d.ndim != 2 or d.shape[0] != d.shape[1] or d.shape[0] < 2:
        raise ModelError(f"distances must be a square (N, N) matrix with N >= 2 (depot + customers), got {d.shape}")
    if np.any(d < 0):
        raise ModelError("distances must be >= 0")
    if float(d.max()) * 2 * d.shape[0] > MAX_TOTAL_DISTANCE:
        raise ModelError(f"distances up to {float(d.max()):g} are too large: a split's total distance must stay "
                         f"below {MAX_TOTAL_DISTANCE:g} (rescale the instance)")
    return d


def _demands(demands: Any, n_nodes: int, integer: bool = False) -> FloatArray:
    q = real_array(demands, "demands")
    if q.shape != (n_nodes,):
        raise ModelError(f"demands must have one entry per node (depot first), shape ({n_nodes},), got {q.shape}")
    if np.any(q < 0):
        bad = int(np.nonzero(q < 0)[0][0])
        raise ModelError(f"demands must be >= 0 (node {bad} has {q[bad]:g})")
    if q[0] != 0:
        raise ModelError(f"the depot (node 0) must have demand 0, got {q[0]:g}")
    if integer and not np.all(q == np.round(q)):
        raise ModelError("demands must be integers here")
    return q


def _capacity(capacity: Any) -> float:
    try:
        if isinstance(capacity, (complex, np.complexfloating, str, bytes)):
            raise TypeError
        cap = float(capacity)
    except (TypeError, ValueError):
        raise ModelError(f"capacity must be a number, got {capacity!r}") from None
    if not math.isfinite(cap) or cap <= 0:
        raise ModelError(f"capacity must be a finite number > 0, got {capacity!r}")
    return cap


def _penalty(penalty: Any) -> float | None:
    if penalty is None:
        return None
    try:
        if isinstance(penalty, (complex, np.complexfloating, str, bytes)):
            raise TypeError
        lam = float(penalty)
    except (TypeError, ValueError):
        raise ModelError(f"penalty must be a number, got {penalty!r}") from None
    if not math.isfinite(lam) or lam < 0:
        raise ModelError(f"penalty must be a finite number >= 0, got {penalty!r}")
    return lam


def _pyvrp_route(route: Any) -> Any:
    """The ids of one PyVRP route: ``visits()`` (PyVRP up to 0.13: location indices), else its
    activities (PyVRP 0.14: a depot visit is 0, the client with index k is location k + 1, as
    ``pyvrp.read`` numbers a one-depot VRPLIB file)."""
    if callable(getattr(route, "visits", None)):
        return list(route.visits())
    if isinstance(route, (str, bytes)) or not hasattr(route, "__iter__"):
        return route
    ids: list[Any] = []
    for item in route:
        if callable(getattr(item, "is_depot", None)):
            if item.is_depot():
                ids.append(0)
            elif callable(getattr(item, "is_client", None)) and item.is_client():
                ids.append(int(item.idx) + 1)
            else:
                raise ModelError(f"a PyVRP activity that is neither a depot nor a client visit ({item}): "
                                 "the split serves clients from one depot")
        else:
            ids.append(item)
    return ids


def route_lists(routes: Any) -> list[list[int]]:
    """Routes as lists of customer ids, from what users have: lists of ids, a PyVRP ``Solution``
    (duck-typed: ``.routes()`` whose items have ``.visits()`` or, as in PyVRP 0.14, iterate over
    activities with ``is_depot()`` / ``is_client()`` / ``idx``), a CVRPLIB solution read by
    :func:`solvopt.io.read_instance` (``data["routes"]``), or a deterministic split's result
    (``solution["routes"]``). The depot 0 separates routes: ``[0, 3, 1, 0, 2, 0]`` is the two
    routes ``[3, 1]`` and ``[2]``; empty routes are dropped."""
    source = routes
    if callable(getattr(routes, "routes", None)):                 # a PyVRP Solution
        try:
            routes = [_pyvrp_route(r) for r in routes.routes()]
        except TypeError as exc:
            raise ModelError(f"routes(): expected PyVRP routes (with .visits() or activities) ({exc})") from None
    elif isinstance(getattr(routes, "data", None), dict) and "routes" in routes.data:      # a read .sol
        routes = routes.data["routes"]
    elif isinstance(getattr(routes, "solution", None), dict) and "routes" in routes.solution:   # a Result
        routes = routes.solution["routes"]
    if isinstance(routes, (str, bytes, dict)) or not hasattr(routes, "__iter__"):
        raise ModelError("routes must be a list of routes (each a list of customer ids), a PyVRP Solution or a "
                         f"CVRPLIB solution, got {type(source).__name__}")
    out: list[list[int]] = []
    for k, route in enumerate(routes):
        if isinstance(route, (numbers.Number, np.generic, str, bytes)) or not hasattr(route, "__iter__"):
            raise ModelError(f"routes must be a list of routes, each a list of customer ids; route {k} is "
                             f"{route!r} (for a giant tour in one sequence, pass tour= instead)")
        trip: list[int] = []
        for v in route:
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Integral, np.integer)):
                if isinstance(v, (float, np.floating)) and math.isfinite(v) and v == int(v):
                    v = int(v)
                else:
                    raise ModelError(f"route {k}: customer ids must be integers, got {v!r}")
            if int(v) == 0:                                        # the depot ends a trip
                if trip:
                    out.append(trip)
                trip = []
            else:
                trip.append(int(v))
        if trip:
            out.append(trip)
    return out


def tour_from_routes(routes: Any, n_nodes: int) -> IdArray:
    """The giant tour of ``routes`` (their concatenation, in order): every customer 1..n_nodes-1
    exactly once, else one ModelError naming what is wrong (see :func:`route_lists` for the forms)."""
    trips = route_lists(routes)
    first: dict[int, int] = {}
    problems = []
    for k, route in enumerate(trips):
        for c in route:
            if not 1 <= c < n_nodes:
                problems.append(f"route {k}: id {c} outside the customers 1..{n_nodes - 1}")
            elif c in first:
                problems.append(f"customer {c} twice (routes {first[c]} and {k})")
            else:
                first[c] = k
    missing = [c for c in range(1, n_nodes) if c not in first]
    if missing:
        problems.append(f"{len(missing)} customer(s) on no route: {missing[:5]}{' ...' if len(missing) > 5 else ''}")
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise ModelError(f"routes must visit every customer 1..{n_nodes - 1} exactly once (VRPLIB numbering, "
                         f"depot 0): {'; '.join(problems[:3])}{more}")
    return np.array([c for route in trips for c in route], dtype=np.int64)


def _tour(tour: Any, n_nodes: int) -> IdArray:
    if tour is None or (isinstance(tour, str) and tour == "identity"):
        return np.arange(1, n_nodes, dtype=np.int64)
    return validate_tour(tour, n_nodes)


class _SplitBase(FamilyModel):
    family = "cvrp"
    given_routes: list[list[int]] | None = None     # the routes a model came from (from_routes), if any

    def __init__(self, distances: Any, demands: Any, capacity: Any, tour: Any = None):
        self.distances = _distances(distances)
        n_nodes = self.distances.shape[0]
        self.demands = _demands(demands, n_nodes)
        self.capacity = _capacity(capacity)
        self.tour = _tour(tour, n_nodes)

    @property
    def n_customers(self) -> int:
        return int(self.distances.shape[0] - 1)

    def geometry(self) -> TourGeometry:
        """The tour folded into the split's entry/exit arrays."""
        return tour_geometry(self.distances, self.tour)

    @classmethod
    def from_routes(cls, instance: Any, routes: Any, **kwargs: Any) -> Any:
        """The model of ``instance`` whose giant tour is ``routes`` joined in order.

        ``routes``: lists of customer ids in VRPLIB numbering (depot 0, customers 1..N-1 as
        :func:`solvopt.io.read_instance` numbers them, which is also PyVRP's and CVRPLIB's
        ``.sol`` numbering), a PyVRP ``Solution`` (anything with ``.routes()`` whose items have
        ``.visits()``), a CVRPLIB solution read by ``read_instance`` or a split's Result. Every
        customer must appear exactly once (one ModelError otherwise). The routes themselves are
        kept in ``given_routes``; the split may cut the tour elsewhere (never worse, when the
        given routes respect the capacity). ``kwargs`` go to the constructor (``fleet``,
        ``scenarios``, ...).
        """
        data = cls._instance_data(instance)
        tour = tour_from_routes(routes, _distances(data["distances"]).shape[0])
        model = cls(**data, tour=tour, **kwargs)
        model.given_routes = route_lists(routes)
        return model

    @classmethod
    def _instance_data(cls, instance: Any) -> dict[str, Any]:
        data = getattr(instance, "data", instance)
        try:
            return {"distances": data["distances"], "demands": data["demands"], "capacity": data["capacity"]}
        except KeyError as exc:
            raise ModelError(f"a CVRP instance needs distances, demands and capacity (missing {exc})") from None


class Split(_SplitBase):
    """Deterministic split of a giant tour (Prins), optionally with a limited fleet or soft capacity.

    ``tour``: customer ids 1..N-1 in visiting order (default: file order). ``fleet``: at most
    this many routes. ``penalty``: soft capacity, each route pays ``penalty * max(0, load - Q)``
    and no route is forbidden for its load.
    """

    def __init__(self, distances: Any, demands: Any, capacity: Any, tour: Any = None, *, fleet: int | None = None,
                 penalty: float | None = None):
        super().__init__(distances, demands, capacity, tour)
        if fleet is not None and (isinstance(fleet, bool) or not isinstance(fleet, (int, np.integer)) or fleet < 1):
            raise ModelError(f"fleet must be a positive integer, got {fleet!r}")
        self.fleet = None if fleet is None else int(fleet)
        self.penalty = _penalty(penalty)

    @classmethod
    def from_instance(cls, instance: Any, tour: Any = None, **kwargs: Any) -> Split:
        return cls(**cls._instance_data(instance), tour=tour, **kwargs)

    def tour_loads(self) -> FloatArray:
        loads: FloatArray = self.demands[self.tour]
        return loads


class StochasticSplit(_SplitBase):
    """Split of one giant tour under S demand scenarios (CVRP-SD), summarised by its SAA estimate.

    ``scenarios``: a number S of Poisson scenarios (mean = the instance demand, sampled with
    the solve's ``seed``) or an (S, N-1) integer matrix of demands (columns = customers 1..N-1
    in instance order). ``policy``: what a scenario in which one customer alone exceeds Q
    becomes: ``"infeasible"`` (counted, reported, left out of the mean) or ``"penalty"`` (that
    customer gets its own route paying ``penalty * (q - Q)``). How many scenarios run at a
    time is a solve option (``solve(chunk=C)``; memory is O(C), whatever S).
    """

    def __init__(self, distances: Any, demands: Any, capacity: Any, tour: Any = None, *,
                 scenarios: Any = DEFAULT_SCENARIOS,
                 demand: str = "poisson", policy: str | None = None, penalty: float | None = None,
                 fleet: int | None = None):
        super().__init__(distances, demands, capacity, tour)
        if fleet is not None:
            raise ModelError("a limited fleet is supported by the deterministic split only (Split(fleet=K))")
        self.penalty = _penalty(penalty)
        if policy is None:
            policy = "penalty" if self.penalty is not None else "infeasible"
        if policy not in POLICIES:
            raise ModelError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
        if policy == "penalty" and self.penalty is None:
            raise ModelError("policy 'penalty' needs a penalty per unit of excess demand (penalty=...)")
        if policy == "infeasible" and self.penalty is not None:
            raise ModelError("a penalty only applies with policy 'penalty'")
        self.policy = policy
        count = isinstance(scenarios, (int, np.integer)) and not isinstance(scenarios, (bool, np.bool_))
        if not count and isinstance(scenarios, (numbers.Number, np.generic, str, bytes)):
            raise ModelError(f"scenarios must be a positive integer or an (S, {self.n_customers}) demand matrix, "
                             f"got {scenarios!r}")
        if count:
            if scenarios < 1:
                raise ModelError(f"scenarios must be >= 1, got {scenarios}")
            if demand != "poisson":
                raise ModelError(f"demand model must be 'poisson' (or pass a scenario matrix), got {demand!r}")
            self.demand_matrix: npt.NDArray[np.int32] | None = None
            self.scenarios = int(scenarios)
        else:
            self.demand_matrix = validate_demand_matrix(scenarios, self.n_customers)
            self.scenarios = int(self.demand_matrix.shape[0])
        # integer loads: load <= Q iff load <= floor(Q); every load the kernels see is <= MAX_LOAD
        # (checked for matrices here, for sampled demands when compiled), so a larger Q is MAX_LOAD
        self.int_capacity = int(min(math.floor(self.capacity), MAX_LOAD))

    @classmethod
    def from_instance(cls, instance: Any, tour: Any = None, **kwargs: Any) -> StochasticSplit:
        return cls(**cls._instance_data(instance), tour=tour, **kwargs)

    def with_tour(self, tour: Any) -> StochasticSplit:
        """The same data and scenarios with another giant tour (common random numbers)."""
        clone = object.__new__(StochasticSplit)
        clone.__dict__.update(self.__dict__)
        clone.tour = _tour(tour, self.distances.shape[0])
        clone.given_routes = None
        return clone

    @property
    def means(self) -> FloatArray:
        """Mean demand per customer (Poisson means, or the scenario matrix's column means)."""
        if self.demand_matrix is not None:
            column_means: FloatArray = self.demand_matrix.mean(axis=0)
            return column_means
        return self.demands[1:]
