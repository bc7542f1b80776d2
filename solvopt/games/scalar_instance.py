"""``scalar_game`` instance files -> :class:`~solvopt.dsl.ScalarGame` (players whose utility need not be concave).

The layout is a ``pseudo_game``'s restricted to one-variable players: each player has a ``name``,
finite ``lb`` and ``ub``, a ``utility`` or ``cost`` (``0.5 a'Qa + c'a + constant + expression``
over the joint action a, as in :mod:`solvopt.games.expressions`, with no concavity asked),
``constraints`` (rows over its own action) and ``joint_constraints`` (rows over the joint action
binding it only); ``shared_constraints`` bind every player they involve. What the global best
responses need, an enclosure of each utility's own derivative on a subinterval, is derived from
the tree by interval arithmetic (:mod:`solvopt.games.expression_bounds`), so the file states
nothing more. Errors are one ModelError naming the JSON path; the reader adds the file.
"""
from __future__ import annotations

import numpy as np

from solvopt.core.errors import ModelError

from .json_values import numeric


def _bound(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ModelError(f"field {where}: a scalar game's bounds are finite numbers, got {value!r}")
    return float(value)


def _rows(spec: dict, width: int, where: str) -> list[tuple[np.ndarray, float, float]]:
    """(coefficients, lo, hi) of a ``rows`` spec with rows of ``width`` numbers."""
    A = numeric(spec["coefficients"], f"field {where}.coefficients", 2)
    if A.shape[1] != width:
        raise ModelError(f"field {where}.coefficients: expected rows of {width} numbers, got {A.shape[1]}")
    rhs = numeric(spec["rhs"], f"field {where}.rhs")
    if rhs.ndim == 0:
        rhs = np.full(A.shape[0], float(rhs))
    if rhs.shape != (A.shape[0],):
        raise ModelError(f"field {where}.rhs: expected {A.shape[0]} numbers (one per row), got shape {rhs.shape}")
    sense = spec["sense"]
    lo = rhs if sense in (">=", "==") else np.full(A.shape[0], -np.inf)
    hi = rhs if sense in ("<=", "==") else np.full(A.shape[0], np.inf)
    return [(A[r], float(lo[r]), float(hi[r])) for r in range(A.shape[0])]


def _payoff(spec: dict, n: int, i: int, sign: float, where: tuple, lb: np.ndarray, ub: np.ndarray):
    from .expressions import Const, Payoff, field_name, parse
    name = field_name(where)
    Q = numeric(spec["Q"], f"field {name}.Q", 2) if "Q" in spec else None
    if Q is not None and (Q.shape != (n, n) or not np.allclose(Q, Q.T)):
        raise ModelError(f"field {name}.Q: expected a symmetric {n} x {n} matrix, got shape {Q.shape}")
    c = numeric(spec["c"], f"field {name}.c", 1) if "c" in spec else np.zeros(n)
    if c.shape != (n,):
        raise ModelError(f"field {name}.c: expected {n} numbers (one per player), got {c.size}")
    node = parse(spec["expression"], n, where + ("expression",)) if "expression" in spec else Const(0.0)
    return Payoff(Q, c, spec.get("constant", 0.0), node, sign, np.array([i]), lb, ub)


def scalar_game_from_json(data: dict):
    """The :class:`~solvopt.dsl.ScalarGame` of a validated ``scalar_game`` file (see the module doc)."""
    from solvopt.dsl.scalar_game import ScalarGame

    from .expression_bounds import own_derivative_range
    specs = data["players"]
    n = len(specs)
    lb = np.array([_bound(p["lb"], f"players[{i}].lb") for i, p in enumerate(specs)])
    ub = np.array([_bound(p["ub"], f"players[{i}].ub") for i, p in enumerate(specs)])
    game = ScalarGame(data.get("name", "scalar_game"))
    for i, p in enumerate(specs):
        key = "utility" if "utility" in p else "cost"
        pay = _payoff(p[key], n, i, 1.0 if key == "utility" else -1.0, ("players", i, key), lb, ub)
        if lb[i] > ub[i]:
            raise ModelError(f"field players[{i}]: lb {lb[i]:g} > ub {ub[i]:g}")

        def derivative(x, pay=pay, i=i) -> float:
            return float(pay.gradient(x)[i])

        def derivative_range(x, lo, hi, pay=pay, i=i) -> tuple[float, float]:
            return own_derivative_range(pay, x, i, lo, hi)
        game.player(p["name"], lb[i], ub[i], pay.value, derivative, derivative_range=derivative_range)
    for i, p in enumerate(specs):
        for k, spec in enumerate(p.get("constraints", [])):
            for a, lo, hi in _rows(spec, 1, f"players[{i}].constraints[{k}]"):
                _constrain(game, i, np.eye(n)[i] * a[0], lo, hi, f"players[{i}].constraints[{k}]")
        for k, spec in enumerate(p.get("joint_constraints", [])):
            for a, lo, hi in _rows(spec, n, f"players[{i}].joint_constraints[{k}]"):
                _constrain(game, i, a, lo, hi, f"players[{i}].joint_constraints[{k}]")
    for k, spec in enumerate(data.get("shared_constraints", [])):
        for a, lo, hi in _rows(spec, n, f"shared_constraints[{k}]"):
            _constrain(game, list(np.flatnonzero(a)), a, lo, hi, f"shared_constraints[{k}]")
    return game


def _constrain(game, players, a, lo: float, hi: float, where: str) -> None:
    try:
        game.constrain(players, a, lo, hi)
    except ModelError as exc:
        raise ModelError(f"field {where}: {exc}") from None


__all__ = ["scalar_game_from_json"]
