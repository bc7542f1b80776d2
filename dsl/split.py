"""Family models of the CVRP split (family ``cvrp``): :class:`Split` and :class:`StochasticSplit`.

Both take the depot-first data of a CVRP instance (distance matrix, demands, capacity) and a
giant tour, validate them at construction (``ModelError`` on anything malformed) and solve
with the registered ``cvrp`` methods: ``split`` (default; Numba), ``split-numpy`` (reference),
``split-cuda`` (CuPy + a device)::

    from solvopt.io import read_instance
    from solvopt.dsl import Split, StochasticSplit
    inst = read_instance("X-n101-k25.vrp")
    Split.from_instance(inst).solve().objective                  # deterministic split of the file order
    StochasticSplit.from_instance(inst, scenarios=10**6).solve(seed=1).solution["ci95"]
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from solvopt.core.errors import ModelError
from solvopt.dp.split import TourGeometry, tour_geometry, validate_tour
from solvopt.dp.split_stochastic import POLICIES, validate_demand_matrix

from .family import FamilyModel

DEFAULT_SCENARIOS = 10_000
DEFAULT_CHUNK = 1 << 20


def _distances(distances) -> np.ndarray:
    d = np.asarray(distances, dtype=float)
    if d.ndim != 2 or d.shape[0] != d.shape[1] or d.shape[0] < 2:
        raise ModelError(f"distances must be a square (N, N) matrix with N >= 2 (depot + customers), got {d.shape}")
    if not np.all(np.isfinite(d)):
        raise ModelError("distances contain NaN or inf")
    if np.any(d < 0):
        raise ModelError("distances must be >= 0")
    return d


def _demands(demands, n_nodes: int, integer: bool = False) -> np.ndarray:
    q = np.asarray(demands, dtype=float)
    if q.shape != (n_nodes,):
        raise ModelError(f"demands must have one entry per node (depot first), shape ({n_nodes},), got {q.shape}")
    if not np.all(np.isfinite(q)):
        raise ModelError("demands contain NaN or inf")
    if np.any(q < 0):
        bad = int(np.nonzero(q < 0)[0][0])
        raise ModelError(f"demands must be >= 0 (node {bad} has {q[bad]:g})")
    if q[0] != 0:
        raise ModelError(f"the depot (node 0) must have demand 0, got {q[0]:g}")
    if integer and not np.all(q == np.round(q)):
        raise ModelError("demands must be integers here")
    return q


def _capacity(capacity) -> float:
    try:
        cap = float(capacity)
    except (TypeError, ValueError):
        raise ModelError(f"capacity must be a number, got {capacity!r}") from None
    if not math.isfinite(cap) or cap <= 0:
        raise ModelError(f"capacity must be a finite number > 0, got {capacity!r}")
    return cap


def _penalty(penalty) -> float | None:
    if penalty is None:
        return None
    try:
        lam = float(penalty)
    except (TypeError, ValueError):
        raise ModelError(f"penalty must be a number, got {penalty!r}") from None
    if not math.isfinite(lam) or lam < 0:
        raise ModelError(f"penalty must be a finite number >= 0, got {penalty!r}")
    return lam


def _tour(tour, n_nodes: int) -> np.ndarray:
    if tour is None or (isinstance(tour, str) and tour == "identity"):
        return np.arange(1, n_nodes, dtype=np.int64)
    return validate_tour(tour, n_nodes)


class _SplitBase(FamilyModel):
    family = "cvrp"

    def __init__(self, distances, demands, capacity, tour=None):
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
    def _instance_data(cls, instance) -> dict[str, Any]:
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

    def __init__(self, distances, demands, capacity, tour=None, *, fleet: int | None = None,
                 penalty: float | None = None):
        super().__init__(distances, demands, capacity, tour)
        if fleet is not None and (isinstance(fleet, bool) or not isinstance(fleet, (int, np.integer)) or fleet < 1):
            raise ModelError(f"fleet must be a positive integer, got {fleet!r}")
        self.fleet = None if fleet is None else int(fleet)
        self.penalty = _penalty(penalty)

    @classmethod
    def from_instance(cls, instance, tour=None, **kwargs) -> "Split":
        return cls(**cls._instance_data(instance), tour=tour, **kwargs)

    def tour_loads(self) -> np.ndarray:
        return self.demands[self.tour]


class StochasticSplit(_SplitBase):
    """Split of one giant tour under S demand scenarios (CVRP-SD), summarised by its SAA estimate.

    ``scenarios``: a number S of Poisson scenarios (mean = the instance demand, sampled with
    the solve's ``seed``) or an (S, N-1) integer matrix of demands (columns = customers 1..N-1
    in instance order). ``policy``: what a scenario in which one customer alone exceeds Q
    becomes: ``"infeasible"`` (counted, reported, left out of the mean) or ``"penalty"`` (that
    customer gets its own route paying ``penalty * (q - Q)``). ``chunk`` scenarios are
    evaluated at a time (memory is O(chunk), whatever S).
    """

    def __init__(self, distances, demands, capacity, tour=None, *, scenarios=DEFAULT_SCENARIOS,
                 demand: str = "poisson", policy: str | None = None, penalty: float | None = None,
                 chunk: int = DEFAULT_CHUNK, fleet: int | None = None):
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
        if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
            raise ModelError(f"chunk must be a positive integer, got {chunk!r}")
        self.chunk = int(chunk)
        if isinstance(scenarios, (int, np.integer)) and not isinstance(scenarios, bool):
            if scenarios < 1:
                raise ModelError(f"scenarios must be >= 1, got {scenarios}")
            if demand != "poisson":
                raise ModelError(f"demand model must be 'poisson' (or pass a scenario matrix), got {demand!r}")
            self.demand_matrix = None
            self.scenarios = int(scenarios)
        else:
            self.demand_matrix = validate_demand_matrix(scenarios, self.n_customers)
            self.scenarios = int(self.demand_matrix.shape[0])
        self.int_capacity = int(math.floor(self.capacity))   # integer loads: load <= Q iff load <= floor(Q)
        if self.int_capacity >= 2 ** 31:
            raise ModelError(f"capacity {self.capacity:g} is too large for the 32-bit loads of the scenario kernels")

    @classmethod
    def from_instance(cls, instance, tour=None, **kwargs) -> "StochasticSplit":
        return cls(**cls._instance_data(instance), tour=tour, **kwargs)

    def with_tour(self, tour) -> "StochasticSplit":
        """The same data and scenarios with another giant tour (common random numbers)."""
        clone = object.__new__(StochasticSplit)
        clone.__dict__.update(self.__dict__)
        clone.tour = _tour(tour, self.distances.shape[0])
        return clone

    @property
    def means(self) -> np.ndarray:
        """Mean demand per customer (Poisson means, or the scenario matrix's column means)."""
        if self.demand_matrix is not None:
            return self.demand_matrix.mean(axis=0)
        return self.demands[1:]
