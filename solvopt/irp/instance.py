"""The reinsertion model of one customer of an Archetti IRP instance: its route options and ``from_instance``.

The other customers follow a deterministic order-up-to policy with their mean demand; each
day's served customers form a nearest-neighbour tour from the supplier. The options of day t
are the cheapest detour into each edge of that tour (with the tour's residual capacity) and the
customer's own route depot-customer-depot (full capacity). :func:`model_from_instance` is the
family's ``from_instance``: the CLI routes ``--customer``, ``--scenarios``, ``--demand``,
``--stockout`` and ``--penalty`` to it (see :mod:`solvopt.irp.family`).
"""
from __future__ import annotations

import numbers

import numpy as np

from solvopt.core.errors import ModelError
from solvopt.dsl.inventory import InventoryReinsertion


def nearest_neighbour_tour(distances: np.ndarray, stops) -> list[int]:
    """Depot 0, then repeatedly the nearest unvisited stop, then back to 0 (ties: lowest index)."""
    tour, left = [0], sorted(int(s) for s in stops)
    while left:
        here = tour[-1]
        nxt = min(left, key=lambda s: (distances[here, s], s))
        tour.append(nxt)
        left.remove(nxt)
    return tour + [0]


def order_up_to_routes(data: dict, exclude: int) -> list[tuple[list[int], float]]:
    """Per day, (tour, load) of the other customers under a deterministic order-up-to policy.

    Customer j (j != exclude) is served on day t when its level would fall below its minimum
    after the day's demand; it then receives max_inventory - level. Node ids: 0 = supplier,
    j + 1 = customer j.
    """
    level = data["start_inventory"].astype(float).copy()
    upper, lower, demand = data["max_inventory"], data["min_inventory"], data["demand"]
    days = []
    for _ in range(data["horizon"]):
        served = np.flatnonzero(level - demand < lower)
        served = served[served != exclude]
        load = float(np.sum(upper[served] - level[served]))
        level[served] = upper[served]
        level -= demand
        days.append((nearest_neighbour_tour(data["distances"], served + 1), load))
    return days


def route_options(data: dict, customer: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per day (insertion costs, residual capacities): the cheapest detours into each edge of the
    day's order-up-to route, and the customer's own route depot-customer-depot (full capacity)."""
    dist, Q, node = data["distances"], data["vehicle_capacity"], customer + 1
    costs, slack = [], []
    for tour, load in order_up_to_routes(data, customer):
        c = [2 * dist[0, node]]
        s = [Q]
        if len(tour) > 2:
            for a, b in zip(tour[:-1], tour[1:]):
                c.append(dist[a, node] + dist[node, b] - dist[a, b])
                s.append(Q - load)
        costs.append(np.maximum(0.0, np.array(c)))
        slack.append(np.array(s))
    return costs, slack


def load_demand(value):
    """None (Poisson) for None / "poisson"; else the (W, T) matrix of a ``.npy`` file or an array."""
    if value is None or (isinstance(value, str) and value == "poisson"):
        return None
    if not isinstance(value, str):
        return value
    if not value.endswith(".npy"):
        raise ModelError(f"--demand must be 'poisson' or a .npy file of a (W, T) demand matrix, got {value!r}")
    try:
        return np.load(value, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ModelError(f"--demand {value}: cannot load the demand matrix ({exc})") from None


def model_from_instance(instance, customer: int = 1, scenarios: int | None = None, demand=None,
                        stockout: float | None = None, penalty: float | None = None) -> InventoryReinsertion:
    """The reinsertion model of ``customer`` (1-based, as in the file) of an ``archetti_irp`` instance.

    ``demand``: None / "poisson" (Poisson with the customer's daily demand as mean,
    ``scenarios`` of them; the model's default count when None), a ``.npy`` file or a (W, T)
    matrix of integer demand scenarios. ``stockout`` / ``penalty``: the stockout and
    capacity penalties (the model's defaults when None). The model carries the customer, so
    the result reports it.
    """
    data = instance.data
    n_customers = len(data["demand"])
    if not (isinstance(customer, numbers.Integral) and not isinstance(customer, bool) and 1 <= customer <= n_customers):
        raise ModelError(f"{instance.name}: customer must be in 1..{n_customers}, got {customer!r}")
    matrix = load_demand(demand)
    if matrix is not None and scenarios is not None:
        raise ModelError("scenarios applies to Poisson demand; a demand matrix sets its own scenario count")
    index = customer - 1
    costs, slack = route_options(data, index)
    common = dict(horizon=data["horizon"], max_level=_level(data["max_inventory"][index]),
                  start_level=_level(data["start_inventory"][index]),
                  holding_cost=data["holding_cost"][index], insertion_costs=costs, route_slack=slack,
                  supplier_holding_cost=data["supplier"]["holding_cost"], stockout_penalty=stockout,
                  capacity_penalty=penalty, name=f"{instance.name}:customer{customer}", customer=customer)
    if matrix is None:
        return InventoryReinsertion(**common, mean_demand=data["demand"][index], scenarios=scenarios)
    return InventoryReinsertion(**common, demand=matrix)


def _level(value: float) -> int:
    """An inventory level of the file as an integer (Archetti levels are integers)."""
    return int(round(float(value)))
