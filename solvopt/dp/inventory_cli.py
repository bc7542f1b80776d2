"""``solvopt solve abs1n5_1.dat [--customer i] [--scenarios S] [--stockout p] [--seed N] --json``.

The CLI handler of family ``irp``: builds the reinsertion DP of one customer of an Archetti
IRP instance and solves it on the DP engine. Flags: ``--customer`` (1-based, default 1),
``--scenarios`` (Poisson scenarios, default 1000), ``--demand poisson|FILE.npy`` (a (W, T)
matrix of integer demands), ``--stockout`` (penalty per unit short), ``--penalty`` (per unit
over vehicle capacity), ``--chunk`` (scenarios per chunk). Any other family flag is an error.
"""
from __future__ import annotations

import numpy as np

from solvopt.core.errors import ModelError
from solvopt.core.result import Result

from .inventory import reinsertion_from_instance

DEFAULT_SCENARIOS = 1000


def _demand(value):
    if value is None or value == "poisson":
        return None
    if not str(value).endswith(".npy"):
        raise ModelError(f"--demand must be 'poisson' or a .npy file of a (W, T) demand matrix, got {value!r}")
    try:
        return np.load(value, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ModelError(f"--demand {value}: cannot load the demand matrix ({exc})") from None


class _InstanceModel:
    """The reinsertion model of one customer, whose result says which customer and penalties."""

    def __init__(self, model, customer: int):
        self.model, self.customer = model, customer

    def solve(self, method=None, **options) -> Result:
        result = self.model.solve(method, **options)
        result.solution["customer"] = self.customer
        result.solution["stockout_penalty"] = self.model.stockout_penalty
        result.solution["capacity_penalty"] = self.model.capacity_penalty
        return result


def model_from_instance(instance, customer: int = 1, scenarios: int | None = None, demand=None,
                        stockout: float | None = None, penalty: float | None = None):
    """The reinsertion DP of ``customer`` (1-based) of an ``archetti_irp`` instance."""
    n_customers = len(instance.data["demand"])
    if not 1 <= customer <= n_customers:
        raise ModelError(f"--customer must be in 1..{n_customers}, got {customer}")
    demand = _demand(demand)
    if scenarios is not None and demand is not None:
        raise ModelError("--scenarios applies to Poisson demand; a --demand matrix sets its own scenario count")
    model = reinsertion_from_instance(instance, customer - 1, scenarios=scenarios or DEFAULT_SCENARIOS,
                                      stockout=stockout, capacity_penalty=penalty, demand=demand)
    return _InstanceModel(model, customer)
