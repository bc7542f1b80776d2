"""``InventoryReinsertion``: where (and whether) to re-insert one customer into the daily routes,
under an order-up-to policy and stochastic demand (family ``"irp"``).

One customer, days t = 0..T-1, inventory levels I = 0..U at the start of a day, demand d_t^w
of scenario w. Each day either nothing is delivered, or the customer is filled up to U by
route option r (cost ``insertion_costs[t][r]``, residual vehicle capacity
``route_slack[t][r]``, negative when the route is already overloaded, +inf when unlimited):

    no delivery:   I' = max(0, I - d),  cost  h (I - d)^+ + p (d - I)^+
    option r:      q = U - I,  I' = max(0, U - d),
                   cost  c_t^r + rho [(q - s_t^r)^+ - (-s_t^r)^+] + h (U - d)^+ + p (d - U)^+ - h0 (T - t) q

where s_t^r is the slack, so rho is charged on the load over capacity that q adds. Then
C_t(I) = min over the options of cost + C_{t+1}(I'), C_T = 0. The last term credits the
supplier's holding cost h0 for the T - t days (day t included) the quantity q would otherwise
have stayed at the supplier. The day-0 decision is shared by every scenario: the option with
the lowest total (mean) cost over the scenarios; later decisions adapt to each scenario.

Defaults: stockout penalty ``p`` = max(10 h, 2 max_{t,r} c_t^r / max(1, mean daily demand)),
so that running out of one day's demand costs about twice the dearest detour; capacity penalty
``rho`` = p per unit over the residual capacity. Demand: a user matrix ``demand`` (W, T) of
non-negative integers, or Poisson scenarios with ``mean_demand`` (scalar or (T,)) and
``scenarios`` W (default :data:`DEFAULT_SCENARIOS`), drawn reproducibly from the solve's ``seed``.
``customer``: the customer's 1-based id in its instance, reported in the result (optional).
Bad data (wrong types, shapes, NaN, complex or non-numeric values) raises ``ModelError``.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from solvopt.core.errors import ModelError

from .arrays import FloatArray, float_array
from .family import FamilyModel

DEFAULT_SCENARIOS = 1000      # Poisson scenarios when ``scenarios`` is not given
MAX_DEMAND = 2 ** 53          # demands (and Poisson means) beyond this are not exact integers in float64


class InventoryReinsertion(FamilyModel):
    """The data of the reinsertion DP, validated (see the module docstring for the recurrence)."""

    family = "irp"

    def __init__(self, horizon: int, max_level: int, start_level: int, holding_cost: float,
                 insertion_costs: Sequence[Any], route_slack: Sequence[Any] | None = None,
                 supplier_holding_cost: float = 0.0, stockout_penalty: float | None = None,
                 capacity_penalty: float | None = None, demand: Any = None, mean_demand: Any = None,
                 scenarios: int | None = None, name: str = "customer", customer: int | None = None):
        self.horizon = _positive_int(horizon, "horizon")
        self.max_level = _positive_int(max_level, "max_level")
        self.start_level = _int(start_level, "start_level")
        if not 0 <= self.start_level <= self.max_level:
            raise ModelError(f"start_level must lie in 0..max_level={self.max_level}, got {self.start_level}")
        self.holding_cost = _nonnegative(holding_cost, "holding_cost")
        self.supplier_holding_cost = _nonnegative(supplier_holding_cost, "supplier_holding_cost")
        self.insertion_costs = _per_day(insertion_costs, self.horizon, "insertion_costs")
        if any(c.size == 0 for c in self.insertion_costs):
            raise ModelError("every day needs at least one route option (e.g. the customer's own route)")
        if route_slack is None:
            self.route_slack = [np.full(c.size, np.inf) for c in self.insertion_costs]
        else:
            self.route_slack = _per_day(route_slack, self.horizon, "route_slack", allow_inf=True, allow_negative=True)
            for t, (c, s) in enumerate(zip(self.insertion_costs, self.route_slack)):
                if s.shape != c.shape:
                    raise ModelError(f"day {t}: route_slack has {s.size} options but insertion_costs has {c.size}")
        self.name = str(name)
        if customer is not None:
            customer = _positive_int(customer, "customer")
        self.customer = customer
        if demand is None and scenarios is None:
            scenarios = DEFAULT_SCENARIOS
        self.demand, self.mean_demand, self.scenarios = self._demand(demand, mean_demand, scenarios)
        mean = self.mean_demand if self.demand is None else self.demand.mean(axis=0)
        assert mean is not None  # _demand gives the matrix or the means
        if stockout_penalty is None:
            dearest = max(float(c.max()) for c in self.insertion_costs)
            stockout_penalty = max(10 * self.holding_cost, 2 * dearest / max(1.0, float(np.mean(mean))))
        self.stockout_penalty = _nonnegative(stockout_penalty, "stockout_penalty")
        self.capacity_penalty = _nonnegative(self.stockout_penalty if capacity_penalty is None else capacity_penalty,
                                             "capacity_penalty")

    def _demand(self, demand: Any, mean_demand: Any, scenarios: int | None
                ) -> tuple[npt.NDArray[np.int64] | None, FloatArray | None, int]:
        """(demand matrix, None, its rows) or (None, Poisson means per day, scenarios), validated."""
        if (demand is None) == (mean_demand is None):
            raise ModelError("give either a demand matrix (W, T) or mean_demand with scenarios (Poisson)")
        if demand is not None:
            d = float_array(demand, "demand")
            if d.ndim == 1 and self.horizon == d.size:
                d = d[None, :]
            if d.ndim != 2 or d.shape[1] != self.horizon:
                raise ModelError(f"demand must have shape (W, T={self.horizon}), got {d.shape}")
            if d.shape[0] == 0 or not np.all(np.isfinite(d)) or np.any(d < 0) or np.any(d != np.round(d)):
                raise ModelError("demand must hold non-negative integers (at least one scenario)")
            if np.any(d > MAX_DEMAND):
                raise ModelError(f"demand values must be at most 2**53 (exact integers), got {d.max():.6g}")
            if scenarios is not None and scenarios != d.shape[0]:
                raise ModelError(f"scenarios={scenarios} but the demand matrix has {d.shape[0]} rows")
            return d.astype(np.int64), None, d.shape[0]
        given = float_array(mean_demand, "mean_demand")
        mean = np.broadcast_to(given, (self.horizon,)).copy() \
            if given.ndim in (0, 1) and given.size in (1, self.horizon) else None
        if mean is None or not np.all(np.isfinite(mean)) or np.any(mean < 0):
            raise ModelError(f"mean_demand must be a number >= 0 or {self.horizon} of them, got {mean_demand!r}")
        if np.any(mean > MAX_DEMAND):
            raise ModelError(f"mean_demand must be at most 2**53 (Poisson draws are exact integers), "
                             f"got {mean.max():.6g}")
        if not (isinstance(scenarios, (int, np.integer)) and scenarios >= 1):
            raise ModelError(f"Poisson demand needs scenarios >= 1, got {scenarios!r}")
        return None, mean, int(scenarios)


def _int(value: Any, what: str) -> int:
    try:
        ok = not isinstance(value, (bool, np.bool_)) and float(value).is_integer()
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        raise ModelError(f"{what} must be an integer, got {value!r}")
    return int(value)


def _positive_int(value: Any, what: str) -> int:
    v = _int(value, what)
    if v < 1:
        raise ModelError(f"{what} must be >= 1, got {value!r}")
    return v


def _nonnegative(value: Any, what: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ModelError(f"{what} must be a number, got {value!r}") from None
    if not (np.isfinite(v) and v >= 0):
        raise ModelError(f"{what} must be a finite number >= 0, got {value!r}")
    return v


def _per_day(values: Any, horizon: int, what: str, allow_inf: bool = False,
             allow_negative: bool = False) -> list[FloatArray]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise ModelError(f"{what} needs one array per day ({horizon}), got {type(values).__name__} {values!r}")
    if len(values) != horizon:
        raise ModelError(f"{what} needs one array per day ({horizon}), got {len(values)}")
    out = []
    for t, v in enumerate(values):
        a = np.atleast_1d(float_array(v, f"{what}[{t}]"))
        bad = a.ndim != 1 or np.isnan(a).any() or np.isneginf(a).any() or (not allow_inf and np.isinf(a).any()) \
            or (not allow_negative and np.any(a < 0))
        if bad:
            raise ModelError(f"{what}[{t}] must be a 1-D array of {'' if allow_inf else 'finite '}numbers"
                             + ("" if allow_negative else " >= 0"))
        out.append(a)
    return out
