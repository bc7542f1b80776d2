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

ACCEPTED_FLAGS = ("customer", "scenarios", "demand", "stockout", "penalty", "chunk")
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


def solve_instance(instance, method: str | None, options: dict, params: dict) -> Result:
    """Solve the reinsertion DP of ``--customer`` of an ``archetti_irp`` instance."""
    unknown = sorted(set(params) - set(ACCEPTED_FLAGS))
    if unknown:
        raise ModelError(f"IRP instances take {', '.join('--' + f for f in ACCEPTED_FLAGS)}; "
                         f"not {', '.join('--' + f for f in unknown)}")
    customer = params.get("customer", 1)
    n_customers = len(instance.data["demand"])
    if not 1 <= customer <= n_customers:
        raise ModelError(f"--customer must be in 1..{n_customers}, got {customer}")
    demand = _demand(params.get("demand"))
    if "scenarios" in params and demand is not None:
        raise ModelError("--scenarios applies to Poisson demand; a --demand matrix sets its own scenario count")
    model = reinsertion_from_instance(instance, customer - 1, scenarios=params.get("scenarios", DEFAULT_SCENARIOS),
                                      stockout=params.get("stockout"), capacity_penalty=params.get("penalty"),
                                      demand=demand)
    options = dict(options)
    if "chunk" in params:
        options["chunk"] = params["chunk"]
    options.setdefault("paths", 5)          # a few per-scenario plans; not one per scenario on stdout
    options.setdefault("keep_values", 0)    # aggregates only in the JSON record
    result = model.solve(method, **options)
    result.solution["customer"] = customer
    result.solution["stockout_penalty"] = model.stockout_penalty
    result.solution["capacity_penalty"] = model.capacity_penalty
    return result
