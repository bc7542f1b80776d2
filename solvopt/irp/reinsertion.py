"""The inventory reinsertion DP expressed on the min-plus engine: compile (with a memory estimate) and decode.

The recurrence of :mod:`solvopt.dsl.inventory` runs backwards in time; the engine runs
forwards over layers, so engine layer l holds the value function of day T - l:

    engine layer 0      = C_T = 0 for every level I = 0..U
    engine step l       computes C_t from C_{t+1}, t = T-1-l  (target = today's level I,
                        source = tomorrow's level I'; two slots per target: slot 2I "no
                        delivery" from I' = (I-d)^+, slot 2I+1 "deliver" from I' = (U-d)^+)
    last step (day 0)   has two targets: 0 = no delivery, 1 = deliver (from the start level)

Both the source I' and the cost depend on the scenario only through its demand d, so each
day is a *variant layer*: a table of sources and costs for every demand d = 0..U, and per
scenario the variant min(d, U). A demand above U costs p (d - U) more on every slot (the
level ends at 0 whatever was decided), so that decision-free constant goes into the
scenario's initial value V_0 (= C_T + sum_t p (d_t - U)^+). Per scenario the engine then
reads T integers instead of T x 2(U+1) sources and costs.

The route options are reduced *before* the engine: their cost c_t^r + rho (overload) does
not depend on the demand, so the best option for each (day, level) is found once, vectorised
over (days x levels x options), and the engine works on 2 slots per level instead of 1 + R
(the engine's parallel axes are scenarios x levels; the option axis is reduced outside the
scenario loop). The engine's ``final="shared"`` picks the day-0 decision with the lowest mean
over the scenarios.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from solvopt.core.errors import ModelError
from solvopt.core.memory import format_bytes, memory_budget
from solvopt.core.result import Result
from solvopt.dp.compiled import CompiledDP
from solvopt.dsl.inventory import InventoryReinsertion
from solvopt.dsl.layered_dp import LayeredDP, Transitions


# --- the recurrence on the engine ------------------------------------------------------------------
def delivery_tables(model: InventoryReinsertion) -> tuple[np.ndarray, np.ndarray]:
    """(cost, option) arrays (T, U+1): cheapest route option to fill up from level I on day t.

    cost = min_r c_t^r + rho [(q - s_t^r)^+ - (-s_t^r)^+]  minus the supplier credit h0 (T - t) q,
    with q = U - I and s the route's slack (the penalty is on the overload that q adds).
    """
    T, U = model.horizon, model.max_level
    q = U - np.arange(U + 1, dtype=float)
    cost = np.empty((T, U + 1))
    option = np.empty((T, U + 1), np.int64)
    for t in range(T):
        slack = model.route_slack[t][None, :]
        added = np.maximum(0.0, q[:, None] - slack) - np.maximum(0.0, -slack)     # (levels, options)
        total = model.insertion_costs[t][None, :] + model.capacity_penalty * added
        option[t] = total.argmin(axis=1)
        cost[t] = total[np.arange(U + 1), option[t]] - model.supplier_holding_cost * (T - t) * q
    return cost, option


def _day_cost(model: InventoryReinsertion, level, d):
    """Holding and stockout cost of ending the day from ``level`` after demand ``d`` (broadcasts)."""
    return model.holding_cost * np.maximum(0, level - d) + model.stockout_penalty * np.maximum(0, d - level)


def day_slots(model: InventoryReinsertion, deliver_cost: np.ndarray, d: np.ndarray, levels: np.ndarray):
    """(src, cost) of shape (len(d), 2 len(levels)) for demands ``d`` on one day: slot 2i = no
    delivery from ``levels[i]``, slot 2i+1 = deliver (fill up to U) from it."""
    U = model.max_level
    d = d[:, None]
    n, m = d.shape[0], levels.size
    src = np.empty((n, 2 * m), np.int64)
    cost = np.empty((n, 2 * m))
    src[:, 0::2] = np.maximum(0, levels[None, :] - d)
    cost[:, 0::2] = _day_cost(model, levels[None, :], d)
    src[:, 1::2] = np.maximum(0, U - d)
    cost[:, 1::2] = deliver_cost[levels][None, :] + _day_cost(model, U, d)
    return src, cost


def variant_tables(model: InventoryReinsertion, deliver: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """(src, cost) tables (U+1, K) per engine layer, row d = demand d; engine layer l is day T-1-l."""
    T, U = model.horizon, model.max_level
    demand, all_levels = np.arange(U + 1), np.arange(U + 1)
    tables = [day_slots(model, deliver[t], demand, all_levels) for t in range(T - 1, 0, -1)]
    tables.append(day_slots(model, deliver[0], demand, np.array([model.start_level])))  # 0 = none, 1 = deliver
    return tables


def scenario_data(model: InventoryReinsertion, demand: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """Per engine layer the variant (demand clipped to U) of each scenario, and the scenarios'
    decision-free excess-demand cost sum_t p (d_t - U)^+ (their initial value)."""
    U = model.max_level
    choices = [np.minimum(demand[:, t], U) for t in range(model.horizon - 1, -1, -1)]
    excess = model.stockout_penalty * np.maximum(0, demand - U).sum(axis=1)
    return choices, excess.astype(float)


def layered_dp(model: InventoryReinsertion, deliver: np.ndarray, dtype=np.float64) -> LayeredDP:
    """The engine model of the reinsertion DP (explicit demand matrix or a Poisson sampler)."""
    T, U = model.horizon, model.max_level
    states = [U + 1] * T + [2]
    ptrs = [np.arange(0, 2 * (U + 2), 2)] * (T - 1) + [np.arange(3)]
    tables = variant_tables(model, deliver)
    if model.demand is not None:
        choices, excess = scenario_data(model, model.demand)
        transitions = [Transitions.variants(p, s, c, ch, n_sources=U + 1)
                       for p, (s, c), ch in zip(ptrs, tables, choices)]
        # every start level of a scenario starts from its excess cost: a broadcast view, not W x (U+1) copies
        # (5 * 10^6 scenarios at U = 144 took 11 GB and 76 s to compile)
        return LayeredDP(states, transitions, initial=np.broadcast_to(excess[:, None], (excess.size, U + 1)),
                         final="shared", dtype=dtype)
    transitions = [Transitions.variants(p, s, c, n_sources=U + 1) for p, (s, c) in zip(ptrs, tables)]
    mean = model.mean_demand
    assert mean is not None     # an InventoryReinsertion holds a demand matrix or Poisson means

    def sampler(rng: np.random.Generator, count: int):
        choices, excess = scenario_data(model, rng.poisson(mean, size=(count, T)))
        return {"layers": choices, "initial": excess}
    return LayeredDP(states, transitions, scenarios=model.scenarios, sampler=sampler, final="shared", dtype=dtype)


@dataclass
class CompiledInventory:
    """The reinsertion model, its best route option per (day, level), and the engine's compiled form."""

    model: InventoryReinsertion
    deliver_cost: np.ndarray
    deliver_option: np.ndarray
    dp: CompiledDP


# bytes per entry of a day's (U+1) x 2(U+1) variant table while it is built: day_slots' int64
# sources and float64 costs, the LayeredDP's int32/float64 copies, the compiled padded
# int32/float64 copies (the first two are freed day by day, the last two are kept)
BYTES_PER_TABLE_ENTRY = 16 + 12 + 12


def compile_bytes(model: InventoryReinsertion) -> int:
    """Peak memory (bytes) to compile the model: its T variant tables of (U+1) x 2(U+1) entries."""
    U = model.max_level
    return BYTES_PER_TABLE_ENTRY * model.horizon * (U + 1) * 2 * (U + 1)


def check_memory(model: InventoryReinsertion, budget: int | None = None) -> None:
    """ModelError, before anything is allocated, when the compiled tables would not fit the budget."""
    need, budget = compile_bytes(model), memory_budget() if budget is None else budget
    if need > budget:
        levels = model.max_level + 1
        raise ModelError(f"{model.name}: the reinsertion DP over levels 0..{model.max_level} needs about "
                         f"{format_bytes(need)} ({model.horizon} days x {levels} x {2 * levels} "
                         f"table entries), more than the {format_bytes(budget)} allowed (half this machine's memory); "
                         "the maximum inventory is too large for this DP")


def compile_inventory(model: InventoryReinsertion, budget: int | None = None) -> CompiledInventory:
    """Check the memory, reduce the route options, then build and compile the engine model (idempotent)."""
    if isinstance(model, CompiledInventory):
        return model
    if not isinstance(model, InventoryReinsertion):
        raise ModelError(f"family irp solves an InventoryReinsertion, got {type(model).__name__}")
    check_memory(model, budget)
    start = time.perf_counter()
    cost, option = delivery_tables(model)
    compiled = CompiledInventory(model, cost, option, CompiledDP(layered_dp(model, cost)))
    compiled.dp.build_time = time.perf_counter() - start
    return compiled


def decode(compiled: CompiledInventory, result: Result) -> Result:
    """Turn the engine's result into the reinsertion answer (day-0 decision, per-scenario plans)."""
    model, sol = compiled.model, result.solution
    T, U, I0 = model.horizon, model.max_level, model.start_level
    if "final_state" in sol:
        deliver = sol["final_state"] == 1
        route = int(compiled.deliver_option[0, I0])
        sol["decision"] = {"deliver": bool(deliver), "route_option": route if deliver else None,
                           "quantity": U - I0 if deliver else 0,
                           "insertion_cost": float(model.insertion_costs[0][route]) if deliver else 0.0}
    sol["option_means"] = sol.pop("state_means", None)       # [no delivery, deliver] mean cost
    if "paths" in sol:
        paths, slots = sol.pop("paths"), sol.pop("path_slots")
        inventory = np.full((len(paths), T + 1), -1, np.int64)
        inventory[:, 0] = np.where(paths[:, T] >= 0, I0, -1)
        inventory[:, 1:] = paths[:, T - 1::-1][:, :T]      # engine layer l = level at the start of day T-l
        deliveries = (slots[:, ::-1] % 2 == 1) & (slots[:, ::-1] >= 0)   # column t = day t
        sol["inventory"] = inventory
        sol["deliveries"] = deliveries
        start = np.clip(inventory[:, :T], 0, U)
        sol["route_options"] = np.where(deliveries, compiled.deliver_option[np.arange(T)[None, :], start], -1)
        sol["plan_scenarios"] = sol.pop("path_scenarios")
    if model.customer is not None:
        sol["customer"] = model.customer
    sol["stockout_penalty"] = model.stockout_penalty
    sol["capacity_penalty"] = model.capacity_penalty
    return result
