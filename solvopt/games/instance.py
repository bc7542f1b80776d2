"""Game instances (parsed, validated JSON) -> models: the family's ``from_instance``.

``pseudo_game``: players with a size, bounds, a quadratic utility or cost 0.5 a'Qa + c'a + k over
the joint action a (the players' actions concatenated in file order) or a library form of
their own action, and linear constraints: a player's ``constraints`` (rows over its own action),
its ``joint_constraints`` (rows over the joint action that bind that player only: the others'
actions enter as data, a generalized Nash problem proper) and ``shared_constraints`` (rows over
the joint action binding every player). ``scalar_game``: the same layout with one-variable players
whose utility need not be concave (:mod:`solvopt.games.scalar_instance`). Markets: one utility form
with one parameter row per consumer. The Markov kinds go to
:func:`solvopt.games.markov_instance.model_from_json`, ``production_economy`` to
:func:`solvopt.games.production_reader.economy_from_json`.
"""
from __future__ import annotations

import numpy as np

from solvopt.core.errors import InstanceFormatError, ModelError
from solvopt.dsl.games import ArrowDebreuMarket, FisherMarket, PseudoGame

from .json_values import form_from_json, numeric
from .markov_instance import model_from_json
from .reader import MARKOV_KINDS


def model_from_instance(instance, **params):
    """The family's ``from_instance``: the model of a game instance (``params``: only the Markov kinds take any)."""
    data, path = instance.data, instance.path
    kind = data["kind"]
    if kind in MARKOV_KINDS:
        return model_from_json(data, path, **params)
    if params:
        raise ModelError(f"{kind} instances take no parameters (got {', '.join(params)})")
    if kind == "production_economy":
        from .production_reader import economy_from_json
        return economy_from_json(data, path)
    try:
        if kind == "pseudo_game":
            return game_from_json(data)
        if kind == "scalar_game":
            from .scalar_instance import scalar_game_from_json
            return scalar_game_from_json(data)
        utility = form_from_json(data["utility"])
        if kind == "fisher_market":
            supplies = data.get("supplies")
            return FisherMarket(utility, numeric(data["budgets"], "budgets", 1),
                                None if supplies is None else numeric(supplies, "supplies", 1),
                                name=data.get("name", "fisher"))
        return ArrowDebreuMarket(utility, numeric(data["endowments"], "endowments", 2),
                                 name=data.get("name", "arrow_debreu"))
    except ModelError as exc:
        raise InstanceFormatError(path, None, str(exc)) from None


def _fits(count: int, what: str) -> None:
    """Refuse, before allocating, ``count`` float64 numbers that would not fit in memory."""
    from solvopt.core.memory import format_bytes, memory_budget
    need, budget = 8 * count, memory_budget()
    if need > budget:
        raise ModelError(f"{what} needs {format_bytes(need)}, more than the {format_bytes(budget)} allowed here")


def _matrix(value, shape, what):
    arr = numeric(value, what, len(shape))
    if arr.shape != shape:
        raise ModelError(f"{what} must have shape {shape}, got {arr.shape}")
    return arr


def _rows(spec, width, what):
    A = numeric(spec["coefficients"], f"{what}: coefficients", 2)
    if A.shape[1] != width:
        raise ModelError(f"{what}: coefficients must be rows of {width} numbers")
    rhs = np.broadcast_to(numeric(spec["rhs"], f"{what} rhs", 0), (A.shape[0],)) if np.ndim(spec["rhs"]) == 0 \
        else _matrix(spec["rhs"], (A.shape[0],), f"{what} rhs")
    return A, spec["sense"], rhs


def _joint_rows(spec, n, own, name, where):
    """A player's rows over the joint action (``joint_constraints``): n columns each, and each row
    involving one of the player's own variables (else it could not bind that player)."""
    A = numeric(spec["coefficients"], f"field {where}.coefficients", 2)
    if A.shape[1] != n:
        raise ModelError(f"field {where}.coefficients: expected rows of {n} numbers (the joint action), "
                         f"got {A.shape[1]}")
    empty = np.flatnonzero(~np.any(A[:, own] != 0, axis=1))
    if empty.size:
        raise ModelError(f"field {where}.coefficients[{empty[0]}]: a constraint of player {name!r} does not involve "
                         f"any of its own variables (joint action columns {own[0]} to {own[-1]}): it cannot bind "
                         "that player (state it under the player whose action it involves, or in shared_constraints)")
    return _rows(spec, n, f"field {where}")


def _compare(expr, sense, rhs):
    return expr <= rhs if sense == "<=" else (expr >= rhs if sense == ">=" else expr == rhs)


def _expression_payoff(spec, n, own, sign, where, name, box):
    """A player's payoff with an ``expression`` (and optionally a quadratic part), compiled; ``box``:
    the joint action's bounds (lb, ub), on which the concavity rules decide products."""
    from .expressions import payoff
    Q = _matrix(spec["Q"], (n, n), f"player {name!r}: Q") if "Q" in spec else None
    if Q is not None and not np.allclose(Q, Q.T):
        raise ModelError(f"player {name!r}: Q must be symmetric")
    c = _matrix(spec["c"], (n,), f"player {name!r}: c") if "c" in spec else None
    return payoff(spec, n, own, sign, where, Q, c, *box)


def game_from_json(data: dict) -> PseudoGame:
    game = PseudoGame(data.get("name", "game"))
    specs = data["players"]
    bound = lambda v, d: d if v is None else v  # noqa: E731 - null means unbounded
    vars_ = [game.player(p["name"], (p["size"],), bound(p.get("lb"), -np.inf), bound(p.get("ub"), np.inf))
             for p in specs]
    sizes = [p["size"] for p in specs]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    n = int(offsets[-1])

    def joint(A):
        """A @ a for the joint action a, as a DSL expression."""
        return sum(A[:, offsets[i]:offsets[i + 1]] @ v for i, v in enumerate(vars_))

    for i, (p, var) in enumerate(zip(specs, vars_)):
        if "form" in p:
            game.maximize(var, form_from_json(p["form"]))
        elif "expression" in p.get("utility", p.get("cost")):   # beyond quadratics (solvopt.games.expressions)
            key = "utility" if "utility" in p else "cost"
            box = [np.concatenate([np.broadcast_to(getattr(v, b), v.shape).ravel() for v in vars_])
                   for b in ("lb", "ub")]
            pay = _expression_payoff(p[key], n, np.arange(offsets[i], offsets[i + 1]),
                                     1.0 if key == "utility" else -1.0, ("players", i, key), p["name"], box)
            game.utility(var, pay.value, pay.gradient)
        else:
            spec = p.get("utility", p.get("cost"))
            if "Q" in spec:  # checked against (n, n) before anything of that size is made
                Q = _matrix(spec["Q"], (n, n), f"player {p['name']!r}: Q")
            else:
                _fits(n * n, f"player {p['name']!r}: a quadratic form over the joint action of {n} numbers")
                Q = np.zeros((n, n))
            c = _matrix(spec.get("c", np.zeros(n)), (n,), f"player {p['name']!r}: c")
            if not np.allclose(Q, Q.T):
                raise ModelError(f"player {p['name']!r}: Q must be symmetric")
            quad = sum((v * joint(0.5 * Q[offsets[k]:offsets[k + 1]])).sum() for k, v in enumerate(vars_))
            expr = quad + joint(c[None, :]).sum() + float(spec.get("constant", 0.0))
            (game.maximize if "utility" in p else game.minimize)(var, expr)
        for spec in p.get("constraints", []):
            A, sense, rhs = _rows(spec, p["size"], f"player {p['name']!r} constraint")
            game.constrain(var, _compare(A @ var, sense, rhs))
        for k, spec in enumerate(p.get("joint_constraints", [])):
            A, sense, rhs = _joint_rows(spec, n, np.arange(offsets[i], offsets[i + 1]), p["name"],
                                        f"players[{i}].joint_constraints[{k}]")
            game.constrain(var, _compare(joint(A), sense, rhs))
    for k, spec in enumerate(data.get("shared_constraints", [])):
        A, sense, rhs = _rows(spec, n, f"shared_constraints[{k}]")
        game.share(_compare(joint(A), sense, rhs))
    _nonlinear_constraints(game, data, vars_, offsets)
    return game


def _nonlinear_constraints(game, data, vars_, offsets) -> None:
    """Each player's ``nonlinear_constraints`` and the ``shared_nonlinear_constraints`` (expression trees,
    proven convex by the curvature rules on the variables' box)."""
    from .expressions import convex_constraint
    n = int(offsets[-1])
    box = [np.concatenate([np.broadcast_to(getattr(v, b), v.shape).ravel() for v in vars_]) for b in ("lb", "ub")]
    for i, (p, var) in enumerate(zip(data["players"], vars_)):
        for k, spec in enumerate(p.get("nonlinear_constraints", [])):
            where = ("players", i, "nonlinear_constraints", k)
            c = convex_constraint(spec, n, np.arange(offsets[i], offsets[i + 1]), where, *box)
            game.constrain_convex(var, c.value, c.gradient, name=f"players[{i}].nonlinear_constraints[{k}]",
                                  proven=True)
    for k, spec in enumerate(data.get("shared_nonlinear_constraints", [])):
        c = convex_constraint(spec, n, None, ("shared_nonlinear_constraints", k), *box)
        game.share_convex(c.value, c.gradient, name=f"shared_nonlinear_constraints[{k}]", proven=True)
